// Stage `dfsph_accel` (CPU mirror: src/cpu/dfsph.rs dfsph_accel): the non-pressure
// accelerations of DFSPH, gravity and viscosity (Mueller et al. 2003:
// (mu/rho_i) sum_j m (v_j - v_i)/rho_j * 45/(pi h^6) (h - r), images moving with -v_j: the
// no-slip wall of the viscous terms), one invocation per group of the grouped walk; with
// mu = 0 nothing is walked.
// Inputs (slot order): sorted_pos, slot_start, sorted_vel, dfsph_rho, the groups `order`
// listed (group_range, group_args). Output: accel (N, vec4).
// Worked example: mu = 0 -> accel = gravity for every particle.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(7) var<storage, read_write> accel: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read> group_args: array<u32, 4>;

struct Member {
    i: u32,
    x: vec3<f32>,
    walls: WallPlanes,
    vi: vec3<f32>,
    rho: f32,
    acc: vec3<f32>,
}

struct Cand {
    v: vec3<f32>,
    rho: f32,
}

fn new_member(i: u32) -> Member {
    let x = sorted_pos[i].xyz;
    return Member(i, x, wall_planes(x, params.h, fluid), sorted_vel[i].xyz, dfsph_rho[i], vec3<f32>(0.0));
}

fn candidate(k: u32) -> Cand {
    return Cand(sorted_vel[k].xyz, dfsph_rho[k]);
}

fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, axes: vec3<bool>) -> Member {
    var w = m;
    let vj = select(c.v, -c.v, any(axes));
    let wv = params.h - sqrt(r2);
    w.acc = w.acc + (vj - w.vi)
        * (fluid.viscosity / w.rho * fluid.mass / c.rho * fluid.kernel_45 * wv);
    return w;
}

fn finish(m: Member, i: u32) {
    accel[i] = vec4<f32>(m.acc + fluid.gravity.xyz, 0.0);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_accel(@builtin(global_invocation_id) gid: vec3<u32>) {
    let g = gid.x;
    if g >= group_args[3] {
        return;
    }
    if fluid.viscosity == 0.0 {
        let r = group_range[g];
        for (var i = r.x; i < r.y; i = i + 1u) {
            accel[i] = vec4<f32>(fluid.gravity.xyz, 0.0);
        }
    } else {
        walk_group(group_range[g]);
    }
}
