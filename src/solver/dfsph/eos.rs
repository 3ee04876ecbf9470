//! Stage `dfsph_eos`, the CPU mirror of `shaders/solver/dfsph/dfsph_eos.wgsl`: WCSPH's pressure on the
//! shared stages. [`super`] says how the stages chain into a WCSPH step.
//!
//! Input: ρ with the walls' images and the obstacles (N, `dfsph_density`'s). Output: the
//! stiffness κ_i = p_i / ρ_i (N) that `dfsph_pressure` applies once with the step's dt, where
//! p_i is the Tait equation of state (Becker & Teschner 2007; Monaghan 1994),
//! p = B((ρ/ρ0)^7 − 1) with B = ρ0 c0²/7, clamped at 0: a stretched fluid carries no pressure,
//! so the free surface does not clump (tensile instability). `dfsph_pressure`'s
//! v_i −= dt Σ_j m (κ_i/ρ_i + κ_j/ρ_j) ∇W_ij is then the symmetric pressure force
//! −Σ_j m (p_i/ρ_i² + p_j/ρ_j²) ∇W_ij (Monaghan 1992) on the run's kernel, the same kernel
//! the density sums: one kernel for density and force, so the force does no work of its own.
//!
//! Worked example, ρ0 = 1000, B = 1e5: ρ = 1010 → x^7 = 1.0721354, p ≈ 7213.5 Pa,
//! κ ≈ 7.1421 m²/s²; ρ = 990 → κ = 0.

use rayon::prelude::*;

use crate::params::FluidParams;

/// The Tait pressure of density `rho`, clamped at 0 (the GPU's `tait` in dfsph_eos.wgsl).
#[inline]
pub fn tait(rho: f32, fp: &FluidParams) -> f32 {
    let x = rho / fp.rest_density;
    let x2 = x * x;
    let x4 = x2 * x2;
    let x7 = x4 * x2 * x;
    (fp.stiffness * (x7 - 1.0)).max(0.0)
}

/// The Tait pressure of each density (what the outputs and the viewer show).
pub fn tait_pressures(density: &[f32], fp: &FluidParams) -> Vec<f32> {
    density.par_iter().map(|&r| tait(r, fp)).collect()
}

/// Stage `dfsph_eos`: κ_i = tait(ρ_i) / ρ_i.
pub fn dfsph_eos(density: &[f32], fp: &FluidParams) -> Vec<f32> {
    density.par_iter().map(|&r| tait(r, fp) / r).collect()
}

/// The signal speed c(ρ) + v of a particle of density `rho` at speed `speed`: the Tait
/// equation's sound speed c² = dp/dρ = c0² (ρ/ρ0)⁶, c0 below ρ0 where the pressure is clamped
/// (Monaghan 2005, Rep. Prog. Phys. 68, §10: the CFL condition takes each particle's own).
/// With c0 alone a compressed start (1.42 ρ0, where c = 2.9 c0) is stepped past its stability
/// limit. The GPU's twin is `signal_speed` in dfsph_timestep.wgsl.
#[inline]
pub fn signal_speed(speed: f32, rho: f32, fp: &FluidParams) -> f32 {
    let x = (rho / fp.rest_density).max(1.0);
    fp.sound_speed * (x * x * x) + speed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let fp = FluidParams {
            rest_density: 1000.0,
            stiffness: 1e5,
            sound_speed: 20.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let k = dfsph_eos(&[1010.0, 990.0, 1000.0], &fp);
        assert!((k[0] - 7213.5 / 1010.0).abs() < 1e-3, "{}", k[0]);
        assert_eq!(k[1], 0.0);
        assert_eq!(k[2], 0.0);
        assert!((signal_speed(1.0, 1100.0, &fp) - 27.62).abs() < 1e-4);
        assert_eq!(signal_speed(1.0, 900.0, &fp), 21.0);
    }
}
