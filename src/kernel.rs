//! The smoothing kernels, the Rust twins of the WGSL ones (`poly6_term` in common.wgsl, the
//! Wendland C2 kernel in dfsph_pairs.wgsl), operation for operation: the CPU mirror, the
//! obstacles' boundary particles and the tests all evaluate them here.

use crate::params::{DfsphParams, SimParams};

/// The un-normalised poly6 term (1 − r²/h²)³ for a pair known to satisfy r² < h².
#[inline]
pub fn poly6_term(r2: f32, params: &SimParams) -> f32 {
    let q = (1.0 - r2 * params.inv_h2).max(0.0);
    q * q * q
}

/// DFSPH's kernel, Wendland's C2 function in 3D (Wendland 1995; Dehnen & Aly 2012, MNRAS 425,
/// 1068, table 1) of support h: W(r) = k (1 − q)⁴ (1 + 4q) for q = r/h < 1, 0 beyond, with
/// k = 21/(2π h³) = W(0). Why this kernel and not the cubic spline:
/// [`crate::params::WENDLAND_SUPPORT`].
/// Worked example: h = 1, r = 0.5: W = 21/(2π) · 0.0625 · 3 = 0.6267.
#[inline]
pub fn wendland_w(r2: f32, sp: &SimParams, dp: &DfsphParams) -> f32 {
    let q = r2.sqrt() * sp.inv_h;
    if q < 1.0 {
        // (1 − q)⁴ (k + 4k q), every constant a uniform (DfsphParams says why).
        let f = 1.0 - q;
        let f2 = f * f;
        f2 * f2 * (dp.kernel_w + dp.kernel_w4 * q)
    } else {
        0.0
    }
}

/// The factor g with ∇W(x_i − x_j) = g · (x_i − x_j) for [`wendland_w`]: (dW/dr)/r =
/// −20k (1 − q)³/h² = −l (1 − q)³/h with l = 20k/h = 210/(π h⁴), for 0 < r < h; 0 at r = 0
/// (where x_i − x_j is zero too) and beyond h. Worked example: h = 1, r = 0.5:
/// g = −210/π · 0.125 = −8.356, so |∇W| = 4.178.
#[inline]
pub fn wendland_grad(r2: f32, sp: &SimParams, dp: &DfsphParams) -> f32 {
    let r = r2.sqrt();
    let q = r * sp.inv_h;
    if r > 0.0 && q < 1.0 {
        let f = 1.0 - q;
        -(dp.kernel_grad * (f * f * f)) * sp.inv_h
    } else {
        0.0
    }
}
