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

/// Most distinct slots one query can visit.
pub const MAX_QUERY_SLOTS: usize = (MAX_QUERY_SPAN * MAX_QUERY_SPAN * MAX_QUERY_SPAN) as usize;

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

/// [`query_range`] in a grid whose points lie in the plane z = 0 (a 2D grid): the z range is
/// that plane's cell alone, so a query visits the 3 × 3 = 9 cells around p in (x, y). Their
/// slots are the 2D prime-XOR hash of (cx, cy): with cz = 0 the third prime's term vanishes,
/// `((cx * 73856093) ^ (cy * 19349663)) & (T − 1)`. A point of the plane within h of p lies in
/// those cells whatever p's own z (rounding as in [`query_range`]).
///
/// Worked example, h = 1: p = (0.5, 1.5, 0) → cells (−1, 0, 0) to (1, 2, 0), 9 cells.
#[inline]
pub fn query_range_planar(p: Vec3, h: f32, inv_h: f32) -> (IVec3, IVec3) {
    let (lo, hi) = query_range(p, h, inv_h);
    (lo.with_z(0), hi.with_z(0))
}

/// The query range of a run's walks: [`query_range_planar`] in a 2D run
/// ([`SimParams::planar`](crate::params::SimParams::planar)), else [`query_range`]; the
/// GPU's `query_lo`/`query_hi` in common.wgsl.
#[inline(always)]
pub fn query_range_of(p: Vec3, params: &crate::params::SimParams) -> (IVec3, IVec3) {
    match params.planar != 0 {
        true => query_range_planar(p, params.h, params.inv_h),
        false => query_range(p, params.h, params.inv_h),
    }
}

/// The neighbour predicate both paths and the oracle share: r² < h², strictly, in `f32`.
#[inline]
pub fn distance2(a: Vec3, b: Vec3) -> f32 {
    let d = a - b;
    d.x * d.x + d.y * d.y + d.z * d.z
}

/// Calls `slot(a, b)` for the particle range `[a, b)` of every distinct, non-empty slot of the
/// query cells `lo..=hi`, in walk order (z, then y, then x). An empty slot adds no candidate,
/// so skipping it, recorded or not, leaves the walk unchanged.
#[inline]
pub fn walk_slots(
    lo: IVec3,
    hi: IVec3,
    slot_start: &[u32],
    mask: u32,
    mut slot: impl FnMut(u32, u32),
) {
    let mut seen = [0u32; MAX_QUERY_SLOTS];
    let mut n_seen = 0;
    // A 64-bit filter of the slots seen: a slot whose bit is clear is new without a search.
    let mut filter = 0u64;
    for cz in lo.z..=hi.z {
        for cy in lo.y..=hi.y {
            for cx in lo.x..=hi.x {
                let s = hash_cell(IVec3::new(cx, cy, cz), mask) as usize;
                let (a, b) = (slot_start[s], slot_start[s + 1]);
                let bit = 1u64 << (s & 63);
                if a == b || (filter & bit != 0 && seen[..n_seen].contains(&(s as u32))) {
                    continue;
                }
                filter |= bit;
                seen[n_seen] = s as u32;
                n_seen += 1;
                slot(a, b);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_planar_query_visits_the_9_cells_of_its_worked_example() {
        let (lo, hi) = query_range_planar(Vec3::new(0.5, 1.5, 0.0), 1.0, 1.0);
        assert_eq!((lo, hi), (IVec3::new(-1, 0, 0), IVec3::new(1, 2, 0)));
        let span = hi - lo + IVec3::ONE;
        assert_eq!(span.x * span.y * span.z, 9);
        // The plane's slots are the two-prime hash of (cx, cy).
        let c = IVec3::new(3, -5, 0);
        assert_eq!(
            hash_cell(c, 1023),
            ((3i32.wrapping_mul(73_856_093) ^ (-5i32).wrapping_mul(19_349_663)) as u32) & 1023
        );
    }

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
