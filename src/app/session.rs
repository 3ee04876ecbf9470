//! A fluid run driven step by step from another program (the Python package `gpu_sph`, in
//! `python/`): built from the same scene files, settings and checks as the command line's
//! headless run, stepped through the same driver loop ([`crate::run::drive`]), so a session and
//! a `--headless --steps K` run of the same scene and flags end in the same bits.
//!
//! Worked example: `Session::new(SceneGiven::Name("dam-break".into()), &settings)` with
//! `settings = {"particles": 2000, "cpu": true}` is `gpu-sph --headless --scene dam-break -n
//! 2000 --cpu`; `step(10)` then is `--steps 10`, and [`Session::snapshot`] the state that run's
//! `--output` would write.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::boundary::Boundary;
use crate::checkpoint::{Checkpoint, Template};
use crate::core::{Particles, RunFrom};
use crate::emitter::Emitters;
use crate::gpu::GpuContext;
use crate::gpu::fluid::Snapshot;
use crate::run::{Backend, Course, Guards, NoHooks, StepStats, Until, check_start, drive_async};
use crate::scene_file::SceneFile;
use crate::series::ExportFormat;
use crate::setup::{Setup, Source};
use crate::{Error, Result};

use super::Parsed;
use super::cli::{Cli, run_guards, run_spec, scene_choice};
use super::fluid::{
    backend, check_hydrostatic_start, check_no_grains_flags, check_physics, check_sources,
    open_checkpoint,
};

/// The scene a session starts from.
#[derive(Clone, Debug)]
pub enum SceneGiven {
    /// What `--scene` takes: a built-in scene's name or a scene file's path.
    Name(String),
    /// A scene file's JSON text (its meshes found from the working directory), named in
    /// messages as `name`.
    Text {
        /// The JSON.
        text: String,
        /// What messages call it.
        name: String,
    },
    /// A scene file's JSON text with the mesh files it names given as bytes, by file name
    /// (a web page's file input, where there is no file system).
    Uploaded {
        /// The JSON.
        text: String,
        /// What messages call it.
        name: String,
        /// Each mesh file's bytes by its file name (the last part of the scene's `file`).
        meshes: std::collections::BTreeMap<String, Vec<u8>>,
    },
}

/// Settings a session takes from the command line's front ends instead: each has a method.
const FRONT_END: &[(&str, &str)] = &[
    ("steps", "step(k) or run(until=t)"),
    ("end_time", "run(until=t)"),
    ("headless", "nothing (a session has no window)"),
    ("output", "export(path)"),
    ("stats", "stats() after each step"),
    ("json", "nothing (results are Python objects)"),
    ("export_dir", "export(path) after the steps you want"),
    ("export_every", "export(path) after the steps you want"),
    ("export_format", "export(path) with the format's extension"),
    ("checkpoint_every", "checkpoint(path)"),
    ("checkpoint_dir", "checkpoint(path)"),
    ("resume", "Simulation.resume(path)"),
    ("verify", "verify(steps=k)"),
    ("tolerance", "verify(tolerance=x)"),
    ("bench", "the command line's --bench"),
    ("repeat", "the command line's --bench"),
    ("brute_force", "the command line's --bench"),
    ("screenshot", "the command line's --screenshot"),
    ("print_scene", "the command line's --print-scene"),
    ("scene", "the scene argument"),
    ("help", "help(gpu_sph.Simulation)"),
    ("version", "gpu_sph.__version__"),
];

/// What a setting under one of the command line's front-end headings is for, from Python.
fn front_end(key: &str, heading: Option<&str>) -> Option<&'static str> {
    FRONT_END
        .iter()
        .find(|(k, _)| *k == key)
        .map(|(_, instead)| *instead)
        .or(match heading {
            Some("Outputs") => Some("export(path), export_frame(dir, format) or checkpoint(path)"),
            Some("Viewer") => Some("nothing (a Simulation has no window)"),
            Some("Verify and bench") => Some("verify(steps, tolerance), or --bench for timings"),
            _ => None,
        })
}

