// Stage `density` (CPU mirror: src/cpu/density.rs).
// Inputs: sorted_pos (N, slot order from `reorder`), slot_start (T + 1), the groups `order`
// listed (group_range: [first, end) of up to GROUP consecutive particles of one slot, and
// group_args, whose last word counts them), params. Dispatched indirectly from group_args.
// Output: particle_density (N, slot order),
// ρ_i = density_scale · Σ_j (1 − r²/h²)³ over every j with r² < h² (strict, self included),
// i.e. m · Σ W_poly6 (Müller et al. 2003).
// The shared walk (walk.wgsl), one invocation per group in its grouped form: each candidate
// is read once and tested against every member of the round, one member per vector lane
// (members 0-3 in `a`, 4-7 in `b`). Each member adds its terms in walk order, exactly as a
// walk of its own would.
// Worked example, h = 1, density_scale = 1: particles at x = 0 and 0.5 (same y, z) →
// 1 + (1 − 0.25)³ = 1.421875 each.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> slot_start: array<u32>;
@group(0) @binding(3) var<storage, read_write> particle_density: array<f32>;
@group(0) @binding(4) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(5) var<uniform> group_args: vec4<u32>;

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
fn member(first: u32, len: u32, l: u32) -> vec3<f32> {
    return sorted_pos[first + min(l, len - 1u)].xyz;
}

struct Walker {
    q: Queries,
    sums: Sums,
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    let p0 = member(first, len, 0u);
    let p1 = member(first, len, 1u);
    let p2 = member(first, len, 2u);
    let p3 = member(first, len, 3u);
    let p4 = member(first, len, 4u);
    let p5 = member(first, len, 5u);
    let p6 = member(first, len, 6u);
    let p7 = member(first, len, 7u);
    let q = Queries(
        vec4<f32>(p0.x, p1.x, p2.x, p3.x),
        vec4<f32>(p0.y, p1.y, p2.y, p3.y),
        vec4<f32>(p0.z, p1.z, p2.z, p3.z),
        vec4<f32>(p4.x, p5.x, p6.x, p7.x),
        vec4<f32>(p4.y, p5.y, p6.y, p7.y),
        vec4<f32>(p4.z, p5.z, p6.z, p7.z),
    );
    return Walker(q, Sums(vec4<f32>(0.0), vec4<f32>(0.0)));
}

fn visit(w: ptr<function, Walker>, k: u32) {
    (*w).sums = add((*w).sums, (*w).q, k);
}

fn store(first: u32, members: u32, l: u32, sum: f32) {
    if (members & (1u << l)) != 0u {
        particle_density[first + l] = params.density_scale * sum;
    }
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    let s = (*w).sums;
    store(first, members, 0u, s.a.x);
    store(first, members, 1u, s.a.y);
    store(first, members, 2u, s.a.z);
    store(first, members, 3u, s.a.w);
    store(first, members, 4u, s.b.x);
    store(first, members, 5u, s.b.y);
    store(first, members, 6u, s.b.z);
    store(first, members, 7u, s.b.w);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn density(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x;
    if g >= group_args[3] {
        return;
    }
    walk_group(group_range[g]);
}
