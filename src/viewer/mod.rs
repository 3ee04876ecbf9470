//! The viewer: the simulation advancing on the GPU, drawn straight from its buffers (no copy to
//! the host per frame), with an egui control panel. [`Viewer`] is shared by the window
//! ([`window::run`]) and the offscreen renderer ([`run_offscreen`], `--headless --screenshot`),
//! so a screenshot shows exactly what the window shows.

pub mod camera;
pub mod grains;
pub mod input;
pub mod mesh;
pub mod render;
pub mod surface;
pub mod ui;
pub mod window;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use web_time::Instant;

use glam::Vec3;

use crate::cpu::interact::InteractParams;
use crate::gpu::GpuContext;
use crate::gpu::fluid::Simulation;
use crate::obstacle;
use crate::params::{ConfigOverrides, PhysicsConfig};
use crate::run::{Backend, Course, CpuSimulation, Guards, Hooks, RunFrom, Until, drive_async};
use crate::scene::SceneChoice;
use crate::setup::{RunSpec, Setup, Source};
use crate::{Error, Result};

use camera::OrbitCamera;
use render::{ColorField, DepthTarget, Renderer, View};
use surface::{RenderMode, SurfaceRenderer};
use ui::{Controls, FrameStats};

/// Everything the viewer starts from.
#[derive(Clone, Debug)]
pub struct ViewerOptions {
    /// Scene, particle count, configuration and physics.
    pub setup: RunSpec,
    /// Simulation steps per rendered frame (with `grains`, 0: sized to the simulated time per
    /// frame).
    pub substeps: u32,
    /// Field colouring the particles at start.
    pub field: ColorField,
    /// Window size or offscreen image size, pixels.
    pub size: (u32, u32),
    /// Presentation mode of the window.
    pub present_mode: wgpu::PresentMode,
    /// Save a screenshot here after `frames` frames, then exit.
    pub screenshot: Option<PathBuf>,
    /// Frames to render before the screenshot.
    pub frames: u32,
    /// After the screenshot, shrink the window to 0 × 0 and back and render again (the
    /// window test's check of minimise handling).
    pub exercise_resize: bool,
    /// Print the frame timings (mean simulation and render time per frame) at exit.
    pub print_timings: bool,
    /// Start with the control panel hidden (`H` toggles it).
    pub hide_ui: bool,
    /// Where the camera starts (each unset part from the framing of the tank).
    pub camera: CameraSettings,
    /// Spheres or the fluid surface at start (`S` toggles).
    pub render_mode: RenderMode,
    /// Where the simulation steps.
    pub path: SimPath,
    /// When the run counts as diverged: the viewer pauses with the headless run's message.
    pub guards: crate::run::Guards,
    /// Colliding spheres instead of the fluid (`--model grains`): their settings and the start
    /// (a pour, or a scene's bodies filled) that R returns to.
    pub grains: Option<(crate::grains::GrainConfig, crate::grains::GrainSetup)>,
}

/// A camera a scene file or the flags ask for: each part given replaces the default framing's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CameraSettings {
    /// The point the camera circles and looks at, m.
    pub target: Option<Vec3>,
    /// Distance from the target, m (> 0).
    pub distance: Option<f32>,
    /// Angle about the y axis, radians (0 looks along −z).
    pub yaw: Option<f32>,
    /// Angle above the horizontal, radians.
    pub pitch: Option<f32>,
}

impl CameraSettings {
    /// The tank's framing with the given parts replaced, for a viewport of `size` pixels with
    /// the panel open or not: without a target or distance given, the tank fills the area the
    /// panel leaves free and is centred there ([`OrbitCamera::fit`]); a target given is
    /// centred on the screen. A 2D run's camera (`planar`) is locked head on to its plane
    /// ([`OrbitCamera::lock_to_plane`]), whatever yaw and pitch say.
    pub fn camera_in(
        &self,
        tank_min: Vec3,
        tank_max: Vec3,
        size: (u32, u32),
        panel: bool,
        planar: bool,
    ) -> OrbitCamera {
        let aspect = size.0.max(1) as f32 / size.1.max(1) as f32;
        let left = if panel {
            (-1.0 + 2.0 * PANEL_WIDTH_PX / size.0.max(1) as f32).min(0.5)
        } else {
            -1.0
        };
        let mut cam = OrbitCamera::framing(tank_min, tank_max);
        cam.yaw = self.yaw.unwrap_or(cam.yaw);
        cam.pitch = self.pitch.unwrap_or(cam.pitch);
        if planar {
            cam.lock_to_plane();
        }
        if self.target.is_none() && self.distance.is_none() {
            cam.fit(tank_min, tank_max, aspect, (left, 1.0));
        }
        cam.target = self.target.unwrap_or(cam.target);
        cam.distance = self.distance.unwrap_or(cam.distance);
        cam
    }
}

/// The panel's width on screen, px (its 250 px of content with margins and the 8 px gap).
const PANEL_WIDTH_PX: f32 = 330.0;

/// Where the viewer's simulation steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SimPath {
    /// The GPU path, unless the adapter is a software renderer (lavapipe, WARP, SwiftShader):
    /// then the CPU path, which is faster there (said in one line on stderr).
    Auto,
    /// The CPU reference path; positions and the colouring fields are uploaded once per frame.
    Cpu,
    /// The GPU path, drawn straight from its buffers.
    Gpu,
}

/// Sums of frame timings, for `print_timings`.
#[derive(Clone, Copy, Debug, Default)]
struct Totals {
    frames: u32,
    sim_ms: f64,
    render_ms: f64,
}

/// The simulation, its renderer and the panel, independent of where frames go.
pub struct Viewer {
    ctx: Arc<GpuContext>,
    opts: ViewerOptions,
    /// What the viewer steps and draws.
    model: Model,
    renderer: Renderer,
    surface: SurfaceRenderer,
    format: wgpu::TextureFormat,
    camera: OrbitCamera,
    controls: Controls,
    stats: FrameStats,
    egui: egui::Context,
    egui_renderer: egui_wgpu::Renderer,
    depth: Option<DepthTarget>,
    last_frame: Option<Instant>,
    totals: Totals,
    warm: bool,
    /// The scene's scale for each colour field (the starting ranges): the fitted ranges'
    /// smallest span.
    scale: [(f32, f32); 3],
    /// Frames drawn so far.
    frames_drawn: u64,
    /// The size of the last frame, px (the framing's viewport).
    last_size: (u32, u32),
    /// The panel asked for the colour range to be fitted (the next frame's advance fits it).
    fit_asked: bool,
}

/// What the viewer steps and draws: the fluid or the colliding spheres (`--model grains`).
enum Model {
    Fluid(Box<Fluid>),
    Grains(Box<grains::GrainsMode>),
}

