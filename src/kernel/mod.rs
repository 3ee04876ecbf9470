//! The smoothing kernel DFSPH's stages evaluate, one file per kernel and language: its value,
//! its gradient, its default support, the lattice mass and the pressure solve's stability
//! bound all follow from the file of the run's [`Kernel`].
//!
//! A kernel lives in `src/kernel/<name>.rs` (its f32 value and gradient, operation for
//! operation as its WGSL twin, its uniform constants and its shape in f64) and
//! `shaders/kernel/<name>.wgsl` (`kernel_w(r2)` and `kernel_grad(r2)`, reading `params`, the
//! stage's `SimParams`). Adding one is those two files (the Rust one declaring its [`Spec`],
//! its `w` and `grad`, and their eight-lane AVX2 forms in a `lanes` module) and one line of the `kernels!` list below, which declares the module,
//! the variant of [`Kernel`], its place in [`Kernel::ALL`] and its arms in [`Kernel::spec`],
//! [`w`] and [`grad`].
//! The stages call [`w`] and [`grad`] (CPU) or `kernel_w` and `kernel_grad` (WGSL, the run's
//! file prepended by [`crate::shaders::source_with`]), never a kernel by name.
//!
//! Both solvers take the run's kernel; density-only runs and the neighbour library sum poly6
//! ([`poly6_term`]).

/// What a kernel's functions read of a stage's uniform block: the fields of
/// `params::SimParams` of those names, which implements it (the WGSL functions read the same
/// fields of `params`). A trait, so that the kernels sit below the parameters they are
/// chosen by.
pub trait Uniforms {
    /// 1/h.
    fn inv_h(&self) -> f32;
    /// The run's kernel, [`Kernel::id`].
    fn kernel_id(&self) -> u32;
    /// The kernel's first four constants ([`Kernel::uniforms`]).
    fn kernel_a(&self) -> &[f32; 4];
    /// Its next four.
    fn kernel_b(&self) -> &[f32; 4];
}

/// What a kernel's file declares of itself (its `SPEC`): the names, the default support and the
/// WGSL file, and its shape in f64 for the lattice sums and the solve's stability bound.
/// [`Kernel::spec`] is the one place that maps a [`Kernel`] to its file; the f32 value and
/// gradient the stages call per pair are dispatched in [`w`] and [`grad`], inlined.
pub struct Spec {
    /// Its name on the command line and in scene files.
    pub name: &'static str,
    /// Its name in the run's description (`--stats` headers, checkpoints).
    pub title: &'static str,
    /// Its default support, in spacings (why: the kernel's file).
    pub default_support: f32,
    /// Its WGSL file, `kernel_w` and `kernel_grad`.
    pub shader: &'static str,
    /// Its normalisation k at support h in 2 or 3 dimensions ([`Kernel::norm`]).
    pub norm: fn(f64, u32) -> f64,
    /// The constants its functions read at support h with normalisation k
    /// ([`Kernel::uniforms`]).
    pub uniforms: fn(f64, f64) -> [f32; 8],
    /// W at q = r/h for support h in 3D, in f64 ([`Kernel::w64`]).
    pub w64: fn(f64, f64) -> f64,
    /// c(h) of the gradient's size ([`Kernel::grad_coef`]).
    pub grad_coef: fn(f64) -> f64,
    /// p(q) of the gradient's size ([`Kernel::grad_profile`]).
    pub grad_profile: fn(f64) -> f64,
}

