// Stage `walls` (CPU mirror: src/cpu/wcsph/walls.rs, after src/cpu/density.rs): the density the
// walls add, by mirror particles (Colagrossi & Landrini 2003), with stage `density` fused in.
// Within h of a wall a particle's kernel reaches past the wall, where there is no fluid; each
// neighbour's mirror image across that wall (and across both or all three walls at an edge or
// corner) stands in for the missing fluid.
// Inputs (slot order): sorted_pos, slot_start, the groups `order` listed (group_range,
// group_args: see density.wgsl).
// Outputs: particle_density (N), stage `density`'s ρ = density_scale · Σ_k (1 − r²/h²)³ over
// every candidate within h (density.wgsl's terms, in the same walk order, so the same bits);
// fluid_density (N) = particle_density + density_scale · Σ_k Σ_images (1 − r²/h²)³ over the
// images within h, per candidate its images in decreasing subset mask; and the pressure of
// that density (the fused `pressure` stage, below). Grouped (walk.wgsl): one invocation per
// group of up to GROUP particles of one slot, each candidate read once for all of them.
// Fused because the fluid step's density pass walked every group and this pass walked the
// groups near a wall again: one walk for both measured 23-32% less time than the two passes
// on lavapipe (benches/layout.rs, docs/performance.md), one dispatch fewer, and the
// densities are not written and read back between them. The neighbour library keeps
// density.wgsl for density-only runs.
// Worked example, h = 1, density_scale = 1, floor y = 0, one particle at y = 0.25: its density
// is 1 (itself), and its image at y = −0.25 is 0.5 away → fluid density 1 + (1 − 0.25)³ =
// 1.421875, as for a real pair at that distance.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> particle_density: array<f32>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read_write> fluid_density: array<f32>;
@group(0) @binding(6) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(7) var<storage, read> group_args: array<u32, 4>;
@group(0) @binding(8) var<storage, read_write> particle_pressure: array<f32>;

// Fused stage `pressure` (CPU mirror: src/cpu/wcsph/pressure.rs): the Tait equation of state
// (Becker & Teschner 2007), p = B((ρ/ρ0)^7 − 1), B = ρ0 c²/7, clamped at 0 (no tensile pull),
// of the density this pass ends with. Worked example, ρ0 = 1000, B = 1e5: ρ = 1010 →
// p ≈ 7213.5 Pa; ρ = 990 → 0. Fused here because a pass of its own re-read every density
// just written (docs/performance.md, Fusions).
fn store_density(i: u32, rho: f32) {
    fluid_density[i] = rho;
    let x = rho / fluid.rest_density;
    let x2 = x * x;
    let x4 = x2 * x2;
    let x7 = x4 * x2 * x;
    particle_pressure[i] = max(fluid.stiffness * (x7 - 1.0), 0.0);
}

// One member of the group: its position, near walls, image sum and density sum so far.
struct Member {
    x: vec3<f32>,
    near: WallPlanes,
    sum: f32,
    direct: f32,
}

// The poly6 term of image s of xk seen from member m; 0 unless s is a subset of `seen` (the
// walls of m whose images of xk it sees, see image_mask) and r² < h².
fn image_term(m: Member, xk: vec3<f32>, seen: u32, s: u32) -> f32 {
    let r2 = distance2(m.x, reflect_across(xk, m.near.plane, image_axes(s)));
    return select(0.0, poly6_term(r2, params.inv_h2), (seen & s) == s && r2 < params.h2);
}

// The walls across which member m sees xk's images: its near walls if xk lies within h (a mirror
// image within h of x has its original within h of x, the wall lying between them), else none.
fn image_mask(m: Member, xk: vec3<f32>) -> u32 {
    return wall_image_mask(m.near, m.x, xk, params.h2);
}

fn new_member(i: u32) -> Member {
    let x = sorted_pos[i].xyz;
    return Member(x, wall_planes(x, params.h, fluid), 0.0, 0.0);
}

// All images of candidate k for every member, one per non-empty subset s of the members' near
// walls in decreasing s (see `visit` in forces.wgsl: each member takes the subsets of its own
// mask, in its own walk's order; the others add exact zeros).
// density.wgsl's poly6 term of candidate xk for member m: (1 − r²/h²)³ where r² < h², an
// exact 0.0 elsewhere (adding it leaves the sum bit for bit as the CPU's).
fn direct_term(m: Member, xk: vec3<f32>) -> f32 {
    let r2 = distance2(m.x, xk);
    let q = max(1.0 - r2 * params.inv_h2, 0.0);
    return select(0.0, q * q * q, r2 < params.h2);
}

