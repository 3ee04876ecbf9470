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

/// The kinematic viscosity's term of pair `p` (d, r² > 0; its member's velocity `vk`, the
/// neighbour's or its image's `vj`): the acceleration 10 ν (m/ρ_j) (v_ij·x_ij)/(r² + 0.01h²)
/// ∇W_ij and the pair's share of S ([`dfsph_accel`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn kinematic_term(
    p: &Pair,
    d: Vec3,
    r2: f32,
    vk: Vec3,
    vj: Vec3,
    density: &[f32],
    sp: &SimParams,
    fp: &FluidParams,
) -> (Vec3, f32) {
    let dv = vk - vj;
    let vx = dv.x * d.x + dv.y * d.y + dv.z * d.z;
    let c = fp.mass * fp.viscosity_factor / (density[p.j()] * (r2 + 0.01 * sp.h2)) * p.g;
    (d * (c * vx), c * r2)
}

/// The kinematic viscosity's pairs in eight AVX2 lanes, eight pairs of the list at a time: the
/// neighbours' positions, velocities and densities loaded for eight at once, each lane
/// [`kinematic_term`]'s operations (perf: the replay was a third of a WCSPH run on the CPU
/// path, the division and the scattered loads one pair at a time). The images' velocities are
/// the walls' lane form where every wall is free slip; with a slip length an image's pair is
/// evaluated by [`kinematic_term`] itself. The terms are then added to their members in list
/// order, so every sum is the portable loop's bits.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use crate::cpu::simd::lanes::{load3, norm2};
    use crate::solver::dfsph::pairs::avx2::replay;
    use std::arch::x86_64::*;

    /// [`kinematic_term`] of the pairs of `list` added into the group's `acc` and `rate` as
    /// [`dfsph_accel_with`]'s loop adds them, eight at a time; returns the tail of fewer than
    /// eight left for that loop.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2")]
    pub unsafe fn kinematic<'a>(
        first: usize,
        list: &'a [Pair],
        frame: &Frame,
        pos: &[Vec3],
        vel: &[Vec3],
        density: &[f32],
        sp: &SimParams,
        fp: &FluidParams,
        acc: &mut [Vec3; GROUP],
        rate: &mut [f32; GROUP],
    ) -> &'a [Pair] {
        let mut own = [Vec3::ZERO; GROUP];
        let mut v = [[0f32; GROUP]; 3];
        for l in 0..GROUP.min(vel.len().saturating_sub(first)) {
            own[l] = vel[first + l];
            (v[0][l], v[1][l], v[2][l]) = (own[l].x, own[l].y, own[l].z);
        }
        let mut terms = [[0f32; GROUP]; 4];
        // SAFETY: AVX2 is present, as this function requires. Every pair's member is one of
        // the group's and its candidate a particle (j < N); each load and store covers
        // exactly the eight lanes of an array.
        unsafe {
            let vk = [
                _mm256_loadu_ps(v[0].as_ptr()),
                _mm256_loadu_ps(v[1].as_ptr()),
                _mm256_loadu_ps(v[2].as_ptr()),
            ];
            let mv = _mm256_set1_ps(fp.mass * fp.viscosity_factor);
            let soft = _mm256_set1_ps(0.01 * sp.h2);
            let free_slip = walls::lanes::free_slip(fp);
            replay(list, frame, pos, |chunk, p| {
                let mut vj = load3(vel, &p.j);
                if free_slip {
                    vj = walls::lanes::image_free_slip_velocity(vj, p.image);
                }
                let d = p.d;
                let dv = [
                    _mm256_sub_ps(_mm256_permutevar8x32_ps(vk[0], p.member), vj[0]),
                    _mm256_sub_ps(_mm256_permutevar8x32_ps(vk[1], p.member), vj[1]),
                    _mm256_sub_ps(_mm256_permutevar8x32_ps(vk[2], p.member), vj[2]),
                ];
                let r2 = norm2(d);
                let vx = _mm256_add_ps(
                    _mm256_add_ps(_mm256_mul_ps(dv[0], d[0]), _mm256_mul_ps(dv[1], d[1])),
                    _mm256_mul_ps(dv[2], d[2]),
                );
                let j = _mm256_loadu_si256(p.j.as_ptr().cast());
                let rho = _mm256_i32gather_ps::<4>(density.as_ptr(), j);
                let c = _mm256_mul_ps(
                    _mm256_div_ps(mv, _mm256_mul_ps(rho, _mm256_add_ps(r2, soft))),
                    p.g,
                );
                // r² = 0 adds nothing: +0 to a sum that started at +0 is the same bits.
                let live = _mm256_cmp_ps::<_CMP_GT_OQ>(r2, _mm256_setzero_ps());
                let cv = _mm256_and_ps(live, _mm256_mul_ps(c, vx));
                _mm256_storeu_ps(terms[0].as_mut_ptr(), _mm256_mul_ps(d[0], cv));
                _mm256_storeu_ps(terms[1].as_mut_ptr(), _mm256_mul_ps(d[1], cv));
                _mm256_storeu_ps(terms[2].as_mut_ptr(), _mm256_mul_ps(d[2], cv));
                let s = _mm256_and_ps(live, _mm256_mul_ps(c, r2));
                _mm256_storeu_ps(terms[3].as_mut_ptr(), s);
                for (i, p) in chunk.iter().enumerate() {
                    let l = p.member();
                    if p.image() != 0 && !free_slip {
                        // An image moves as the walls' slip lengths say: its velocity, and so
                        // its terms, are the scalar function's.
                        let d = frame.d(p, pos);
                        let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
                        let near = &frame.near[l];
                        let vj = walls::image_viscous_velocity(
                            vel[p.j()],
                            frame.x[l],
                            d,
                            near,
                            p.image(),
                            fp,
                        );
                        let (a, s) = match r2 > 0.0 {
                            true => kinematic_term(p, d, r2, own[l], vj, density, sp, fp),
                            false => (Vec3::ZERO, 0.0),
                        };
                        (terms[0][i], terms[1][i], terms[2][i], terms[3][i]) = (a.x, a.y, a.z, s);
                    }
                    acc[l] += Vec3::new(terms[0][i], terms[1][i], terms[2][i]);
                    rate[l] -= terms[3][i];
                }
            })
        }
    }
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

