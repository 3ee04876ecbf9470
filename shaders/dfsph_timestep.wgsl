// Stage `dfsph_timestep` (CPU mirror: src/cpu/dfsph.rs dfsph_timestep): one workgroup
// reduces v_max = max |v + a dt_prev| (the speed before the pressure solve) and S_max = max
// accel.w (the explicit viscous terms' rate, see dfsph_accel; a max is exact in any order),
// then dt = clamp(min(cfl s / v_max, viscous_limit / S_max), dt_min, dt_max) (cfl s / v_max
// read as dt_max at rest, the viscous limit left out where S_max = 0), or the forced dt.
// Inputs: sorted_vel, accel (N), step_state[0] = dt_prev.
// Output: step_state = (dt, v_max, dt_prev, 0).
// Worked example: s = 0.01, cfl = 0.4, v_max = 2 m/s, S_max = 200 /s, viscous_limit 0.5
// -> dt = min(2 ms, 2.5 ms) = 2 ms.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> step_state: array<f32, 4>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_timestep(@builtin(local_invocation_id) lid3: vec3<u32>) {
    let lid = lid3.x;
    let dt_prev = step_state[0];
    var v_max = 0.0;
    var s_max = 0.0;
    for (var k = lid; k < params.n; k = k + WORKGROUP_SIZE) {
        let a = accel[k];
        v_max = max(v_max, length(sorted_vel[k].xyz + a.xyz * dt_prev));
        s_max = max(s_max, a.w);
    }
    let vm = reduce_block(lid, 0.0, v_max).y;
    // Every lane has read lane 0's result before the second reduction overwrites it.
    workgroupBarrier();
    let sm = reduce_block(lid, 0.0, s_max).y;
    if lid == 0u {
        var dt = dfsph.dt_max;
        if dfsph.dt_fixed > 0.0 {
            dt = dfsph.dt_fixed;
        } else {
            if vm > 0.0 {
                dt = dfsph.cfl * dfsph.spacing / vm;
            }
            if sm > 0.0 {
                dt = min(dt, dfsph.viscous_limit / sm);
            }
            dt = min(max(dt, dfsph.dt_min), dfsph.dt_max);
        }
        step_state[0] = dt;
        step_state[1] = vm;
        step_state[2] = dt_prev;
        step_state[3] = 0.0;
    }
}
