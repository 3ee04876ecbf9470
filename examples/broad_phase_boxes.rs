//! A broad phase for boxes of varied sizes: each axis-aligned box is bounded by the sphere
//! through its corners, `gpu_sph::neighbours::overlapping_spheres` finds the candidate pairs
//! on one grid sized to the largest sphere, and an exact box test keeps the colliding ones.
//! Checked against testing every pair.
//!
//! ```sh
//! cargo run --release --example broad_phase_boxes -- [N]   # default 20000 boxes
//! ```

use std::time::Instant;

use glam::Vec3;
use gpu_sph::neighbours::overlapping_spheres;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

fn overlap(a: (Vec3, Vec3), b: (Vec3, Vec3)) -> bool {
    a.0.cmplt(b.1).all() && b.0.cmplt(a.1).all()
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args().nth(1).map_or(Ok(20_000), |a| a.parse())?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
    // Boxes from 1 to 8 units across, about 10 units of space per box along each axis.
    let side = 10.0 * (n as f32).cbrt();
    let boxes: Vec<(Vec3, Vec3)> = (0..n)
        .map(|_| {
            let c = Vec3::new(rng.random(), rng.random(), rng.random()) * side;
            let half = Vec3::new(
                rng.random_range(0.5..4.0),
                rng.random_range(0.5..4.0),
                rng.random_range(0.5..4.0),
            );
            (c - half, c + half)
        })
        .collect();

    let t = Instant::now();
    let centres: Vec<Vec3> = boxes.iter().map(|b| 0.5 * (b.0 + b.1)).collect();
    let radii: Vec<f32> = boxes
        .iter()
        // Slightly above the half-diagonal so rounding cannot drop a touching pair.
        .map(|b| 0.5 * (b.1 - b.0).length() * (1.0 + 1e-6))
        .collect();
    let candidates = overlapping_spheres(&centres, &radii)?;
    let hits: Vec<(u32, u32)> = candidates
        .iter()
        .copied()
        .filter(|&(i, j)| overlap(boxes[i as usize], boxes[j as usize]))
        .collect();
    let grid_ms = 1e3 * t.elapsed().as_secs_f64();

    let t = Instant::now();
    let mut brute = Vec::new();
    for i in 0..n {
        for j in i + 1..n {
            if overlap(boxes[i], boxes[j]) {
                brute.push((i as u32, j as u32));
            }
        }
    }
    let brute_ms = 1e3 * t.elapsed().as_secs_f64();
    assert_eq!(hits, brute, "the broad phase missed or invented a pair");
    println!(
        "{n} boxes: {} candidate pairs, {} colliding; broad phase + exact test {grid_ms:.1} ms, all pairs {brute_ms:.1} ms (agree)",
        candidates.len(),
        hits.len()
    );
    Ok(())
}
