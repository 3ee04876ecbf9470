//! Stage `density`, the CPU mirror of `shaders/density.wgsl`.
//!
//! Inputs: positions in slot order (N, from the `reorder` stage), `slot_start` (T + 1),
//! [`SimParams`]. Output: the poly6 density of every particle in slot order (N), ρ_i = m Σ_j W(|x_i − x_j|, h) over every j with
//! r² < h² (strict), i itself included; W(r, h) = 315/(64π h⁹)(h² − r²)³ (Müller et al. 2003),
//! evaluated as `density_scale · (1 − r²/h²)³`.
//!
//! The query is the one neighbour walk ([`super::walk`]): the cells of the query range (the 27
//! around the particle), each slot once. Every particle of a visited slot then gets the one
//! cheap test that matters, r² < h²: a particle of another cell that shares the slot fails it
//! (or, if it passes, it is a true neighbour whose own cell is in range and whose slot is
//! visited exactly once).
//!
//! How it is fast without changing a bit: consecutive slot-order particles with the same query
//! range (normally the particles of one cell) form a group of up to [`LANES`]; the group's
//! candidate list (the walk's slot ranges, [`walk_slots`]) is built once, and each candidate is
//! tested against all members at once, one member per vector lane (AVX2 when the CPU has it).
//! Every lane adds its terms in walk order, so each sum is the one-particle walk's, bit for bit.
//! Groups are processed in Morton order of their cells (slot order is hash order, which would
//! send consecutive groups to unrelated cells and miss the cache). The GPU pass groups the same
//! way, but cuts groups at every [`GROUP`](crate::core::limits::GROUP) places of a slot
//! (see `order`); the grouping changes no result.
//!
//! Worked example, h = 1, m such that density_scale = 1: particles at x = 0 and x = 0.5 (same
//! y, z) → each sees itself (1 − 0)³ = 1 and the other (1 − 0.25)³ = 0.421875 → both 1.421875.

use glam::Vec3;
use rayon::prelude::*;

use super::simd::{best, has_avx2};
use crate::grid::key::query_range_of;
pub use crate::grid::walk::Positions;
use crate::grid::walk::{MAX_QUERY_SLOTS, morton, walk, walk_slots};
use crate::params::SimParams;

pub use crate::kernel::poly6_term;

/// Densities and the work the query did.
#[derive(Clone, Debug, Default)]
pub struct DensityOutput {
    /// Density of each particle, kg/m³.
    pub density: Vec<f32>,
    /// Pairs (i, j) with r² < h², self pairs included.
    pub neighbour_pairs: u64,
    /// Candidates examined (particles of the visited slots).
    pub candidates: u64,
}

/// The density of particle `k` (slot order), with its neighbour and candidate counts.
#[inline]
pub fn density_of(
    k: usize,
    sorted_pos: &[Vec3],
    slot_start: &[u32],
    params: &SimParams,
) -> (f32, u32, u32) {
    let (mut sum, mut neighbours, mut candidates) = (0.0f32, 0u32, 0u32);
    walk(sorted_pos[k], sorted_pos, slot_start, params, |_, r2| {
        candidates += 1;
        if r2 < params.h2 {
            neighbours += 1;
            sum += poly6_term(r2, params.inv_h2);
        }
    });
    (params.density_scale * sum, neighbours, candidates)
}

/// Query particles processed together: a run of consecutive slot-order particles (at most this
/// many) whose query ranges are identical, so they share one candidate list.
pub const LANES: usize = 8;

/// Slot-order particles per parallel work item.
const CHUNK: usize = 4096;

/// Densities (unscaled sums) and neighbour counts of up to [`LANES`] query particles sharing
/// the candidate list `ranges`, one lane each. Every lane adds every candidate's term in walk
/// order, an exact 0.0 for non-neighbours (as the GPU does), so each lane's sum is bit for bit
/// the one-particle walk's.
#[inline(always)]
fn lane_sums<P: Positions + ?Sized>(
    queries: &[Vec3],
    ranges: &[(u32, u32)],
    pos: &P,
    h2: f32,
    inv_h2: f32,
) -> ([f32; LANES], [u32; LANES]) {
    let (mut qx, mut qy, mut qz) = ([0f32; LANES], [0f32; LANES], [0f32; LANES]);
    for l in 0..LANES {
        // Unused lanes repeat the first query; their results are dropped.
        let q = queries.get(l).unwrap_or(&queries[0]);
        (qx[l], qy[l], qz[l]) = (q.x, q.y, q.z);
    }
    let mut sum = [0f32; LANES];
    let mut nb = [0u32; LANES];
    for &(a, b) in ranges {
        pos.each(a as usize, b as usize, |cx, cy, cz| {
            for l in 0..LANES {
                let (dx, dy, dz) = (qx[l] - cx, qy[l] - cy, qz[l] - cz);
                let r2 = dx * dx + dy * dy + dz * dz;
                let q = 1.0 - r2 * inv_h2;
                let q = if q > 0.0 { q } else { 0.0 };
                let inside = r2 < h2;
                sum[l] += if inside { q * q * q } else { 0.0 };
                nb[l] += inside as u32;
            }
        });
    }
    (sum, nb)
}

