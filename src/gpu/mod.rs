//! The GPU path: context, neighbour pipeline, timestamps.

pub mod context;
pub mod dfsph;
pub mod fluid;
pub mod interact;
pub mod neighbours;
pub mod obstacles;
pub mod stats;
pub mod timer;
pub mod wcsph;

pub use context::GpuContext;
pub use neighbours::{GpuNeighbours, check_limits};
pub use timer::Stage;
