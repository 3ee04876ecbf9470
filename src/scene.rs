//! Initial particle sets. Every scene fills itself with exactly the requested N particles at
//! spacing s, deterministically for a given seed.

use glam::{UVec3, Vec3};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

/// The built-in scenes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum SceneKind {
    /// A water column of width a and height 2a, spanning the tank's depth, against the left
    /// wall of a tank 5a long (Martin & Moyce 1952).
    DamBreak,
    /// A jittered cubic lattice sitting on the floor in the middle of the tank.
    Cube,
    /// Random positions filling a box at a mean spacing s, none closer than 0.8 s (a random
    /// hard-sphere packing).
    Random,
    /// A block of water above a pool.
    Drop,
}

/// Particles plus the tank that holds them.
#[derive(Clone, Debug)]
pub struct Scene {
    /// Initial positions, metres.
    pub positions: Vec<Vec3>,
    /// Initial velocities, m/s.
    pub velocities: Vec<Vec3>,
    /// Lower corner of the tank.
    pub tank_min: Vec3,
    /// Upper corner of the tank.
    pub tank_max: Vec3,
    /// Size of the initial fluid body (for the dam break: a × H × depth).
    pub fluid_size: Vec3,
}

/// The first `count` points of an `dims` lattice with spacing `s`, cell-centred from `origin`,
/// filled x fastest and y slowest (so a partial last layer sits on top).
fn lattice(origin: Vec3, dims: UVec3, s: f32, count: usize) -> Vec<Vec3> {
    let mut out = Vec::with_capacity(count);
    'fill: for j in 0..dims.y {
        for k in 0..dims.z {
            for i in 0..dims.x {
                if out.len() == count {
                    break 'fill;
                }
                out.push(origin + (Vec3::new(i as f32, j as f32, k as f32) + 0.5) * s);
            }
        }
    }
    out
}

fn div_ceil(a: usize, b: usize) -> u32 {
    a.div_ceil(b.max(1)) as u32
}

/// The closest two particles of the random scene may be, as a fraction of the spacing.
pub const RANDOM_MIN_DISTANCE: f32 = 0.8;

/// `n` points uniformly random in the cube [0, side)³ (side³ = n s³), none closer than
/// [`RANDOM_MIN_DISTANCE`]·s to another: random sequential addition (Widom 1966), the
/// hard-sphere fluid a liquid's particles resemble, at a packing fraction π/6 · 0.8³ ≈ 0.27,
/// below RSA's jamming limit of about 0.38 (Cooper 1988), so it always fills. Points closer
/// than that would start the fluid at many times ρ0 and blow it apart in its first step.
/// Candidates are checked against a grid of cells one distance wide; after 10 000 failed tries
/// in a row (never seen) the distance shrinks by 1%, so the scene always has N particles.
fn random_packing(rng: &mut Xoshiro256PlusPlus, n: usize, side: f32, s: f32) -> Vec<Vec3> {
    let mut d = RANDOM_MIN_DISTANCE * s;
    let dims = ((side / d).floor() as usize).max(1);
    let cell = side / dims as f32;
    let key = |p: Vec3| {
        (p / cell)
            .floor()
            .as_ivec3()
            .clamp(glam::IVec3::ZERO, glam::IVec3::splat(dims as i32 - 1))
    };
    let mut cells: Vec<Vec<u32>> = vec![Vec::new(); dims * dims * dims];
    let index = |c: glam::IVec3| (c.x as usize * dims + c.y as usize) * dims + c.z as usize;
    let mut out: Vec<Vec3> = Vec::with_capacity(n);
    let mut failures = 0;
    while out.len() < n {
        let p = Vec3::new(
            rng.random_range(0.0..side),
            rng.random_range(0.0..side),
            rng.random_range(0.0..side),
        );
        let c = key(p);
        let mut clear = true;
        'search: for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let q = c + glam::IVec3::new(dx, dy, dz);
                    if q.cmplt(glam::IVec3::ZERO).any()
                        || q.cmpge(glam::IVec3::splat(dims as i32)).any()
                    {
                        continue;
                    }
                    if cells[index(q)]
                        .iter()
                        .any(|&j| out[j as usize].distance_squared(p) < d * d)
                    {
                        clear = false;
                        break 'search;
                    }
                }
            }
        }
        if clear {
            cells[index(c)].push(out.len() as u32);
            out.push(p);
            failures = 0;
        } else {
            failures += 1;
            if failures == 10_000 {
                // Cells stay at least d wide, so the 27-cell search still finds every
                // neighbour closer than the new d.
                d *= 0.99;
                failures = 0;
            }
        }
    }
    out
}