/// A run of at most [`LANES`] consecutive slot-order particles whose query ranges are
/// identical, so they share one candidate list.
#[derive(Clone, Copy, Debug)]
struct Group {
    /// Morton code of the query range's lower corner: the order groups are processed in.
    key: u64,
    /// First slot-order particle.
    start: u32,
    /// Particles in the run.
    len: u32,
}

/// The groups of slot-order particles `base..end`, in slot order.
#[inline(always)]
fn groups_of<P: Positions + ?Sized>(
    base: usize,
    end: usize,
    pos: &P,
    params: &SimParams,
) -> Vec<Group> {
    let mut out = Vec::with_capacity((end - base) / 4 + 1);
    let mut i = base;
    while i < end {
        let range = query_range_of(pos.at(i), params);
        let mut j = i + 1;
        while j < end && j - i < LANES && query_range_of(pos.at(j), params) == range {
            j += 1;
        }
        out.push(Group {
            key: morton(range.0),
            start: i as u32,
            len: (j - i) as u32,
        });
        i = j;
    }
    out
}

/// One group's results: densities (scaled), neighbour pairs, candidates examined.
type GroupResult = ([f32; LANES], u32, u32);

/// The densities of `groups`, one result each; `avx2` picks the intrinsic lane sums.
#[inline(always)]
fn groups_density<P: Positions + ?Sized>(
    groups: &[Group],
    out: &mut [GroupResult],
    pos: &P,
    slot_start: &[u32],
    params: &SimParams,
    avx2: bool,
) {
    let mut ranges = [(0u32, 0u32); MAX_QUERY_SLOTS];
    for (g, out) in groups.iter().zip(out) {
        let (start, len) = (g.start as usize, g.len as usize);
        let mut queries = [Vec3::ZERO; LANES];
        for (l, q) in queries.iter_mut().enumerate().take(len) {
            *q = pos.at(start + l);
        }
        let (lo, hi) = query_range_of(queries[0], params);
        let mut n_ranges = 0;
        walk_slots(lo, hi, slot_start, params.table_mask, |a, b| {
            ranges[n_ranges] = (a, b);
            n_ranges += 1;
        });
        let ranges = &ranges[..n_ranges];
        let (sum, nb) = lanes(&queries[..len], ranges, pos, params, avx2);
        let per_query: u32 = ranges.iter().map(|&(a, b)| b - a).sum();
        *out = (
            sum.map(|s| params.density_scale * s),
            nb[..len].iter().sum(),
            per_query * len as u32,
        );
    }
}

/// [`lane_sums`], in AVX2 intrinsics where `avx2` says the CPU has them.
#[inline(always)]
fn lanes<P: Positions + ?Sized>(
    queries: &[Vec3],
    ranges: &[(u32, u32)],
    pos: &P,
    params: &SimParams,
    avx2: bool,
) -> ([f32; LANES], [u32; LANES]) {
    #[cfg(target_arch = "x86_64")]
    if avx2 {
        // SAFETY: the caller passes avx2 = true only where the CPU has AVX2.
        return unsafe { avx2::lane_sums(queries, ranges, pos, params.h2, params.inv_h2) };
    }
    let _ = avx2;
    lane_sums(queries, ranges, pos, params.h2, params.inv_h2)
}

/// The all-pairs density of query particles `base..base + out.len()`: every particle is a
/// candidate of every query, in index order.
#[inline(always)]
fn all_pairs_chunk(
    base: usize,
    out: &mut [f32],
    positions: &[Vec3],
    params: &SimParams,
    avx2: bool,
) {
    let all = [(0, positions.len() as u32)];
    for (g, o) in out.chunks_mut(LANES).enumerate() {
        let first = base + g * LANES;
        let (sum, _) = lanes(
            &positions[first..first + o.len()],
            &all,
            positions,
            params,
            avx2,
        );
        for (d, s) in o.iter_mut().zip(sum) {
            *d = params.density_scale * s;
        }
    }
}

