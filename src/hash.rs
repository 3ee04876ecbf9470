//! The one CPU definition of the spatial hash. `shaders/common.wgsl` mirrors it exactly.
//!
//! A particle at `p` lives in cell `floor(p * inv_h)` (per axis, as `i32`). The cell's slot in a
//! table of T = 2^k slots is
//! `((cx * 73856093) ^ (cy * 19349663) ^ (cz * 83492791)) & (T - 1)`
//! with wrapping `i32` multiplies (Teschner et al. 2003).
//!
//! Worked example, h = 1 (inv_h = 1), T = 8: p = (0.5, 1.5, -0.5) → cell (0, 1, -1);
//! 0 ^ 19349663 ^ -83492791 = -98484010 → as u32 = 4196483286 → & 7 = 6, slot 6.
//!
//! Positions are multiplied by the reciprocal, never divided: `p / h` and `p * inv_h` disagree on
//! a few particles in a million, and the GPU must land every particle in the same cell.
//! Non-finite positions, and positions 2^22 or more cells from the origin, are rejected at input
//! time by [`crate::params::validate_positions`], so the `f32 → i32` conversion never saturates.

use glam::{IVec3, Vec3};

/// The three primes of the hash, in x, y, z order.
pub const HASH_PRIMES: [i32; 3] = [73_856_093, 19_349_663, 83_492_791];

/// Most cells a query box spans per axis. Exactly 3 in exact arithmetic; rounding of `p ± h`
/// can make it 2 or 4, never more while |p|/h < 2^22.
pub const MAX_QUERY_SPAN: i32 = 4;

/// The cell of a position: `floor(p * inv_h)` per axis.
#[inline]
pub fn cell_of(p: Vec3, inv_h: f32) -> IVec3 {
    (p * inv_h).floor().as_ivec3()
}

/// The slot of a cell in a table whose size is `mask + 1` (a power of two).
#[inline]
pub fn hash_cell(c: IVec3, mask: u32) -> u32 {
    let h = c.x.wrapping_mul(HASH_PRIMES[0])
        ^ c.y.wrapping_mul(HASH_PRIMES[1])
        ^ c.z.wrapping_mul(HASH_PRIMES[2]);
    (h as u32) & mask
}

/// The inclusive range of cells a neighbour query of `p` must visit: the cells of `p − h` and
/// `p + h`.
///
/// Why not simply the 27 cells around `cell_of(p)`: `f32` rounding of `p * inv_h` can put a
/// particle closer than h in a cell two steps away (seen at |p| ≈ 10⁴h). Float rounding is
/// monotone, so any `q` with |q − p| < h satisfies `p − h ≤ q ≤ p + h` after rounding, and its
/// cell lies in this range. Normally the range is the 27 cells; the span is capped at
/// [`MAX_QUERY_SPAN`] per axis identically on both paths.
#[inline]
pub fn query_range(p: Vec3, h: f32, inv_h: f32) -> (IVec3, IVec3) {
    let lo = cell_of(p - Vec3::splat(h), inv_h);
    let hi = cell_of(p + Vec3::splat(h), inv_h);
    (lo, hi.min(lo + IVec3::splat(MAX_QUERY_SPAN - 1)))
}

/// The neighbour predicate both paths and the oracle share: r² < h², strictly, in `f32`.
#[inline]
pub fn distance2(a: Vec3, b: Vec3) -> f32 {
    let d = a - b;
    d.x * d.x + d.y * d.y + d.z * d.z
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_from_the_doc() {
        let c = cell_of(Vec3::new(0.5, 1.5, -0.5), 1.0);
        assert_eq!(c, IVec3::new(0, 1, -1));
        assert_eq!(hash_cell(c, 7), 6);
        assert_eq!((19_349_663i32 ^ (-83_492_791i32)) as u32, 4_196_483_286);
    }

    #[test]
    fn hash_wraps_instead_of_overflowing() {
        let c = IVec3::new(i32::MAX / 2, -(1 << 21), 1 << 21);
        let expected = (c.x.wrapping_mul(73_856_093)
            ^ c.y.wrapping_mul(19_349_663)
            ^ c.z.wrapping_mul(83_492_791)) as u32;
        assert_eq!(hash_cell(c, u32::MAX), expected);
        assert_eq!(hash_cell(c, 0), 0);
    }

    #[test]
    fn negative_coordinates_floor_down() {
        assert_eq!(
            cell_of(Vec3::new(-0.0, -1e-7, -1.0), 1.0),
            IVec3::new(0, -1, -1)
        );
    }

    #[test]
    fn query_range_is_three_cells_per_axis_in_the_plain_case() {
        let (lo, hi) = query_range(Vec3::new(0.5, 0.5, 0.5), 1.0, 1.0);
        assert_eq!((lo, hi), (IVec3::splat(-1), IVec3::splat(1)));
    }
}
