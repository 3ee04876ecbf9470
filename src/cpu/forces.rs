//! Stage `forces`, the CPU mirror of `shaders/forces.wgsl`.
//!
//! Inputs (slot order): positions, velocities, densities, pressures (N each), `slot_start`.
//! Output: the acceleration of every particle (N):
//! - pressure, symmetric so momentum is conserved: a_i += Σ_j m (p_i/ρ_i² + p_j/ρ_j²)
//!   · 45/(π h⁶) (h − r)² (x_i − x_j)/r, i.e. −m(…)∇W_spiky (Müller et al. 2003);
//! - artificial viscosity (Monaghan 1992), on approaching pairs only: Π_ij = −α c μ_ij / ρ̄_ij
//!   with μ_ij = h (v_ij · x_ij)/(r² + 0.01h²), added to the pressure term's
//!   (p_i/ρ_i² + p_j/ρ_j²). It only removes energy, and it removes what the spiky gradient,
//!   which is not the gradient of the poly6 density, would otherwise pump in (measured: a dam
//!   break gained 3% KE + PE in 200 steps without it, and loses energy monotonically with
//!   α = 0.05);
//! - physical viscosity: a_i += Σ_j (μ/ρ_i) m (v_j − v_i)/ρ_j · 45/(π h⁶)(h − r)
//!   (Müller et al. 2003), off by default;
//! - gravity;
//! - the walls, as mirror particles (Colagrossi & Landrini 2003; see [`super::walls`]): within
//!   h of a wall every candidate j also pushes through its images across the near walls (each
//!   subset of them, images 1 to 7), with j's density and pressure, by the same pair formula.
//!   The image's velocity enters only the viscous terms (the pressure term has none), where
//!   it is −v_j (no slip, as Morris et al. 1997 and Adami et al. 2012 give wall ghosts for
//!   the viscous terms; [`super::walls::image_velocity`] gives the wall model of both
//!   solvers). The pressure of the images is what holds the fluid off the walls: there is no
//!   wall force.
//!
//! Pairs are those with r² < h², j ≠ i, found by the same walk as the density (the 27 cells,
//! each slot once); an image within h always has its original among them. Coincident particles (r = 0) get no pressure push from each other, since the
//! direction is undefined, only viscosity.
//!
//! Worked example, h = 1, m = 1, 45/(π h⁶) → k, no viscosity, no gravity: two particles at
//! x = 0 and x = 0.5 with ρ = 1 and p = 1 each push apart with
//! a = ±(1 + 1) · k · 0.5² · 1 = ±0.5k along x.

use glam::Vec3;
use rayon::prelude::*;

use super::walk::{GROUP, groups, walk_group};
use super::walls::{
    WallPlanes, image_axes, reflect_across, subsets, viscous_image_velocity, wall_planes,
};
use crate::hash::distance2;
use crate::params::{FluidParams, SimParams};

/// The slot-order fields the forces read.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    /// Positions.
    pub pos: &'a [Vec3],
    /// Velocities.
    pub vel: &'a [Vec3],
    /// Densities.
    pub density: &'a [f32],
    /// Pressures.
    pub pressure: &'a [f32],
}