/// The lane sums in AVX2 intrinsics (LLVM left [`lane_sums`]'s lane loop scalar, with a
/// branch per lane: measured, perf; the walk around them runs compiled for AVX2 through
/// [`best`]). The
/// intrinsics do [`lane_sums`]'s operations in its order (Rust never contracts a multiply and
/// an add into an FMA), so the results are the same bits as the portable build's.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use crate::cpu::simd::lanes::{norm2, poly6};
    use std::arch::x86_64::*;

    /// [`super::lane_sums`], eight lanes per instruction.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn lane_sums<P: Positions + ?Sized>(
        queries: &[Vec3],
        ranges: &[(u32, u32)],
        pos: &P,
        h2: f32,
        inv_h2: f32,
    ) -> ([f32; LANES], [u32; LANES]) {
        let (mut qx, mut qy, mut qz) = ([0f32; LANES], [0f32; LANES], [0f32; LANES]);
        for l in 0..LANES {
            let q = queries.get(l).unwrap_or(&queries[0]);
            (qx[l], qy[l], qz[l]) = (q.x, q.y, q.z);
        }
        // SAFETY (whole block): AVX2 is enabled on this function; the loads and stores go
        // through arrays of exactly eight lanes.
        unsafe {
            let (qx, qy, qz) = (
                _mm256_loadu_ps(qx.as_ptr()),
                _mm256_loadu_ps(qy.as_ptr()),
                _mm256_loadu_ps(qz.as_ptr()),
            );
            let (vh2, vinv) = (_mm256_set1_ps(h2), _mm256_set1_ps(inv_h2));
            let mut sum = _mm256_setzero_ps();
            let mut nb = _mm256_setzero_si256();
            for &(a, b) in ranges {
                pos.each(a as usize, b as usize, |cx, cy, cz| {
                    let dx = _mm256_sub_ps(qx, _mm256_set1_ps(cx));
                    let dy = _mm256_sub_ps(qy, _mm256_set1_ps(cy));
                    let dz = _mm256_sub_ps(qz, _mm256_set1_ps(cz));
                    let r2 = norm2([dx, dy, dz]);
                    let inside = _mm256_cmp_ps::<_CMP_LT_OQ>(r2, vh2);
                    sum = _mm256_add_ps(sum, _mm256_and_ps(inside, poly6(r2, vinv)));
                    // A true lane is all ones, −1 as an integer.
                    nb = _mm256_sub_epi32(nb, _mm256_castps_si256(inside));
                });
            }
            let mut s = [0f32; LANES];
            let mut n = [0u32; LANES];
            _mm256_storeu_ps(s.as_mut_ptr(), sum);
            _mm256_storeu_si256(n.as_mut_ptr().cast(), nb);
            (s, n)
        }
    }
}

/// The all-pairs O(N²) density in `f32` (every particle against every particle, in input
/// order, with the same kernel and lane code as [`density`]): the baseline the grid is
/// measured against. Same values as the grid's up to summation order.
pub fn all_pairs(positions: &[Vec3], params: &SimParams) -> Vec<f32> {
    let mut out = vec![0.0f32; positions.len()];
    out.par_chunks_mut(LANES * 16)
        .enumerate()
        .for_each(|(c, o)| {
            let base = c * LANES * 16;
            best(|| all_pairs_chunk(base, o, positions, params, has_avx2()));
        });
    out
}

/// Groups processed per parallel work item.
const GROUPS_PER_TASK: usize = 256;

/// Runs the density stage over all particles (slot order) in parallel.
///
/// Slot order is hash order, so consecutive groups sit in unrelated cells; the groups are
/// processed in Morton order of their cells instead, so neighbouring groups, processed one
/// after the other, find each other's candidates and slot starts in the cache. The order of
/// processing changes no result: each particle's sum runs over its own walk.
pub fn density(sorted_pos: &[Vec3], slot_start: &[u32], params: &SimParams) -> DensityOutput {
    density_in(sorted_pos, slot_start, params)
}

