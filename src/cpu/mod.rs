//! The CPU reference path: one module per WGSL stage, each the mirror of its shader, with the
//! same buffers and the same loop structure, so the two read side by side. The poly6 density,
//! the mouse force and the statistics are here; each solver's stages are in its folder, as
//! their shaders are (`wcsph/` mirrors `shaders/wcsph/`, `dfsph/` mirrors `shaders/dfsph/`);
//! the grid's stages are [`crate::grid`]'s.

pub mod clock;
pub mod density;
pub mod dfsph;
pub mod interact;
pub mod simd;
pub mod stats;
pub mod wcsph;
