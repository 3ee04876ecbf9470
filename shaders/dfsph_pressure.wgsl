// Stage `dfsph_pressure` (CPU mirror: src/cpu/dfsph.rs dfsph_pressure): the velocity update
// of a DFSPH solve, one particle per invocation on the shared walk, dispatched indirectly
// from the solve's control block (0 workgroups once the solve has converged).
// Inputs (slot order): sorted_pos, slot_start, dfsph_rho, kappa, step_state[0] = dt.
// Outputs: sorted_vel (in place) v_i -= dt sum_j m (kappa_i/rho_i + kappa_j/rho_j) gradW_ij,
// images with their original's kappa and rho (the symmetric pressure gradient with
// p_i = kappa_i rho_i; Bender & Koschier 2017, eq. 12); kappa_sum (the solve's component)
// += kappa_i.
// Worked example, h = 1, m = 1: two particles 0.5 apart, rho = 1, kappa = 1 each, dt = 0.1:
// each moves apart by dt * 2 * (48/pi/4) = 0.764 m/s.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<uniform> solve: SolveParams;
@group(0) @binding(4) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read> slot_start: array<u32>;
@group(0) @binding(6) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(7) var<storage, read> kappa: array<f32>;
@group(0) @binding(8) var<storage, read> step_state: array<f32, 4>;
@group(0) @binding(9) var<storage, read_write> sorted_vel: array<vec4<f32>>;
@group(0) @binding(10) var<storage, read_write> kappa_sum: array<vec2<f32>>;

struct Walker {
    i: u32,
    x: vec3<f32>,
    walls: WallPlanes,
    ki: f32,
    acc: vec3<f32>,
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    let x = sorted_pos[first].xyz;
    return Walker(first, x, wall_planes(x, params.h, fluid), kappa[first] / dfsph_rho[first], vec3<f32>(0.0));
}

fn dfsph_pair(w: ptr<function, Walker>, j: u32, d: vec3<f32>, r2: f32, axes: vec3<bool>) {
    let kj = kappa[j] / dfsph_rho[j];
    let gv = d * (fluid.mass * cubic_grad(r2));
    (*w).acc = (*w).acc + gv * ((*w).ki + kj);
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    let dt = step_state[0];
    sorted_vel[first] = vec4<f32>(sorted_vel[first].xyz - (*w).acc * dt, 0.0);
    if solve.which == 0u {
        kappa_sum[first].x = kappa_sum[first].x + kappa[first];
    } else {
        kappa_sum[first].y = kappa_sum[first].y + kappa[first];
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_pressure(@builtin(global_invocation_id) gid: vec3<u32>) {
    if gid.x < params.n {
        walk_one(gid.x);
    }
}
