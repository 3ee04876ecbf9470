//! Stage `dfsph_timestep`, the CPU mirror of `shaders/solver/dfsph/dfsph_timestep.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use glam::Vec3;

use crate::params::{DfsphParams, FluidParams, SimParams};

/// Stage `dfsph_timestep`: dt = λ s / v_max, at most K · viscous_limit / S_max (K =
/// `viscous_substeps`; viscous_limit / S_max = ½ / S_max is the explicit viscous terms'
/// stability limit, see [`dfsph_accel`]), clamped to [dt_min, dt_max], v_max the largest
/// |v + a dt_prev| (the speed before the pressure solve); dt_max at rest without viscosity;
/// the forced dt if set. The non-pressure accelerations then advance the velocities in
/// n = ⌈dt / (viscous_limit / S_max)⌉ substeps (1 ≤ n ≤ K; 1 without viscosity) of dt / n
/// each, every one within the limit: explicit subcycling of the stiff viscous term, so the
/// viscosity's limit no longer sets the step where the flow's CFL step is longer. Returns
/// [`Timestep`].
///
/// WCSPH ([`DfsphParams::is_wcsph`]) adds the acoustic CFL condition: dt ≤ λ h / max_i of the
/// signal speed c(ρ_i) + |v_i + a_i dt_prev|, each particle's own ([`super::signal_speed`];
/// Monaghan 2005, §10), with h the kernel's support and the flow's Courant number λ.
///
/// Worked example: s = 0.01, λ = 0.4, v_max = 2 m/s, S_max = 400 /s, K = 2 → limit 1.25 ms,
/// dt = min(2 ms, 2.5 ms) = 2 ms in n = ⌈1.6⌉ = 2 substeps of 1 ms. WCSPH with h = 0.03,
/// c0 = 20 m/s, every ρ ≤ ρ0: signal speed 22 m/s, dt = min(2 ms, 0.4 · 0.03 / 22 = 0.545 ms).
#[allow(clippy::too_many_arguments)]
pub fn dfsph_timestep(
    vel: &[Vec3],
    acc: &[Vec3],
    rate: &[f32],
    density: &[f32],
    dt_prev: f32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> Timestep {
    let speeds = vel
        .iter()
        .zip(acc)
        .map(|(v, a)| (*v + *a * dt_prev).length());
    let v_max = speeds.clone().fold(0.0, f32::max);
    let signal = match dp.is_wcsph() {
        true => speeds
            .zip(density)
            .map(|(v, &rho)| super::signal_speed(v, rho, fp))
            .fold(0.0, f32::max),
        false => 0.0,
    };
    let s_max = rate.iter().copied().fold(0.0, f32::max);
    let limit = if s_max > 0.0 {
        dp.viscous_limit / s_max
    } else {
        0.0
    };
    let dt = if dp.dt_fixed > 0.0 {
        dp.dt_fixed
    } else {
        let mut dt = if v_max > 0.0 {
            dp.cfl * dp.spacing / v_max
        } else {
            dp.dt_max
        };
        if dp.is_wcsph() {
            dt = dt.min(dp.cfl * sp.h / signal);
        }
        if s_max > 0.0 {
            dt = dt.min(dp.viscous_substeps as f32 * limit);
        }
        dt.max(dp.dt_min).min(dp.dt_max)
    };
    let substeps = if s_max > 0.0 {
        (dt / limit).ceil().clamp(1.0, dp.viscous_substeps as f32)
    } else {
        1.0
    };
    Timestep {
        dt,
        v_max,
        substeps: substeps as u32,
        dt_sub: dt / substeps,
    }
}

/// What [`dfsph_timestep`] decides: the step, the speed it was taken for, and the viscous
/// substeps that make it up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timestep {
    /// The step, s.
    pub dt: f32,
    /// The largest speed before the pressure solve, m/s.
    pub v_max: f32,
    /// Substeps of the non-pressure accelerations, 1..=K.
    pub substeps: u32,
    /// Each substep, dt / substeps, s.
    pub dt_sub: f32,
}
