//! Stage `dfsph_accel`, the CPU mirror of `shaders/solver/dfsph/dfsph_accel.wgsl` (its header gives the
//! inputs, the outputs and a worked example); [`super`] describes the method (Bender & Koschier
//! 2015, 2017) and how the stages chain into a step.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::Boundary;
use crate::boundary::walls;
use crate::grid::walk::{GROUP, scatter_groups};
use crate::kernel;
use crate::params::{FluidParams, SimParams};

use super::pairs::*;

/// Stage `dfsph_accel`: the non-pressure accelerations and the explicit viscous terms' rate.
///
/// a_i = g + Σ_j [(μ/ρ_i) m (v_j − v_i)/ρ_j ∇²W_visc(r)          (Müller et al. 2003; μ = 0 by default)
///              + m α c h (v_ij·x_ij)/((r² + 0.01h²) ρ̄_ij) ∇W_ij   (artificial viscosity,
///                                          approaching pairs: v_ij·x_ij < 0; α = 0 by default)
///              + 10 ν (m/ρ_j) (v_ij·x_ij)/(r² + 0.01h²) ∇W_ij]    (kinematic viscosity ν,
///                                                every pair; ν = 1e-3 (s / 10 mm)^1.5 by default)
///
/// The second term is Monaghan's artificial viscosity Π term for term (Monaghan 1992, "Smoothed
/// particle hydrodynamics", ARA&A 30: −m Π_ij ∇W_ij with Π_ij = −α c h (v_ij·x_ij)/((r² +
/// 0.01h²) ρ̄_ij) where the pair approaches, 0 where it recedes), with the reference sound
/// speed c = 10 √(2 g H), h and the run's kernel gradient; off by default for both solvers,
/// whose dissipation is the third term ([`crate::params::PhysicsConfig`]'s default says why).
/// It acts as a kinematic viscosity ν = α c h / 10 in compression (Monaghan 2005, Rep. Prog.
/// Phys. 68, §6.1). Applied to receding pairs too (as first built), it doubled the shear on
/// the surge's thin toe and on the wall layer: the 20 000-particle dam break's front lagged
/// 10.2% at T = 2.98 and the column at the wall stood 62% too high at τ = 2.21, where WCSPH,
/// with Π on approaching pairs, read −3.5% and +31% (docs/validation.md in the git history).
/// The third term is the standard SPH viscosity of a kinematic viscosity ν in m²/s
/// (Monaghan 2005, "Smoothed particle hydrodynamics", Rep. Prog. Phys. 68, eq. 6.6 with ρ_j for
/// ρ̄_ij, as SPlisHSPlasH's Viscosity_Standard writes it: 2(d + 2) = 10 in 3D), a viscosity
/// with no sound speed in it: both solvers' dissipation by default (ν = 1e-3 m²/s at s = 10 mm,
/// a particle-scale dissipation whose reasons [`crate::params::KINEMATIC_VISCOSITY`]
/// gives, ∝ s^1.5 at other spacings, [`crate::params::default_kinematic_viscosity`]), as
/// SPlisHSPlasH's DamBreakModel runs its DFSPH (at 1e-2). Its row sum joins S below: at the
/// default ν the limit 1/(2 max S) is about 1.3 times the body-force bound on the step at every
/// spacing, so it never sets a step at rest.
/// Images move with [`walls::image_viscous_velocity`] here (the walls' slip length; free slip by default).
///
/// Also returns, per particle, the row sum of the explicit viscous operator over every pair,
/// receding ones too (a bound for whichever pairs approach during the step),
/// S_i = Σ_j [m α c h |∇W_ij| r/((r² + 0.01h²) ρ̄_ij) + 10 ν (m/ρ_j) |∇W_ij| r/(r² +
/// 0.01h²) + (μ/ρ_i)(m/ρ_j) ∇²W_visc]: by Gershgorin's theorem every eigenvalue of the
/// linear map v ↦ a_visc lies in [−2 max S, 0], so
/// an explicit step damps every mode without overshoot for dt ≤ 1/(2 max S), which
/// [`dfsph_timestep`] enforces for each viscous substep (`DfsphParams::viscous_limit`; this
/// stage runs once per substep, at the velocities the last one left). Measured on a 4 × 20 × 4
/// column at α = 0.05 without this limit: growing motion at the 5 ms step, at rest at 2 ms.
/// With μ = 0, α = 0 and ν = 0 nothing is walked (S = 0).
///
/// Worked example (h = 1, m = 1, ρ = 1, α c = 1, μ = 0, gravity 0): particle i at the origin
/// moving at (1, 0, 0), j at (0.5, 0, 0) at rest: d = x_i − x_j = (−0.5, 0, 0), v_ij·x_ij =
/// −0.5, ∇W = g d with Wendland C2's g = −(210/π)(1 − q)³/h⁴ = −8.356, so the pair's factor is
/// 1/(0.26 · 1) · g = −32.14 and a_i = d · (−32.14 · −0.5) = (−8.03, 0, 0): i is slowed, pushed
/// back from j; S_i = 32.14 · 0.25 = 8.03 /s. Moving at (−1, 0, 0) instead, away from j:
/// a_i = 0, S_i the same 8.03 /s.
pub fn dfsph_accel(
    pos: &[Vec3],
    vel: &[Vec3],
    density: &[f32],
    pairs: &PairList,
    sp: &SimParams,
    fp: &FluidParams,
) -> (Vec<Vec3>, Vec<f32>) {
    let a = dfsph_accel_with(pos, vel, density, pairs, None, sp, fp);
    (a.acc, a.rate)
}