/// [`density`] reading the positions in the layout `pos`; the same bits in every layout.
pub fn density_in<P: Positions + ?Sized>(
    pos: &P,
    slot_start: &[u32],
    params: &SimParams,
) -> DensityOutput {
    let n = pos.count();
    let mut groups: Vec<Group> = (0..n.div_ceil(CHUNK))
        .into_par_iter()
        .flat_map_iter(|c| best(|| groups_of(c * CHUNK, (c * CHUNK + CHUNK).min(n), pos, params)))
        .collect();
    groups.par_sort_unstable_by_key(|g| g.key);
    let mut results = vec![([0f32; LANES], 0u32, 0u32); groups.len()];
    results
        .par_chunks_mut(GROUPS_PER_TASK)
        .zip(groups.par_chunks(GROUPS_PER_TASK))
        .for_each(|(out, g)| best(|| groups_density(g, out, pos, slot_start, params, has_avx2())));
    let mut density = vec![0.0f32; n];
    let (mut neighbour_pairs, mut candidates) = (0u64, 0u64);
    for (g, (rho, pairs, cand)) in groups.iter().zip(&results) {
        let (start, len) = (g.start as usize, g.len as usize);
        density[start..start + len].copy_from_slice(&rho[..len]);
        neighbour_pairs += *pairs as u64;
        candidates += *cand as u64;
    }
    DensityOutput {
        density,
        neighbour_pairs,
        candidates,
    }
}

/// The neighbours of slot-order particle `k` found through the grid (r² < h², self included),
/// as original ids (through `sorted_ids`), sorted.
pub fn neighbours(
    k: usize,
    sorted_pos: &[Vec3],
    slot_start: &[u32],
    sorted_ids: &[u32],
    params: &SimParams,
) -> Vec<u32> {
    let mut out = Vec::new();
    walk(sorted_pos[k], sorted_pos, slot_start, params, |j, r2| {
        if r2 < params.h2 {
            out.push(sorted_ids[j as usize]);
        }
    });
    out.sort_unstable();
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;
    use crate::grid::reorder::gather;

    fn params(h: f32, t: u32) -> SimParams {
        SimParams {
            n: 0,
            table_size: t,
            table_mask: t - 1,
            group_size: crate::core::limits::GROUP,
            h,
            inv_h: 1.0 / h,
            h2: h * h,
            inv_h2: 1.0 / (h * h),
            density_scale: 1.0,
            ..bytemuck::Zeroable::zeroed()
        }
    }

    #[test]
    fn worked_example() {
        let p = [Vec3::new(0.0, 0.5, 0.5), Vec3::new(0.5, 0.5, 0.5)];
        let prm = params(1.0, 8);
        let g = Grid::build(&p, &prm);
        let sp = gather(&p, &g.sorted_ids);
        let out = density(&sp, &g.slot_start, &prm);
        assert_eq!(out.density, vec![1.421875, 1.421875]);
        assert_eq!(out.neighbour_pairs, 4);
    }

    #[cfg(target_arch = "x86_64")]
    #[test]
    fn avx2_lane_sums_are_the_portable_bits() {
        if !has_avx2() {
            return;
        }
        // Candidates around a lattice of queries, some exactly at r² = h² and at r = 0.
        let h = 0.02f32;
        let mut pts = Vec::new();
        let mut s = 12345u32;
        for _ in 0..400 {
            let mut next = || {
                s = s.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (s >> 8) as f32 / (1u32 << 24) as f32 * 0.05
            };
            pts.push(Vec3::new(next(), next(), next()));
        }
        pts.push(pts[0]);
        pts.push(pts[1] + Vec3::new(h, 0.0, 0.0));
        let ranges = [(0u32, 150u32), (150, 151), (200, pts.len() as u32)];
        for len in 1..=LANES {
            let queries = &pts[len * 3..len * 4];
            let want = lane_sums(queries, &ranges, &pts[..], h * h, 1.0 / (h * h));
            // SAFETY: AVX2 is present, checked above.
            let got = unsafe { avx2::lane_sums(queries, &ranges, &pts[..], h * h, 1.0 / (h * h)) };
            assert_eq!(want.1, got.1);
            for l in 0..LANES {
                assert_eq!(want.0[l].to_bits(), got.0[l].to_bits(), "lane {l}");
            }
            assert!(want.1.iter().all(|&n| n > 0));
        }
    }

    #[test]
    fn aliased_slots_are_not_counted_twice() {
        // With T = 1 all 27 query cells share slot 0: each particle must still be counted once.
        let p = [
            Vec3::new(0.1, 0.1, 0.1),
            Vec3::new(1.2, 0.1, 0.1),
            Vec3::new(5.0, 5.0, 5.0),
        ];
        let prm = params(1.5, 1);
        let g = Grid::build(&p, &prm);
        let sp = gather(&p, &g.sorted_ids);
        let out = density(&sp, &g.slot_start, &prm);
        assert_eq!(out.neighbour_pairs, 2 + 2 + 1);
        assert_eq!(out.candidates, 9);
        assert_eq!(
            neighbours(0, &sp, &g.slot_start, &g.sorted_ids, &prm),
            vec![0, 1]
        );
    }
}
