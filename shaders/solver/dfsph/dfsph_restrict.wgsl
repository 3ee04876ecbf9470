// Stage `dfsph_restrict` (CPU mirror: src/solver/dfsph/restrict.rs dfsph_restrict): a DFSPH
// solve's residual summed onto the level-0 coarse cells after the rate pass of iteration k
// (bind group 1), one invocation per particle; it runs when the solve goes on after that rate
// pass (solve_again on its total, as the next iteration's passes decide).
// Inputs (slot order): sorted_pos, residual (the rate pass's e_i), kappa_sum (the solve's),
// dfsph_rho, alpha, totals. Output: coarse_rhs, per cell sum to_fixed(e_i) over the coarse
// members in play there (coarse_member, in_play in common.wgsl), 64-bit fixed point in
// (low, high) words added with atomics and a carry (cleared before the pass).
// Worked example: two members in play in cell 5 with e = 1e-4 and -2.5e-5: coarse_rhs[5] =
// floor(1e-4 2^32) + floor(-2.5e-5 2^32) = 429496 - 107375 = 322121.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<uniform> solve: SolveParams;
@group(0) @binding(3) var<uniform> coarse: CoarseParams;
@group(0) @binding(4) var<storage, read> sorted_pos: array<vec4<f32>>;
// residual and kappa_sum (dfsph_fields.wgsl).
@group(0) @binding(5) var<storage, read> solve_fields: array<f32>;
@group(0) @binding(6) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(7) var<storage, read> alpha: array<f32>;
@group(0) @binding(8) var<storage, read> totals: array<vec4<u32>>;
@group(0) @binding(9) var<storage, read_write> coarse_rhs: array<atomic<u32>>;
@group(1) @binding(0) var<uniform> iteration: Iteration;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_restrict(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    let k = iteration.index;
    let base = solve.which * (dfsph.max_iterations + 1u);
    if i >= params.n || !solve_again(k, totals[base + k], solve, dfsph.max_iterations) {
        return;
    }
    let e = solve_fields[residual_at(solve.capacity, i)];
    let a = alpha[i];
    if coarse_member(dfsph_rho[i], a, coarse) && in_play(solve.which, k, e, solve_fields[kappa_sum_at(solve.capacity, solve.which, i)], a) {
        let cell = coarse_index(coarse_cell(sorted_pos[i].xyz, coarse).c, coarse.dims.xyz);
        let v = to_fixed(e);
        let old = atomicAdd(&coarse_rhs[2u * cell], v.x);
        var carry = 0u;
        if old > 0xffffffffu - v.x {
            carry = 1u;
        }
        atomicAdd(&coarse_rhs[2u * cell + 1u], v.y + carry);
    }
}
