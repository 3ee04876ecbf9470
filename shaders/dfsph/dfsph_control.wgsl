// Stage `dfsph_control` (CPU mirror: src/cpu/dfsph/control.rs dfsph_control): one workgroup reduces
// the block sums of a solve's residuals (lane l adds blocks l, l + 256, ... in order, then
// the tree of reduce_block), and decides on the GPU whether another iteration runs: while
// fewer than min_iterations ran, or the mean residual exceeds eta, up to max_iterations.
// It writes the next iteration's indirect dispatch size (blocks, or 0 once done, so the
// passes of a converged solve dispatch nothing). Nothing is read back by the host.
// Inputs: residual_sums (blocks). In/out: solve_state = (x, 1, 1, iterations, done,
// residual bits, 0, 0).
// Worked example: N = 2, sums [0.3], eta = 0.1, 1 iteration done, min 1 -> mean 0.15 > eta:
// iterations 2, x = blocks.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<uniform> solve: SolveParams;
@group(0) @binding(3) var<storage, read> residual_sums: array<f32>;
@group(0) @binding(4) var<storage, read_write> solve_state: array<u32, 8>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_control(@builtin(local_invocation_id) lid: vec3<u32>) {
    let l = lid.x;
    var acc = 0.0;
    for (var j = l; j < dfsph.blocks; j = j + WORKGROUP_SIZE) {
        acc = acc + residual_sums[j];
    }
    let total = reduce_block(l, acc, 0.0).x;
    if l == 0u && solve_state[4] == 0u {
        let mean = total / f32(params.n);
        let it = solve_state[3];
        solve_state[5] = bitcast<u32>(mean);
        if it < dfsph.max_iterations && (it < solve.min_iterations || mean > solve.eta) {
            solve_state[3] = it + 1u;
            solve_state[0] = dfsph.blocks;
        } else {
            solve_state[4] = 1u;
            solve_state[0] = 0u;
        }
    }
}
