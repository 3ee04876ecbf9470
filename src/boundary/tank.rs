//! The tank's boundary model: its walls as mirrors, the CPU twin of
//! `shaders/boundary_tank.wgsl` function for function. The walks reach it as
//! `crate::boundary::walls` and ask it only these questions, in names no other model would
//! change: [`near`] (what the model keeps of a walking particle's surroundings, once per
//! particle: here its walls within h), [`images`] (the images of a neighbour the particle
//! sees, in the walks' order, each named by a nonzero [`Image`] id; 0 is the neighbour itself),
//! [`image_at`] (where an image lies), [`image_vector`] and [`image_viscous_velocity`] (how an
//! image's vectors turn and how it moves in the kinematic and the viscous terms: free slip by
//! default, wall friction through a Navier slip length), a particle's own images and their
//! share of DFSPH's factor α ([`own_images`]), a group's common surroundings for the
//! eight-lane walks ([`shared`], [`has_image`]; [`lanes`] holds the lane forms), and
//! the hard walls that hold a particle a
//! violent step carried past them ([`clamp_to_box`]). An image carries its original's density,
//! pressure and stiffness; the solver adds each image right after its original, through its
//! own pair term, into the same sums (the walks keep the loops; this module says which images
//! there are, where they lie and how they move). The obstacles' boundary particles are the
//! other model (`super::particles`). A different wall model is this file and its WGSL twin
//! with the same functions, and the one line of `super` (and of `shaders::source`) that picks
//! it.
//!
//! The method: mirror (ghost) particles, Colagrossi & Landrini (2003), "Numerical simulation of
//! interfacial flows by smoothed particle hydrodynamics", J. Comput. Phys. 191, 448–475, §3.2.
//! Within h of a wall a particle's kernel reaches past the wall where there is no fluid: its
//! density falls short (by about 30% on the wall's first layer at h = 2s), its pressure, clamped
//! at 0, vanishes, and nothing balances the pressure of the layers behind it, so wall particles
//! are squeezed against whatever holds them (this is what kept a hydrostatic column jittering at
//! the walls). Mirroring every neighbour across the wall fills the missing half of the kernel
//! with fluid that has the neighbour's density and pressure, and its velocity reflected in the
//! kinematic terms and, in the viscous ones, reflected with the tangential part the wall's slip
//! length leaves ([`image_viscous_velocity`] gives the wall model and its reasons): at an edge or
//! corner the images across two or three walls (each non-empty subset of the near walls, bit
//! `axis` reflecting that axis) are added too. A resting lattice half a spacing from a wall then
//! continues exactly across it, and every particle has the density and pressure of the interior.
//! The walking stages (the `dfsph_*` walks, both solvers') add the images through their own
//! pair terms, into every sum.
//!
//! Per axis only the nearer wall is mirrored, and only if it is closer than h, since farther
//! images cannot reach the kernel. (A tank narrower than 2h, where both walls of an axis are
//! within reach, gets the nearer one only.) An image within h of x_i always has its original
//! within h of x_i: both lie on the fluid side of the wall, and reflecting x_j across it only
//! lengthens the normal component of x_i − x_j. So the walk over x_i's own neighbour cells finds
//! every image, and no extra query is needed.
//!
//! Worked example, h = 1, floor at y = 0, a particle at y = 0.25 and a neighbour at y = 0.5
//! straight above: [`near`] gives mask 0b010, plane.y = 0; [`images`] gives the one image
//! 0b010 (the mask's subsets); it lies at y = −0.5 ([`image_at`]), 0.75
//! away, and adds to a density walk the poly6 term of r² = 0.5625, as a real neighbour there
//! would.

#[cfg(test)]
use bytemuck::Zeroable;
use glam::{BVec3, Vec3};

use crate::grid::key::distance2;
use crate::kernel;
use crate::params::{FluidParams, SimParams};

/// What the model keeps of a walking particle's surroundings: its near walls ([`WallPlanes`]).
pub type Near = WallPlanes;

