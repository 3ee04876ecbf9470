// Stage `dfsph_prolong` (CPU mirror: src/solver/dfsph/prolong.rs dfsph_prolong): the coarse
// correction of a DFSPH solve brought back to the particles after the rate pass of iteration k
// (bind group 1), one invocation per particle; it runs when the solve goes on after that rate
// pass (solve_again).
// Inputs (slot order): sorted_pos, residual (the rate pass's e_i), kappa_sum (the solve's),
// dfsph_rho, alpha, work[0 .. n0] (dfsph_coarse's y on the level-0 cells), step_state[0] = dt,
// totals. Output: kappa, the next pressure pass's increments: for a coarse member in play
// (coarse_member, in_play), projected(kappa_sum, J + rho_i y_c / S2 rho0/dt^2) with J the
// Jacobi increment (jacobi_increment) and c its cell; elsewhere the rate pass's, unchanged.
// Worked example: kappa_sum = 2, J = 0.5, rho y / S2 rho0/dt^2 = -3 -> kappa = -2 (all the
// pressure taken back, none below zero).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<uniform> solve: SolveParams;
@group(0) @binding(4) var<uniform> coarse: CoarseParams;
@group(0) @binding(5) var<storage, read> sorted_pos: array<vec4<f32>>;
// residual, kappa_sum and kappa (dfsph_fields.wgsl).
@group(0) @binding(6) var<storage, read_write> solve_fields: array<f32>;
@group(0) @binding(7) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(8) var<storage, read> alpha: array<f32>;
@group(0) @binding(9) var<storage, read> work: array<f32>;
@group(0) @binding(10) var<uniform> step_state: vec4<f32>;
@group(0) @binding(11) var<storage, read> totals: array<vec4<u32>>;
@group(1) @binding(0) var<uniform> iteration: Iteration;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_prolong(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let k = iteration.index;
    let base = solve.which * (dfsph.max_iterations + 1u);
    if i >= params.n || !solve_again(k, totals[base + k], solve, dfsph.max_iterations) {
        return;
    }
    let e = solve_fields[residual_at(solve.capacity, i)];
    let ks = solve_fields[kappa_sum_at(solve.capacity, solve.which, i)];
    let a = alpha[i];
    let rho = dfsph_rho[i];
    if coarse_member(rho, a, coarse) && in_play(solve.which, k, e, ks, a) {
        let dt = step_state[0];
        let scale = fluid.rest_density / (dt * dt);
        let yc = work[coarse_index(coarse_cell(sorted_pos[i].xyz, coarse).c, coarse.dims.xyz)];
        let inc = jacobi_increment(solve.which, e, a, scale, dfsph.relaxation)
            + rho * yc * coarse.inv_cell.w * scale;
        solve_fields[kappa_at(i)] = projected(ks, inc);
    }
}