/// Declares the kernels from one list, `Variant => module`, the default first: each entry is a
/// kernel's registration (its module, its [`Kernel`] variant, its place in [`Kernel::ALL`] and
/// its arms in [`Kernel::spec`], [`w`] and [`grad`]), so a new kernel is its two files and one
/// entry.
macro_rules! kernels {
    (@one $variant:ident) => {
        1
    };
    ($(#[$first_doc:meta])* $first:ident => $first_mod:ident, $($(#[$doc:meta])* $variant:ident => $module:ident),* $(,)?) => {
        pub mod $first_mod;
        $(pub mod $module;)*

        /// The kernels a run can choose (`--kernel`, the scene file's `physics.kernel`).
        #[derive(
            Clone,
            Copy,
            Debug,
            Default,
            PartialEq,
            Eq,
            Hash,
            serde::Serialize,
            serde::Deserialize,
            clap::ValueEnum,
        )]
        #[serde(rename_all = "kebab-case")]
        pub enum Kernel {
            $(#[$first_doc])*
            #[default]
            $first,
            $($(#[$doc])* $variant,)*
        }

        impl Kernel {
            /// Every kernel, in the order of their ids.
            pub const ALL: [Kernel; 1 $(+ kernels!(@one $variant))*] =
                [Kernel::$first, $(Kernel::$variant),*];

            /// Its file's declaration: the one match on the kernels outside [`w`] and
            /// [`grad`].
            pub fn spec(self) -> &'static Spec {
                match self {
                    Kernel::$first => &$first_mod::SPEC,
                    $(Kernel::$variant => &$module::SPEC,)*
                }
            }
        }

        /// W at squared distance r2 for the run's kernel (`sp.kernel`), 0 from r² = h² on;
        /// the operations of its WGSL `kernel_w`. An id no kernel has takes the default's.
        #[inline(always)]
        pub fn w(r2: f32, sp: &impl Uniforms) -> f32 {
            let id = sp.kernel_id();
            $(if id == Kernel::$variant as u32 {
                return $module::w(r2, sp);
            })*
            $first_mod::w(r2, sp)
        }

        /// The factor g with ∇W(x_i − x_j) = g · (x_i − x_j) for the run's kernel: (dW/dr)/r
        /// for 0 < r < h, 0 at r = 0 (where x_i − x_j is zero too) and from h on; the
        /// operations of its WGSL `kernel_grad`. An id no kernel has takes the default's.
        #[inline(always)]
        pub fn grad(r2: f32, sp: &impl Uniforms) -> f32 {
            let id = sp.kernel_id();
            $(if id == Kernel::$variant as u32 {
                return $module::grad(r2, sp);
            })*
            $first_mod::grad(r2, sp)
        }

        /// [`w`] and [`grad`] in eight AVX2 lanes, each kernel's `lanes` forms: a lane holds
        /// the scalar function's bits at its r².
        #[cfg(target_arch = "x86_64")]
        pub mod lanes {
            use super::*;
            use std::arch::x86_64::__m256;

            /// [`w`](super::w) per lane.
            ///
            /// # Safety
            /// The CPU must support AVX2.
            #[target_feature(enable = "avx2")]
            #[inline]
            pub unsafe fn w(r2: __m256, sp: &impl Uniforms) -> __m256 {
                let id = sp.kernel_id();
                $(if id == Kernel::$variant as u32 {
                    // SAFETY: AVX2 is present, as this function requires.
                    return unsafe { $module::lanes::w(r2, sp) };
                })*
                // SAFETY: as above.
                unsafe { $first_mod::lanes::w(r2, sp) }
            }

            /// [`grad`](super::grad) per lane.
            ///
            /// # Safety
            /// The CPU must support AVX2.
            #[target_feature(enable = "avx2")]
            #[inline]
            pub unsafe fn grad(r2: __m256, sp: &impl Uniforms) -> __m256 {
                let id = sp.kernel_id();
                $(if id == Kernel::$variant as u32 {
                    // SAFETY: AVX2 is present, as this function requires.
                    return unsafe { $module::lanes::grad(r2, sp) };
                })*
                // SAFETY: as above.
                unsafe { $first_mod::lanes::grad(r2, sp) }
            }
        }
    };
}

kernels! {
    /// Wendland's C2 function ([`wendland_c2`]), at 3 spacings by default: DFSPH's default.
    WendlandC2 => wendland_c2,
    /// The cubic B-spline ([`cubic_spline`]), at 2 spacings by default: SPlisHSPlasH's.
    CubicSpline => cubic_spline,
}

impl Kernel {
    /// The id `SimParams::kernel` holds.
    pub fn id(self) -> u32 {
        self as u32
    }

    /// The kernel of an id, `None` for an id no kernel has.
    pub fn from_id(id: u32) -> Option<Self> {
        Self::ALL.get(id as usize).copied()
    }

    /// Its name on the command line and in scene files.
    pub fn name(self) -> &'static str {
        self.spec().name
    }

    /// Its name in the run's description (`--stats` headers, checkpoints).
    pub fn title(self) -> &'static str {
        self.spec().title
    }

    /// The kernel of a name, `None` for a name no kernel has.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.name() == name)
    }

    /// Its default support, in spacings (why each: the kernel's file).
    pub fn default_support(self) -> f32 {
        self.spec().default_support
    }

    /// Its WGSL file, `kernel_w` and `kernel_grad`.
    pub fn shader(self) -> &'static str {
        self.spec().shader
    }

    /// The constants its functions read (`SimParams::kernel_a`, `kernel_b`) at support `h`:
    /// uniforms rather than WGSL literals, because Mesa's NIR re-associates products with a
    /// literal factor, which changes the rounding and would break bit-exactness with the CPU
    /// (measured on lavapipe). In `dim` = 2 or 3 dimensions: only the normalisation differs.
    pub fn uniforms(self, h: f64, dim: u32) -> [f32; 8] {
        (self.spec().uniforms)(h, self.norm(h, dim))
    }

    /// Its normalisation k at support `h` in `dim` = 2 or 3 dimensions (W = k times a shape
    /// of q = r/h alone; each kernel's file cites its constants).
    pub fn norm(self, h: f64, dim: u32) -> f64 {
        (self.spec().norm)(h, dim)
    }

    /// W at q = r/h for support `h` (0 from q = 1 on) in 3D, in f64, for the sums over a
    /// lattice ([`Kernel::lattice_sum`]).
    pub fn w64(self, h: f64, q: f64) -> f64 {
        (self.spec().w64)(h, q)
    }

    /// [`Kernel::w64`] in `dim` dimensions: the 3D value times the ratio of normalisations.
    pub fn w64_in(self, h: f64, q: f64, dim: u32) -> f64 {
        match dim {
            2 => self.w64(h, q) * (self.norm(h, 2) / self.norm(h, 3)),
            _ => self.w64(h, q),
        }
    }

    /// The lattice offsets along z that a lattice in `dim` dimensions spans within `reach`
    /// spacings: all of them in 3D, the plane z = 0 in 2D.
    fn z_reach(reach: i64, dim: u32) -> std::ops::RangeInclusive<i64> {
        match dim {
            2 => 0..=0,
            _ => -reach..=reach,
        }
    }

    /// The gradient's size h |dW/dr| = c(h) · r · p(q) for q = r/h: this is c(h) in 3D, in
    /// f64.
    pub fn grad_coef(self, h: f64) -> f64 {
        (self.spec().grad_coef)(h)
    }

    /// [`Kernel::grad_coef`] in `dim` dimensions.
    pub fn grad_coef_in(self, h: f64, dim: u32) -> f64 {
        match dim {
            2 => self.grad_coef(h) * (self.norm(h, 2) / self.norm(h, 3)),
            _ => self.grad_coef(h),
        }
    }

    /// p(q) of [`Kernel::grad_coef`] (0 from q = 1 on), in f64; −p(q) is (dW/dr)/r up to a
    /// positive factor.
    pub fn grad_profile(self, q: f64) -> f64 {
        (self.spec().grad_profile)(q)
    }

    /// Σ_lattice W over the points (i, j, k) s of a simple cubic lattice within support `h`
    /// (in 2D, `dim` = 2, the square lattice of the points (i, j, 0) and the 2D kernel), the
    /// origin included, summed in one order over every point within ⌈h/s⌉ spacings on each
    /// axis: ρ0 divided by it is the mass that puts the lattice at rest density.
    /// Worked values: Wendland C2 at h = 3 s gives 1.0031/s³, in 2D 1.0051/s².
    pub fn lattice_sum(self, h: f64, s: f64, dim: u32) -> f64 {
        let reach = (h / s).ceil() as i64;
        let mut sum = 0.0;
        for i in -reach..=reach {
            for j in -reach..=reach {
                for k in Self::z_reach(reach, dim) {
                    let q = (((i * i + j * j + k * k) as f64).sqrt() * s) / h;
                    if q < 1.0 {
                        sum += self.w64_in(h, q, dim);
                    }
                }
            }
        }
        sum
    }

    /// The distance off a flat surface, in m, at which a fluid lattice of spacing `s` starts at
    /// the rest density when the surface carries one layer of boundary particles on the same
    /// lattice, each with Akinci et al. 2012's ψ_b = ρ0 / Σ_k W_bk (eq. 4–5, the obstacles'
    /// model, `boundary::particles`): the first fluid layer's density, the lattice mass m =
    /// ρ0 / [`Kernel::lattice_sum`] times its half-space sum plus the layer's Σ ψ_b W, falls
    /// with the distance d and is ρ0 here (bisection, in f64). Nearer, fluid starts compressed
    /// and an explicit pressure blows it off; farther, a little light. In 2D (`dim` = 2) the
    /// lattice is the square one, the boundary a row of particles and the kernel the 2D one.
    /// Worked values: Wendland C2 at h = 3 s, 1.339 s (at d = s the first layer is at
    /// 1.216 ρ0), in 2D 1.354 s; the cubic spline at h = 2 s, 1.098 s, in 2D 1.112 s.
    pub fn boundary_standoff(self, h: f64, s: f64, dim: u32) -> f64 {
        let reach = (h / s).ceil() as i64;
        let w = |r2: f64| {
            let q = r2.sqrt() / h;
            if q < 1.0 { self.w64_in(h, q, dim) } else { 0.0 }
        };
        let (mut half, mut layer) = (0.0, 0.0);
        for i in -reach..=reach {
            for k in Self::z_reach(reach, dim) {
                let r2 = ((i * i + k * k) as f64) * s * s;
                layer += w(r2);
                for j in 0..=reach {
                    half += w(r2 + (j * j) as f64 * s * s);
                }
            }
        }
        let fluid = half / self.lattice_sum(h, s, dim);
        let density = |d: f64| {
            let mut b = 0.0;
            for i in -reach..=reach {
                for k in Self::z_reach(reach, dim) {
                    b += w(((i * i + k * k) as f64) * s * s + d * d);
                }
            }
            fluid + b / layer
        };
        let (mut lo, mut hi) = (0.0, h);
        for _ in 0..60 {
            let mid = 0.5 * (lo + hi);
            if density(mid) > 1.0 {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// S2 = h² Σ_r |m ∇W(r)|² over the offsets r ≠ 0 of a simple cubic lattice of spacing
    /// `s` within support `h` (the square lattice in 2D, `dim` = 2): the Σ|m∇W_ij|² term of a full particle's α (times h²), the
    /// scale `CoarseParams` divides the coarse operator by. Worked value (Wendland C2): s = 0.01 m,
    /// h = 0.03 m, m = 0.001 kg put 92 offsets inside and give S2 = 8.569e5 kg²/m⁸ (only its
    /// size matters: it cancels between the coarse operator and the correction).
    pub fn lattice_gradient_energy(self, h: f64, s: f64, mass: f64, dim: u32) -> f64 {
        let reach = (h / s).ceil() as i64;
        let coef = self.grad_coef_in(h, dim);
        let mut sum = 0.0;
        for i in -reach..=reach {
            for j in -reach..=reach {
                for l in Self::z_reach(reach, dim) {
                    let r = ((i * i + j * j + l * l) as f64).sqrt() * s;
                    let q = r / h;
                    if r > 0.0 && q < 1.0 {
                        let g = mass * coef * r * self.grad_profile(q);
                        sum += g * g;
                    }
                }
            }
        }
        sum.max(f64::MIN_POSITIVE)
    }

    /// The largest eigenvalue λ_max of D⁻¹A, DFSPH's pressure system with its diagonal α_i,
    /// for this kernel at a support of `h_over_s` spacings on a simple cubic lattice: the
    /// system is a convolution there, its eigenvectors plane waves p_j = exp(i k·x_j), and
    /// λ(k) = |S(k)|² / Σ_r |G(r)|², S(k) = Σ_r G(r) sin(k·r), G(r) = ∇W(r) over the
    /// lattice's offsets r (the mass cancels). A relaxed Jacobi iteration converges only for
    /// ω < 2/λ_max (`scripts/jacobi_bound.py` says more). λ is even in each component of k
    /// and symmetric under their permutations, so the wedge 0 ≤ k_x ≤ k_y ≤ k_z ≤ π holds
    /// every value; it is sampled at 24 cell-centred points per axis (the script's 48 over the
    /// whole zone). Worked values, Wendland C2: 2.60 at h = 2 s, 6.25 at h = 3 s; the cubic
    /// spline: 2.81 at h = 2 s. In 2D (`dim` = 2) the lattice is square, its offsets (i, j,
    /// 0): λ then does not depend on k_z, and the wedge's points still cover every (k_x, k_y)
    /// with k_x ≤ k_y. Worked value: Wendland C2 at h = 3 s in 2D, 3.33.
    pub fn lambda_max(self, h_over_s: f64, dim: u32) -> f64 {
        let reach = h_over_s.ceil() as i64;
        let mut grads = Vec::new();
        for i in -reach..=reach {
            for j in -reach..=reach {
                for l in Self::z_reach(reach, dim) {
                    let r = ((i * i + j * j + l * l) as f64).sqrt();
                    let q = r / h_over_s;
                    if r > 0.0 && q < 1.0 {
                        // (dW/dr)/r up to a constant that cancels in λ.
                        grads.push(([i as f64, j as f64, l as f64], -self.grad_profile(q)));
                    }
                }
            }
        }
        let diag: f64 = grads
            .iter()
            .map(|(r, g)| g * g * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]))
            .sum();
        if diag == 0.0 {
            return 0.0;
        }
        const N: usize = 24;
        let k = |a: usize| (a as f64 + 0.5) * std::f64::consts::PI / N as f64;
        let mut best = 0.0f64;
        for a in 0..N {
            for b in a..N {
                for c in b..N {
                    let kv = [k(a), k(b), k(c)];
                    let mut s = [0.0f64; 3];
                    for (r, g) in &grads {
                        let sin = (kv[0] * r[0] + kv[1] * r[1] + kv[2] * r[2]).sin();
                        for (sd, rd) in s.iter_mut().zip(r) {
                            *sd += g * rd * sin;
                        }
                    }
                    best = best.max((s[0] * s[0] + s[1] * s[1] + s[2] * s[2]) / diag);
                }
            }
        }
        best
    }
}

