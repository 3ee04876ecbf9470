// Stage `dfsph_galerkin` (CPU mirror: src/solver/dfsph/galerkin.rs dfsph_galerkin): the level-0
// operator of the coarse levels of DFSPH's solves, A_c = P^T A P / (dt^k S2), assembled once a
// step from the pairs (src/solver/dfsph/cells.rs says why and how the levels act), one invocation
// per group of the grouped walk (dispatched indirectly from group_args).
// Inputs (slot order): sorted_pos, slot_start, dfsph_rho, alpha, the groups `order` listed
// (group_range, group_args), the obstacles' boundary grid (bind group 1, boundary.wgsl).
// Output: coarse_op, per level-0 cell the 14 stored entries of its 27-point row (the centre,
// then the 13 offsets after it in (z, y, x) order), each a 64-bit fixed-point sum with 32
// fractional bits in (low, high) words, added with 32-bit atomics and a carry, so the sums
// do not depend on the order (cleared before the pass); after them one word, the count of
// particles in the solves (alpha != 0) that are no coarse member: the pressure's anchors.
// For member i (cell c, halves `upper`): u_a = sum_j m gradW_ij ([i coarse member] [a = 0] +
// [j coarse member] [a = corner of j's cell]) over its pairs in walk order (an image with its
// original's cell; corner bit per axis where j's cell differs from c, which then lies on i's
// side), then sum_b psi_b gradW_ib of the obstacles added to u_0 where i is a member. For
// corners a <= b, u_a . u_b / S2 goes into the row of a's cell at the offset to b's, or, where
// that offset points backwards, into the row of b's cell at the mirrored offset.
// Worked example, S2 = 1: u_0 = u_1 = (1, 0, 0) with i in the upper half along x -> 1 at the
// centre of c, 1 at c's +x entry, 1 at the centre of c + x.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<uniform> coarse: CoarseParams;
@group(0) @binding(4) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> slot_start: array<u32>;
@group(0) @binding(6) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(7) var<storage, read> alpha: array<f32>;
@group(0) @binding(8) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(9) var<uniform> group_args: vec4<u32>;
@group(0) @binding(10) var<storage, read_write> coarse_op: array<atomic<u32>>;

struct Member {
    i: u32,
    x: vec3<f32>,
    near: BoundaryNear,
    member: bool,
    cell: vec3<u32>,
    u0: vec3<f32>,
    u1: vec3<f32>,
    u2: vec3<f32>,
    u3: vec3<f32>,
    u4: vec3<f32>,
    u5: vec3<f32>,
    u6: vec3<f32>,
    u7: vec3<f32>,
}

struct Cand {
    cell: vec3<u32>,
    member: bool,
}

fn new_member(i: u32) -> Member {
    let x = sorted_pos[i].xyz;
    let z = vec3<f32>(0.0);
    return Member(
        i,
        x,
        boundary_near(x, params.h, fluid),
        coarse_member(dfsph_rho[i], alpha[i], coarse),
        coarse_cell(x, coarse).c,
        z, z, z, z, z, z, z, z,
    );
}

fn candidate(k: u32) -> Cand {
    return Cand(coarse_cell(sorted_pos[k].xyz, coarse).c, coarse_member(dfsph_rho[k], alpha[k], coarse));
}

fn add_corner(m: Member, a: u32, g: vec3<f32>) -> Member {
    var w = m;
    switch a {
        case 0u: { w.u0 = w.u0 + g; }
        case 1u: { w.u1 = w.u1 + g; }
        case 2u: { w.u2 = w.u2 + g; }
        case 3u: { w.u3 = w.u3 + g; }
        case 4u: { w.u4 = w.u4 + g; }
        case 5u: { w.u5 = w.u5 + g; }
        case 6u: { w.u6 = w.u6 + g; }
        default: { w.u7 = w.u7 + g; }
    }
    return w;
}