/// The fluid the viewer steps.
struct Fluid {
    /// The scene R returns to.
    setup: Setup,
    /// The GPU simulation: it steps on the GPU path, and holds what is drawn on both.
    sim: Simulation,
    /// The CPU path's simulation, when it steps the fluid.
    cpu: Option<CpuSimulation>,
    /// Where the run stands: step, time and the energy accounts the divergence check compares
    /// with (re-taken after the mouse force or a slider changes the energy's bookkeeping).
    at: RunFrom,
}

impl Fluid {
    /// The buffers the renderer draws.
    fn shown(&self) -> crate::gpu::fluid::Shown<'_> {
        self.sim.shown()
    }
}

/// The default colour ranges of a setup: speed up to the free-fall speed of its fluid height,
/// density ±3% about ρ0, pressure up to twice the hydrostatic pressure at the bottom.
fn default_ranges(setup: &Setup, gravity: f32) -> [(f32, f32); 3] {
    let g = gravity.abs().max(1e-3);
    let height = setup.fluid_size.y.max(setup.config.spacing);
    let rho0 = setup.config.rest_density;
    [
        (0.0, (2.0 * g * height).sqrt()),
        (0.97 * rho0, 1.03 * rho0),
        (0.0, 2.0 * rho0 * g * height),
    ]
}

/// The viewer's additions to the driver loop: while the mouse drags the water it does work
/// no account tallies, so the energy check stands aside and its reference (with the obstacles'
/// work, the emitted and removed energies) is re-taken at every dragged step: the check
/// resumes from the energy of the last of them. Emitters, moving obstacles and open sides are
/// tallied as in a headless run.
struct Interactive {
    mouse: bool,
}

impl<B: Backend + ?Sized> Hooks<B> for Interactive {
    fn guards(&mut self, course: &Course<'_>, at: &mut RunFrom) -> Guards {
        if !self.mouse {
            return *course.guards;
        }
        *at = RunFrom {
            step: at.step,
            t: at.t,
            ..Default::default()
        };
        Guards {
            energy_margin: 0.0,
            ..*course.guards
        }
    }
}

/// The GPU simulation of `setup`, under its solver, with its obstacles: it steps on the GPU
/// path and holds what is drawn on both.
fn gpu_simulation(ctx: &Arc<GpuContext>, setup: &Setup) -> Result<Simulation> {
    let mut sim = Simulation::with_solver(
        ctx.clone(),
        &setup.config.sim_params(),
        &setup.fluid_params,
        &setup.solver,
        &setup.state,
    )?;
    sim.set_obstacles(setup.obstacles.as_deref())?;
    Ok(sim)
}

/// The CPU path's simulation of `setup`, under its solver (the viewer steps it on a software
/// adapter; the mouse force acts on it as on the GPU path).
fn cpu_simulation(setup: &Setup) -> CpuSimulation {
    let mut cpu = CpuSimulation::with_solver(
        setup.config.sim_params(),
        setup.fluid_params,
        setup.solver,
        setup.state.clone(),
    );
    cpu.obstacles = setup.obstacles.clone();
    cpu
}

impl Viewer {
    /// Builds the scene of `opts` on `ctx` and the renderer for targets of `format`. The scene
    /// is drawn through an sRGB view of the target (lighting happens in linear space) and the
    /// panel through a plain one (egui blends in gamma space): targets must allow both views,
    /// see [`srgb_view_formats`].
    pub fn new(
        ctx: Arc<GpuContext>,
        opts: ViewerOptions,
        format: wgpu::TextureFormat,
    ) -> Result<Self> {
        if opts.substeps == 0 && opts.grains.is_none() {
            return Err(Error::input("--substeps must be ≥ 1"));
        }
        if let Some((cfg, start)) = opts.grains.clone() {
            return Self::with_grains(ctx, opts, cfg, start, format);
        }
        if let Source::Particles { name, .. } = &opts.setup.source {
            return Err(Error::input(format!(
                "the viewer shows scenes, and {name} is a particle file: run it with --headless --steps K"
            )));
        }
        let setup = Setup::new(&opts.setup, Some(&ctx.limits), |_| Ok(()))?;
        Self::with_setup(ctx, opts, setup, format)
    }

    /// Where the viewer steps: the GPU path, or the CPU path (`--cpu`, or on a software
    /// adapter, where it is faster; said in one line).
    fn steps_on_cpu(ctx: &GpuContext, path: SimPath) -> bool {
        match path {
            SimPath::Cpu => true,
            SimPath::Gpu => false,
            SimPath::Auto => {
                let software = ctx.info.device_type == wgpu::DeviceType::Cpu;
                if software {
                    eprintln!(
                        "gpu-sph: {} is a software renderer, so the viewer steps on the CPU path, which is faster here, and draws with wgpu (--gpu steps on the GPU)",
                        ctx.info.name
                    );
                }
                software
            }
        }
    }

    /// The panel at start: the options' settings, with what the scene decides (the colour
    /// ranges, B, the mouse's reach from the tank, N, the solver).
    fn controls(
        opts: &ViewerOptions,
        ranges: [(f32, f32); 3],
        stiffness: f32,
        tank: (Vec3, Vec3),
        particles: u32,
    ) -> Controls {
        let physics = opts.setup.physics;
        // `Viewer::new` refuses particles from a file.
        let scene = match &opts.setup.source {
            Source::Scene(choice) => choice.clone(),
            Source::Particles { .. } => SceneChoice::Builtin(crate::scene::SceneKind::DamBreak),
        };
        Controls {
            mode: opts.render_mode,
            style: Default::default(),
            paused: false,
            step_once: false,
            show_ui: !opts.hide_ui,
            field: opts.field,
            ranges,
            substeps: opts.substeps,
            alpha: physics.alpha,
            viscosity: physics.viscosity,
            stiffness,
            gravity: physics.gravity,
            mouse_strength: 4.0 * physics.gravity.abs().max(1.0),
            mouse_radius: 0.15 * (tank.1 - tank.0).max_element(),
            particles,
            table_log2: opts.setup.overrides.table_size.map(|t| t.trailing_zeros()),
            file: matches!(scene, SceneChoice::Described { .. }).then(|| scene.clone()),
            scene,
            solver: opts.setup.solver,
            request: Default::default(),
            status: String::new(),
            frame_time: 1.0 / 60.0,
            grains: None,
            auto_range: true,
            fitted: None,
        }
    }

