//! Stage `pressure`, the CPU mirror of the pressure fused into `shaders/wcsph/walls.wgsl`
//! (`store_density`: the GPU computes it where the density ends, without a pass of its own).
//!
//! Input: densities with the walls' mirror particles (N, from stage `walls`). Output: pressures (N) from the Tait equation of state
//! (Becker & Teschner 2007), p = B((ρ/ρ0)^7 − 1) with B = ρ0 c²/7, clamped at 0: negative
//! pressure would pull particles together (tensile instability) and make the free surface
//! clump, so a stretched fluid simply carries no pressure.
//!
//! Worked example, ρ0 = 1000, B = 1e5: ρ = 1010 → x = 1.01, x^7 = 1.0721354 → p ≈ 7213.5 Pa;
//! ρ = 990 → p = 0.

use rayon::prelude::*;

use crate::params::FluidParams;

/// Pressure of one particle.
#[inline]
pub fn tait(density: f32, fp: &FluidParams) -> f32 {
    let x = density / fp.rest_density;
    let x2 = x * x;
    let x4 = x2 * x2;
    let x7 = x4 * x2 * x;
    (fp.stiffness * (x7 - 1.0)).max(0.0)
}

/// Runs the pressure stage.
pub fn pressure(density: &[f32], fp: &FluidParams) -> Vec<f32> {
    density.par_iter().map(|&d| tait(d, fp)).collect()
}
