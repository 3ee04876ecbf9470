// Stage `dfsph_predict` (CPU mirror: src/cpu/dfsph/predict.rs dfsph_predict): one substep of the
// non-pressure accelerations, v <- v + a dt_sub (dt_sub = dt / n, n the substeps
// dfsph_timestep chose); after the last, v is v*, the velocity the constant-density solve
// corrects.
// Inputs: accel (N), step_state[3] = dt_sub. In/out: sorted_vel (N, slot order).
// Worked example: v = (1, 0, 0), a = (0, -10, 0), dt_sub = 0.01 -> v = (1, -0.1, 0).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> step_state: array<f32, 4>;
@group(0) @binding(3) var<storage, read_write> sorted_vel: array<vec4<f32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_predict(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    sorted_vel[k] = vec4<f32>(sorted_vel[k].xyz + accel[k].xyz * step_state[3], 0.0);
}
