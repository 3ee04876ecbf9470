//! From user settings to a ready simulation: the configuration, the scene and the fluid
//! parameters (the viewer's start and restart), and the one-line description of a run's
//! geometry (printed by the headless runner, shown in `--stats`). Both front ends take the fluid
//! configuration from [`SphConfig::for_fluid`], so a scene means the same thing in either.

use glam::Vec3;

use crate::Result;
use crate::cpu::reorder::Particles;
use crate::gpu::check_limits;
use crate::params::{
    ConfigOverrides, FluidParams, PhysicsConfig, SphConfig, validate_positions, validate_velocities,
};
use crate::scene::{Scene, SceneKind};

/// What the user asked for.
#[derive(Clone, Copy, Debug)]
pub struct SetupOptions {
    /// Particle count.
    pub particles: u32,
    /// Built-in scene.
    pub scene: SceneKind,
    /// Seed of the scene's randomness.
    pub seed: u64,
    /// Table size, smoothing radius, spacing, mass, rest density.
    pub overrides: ConfigOverrides,
    /// Gravity, viscosity, speed of sound, time step…
    pub physics: PhysicsConfig,
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
}

impl Setup {
    /// Builds the scene of `opts`; with `limits`, first checks that N and T fit the device so
    /// an oversized request fails before the particles are made.
    pub fn new(opts: &SetupOptions, limits: Option<&wgpu::Limits>) -> Result<Self> {
        let n = opts.particles;
        let config = SphConfig::for_fluid(n, opts.overrides)?;
        if let Some(limits) = limits {
            check_limits(limits, config.particles, config.table_size)?;
        }
        let scene = Scene::new(opts.scene, n as usize, config.spacing, opts.seed);
        validate_positions(&scene.positions, config.smoothing_radius, "particle")?;
        validate_velocities(&scene.velocities, "particle")?;
        if let Some(w) = opts.physics.sound_speed_warning(scene.fluid_size.y) {
            eprintln!("{w}");
        }
        let fluid_params = opts.physics.fluid_params(
            &config,
            scene.tank_min,
            scene.tank_max,
            scene.fluid_size.y,
        )?;
        Ok(Self {
            config,
            fluid_params,
            state: Particles::new(scene.positions, scene.velocities),
            tank_min: scene.tank_min,
            tank_max: scene.tank_max,
            fluid_size: scene.fluid_size,
        })
    }
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
