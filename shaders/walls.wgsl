// Stage `walls` (CPU mirror: src/cpu/walls.rs): the density the walls add, by mirror
// particles (Colagrossi & Landrini 2003). Within h of a wall a particle's kernel reaches past
// the wall, where there is no fluid; each neighbour's mirror image across that wall (and across
// both or all three walls at an edge or corner) stands in for the missing fluid.
// Inputs (slot order): sorted_pos, particle_density (from `density`), slot_start.
// Output: fluid_density (N) = particle_density + density_scale · Σ_k Σ_images (1 − r²/h²)³,
// over the images within h, walked in the density's order, per candidate its images in
// decreasing subset mask.
// Worked example, h = 1, density_scale = 1, floor y = 0, one particle at y = 0.25: its image
// at y = −0.25 is 0.5 away → 1 + (1 − 0.25)³ = 1.421875, as for a real pair at that distance.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> particle_density: array<f32>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read_write> fluid_density: array<f32>;

// The poly6 term of image m of x_k seen from x; 0 unless m's walls are all near and r² < h².
fn image_term(x: vec3<f32>, xk: vec3<f32>, near: WallPlanes, m: u32) -> f32 {
    if (near.mask & m) != m {
        return 0.0;
    }
    let r2 = distance2(x, reflect_across(xk, near.plane, image_axes(m)));
    return select(0.0, poly6_term(r2, params.inv_h2), r2 < params.h2);
}

// All images of candidate k, one per non-empty subset m of the near walls in decreasing m (see
// `candidate` in forces.wgsl); 0 unless k itself lies within h, since an image is never nearer
// than its original.
fn images(x: vec3<f32>, near: WallPlanes, k: u32) -> f32 {
    let xk = sorted_pos[k].xyz;
    var t = 0.0;
    if distance2(x, xk) < params.h2 {
        var m = near.mask;
        loop {
            t = t + image_term(x, xk, near, m);
            m = (m - 1u) & near.mask;
            if m == 0u {
                break;
            }
        }
    }
    return t;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn walls(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    let x = sorted_pos[i].xyz;
    let near = wall_planes(x, params.h, fluid);
    var sum = 0.0;
    // A mirror image within h of x has its original within h of x (the wall lies between
    // them), so the walk over x's own neighbour cells finds every image.
    if near.mask != 0u {
        let lo = query_lo(x, params);
        let hi = query_hi(x, lo, params);
        var visited = Visited(vec2<u32>(0u), vec2<u32>(0u));
        for (var cz = lo.z; cz <= hi.z; cz = cz + 1) {
            for (var cy = lo.y; cy <= hi.y; cy = cy + 1) {
                for (var cx = lo.x; cx <= hi.x; cx = cx + 1) {
                    let c = vec3<i32>(cx, cy, cz);
                    let s = hash_cell(c, params.table_mask);
                    if !first_visit(&visited, s, c, lo, hi, params.table_mask) {
                        continue;
                    }
                    let end = slot_start[s + 1u];
                    var k = slot_start[s];
                    for (; k + UNROLL <= end; k = k + UNROLL) {
                        sum = sum + images(x, near, k + 0u);
                        sum = sum + images(x, near, k + 1u);
                        sum = sum + images(x, near, k + 2u);
                        sum = sum + images(x, near, k + 3u);
                    }
                    for (; k < end; k = k + 1u) {
                        sum = sum + images(x, near, k);
                    }
                }
            }
        }
    }
    fluid_density[i] = particle_density[i] + params.density_scale * sum;
}
