// Stage `timestep` (CPU mirror: src/cpu/wcsph/timestep.rs): reduces the largest speed,
// acceleration and signal speed: each of B workgroups takes a block of particles, reduces it in
// its tree, and lane 0 folds the block's maxima into three words with atomicMax on their bits
// (every quantity is >= 0, and the bits of non-negative floats order as the floats do, so the
// result is the exact maximum in any order: the CPU's fold in particle order gives the same
// bits). `integrate` computes dt from the three words in every invocation
// (integrate.wgsl step_of), so no pass of one workgroup runs: one workgroup alone took 1.8 ms of
// an 8.3 ms step at 1M particles on an NVIDIA H200 (benchmarks.md).
// dt = min(dt_max, cfl·h/s_max, 0.25·√(h/a_max)), or dt_fixed.
// The signal speed of a particle is its local sound speed plus its speed, s_i = c(ρ_i) + |v_i|,
// with the Tait equation's c(ρ) = c0 (ρ/ρ0)³ (γ = 7, c² = dp/dρ) above ρ0 and c0 below: the
// CFL condition of Monaghan ("Smoothed particle hydrodynamics", Rep. Prog. Phys. 2005, §10)
// taken with each particle's own sound speed, so a compressed start (a random packing reaches
// 1.5 ρ0, where c is 3.4 c0) is not stepped past its stability limit.
// Inputs: sorted_vel, accel, density (N, slot order). Output: maxima (v, a, s maxima as bits,
// cleared before the pass).
// Worked example: h = 0.02, c0 = 20, cfl = 0.4, every ρ ≤ ρ0, v_max = 0, small a_max →
// dt = 0.4·0.02/20 = 4e-4 s; one particle at 1.1 ρ0 at rest → s_max = 20·1.331 = 26.62 m/s,
// dt = 3.005e-4 s.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> step_state: array<f32, 4>;
@group(0) @binding(5) var<storage, read> density: array<f32>;
@group(0) @binding(6) var<storage, read_write> maxima: array<atomic<u32>, 4>;

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

// Workgroup w of the B dispatched takes particles [w c, (w + 1) c), c = ceil(N / B), its
// lanes striding by 256, and folds that block's maxima into `maxima` (0 for an empty block;
// every quantity is >= 0, so a 0 never wins). B is fixed per buffer (src/grid/gpu.rs
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
        atomicMax(&maxima[0], max_bits(v_red[0]));
        atomicMax(&maxima[1], max_bits(a_red[0]));
        atomicMax(&maxima[2], max_bits(s_red[0]));
    }
}