    /// The colliding spheres of `start` (made from `cfg`), drawn at each sphere's radius.
    fn with_grains(
        ctx: Arc<GpuContext>,
        opts: ViewerOptions,
        cfg: crate::grains::GrainConfig,
        start: crate::grains::GrainSetup,
        format: wgpu::TextureFormat,
    ) -> Result<Self> {
        let on_cpu = Self::steps_on_cpu(&ctx, opts.path);
        let g = grains::GrainsMode::new(ctx.clone(), cfg, start, on_cpu)?;
        let tank = g.tank();
        let renderer = Renderer::new(&ctx, format.add_srgb_suffix(), &g.shown(), tank);
        let surface = SurfaceRenderer::new(&ctx, format.add_srgb_suffix(), &g.shown());
        let gravity = opts.setup.physics.gravity.abs().max(1e-3);
        // Speed up to the free fall across the tank; the spheres have no density or pressure.
        let ranges = [
            (0.0, (2.0 * gravity * (tank.1.y - tank.0.y)).sqrt()),
            (0.0, 1.0),
            (0.0, 1.0),
        ];
        let mut controls = Self::controls(&opts, ranges, 0.0, tank, g.len());
        controls.mode = RenderMode::Spheres;
        // Only speed means something for the spheres.
        controls.field = ColorField::Speed;
        if opts.substeps == 0 {
            // Sized to the frame's simulated time from here (GrainsMode::next_substeps).
            controls.substeps = 8;
        }
        let p = &g.setup().grain;
        controls.grains = Some(vec![
            ("density".into(), format!("{} kg/m³", g.cfg.density)),
            ("stiffness k".into(), format!("{:.4e} N/m", p.stiffness)),
            (
                "restitution".into(),
                format!("{} (walls {})", g.cfg.restitution, g.cfg.wall_restitution),
            ),
            ("friction μ".into(), g.cfg.friction.to_string()),
            ("g".into(), format!("{} m/s²", g.cfg.gravity)),
            ("obstacles".into(), g.setup().obstacles.len().to_string()),
        ]);
        let planar = g.setup().sim.planar != 0;
        let camera = opts
            .camera
            .camera_in(tank.0, tank.1, opts.size, !opts.hide_ui, planar);
        Ok(Self::assemble(
            ctx,
            opts,
            Model::Grains(Box::new(g)),
            renderer,
            surface,
            controls,
            camera,
            format,
        ))
    }

    #[allow(clippy::too_many_arguments)]
    fn assemble(
        ctx: Arc<GpuContext>,
        opts: ViewerOptions,
        model: Model,
        renderer: Renderer,
        surface: SurfaceRenderer,
        controls: Controls,
        camera: OrbitCamera,
        format: wgpu::TextureFormat,
    ) -> Self {
        let egui_renderer = egui_wgpu::Renderer::new(&ctx.device, format, Default::default());
        let scale = controls.ranges;
        Self {
            scale,
            frames_drawn: 0,
            last_size: opts.size,
            fit_asked: false,
            model,
            camera,
            ctx,
            opts,
            renderer,
            surface,
            format,
            controls,
            stats: FrameStats::default(),
            egui: egui::Context::default(),
            egui_renderer,
            depth: None,
            last_frame: None,
            totals: Totals::default(),
            warm: false,
        }
    }

    /// [`Viewer::new`] on a given setup (a headless run's final state, for its picture).
    pub fn with_setup(
        ctx: Arc<GpuContext>,
        opts: ViewerOptions,
        setup: Setup,
        format: wgpu::TextureFormat,
    ) -> Result<Self> {
        let sim = gpu_simulation(&ctx, &setup)?;
        let tank = (setup.tank_min, setup.tank_max);
        let renderer = Renderer::new(&ctx, format.add_srgb_suffix(), &sim.shown(), tank);
        let surface = SurfaceRenderer::new(&ctx, format.add_srgb_suffix(), &sim.shown());
        let cpu = Self::steps_on_cpu(&ctx, opts.path).then(|| cpu_simulation(&setup));
        let mut controls = Self::controls(
            &opts,
            default_ranges(&setup, opts.setup.physics.gravity),
            setup.fluid_params.stiffness,
            tank,
            setup.config.particles,
        );
        controls.solver = setup.solver.solver();
        let camera = opts.camera.camera_in(
            tank.0,
            tank.1,
            opts.size,
            !opts.hide_ui,
            setup.config.planar(),
        );
        let fluid = Fluid {
            setup,
            sim,
            cpu,
            at: RunFrom::default(),
        };
        Ok(Self::assemble(
            ctx,
            opts,
            Model::Fluid(Box::new(fluid)),
            renderer,
            surface,
            controls,
            camera,
            format,
        ))
    }

    /// The physics the sliders describe for a fluid of rest density `rho0`, as a
    /// [`PhysicsConfig`].
    fn physics(&self, rho0: f32) -> PhysicsConfig {
        let c = &self.controls;
        PhysicsConfig {
            gravity: c.gravity,
            viscosity: c.viscosity,
            alpha: c.alpha,
            sound_speed: Some((7.0 * c.stiffness / rho0).sqrt()),
            ..self.opts.setup.physics
        }
    }

    /// The sliders' physics, live (the fluid's; the spheres take theirs from the flags).
    fn apply_physics(&mut self) {
        let Model::Fluid(f) = &self.model else {
            return;
        };
        let s = &f.setup;
        let physics = self.physics(s.config.rest_density);
        let head = physics.head(s.fluid_size.y, &s.state.vel);
        let fp = physics.fluid_params(&s.config, s.tank_min, s.tank_max, head);
        let (open, slip_lo, slip_hi) = (
            s.fluid_params.open,
            s.fluid_params.slip_lo,
            s.fluid_params.slip_hi,
        );
        let Model::Fluid(f) = &mut self.model else {
            return;
        };
        match fp {
            Ok(fp) => {
                // The tank's sides keep the run's: the sliders set the fluid's physics.
                let fp = crate::params::FluidParams {
                    open,
                    slip_lo,
                    slip_hi,
                    ..fp
                };
                // Gravity and stiffness change what the energy counts: compare anew.
                f.at = RunFrom {
                    step: f.at.step,
                    t: f.at.t,
                    ..Default::default()
                };
                f.sim.set_fluid_params(&fp);
                if let Some(cpu) = &mut f.cpu {
                    cpu.fp = fp;
                }
                // A no-slip obstacle's friction is the fluid's own viscosity (with α c h/10):
                // it follows the sliders too.
                let s = &f.setup;
                let sp = s.config.sim_params();
                if let Some(b) = obstacle::refollowed(&s.shapes, s.config.spacing, &sp, &fp) {
                    let b = b.map(Arc::new);
                    if let Err(e) = f.sim.set_obstacles(b.as_deref()) {
                        self.controls.status = e.to_string();
                    }
                    if let Some(cpu) = &mut f.cpu {
                        cpu.obstacles = b;
                    }
                }
            }
            Err(e) => self.controls.status = e.to_string(),
        }
    }