/// The pressure, artificial-viscosity and viscosity push on particle `k` from a particle at
/// x_k − d (r² = |d|² < h²) with velocity `vj`, density `rho_j` and pressure `p_j`.
#[inline]
#[allow(clippy::too_many_arguments)]
fn interact(
    k: usize,
    d: Vec3,
    r2: f32,
    vj: Vec3,
    rho_j: f32,
    p_j: f32,
    f: &Fields,
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec3 {
    let r = r2.sqrt();
    let w = sp.h - r;
    let rho_k = f.density[k];
    let mut c = (vj - f.vel[k]) * (fp.viscosity / rho_k * fp.mass / rho_j * fp.kernel_45 * w);
    if r > 0.0 {
        let shared = f.pressure[k] / (rho_k * rho_k) + p_j / (rho_j * rho_j);
        let dv = f.vel[k] - vj;
        let approach = dv.x * d.x + dv.y * d.y + dv.z * d.z;
        let artificial = if approach < 0.0 {
            let mu = sp.h * approach / (r2 + 0.01 * sp.h2);
            -fp.alpha * fp.sound_speed * mu / (0.5 * (rho_k + rho_j))
        } else {
            0.0
        };
        c += d * (fp.mass * (shared + artificial) * fp.kernel_45 * w * w / r);
    }
    c
}

/// The contribution of neighbour `j` to particle `k`'s acceleration (pressure + viscosity),
/// for j ≠ k with r² < h².
#[inline]
pub fn pair(k: usize, j: usize, r2: f32, f: &Fields, sp: &SimParams, fp: &FluidParams) -> Vec3 {
    let d = f.pos[k] - f.pos[j];
    interact(k, d, r2, f.vel[j], f.density[j], f.pressure[j], f, sp, fp)
}

/// The push of image `m` of particle `j` (mirrored across m's walls, see [`super::walls`]):
/// j's density and pressure; its velocity enters only the viscous terms, as −v_j (no slip,
/// [`viscous_image_velocity`]).
/// Zero unless m's walls are all near and the image lies within h; j = k counts, a particle
/// sees its own image.
#[inline]
pub fn image_pair(
    k: usize,
    j: usize,
    walls: &WallPlanes,
    m: u32,
    f: &Fields,
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec3 {
    if walls.mask & m != m {
        return Vec3::ZERO;
    }
    let axes = image_axes(m);
    let d = f.pos[k] - reflect_across(f.pos[j], walls.plane, axes);
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    if r2 < sp.h2 {
        interact(
            k,
            d,
            r2,
            viscous_image_velocity(f.vel[j]),
            f.density[j],
            f.pressure[j],
            f,
            sp,
            fp,
        )
    } else {
        Vec3::ZERO
    }
}

/// Candidate `j`'s push on particle `k` (near walls `walls`): the pair itself if j ≠ k and
/// r² < h², then its images in decreasing subset mask, in the GPU's order.
#[inline]
fn candidate(
    k: usize,
    j: usize,
    walls: &WallPlanes,
    f: &Fields,
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec3 {
    let r2 = distance2(f.pos[k], f.pos[j]);
    let mut c = if j != k && r2 < sp.h2 {
        pair(k, j, r2, f, sp, fp)
    } else {
        Vec3::ZERO
    };
    // Only a neighbour's images can reach the kernel (see `walls`).
    if walls.mask != 0 && r2 < sp.h2 {
        let mut g = Vec3::ZERO;
        for m in subsets(walls.mask) {
            g += image_pair(k, j, walls, m, f, sp, fp);
        }
        c += g;
    }
    c
}

/// The accelerations of the group `first..first + len` (slot order; members share a query
/// range): one walk, each candidate visited once for all members, each member's sum in walk
/// order.
fn group_accelerations(
    first: usize,
    len: usize,
    f: &Fields,
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> impl Iterator<Item = Vec3> {
    let mut walls = [WallPlanes::default(); GROUP];
    for (w, &x) in walls.iter_mut().zip(&f.pos[first..first + len]) {
        *w = wall_planes(x, sp.h, fp);
    }
    let mut a = [Vec3::ZERO; GROUP];
    walk_group(first, f.pos, slot_start, sp, |j| {
        for l in 0..len {
            a[l] += candidate(first + l, j, &walls[l], f, sp, fp);
        }
    });
    let g = Vec3::from_slice(&fp.gravity[..3]);
    (0..len).map(move |l| a[l] + g)
}

/// Runs the forces stage, group by group ([`groups`]).
pub fn forces(f: &Fields, slot_start: &[u32], sp: &SimParams, fp: &FluidParams) -> Vec<Vec3> {
    groups(f.pos, sp)
        .par_iter()
        .with_min_len(32)
        .flat_map_iter(|&(first, len)| {
            group_accelerations(first as usize, len as usize, f, slot_start, sp, fp)
        })
        .collect()
}