fn visit(w: ptr<function, Walker>, k: u32) {
    let xk = sorted_pos[k].xyz;
    (*w).m0.direct = (*w).m0.direct + direct_term((*w).m0, xk);
    if MEMBERS != 1u {
        (*w).m1.direct = (*w).m1.direct + direct_term((*w).m1, xk);
        (*w).m2.direct = (*w).m2.direct + direct_term((*w).m2, xk);
        (*w).m3.direct = (*w).m3.direct + direct_term((*w).m3, xk);
        (*w).m4.direct = (*w).m4.direct + direct_term((*w).m4, xk);
        (*w).m5.direct = (*w).m5.direct + direct_term((*w).m5, xk);
        (*w).m6.direct = (*w).m6.direct + direct_term((*w).m6, xk);
        (*w).m7.direct = (*w).m7.direct + direct_term((*w).m7, xk);
    }
    if MEMBERS == 1u {
        let e = image_mask((*w).m0, xk);
        if e != 0u {
            var t = 0.0;
            var s = e;
            loop {
                t = t + image_term((*w).m0, xk, e, s);
                s = (s - 1u) & e;
                if s == 0u {
                    break;
                }
            }
            (*w).m0.sum = (*w).m0.sum + t;
        }
    } else {
        visit_members(w, xk);
    }
}

fn visit_members(w: ptr<function, Walker>, xk: vec3<f32>) {
    let e0 = image_mask((*w).m0, xk);
    let e1 = image_mask((*w).m1, xk);
    let e2 = image_mask((*w).m2, xk);
    let e3 = image_mask((*w).m3, xk);
    let e4 = image_mask((*w).m4, xk);
    let e5 = image_mask((*w).m5, xk);
    let e6 = image_mask((*w).m6, xk);
    let e7 = image_mask((*w).m7, xk);
    let near = e0 | e1 | e2 | e3 | e4 | e5 | e6 | e7;
    if near != 0u {
        add_images(w, xk, near, vec4<u32>(e0, e1, e2, e3), vec4<u32>(e4, e5, e6, e7));
    }
}

// The images of candidate xk across the subsets of `near` added to the members' sums (ea, eb:
// the members' image masks, 0-3 and 4-7).
fn add_images(w: ptr<function, Walker>, xk: vec3<f32>, near: u32, ea: vec4<u32>, eb: vec4<u32>) {
    var t0 = 0.0;
    var t1 = 0.0;
    var t2 = 0.0;
    var t3 = 0.0;
    var t4 = 0.0;
    var t5 = 0.0;
    var t6 = 0.0;
    var t7 = 0.0;
    var s = near;
    loop {
        t0 = t0 + image_term((*w).m0, xk, ea.x, s);
        t1 = t1 + image_term((*w).m1, xk, ea.y, s);
        t2 = t2 + image_term((*w).m2, xk, ea.z, s);
        t3 = t3 + image_term((*w).m3, xk, ea.w, s);
        t4 = t4 + image_term((*w).m4, xk, eb.x, s);
        t5 = t5 + image_term((*w).m5, xk, eb.y, s);
        t6 = t6 + image_term((*w).m6, xk, eb.z, s);
        t7 = t7 + image_term((*w).m7, xk, eb.w, s);
        s = (s - 1u) & near;
        if s == 0u {
            break;
        }
    }
    (*w).m0.sum = (*w).m0.sum + t0;
    (*w).m1.sum = (*w).m1.sum + t1;
    (*w).m2.sum = (*w).m2.sum + t2;
    (*w).m3.sum = (*w).m3.sum + t3;
    (*w).m4.sum = (*w).m4.sum + t4;
    (*w).m5.sum = (*w).m5.sum + t5;
    (*w).m6.sum = (*w).m6.sum + t6;
    (*w).m7.sum = (*w).m7.sum + t7;
}

fn finish(m: Member, i: u32) {
    let rho = params.density_scale * m.direct;
    particle_density[i] = rho;
    // A select the compiler cannot fold (T is never 0) keeps llvmpipe from fusing rho's
    // multiply into the add below, which the CPU does not do (measured: 1-ulp differences at
    // the walls without it).
    let kept = select(rho, 0.0, params.table_size == 0u);
    store_density(i, kept + params.density_scale * m.sum);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn walls(@builtin(global_invocation_id) gid: vec3<u32>) {
    walk_listed_group(gid.x);
}
