//! The tank's boundary model: its walls as mirrors, the CPU twin of
//! `shaders/boundary_tank.wgsl` function for function. What a solver's walk asks of it:
//! [`wall_planes`] (the walls within h of a particle, once per particle), [`wall_image_mask`]
//! (the walls across which it sees a candidate's images), [`subsets`], [`image_axes`] and
//! [`reflect_across`] (which images, and where), [`image_velocity`] and
//! [`viscous_image_velocity`] (how an image moves in the kinematic and the viscous terms), and
//! the hard walls that hold a particle a violent step carried past them ([`clamp_to_tank`],
//! [`clamp_to_box`]). An
//! image carries its original's density, pressure and stiffness; the solver adds each image
//! right after its original, through its own pair term, into the same sums (the walks keep the
//! loops; this module says where the images are and how they move). The obstacles' boundary
//! particles are the other model (`super::particles`).
//!
//! The method: mirror (ghost) particles, Colagrossi & Landrini (2003), "Numerical simulation of
//! interfacial flows by smoothed particle hydrodynamics", J. Comput. Phys. 191, 448–475, §3.2.
//! Within h of a wall a particle's kernel reaches past the wall where there is no fluid: its
//! density falls short (by about 30% on the wall's first layer at h = 2s), its pressure, clamped
//! at 0, vanishes, and nothing balances the pressure of the layers behind it, so wall particles
//! are squeezed against whatever holds them (this is what kept a hydrostatic column jittering at
//! the walls). Mirroring every neighbour across the wall fills the missing half of the kernel
//! with fluid that has the neighbour's density and pressure, and its velocity reflected in the
//! kinematic terms and reversed in the viscous ones ([`image_velocity`] gives the wall model
//! and its reasons): at an edge or corner the images across two or three walls
//! (each non-empty subset of the near walls, bit `axis` reflecting that axis) are added too.
//! A resting lattice half a spacing from a wall then continues exactly across it, and every
//! particle has the density and pressure of the interior. The walking stages add the images
//! through their own pair terms: `walls` their density, `forces` their push (WCSPH), the
//! `dfsph_*` walks every DFSPH sum.
//!
//! Per axis only the nearer wall is mirrored, and only if it is closer than h, since farther
//! images cannot reach the kernel. (A tank narrower than 2h, where both walls of an axis are
//! within reach, gets the nearer one only.) An image within h of x_i always has its original
//! within h of x_i: both lie on the fluid side of the wall, and reflecting x_j across it only
//! lengthens the normal component of x_i − x_j. So the walk over x_i's own neighbour cells finds
//! every image, and no extra query is needed.
//!
//! Worked example, h = 1, floor at y = 0, a particle at y = 0.25 and a neighbour at y = 0.5
//! straight above: [`wall_planes`] gives mask 0b010, plane.y = 0; [`wall_image_mask`] gives
//! 0b010 (the neighbour lies within h); image 0b010 of the neighbour lies at y = −0.5, 0.75
//! away, and adds to a density walk the poly6 term of r² = 0.5625, as a real neighbour there
//! would.

use glam::{BVec3, Vec3};

use crate::hash::distance2;
use crate::params::FluidParams;

/// The walls a particle mirrors across: per axis the nearer wall if it lies closer than h.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct WallPlanes {
    /// Bit `axis` set: that axis has a wall within h.
    pub mask: u32,
    /// The wall's coordinate along each axis in the mask (0 elsewhere).
    pub plane: Vec3,
}

/// The walls near `x` (WGSL `wall_planes`).
#[inline]
pub fn wall_planes(x: Vec3, h: f32, fp: &FluidParams) -> WallPlanes {
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

/// The walls of `w` across which a particle at `x` sees the images of `xk`: all of them if `xk`
/// lies within h of `x`, else none (an image is never nearer than its original, so only a
/// neighbour's images can reach the kernel). WGSL `wall_image_mask`.
#[inline]
pub fn wall_image_mask(w: &WallPlanes, x: Vec3, xk: Vec3, h2: f32) -> u32 {
    if w.mask != 0 && distance2(x, xk) < h2 {
        w.mask
    } else {
        0
    }
}

/// The axes image `m` (1 to 7) reflects.
#[inline]
pub fn image_axes(m: u32) -> BVec3 {
    BVec3::new(m & 1 != 0, m & 2 != 0, m & 4 != 0)
}

/// `x` reflected across the planes of the chosen axes: 2w − x there, x elsewhere.
#[inline]
pub fn reflect_across(x: Vec3, plane: Vec3, axes: BVec3) -> Vec3 {
    Vec3::select(axes, 2.0 * plane - x, x)
}

/// The velocity of an image across the walls of `axes` in the kinematic terms (density
/// change rate, continuity): free slip, the normal components reflected and the tangential
/// ones kept, so a wall stops flow through it and nothing else: fluid sliding along a wall
/// neither compresses nor expands against its images.
///
/// The wall model of both solvers: mirror particles whose velocity is reflected in the
/// kinematic terms ([`image_velocity`]) and reversed in the viscous terms
/// ([`viscous_image_velocity`], the no-slip wall of Morris et al. 1997 and Adami et al.
/// 2012). A wall is impermeable, and the fluid sticks to it as a viscous fluid does; how much
/// shear that transmits is the viscosity's: water's μ = 1e-3 Pa·s (DFSPH's `--viscosity`)
/// gives a boundary layer far thinner than a particle (Re ≈ 1e5 in the dam break), so the
/// walls act as the smooth walls of the experiment, while WCSPH's artificial viscosity, a
/// stabiliser, also brakes flow along the walls (measured: the Martin & Moyce front +9.8%
/// at T = 1.19 with it, +13% when it too saw free-slip images).
#[inline]
pub fn image_velocity(v: Vec3, axes: BVec3) -> Vec3 {
    Vec3::select(axes, -v, v)
}

/// The velocity of an image in the viscous terms of both solvers: −v (no slip; see
/// [`image_velocity`]). The one place the tank walls' viscous model is written in Rust: the
/// WCSPH forces (all three walks) and DFSPH's `dfsph_accel` call it, as `forces.wgsl` and
/// `dfsph_accel.wgsl` call its WGSL twin in boundary_tank.wgsl.
#[inline]
pub fn viscous_image_velocity(v: Vec3) -> Vec3 {
    -v
}

/// The non-empty subsets of `mask` in decreasing order, the images of a particle near the
/// walls of `mask` (the GPU's order: `m = (m − 1) & mask` enumerates them). Worked example:
/// 0b101 → 0b101, 0b100, 0b001.
#[inline]
pub fn subsets(mask: u32) -> impl Iterator<Item = u32> {
    std::iter::successors((mask != 0).then_some(mask), move |&m| {
        let next = (m - 1) & mask;
        (next != 0).then_some(next)
    })
}

/// The tank's hard walls (both solvers; WGSL `clamp_to_tank`): a coordinate past a wall is
/// put back on it, and an outward normal speed becomes −restitution times itself.
#[inline]
pub fn clamp_to_tank(x: Vec3, v: Vec3, fp: &FluidParams) -> (Vec3, Vec3) {
    let lo = Vec3::from_slice(&fp.tank_min[..3]);
    let hi = Vec3::from_slice(&fp.tank_max[..3]);
    clamp_to_box(x, v, lo, hi, fp.restitution, fp.open)
}

/// The same walls at `lo` and `hi`, none on the sides `open` marks (bit 2·axis lower,
/// 2·axis + 1 upper; WGSL `clamp_to_box`).
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
