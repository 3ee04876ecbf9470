//! Wendland's C2 function in 3D (Wendland 1995, Adv. Comput. Math. 4, 389; Dehnen & Aly 2012,
//! MNRAS 425, 1068, table 1) of support h: W(r) = k (1 − q)⁴ (1 + 4q) for q = r/h < 1, 0
//! beyond, k = 21/(2π h³) = W(0). The CPU twin of `shaders/kernel/wendland_c2.wgsl`,
//! operation for operation.
//!
//! DFSPH's default kernel, at [`DEFAULT_SUPPORT`] spacings (why: its doc).

use super::{Spec, Uniforms};

/// Its declaration ([`super::Kernel::spec`]).
pub const SPEC: Spec = Spec {
    name: "wendland-c2",
    title: "Wendland C2",
    default_support: DEFAULT_SUPPORT,
    shader: WGSL,
    norm,
    uniforms,
    w64,
    grad_coef,
    grad_profile,
};

/// Its WGSL twin.
pub const WGSL: &str = include_str!("../../shaders/kernel/wendland_c2.wgsl");

/// DFSPH's default support h in spacings: 3, 92 neighbours on the lattice (the cubic
/// spline's usual h = 2 s holds 26). Wendland's C2 kernel has no pairing instability at any
/// neighbour count, so its error falls as the support widens, where the cubic spline's
/// particles start to pair up (Dehnen & Aly 2012, §3–4), and the sheared lattice is softer
/// (`scripts/sheared_density.py`: c = +0.004 against the cubic spline's +0.014 at 2 s), so
/// waves keep their period: within 2.7% of linear theory with 86% of the height kept after a
/// period, and the column at the dam break's wall within 5.2% of Martin & Moyce at 20 000
/// particles (docs/results.md, each with its command); at 2 and 2.5 s the wave ran short and
/// deep columns did not rest. The price is the neighbours: 3.6× the cubic spline's pairs a
/// walk (docs/benchmarks.md).
pub const DEFAULT_SUPPORT: f32 = 3.0;

/// Its normalisation k = W(0) at support `h` in `dim` dimensions: 21/(2π h³) in 3D, 7/(π h²)
/// in 2D (Dehnen & Aly 2012, table 1, with their support H = h). The shape and the gradient's
/// form do not change with the dimension, only k.
pub fn norm(h: f64, dim: u32) -> f64 {
    match dim {
        2 => 7.0 / (std::f64::consts::PI * h * h),
        _ => 21.0 / (2.0 * std::f64::consts::PI * h * h * h),
    }
}

/// `SimParams::kernel_a` = [k, 4k, 20k/h, 0] at support `h` with normalisation `kw` ([`norm`];
/// [`w`], [`grad`]), `kernel_b` unused.
pub fn uniforms(h: f64, kw: f64) -> [f32; 8] {
    [
        kw as f32,
        (4.0 * kw) as f32,
        (20.0 * kw / h) as f32,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ]
}

/// W at squared distance r2. Worked example: h = 1, r = 0.5:
/// W = 21/(2π) · 0.0625 · 3 = 0.6267.
#[inline(always)]
pub fn w(r2: f32, sp: &impl Uniforms) -> f32 {
    let q = r2.sqrt() * sp.inv_h();
    if q < 1.0 {
        // (1 − q)⁴ (k + 4k q).
        let f = 1.0 - q;
        let f2 = f * f;
        f2 * f2 * (sp.kernel_a()[0] + sp.kernel_a()[1] * q)
    } else {
        0.0
    }
}

/// g with ∇W(x_i − x_j) = g · (x_i − x_j): (dW/dr)/r = −20k (1 − q)³/h² for 0 < r < h, 0 at
/// r = 0 and from h on. Worked example: h = 1, r = 0.5: g = −210/π · 0.125 = −8.356, so
/// |∇W| = 4.178.
#[inline(always)]
pub fn grad(r2: f32, sp: &impl Uniforms) -> f32 {
    let r = r2.sqrt();
    let q = r * sp.inv_h();
    if r > 0.0 && q < 1.0 {
        let f = 1.0 - q;
        -(sp.kernel_a()[2] * (f * f * f)) * sp.inv_h()
    } else {
        0.0
    }
}

/// [`w`] and [`grad`] in eight AVX2 lanes, operation for operation (a lane's value is the
/// scalar function's bits at that lane's r²): the CPU walks that evaluate a candidate for a
/// group's eight members at once.
#[cfg(target_arch = "x86_64")]
pub mod lanes {
    use super::Uniforms;
    use std::arch::x86_64::*;

    /// [`super::w`] per lane: (1 − q)⁴ (a₀ + a₁ q) where q < 1, else 0.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn w(r2: __m256, sp: &impl Uniforms) -> __m256 {
        let a = sp.kernel_a();
        let q = _mm256_mul_ps(_mm256_sqrt_ps(r2), _mm256_set1_ps(sp.inv_h()));
        let f = _mm256_sub_ps(_mm256_set1_ps(1.0), q);
        let f2 = _mm256_mul_ps(f, f);
        let poly = _mm256_add_ps(_mm256_set1_ps(a[0]), _mm256_mul_ps(_mm256_set1_ps(a[1]), q));
        let v = _mm256_mul_ps(_mm256_mul_ps(f2, f2), poly);
        _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(q, _mm256_set1_ps(1.0)), v)
    }

    /// [`super::grad`] per lane: −(a₂ (1 − q)³)/h where 0 < r and q < 1, else 0.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn grad(r2: __m256, sp: &impl Uniforms) -> __m256 {
        let r = _mm256_sqrt_ps(r2);
        let inv_h = _mm256_set1_ps(sp.inv_h());
        let q = _mm256_mul_ps(r, inv_h);
        let f = _mm256_sub_ps(_mm256_set1_ps(1.0), q);
        let c = _mm256_mul_ps(_mm256_set1_ps(sp.kernel_a()[2]), _mm256_mul_ps(_mm256_mul_ps(f, f), f));
        let v = _mm256_mul_ps(_mm256_xor_ps(c, _mm256_set1_ps(-0.0)), inv_h);
        let live = _mm256_and_ps(
            _mm256_cmp_ps::<_CMP_GT_OQ>(r, _mm256_setzero_ps()),
            _mm256_cmp_ps::<_CMP_LT_OQ>(q, _mm256_set1_ps(1.0)),
        );
        _mm256_and_ps(live, v)
    }
}

/// W at q for support `h`, in f64.
pub fn w64(h: f64, q: f64) -> f64 {
    let k = 21.0 / (2.0 * std::f64::consts::PI * h.powi(3));
    if q < 1.0 {
        k * (1.0 - q).powi(4) * (1.0 + 4.0 * q)
    } else {
        0.0
    }
}

/// h |dW/dr| = c(h) r (1 − q)³: c(h) = 20k/h = 210/(π h⁴).
pub fn grad_coef(h: f64) -> f64 {
    210.0 / (std::f64::consts::PI * h.powi(4))
}

/// (1 − q)³ below q = 1.
pub fn grad_profile(q: f64) -> f64 {
    if q < 1.0 { (1.0 - q).powi(3) } else { 0.0 }
}