/// An image of a neighbour as the walks name it: 0 the neighbour itself, else the mask of the
/// walls it is reflected across (1 to 7: bit `axis` reflects that axis).
pub type Image = u32;

/// The walls a particle mirrors across: per axis the nearer wall if it lies closer than h.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WallPlanes {
    /// Bit `axis` set: that axis has a wall within h.
    pub mask: u32,
    /// The wall's coordinate along each axis in the mask (0 elsewhere).
    pub plane: Vec3,
}

/// The walls within `h` of `x` (WGSL `boundary_near`).
#[inline]
pub fn near(x: Vec3, h: f32, fp: &FluidParams) -> Near {
    let mut w = WallPlanes::default();
    for axis in 0..3 {
        let below = x[axis] - fp.tank_min[axis];
        let above = fp.tank_max[axis] - x[axis];
        let lo_open = fp.open & (1 << (2 * axis)) != 0;
        let hi_open = fp.open & (1 << (2 * axis + 1)) != 0;
        if !lo_open && below < h && (below <= above || hi_open) {
            w.mask |= 1 << axis;
            w.plane[axis] = fp.tank_min[axis];
        } else if !hi_open && above < h {
            w.mask |= 1 << axis;
            w.plane[axis] = fp.tank_max[axis];
        }
    }
    w
}

/// The set of images of `xk` a particle at `x` near `w` sees, as the GPU's lockstep walk asks
/// it of every candidate: all of `w`'s walls if `xk` lies within h of `x`, else none (an image
/// is never nearer than its original, so only a neighbour's images can reach the kernel).
/// WGSL `boundary_images`; [`images`] enumerates a set.
#[inline]
pub fn image_set(w: &Near, x: Vec3, xk: Vec3, h2: f32) -> u32 {
    if w.mask != 0 && distance2(x, xk) < h2 {
        w.mask
    } else {
        0
    }
}

/// Surroundings that stand for every one of `members`' in [`image_at`]: the union of their
/// walls, where the members near a wall of an axis agree on its plane (else `None`), so that
/// `image_at(x, &shared, m)` is each member's own `image_at(x, near, m)` bit for bit for every
/// image m it has ([`has_image`]). The eight-lane walk computes a candidate's image once for a
/// group this way. Worked example: members near the floor (y = 0) and one also near the wall
/// x = 0 share mask 0b011 with planes x = 0, y = 0; a member near the floor and one near the
/// ceiling of a tank under 2h tall share nothing (`None`).
pub fn shared(members: &[Near]) -> Option<Near> {
    let mut s = Near::default();
    for n in members {
        for axis in 0..3 {
            if n.mask & (1 << axis) == 0 {
                continue;
            }
            if s.mask & (1 << axis) != 0 && s.plane[axis].to_bits() != n.plane[axis].to_bits() {
                return None;
            }
            s.mask |= 1 << axis;
            s.plane[axis] = n.plane[axis];
        }
    }
    Some(s)
}

/// Whether a particle near `near` sees image `m` of its neighbours (m one of [`images`]'s).
#[inline]
pub fn has_image(near: &Near, m: Image) -> bool {
    m != 0 && m & !near.mask == 0
}

/// The axes image `m` (1 to 7) reflects.
#[inline]
fn image_axes(m: Image) -> BVec3 {
    BVec3::new(m & 1 != 0, m & 2 != 0, m & 4 != 0)
}

/// `x` reflected across the planes of the chosen axes: 2w − x there, x elsewhere.
#[inline]
fn reflect_across(x: Vec3, plane: Vec3, axes: BVec3) -> Vec3 {
    Vec3::select(axes, 2.0 * plane - x, x)
}

/// Where `image` of a neighbour at `x` lies for a particle near `near` (`x` itself for image 0):
/// `x` reflected across the image's walls. WGSL `boundary_image_at`.
#[inline]
pub fn image_at(x: Vec3, near: &Near, image: Image) -> Vec3 {
    reflect_across(x, near.plane, image_axes(image))
}

