//! The CPU reference path: one module per WGSL stage, each the mirror of its shader, with the
//! same buffers and the same loop structure, so the two read side by side. The poly6 density,
//! the mouse force and the statistics are here; the solvers' shared stages are in `dfsph/`, as
//! their shaders are in `shaders/dfsph/` (WCSPH is those stages with the equation of state's
//! pressure, [`dfsph::eos`]); the grid's stages are [`crate::grid`]'s.

pub mod clock;
pub mod density;
pub mod dfsph;
pub mod interact;
pub mod simd;
pub mod stats;
