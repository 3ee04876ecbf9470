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

/// Most level-1 cells of DFSPH's coarse grid (`dfsph_coarse` solves on them in one workgroup):
/// where the tank would need more at twice the support, the cells grow until it fits.
pub const MAX_COARSE_CELLS: u32 = 1 << 15;

/// Most levels of the coarse grid's hierarchy (`MAX_LEVELS` in common.wgsl): level 1 of at
/// most [`MAX_COARSE_CELLS`] cells halves per axis each level down to at most 2 per axis,
/// which takes at most 15 halvings of one axis.
pub const MAX_COARSE_LEVELS: usize = 16;