/// A vector of a neighbour as its image carries it: the gradient's reflection, and the
/// velocity in the kinematic terms (density change rate, continuity): free slip, the normal
/// components reflected and the tangential ones kept, so a wall stops flow through it and
/// nothing else: fluid sliding along a wall neither compresses nor expands against its
/// images. Image 0 leaves `v` as it is. WGSL `boundary_image_vector`.
#[inline]
pub fn image_vector(v: Vec3, image: Image) -> Vec3 {
    Vec3::select(image_axes(image), -v, v)
}

/// How a wall of Navier slip length `b` (m; negative: free slip) carries the tangential
/// velocity of a particle `y` from it into its mirror image: 1 free slip, −1 no slip, else
/// (b − y)/(b + y), the image's velocity on the line through the particle's that reaches
/// the wall's slip velocity u_w = b ∂u/∂n (Navier 1823; the ghost-cell form of that boundary
/// condition). Worked example: b = 0.01, y = 0.005 → 1/3.
#[inline]
pub fn slip_factor(b: f32, y: f32) -> f32 {
    if b < 0.0 {
        1.0
    } else if b == 0.0 {
        -1.0
    } else {
        (b - y) / (b + y)
    }
}

/// The velocity of `image` (nonzero) of a particle with velocity `v` in the viscous terms of
/// both solvers, the image lying at x − d for a particle at `x` near the walls `walls`: its
/// normal components reflected, its tangential ones scaled by
/// [`slip_factor`] of the wall's slip length ([`FluidParams::slip_lo`], `slip_hi`) at the
/// original's distance from it (at an edge or corner, the more frictional wall's factor).
/// The one place the tank walls' viscous model is written in Rust: `dfsph_accel` calls it, as
/// `dfsph_accel.wgsl` calls its WGSL twin `boundary_image_viscous_velocity`.
///
/// The default is free slip. That is what water's walls are at these scales: water's own
/// boundary layer is far thinner than a particle (√(νt) ≈ 0.6 mm after 0.3 s at ν = 10⁻⁶
/// m²/s, against a spacing of 10 mm), so a no-slip image (b = 0: the image moves at −v, Morris
/// et al. 1997) puts a shear layer one particle thick where water has one far thinner; with
/// the acoustic-scale artificial viscosity it held the dam break's column up to 41% too high
/// and took two thirds of a standing wave's height in one period (docs/results.md, what was
/// tried). A finite b is wall friction as a physical parameter: the wall's shear stress is ρν
/// u_w/b.
///
/// Worked example, b = 0 on the floor (axis y), v = (1, 2, 3): image → (−1, −2, −3); free
/// slip: (1, −2, 3); b = 0.01 with the original 0.005 above the floor: (1/3, −2, 1).
#[inline]
pub fn image_viscous_velocity(
    v: Vec3,
    x: Vec3,
    d: Vec3,
    walls: &Near,
    image: Image,
    fp: &FluidParams,
) -> Vec3 {
    let axes = image_axes(image);
    let mut f = 1.0f32;
    for a in 0..3 {
        if axes.test(a) {
            let b = if walls.plane[a] == fp.tank_min[a] {
                fp.slip_lo[a]
            } else {
                fp.slip_hi[a]
            };
            f = f.min(slip_factor(b, (x[a] - d[a] - walls.plane[a]).abs()));
        }
    }
    Vec3::select(axes, -v, v * f)
}

/// The images of a neighbour that a particle near `near` sees (or of the set `image_set`
/// gave): the non-empty subsets of its walls' mask in decreasing order, the order of the GPU's
/// `boundary_next_image`, `m = (m − 1) & mask`. Worked example: 0b101 → 0b101, 0b100, 0b001.
#[inline]
pub fn images(near: &Near) -> impl Iterator<Item = Image> + use<> {
    subsets(near.mask)
}

