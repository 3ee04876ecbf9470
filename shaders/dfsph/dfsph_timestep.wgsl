// Stage `dfsph_timestep` (CPU mirror: src/cpu/dfsph/timestep.rs dfsph_timestep): reduces
// v_max = max |v + a dt_prev| (the speed before the pressure solve) and S_max = max accel.w
// (the explicit viscous terms' rate, see dfsph_accel) in two levels,
// `dfsph_timestep_blocks` (B workgroups, a block of particles each) then `dfsph_timestep` (one
// workgroup over the blocks; a max is exact in any order, so the CPU's fold in particle order
// gives the same bits, and one workgroup alone took 1.7 ms of a 73 ms step at 1M on an H200),
// then dt = clamp(min(cfl s / v_max, K viscous_limit / S_max), dt_min, dt_max) (cfl s / v_max
// read as dt_max at rest, the viscous term left out where S_max = 0), or the forced dt, taken
// in n = clamp(ceil(dt / (viscous_limit / S_max)), 1, K) substeps of dt / n (K =
// viscous_substeps; n = 1 where S_max = 0): explicit subcycling of the stiff viscous term,
// every substep within its stability limit. Writes the indirect arguments of substeps
// 2..K: `dfsph_accel` with the walk's group dispatch and `dfsph_predict` with ceil(N / 256)
// workgroups for a substep k <= n, 0 workgroups (nothing runs) past n.
// Inputs: sorted_vel, accel (N), step_state[0] = dt_prev, group_args; blocks (B vec2: each
// block's v_max, S_max) in between.
// Output: step_state = (dt, v_max, dt_prev, dt / n); substep_args, 8 words per substep k
// from 2: (accel x, y, z, n, predict x, 1, 1, 0).
// Worked example: s = 0.01, cfl = 0.4, v_max = 2 m/s, S_max = 400 /s, viscous_limit 0.5,
// K = 2 -> limit 1.25 ms, dt = min(2 ms, 2.5 ms) = 2 ms in n = ceil(1.6) = 2 substeps of 1 ms.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> step_state: array<f32, 4>;
@group(0) @binding(5) var<storage, read> group_args: array<u32, 4>;
@group(0) @binding(6) var<storage, read_write> substep_args: array<u32>;
@group(0) @binding(7) var<storage, read_write> blocks: array<vec2<f32>>;

// Level 1: workgroup w of the B dispatched takes particles [w c, (w + 1) c), c = ceil(N / B),
// and stores that block's maxima (0 for an empty block, which never wins: both are >= 0); B as
// in timestep.wgsl (src/gpu/neighbours.rs timestep_blocks).
@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_timestep_blocks(
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(workgroup_id) wid3: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let lid = lid3.x;
    let dt_prev = step_state[0];
    let span = block_span(wid3.x, nwg.x, params.n);
    var v_max = 0.0;
    var s_max = 0.0;
    for (var k = span.x + lid; k < span.y; k = k + WORKGROUP_SIZE) {
        let a = accel[k];
        v_max = max(v_max, length(sorted_vel[k].xyz + a.xyz * dt_prev));
        s_max = max(s_max, a.w);
    }
    let vm = reduce_block(lid, 0.0, v_max).y;
    // Every lane has read lane 0's result before the second reduction overwrites it.
    workgroupBarrier();
    let sm = reduce_block(lid, 0.0, s_max).y;
    if lid == 0u {
        blocks[wid3.x] = vec2<f32>(vm, sm);
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_timestep(@builtin(local_invocation_id) lid3: vec3<u32>) {
    let lid = lid3.x;
    let dt_prev = step_state[0];
    var v_max = 0.0;
    var s_max = 0.0;
    for (var k = lid; k < arrayLength(&blocks); k = k + WORKGROUP_SIZE) {
        let b = blocks[k];
        v_max = max(v_max, b.x);
        s_max = max(s_max, b.y);
    }
    let vm = reduce_block(lid, 0.0, v_max).y;
    // Every lane has read lane 0's result before the second reduction overwrites it.
    workgroupBarrier();
    let sm = reduce_block(lid, 0.0, s_max).y;
    if lid == 0u {
        let most = f32(dfsph.viscous_substeps);
        var limit = 0.0;
        if sm > 0.0 {
            limit = dfsph.viscous_limit / sm;
        }
        var dt = dfsph.dt_max;
        if dfsph.dt_fixed > 0.0 {
            dt = dfsph.dt_fixed;
        } else {
            if vm > 0.0 {
                dt = dfsph.cfl * dfsph.spacing / vm;
            }
            if sm > 0.0 {
                dt = min(dt, most * limit);
            }
            dt = min(max(dt, dfsph.dt_min), dfsph.dt_max);
        }
        var n = 1.0;
        if sm > 0.0 {
            n = clamp(ceil(dt / limit), 1.0, most);
        }
        step_state[0] = dt;
        step_state[1] = vm;
        step_state[2] = dt_prev;
        step_state[3] = dt / n;
        let count = u32(n);
        let walk = group_args[0];
        let each = (params.n + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
        for (var k = 1u; k < dfsph.viscous_substeps; k = k + 1u) {
            let on = k < count;
            let b = (k - 1u) * 8u;
            substep_args[b] = select(0u, walk, on);
            substep_args[b + 1u] = group_args[1];
            substep_args[b + 2u] = group_args[2];
            substep_args[b + 3u] = count;
            substep_args[b + 4u] = select(0u, each, on);
            substep_args[b + 5u] = 1u;
            substep_args[b + 6u] = 1u;
            substep_args[b + 7u] = 0u;
        }
    }
}
