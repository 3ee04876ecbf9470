// The run's kernel when it is Wendland's C2 function of support h (Wendland 1995; Dehnen & Aly
// 2012), prepended by src/shaders.rs to the stages that call kernel_w or kernel_grad; CPU twin
// src/kernel/wendland_c2.rs, operation for operation. W = k (1 - q)^4 (1 + 4q), q = r/h < 1,
// k = 21/(2 pi h^3); params.kernel_a = (k, 4k, 20k/h, 0): constants as uniforms, never literals
// in a product (src/kernel/mod.rs says why).
// Worked example: h = 1, q = r = 0.5 -> W = 21/(2 pi) * 0.0625 * 3 = 0.6267,
// grad W = -210/pi * 0.125 * d = -8.356 d.

// W at squared distance r2, 0 from r2 = h2 on.
fn kernel_w(r2: f32) -> f32 {
    let q = sqrt(r2) * params.inv_h;
    let f = 1.0 - q;
    let f2 = f * f;
    var w = 0.0;
    if q < 1.0 {
        w = f2 * f2 * (params.kernel_a.x + params.kernel_a.y * q);
    }
    return w;
}

// g with grad W(x_i - x_j) = g (x_i - x_j); 0 at r = 0 and from h on.
fn kernel_grad(r2: f32) -> f32 {
    let r = sqrt(r2);
    let q = r * params.inv_h;
    let f = 1.0 - q;
    var g = 0.0;
    if r > 0.0 && q < 1.0 {
        g = -(params.kernel_a.z * (f * f * f)) * params.inv_h;
    }
    return g;
}
