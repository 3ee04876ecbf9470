//! WGSL sources, embedded at compile time. `COMMON` is prepended to every stage.

/// Params struct, workgroup size, hash and kernel functions shared by every stage.
pub const COMMON: &str = include_str!("../shaders/common.wgsl");
/// The one neighbour walk, prepended (after `COMMON`) to the stages that walk: those that
/// define `struct Walker` or `fn dfsph_pair(`.
pub const WALK: &str = include_str!("../shaders/grid/walk.wgsl");

/// The member walker (`Walker`, `begin_round`, `end_round` over 8 `Member`s), prepended
/// (after `WALK`) to the stages that define `fn new_member(`.
pub const MEMBERS: &str = include_str!("../shaders/grid/members.wgsl");

/// The walls' boundary model, the tank's mirror images (the `boundary_*` functions the walks
/// ask: a particle's surroundings, a candidate's images, where each lies and how it moves, a
/// particle's own images; its hard walls, `clamp_to_box`), prepended (after `MEMBERS`) to the
/// stages that walk member by member or clamp to the tank; its Rust twin is `boundary::tank`
/// (`boundary::walls`). This line picks the wall model. The obstacles' model is `BOUNDARY`.
pub const BOUNDARY_TANK: &str = include_str!("../shaders/boundary_tank.wgsl");

/// The DFSPH pair walk and Wendland C2 kernel, prepended (after `WALK`) to the DFSPH stages
/// that walk: those that define `fn dfsph_pair`.
pub const DFSPH_PAIRS: &str = include_str!("../shaders/solver/dfsph/dfsph_pairs.wgsl");

/// The solves' per-particle fields in one buffer (`kappa_at`, `residual_at`, `kappa_sum_at`),
/// prepended (after `DFSPH_PAIRS`) to the stages that declare `solve_fields`.
pub const DFSPH_FIELDS: &str = include_str!("../shaders/solver/dfsph/dfsph_fields.wgsl");

/// The obstacles' boundary grid (bind group 1) and its one walk, prepended (last) to the
/// stages that define `fn boundary_pair(`.
pub const BOUNDARY: &str = include_str!("../shaders/boundary.wgsl");

/// Whether a stage evaluates the run's kernel (`kernel_w`, `kernel_grad`), itself, through
/// `DFSPH_PAIRS` or through the tank's model `BOUNDARY_TANK` (a particle's own images), which
/// every stage that walks member by member or clamps to the tank includes: [`source_with`]
/// then needs the kernel.
pub fn uses_kernel(stage_source: &str) -> bool {
    [
        "kernel_w(",
        "kernel_grad(",
        "fn dfsph_pair(",
        "fn new_member(",
        "clamp_to_",
    ]
    .iter()
    .any(|f| stage_source.contains(f))
}

/// The full source of a stage that does not evaluate the run's kernel ([`source_with`]).
pub fn source(stage_source: &str) -> String {
    source_with(stage_source, None)
}

/// The full source of a stage: `COMMON`, then the run's kernel's file
/// ([`Kernel::shader`](crate::kernel::Kernel::shader)) for a stage that evaluates it
/// ([`uses_kernel`]), `WALK` for a walking stage, `MEMBERS` for a stage whose walker works
/// member by member, `BOUNDARY_TANK` for those and the stages that clamp to the tank,
/// `DFSPH_PAIRS` for a DFSPH walking stage, `DFSPH_FIELDS` for a stage that binds the solves'
/// fields, `BOUNDARY` for a stage that walks the obstacles,
/// then the stage.
///
/// Panics when a stage evaluates the kernel and `kernel` is `None`: a pipeline built so would
/// not compile, and no default may stand in for the run's choice.
pub fn source_with(stage_source: &str, kernel: Option<crate::kernel::Kernel>) -> String {
    let mut s = format!("{COMMON}\n");
    if uses_kernel(stage_source) {
        let kernel = kernel.expect("a stage that evaluates the kernel is built with the run's");
        s += kernel.shader();
        s += "\n";
    }
    let members = stage_source.contains("fn new_member(");
    if stage_source.contains("struct Walker") || members {
        s += WALK;
        s += "\n";
    }
    if members {
        s += MEMBERS;
        s += "\n";
    }
    if members || stage_source.contains("clamp_to_") {
        s += BOUNDARY_TANK;
        s += "\n";
    }
    if stage_source.contains("fn dfsph_pair(") {
        s += DFSPH_PAIRS;
        s += "\n";
    }
    if stage_source.contains("solve_fields:") {
        s += DFSPH_FIELDS;
        s += "\n";
    }
    if stage_source.contains("fn boundary_pair(") {
        s += BOUNDARY;
        s += "\n";
    }
    s + stage_source
}

/// [`source_with`] for a walking stage whose walker holds `members` particles (`MEMBERS` in
/// members.wgsl: the density group size, 8 or 1).
pub fn source_for(
    stage_source: &str,
    members: u32,
    kernel: Option<crate::kernel::Kernel>,
) -> String {
    // members.wgsl declares the largest walker (`tests/suite/layout.rs` checks it is GROUP).
    source_with(stage_source, kernel).replace(
        &format!("const MEMBERS: u32 = {}u;", crate::core::limits::GROUP),
        &format!("const MEMBERS: u32 = {members}u;"),
    )
}