    /// Puts the particles back where the scene started them.
    pub fn reset(&mut self) {
        self.stats.steps = 0;
        self.stats.t = 0.0;
        let f = match &mut self.model {
            Model::Grains(g) => {
                if let Err(e) = g.reset() {
                    self.controls.status = e.to_string();
                } else {
                    self.controls.status.clear();
                }
                self.renderer.set_count(g.len());
                return;
            }
            Model::Fluid(f) => f,
        };
        f.sim.upload(&f.setup.state);
        if let Some(cpu) = &mut f.cpu {
            // R puts the scene's particles back, not its physics: the sliders' (and the
            // obstacles' friction that follows them) stay, as the GPU path keeps them.
            let (interaction, fp, obstacles) = (cpu.interaction, cpu.fp, cpu.obstacles.take());
            *cpu = cpu_simulation(&f.setup);
            cpu.interaction = interaction;
            cpu.fp = fp;
            cpu.obstacles = obstacles.map(|mut b| {
                Arc::make_mut(&mut b).place(0.0);
                b
            });
        }
        f.at = RunFrom::default();
        self.controls.status.clear();
    }

    /// Rebuilds the simulation with the panel's N, T and scene (and the live physics).
    fn restart(&mut self) -> Result<()> {
        let Model::Fluid(f) = &self.model else {
            return Ok(());
        };
        let physics = self.physics(f.setup.config.rest_density);
        let c = &self.controls;
        let opts = RunSpec {
            particles: c.particles,
            source: Source::Scene(c.scene.clone()),
            overrides: ConfigOverrides {
                table_size: c.table_log2.map(|k| 1u32 << k),
                ..self.opts.setup.overrides
            },
            physics: PhysicsConfig {
                sound_speed: self.opts.setup.physics.sound_speed,
                ..physics
            },
            seed: self.opts.setup.seed,
            solver: c.solver,
            dfsph: self.opts.setup.dfsph,
            tank: None,
            steps: true,
        };
        let setup = Setup::new(&opts, Some(&self.ctx.limits), |_| Ok(()))?;
        let sim = gpu_simulation(&self.ctx, &setup)?;
        self.renderer
            .rebind(&self.ctx, &sim.shown(), (setup.tank_min, setup.tank_max));
        self.surface.rebind(&self.ctx, &sim.shown());
        self.camera = self.opts.camera.camera_in(
            setup.tank_min,
            setup.tank_max,
            self.last_size,
            self.controls.show_ui,
            setup.config.planar(),
        );
        self.controls.ranges = default_ranges(&setup, opts.physics.gravity);
        self.scale = self.controls.ranges;
        self.controls.fitted = None;
        self.controls.stiffness = setup.fluid_params.stiffness;
        self.controls.alpha = opts.physics.alpha;
        let cpu = f.cpu.is_some().then(|| cpu_simulation(&setup));
        // The divergence checks follow the solver (the speed check is WCSPH's).
        self.opts.guards.wcsph = setup.solver.weakly_compressible();
        self.opts.setup = opts;
        self.model = Model::Fluid(Box::new(Fluid {
            setup,
            sim,
            cpu,
            at: RunFrom::default(),
        }));
        self.stats.steps = 0;
        self.stats.t = 0.0;
        Ok(())
    }

    /// Runs the frame's substeps (unless paused) and records their timing.
    async fn advance_async(&mut self) -> Result<()> {
        let steps = if self.controls.paused {
            u32::from(std::mem::take(&mut self.controls.step_once))
        } else {
            self.controls.substeps
        };
        if steps == 0 {
            self.stats.sim_ms = 0.0;
            return Ok(());
        }
        let start = Instant::now();
        let f = match &mut self.model {
            Model::Fluid(f) => f,
            Model::Grains(g) => {
                // Sized substeps start small and grow to the frame's simulated time.
                let steps = if self.opts.substeps == 0 && !self.controls.paused {
                    self.controls.substeps
                } else {
                    steps
                };
                let checked = g.advance(steps, self.opts.guards.energy_margin as f64);
                self.stats.sim_ms = start.elapsed().as_secs_f64() * 1e3;
                if self.opts.substeps == 0 {
                    self.controls.substeps =
                        g.next_substeps(steps, self.stats.sim_ms, self.controls.frame_time);
                }
                self.renderer.set_count(g.len());
                self.stats.steps = g.at.step;
                self.stats.t = g.at.t;
                self.stats.dt = g.dt();
                if let Some(s) = g.last {
                    self.stats.v_max = s.max_speed;
                }
                if let Err(e) = checked {
                    self.controls.paused = true;
                    self.controls.status = format!("{e}; paused: press R to reset");
                }
                return Ok(());
            }
        };
        // Every step's statistics (64 bytes per 256 particles) are read, as a headless run reads them, while
        // the next step runs: the time is each step's own dt summed, and the guards judge every
        // step, not only a frame's last.
        let fp = f.sim.fluid_params;
        let course = Course {
            fp: &fp,
            guards: &self.opts.guards,
            emitters: &f.setup.emitters,
        };
        let backend: &mut dyn Backend = match &mut f.cpu {
            Some(cpu) => cpu,
            None => &mut f.sim,
        };
        let mut hooks = Interactive {
            mouse: backend.interaction().is_some(),
        };
        let driven = drive_async(
            backend,
            &mut f.at,
            Until::steps(steps as u64),
            &course,
            &mut hooks,
        )
        .await;
        self.stats.sim_ms = start.elapsed().as_secs_f64() * 1e3;
        self.stats.steps = f.at.step;
        self.stats.t = f.at.t;
        if let Some(b) = driven.as_ref().ok().and_then(|d| d.block) {
            self.stats.dt = b.dt;
            self.stats.v_max = b.maxima[0].sqrt();
        }
        match driven {
            Ok(d) if d.emptied => {
                self.controls.paused = true;
                self.controls.status =
                    "every particle left through the open sides; paused: press R to reset".into();
            }
            Ok(_) => {}
            // The run diverged: the headless run's message, and the state that shows it.
            Err(e @ Error::Unstable(_)) => {
                self.controls.paused = true;
                self.controls.status = format!("{e}; paused: press R to reset");
            }
            Err(e) => return Err(e),
        }
        self.show_state().await
    }

    /// Hands the renderer the state the last step left: the CPU path's, copied into the GPU
    /// buffers it draws from (positions, velocities, density and pressure, each in the same
    /// slot order, and moving obstacles); the GPU path's, where DFSPH holds it (its own slot
    /// order and ρ).
    async fn show_state(&mut self) -> Result<()> {
        let Model::Fluid(f) = &self.model else {
            return Ok(());
        };
        let Some(cpu) = &f.cpu else {
            if let Some(timer) = &f.sim.grid.timer {
                self.stats.stage_ms = ui::stage_times(&timer.read_ms_async(&self.ctx).await?);
            }
            return f.sim.expose_for_render();
        };
        if let Some(b) = cpu.obstacles.as_deref().filter(|b| b.moves()) {
            f.sim.upload_obstacles(b);
        }
        f.sim.show(cpu.current(), &cpu.shown_pressure());
        Ok(())
    }

