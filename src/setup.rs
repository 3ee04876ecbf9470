//! From user settings to a ready simulation: the configuration, the scene and the fluid
//! parameters (the viewer's start and restart), and the one-line description of a run's
//! geometry (printed by the headless runner, shown in `--stats`). Both front ends take the fluid
//! configuration from [`SphConfig::for_fluid`], so a scene means the same thing in either.

use glam::Vec3;

use crate::Result;
use crate::core::Particles;
use crate::gpu::check_limits;
use crate::params::{
    ConfigOverrides, DfsphConfig, FluidParams, PhysicsConfig, Solver, SolverParams, SphConfig,
    validate_positions, validate_velocities,
};
use crate::scene::SceneChoice;

/// What the user asked for.
#[derive(Clone, Debug)]
pub struct SetupOptions {
    /// Particle count (of a built-in scene; a scene file's bodies fix their own).
    pub particles: u32,
    /// The scene.
    pub scene: SceneChoice,
    /// Seed of the scene's randomness.
    pub seed: u64,
    /// Table size, smoothing radius, spacing, mass, rest density.
    pub overrides: ConfigOverrides,
    /// Gravity, viscosity, speed of sound, time step…
    pub physics: PhysicsConfig,
    /// The pressure solver.
    pub solver: Solver,
    /// DFSPH's settings, used when it is the solver.
    pub dfsph: DfsphConfig,
}

/// A scene ready to simulate.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Grid configuration (mass calibrated to the lattice unless the user set one).
    pub config: SphConfig,
    /// Fluid uniform block.
    pub fluid_params: FluidParams,
    /// Initial state, input order.
    pub state: Particles,
    /// Lower corner of the tank.
    pub tank_min: Vec3,
    /// Upper corner of the tank.
    pub tank_max: Vec3,
    /// Size of the initial fluid body.
    pub fluid_size: Vec3,
    /// The scene's obstacles as boundary particles (`None` without obstacles).
    pub obstacles: Option<std::sync::Arc<crate::boundary::Boundary>>,
    /// The scene's emitters; `state` holds the layers that leave at t = 0.
    pub emitters: crate::emitter::Emitters,
    /// The solver and its parameters.
    pub solver: SolverParams,
}

/// The head H the reference speed of sound is sized for ([`PhysicsConfig::head`]): the
/// fluid's fall `drop` at its own starting speeds, at least; moving obstacles push the fluid, so
/// their top speeds count as the fluid's; emitted fluid falls from its nozzle to the floor
/// `floor` (never less than `drop`) at its jet speed. The one rule every front end sizes c by.
pub fn run_head(
    physics: &PhysicsConfig,
    drop: f32,
    velocities: &[Vec3],
    obstacles: &[crate::obstacle::Obstacle],
    emitters: &[crate::emitter::Emitter],
    floor: f32,
) -> f32 {
    let mut head = physics.head(drop, velocities);
    if !obstacles.is_empty() {
        head = head.max(physics.head(drop, &crate::obstacle::top_speeds(obstacles)));
    }
    for e in emitters {
        let jet = Vec3::from(e.direction).normalize_or_zero() * e.speed;
        head = head.max(physics.head((e.position[1] - floor).max(drop), &[jet]));
    }
    head
}

/// The scene of `choice` at spacing `s`, sized for a run and checked before it is made: a
/// built-in scene holds `particles`; a file's bodies fill what they fill (none is an error
/// naming the fix), plus the particles its emitters may add, `emitted()` (asked only once the
/// file's description passed its checks, which bound the nozzles). With `limits`, the
/// particle count (and the table of the grid that holds it) must fit the device; `before_build`
/// sees the count and may refuse it (a headless run's host-memory probe) before the particles
/// are made. Returns the scene and what its emitters may add. The one sizing every front end
/// goes through. Worked example: a file filling 950 particles with emitters adding up to 108
/// is checked at 1 058.
#[allow(clippy::too_many_arguments)]
pub fn sized_scene(
    choice: &SceneChoice,
    particles: u32,
    s: f32,
    seed: u64,
    overrides: ConfigOverrides,
    emitted: impl FnOnce() -> u64,
    limits: Option<&wgpu::Limits>,
    before_build: impl FnOnce(u32) -> Result<()>,
) -> Result<(crate::scene::Scene, u64)> {
    // A built-in scene is sized by N, so N and T are checked before it is built; a file's
    // bodies decide N (their fill is bounded by the description's checks), and a run holds at
    // most that many plus what its emitters add.
    let (n, emitted) = match choice {
        SceneChoice::Builtin(_) => (particles, 0),
        SceneChoice::Described { desc, name } => {
            desc.validate(name, s)?;
            let emitted = emitted();
            let filled = desc.count(s);
            if filled == 0 {
                return Err(crate::Error::input(format!(
                    "{name}: its fluid bodies hold no particle at spacing {s} m (none farther than s from the obstacles and s/2 from the walls): enlarge them, move them off the obstacles and walls or use a smaller spacing"
                )));
            }
            let n = u32::try_from(filled + emitted).unwrap_or(u32::MAX);
            if let Some(limits) = limits {
                check_scene_fits(limits, name, n, s)?;
            }
            (n, emitted)
        }
    };
    let cfg = SphConfig::new(n, overrides)?;
    if let Some(limits) = limits {
        check_limits(limits, cfg.particles, cfg.table_size)?;
    }
    before_build(n)?;
    Ok((choice.build(n as usize, s, seed)?, emitted))
}

