// Stage `dfsph_accel` (CPU mirror: src/cpu/dfsph.rs dfsph_accel): the non-pressure
// accelerations of DFSPH, gravity and viscosity (Mueller et al. 2003:
// (mu/rho_i) sum_j m (v_j - v_i)/rho_j * 45/(pi h^6) (h - r), images moving with -v_j: the
// no-slip wall of the viscous terms), one particle per invocation on the shared walk; with mu = 0 nothing is walked.
// Inputs (slot order): sorted_pos, slot_start, sorted_vel, dfsph_rho. Output: accel (N, vec4).
// Worked example: mu = 0 -> accel = gravity for every particle.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(7) var<storage, read_write> accel: array<vec4<f32>>;

struct Walker {
    i: u32,
    x: vec3<f32>,
    walls: WallPlanes,
    acc: vec3<f32>,
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    let x = sorted_pos[first].xyz;
    return Walker(first, x, wall_planes(x, params.h, fluid), vec3<f32>(0.0));
}

fn dfsph_pair(w: ptr<function, Walker>, j: u32, d: vec3<f32>, r2: f32, axes: vec3<bool>) {
    let i = (*w).i;
    var vj = sorted_vel[j].xyz;
    if any(axes) {
        vj = -vj;
    }
    let wv = params.h - sqrt(r2);
    (*w).acc = (*w).acc + (vj - sorted_vel[i].xyz)
        * (fluid.viscosity / dfsph_rho[i] * fluid.mass / dfsph_rho[j] * fluid.kernel_45 * wv);
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    accel[first] = vec4<f32>((*w).acc + fluid.gravity.xyz, 0.0);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_accel(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    if fluid.viscosity == 0.0 {
        accel[i] = vec4<f32>(fluid.gravity.xyz, 0.0);
        return;
    }
    walk_one(i);
}
