//! The GPU path: context, timestamps, the fluid's shared buffers, statistics, the mouse force and
//! the obstacles' passes (the grid's pipeline is [`crate::grid::gpu`], each solver's passes are
//! in its home, [`crate::solver`]).

pub mod buffers;
pub mod context;
pub mod fluid;
pub mod interact;
pub mod obstacles;
pub mod stats;
pub mod timer;

pub use crate::grid::gpu::{GpuNeighbours, check_limits};
pub use context::GpuContext;
pub use timer::Stage;
