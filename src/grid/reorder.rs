//! Stage `reorder`, the CPU mirror of `shaders/grid/reorder.wgsl`.
//!
//! Inputs: `sorted_ids` (N) and the particle state (position, velocity, original id; N each).
//! Output: the same state in slot order, `out[k] = in[sorted_ids[k]]`, so every later stage
//! reads neighbours that sit together in memory, and the largest speed (for the time step).
//! The original ids travel with the particles, so results can be reported in input order.
//!
//! Worked example: sorted_ids [0, 2, 1], positions [a, b, c], ids [7, 8, 9] → [a, c, b],
//! ids [7, 9, 8].

use glam::Vec3;
use rayon::prelude::*;

pub use crate::core::Particles;

/// Gathers `values` into slot order.
pub fn gather<T: Copy + Send + Sync>(values: &[T], sorted_ids: &[u32]) -> Vec<T> {
    sorted_ids.par_iter().map(|&i| values[i as usize]).collect()
}

/// Runs the reorder stage.
pub fn reorder(p: &Particles, sorted_ids: &[u32]) -> Particles {
    Particles {
        pos: gather(&p.pos, sorted_ids),
        vel: gather(&p.vel, sorted_ids),
        id: gather(&p.id, sorted_ids),
    }
}

/// The largest speed |v|.
pub fn max_speed(vel: &[Vec3]) -> f32 {
    vel.iter().map(|v| v.length()).fold(0.0, f32::max)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let (a, b, c) = (Vec3::X, Vec3::Y, Vec3::Z);
        let p = Particles {
            pos: vec![a, b, c],
            vel: vec![a, b, c],
            id: vec![7, 8, 9],
        };
        let r = reorder(&p, &[0, 2, 1]);
        assert_eq!(r.pos, vec![a, c, b]);
        assert_eq!(r.id, vec![7, 9, 8]);
        let q = Particles {
            id: vec![0, 2, 1],
            ..r.clone()
        };
        assert_eq!(q.to_input_order(&[1.0, 2.0, 3.0]), vec![1.0, 3.0, 2.0]);
    }
}