/// The viscous sums of one group's pairs (`list`, the group `first..` with `frame`): each
/// member's Σ of the three viscosities' accelerations and of its share of S, in list order
/// ([`dfsph_accel`] gives the terms). With `lanes` (the CPU has AVX2) the default's ν alone is
/// evaluated eight pairs at a time, the same bits.
#[allow(clippy::too_many_arguments)]
pub(super) fn group_pairs_accel(
    first: usize,
    list: &[Pair],
    frame: &Frame,
    pos: &[Vec3],
    vel: &[Vec3],
    density: &[f32],
    lanes: bool,
    sp: &SimParams,
    fp: &FluidParams,
) -> ([Vec3; GROUP], [f32; GROUP]) {
    let ach = fp.alpha * fp.sound_speed * sp.h;
    let mut acc = [Vec3::ZERO; GROUP];
    let mut rate = [0.0f32; GROUP];
    // The default's ν alone in lanes, eight pairs at a time; the tail in the loop below.
    let only_nu = fp.viscosity == 0.0 && fp.alpha == 0.0 && fp.kinematic_viscosity != 0.0;
    #[cfg(target_arch = "x86_64")]
    let list = match lanes && only_nu && crate::cpu::simd::has_avx2() {
        // SAFETY: AVX2 is present, checked just above.
        true => unsafe {
            avx2::kinematic(
                first, list, frame, pos, vel, density, sp, fp, &mut acc, &mut rate,
            )
        },
        false => list,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (lanes, only_nu);
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
            let c = fp.mass * ach / ((r2 + 0.01 * sp.h2) * (0.5 * (density[k] + density[j]))) * p.g;
            // Adding ±0 where the pair recedes is adding nothing (an accumulator
            // that starts at +0 never holds −0): the same bits, and no branch to
            // mispredict on the half of the pairs that recede.
            let f = if vx < 0.0 { c * vx } else { 0.0 };
            acc[l] += d * f;
            rate[l] -= c * r2;
        }
        if fp.kinematic_viscosity != 0.0 && r2 > 0.0 {
            let (a, s) = kinematic_term(p, d, r2, vel[k], vj, density, sp, fp);
            acc[l] += a;
            rate[l] -= s;
        }
    }
    (acc, rate)
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
    let lanes = crate::cpu::simd::has_avx2();
    let per_group: Vec<[(Vec3, f32, f32); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let (acc, rate) =
                group_pairs_accel(first, list, frame, pos, vel, density, lanes, sp, fp);
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
