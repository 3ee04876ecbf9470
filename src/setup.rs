//! From what the user asked for to a ready run, the same way for every front end: a
//! [`RunSpec`] (built from flags and scene file by the application layer) sizes the particles
//! ([`RunSpec::start`]: the scene, the device's limits, a front end's own check) and a
//! [`Setup`] derives the rest from them (the configuration for the solver's grid, the tank,
//! the head the speed of sound is sized for, the fluid and solver parameters, the obstacles'
//! boundary particles, the emitters). The viewer starts and restarts from a `Setup`; a headless
//! run makes its checkpoint template from one ([`Setup::template`]); the density-only run takes
//! its particles from [`RunSpec::start`]. Also the one-line description of a run's geometry
//! (printed at start, recorded in `--stats` and checkpoints).

use glam::Vec3;

use crate::Result;
use crate::core::Particles;
use crate::gpu::check_limits;
use crate::params::{
    ConfigOverrides, DfsphConfig, FluidParams, PhysicsConfig, SphConfig, validate_positions,
    validate_velocities,
};
use crate::scene::SceneChoice;
use crate::solver::{Solver, SolverParams};

/// Where a run's fluid comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// A built-in scene (sized by N) or a scene file's description (whose bodies fix N).
    Scene(SceneChoice),
    /// Particles read from a file (`--input`): no tank, obstacles or emitters of their own.
    Particles {
        /// The file's path, for messages and the run's first line.
        name: String,
        /// Positions, m.
        positions: Vec<Vec3>,
        /// Velocities, m/s.
        velocities: Vec<Vec3>,
    },
}

/// One run as the user asked for it, from flags and scene file: every front end (the viewer,
/// headless runs, `--verify`, `--bench`, the density-only run) builds its particles with
/// [`RunSpec::start`] and a fluid run its whole set-up with [`Setup::new`].
#[derive(Clone, Debug)]
pub struct RunSpec {
    /// Where the fluid comes from.
    pub source: Source,
    /// Particle count (of a built-in scene; a scene file's bodies and an input file fix their
    /// own).
    pub particles: u32,
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
    /// The tank's corners when the user gave them (`--tank-min/--tank-max`); otherwise the
    /// scene's, or for particles from a file their bounding box grown by 2h on every side.
    pub tank: Option<(Vec3, Vec3)>,
    /// Whether the run steps: a density-only run (`--steps 0`) releases no emitter's fluid.
    pub steps: bool,
}

/// A run's particles before any parameter is derived from them ([`RunSpec::start`]).
#[derive(Clone, Debug)]
pub struct Start {
    /// Initial positions, input order, m.
    pub positions: Vec<Vec3>,
    /// Initial velocities, m/s.
    pub velocities: Vec<Vec3>,
    /// Where they came from, for the run's first line ("scene dam-break (seed 0)", a path).
    pub source: String,
    /// A scene's tank corners and fluid size (`None` for particles from a file).
    pub geometry: Option<(Vec3, Vec3, Vec3)>,
    /// Fluid points the obstacles carved out of the bodies.
    pub carved: usize,
    /// Fluid points left out for lying closer than s/2 to a tank wall.
    pub walled: usize,
    /// The most particles the scene's emitters add during the run.
    pub emitted: u64,
}

