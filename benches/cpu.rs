//! criterion benches of the CPU reference: `cpu/grid_build` and `cpu/density` on a jittered
//! lattice with spacing h/2 (about 30 neighbours per particle).
//!
//! `cargo bench --bench cpu`; `GPU_SPH_BENCH_SIZES=100000` to pick sizes.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gpu_sph::cpu::density;
use gpu_sph::grid::Grid;
use gpu_sph::grid::reorder::gather;
use gpu_sph::params::{ConfigOverrides, SphConfig};
use gpu_sph::scene::{Scene, SceneKind};

fn sizes() -> Vec<usize> {
    std::env::var("GPU_SPH_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![100_000, 1_000_000])
}

fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("cpu");
    group.sample_size(10);
    for n in sizes() {
        let h = 0.02;
        let cfg = SphConfig::new(
            n as u32,
            ConfigOverrides {
                smoothing_radius: Some(h),
                ..Default::default()
            },
        )
        .unwrap();
        let params = cfg.sim_params();
        // The cube scene is a lattice jittered by ±0.1 s; s = h/2.
        let positions = Scene::new(SceneKind::Cube, n, h * 0.5, 1).positions;
        group.throughput(Throughput::Elements(n as u64));
        // grid_build: hash, scan, scatter, and the reorder into slot order the density reads.
        group.bench_with_input(BenchmarkId::new("grid_build", n), &positions, |b, p| {
            b.iter(|| {
                let grid = Grid::build(p, &params);
                let sorted = gather(p, &grid.sorted_ids);
                (grid, sorted)
            })
        });
        let grid = Grid::build(&positions, &params);
        let sorted = gather(&positions, &grid.sorted_ids);
        group.bench_with_input(BenchmarkId::new("density", n), &sorted, |b, p| {
            b.iter(|| density::density(p, &grid.slot_start, &params))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    // No HTML plots: the figures that matter go to docs/benchmarks.md, and plotters' font
    // lookup (its ab_glyph feature is on for examples/validate.rs) has no font registered here.
    config = Criterion::default().without_plots();
    targets = cpu
}
criterion_main!(benches);