    /// With the colliding spheres, spawns one where `ray` meets the tank's back plane (the
    /// drag that calls this spawns one per frame). Returns whether one was added.
    pub fn spawn(&mut self, ray: (Vec3, Vec3)) -> bool {
        let view_dir = (self.camera.target - self.camera.eye()).normalize_or_zero();
        let Model::Grains(g) = &mut self.model else {
            return false;
        };
        match g.spawn(ray.0, ray.1, view_dir) {
            Ok(added) => {
                self.renderer.set_count(g.len());
                added
            }
            Err(e) => {
                self.controls.status = e.to_string();
                false
            }
        }
    }

    /// Whether the viewer shows colliding spheres.
    pub fn is_grains(&self) -> bool {
        matches!(self.model, Model::Grains(_))
    }

    /// Sets or clears the mouse force from a cursor ray.
    pub fn set_mouse_force(&mut self, ray: Option<(Vec3, Vec3)>, pull: bool) {
        let c = &self.controls;
        let ip = ray.map(|(o, d)| {
            let s = if pull {
                c.mouse_strength
            } else {
                -c.mouse_strength
            };
            InteractParams::new(o, d, c.mouse_radius, s)
        });
        // Both simulations hold the force, whichever of them the viewer steps.
        let Model::Fluid(f) = &mut self.model else {
            return;
        };
        if let Some(cpu) = &mut f.cpu {
            cpu.set_interaction(ip);
        }
        f.sim.set_interaction(ip);
    }

    /// The camera.
    pub fn camera(&self) -> &OrbitCamera {
        &self.camera
    }

    /// The camera, for the window's mouse handling.
    pub fn camera_mut(&mut self) -> &mut OrbitCamera {
        &mut self.camera
    }

    /// The panel's state, for keyboard shortcuts.
    pub fn controls_mut(&mut self) -> &mut Controls {
        &mut self.controls
    }

    /// The egui context (the window feeds it input).
    pub fn egui(&self) -> &egui::Context {
        &self.egui
    }

    fn info(&self) -> Vec<(String, String)> {
        let f = match &self.model {
            Model::Fluid(f) => f,
            Model::Grains(g) => {
                let mut rows = vec![
                    ("spheres".into(), g.len().to_string()),
                    (
                        "radii".into(),
                        format!("{}–{} m", g.cfg.smallest(), g.cfg.radius),
                    ),
                    ("adapter".into(), self.ctx.info.name.clone()),
                    (
                        "steps on".into(),
                        if g.on_cpu() {
                            "the CPU path".into()
                        } else {
                            "the GPU".into()
                        },
                    ),
                ];
                if let Some(s) = g.last {
                    rows.push((
                        "energy".into(),
                        format!("{} J", crate::summary::plain(s.total, 5)),
                    ));
                    rows.push((
                        "deepest overlap".into(),
                        format!("{:.2}% of r", 100.0 * s.deepest_overlap),
                    ));
                }
                return rows;
            }
        };
        let c = &f.setup.config;
        vec![
            ("N".into(), c.particles.to_string()),
            ("T".into(), c.table_size.to_string()),
            ("h".into(), format!("{} m", c.smoothing_radius)),
            ("adapter".into(), self.ctx.info.name.clone()),
            (
                "steps on".into(),
                if f.cpu.is_some() {
                    "the CPU path".into()
                } else {
                    "the GPU".into()
                },
            ),
        ]
    }

    /// One frame: advance the simulation, run the panel, draw the scene and the panel into
    /// `target` (`pixels_per_point` UI scale), and also into `capture` when given. Returns what
    /// egui wants the platform to do (cursor, clipboard).
    pub fn frame(
        &mut self,
        target: &wgpu::Texture,
        pixels_per_point: f32,
        input: egui::RawInput,
        capture: Option<&wgpu::Texture>,
    ) -> Result<egui::PlatformOutput> {
        crate::gpu::context::finish(
            self.frame_async(target, pixels_per_point, input, capture),
            "Viewer::frame_async",
        )
    }

    /// [`Viewer::frame`], awaited (a web page's form: its readbacks complete while the page
    /// yields): [`Viewer::advance_frame_async`], then [`Viewer::draw_frame`].
    pub async fn frame_async(
        &mut self,
        target: &wgpu::Texture,
        pixels_per_point: f32,
        input: egui::RawInput,
        capture: Option<&wgpu::Texture>,
    ) -> Result<egui::PlatformOutput> {
        self.advance_frame_async().await?;
        self.draw_frame(target, pixels_per_point, input, capture)
    }

    /// The part of a frame that waits for the GPU: the simulation's steps for this frame and
    /// the colour range's readback. A web page awaits it before it takes the canvas's texture,
    /// which lives only until the page yields, and then draws with [`Viewer::draw_frame`].
    pub async fn advance_frame_async(&mut self) -> Result<()> {
        let now = Instant::now();
        if let Some(last) = self.last_frame {
            let fps = 1.0 / now.duration_since(last).as_secs_f64().max(1e-9);
            self.stats.fps = if self.stats.fps == 0.0 {
                fps
            } else {
                0.9 * self.stats.fps + 0.1 * fps
            };
        }
        self.last_frame = Some(now);
        self.advance_async().await?;
        // The colour range follows the data: at the first frame, when the field changes, and
        // every 15 frames, until the panel's min or max is edited; and when the panel asks.
        let c = &self.controls;
        let follow = c.auto_range
            && c.mode == RenderMode::Spheres
            && (c.fitted != Some(c.field) || self.frames_drawn % 15 == 0);
        if std::mem::take(&mut self.fit_asked) || follow {
            self.fit_range_async().await?;
        }
        self.frames_drawn += 1;
        Ok(())
    }

