// Stage `dfsph_stats` (CPU mirror: src/cpu/dfsph/mod.rs dfsph_step, its DfsphStats): one
// workgroup reduces the density error at the new positions (the block sums and maxima of
// `dfsph_density`, lane l taking blocks l, l + 256, ... then the tree) and gathers the
// step's statistics block, the few bytes the host reads.
// Inputs: error_sums, error_maxima (blocks), solve_v, solve_d (control blocks), step_state.
// Output: stats (struct DfsphStats: iterations_v, residual_v, iterations_d, residual_d,
// error_mean, error_max, dt, v_max).
// Worked example: N = 2, error sums [0.002], maxima [0.0015] -> mean 0.001, max 0.0015.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<storage, read> error_sums: array<f32>;
@group(0) @binding(3) var<storage, read> error_maxima: array<f32>;
@group(0) @binding(4) var<storage, read> solve_v: array<u32, 8>;
@group(0) @binding(5) var<storage, read> solve_d: array<u32, 8>;
@group(0) @binding(6) var<storage, read> step_state: array<f32, 4>;
@group(0) @binding(7) var<storage, read_write> stats: DfsphStats;

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
        stats.iterations_v = solve_v[3];
        stats.residual_v = bitcast<f32>(solve_v[5]);
        stats.iterations_d = solve_d[3];
        stats.residual_d = bitcast<f32>(solve_d[5]);
        stats.error_mean = r.x / f32(params.n);
        stats.error_max = r.y;
        stats.dt = step_state[0];
        stats.v_max = step_state[1];
    }
}