/// A scene ready to simulate.
#[derive(Clone, Debug)]
pub struct Setup {
    /// Grid configuration (mass calibrated to the lattice unless the user set one).
    pub config: SphConfig,
    /// The physics asked for (the fluid parameters below are derived from it).
    pub physics: PhysicsConfig,
    /// Fluid uniform block.
    pub fluid_params: FluidParams,
    /// Initial state, input order (an emitter's first layers leave at the run's first step).
    pub state: Particles,
    /// Where the particles came from ([`Start::source`]).
    pub source: String,
    /// Lower corner of the tank.
    pub tank_min: Vec3,
    /// Upper corner of the tank.
    pub tank_max: Vec3,
    /// Size of the initial fluid body.
    pub fluid_size: Vec3,
    /// The scene's obstacles as the file describes them.
    pub shapes: Vec<crate::obstacle::Obstacle>,
    /// The scene's obstacles as boundary particles (`None` without obstacles).
    pub obstacles: Option<std::sync::Arc<crate::boundary::Boundary>>,
    /// The scene's emitters.
    pub emitters: crate::emitter::Emitters,
    /// The solver and its parameters.
    pub solver: SolverParams,
    /// Fluid points the obstacles carved out of the bodies ([`Start::carved`]).
    pub carved: usize,
    /// Fluid points left out near the walls ([`Start::walled`]).
    pub walled: usize,
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
/// file's description passed its checks, which bound the nozzles; in 2D the description is
/// the file's section by the plane, its nozzles cut to their chords). With `limits`, the
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
    emitted: impl FnOnce(&crate::scene::SceneDesc) -> u64,
    limits: Option<&wgpu::Limits>,
    before_build: impl FnOnce(u32) -> Result<()>,
) -> Result<(crate::scene::Scene, u64)> {
    // A built-in scene is sized by N, so N and T are checked before it is built; a file's
    // bodies decide N (their fill is bounded by the description's checks), and a run holds at
    // most that many plus what its emitters add.
    let dim = SphConfig::new(1, overrides)?.dim;
    check_planar_choice(choice, dim)?;
    // A 2D run fills a scene file's section by the plane z = 0.
    let planar;
    let choice = match choice {
        SceneChoice::Described { name, desc } if dim == 2 => {
            planar = SceneChoice::Described {
                name: name.clone(),
                desc: std::sync::Arc::new(desc.in_plane(name, s)?),
            };
            &planar
        }
        _ => choice,
    };
    let (n, emitted) = match choice {
        SceneChoice::Builtin(kind) => {
            check_builtin_fits(*kind, particles, s, dim)?;
            (particles, 0)
        }
        SceneChoice::Described { desc, name } => {
            desc.validate(name, s)?;
            let emitted = emitted(desc);
            let filled = desc.count(s);
            if filled == 0 {
                return Err(crate::Error::input(format!(
                    "{name}: its fluid bodies hold no particle at spacing {s} m (none farther than the boundary's standoff, {:.2} s, from the obstacles and s/2 from the walls): enlarge them, move them off the obstacles and walls or use a smaller spacing",
                    crate::obstacle::standoff(s, dim) / s
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
    Ok((choice.build_in(n as usize, s, seed, dim)?, emitted))
}

/// The run's tank and fluid size: a scene's, or for particles from a file their bounding box
/// grown by 2h on every side; `--tank-min/--tank-max` replace the corners (checked: below
/// each other, every particle inside); a 2D run's z walls then move off its plane
/// ([`planar_tank`]).
fn run_tank(
    spec: &RunSpec,
    config: &SphConfig,
    positions: &[Vec3],
    geometry: Option<(Vec3, Vec3, Vec3)>,
) -> Result<(Vec3, Vec3, Vec3)> {
    let (tank_min, tank_max, fluid_size) = geometry.unwrap_or_else(|| {
        let lo = positions.iter().copied().fold(Vec3::INFINITY, Vec3::min);
        let hi = positions
            .iter()
            .copied()
            .fold(Vec3::NEG_INFINITY, Vec3::max);
        let pad = Vec3::splat(2.0 * config.smoothing_radius);
        (lo - pad, hi + pad, hi - lo)
    });
    let (tank_min, tank_max) = match spec.tank {
        Some((lo, hi)) => {
            // A 2D run's z walls lie ±h off its plane whatever the flags say.
            let axes = if config.planar() { 2 } else { 3 };
            if let Some(a) = (0..axes).find(|&a| lo[a] >= hi[a]) {
                return Err(crate::Error::input(format!(
                    "--tank-min {lo} is not below --tank-max {hi} in {}: each coordinate of --tank-min must be smaller than --tank-max's (swap them?)",
                    ["x", "y", "z"][a]
                )));
            }
            if let Some(k) = positions
                .iter()
                .position(|p| !(p.cmpge(lo).all() && p.cmple(hi).all()))
            {
                return Err(crate::Error::input(format!(
                    "particle {k} at {} lies outside the tank {lo} – {hi}: enlarge --tank-min/--tank-max",
                    positions[k]
                )));
            }
            (lo, hi)
        }
        None => (tank_min, tank_max),
    };
    let (tank_min, tank_max) = match config.planar() {
        true => planar_tank(
            positions,
            (tank_min, tank_max),
            config.smoothing_radius,
            &spec.source,
        )?,
        false => (tank_min, tank_max),
    };
    Ok((tank_min, tank_max, fluid_size))
}

/// Refuses, in a 2D run, the built-in `random` (its packing is 3D) in one line naming what a
/// 2D run takes (a scene file's own refusals: [`crate::scene::SceneDesc::in_plane`]).
fn check_planar_choice(choice: &SceneChoice, dim: u32) -> Result<()> {
    match choice {
        SceneChoice::Builtin(crate::scene::SceneKind::Random) if dim == 2 => {
            Err(crate::Error::input(
                "scene random has no 2D form (its random packing is three-dimensional): a 2D run takes the built-in scenes dam-break, cube (a resting tank) and drop, a scene file (its section by the plane z = 0), or particles from a file (--input) lying in that plane",
            ))
        }
        _ => Ok(()),
    }
}

/// In a 2D run, refuses particles off the plane z = 0 (naming the first, a file's data row)
/// and moves the tank's z walls to ±h, where no particle of the plane sees them: the walls'
/// images exist within h of a wall only, so the plane has no z images and no z clamp, and the
/// 3D stages on points at z = 0 are the 2D method (every d.z and every z force is 0).
fn planar_tank(
    positions: &[Vec3],
    (mut lo, mut hi): (Vec3, Vec3),
    h: f32,
    source: &Source,
) -> Result<(Vec3, Vec3)> {
    if let Some(k) = positions.iter().position(|p| p.z != 0.0) {
        let what = match source {
            Source::Particles { name, .. } => format!("{name}: data row {} (particle {k})", k + 1),
            _ => format!("particle {k}"),
        };
        return Err(crate::Error::input(format!(
            "{what} lies at z = {} off the plane z = 0 of a 2D run (--dim 2): give every particle z = 0, or drop --dim 2",
            positions[k].z
        )));
    }
    lo.z = lo.z.min(-h);
    hi.z = hi.z.max(h);
    Ok((lo, hi))
}

/// A built-in scene's tank grows with N, and at a few particles it is one spacing thin along
/// some axis, where no fluid fits: refused naming -n and the least N that fills the scene
/// (only small N is tried: from 1 000 particles on every scene is many spacings across).
fn check_builtin_fits(kind: crate::scene::SceneKind, n: u32, s: f32, dim: u32) -> Result<()> {
    // The tank alone, not the filled scene: a packed body relaxes a glass tile, and filling
    // up to a thousand scenes to find the bound would take minutes. A 2D tank is one spacing
    // thin in z by design: x and y count.
    let fits = |n: u32| match dim {
        2 => {
            let sc = crate::scene::SceneDesc::builtin_planar(kind, n as usize, s);
            (sc.tank_max - sc.tank_min)
                .truncate()
                .cmpgt(glam::Vec2::splat(s))
                .all()
        }
        _ => {
            let sc = crate::scene::SceneDesc::builtin(kind, n as usize, s);
            (sc.tank_max - sc.tank_min).cmpgt(Vec3::splat(s)).all()
        }
    };
    if n >= 1000 || fits(n) {
        return Ok(());
    }
    // Not monotonic at the smallest N (a column may be one particle thick at 8 and two at 3),
    // so the bound names the N from which on every count fits.
    let least = (1..1000).rev().find(|&k| !fits(k)).map_or(1, |k| k + 1);
    Err(crate::Error::input(format!(
        "-n {n} is too few particles for scene {}: its tank would be one spacing thin; pass -n {least} or more",
        kind.name()
    )))
}

/// A run's fluid parameters: the physics on the configuration and tank, with the speed of
/// sound sized for `head` ([`run_head`]; a warning on stderr where the chosen speed of sound is
/// too low for it), and the tank's open sides.
pub fn fluid_params(
    physics: &PhysicsConfig,
    config: &SphConfig,
    (tank_min, tank_max): (Vec3, Vec3),
    head: f32,
    open: u32,
    slip: [Option<f32>; 6],
) -> Result<FluidParams> {
    if let Some(w) = physics.sound_speed_warning(head) {
        eprintln!("{w}");
    }
    let mut fp = physics.fluid_params(config, tank_min, tank_max, head)?;
    fp.open = open;
    for (side, b) in slip.iter().enumerate() {
        if let Some(b) = b {
            let code = crate::params::slip_code(Some(*b))?;
            if side % 2 == 0 {
                fp.slip_lo[side / 2] = code;
            } else {
                fp.slip_hi[side / 2] = code;
            }
        }
    }
    Ok(fp)
}

impl RunSpec {
    /// The spacing the configuration derives from the overrides.
    fn spacing(&self) -> Result<f32> {
        Ok(SphConfig::new(1, self.overrides)?.spacing)
    }

    /// The scene file's description (its obstacles, emitters and open sides); `None` for a
    /// built-in scene and particles from a file.
    fn described(&self) -> Option<&crate::scene::SceneDesc> {
        match &self.source {
            Source::Scene(SceneChoice::Described { desc, .. }) => Some(desc),
            _ => None,
        }
    }

    /// The run's particles, sized and checked ([`sized_scene`]; `before_build` sees the count
    /// first, as a headless run's host-memory probe does). Particles from a file are taken as
    /// they are.
    pub fn start(
        &self,
        limits: Option<&wgpu::Limits>,
        before_build: impl FnOnce(u32) -> Result<()>,
    ) -> Result<Start> {
        match &self.source {
            Source::Particles {
                name,
                positions,
                velocities,
            } => Ok(Start {
                positions: positions.clone(),
                velocities: velocities.clone(),
                source: name.clone(),
                geometry: None,
                carved: 0,
                walled: 0,
                emitted: 0,
            }),
            Source::Scene(choice) => {
                let spacing = self.spacing()?;
                // Only a run that steps releases the emitters' particles.
                let emitted = |desc: &crate::scene::SceneDesc| match self.steps {
                    true => crate::emitter::Emitters {
                        list: desc.emitters.clone(),
                        s: spacing,
                    }
                    .total(),
                    false => 0,
                };
                let (scene, emitted) = sized_scene(
                    choice,
                    self.particles,
                    spacing,
                    self.seed,
                    self.overrides,
                    emitted,
                    limits,
                    before_build,
                )?;
                Ok(Start {
                    source: format!("scene {} (seed {})", choice.label(), self.seed),
                    geometry: Some((scene.tank_min, scene.tank_max, scene.fluid_size)),
                    carved: scene.carved,
                    walled: scene.walled,
                    positions: scene.positions,
                    velocities: scene.velocities,
                    emitted,
                })
            }
        }
    }
}

impl Setup {
    /// Builds the run of `spec`; with `limits`, first checks that N and T fit the device so
    /// an oversized request fails before the particles are made (`before_build` as in
    /// [`RunSpec::start`]).
    pub fn new(
        spec: &RunSpec,
        limits: Option<&wgpu::Limits>,
        before_build: impl FnOnce(u32) -> Result<()>,
    ) -> Result<Self> {
        let start = spec.start(limits, before_build)?;
        // Sized for the most particles the run holds, with the solver's grid.
        let n = u32::try_from(start.positions.len() as u64 + start.emitted).map_err(|_| {
            crate::Error::input(
                "more than 2^32 particles: split the input or shorten the emitters' windows",
            )
        })?;
        let config = SphConfig::for_solver(n, spec.overrides, spec.solver)?;
        if let Some(limits) = limits {
            check_limits(limits, config.particles, config.table_size)?;
        }
        let Start {
            mut positions,
            velocities,
            source,
            geometry,
            carved,
            walled,
            ..
        } = start;
        validate_positions(&positions, config.smoothing_radius, "particle")?;
        validate_velocities(&velocities, "particle")?;
        check_start_speeds(&velocities, &spec.source)?;
        check_neighbour_count(&positions, &config)?;
        let (tank_min, tank_max, fluid_size) = run_tank(spec, &config, &positions, geometry)?;
        check_tank_reach(tank_min, tank_max, config.spacing, spec)?;
        check_start(&positions, &config, &spec.source)?;
        // A scene's fall is its fluid body's height; a file's, from its highest particle to
        // the floor, never less than h.
        let drop = match geometry {
            Some(_) => fluid_size.y,
            None => PhysicsConfig::drop_height(&positions, tank_min.y, config.smoothing_radius),
        };
        // A 2D run's obstacles are their sections by the plane (checked when the scene was
        // filled, `SceneDesc::in_plane`).
        let section = match spec.described() {
            Some(d) if config.planar() => Some(d.in_plane("the scene", config.spacing)?),
            _ => None,
        };
        let desc = section.as_ref().or(spec.described());
        let (shapes, nozzles) =
            desc.map_or((&[][..], &[][..]), |d| (&d.obstacles[..], &d.emitters[..]));
        let head = run_head(
            &spec.physics,
            drop,
            &velocities,
            shapes,
            nozzles,
            tank_min.y,
        );
        let fluid_params = fluid_params(
            &spec.physics,
            &config,
            (tank_min, tank_max),
            head,
            desc.map_or(0, |d| d.open),
            desc.map_or([None; 6], |d| d.slip),
        )?;
        let mut solver = SolverParams::new(spec.solver, &spec.dfsph, &config, &spec.physics)?;
        {
            let dp = solver.stages_mut();
            let top = crate::obstacle::top_speeds(shapes)
                .iter()
                .map(|v| v.length())
                .fold(0.0f32, f32::max);
            dp.bound_by_obstacle_speed(top);
        }
        if spec.physics.hydrostatic_start && spec.solver.weakly_compressible() {
            hydrostatic_start(&mut positions, config.spacing, &fluid_params);
        }
        let obstacles =
            crate::obstacle::boundary(shapes, config.spacing, &config.sim_params(), &fluid_params)
                .map(std::sync::Arc::new);
        let solver = crate::obstacle::with_friction_of(solver, obstacles.as_deref());
        Ok(Self {
            config,
            physics: spec.physics,
            fluid_params,
            state: Particles::new(positions, velocities),
            source,
            tank_min,
            tank_max,
            fluid_size,
            shapes: shapes.to_vec(),
            obstacles,
            emitters: crate::emitter::Emitters {
                list: nozzles.to_vec(),
                s: config.spacing,
            },
            solver,
            carved,
            walled,
        })
    }

    /// The run's geometry and physics line ([`describe`] and the solver's).
    pub fn describe(&self) -> String {
        describe(
            &self.config,
            &self.fluid_params,
            &self.physics,
            self.tank_min,
            self.tank_max,
            self.fluid_size,
        ) + &self.solver.describe(self.config.kernel)
    }

    /// What every checkpoint of this run shares, at its start.
    pub fn template(&self) -> crate::checkpoint::Template {
        let header = crate::checkpoint::Header {
            program: env!("CARGO_PKG_VERSION").into(),
            solver: self.solver.solver(),
            step: 0,
            t: 0.0,
            n: self.config.particles,
            dt: 0.0,
            start_energy: None,
            obstacle_work: 0.0,
            solver_stats: None,
            solver_state: Default::default(),
            config: self.config,
            physics: self.physics,
            source: self.source.clone(),
            geometry: self.describe(),
            tank: [
                self.tank_min.to_array(),
                self.tank_max.to_array(),
                self.fluid_size.to_array(),
            ],
            obstacles: self.shapes.clone(),
            emitters: self.emitters.list.clone(),
            emitted_energy: 0.0,
            removed_energy: 0.0,
        };
        crate::checkpoint::Template {
            header,
            sim_params: self.config.sim_params(),
            fluid_params: self.fluid_params,
            solver: self.solver,
        }
    }
}

/// Refuses, before the run, a start whose failure a step would blame on the time step:
/// particles closer than half a spacing (overlapping bodies, repeated points: they start at
/// many times ρ0 and the first step blows them apart), and a fluid in which no particle has
/// another within h (every density is a particle's own: there is no fluid to simulate). One
/// line naming the particles, their place and the fix. Worked example: a file repeating
/// (0.1, 0.1, 0.1) on its rows 3 and 7 → "... data rows 3 and 7 ...".
fn check_start(positions: &[Vec3], config: &SphConfig, source: &Source) -> Result<()> {
    let (s, h) = (config.spacing, config.smoothing_radius);
    if let Some((i, j)) = Cells::new(positions, 0.5 * s).first_pair() {
        let (p, q) = (positions[i], positions[j]);
        let at = format!(
            "particles {i} and {j} start {:.3e} m apart at {p} and {q}, closer than half the spacing ({} m), so the first step would blow them apart",
            p.distance(q),
            0.5 * s
        );
        return Err(crate::Error::input(match source {
            Source::Particles { name, .. } => format!(
                "{name}: {at}: its data rows {} and {} repeat a point or lie too close; remove one, or pass the spacing the points were made at (--spacing)",
                i + 1,
                j + 1
            ),
            Source::Scene(SceneChoice::Described { name, .. }) => format!(
                "{name}: {at}: two of its fluid bodies overlap there; move them apart or shrink one"
            ),
            Source::Scene(SceneChoice::Builtin(kind)) => {
                format!("scene {}: {at}; use a larger --spacing", kind.name())
            }
        }));
    }
    if positions.len() == 1 {
        let what = match source {
            Source::Particles { name, .. } => format!("{name} holds one particle"),
            Source::Scene(SceneChoice::Described { name, .. }) => {
                format!("{name} fills one particle")
            }
            Source::Scene(SceneChoice::Builtin(kind)) => format!("scene {} at -n 1", kind.name()),
        };
        return Err(crate::Error::input(format!(
            "{what}: a fluid needs two or more (one alone has no neighbour, so no pressure and no viscosity): give more particles"
        )));
    }
    if lonely(positions, h) {
        return Err(crate::Error::input(lonely_line(config, positions)));
    }
    Ok(())
}

/// WCSPH's hydrostatic start: lowers every particle by the compression that the Tait equation
/// of state, p = B((ρ/ρ0)^7 − 1), gives the water under it at hydrostatic pressure, so a fluid
/// at rest starts in equilibrium instead of falling into it.
///
/// Inputs: positions of fluid at rest, the spacing s, B, ρ0 and g (down) from `fp`. Output:
/// the positions moved down in place; x and z unchanged. Exact for a lattice fill (its columns
/// are vertical lines of particles); a random fill's columns hold only the particles within s/2
/// of one another horizontally, so its start is only near hydrostatic.
///
/// A particle's column is every particle within s/2 of it horizontally; the column's free
/// surface is its highest particle + s/2 and its floor its lowest − s/2. At depth d the
/// pressure is ρ0 g d and a layer shrinks by f(d) = ρ0/ρ = (1 + a d)^(−1/7), a = ρ0 g / B; the
/// water between the surface and depth d shortens by C(d) = ∫0^d (1 − f) = d − (7/6a)((1 +
/// a d)^(6/7) − 1), so a particle at depth d over a column of height D sinks by C(D) − C(d)
/// (the floor stays). Worked example: the default column (D = 0.44 m, c = 29.38 m/s, B =
/// ρ0 c²/7 = 1.233e5 Pa, a = 0.0796 /m, s = 0.01 m): the top particle (d = s/2) sinks
/// 1.086 mm, the bottom one (d = D − s/2) 0.024 mm. Without it WCSPH's column first falls that
/// millimetre under gravity and rings at its acoustic period 4D/c (60 ms) for seconds: with
/// free-slip walls only the artificial viscosity damps that ring (measured,
/// docs/validation.md in the git history). A code that carries density as a field can start it at
/// the hydrostatic value; with density by summation the positions must carry it. DFSPH's fluid is
/// incompressible and needs none.
pub fn hydrostatic_start(positions: &mut [Vec3], s: f32, fp: &FluidParams) {
    let g = -fp.gravity[1] as f64;
    if g <= 0.0 || fp.stiffness <= 0.0 || positions.is_empty() {
        return;
    }
    let a = fp.rest_density as f64 * g / fp.stiffness as f64;
    let shortening = |d: f64| d - 7.0 / (6.0 * a) * ((1.0 + a * d).powf(6.0 / 7.0) - 1.0);
    // Columns: cells of s in x and z, each particle's column read from its 3 × 3 cells.
    let key = |p: Vec3| ((p.x / s).floor() as i64, (p.z / s).floor() as i64);
    let mut cells: std::collections::HashMap<(i64, i64), Vec<usize>> = Default::default();
    for (k, &p) in positions.iter().enumerate() {
        cells.entry(key(p)).or_default().push(k);
    }
    let r2 = 0.25 * s * s;
    let drops: Vec<f32> = positions
        .iter()
        .map(|&p| {
            let (cx, cz) = key(p);
            let (mut lo, mut hi) = (p.y, p.y);
            for dx in -1..=1 {
                for dz in -1..=1 {
                    for &j in cells.get(&(cx + dx, cz + dz)).map_or(&[][..], |v| &v[..]) {
                        let q = positions[j];
                        let (ex, ez) = (q.x - p.x, q.z - p.z);
                        if ex * ex + ez * ez < r2 {
                            lo = lo.min(q.y);
                            hi = hi.max(q.y);
                        }
                    }
                }
            }
            let top = hi as f64 + 0.5 * s as f64;
            let depth = top - p.y as f64;
            let height = top - (lo as f64 - 0.5 * s as f64);
            (shortening(height) - shortening(depth)) as f32
        })
        .collect();
    for (p, d) in positions.iter_mut().zip(drops) {
        p.y -= d;
    }
}

/// Whether the particles at `positions` (one or more) have no other within `h`: a particle
/// alone has none.
pub fn lonely(positions: &[Vec3], h: f32) -> bool {
    positions.len() == 1
        || (positions.len() >= 2 && Cells::new(positions, h).first_pair().is_none())
}

/// The most neighbours a particle may have on average at the start. SPH runs with 30–150
/// (poly6 at 2 s: 33; Wendland C2 at 3 s: 113) and the wide kernels of Dehnen & Aly (2012) with
/// up to about 400; a step's work grows with the count: at h/s = 50 (half a million each) one
/// step of 10 000 particles takes 33 s on the development machine.
pub const MAX_NEIGHBOURS: usize = 1024;

/// Refuses, before any work that grows with it, a smoothing radius that gives the particles
/// more than [`MAX_NEIGHBOURS`] neighbours on average: counted by brute force around up to 256
/// particles spread through `positions`, so a file's own spacing counts, not the configured one.
pub fn check_neighbour_count(positions: &[Vec3], config: &SphConfig) -> Result<()> {
    if positions.len() <= MAX_NEIGHBOURS {
        return Ok(());
    }
    let h2 = config.smoothing_radius * config.smoothing_radius;
    let stride = positions.len().div_ceil(256);
    let sampled: Vec<usize> = (0..positions.len()).step_by(stride).collect();
    let total: usize = sampled
        .iter()
        .map(|&i| {
            let p = positions[i];
            positions
                .iter()
                .filter(|q| p.distance_squared(**q) < h2)
                .count()
                - 1
        })
        .sum();
    let mean = total / sampled.len();
    if mean <= MAX_NEIGHBOURS {
        return Ok(());
    }
    let (s, h) = (config.spacing, config.smoothing_radius);
    Err(crate::Error::input(format!(
        "the smoothing radius h = {h} m gives each particle about {mean} neighbours (h/s = {:.1} at s = {s} m), more than the {MAX_NEIGHBOURS} a step can walk in reasonable time (SPH uses 30 to 400): pass a smaller --smoothing-radius (2 to 4 spacings), or a --spacing that matches the particles",
        h / s
    )))
}

/// The fastest start a run takes, m/s: a tenth of [`crate::params::MAX_SOUND_SPEED`], since
/// the weakly compressible model needs a speed of sound ten times the flow's (Monaghan 1994)
/// and DFSPH's time step λ s/|v| falls below `--min-dt` long before.
pub const MAX_START_SPEED: f32 = crate::params::MAX_SOUND_SPEED / 10.0;

/// Refuses a start velocity faster than [`MAX_START_SPEED`], naming the particle (a file's
/// data row) and the column, instead of the speed of sound it would derive.
fn check_start_speeds(velocities: &[Vec3], source: &Source) -> Result<()> {
    let Some(k) = velocities
        .iter()
        .position(|v| v.abs().max_element() > MAX_START_SPEED)
    else {
        return Ok(());
    };
    let v = velocities[k];
    let column = ["vx", "vy", "vz"][v.abs().max_position()];
    let at = match source {
        Source::Particles { name, .. } => {
            format!("{name}: data row {} (particle {k}), column {column}", k + 1)
        }
        Source::Scene(SceneChoice::Described { name, .. }) => {
            format!("{name}: particle {k}'s velocity, {column}")
        }
        Source::Scene(SceneChoice::Builtin(kind)) => {
            format!("scene {}: particle {k}, {column}", kind.name())
        }
    };
    Err(crate::Error::input(format!(
        "{at}: a start velocity of ({:?}, {:?}, {:?}) m/s is faster than {MAX_START_SPEED} m/s, which no speed of sound within {} m/s can follow: correct the value (a unit mistake?)",
        v.x,
        v.y,
        v.z,
        crate::params::MAX_SOUND_SPEED
    )))
}

/// How far from the origin, in spacings, a tank may reach: f32 positions there resolve
/// 1/128 of the spacing (2¹⁶ s · 2⁻²³), and every pair's x_i − x_j loses bits beyond it.
pub const TANK_REACH_SPACINGS: f32 = 65_536.0;

/// Refuses a tank that reaches farther from the origin than [`TANK_REACH_SPACINGS`] spacings
/// (in a tank of ±1e30 m the potential energy, 2e31 J, would scale the energy guard into
/// silence), naming where the tank came from.
fn check_tank_reach(tank_min: Vec3, tank_max: Vec3, s: f32, spec: &RunSpec) -> Result<()> {
    let reach = tank_min.abs().max(tank_max.abs()).max_element();
    let most = TANK_REACH_SPACINGS * s;
    if reach.is_finite() && reach <= most {
        return Ok(());
    }
    let what = match (&spec.tank, &spec.source) {
        (Some(_), _) => "--tank-min/--tank-max".to_string(),
        (None, Source::Particles { name, .. }) => format!("{name}: its particles"),
        (None, Source::Scene(SceneChoice::Described { name, .. })) => format!("{name}: its tank"),
        (None, Source::Scene(SceneChoice::Builtin(kind))) => format!("scene {}", kind.name()),
    };
    Err(crate::Error::input(format!(
        "{what} reach {} m from the origin, more than {} spacings ({most} m at s = {s} m), where f32 positions resolve less than 1/128 of the spacing: use a smaller tank placed near the origin, or a larger --spacing",
        crate::summary::plain(f64::from(reach), 4),
        TANK_REACH_SPACINGS
    )))
}

/// Points binned into cubic cells of side r, for the start checks. Serial on purpose: the
/// first use of rayon's pool starts a thread per core, each reserving a malloc arena of
/// 64 MiB of address space, which under an address-space limit can abort the process before
/// the run's own allocations fail in one line (`tests/suite/faults.rs`).
struct Cells<'a> {
    positions: &'a [Vec3],
    r: f32,
    /// Point indices ordered by cell.
    order: Vec<u32>,
    /// Each occupied cell's range in `order`.
    ranges: std::collections::HashMap<(i32, i32, i32), (u32, u32)>,
}

impl<'a> Cells<'a> {
    fn new(positions: &'a [Vec3], r: f32) -> Self {
        let inv = 1.0 / r;
        let cell = |p: Vec3| {
            let c = (p * inv).floor();
            (c.x as i32, c.y as i32, c.z as i32)
        };
        let mut keyed: Vec<((i32, i32, i32), u32)> = positions
            .iter()
            .enumerate()
            .map(|(i, &p)| (cell(p), i as u32))
            .collect();
        keyed.sort_unstable();
        let mut ranges = std::collections::HashMap::new();
        let mut start = 0;
        for k in 1..=keyed.len() {
            if k == keyed.len() || keyed[k].0 != keyed[start].0 {
                ranges.insert(keyed[start].0, (start as u32, k as u32));
                start = k;
            }
        }
        Self {
            positions,
            r,
            order: keyed.into_iter().map(|(_, i)| i).collect(),
            ranges,
        }
    }

    /// The pair (i, j), i < j, closer than r with the smallest i, then the smallest j.
    fn first_pair(&self) -> Option<(usize, usize)> {
        let (inv, r2) = (1.0 / self.r, self.r * self.r);
        for (i, &p) in self.positions.iter().enumerate() {
            let c = (p * inv).floor();
            let (cx, cy, cz) = (c.x as i32, c.y as i32, c.z as i32);
            let mut best: Option<usize> = None;
            for dz in -1..=1 {
                for dy in -1..=1 {
                    for dx in -1..=1 {
                        let key = (
                            cx.saturating_add(dx),
                            cy.saturating_add(dy),
                            cz.saturating_add(dz),
                        );
                        let Some(&(a, b)) = self.ranges.get(&key) else {
                            continue;
                        };
                        for &j in &self.order[a as usize..b as usize] {
                            let j = j as usize;
                            if j > i && p.distance_squared(self.positions[j]) < r2 {
                                best = Some(best.map_or(j, |b| b.min(j)));
                            }
                        }
                    }
                }
            }
            if let Some(j) = best {
                return Some((i, j));
            }
        }
        None
    }
}

/// The one line that says a configuration's particles have no neighbours, and the fix, sized
/// from the points themselves: their median nearest-neighbour distance d is the spacing they
/// were made at (suggesting 2 s from the configured spacing sent a sparse file's user back
/// to the value they had just passed).
pub fn lonely_line(config: &SphConfig, positions: &[Vec3]) -> String {
    let (s, h) = (config.spacing, config.smoothing_radius);
    let head = format!(
        "no particle has another within the smoothing radius h = {h} m (the spacing is {s} m): every density is a particle's own"
    );
    match typical_spacing(positions) {
        Some(d) => format!(
            "{head}; the points lie about {} m apart (the median distance to the nearest): pass --spacing {} and no --smoothing-radius (it follows the spacing), or a --smoothing-radius of at least {}",
            crate::summary::plain(f64::from(d), 3),
            crate::summary::plain(f64::from(d), 3),
            crate::summary::plain(f64::from(2.0 * d), 3)
        ),
        None => format!("{head}; give two or more particles"),
    }
}

/// The median distance from a point to its nearest other, over up to 256 points spread
/// through `positions` (each against all: bounded work at any N); `None` below two points.
fn typical_spacing(positions: &[Vec3]) -> Option<f32> {
    if positions.len() < 2 {
        return None;
    }
    let stride = positions.len().div_ceil(256);
    let mut nearest: Vec<f32> = (0..positions.len())
        .step_by(stride)
        .map(|i| {
            let p = positions[i];
            positions
                .iter()
                .enumerate()
                .filter(|&(j, _)| j != i)
                .map(|(_, q)| p.distance_squared(*q))
                .fold(f32::INFINITY, f32::min)
                .sqrt()
        })
        .collect();
    nearest.sort_by(f32::total_cmp);
    Some(nearest[nearest.len() / 2])
}

/// Fails with one line naming the device's limit when scene file `name`, which fills `n`
/// particles at spacing `s`, holds more than the device takes (the fix is in the file, not
/// in `-n`).
pub fn check_scene_fits(limits: &wgpu::Limits, name: &str, n: u32, s: f32) -> Result<()> {
    let cap = crate::grid::gpu::capacity(limits).max_particles;
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
    // The standard viscosity shows only where it acts (`--kinematic-viscosity 0` leaves it out).
    let nu = if fp.kinematic_viscosity > 0.0 {
        format!(", nu = {} m^2/s", fp.kinematic_viscosity)
    } else {
        String::new()
    };
    format!(
        "tank ({:.4}, {:.4}, {:.4}) to ({:.4}, {:.4}, {:.4}) m; fluid body {:.4} x {:.4} x {:.4} m; g = {} m/s^2, alpha = {}{nu}, mu = {} Pa s, c = {:.3} m/s, B = {:.4e} Pa, rho0 = {}, h = {}, m = {}",
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The worked example of [`hydrostatic_start`]: a 44-particle column (D = 0.44 m) at
    /// B = 1.233e5 Pa, beside a column half as high, each compressed by its own water.
    #[test]
    fn hydrostatic_start_lowers_each_column_by_its_own_compression() {
        let s = 0.01f32;
        let mut fp: FluidParams = bytemuck::Zeroable::zeroed();
        fp.gravity = [0.0, -9.81, 0.0, 0.0];
        fp.rest_density = 1000.0;
        fp.stiffness = 123_314.0;
        let tall = (0..44).map(|j| Vec3::new(0.5, j as f32 + 0.5, 0.5) * s);
        let short = (0..22).map(|j| Vec3::new(1.5, j as f32 + 0.5, 0.5) * s);
        let before: Vec<Vec3> = tall.chain(short).collect();
        let mut after = before.clone();
        hydrostatic_start(&mut after, s, &fp);
        let drop = |k: usize| 1e3 * (before[k].y - after[k].y) as f64;
        assert!((drop(43) - 1.0856).abs() < 2e-3, "top {} mm", drop(43));
        assert!((drop(0) - 0.0244).abs() < 2e-3, "bottom {} mm", drop(0));
        // The short column: C(0.22) − C(0.005).
        assert!(
            (drop(44 + 21) - 0.2731).abs() < 2e-3,
            "short top {} mm",
            drop(65)
        );
        // Layers closer the deeper they lie, never closer than the bottom's 1/f = 1.005.
        for k in 1..44 {
            let gap = (after[k].y - after[k - 1].y) / s;
            assert!(gap < 1.0 && gap > 0.994, "layer {k}: {gap}");
        }
        assert!(
            after
                .iter()
                .zip(&before)
                .all(|(a, b)| a.x == b.x && a.z == b.z)
        );
        // No gravity down, nothing moves.
        fp.gravity[1] = 9.81;
        let mut up = before.clone();
        hydrostatic_start(&mut up, s, &fp);
        assert_eq!(up, before);
    }
}