/// The mesh `path` (as a scene names it) among `meshes`, given by file name; refused in one
/// line when it was not given.
fn uploaded_mesh(
    meshes: &std::collections::BTreeMap<String, Vec<u8>>,
    path: &str,
    at: &str,
) -> Result<crate::mesh::TriMesh> {
    let file = Path::new(path)
        .file_name()
        .map_or(path.into(), |f| f.to_string_lossy());
    match meshes.get(file.as_ref()) {
        Some(bytes) => crate::mesh::TriMesh::parse(bytes, Path::new(path), at),
        None => Err(Error::input(format!(
            "{at}: the mesh {file} was not given: choose it together with the scene file"
        ))),
    }
}

/// A fluid run stepped on request.
pub struct Session {
    backend: Box<dyn Backend + Send>,
    template: Template,
    obstacles: Option<Arc<Boundary>>,
    emitters: Emitters,
    guards: Guards,
    at: RunFrom,
    last: Option<StepStats>,
    /// The GPU the run steps on (`None`: the CPU path).
    gpu: Option<Arc<GpuContext>>,
    /// How `--screenshot` would draw the run (the field, the camera, the mode).
    picture: crate::viewer::ViewerOptions,
}

/// Who hands a session its settings: what a setting of the command line's front ends is
/// refused with names what that host offers instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Host {
    /// The Python package: each front end's work has a method.
    Python,
    /// A web page: its URL's own parameters, and the viewer's flags in a view (`view`).
    Page {
        /// The page's canvas viewer, which takes the viewer's own flags too.
        view: bool,
    },
}

/// What a web page offers in place of the command line's front ends (it writes no files).
const PAGE_INSTEAD: &str = "the page's own parameters: steps=K, verify=1 (and tolerance=x), frame=1, and view=1 with the viewer's settings; a page writes no files";

/// The command line's words for `settings` (the scene file's keys: flag names with `_`), each
/// through its flag's own parser, so a bad value is refused with the flag's message.
fn words(
    settings: &Map<String, Value>,
    resume: bool,
    host: Host,
) -> Result<Vec<std::ffi::OsString>> {
    use clap::CommandFactory;
    let cmd = Cli::command();
    let ids: Vec<String> = cmd
        .get_arguments()
        .map(|a| a.get_id().as_str().to_string())
        .collect();
    let resumable = super::cli::flags_in("resumable");
    let mut out = Vec::new();
    for (key, value) in settings {
        let arg = cmd.get_arguments().find(|a| a.get_id() == key.as_str());
        let heading = arg.and_then(|a| a.get_help_heading());
        let viewers =
            host == Host::Page { view: true } && heading == Some("Viewer") && key != "screenshot";
        if let Some(instead) = front_end(key, heading).filter(|_| !viewers) {
            return Err(Error::input(match host {
                Host::Python => format!(
                    "{key} belongs to the command line's front ends; from Python use {instead}"
                ),
                Host::Page { .. } => format!(
                    "{key} belongs to the command line's front ends; in a web page use {PAGE_INSTEAD}"
                ),
            }));
        }
        let Some(arg) = arg else {
            let names: Vec<&str> = ids.iter().map(String::as_str).collect();
            let near = crate::scene_file::nearest(key, &names)
                .map(|n| format!(" (did you mean {n}?)"))
                .unwrap_or_default();
            return Err(Error::input(format!(
                "no such setting {key}{near}: settings are the scene file's keys (docs/usage.md lists them as flags, with _ for -)"
            )));
        };
        let long = arg.get_long().unwrap_or(key);
        if resume && !resumable.contains(key) {
            return Err(Error::input(format!(
                "{key} cannot change on resume: the run continues with the physics, scene and configuration the checkpoint holds; only the path and the divergence checks may be given"
            )));
        }
        if !arg.get_action().takes_values() {
            match value.as_bool() {
                Some(true) => out.push(format!("--{long}").into()),
                Some(false) => {}
                None => {
                    return Err(Error::input(format!(
                        "{key}: expected True or False, got {value}"
                    )));
                }
            }
            continue;
        }
        let text = crate::scene_file::flag_text(value).ok_or_else(|| {
            Error::input(format!(
                "{key}: expected a number, a string or [x, y, z], got {value}"
            ))
        })?;
        out.push(format!("--{long}={text}").into());
    }
    Ok(out)
}

