// Stage `density` (CPU mirror: src/cpu/density.rs).
// Inputs: sorted_pos (N, slot order from `reorder`), slot_start (T + 1), params.
// Output: particle_density (N, slot order),
// ρ_i = density_scale · Σ_j (1 − r²/h²)³ over every j with r² < h² (strict, self included),
// i.e. m · Σ W_poly6 (Müller et al. 2003).
// The query walks the cells from cell_of(p − h) to cell_of(p + h) (the 27 around p), z then y
// then x, and skips a slot already visited, so hash aliasing never counts a particle twice.
// Worked example, h = 1, density_scale = 1: particles at x = 0 and 0.5 (same y, z) →
// 1 + (1 − 0.25)³ = 1.421875 each.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> slot_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> particle_density: array<f32>;

// The poly6 term of candidate `k` of the walk, 0 unless r² < h². Adding an exact 0.0 leaves the
// sum bit for bit as the CPU's, which adds only neighbours.
fn term(p: vec3<f32>, k: u32) -> f32 {
    let r2 = distance2(p, sorted_pos[k].xyz);
    return select(0.0, poly6_term(r2, params.inv_h2), r2 < params.h2);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn density(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    let p = sorted_pos[i].xyz;
    let lo = query_lo(p, params);
    let hi = query_hi(p, lo, params);
    var seen: array<u32, MAX_QUERY_SLOTS>;
    var n_seen = 0u;
    var sum = 0.0;
    for (var cz = lo.z; cz <= hi.z; cz = cz + 1) {
        for (var cy = lo.y; cy <= hi.y; cy = cy + 1) {
            for (var cx = lo.x; cx <= hi.x; cx = cx + 1) {
                let s = hash_cell(vec3<i32>(cx, cy, cz), params.table_mask);
                if !first_visit(&seen, &n_seen, s) {
                    continue;
                }
                let end = slot_start[s + 1u];
                var k = slot_start[s];
                for (; k + UNROLL <= end; k = k + UNROLL) {
                    sum = sum + term(p, k + 0u);
                    sum = sum + term(p, k + 1u);
                    sum = sum + term(p, k + 2u);
                    sum = sum + term(p, k + 3u);
                }
                for (; k < end; k = k + 1u) {
                    sum = sum + term(p, k);
                }
            }
        }
    }
    particle_density[i] = params.density_scale * sum;
}
