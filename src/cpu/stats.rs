//! Stage `stats`, the CPU mirror of `shaders/stats.wgsl`: a step's statistics reduced to a
//! [`StatsBlock`] of 104 bytes, which a headless run folds on the host from the GPU's blocks of
//! 256 particles ([`fold_blocks`]), the only thing it reads back per step.
//!
//! Inputs: the state the step ends with (positions, velocities, ids, densities, all in one
//! order), the fluid parameters, the step's dt and, for DFSPH, its statistics block. Per
//! particle: |v|² = (vx² + vy²) + vz², the height above the floor y − y_floor, ρ, the
//! compression max(ρ − ρ0, 0) (summed and maximal), the energy the Tait equation of state
//! stores ([`eos_energy`], summed), the front x, whether it lies outside the
//! tank, and which of its position, velocity and density is non-finite (read from the exponent
//! bits: WGSL may assume floats are finite, so `isnan` can be folded away).
//!
//! The reduction is a fixed tree, the same on both paths, so both print the same bits: blocks
//! of 256 particles halve pairwise (s[l] ∘= s[l + half], half = 128 … 1), then one workgroup's
//! lane l folds blocks l, l + 256, … in order and the tree runs again. Sums pad with 0; maxima
//! and minima pad with the first value of the set (taking an element twice changes neither),
//! so no infinity is ever needed. The ids of the densest and the fastest particle ride along
//! with their maxima (the smaller id on a tie), so a divergence check can name the particle.
//!
//! Worked example: two particles at rest, ρ = 1001 and 999 kg/m³ (ρ0 = 1000), heights 0.1 and
//! 0.3 m: Σ|v|² = 0, Σ(y − y_floor) = 0.4, Σρ = 2000, Σ max(ρ − ρ0, 0) = 1, max ρ = 1001,
//! min ρ = 999, Σẽ = ẽ(1.001) ≈ 3.502e-6 (999 stores none).

use glam::Vec3;

use crate::core::SolverStats;
pub use crate::core::stats::{BAD_DENSITY, BAD_POSITION, BAD_VELOCITY, StatsBlock};
use crate::params::{FluidParams, REDUCE_BLOCK};

const B: usize = REDUCE_BLOCK as usize;

/// One particle's contribution.
#[derive(Clone, Copy)]
struct Item {
    sums: [f32; 4],
    maxima: [f32; 4],
    min: f32,
    outside: u32,
    bad: u32,
    first_bad: u32,
    ids: [u32; 2],
    eos: f32,
    power: f32,
}

impl Item {
    /// A block as `stats_blocks` stores it: sums, maxima, (min ρ bits, outside, non-finite
    /// bits, first bad id), (the two ids, Σẽ bits, power bits).
    fn from_words(w: &[u32; 16]) -> Self {
        let f = |k: usize| f32::from_bits(w[k]);
        Item {
            sums: [f(0), f(1), f(2), f(3)],
            maxima: [f(4), f(5), f(6), f(7)],
            min: f(8),
            outside: w[9],
            bad: w[10],
            first_bad: w[11],
            ids: [w[12], w[13]],
            eos: f(14),
            power: f(15),
        }
    }
}

/// Whether `x` is finite, from its exponent bits as the shader tests it.
#[inline]
pub fn finite_bits(x: f32) -> bool {
    x.to_bits() & 0x7f80_0000 != 0x7f80_0000
}

/// The energy the Tait equation of state p = B((ρ/ρ0)⁷ − 1)⁺ stores in a particle of mass m,
/// m ∫ p/ρ² dρ from ρ0, in units of m B / ρ0: with x = ρ/ρ0,
/// ∫₁ˣ (y⁷ − 1)/y² dy = (x⁷ − 7x + 6)/(6x) = (x − 1)²(x⁵ + 2x⁴ + 3x³ + 4x² + 5x + 6)/(6x), taken
/// in the factored form, which does not cancel near x = 1; 0 below ρ0, where the pressure is
/// clamped. Counting it makes a compressed start's stored energy part of the total, so its
/// release is not mistaken for a gain (Monaghan 1994, §5: the thermal energy of a barotropic
/// fluid). Example: x = 1.01 → 1e-4 · 21.3535 / 6.06 ≈ 3.5237e-4.
#[inline]
pub fn eos_energy(rho: f32, fp: &FluidParams) -> f32 {
    let x = rho / fp.rest_density;
    let d = x - 1.0;
    let poly = ((((x + 2.0) * x + 3.0) * x + 4.0) * x + 5.0) * x + 6.0;
    if x > 1.0 {
        d * d * poly / (6.0 * x)
    } else {
        0.0
    }
}