/// Parses `args` as the command line does, a usage error as one line.
fn parse(args: Vec<std::ffi::OsString>, preloaded: Option<(PathBuf, SceneFile)>) -> Result<Cli> {
    match super::parse_from(args, preloaded) {
        Parsed::Run(cli) => Ok(*cli),
        Parsed::Usage(line) => Err(Error::input(
            line.strip_suffix(" (see --help)")
                .unwrap_or(&line)
                .to_string(),
        )),
        Parsed::Help(text) => Err(Error::input(super::one_line(&text))),
    }
}

impl Session {
    /// A run of `scene` with `settings` (scene-file keys: `{"particles": 20000, "solver":
    /// "wcsph", "cpu": true}`), refused in one line where the command line refuses it.
    pub fn new(scene: SceneGiven, settings: &Map<String, Value>) -> Result<Self> {
        Self::build(scene, settings, None, Host::Python)
    }

    /// [`Session::new`] stepping on the GPU path of `ctx`, whatever its kind (a web page's
    /// adapter, made without blocking: [`GpuContext::new_async`]).
    pub fn on_gpu(
        scene: SceneGiven,
        settings: &Map<String, Value>,
        ctx: Arc<GpuContext>,
    ) -> Result<Self> {
        Self::build(scene, settings, Some(ctx), Host::Page { view: false })
    }

    /// The viewer's options for `scene` with `settings`, as the command line's viewer takes
    /// them from the same flags (what a web page's canvas shows), checked as a session's are.
    pub fn viewer_options(
        scene: SceneGiven,
        settings: &Map<String, Value>,
    ) -> Result<crate::viewer::ViewerOptions> {
        let cli = Self::parsed(scene, settings, Host::Page { view: true })?;
        if cli.input.is_some() {
            return Err(Error::input(
                "the viewer shows scenes, and the input is a particle file: run it headless",
            ));
        }
        let n = cli.particles.unwrap_or(super::cli::DEFAULT_PARTICLES);
        Ok(super::cli::viewer_options(&cli, n))
    }

    // The flags `scene` and `settings` make, checked as the command line checks them.
    fn parsed(
        scene: SceneGiven,
        settings: &Map<String, Value>,
        host: Host,
    ) -> Result<super::cli::Cli> {
        let mut args: Vec<std::ffi::OsString> = vec!["gpu-sph".into(), "--headless".into()];
        let preloaded = match scene {
            SceneGiven::Name(name) => {
                args.push(format!("--scene={name}").into());
                None
            }
            SceneGiven::Text { text, name } => {
                let mut file = SceneFile::parse(&text, &name)?;
                file.load_meshes(Path::new("."), &name)?;
                Some((PathBuf::from(name), file))
            }
            SceneGiven::Uploaded { text, name, meshes } => {
                let mut file = SceneFile::parse(&text, &name)?;
                file.load_meshes_with(&name, |path, at| uploaded_mesh(&meshes, path, at))?;
                Some((PathBuf::from(name), file))
            }
        };
        args.extend(words(settings, false, host)?);
        let mut cli = parse(args, preloaded)?;
        // A session steps on request: never a density-only run.
        cli.steps = u64::MAX;
        if cli.model == super::cli::Model::Grains {
            let who = match host {
                Host::Python => "the Python package",
                Host::Page { .. } => "a web page",
            };
            return Err(Error::input(format!(
                "{who} drives the fluid; the colliding spheres (model grains) run from the command line"
            )));
        }
        check_no_grains_flags(&cli)?;
        check_sources(&cli)?;
        if cli.hydrostatic_start {
            check_hydrostatic_start(&cli)?;
        }
        check_physics(&cli)?;
        Ok(cli)
    }

