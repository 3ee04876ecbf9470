// Stage `walls` (CPU mirror: src/cpu/walls.rs): the density the walls add, by mirror
// particles (Colagrossi & Landrini 2003). Within h of a wall a particle's kernel reaches past
// the wall, where there is no fluid; each neighbour's mirror image across that wall (and across
// both or all three walls at an edge or corner) stands in for the missing fluid.
// Inputs (slot order): sorted_pos, particle_density (from `density`), slot_start.
// Output: fluid_density (N) = particle_density + density_scale · Σ_k Σ_images (1 − r²/h²)³,
// over the images within h, walked in the density's order, per candidate its images in
// decreasing subset mask.
// Worked example, h = 1, density_scale = 1, floor y = 0, one particle at y = 0.25: its image
// at y = −0.25 is 0.5 away → 1 + (1 − 0.25)³ = 1.421875, as for a real pair at that distance.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> particle_density: array<f32>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read_write> fluid_density: array<f32>;

// The poly6 term of image m of x_k seen from x; 0 unless m's walls are all near and r² < h².
fn image_term(x: vec3<f32>, xk: vec3<f32>, near: WallPlanes, m: u32) -> f32 {
    if (near.mask & m) != m {
        return 0.0;
    }
    let r2 = distance2(x, reflect_across(xk, near.plane, image_axes(m)));
    return select(0.0, poly6_term(r2, params.inv_h2), r2 < params.h2);
}

// All images of candidate k, one per non-empty subset m of the near walls in decreasing m (see
// `candidate` in forces.wgsl); 0 unless k itself lies within h, since an image is never nearer
// than its original.
fn images(x: vec3<f32>, near: WallPlanes, k: u32) -> f32 {
    let xk = sorted_pos[k].xyz;
    var t = 0.0;
    if distance2(x, xk) < params.h2 {
        var m = near.mask;
        loop {
            t = t + image_term(x, xk, near, m);
            m = (m - 1u) & near.mask;
            if m == 0u {
                break;
            }
        }
    }
    return t;
}

struct Walker {
    x: vec3<f32>,
    near: WallPlanes,
    sum: f32,
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    let x = sorted_pos[first].xyz;
    return Walker(x, wall_planes(x, params.h, fluid), 0.0);
}

fn visit(w: ptr<function, Walker>, k: u32) {
    (*w).sum = (*w).sum + images((*w).x, (*w).near, k);
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    fluid_density[first] = particle_density[first] + params.density_scale * (*w).sum;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn walls(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    // A mirror image within h of x has its original within h of x (the wall lies between
    // them), so the walk over x's own neighbour cells finds every image; away from the walls
    // there is nothing to walk for.
    if wall_planes(sorted_pos[i].xyz, params.h, fluid).mask != 0u {
        walk_one(i);
    } else {
        fluid_density[i] = particle_density[i];
    }
}
