//! Stage `dfsph_warm`, the CPU mirror of `shaders/dfsph/dfsph_warm.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use super::control::*;

/// Stage `dfsph_warm`: each particle's starting stiffness from the stiffness the same solve
/// applied to it last step (`warm`, by particle id, with dt removed), as SPlisHSPlasH's warm
/// start does it: only where the solve finds compression now (`kappa_now` > 0, from a rate
/// pass on the current velocities), and half of it: κ^v = ½ w_v / dt, κ = ½ w / dt².
/// Measured on a hydrostatic column (4 × 20 × 4 in its own tank): warm-starting every
/// particle, expanding ones too, blew up within 30 steps; the full stiffness where
/// compressed ratchets up (the iterations only add) and launched the column within 3 steps;
/// half of it is kept. None of these is stable yet near walls (see docs/validation.md). Warm-starting an expanding particle
/// would push its neighbours apart, which no later iteration corrects (both solves correct
/// compression only): measured, a hydrostatic column then rose and blew up within 30 steps.
pub fn dfsph_warm(
    solve: Solve,
    warm: &[[f32; 2]],
    ids: &[u32],
    kappa_now: &[f32],
    dt: f32,
) -> Vec<f32> {
    ids.iter()
        .zip(kappa_now)
        .map(|(&id, &k)| {
            let w = warm[id as usize];
            if k > 0.0 {
                match solve {
                    Solve::Divergence => 0.5 * w[0] / dt,
                    Solve::Density => 0.5 * w[1] / (dt * dt),
                }
            } else {
                0.0
            }
        })
        .collect()
}