    fn build(
        scene: SceneGiven,
        settings: &Map<String, Value>,
        given: Option<Arc<GpuContext>>,
        host: Host,
    ) -> Result<Self> {
        let cli = Self::parsed(scene, settings, host)?;
        let ctx = match given {
            Some(ctx) => Some(ctx),
            None => super::shared::choose_paths(&cli)?.compute,
        };
        let source = match &cli.input {
            Some(path) => {
                let data = crate::io::read_particles(path)?;
                super::fluid::probe_memory(data.positions.len() as u64, ctx.as_deref())?;
                Source::Particles {
                    name: path.display().to_string(),
                    positions: data.positions,
                    velocities: data.velocities,
                }
            }
            None => Source::Scene(scene_choice(&cli)),
        };
        let spec = run_spec(&cli, source);
        let limits = ctx.as_deref().map(|c| &c.limits);
        // As the command line: a count the host cannot hold is refused before it is built
        // (a failed allocation would abort the Python process).
        let setup = Setup::new(&spec, limits, |n| {
            super::fluid::probe_memory(n as u64, ctx.as_deref())
        })?;
        let template = setup.template();
        Self::start(&cli, ctx, template, setup.state, setup.obstacles, None)
    }

    /// Continues the run the checkpoint at `path` holds; `settings` may choose only the path
    /// (`cpu`, `gpu`) and the divergence checks.
    pub fn resume(path: &Path, settings: &Map<String, Value>) -> Result<Self> {
        let mut args: Vec<std::ffi::OsString> = vec!["gpu-sph".into(), "--headless".into()];
        args.extend(words(settings, true, Host::Python)?);
        let mut cli = parse(args, None)?;
        cli.steps = u64::MAX;
        let (paths, template, state, obstacles, ck) = open_checkpoint(&cli, path)?;
        Self::start(&cli, paths.compute, template, state, obstacles, Some(ck))
    }

    fn start(
        cli: &Cli,
        ctx: Option<Arc<GpuContext>>,
        template: Template,
        state: Particles,
        obstacles: Option<Arc<Boundary>>,
        resumed: Option<Checkpoint>,
    ) -> Result<Self> {
        check_start(&state, &template.fluid_params)?;
        let backend = backend(
            ctx.as_ref(),
            &template,
            &state,
            obstacles.clone(),
            resumed.as_ref(),
        )?;
        let guards = run_guards(cli, &template);
        Ok(Self {
            backend,
            emitters: Emitters {
                list: template.header.emitters.clone(),
                s: template.header.config.spacing,
            },
            obstacles,
            guards,
            at: resumed
                .as_ref()
                .map(Checkpoint::run_from)
                .unwrap_or_default(),
            picture: super::cli::viewer_options(cli, template.header.config.particles),
            template,
            last: None,
            gpu: ctx,
        })
    }

    fn drive(&mut self, until: Until) -> Result<()> {
        crate::gpu::context::finish(self.drive_async(until), "Session::step_async")
    }

    async fn drive_async(&mut self, until: Until) -> Result<()> {
        let fp = self.template.fluid_params;
        let course = Course {
            fp: &fp,
            guards: &self.guards,
            emitters: &self.emitters,
        };
        let driven = drive_async(
            self.backend.as_mut(),
            &mut self.at,
            until,
            &course,
            &mut NoHooks,
        )
        .await?;
        if driven.last.is_some() {
            self.last = driven.last;
        }
        Ok(())
    }

    /// Takes `k` steps (stopping early if every particle left through open sides).
    pub fn step(&mut self, k: u64) -> Result<()> {
        self.drive(Until::steps(k))
    }

    /// [`Session::step`] without blocking (what a web page awaits).
    pub async fn step_async(&mut self, k: u64) -> Result<()> {
        self.drive_async(Until::steps(k)).await
    }

    /// Steps until the first step that reaches simulated time `t` (s); nothing if the run is
    /// there already.
    pub fn run_until(&mut self, t: f64) -> Result<()> {
        // A negative time is never ahead of a run, so it is a mistake, not a run already there.
        if !(t.is_finite() && t >= 0.0) {
            return Err(Error::input(format!(
                "until must be a finite time ≥ 0 in s, got {t}"
            )));
        }
        if self.at.t >= t {
            return Ok(());
        }
        self.drive(Until {
            steps: u64::MAX,
            time: Some(t),
        })
    }

