//! One full CPU step, the mirror of `Simulation::encode_step`: grid → reorder → density →
//! walls → pressure → forces → timestep → integrate. Every stage's output is kept so verification can
//! compare each one with the GPU's.

use glam::Vec3;

use super::forces::{self, Fields};
use super::timestep::{self, Timestep};
use super::{integrate, pressure, walls};
use crate::core::Stage;
use crate::cpu::clock::{record_grid, timed};
use crate::cpu::density;
use crate::grid::Grid;
use crate::grid::reorder::{self, Particles};
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
    /// dt, v_max, a_max, s_max.
    pub timestep: Timestep,
    /// Per particle (slot order), the power per unit mass the obstacles' push delivers,
    /// Σ_b a_ib · v_b (`obstacle_forces`; empty without obstacles).
    pub obstacle_power: Vec<f32>,
    /// The state after the step (slot order of this step).
    pub next: Particles,
}

/// Advances `state` by one step.
pub fn step(state: &Particles, sp: &SimParams, fp: &FluidParams) -> StepTrace {
    step_with(state, sp, fp, None, None)
}

/// [`step`] with the viewer's mouse force added to the accelerations after `forces`, where the
/// GPU step dispatches `interact`, and with obstacles: their density added after `walls`
/// (`obstacle_density`) and their push after `forces` and the mouse (`obstacle_forces`).
pub fn step_with(
    state: &Particles,
    sp: &SimParams,
    fp: &FluidParams,
    interaction: Option<&crate::cpu::interact::InteractParams>,
    obstacles: Option<&crate::boundary::Boundary>,
) -> StepTrace {
    let (grid, gt) = Grid::build_timed(&state.pos, sp);
    record_grid(&gt);
    let sorted = timed(Stage::Reorder, || reorder::reorder(state, &grid.sorted_ids));
    let density = timed(Stage::Density, || {
        density::density(&sorted.pos, &grid.slot_start, sp).density
    });
    let fluid_density = timed(Stage::Walls, || {
        walls::walls(&sorted.pos, &density, &grid.slot_start, sp, fp)
    });
    let (fluid_density, pressure) = match obstacles {
        Some(b) => timed(Stage::ObstacleDensity, || {
            crate::cpu::wcsph::obstacles::obstacle_density(&sorted.pos, &fluid_density, b, sp, fp)
        }),
        None => {
            let pressure = timed(Stage::Pressure, || pressure::pressure(&fluid_density, fp));
            (fluid_density, pressure)
        }
    };
    let fields = Fields {
        pos: &sorted.pos,
        vel: &sorted.vel,
        density: &fluid_density,
        pressure: &pressure,
    };
    let mut acc = timed(Stage::Forces, || {
        forces::forces(&fields, &grid.slot_start, sp, fp)
    });
    if let Some(ip) = interaction {
        crate::cpu::interact::interact(&sorted.pos, &mut acc, ip);
    }
    let obstacle_power = match obstacles {
        Some(b) => timed(Stage::ObstacleForces, || {
            crate::cpu::wcsph::obstacles::obstacle_forces(&fields, &mut acc, b, sp, fp)
        }),
        None => Vec::new(),
    };
    let timestep = timed(Stage::Timestep, || {
        timestep::timestep(&sorted.vel, &acc, &fluid_density, sp, fp)
    });
    let next = timed(Stage::Integrate, || {
        integrate::integrate(&sorted, &acc, timestep.dt, fp)
    });
    StepTrace {
        grid,
        sorted,
        density,
        fluid_density,
        pressure,
        acc,
        timestep,
        obstacle_power,
        next,
    }
}
