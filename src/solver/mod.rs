//! The solvers, each in a home of its own: its CPU stages (the mirrors of its WGSL stages in
//! `shaders/solver/<name>/`), its GPU passes and the state it carries between steps.
//!
//! [`dfsph`]: the solvers' stages, DFSPH's (Bender & Koschier 2015, 2017) with its two solves and
//! WCSPH's (Becker & Teschner 2007), the same stages with the Tait equation of state's pressure
//! in place of the solves.

pub mod dfsph;

/// What a solver carries from one step to the next besides the particles (DFSPH: the last dt
/// and the iteration budget), as the shared layer holds it: opaque to all but the solver, which
/// reads and writes it ([`dfsph::DfsphCarry::to_carry`], [`dfsph::DfsphCarry::from_carry`]);
/// checkpoints store it as it is. The default, JSON's `null`, is a fresh run's: the solver starts
/// from its own defaults.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Carry(pub serde_json::Value);

/// Whether `carry` reads as the carried state of `solver`'s runs (a checkpoint's check);
/// Err says what does not.
pub fn check_carry(solver: &crate::params::SolverParams, carry: &Carry) -> Result<(), String> {
    dfsph::DfsphCarry::from_carry(carry, solver.stages()).map(|_| ())
}
