//! Stage `hash`, the CPU mirror of `shaders/grid/hash.wgsl`.
//!
//! Inputs: positions (N), [`SimParams`]. Outputs: each particle's slot (N), its rank inside the
//! slot (N), and the count of particles per slot (T).
//!
//! The GPU takes the rank from `atomicAdd`, so its ranks within a slot are some permutation of
//! `0..count`; here particles are counted in id order, so ranks are stable (ascending id).
//!
//! Worked example, h = 1, T = 4, positions x = 0.5, 2.5, 0.7 (y = z = 0.5): cells 0, 2, 0 →
//! slots 0, hash(2,0,0) & 3 = 147712186 & 3 = 2, 0 → counts [2, 0, 1, 0], ranks [0, 0, 1].

use glam::Vec3;
use rayon::prelude::*;

use crate::grid::key::{cell_of, hash_cell};
use crate::params::SimParams;

/// What the hash stage produces.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HashOutput {
    /// Slot of each particle.
    pub slots: Vec<u32>,
    /// Rank of each particle among the particles of its slot.
    pub ranks: Vec<u32>,
    /// Particles per slot.
    pub counts: Vec<u32>,
}

/// The slot of every particle.
pub fn slots(positions: &[Vec3], params: &SimParams) -> Vec<u32> {
    positions
        .par_iter()
        .map(|&p| hash_cell(cell_of(p, params.inv_h), params.table_mask))
        .collect()
}

/// Runs the hash stage: slots, stable ranks and per-slot counts.
pub fn hash(positions: &[Vec3], params: &SimParams) -> HashOutput {
    let slots = slots(positions, params);
    let mut counts = vec![0u32; params.table_size as usize];
    let ranks = slots
        .iter()
        .map(|&s| {
            let c = &mut counts[s as usize];
            *c += 1;
            *c - 1
        })
        .collect();
    HashOutput {
        slots,
        ranks,
        counts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ConfigOverrides, SphConfig};

    #[test]
    fn worked_example() {
        let cfg = SphConfig::new(
            3,
            ConfigOverrides {
                smoothing_radius: Some(1.0),
                table_size: Some(4),
                ..Default::default()
            },
        )
        .unwrap();
        let p = [0.5f32, 2.5, 0.7].map(|x| Vec3::new(x, 0.5, 0.5));
        let out = hash(&p, &cfg.sim_params());
        assert_eq!(2i32.wrapping_mul(73_856_093), 147_712_186);
        assert_eq!(out.slots, vec![0, 2, 0]);
        assert_eq!(out.counts, vec![2, 0, 1, 0]);
        assert_eq!(out.ranks, vec![0, 0, 1]);
    }
}
