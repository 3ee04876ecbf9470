// Stage `timestep` (CPU mirror: src/cpu/timestep.rs): one workgroup reduces the largest speed
// and acceleration, then dt = min(dt_max, cfl·h/(c + v_max), 0.25·√(h/a_max)), or dt_fixed.
// Inputs: sorted_vel, accel (N). Output: step_state = (dt, v_max, a_max, 0).
// Worked example: h = 0.02, c = 20, cfl = 0.4, v_max = 0, small a_max → dt = 4e-4 s.
// One workgroup is enough: each invocation walks N/256 particles (a max is exact in any order).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> step_state: array<f32, 4>;

var<workgroup> v_red: array<f32, WORKGROUP_SIZE>;
var<workgroup> a_red: array<f32, WORKGROUP_SIZE>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn timestep(@builtin(local_invocation_id) lid3: vec3<u32>) {
    let lid = lid3.x;
    var v_max = 0.0;
    var a_max = 0.0;
    for (var k = lid; k < params.n; k = k + WORKGROUP_SIZE) {
        v_max = max(v_max, length(sorted_vel[k].xyz));
        a_max = max(a_max, length(accel[k].xyz));
    }
    v_red[lid] = v_max;
    a_red[lid] = a_max;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half >> 1u) {
        if lid < half {
            v_red[lid] = max(v_red[lid], v_red[lid + half]);
            a_red[lid] = max(a_red[lid], a_red[lid + half]);
        }
        workgroupBarrier();
    }
    if lid == 0u {
        let vm = v_red[0];
        let am = a_red[0];
        var dt = min(fluid.dt_max, fluid.cfl * params.h / (fluid.sound_speed + vm));
        if am > 0.0 {
            dt = min(dt, 0.25 * sqrt(params.h / am));
        }
        if fluid.dt_fixed > 0.0 {
            dt = fluid.dt_fixed;
        }
        step_state[0] = dt;
        step_state[1] = vm;
        step_state[2] = am;
        step_state[3] = 0.0;
    }
}