    /// Simulated time, s.
    pub fn time(&self) -> f64 {
        self.at.t
    }

    /// Steps taken (a resumed run's count the checkpoint's).
    pub fn steps(&self) -> u64 {
        self.at.step
    }

    /// The last step's statistics row (`None` before the first step).
    pub fn stats(&self) -> Option<StepStats> {
        self.last
    }

    /// The last step's time step, s (0 before the first).
    pub fn dt(&self) -> f64 {
        self.last.map_or(0.0, |s| s.dt)
    }

    /// The run's description, as the command line's second line.
    pub fn geometry(&self) -> &str {
        &self.template.header.geometry
    }

    /// Whether the run steps on the GPU path, and the adapter's name.
    pub fn adapter(&self) -> Option<String> {
        self.gpu.as_ref().map(|c| c.info.name.clone())
    }

    /// The state after the last step, in the order the path holds it (see
    /// [`Particles::to_input_order`]).
    pub fn snapshot(&self) -> Result<Snapshot> {
        self.backend.snapshot()
    }

    /// The current state drawn as `--screenshot` draws a run's last frame, into a texture of
    /// `size` pixels read back as tightly packed RGBA bytes (what a web page checks: a headless
    /// page's canvas reads back blank), on the run's GPU. Awaited: a web page's form.
    pub async fn frame_async(&self, size: (u32, u32)) -> Result<Vec<u8>> {
        let Some(ctx) = self.gpu.clone() else {
            return Err(Error::input(
                "a frame is drawn on the run's GPU: this run steps on the CPU path",
            ));
        };
        let snap = self.backend.snapshot_async().await?;
        let setup = super::fluid::picture_setup(
            &self.template,
            snap.state,
            self.obstacles.clone(),
            self.at.t,
        );
        let opts = crate::viewer::ViewerOptions {
            size,
            ..self.picture.clone()
        };
        crate::viewer::picture_rgba_async(ctx, opts, setup).await
    }

    /// The fluid's parameters.
    pub fn fluid_params(&self) -> &crate::params::FluidParams {
        &self.template.fluid_params
    }

    /// Replaces the velocities, given in input order.
    pub fn set_velocities(&mut self, vel: &[glam::Vec3]) -> Result<()> {
        let snap = self.backend.snapshot()?;
        let n = snap.state.len();
        if vel.len() != n {
            return Err(Error::input(format!(
                "{} velocities given for {n} particles: give one per particle, as an (N, 3) array",
                vel.len()
            )));
        }
        if let Some(i) = vel.iter().position(|v| !v.is_finite()) {
            return Err(Error::input(format!(
                "velocity {i} is not finite ({}): give finite velocities in m/s",
                vel[i]
            )));
        }
        self.check_speeds(vel)?;
        let held: Vec<glam::Vec3> = snap.state.id.iter().map(|&id| vel[id as usize]).collect();
        self.backend.set_velocities(&held)
    }

