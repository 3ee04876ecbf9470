// Stage `integrate` (CPU mirror: src/cpu/wcsph/integrate.rs): symplectic Euler, v' = v + a·dt,
// x' = x + v'·dt, then the tank: a coordinate past a wall is put back on it
// and an outward normal speed becomes −restitution times itself, so walls never add energy.
// dt from the maxima `timestep` folded (step_of below; every invocation computes it from the
// same three words, and invocation 0 stores step_state = (dt, v_max, a_max, s_max) for the
// statistics and the host).
// Inputs (slot order): sorted_pos, sorted_vel, sorted_id, accel (N); maxima (v, a, s bits).
// Outputs: positions, velocities, particle_id (N): the next state, in this step's slot order;
// step_state.
// Worked example, tank [0, 1]³, e = 0, dt = 0.1: x = (0.5, 0.05, 0.5), v = (1, −1, 0),
// a = 0 → x' = (0.6, 0, 0.5), v' = (1, 0, 0).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> sorted_id: array<u32>;
@group(0) @binding(5) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> step_state: array<f32, 4>;
@group(0) @binding(7) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> velocities: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read_write> particle_id: array<u32>;
@group(0) @binding(10) var<storage, read> maxima: array<u32, 4>;

// dt = min(dt_max, cfl h / s_max, 0.25 sqrt(h / a_max)), or dt_fixed (timestep.wgsl).
fn step_of(sm: f32, am: f32) -> f32 {
    var dt = min(fluid.dt_max, fluid.cfl * params.h / sm);
    if am > 0.0 {
        dt = min(dt, 0.25 * sqrt(params.h / am));
    }
    if fluid.dt_fixed > 0.0 {
        dt = fluid.dt_fixed;
    }
    return dt;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn integrate(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    let vm = bitcast<f32>(maxima[0]);
    let am = bitcast<f32>(maxima[1]);
    let sm = bitcast<f32>(maxima[2]);
    let dt = step_of(sm, am);
    if k == 0u {
        step_state[0] = dt;
        step_state[1] = vm;
        step_state[2] = am;
        step_state[3] = sm;
    }
    if k >= params.n {
        return;
    }
    var v = sorted_vel[k].xyz + accel[k].xyz * dt;
    var x = sorted_pos[k].xyz + v * dt;
    clamp_to_tank(&x, &v, fluid);
    positions[k] = vec4<f32>(x, 0.0);
    velocities[k] = vec4<f32>(v, 0.0);
    particle_id[k] = sorted_id[k];
}
