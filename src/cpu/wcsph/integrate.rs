//! Stage `integrate`, the CPU mirror of `shaders/wcsph/integrate.wgsl`.
//!
//! Inputs (slot order): positions, velocities, original ids, accelerations (N), dt. Output: the
//! next state, still in this step's slot order: symplectic Euler, v' = v + a dt, x' = x + v' dt,
//! then the tank's hard walls (`crate::boundary::tank::clamp_to_tank`): a coordinate past a wall is put back on it and an outward normal speed becomes
//! −e times itself (e ≤ 1), so walls never add energy and no particle ever leaves. (The walls'
//! mirror particles in `walls` and `forces` normally stop particles before they get there; the
//! clamp is the guarantee for a violent impact within one step.)
//!
//! Worked example, tank [0, 1]³, e = 0, dt = 0.1: x = (0.5, 0.05, 0.5),
//! v = (1, −1, 0), a = 0 → x' = (0.6, −0.05, 0.5) → clamped to (0.6, 0, 0.5), v' = (1, 0, 0).

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::tank::clamp_to_tank;
use crate::grid::reorder::Particles;
use crate::params::FluidParams;

/// Advances one particle and applies the walls.
#[inline]
pub fn advance(x: Vec3, v: Vec3, a: Vec3, dt: f32, fp: &FluidParams) -> (Vec3, Vec3) {
    let v = v + a * dt;
    clamp_to_tank(x + v * dt, v, fp)
}

/// Runs the integrate stage on slot-order state.
pub fn integrate(sorted: &Particles, acc: &[Vec3], dt: f32, fp: &FluidParams) -> Particles {
    let (pos, vel) = (0..sorted.len())
        .into_par_iter()
        .map(|k| advance(sorted.pos[k], sorted.vel[k], acc[k], dt, fp))
        .unzip();
    Particles {
        pos,
        vel,
        id: sorted.id.clone(),
    }
}