impl std::fmt::Display for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// The un-normalised poly6 term (1 − r²/h²)³ for a pair known to satisfy r² < h² (Müller et
/// al. 2003): the density of density-only runs and the neighbour library's, `poly6_term` in
/// common.wgsl.
#[inline]
pub fn poly6_term(r2: f32, inv_h2: f32) -> f32 {
    let q = (1.0 - r2 * inv_h2).max(0.0);
    q * q * q
}

#[cfg(test)]
mod tests {
    /// The standoff's worked values, and its scaling with s.
    #[test]
    fn boundary_standoff_worked_values() {
        for (kernel, h, dim, want) in [
            (Kernel::WendlandC2, 3.0, 3, 1.339),
            (Kernel::CubicSpline, 2.0, 3, 1.098),
            (Kernel::WendlandC2, 3.0, 2, 1.354),
            (Kernel::CubicSpline, 2.0, 2, 1.112),
        ] {
            let d = kernel.boundary_standoff(h, 1.0, dim);
            assert!((d - want).abs() < 1e-3, "{kernel} in {dim}D: {d}");
        }
        let scaled = Kernel::WendlandC2.boundary_standoff(0.03, 0.01, 3);
        assert!((scaled - 0.01339).abs() < 1e-5, "{scaled}");
    }

