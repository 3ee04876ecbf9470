// Stage `density` (CPU mirror: src/cpu/density.rs).
// Inputs: sorted_pos (N, slot order from `reorder`), slot_start (T + 1), the groups `order`
// listed (group_range: [first, end) of up to GROUP consecutive particles of one slot, and
// group_args, whose last word counts them), params. Dispatched indirectly from group_args.
// Output: particle_density (N, slot order),
// ρ_i = density_scale · Σ_j (1 − r²/h²)³ over every j with r² < h² (strict, self included),
// i.e. m · Σ W_poly6 (Müller et al. 2003).
// The query walks the cells from cell_of(p − h) to cell_of(p + h) (the 27 around p), z then y
// then x, and skips a slot already visited, so hash aliasing never counts a particle twice.
// One invocation per group: members with the same query range (normally all of them: they
// share a cell) walk together, each candidate read once and tested against every member, one
// member per vector lane (members 0-3 in `a`, 4-7 in `b`). A member with another range (a
// different cell aliasing into the slot) gets a later round of its own. Each member adds its
// terms in walk order, exactly as a walk of its own would.
// Worked example, h = 1, density_scale = 1: particles at x = 0 and 0.5 (same y, z) →
// 1 + (1 − 0.25)³ = 1.421875 each.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> slot_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> particle_density: array<f32>;
@group(0) @binding(4) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(5) var<storage, read> group_args: array<u32, 4>;

// The members' positions, one per lane.
struct Queries {
    ax: vec4<f32>,
    ay: vec4<f32>,
    az: vec4<f32>,
    bx: vec4<f32>,
    by: vec4<f32>,
    bz: vec4<f32>,
}

struct Sums {
    a: vec4<f32>,
    b: vec4<f32>,
}

// Poly6 terms, an exact 0.0 unless r² < h² (adding it leaves the sum bit for bit as the CPU's).
fn terms(r2: vec4<f32>) -> vec4<f32> {
    let q = max(vec4<f32>(1.0) - r2 * params.inv_h2, vec4<f32>(0.0));
    return select(vec4<f32>(0.0), q * q * q, r2 < vec4<f32>(params.h2));
}

// Candidate k's terms added to every member's sum; r² as distance2: (dx² + dy²) + dz².
fn add(acc: Sums, q: Queries, k: u32) -> Sums {
    let c = sorted_pos[k].xyz;
    let ax = q.ax - c.x;
    let ay = q.ay - c.y;
    let az = q.az - c.z;
    let bx = q.bx - c.x;
    let by = q.by - c.y;
    let bz = q.bz - c.z;
    return Sums(
        acc.a + terms(ax * ax + ay * ay + az * az),
        acc.b + terms(bx * bx + by * by + bz * bz),
    );
}

// Member l's position; members past the group's end repeat its last one (results dropped).
fn member(r: vec2<u32>, l: u32) -> vec3<f32> {
    return sorted_pos[min(r.x + l, r.y - 1u)].xyz;
}

// Bit l when member l exists and has the query range [lo, hi].
fn in_round(p: vec3<f32>, l: u32, len: u32, lo: vec3<i32>, hi: vec3<i32>) -> u32 {
    let plo = query_lo(p, params);
    let same = all(plo == lo) && all(query_hi(p, plo, params) == hi);
    return select(0u, 1u << l, same && l < len);
}

fn store(first: u32, members: u32, l: u32, sum: f32) {
    if (members & (1u << l)) != 0u {
        particle_density[first + l] = params.density_scale * sum;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn density(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x;
    if g >= group_args[3] {
        return;
    }
    let r = group_range[g];
    let len = r.y - r.x;
    let p0 = member(r, 0u);
    let p1 = member(r, 1u);
    let p2 = member(r, 2u);
    let p3 = member(r, 3u);
    let p4 = member(r, 4u);
    let p5 = member(r, 5u);
    let p6 = member(r, 6u);
    let p7 = member(r, 7u);
    let q = Queries(
        vec4<f32>(p0.x, p1.x, p2.x, p3.x),
        vec4<f32>(p0.y, p1.y, p2.y, p3.y),
        vec4<f32>(p0.z, p1.z, p2.z, p3.z),
        vec4<f32>(p4.x, p5.x, p6.x, p7.x),
        vec4<f32>(p4.y, p5.y, p6.y, p7.y),
        vec4<f32>(p4.z, p5.z, p6.z, p7.z),
    );
    let everyone = (1u << len) - 1u;
    var done = 0u;
    loop {
        if done == everyone {
            break;
        }
        // The first member not yet done leads this round; members sharing its range follow.
        let leader = sorted_pos[r.x + firstTrailingBit(~done)].xyz;
        let lo = query_lo(leader, params);
        let hi = query_hi(leader, lo, params);
        let members = in_round(p0, 0u, len, lo, hi) | in_round(p1, 1u, len, lo, hi)
            | in_round(p2, 2u, len, lo, hi) | in_round(p3, 3u, len, lo, hi)
            | in_round(p4, 4u, len, lo, hi) | in_round(p5, 5u, len, lo, hi)
            | in_round(p6, 6u, len, lo, hi) | in_round(p7, 7u, len, lo, hi);
        var visited = Visited(vec2<u32>(0u), vec2<u32>(0u));
        var sums = Sums(vec4<f32>(0.0), vec4<f32>(0.0));
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
                        sums = add(sums, q, k + 0u);
                        sums = add(sums, q, k + 1u);
                        sums = add(sums, q, k + 2u);
                        sums = add(sums, q, k + 3u);
                    }
                    for (; k < end; k = k + 1u) {
                        sums = add(sums, q, k);
                    }
                }
            }
        }
        store(r.x, members, 0u, sums.a.x);
        store(r.x, members, 1u, sums.a.y);
        store(r.x, members, 2u, sums.a.z);
        store(r.x, members, 3u, sums.a.w);
        store(r.x, members, 4u, sums.b.x);
        store(r.x, members, 5u, sums.b.y);
        store(r.x, members, 6u, sums.b.z);
        store(r.x, members, 7u, sums.b.w);
        done = done | members;
    }
}
