//! Stage `scan`, the CPU mirror of `shaders/grid/scan.wgsl`.
//!
//! Input: per-slot counts (T). Output: `slot_start` (T + 1), the exclusive prefix sum of the
//! counts followed by their total, so slot `s` owns `sorted_ids[slot_start[s]..slot_start[s+1]]`.
//!
//! Worked example: counts [2, 0, 1, 0] → slot_start [0, 2, 2, 3, 3].

/// Exclusive prefix sum of `counts`, with the total appended.
pub fn scan(counts: &[u32]) -> Vec<u32> {
    let mut out = Vec::with_capacity(counts.len() + 1);
    let mut total = 0u32;
    out.push(0);
    for &c in counts {
        total += c;
        out.push(total);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        assert_eq!(scan(&[2, 0, 1, 0]), vec![0, 2, 2, 3, 3]);
        assert_eq!(scan(&[5]), vec![0, 5]);
        assert_eq!(scan(&[]), vec![0]);
    }
}
