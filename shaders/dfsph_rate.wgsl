// Stage `dfsph_rate` (CPU mirror: src/cpu/dfsph.rs dfsph_rate): a DFSPH solve's density
// change rate, the stiffness it asks for, and the residual, one particle per invocation on
// the shared walk, dispatched indirectly from the solve's control block.
// Inputs (slot order): sorted_pos, slot_start, sorted_vel, dfsph_rho, alpha, step_state[0]
// = dt. Outputs: kappa (N), and per workgroup of 256 the sum of the residuals (residual_sums,
// the fixed tree of reduce_block).
// D_i = sum_j m (v_i - v_j) . gradW_ij, images with free-slip velocities (image_velocity).
// Divergence-free solve: d = max(D_i, 0) (0 where alpha_i <= 0: too few neighbours),
// kappa_i = d / dt * alpha_i, residual d dt / rho0. Constant-density solve:
// rho* = max(rho_i + dt D_i, rho0), kappa_i = (rho* - rho0) / (dt dt) * |alpha_i|, residual
// rho*/rho0 - 1 (Bender & Koschier 2017).
// Worked example: D = 10, dt = 0.01, alpha = 1e-3, rho0 = 1000: divergence kappa = 1,
// residual 1e-4.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<uniform> solve: SolveParams;
@group(0) @binding(4) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> slot_start: array<u32>;
@group(0) @binding(6) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(8) var<storage, read> alpha: array<f32>;
@group(0) @binding(9) var<storage, read> step_state: array<f32, 4>;
@group(0) @binding(10) var<storage, read_write> kappa: array<f32>;
@group(0) @binding(11) var<storage, read_write> residual_sums: array<f32>;

var<private> particle_residual: f32;

struct Walker {
    i: u32,
    x: vec3<f32>,
    walls: WallPlanes,
    vi: vec3<f32>,
    rate: f32,
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    let x = sorted_pos[first].xyz;
    return Walker(first, x, wall_planes(x, params.h, fluid), sorted_vel[first].xyz, 0.0);
}

fn dfsph_pair(w: ptr<function, Walker>, j: u32, d: vec3<f32>, r2: f32, axes: vec3<bool>) {
    let vj = image_velocity(sorted_vel[j].xyz, axes);
    let gv = d * (fluid.mass * cubic_grad(r2));
    let dv = (*w).vi - vj;
    (*w).rate = (*w).rate + (dv.x * gv.x + dv.y * gv.y + dv.z * gv.z);
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    let dt = step_state[0];
    let a = alpha[first];
    let rate = (*w).rate;
    if solve.which == 0u {
        var d = 0.0;
        if a > 0.0 {
            d = max(rate, 0.0);
        }
        kappa[first] = d / dt * max(a, 0.0);
        particle_residual = d * dt / fluid.rest_density;
    } else {
        let rho0 = fluid.rest_density;
        let rho_star = max(dfsph_rho[first] + dt * rate, rho0);
        kappa[first] = (rho_star - rho0) / (dt * dt) * abs(a);
        particle_residual = rho_star / rho0 - 1.0;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_rate(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    particle_residual = 0.0;
    if gid.x < params.n {
        walk_one(gid.x);
    }
    let r = reduce_block(lid.x, particle_residual, 0.0);
    if lid.x == 0u {
        residual_sums[wid.x] = r.x;
    }
}