impl Scene {
    /// Builds scene `kind` with `n` particles at spacing `s`.
    pub fn new(kind: SceneKind, n: usize, s: f32, seed: u64) -> Self {
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
        let cbrt = |x: f64| x.cbrt().round().max(1.0) as u32;
        match kind {
            SceneKind::DamBreak => {
                // a = nx·s, depth = nz·s ≈ a, height = ny·s ≈ 2a.
                let nx = cbrt(n as f64 / 2.0);
                let nz = ((n as f64 / (2.0 * (nx * nx) as f64)).round() as u32).max(1);
                let ny = div_ceil(n, (nx * nz) as usize);
                let positions = lattice(Vec3::ZERO, UVec3::new(nx, ny, nz), s, n);
                let a = nx as f32 * s;
                let size = Vec3::new(a, ny as f32 * s, nz as f32 * s);
                Self::still(
                    positions,
                    Vec3::ZERO,
                    Vec3::new(5.0 * a, 1.5 * size.y.max(2.0 * a), size.z),
                    size,
                )
            }
            SceneKind::Cube => {
                let m = (n as f64).cbrt().ceil().max(1.0) as u32;
                let side = m as f32 * s;
                let origin = Vec3::new(side * 0.5, 0.0, side * 0.5);
                let mut positions = lattice(origin, UVec3::splat(m), s, n);
                for p in &mut positions {
                    let jitter = Vec3::new(
                        rng.random_range(-0.1..0.1),
                        rng.random_range(-0.1..0.1),
                        rng.random_range(-0.1..0.1),
                    );
                    *p += jitter * s;
                }
                Self::still(
                    positions,
                    Vec3::ZERO,
                    Vec3::new(2.0, 2.0, 2.0) * side,
                    Vec3::splat(side),
                )
            }
            SceneKind::Random => {
                // Half a spacing clear of every wall, where the walls keep particles anyway.
                let side = (n as f32).cbrt() * s;
                let positions = random_packing(&mut rng, n, side, s)
                    .into_iter()
                    .map(|p| p + 0.5 * s)
                    .collect();
                Self::still(
                    positions,
                    Vec3::ZERO,
                    Vec3::splat(side + s),
                    Vec3::splat(side),
                )
            }
            SceneKind::Drop => {
                // Two thirds of the particles form the pool, one third the block.
                let n_block = n / 3;
                let n_pool = n - n_block;
                let nx = cbrt(n_pool as f64 / 0.25).max(2);
                let pool_layers = div_ceil(n_pool, (nx * nx) as usize);
                let width = nx as f32 * s;
                let pool_h = pool_layers as f32 * s;
                let mut positions = lattice(Vec3::ZERO, UVec3::new(nx, pool_layers, nx), s, n_pool);
                let nb = (n_block as f64).cbrt().ceil() as u32;
                let block = nb as f32 * s;
                let origin =
                    Vec3::new((width - block) * 0.5, pool_h + block, (width - block) * 0.5);
                positions.extend(lattice(origin, UVec3::splat(nb), s, n_block));
                let height = pool_h + 3.0 * block.max(s);
                Self::still(
                    positions,
                    Vec3::ZERO,
                    Vec3::new(width, height, width),
                    Vec3::new(width, pool_h + 2.0 * block, width),
                )
            }
        }
    }

    fn still(positions: Vec<Vec3>, tank_min: Vec3, tank_max: Vec3, fluid_size: Vec3) -> Self {
        let velocities = vec![Vec3::ZERO; positions.len()];
        Self {
            positions,
            velocities,
            tank_min,
            tank_max,
            fluid_size,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KINDS: [SceneKind; 4] = [
        SceneKind::DamBreak,
        SceneKind::Cube,
        SceneKind::Random,
        SceneKind::Drop,
    ];

    #[test]
    fn every_scene_has_exactly_n_particles_inside_its_tank() {
        for kind in KINDS {
            for n in [1, 2, 7, 1000, 12345] {
                let sc = Scene::new(kind, n, 0.01, 1);
                assert_eq!(sc.positions.len(), n, "{kind:?} n={n}");
                for p in &sc.positions {
                    assert!(
                        p.cmpge(sc.tank_min).all() && p.cmple(sc.tank_max).all(),
                        "{kind:?} n={n} {p}"
                    );
                }
            }
        }
    }

    #[test]
    fn scenes_are_deterministic_by_seed() {
        for kind in KINDS {
            let a = Scene::new(kind, 500, 0.01, 7).positions;
            assert_eq!(a, Scene::new(kind, 500, 0.01, 7).positions);
        }
        assert_ne!(
            Scene::new(SceneKind::Random, 50, 0.01, 1).positions,
            Scene::new(SceneKind::Random, 50, 0.01, 2).positions
        );
    }

    #[test]
    fn random_particles_keep_their_distance() {
        let s = 0.01;
        let sc = Scene::new(SceneKind::Random, 3000, s, 3);
        let p = &sc.positions;
        let closest = (0..p.len())
            .flat_map(|i| (i + 1..p.len()).map(move |j| (i, j)))
            .map(|(i, j)| p[i].distance(p[j]))
            .fold(f32::INFINITY, f32::min);
        assert!(closest >= RANDOM_MIN_DISTANCE * s * 0.99, "{closest}");
    }

    #[test]
    fn dam_break_column_is_twice_as_high_as_wide() {
        let sc = Scene::new(SceneKind::DamBreak, 100_000, 0.01, 0);
        let a = sc.fluid_size.x;
        assert!(
            (sc.fluid_size.y / a - 2.0).abs() < 0.05,
            "{}",
            sc.fluid_size
        );
        assert!(sc.tank_max.x >= 5.0 * a);
        assert_eq!(sc.tank_max.z, sc.fluid_size.z);
    }
}
