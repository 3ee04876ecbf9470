//! The brute-force O(N²) oracle that checks the CPU grid: every pair is tested, no hashing.
//!
//! The neighbour predicate is the shared one, `distance2(x_i, x_j) < h²` in `f32` (the grid must
//! find exactly those pairs); densities are summed in `f64` with the textbook poly6
//! W(r, h) = 315/(64π h⁹)(h² − r²)³ (Müller et al. 2003), so the CPU's `f32` arithmetic is
//! checked against an independent, more precise evaluation.

use glam::Vec3;
use rayon::prelude::*;

use crate::grid::key::distance2;

/// Sorted neighbour ids (self included) of every particle.
pub fn neighbours(positions: &[Vec3], h: f32) -> Vec<Vec<u32>> {
    let h2 = h * h;
    positions
        .par_iter()
        .map(|&p| {
            (0..positions.len() as u32)
                .filter(|&j| distance2(p, positions[j as usize]) < h2)
                .collect()
        })
        .collect()
}

/// Density of every particle in `f64`, from all pairs.
pub fn densities(positions: &[Vec3], h: f32, mass: f32) -> Vec<f64> {
    let h2 = h * h;
    let (h64, h2_64) = (h as f64, (h as f64) * (h as f64));
    let coef = mass as f64 * 315.0 / (64.0 * std::f64::consts::PI * h64.powi(9));
    positions
        .par_iter()
        .map(|&p| {
            let sum: f64 = positions
                .iter()
                .filter(|&&q| distance2(p, q) < h2)
                .map(|&q| {
                    let d = p.as_dvec3() - q.as_dvec3();
                    (h2_64 - d.length_squared()).max(0.0).powi(3)
                })
                .sum();
            coef * sum
        })
        .collect()
}
