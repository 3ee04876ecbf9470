//! The cubic B-spline of support h (Monaghan & Lattanzio 1985; in the form of Koschier et al.
//! 2019, "Smoothed particle hydrodynamics techniques for the physics based simulation of
//! fluids and solids", Eurographics tutorial, eq. 4): W(r) = k (6q³ − 6q² + 1) for
//! q = r/h ≤ ½, 2k (1 − q)³ for ½ < q < 1, 0 beyond, k = 8/(π h³). The CPU twin of
//! `shaders/kernel/cubic_spline.wgsl`, operation for operation.
//!
//! Why it is offered: it is the kernel of SPlisHSPlasH's DFSPH and of most of the SPH
//! literature, at [`DEFAULT_SUPPORT`] = 2 spacings about 33 neighbours against Wendland C2's
//! 113 at 3, so a simulated second of the 20 000-particle dam break costs 0.40 of Wendland
//! C2's (docs/benchmarks.md). Why it is not the default: water on it is stiffer against shear
//! (its summation density rises under shear as ρ(0)(1 + cγ²) with c = +0.014 against Wendland
//! C2's +0.004: `scripts/sheared_density.py 0.05 cubic 2`), and its standing wave runs 9.9%
//! short and keeps 67% of its height in a period, against 2.7% and 86% (docs/results.md, what
//! the kernel buys).

use super::{Spec, Uniforms};

/// Its declaration ([`super::Kernel::spec`]).
pub const SPEC: Spec = Spec {
    name: "cubic-spline",
    title: "cubic spline",
    default_support: DEFAULT_SUPPORT,
    shader: WGSL,
    norm,
    uniforms,
    w64,
    grad_coef,
    grad_profile,
};

/// Its WGSL twin.
pub const WGSL: &str = include_str!("../../shaders/kernel/cubic_spline.wgsl");

/// The default support, in spacings: 2, the support of SPlisHSPlasH's DFSPH (4 particle
/// radii) and of Bender & Koschier 2017's experiments.
pub const DEFAULT_SUPPORT: f32 = 2.0;

/// Its normalisation k = W(0) at support `h` in `dim` dimensions: 8/(π h³) in 3D, 40/(7π h²)
/// in 2D (Monaghan 2005, Rep. Prog. Phys. 68, eq. 2.6, for the support 2h there, rescaled to
/// h; as SPlisHSPlasH's `CubicKernel2D`). The shape and the gradient's form do not change with
/// the dimension, only k.
pub fn norm(h: f64, dim: u32) -> f64 {
    match dim {
        2 => 40.0 / (7.0 * std::f64::consts::PI * h * h),
        _ => 8.0 / (std::f64::consts::PI * h * h * h),
    }
}

/// `SimParams::kernel_a` = [k, 6k, 2k, 0] and `kernel_b` = [3l, 2l, l, 0] at support `h` with
/// normalisation `k` ([`norm`]), with l = 6k/h, 48/(π h⁴) in 3D ([`w`], [`grad`]).
pub fn uniforms(h: f64, k: f64) -> [f32; 8] {
    let l = 6.0 * k / h;
    [
        k as f32,
        (6.0 * k) as f32,
        (2.0 * k) as f32,
        0.0,
        (3.0 * l) as f32,
        (2.0 * l) as f32,
        l as f32,
        0.0,
    ]
}

/// W at squared distance r2. Worked example: h = 1, r = 0.25: W = 8/π · 0.71875 = 1.8303;
/// r = 0.75: W = 16/π · 0.015625 = 0.0796.
#[inline(always)]
pub fn w(r2: f32, sp: &impl Uniforms) -> f32 {
    let q = r2.sqrt() * sp.inv_h();
    let f = 1.0 - q;
    if q <= 0.5 {
        // k + 6k q² (q − 1).
        sp.kernel_a()[0] + sp.kernel_a()[1] * (q * q * (q - 1.0))
    } else if q < 1.0 {
        sp.kernel_a()[2] * (f * f * f)
    } else {
        0.0
    }
}

