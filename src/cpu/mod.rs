//! The CPU reference path: one module per WGSL stage, each the mirror of its shader, with the
//! same buffers and the same loop structure, so the two read side by side. The poly6 density,
//! the mouse force and the statistics are here; each solver's stages are in its home,
//! [`crate::solver`], and the grid's in [`crate::grid`].

pub mod clock;
pub mod density;
pub mod interact;
pub mod simd;
pub mod stats;
