// Stages `obstacle_density` and `obstacle_forces` (CPU mirror: src/cpu/wcsph/obstacles.rs; the
// model's pair terms: boundary.wgsl and src/boundary/particles.rs): obstacles as boundary particles (Akinci et al., "Versatile Rigid-Fluid Coupling for Incompressible SPH",
// ACM TOG 2012). Each boundary particle b carries ψ_b = ρ0 V_b in bpos[b].w (V_b from its own
// body's boundary neighbourhood, computed once on the host), its velocity in bvel[b].xyz (zero
// on a still obstacle; the host re-places moving ones before each step) and its friction
// f_b = 10 ν_b/ρ0 in bvel[b].w (ν_b its kinematic viscosity, 0 free slip).
// Inputs: sorted_pos, sorted_vel (slot order), fluid_density and particle_pressure (after
// `walls`), accel (after `forces` and `interact`), the boundary grid (bind group 1, see
// boundary.wgsl: bpos, bslot_start, the fluid's cells and hash in a table of its own), bvel.
// Outputs: obstacle_density adds poly6_norm Σ_b ψ_b (1 − r²/h²)³ to fluid_density and stores
// the Tait pressure of the sum (as walls.wgsl does); obstacle_forces writes obstacle_power[i] =
// Σ_b a_ib · v_b (the power per unit mass the obstacles put in; 0 away from them) and adds
// Σ_b ψ_b (p_i/ρ_i² + Π_ib) 45/(π h⁶) (h − r)² (x_i − x_b)/r to accel (eq. 10), Π_ib the
// friction −f_b ((v_i − v_b) · x_ib)/(r² + 0.01h²): the standard viscosity of ν_b against the
// boundary particle's volume ψ_b/ρ0 (Monaghan 2005; src/boundary/particles.rs says why).
// One invocation per fluid particle; one outside the boundary's bounding box grown by h has no
// boundary neighbour and walks nothing; the others walk the boundary grid (boundary.wgsl).
// Worked example, h = 1, ρ0 = 1, poly6_norm = 1, a lone boundary particle (ψ = 1) 0.5 from a
// fluid particle of density 1: the density becomes 1 + 0.421875; with 45/(π h⁶) = 1 and
// p/ρ² = 1, the resting particle is pushed away by 1 · 1 · 0.5² · 0.5/0.5 = 0.25.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read_write> fluid_density: array<f32>;
@group(0) @binding(5) var<storage, read_write> particle_pressure: array<f32>;
@group(0) @binding(6) var<storage, read_write> accel: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> obstacle_power: array<f32>;

// What the boundary walk (boundary.wgsl) gathers for one fluid particle: the density sum
// Σ ψ_b (1 − r²/h²)³ in `sum`, or (with `forces`) the push Σ ψ_b (own + Π_ib) 45/(π h⁶)
// (h − r)² d/r in `push` and its power Σ (push_b · v_b) in `sum`, of the particle moving at
// `v`, own = p/ρ².
struct BoundarySums {
    push: vec3<f32>,
    sum: f32,
    v: vec3<f32>,
    own: f32,
    forces: bool,
}

fn boundary_pair(sums: BoundarySums, k: u32, d: vec3<f32>, r2: f32) -> BoundarySums {
    var s = sums;
    if (!s.forces) {
        s.sum += boundary_weight(k, poly6_term(r2, params.inv_h2));
    } else if (r2 > 0.0) {
        let t = boundary_push(k, d, r2, s.v, s.own);
        s.push += t.xyz;
        s.sum += t.w;
    }
    return s;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn obstacle_density(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.n) {
        return;
    }
    let x = sorted_pos[i].xyz;
    var sum = 0.0;
    if (near_obstacles(x)) {
        sum = walk_boundary(x, BoundarySums(vec3<f32>(0.0), 0.0, vec3<f32>(0.0), 0.0, false)).sum;
    }
    let rho = fluid_density[i] + obstacle.poly6_norm * sum;
    fluid_density[i] = rho;
    // The Tait pressure of the new density, operation for operation as walls.wgsl stores it.
    let q = rho / fluid.rest_density;
    let q2 = q * q;
    let q4 = q2 * q2;
    let q7 = q4 * q2 * q;
    particle_pressure[i] = max(fluid.stiffness * (q7 - 1.0), 0.0);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn obstacle_forces(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= params.n) {
        return;
    }
    let x = sorted_pos[i].xyz;
    if (!near_obstacles(x)) {
        obstacle_power[i] = 0.0;
        return;
    }
    let rho = fluid_density[i];
    let own = particle_pressure[i] / (rho * rho);
    let walked = walk_boundary(x, BoundarySums(vec3<f32>(0.0), 0.0, sorted_vel[i].xyz, own, true));
    let a = accel[i];
    accel[i] = vec4<f32>(a.xyz + walked.push, a.w);
    obstacle_power[i] = walked.sum;
}
