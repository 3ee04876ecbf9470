//! Stage `timestep`, the CPU mirror of `shaders/timestep.wgsl`.
//!
//! Inputs: velocities and accelerations (N). Output: the step's dt, with the largest speed and
//! acceleration. dt = min(dt_max, cfl · h/(c + v_max), 0.25 √(h/a_max)): the CFL condition of
//! WCSPH plus the usual force condition; `dt_fixed > 0` overrides both.
//!
//! Worked example: h = 0.02, c = 20, cfl = 0.4, v_max = 0 → 0.4 · 0.02 / 20 = 4e-4 s, unless
//! a_max > 0.25² · 0.02 / (4e-4)² = 7812.5 m/s² makes the force condition tighter.

use glam::Vec3;

use crate::params::{FluidParams, SimParams};

/// dt, v_max and a_max of one step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Timestep {
    /// Time step, s.
    pub dt: f32,
    /// Largest speed, m/s.
    pub v_max: f32,
    /// Largest acceleration, m/s².
    pub a_max: f32,
}

/// dt from the largest speed and acceleration.
pub fn choose_dt(v_max: f32, a_max: f32, sp: &SimParams, fp: &FluidParams) -> f32 {
    if fp.dt_fixed > 0.0 {
        return fp.dt_fixed;
    }
    let mut dt = fp.dt_max.min(fp.cfl * sp.h / (fp.sound_speed + v_max));
    if a_max > 0.0 {
        dt = dt.min(0.25 * (sp.h / a_max).sqrt());
    }
    dt
}

/// Runs the timestep stage.
pub fn timestep(vel: &[Vec3], acc: &[Vec3], sp: &SimParams, fp: &FluidParams) -> Timestep {
    let v_max = vel.iter().map(|v| v.length()).fold(0.0, f32::max);
    let a_max = acc.iter().map(|a| a.length()).fold(0.0, f32::max);
    Timestep {
        dt: choose_dt(v_max, a_max, sp, fp),
        v_max,
        a_max,
    }
}