/// What [`dfsph_accel_with`] gives (slot order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Accel {
    /// The non-pressure accelerations.
    pub acc: Vec<Vec3>,
    /// The explicit viscous terms' row sums S_i.
    pub rate: Vec<f32>,
    /// With obstacle friction: the power per unit mass the friction of moving obstacles puts
    /// in, a_f · v_b summed over the boundary particles (the GPU's `friction_power`, which
    /// `dfsph_predict` credits to the obstacles' power, weighted by dt_sub/dt); else empty.
    pub power: Vec<f32>,
}

/// [`dfsph_accel`] with the obstacles' friction (`friction`: the boundary, given when
/// `DfsphParams::friction` is set): after its pairs, a particle within the
/// boundary's box walks the boundary particles and adds the standard viscosity of each
/// obstacle's ν_b ([`Boundary::viscous`]; crate::boundary::particles says why), its share of
/// S and its power, each summed on its own from zero and then added (the WGSL's order).
#[allow(clippy::too_many_arguments)]
pub fn dfsph_accel_with(
    pos: &[Vec3],
    vel: &[Vec3],
    density: &[f32],
    pairs: &PairList,
    friction: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
) -> Accel {
    let g = Vec3::from_slice(&fp.gravity[..3]);
    if fp.viscosity == 0.0 && fp.alpha == 0.0 && fp.kinematic_viscosity == 0.0 && friction.is_none()
    {
        return Accel {
            acc: vec![g; vel.len()],
            rate: vec![0.0; vel.len()],
            power: Vec::new(),
        };
    }
    let ach = fp.alpha * fp.sound_speed * sp.h;
    let per_group: Vec<[(Vec3, f32, f32); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let mut acc = [Vec3::ZERO; GROUP];
            let mut rate = [0.0f32; GROUP];
            for p in list {
                let (l, j, image) = (p.member(), p.j(), p.image());
                // The walk's d and r², recomputed with its operations (the same bits).
                let d = frame.d(p, pos);
                let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
                let k = first + l;
                let vj = if image != 0 {
                    walls::image_viscous_velocity(vel[j], pos[k], d, &frame.near[l], image, fp)
                } else {
                    vel[j]
                };
                if fp.viscosity != 0.0 {
                    let w = sp.h - r2.sqrt();
                    let c = fp.viscosity / density[k] * fp.mass / density[j] * fp.kernel_45 * w;
                    acc[l] += (vj - vel[k]) * c;
                    rate[l] += c;
                }
                if fp.alpha != 0.0 && r2 > 0.0 {
                    let dv = vel[k] - vj;
                    let vx = dv.x * d.x + dv.y * d.y + dv.z * d.z;
                    let c = fp.mass * ach
                        / ((r2 + 0.01 * sp.h2) * (0.5 * (density[k] + density[j])))
                        * p.g;
                    // Adding ±0 where the pair recedes is adding nothing (an accumulator
                    // that starts at +0 never holds −0): the same bits, and no branch to
                    // mispredict on the half of the pairs that recede.
                    let f = if vx < 0.0 { c * vx } else { 0.0 };
                    acc[l] += d * f;
                    rate[l] -= c * r2;
                }
                if fp.kinematic_viscosity != 0.0 && r2 > 0.0 {
                    let dv = vel[k] - vj;
                    let vx = dv.x * d.x + dv.y * d.y + dv.z * d.z;
                    let c =
                        fp.mass * fp.viscosity_factor / (density[j] * (r2 + 0.01 * sp.h2)) * p.g;
                    acc[l] += d * (c * vx);
                    rate[l] -= c * r2;
                }
            }
            let mut out = [(Vec3::ZERO, 0.0, 0.0); GROUP];
            for (l, o) in out.iter_mut().enumerate().take(len) {
                let (x, v) = (pos[first + l], vel[first + l]);
                let (mut a, mut s, mut power) = (acc[l], rate[l], 0.0f32);
                if let Some(b) = friction.filter(|b| b.near(x)) {
                    let (mut ba, mut bs, mut bp) = (Vec3::ZERO, 0.0f32, 0.0f32);
                    b.walk(x, sp, |k, r2| {
                        if r2 > 0.0 {
                            let (fa, share, pw) =
                                b.viscous(k, x - b.pos[k], r2, kernel::grad(r2, sp), v, sp);
                            ba += fa;
                            bs += share;
                            bp += pw;
                        }
                    });
                    a += ba;
                    s -= bs;
                    power = bp;
                }
                *o = (a + g, s, power);
            }
            out
        })
        .collect();
    let out = scatter_groups(vel.len(), &pairs.groups, &per_group);
    Accel {
        acc: out.iter().map(|o| o.0).collect(),
        rate: out.iter().map(|o| o.1).collect(),
        power: match friction {
            Some(_) => out.iter().map(|o| o.2).collect(),
            None => Vec::new(),
        },
    }
}
