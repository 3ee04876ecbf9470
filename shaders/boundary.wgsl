// The obstacles' boundary model: boundary particles (Akinci, Ihmsen, Akinci, Solenthaler &
// Teschner 2012, "Versatile Rigid-Fluid Coupling for Incompressible SPH", ACM TOG 31(4)), their
// grid, its walk and every pair term a solver asks of them. Its Rust twin is
// src/boundary/particles.rs, function for function (Boundary::walk, Boundary::weight, ...);
// the tank's mirror walls are the other model (boundary_tank.wgsl). Prepended to every stage
// that defines `fn boundary_pair(`: the stages' walks `dfsph_density`, `dfsph_rate`,
// `dfsph_pressure` and `dfsph_accel` (both solvers). Bind group 1, two storage buffers and no
// uniform block: the particles (bparticles: count entries (xyz, psi_b), bpos(k), then count
// entries (velocity, friction f_b = 10 ν_b/ρ0), bvel(k); one buffer, so the walks bind one
// storage buffer fewer: the largest stage fits the 10 a browser's WebGPU offers) and the
// obstacles' block followed by their grid's slot starts (`obstacles`; storage rather than a
// uniform block because Mesa 22.3's lavapipe overruns its table of inlinable uniforms, a heap
// write past its end, when a stage's uniform blocks take its eighth constant-buffer slot, and
// the DFSPH walks would: see grid::gpu::MAX_UNIFORM_BLOCKS); a stage without obstacles binds
// a block whose box is empty, so `near_obstacles` is false everywhere.
// The walk: the cells from cell_of(p - h) to cell_of(p + h), z then y then x, each non-empty
// slot once (an earlier cell of the query with the same slot means it was walked), its
// particles ascending; each particle k with r2 < h2 goes to the stage's
// boundary_pair(sums, k, x - bpos(k).xyz, r2), which folds it into the stage's own
// `BoundarySums`.
// Worked example: one boundary particle 0.5 from x at h = 1 is the only pair, with r2 = 0.25.

struct ObstacleParams {
    lo: vec4<f32>,
    hi: vec4<f32>,
    count: u32,
    table_mask: u32,
    _pad: vec2<f32>,
}

// The obstacles' block, then slot s's first particle at slot_start[s] (s < T_b + 1).
struct ObstacleGrid {
    params: ObstacleParams,
    slot_start: array<u32>,
}

@group(1) @binding(0) var<storage, read> bparticles: array<vec4<f32>>;
@group(1) @binding(1) var<storage, read> obstacles: ObstacleGrid;

// Boundary particle k's (xyz, psi_b).
fn bpos(k: u32) -> vec4<f32> {
    return bparticles[k];
}

// Boundary particle k's (velocity, f_b).
fn bvel(k: u32) -> vec4<f32> {
    return bparticles[obstacles.params.count + k];
}

fn boundary_slot(c: vec3<i32>) -> u32 {
    return hash_cell(c, obstacles.params.table_mask);
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

// Whether x lies in the boundary particles' bounding box grown by h (only there can one be
// within h).
fn near_obstacles(x: vec3<f32>) -> bool {
    return all(x >= obstacles.params.lo.xyz) && all(x <= obstacles.params.hi.xyz);
}

// The pair terms, one per quantity a solver sums; the stage's boundary_pair folds them into its
// BoundarySums. k is the boundary particle, d = x - x_b, r2 = |d|², g the kernel's gradient
// factor (∇W = g d) and w its value, passed in from the stage's own kernel (so this file reads
// no solver's own uniform block, only `params` and `fluid`, which every stage that includes it
// binds). Worked example: ψ_k = 2,
// g = -3, d = (0.5, 0, 0): boundary_grad = (-3, 0, 0).

// Density (Akinci eq. 6): ψ_b W.
fn boundary_weight(k: u32, w: f32) -> f32 {
    return bpos(k).w * w;
}

// The density's gradient sum (DFSPH's α): ψ_b ∇W.
fn boundary_grad(k: u32, d: vec3<f32>, g: f32) -> vec3<f32> {
    return d * (bpos(k).w * g);
}

// The density change rate: ψ_b (v - v_b) · ∇W, v_b the surface's velocity.
fn boundary_rate(k: u32, d: vec3<f32>, g: f32, v: vec3<f32>) -> f32 {
    let gv = d * (bpos(k).w * g);
    let dv = v - bvel(k).xyz;
    return dv.x * gv.x + dv.y * gv.y + dv.z * gv.z;
}

// The pressure push with the particle's own stiffness ki = κ_i/ρ_i (eq. 10 with
// the particle's pressure mirrored onto the boundary), xyz, and its power against the
// surface's velocity, w.
fn boundary_pressure(k: u32, d: vec3<f32>, g: f32, ki: f32) -> vec4<f32> {
    let c = d * (bpos(k).w * g) * ki;
    let vb = bvel(k).xyz;
    return vec4<f32>(c, c.x * vb.x + c.y * vb.y + c.z * vb.z);
}

// The friction (the kernel's gradient factor g, r2 > 0) on a particle moving at v: the standard
// viscosity's a = ψ_b f_b (v_ib · x_ib)/(r² + 0.01h²) g d, xyz; its share c r² of the row sum
// S (c = ψ_b f_b g/(r² + 0.01h²)), w; and its power against the surface's velocity, returned
// by boundary_viscous_power. Worked example: ψ_b f_b = 1, h = 1, g = −1, d = (0.5, 0, 0),
// still, v = (−1, 0, 0): a = (0.96, 0, 0), share 0.96.
fn boundary_viscous(k: u32, d: vec3<f32>, r2: f32, g: f32, v: vec3<f32>) -> vec4<f32> {
    let vb = bvel(k);
    let u = v - vb.xyz;
    let vx = u.x * d.x + u.y * d.y + u.z * d.z;
    let c = bpos(k).w * vb.w / (r2 + 0.01 * params.h2) * g;
    let a = d * (c * vx);
    return vec4<f32>(a, c * r2);
}

fn boundary_viscous_power(k: u32, a: vec3<f32>) -> f32 {
    let vb = bvel(k).xyz;
    return a.x * vb.x + a.y * vb.y + a.z * vb.z;
}

fn walk_boundary(x: vec3<f32>, start: BoundarySums) -> BoundarySums {
    var sums = start;
    let lo = query_lo(x, params);
    let hi = query_hi(x, lo, params);
    for (var cz = lo.z; cz <= hi.z; cz++) {
        for (var cy = lo.y; cy <= hi.y; cy++) {
            for (var cx = lo.x; cx <= hi.x; cx++) {
                let c = vec3<i32>(cx, cy, cz);
                let s = boundary_slot(c);
                let a = obstacles.slot_start[s];
                let b = obstacles.slot_start[s + 1u];
                if (a == b || walked_before(s, c, lo, hi)) {
                    continue;
                }
                for (var k = a; k < b; k++) {
                    let bp = bpos(k).xyz;
                    let r2 = distance2(x, bp);
                    if (r2 < params.h2) {
                        sums = boundary_pair(sums, k, x - bp, r2);
                    }
                }
            }
        }
    }
    return sums;
}
