//! The CPU grid against the brute-force O(N²) oracle: every particle's neighbour set must be
//! exactly the oracle's, and densities must agree within 1e-5 relative.

use glam::Vec3;
use gpu_sph::cpu::density;
use gpu_sph::grid::Grid;
use gpu_sph::grid::oracle;
use gpu_sph::grid::reorder::gather;
use gpu_sph::params::{ConfigOverrides, SimParams, SphConfig};
use proptest::prelude::*;

fn params(n: usize, h: f32, t: u32) -> SimParams {
    let cfg = SphConfig::new(
        n.max(1) as u32,
        ConfigOverrides {
            smoothing_radius: Some(h),
            table_size: Some(t),
            particle_mass: Some(0.001),
            ..Default::default()
        },
    )
    .unwrap();
    SimParams {
        n: n as u32,
        ..cfg.sim_params()
    }
}

fn check(positions: &[Vec3], h: f32, t: u32) -> Result<(), TestCaseError> {
    let prm = params(positions.len(), h, t);
    let grid = Grid::build(positions, &prm);
    let sorted = gather(positions, &grid.sorted_ids);
    let want = oracle::neighbours(positions, h);
    for (k, &id) in grid.sorted_ids.iter().enumerate() {
        let got = density::neighbours(k, &sorted, &grid.slot_start, &grid.sorted_ids, &prm);
        prop_assert_eq!(
            &got,
            &want[id as usize],
            "neighbours of particle {} at {}",
            id,
            positions[id as usize]
        );
    }
    let by_slot = density::density(&sorted, &grid.slot_start, &prm).density;
    let mut got = vec![0.0f32; by_slot.len()];
    for (&id, &d) in grid.sorted_ids.iter().zip(&by_slot) {
        got[id as usize] = d;
    }
    let want = oracle::densities(positions, h, 0.001);
    for (i, (&g, &w)) in got.iter().zip(&want).enumerate() {
        prop_assert!(g.is_finite(), "density {} is {}", i, g);
        let rel = (g as f64 - w).abs() / w.abs();
        prop_assert!(
            rel <= 1e-5,
            "density {}: grid {} oracle {} rel {:e}",
            i,
            g,
            w,
            rel
        );
    }
    Ok(())
}

/// One particle: a cluster centre plus an offset, optionally snapped onto a cell face.
fn particle(h: f32, centres: Vec<Vec3>, spread: f32) -> impl Strategy<Value = Vec3> {
    let n_centres = centres.len();
    (
        0..n_centres,
        prop::array::uniform3(-1.0f32..1.0),
        prop::array::uniform3(0u8..4),
    )
        .prop_map(move |(c, off, snap)| {
            let mut p = centres[c] + Vec3::from(off) * spread;
            for axis in 0..3 {
                // A quarter of the coordinates sit exactly on a multiple of h (a cell face).
                if snap[axis] == 0 {
                    p[axis] = (p[axis] / h).round() * h;
                }
            }
            p
        })
}

fn scenario() -> impl Strategy<Value = (Vec<Vec3>, f32, u32)> {
    // h: powers of two (cell faces exact in binary) and arbitrary values.
    let h = prop_oneof![Just(0.25f32), Just(1.0f32), Just(0.0625f32), 0.005f32..3.0];
    (h, 0u32..=14, 0usize..=3000, 1usize..=3, 0.3f32..4.0).prop_flat_map(
        |(h, log_t, n, n_centres, per_h)| {
            // Centres anywhere from the origin to 1e4·h away, either sign.
            let far = 1.0e4 * h;
            let centres = prop::collection::vec(prop::array::uniform3(-far..far), n_centres)
                .prop_map(move |cs| {
                    let mut cs: Vec<Vec3> = cs.into_iter().map(Vec3::from).collect();
                    cs[0] = Vec3::ZERO;
                    cs
                });
            // Cluster half-width chosen so neighbour counts range from a handful to hundreds.
            let spread = h * per_h * ((n as f32 / n_centres as f32).cbrt() * 0.5).max(1.0);
            (centres, Just(h), Just(1u32 << log_t), Just(n), Just(spread)).prop_flat_map(
                |(centres, h, t, n, spread)| {
                    (
                        prop::collection::vec(particle(h, centres, spread), n),
                        Just(h),
                        Just(t),
                    )
                },
            )
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn grid_matches_brute_force((positions, h, t) in scenario()) {
        check(&positions, h, t)?;
    }
}

#[test]
fn all_particles_in_one_cell() {
    let h = 0.5;
    let p: Vec<Vec3> = (0..500)
        .map(|i| {
            Vec3::new(
                0.01 + (i % 10) as f32 * 0.04,
                0.01 + (i / 10 % 10) as f32 * 0.04,
                0.1 + (i / 100) as f32 * 0.05,
            )
        })
        .collect();
    for t in [1, 2, 64, 1 << 14] {
        check(&p, h, t).unwrap();
    }
}

#[test]
fn lattice_exactly_on_cell_faces_with_far_offsets() {
    let h = 0.25;
    for origin in [Vec3::ZERO, Vec3::new(-2500.0, 2500.0, -1250.0)] {
        let p: Vec<Vec3> = (0..1000)
            .map(|i| {
                origin
                    + Vec3::new((i % 10) as f32, (i / 10 % 10) as f32, (i / 100) as f32) * (h * 0.5)
            })
            .collect();
        for t in [1, 8, 4096] {
            check(&p, h, t).unwrap();
        }
    }
}

#[test]
fn empty_and_single() {
    check(&[], 0.1, 16).unwrap();
    check(&[Vec3::new(-3.0, 2.0, 1e3)], 0.1, 1).unwrap();
}
