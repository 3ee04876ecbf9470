// The boundary model of the tank's walls: mirror images (Colagrossi & Landrini 2003, "Numerical
// simulation of interfacial flows by smoothed particle hydrodynamics", J. Comput. Phys. 191,
// §3.2), and its hard walls (clamp_to_box). Its Rust twin is src/boundary/tank.rs,
// function for function; it explains the method and the wall model. Prepended (after COMMON,
// WALK and MEMBERS) to the stages that walk member by member (those that define
// `fn new_member(`: walls, forces and the dfsph_* walks) and to those that clamp positions to
// the tank (integrate, dfsph_integrate).
//
// The interface the walks (dfsph_pairs.wgsl and the dfsph_* stages) ask of the tank, the only
// names of it they use; another wall model is another file with these functions (the other
// boundary model, the obstacles' particles, is boundary.wgsl):
//   BoundaryNear, boundary_near(x, h, fluid)   what the model keeps of x's surroundings (per member, once)
//   boundary_images(near, x, xk, h2)           the set of xk's images x sees        (per candidate)
//   boundary_first_image(seen), boundary_next_image(seen, image), boundary_sees(seen, image)
//                                              the set's images in the model's order (0: none left)
//   boundary_image_at(xk, near, image)         where an image lies                  (per image)
//   boundary_image_vector(v, image)            a vector as the image carries it (gradients, kinematic velocity)
//   boundary_image_viscous_velocity(v, x, d, near, image, fluid)  its velocity in the viscous terms
//   boundary_own_gradient, boundary_own_alpha_term  a particle's own images' share of DFSPH's α
//   clamp_to_box                               the hard walls after integration (both solvers)
// An image is a u32 id, 0 the candidate itself; sets combine with |. An image carries its
// original's density, pressure and stiffness. The solver adds each image right after its
// original, through its own pair term, into the same sums: the walk keeps the loops, the model
// says which images there are, where they lie and how they move. The tank's image id is the
// mask of the walls it is reflected across (1 to 7); a set is a mask of walls, its images the
// mask's subsets in decreasing order.
//
// Worked example, h = 1, floor at y = 0, a particle at y = 0.25 and a neighbour at y = 0.5
// straight above: boundary_near gives mask 0b010, plane.y = 0; boundary_images gives the set
// 0b010 (the neighbour lies within h), whose one image 0b010 lies at y = -0.5, 0.75 away; in a
// density walk it adds W(r² = 0.5625) as a real neighbour there would.

// Per axis, the nearer wall if it lies closer than h to x (bit `axis` of `mask`,
// its coordinate in `plane[axis]`). Only within h of a wall can a mirror image of a neighbour
// fall inside the kernel.
struct WallPlanes {
    mask: u32,
    plane: vec3<f32>,
}

alias BoundaryNear = WallPlanes;

fn boundary_near(x: vec3<f32>, h: f32, fluid: FluidParams) -> BoundaryNear {
    var w = WallPlanes(0u, vec3<f32>(0.0));
    for (var axis = 0; axis < 3; axis = axis + 1) {
        let below = x[axis] - fluid.tank_min[axis];
        let above = fluid.tank_max[axis] - x[axis];
        let lo_open = (fluid.open & (1u << u32(2 * axis))) != 0u;
        let hi_open = (fluid.open & (1u << u32(2 * axis + 1))) != 0u;
        if !lo_open && below < h && (below <= above || hi_open) {
            w.mask = w.mask | (1u << u32(axis));
            w.plane[axis] = fluid.tank_min[axis];
        } else if !hi_open && above < h {
            w.mask = w.mask | (1u << u32(axis));
            w.plane[axis] = fluid.tank_max[axis];
        }
    }
    return w;
}

// The set of xk's images a particle at x near w sees: all of w's walls if xk lies within h of
// x (only then can an image fall inside the kernel; see src/boundary/tank.rs image_set), else
// none.
fn boundary_images(w: BoundaryNear, x: vec3<f32>, xk: vec3<f32>, h2: f32) -> u32 {
    return select(0u, w.mask, w.mask != 0u && distance2(x, xk) < h2);
}

// The images of a set `seen`, largest mask first: its first, the one after `image` (0: none left).
fn boundary_first_image(seen: u32) -> u32 {
    return seen;
}

fn boundary_next_image(seen: u32, image: u32) -> u32 {
    return (image - 1u) & seen;
}

// Whether `image` belongs to the set `seen` (a subset of its walls).
fn boundary_sees(seen: u32, image: u32) -> bool {
    return (seen & image) == image;
}

// The axes image m (1 to 7, a subset of the mask's bits) reflects.
fn image_axes(m: u32) -> vec3<bool> {
    return vec3<bool>((m & 1u) != 0u, (m & 2u) != 0u, (m & 4u) != 0u);
}

// x reflected across the planes of the chosen axes: 2w − x there, x elsewhere.
fn reflect_across(x: vec3<f32>, plane: vec3<f32>, axes: vec3<bool>) -> vec3<f32> {
    return select(x, 2.0 * plane - x, axes);
}