fn item(x: Vec3, v: Vec3, rho: f32, id: u32, power: f32, fp: &FluidParams) -> Item {
    let lo = Vec3::from_slice(&fp.tank_min[..3]);
    let hi = Vec3::from_slice(&fp.tank_max[..3]);
    let fin = |a: Vec3| finite_bits(a.x) && finite_bits(a.y) && finite_bits(a.z);
    let bad = if fin(x) { 0 } else { BAD_POSITION }
        | if fin(v) { 0 } else { BAD_VELOCITY }
        | if finite_bits(rho) { 0 } else { BAD_DENSITY };
    let v2 = v.x * v.x + v.y * v.y + v.z * v.z;
    let err = (rho - fp.rest_density).max(0.0);
    let inside = x.cmpge(lo).all() && x.cmple(hi).all();
    Item {
        sums: [v2, x.y - lo.y, rho, err],
        maxima: [v2, rho, x.x, err],
        min: rho,
        outside: !inside as u32,
        bad,
        first_bad: if bad != 0 { id } else { u32::MAX },
        ids: [id, id],
        eos: eos_energy(rho, fp),
        power: fp.mass * power,
    }
}

/// The id that goes with the larger of `va` and `vb` (the smaller id on a tie).
fn arg_max(va: f32, ia: u32, vb: f32, ib: u32) -> u32 {
    if va == vb {
        ia.min(ib)
    } else if vb > va {
        ib
    } else {
        ia
    }
}

/// `a` folded with `b`, each quantity with its own operation.
fn combine(a: Item, b: Item) -> Item {
    let mut out = a;
    for q in 0..4 {
        out.sums[q] = a.sums[q] + b.sums[q];
        out.maxima[q] = a.maxima[q].max(b.maxima[q]);
    }
    out.min = a.min.min(b.min);
    out.outside = a.outside + b.outside;
    out.bad = a.bad | b.bad;
    out.first_bad = a.first_bad.min(b.first_bad);
    out.ids = [
        arg_max(a.maxima[1], a.ids[0], b.maxima[1], b.ids[0]),
        arg_max(a.maxima[0], a.ids[1], b.maxima[0], b.ids[1]),
    ];
    out.eos = a.eos + b.eos;
    out.power = a.power + b.power;
    out
}

/// The neutral padding of a set whose first element is `first`: zero sums, the first
/// element's extremes.
fn padding(first: Item) -> Item {
    Item {
        sums: [0.0; 4],
        outside: 0,
        bad: 0,
        first_bad: u32::MAX,
        eos: 0.0,
        power: 0.0,
        ..first
    }
}

/// The pairwise-halving tree of one workgroup.
fn tree(s: &mut [Item; B]) -> Item {
    let mut half = B / 2;
    while half > 0 {
        for l in 0..half {
            s[l] = combine(s[l], s[l + half]);
        }
        half >>= 1;
    }
    s[0]
}

/// The statistics block of a state (`pos`, `vel`, `id`, `density` in one order, N ≥ 1).
pub fn stats_block(
    pos: &[Vec3],
    vel: &[Vec3],
    id: &[u32],
    density: &[f32],
    fp: &FluidParams,
    dt: f32,
    dfsph: Option<&SolverStats>,
) -> StatsBlock {
    stats_block_with_power(pos, vel, id, density, None, fp, dt, dfsph)
}

/// [`stats_block`] with the power the moving obstacles put into each particle (per unit mass,
/// W/kg, the same order; `None` for none), summed times m into [`StatsBlock::power`].
#[allow(clippy::too_many_arguments)]
pub fn stats_block_with_power(
    pos: &[Vec3],
    vel: &[Vec3],
    id: &[u32],
    density: &[f32],
    power: Option<&[f32]>,
    fp: &FluidParams,
    dt: f32,
    dfsph: Option<&SolverStats>,
) -> StatsBlock {
    let n = pos.len();
    // Block by block, so no per-particle array is ever held (N × 60 bytes at 4M particles
    // would be 240 MB).
    let blocks: Vec<Item> = (0..n)
        .step_by(B)
        .map(|first| {
            let at = |k: usize| {
                let p = power.map_or(0.0, |p| p[k]);
                item(pos[k], vel[k], density[k], id[k], p, fp)
            };
            let mut s = [padding(at(first)); B];
            for (l, k) in (first..n.min(first + B)).enumerate() {
                s[l] = at(k);
            }
            tree(&mut s)
        })
        .collect();
    second_level(&blocks, n as u32, dt, dfsph)
}

/// Stage `stats`' second level on the host (the GPU's `stats_blocks` leave one 16-word block
/// per 256 particles, which the host reads back and folds here, so no pass of one workgroup
/// runs on the device): the block of N = `n` particles from its `blocks`, with the step's
/// `dt` and DFSPH's block.
pub fn fold_blocks(
    blocks: &[[u32; 16]],
    n: u32,
    dt: f32,
    dfsph: Option<&SolverStats>,
) -> StatsBlock {
    let items: Vec<Item> = blocks.iter().map(Item::from_words).collect();
    second_level(&items, n, dt, dfsph)
}

