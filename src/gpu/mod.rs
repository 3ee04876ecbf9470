//! The GPU path: context, timestamps, the solvers' passes (the grid's pipeline is
//! [`crate::grid::gpu`]).

pub mod buffers;
pub mod context;
pub mod dfsph;
pub mod fluid;
pub mod interact;
pub mod obstacles;
pub mod stats;
pub mod timer;

pub use crate::grid::gpu::{GpuNeighbours, check_limits};
pub use context::GpuContext;
pub use timer::Stage;
