// The run's kernel when it is the cubic B-spline of support h (Monaghan & Lattanzio 1985;
// Koschier et al. 2019, eq. 4), prepended by src/shaders.rs to the stages that call kernel_w or
// kernel_grad; CPU twin src/kernel/cubic_spline.rs, operation for operation.
// W = k (6q^3 - 6q^2 + 1) for q <= 1/2, 2k (1 - q)^3 for 1/2 < q < 1, k = 8/(pi h^3);
// params.kernel_a = (k, 6k, 2k, 0), params.kernel_b = (3l, 2l, l, 0) with l = 48/(pi h^4):
// constants as uniforms, never literals in a product (src/kernel/mod.rs says why).
// Worked example: h = 1, r = 0.25 -> W = 1.8303, g = -19.099; r = 0.75 -> W = 0.0796,
// g = -1.2732.

// W at squared distance r2, 0 from r2 = h2 on.
fn kernel_w(r2: f32) -> f32 {
    let q = sqrt(r2) * params.inv_h;
    let f = 1.0 - q;
    var w = 0.0;
    if q <= 0.5 {
        w = params.kernel_a.x + params.kernel_a.y * (q * q * (q - 1.0));
    } else if q < 1.0 {
        w = params.kernel_a.z * (f * f * f);
    }
    return w;
}

// g with grad W(x_i - x_j) = g (x_i - x_j); 0 at r = 0 and from h on.
fn kernel_grad(r2: f32) -> f32 {
    let r = sqrt(r2);
    let q = r * params.inv_h;
    let f = 1.0 - q;
    var g = 0.0;
    if r > 0.0 && q <= 0.5 {
        g = (params.kernel_b.x * q - params.kernel_b.y) * params.inv_h;
    } else if r > 0.0 && q < 1.0 {
        g = -(params.kernel_b.z * (f * f)) / r;
    }
    return g;
}
