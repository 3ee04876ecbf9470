// Stage `timestep` (CPU mirror: src/cpu/wcsph/timestep.rs): reduces the largest speed, acceleration
// and signal speed in two levels, `timestep_blocks` (B workgroups, a block of particles' maxima
// each) then `timestep` (one workgroup over the blocks), then
// dt = min(dt_max, cfl·h/s_max, 0.25·√(h/a_max)), or dt_fixed.
// The signal speed of a particle is its local sound speed plus its speed, s_i = c(ρ_i) + |v_i|,
// with the Tait equation's c(ρ) = c0 (ρ/ρ0)³ (γ = 7, c² = dp/dρ) above ρ0 and c0 below: the
// CFL condition of Monaghan ("Smoothed particle hydrodynamics", Rep. Prog. Phys. 2005, §10)
// taken with each particle's own sound speed, so a compressed start (a random packing reaches
// 1.5 ρ0, where c is 3.4 c0) is not stepped past its stability limit.
// Inputs: sorted_vel, accel, density (N, slot order). Output: step_state = (dt, v_max, a_max,
// s_max); blocks (B vec4: v, a, s maxima of each block) in between.
// Worked example: h = 0.02, c0 = 20, cfl = 0.4, every ρ ≤ ρ0, v_max = 0, small a_max →
// dt = 0.4·0.02/20 = 4e-4 s; one particle at 1.1 ρ0 at rest → s_max = 20·1.331 = 26.62 m/s,
// dt = 3.005e-4 s.
// A max is exact in any order, so the tree's shape does not change a bit (the CPU folds in
// particle order). Two levels because one workgroup alone runs on one multiprocessor: on an
// NVIDIA H200 it took 1.8 ms of an 8.3 ms step at 1M particles (benchmarks.md).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> step_state: array<f32, 4>;
@group(0) @binding(5) var<storage, read> density: array<f32>;
@group(0) @binding(6) var<storage, read_write> blocks: array<vec4<f32>>;

var<workgroup> v_red: array<f32, WORKGROUP_SIZE>;
var<workgroup> a_red: array<f32, WORKGROUP_SIZE>;
var<workgroup> s_red: array<f32, WORKGROUP_SIZE>;

// c(ρ) + |v|; the CPU mirror is `signal_speed` in src/cpu/wcsph/timestep.rs, operation for operation.
fn signal_speed(speed: f32, rho: f32) -> f32 {
    let x = max(rho / fluid.rest_density, 1.0);
    return fluid.sound_speed * (x * x * x) + speed;
}

// The three maxima of a workgroup's lanes, in lane 0's v_red[0], a_red[0], s_red[0].
fn reduce_maxima(lid: u32, v: f32, a: f32, s: f32) {
    v_red[lid] = v;
    a_red[lid] = a;
    s_red[lid] = s;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half >> 1u) {
        if lid < half {
            v_red[lid] = max(v_red[lid], v_red[lid + half]);
            a_red[lid] = max(a_red[lid], a_red[lid + half]);
            s_red[lid] = max(s_red[lid], s_red[lid + half]);
        }
        workgroupBarrier();
    }
}

// Level 1: workgroup w of the B dispatched takes particles [w c, (w + 1) c), c = ceil(N / B),
// its lanes striding by 256, and stores that block's maxima (0 for an empty block; every
// quantity is >= 0, so a 0 never wins). B is fixed per buffer (src/gpu/neighbours.rs
// timestep_blocks): ceil(N / 256) on a GPU, a few on a software adapter, where each workgroup
// pays for its barriers (llvmpipe runs its invocations as coroutines on a CPU core).
@compute @workgroup_size(WORKGROUP_SIZE)
fn timestep_blocks(
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(workgroup_id) wid3: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let lid = lid3.x;
    let span = block_span(wid3.x, nwg.x, params.n);
    var v_max = 0.0;
    var a_max = 0.0;
    var s_max = 0.0;
    for (var k = span.x + lid; k < span.y; k = k + WORKGROUP_SIZE) {
        let speed = length(sorted_vel[k].xyz);
        v_max = max(v_max, speed);
        a_max = max(a_max, length(accel[k].xyz));
        s_max = max(s_max, signal_speed(speed, density[k]));
    }
    reduce_maxima(lid, v_max, a_max, s_max);
    if lid == 0u {
        blocks[wid3.x] = vec4<f32>(v_red[0], a_red[0], s_red[0], 0.0);
    }
}

// Level 2, one workgroup: the blocks' maxima, then dt.
@compute @workgroup_size(WORKGROUP_SIZE)
fn timestep(@builtin(local_invocation_id) lid3: vec3<u32>) {
    let lid = lid3.x;
    var v_max = 0.0;
    var a_max = 0.0;
    var s_max = 0.0;
    for (var k = lid; k < arrayLength(&blocks); k = k + WORKGROUP_SIZE) {
        let b = blocks[k];
        v_max = max(v_max, b.x);
        a_max = max(a_max, b.y);
        s_max = max(s_max, b.z);
    }
    reduce_maxima(lid, v_max, a_max, s_max);
    if lid == 0u {
        let vm = v_red[0];
        let am = a_red[0];
        let sm = s_red[0];
        var dt = min(fluid.dt_max, fluid.cfl * params.h / sm);
        if am > 0.0 {
            dt = min(dt, 0.25 * sqrt(params.h / am));
        }
        if fluid.dt_fixed > 0.0 {
            dt = fluid.dt_fixed;
        }
        step_state[0] = dt;
        step_state[1] = vm;
        step_state[2] = am;
        step_state[3] = sm;
    }
}
