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

/// Each member's Σ_j m∇W_kj (κ_k/ρ_k + κ_j/ρ_j) over one group's pairs (`list`, the group
/// `first..` with `frame`) in list order, `kd` holding κ/ρ. With `lanes` (the CPU has AVX2)
/// eight pairs at a time, the same bits.
pub(super) fn group_pushes(
    first: usize,
    list: &[Pair],
    frame: &Frame,
    pos: &[Vec3],
    kd: &[f32],
    lanes: bool,
    fp: &FluidParams,
) -> [Vec3; GROUP] {
    let mut acc = [Vec3::ZERO; GROUP];
    #[cfg(target_arch = "x86_64")]
    let list = match lanes && crate::cpu::simd::has_avx2() {
        // SAFETY: AVX2 is present, checked just above.
        true => unsafe { avx2::pushes(first, list, frame, pos, kd, fp, &mut acc) },
        false => list,
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = lanes;
    for p in list {
        let l = p.member();
        let grad = frame.grad(p, pos, fp.mass);
        acc[l] += grad * (kd[first + l] + kd[p.j()]);
    }
    acc
}

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
    let lanes = crate::cpu::simd::has_avx2();
    let per_group: Vec<[(Vec3, Option<f32>); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let mut acc = group_pushes(first, list, frame, pos, &kd, lanes, fp);
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

/// The pairs' pressure terms in eight AVX2 lanes, eight pairs of the list at a time (d in
/// lanes, walls' images included, [`FrameLanes::pairs`](super::pairs::avx2::FrameLanes)),
/// each lane the scalar loop's operations; the terms are then added to their members in list
/// order, so every sum is the portable loop's bits. This replay runs once a WCSPH step and
/// twice per iteration of DFSPH's solves.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use crate::solver::dfsph::pairs::avx2::replay;
    use std::arch::x86_64::*;

    /// Σ_j m∇W_kj (κ_k/ρ_k + κ_j/ρ_j) over `list` added into each member's `acc` in list
    /// order, eight pairs at a time; returns the tail of fewer than eight left for the loop.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn pushes<'a>(
        first: usize,
        list: &'a [Pair],
        frame: &Frame,
        pos: &[Vec3],
        kd: &[f32],
        fp: &FluidParams,
        acc: &mut [Vec3; GROUP],
    ) -> &'a [Pair] {
        let mut own = [0f32; GROUP];
        for (l, k) in own
            .iter_mut()
            .enumerate()
            .take(kd.len().saturating_sub(first))
        {
            *k = kd[first + l];
        }
        let mut terms = [[0f32; GROUP]; 3];
        // SAFETY: AVX2 is present, as this function requires. Every pair's member is one of
        // the group's and its candidate a particle (j < N = kd.len()); each load and store
        // covers exactly the eight lanes of an array.
        unsafe {
            let own = _mm256_loadu_ps(own.as_ptr());
            let mass = _mm256_set1_ps(fp.mass);
            replay(list, frame, pos, |chunk, p| {
                let j = _mm256_loadu_si256(p.j.as_ptr().cast());
                let kj = _mm256_i32gather_ps::<4>(kd.as_ptr(), j);
                let s = _mm256_add_ps(_mm256_permutevar8x32_ps(own, p.member), kj);
                let mg = _mm256_mul_ps(mass, p.g);
                _mm256_storeu_ps(
                    terms[0].as_mut_ptr(),
                    _mm256_mul_ps(_mm256_mul_ps(p.d[0], mg), s),
                );
                _mm256_storeu_ps(
                    terms[1].as_mut_ptr(),
                    _mm256_mul_ps(_mm256_mul_ps(p.d[1], mg), s),
                );
                _mm256_storeu_ps(
                    terms[2].as_mut_ptr(),
                    _mm256_mul_ps(_mm256_mul_ps(p.d[2], mg), s),
                );
                for (i, p) in chunk.iter().enumerate() {
                    acc[p.member()] += Vec3::new(terms[0][i], terms[1][i], terms[2][i]);
                }
            })
        }
    }
}