    /// Refuses velocities the run's next step could not follow, naming the fastest, where the
    /// step's own checks would stop the run as diverged and blame its settings. A start this
    /// fast is refused by the derived speed of sound ([`crate::params::PhysicsConfig::head`]);
    /// mid-run the run's limits are fixed:
    /// - WCSPH: above the speed check's fraction of the sound speed (0.5 c by default), past
    ///   the weakly compressible model;
    /// - DFSPH (CFL step): faster than λ s / `--min-dt` (4 000 m/s at s = 10 mm, λ = 0.4,
    ///   1 µs), where the CFL step falls below the smallest step and the particles cross
    ///   more than λ s a step.
    fn check_speeds(&self, vel: &[glam::Vec3]) -> Result<()> {
        let Some((i, speed)) = vel
            .iter()
            .map(|v| v.length())
            .enumerate()
            .max_by(|a, b| a.1.total_cmp(&b.1))
        else {
            return Ok(());
        };
        let fp = &self.template.fluid_params;
        let g = &self.guards;
        let (limit, why, fix) = if g.wcsph {
            (
                g.speed_fraction * fp.sound_speed,
                format!(
                    "{}x the run's speed of sound {} m/s, past the weakly compressible model",
                    g.speed_fraction, fp.sound_speed
                ),
                "start the run with a larger sound_speed",
            )
        } else {
            let s = self.template.header.config.spacing;
            (
                // A fixed step has no CFL step to fall.
                if g.fixed_dt {
                    0.0
                } else {
                    fp.cfl * s / g.dt_min
                },
                format!(
                    "the speed whose CFL step λ s/|v| (λ = {}, s = {s} m) falls to min_dt = {} s",
                    fp.cfl, g.dt_min
                ),
                "start the run with a smaller min_dt",
            )
        };
        // A disabled check (speed_fraction 0) or min_dt 0 sets no limit.
        if limit > 0.0 && limit.is_finite() && speed > limit {
            return Err(Error::input(format!(
                "velocity {i} is {speed} m/s, faster than {why} ({limit:.3} m/s), so the next step would stop as diverged: give slower velocities, or {fix}"
            )));
        }
        Ok(())
    }

    /// Writes the state to `path` in the format its extension names: `.ply` and `.csv` as
    /// `--output` writes them, `.vtu` and `.bgeo` as `--export-format` does.
    pub fn export(&self, path: &Path) -> Result<()> {
        let ext = path
            .extension()
            .and_then(|e| e.to_str())
            .map(str::to_ascii_lowercase);
        let series = match ext.as_deref() {
            Some("vtu") => Some(ExportFormat::Vtu),
            Some("bgeo") => Some(ExportFormat::Bgeo),
            Some("ply" | "csv") => None,
            _ => {
                return Err(Error::file(
                    path,
                    "has no extension gpu-sph writes: end it in .ply, .csv, .vtu or .bgeo",
                ));
            }
        };
        crate::io::ensure_output_dir_of(path)?;
        let snap = self.backend.snapshot()?;
        let meta = crate::surface::FrameMeta::of(&self.template.header.config);
        match series {
            Some(format) => crate::run::write_particles(
                path,
                format,
                &snap,
                &self.template.fluid_params,
                Some(&meta),
            ),
            None => crate::run::write_snapshot(path, &snap, Some(&meta)),
        }
    }

    /// Writes the state as the frame of the current step into `dir`, as `--export-dir DIR
    /// --export-format F` names it (`frame_<step>.<ext>`); a VTU frame joins `dir/frames.pvd`
    /// at the current time (the entries of earlier times kept, so a loop of steps and exports
    /// builds the series a headless run writes). Returns the frame's path.
    pub fn export_frame(&self, dir: &Path, format: ExportFormat) -> Result<PathBuf> {
        crate::io::ensure_dir(dir)?;
        let name = format!("frame_{:06}.{}", self.at.step, format.extension());
        let path = dir.join(&name);
        let snap = self.backend.snapshot()?;
        let meta = crate::surface::FrameMeta::of(&self.template.header.config);
        let fp = &self.template.fluid_params;
        crate::run::write_particles(&path, format, &snap, fp, Some(&meta))?;
        if format == ExportFormat::Vtu {
            // Entries before this time kept, this one (and any later, from an earlier run into
            // the same directory) written anew.
            let before = self.at.t - f64::EPSILON * self.at.t.abs().max(1.0);
            let mut c = crate::series::Collection::open(dir, Some(before))?;
            c.add(self.at.t, crate::series::PARTICLES, &name)?;
        }
        Ok(path)
    }

    /// Writes a checkpoint of the run to `path` (any name; `Session::resume` reads it).
    pub fn checkpoint(&self, path: &Path) -> Result<()> {
        if self
            .template
            .header
            .obstacles
            .iter()
            .any(|o| matches!(o.shape, crate::scene::Shape::Mesh { .. }))
        {
            return Err(Error::input(
                "this run has a mesh obstacle, whose triangles checkpoints do not carry yet: rerun the scene from its start instead",
            ));
        }
        let snap = self.backend.snapshot()?;
        let carry = self.backend.carry()?;
        self.template.at(snap, carry, &self.at).write_to(path)
    }

