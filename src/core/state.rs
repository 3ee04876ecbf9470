//! The particle state and the snapshot of a run, as every layer hands them on.

use glam::Vec3;

use super::stats::SolverStats;

/// Particle state: positions, velocities and each particle's original (input) index.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Particles {
    /// Positions, m.
    pub pos: Vec<Vec3>,
    /// Velocities, m/s.
    pub vel: Vec<Vec3>,
    /// Index of each particle in the input.
    pub id: Vec<u32>,
}

impl Particles {
    /// State in input order: ids 0..N.
    pub fn new(pos: Vec<Vec3>, vel: Vec<Vec3>) -> Self {
        let id = (0..pos.len() as u32).collect();
        Self { pos, vel, id }
    }

    /// Number of particles.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// Whether there are no particles.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Scatters per-particle values from this state's order back to input order.
    pub fn to_input_order<T: Copy + Default>(&self, values: &[T]) -> Vec<T> {
        let mut out = vec![T::default(); values.len()];
        for (&id, &v) in self.id.iter().zip(values) {
            out[id as usize] = v;
        }
        out
    }
}

/// A run's state after a step, in the order its path holds it (the GPU's slot order, or the
/// CPU's, which is the same).
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Positions, velocities and original ids.
    pub state: Particles,
    /// Density of each particle in the last step, with the walls' mirror particles.
    pub density: Vec<f32>,
    /// dt of the last step.
    pub dt: f32,
    /// The solver's statistics block of the last step (after a step).
    pub solver: Option<SolverStats>,
}

/// Where a run starts: step 0 of a fresh run, or a checkpoint's step, time and divergence-check
/// state.
#[derive(Clone, Copy, Debug, Default)]
pub struct RunFrom {
    /// Steps already taken.
    pub step: u64,
    /// Simulated time already run, s.
    pub t: f64,
    /// The energy the divergence check compares with.
    pub start_energy: Option<f64>,
    /// The work moving obstacles have done on the fluid since the start, J.
    pub obstacle_work: f64,
    /// The energy emitted particles brought in since the start, J.
    pub emitted_energy: f64,
    /// The energy particles that left through open sides took away since the start, J.
    pub removed_energy: f64,
}

/// What a solver carries from one step to the next besides the particles (DFSPH: the last dt
/// and the iteration budget), as the shared layer holds it: opaque to all but the solver, which
/// reads and writes it (`solver::dfsph::DfsphCarry::to_carry`, `from_carry`);
/// checkpoints store it as it is. The default, JSON's `null`, is a fresh run's: the solver starts
/// from its own defaults.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Carry(pub serde_json::Value);
