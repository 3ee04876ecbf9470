//! Stage `dfsph_rate`, the CPU mirror of `shaders/dfsph/dfsph_rate.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::Boundary;
use crate::boundary::tank::image_velocity;
use crate::cpu::walk::{GROUP, scatter_groups};
use crate::kernel::wendland_grad;
use crate::params::{DfsphParams, FluidParams, SimParams};

use super::blocks::*;
use super::control::*;
use super::pairs::*;

/// Output of [`dfsph_rate`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rate {
    /// The stiffness of the next velocity update, κ_i.
    pub kappa: Vec<f32>,
    /// Each particle's residual.
    pub residual: Vec<f32>,
    /// The residuals' fixed-point total.
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
    dp: &DfsphParams,
) -> [f32; GROUP] {
    let mut rate = [0.0f32; GROUP];
    group_pairs(first, len, pos, slot_start, sp, fp, |l, j, d, r2, axes| {
        let vi = vel[first + l];
        let vj = image_velocity(vel[j], axes);
        let gv = d * (fp.mass * wendland_grad(r2, sp, dp));
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
    dp: &DfsphParams,
) -> f32 {
    group_rates(k, 1, pos, vel, slot_start, sp, fp, dp)[0]
}

/// The obstacles' part of the density change rate of a particle at x moving at v,
/// Σ_b ψ_b (v − v_b)·∇W_xb over the boundary particles within h, in walk order (v_b the
/// obstacle surface's velocity); `None` away from them.
#[inline]
pub fn boundary_rate(
    b: Option<&Boundary>,
    x: Vec3,
    v: Vec3,
    sp: &SimParams,
    dp: &DfsphParams,
) -> Option<f32> {
    let b = b.filter(|b| b.near(x))?;
    let mut rate = 0.0f32;
    b.walk(x, sp, |k, r2| {
        rate += b.rate(k, x - b.pos[k], wendland_grad(r2, sp, dp), v);
    });
    Some(rate)
}

/// κ and the residual of one particle from its rate; `omega` is the solves' relaxation factor
/// ω (`DfsphParams::relaxation`), applied to κ only, so the residual still says how far the
/// particle is from its target.
#[inline]
pub fn stiffness(
    solve: Solve,
    rate: f32,
    rho: f32,
    alpha: f32,
    dt: f32,
    fp: &FluidParams,
    omega: f32,
) -> (f32, f32) {
    match solve {
        Solve::Divergence => {
            let d = if alpha > 0.0 { rate.max(0.0) } else { 0.0 };
            (d / dt * alpha.max(0.0) * omega, d * dt / fp.rest_density)
        }
        Solve::Density => {
            let rho_star = (rho + dt * rate).max(fp.rest_density);
            (
                (rho_star - fp.rest_density) / (dt * dt) * alpha.abs() * omega,
                rho_star / fp.rest_density - 1.0,
            )
        }
    }
}

/// Stage `dfsph_rate`: the density change rate from the current velocities, the stiffness it
/// asks for and the residual (divergence: max(Dρ/Dt, 0)·dt/ρ0; density: ρ*/ρ0 − 1 with
/// ρ* = max(ρ + dt Dρ/Dt, ρ0)), with the residuals' fixed-point total.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_rate(
    solve: Solve,
    pos: &[Vec3],
    vel: &[Vec3],
    density: &[f32],
    alpha: &[f32],
    pairs: &PairList,
    b: Option<&Boundary>,
    dt: f32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> Rate {
    let per_group: Vec<[(f32, f32); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let rate = listed_rates(first, list, frame, pos, vel, fp.mass);
            let mut out = [(0.0, 0.0); GROUP];
            for (l, o) in out.iter_mut().enumerate().take(len) {
                let k = first + l;
                let rate = match boundary_rate(b, pos[k], vel[k], sp, dp) {
                    Some(r) => rate[l] + r,
                    None => rate[l],
                };
                *o = stiffness(solve, rate, density[k], alpha[k], dt, fp, dp.relaxation);
            }
            out
        })
        .collect();
    let (kappa, residual): (Vec<f32>, Vec<f32>) =
        scatter_groups(pos.len(), &pairs.groups, &per_group)
            .into_iter()
            .unzip();
    Rate {
        total: Total::of(&residual),
        kappa,
        residual,
    }
}

/// [`group_rates`] from the group's recorded pairs: the same terms in the same order.
#[inline]
pub(super) fn listed_rates(
    first: usize,
    list: &[Pair],
    frame: &Frame,
    pos: &[Vec3],
    vel: &[Vec3],
    mass: f32,
) -> [f32; GROUP] {
    let mut rate = [0.0f32; GROUP];
    for p in list {
        let l = p.member();
        let vi = vel[first + l];
        let vj = image_velocity(vel[p.j()], p.axes());
        let dv = vi - vj;
        let g = frame.grad(p, pos, mass);
        rate[l] += dv.x * g.x + dv.y * g.y + dv.z * g.z;
    }
    rate
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relaxation_scales_the_stiffness_and_not_the_residual() {
        // The shader's worked example: D = 10, dt = 0.01, α = 1e-3, ρ0 = 1000.
        let fp = FluidParams {
            rest_density: 1000.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let (k1, r1) = stiffness(Solve::Divergence, 10.0, 1000.0, 1e-3, 0.01, &fp, 1.0);
        assert!(
            (k1 - 1.0).abs() < 1e-6 && (r1 - 1e-4).abs() < 1e-9,
            "{k1} {r1}"
        );
        let (k, r) = stiffness(Solve::Divergence, 10.0, 1000.0, 1e-3, 0.01, &fp, 0.8);
        assert_eq!((k, r), (k1 * 0.8, r1));
        // ρ* = 1000 + 0.01 · 10 = 1000.1: κ = 0.1 / 1e-4 · 1e-3 = 1 at ω = 1 (ρ* rounded to
        // f32 puts it 2.4e-4 low).
        let (k1, r1) = stiffness(Solve::Density, 10.0, 1000.0, 1e-3, 0.01, &fp, 1.0);
        let (k, r) = stiffness(Solve::Density, 10.0, 1000.0, 1e-3, 0.01, &fp, 0.5);
        assert!((k1 - 1.0).abs() < 1e-3, "{k1}");
        assert_eq!((k, r), (k1 * 0.5, r1));
    }
}