    use super::*;
    use crate::params::SimParams;

    fn params(kernel: Kernel, h: f32) -> SimParams {
        let [a0, a1, a2, a3, b0, b1, b2, b3] = kernel.uniforms(h as f64, 3);
        SimParams {
            h,
            inv_h: 1.0 / h,
            h2: h * h,
            inv_h2: 1.0 / (h * h),
            kernel: kernel.id(),
            kernel_a: [a0, a1, a2, a3],
            kernel_b: [b0, b1, b2, b3],
            ..bytemuck::Zeroable::zeroed()
        }
    }

    /// Each kernel integrates to one over its support and its gradient is its value's
    /// derivative, in the f32 forms the stages run.
    #[test]
    fn every_kernel_is_normalised_and_its_gradient_is_its_slope() {
        for kernel in Kernel::ALL {
            let sp = params(kernel, 1.0);
            // ∫ W dV by the midpoint rule over a fine lattice.
            let n = 80;
            let dx = 2.0 / n as f64;
            let mut sum = 0.0f64;
            for i in 0..n {
                for j in 0..n {
                    for k in 0..n {
                        let p = [i, j, k].map(|a| -1.0 + (a as f64 + 0.5) * dx);
                        let r2 = (p[0] * p[0] + p[1] * p[1] + p[2] * p[2]) as f32;
                        sum += w(r2, &sp) as f64 * dx * dx * dx;
                    }
                }
            }
            assert!((sum - 1.0).abs() < 2e-3, "{kernel}: ∫W = {sum}");
            for r in [0.1f32, 0.3, 0.45, 0.55, 0.7, 0.9] {
                let e = 1e-3f32;
                let fd = (w((r + e) * (r + e), &sp) - w((r - e) * (r - e), &sp)) / (2.0 * e);
                let g = grad(r * r, &sp) * r;
                assert!(
                    (fd - g).abs() < 2e-3 * g.abs().max(0.1),
                    "{kernel} r = {r}: {fd} {g}"
                );
            }
            assert_eq!(grad(0.0, &sp), 0.0);
            assert_eq!(w(1.0, &sp), 0.0);
            assert_eq!(grad(1.0, &sp), 0.0);
            // The f64 forms are the f32 functions' (h = 1: h |dW/dr| = r |g|).
            assert_eq!(w(0.0, &sp), kernel.w64(1.0, 0.0) as f32);
            for q in [0.2f64, 0.5, 0.8] {
                let r2 = (q * q) as f32;
                assert!(
                    (kernel.w64(1.0, q) - w(r2, &sp) as f64).abs() < 1e-5,
                    "{kernel} {q}"
                );
                let g64 = kernel.grad_coef(1.0) * q * kernel.grad_profile(q);
                let g32 = -(grad(r2, &sp) as f64) * q;
                assert!(
                    (g64 - g32).abs() < 1e-4 * g64.abs(),
                    "{kernel} {q}: {g64} {g32}"
                );
            }
        }
    }

