//! The neighbour walk of the CPU path, the one definition every walking stage uses (mirror of
//! `shaders/grid/walk.wgsl`).
//!
//! A query around p visits the cells of [`query_range`] (the 27 around p, z then y then x),
//! turns each into its hash slot, skips a slot already visited (two cells of one query can
//! alias into one slot, and a naive loop would count that slot's particles twice) and an empty
//! one, and hands on the particles of every remaining slot, ascending within the slot. Stages
//! say only what one pair contributes:
//! - [`walk_slots`] gives the slot ranges `[a, b)` in walk order: the grouped form (density,
//!   up to [`LANES`](super::density::LANES) particles sharing a range, one per vector lane)
//!   reads each candidate once for all of them from these ranges;
//! - [`walk`] gives each candidate with its r², for a walk of one particle; it is
//!   [`walk_slots`] with the candidates of each range in turn, so both forms visit the same
//!   candidates in the same order, and every per-particle sum is the same bits either way;
//! - [`rounds`] splits a group of consecutive slot-order particles into rounds of members
//!   that share a query range, the GPU's grouped form (`walk_group` in walk.wgsl).
//!
//! Worked example, h = 1, T = 1 (every cell aliases into slot 0), particles at x = 0.1 and 5:
//! the query around 0.1 spans 27 cells, all in slot 0, which is walked once: candidates 0 and
//! 1 in order, with r² 0 and 24.01.

use glam::{IVec3, Vec3};
use rayon::prelude::*;

use crate::grid::key::{distance2, query_range_of};
use crate::params::SimParams;

pub use crate::grid::key::{MAX_QUERY_SLOTS, walk_slots};

/// How the walk reads particle positions: the layout of the particle state, which the density
/// walk is written over (slot-order `[Vec3]`, the layout every path holds).
pub trait Positions: Sync {
    /// Particles held.
    fn count(&self) -> usize;
    /// Particle k's position.
    fn at(&self, k: usize) -> Vec3;
    /// Calls `f(x, y, z)` for particles `a..b` in order.
    fn each(&self, a: usize, b: usize, f: impl FnMut(f32, f32, f32));
}

impl Positions for [Vec3] {
    #[inline(always)]
    fn count(&self) -> usize {
        self.len()
    }
    #[inline(always)]
    fn at(&self, k: usize) -> Vec3 {
        self[k]
    }
    #[inline(always)]
    fn each(&self, a: usize, b: usize, mut f: impl FnMut(f32, f32, f32)) {
        for p in &self[a..b] {
            f(p.x, p.y, p.z);
        }
    }
}

/// Calls `visit(k, r²)` for every candidate `k` (a slot-order index) of the query around `p`,
/// in walk order; r² = |p − x_k|² as [`distance2`] computes it. The caller applies r² < h².
#[inline]
pub fn walk(
    p: Vec3,
    sorted_pos: &[Vec3],
    slot_start: &[u32],
    params: &SimParams,
    mut visit: impl FnMut(u32, f32),
) {
    let (lo, hi) = query_range_of(p, params);
    walk_slots(lo, hi, slot_start, params.table_mask, |a, b| {
        for k in a..b {
            visit(k, distance2(p, sorted_pos[k as usize]));
        }
    });
}

/// Particles per group of the CPU's grouped walks (the density and the stages'), as on the GPU.
pub const GROUP: usize = crate::core::limits::GROUP as usize;

/// The groups of the grouped walks: runs of at most [`GROUP`] consecutive slot-order particles
/// with the same query range (normally one cell's particles), as `(first, len)`, covering
/// `0..N` in order.
pub fn groups<P: Positions + ?Sized>(sorted_pos: &P, params: &SimParams) -> Vec<(u32, u32)> {
    // Compiled for AVX2 where present for the inlined floor (`vroundss`) in `query_range`:
    // the baseline build calls libm's `floorf` twice per particle per axis (6% of a 100k
    // WCSPH step, measured with perf).
    crate::cpu::simd::best(|| groups_portable(sorted_pos, params))
}

#[inline(always)]
fn groups_portable<P: Positions + ?Sized>(sorted_pos: &P, params: &SimParams) -> Vec<(u32, u32)> {
    let n = sorted_pos.count();
    let mut out = Vec::with_capacity(n / 4 + 1);
    let mut i = 0;
    while i < n {
        let range = query_range_of(sorted_pos.at(i), params);
        let mut j = i + 1;
        while j < n && j - i < GROUP && query_range_of(sorted_pos.at(j), params) == range {
            j += 1;
        }
        out.push((i as u32, (j - i) as u32));
        i = j;
    }
    out
}

/// Spreads the low 21 bits of `v` to every third bit.
fn spread3(v: u32) -> u64 {
    let mut x = (v & 0x1f_ffff) as u64;
    x = (x | x << 32) & 0x001f_0000_0000_ffff;
    x = (x | x << 16) & 0x001f_0000_ff00_00ff;
    x = (x | x << 8) & 0x100f_00f0_0f00_f00f;
    x = (x | x << 4) & 0x10c3_0c30_c30c_30c3;
    (x | x << 2) & 0x1249_2492_4924_9249
}

/// The Morton (z-order) code of a cell, from the low 21 bits of each coordinate: cells close in
/// space get close codes (wrapping far away only changes the order, never a result).
pub fn morton(c: IVec3) -> u64 {
    spread3(c.x as u32) | spread3(c.y as u32) << 1 | spread3(c.z as u32) << 2
}