/// g with ∇W(x_i − x_j) = g · (x_i − x_j): (dW/dr)/r = (l/h)(3q − 2) for q ≤ ½,
/// −l (1 − q)²/r for ½ < q < 1; 0 at r = 0 and from h on. Worked example: h = 1, r = 0.25:
/// g = 48/π · (−1.25) = −19.099; r = 0.75: g = −48/π · 0.0625/0.75 = −1.2732.
#[inline(always)]
pub fn grad(r2: f32, sp: &impl Uniforms) -> f32 {
    let r = r2.sqrt();
    let q = r * sp.inv_h();
    let f = 1.0 - q;
    if r > 0.0 && q <= 0.5 {
        (sp.kernel_b()[0] * q - sp.kernel_b()[1]) * sp.inv_h()
    } else if r > 0.0 && q < 1.0 {
        -(sp.kernel_b()[2] * (f * f)) / r
    } else {
        0.0
    }
}

/// [`w`] and [`grad`] in eight AVX2 lanes, operation for operation (a lane's value is the
/// scalar function's bits at that lane's r²; both branches are computed and the lane's is
/// kept).
#[cfg(target_arch = "x86_64")]
pub mod lanes {
    use super::Uniforms;
    use std::arch::x86_64::*;

    /// [`super::w`] per lane.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn w(r2: __m256, sp: &impl Uniforms) -> __m256 {
        let a = sp.kernel_a();
        let q = _mm256_mul_ps(_mm256_sqrt_ps(r2), _mm256_set1_ps(sp.inv_h()));
        let f = _mm256_sub_ps(_mm256_set1_ps(1.0), q);
        let cubic = _mm256_mul_ps(_mm256_mul_ps(q, q), _mm256_sub_ps(q, _mm256_set1_ps(1.0)));
        let inner = _mm256_add_ps(_mm256_set1_ps(a[0]), _mm256_mul_ps(_mm256_set1_ps(a[1]), cubic));
        let outer = _mm256_mul_ps(_mm256_set1_ps(a[2]), _mm256_mul_ps(_mm256_mul_ps(f, f), f));
        let near = _mm256_cmp_ps::<_CMP_LE_OQ>(q, _mm256_set1_ps(0.5));
        let within = _mm256_cmp_ps::<_CMP_LT_OQ>(q, _mm256_set1_ps(1.0));
        _mm256_and_ps(within, _mm256_blendv_ps(outer, inner, near))
    }

    /// [`super::grad`] per lane.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn grad(r2: __m256, sp: &impl Uniforms) -> __m256 {
        let b = sp.kernel_b();
        let r = _mm256_sqrt_ps(r2);
        let inv_h = _mm256_set1_ps(sp.inv_h());
        let q = _mm256_mul_ps(r, inv_h);
        let f = _mm256_sub_ps(_mm256_set1_ps(1.0), q);
        let inner = _mm256_mul_ps(
            _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(b[0]), q), _mm256_set1_ps(b[1])),
            inv_h,
        );
        let c = _mm256_mul_ps(_mm256_set1_ps(b[2]), _mm256_mul_ps(f, f));
        let outer = _mm256_div_ps(_mm256_xor_ps(c, _mm256_set1_ps(-0.0)), r);
        let near = _mm256_cmp_ps::<_CMP_LE_OQ>(q, _mm256_set1_ps(0.5));
        let live = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_GT_OQ>(r, _mm256_setzero_ps()),
            _mm256_cmp_ps::<_CMP_LT_OQ>(q, _mm256_set1_ps(1.0)),
        );
        _mm256_and_ps(live, _mm256_blendv_ps(outer, inner, near))
    }
}

/// W at q for support `h`, in f64.
pub fn w64(h: f64, q: f64) -> f64 {
    let k = 8.0 / (std::f64::consts::PI * h.powi(3));
    if q <= 0.5 {
        k * (6.0 * q * q * q - 6.0 * q * q + 1.0)
    } else if q < 1.0 {
        2.0 * k * (1.0 - q).powi(3)
    } else {
        0.0
    }
}

/// h |dW/dr| = c(h) r p(q): c(h) = l = 48/(π h⁴).
pub fn grad_coef(h: f64) -> f64 {
    48.0 / (std::f64::consts::PI * h.powi(4))
}

/// p(q) = 2 − 3q for q ≤ ½, (1 − q)²/q for ½ < q < 1.
pub fn grad_profile(q: f64) -> f64 {
    if q <= 0.5 {
        2.0 - 3.0 * q
    } else if q < 1.0 {
        (1.0 - q) * (1.0 - q) / q
    } else {
        0.0
    }
}
