//! Stage `dfsph_rate`, the CPU mirror of `shaders/solver/dfsph/dfsph_rate.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::Boundary;
use crate::boundary::walls;
use crate::grid::walk::{GROUP, scatter_groups};
use crate::kernel;
use crate::params::{DfsphParams, FluidParams, SimParams};

use super::blocks::*;
use super::cells::*;
use super::control::*;
use super::pairs::*;

/// Output of [`dfsph_rate`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rate {
    /// The stiffness increment of the next velocity update, κ_i (projected: κ_sum + κ_i ≥ 0).
    pub kappa: Vec<f32>,
    /// Each particle's residual e, signed ([`residual_of`]).
    pub residual: Vec<f32>,
    /// The fixed-point total of the residuals the particles count ([`lcp_residual`]).
    pub total: Total,
}

/// The density change rates Dρ_k/Dt = Σ_j m (v_k − v_j)·∇W_kj of the group
/// `first..first + len` ([`group_pairs`]).
#[allow(clippy::too_many_arguments)]
pub(super) fn group_rates(
    first: usize,
    len: usize,
    pos: &[Vec3],
    vel: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> [f32; GROUP] {
    let mut rate = [0.0f32; GROUP];
    group_pairs(first, len, pos, slot_start, sp, fp, |l, j, d, r2, image| {
        let vi = vel[first + l];
        let vj = walls::image_vector(vel[j], image);
        let gv = d * (fp.mass * kernel::grad(r2, sp));
        let dv = vi - vj;
        rate[l] += dv.x * gv.x + dv.y * gv.y + dv.z * gv.z;
    });
    rate
}

/// The density change rate of particle `k` alone.
#[inline]
pub fn density_rate(
    k: usize,
    pos: &[Vec3],
    vel: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> f32 {
    group_rates(k, 1, pos, vel, slot_start, sp, fp)[0]
}

/// The obstacles' part of the density change rate of a particle at x moving at v,
/// Σ_b ψ_b (v − v_b)·∇W_xb over the boundary particles within h, in walk order (v_b the
/// obstacle surface's velocity); `None` away from them.
#[inline]
pub fn boundary_rate(b: Option<&Boundary>, x: Vec3, v: Vec3, sp: &SimParams) -> Option<f32> {
    let b = b.filter(|b| b.near(x))?;
    let mut rate = 0.0f32;
    b.walk(x, sp, |k, r2| {
        rate += b.rate(k, x - b.pos[k], kernel::grad(r2, sp), v);
    });
    Some(rate)
}

/// A particle's residual e from its density change rate: the constant-density solve's
/// ρ*/ρ0 − 1 with ρ* = ρ + dt Dρ/Dt, the divergence-free solve's Dρ/Dt · dt/ρ0 (0 where it
/// skips the particle, α ≤ 0). Signed: a negative e is expansion.
#[inline]
pub fn residual_of(
    solve: Solve,
    rate: f32,
    rho: f32,
    alpha: f32,
    dt: f32,
    fp: &FluidParams,
) -> f32 {
    match solve {
        Solve::Divergence => {
            if alpha > 0.0 {
                rate * dt / fp.rest_density
            } else {
                0.0
            }
        }
        Solve::Density => (rho + dt * rate) / fp.rest_density - 1.0,
    }
}

/// The residual a particle counts towards the solve's total: the complementarity residual of
/// the one-sided problem (κ_sum ≥ 0, e ≤ 0, κ_sum e = 0): |e| where the particle carries
/// pressure (an expansion there is pressure to take back), max(e, 0) where it carries none; a
/// NaN stays NaN, so the total's flag sees it.
#[inline]
pub fn lcp_residual(e: f32, kappa_sum: f32) -> f32 {
    if kappa_sum > 0.0 || e > 0.0 || e.is_nan() {
        e.abs()
    } else {
        0.0
    }
}

/// One particle of a rate pass: the projected Jacobi increment of its stiffness (moving
/// κ_sum by ω |α| e ρ0/dt², [`jacobi_increment`], and keeping it ≥ 0, [`projected`]), its
/// residual e ([`residual_of`]) and the residual it counts ([`lcp_residual`]), from its rate,
/// ρ, α and the stiffness the solve has applied to it so far, κ_sum. `omega` is
/// `DfsphParams::relaxation`, ω.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn stiffness(
    solve: Solve,
    rate: f32,
    rho: f32,
    alpha: f32,
    kappa_sum: f32,
    dt: f32,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> (f32, f32, f32) {
    let e = residual_of(solve, rate, rho, alpha, dt, fp);
    let inc = jacobi_increment(solve, e, alpha, kappa_scale(dt, fp), dp);
    (projected(kappa_sum, inc), e, lcp_residual(e, kappa_sum))
}

/// Stage `dfsph_rate`: the density change rate from the current velocities, the stiffness
/// increment it asks for and the residuals ([`stiffness`]), with the counted residuals'
/// fixed-point total; `kappa_sum` is what the solve has applied so far (zeros for its first
/// rate pass).
#[allow(clippy::too_many_arguments)]
pub fn dfsph_rate(
    solve: Solve,
    pos: &[Vec3],
    vel: &[Vec3],
    density: &[f32],
    alpha: &[f32],
    kappa_sum: &[f32],
    pairs: &PairList,
    b: Option<&Boundary>,
    dt: f32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> Rate {
    let lanes = crate::cpu::simd::has_avx2();
    let per_group: Vec<[(f32, f32, f32); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let rate = listed_rates(first, list, frame, pos, vel, fp.mass, lanes);
            let mut out = [(0.0, 0.0, 0.0); GROUP];
            for (l, o) in out.iter_mut().enumerate().take(len) {
                let k = first + l;
                let rate = match boundary_rate(b, pos[k], vel[k], sp) {
                    Some(r) => rate[l] + r,
                    None => rate[l],
                };
                *o = stiffness(solve, rate, density[k], alpha[k], kappa_sum[k], dt, fp, dp);
            }
            out
        })
        .collect();
    let all = scatter_groups(pos.len(), &pairs.groups, &per_group);
    let counted: Vec<f32> = all.iter().map(|v| v.2).collect();
    Rate {
        total: Total::of(&counted),
        kappa: all.iter().map(|v| v.0).collect(),
        residual: all.iter().map(|v| v.1).collect(),
    }
}

/// [`group_rates`] from the group's recorded pairs: the same terms in the same order, eight
/// pairs at a time in AVX2 lanes where `lanes` is set and the CPU has them (the same bits).
pub(super) fn listed_rates(
    first: usize,
    list: &[Pair],
    frame: &Frame,
    pos: &[Vec3],
    vel: &[Vec3],
    mass: f32,
    lanes: bool,
) -> [f32; GROUP] {
    let mut rate = [0.0f32; GROUP];
    #[cfg(target_arch = "x86_64")]
    let list = match lanes && crate::cpu::simd::has_avx2() {
        // SAFETY: AVX2 is present, checked just above.
        true => unsafe { avx2::rates(first, list, frame, pos, vel, mass, &mut rate) },
        false => list,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = lanes;
    for p in list {
        let l = p.member();
        let vi = vel[first + l];
        let vj = walls::image_vector(vel[p.j()], p.image());
        let dv = vi - vj;
        let g = frame.grad(p, pos, mass);
        rate[l] += dv.x * g.x + dv.y * g.y + dv.z * g.z;
    }
    rate
}

/// The pairs' density change rate terms in eight AVX2 lanes, eight pairs of the list at a
/// time (d and the images' reflected velocities in lanes,
/// [`replay`](super::pairs::avx2::replay)), each lane the scalar loop's operations; the terms
/// are then added to their members in list order, so every sum is the portable loop's bits.
/// This replay runs at each DFSPH solve's start and in each of its iterations.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use crate::cpu::simd::lanes::load3;
    use crate::solver::dfsph::pairs::avx2::replay;
    use std::arch::x86_64::*;

    /// Σ_j (v_k − v_j')·m∇W_kj over `list` added into each member's `rate` in list order,
    /// eight pairs at a time; returns the tail of fewer than eight left for the loop.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn rates<'a>(
        first: usize,
        list: &'a [Pair],
        frame: &Frame,
        pos: &[Vec3],
        vel: &[Vec3],
        mass: f32,
        rate: &mut [f32; GROUP],
    ) -> &'a [Pair] {
        let mut v = [[0f32; GROUP]; 3];
        for l in 0..GROUP.min(vel.len().saturating_sub(first)) {
            let o = vel[first + l];
            (v[0][l], v[1][l], v[2][l]) = (o.x, o.y, o.z);
        }
        let mut terms = [0f32; GROUP];
        // SAFETY: AVX2 is present, as this function requires. Every pair's member is one of
        // the group's and its candidate a particle (j < N); each load and store covers
        // exactly the eight lanes of an array.
        unsafe {
            let vk = [
                _mm256_loadu_ps(v[0].as_ptr()),
                _mm256_loadu_ps(v[1].as_ptr()),
                _mm256_loadu_ps(v[2].as_ptr()),
            ];
            let mass = _mm256_set1_ps(mass);
            replay(list, frame, pos, |chunk, p| {
                let vj = walls::lanes::image_vector(load3(vel, &p.j), p.image);
                let mg = _mm256_mul_ps(mass, p.g);
                let mut dot = [_mm256_setzero_ps(); 3];
                for (a, t) in dot.iter_mut().enumerate() {
                    let dv = _mm256_sub_ps(_mm256_permutevar8x32_ps(vk[a], p.member), vj[a]);
                    *t = _mm256_mul_ps(dv, _mm256_mul_ps(p.d[a], mg));
                }
                let sum = _mm256_add_ps(_mm256_add_ps(dot[0], dot[1]), dot[2]);
                _mm256_storeu_ps(terms.as_mut_ptr(), sum);
                for (i, p) in chunk.iter().enumerate() {
                    rate[p.member()] += terms[i];
                }
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxation_scales_the_stiffness_and_not_the_residual() {
        // The shader's worked example: D = 10, dt = 0.01, α = 1e-3, ρ0 = 1000, κ_sum = 0.
        let fp = FluidParams {
            rest_density: 1000.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let dp = |omega| DfsphParams {
            relaxation: omega,
            ..bytemuck::Zeroable::zeroed()
        };
        let (k1, e1, r1) = stiffness(
            Solve::Divergence,
            10.0,
            1000.0,
            1e-3,
            0.0,
            0.01,
            &fp,
            &dp(1.0),
        );
        assert!(
            (k1 - 1.0).abs() < 1e-6 && (e1 - 1e-4).abs() < 1e-9,
            "{k1} {e1}"
        );
        assert_eq!(r1, e1);
        let (k, e, _) = stiffness(
            Solve::Divergence,
            10.0,
            1000.0,
            1e-3,
            0.0,
            0.01,
            &fp,
            &dp(0.8),
        );
        assert_eq!(e, e1);
        assert!((k - 0.8).abs() < 1e-6, "{k}");
        // ρ* = 1000 + 0.01 · 10 = 1000.1: κ = 0.1 / 1e-4 · 1e-3 = 1 at ω = 1 (ρ* rounded to
        // f32 puts it 2.4e-4 low).
        let (k1, e1, _) = stiffness(Solve::Density, 10.0, 1000.0, 1e-3, 0.0, 0.01, &fp, &dp(1.0));
        let (k, e, _) = stiffness(Solve::Density, 10.0, 1000.0, 1e-3, 0.0, 0.01, &fp, &dp(0.5));
        assert!((k1 - 1.0).abs() < 1e-3, "{k1}");
        assert!((k - 0.5).abs() < 1e-3 && e == e1, "{k}");
    }

    /// Expansion takes back stiffness the solve applied, never more than it applied, and
    /// counts in the total only where there was some.
    #[test]
    fn expansion_takes_back_applied_stiffness_only() {
        let fp = FluidParams {
            rest_density: 1000.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let dp = DfsphParams {
            relaxation: 1.0,
            ..bytemuck::Zeroable::zeroed()
        };
        // D = −10: e = −1e-4, J = −1.
        let (k, e, r) = stiffness(Solve::Divergence, -10.0, 1000.0, 1e-3, 3.0, 0.01, &fp, &dp);
        assert!(
            (k + 1.0).abs() < 1e-6 && (r + e).abs() < 1e-12,
            "{k} {e} {r}"
        );
        let (k, _, _) = stiffness(Solve::Divergence, -10.0, 1000.0, 1e-3, 0.25, 0.01, &fp, &dp);
        assert_eq!(k, -0.25);
        let (k, _, r) = stiffness(Solve::Divergence, -10.0, 1000.0, 1e-3, 0.0, 0.01, &fp, &dp);
        assert_eq!((k, r), (0.0, 0.0));
    }
}