fn corner_sum(m: Member, a: u32) -> vec3<f32> {
    var u = m.u7;
    switch a {
        case 0u: { u = m.u0; }
        case 1u: { u = m.u1; }
        case 2u: { u = m.u2; }
        case 3u: { u = m.u3; }
        case 4u: { u = m.u4; }
        case 5u: { u = m.u5; }
        case 6u: { u = m.u6; }
        default: {}
    }
    return u;
}

fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, image: u32) -> Member {
    var w = m;
    let g = d * (fluid.mass * kernel_grad(r2));
    if w.member {
        w.u0 = w.u0 + g;
    }
    if c.member {
        let diff = c.cell != w.cell;
        let a = select(0u, 1u, diff.x) | select(0u, 2u, diff.y) | select(0u, 4u, diff.z);
        w = add_corner(w, a, g);
    }
    return w;
}

// The obstacles' boundary particles: sum psi_b gradW_ib (boundary.wgsl).
struct BoundarySums {
    grad: vec3<f32>,
}

fn boundary_pair(sums: BoundarySums, k: u32, d: vec3<f32>, r2: f32) -> BoundarySums {
    return BoundarySums(sums.grad + boundary_grad(k, d, kernel_grad(r2)));
}

// Adds the fixed-point value v to the 64-bit entry at word w: low word, then high word with
// the carry out of the low one (two's complement, wrapping).
fn add_fixed(w: u32, v: vec2<u32>) {
    let old = atomicAdd(&coarse_op[w], v.x);
    var carry = 0u;
    if old > 0xffffffffu - v.x {
        carry = 1u;
    }
    atomicAdd(&coarse_op[w + 1u], v.y + carry);
}

// The cell of corner a: c stepped along each axis of a's bits towards i's side.
fn corner_cell(c: vec3<u32>, upper: vec3<bool>, a: u32) -> vec3<i32> {
    let bits = vec3<bool>((a & 1u) != 0u, (a & 2u) != 0u, (a & 4u) != 0u);
    let step = select(vec3<i32>(0), select(vec3<i32>(-1), vec3<i32>(1), upper), bits);
    return vec3<i32>(c) + step;
}

var<workgroup> wg_anchors: atomic<u32>;

fn finish(m: Member, i: u32) {
    var w = m;
    if !w.member && alpha[i] != 0.0 {
        atomicAdd(&wg_anchors, 1u);
    }
    if w.member && near_obstacles(w.x) {
        let b = walk_boundary(w.x, BoundarySums(vec3<f32>(0.0)));
        w.u0 = w.u0 + b.grad;
    }
    let cc = coarse_cell(w.x, coarse);
    let dims = coarse.dims.xyz;
    for (var a = 0u; a < 8u; a = a + 1u) {
        let ua = corner_sum(w, a);
        let ca = corner_cell(cc.c, cc.upper, a);
        for (var b = a; b < 8u; b = b + 1u) {
            let ub = corner_sum(w, b);
            let v = (ua.x * ub.x + ua.y * ub.y + ua.z * ub.z) * coarse.inv_cell.w;
            if v != 0.0 {
                let cb = corner_cell(cc.c, cc.upper, b);
                let o = cb - ca;
                let k = u32((o.x + 1) + 3 * (o.y + 1) + 9 * (o.z + 1));
                var row = ca;
                var stored = k - 13u;
                if k < 13u {
                    row = cb;
                    stored = 13u - k;
                }
                let cell = coarse_index(vec3<u32>(row), dims);
                add_fixed(2u * (14u * cell + stored), to_fixed(v));
            }
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_galerkin(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    walk_listed_group(gid.x);
    workgroupBarrier();
    if lid.x == 0u {
        let anchors = atomicLoad(&wg_anchors);
        if anchors != 0u {
            let n0 = coarse.dims.x * coarse.dims.y * coarse.dims.z;
            atomicAdd(&coarse_op[28u * n0], anchors);
        }
    }
}