/// Runs `per_group(first, len)` for every group of [`groups_in_space_order`], in parallel,
/// and places member l's result at slot-order index first + l.
pub fn map_groups<T: Copy + Default + Send, P: Positions + ?Sized>(
    sorted_pos: &P,
    params: &SimParams,
    per_group: impl Fn(usize, usize) -> [T; GROUP] + Sync,
) -> Vec<T> {
    let order = groups_in_space_order(sorted_pos, params);
    let results: Vec<[T; GROUP]> = order
        .par_iter()
        .with_min_len(32)
        .map(|&(first, len)| per_group(first as usize, len as usize))
        .collect();
    scatter_groups(sorted_pos.count(), &order, &results)
}

/// Per-group results (member l of group `(first, len)` at `results[g][l]`, groups in any
/// order) placed at slot-order indices first + l, for `n` particles.
pub fn scatter_groups<T: Copy + Default>(
    n: usize,
    groups: &[(u32, u32)],
    results: &[[T; GROUP]],
) -> Vec<T> {
    let mut out = vec![T::default(); n];
    for (&(first, len), r) in groups.iter().zip(results) {
        let (first, len) = (first as usize, len as usize);
        out[first..first + len].copy_from_slice(&r[..len]);
    }
    out
}

/// [`groups`] sorted by the Morton code of their query ranges' lower corners: the order the
/// CPU's grouped walks process them in. Slot order is hash order, which would send consecutive
/// groups to unrelated cells and miss the cache; in Morton order neighbouring groups follow
/// each other and find each other's candidates and slot starts in the cache. The order of
/// processing changes no result: each group's sums run over its own walk.
pub fn groups_in_space_order<P: Positions + ?Sized>(
    sorted_pos: &P,
    params: &SimParams,
) -> Vec<(u32, u32)> {
    let mut g = groups(sorted_pos, params);
    g.sort_by_cached_key(|&(first, _)| {
        morton(query_range_of(sorted_pos.at(first as usize), params).0)
    });
    g
}

/// The grouped walk of the members `first..first + len`, which share a query range: calls
/// `visit(j, members)` for every candidate j in walk order, once for all members (the
/// candidate's fields are read once; each member then adds its terms in walk order, so its
/// sums are those of a walk of its own, bit for bit).
#[inline]
pub fn walk_group<P: Positions + ?Sized>(
    first: usize,
    sorted_pos: &P,
    slot_start: &[u32],
    params: &SimParams,
    mut visit: impl FnMut(usize),
) {
    let (lo, hi) = query_range_of(sorted_pos.at(first), params);
    walk_slots(lo, hi, slot_start, params.table_mask, |a, b| {
        for j in a..b {
            visit(j as usize);
        }
    });
}

/// Splits the group of slot-order particles `first..first + len` (len ≤ 32) into rounds: the
/// first member not yet done leads, and every member with the leader's query range joins.
/// Calls `round(members, lo, hi)` with the members as a bit mask (bit l: particle first + l).
/// In the usual group (one cell's particles) there is one round for all.
#[inline]
pub fn rounds(
    first: usize,
    len: usize,
    sorted_pos: &[Vec3],
    params: &SimParams,
    mut round: impl FnMut(u32, IVec3, IVec3),
) {
    let everyone = if len >= 32 {
        u32::MAX
    } else {
        (1u32 << len) - 1
    };
    let mut done = 0u32;
    while done != everyone {
        let leader = (!done).trailing_zeros() as usize;
        let range = query_range_of(sorted_pos[first + leader], params);
        let mut members = 0u32;
        for l in 0..len {
            if query_range_of(sorted_pos[first + l], params) == range {
                members |= 1 << l;
            }
        }
        round(members, range.0, range.1);
        done |= members;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;
    use crate::grid::reorder::gather;
    use crate::params::{ConfigOverrides, SphConfig};

    fn params(h: f32, t: u32) -> SimParams {
        let cfg = SphConfig::new(
            2,
            ConfigOverrides {
                smoothing_radius: Some(h),
                spacing: Some(h / 2.0),
                table_size: Some(t),
                ..Default::default()
            },
        )
        .unwrap();
        cfg.sim_params()
    }

    #[test]
    fn worked_example_walks_an_aliased_slot_once() {
        let p = [Vec3::new(0.1, 0.1, 0.1), Vec3::new(5.0, 0.1, 0.1)];
        let prm = params(1.0, 1);
        let g = Grid::build(&p, &prm);
        let sp = gather(&p, &g.sorted_ids);
        let mut seen = Vec::new();
        walk(sp[0], &sp, &g.slot_start, &prm, |k, r2| seen.push((k, r2)));
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[0], (0, 0.0));
        assert!((seen[1].1 - 24.01).abs() < 1e-4);
    }

    #[test]
    fn rounds_split_members_by_query_range() {
        let prm = params(1.0, 1);
        // Members 0 and 2 share a cell; member 1 lies in another cell of the same slot.
        let p = [
            Vec3::new(0.2, 0.2, 0.2),
            Vec3::new(3.5, 0.2, 0.2),
            Vec3::new(0.3, 0.4, 0.2),
        ];
        let mut got = Vec::new();
        rounds(0, 3, &p, &prm, |m, lo, _| got.push((m, lo)));
        assert_eq!(got.len(), 2);
        assert_eq!(got[0].0, 0b101);
        assert_eq!(got[1].0, 0b010);
        assert_eq!(got[1].1, IVec3::new(2, -1, -1));
    }
}
