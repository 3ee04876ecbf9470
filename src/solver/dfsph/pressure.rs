//! Stage `dfsph_pressure`, the CPU mirror of `shaders/solver/dfsph/dfsph_pressure.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::Boundary;
use crate::grid::walk::{GROUP, scatter_groups};
use crate::kernel;
use crate::params::{FluidParams, SimParams};

use super::pairs::*;

/// Stage `dfsph_pressure`: v_i −= dt Σ_j m (κ_i/ρ_i + κ_j/ρ_j) ∇W_ij (images with the
/// original's κ and ρ), and κ_sum_i += κ_i. An obstacle's boundary particle b pushes with
/// i's stiffness alone, −dt ψ_b (κ_i/ρ_i) ∇W_ib (it has no stiffness of its own; Akinci et
/// al. 2012, as SPlisHSPlasH's DFSPH applies it), summed in walk order and added after the
/// fluid's sum; that push's power per unit mass against the surface's velocity,
/// −Σ_b (ψ_b (κ_i/ρ_i) ∇W_ib) · v_b, is added to `power` (empty without obstacles): summed
/// over a step's iterations it is what the energy check credits to moving obstacles.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_pressure(
    pos: &[Vec3],
    vel: &mut [Vec3],
    density: &[f32],
    kappa: &[f32],
    kappa_sum: &mut [f32],
    pairs: &PairList,
    b: Option<&Boundary>,
    power: &mut [f32],
    dt: f32,
    sp: &SimParams,
    fp: &FluidParams,
) {
    // κ/ρ of every particle, divided once rather than once per pair (the same bits).
    let kd: Vec<f32> = kappa.iter().zip(density).map(|(k, r)| k / r).collect();
    let per_group: Vec<[(Vec3, Option<f32>); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let mut acc = [Vec3::ZERO; GROUP];
            for p in list {
                let l = p.member();
                let grad = frame.grad(p, pos, fp.mass);
                acc[l] += grad * (kd[first + l] + kd[p.j()]);
            }
            let mut powers = [None; GROUP];
            for (l, a) in acc.iter_mut().enumerate().take(len) {
                let x = pos[first + l];
                let ki = kd[first + l];
                if let Some(b) = b.filter(|b| b.near(x)) {
                    let (mut push, mut pw) = (Vec3::ZERO, 0.0f32);
                    b.walk(x, sp, |k, r2| {
                        let (c, power) = b.pressure(k, x - b.pos[k], kernel::grad(r2, sp), ki);
                        push += c;
                        pw += power;
                    });
                    *a += push;
                    powers[l] = Some(pw);
                }
            }
            let mut out = [(Vec3::ZERO, None); GROUP];
            for (o, v) in out.iter_mut().zip(acc.into_iter().zip(powers)) {
                *o = v;
            }
            out
        })
        .collect();
    let (dv, dp_power): (Vec<Vec3>, Vec<Option<f32>>) =
        scatter_groups(pos.len(), &pairs.groups, &per_group)
            .into_iter()
            .unzip();
    for k in 0..pos.len() {
        vel[k] -= dv[k] * dt;
        kappa_sum[k] += kappa[k];
    }
    if !power.is_empty() {
        for (p, d) in power.iter_mut().zip(dp_power) {
            if let Some(d) = d {
                *p -= d;
            }
        }
    }
}