    /// The part of a frame that does not wait for the GPU: run the panel, draw the scene and
    /// the panel into `target` (`pixels_per_point` UI scale), and also into `capture` when
    /// given. Returns what egui wants the platform to do (cursor, clipboard).
    pub fn draw_frame(
        &mut self,
        target: &wgpu::Texture,
        pixels_per_point: f32,
        input: egui::RawInput,
        capture: Option<&wgpu::Texture>,
    ) -> Result<egui::PlatformOutput> {
        let size = (target.width(), target.height());
        self.last_size = size;
        let egui_ctx = self.egui.clone();
        let info = self.info();
        let stats = self.stats.clone();
        let controls = &mut self.controls;
        let mut output = egui_ctx.run_ui(input, |ui| {
            if controls.show_ui {
                controls.panel(ui.ctx(), &stats, &info);
            }
        });
        self.handle_requests()?;

        let start = Instant::now();
        self.prepare_scene(size);
        let screen = egui_wgpu::ScreenDescriptor {
            size_in_pixels: [size.0, size.1],
            pixels_per_point,
        };
        let prims = egui_ctx.tessellate(std::mem::take(&mut output.shapes), pixels_per_point);
        // Applied at once, so the delta is empty whatever fails below (egui asserts that).
        for (id, deltas) in output.textures_delta.set.drain() {
            for delta in deltas {
                self.egui_renderer
                    .update_texture(&self.ctx.device, &self.ctx.queue, id, &delta);
            }
        }
        let free = std::mem::take(&mut output.textures_delta.free);
        let device = &self.ctx.device;
        let mut encoder = device.create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("sph.render"),
        });
        let extra = self.egui_renderer.update_buffers(
            device,
            &self.ctx.queue,
            &mut encoder,
            &prims,
            &screen,
        );
        for texture in std::iter::once(target).chain(capture) {
            self.encode_view(&mut encoder, texture, size, &prims, &screen);
        }
        self.ctx
            .queue
            .submit(extra.into_iter().chain([encoder.finish()]));
        self.ctx.wait()?;
        for id in &free {
            self.egui_renderer.free_texture(id);
        }
        self.stats.render_ms = start.elapsed().as_secs_f64() * 1e3;
        // The first frame pays the lazy shader compilation: it is left out of the means.
        if std::mem::replace(&mut self.warm, true) {
            self.totals.frames += 1;
            self.totals.sim_ms += self.stats.sim_ms;
            self.totals.render_ms += self.stats.render_ms;
        }
        Ok(output.platform_output)
    }

    /// The renderers' uniforms for a frame of `size` pixels: the camera, the particles'
    /// drawn radius and colouring, the surface's style.
    fn prepare_scene(&mut self, size: (u32, u32)) {
        // The particle spacing and the radius of a particle's own volume: the fluid's, or the
        // spheres' largest radius (each sphere is drawn at its own).
        let (spacing, own_radius) = match &self.model {
            Model::Fluid(f) => {
                let cfg = &f.setup.config;
                let own = (3.0 * cfg.particle_mass
                    / (4.0 * std::f32::consts::PI * cfg.rest_density))
                    .cbrt();
                (cfg.spacing, own)
            }
            Model::Grains(g) => (2.0 * g.cfg.radius, g.cfg.radius),
        };
        let fi = self.controls.field.index() as usize;
        let aspect = size.0 as f32 / size.1.max(1) as f32;
        self.renderer.prepare(
            &self.ctx,
            &View {
                view: self.camera.view(),
                proj: self.camera.proj(aspect),
                radius: 0.5 * spacing,
                radius_from_w: self.is_grains(),
                field: self.controls.field,
                range: self.controls.ranges[fi],
            },
        );
        self.surface.prepare(
            &self.ctx,
            (self.camera.view(), self.camera.proj(aspect)),
            size,
            spacing,
            own_radius,
            &self.controls.style,
        );
    }

    /// Encodes the scene (particles, or the surface over the tank) and then the panel's
    /// `prims` into `texture`, of `size` pixels.
    fn encode_view(
        &mut self,
        encoder: &mut wgpu::CommandEncoder,
        texture: &wgpu::Texture,
        size: (u32, u32),
        prims: &[egui::ClippedPrimitive],
        screen: &egui_wgpu::ScreenDescriptor,
    ) {
        let depth = DepthTarget::view(&mut self.depth, &self.ctx, size);
        let scene_view = texture.create_view(&wgpu::TextureViewDescriptor {
            format: Some(texture.format().add_srgb_suffix()),
            ..Default::default()
        });
        let ui_view = texture.create_view(&Default::default());
        let surface = self.controls.mode == RenderMode::Surface;
        // In surface mode the tank goes into the background the water refracts.
        let background = if surface {
            self.surface.background(&self.ctx, size).clone()
        } else {
            scene_view.clone()
        };
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("sph.render.scene"),
            color_attachments: &[render::clear_attachment(&background, render::BACKGROUND)],
            depth_stencil_attachment: Some(render::depth_attachment(depth)),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        if surface {
            self.renderer.draw_lines(&mut pass);
            self.renderer.draw_obstacles(&mut pass);
            drop(pass);
            self.surface.draw(
                &self.ctx,
                encoder,
                &scene_view,
                size,
                self.controls.style.iterations,
            );
        } else {
            self.renderer.draw(&mut pass);
            drop(pass);
        }
        let pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("sph.render.ui"),
            color_attachments: &[Some(wgpu::RenderPassColorAttachment {
                view: &ui_view,
                depth_slice: None,
                resolve_target: None,
                ops: wgpu::Operations {
                    load: wgpu::LoadOp::Load,
                    store: wgpu::StoreOp::Store,
                },
            })],
            depth_stencil_attachment: None,
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        self.egui_renderer
            .render(&mut pass.forget_lifetime(), prims, screen);
    }

    fn handle_requests(&mut self) -> Result<()> {
        let r = std::mem::take(&mut self.controls.request);
        if r.physics_changed {
            self.apply_physics();
        }
        if r.reset {
            self.reset();
        }
        // The readback waits for the GPU: the next frame's advance does it.
        self.fit_asked |= r.fit_range;
        if r.reset_view {
            let (lo, hi, planar) = match &self.model {
                Model::Grains(g) => (g.tank().0, g.tank().1, g.setup().sim.planar != 0),
                Model::Fluid(f) => (f.setup.tank_min, f.setup.tank_max, f.setup.config.planar()),
            };
            self.camera =
                self.opts
                    .camera
                    .camera_in(lo, hi, self.last_size, self.controls.show_ui, planar);
        }
        if r.restart {
            if self.is_grains() {
                self.controls.status =
                    "--model grains: the panel's N, T, scene and solver apply to the fluid; restart with flags".into();
            } else if let Err(e) = self.restart() {
                self.controls.status = format!("restart failed: {e}");
            } else {
                self.controls.status.clear();
            }
        }
        // A screenshot needs the frame's target, so it goes back to the front end.
        self.controls.request.screenshot = r.screenshot;
        Ok(())
    }

    /// Sets the current field's colour range to the smallest and largest finite value now on
    /// the GPU (one readback), widened to a tenth of the scene's scale for the field (of the
    /// free-fall speed across the fluid's height, of 6% of ρ0, of twice the hydrostatic
    /// pressure at the bottom) so a fluid at rest does not show its noise in every colour;
    /// speeds start at 0.
    async fn fit_range_async(&mut self) -> Result<()> {
        let (shown, grid) = match &self.model {
            Model::Fluid(f) => (f.shown(), &f.sim.grid),
            Model::Grains(g) => (g.shown(), &g.gpu.g),
        };
        let n = shown.count as usize;
        let values: Vec<f32> = match self.controls.field {
            ColorField::Speed => grid
                .read_vec3_async(shown.velocities, n)
                .await?
                .iter()
                .map(|v| v.length())
                .collect(),
            ColorField::Density => grid.read_f32_async(shown.density, n).await?,
            ColorField::Pressure => grid.read_f32_async(shown.pressure, n).await?,
        };
        let (lo, hi) = values
            .iter()
            .filter(|v| v.is_finite())
            .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &v| {
                (lo.min(v), hi.max(v))
            });
        let fi = self.controls.field.index() as usize;
        if lo <= hi {
            let (slo, shi) = self.scale[fi];
            let floor = 0.1 * (shi - slo).abs();
            self.controls.ranges[fi] = if self.controls.field == ColorField::Speed {
                (0.0, hi.max(floor))
            } else if hi - lo < floor {
                let mid = 0.5 * (lo + hi);
                (mid - 0.5 * floor, mid + 0.5 * floor)
            } else {
                (lo, hi)
            };
        }
        self.controls.fitted = Some(self.controls.field);
        Ok(())
    }

    /// Takes a pending screenshot request (button or key).
    pub fn take_screenshot_request(&mut self) -> bool {
        std::mem::take(&mut self.controls.request.screenshot)
    }

    /// A texture to render a frame into and copy out (`format` of this viewer).
    pub fn capture_texture(&self, size: (u32, u32)) -> wgpu::Texture {
        render::texture_2d(
            &self.ctx,
            "sph.capture",
            size,
            self.format,
            wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
            &srgb_view_formats(self.format),
        )
    }

    /// Copies `texture` (from [`Self::capture_texture`]) to a PNG at `path`, refusing a
    /// picture whose pixels are all alike: a frame always shows the tank's edges on the
    /// background, so one colour means the adapter drew nothing.
    pub fn save_png(&self, texture: &wgpu::Texture, path: &Path) -> Result<()> {
        let rgba = read_rgba(&self.ctx, texture)?;
        if rgba.chunks_exact(4).all(|px| px == &rgba[..4]) {
            return Err(Error::input(format!(
                "no picture written to {}: the frame came back as one colour, so {} drew nothing; use another adapter (WGPU_BACKEND=vulkan with a Vulkan driver or Mesa's lavapipe) or drop --screenshot",
                path.display(),
                crate::gpu::context::describe(&self.ctx.adapter.get_info())
            )));
        }
        image::save_buffer(
            path,
            &rgba,
            texture.width(),
            texture.height(),
            image::ExtendedColorType::Rgba8,
        )
        .map_err(|e| Error::file(path, format!("cannot write the screenshot: {e}")))
    }

    /// Mean simulation and render milliseconds per frame so far, as one line.
    pub fn timing_line(&self) -> String {
        let t = &self.totals;
        let f = t.frames.max(1) as f64;
        // The live count: emitters add particles as the frames run.
        let n = match &self.model {
            Model::Grains(g) => g.len(),
            Model::Fluid(f) => f.shown().count,
        };
        format!(
            "{} frames after a warm-up frame, N = {n}: simulation {:.2} ms/frame ({} substeps), rendering {:.2} ms/frame ({:.3} µs/particle)",
            t.frames,
            t.sim_ms / f,
            self.controls.substeps,
            t.render_ms / f,
            1e3 * t.render_ms / f / n.max(1) as f64
        )
    }
}

