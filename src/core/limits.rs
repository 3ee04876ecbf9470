//! Sizes the WGSL and the Rust must agree on, defined once. Each WGSL twin is named beside its
//! constant; `tests/suite/shaders.rs` reads the shaders' values with naga and compares.

/// Invocations per workgroup in every stage (`WORKGROUP_SIZE` in common.wgsl), and so the
/// elements per first-level block of every fixed-tree reduction (statistics, time step,
/// residuals).
pub const WORKGROUP_SIZE: u32 = 256;

/// Elements per first-level block of the fixed-tree reductions: one workgroup's worth.
pub const REDUCE_BLOCK: u32 = WORKGROUP_SIZE;

/// Particles per walking group (`GROUP` in common.wgsl, `MEMBERS` in members.wgsl at its
/// largest): the grouped walks (density, walls, forces, DFSPH) fetch each candidate once for up
/// to this many consecutive particles of one slot, on both paths.
pub const GROUP: u32 = 8;

/// Elements one `scan` workgroup handles (`SCAN_BLOCK` in scan.wgsl).
pub const SCAN_BLOCK: u32 = 2048;

/// Most particles accepted on any path (about 13 GiB of CPU state at ~100 B per particle).
pub const MAX_PARTICLES: u32 = 1 << 27;

/// Particles a DFSPH run may hold: a pair of its pair lists packs the candidate's index into
/// 26 bits (at this size the pair lists alone would take about 100 GB).
pub const DFSPH_MAX_PARTICLES: u32 = 1 << 26;

/// Largest table the scan supports (2^24 slots: `slot_start` then holds 2^24 + 1 u32s).
pub const MAX_TABLE_SIZE: u32 = 1 << 24;
