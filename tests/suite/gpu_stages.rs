//! GPU stages on lavapipe (or any adapter): contract tests on hand-made inputs with exact
//! expected outputs, then randomized stage-by-stage parity with the CPU reference.

use crate::common;

use glam::Vec3;
use gpu_sph::gpu::GpuNeighbours;
use gpu_sph::params::{ConfigOverrides, SimParams, SphConfig};
use gpu_sph::scene::{Scene, SceneKind};
use gpu_sph::verify;
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

fn params(n: usize, h: f32, t: u32) -> SimParams {
    SphConfig::new(
        n as u32,
        ConfigOverrides {
            smoothing_radius: Some(h),
            table_size: Some(t),
            particle_mass: Some(1.0),
            ..Default::default()
        },
    )
    .unwrap()
    .sim_params()
}

/// The worked example of the stage docs: h = 1, T = 4, x = 0.5, 2.5, 0.7.
fn worked_example() -> Option<(GpuNeighbours, Vec<Vec3>)> {
    let ctx = common::gpu()?;
    let p = vec![
        Vec3::new(0.5, 0.5, 0.5),
        Vec3::new(2.5, 0.5, 0.5),
        Vec3::new(0.7, 0.5, 0.5),
    ];
    let g = GpuNeighbours::new(ctx, &params(3, 1.0, 4)).unwrap();
    g.upload_positions(&p);
    Some((g, p))
}

#[test]
fn hash_contract() {
    let Some((g, _)) = worked_example() else {
        return;
    };
    g.run(|g, e| {
        g.encode_clear(e);
        g.encode_hash(e);
    })
    .unwrap();
    let b = &g.bufs;
    assert_eq!(g.read_u32(&b.particle_slot, 3).unwrap(), [0, 2, 0]);
    assert_eq!(g.read_u32(&b.slot_start, 4).unwrap(), [2, 0, 1, 0]);
    let ranks = g.read_u32(&b.particle_rank, 3).unwrap();
    assert_eq!(ranks[1], 0);
    assert!(
        ranks[0] + ranks[2] == 1 && ranks[0] != ranks[2],
        "{ranks:?}"
    );
}

#[test]
fn hash_counts_are_cleared_between_builds() {
    let Some((g, _)) = worked_example() else {
        return;
    };
    for _ in 0..3 {
        g.run(|g, e| {
            g.encode_clear(e);
            g.encode_hash(e);
        })
        .unwrap();
    }
    assert_eq!(g.read_u32(&g.bufs.slot_start, 4).unwrap(), [2, 0, 1, 0]);
}

#[test]
fn scatter_order_density_contract() {
    let Some((g, _)) = worked_example() else {
        return;
    };
    let b = &g.bufs;
    g.write_u32(&b.particle_slot, &[0, 2, 0]);
    g.write_u32(&b.particle_rank, &[1, 0, 0]);
    g.write_u32(&b.slot_start, &[0, 2, 2, 3, 3]);
    g.run(|g, e| g.encode_scatter(e)).unwrap();
    assert_eq!(g.read_u32(&b.unordered_ids, 3).unwrap(), [2, 0, 1]);
    g.run(|g, e| g.encode_order(e)).unwrap();
    assert_eq!(g.read_u32(&b.sorted_ids, 3).unwrap(), [0, 2, 1]);

    // Density of the doc's two-particle example: h = 1, particles 0.5 apart, plus a third
    // particle 2.0 away that shares no neighbourhood.
    let ctx = common::gpu().unwrap();
    let mut prm = params(3, 1.0, 8);
    prm.density_scale = 1.0;
    let g = GpuNeighbours::new(ctx, &prm).unwrap();
    let p = [
        Vec3::new(0.0, 0.5, 0.5),
        Vec3::new(0.5, 0.5, 0.5),
        Vec3::new(2.5, 0.5, 0.5),
    ];
    assert_eq!(g.densities(&p).unwrap(), [1.421875, 1.421875, 1.0]);
}

#[test]
fn scan_contract_across_levels() {
    let Some(ctx) = common::gpu() else { return };
    // One level (T ≤ 2048), two (≤ 2048²), three (> 2048²).
    for (t, seed) in [
        (4u32, 1u64),
        (2048, 2),
        (4096, 3),
        (1 << 22, 4),
        (1 << 23, 5),
    ] {
        let g = GpuNeighbours::new(ctx.clone(), &params(1, 1.0, t)).unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let counts: Vec<u32> = (0..t).map(|_| rng.random_range(0..4u32)).collect();
        g.write_u32(&g.bufs.slot_start, &counts);
        g.run(|g, e| g.encode_scan(e)).unwrap();
        let got = g.read_u32(&g.bufs.slot_start, t as usize + 1).unwrap();
        assert_eq!(got, gpu_sph::grid::scan::scan(&counts), "T = {t}");
    }
}

