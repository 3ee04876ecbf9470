// Stage `dfsph_accel` (CPU mirror: src/solver/dfsph/accel.rs dfsph_accel): the non-pressure
// accelerations of DFSPH and the explicit viscous terms' rate, one invocation per group of the
// grouped walk. a_i = g + sum_j [(mu/rho_i) m (v_j - v_i)/rho_j 45/(pi h^6)(h - r)   (Mueller
// et al. 2003, off by default) + m alpha c h (v_ij . x_ij)/((r^2 + 0.01 h^2) rho_bar_ij)
// grad W_ij, approaching pairs only] (Monaghan's artificial viscosity Pi term for term, Monaghan
// 1992, acting as nu = alpha c h / 10 in compression, off by default; the run's kernel
// gradient), images moving
// with boundary_image_viscous_velocity (boundary_tank.wgsl: the walls' slip length, free slip by default). accel.w = S_i, the row sum of that map
// over every pair, receding ones too (sum of the pairs' |coefficient| r^2 and the Mueller
// coefficients; a bound for whichever pairs approach): dt <= 1/max S keeps the
// explicit step stable (Gershgorin); dt <= 1/(2 max S) damps every mode without overshoot,
// which dfsph_timestep enforces for each viscous substep (this pass runs once per substep,
// at the velocities the last one left). With mu = 0, alpha = 0, nu = 0 and no obstacle
// friction nothing is walked.
// Obstacle friction (dfsph.friction != 0; boundary.wgsl, bind group 1): after its pairs, a
// particle near the obstacles walks their boundary particles and adds the standard viscosity
// of each obstacle's nu_b, psi_b f_b (v_ib . x_ib)/(r^2 + 0.01 h^2) gradW (f_b = 10 nu_b/rho0;
// src/boundary/particles.rs says why), its share of S and its power against the surface's
// velocity, each summed from zero and then added.
// Inputs (slot order): sorted_pos, slot_start, sorted_vel, dfsph_rho, the groups `order`
// listed (group_range, group_args), the boundary (group 1). Outputs: accel (N, vec4: xyz
// acceleration, w = S); with obstacle friction, friction_power (N: the friction's power per
// unit mass, which dfsph_predict credits to obstacle_power).
// Worked example (h = 1, m = 1, rho = 1, alpha c = 1, mu = 0, no gravity): i at 0 moving at
// (1, 0, 0), j at (0.5, 0, 0) at rest -> accel_i = (-7.35, 0, 0), S_i = 7.35 /s; moving at
// (-1, 0, 0), away from j -> accel_i = 0, S_i = 7.35 /s.

// The terms this pipeline can add (pipeline-overridable; src/solver/dfsph/gpu.rs
// accel_terms sets them from the run's coefficients and rebuilds the pipeline when one turns
// on or off): a term whose coefficient is 0 is compiled out, so its never-taken branch holds
// no registers in the walk (on llvmpipe, with the three built in, this pass took 99 ms a step
// of the 20 000-particle WCSPH dam break against 69 ms with only the run's term). Each term
// keeps its runtime test: the results are those of a pipeline with all three.
override MU_TERM: bool = true;
override ALPHA_TERM: bool = true;
override NU_TERM: bool = true;

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(7) var<storage, read_write> accel: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(9) var<uniform> group_args: vec4<u32>;
@group(0) @binding(10) var<storage, read_write> friction_power: array<f32>;

struct Member {
    i: u32,
    x: vec3<f32>,
    near: BoundaryNear,
    vi: vec3<f32>,
    rho: f32,
    acc: vec3<f32>,
    rate: f32,
}

struct Cand {
    v: vec3<f32>,
    rho: f32,
}

fn new_member(i: u32) -> Member {
    let x = sorted_pos[i].xyz;
    return Member(i, x, boundary_near(x, params.h, fluid), sorted_vel[i].xyz, dfsph_rho[i], vec3<f32>(0.0), 0.0);
}

fn candidate(k: u32) -> Cand {
    return Cand(sorted_vel[k].xyz, dfsph_rho[k]);
}

fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, image: u32) -> Member {
    var w = m;
    var vj = c.v;
    if image != 0u {
        vj = boundary_image_viscous_velocity(c.v, w.x, d, w.near, image, fluid);
    }
    if MU_TERM && fluid.viscosity != 0.0 {
        let wv = params.h - sqrt(r2);
        let k = fluid.viscosity / w.rho * fluid.mass / c.rho * fluid.kernel_45 * wv;
        w.acc = w.acc + (vj - w.vi) * k;
        w.rate = w.rate + k;
    }
    if ALPHA_TERM && fluid.alpha != 0.0 && r2 > 0.0 {
        let dv = w.vi - vj;
        let vx = dv.x * d.x + dv.y * d.y + dv.z * d.z;
        let ach = fluid.alpha * fluid.sound_speed * params.h;
        let k = fluid.mass * ach / ((r2 + 0.01 * params.h2) * (0.5 * (w.rho + c.rho)))
            * kernel_grad(r2);
        // Approaching pairs only, as WCSPH's Pi; the rate counts every pair (a bound for
        // whichever pairs approach during the step).
        if vx < 0.0 {
            w.acc = w.acc + d * (k * vx);
        }
        w.rate = w.rate - k * r2;
    }
    if NU_TERM && fluid.kinematic_viscosity != 0.0 && r2 > 0.0 {
        let dv = w.vi - vj;
        let vx = dv.x * d.x + dv.y * d.y + dv.z * d.z;
        let k = fluid.mass * fluid.viscosity_factor / (c.rho * (r2 + 0.01 * params.h2))
            * kernel_grad(r2);
        w.acc = w.acc + d * (k * vx);
        w.rate = w.rate - k * r2;
    }
    return w;
}

// The obstacles' friction (boundary.wgsl): its acceleration, share of S and power.
struct BoundarySums {
    acc: vec3<f32>,
    rate: f32,
    v: vec3<f32>,
    power: f32,
}

fn boundary_pair(sums: BoundarySums, k: u32, d: vec3<f32>, r2: f32) -> BoundarySums {
    var s = sums;
    if r2 > 0.0 {
        let t = boundary_viscous(k, d, r2, kernel_grad(r2), s.v);
        s.acc = s.acc + t.xyz;
        s.rate = s.rate + t.w;
        s.power = s.power + boundary_viscous_power(k, t.xyz);
    }
    return s;
}

fn finish(m: Member, i: u32) {
    var acc = m.acc;
    var rate = m.rate;
    var power = 0.0;
    if dfsph.friction != 0u && near_obstacles(m.x) {
        let b = walk_boundary(m.x, BoundarySums(vec3<f32>(0.0), 0.0, m.vi, 0.0));
        acc = acc + b.acc;
        rate = rate - b.rate;
        power = b.power;
    }
    accel[i] = vec4<f32>(acc + fluid.gravity.xyz, rate);
    if dfsph.friction != 0u {
        friction_power[i] = power;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_accel(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x;
    if g >= group_args[3] {
        return;
    }
    if fluid.viscosity == 0.0 && fluid.alpha == 0.0 && fluid.kinematic_viscosity == 0.0
        && dfsph.friction == 0u {
        let r = group_range[g];
        for (var i = r.x; i < r.y; i = i + 1u) {
            accel[i] = vec4<f32>(fluid.gravity.xyz, 0.0);
        }
    } else {
        walk_group(group_range[g]);
    }
}
