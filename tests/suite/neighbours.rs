//! The neighbour-search library against brute force, exactly: radius queries, compressed rows,
//! pairs, boxes and overlapping spheres of varied radii, for points with negative and far-off
//! coordinates and tables from 1 slot up.

use glam::Vec3;
use gpu_sph::grid::key::distance2;
use gpu_sph::neighbours::{NeighbourSearch, overlapping_spheres};
use proptest::prelude::*;

/// Points in a cluster of a few radii around an offset that may be negative or far away.
fn cloud() -> impl Strategy<Value = (Vec<Vec3>, f32, u32)> {
    (
        0.05f32..2.0,
        prop::array::uniform3(-2000.0f32..2000.0),
        prop::collection::vec(prop::array::uniform3(-3.0f32..3.0), 0..80),
        prop::sample::select(vec![1u32, 2, 4, 8, 64, 0]),
    )
        .prop_map(|(r, offset, pts, t)| {
            let o = Vec3::from(offset);
            let pts = pts.into_iter().map(|p| o + Vec3::from(p) * r).collect();
            (pts, r, t)
        })
}

fn search(points: &[Vec3], r: f32, t: u32) -> NeighbourSearch {
    if t == 0 {
        NeighbourSearch::new(points, r).unwrap()
    } else {
        NeighbourSearch::with_table_size(points, r, t).unwrap()
    }
}

fn brute_near(points: &[Vec3], q: Vec3, r: f32, skip: Option<usize>) -> Vec<u32> {
    (0..points.len())
        .filter(|&j| Some(j) != skip && distance2(q, points[j]) < r * r)
        .map(|j| j as u32)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn radius_rows_and_pairs_equal_brute_force((points, r, t) in cloud()) {
        let s = search(&points, r, t);
        let rows = s.within().unwrap();
        prop_assert_eq!(rows.rows(), points.len());
        let mut pairs = Vec::new();
        for i in 0..points.len() {
            let want = brute_near(&points, points[i], r, Some(i));
            prop_assert_eq!(rows.row(i), &want[..], "point {}", i);
            pairs.extend(want.iter().filter(|&&j| j as usize > i).map(|&j| (i as u32, j)));
        }
        prop_assert_eq!(s.pairs(), pairs);
    }

    #[test]
    fn queries_and_boxes_equal_brute_force(
        (points, r, t) in cloud(),
        q in prop::collection::vec(prop::array::uniform3(-3.0f32..3.0), 1..6),
        corner in prop::array::uniform3(-3.0f32..3.0),
        extent in prop::array::uniform3(0.0f32..4.0),
    ) {
        let s = search(&points, r, t);
        let o = points.first().copied().unwrap_or(Vec3::ZERO);
        let queries: Vec<Vec3> = q.into_iter().map(|p| o + Vec3::from(p) * r).collect();
        let rows = s.query(&queries).unwrap();
        for (k, &qk) in queries.iter().enumerate() {
            prop_assert_eq!(rows.row(k), &brute_near(&points, qk, r, None)[..]);
        }
        let lo = o + Vec3::from(corner) * r;
        let hi = lo + Vec3::from(extent) * r;
        let want: Vec<u32> = (0..points.len() as u32)
            .filter(|&i| {
                let p = points[i as usize];
                p.cmpge(lo).all() && p.cmple(hi).all()
            })
            .collect();
        prop_assert_eq!(s.in_box(lo, hi).unwrap(), want);
    }

    #[test]
    fn overlapping_spheres_of_radii_up_to_8_to_1_equal_brute_force(
        (points, r, _t) in cloud(),
        scale in prop::collection::vec(1.0f32..8.0, 80),
    ) {
        let radii: Vec<f32> = points.iter().zip(&scale).map(|(_, s)| 0.1 * r * s).collect();
        let mut want = Vec::new();
        for i in 0..points.len() {
            for j in i + 1..points.len() {
                let sum = radii[i] + radii[j];
                if distance2(points[i], points[j]) < sum * sum {
                    want.push((i as u32, j as u32));
                }
            }
        }
        prop_assert_eq!(overlapping_spheres(&points, &radii).unwrap(), want);
    }
}

#[test]
fn a_large_box_falls_back_to_testing_every_point() {
    let points: Vec<Vec3> = (0..10).map(|i| Vec3::splat(i as f32)).collect();
    let s = NeighbourSearch::new(&points, 0.01).unwrap();
    assert_eq!(
        s.in_box(Vec3::splat(-100.0), Vec3::splat(4.5)).unwrap(),
        vec![0, 1, 2, 3, 4]
    );
}

use crate::common;

/// The GPU's rows equal the CPU's, bit for bit (integers), on several clouds: a point alone,
/// N = 64 and 65 around one workgroup's edge, far from the origin, a one-slot table, and a
/// larger set.
#[test]
fn gpu_rows_equal_the_cpu_rows() {
    let Some(ctx) = common::gpu() else { return };
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};
    let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
    let mut cloud = |n: usize, offset: Vec3, r: f32| -> Vec<Vec3> {
        (0..n)
            .map(|_| {
                offset
                    + Vec3::new(
                        rng.random_range(-3.0..3.0),
                        rng.random_range(-3.0..3.0),
                        rng.random_range(-3.0..3.0),
                    ) * r
            })
            .collect()
    };
    let cases = [
        (cloud(1, Vec3::ZERO, 0.1), 0.1, 0u32),
        (cloud(64, Vec3::ZERO, 0.1), 0.1, 0),
        (cloud(65, Vec3::splat(-7.0), 0.1), 0.1, 0),
        (cloud(500, Vec3::new(1500.0, -800.0, 40.0), 0.5), 0.5, 0),
        (cloud(300, Vec3::ZERO, 0.05), 0.05, 1),
        (cloud(5000, Vec3::ZERO, 0.02), 0.02, 0),
        (Vec::new(), 0.1, 0),
    ];
    for (points, r, t) in cases {
        let s = search(&points, r, t);
        let cpu = s.within().unwrap();
        let gpu = s.within_gpu(ctx.clone()).unwrap();
        assert_eq!(
            gpu,
            cpu,
            "N = {}, r = {r}, T = {}",
            points.len(),
            s.table_size()
        );
    }
}