    /// In 2D each kernel's normalisation makes it integrate to one over the disc of its
    /// support, with the same gradient form (its slope), and the square lattice's sums have
    /// their worked values.
    #[test]
    fn every_kernel_is_normalised_in_2d() {
        for kernel in Kernel::ALL {
            let [a0, a1, a2, a3, b0, b1, b2, b3] = kernel.uniforms(1.0, 2);
            let sp = SimParams {
                kernel_a: [a0, a1, a2, a3],
                kernel_b: [b0, b1, b2, b3],
                ..params(kernel, 1.0)
            };
            let n = 400;
            let dx = 2.0 / n as f64;
            let mut sum = 0.0f64;
            for i in 0..n {
                for j in 0..n {
                    let p = [i, j].map(|a| -1.0 + (a as f64 + 0.5) * dx);
                    sum += w((p[0] * p[0] + p[1] * p[1]) as f32, &sp) as f64 * dx * dx;
                }
            }
            assert!((sum - 1.0).abs() < 1e-3, "{kernel}: ∫W dA = {sum}");
            for r in [0.1f32, 0.3, 0.45, 0.55, 0.7, 0.9] {
                let e = 1e-3f32;
                let fd = (w((r + e) * (r + e), &sp) - w((r - e) * (r - e), &sp)) / (2.0 * e);
                let g = grad(r * r, &sp) * r;
                assert!((fd - g).abs() < 2e-3 * g.abs().max(0.1), "{kernel} r = {r}");
            }
            for q in [0.2f64, 0.5, 0.8] {
                let w32 = w((q * q) as f32, &sp) as f64;
                assert!(
                    (kernel.w64_in(1.0, q, 2) - w32).abs() < 1e-5,
                    "{kernel} {q}"
                );
                let g64 = kernel.grad_coef_in(1.0, 2) * q * kernel.grad_profile(q);
                let g32 = -(grad((q * q) as f32, &sp) as f64) * q;
                assert!((g64 - g32).abs() < 1e-4 * g64.abs(), "{kernel} {q}");
            }
        }
        let sum = Kernel::WendlandC2.lattice_sum(3.0, 1.0, 2);
        let lambda = Kernel::WendlandC2.lambda_max(3.0, 2);
        assert!((sum - 1.0051).abs() < 1e-4, "{sum}");
        assert!((lambda - 3.33).abs() < 0.01, "{lambda}");
    }

