//! One full CPU step, the mirror of `Simulation::encode_step`: grid → reorder → density →
//! walls → pressure → forces → timestep → integrate. Every stage's output is kept so verification can
//! compare each one with the GPU's.

use std::time::Instant;

use glam::Vec3;

use super::forces::{self, Fields};
use super::reorder::{self, Particles};
use super::timestep::{self, Timestep};
use super::{Grid, density, integrate, pressure, walls};
use crate::gpu::Stage;
use crate::params::{FluidParams, SimParams};

/// Everything one step computed, in the step's slot order.
#[derive(Clone, Debug)]
pub struct StepTrace {
    /// The neighbour grid.
    pub grid: Grid,
    /// The state gathered into slot order.
    pub sorted: Particles,
    /// Densities from the real neighbours (stage `density`).
    pub density: Vec<f32>,
    /// Densities with the walls' mirror particles (stage `walls`): what the fluid feels.
    pub fluid_density: Vec<f32>,
    /// Pressures.
    pub pressure: Vec<f32>,
    /// Accelerations.
    pub acc: Vec<Vec3>,
    /// dt, v_max, a_max.
    pub timestep: Timestep,
    /// The state after the step (slot order of this step).
    pub next: Particles,
    /// Wall time of each stage, ms, in pipeline order (for `--bench --steps`).
    pub stage_ms: Vec<(Stage, f64)>,
}

/// Advances `state` by one step.
pub fn step(state: &Particles, sp: &SimParams, fp: &FluidParams) -> StepTrace {
    step_with(state, sp, fp, None)
}

/// [`step`] with the viewer's mouse force added to the accelerations after `forces`, where the
/// GPU step dispatches `interact`.
pub fn step_with(
    state: &Particles,
    sp: &SimParams,
    fp: &FluidParams,
    interaction: Option<&crate::cpu::interact::InteractParams>,
) -> StepTrace {
    let ms = |t: Instant| t.elapsed().as_secs_f64() * 1e3;
    let (grid, gt) = Grid::build_timed(&state.pos, sp);
    let mut stage_ms = vec![
        (Stage::Hash, gt.hash.as_secs_f64() * 1e3),
        (Stage::Scan, gt.scan.as_secs_f64() * 1e3),
        (Stage::Scatter, gt.scatter.as_secs_f64() * 1e3),
    ];
    let t = Instant::now();
    let sorted = reorder::reorder(state, &grid.sorted_ids);
    stage_ms.push((Stage::Reorder, ms(t)));
    let t = Instant::now();
    let density = density::density(&sorted.pos, &grid.slot_start, sp).density;
    stage_ms.push((Stage::Density, ms(t)));
    let t = Instant::now();
    let fluid_density = walls::walls(&sorted.pos, &density, &grid.slot_start, sp, fp);
    stage_ms.push((Stage::Walls, ms(t)));
    let t = Instant::now();
    let pressure = pressure::pressure(&fluid_density, fp);
    stage_ms.push((Stage::Pressure, ms(t)));
    let fields = Fields {
        pos: &sorted.pos,
        vel: &sorted.vel,
        density: &fluid_density,
        pressure: &pressure,
    };
    let t = Instant::now();
    let mut acc = forces::forces(&fields, &grid.slot_start, sp, fp);
    stage_ms.push((Stage::Forces, ms(t)));
    if let Some(ip) = interaction {
        crate::cpu::interact::interact(&sorted.pos, &mut acc, ip);
    }
    let t = Instant::now();
    let timestep = timestep::timestep(&sorted.vel, &acc, sp, fp);
    stage_ms.push((Stage::Timestep, ms(t)));
    let t = Instant::now();
    let next = integrate::integrate(&sorted, &acc, timestep.dt, fp);
    stage_ms.push((Stage::Integrate, ms(t)));
    StepTrace {
        grid,
        sorted,
        density,
        fluid_density,
        pressure,
        acc,
        timestep,
        next,
        stage_ms,
    }
}