/// The non-empty subsets of `mask` in decreasing order (the images of a mask of walls).
#[inline]
fn subsets(mask: u32) -> impl Iterator<Item = u32> {
    std::iter::successors((mask != 0).then_some(mask), move |&m| {
        let next = (m - 1) & mask;
        (next != 0).then_some(next)
    })
}

/// The tank's hard walls at `lo` and `hi` (both solvers: the tank's, held half a spacing
/// inside by `dfsph_integrate`), none on the sides `open` marks (bit 2·axis lower, 2·axis + 1
/// upper; WGSL `clamp_to_box`): a coordinate past a wall is put back on it, and an outward
/// normal speed becomes −restitution times itself, so walls never add energy.
#[inline]
pub fn clamp_to_box(
    mut x: Vec3,
    mut v: Vec3,
    lo: Vec3,
    hi: Vec3,
    restitution: f32,
    open: u32,
) -> (Vec3, Vec3) {
    for axis in 0..3 {
        if open & (1 << (2 * axis)) == 0 && x[axis] < lo[axis] {
            x[axis] = lo[axis];
            if v[axis] < 0.0 {
                v[axis] *= -restitution;
            }
        }
        if open & (1 << (2 * axis + 1)) == 0 && x[axis] > hi[axis] {
            x[axis] = hi[axis];
            if v[axis] > 0.0 {
                v[axis] *= -restitution;
            }
        }
    }
    (x, v)
}

/// A particle's own images within h (its reflections across its near walls): they carry its
/// stiffness and move with it, so its own pressure update pushes against each of them with
/// twice its stiffness, Δv = −c G' with G' = G + Σ_m m∇W(x − x'_m) ([`OwnImages::gradient`]),
/// and α's denominator loses what they take back, Σ_m (G' reflected across image m's walls) ·
/// m∇W(x − x'_m) ([`OwnImages::alpha_term`]). An image is no unknown of its own, so it adds
/// nothing to Σ|m∇W|² (as SPlisHSPlasH treats boundary neighbours).
/// Worked example, h = 1, m = 1, Wendland C2, floor at y = 0, x at y = 0.25, no other
/// neighbour (G = 0): one image, at y = −0.25, d = (0, 0.5, 0), m∇W = d g = (0, −4.178, 0)
/// (g = −(210/π)(1 − 0.5)³ = −8.356), so G' = (0, −4.178, 0); reflected across the floor it is
/// (0, 4.178, 0), and the term is (0, 4.178, 0)·(0, −4.178, 0) = −17.46 (α's denominator gains
/// 17.46).
#[derive(Clone, Copy, Debug)]
pub struct OwnImages {
    grad: Vec3,
    images: [(BVec3, Vec3); 7],
    n: usize,
}

/// [`OwnImages`] of the particle at `x` with near walls `walls`: each image within h in
/// decreasing subset mask, with its m∇W.
#[inline]
pub fn own_images(x: Vec3, walls: &Near, mass: f32, sp: &SimParams) -> OwnImages {
    let mut own = OwnImages {
        grad: Vec3::ZERO,
        images: [(BVec3::FALSE, Vec3::ZERO); 7],
        n: 0,
    };
    for m in subsets(walls.mask) {
        let axes = image_axes(m);
        let d = x - reflect_across(x, walls.plane, axes);
        let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
        if r2 < sp.h2 {
            let gv = d * (mass * kernel::grad(r2, sp));
            own.grad += gv;
            own.images[own.n] = (axes, gv);
            own.n += 1;
        }
    }
    own
}

impl OwnImages {
    /// Σ_m m∇W(x − x'_m).
    #[inline]
    pub fn gradient(&self) -> Vec3 {
        self.grad
    }

