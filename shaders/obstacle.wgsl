// Stages `obstacle_density` and `obstacle_forces` (CPU mirror: src/boundary.rs): obstacles as
// boundary particles (Akinci et al., "Versatile Rigid-Fluid Coupling for Incompressible SPH",
// ACM TOG 2012). Each boundary particle b carries ψ_b = ρ0 V_b in bpos[b].w (V_b from its own
// body's boundary neighbourhood, computed once on the host), its velocity in bvel[b].xyz (zero
// on a still obstacle; the host re-places moving ones before each step) and its friction factor
// in bvel[b].w (1 no-slip, 0 free-slip).
// Inputs: sorted_pos, sorted_vel (slot order), fluid_density and particle_pressure (after
// `walls`), accel (after `forces` and `interact`), the boundary grid (bpos, bslot_start: the
// fluid's cells and hash in a table of its own, obstacle.table_mask), bvel.
// Outputs: obstacle_density adds poly6_norm Σ_b ψ_b (1 − r²/h²)³ to fluid_density and stores
// the Tait pressure of the sum (as walls.wgsl does); obstacle_forces writes obstacle_power[i] =
// Σ_b a_ib · v_b (the power per unit mass the obstacles put in; 0 away from them) and adds
// Σ_b ψ_b (p_i/ρ_i² + Π_ib) 45/(π h⁶) (h − r)² (x_i − x_b)/r to accel, Π_ib the friction
// −ν min((v_i − v_b) · x_ib, 0)/(r² + 0.01h²), ν = slip_b h c α / (2ρ_i) (eqs. 10–13).
// One invocation per fluid particle; one outside the boundary's bounding box grown by h has no
// boundary neighbour and walks nothing. The walk: the cells from cell_of(p − h) to
// cell_of(p + h), z then y then x, each non-empty slot once (an earlier cell of the query
// with the same slot means it was walked), its particles ascending.
// Worked example, h = 1, ρ0 = 1, poly6_norm = 1, a lone boundary particle (ψ = 1) 0.5 from a
// fluid particle of density 1: the density becomes 1 + 0.421875; with 45/(π h⁶) = 1 and
// p/ρ² = 1, the resting particle is pushed away by 1 · 1 · 0.5² · 0.5/0.5 = 0.25.

struct ObstacleParams {
    lo: vec4<f32>,
    hi: vec4<f32>,
    count: u32,
    table_mask: u32,
    poly6_norm: f32,
    _pad: f32,
}

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> obstacle: ObstacleParams;
@group(0) @binding(3) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> fluid_density: array<f32>;
@group(0) @binding(6) var<storage, read_write> particle_pressure: array<f32>;
@group(0) @binding(7) var<storage, read_write> accel: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read> bpos: array<vec4<f32>>;
@group(0) @binding(9) var<storage, read> bslot_start: array<u32>;
@group(0) @binding(10) var<storage, read> bvel: array<vec4<f32>>;
@group(0) @binding(11) var<storage, read_write> obstacle_power: array<f32>;

fn boundary_slot(c: vec3<i32>) -> u32 {
    return hash_cell(c, obstacle.table_mask);
}

// Whether a cell before c in the walk order of the query lo..=hi maps to slot s.
fn walked_before(s: u32, c: vec3<i32>, lo: vec3<i32>, hi: vec3<i32>) -> bool {
    for (var z = lo.z; z <= c.z; z++) {
        for (var y = lo.y; y <= hi.y; y++) {
            for (var x = lo.x; x <= hi.x; x++) {
                let e = vec3<i32>(x, y, z);
                if (all(e == c)) {
                    return false;
                }
                if (boundary_slot(e) == s) {
                    return true;
                }
            }
        }
    }
    return false;
}

fn near_obstacles(x: vec3<f32>) -> bool {
    return all(x >= obstacle.lo.xyz) && all(x <= obstacle.hi.xyz);
}

// The boundary walk both stages share: the density sum Σ ψ_b (1 − r²/h²)³ in w, or (with
// `forces`) the push Σ ψ_b (own + Π_ib) 45/(π h⁶) (h − r)² d/r in xyz and its power
// Σ (push_b · v_b) in w, of the particle at x moving at v, own = p/ρ², ν = h c α / (2ρ).
fn walk_boundary(x: vec3<f32>, v: vec3<f32>, own: f32, nu: f32, forces: bool) -> vec4<f32> {
    var push = vec3<f32>(0.0);
    var sum = 0.0;
    let lo = query_lo(x, params);
    let hi = query_hi(x, lo, params);
    for (var cz = lo.z; cz <= hi.z; cz++) {
        for (var cy = lo.y; cy <= hi.y; cy++) {
            for (var cx = lo.x; cx <= hi.x; cx++) {
                let c = vec3<i32>(cx, cy, cz);
                let s = boundary_slot(c);
                let a = bslot_start[s];
                let b = bslot_start[s + 1u];
                if (a == b || walked_before(s, c, lo, hi)) {
                    continue;
                }
                for (var k = a; k < b; k++) {
                    let bp = bpos[k];
                    let r2 = distance2(x, bp.xyz);
                    if (r2 >= params.h2) {
                        continue;
                    }
                    if (!forces) {
                        sum += bp.w * poly6_term(r2, params.inv_h2);
                    } else if (r2 > 0.0) {
                        let r = sqrt(r2);
                        let w = params.h - r;
                        let d = x - bp.xyz;
                        let bv = bvel[k];
                        let u = v - bv.xyz;
                        let approach = u.x * d.x + u.y * d.y + u.z * d.z;
                        var friction = 0.0;
                        if (approach < 0.0) {
                            friction = -(bv.w * nu) * approach / (r2 + 0.01 * params.h2);
                        }
                        let c = bp.w * (own + friction) * fluid.kernel_45 * w * w / r;
                        push += d * c;
                        sum += c * (d.x * bv.x + d.y * bv.y + d.z * bv.z);
                    }
                }
            }
        }
    }
    return vec4<f32>(push, sum);
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
        sum = walk_boundary(x, vec3<f32>(0.0), 0.0, 0.0, false).w;
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
    let nu = params.h * fluid.sound_speed * fluid.alpha / (2.0 * rho);
    let walked = walk_boundary(x, sorted_vel[i].xyz, own, nu, true);
    let a = accel[i];
    accel[i] = vec4<f32>(a.xyz + walked.xyz, a.w);
    obstacle_power[i] = walked.w;
}
