//! Stage `order`, the CPU mirror of `shaders/grid/order.wgsl`.
//!
//! Inputs: each particle's slot (N), `slot_start` (T + 1), and the ids grouped by slot in any
//! order within a slot (N), as the GPU's atomic scatter leaves them. Output: the same ids with
//! each slot sorted ascending, so everything downstream (summation order, hence the densities'
//! last bits) is deterministic.
//!
//! Each particle finds its place by counting the smaller ids in its own slot: O(slot size) per
//! particle, no sort, no atomics, fully parallel.
//!
//! Worked example: slots [0, 2, 0], slot_start [0, 2, 2, 3, 3], ids [2, 0, 1] → particle 0 sees
//! no smaller id in slot 0 (place 0), particle 2 sees one (place 1) → [0, 2, 1].
//!
//! The GPU pass also lists the density pass's groups ([`groups`]): each slot cut into runs of
//! [`GROUP`] places, in any order (atomic appends); here in slot order.

use rayon::prelude::*;

pub use crate::core::limits::GROUP;

/// Sorts each slot's ids ascending by counting, the way the GPU pass does.
pub fn order(slots: &[u32], slot_start: &[u32], unordered: &[u32]) -> Vec<u32> {
    let places: Vec<usize> = slots
        .par_iter()
        .enumerate()
        .map(|(i, &s)| {
            let (a, b) = (
                slot_start[s as usize] as usize,
                slot_start[s as usize + 1] as usize,
            );
            a + unordered[a..b].iter().filter(|&&j| j < i as u32).count()
        })
        .collect();
    let mut ids = vec![0u32; unordered.len()];
    for (i, place) in places.into_iter().enumerate() {
        ids[place] = i as u32;
    }
    ids
}

/// The density groups of a grid: every slot's places cut into runs of `size` places (the
/// `group_size` of [`SimParams`](crate::params::SimParams), at most [`GROUP`]), as
/// `[first, end)`, in slot order. Worked example, size 8: slot_start [0, 10, 10, 13] →
/// [0, 8], [8, 10], [10, 13].
pub fn groups(slot_start: &[u32], size: u32) -> Vec<[u32; 2]> {
    let size = size.clamp(1, GROUP);
    slot_start
        .windows(2)
        .flat_map(|w| {
            (w[0]..w[1])
                .step_by(size as usize)
                .map(move |a| [a, (a + size).min(w[1])])
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        assert_eq!(
            order(&[0, 2, 0], &[0, 2, 2, 3, 3], &[2, 0, 1]),
            vec![0, 2, 1]
        );
        assert_eq!(order(&[0, 0, 0], &[0, 3], &[2, 0, 1]), vec![0, 1, 2]);
        assert_eq!(groups(&[0, 2, 2, 3, 3], 8), vec![[0, 2], [2, 3]]);
        assert_eq!(groups(&[0, 10, 10, 13], 8), vec![[0, 8], [8, 10], [10, 13]]);
        assert_eq!(groups(&[0, 3], 1), vec![[0, 1], [1, 2], [2, 3]]);
    }
}