    /// `--verify --steps k --tolerance tol` from the current state: the GPU's stages against
    /// the CPU reference's, step by step (on the run's GPU, or the first adapter found when the
    /// run steps on the CPU path).
    pub fn verify(&self, steps: u64, tolerance: f64) -> Result<crate::verify::Report> {
        crate::gpu::context::finish(self.verify_async(steps, tolerance), "Session::verify_async")
    }

    /// [`Session::verify`], awaited (a web page's form: the run's own GPU, each readback
    /// completing while the page yields).
    pub async fn verify_async(&self, steps: u64, tolerance: f64) -> Result<crate::verify::Report> {
        if !(tolerance.is_finite() && tolerance >= 0.0) {
            return Err(Error::input(format!(
                "tolerance must be a finite number ≥ 0, got {tolerance}"
            )));
        }
        let ctx = match &self.gpu {
            Some(c) => c.clone(),
            None => Arc::new(GpuContext::new()?),
        };
        let snap = self.backend.snapshot_async().await?;
        let t = &self.template;
        let mut sim = crate::gpu::fluid::Simulation::with_solver(
            ctx,
            &t.sim_params,
            &t.fluid_params,
            &t.solver,
            &snap.state,
        )?;
        let mut obstacles = self.obstacles.as_deref().cloned();
        if let Some(b) = obstacles.as_mut() {
            b.place(self.at.t);
        }
        sim.set_obstacles(obstacles.as_ref())?;
        crate::verify::verify_solver_steps_async(
            &sim,
            &snap.state,
            obstacles.as_ref(),
            &self.emitters,
            steps,
            tolerance,
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    /// A session and the driver loop's headless run of the same flags end in the same bits,
    /// stepped in one stretch or in several.
    #[test]
    fn stretches_of_steps_end_where_one_run_ends() {
        let s = settings(serde_json::json!({"particles": 1500, "cpu": true}));
        let mut one = Session::new(SceneGiven::Name("dam-break".into()), &s).unwrap();
        one.step(12).unwrap();
        let mut three = Session::new(SceneGiven::Name("dam-break".into()), &s).unwrap();
        for _ in 0..3 {
            three.step(4).unwrap();
        }
        let (a, b) = (one.snapshot().unwrap(), three.snapshot().unwrap());
        assert_eq!(one.steps(), 12);
        assert_eq!(one.time().to_bits(), three.time().to_bits());
        let bits = |v: &[glam::Vec3]| {
            v.iter()
                .flat_map(|p| p.to_array().map(f32::to_bits))
                .collect::<Vec<_>>()
        };
        assert_eq!(bits(&a.state.pos), bits(&b.state.pos));
        assert_eq!(bits(&a.state.vel), bits(&b.state.vel));
    }

    /// Settings are refused with the flag's own message, or named when unknown.
    #[test]
    fn bad_settings_are_refused_in_one_line() {
        let bad = |v: Value| {
            Session::new(SceneGiven::Name("dam-break".into()), &settings(v))
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        assert!(bad(serde_json::json!({"particels": 10})).contains("did you mean particles"));
        assert!(bad(serde_json::json!({"steps": 10})).contains("step(k)"));
        assert!(bad(serde_json::json!({"window_size": "800x600"})).contains("no window"));
        assert!(bad(serde_json::json!({"surface_every": 5})).contains("export_frame"));
        assert!(bad(serde_json::json!({"repeat": 3})).contains("--bench"));
        assert!(bad(serde_json::json!({"solver": "sph"})).contains("sph"));
        assert!(
            bad(serde_json::json!({"min_dt": 1.0, "max_dt": 0.1, "cpu": true}))
                .contains("--min-dt 1 exceeds --max-dt 0.1")
        );
    }

    /// A web page's refusals name what the page offers, not Python's methods; its view takes
    /// the viewer's flags, not the screenshot's.
    #[test]
    fn a_page_is_told_what_the_page_offers() {
        let refused = |v: Value, view: bool| {
            let scene = SceneGiven::Name("dam-break".into());
            Session::parsed(scene, &settings(v), Host::Page { view })
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default()
        };
        for (v, view) in [
            (serde_json::json!({"output": "out.csv"}), false),
            (serde_json::json!({"window_size": "800x600"}), false),
            (serde_json::json!({"screenshot": "a.png"}), true),
        ] {
            let e = refused(v.clone(), view);
            assert!(
                e.contains("in a web page use") && !e.contains("Python"),
                "{v}: {e}"
            );
        }
        assert_eq!(
            refused(serde_json::json!({"window_size": "800x600"}), true),
            ""
        );
        let e = refused(serde_json::json!({"model": "grains"}), false);
        assert!(e.starts_with("a web page drives the fluid"), "{e}");
    }

    /// A scene file given with its mesh files' bytes (a web page's file input) finds each mesh
    /// by its file name, and names one not given.
    #[test]
    fn an_uploaded_scene_reads_its_meshes_from_the_files_given() {
        let scene = r#"{"tank": {"min": [0, 0, 0], "max": [0.3, 0.3, 0.1]},
            "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.1, 0.1, 0.1]}}}],
            "obstacles": [{"shape": {"mesh": {"file": "parts/cube.obj", "scale": 0.05,
                                              "translation": [0.2, 0.0, 0.02]}}}]}"#;
        let cube: String = [0, 1]
            .iter()
            .flat_map(|x| [0, 1].map(move |y| (x, y)))
            .flat_map(|(x, y)| [0, 1].map(move |z| format!("v {x} {y} {z}\n")))
            .chain(
                [
                    "1 3 4", "1 4 2", "5 6 8", "5 8 7", "1 2 6", "1 6 5", "3 7 8", "3 8 4",
                    "1 5 7", "1 7 3", "2 4 8", "2 8 6",
                ]
                .map(|f| format!("f {f}\n")),
            )
            .collect();
        let given = |meshes: &[(&str, &str)]| SceneGiven::Uploaded {
            text: scene.into(),
            name: "spill.json".into(),
            meshes: meshes
                .iter()
                .map(|(n, b)| (n.to_string(), b.as_bytes().to_vec()))
                .collect(),
        };
        let s = settings(serde_json::json!({"cpu": true}));
        let run = Session::new(given(&[("cube.obj", &cube)]), &s).unwrap();
        assert!(run.obstacles.is_some(), "the cube is an obstacle");
        let e = Session::new(given(&[("other.obj", &cube)]), &s)
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            e.contains("obstacles[0].shape.mesh") && e.contains("cube.obj was not given"),
            "{e}"
        );
    }

    /// Velocities the next step cannot follow are refused where they are set, naming the
    /// fastest and the run's limit: they stopped the next step as diverged, whose message
    /// blamed the run's settings. Velocities within the limit still step.
    #[test]
    fn velocities_past_the_runs_limit_are_refused_where_they_are_set() {
        for (solver, fast, limit) in [
            // DFSPH: λ s / min_dt = 0.4 × 0.01 / 1e-6.
            ("dfsph", 5e3, "CFL step"),
            // WCSPH: 0.5 c, c the run's derived speed of sound (tens of m/s here).
            ("wcsph", 1e3, "speed of sound"),
        ] {
            let s = settings(serde_json::json!({"particles": 500, "cpu": true, "solver": solver}));
            let mut run = Session::new(SceneGiven::Name("dam-break".into()), &s).unwrap();
            let n = run.snapshot().unwrap().state.len();
            let mut vel = vec![glam::Vec3::ZERO; n];
            vel[7] = glam::Vec3::new(fast, 0.0, 0.0);
            let e = run.set_velocities(&vel).unwrap_err().to_string();
            assert!(
                e.contains("velocity 7 is") && e.contains(limit),
                "{solver}: {e}"
            );
            vel[7] = glam::Vec3::new(1.0, 0.0, 0.0);
            run.set_velocities(&vel).unwrap();
            run.step(2).unwrap();
        }
    }
}
