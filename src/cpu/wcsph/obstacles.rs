//! Stages `obstacle_density` and `obstacle_forces`, the CPU mirror of `shaders/wcsph/obstacle.wgsl`:
//! the obstacles' boundary particles (Akinci et al. 2012) in the fluid's density and forces.
//! The particles themselves, their ψ and their grid are [`Boundary`]'s.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::Boundary;
use crate::params::{FluidParams, SimParams};

/// Stage `obstacle_density`: the density (and its Tait pressure, as `walls` fuses it) of every
/// fluid particle with the obstacles' boundary particles added: ρ_i + poly6_norm Σ_b ψ_b
/// (1 − r²/h²)³, summed in walk order.
pub fn obstacle_density(
    sorted_pos: &[Vec3],
    density: &[f32],
    boundary: &Boundary,
    sp: &SimParams,
    fp: &FluidParams,
) -> (Vec<f32>, Vec<f32>) {
    sorted_pos
        .par_iter()
        .zip(density)
        .map(|(&x, &rho)| {
            let mut sum = 0.0f32;
            boundary.walk(x, sp, |b, r2| {
                sum += boundary.weight(b, crate::kernel::poly6_term(r2, sp.inv_h2));
            });
            let rho = rho + boundary.params.poly6_norm * sum;
            (rho, crate::cpu::wcsph::pressure::tait(rho, fp))
        })
        .unzip()
}

/// Stage `obstacle_forces`: adds the obstacles' pressure and friction push to every fluid
/// particle's acceleration (Akinci et al. 2012 eqs. 10–13), summed in walk order then added,
/// and returns per particle the power per unit mass that push delivers, Σ_b a_ib · v_b (zero
/// where the obstacles stand still or are out of reach): what the energy check credits to a
/// moving obstacle.
pub fn obstacle_forces(
    fields: &crate::cpu::wcsph::forces::Fields,
    acc: &mut [Vec3],
    boundary: &Boundary,
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec<f32> {
    acc.par_iter_mut()
        .enumerate()
        .map(|(i, a)| {
            let x = fields.pos[i];
            // As the GPU pass returns early: a particle away from the obstacles keeps its
            // acceleration's bits (even a −0.0, which + 0.0 would turn into +0.0).
            if !boundary.near(x) {
                return 0.0;
            }
            let v = fields.vel[i];
            let rho = fields.density[i];
            let shared = fields.pressure[i] / (rho * rho);
            let mut sum = Vec3::ZERO;
            let mut power = 0.0f32;
            boundary.walk(x, sp, |b, r2| {
                if r2 > 0.0 {
                    let (push, pw) = boundary.push(b, x - boundary.pos[b], r2, v, shared, sp, fp);
                    sum += push;
                    power += pw;
                }
            });
            *a += sum;
            power
        })
        .collect()
}
