// Stage `dfsph_stats` (CPU mirror: src/cpu/dfsph/mod.rs dfsph_step, its DfsphStats): one
// workgroup reduces the density error at the new positions (the block sums and maxima of
// `dfsph_density`, lane l taking blocks l, l + 256, ... then the tree), replays each solve's
// decisions on its residual totals to find how many iterations ran and its last mean
// residual, and gathers the step's statistics block, the few bytes the host reads.
// Inputs: error_sums, error_maxima (blocks), totals (both solves), the solves' blocks, the
// iterations each solve encoded (bind groups 1 and 2, `iteration` of the last), step_state.
// Output: stats (struct DfsphStats: iterations_v, residual_v, iterations_d, residual_d,
// error_mean, error_max, dt, v_max).
// Worked example: N = 2, error sums [0.002], maxima [0.0015] -> mean 0.001, max 0.0015; a
// solve that encoded 5 iterations whose total after iteration 3 is at most its threshold
// (and 3 >= its fewest) ran 3.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<storage, read> error_sums: array<f32>;
@group(0) @binding(3) var<storage, read> error_maxima: array<f32>;
@group(0) @binding(4) var<storage, read> totals: array<vec4<u32>>;
@group(0) @binding(5) var<uniform> solve_v: SolveParams;
@group(0) @binding(6) var<uniform> solve_d: SolveParams;
@group(0) @binding(7) var<storage, read> step_state: array<f32, 4>;
@group(0) @binding(8) var<storage, read_write> stats: DfsphStats;
@group(1) @binding(0) var<uniform> encoded_v: Iteration;
@group(2) @binding(0) var<uniform> encoded_d: Iteration;

// (iterations run, mean residual bits) of a solve that encoded `cap` iterations: the first j
// after which it stopped, else cap (src/cpu/dfsph/control.rs dfsph_control).
fn outcome(s: SolveParams, cap: u32) -> vec2<u32> {
    let base = s.which * (dfsph.max_iterations + 1u);
    var it = cap;
    for (var j = 0u; j < cap; j = j + 1u) {
        if !solve_again(j, totals[base + j], s, dfsph.max_iterations) {
            it = j;
            break;
        }
    }
    return vec2<u32>(it, bitcast<u32>(mean_of(totals[base + it], params.n)));
}

// DFSPH's statistics block (src/core/stats.rs DfsphStats, field for field).
struct DfsphStats {
    iterations_v: u32,
    residual_v: f32,
    iterations_d: u32,
    residual_d: f32,
    error_mean: f32,
    error_max: f32,
    dt: f32,
    v_max: f32,
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_stats(@builtin(local_invocation_id) lid: vec3<u32>) {
    let l = lid.x;
    var s = 0.0;
    var m = 0.0;
    for (var j = l; j < dfsph.blocks; j = j + WORKGROUP_SIZE) {
        s = s + error_sums[j];
        m = max(m, error_maxima[j]);
    }
    let r = reduce_block(l, s, m);
    if l == 0u {
        let v = outcome(solve_v, encoded_v.index);
        let d = outcome(solve_d, encoded_d.index);
        stats.iterations_v = v.x;
        stats.residual_v = bitcast<f32>(v.y);
        stats.iterations_d = d.x;
        stats.residual_d = bitcast<f32>(d.y);
        stats.error_mean = r.x / f32(params.n);
        stats.error_max = r.y;
        stats.dt = step_state[0];
        stats.v_max = step_state[1];
    }
}