    #[test]
    fn names_and_ids_round_trip() {
        for kernel in Kernel::ALL {
            assert_eq!(Kernel::from_name(kernel.name()), Some(kernel));
            assert_eq!(Kernel::from_id(kernel.id()), Some(kernel));
        }
        assert_eq!(Kernel::from_id(7), None);
        assert_eq!(Kernel::from_name("gaussian"), None);
    }

    #[test]
    fn jacobi_bound_worked_values() {
        // scripts/jacobi_bound.py 48: 2.60 at h = 2 s, 3.84 at 2.5 s, 6.25 at 3 s; the cubic
        // spline 2.81 at 2 s.
        for (kernel, h, want) in [
            (Kernel::WendlandC2, 2.0, 2.60),
            (Kernel::WendlandC2, 2.5, 3.84),
            (Kernel::WendlandC2, 3.0, 6.25),
            (Kernel::CubicSpline, 2.0, 2.81),
        ] {
            let got = kernel.lambda_max(h, 3);
            assert!((got - want).abs() < 0.01, "{kernel} at {h} s: {got}");
        }
        assert_eq!(Kernel::WendlandC2.lambda_max(0.9, 3), 0.0);
    }

    #[test]
    fn lattice_gradient_energy_worked_value() {
        let s2 = Kernel::WendlandC2.lattice_gradient_energy(0.03, 0.01, 0.001, 3);
        assert!((s2 / 8.569e5 - 1.0).abs() < 1e-3, "{s2}");
    }
}
