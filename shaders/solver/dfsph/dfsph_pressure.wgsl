// Stage `dfsph_pressure` (CPU mirror: src/solver/dfsph/pressure.rs dfsph_pressure): the velocity update
// of a DFSPH solve, one invocation per group of the grouped walk (dispatched indirectly from
// group_args). Iteration k >= 1 (bind group 2, `iteration`) runs only if the solve goes on
// after iteration k - 1's rate pass: every invocation decides from that pass's residual
// total (totals, solve_again in common.wgsl), so no control pass runs between them. The
// increments may be negative (pressure taken back, never below zero: dfsph_rate.wgsl).
// Inputs (slot order): sorted_pos, slot_start, dfsph_rho, kappa, step_state[0] = dt, the
// groups `order` listed (group_range, group_args).
// Outputs: sorted_vel (in place) v_i -= dt sum_j m (kappa_i/rho_i + kappa_j/rho_j) gradW_ij,
// images with their original's kappa and rho (the symmetric pressure gradient with
// p_i = kappa_i rho_i; Bender & Koschier 2017, eq. 12), and near an obstacle
// v_i -= dt sum_b psi_b (kappa_i/rho_i) gradW_ib over its boundary particles (bind group 1,
// boundary.wgsl; one-sided, as SPlisHSPlasH applies Akinci et al. 2012), whose power
// against the surface's velocity, -sum_b (psi_b (kappa_i/rho_i) gradW_ib) . v_b, it adds to
// obstacle_power (cleared at the step's start; the energy check credits it); kappa_sum (the
// solve's) += kappa_i.
// Worked example (Wendland C2), h = 1, m = 1: two particles 0.5 apart, rho = 1, kappa = 1
// each, dt = 0.1: |gradW| = 210/pi * 0.125 * 0.5 = 4.178, each moves apart by
// dt * 2 * 4.178 = 0.836 m/s.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<uniform> solve: SolveParams;
@group(0) @binding(4) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> slot_start: array<u32>;
@group(0) @binding(6) var<storage, read> dfsph_rho: array<f32>;
// kappa and kappa_sum (dfsph_fields.wgsl).
@group(0) @binding(7) var<storage, read_write> solve_fields: array<f32>;
@group(0) @binding(8) var<uniform> step_state: vec4<f32>;
@group(0) @binding(9) var<storage, read_write> sorted_vel: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(11) var<uniform> group_args: vec4<u32>;
@group(0) @binding(12) var<storage, read_write> obstacle_power: array<f32>;
// Each rate pass's residual total, (low, high, NaN flag, 0) per iteration, the divergence
// solve's max_iterations + 1 first, then the density solve's.
@group(0) @binding(13) var<storage, read> totals: array<vec4<u32>>;
@group(2) @binding(0) var<uniform> iteration: Iteration;

struct Member {
    i: u32,
    x: vec3<f32>,
    near: BoundaryNear,
    ki: f32,
    acc: vec3<f32>,
}

// kappa_j / rho_j, once per candidate (the same bits as per pair).
struct Cand {
    kj: f32,
}

fn new_member(i: u32) -> Member {
    let x = sorted_pos[i].xyz;
    return Member(i, x, boundary_near(x, params.h, fluid), solve_fields[kappa_at(i)] / dfsph_rho[i], vec3<f32>(0.0));
}

fn candidate(k: u32) -> Cand {
    return Cand(solve_fields[kappa_at(k)] / dfsph_rho[k]);
}

fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, image: u32) -> Member {
    var w = m;
    let gv = d * (fluid.mass * kernel_grad(r2));
    w.acc = w.acc + gv * (w.ki + c.kj);
    return w;
}

// An obstacle's boundary particle pushes with i's stiffness alone (boundary.wgsl):
// Σ psi_b (kappa_i/rho_i) gradW, and the push's power against the surface's velocity.
struct BoundarySums {
    push: vec3<f32>,
    ki: f32,
    power: f32,
}

fn boundary_pair(sums: BoundarySums, k: u32, d: vec3<f32>, r2: f32) -> BoundarySums {
    var s = sums;
    let t = boundary_pressure(k, d, kernel_grad(r2), s.ki);
    s.push = s.push + t.xyz;
    s.power = s.power + t.w;
    return s;
}

fn finish(m: Member, i: u32) {
    let dt = step_state[0];
    var acc = m.acc;
    if near_obstacles(m.x) {
        let b = walk_boundary(m.x, BoundarySums(vec3<f32>(0.0), m.ki, 0.0));
        acc = acc + b.push;
        // The acceleration the obstacles give is -push: its power per unit mass.
        obstacle_power[i] = obstacle_power[i] - b.power;
    }
    sorted_vel[i] = vec4<f32>(sorted_vel[i].xyz - acc * dt, 0.0);
    let s = kappa_sum_at(solve.capacity, solve.which, i);
    solve_fields[s] = solve_fields[s] + solve_fields[kappa_at(i)];
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_pressure(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = iteration.index;
    let base = solve.which * (dfsph.max_iterations + 1u);
    // No pressure pass runs at k = 0 (iteration 0 is the solve's start), but the test stays:
    // without it this pass crashed llvmpipe (Mesa 22.3.6, measured).
    if k == 0u || solve_again(k - 1u, totals[base + k - 1u], solve, dfsph.max_iterations) {
        walk_listed_group(gid.x);
    }
}
