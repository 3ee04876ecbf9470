//! All pairs within r over N random points: gpu-sph's grid (`gpu_sph::neighbours`, CPU path and
//! the GPU's rows) beside two well-kept Rust spatial indexes, the `kiddo` k-d tree
//! (`ImmutableKdTree`, `within_unsorted`) and the `rstar` R*-tree (`locate_within_distance`),
//! on the same points, in one process. Each method builds its index and then finds every point's
//! neighbours (all queries in parallel with rayon, as the grid's own are), and every method's
//! pair set must equal the grid's exactly before any time is printed.
//!
//! The peers' distance sums may round differently from ours at the boundary, so they query a
//! radius 1e-5 wider and keep the pairs our f32 test `distance2 < r²` keeps: the sets are then
//! the same by construction of the test, not by luck, and the extra candidates cost them almost
//! nothing.
//!
//! ```sh
//! cargo bench --bench pairs_peers                       # 1M points, r for ~27 neighbours each
//! GPU_SPH_BENCH_SIZES=100000,1000000 cargo bench --bench pairs_peers
//! ```
//! Not a criterion bench: one index build per size is minutes for the peers at 1M, so it runs
//! each method `GPU_SPH_BENCH_REPEAT` times (default 3) and prints the best time of each.

use std::time::Instant;

use glam::Vec3;
use gpu_sph::grid::key::distance2;
use gpu_sph::neighbours::NeighbourSearch;
use kiddo::SquaredEuclidean;
use kiddo::immutable::float::kdtree::ImmutableKdTree;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use rstar::RTree;
use rstar::primitives::GeomWithData;

/// Mean neighbours per point the radius is chosen for (about an SPH particle's).
const NEIGHBOURS: f64 = 27.0;

fn env_list(name: &str, default: &[usize]) -> Vec<usize> {
    std::env::var(name)
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| default.to_vec())
}

/// Best wall time of `repeat` runs of `f`, in ms, and the last result.
fn best<T>(repeat: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut ms = f64::INFINITY;
    let mut out = None;
    for _ in 0..repeat.max(1) {
        let t = Instant::now();
        let r = f();
        ms = ms.min(1e3 * t.elapsed().as_secs_f64());
        out = Some(r);
    }
    (ms, out.expect("at least one run"))
}

/// Pairs (i < j) from per-point candidate lists, kept by our own distance test, sorted.
fn keep(points: &[Vec3], r2: f32, rows: Vec<Vec<u32>>) -> Vec<(u32, u32)> {
    let mut pairs: Vec<(u32, u32)> = rows
        .into_iter()
        .enumerate()
        .flat_map(|(i, row)| {
            let i = i as u32;
            row.into_iter()
                .filter(move |&j| j > i && distance2(points[i as usize], points[j as usize]) < r2)
                .map(move |j| (i, j))
        })
        .collect();
    pairs.sort_unstable();
    pairs
}

fn main() {
    // `cargo test --benches` runs every bench once as a smoke test with no arguments but
    // `--bench`; criterion's own flags are not ours, so nothing else is parsed.
    let sizes = env_list("GPU_SPH_BENCH_SIZES", &[1_000_000]);
    let repeat = env_list("GPU_SPH_BENCH_REPEAT", &[3])[0];
    let ctx = gpu_sph::gpu::GpuContext::new().map(std::sync::Arc::new);
    let adapter = match &ctx {
        Ok(c) => gpu_sph::gpu::context::describe(&c.info),
        Err(e) => format!("none ({e})"),
    };
    if ctx.is_err() && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() == Ok("1") {
        panic!("GPU_SPH_REQUIRE_GPU=1 but no GPU is usable: {adapter}");
    }
    println!(
        "pairs within r, {} rayon threads, adapter {adapter}",
        rayon::current_num_threads()
    );
    println!("| N | r | pairs | method | build ms | query ms | total ms | × grid CPU |");
    println!("|---|---|---|---|---|---|---|---|");
    for n in sizes {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let points: Vec<Vec3> = (0..n)
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()))
            .collect();
        let r = (NEIGHBOURS * 3.0 / (4.0 * std::f64::consts::PI * n as f64)).cbrt() as f32;
        let r2 = r * r;
        let wide = r2 * (1.0 + 1e-5);
        let arrays: Vec<[f32; 3]> = points.iter().map(|p| p.to_array()).collect();

        let (grid_build, search) = best(repeat, || NeighbourSearch::new(&points, r).unwrap());
        let (grid_query, mut reference) = best(repeat, || search.pairs());
        reference.sort_unstable();
        let grid_total = grid_build + grid_query;
        let mut rows = vec![("gpu-sph grid, CPU", grid_build, grid_query)];

        if let Ok(ctx) = &ctx {
            // The GPU builds its own grid from the points inside within_gpu: its time is the
            // whole call, build and rows together, read back to the host.
            let (ms, csr) = best(repeat, || search.within_gpu(ctx.clone()).unwrap());
            let gpu_rows: Vec<Vec<u32>> = (0..n).map(|i| csr.row(i).to_vec()).collect();
            assert!(
                keep(&points, r2, gpu_rows) == reference,
                "the GPU's pairs differ from the CPU grid's"
            );
            rows.push(("gpu-sph grid, GPU (build + rows)", 0.0, ms));
        }

        let (kd_build, tree) = best(repeat, || {
            ImmutableKdTree::<f32, u32, 3, 32>::new_from_slice(&arrays)
        });
        let (kd_query, kd_rows) = best(repeat, || {
            arrays
                .par_iter()
                .map(|q| {
                    tree.within_unsorted::<SquaredEuclidean>(q, wide)
                        .into_iter()
                        .map(|nb| nb.item)
                        .collect::<Vec<u32>>()
                })
                .collect::<Vec<_>>()
        });
        assert!(
            keep(&points, r2, kd_rows) == reference,
            "kiddo's pairs differ from the grid's"
        );
        rows.push(("kiddo 5 ImmutableKdTree", kd_build, kd_query));

        let (rs_build, rtree) = best(repeat, || {
            RTree::bulk_load(
                arrays
                    .iter()
                    .enumerate()
                    .map(|(i, p)| GeomWithData::new(*p, i as u32))
                    .collect(),
            )
        });
        let (rs_query, rs_rows) = best(repeat, || {
            arrays
                .par_iter()
                .map(|q| {
                    rtree
                        .locate_within_distance(*q, wide)
                        .map(|g| g.data)
                        .collect::<Vec<u32>>()
                })
                .collect::<Vec<_>>()
        });
        assert!(
            keep(&points, r2, rs_rows) == reference,
            "rstar's pairs differ from the grid's"
        );
        rows.push(("rstar 0.12 RTree (bulk load)", rs_build, rs_query));

        for (name, build, query) in rows {
            let total = build + query;
            println!(
                "| {n} | {r:.5} | {} | {name} | {build:.1} | {query:.1} | {total:.1} | {:.2} |",
                reference.len(),
                total / grid_total
            );
        }
    }
}
