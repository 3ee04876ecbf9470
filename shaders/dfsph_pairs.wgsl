// The DFSPH pair walk (CPU mirror: src/cpu/dfsph.rs pairs, cubic_w, cubic_grad), prepended
// after walk.wgsl to the DFSPH stages that walk: those that define
//   fn dfsph_pair(w: ptr<function, Walker>, j: u32, d: vec3<f32>, r2: f32, axes: vec3<bool>)
// and a Walker with fields i (the particle), x (its position) and walls (wall_planes of x).
// Such a stage binds `params`, `fluid`, `dfsph`, `sorted_pos` and `slot_start`.
// Input: candidate k of the shared walk. Output: dfsph_pair called for k itself if k != i and
// r2 < h2 (axes all false), then for each image of k across the near walls within h, in
// decreasing subset mask (axes = the reflected ones), d = x_i - (image of) x_k.
// Kernel: the cubic spline of support h (Monaghan 1992), as SPlisHSPlasH uses it.
// Worked example: h = 1, q = r = 0.5 -> W = 8/pi * 0.25, grad W = -48/pi/4 * d/r.

fn cubic_w(r2: f32) -> f32 {
    let q = sqrt(r2) * params.inv_h;
    if q <= 0.5 {
        // Constants as uniforms, never literals in a product (src/params.rs DfsphParams).
        let f = 1.0 - q;
        return dfsph.kernel_w - dfsph.kernel_w6 * (r2 * params.inv_h2 * f);
    } else if q < 1.0 {
        let f = 1.0 - q;
        return dfsph.kernel_w * (2.0 * f * f * f);
    }
    return 0.0;
}

// g with grad W(x_i - x_j) = g (x_i - x_j).
fn cubic_grad(r2: f32) -> f32 {
    let r = sqrt(r2);
    let q = r * params.inv_h;
    if !(r > 0.0) || q >= 1.0 {
        return 0.0;
    } else if q <= 0.5 {
        return q * (dfsph.kernel_grad3 * q - dfsph.kernel_grad2) * params.inv_h / r;
    }
    let f = 1.0 - q;
    return -(dfsph.kernel_grad * (f * f)) * params.inv_h / r;
}

fn visit(w: ptr<function, Walker>, k: u32) {
    let x = (*w).x;
    let xk = sorted_pos[k].xyz;
    let d = x - xk;
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    if !(r2 < params.h2) {
        return;
    }
    if k != (*w).i {
        dfsph_pair(w, k, d, r2, vec3<bool>(false));
    }
    let walls = (*w).walls;
    if walls.mask != 0u {
        var m = walls.mask;
        loop {
            let axes = image_axes(m);
            let di = x - reflect_across(xk, walls.plane, axes);
            let r2i = di.x * di.x + di.y * di.y + di.z * di.z;
            if r2i < params.h2 {
                dfsph_pair(w, k, di, r2i, axes);
            }
            m = (m - 1u) & walls.mask;
            if m == 0u {
                break;
            }
        }
    }
}