/// The format a viewer renders into, from the `offered` ones: a plain format with an sRGB view
/// for the scene where the adapter can view a texture in another format (its downlevel flag
/// `VIEW_FORMATS`), else an sRGB format, which the scene and the panel both draw into (the
/// panel then converts its colours; wgpu's GL backend lacks view formats).
pub fn target_format(
    adapter: &wgpu::Adapter,
    offered: &[wgpu::TextureFormat],
) -> Option<wgpu::TextureFormat> {
    let views = adapter
        .get_downlevel_capabilities()
        .flags
        .contains(wgpu::DownlevelFlags::VIEW_FORMATS);
    let plain_with_srgb_view = offered
        .iter()
        .copied()
        .find(|f| !f.is_srgb() && offered.contains(&f.add_srgb_suffix()));
    let srgb = offered.iter().copied().find(|f| f.is_srgb());
    if views {
        plain_with_srgb_view.or(srgb)
    } else {
        srgb.or(plain_with_srgb_view)
    }
    .or(offered.first().copied())
}

/// The format offscreen pictures are drawn into on `adapter` (see [`target_format`]).
pub fn offscreen_format(adapter: &wgpu::Adapter) -> wgpu::TextureFormat {
    let offered = [
        wgpu::TextureFormat::Rgba8Unorm,
        wgpu::TextureFormat::Rgba8UnormSrgb,
    ];
    target_format(adapter, &offered).unwrap_or(offered[0])
}

/// How the viewer draws into `surface` at `size` px with `present_mode`: its pixel format
/// ([`target_format`]) with the sRGB view beside it, for rendering only. Refused in one line
/// where the surface offers no format or not that mode. Shared by the window and a web page's
/// canvas.
pub fn surface_config(
    surface: &wgpu::Surface<'_>,
    ctx: &GpuContext,
    size: (u32, u32),
    present_mode: wgpu::PresentMode,
) -> Result<wgpu::SurfaceConfiguration> {
    let caps = surface.get_capabilities(&ctx.adapter);
    let format = target_format(&ctx.adapter, &caps.formats).ok_or_else(|| {
        Error::NoDisplay("the surface offers no pixel format: run with --headless".into())
    })?;
    if !caps.present_modes.contains(&present_mode) {
        return Err(Error::input(format!(
            "present mode {present_mode:?} is not supported here (available: {:?}): pick another --present-mode",
            caps.present_modes
        )));
    }
    let mut config = surface
        .get_default_config(&ctx.adapter, size.0.max(1), size.1.max(1))
        .ok_or_else(|| {
            Error::NoDisplay(
                "the adapter cannot present to this window: run with --headless".into(),
            )
        })?;
    config.format = format;
    config.present_mode = present_mode;
    config.usage = wgpu::TextureUsages::RENDER_ATTACHMENT;
    config.view_formats = srgb_view_formats(format);
    Ok(config)
}

/// The extra view format a target of `format` needs for the scene's sRGB view.
pub fn srgb_view_formats(format: wgpu::TextureFormat) -> Vec<wgpu::TextureFormat> {
    let srgb = format.add_srgb_suffix();
    if srgb == format { vec![] } else { vec![srgb] }
}

/// Reads an 8-bit RGBA or BGRA texture into tightly packed RGBA bytes.
pub fn read_rgba(ctx: &GpuContext, texture: &wgpu::Texture) -> Result<Vec<u8>> {
    crate::gpu::context::finish(read_rgba_async(ctx, texture), "read_rgba_async")
}

