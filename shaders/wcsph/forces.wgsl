// Stage `forces` (CPU mirror: src/cpu/wcsph/forces.rs): pressure, viscosity and gravity.
// Inputs (slot order): sorted_pos, sorted_vel, particle_density (the `walls` stage's
// fluid_density), particle_pressure (N), slot_start (T + 1), the groups `order` listed
// (group_range, group_args: see density.wgsl). Output: accel (N, vec4).
// a_i = g + Σ_j [m (p_i/ρ_i² + p_j/ρ_j² + Π_ij) · 45/(π h⁶)(h − r)² (x_i − x_j)/r  (pressure,
//                 −m(…)∇W_spiky; symmetric, so momentum is conserved; Π_ij is Monaghan's
//                 artificial viscosity −α c μ_ij/ρ̄_ij, μ_ij = h v_ij·x_ij/(r² + 0.01h²), for
//                 approaching pairs only)
//               + (μ/ρ_i) m (v_j − v_i)/ρ_j · 45/(π h⁶)(h − r)]              (viscosity, ∇²W_visc)
// over j ≠ i with r² < h² (Müller et al. 2003), walked exactly as the density walks them.
// Coincident particles (r = 0) exchange no pressure push, only viscosity. Walls: within h of a
// wall each candidate also pushes through its mirror images across the near walls (images 1 to
// 7, see stage `walls`), with its density and pressure and, in the viscous terms, velocity
// viscous_image_velocity (the walls' slip; boundary_tank.wgsl and src/boundary/tank.rs give the wall model).
// Grouped (walk.wgsl): one invocation per group of up to GROUP particles of one slot; the
// members' own fields are read once into the walker, each candidate's once per visit for all
// of them. Each member adds its terms in walk order, as a walk of its own would.
// Worked example, h = 1, m = 1, ρ = p = 1, no viscosity or gravity: particles at x = 0 and 0.5
// push apart with a = ±(1 + 1) · 45/π · 0.25 · 1 = ±7.16 along x.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> particle_density: array<f32>;
@group(0) @binding(5) var<storage, read> particle_pressure: array<f32>;
@group(0) @binding(6) var<storage, read> slot_start: array<u32>;
@group(0) @binding(7) var<storage, read_write> accel: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(9) var<storage, read> group_args: array<u32, 4>;

// What a pair term reads of either particle, with p/ρ², which it uses in every pair (computed
// once per particle instead of per pair: the same bits).
struct Fields {
    x: vec3<f32>,
    v: vec3<f32>,
    rho: f32,
    p_over_rho2: f32,
}

fn fields(k: u32) -> Fields {
    let rho = particle_density[k];
    return Fields(sorted_pos[k].xyz, sorted_vel[k].xyz, rho, particle_pressure[k] / (rho * rho));
}

// One member of the group: its index, fields, near walls, its viscosity factor μ/ρ_i · m (the
// first factors of the pair's product, left to right as the CPU multiplies them) and its
// acceleration so far.
struct Member {
    i: u32,
    f: Fields,
    walls: WallPlanes,
    visc: f32,
    a: vec3<f32>,
}

// The pressure, artificial-viscosity and viscosity push on member m from a particle at
// x_i − d (r² = |d|² < h²) with velocity vk, density rho_k and p_k/ρ_k² pk.
fn interact(m: Member, d: vec3<f32>, r2: f32, vk: vec3<f32>, rho_k: f32, pk: f32) -> vec3<f32> {
    let r = sqrt(r2);
    let w = params.h - r;
    let rho_i = m.f.rho;
    var c = vec3<f32>(0.0);
    // Viscosity is off by default: a uniform branch skips it (its term would be exact zeros,
    // which leave the sum's bits unchanged).
    if fluid.viscosity != 0.0 {
        c = (vk - m.f.v) * (m.visc / rho_k * fluid.kernel_45 * w);
    }
    if r > 0.0 {
        let shared_term = m.f.p_over_rho2 + pk;
        let dv = m.f.v - vk;
        let approach = dv.x * d.x + dv.y * d.y + dv.z * d.z;
        var artificial = 0.0;
        if approach < 0.0 {
            let mu = params.h * approach / (r2 + 0.01 * params.h2);
            artificial = -fluid.alpha * fluid.sound_speed * mu / (0.5 * (rho_i + rho_k));
        }
        c = c + d * (fluid.mass * (shared_term + artificial) * fluid.kernel_45 * w * w / r);
    }
    return c;
}

// Candidate k's own push on member m; zero unless k ≠ i and r² < h². Adding an exact zero
// vector leaves the sum bit for bit as the CPU's.
fn pair(m: Member, k: u32, c: Fields) -> vec3<f32> {
    let d = m.f.x - c.x;
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    var push = vec3<f32>(0.0);
    if k != m.i && r2 < params.h2 {
        push = interact(m, d, r2, c.v, c.rho, c.p_over_rho2);
    }
    return push;
}