/// A run's fluid parameters: the physics on the configuration and tank, with the speed of
/// sound sized for the head [`run_head`] gives (the fall `drop` from the floor at `tank_min.y`,
/// the starting `velocities`, moving obstacles and jets; a warning on stderr where the chosen
/// speed of sound is too low for it), and the tank's open sides. The one place every front end
/// (the viewer's [`Setup`], a headless run) makes them.
#[allow(clippy::too_many_arguments)]
pub fn fluid_params(
    physics: &PhysicsConfig,
    config: &SphConfig,
    (tank_min, tank_max): (Vec3, Vec3),
    drop: f32,
    velocities: &[Vec3],
    obstacles: &[crate::obstacle::Obstacle],
    nozzles: &[crate::emitter::Emitter],
    open: u32,
) -> Result<FluidParams> {
    let head = run_head(physics, drop, velocities, obstacles, nozzles, tank_min.y);
    if let Some(w) = physics.sound_speed_warning(head) {
        eprintln!("{w}");
    }
    let mut fp = physics.fluid_params(config, tank_min, tank_max, head)?;
    fp.open = open;
    Ok(fp)
}

impl Setup {
    /// Builds the scene of `opts`; with `limits`, first checks that N and T fit the device so
    /// an oversized request fails before the particles are made.
    pub fn new(opts: &SetupOptions, limits: Option<&wgpu::Limits>) -> Result<Self> {
        let spacing = SphConfig::new(1, opts.overrides)?.spacing;
        let solver = opts.solver;
        let emitted = || match &opts.scene {
            SceneChoice::Described { desc, .. } => crate::emitter::Emitters {
                list: desc.emitters.clone(),
                s: spacing,
            }
            .total(),
            SceneChoice::Builtin(_) => 0,
        };
        let (scene, emitted) = sized_scene(
            &opts.scene,
            opts.particles,
            spacing,
            opts.seed,
            opts.overrides,
            emitted,
            limits,
            |_| Ok(()),
        )?;
        // Sized for the most particles the run holds, with the solver's grid.
        let n = u32::try_from(scene.positions.len() as u64 + emitted).unwrap_or(u32::MAX);
        let config = SphConfig::for_solver(n, opts.overrides, solver)?;
        if let Some(limits) = limits {
            check_limits(limits, config.particles, config.table_size)?;
        }
        validate_positions(&scene.positions, config.smoothing_radius, "particle")?;
        validate_velocities(&scene.velocities, "particle")?;
        let mut emitters = crate::emitter::Emitters {
            list: Vec::new(),
            s: config.spacing,
        };
        let (obstacles, nozzles) = match &opts.scene {
            SceneChoice::Described { desc, .. } => (&desc.obstacles[..], &desc.emitters[..]),
            SceneChoice::Builtin(_) => (&[][..], &[][..]),
        };
        emitters.list = nozzles.to_vec();
        let open = match &opts.scene {
            SceneChoice::Described { desc, .. } => desc.open,
            SceneChoice::Builtin(_) => 0,
        };
        let fluid_params = fluid_params(
            &opts.physics,
            &config,
            (scene.tank_min, scene.tank_max),
            scene.fluid_size.y,
            &scene.velocities,
            obstacles,
            nozzles,
            open,
        )?;
        let solver_params = SolverParams::new(solver, &opts.dfsph, &config, &opts.physics)?;
        let obstacles = match &opts.scene {
            SceneChoice::Described { desc, .. } => crate::obstacle::boundary(
                &desc.obstacles,
                config.spacing,
                &config.sim_params(),
                &fluid_params,
                &solver_params,
            )
            .map(std::sync::Arc::new),
            SceneChoice::Builtin(_) => None,
        };
        let mut state = Particles::new(scene.positions, scene.velocities);
        emitters
            .between_host(None, 0.0, &state.pos)
            .append_to(&mut state);
        Ok(Self {
            config,
            fluid_params,
            state,
            tank_min: scene.tank_min,
            tank_max: scene.tank_max,
            fluid_size: scene.fluid_size,
            obstacles,
            emitters,
            solver: solver_params,
        })
    }
}

/// Fails with one line naming the device's limit when scene file `name`, which fills `n`
/// particles at spacing `s`, holds more than the device takes (the fix is in the file, not
/// in `-n`).
pub fn check_scene_fits(limits: &wgpu::Limits, name: &str, n: u32, s: f32) -> Result<()> {
    let cap = crate::gpu::neighbours::capacity(limits).max_particles;
    if n > cap {
        return Err(crate::Error::LimitExceeded(format!(
            "{name} fills {n} particles at spacing {s} m, more than this adapter holds ({cap}, from max_storage_buffer_binding_size {} B and {} workgroups per dispatch): use a larger spacing or smaller bodies",
            limits.max_storage_buffer_binding_size, limits.max_compute_workgroups_per_dimension
        )));
    }
    Ok(())
}

/// The geometry and physics of a run as one line (printed at start, recorded in `--stats`).
pub fn describe(
    config: &SphConfig,
    fp: &FluidParams,
    physics: &PhysicsConfig,
    tank_min: Vec3,
    tank_max: Vec3,
    fluid_size: Vec3,
) -> String {
    format!(
        "tank ({:.4}, {:.4}, {:.4}) to ({:.4}, {:.4}, {:.4}) m; fluid body {:.4} x {:.4} x {:.4} m; g = {} m/s^2, alpha = {}, mu = {} Pa s, c = {:.3} m/s, B = {:.4e} Pa, rho0 = {}, h = {}, m = {}",
        tank_min.x,
        tank_min.y,
        tank_min.z,
        tank_max.x,
        tank_max.y,
        tank_max.z,
        fluid_size.x,
        fluid_size.y,
        fluid_size.z,
        physics.gravity,
        physics.alpha,
        physics.viscosity,
        fp.sound_speed,
        fp.stiffness,
        config.rest_density,
        config.smoothing_radius,
        config.particle_mass
    )
}