/// Stage `hash`: slot and atomic rank per particle, counts per slot.
pub const HASH: &str = include_str!("../shaders/grid/hash.wgsl");
/// Stage `scan`: in-place exclusive prefix sum of the counts (entry points `scan_reduce`,
/// `scan_block`).
pub const SCAN: &str = include_str!("../shaders/grid/scan.wgsl");
/// Stage `scatter`: ids grouped by slot.
pub const SCATTER: &str = include_str!("../shaders/grid/scatter.wgsl");
/// Stage `order`: each slot's ids sorted ascending.
pub const ORDER: &str = include_str!("../shaders/grid/order.wgsl");
/// Stage `reorder`: particle state gathered into slot order.
pub const REORDER: &str = include_str!("../shaders/grid/reorder.wgsl");
/// Stage `density`: the 27-cell poly6 density.
pub const DENSITY: &str = include_str!("../shaders/density.wgsl");
/// Stage `stats`: the step's statistics, one block per 256 particles (`stats_blocks`); the host
/// folds them.
pub const STATS: &str = include_str!("../shaders/stats.wgsl");
/// Stage `interact`: the viewer's mouse force around the cursor ray.
pub const INTERACT: &str = include_str!("../shaders/interact.wgsl");
/// Stage `render`: particle sphere impostors and lines for the viewer.
pub const RENDER: &str = include_str!("../shaders/render.wgsl");
/// Stage `dfsph_density`: the run's kernel's density and the DFSPH factor α, with the density
/// error's block reductions.
pub const DFSPH_DENSITY: &str = include_str!("../shaders/solver/dfsph/dfsph_density.wgsl");
/// Stage `dfsph_galerkin`: the coarse levels' operator from the step's pairs.
pub const DFSPH_GALERKIN: &str = include_str!("../shaders/solver/dfsph/dfsph_galerkin.wgsl");
/// Stage `dfsph_levels`: every coarse level's rows, in one workgroup.
pub const DFSPH_LEVELS: &str = include_str!("../shaders/solver/dfsph/dfsph_levels.wgsl");
/// Stage `dfsph_restrict`: a solve's residual summed onto the coarse cells.
pub const DFSPH_RESTRICT: &str = include_str!("../shaders/solver/dfsph/dfsph_restrict.wgsl");
/// Stage `dfsph_coarse`: the coarse solve, in one workgroup.
pub const DFSPH_COARSE: &str = include_str!("../shaders/solver/dfsph/dfsph_coarse.wgsl");
/// Stage `dfsph_prolong`: the coarse correction back on the particles.
pub const DFSPH_PROLONG: &str = include_str!("../shaders/solver/dfsph/dfsph_prolong.wgsl");
/// Stage `dfsph_eos`: WCSPH's stiffness p/ρ from the Tait equation of state.
pub const DFSPH_EOS: &str = include_str!("../shaders/solver/dfsph/dfsph_eos.wgsl");
/// Stage `dfsph_pressure`: the velocity update of a solve from the stiffness κ.
pub const DFSPH_PRESSURE: &str = include_str!("../shaders/solver/dfsph/dfsph_pressure.wgsl");
/// Stage `dfsph_rate`: density change rate, stiffness and residual of a solve.
pub const DFSPH_RATE: &str = include_str!("../shaders/solver/dfsph/dfsph_rate.wgsl");
/// Stage `dfsph_blocks`: per-block sums and maxima of a per-particle value.
pub const DFSPH_BLOCKS: &str = include_str!("../shaders/solver/dfsph/dfsph_blocks.wgsl");
/// Stage `dfsph_accel`: gravity and viscosity.
pub const DFSPH_ACCEL: &str = include_str!("../shaders/solver/dfsph/dfsph_accel.wgsl");
/// Stage `dfsph_timestep`: dt = λ s / max|v + a dt|.
pub const DFSPH_TIMESTEP: &str = include_str!("../shaders/solver/dfsph/dfsph_timestep.wgsl");
/// Stage `dfsph_predict`: v* = v + a dt.
pub const DFSPH_PREDICT: &str = include_str!("../shaders/solver/dfsph/dfsph_predict.wgsl");
/// Stage `dfsph_integrate`: positions and the tank's clamp.
pub const DFSPH_INTEGRATE: &str = include_str!("../shaders/solver/dfsph/dfsph_integrate.wgsl");
/// Stage `emitter_probe`: the fluid in the slab an emitter's next layer would fill.
pub const EMITTER_PROBE: &str = include_str!("../shaders/emitter_probe.wgsl");
/// Stage `grain_contacts`: the colliding spheres' contact forces (CPU mirror:
/// `grains::contacts`).
pub const GRAIN_CONTACTS: &str = include_str!("../shaders/grains/grain_contacts.wgsl");
/// Stage `grain_integrate`: the colliding spheres' symplectic Euler step (CPU mirror:
/// `grains::integrate`).
pub const GRAIN_INTEGRATE: &str = include_str!("../shaders/grains/grain_integrate.wgsl");
/// The viewer's screen-space fluid surface (no CPU mirror: it draws).
pub const SURFACE: &str = include_str!("../shaders/surface.wgsl");

/// Stage `rows`: the neighbour library's compressed rows (entry points `rows_count`,
/// `rows_fill`).
pub const ROWS: &str = include_str!("../shaders/rows.wgsl");
/// Offscreen rendering of a surface mesh (no CPU mirror: it draws).
pub const MESH: &str = include_str!("../shaders/mesh.wgsl");

/// A trivial kernel for the GPU smoke test (not prefixed with `COMMON`).
pub const SMOKE: &str = include_str!("../shaders/smoke.wgsl");
