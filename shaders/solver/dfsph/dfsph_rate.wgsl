// Stage `dfsph_rate` (CPU mirror: src/solver/dfsph/rate.rs dfsph_rate): a DFSPH solve's density
// change rate, the stiffness increment it asks for and the residual, one invocation per group
// of the grouped walk (dispatched indirectly from group_args). Iteration k (bind group 2) runs
// at k = 0 (the solve's start) and where its pressure pass did (the same decision,
// solve_again on iteration k - 1's total); it adds the residuals it counts, in units of 2^-24
// (fixed_residual), to the solve's total for k with 32-bit integer atomics and a carry word:
// integer sums do not depend on the order, so the total has the same bits on every device and
// on the CPU, and the next pass decides from it.
// Inputs (slot order): sorted_pos, slot_start, sorted_vel, dfsph_rho, alpha, kappa_sum (what
// the solve applied so far; cleared at its start), step_state[0] = dt, the groups `order`
// listed (group_range, group_args). Outputs: kappa (N), residual (N, e_i),
// totals[k] += (sum of fixed_residual over the counted residuals, carry, NaN flag).
// D_i = sum_j m (v_i - v_j) . gradW_ij, images with free-slip velocities (image_velocity),
// plus near an obstacle sum_b psi_b (v_i - v_b) . gradW_ib over its boundary particles (bind
// group 1, boundary.wgsl; v_b the surface's velocity).
// e_i (residual_of): (rho_i + dt D_i)/rho0 - 1 for the constant-density solve, D_i dt/rho0 for
// the divergence-free one (0 where alpha_i <= 0: too few neighbours). The increment moves
// kappa_sum by the Jacobi step omega |alpha_i| e_i rho0/dt^2 (jacobi_increment) and keeps it
// >= 0 (projected): expansion takes back pressure the solve applied, never more (Bender &
// Koschier 2017's solve, one-sided, as a projected Jacobi iteration on the total). The
// counted residual is |e_i| where kappa_sum > 0, max(e_i, 0) elsewhere (lcp_residual).
// omega (dfsph.relaxation, --relaxation) under-relaxes the Jacobi iteration, whose diagonal
// alone over-corrects short-wavelength modes (docs/results.md, what was tried).
// Worked example: D = 10, dt = 0.01, alpha = 1e-3, rho0 = 1000, omega = 1, kappa_sum = 0:
// divergence e = 1e-4, kappa = 1 (omega = 0.8: kappa = 0.8, the same residual).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<uniform> solve: SolveParams;
@group(0) @binding(4) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> slot_start: array<u32>;
@group(0) @binding(6) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(8) var<storage, read> alpha: array<f32>;
@group(0) @binding(9) var<uniform> step_state: vec4<f32>;
// kappa, residual and kappa_sum (dfsph_fields.wgsl).
@group(0) @binding(10) var<storage, read_write> solve_fields: array<f32>;
@group(0) @binding(11) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(12) var<uniform> group_args: vec4<u32>;
// (low, high, NaN flag, 0) per iteration (dfsph_pressure.wgsl).
@group(0) @binding(13) var<storage, read_write> totals: array<atomic<u32>>;
@group(2) @binding(0) var<uniform> iteration: Iteration;

// The workgroup's share of the total, added to totals once.
var<workgroup> wg_lo: atomic<u32>;
var<workgroup> wg_hi: atomic<u32>;
var<workgroup> wg_nan: atomic<u32>;

// Adds r to the workgroup's 64-bit count (wg_lo, wg_hi): the carry is known from the old
// low word.
fn tally(r: f32) {
    let v = fixed_residual(r);
    let old = atomicAdd(&wg_lo, v);
    if old > 0xffffffffu - v {
        atomicAdd(&wg_hi, 1u);
    }
    if is_nan(r) {
        atomicOr(&wg_nan, 1u);
    }
}

struct Member {
    i: u32,
    x: vec3<f32>,
    near: BoundaryNear,
    vi: vec3<f32>,
    rate: f32,
}

struct Cand {
    v: vec3<f32>,
}

fn new_member(i: u32) -> Member {
    let x = sorted_pos[i].xyz;
    return Member(i, x, boundary_near(x, params.h, fluid), sorted_vel[i].xyz, 0.0);
}

fn candidate(k: u32) -> Cand {
    return Cand(sorted_vel[k].xyz);
}

fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, image: u32) -> Member {
    var w = m;
    let vj = boundary_image_vector(c.v, image);
    let gv = d * (fluid.mass * kernel_grad(r2));
    let dv = w.vi - vj;
    w.rate = w.rate + (dv.x * gv.x + dv.y * gv.y + dv.z * gv.z);
    return w;
}

// The obstacles' part of the rate (boundary.wgsl): Σ psi_b (v - v_b) . gradW.
struct BoundarySums {
    rate: f32,
    v: vec3<f32>,
}

fn boundary_pair(sums: BoundarySums, k: u32, d: vec3<f32>, r2: f32) -> BoundarySums {
    var s = sums;
    s.rate = s.rate + boundary_rate(k, d, kernel_grad(r2), s.v);
    return s;
}

fn finish(m: Member, i: u32) {
    let dt = step_state[0];
    let a = alpha[i];
    var rate = m.rate;
    if near_obstacles(m.x) {
        rate = rate + walk_boundary(m.x, BoundarySums(0.0, m.vi)).rate;
    }
    let ks = solve_fields[kappa_sum_at(solve.capacity, solve.which, i)];
    let e = residual_of(solve.which, rate, dfsph_rho[i], a, dt, fluid.rest_density);
    let scale = fluid.rest_density / (dt * dt);
    solve_fields[kappa_at(i)] = projected(ks, jacobi_increment(solve.which, e, a, scale, dfsph.relaxation));
    solve_fields[residual_at(solve.capacity, i)] = e;
    tally(lcp_residual(e, ks));
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_rate(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
) {
    let k = iteration.index;
    let base = solve.which * (dfsph.max_iterations + 1u);
    var runs = k == 0u;
    if !runs {
        let j = base + k - 1u;
        let w = vec4<u32>(
            atomicLoad(&totals[4u * j]),
            atomicLoad(&totals[4u * j + 1u]),
            atomicLoad(&totals[4u * j + 2u]),
            0u,
        );
        runs = solve_again(k - 1u, w, solve, dfsph.max_iterations);
    }
    if runs {
        walk_listed_group(gid.x);
    }
    workgroupBarrier();
    if lid.x == 0u && runs {
        let j = 4u * (base + k);
        let lo = atomicLoad(&wg_lo);
        let old = atomicAdd(&totals[j], lo);
        var carry = 0u;
        if old > 0xffffffffu - lo {
            carry = 1u;
        }
        atomicAdd(&totals[j + 1u], atomicLoad(&wg_hi) + carry);
        if atomicLoad(&wg_nan) != 0u {
            atomicOr(&totals[j + 2u], 1u);
        }
    }
}