// The push of image s of candidate c (mirrored across s's walls) on member m: c's density and
// pressure, velocity viscous_image_velocity (the walls' slip, viscous terms only). Zero unless s is a subset of `seen` (the
// walls of m whose images of c it sees, see image_mask) and the image lies within h.
fn image_pair(m: Member, c: Fields, seen: u32, s: u32) -> vec3<f32> {
    let d = m.f.x - reflect_across(c.x, m.walls.plane, image_axes(s));
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    var push = vec3<f32>(0.0);
    if (seen & s) == s && r2 < params.h2 {
        let axes = image_axes(s);
        push = interact(m, d, r2, viscous_image_velocity(c.v, m.f.x, d, m.walls, axes, fluid), c.rho, c.p_over_rho2);
    }
    return push;
}

fn new_member(i: u32) -> Member {
    let f = fields(i);
    let visc = fluid.viscosity / f.rho * fluid.mass;
    return Member(i, f, wall_planes(f.x, params.h, fluid), visc, vec3<f32>(0.0));
}

// The walls across which member m sees c's images: its near walls if c lies within h (only a
// neighbour's images can reach the kernel, see stage `walls`), else none. k = i counts: a
// particle sees its own image.
fn image_mask(m: Member, c: Fields) -> u32 {
    return wall_image_mask(m.walls, m.f.x, c.x, params.h2);
}

// Candidate k for every member: its own push, then its images, one per non-empty subset s of
// the near walls in decreasing s (a face has 1 image, an edge 3, a corner 7; the members walk
// the subsets of their masks' union together, each taking those of its own mask, so each sees
// its images in its own walk's order). Only a neighbour's images can reach the kernel, so the
// images of most candidates are skipped. The loop spends at most 7 of llvmpipe's loop
// iterations per candidate (see UNROLL).
fn visit(w: ptr<function, Walker>, k: u32) {
    let c = fields(k);
    if MEMBERS == 1u {
        (*w).m0.a = (*w).m0.a + visit_alone((*w).m0, k, c);
    } else {
        visit_members(w, k, c);
    }
}

fn visit_members(w: ptr<function, Walker>, k: u32, c: Fields) {
    var g0 = pair((*w).m0, k, c);
    var g1 = pair((*w).m1, k, c);
    var g2 = pair((*w).m2, k, c);
    var g3 = pair((*w).m3, k, c);
    var g4 = pair((*w).m4, k, c);
    var g5 = pair((*w).m5, k, c);
    var g6 = pair((*w).m6, k, c);
    var g7 = pair((*w).m7, k, c);
    let e0 = image_mask((*w).m0, c);
    let e1 = image_mask((*w).m1, c);
    let e2 = image_mask((*w).m2, c);
    let e3 = image_mask((*w).m3, c);
    let e4 = image_mask((*w).m4, c);
    let e5 = image_mask((*w).m5, c);
    let e6 = image_mask((*w).m6, c);
    let e7 = image_mask((*w).m7, c);
    let near = e0 | e1 | e2 | e3 | e4 | e5 | e6 | e7;
    if near != 0u {
        var i0 = vec3<f32>(0.0);
        var i1 = vec3<f32>(0.0);
        var i2 = vec3<f32>(0.0);
        var i3 = vec3<f32>(0.0);
        var i4 = vec3<f32>(0.0);
        var i5 = vec3<f32>(0.0);
        var i6 = vec3<f32>(0.0);
        var i7 = vec3<f32>(0.0);
        var s = near;
        loop {
            i0 = i0 + image_pair((*w).m0, c, e0, s);
            i1 = i1 + image_pair((*w).m1, c, e1, s);
            i2 = i2 + image_pair((*w).m2, c, e2, s);
            i3 = i3 + image_pair((*w).m3, c, e3, s);
            i4 = i4 + image_pair((*w).m4, c, e4, s);
            i5 = i5 + image_pair((*w).m5, c, e5, s);
            i6 = i6 + image_pair((*w).m6, c, e6, s);
            i7 = i7 + image_pair((*w).m7, c, e7, s);
            s = (s - 1u) & near;
            if s == 0u {
                break;
            }
        }
        g0 = g0 + i0;
        g1 = g1 + i1;
        g2 = g2 + i2;
        g3 = g3 + i3;
        g4 = g4 + i4;
        g5 = g5 + i5;
        g6 = g6 + i6;
        g7 = g7 + i7;
    }
    (*w).m0.a = (*w).m0.a + g0;
    (*w).m1.a = (*w).m1.a + g1;
    (*w).m2.a = (*w).m2.a + g2;
    (*w).m3.a = (*w).m3.a + g3;
    (*w).m4.a = (*w).m4.a + g4;
    (*w).m5.a = (*w).m5.a + g5;
    (*w).m6.a = (*w).m6.a + g6;
    (*w).m7.a = (*w).m7.a + g7;
}

// Candidate k for a walker of one member: its own push, then its images (the 8-member visit
// with one member).
fn visit_alone(m: Member, k: u32, c: Fields) -> vec3<f32> {
    var g = pair(m, k, c);
    let e = image_mask(m, c);
    if e != 0u {
        var i = vec3<f32>(0.0);
        var s = e;
        loop {
            i = i + image_pair(m, c, e, s);
            s = (s - 1u) & e;
            if s == 0u {
                break;
            }
        }
        g = g + i;
    }
    return g;
}

fn finish(m: Member, i: u32) {
    accel[i] = vec4<f32>(m.a + fluid.gravity.xyz, 0.0);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn forces(@builtin(global_invocation_id) gid: vec3<u32>) {
    walk_listed_group(gid.x);
}
