// Stage `forces` (CPU mirror: src/cpu/forces.rs): pressure, viscosity and gravity.
// Inputs (slot order): sorted_pos, sorted_vel, particle_density (the `walls` stage's
// fluid_density), particle_pressure (N),
// slot_start (T + 1). Output: accel (N, vec4).
// a_i = g + Σ_j [m (p_i/ρ_i² + p_j/ρ_j² + Π_ij) · 45/(π h⁶)(h − r)² (x_i − x_j)/r  (pressure,
//                 −m(…)∇W_spiky; symmetric, so momentum is conserved; Π_ij is Monaghan's
//                 artificial viscosity −α c μ_ij/ρ̄_ij, μ_ij = h v_ij·x_ij/(r² + 0.01h²), for
//                 approaching pairs only)
//               + (μ/ρ_i) m (v_j − v_i)/ρ_j · 45/(π h⁶)(h − r)]              (viscosity, ∇²W_visc)
// over j ≠ i with r² < h² (Müller et al. 2003), walked exactly as the density walks them.
// Coincident particles (r = 0) exchange no pressure push, only viscosity. Walls: within h of a
// wall each candidate also pushes through its mirror images across the near walls (images 1 to
// 7, see stage `walls`), with its density and pressure and velocity -v_k in the viscous
// terms (no slip; src/cpu/walls.rs image_velocity gives the wall model).
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

// The pressure, artificial-viscosity and viscosity push on particle i from a particle at
// x_i − d (r² = |d|² < h²) with velocity vk, density rho_k and pressure p_k.
fn interact(i: u32, d: vec3<f32>, r2: f32, vk: vec3<f32>, rho_k: f32, p_k: f32) -> vec3<f32> {
    let r = sqrt(r2);
    let w = params.h - r;
    let rho_i = particle_density[i];
    var c = (vk - sorted_vel[i].xyz)
        * (fluid.viscosity / rho_i * fluid.mass / rho_k * fluid.kernel_45 * w);
    if r > 0.0 {
        let shared_term = particle_pressure[i] / (rho_i * rho_i) + p_k / (rho_k * rho_k);
        let dv = sorted_vel[i].xyz - vk;
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

// Neighbour k's contribution to particle i's acceleration; zero unless k ≠ i and r² < h².
// Adding an exact zero vector leaves the sum bit for bit as the CPU's.
fn pair(i: u32, k: u32) -> vec3<f32> {
    let d = sorted_pos[i].xyz - sorted_pos[k].xyz;
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    if k == i || !(r2 < params.h2) {
        return vec3<f32>(0.0);
    }
    return interact(i, d, r2, sorted_vel[k].xyz, particle_density[k], particle_pressure[k]);
}

// The push of image m of particle k (mirrored across m's walls, see stage `walls`): k's density
// and pressure, velocity -v_k (no slip, viscous terms only). Zero unless m's walls are all near and the image lies
// within h. k = i counts: a particle sees its own image.
fn image_pair(i: u32, k: u32, walls: WallPlanes, m: u32) -> vec3<f32> {
    if (walls.mask & m) != m {
        return vec3<f32>(0.0);
    }
    let axes = image_axes(m);
    let d = sorted_pos[i].xyz - reflect_across(sorted_pos[k].xyz, walls.plane, axes);
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    if !(r2 < params.h2) {
        return vec3<f32>(0.0);
    }
    return interact(i, d, r2, -sorted_vel[k].xyz, particle_density[k], particle_pressure[k]);
}

// Candidate k's whole contribution: itself, then its images, one per non-empty subset m of the
// near walls, in decreasing m (a face has 1 image, an edge 3, a corner 7; a loop over all 7
// masks, or all 7 written out, made the pass several times slower on lavapipe, whose lanes run
// in lockstep). Only a neighbour's images can reach the kernel (stage `walls`), so the images
// of the other candidates, most of them, are skipped. The loop spends at most 7 of llvmpipe's
// loop iterations per neighbour of a particle near a wall (see UNROLL).
fn candidate(i: u32, k: u32, walls: WallPlanes) -> vec3<f32> {
    var c = pair(i, k);
    if walls.mask != 0u && distance2(sorted_pos[i].xyz, sorted_pos[k].xyz) < params.h2 {
        var g = vec3<f32>(0.0);
        var m = walls.mask;
        loop {
            g = g + image_pair(i, k, walls, m);
            m = (m - 1u) & walls.mask;
            if m == 0u {
                break;
            }
        }
        c = c + g;
    }
    return c;
}

struct Walker {
    i: u32,
    walls: WallPlanes,
    a: vec3<f32>,
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    return Walker(first, wall_planes(sorted_pos[first].xyz, params.h, fluid), vec3<f32>(0.0));
}

fn visit(w: ptr<function, Walker>, k: u32) {
    (*w).a = (*w).a + candidate((*w).i, k, (*w).walls);
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    accel[first] = vec4<f32>((*w).a + fluid.gravity.xyz, 0.0);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn forces(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    walk_one(i);
}
