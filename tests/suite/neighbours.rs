//! The neighbour-search library against brute force, exactly: radius queries, compressed rows,
//! pairs, boxes and overlapping spheres of varied radii, for points with negative and far-off
//! coordinates and tables from 1 slot up; the same in 2D (the plane's 9-cell query, discs).

use glam::{Vec2, Vec3};
use gpu_sph::grid::key::distance2;
use gpu_sph::neighbours::{NeighbourSearch, overlapping_discs, overlapping_spheres};
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

/// 2D points in a cluster of a few radii around an offset that may be negative or far away.
fn cloud_2d() -> impl Strategy<Value = (Vec<Vec2>, f32, u32)> {
    (
        0.05f32..2.0,
        prop::array::uniform2(-2000.0f32..2000.0),
        prop::collection::vec(prop::array::uniform2(-3.0f32..3.0), 0..120),
        prop::sample::select(vec![1u32, 2, 4, 8, 64, 0]),
    )
        .prop_map(|(r, offset, pts, t)| {
            let o = Vec2::from(offset);
            let pts = pts.into_iter().map(|p| o + Vec2::from(p) * r).collect();
            (pts, r, t)
        })
}

/// The 2D oracle: every point j ≠ skip with dx² + dy² < r², in f32, ascending.
fn brute_near_2d(points: &[Vec2], q: Vec2, r: f32, skip: Option<usize>) -> Vec<u32> {
    (0..points.len())
        .filter(|&j| {
            let d = q - points[j];
            Some(j) != skip && d.x * d.x + d.y * d.y < r * r
        })
        .map(|j| j as u32)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// The plane's grid (the two-prime hash of (cx, cy), 9 cells a query) answers rows, pairs,
    /// queries and overlapping discs exactly as brute force in 2D, on tables from one slot up.
    #[test]
    fn planar_rows_pairs_queries_and_discs_equal_brute_force(
        (points, r, t) in cloud_2d(),
        q in prop::collection::vec(prop::array::uniform2(-3.0f32..3.0), 1..6),
        scale in prop::collection::vec(1.0f32..8.0, 120),
    ) {
        let s = match t {
            0 => NeighbourSearch::planar(&points, r).unwrap(),
            t => NeighbourSearch::planar_with_table_size(&points, r, t).unwrap(),
        };
        prop_assert!(s.is_planar());
        let rows = s.within().unwrap();
        let mut pairs = Vec::new();
        for i in 0..points.len() {
            let want = brute_near_2d(&points, points[i], r, Some(i));
            prop_assert_eq!(rows.row(i), &want[..], "point {}", i);
            pairs.extend(want.iter().filter(|&&j| j as usize > i).map(|&j| (i as u32, j)));
        }
        prop_assert_eq!(s.pairs(), pairs);
        let o = points.first().copied().unwrap_or(Vec2::ZERO);
        let queries: Vec<Vec2> = q.into_iter().map(|p| o + Vec2::from(p) * r).collect();
        let found = s.query_planar(&queries).unwrap();
        for (k, &qk) in queries.iter().enumerate() {
            prop_assert_eq!(found.row(k), &brute_near_2d(&points, qk, r, None)[..]);
        }
        let radii: Vec<f32> = points.iter().zip(&scale).map(|(_, s)| 0.1 * r * s).collect();
        let mut want = Vec::new();
        for i in 0..points.len() {
            for j in i + 1..points.len() {
                let (d, sum) = (points[i] - points[j], radii[i] + radii[j]);
                if d.x * d.x + d.y * d.y < sum * sum {
                    want.push((i as u32, j as u32));
                }
            }
        }
        prop_assert_eq!(overlapping_discs(&points, &radii).unwrap(), want);
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
    // 2D points (the plane z = 0): the GPU's walk of the 27 cells finds the rows of the CPU's 9
    // (no point lies off the plane).
    let plane = |p: Vec<Vec3>| -> Vec<Vec2> { p.iter().map(|q| q.truncate()).collect() };
    let planar = [
        (plane(cloud(3000, Vec3::ZERO, 0.02)), 0.02, 0u32),
        (
            plane(cloud(400, Vec3::new(-50.0, 20.0, 0.0), 0.05)),
            0.05,
            1,
        ),
    ];
    let searches = cases
        .into_iter()
        .map(|(p, r, t)| (p.len(), r, search(&p, r, t)))
        .chain(planar.into_iter().map(|(p, r, t)| {
            let s = match t {
                0 => NeighbourSearch::planar(&p, r).unwrap(),
                t => NeighbourSearch::planar_with_table_size(&p, r, t).unwrap(),
            };
            (p.len(), r, s)
        }));
    for (n, r, s) in searches {
        let cpu = s.within().unwrap();
        let gpu = s.within_gpu(ctx.clone()).unwrap();
        assert_eq!(
            gpu,
            cpu,
            "N = {n}, r = {r}, T = {}, planar {}",
            s.table_size(),
            s.is_planar()
        );
    }
}