// Lane l folds blocks l, l + 256, … in order, starting from the padding, then the tree.
fn second_level(blocks: &[Item], n: u32, dt: f32, dfsph: Option<&SolverStats>) -> StatsBlock {
    let mut s = [padding(blocks[0]); B];
    for (j, b) in blocks.iter().enumerate() {
        s[j % B] = combine(s[j % B], *b);
    }
    let r = tree(&mut s);
    StatsBlock {
        sums: r.sums,
        maxima: r.maxima,
        density_min: r.min,
        outside: r.outside,
        non_finite: r.bad,
        first_bad_id: r.first_bad,
        dt,
        n,
        density_max_id: r.ids[0],
        speed_max_id: r.ids[1],
        eos: r.eos,
        power: r.power,
        solver: dfsph.map(SolverStats::to_words).unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{PhysicsConfig, SphConfig};

    fn fp() -> FluidParams {
        let cfg = SphConfig::new(2, Default::default()).unwrap();
        PhysicsConfig::default()
            .fluid_params(&cfg, Vec3::ZERO, Vec3::ONE, 1.0)
            .unwrap()
    }

    #[test]
    fn worked_example() {
        let b = stats_block(
            &[Vec3::new(0.5, 0.1, 0.5), Vec3::new(0.5, 0.3, 0.5)],
            &[Vec3::ZERO; 2],
            &[0, 1],
            &[1001.0, 999.0],
            &fp(),
            1e-3,
            None,
        );
        assert_eq!(b.sums, [0.0, 0.1 + 0.3, 2000.0, 1.0]);
        assert_eq!(b.maxima, [0.0, 1001.0, 0.5, 1.0]);
        assert_eq!(b.density_min, 999.0);
        assert_eq!(b.eos, eos_energy(1001.0, &fp()));
        assert!((b.eos - 3.5023e-6).abs() < 1e-9, "{}", b.eos);
        assert_eq!(
            (b.outside, b.non_finite, b.first_bad_id, b.n),
            (0, 0, u32::MAX, 2)
        );
    }

    /// The factored form equals the integral of p/ρ² (midpoint rule in f64) and stays accurate
    /// where the expanded form cancels.
    #[test]
    fn eos_energy_is_the_integral_of_the_pressure() {
        let fp = fp();
        assert_eq!(eos_energy(990.0, &fp), 0.0);
        assert_eq!(eos_energy(1000.0, &fp), 0.0);
        for x in [1.0001f64, 1.01, 1.1, 1.5, 2.0] {
            // The f32 density's own ratio, so the comparison sees only the formula's error.
            let rho = (x * 1000.0) as f32;
            let x = (rho / fp.rest_density) as f64;
            let k = 100_000;
            let dy = (x - 1.0) / k as f64;
            let integral: f64 = (0..k)
                .map(|i| {
                    let y = 1.0 + (i as f64 + 0.5) * dy;
                    (y.powi(7) - 1.0) / (y * y) * dy
                })
                .sum();
            let e = eos_energy(rho, &fp) as f64;
            assert!(
                ((e - integral) / integral).abs() < 1e-4,
                "x = {x}: {e} vs {integral}"
            );
        }
    }

    #[test]
    fn non_finite_values_are_flagged_with_the_smallest_id() {
        let n = 700;
        let pos = vec![Vec3::splat(0.5); n];
        let mut vel = vec![Vec3::ZERO; n];
        let mut density = vec![1000.0; n];
        let id: Vec<u32> = (0..n as u32).rev().collect();
        vel[600].y = f32::NAN;
        density[300] = f32::INFINITY;
        let b = stats_block(&pos, &vel, &id, &density, &fp(), 1e-3, None);
        assert_eq!(b.non_finite, BAD_VELOCITY | BAD_DENSITY);
        assert_eq!(b.first_bad_id, id[600]);
    }

    #[test]
    fn extremes_and_outside_do_not_depend_on_padding() {
        // 300 particles: a full block and one of 44, so both levels pad.
        let n = 300;
        let pos: Vec<Vec3> = (0..n)
            .map(|k| Vec3::new(-0.5 + k as f32 / n as f32, 0.5, 0.5))
            .collect();
        let density: Vec<f32> = (0..n).map(|k| 990.0 + k as f32 * 0.1).collect();
        let b = stats_block(
            &pos,
            &vec![Vec3::ZERO; n],
            &(0..n as u32).collect::<Vec<_>>(),
            &density,
            &fp(),
            1e-3,
            None,
        );
        assert_eq!(b.maxima[2], pos[n - 1].x);
        assert_eq!(b.density_min, 990.0);
        assert_eq!(b.maxima[1], density[n - 1]);
        assert_eq!(b.density_max_id, (n - 1) as u32);
        // x < 0 for the first half: those are outside the tank [0, 1]³.
        assert_eq!(b.outside, 150);
    }
}