/// [`read_rgba`], awaited (a web page's form).
pub async fn read_rgba_async(ctx: &GpuContext, texture: &wgpu::Texture) -> Result<Vec<u8>> {
    let (w, h) = (texture.width(), texture.height());
    let row = 4 * w;
    let padded =
        row.div_ceil(wgpu::COPY_BYTES_PER_ROW_ALIGNMENT) * wgpu::COPY_BYTES_PER_ROW_ALIGNMENT;
    let buffer = ctx.device.create_buffer(&wgpu::BufferDescriptor {
        label: Some("sph.capture.readback"),
        size: padded as u64 * h as u64,
        usage: wgpu::BufferUsages::COPY_DST | wgpu::BufferUsages::MAP_READ,
        mapped_at_creation: false,
    });
    let mut encoder = ctx
        .device
        .create_command_encoder(&wgpu::CommandEncoderDescriptor {
            label: Some("sph.capture"),
        });
    encoder.copy_texture_to_buffer(
        wgpu::TexelCopyTextureInfo {
            texture,
            mip_level: 0,
            origin: wgpu::Origin3d::ZERO,
            aspect: wgpu::TextureAspect::All,
        },
        wgpu::TexelCopyBufferInfo {
            buffer: &buffer,
            layout: wgpu::TexelCopyBufferLayout {
                offset: 0,
                bytes_per_row: Some(padded),
                rows_per_image: Some(h),
            },
        },
        texture.size(),
    );
    let bytes = ctx.submit_and_read_async(encoder, &buffer).await?;
    let bgra = matches!(
        texture.format(),
        wgpu::TextureFormat::Bgra8Unorm | wgpu::TextureFormat::Bgra8UnormSrgb
    );
    let mut out = Vec::with_capacity((row * h) as usize);
    for y in 0..h as usize {
        let line = &bytes[y * padded as usize..y * padded as usize + row as usize];
        for px in line.chunks_exact(4) {
            if bgra {
                out.extend_from_slice(&[px[2], px[1], px[0], px[3]]);
            } else {
                out.extend_from_slice(px);
            }
        }
    }
    Ok(out)
}

/// `--headless --screenshot FILE`: renders `frames` frames into an offscreen target and saves
/// the last one. No window, no display needed.
pub fn run_offscreen(opts: ViewerOptions) -> Result<()> {
    let path = opts
        .screenshot
        .clone()
        .ok_or_else(|| Error::input("--headless rendering needs --screenshot FILE"))?;
    check_png_path(&path)?;
    let ctx = Arc::new(GpuContext::new()?);
    let size = opts.size;
    let frames = opts.frames.max(1);
    let print = opts.print_timings;
    let format = offscreen_format(&ctx.adapter);
    let (viewer, texture) = drawing(&ctx.clone(), || {
        let mut viewer = Viewer::new(ctx, opts, format)?;
        let texture = viewer.capture_texture(size);
        for _ in 0..frames {
            viewer.frame(&texture, 1.0, offscreen_input(size), None)?;
        }
        Ok((viewer, texture))
    })?;
    viewer.save_png(&texture, &path)?;
    if !viewer.controls.status.is_empty() {
        eprintln!("gpu-sph: {}", viewer.controls.status);
    }
    if print {
        println!("{}", viewer.timing_line());
    }
    Ok(())
}

/// The picture of a headless run's last frame: `setup` holds its final state, drawn as the
/// offscreen viewer draws it (`opts` gives the size, the mode and the colour field), without
/// stepping.
pub fn picture(ctx: Arc<GpuContext>, opts: ViewerOptions, setup: Setup, path: &Path) -> Result<()> {
    check_png_path(path)?;
    let (viewer, texture) = drawing(&ctx.clone(), || {
        let (mut viewer, texture) = still(ctx, opts, setup)?;
        let size = (texture.width(), texture.height());
        viewer.frame(&texture, 1.0, offscreen_input(size), None)?;
        Ok((viewer, texture))
    })?;
    viewer.save_png(&texture, path)
}

/// [`picture`]'s frame as tightly packed RGBA bytes instead of a file, awaited (a web page's
/// form: a headless page's canvas reads back blank, a texture does not).
pub async fn picture_rgba_async(
    ctx: Arc<GpuContext>,
    opts: ViewerOptions,
    setup: Setup,
) -> Result<Vec<u8>> {
    let (mut viewer, texture) = still(ctx.clone(), opts, setup)?;
    let size = (texture.width(), texture.height());
    viewer
        .frame_async(&texture, 1.0, offscreen_input(size), None)
        .await?;
    read_rgba_async(&ctx, &texture).await
}

/// A paused viewer of `setup` without its panel, and the texture of `opts.size` it draws into.
fn still(
    ctx: Arc<GpuContext>,
    opts: ViewerOptions,
    setup: Setup,
) -> Result<(Viewer, wgpu::Texture)> {
    let size = opts.size;
    // Nothing steps: the picture draws the state as given.
    let opts = ViewerOptions {
        path: SimPath::Gpu,
        // No panel: the framing takes the whole picture.
        hide_ui: true,
        ..opts
    };
    let format = offscreen_format(&ctx.adapter);
    let mut viewer = Viewer::with_setup(ctx, opts, setup, format)?;
    viewer.controls.paused = true;
    viewer.controls.show_ui = false;
    let texture = viewer.capture_texture(size);
    Ok((viewer, texture))
}

/// Runs the drawing `f` inside an error scope, so that an adapter that cannot draw what the
/// viewer asks of it (a format or feature it lacks) is named in one line, never left behind a
/// blank picture.
fn drawing<T>(ctx: &GpuContext, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match ctx.scoped(f) {
        Ok(drawn) => drawn,
        Err(Error::Validation(why)) => Err(Error::input(format!(
            "{} cannot draw the picture ({why}); use another adapter (WGPU_BACKEND=vulkan with a Vulkan driver or Mesa's lavapipe) or drop --screenshot",
            crate::gpu::context::describe(&ctx.adapter.get_info())
        ))),
        Err(e) => Err(e),
    }
}

/// The panel's input of an offscreen frame of `size`: the screen, no events.
fn offscreen_input(size: (u32, u32)) -> egui::RawInput {
    egui::RawInput {
        screen_rect: Some(egui::Rect::from_min_size(
            egui::Pos2::ZERO,
            egui::vec2(size.0 as f32, size.1 as f32),
        )),
        ..Default::default()
    }
}

/// Rejects a screenshot path that is not a `.png`, and creates its directory where missing, before
/// any work is done.
pub fn check_png_path(path: &Path) -> Result<()> {
    match path.extension().and_then(|e| e.to_str()) {
        Some(e) if e.eq_ignore_ascii_case("png") => {}
        _ => {
            return Err(Error::input(format!(
                "--screenshot {} must end in .png",
                path.display()
            )));
        }
    }
    crate::io::ensure_output_dir_of(path)
}
