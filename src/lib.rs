//! gpu-sph: a smoothed particle hydrodynamics fluid simulator on wgpu compute shaders, with a
//! CPU reference path that validates every GPU stage.
#![warn(missing_docs)]

pub mod app;
pub mod bench;
pub mod boundary;
pub mod checkpoint;
pub mod core;
pub mod cpu;
pub mod emitter;
pub mod error;
pub mod gpu;
pub mod grains;
pub mod grid;
pub mod io;
pub mod kernel;
pub mod mesh;
pub mod motion;
pub mod obstacle;
pub mod params;
pub mod run;
pub mod scene;
pub mod scene_file;
pub mod series;
pub mod setup;
pub mod shaders;
pub mod shape;
pub mod solver;
pub mod summary;
pub mod surface;
pub mod verify;
pub mod viewer;

pub use error::{Error, Result};
/// The public neighbour library ([`grid::neighbours`]), at the crate's top as its users know it.
pub use grid::neighbours;