// Where `image` of a candidate at xk lies for a particle near `near` (xk itself for image 0).
fn boundary_image_at(xk: vec3<f32>, near: BoundaryNear, image: u32) -> vec3<f32> {
    return reflect_across(xk, near.plane, image_axes(image));
}

// A vector as `image` carries it: the gradient's reflection, and the velocity in the kinematic
// terms: free slip, the normal components reflected (src/boundary/tank.rs image_vector gives
// the wall model).
fn boundary_image_vector(v: vec3<f32>, image: u32) -> vec3<f32> {
    return select(v, -v, image_axes(image));
}

// How a wall of Navier slip length b (m; negative: free slip) carries the tangential velocity
// of a particle y from it into its image: 1 free slip, -1 no slip, else (b - y)/(b + y)
// (src/boundary/tank.rs slip_factor, its twin, gives the model). Worked example: b = 0.01,
// y = 0.005 -> 1/3.
fn slip_factor(b: f32, y: f32) -> f32 {
    if b < 0.0 {
        return 1.0;
    }
    if b == 0.0 {
        return -1.0;
    }
    return (b - y) / (b + y);
}

// The velocity in the viscous terms of both solvers of `image` (nonzero), at x - d, of a
// particle with velocity v, for a particle at x near `walls`: normal components reflected,
// tangential ones scaled by the slip factor of the wall's slip length at the original's
// distance from it (the more frictional wall's at an edge or corner). Free slip by default
// (src/boundary/tank.rs image_viscous_velocity, its twin, gives the reasons). The one place the
// tank walls' viscous model is written in WGSL: dfsph_accel calls it.
// Worked example: b = 0 on the floor, v = (1, 2, 3) -> (-1, -2, -3); free slip -> (1, -2, 3).
fn boundary_image_viscous_velocity(v: vec3<f32>, x: vec3<f32>, d: vec3<f32>, walls: BoundaryNear, image: u32, fluid: FluidParams) -> vec3<f32> {
    let axes = image_axes(image);
    var f = 1.0;
    for (var a = 0; a < 3; a = a + 1) {
        if axes[a] {
            let b = select(fluid.slip_hi[a], fluid.slip_lo[a], walls.plane[a] == fluid.tank_min[a]);
            f = min(f, slip_factor(b, abs(x[a] - d[a] - walls.plane[a])));
        }
    }
    return select(v * f, -v, axes);
}

// The tank's hard walls at lo and hi (the tank's, held half a spacing inside by
// dfsph_integrate), none on the open sides (src/boundary/tank.rs clamp_to_box): a coordinate
// past a wall is put back on it, and an outward normal speed becomes -restitution times
// itself, so walls never add energy.
fn clamp_to_box(x: ptr<function, vec3<f32>>, v: ptr<function, vec3<f32>>, lo: vec3<f32>, hi: vec3<f32>, restitution: f32, open: u32) {
    for (var axis = 0; axis < 3; axis = axis + 1) {
        if (open & (1u << u32(2 * axis))) == 0u && (*x)[axis] < lo[axis] {
            (*x)[axis] = lo[axis];
            if (*v)[axis] < 0.0 {
                (*v)[axis] = (*v)[axis] * -restitution;
            }
        }
        if (open & (1u << u32(2 * axis + 1))) == 0u && (*x)[axis] > hi[axis] {
            (*x)[axis] = hi[axis];
            if (*v)[axis] > 0.0 {
                (*v)[axis] = (*v)[axis] * -restitution;
            }
        }
    }
}

// A particle's own images within h (src/boundary/tank.rs own_images, which gives the method and
// a worked example): Σ_m m ∇W(x − x'_m) over its reflections across its near walls, in
// decreasing subset mask. They carry its stiffness and move with it.
fn boundary_own_gradient(x: vec3<f32>, walls: BoundaryNear, mass: f32, h2: f32) -> vec3<f32> {
    var own_grad = vec3<f32>(0.0);
    if walls.mask != 0u {
        var s = walls.mask;
        loop {
            let axes = image_axes(s);
            let d = x - reflect_across(x, walls.plane, axes);
            let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
            if r2 < h2 {
                own_grad = own_grad + d * (mass * kernel_grad(r2));
            }
            s = (s - 1u) & walls.mask;
            if s == 0u {
                break;
            }
        }
    }
    return own_grad;
}

// What the own images take back from α's denominator (OwnImages::alpha_term): Σ_m (gp
// reflected across image m's walls) · m ∇W(x − x'_m), gp the gradient sum with the own images.
fn boundary_own_alpha_term(x: vec3<f32>, walls: BoundaryNear, mass: f32, h2: f32, gp: vec3<f32>) -> f32 {
    var own = 0.0;
    if walls.mask != 0u {
        var s = walls.mask;
        loop {
            let axes = image_axes(s);
            let d = x - reflect_across(x, walls.plane, axes);
            let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
            if r2 < h2 {
                let gv = d * (mass * kernel_grad(r2));
                let rg = select(gp, -gp, axes);
                own = own + (rg.x * gv.x + rg.y * gv.y + rg.z * gv.z);
            }
            s = (s - 1u) & walls.mask;
            if s == 0u {
                break;
            }
        }
    }
    return own;
}
