// Stage `dfsph_timestep` (CPU mirror: src/solver/dfsph/timestep.rs dfsph_timestep): reduces
// v_max = max |v + a dt_prev| (the speed before the pressure solve) and S_max = max accel.w
// (the explicit viscous terms' rate, see dfsph_accel): each of B workgroups reduces a block of
// particles in its tree and lane 0 folds the block's two maxima into two words with atomicMax
// on their bits (max_bits: both are >= 0, and the bits of non-negative floats order as the
// floats do, so the result is the exact maximum in any order and the CPU's fold in particle
// order gives the same bits). `dfsph_predict_first` computes dt and the substeps from the two
// words in every invocation (dfsph_predict.wgsl), so no pass of one workgroup runs: one
// workgroup alone took 1.7 ms of a 73 ms step at 1M on an NVIDIA H200.
// WCSPH (dfsph.state_equation = 1) folds a third maximum, the largest signal speed
// c(rho_k) + |v_k + a_k dt_prev| (signal_speed), for the acoustic CFL condition.
// Inputs: sorted_vel, accel, dfsph_rho (N), step_state[0] = dt_prev. Output: maxima (v_max,
// S_max, signal speed bits; cleared before the pass).
// Worked example: two particles, |v + a dt_prev| = 1 and 2 m/s, accel.w = 0 and 400 ->
// maxima (bits of 2.0, bits of 400.0); WCSPH with c0 = 20 m/s and rho <= rho0: bits of 22.0
// third.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> step_state: array<f32, 4>;
@group(0) @binding(5) var<uniform> group_args: vec4<u32>;
@group(0) @binding(6) var<storage, read_write> substep_args: array<u32>;
@group(0) @binding(7) var<storage, read_write> maxima: array<atomic<u32>, 4>;
@group(0) @binding(8) var<uniform> fluid: FluidParams;
@group(0) @binding(9) var<storage, read> dfsph_rho: array<f32>;

// c(rho) + v: the Tait equation's sound speed c0 max(rho/rho0, 1)^3 plus the speed, operation
// for operation as src/solver/dfsph/eos.rs signal_speed.
fn signal_speed(speed: f32, rho: f32) -> f32 {
    let x = max(rho / fluid.rest_density, 1.0);
    return fluid.sound_speed * (x * x * x) + speed;
}

// Workgroup w of the B dispatched takes particles [w c, (w + 1) c), c = ceil(N / B), and folds
// that block's maxima into `maxima` (0 for an empty block, which never wins: both are >= 0);
// B as in timestep.wgsl (src/grid/gpu.rs timestep_blocks).
@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_timestep_blocks(
    @builtin(local_invocation_id) lid3: vec3<u32>,
    @builtin(workgroup_id) wid3: vec3<u32>,
    @builtin(num_workgroups) nwg: vec3<u32>,
) {
    let lid = lid3.x;
    let dt_prev = step_state[0];
    let span = block_span(wid3.x, nwg.x, params.n);
    let wcsph = dfsph.state_equation != 0u;
    var v_max = 0.0;
    var s_max = 0.0;
    var c_max = 0.0;
    for (var k = span.x + lid; k < span.y; k = k + WORKGROUP_SIZE) {
        let a = accel[k];
        let v = length(sorted_vel[k].xyz + a.xyz * dt_prev);
        v_max = max(v_max, v);
        s_max = max(s_max, a.w);
        if wcsph {
            c_max = max(c_max, signal_speed(v, dfsph_rho[k]));
        }
    }
    let vm = reduce_block(lid, 0.0, v_max).y;
    // Every lane has read lane 0's result before the second reduction overwrites it.
    workgroupBarrier();
    let sm = reduce_block(lid, 0.0, s_max).y;
    var cm = 0.0;
    if wcsph {
        workgroupBarrier();
        cm = reduce_block(lid, 0.0, c_max).y;
    }
    if lid == 0u {
        atomicMax(&maxima[0], max_bits(vm));
        atomicMax(&maxima[1], max_bits(sm));
        atomicMax(&maxima[2], max_bits(cm));
    }
}
