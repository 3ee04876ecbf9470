//! WGSL sources, embedded at compile time. `COMMON` is prepended to every stage.

/// Params struct, workgroup size, hash and kernel functions shared by every stage.
pub const COMMON: &str = include_str!("../shaders/common.wgsl");
/// Stage `hash`: slot and atomic rank per particle, counts per slot.
pub const HASH: &str = include_str!("../shaders/hash.wgsl");
/// Stage `scan`: in-place exclusive prefix sum of the counts (entry points `scan_reduce`,
/// `scan_block`).
pub const SCAN: &str = include_str!("../shaders/scan.wgsl");
/// Stage `scatter`: ids grouped by slot.
pub const SCATTER: &str = include_str!("../shaders/scatter.wgsl");
/// Stage `order`: each slot's ids sorted ascending.
pub const ORDER: &str = include_str!("../shaders/order.wgsl");
/// Stage `reorder`: particle state gathered into slot order.
pub const REORDER: &str = include_str!("../shaders/reorder.wgsl");
/// Stage `density`: the 27-cell poly6 density.
pub const DENSITY: &str = include_str!("../shaders/density.wgsl");
/// Stage `walls`: the density the tank's mirror particles add.
pub const WALLS: &str = include_str!("../shaders/walls.wgsl");
/// Stage `pressure`: Tait equation of state.
pub const PRESSURE: &str = include_str!("../shaders/pressure.wgsl");
/// Stage `forces`: pressure, viscosity and gravity accelerations.
pub const FORCES: &str = include_str!("../shaders/forces.wgsl");
/// Stage `timestep`: CFL time step from the largest speed and acceleration.
pub const TIMESTEP: &str = include_str!("../shaders/timestep.wgsl");
/// Stage `integrate`: symplectic Euler and the tank walls.
pub const INTEGRATE: &str = include_str!("../shaders/integrate.wgsl");
/// Stage `interact`: the viewer's mouse force around the cursor ray.
pub const INTERACT: &str = include_str!("../shaders/interact.wgsl");
/// Stage `render`: particle sphere impostors and lines for the viewer.
pub const RENDER: &str = include_str!("../shaders/render.wgsl");
/// A trivial kernel for the GPU smoke test (not prefixed with `COMMON`).
pub const SMOKE: &str = include_str!("../shaders/smoke.wgsl");

/// Every stage source with its label, for tests that parse them all.
pub const STAGES: [(&str, &str); 13] = [
    ("hash", HASH),
    ("scan", SCAN),
    ("scatter", SCATTER),
    ("order", ORDER),
    ("reorder", REORDER),
    ("density", DENSITY),
    ("walls", WALLS),
    ("pressure", PRESSURE),
    ("forces", FORCES),
    ("timestep", TIMESTEP),
    ("integrate", INTEGRATE),
    ("interact", INTERACT),
    ("render", RENDER),
];
