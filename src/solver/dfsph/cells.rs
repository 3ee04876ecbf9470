//! The coarse levels of DFSPH's solves: what their stages share (`dfsph_galerkin`,
//! `dfsph_levels`, `dfsph_restrict`, `dfsph_coarse`, `dfsph_prolong`), the mirror of the
//! coarse functions of `shaders/common.wgsl`.
//!
//! Why coarse levels: both solves are Jacobi iterations, which correct each particle from its
//! own residual, so a correction spreads one kernel width per iteration. Water at rest needs
//! the pressure of every layer above, and the iterations a solve takes grow with the square of
//! the depth in particles (a resting column 80 layers deep stopped at the 100-iteration cap).
//! Every other iteration, a correction from a coarse grid of cells twice the support wide takes
//! out the smooth part of the residual at once, and the Jacobi iterations between handle what
//! the cells cannot see (geometric multigrid on the neighbour grid's cells, as Morikawa, Osaki
//! & Asai do for ISPH; Trottenberg, Oosterlee & Schüller, *Multigrid*, 2001, for the method).
//!
//! The coarse operator is the solve's own: Â_c = Pᵀ A P / (dt^k S2) with P the cells'
//! indicator over the particles the coarse levels act on (piecewise-constant aggregation;
//! Galerkin), so a coarse correction is the best the cells can do in the energy the solve
//! minimises and never adds velocity noise the Jacobi iterations would have to take out
//! (a geometric Laplacian in its place left the particles jittering: docs/results.md).
//! A = dt^k G^T G, G the pressure update of `dfsph_pressure` (the particles' κ/ρ to their
//! velocities), whose transpose is `dfsph_rate`'s density change rate, walls' images and
//! obstacles included; so Â_c is assembled once a step from the pairs (`dfsph_galerkin`).
//!
//! The particles the coarse levels act on: those with α ≠ 0 and ρ at least
//! [`COARSE_SURFACE_DENSITY`](crate::params::COARSE_SURFACE_DENSITY) ρ0 ([`coarse_member`]), the
//! water below its free surface. The solve itself is one-sided (it only ever pushes, κ_sum ≥ 0):
//! each correction restricts the residual of the members that carry pressure or are compressed
//! ([`in_play`]), and is added where the Jacobi increment is, before the projection onto
//! κ_sum ≥ 0 (`dfsph_prolong`).
//!
//! Integer sums: the operator and the restricted residual are summed in fixed point with 32
//! fractional bits ([`to_fixed`]), as 32-bit integer atomics add them on the GPU with a carry
//! word, so the sums do not depend on the order. The coarse solve runs in one workgroup in a
//! fixed order (`dfsph_coarse`).
//!
//! Worked example of a cell: tank [0, 1]³, h = 0.1: cells of 0.20002 m at least, so 4 per axis
//! (0.25 m); a particle at (0.3, 0.1, 0.9) lies in cell (1, 0, 3), in its lower half along x and
//! y and its upper half along z, so its neighbours lie in cells (0–1, 0, 3) × … (−x, −y, +z).

use glam::Vec3;

use crate::params::{CoarseParams, DfsphParams, FluidParams};

use super::control::Solve;

/// Entries a level-1 cell stores of its 27-point row: the centre (index 0) and the 13 offsets
/// after it in (z, y, x) order; the other 13 are the neighbours' (the operator is symmetric).
pub const STORED: usize = 14;

/// The index of offset (dx, dy, dz) ∈ {−1, 0, 1}³ in a 27-point row: (dx+1) + 3(dy+1) + 9(dz+1);
/// 13 is the centre, and the row's stored half is 13..27.
#[inline]
pub fn offset_index(o: [i32; 3]) -> usize {
    ((o[0] + 1) + 3 * (o[1] + 1) + 9 * (o[2] + 1)) as usize
}

/// The offset of row index `o` (the inverse of [`offset_index`]).
#[inline]
pub fn offset_of(o: usize) -> [i32; 3] {
    [
        (o % 3) as i32 - 1,
        ((o / 3) % 3) as i32 - 1,
        (o / 9) as i32 - 1,
    ]
}

