//! Neighbour counting for a point cloud with the library's grid (`gpu_sph::neighbours`):
//! N random points in a unit cube, how many others lie within r of each, checked against brute
//! force on a sample, and the time of both.
//!
//! ```sh
//! cargo run --release --example point_cloud_neighbours -- [N] [R]   # defaults 200000, 0.02
//! ```

use std::time::Instant;

use glam::Vec3;
use gpu_sph::grid::key::distance2;
use gpu_sph::neighbours::NeighbourSearch;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let n: usize = args.next().map_or(Ok(200_000), |a| a.parse())?;
    let r: f32 = args.next().map_or(Ok(0.02), |a| a.parse())?;
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
    let points: Vec<Vec3> = (0..n)
        .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()))
        .collect();

    let t = Instant::now();
    let search = NeighbourSearch::new(&points, r)?;
    let rows = search.within()?;
    let grid_s = t.elapsed().as_secs_f64();
    let counts: Vec<usize> = (0..n).map(|i| rows.row(i).len()).collect();
    let mean = counts.iter().sum::<usize>() as f64 / n.max(1) as f64;
    let most = counts.iter().copied().max().unwrap_or(0);

    // Brute force on a sample of 100 points: the same counts, exactly.
    let t = Instant::now();
    for i in (0..n).step_by((n / 100).max(1)) {
        let brute = (0..n)
            .filter(|&j| j != i && distance2(points[i], points[j]) < r * r)
            .count();
        assert_eq!(brute, counts[i], "point {i}");
    }
    let brute_s = t.elapsed().as_secs_f64();
    println!(
        "{n} points, r = {r}: {mean:.2} neighbours on average, {most} at most; grid (build + all rows) {:.1} ms; brute force on 100 points {:.1} ms (agrees)",
        1e3 * grid_s,
        1e3 * brute_s
    );
    Ok(())
}