/// Particle sets the parity tests run on.
fn particle_set(kind: &str, n: usize, h: f32, seed: u64) -> Vec<Vec3> {
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
    let mut unit = || {
        Vec3::new(
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
            rng.random_range(-1.0..1.0),
        )
    };
    match kind {
        "lattice" => Scene::new(SceneKind::Cube, n, h * 0.5, seed).positions,
        // Every particle inside one cell.
        "one-cell" => (0..n).map(|_| (unit() * 0.49 + 0.5) * h).collect(),
        // Coordinates exactly on multiples of h.
        "faces" => (0..n).map(|_| (unit() * 8.0).round() * h * 0.5).collect(),
        // Clusters on either side of the origin and 10⁴h away.
        "far" => (0..n)
            .map(|i| {
                let c = [
                    Vec3::ZERO,
                    Vec3::new(-1e4, 3e3, -7e3),
                    Vec3::new(9e3, -1e4, 1e4),
                ][i % 3]
                    * h;
                c + unit() * h * 4.0
            })
            .collect(),
        _ => unreachable!(),
    }
}

fn parity(kind: &str, n: usize, t: u32) {
    let Some(ctx) = common::gpu() else { return };
    let h = 0.02;
    let positions = particle_set(kind, n, h, n as u64 ^ t as u64);
    let prm = SphConfig::new(
        n as u32,
        ConfigOverrides {
            smoothing_radius: Some(h),
            table_size: Some(t),
            ..Default::default()
        },
    )
    .unwrap()
    .sim_params();
    let g = GpuNeighbours::new(ctx, &prm).unwrap();
    let report = verify::verify(&g, &positions, &prm, 1e-5).unwrap();
    assert!(report.pass, "{kind} N={n} T={t}\n{}", report.to_table());
}

#[test]
fn parity_small_sizes_every_table() {
    for n in [1, 63, 64, 65] {
        for t in [1, 2, 1024, 1 << 17, 1 << 22] {
            parity("lattice", n, t);
        }
    }
}

#[test]
fn parity_15071_every_table() {
    for t in [1, 2, 1024, 1 << 17, 1 << 22] {
        parity("lattice", 15071, t);
    }
}

#[test]
fn parity_100k() {
    for t in [1024, 1 << 17, 1 << 22] {
        parity("lattice", 100_000, t);
    }
}

#[test]
fn parity_awkward_sets() {
    for kind in ["one-cell", "faces", "far"] {
        for (n, t) in [(65, 1), (4000, 2), (15071, 1024), (15071, 1 << 17)] {
            parity(kind, n, t);
        }
    }
}

#[test]
fn densities_are_bitwise_repeatable() {
    let Some(ctx) = common::gpu() else { return };
    let positions = particle_set("faces", 20_000, 0.02, 9);
    let prm = params(positions.len(), 0.02, 1 << 12);
    let g = GpuNeighbours::new(ctx, &prm).unwrap();
    let a = g.densities(&positions).unwrap();
    let b = g.densities(&positions).unwrap();
    assert!(a.iter().zip(&b).all(|(x, y)| x.to_bits() == y.to_bits()));
}

#[test]
fn oversize_requests_fail_with_the_limit() {
    let Some(ctx) = common::gpu() else { return };
    let cap = gpu_sph::grid::gpu::capacity(&ctx.limits);
    let mut prm = params(1, 1.0, 1);
    prm.n = cap.max_particles + 1;
    let err = GpuNeighbours::new(ctx, &prm)
        .err()
        .expect("must fail")
        .to_string();
    assert!(
        err.contains(&format!("-n {} or fewer", cap.max_particles)),
        "{err}"
    );
}

#[test]
fn lavapipe_loop_budget_is_enforced() {
    let Some(ctx) = common::gpu() else { return };
    if !ctx.info.name.to_lowercase().contains("llvmpipe") {
        return; // Only llvmpipe ends long loops early.
    }
    // 300k particles in one cell: each query would walk all of them, past llvmpipe's limit.
    let n = 300_000;
    let positions = particle_set("one-cell", n, 0.02, 3);
    let prm = params(n, 0.02, 1 << 20);
    let g = GpuNeighbours::new(ctx, &prm).unwrap();
    let err = verify::verify(&g, &positions, &prm, 1e-5)
        .expect_err("must refuse")
        .to_string();
    assert!(err.contains("larger --table-size or use --cpu"), "{err}");
}