/// A level-1 cell's index from its coordinates (x fastest).
#[inline]
pub fn cell_index(c: [u32; 3], dims: [u32; 3]) -> usize {
    ((c[2] * dims[1] + c[1]) * dims[0] + c[0]) as usize
}

/// The level-1 cell of x: ⌊(x − origin) / cell⌋ per axis, clamped to the grid (a particle past
/// an open side counts in the border cell), and on which half of it x lies per axis (true: the
/// upper). The GPU's `coarse_cell` (common.wgsl): the same operations, multiplying by 1/cell.
#[inline]
pub fn coarse_cell(x: Vec3, cp: &CoarseParams) -> ([u32; 3], [bool; 3]) {
    let mut c = [0u32; 3];
    let mut upper = [false; 3];
    for a in 0..3 {
        let q = (x[a] - cp.origin[a]) * cp.inv_cell[a];
        let f = q.floor();
        let last = (cp.dims[a] - 1) as f32;
        let k = f.clamp(0.0, last);
        c[a] = k as u32;
        upper[a] = q - k >= 0.5;
    }
    (c, upper)
}

/// Whether a particle of density `rho` and DFSPH factor `alpha` is one the coarse levels act
/// on: below the free surface (ρ ≥ `cp.cell[3]`,
/// [`COARSE_SURFACE_DENSITY`](crate::params::COARSE_SURFACE_DENSITY) ρ0) and in the solves (α ≠ 0).
#[inline]
pub fn coarse_member(rho: f32, alpha: f32, cp: &CoarseParams) -> bool {
    alpha != 0.0 && rho >= cp.cell[3]
}

/// Whether a coarse member is in play at iteration `k` of `solve`: it carries pressure
/// (κ_sum > 0) or is compressed (e > 0); at the first correction (k = 0) every member, so
/// the first correction reaches the whole water where a cold start has pressure nowhere yet.
/// A divergence-free solve leaves out the particles it skips (α ≤ 0).
#[inline]
pub fn in_play(solve: Solve, k: u32, e: f32, kappa_sum: f32, alpha: f32) -> bool {
    let solved = match solve {
        Solve::Divergence => alpha > 0.0,
        Solve::Density => true,
    };
    solved && (k == 0 || kappa_sum > 0.0 || e > 0.0)
}

/// κ per unit of dimensionless residual, ρ0 / dt², of a solve at step `dt` (both solves: the
/// residual is ρ*/ρ0 − 1 or Dρ/Dt dt/ρ0).
#[inline]
pub fn kappa_scale(dt: f32, fp: &FluidParams) -> f32 {
    fp.rest_density / (dt * dt)
}

/// The Jacobi increment of a particle with residual `e`: ω |α| e ρ0/dt² (`scale`), where the
/// solve takes the particle (the divergence-free solve skips α ≤ 0). Unprojected.
#[inline]
pub fn jacobi_increment(solve: Solve, e: f32, alpha: f32, scale: f32, dp: &DfsphParams) -> f32 {
    match solve {
        Solve::Divergence => {
            if alpha > 0.0 {
                e * scale * alpha * dp.relaxation
            } else {
                0.0
            }
        }
        Solve::Density => e * scale * alpha.abs() * dp.relaxation,
    }
}

/// The increment that moves κ_sum by `inc` and keeps it ≥ 0: max(κ_sum + inc, 0) − κ_sum.
#[inline]
pub fn projected(kappa_sum: f32, inc: f32) -> f32 {
    (kappa_sum + inc).max(0.0) - kappa_sum
}

/// One unit of the coarse sums' fixed point: 2⁻³².
pub const FIXED_SCALE: f32 = 4_294_967_296.0;

/// ⌊v · 2³²⌋ exactly as an `i64` (the GPU's `to_fixed`, common.wgsl, builds the same two words
/// from v's bits, so no float rounding can differ between devices); |v| ≥ 2³⁰ saturates to
/// ±2⁶², NaN and ±∞ give 0. Worked example: −1.25 → −1.25 · 2³² (words 0xC000_0000,
/// 0xFFFF_FFFE); −2⁻³³ → −1.
#[inline]
pub fn to_fixed(v: f32) -> i64 {
    if !v.is_finite() {
        return 0;
    }
    if v.abs() >= 1_073_741_824.0 {
        return if v < 0.0 { -(1i64 << 62) } else { 1i64 << 62 };
    }
    // v · 2³² is exact in f64 (a 24-bit mantissa), and so is its floor.
    (f64::from(v) * 4_294_967_296.0).floor() as i64
}

