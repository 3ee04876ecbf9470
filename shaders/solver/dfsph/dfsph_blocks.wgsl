// Stage `dfsph_blocks` (CPU mirror: src/solver/dfsph/blocks.rs block_sums, block_maxima): per
// workgroup of 256 particles, the sum and the maximum of a per-particle value (a solve's
// residual, the density error) in the fixed tree of reduce_block, lanes past N padded with 0;
// dfsph_control and dfsph_stats fold the blocks. The grouped walks give one invocation a
// group of particles, so they store per particle and this pass reduces.
// Inputs: values (N). Outputs: sums, maxima (one per block).
// Worked example: values [0.25, 0.5] -> sums [0.75], maxima [0.5].

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> values: array<f32>;
@group(0) @binding(2) var<storage, read_write> sums: array<f32>;
@group(0) @binding(3) var<storage, read_write> maxima: array<f32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_blocks(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    var v = 0.0;
    if gid.x < params.n {
        v = values[gid.x];
    }
    let r = reduce_block(lid.x, v, v);
    if lid.x == 0u {
        sums[wid.x] = r.x;
        maxima[wid.x] = r.y;
    }
}
