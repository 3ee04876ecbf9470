// Stage `dfsph_predict` (CPU mirror: src/solver/dfsph/predict.rs dfsph_predict, and for the step
// src/solver/dfsph/timestep.rs dfsph_timestep): one substep of the non-pressure accelerations,
// v <- v + a dt_sub; after the last, v is v*, the velocity the constant-density solve corrects.
// Entry points:
// - dfsph_predict_first, the first substep: every invocation computes the step from the
//   maxima `dfsph_timestep` folded: dt = clamp(min(cfl s / v_max, K viscous_limit / S_max),
//   dt_min, dt_max) (cfl s / v_max read as dt_max at rest, the viscous term left out where
//   S_max = 0), or the forced dt, taken in n = clamp(ceil(dt / (viscous_limit / S_max)), 1, K)
//   substeps of dt_sub = dt / n (K = viscous_substeps; n = 1 where S_max = 0): explicit
//   subcycling of the stiff viscous term, every substep within its stability limit. WCSPH
//   (dfsph.state_equation = 1) takes dt at most cfl h / c_max too, c_max the largest signal
//   speed (maxima[2]): the acoustic CFL condition.
//   Invocation 0 stores step_state = (dt, v_max, dt_prev, dt_sub) and the indirect arguments
//   of substeps 2..K: `dfsph_accel` with the walk's group dispatch and `dfsph_predict` with
//   ceil(N / 256) workgroups for a substep k <= n, 0 workgroups (nothing runs) past n;
// - dfsph_predict, a later substep, with step_state[3] = dt_sub.
// Both entry points then credit the substep's obstacle friction (group 1, where
// friction_params.friction != 0): obstacle_power += friction_power dt_sub/dt, the power
// dfsph_accel found weighted by the substep's share of the step (src/solver/dfsph/predict.rs
// credit_friction).
// Inputs: accel (N), maxima (v_max, S_max bits), step_state[0] = dt_prev, group_args.
// In/out: sorted_vel (N, slot order). Outputs: step_state, substep_args (8 words per
// substep k from 2: (accel x, y, z, n, predict x, 1, 1, 0)).
// Worked example: s = 0.01, cfl = 0.4, v_max = 2 m/s, S_max = 400 /s, viscous_limit 0.5,
// K = 2 -> limit 1.25 ms, dt = min(2 ms, 2.5 ms) = 2 ms in n = ceil(1.6) = 2 substeps of 1 ms;
// v = (1, 0, 0), a = (0, -10, 0) -> v = (1, -0.01, 0).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> step_state: array<f32, 4>;
@group(0) @binding(3) var<storage, read_write> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<uniform> dfsph: DfsphParams;
@group(0) @binding(5) var<storage, read> maxima: array<u32, 4>;
@group(0) @binding(6) var<uniform> group_args: vec4<u32>;
@group(0) @binding(7) var<storage, read_write> substep_args: array<u32>;
@group(1) @binding(0) var<uniform> friction_params: DfsphParams;
@group(1) @binding(1) var<storage, read> friction_power: array<f32>;
@group(1) @binding(2) var<storage, read_write> obstacle_power: array<f32>;

fn credit_friction(k: u32, w: f32) {
    if friction_params.friction != 0u {
        obstacle_power[k] = obstacle_power[k] + friction_power[k] * w;
    }
}

// (dt, substeps n, dt / n) from v_max, S_max and, for WCSPH, the largest signal speed cm.
fn step_of(vm: f32, sm: f32, cm: f32) -> vec3<f32> {
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
        if dfsph.state_equation != 0u {
            dt = min(dt, dfsph.cfl * params.h / cm);
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
    return vec3<f32>(dt, n, dt / n);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_predict_first(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    let vm = bitcast<f32>(maxima[0]);
    let step = step_of(vm, bitcast<f32>(maxima[1]), bitcast<f32>(maxima[2]));
    if k == 0u {
        let dt_prev = step_state[0];
        step_state[0] = step.x;
        step_state[1] = vm;
        step_state[2] = dt_prev;
        step_state[3] = step.z;
        let count = u32(step.y);
        let walk = group_args[0];
        let each = (params.n + WORKGROUP_SIZE - 1u) / WORKGROUP_SIZE;
        for (var s = 1u; s < dfsph.viscous_substeps; s = s + 1u) {
            let on = s < count;
            let b = (s - 1u) * 8u;
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
    if k >= params.n {
        return;
    }
    sorted_vel[k] = vec4<f32>(sorted_vel[k].xyz + accel[k].xyz * step.z, 0.0);
    credit_friction(k, step.z / step.x);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_predict(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    sorted_vel[k] = vec4<f32>(sorted_vel[k].xyz + accel[k].xyz * step_state[3], 0.0);
    credit_friction(k, step_state[3] / step_state[0]);
}