/// A fixed-point sum as `f32`, in the operations the GPU's `from_fixed` (common.wgsl) uses:
/// ((f32(hi) 2¹⁶ + f32(lo ≫ 16)) 2¹⁶ + f32(lo & 0xffff)) · 2⁻³².
#[inline]
pub fn from_fixed(x: i64) -> f32 {
    let hi = (x >> 32) as i32;
    let lo = x as u32;
    ((hi as f32 * 65536.0 + (lo >> 16) as f32) * 65536.0 + (lo & 0xffff) as f32)
        * (1.0 / FIXED_SCALE)
}

/// A fixed-point value as the GPU's (low, high) words.
#[inline]
pub fn to_words(x: i64) -> [u32; 2] {
    [x as u32, (x >> 32) as u32]
}

/// The inverse of [`to_words`].
#[inline]
pub fn from_words(w: [u32; 2]) -> i64 {
    (i64::from(w[1] as i32) << 32) | i64::from(w[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixed_point_round_trips_and_sums_in_any_order() {
        assert_eq!(to_fixed(-1.25), -(5i64 << 30));
        assert_eq!(to_words(to_fixed(-1.25)), [0xC000_0000, 0xFFFF_FFFE]);
        assert_eq!(from_words(to_words(to_fixed(-1.25))), to_fixed(-1.25));
        for v in [0.0f32, 1.0, -1.0, 3.5e-7, -2.75, 12345.678, -0.1] {
            let back = from_fixed(to_fixed(v));
            assert!(
                (back - v).abs() <= 2.4e-10_f32.max(v.abs() * 1e-7),
                "{v} -> {back}"
            );
        }
        assert_eq!(to_fixed(f32::NAN), 0);
        assert_eq!(to_fixed(f32::INFINITY), 0);
        // The floor: 2⁻³³ rounds down to 0, −2⁻³³ to −2⁻³², exactly where f32's v − ⌊v⌋ would
        // not (1 − 2⁻³³ rounds to 1).
        assert_eq!(to_fixed(2f32.powi(-33)), 0);
        assert_eq!(to_fixed(-(2f32.powi(-33))), -1);
        assert_eq!(
            to_fixed(-5.9e-8),
            (-5.9e-8f32 as f64 * 4294967296.0).floor() as i64
        );
        assert_eq!(to_fixed(-5.9e-8), -254);
        assert_eq!(to_fixed(-3e9), -(1i64 << 62));
    }

    #[test]
    fn offsets_index_the_row_and_its_stored_half() {
        assert_eq!(offset_index([0, 0, 0]), 13);
        assert_eq!(offset_index([1, 1, 1]), 26);
        assert_eq!(offset_index([-1, -1, -1]), 0);
        for o in 0..27 {
            assert_eq!(offset_index(offset_of(o)), o);
            let m = offset_of(o).map(|v| -v);
            assert_eq!(offset_index(m), 26 - o, "the mirror of {o}");
        }
    }

    #[test]
    fn the_doc_example_cell() {
        let fp = FluidParams {
            tank_min: [0.0; 4],
            tank_max: [1.0, 1.0, 1.0, 0.0],
            rest_density: 1000.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let cp = CoarseParams::new(&fp, crate::kernel::Kernel::WendlandC2, 0.1, 0.05, 0.125, 3);
        assert_eq!(&cp.dims[..3], &[4, 4, 4]);
        let (c, upper) = coarse_cell(Vec3::new(0.3, 0.1, 0.9), &cp);
        assert_eq!(c, [1, 0, 3]);
        assert_eq!(upper, [false, false, true]);
        // Outside the tank: the border cell.
        assert_eq!(coarse_cell(Vec3::new(-0.2, 1.5, 0.5), &cp).0, [0, 3, 2]);
    }

    #[test]
    fn projection_keeps_the_sum_non_negative() {
        assert_eq!(projected(2.0, -3.0), -2.0);
        assert_eq!(projected(2.0, 1.0), 1.0);
        assert_eq!(projected(0.0, -1.0), 0.0);
    }
}
