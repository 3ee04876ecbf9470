//! Stage `density`, the CPU mirror of `shaders/density.wgsl`.
//!
//! Inputs: positions in slot order (N, from the `reorder` stage), `slot_start` (T + 1),
//! [`SimParams`]. Output: the poly6 density of every particle in slot order (N), ρ_i = m Σ_j W(|x_i − x_j|, h) over every j with
//! r² < h² (strict), i itself included; W(r, h) = 315/(64π h⁹)(h² − r²)³ (Müller et al. 2003),
//! evaluated as `density_scale · (1 − r²/h²)³`.
//!
//! The query visits the cells of [`query_range`] (the 27 around the particle), turns each into
//! its slot, and skips a slot already visited: two cells of one query can share a slot, and a
//! naive loop would count that slot's particles twice. Every particle of a visited slot then
//! gets the one cheap test that matters, r² < h²: a particle of another cell that shares the
//! slot fails it (or, if it passes, it is a true neighbour whose own cell is in range and whose
//! slot is visited exactly once).
//!
//! Worked example, h = 1, m such that density_scale = 1: particles at x = 0 and x = 0.5 (same
//! y, z) → each sees itself (1 − 0)³ = 1 and the other (1 − 0.25)³ = 0.421875 → both 1.421875.

use glam::Vec3;
use rayon::prelude::*;

use crate::hash::{MAX_QUERY_SPAN, distance2, hash_cell, query_range};
use crate::params::SimParams;

/// Most distinct slots one query can visit.
const MAX_QUERY_SLOTS: usize = (MAX_QUERY_SPAN * MAX_QUERY_SPAN * MAX_QUERY_SPAN) as usize;

/// Calls `visit(k, r²)` for every particle `k` (a slot-order index) in the distinct slots of
/// `p`'s query cells, in the exact order the GPU walks them (z, then y, then x; ascending
/// within a slot).
#[inline]
pub fn for_each_candidate(
    p: Vec3,
    sorted_pos: &[Vec3],
    slot_start: &[u32],
    params: &SimParams,
    mut visit: impl FnMut(u32, f32),
) {
    let (lo, hi) = query_range(p, params.h, params.inv_h);
    let mut seen = [0u32; MAX_QUERY_SLOTS];
    let mut n_seen = 0;
    for cz in lo.z..=hi.z {
        for cy in lo.y..=hi.y {
            for cx in lo.x..=hi.x {
                let s = hash_cell(glam::IVec3::new(cx, cy, cz), params.table_mask);
                if seen[..n_seen].contains(&s) {
                    continue;
                }
                seen[n_seen] = s;
                n_seen += 1;
                for k in slot_start[s as usize]..slot_start[s as usize + 1] {
                    visit(k, distance2(p, sorted_pos[k as usize]));
                }
            }
        }
    }
}

/// The un-normalised poly6 term (1 − r²/h²)³ for a pair known to satisfy r² < h².
#[inline]
pub fn poly6_term(r2: f32, params: &SimParams) -> f32 {
    let q = (1.0 - r2 * params.inv_h2).max(0.0);
    q * q * q
}

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
    for_each_candidate(sorted_pos[k], sorted_pos, slot_start, params, |_, r2| {
        candidates += 1;
        if r2 < params.h2 {
            neighbours += 1;
            sum += poly6_term(r2, params);
        }
    });
    (params.density_scale * sum, neighbours, candidates)
}

/// Runs the density stage over all particles (slot order) in parallel.
pub fn density(sorted_pos: &[Vec3], slot_start: &[u32], params: &SimParams) -> DensityOutput {
    let mut density = vec![0.0f32; sorted_pos.len()];
    let (neighbour_pairs, candidates) = density
        .par_iter_mut()
        .enumerate()
        .with_min_len(256)
        .map(|(i, d)| {
            let (rho, nb, cand) = density_of(i, sorted_pos, slot_start, params);
            *d = rho;
            (nb as u64, cand as u64)
        })
        .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
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
    for_each_candidate(sorted_pos[k], sorted_pos, slot_start, params, |j, r2| {
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
    use crate::cpu::Grid;
    use crate::cpu::reorder::gather;

    fn params(h: f32, t: u32) -> SimParams {
        SimParams {
            n: 0,
            table_size: t,
            table_mask: t - 1,
            _pad0: 0,
            h,
            inv_h: 1.0 / h,
            h2: h * h,
            inv_h2: 1.0 / (h * h),
            density_scale: 1.0,
            _pad1: [0.0; 3],
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
