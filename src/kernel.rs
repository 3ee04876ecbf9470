//! The smoothing kernels, the Rust twins of the WGSL ones (`poly6_term` in common.wgsl, the cubic
//! spline in dfsph_pairs.wgsl), operation for operation: the CPU mirror, the obstacles'
//! boundary particles and the tests all evaluate them here.

use crate::params::{DfsphParams, SimParams};

/// The un-normalised poly6 term (1 − r²/h²)³ for a pair known to satisfy r² < h².
#[inline]
pub fn poly6_term(r2: f32, params: &SimParams) -> f32 {
    let q = (1.0 - r2 * params.inv_h2).max(0.0);
    q * q * q
}

/// The cubic spline W(r) of support h (Monaghan 1992): k(6q³ − 6q² + 1) for q ≤ ½,
/// 2k(1 − q)³ for ½ < q < 1, with q = r/h and k = 8/(π h³).
#[inline]
pub fn cubic_w(r2: f32, sp: &SimParams, dp: &DfsphParams) -> f32 {
    let q = r2.sqrt() * sp.inv_h;
    if q <= 0.5 {
        // k(1 − 6q² + 6q³) = k − 6k·q²(1 − q), with q² = r²/h², and every constant a uniform
        // (DfsphParams says why).
        let f = 1.0 - q;
        dp.kernel_w - dp.kernel_w6 * (r2 * sp.inv_h2 * f)
    } else if q < 1.0 {
        let f = 1.0 - q;
        dp.kernel_w * (2.0 * f * f * f)
    } else {
        0.0
    }
}

/// The factor g with ∇W(x_i − x_j) = g · (x_i − x_j) for the cubic spline: l q(3q − 2)/(h r)
/// for q ≤ ½, −l(1 − q)²/(h r) for ½ < q < 1, 0 at r = 0; l = 48/(π h³).
#[inline]
pub fn cubic_grad(r2: f32, sp: &SimParams, dp: &DfsphParams) -> f32 {
    let r = r2.sqrt();
    let q = r * sp.inv_h;
    if r > 0.0 && q < 1.0 {
        if q <= 0.5 {
            // l q(3q − 2) = q(3l·q − 2l), constants as uniforms.
            q * (dp.kernel_grad3 * q - dp.kernel_grad2) * sp.inv_h / r
        } else {
            let f = 1.0 - q;
            -(dp.kernel_grad * (f * f)) * sp.inv_h / r
        }
    } else {
        0.0
    }
}
