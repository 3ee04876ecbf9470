//! The integration tests, one module per subject, linked into one test binary
//! (`cargo test --test suite physics::` runs one module).
//!
//! Why one binary: each file under `tests/` is a crate of its own that links wgpu, winit and
//! egui, so 21 of them cost 21 links in a cold CI run, and `cargo test` runs binaries one after
//! another, so a binary holding one long test (the soak, the poured pile, the wide column) left
//! the second core idle for minutes. In one binary the harness runs every test on both cores
//! side by side. `tests/parsers.rs` stays a binary of its own: it counts the process's
//! allocations through its global allocator, which other tests running beside it would disturb.

mod common;

// The validation tool's readings (examples/validate/), which the physics tests apply too.
#[allow(dead_code)]
#[path = "../../examples/validate/collapse.rs"]
mod collapse;
#[allow(dead_code)]
#[path = "../../examples/validate/wave.rs"]
mod wave;

mod checkpoint;
mod cli;
mod dfsph;
mod docs;
mod faults;
mod fluid;
mod golden;
mod gpu_smoke;
mod gpu_stages;
mod grains;
mod grid_oracle;
mod imports;
mod inputs;
mod interact;
mod layout;
mod neighbours;
mod obstacles;
mod physics;
mod planar;
mod results;
mod scenes;
mod shaders;
mod soak;
mod solver;
mod surface;
mod viewer;
