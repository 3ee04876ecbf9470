//! The vocabulary every layer shares: the limits and constants the WGSL and the Rust agree on,
//! the stage table, and the particle state, snapshot and statistics blocks that the grid, the
//! solvers, the CPU mirror, the GPU passes and the front ends hand each other.
//!
//! Nothing here imports anything of the simulator (only [`crate::shaders`], the embedded WGSL
//! text, and [`crate::error`]): every other module may import `core`, and `core` none of them,
//! so it can never close an import circle.

pub mod limits;
pub mod stage;
pub mod state;
pub mod stats;

pub use stage::Stage;
pub use state::{Carry, Particles, RunFrom, Snapshot};
pub use stats::{SolverStats, StatsBlock};
