//! Stage `dfsph_integrate`, the CPU mirror of `shaders/solver/dfsph/dfsph_integrate.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

use glam::Vec3;

use crate::boundary::walls::clamp_to_box;
use crate::grid::reorder::Particles;
use crate::params::FluidParams;

/// Stage `dfsph_integrate`: x' = x + v dt with the tank's hard clamp held `wall_inset` (half a
/// spacing) inside the walls, so a particle never meets its own mirror image (an outward
/// normal speed becomes −e times itself, as WCSPH's `integrate`), the next state in this
/// step's slot order.
/// Example, tank [0, 1]³, inset 0.005, e = 0, dt = 0.1: x = (0.5, 0.05, 0.5), v = (1, −1, 0)
/// → x' = (0.6, 0.005, 0.5), v' = (1, 0, 0).
pub fn dfsph_integrate(
    sorted: &Particles,
    dt: f32,
    fp: &FluidParams,
    wall_inset: f32,
) -> Particles {
    let inset = Vec3::splat(wall_inset);
    let lo = Vec3::from_slice(&fp.tank_min[..3]) + inset;
    let hi = Vec3::from_slice(&fp.tank_max[..3]) - inset;
    let (pos, vel) = (0..sorted.len())
        .map(|k| {
            let v = sorted.vel[k];
            clamp_to_box(sorted.pos[k] + v * dt, v, lo, hi, fp.restitution, fp.open)
        })
        .unzip();
    Particles {
        pos,
        vel,
        id: sorted.id.clone(),
    }
}
