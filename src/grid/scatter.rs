//! Stage `scatter`, the CPU mirror of `shaders/grid/scatter.wgsl`.
//!
//! Inputs: each particle's slot and rank (N), `slot_start` (T + 1). Output: particle ids grouped
//! by slot (N): particle `i` goes to `slot_start[slot[i]] + rank[i]`.
//!
//! Worked example: slots [0, 2, 0], ranks [0, 0, 1], slot_start [0, 2, 2, 3, 3] →
//! ids [0, 2, 1] (slot 0 holds particles 0 and 2, slot 2 holds particle 1).

/// Places every particle id at its slot's start plus its rank.
pub fn scatter(slots: &[u32], ranks: &[u32], slot_start: &[u32]) -> Vec<u32> {
    let mut ids = vec![0u32; slots.len()];
    for (i, (&s, &r)) in slots.iter().zip(ranks).enumerate() {
        ids[(slot_start[s as usize] + r) as usize] = i as u32;
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        assert_eq!(
            scatter(&[0, 2, 0], &[0, 0, 1], &[0, 2, 2, 3, 3]),
            vec![0, 2, 1]
        );
        assert_eq!(
            scatter(&[0, 2, 0], &[1, 0, 0], &[0, 2, 2, 3, 3]),
            vec![2, 0, 1]
        );
    }
}