    /// Σ_m (`gp` reflected across image m's walls) · m∇W(x − x'_m), with `gp` = G' the
    /// particle's gradient sum with its own images.
    #[inline]
    pub fn alpha_term(&self, gp: Vec3) -> f32 {
        let mut own = 0.0f32;
        for &(axes, gv) in &self.images[..self.n] {
            let rg = Vec3::select(axes, -gp, gp);
            own += rg.x * gv.x + rg.y * gv.y + rg.z * gv.z;
        }
        own
    }
}

/// [`image_at`], [`image_vector`] and the free-slip [`image_viscous_velocity`] in eight AVX2
/// lanes, for the replays that evaluate eight pairs at once.
#[cfg(target_arch = "x86_64")]
pub mod lanes {
    use super::{FluidParams, Near};
    use std::arch::x86_64::*;

    /// The lanes whose image id reflects `axis` ([`super::image_axes`] per lane), all ones.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn reflects(image: __m256i, axis: usize) -> __m256 {
        let bit = _mm256_set1_epi32(1 << axis);
        _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(image, bit), bit))
    }

    /// Each of eight particles' wall planes ([`Near`]), one lane each: `[x, y, z]`.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn planes(near: &[Near; 8]) -> [__m256; 3] {
        let mut p = [[0f32; 8]; 3];
        for (l, n) in near.iter().enumerate() {
            (p[0][l], p[1][l], p[2][l]) = (n.plane.x, n.plane.y, n.plane.z);
        }
        // SAFETY: each load covers exactly the eight lanes of an array.
        unsafe {
            [
                _mm256_loadu_ps(p[0].as_ptr()),
                _mm256_loadu_ps(p[1].as_ptr()),
                _mm256_loadu_ps(p[2].as_ptr()),
            ]
        }
    }

    /// Whether every wall of the tank is free slip, so that [`image_viscous_velocity`]
    /// holds for [`super::image_viscous_velocity`] ([`super::slip_factor`] 1 on every axis).
    #[inline]
    pub fn free_slip(fp: &FluidParams) -> bool {
        fp.slip_lo[..3]
            .iter()
            .chain(&fp.slip_hi[..3])
            .all(|&b| b < 0.0)
    }

    /// [`super::image_vector`] per lane: lane l's vector `v` with the axes of its image id
    /// reflected (negated), the scalar function's operation, so the same bits.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn image_vector(v: [__m256; 3], image: __m256i) -> [__m256; 3] {
        let mut out = v;
        for (a, o) in out.iter_mut().enumerate() {
            // SAFETY: AVX2 is present, as this function requires.
            let axis = unsafe { reflects(image, a) };
            *o = _mm256_blendv_ps(v[a], _mm256_xor_ps(v[a], _mm256_set1_ps(-0.0)), axis);
        }
        out
    }

    /// [`super::image_viscous_velocity`] per lane where every wall is free slip
    /// ([`free_slip`]): lane l's velocity `v` with the axes of its image id reflected and the
    /// others scaled by the factor 1, v itself for image 0; the scalar function's operations,
    /// so the same bits.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn image_free_slip_velocity(v: [__m256; 3], image: __m256i) -> [__m256; 3] {
        let imaged = _mm256_castsi256_ps(_mm256_xor_si256(
            _mm256_cmpeq_epi32(image, _mm256_setzero_si256()),
            _mm256_set1_epi32(-1),
        ));
        let mut out = v;
        for (a, o) in out.iter_mut().enumerate() {
            // SAFETY: AVX2 is present, as this function requires.
            let axis = unsafe { reflects(image, a) };
            let kept = _mm256_blendv_ps(v[a], _mm256_mul_ps(v[a], _mm256_set1_ps(1.0)), imaged);
            let reflected = _mm256_xor_ps(v[a], _mm256_set1_ps(-0.0));
            *o = _mm256_blendv_ps(kept, reflected, axis);
        }
        out
    }

    /// [`super::image_at`] per lane: lane l's point `x` reflected across the planes `plane`
    /// (its particle's, [`planes`]) of the axes of its image id (0: `x` itself), with the
    /// scalar function's operations, so the same bits.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn image_at(x: [__m256; 3], plane: [__m256; 3], image: __m256i) -> [__m256; 3] {
        let mut at = x;
        for (a, v) in at.iter_mut().enumerate() {
            // SAFETY: AVX2 is present, as this function requires.
            let axis = unsafe { reflects(image, a) };
            let mirrored = _mm256_sub_ps(_mm256_mul_ps(_mm256_set1_ps(2.0), plane[a]), x[a]);
            *v = _mm256_blendv_ps(x[a], mirrored, axis);
        }
        at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slip_factor_and_image_viscous_velocity_match_their_worked_examples() {
        assert_eq!(slip_factor(-1.0, 0.3), 1.0);
        assert_eq!(slip_factor(0.0, 0.0), -1.0);
        assert_eq!(slip_factor(0.0, 0.005), -1.0);
        assert!((slip_factor(0.01, 0.005) - 1.0 / 3.0).abs() < 1e-6);
        let mut fp = FluidParams::zeroed();
        fp.tank_max = [1.0; 4];
        let walls = WallPlanes {
            mask: 0b010,
            plane: Vec3::ZERO,
        };
        let (v, floor) = (Vec3::new(1.0, 2.0, 3.0), 0b010);
        // The particle at y = 0.01, its neighbour's image at y = -0.005 (d = 0.015 down).
        let (x, d) = (Vec3::new(0.5, 0.01, 0.5), Vec3::new(0.0, 0.015, 0.0));
        assert_eq!(image_viscous_velocity(v, x, d, &walls, floor, &fp), -v);
        fp.slip_lo = [-1.0; 4];
        assert_eq!(
            image_viscous_velocity(v, x, d, &walls, floor, &fp),
            Vec3::new(1.0, -2.0, 3.0)
        );
        fp.slip_lo = [0.01; 4];
        let u = image_viscous_velocity(v, x, d, &walls, floor, &fp);
        assert!((u - Vec3::new(1.0 / 3.0, -2.0, 1.0)).length() < 1e-6, "{u}");
        // The upper wall's own length applies there.
        let top = WallPlanes {
            mask: 0b010,
            plane: Vec3::Y,
        };
        fp.slip_hi = [-1.0; 4];
        let x = Vec3::new(0.5, 0.99, 0.5);
        assert_eq!(
            image_viscous_velocity(v, x, -d, &top, floor, &fp),
            Vec3::new(1.0, -2.0, 3.0)
        );
    }

    #[test]
    fn own_images_match_their_worked_example() {
        let kernel = crate::kernel::Kernel::WendlandC2;
        let [a0, a1, a2, a3, b0, b1, b2, b3] = kernel.uniforms(1.0, 3);
        let sp = SimParams {
            h: 1.0,
            inv_h: 1.0,
            h2: 1.0,
            inv_h2: 1.0,
            kernel: kernel.id(),
            kernel_a: [a0, a1, a2, a3],
            kernel_b: [b0, b1, b2, b3],
            ..bytemuck::Zeroable::zeroed()
        };
        let mut fp = FluidParams::zeroed();
        fp.tank_max = [4.0; 4];
        let x = Vec3::new(2.0, 0.25, 2.0);
        let walls = near(x, sp.h, &fp);
        assert_eq!(walls.mask, 0b010);
        let own = own_images(x, &walls, 1.0, &sp);
        let g = own.gradient();
        assert!((g - Vec3::new(0.0, -4.178, 0.0)).length() < 1e-3, "{g}");
        let term = own.alpha_term(g);
        assert!((term + 17.46).abs() < 1e-2, "{term}");
        // Away from every wall there is no image.
        let inside = Vec3::splat(2.0);
        let none = own_images(inside, &near(inside, sp.h, &fp), 1.0, &sp);
        assert_eq!(
            (none.gradient(), none.alpha_term(Vec3::ONE)),
            (Vec3::ZERO, 0.0)
        );
    }
}
