//! The `gpu-sph` command line: parse flags, pick a front end, map errors to exit codes
//! (0 success, 1 verification failure, 2 bad usage, bad input or missing environment).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches, Parser};
use gpu_sph::checkpoint;
use gpu_sph::gpu::{GpuContext, GpuNeighbours, check_limits};
use gpu_sph::params::{
    ConfigOverrides, DfsphConfig, PhysicsConfig, Solver, SphConfig, validate_positions,
    validate_table_size, validate_velocities,
};
use gpu_sph::scene::{Scene, SceneChoice, SceneKind};
use gpu_sph::scene_file::{SceneArg, SceneFile};
use gpu_sph::setup::{SetupOptions, describe};
use gpu_sph::summary::Summary;
use gpu_sph::surface::{self, FrameMeta, MeshFormat, SurfaceSettings};
use gpu_sph::viewer::{self, SimPath, ViewerOptions, render::ColorField, surface::RenderMode};
use gpu_sph::{Error, bench, io, verify};

/// GPU compute SPH fluid simulator (wgpu + WGSL), validated stage by stage against a CPU
/// reference.
#[derive(Parser, Debug)]
#[command(name = "gpu-sph", version, about)]
struct Cli {
    /// Run without a window (with --screenshot: render offscreen).
    #[arg(long)]
    headless: bool,
    /// Step on the CPU reference path instead of the GPU (the default when the only adapter is
    /// a software renderer such as lavapipe, and for headless runs when there is none).
    #[arg(long, conflicts_with_all = ["verify", "bench", "gpu"])]
    cpu: bool,
    /// Step on the GPU path even when the adapter is a software renderer.
    #[arg(long)]
    gpu: bool,
    /// Run the GPU pipeline and the CPU reference on the same particles and compare every stage.
    #[arg(long, conflicts_with = "bench", requires = "headless")]
    verify: bool,
    /// Time every GPU pass and CPU stage (medians over --repeat runs); with --steps K, every
    /// pass of K whole fluid steps.
    #[arg(long, requires = "headless")]
    bench: bool,
    /// Render --frames frames of the viewer, save the last as a PNG and exit (in the window, or
    /// offscreen with --headless); with --headless --steps K, a picture of the run's last frame.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["verify", "bench"])]
    screenshot: Option<PathBuf>,
    /// Frames to render before --screenshot saves.
    #[arg(long, default_value_t = 10, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    frames: u32,
    /// Simulation steps per rendered frame in the viewer.
    #[arg(long, default_value_t = 2, value_name = "K", value_parser = clap::value_parser!(u32).range(1..))]
    substeps: u32,
    /// Field that colours the particles in the viewer.
    #[arg(long, value_enum, default_value_t = ColorField::Speed)]
    color_by: ColorField,
    /// Window (or offscreen image) size in pixels, WIDTHxHEIGHT.
    #[arg(long, default_value = "1280x720", value_parser = parse_size, value_name = "WxH")]
    window_size: (u32, u32),
    /// How the window presents frames.
    #[arg(long, value_enum, default_value_t = PresentMode::Fifo)]
    present_mode: PresentMode,
    /// Print the viewer's mean simulation and render time per frame at exit.
    #[arg(long)]
    timings: bool,
    /// How the viewer draws the fluid at start (S toggles): lit spheres coloured by
    /// --color-by, or the screen-space water surface.
    #[arg(long, value_enum, default_value_t = RenderMode::Spheres)]
    render: RenderMode,
    /// Start the viewer with its control panel hidden (H toggles it).
    #[arg(long)]
    hide_ui: bool,
    /// Viewer camera: the point it circles and looks at, X,Y,Z in m (default: the tank's
    /// centre).
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true)]
    camera_target: Option<glam::Vec3>,
    /// Viewer camera: distance from its target in m (default: far enough to see the tank).
    #[arg(long, value_name = "M", value_parser = parse_camera_distance)]
    camera_distance: Option<f32>,
    /// Viewer camera: angle about the vertical in degrees, 0 looking along −z (default −25.8).
    #[arg(long, value_name = "DEG", value_parser = parse_camera_yaw, allow_hyphen_values = true)]
    camera_yaw: Option<f32>,
    /// Viewer camera: angle above the horizontal in degrees, −89 to 89 (default 20.1).
    #[arg(long, value_name = "DEG", value_parser = parse_camera_pitch, allow_hyphen_values = true)]
    camera_pitch: Option<f32>,
    /// After --screenshot, shrink the window to 0x0 and back, rendering on (for the window test).
    #[arg(long, hide = true, requires = "screenshot")]
    exercise_resize: bool,
    /// With --bench: also time the all-pairs O(N²) density beside the grid (CPU path) at
    /// N = 5000 and 50000 (or at the run's N when that is 50000 or less).
    #[arg(long, requires = "bench")]
    brute_force: bool,
    /// Number of particles (ignored with --input, which brings its own).
    #[arg(short = 'n', long = "particles", value_name = "N")]
    particles: Option<u32>,
    /// Hash table size T, a power of two [default: next power of two ≥ 2N].
    #[arg(long, value_name = "T", value_parser = parse_table_size)]
    table_size: Option<u32>,
    /// Particles per walking group, 1 to 8: a tuning knob, same results at every size
    /// [default: 8 on a software adapter such as lavapipe, 1 on a GPU; 1 where slots are
    /// crowded (N > 64 T)]
    #[arg(long, value_name = "K")]
    group_size: Option<u32>,
    /// Smoothing radius h in metres [default: 2 × spacing].
    #[arg(long, value_name = "H", allow_hyphen_values = true)]
    smoothing_radius: Option<f32>,
    /// Initial particle spacing s in metres [default: 0.01].
    #[arg(long, value_name = "S", allow_hyphen_values = true)]
    spacing: Option<f32>,
    /// Particle mass in kg [default: rest density × spacing³; with --steps, the mass that puts a
    /// lattice of that spacing exactly at rest density].
    #[arg(long, value_name = "M", allow_hyphen_values = true)]
    particle_mass: Option<f32>,
    /// Rest density in kg/m³ [default: 1000].
    #[arg(long, value_name = "R", allow_hyphen_values = true)]
    rest_density: Option<f32>,
    /// A built-in scene (dam-break, cube, random, drop) or a scene file (a path, or a name
    /// ending in .json): the tank, fluid bodies and any flag's setting (docs/scenes.md); flags
    /// given here override the file's.
    #[arg(long, default_value = "dam-break", value_name = "NAME|FILE", value_parser = SceneArg::parse)]
    scene: SceneArg,
    /// Print a built-in scene as a scene file (to start your own from) and exit.
    #[arg(long, value_enum, value_name = "NAME")]
    print_scene: Option<SceneKind>,
    /// Seed for scenes with randomness.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Simulation steps; 0 computes the neighbour grid and densities only.
    #[arg(long, default_value_t = 0)]
    steps: u64,
    /// Headless runs: stop after the first step that reaches this simulated time, s (with
    /// --steps too, whichever comes first).
    #[arg(long, value_name = "SECONDS", value_parser = parse_end_time)]
    end_time: Option<f64>,
    /// Gravity along y in m/s².
    #[arg(long, default_value_t = -9.81, allow_hyphen_values = true, value_name = "G")]
    gravity: f32,
    /// Physical (Müller) dynamic viscosity in Pa·s.
    #[arg(
        long,
        default_value_t = 0.0,
        allow_hyphen_values = true,
        value_name = "MU"
    )]
    viscosity: f32,
    /// Monaghan artificial viscosity α.
    #[arg(long, default_value_t = 0.05, allow_hyphen_values = true)]
    alpha: f32,
    /// Speed of sound in m/s [default: 10 × √(2 g H), H the fluid's initial height].
    #[arg(long, allow_hyphen_values = true, value_name = "C")]
    sound_speed: Option<f32>,
    /// Courant number of the CFL time step.
    #[arg(long, default_value_t = 0.4, allow_hyphen_values = true)]
    cfl: f32,
    /// Force a fixed time step in seconds instead of the CFL condition.
    #[arg(long, allow_hyphen_values = true, value_name = "SECONDS")]
    dt: Option<f32>,
    /// Fraction of the normal speed a particle keeps when it meets a wall, 0..1 (--model grains:
    /// the walls' contact restitution, 0.01..1, default 0.5).
    #[arg(
        long,
        default_value_t = 0.0,
        allow_hyphen_values = true,
        value_name = "E"
    )]
    restitution: f32,
    /// Largest time step in seconds (both solvers).
    #[arg(
        long,
        default_value_t = 5e-3,
        allow_hyphen_values = true,
        value_name = "SECONDS"
    )]
    dt_max: f32,
    /// Smallest time step in seconds: DFSPH clamps dt here, and a step whose dt reaches it
    /// ends the run as diverged (unless --dt fixes dt).
    #[arg(
        long,
        default_value_t = 1e-6,
        allow_hyphen_values = true,
        value_name = "SECONDS"
    )]
    dt_min: f32,
    /// Pressure solver of fluid runs: dfsph (divergence-free, incompressible; the default) or
    /// wcsph (weakly compressible).
    #[arg(long, value_enum, default_value_t = Solver::Dfsph)]
    solver: Solver,
    /// DFSPH divergence-free solve tolerance: mean of max(Dρ/Dt, 0)·dt/ρ0, as a fraction
    /// (0.001 = 0.1%).
    #[arg(
        long,
        default_value_t = 1e-3,
        allow_hyphen_values = true,
        value_name = "FRACTION"
    )]
    divergence_tolerance: f32,
    /// DFSPH constant-density solve tolerance: mean of max(ρ*/ρ0 − 1, 0), as a fraction
    /// (0.0001 = 0.01%).
    #[arg(
        long,
        default_value_t = 1e-4,
        allow_hyphen_values = true,
        value_name = "FRACTION"
    )]
    density_tolerance: f32,
    /// Most iterations of each DFSPH solve per step.
    #[arg(long, default_value_t = 100, value_name = "K")]
    max_iterations: u32,
    /// DFSPH: most explicit substeps of the viscous accelerations per step (1 to 16), so the
    /// step may be up to K times the viscosity's stability limit.
    #[arg(long, default_value_t = gpu_sph::params::DFSPH_VISCOUS_SUBSTEPS, value_name = "K")]
    viscous_substeps: u32,
    /// A run whose largest density exceeds this multiple of the rest density and is still
    /// rising ends as diverged (0 disables).
    #[arg(
        long,
        default_value_t = 2.0,
        allow_hyphen_values = true,
        value_name = "RATIO"
    )]
    max_density_ratio: f32,
    /// WCSPH: a run whose largest speed exceeds this fraction of the speed of sound ends as
    /// diverged (0 disables; the weakly compressible model assumes about 0.1).
    #[arg(
        long,
        default_value_t = 0.5,
        allow_hyphen_values = true,
        value_name = "FRACTION"
    )]
    max_speed_fraction: f32,
    /// A run whose total energy (kinetic + potential, + the equation of state's for WCSPH)
    /// rises above the first step's by more than this fraction of it ends as diverged (0
    /// disables).
    #[arg(
        long,
        default_value_t = 0.05,
        allow_hyphen_values = true,
        value_name = "FRACTION"
    )]
    energy_margin: f32,
    /// Lower corner of the tank, X,Y,Z in metres (with --steps) [default: the scene's, or for
    /// --input the particles' bounding box grown by 2h].
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true, requires = "tank_max")]
    tank_min: Option<glam::Vec3>,
    /// Upper corner of the tank, X,Y,Z in metres (with --steps).
    #[arg(long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true, requires = "tank_min")]
    tank_max: Option<glam::Vec3>,
    /// Write one CSV row of statistics per step to FILE.
    #[arg(long, value_name = "FILE", requires = "headless")]
    stats: Option<PathBuf>,
    /// Write frames as binary PLY files into DIR.
    #[arg(long, value_name = "DIR", requires = "headless")]
    export_dir: Option<PathBuf>,
    /// Write a frame every K steps.
    #[arg(long, default_value_t = 10, value_name = "K", requires = "export_dir")]
    export_every: u64,
    /// Write a surface mesh of the fluid every --surface-every steps into DIR (an existing
    /// directory), as surface_<step>.<ext>; with --surface-from, the meshes of those frames.
    #[arg(long, value_name = "DIR", requires = "headless")]
    surface_dir: Option<PathBuf>,
    /// Write a surface every K steps [default: the --export-every cadence].
    #[arg(long, value_name = "K", requires = "surface_dir")]
    surface_every: Option<u64>,
    /// Mesh file format.
    #[arg(long, value_enum, default_value_t = MeshFormat::Obj, requires = "surface_dir")]
    surface_format: MeshFormat,
    /// Iso-surface threshold as a fraction of the rest density.
    #[arg(
        long,
        default_value_t = 0.6,
        value_name = "FRACTION",
        allow_hyphen_values = true
    )]
    surface_threshold: f32,
    /// Marching-cubes cell edge relative to the particle radius r = (3m/4πρ0)^(1/3).
    #[arg(
        long,
        default_value_t = 0.5,
        value_name = "FACTOR",
        allow_hyphen_values = true
    )]
    surface_cube_size: f32,
    /// Laplacian smoothing iterations of each mesh (0: none; each shrinks it slightly).
    #[arg(long, default_value_t = 0, value_name = "K")]
    surface_smoothing: u32,
    /// Reconstruct surfaces of PLY frames already on disk (a frame, or a directory of them)
    /// into --surface-dir, then exit.
    #[arg(long, value_name = "PATH", requires_all = ["headless", "surface_dir"], conflicts_with_all = ["steps", "input", "verify", "bench"])]
    surface_from: Option<PathBuf>,
    /// Read particles from a .csv or .ply file.
    #[arg(long, value_name = "FILE", requires = "headless")]
    input: Option<PathBuf>,
    /// Write x,y,z,vx,vy,vz,density per particle, in input order, to a .csv or .ply file.
    #[arg(long, value_name = "FILE", requires = "headless")]
    output: Option<PathBuf>,
    /// Print the summary or report as one JSON object.
    #[arg(long)]
    json: bool,
    /// Write a checkpoint every K steps (0: only when SIGINT or SIGTERM stops the run).
    #[arg(long, default_value_t = 0, value_name = "K")]
    checkpoint_every: u64,
    /// Directory for checkpoints (the last two are kept).
    #[arg(long, default_value = "checkpoints", value_name = "DIR")]
    checkpoint_dir: PathBuf,
    /// Continue the run a checkpoint holds; --steps K counts the steps still to run. Only
    /// run-control flags may be given with it.
    #[arg(long, value_name = "FILE", requires = "headless")]
    resume: Option<PathBuf>,
    /// The flags given on the command line (filled after parsing).
    #[arg(skip)]
    given: Vec<String>,
    /// The scene file `--scene` names (read after parsing).
    #[arg(skip)]
    scene_file: Option<Arc<SceneFile>>,
    /// What the particles are: SPH fluid, or colliding spheres (a discrete-element model on the
    /// same grid; README, "Colliding spheres").
    #[arg(long, value_enum, default_value_t = Model::Fluid)]
    model: Model,
    /// --model grains: the largest sphere radius in m.
    #[arg(
        long,
        default_value_t = 0.004,
        value_name = "M",
        allow_hyphen_values = true
    )]
    grain_radius: f32,
    /// --model grains: largest over smallest radius (radii uniform in between; 1: all equal).
    #[arg(
        long,
        default_value_t = 1.0,
        value_name = "RATIO",
        allow_hyphen_values = true
    )]
    grain_ratio: f32,
    /// --model grains: material density in kg/m³ (glass: 2500).
    #[arg(
        long,
        default_value_t = 2500.0,
        value_name = "KG_M3",
        allow_hyphen_values = true
    )]
    grain_density: f32,
    /// --model grains: normal contact stiffness in N/m [default: keeps the deepest overlap of
    /// the resting pile near 1% of the smallest radius].
    #[arg(long, value_name = "N_PER_M", allow_hyphen_values = true)]
    contact_stiffness: Option<f32>,
    /// --model grains: coefficient of restitution of sphere–sphere contacts, 0.01..1 (walls use
    /// --restitution).
    #[arg(
        long,
        default_value_t = 0.5,
        value_name = "E",
        allow_hyphen_values = true
    )]
    contact_restitution: f32,
    /// --model grains: Coulomb friction coefficient μ of contacts.
    #[arg(
        long,
        default_value_t = 0.5,
        value_name = "MU",
        allow_hyphen_values = true
    )]
    contact_friction: f32,
    /// Relative density tolerance for --verify.
    #[arg(long, default_value_t = 1e-5, value_name = "REL")]
    tolerance: f64,
    /// Repetitions for --bench.
    #[arg(long, default_value_t = 11, value_name = "K")]
    repeat: u32,
}

/// Particle counts of the `--brute-force` comparison.
const BRUTE_FORCE_SIZES: [usize; 2] = [5_000, 50_000];

/// Default particle count of the built-in scenes.
const DEFAULT_PARTICLES: u32 = 100_000;

/// `--model` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Model {
    /// SPH fluid (either solver).
    Fluid,
    /// Colliding spheres of individual radii: spring–dashpot contacts with friction.
    Grains,
}

/// Default sphere count of `--model grains`.
const DEFAULT_GRAINS: u32 = 20_000;

/// `--present-mode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PresentMode {
    Immediate,
    Mailbox,
    Fifo,
}

fn parse_point(s: &str) -> Result<glam::Vec3, String> {
    let bad = || format!("expected X,Y,Z such as 0,0,0.5, got {s:?}");
    let v: Vec<f32> = s
        .split(',')
        .map(|c| c.trim().parse::<f32>().map_err(|_| bad()))
        .collect::<Result<_, _>>()?;
    match v[..] {
        [x, y, z] if v.iter().all(|c| c.is_finite()) => Ok(glam::Vec3::new(x, y, z)),
        _ => Err(bad()),
    }
}

fn parse_end_time(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(t) if t.is_finite() && t > 0.0 => Ok(t),
        _ => Err(format!(
            "expected a simulated time > 0 in s such as 2.5, got {s:?}"
        )),
    }
}

fn parse_camera_distance(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(d) if d.is_finite() && d > 0.0 => Ok(d),
        _ => Err(format!(
            "expected a distance > 0 in m such as 1.5, got {s:?}"
        )),
    }
}

fn parse_camera_yaw(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(a) if a.is_finite() => Ok(a),
        _ => Err(format!(
            "expected an angle in degrees such as -30, got {s:?}"
        )),
    }
}

fn parse_camera_pitch(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(a) if a.is_finite() && (-89.0..=89.0).contains(&a) => Ok(a),
        _ => Err(format!(
            "expected an angle from -89 to 89 degrees such as 20, got {s:?}"
        )),
    }
}

fn parse_size(s: &str) -> Result<(u32, u32), String> {
    let bad = || format!("expected WIDTHxHEIGHT such as 1280x720, got {s:?}");
    let (w, h) = s.split_once(['x', 'X']).ok_or_else(bad)?;
    let (w, h): (u32, u32) = (
        w.trim().parse().map_err(|_| bad())?,
        h.trim().parse().map_err(|_| bad())?,
    );
    if !(1..=16384).contains(&w) || !(1..=16384).contains(&h) {
        return Err(format!(
            "window size must be 1..16384 pixels per side, got {w}x{h}"
        ));
    }
    Ok((w, h))
}

fn parse_table_size(s: &str) -> Result<u32, String> {
    let t: u32 = match s.parse::<u64>() {
        Ok(big) if big > u32::MAX as u64 => {
            return Err(format!(
                "table size {big} exceeds the largest supported table 2^24 = 16777216: pass a smaller --table-size"
            ));
        }
        Ok(t) => t as u32,
        Err(_) => return Err(format!("expected a power of two such as 1024, got {s:?}")),
    };
    validate_table_size(t).map_err(|e| e.to_string())
}

/// Flattens a clap error into one line.
fn one_line_clap_error(e: &clap::Error) -> String {
    let text = e.render().to_string();
    let parts: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| {
            !l.is_empty() && !l.starts_with("For more information") && !l.starts_with("Usage:")
        })
        .collect();
    let line = parts.join(" ");
    format!(
        "{} (see --help)",
        line.strip_prefix("error: ").unwrap_or(&line)
    )
}

enum Outcome {
    Done,
    VerifyFailed,
    /// A signal stopped the run after a checkpoint: exit 128 + the signal's number.
    Interrupted(i32),
}

fn main() -> ExitCode {
    // The GL backend's probe logs an ERROR on machines without a GL driver even when Vulkan
    // serves (lavapipe): noise for a user, so it is off unless RUST_LOG asks for it. An
    // unknown WGPU_BACKEND name is said in the no-adapter line itself, not in wgpu's warnings.
    env_logger::Builder::from_env(
        env_logger::Env::default().default_filter_or("warn,wgpu_hal=off,wgpu_types=error"),
    )
    .init();
    let parsed = Cli::command()
        .try_get_matches()
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let cli = match parsed {
        Ok((mut cli, m)) => {
            // Arguments only: the derive also registers the struct as a group.
            cli.given = Cli::command()
                .get_arguments()
                .map(|a| a.get_id().as_str())
                .filter(|id| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
                .map(String::from)
                .collect();
            cli
        }
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                print!("{}", e.render());
                return ExitCode::SUCCESS;
            }
            eprintln!("gpu-sph: {}", one_line_clap_error(&e));
            return ExitCode::from(2);
        }
    };
    let mut cli = match with_scene_file(cli) {
        Ok(cli) => cli,
        Err(e) => {
            eprintln!("gpu-sph: {}", one_line(&e.to_string()));
            return ExitCode::from(2);
        }
    };
    // An end time alone runs until it: the step count is then only a cap.
    if cli.end_time.is_some() && cli.steps == 0 {
        cli.steps = u64::MAX;
    }
    match run(&cli) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::VerifyFailed) => ExitCode::from(1),
        Ok(Outcome::Interrupted(signal)) => ExitCode::from((128 + signal).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("gpu-sph: {}", one_line(&e.to_string()));
            ExitCode::from(2)
        }
    }
}

fn one_line(msg: &str) -> String {
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// With `--scene FILE`: reads the file and parses the command line again with the file's
/// settings added after the flags given, each only where its flag was not given (so a flag
/// overrides the file). Each value is first checked by its flag's own parser, so an error
/// names the key. The run and outputs sections apply to `--headless` runs only (the viewer
/// runs until closed and writes nothing).
fn with_scene_file(cli: Cli) -> Result<Cli, Error> {
    let SceneArg::File(path) = &cli.scene else {
        return Ok(cli);
    };
    let file = SceneFile::read(path)?;
    let cmd = Cli::command();
    let name = path.display();
    let mut extra: Vec<std::ffi::OsString> = Vec::new();
    for (section, _) in gpu_sph::scene_file::SECTIONS {
        if matches!(section, "run" | "outputs") && !cli.headless {
            continue;
        }
        for (key, value) in file.section(section) {
            if cli.given.iter().any(|g| g == key) {
                continue;
            }
            let Some(arg) = cmd.get_arguments().find(|a| a.get_id() == key.as_str()) else {
                return Err(Error::input(format!(
                    "{name}: at {section}.{key}: no such setting"
                )));
            };
            let long = arg.get_long().unwrap_or(key);
            let at = format!("{name}: at {section}.{key}");
            if !arg.get_action().takes_values() {
                match value.as_bool() {
                    Some(true) => extra.push(format!("--{long}").into()),
                    Some(false) => {}
                    None => {
                        return Err(Error::input(format!(
                            "{at}: expected true or false, got {value}"
                        )));
                    }
                }
                continue;
            }
            let text = gpu_sph::scene_file::flag_text(value).ok_or_else(|| {
                Error::input(format!(
                    "{at}: expected a number, a string or [x, y, z], got {value}"
                ))
            })?;
            // The flag alone, without its relations to other flags, through its own parser.
            let alone = clap::Arg::new(arg.get_id().clone())
                .allow_hyphen_values(true)
                .value_parser(arg.get_value_parser().clone());
            clap::Command::new("gpu-sph")
                .arg(alone)
                .try_get_matches_from(["gpu-sph", text.as_str()])
                .map_err(|e| {
                    let msg = one_line_clap_error(&e);
                    let msg = msg.strip_suffix(" (see --help)").unwrap_or(&msg);
                    Error::input(format!(
                        "{at}: {}; see docs/scenes.md",
                        msg.replace(&format!("'[{key}]'"), &format!("{section}.{key}"))
                    ))
                })?;
            extra.push(format!("--{long}={text}").into());
        }
    }
    let matches = Cli::command()
        .try_get_matches_from(std::env::args_os().chain(extra))
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| {
            Error::input(format!(
                "{name}: with the file's settings: {}",
                one_line_clap_error(&e)
            ))
        })?;
    Ok(Cli {
        given: cli.given,
        scene_file: Some(Arc::new(file)),
        ..matches
    })
}

/// Whether the solver was chosen (on the command line or in a scene file) rather than left
/// at its default: a density-only run (no --steps) has no solver to default, but naming one
/// there is a mistake worth a line.
fn solver_chosen(cli: &Cli) -> bool {
    cli.given.iter().any(|g| g == "solver")
        || (cli.scene_file.as_ref()).is_some_and(|f| f.section("physics").contains_key("solver"))
}

/// The scene `--scene` chose: a built-in one, or the file's description.
fn scene_choice(cli: &Cli) -> SceneChoice {
    match (&cli.scene, &cli.scene_file) {
        (SceneArg::File(path), Some(file)) => SceneChoice::Described {
            name: path.display().to_string(),
            desc: Arc::new(file.desc()),
        },
        (SceneArg::Builtin(kind), _) => SceneChoice::Builtin(*kind),
        // with_scene_file reads every file before the run starts.
        (SceneArg::File(_), None) => SceneChoice::Builtin(SceneKind::DamBreak),
    }
}

/// A scene file's bodies fix N: `-n` beside one is a contradiction, said in one line.
fn check_no_count_with_file(cli: &Cli) -> Result<(), Error> {
    match (&cli.scene, cli.particles) {
        (SceneArg::File(path), Some(n)) => Err(Error::input(format!(
            "-n {n} does not apply to scene file {}: its fluid bodies (their sizes and counts) fix N; drop -n or edit the bodies",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// The divergence checks the flags ask for (the solver's own fields from the flags too).
fn guards(cli: &Cli) -> gpu_sph::run::Guards {
    gpu_sph::run::Guards {
        density_ratio: cli.max_density_ratio,
        speed_fraction: cli.max_speed_fraction,
        dt_min: cli.dt_min,
        wcsph: cli.solver == Solver::Wcsph,
        fixed_dt: cli.dt.is_some(),
        energy_margin: cli.energy_margin,
    }
}

fn overrides(cli: &Cli) -> ConfigOverrides {
    ConfigOverrides {
        table_size: cli.table_size,
        smoothing_radius: cli.smoothing_radius,
        spacing: cli.spacing,
        particle_mass: cli.particle_mass,
        rest_density: cli.rest_density,
        group_size: cli.group_size,
    }
}

fn dfsph_config(cli: &Cli) -> DfsphConfig {
    DfsphConfig {
        divergence_tolerance: cli.divergence_tolerance,
        density_tolerance: cli.density_tolerance,
        max_iterations: cli.max_iterations,
        dt_min: cli.dt_min,
        viscous_substeps: cli.viscous_substeps,
    }
}

fn physics(cli: &Cli) -> PhysicsConfig {
    PhysicsConfig {
        gravity: cli.gravity,
        viscosity: cli.viscosity,
        alpha: cli.alpha,
        sound_speed: cli.sound_speed,
        cfl: cli.cfl,
        dt: cli.dt,
        restitution: cli.restitution,
        dt_max: cli.dt_max,
    }
}

/// The viewer's options from the flags, for `particles` particles.
fn viewer_options(cli: &Cli, particles: u32) -> ViewerOptions {
    ViewerOptions {
        setup: SetupOptions {
            particles,
            scene: scene_choice(cli),
            seed: cli.seed,
            overrides: overrides(cli),
            physics: physics(cli),
            dfsph: (cli.solver == Solver::Dfsph).then(|| dfsph_config(cli)),
        },
        substeps: cli.substeps,
        field: cli.color_by,
        size: cli.window_size,
        present_mode: match cli.present_mode {
            PresentMode::Immediate => wgpu::PresentMode::Immediate,
            PresentMode::Mailbox => wgpu::PresentMode::Mailbox,
            PresentMode::Fifo => wgpu::PresentMode::Fifo,
        },
        screenshot: cli.screenshot.clone(),
        frames: cli.frames,
        exercise_resize: cli.exercise_resize,
        print_timings: cli.timings,
        hide_ui: cli.hide_ui,
        camera: viewer::CameraSettings {
            target: cli.camera_target,
            distance: cli.camera_distance,
            yaw: cli.camera_yaw.map(f32::to_radians),
            pitch: cli.camera_pitch.map(f32::to_radians),
        },
        render_mode: cli.render,
        path: if cli.cpu {
            SimPath::Cpu
        } else if cli.gpu {
            SimPath::Gpu
        } else {
            SimPath::Auto
        },
        guards: guards(cli),
        grains: None,
    }
}

/// The viewer: a window, or with `--headless --screenshot` an offscreen render.
fn view(cli: &Cli) -> Result<Outcome, Error> {
    if cli.input.is_some()
        || cli.output.is_some()
        || cli.stats.is_some()
        || cli.export_dir.is_some()
    {
        return Err(Error::input(
            "--input, --output, --stats and --export-dir belong to headless runs: add --headless --steps K (with --screenshot, the run ends with a picture)",
        ));
    }
    if cli.tank_min.is_some() {
        return Err(Error::input(
            "the viewer uses its scene's tank: drop --tank-min/--tank-max, or add --headless --steps K",
        ));
    }
    if cli.steps > 0 {
        return Err(Error::input(
            "--steps runs without a window: add --headless (the viewer steps until closed; set --substeps per frame)",
        ));
    }
    let opts = viewer_options(cli, cli.particles.unwrap_or(DEFAULT_PARTICLES));
    if cli.headless {
        viewer::run_offscreen(opts)?;
    } else {
        viewer::window::run(opts)?;
    }
    Ok(Outcome::Done)
}

fn surface_settings(cli: &Cli) -> SurfaceSettings {
    SurfaceSettings {
        iso_threshold: cli.surface_threshold,
        cube_size: cli.surface_cube_size,
        smoothing: cli.surface_smoothing,
        format: cli.surface_format,
    }
}

/// A progress bar drawn only on a terminal.
fn bar(len: u64, multi: &indicatif::MultiProgress, template: &str) -> indicatif::ProgressBar {
    let bar = multi.add(indicatif::ProgressBar::new(len));
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

fn progress_target() -> indicatif::MultiProgress {
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::MultiProgress::new()
    } else {
        indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden())
    }
}

/// `--surface-from PATH --surface-dir OUT`: meshes of frames already on disk.
fn surface_from(
    cli: &Cli,
    from: &std::path::Path,
    out: &std::path::Path,
) -> Result<Outcome, Error> {
    let settings = surface_settings(cli);
    settings.validate()?;
    surface::check_output_dir(out)?;
    let frames = surface::frames_in(from)?;
    // Files without gpu-sph's header comments take the run's flags (when any is given).
    let fallback = [
        cli.spacing,
        cli.smoothing_radius,
        cli.particle_mass,
        cli.rest_density,
    ]
    .iter()
    .any(Option::is_some)
    .then(|| SphConfig::new(1, overrides(cli)).map(|c| FrameMeta::of(&c)))
    .transpose()?;
    let multi = progress_target();
    let progress = bar(
        frames.len() as u64,
        &multi,
        "surfaces {bar:40} {pos}/{len} {msg}",
    );
    let (mut reconstruct_s, mut write_s) = (Vec::new(), Vec::new());
    for (i, path) in frames.iter().enumerate() {
        let (positions, meta) = surface::read_frame(path, fallback)?;
        let t0 = std::time::Instant::now();
        let mesh = surface::reconstruct(&positions, &meta, &settings)?;
        let t1 = std::time::Instant::now();
        let step = surface::step_of(path, i);
        surface::write_mesh(
            &mesh,
            &surface::mesh_path(out, step, settings.format),
            settings.format,
        )?;
        reconstruct_s.push((t1 - t0).as_secs_f64());
        write_s.push(t1.elapsed().as_secs_f64());
        progress.inc(1);
    }
    progress.finish_and_clear();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        1e3 * v[v.len() / 2]
    };
    println!(
        "gpu-sph: wrote {} surface meshes ({}) to {}; per frame (median): reconstruction {:.1} ms, writing {:.1} ms",
        frames.len(),
        settings.format.extension(),
        out.display(),
        median(&mut reconstruct_s),
        median(&mut write_s)
    );
    Ok(Outcome::Done)
}

/// Where a headless run computes, and what draws its picture.
struct Paths {
    /// The GPU path's context; `None`: the CPU path.
    compute: Option<Arc<GpuContext>>,
    /// A context for the picture, or why there is none.
    picture: std::result::Result<Arc<GpuContext>, String>,
}

/// Picks the path: `--cpu` and `--gpu` decide; otherwise the GPU path on a real GPU, and the
/// CPU path (said in one line) on a software adapter or without one, where it is faster or the
/// only one. `--verify` and `--bench` always run the GPU (they compare both paths).
fn choose_paths(cli: &Cli) -> Result<Paths, Error> {
    if cli.cpu {
        let picture = match &cli.screenshot {
            Some(_) => GpuContext::new().map(Arc::new).map_err(|e| e.to_string()),
            None => Err("no picture asked for".into()),
        };
        return Ok(Paths {
            compute: None,
            picture,
        });
    }
    let forced = cli.gpu || cli.verify || cli.bench;
    match GpuContext::new() {
        Ok(ctx) => {
            let ctx = Arc::new(ctx);
            if !forced && ctx.info.device_type == wgpu::DeviceType::Cpu {
                eprintln!(
                    "gpu-sph: {} is a software renderer, so this run takes the CPU path, which is faster here (--gpu forces the GPU path)",
                    ctx.info.name
                );
                return Ok(Paths {
                    compute: None,
                    picture: Ok(ctx),
                });
            }
            Ok(Paths {
                compute: Some(ctx.clone()),
                picture: Ok(ctx),
            })
        }
        Err(e) if !forced => {
            let why = e.to_string();
            eprintln!(
                "gpu-sph: no usable GPU adapter, so this run takes the CPU path ({})",
                why.split_whitespace().collect::<Vec<_>>().join(" ")
            );
            Ok(Paths {
                compute: None,
                picture: Err(why),
            })
        }
        Err(e) => Err(e),
    }
}

fn run(cli: &Cli) -> Result<Outcome, Error> {
    if let Some(kind) = cli.print_scene {
        print!("{}", kind.file_text());
        return Ok(Outcome::Done);
    }
    if cli.model == Model::Grains {
        return grains(cli);
    }
    if let Some(f) = gpu_sph::grains::FLAGS
        .iter()
        .find(|f| cli.given.iter().any(|g| g == *f))
    {
        return Err(Error::input(format!(
            "--{} sets the colliding spheres: add --model grains",
            f.replace('_', "-")
        )));
    }
    check_no_count_with_file(cli)?;
    if let (Some(input), SceneArg::File(path)) = (&cli.input, &cli.scene) {
        return Err(Error::input(format!(
            "--input {} and scene file {} both bring the fluid: drop one (a scene file's settings alone can be given as flags)",
            input.display(),
            path.display()
        )));
    }
    if let Some(t) = cli.end_time {
        if !cli.headless {
            return Err(Error::input(format!(
                "--end-time {t} ends a headless run (the viewer runs until closed): add --headless"
            )));
        }
        if cli.verify || cli.bench {
            return Err(Error::input(format!(
                "--end-time {t} applies to runs, not to --verify or --bench: give --steps K instead"
            )));
        }
    }
    if !cli.headless || (cli.screenshot.is_some() && cli.steps == 0) {
        return view(cli);
    }
    if let Some(path) = &cli.screenshot {
        viewer::check_png_path(path)?;
    }
    if cli.bench && cli.repeat == 0 {
        return Err(Error::input(
            "--repeat must be ≥ 1 (the medians need at least one run)",
        ));
    }
    if let (Some(from), Some(out)) = (&cli.surface_from, &cli.surface_dir) {
        return surface_from(cli, from, out);
    }
    if cli.surface_dir.is_some() {
        surface_settings(cli).validate()?;
    }
    if cli.surface_dir.is_some() && cli.steps == 0 {
        return Err(Error::input(
            "--surface-dir writes the meshes of a fluid run: add --steps K, or --surface-from FRAMES",
        ));
    }
    if cli.surface_every == Some(0) {
        return Err(Error::input("--surface-every must be ≥ 1"));
    }
    if cli.tank_min.is_some() && cli.steps == 0 {
        return Err(Error::input(
            "--tank-min/--tank-max bound the fluid of a --steps run: add --steps K",
        ));
    }
    if cli.export_every == 0 {
        return Err(Error::input("--export-every must be ≥ 1"));
    }
    if cli.solver == Solver::Dfsph && cli.steps == 0 && solver_chosen(cli) {
        return Err(Error::input(
            "--solver dfsph applies to fluid runs: add --steps K (a density-only run uses the poly6 density of either solver)",
        ));
    }
    for (flag, v) in [
        ("--max-density-ratio", cli.max_density_ratio),
        ("--max-speed-fraction", cli.max_speed_fraction),
        ("--energy-margin", cli.energy_margin),
    ] {
        if !(v.is_finite() && v >= 0.0) {
            return Err(Error::input(format!(
                "{flag} must be a finite number ≥ 0 (0 disables the check), got {v}"
            )));
        }
    }
    if !(cli.dt_min.is_finite() && cli.dt_min >= 0.0) {
        return Err(Error::input(format!(
            "--dt-min must be a finite time step ≥ 0 s (default 1e-6: a step that falls to it has diverged; 0 turns that check off with WCSPH), got {}",
            cli.dt_min
        )));
    }
    if cli.dt.is_none() && cli.dt_min > cli.dt_max {
        return Err(Error::input(format!(
            "--dt-min {} exceeds --dt-max {}: lower --dt-min or raise --dt-max",
            cli.dt_min, cli.dt_max
        )));
    }
    if cli.verify || cli.bench {
        let mode = if cli.verify { "--verify" } else { "--bench" };
        if let Some(flag) = [
            ("--output", cli.output.is_some()),
            ("--stats", cli.stats.is_some()),
            ("--export-dir", cli.export_dir.is_some()),
        ]
        .iter()
        .find_map(|&(f, given)| given.then_some(f))
        {
            return Err(Error::input(format!(
                "{flag} writes a run's results and {mode} writes none: drop {flag}, or run without {mode}"
            )));
        }
    }
    if let (Some(stats), Some(out)) = (&cli.stats, &cli.output)
        && stats == out
    {
        return Err(Error::input(format!(
            "--stats and --output both name {}: give them different files",
            out.display()
        )));
    }
    if let (Some(input), SceneArg::Builtin(_)) = (&cli.input, &cli.scene)
        && cli.given.iter().any(|g| g == "scene")
    {
        return Err(Error::input(format!(
            "--input {} brings its own particles and tank, so --scene has nothing to set: drop --scene (--tank-min/--tank-max set the tank)",
            input.display()
        )));
    }
    if !(cli.tolerance.is_finite() && cli.tolerance >= 0.0) {
        return Err(Error::input(format!(
            "--tolerance must be a finite number ≥ 0, got {}",
            cli.tolerance
        )));
    }
    if let Some(out) = &cli.output {
        io::check_output_path(out)?;
    }
    if let Some(stats) = &cli.stats {
        io::check_output_dir_of(stats)?;
    }
    if let Some(path) = &cli.resume {
        return resume(cli, path);
    }
    let overrides = overrides(cli);

    // The GPU comes first, so an N or T the device cannot hold fails before a scene of that
    // size is built.
    let paths = choose_paths(cli)?;
    let ctx = paths.compute.clone();
    let (positions, velocities, source, geometry) = match &cli.input {
        Some(path) => {
            let data = io::read_particles(path)?;
            probe_memory(data.positions.len() as u64, ctx.as_deref())?;
            if let Some(n) = cli
                .particles
                .filter(|&n| n as usize != data.positions.len())
            {
                return Err(Error::input(format!(
                    "-n {n} disagrees with {}, which holds {} particles: drop -n",
                    path.display(),
                    data.positions.len()
                )));
            }
            (
                data.positions,
                data.velocities,
                path.display().to_string(),
                None,
            )
        }
        None => {
            let choice = scene_choice(cli);
            let spacing = SphConfig::new(1, overrides)?.spacing;
            // A built-in scene is sized by N, so N and T are checked before it is built; a
            // file's bodies decide N (their fill is bounded by the description's checks), and
            // a run holds at most that many plus what its emitters add.
            let n = match &choice {
                SceneChoice::Builtin(_) => cli.particles.unwrap_or(DEFAULT_PARTICLES),
                SceneChoice::Described { desc, name } => {
                    desc.validate(name, spacing)?;
                    let emitted = if cli.steps > 0 {
                        emitters_of(cli, spacing).total()
                    } else {
                        0
                    };
                    let filled = desc.count(spacing);
                    if filled == 0 {
                        return Err(Error::input(format!(
                            "{name}: its fluid bodies hold no particle at spacing {spacing} m (none farther than s from the obstacles and s/2 from the walls): enlarge them, move them off the obstacles and walls or use a smaller spacing"
                        )));
                    }
                    u32::try_from(filled + emitted).unwrap_or(u32::MAX)
                }
            };
            if let (Some(ctx), SceneChoice::Described { name, .. }) = (&ctx, &choice) {
                gpu_sph::setup::check_scene_fits(&ctx.limits, name, n, spacing)?;
            }
            let cfg = SphConfig::new(n, overrides)?;
            if let Some(ctx) = &ctx {
                check_limits(&ctx.limits, cfg.particles, cfg.table_size)?;
            }
            probe_memory(n as u64, ctx.as_deref())?;
            let scene = choice.build(n as usize, spacing, cli.seed)?;
            if scene.carved > 0 && !cli.json {
                println!(
                    "gpu-sph: the obstacles carved {} fluid particles (inside them or within one spacing of their surface)",
                    scene.carved
                );
            }
            if scene.walled > 0 && !cli.json {
                println!(
                    "gpu-sph: left out {} fluid particles closer than half a spacing to a tank wall (their mirror images would start them compressed)",
                    scene.walled
                );
            }
            let name = format!("scene {} (seed {})", choice.label(), cli.seed);
            let geometry = (scene.tank_min, scene.tank_max, scene.fluid_size);
            (scene.positions, scene.velocities, name, Some(geometry))
        }
    };
    let n = u32::try_from(positions.len())
        .map_err(|_| Error::input("more than 2^32 particles: split the input"))?;
    let config = if cli.steps > 0 {
        // Sized for the most particles the run holds: the buffers and the table.
        let spacing = SphConfig::new(1, overrides)?.spacing;
        let capacity = n as u64 + emitters_of(cli, spacing).total();
        let capacity = u32::try_from(capacity)
            .map_err(|_| Error::input("more than 2^32 particles: shorten the emitters' windows"))?;
        SphConfig::for_solver(capacity, overrides, cli.solver)?
    } else {
        SphConfig::new(n, overrides)?
    };
    validate_positions(&positions, config.smoothing_radius, "particle")?;
    validate_velocities(&velocities, "particle")?;
    let params = config.sim_params();

    if cli.steps > 0 {
        return simulate(
            cli, paths, &config, params, positions, velocities, &source, geometry,
        );
    }
    let Some(ctx) = ctx else {
        let (summary, density) = Summary::run_cpu(&positions, &config, &source);
        print_summary(cli, &summary)?;
        return write_output(cli, &positions, &velocities, &density).map(|_| Outcome::Done);
    };
    let gpu = GpuNeighbours::new(ctx, &params)?;
    if cli.verify {
        let report = verify::verify(&gpu, &positions, &params, cli.tolerance)?;
        return print_report(cli, &report);
    }
    if cli.bench {
        let mut report = bench::bench(&gpu, &positions, &params, cli.repeat)?;
        if cli.brute_force {
            let sizes: Vec<usize> = if positions.len() <= BRUTE_FORCE_SIZES[1] {
                vec![positions.len()]
            } else {
                BRUTE_FORCE_SIZES.to_vec()
            };
            let mut sets = Vec::new();
            for k in sizes {
                let cfg = SphConfig::new(
                    k as u32,
                    ConfigOverrides {
                        table_size: None,
                        ..overrides
                    },
                )?;
                // The same scene at k particles; a file's first k particles.
                let set = match (&cli.scene, &cli.input) {
                    (SceneArg::Builtin(kind), None) if k != positions.len() => {
                        Scene::new(*kind, k, cfg.spacing, cli.seed).positions
                    }
                    _ => positions[..k].to_vec(),
                };
                sets.push((set, cfg.sim_params()));
            }
            report.brute_force = Some(bench::brute_force(&sets, cli.repeat));
        }
        print_json_or(cli, &report, || report.to_table())?;
        return Ok(Outcome::Done);
    }
    let (summary, density) = Summary::run_gpu(&gpu, &positions, &config, &source)?;
    print_summary(cli, &summary)?;
    write_output(cli, &positions, &velocities, &density).map(|_| Outcome::Done)
}

/// Prints `value` as one JSON object with `--json`, else the text `table` makes.
/// `--model grains`: the colliding spheres' front ends (a headless run, `--verify`, `--bench`,
/// the viewer). The spheres are poured as flags say; fluid-only flags are refused by name.
fn grains(cli: &Cli) -> Result<Outcome, Error> {
    use gpu_sph::grains::{self as g, GrainConfig, GrainGuards, GrainPath, GrainSetup};
    let fluid_only = [
        "solver",
        "input",
        "resume",
        "export_dir",
        "surface_dir",
        "surface_from",
        "checkpoint_every",
        "tank_min",
        "tank_max",
        "spacing",
        "smoothing_radius",
        "particle_mass",
        "rest_density",
        "viscosity",
        "alpha",
        "sound_speed",
        "cfl",
        "divergence_tolerance",
        "density_tolerance",
        "max_iterations",
        "viscous_substeps",
        "max_density_ratio",
        "max_speed_fraction",
        "dt_max",
        "dt_min",
        "render",
        "color_by",
        "group_size",
    ];
    if let Some(f) = fluid_only
        .iter()
        .find(|f| cli.given.iter().any(|g| g == *f))
    {
        let spheres: Vec<String> = g::FLAGS
            .iter()
            .map(|f| format!("--{}", f.replace('_', "-")))
            .collect();
        return Err(Error::input(format!(
            "--{} belongs to the fluid (--model fluid); the spheres take -n, --scene, {}, --restitution, --gravity and --dt",
            f.replace('_', "-"),
            spheres.join(", ")
        )));
    }
    let cfg = GrainConfig {
        particles: cli.particles.unwrap_or(DEFAULT_GRAINS),
        radius: cli.grain_radius,
        ratio: cli.grain_ratio,
        density: cli.grain_density,
        stiffness: cli.contact_stiffness,
        restitution: cli.contact_restitution,
        // The fluid's walls default to 0 (they absorb the impact); spheres bounce off the walls
        // as off each other unless --restitution says otherwise.
        wall_restitution: if cli.given.iter().any(|g| g == "restitution") {
            cli.restitution
        } else {
            GrainConfig::default().wall_restitution
        },
        friction: cli.contact_friction,
        dt: cli.dt,
        gravity: cli.gravity,
        table_size: cli.table_size,
        seed: cli.seed,
    };
    // A scene (built in, or a file) fills its bodies with spheres and brings its tank and still
    // obstacles; without one the spheres are poured from a block.
    let scene = cli.given.iter().any(|g| g == "scene") || cli.scene_file.is_some();
    let setup = if scene {
        check_no_count_with_file(cli)?;
        GrainSetup::from_scene(&cfg, &scene_choice(cli))?
    } else {
        GrainSetup::pour(&cfg)?
    };
    if !cli.headless || (cli.screenshot.is_some() && cli.steps == 0) {
        if cli.input.is_some() || cli.output.is_some() || cli.stats.is_some() {
            return Err(Error::input(
                "--output and --stats belong to headless runs: add --headless --steps K",
            ));
        }
        if cli.steps > 0 {
            return Err(Error::input(
                "--steps runs without a window: add --headless (the viewer steps until closed; set --substeps per frame)",
            ));
        }
        let mut opts = viewer_options(cli, viewer::GRAINS_STAND_IN);
        opts.grains = Some((cfg, setup));
        if cli.headless {
            viewer::run_offscreen(opts)?;
        } else {
            viewer::window::run(opts)?;
        }
        return Ok(Outcome::Done);
    }
    if cli.screenshot.is_some() {
        return Err(Error::input(
            "--screenshot with --model grains pictures the viewer: drop --steps (the viewer pours the spheres itself)",
        ));
    }
    if cli.verify {
        let ctx = Arc::new(GpuContext::new()?);
        let report = g::verify(ctx, &setup, cli.steps.max(1), cli.tolerance)?;
        return print_report(cli, &report);
    }
    if cli.bench {
        if cli.repeat == 0 {
            return Err(Error::input(
                "--repeat must be ≥ 1 (the medians need at least one run)",
            ));
        }
        let ctx = Arc::new(GpuContext::new()?);
        let sizes = cli.brute_force.then_some(&BRUTE_FORCE_SIZES[..]);
        let b = g::bench(ctx, &cfg, cli.repeat, sizes)?;
        print_json_or(cli, &b, || b.to_table())?;
        return Ok(Outcome::Done);
    }
    if cli.steps == 0 {
        return Err(Error::input(
            "--model grains --headless runs need --steps K or --end-time SECONDS (or --verify, --bench)",
        ));
    }
    if let Some(out) = &cli.output {
        if out.extension().and_then(|e| e.to_str()) != Some("csv") {
            return Err(Error::input(format!(
                "--output {}: the spheres are written as CSV (x,y,z,vx,vy,vz,radius): name a .csv file",
                out.display()
            )));
        }
        io::check_output_dir_of(out)?;
    }
    let paths = choose_paths(cli)?;
    let mut path: Box<dyn GrainPath> = match &paths.compute {
        Some(ctx) => Box::new(gpu_sph::gpu::grains::GpuGrains::new(
            ctx.clone(),
            &setup,
            setup.sim.n,
        )?),
        None => Box::new(g::CpuGrains::new(&setup)),
    };
    let gp = setup.grain;
    let (r_lo, r_hi) = (cfg.smallest(), cfg.radius);
    eprintln!(
        "gpu-sph: {} spheres, radii {r_lo}–{r_hi} m, {} kg/m³, k = {:.4e} N/m, dt = {:.3e} s (contact time {:.3e} s), tank {:?}–{:?} m, {} path",
        setup.len(),
        cfg.density,
        gp.stiffness,
        gp.dt,
        setup.contact_time(),
        &gp.tank_min[..3],
        &gp.tank_max[..3],
        path.name()
    );
    let mut stats = match &cli.stats {
        Some(p) => {
            let f = std::fs::File::create(p)
                .map_err(|e| Error::input(format!("cannot write --stats {}: {e}", p.display())))?;
            let mut w = std::io::BufWriter::new(f);
            use std::io::Write;
            writeln!(w, "{}", g::GrainStats::CSV_HEADER)
                .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
            Some(w)
        }
        None => None,
    };
    let start = std::time::Instant::now();
    let guards = GrainGuards {
        energy_margin: cli.energy_margin as f64,
    };
    let result = g::run(path.as_mut(), &gp, cli.steps, cli.end_time, guards, |s| {
        if let Some(w) = stats.as_mut() {
            use std::io::Write;
            writeln!(w, "{}", s.csv_row())
                .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
        }
        Ok(())
    });
    if let Some(w) = stats.as_mut() {
        use std::io::Write;
        w.flush()
            .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
    }
    let done = match result {
        Ok(r) => r,
        Err(Error::Unstable(msg)) => {
            eprintln!("gpu-sph: {msg}");
            return Ok(Outcome::VerifyFailed);
        }
        Err(e) => return Err(e),
    };
    let wall = start.elapsed().as_secs_f64();
    let (first, last) = match (done.stats.first(), done.stats.last()) {
        (Some(a), Some(b)) => (*a, *b),
        _ => return Err(Error::input("no step ran: raise --steps or --end-time")),
    };
    let (end_pos, end_vel) = path.state()?;
    let rest = g::resting_overlap(&end_pos, &end_vel, &gp)?;
    let summary = serde_json::json!({
        "model": "grains",
        "path": path.name(),
        "spheres": setup.len(),
        "steps": done.stats.len(),
        "simulated_s": done.time,
        "wall_s": wall,
        "dt_s": gp.dt,
        "stiffness_n_per_m": gp.stiffness,
        "energy_start_j": first.total,
        "energy_end_j": last.total,
        "energy_peak_over_start": done.stats.iter().map(|s| s.total).fold(f64::MIN, f64::max) / first.total,
        "deepest_overlap_end": last.deepest_overlap,
        "max_speed_end_m_s": last.max_speed,
        "kinetic_end_j": last.kinetic,
        "at_rest_end": rest.at_rest,
        "deepest_resting_overlap_end": rest.deepest,
    });
    if cli.json {
        println!("{summary}");
    } else {
        println!(
            "{} steps ({:.4} s simulated) in {wall:.2} s on the {} path; energy {:.4e} J → {:.4e} J (peak {:.5} of the start); at the last step: kinetic energy {:.3e} J, deepest overlap {:.3}% of the smaller radius, largest speed {:.4} m/s; {} of {} spheres at rest (< {} m/s), deepest overlap among them {:.3}%",
            done.stats.len(),
            done.time,
            path.name(),
            first.total,
            last.total,
            summary["energy_peak_over_start"].as_f64().unwrap_or(0.0),
            last.kinetic,
            100.0 * last.deepest_overlap,
            last.max_speed,
            rest.at_rest,
            rest.spheres,
            g::REST_SPEED,
            100.0 * rest.deepest
        );
    }
    if let Some(out) = &cli.output {
        let mut text = String::from("x,y,z,vx,vy,vz,radius\n");
        for (p, v) in end_pos.iter().zip(&end_vel) {
            text += &format!("{},{},{},{},{},{},{}\n", p.x, p.y, p.z, v.x, v.y, v.z, p.w);
        }
        std::fs::write(out, text)
            .map_err(|e| Error::input(format!("cannot write --output {}: {e}", out.display())))?;
    }
    Ok(Outcome::Done)
}

fn print_json_or<T: serde::Serialize>(
    cli: &Cli,
    value: &T,
    table: impl FnOnce() -> String,
) -> Result<(), Error> {
    if cli.json {
        println!(
            "{}",
            serde_json::to_string(value).map_err(|e| Error::input(e.to_string()))?
        );
    } else {
        println!("{}", table());
    }
    Ok(())
}

/// Prints a verification report (table or JSON) and maps its verdict to the outcome.
fn print_report(cli: &Cli, report: &verify::Report) -> Result<Outcome, Error> {
    print_json_or(cli, report, || report.to_table())?;
    Ok(if report.pass {
        Outcome::Done
    } else {
        Outcome::VerifyFailed
    })
}

fn print_summary(cli: &Cli, summary: &Summary) -> Result<(), Error> {
    print_json_or(cli, summary, || summary.to_text())
}

fn write_output(
    cli: &Cli,
    positions: &[glam::Vec3],
    velocities: &[glam::Vec3],
    density: &[f32],
) -> Result<(), Error> {
    if let Some(path) = &cli.output {
        io::write_particles(path, positions, velocities, density)?;
    }
    Ok(())
}

type Geometry = (glam::Vec3, glam::Vec3, glam::Vec3);

/// The scene file's emitters at spacing `s` (none for built-in scenes and `--input` files).
fn emitters_of(cli: &Cli, s: f32) -> gpu_sph::emitter::Emitters {
    let list = match (&cli.input, &cli.scene_file) {
        (None, Some(file)) => file.emitters.clone(),
        _ => Vec::new(),
    };
    gpu_sph::emitter::Emitters { list, s }
}

/// `--steps K > 0`: the fluid, on the GPU or (with --cpu) the CPU.
#[allow(clippy::too_many_arguments)]
fn simulate(
    cli: &Cli,
    paths: Paths,
    config: &SphConfig,
    params: gpu_sph::params::SimParams,
    positions: Vec<glam::Vec3>,
    velocities: Vec<glam::Vec3>,
    source: &str,
    geometry: Option<Geometry>,
) -> Result<Outcome, Error> {
    use gpu_sph::cpu::reorder::Particles;

    // A file brings no tank: use its bounding box grown by 2h on every side.
    let (tank_min, tank_max, fluid_size) = geometry.unwrap_or_else(|| {
        let lo = positions
            .iter()
            .copied()
            .fold(glam::Vec3::INFINITY, glam::Vec3::min);
        let hi = positions
            .iter()
            .copied()
            .fold(glam::Vec3::NEG_INFINITY, glam::Vec3::max);
        let pad = glam::Vec3::splat(2.0 * config.smoothing_radius);
        (lo - pad, hi + pad, hi - lo)
    });
    let (tank_min, tank_max) = match (cli.tank_min, cli.tank_max) {
        (Some(lo), Some(hi)) => {
            if let Some(k) = positions
                .iter()
                .position(|p| !(p.cmpge(lo).all() && p.cmple(hi).all()))
            {
                return Err(Error::input(format!(
                    "particle {k} at {} lies outside the tank {lo} – {hi}: enlarge --tank-min/--tank-max",
                    positions[k]
                )));
            }
            (lo, hi)
        }
        _ => (tank_min, tank_max),
    };
    let physics = physics(cli);
    // A built-in scene's fall is its fluid body's height; a file's, from its highest particle
    // to the floor, never less than h.
    let drop = match geometry {
        Some(_) => fluid_size.y,
        None => PhysicsConfig::drop_height(&positions, tank_min.y, config.smoothing_radius),
    };
    // Moving obstacles push the fluid: their top speeds count as the fluid's.
    // Emitted fluid falls from its nozzle at its jet speed.
    let drop = match (&cli.input, &cli.scene_file) {
        (None, Some(file)) => {
            let jets = file.emitters.iter().map(|e| {
                let jet = glam::Vec3::from(e.direction).normalize_or_zero() * e.speed;
                physics.head((e.position[1] - tank_min.y).max(drop), &[jet])
            });
            jets.fold(
                physics
                    .head(drop, &velocities)
                    .max(physics.head(drop, &gpu_sph::boundary::top_speeds(&file.obstacles))),
                f32::max,
            )
        }
        _ => physics.head(drop, &velocities),
    };
    if let Some(w) = physics.sound_speed_warning(drop) {
        eprintln!("{w}");
    }
    let mut fp = physics.fluid_params(config, tank_min, tank_max, drop)?;
    // A scene file's tank may be open on some sides.
    if let (None, Some(file)) = (&cli.input, &cli.scene_file) {
        fp.open = gpu_sph::scene::Side::mask(&file.tank.open);
    }
    let dp = match cli.solver {
        Solver::Dfsph => Some(dfsph_config(cli).params(config, &physics)?),
        Solver::Wcsph => None,
    };
    let mut geometry_line = describe(config, &fp, &physics, tank_min, tank_max, fluid_size);
    if let Some(dp) = &dp {
        geometry_line += &format!(
            "; solver DFSPH: cubic spline, η_v {}, η {}, at most {} iterations, dt {}..{} s, λ {}",
            dp.eta_v, dp.eta_d, dp.max_iterations, dp.dt_min, dp.dt_max, dp.cfl
        );
    }
    let template = checkpoint::Template {
        header: checkpoint::Header {
            program: env!("CARGO_PKG_VERSION").into(),
            solver: cli.solver,
            step: 0,
            t: 0.0,
            n: config.particles,
            dt: 0.0,
            start_energy: None,
            obstacle_work: 0.0,
            dfsph_stats: None,
            dt_prev: None,
            config: *config,
            physics,
            source: source.to_string(),
            geometry: geometry_line,
            tank: [
                tank_min.to_array(),
                tank_max.to_array(),
                fluid_size.to_array(),
            ],
            obstacles: match (&cli.input, &cli.scene_file) {
                (None, Some(file)) => file.obstacles.clone(),
                _ => Vec::new(),
            },
            emitters: emitters_of(cli, config.spacing).list,
            emitted_energy: 0.0,
            removed_energy: 0.0,
        },
        sim_params: params,
        fluid_params: fp,
        dfsph_params: dp,
    };
    let state = Particles::new(positions, velocities);
    simulate_from(cli, paths, template, state, None)
}

/// Continues the run a checkpoint holds (`--resume FILE`): only run-control flags may be
/// given; the physics, scene and configuration are the checkpoint's.
fn resume(cli: &Cli, path: &std::path::Path) -> Result<Outcome, Error> {
    if let Some(flag) = cli
        .given
        .iter()
        .find(|f| !RUN_CONTROL.contains(&f.as_str()))
    {
        return Err(Error::input(format!(
            "--{} cannot change on --resume: the run continues with the physics, scene and configuration {} holds; only run-control flags (--steps, outputs, exports, checkpoints, --cpu/--gpu, the divergence checks) may be given",
            flag.replace('_', "-"),
            path.display()
        )));
    }
    if cli.steps == 0 {
        return Err(Error::input(
            "--resume continues a run: add --steps K, the steps still to run",
        ));
    }
    if let Some(stats) = &cli.stats {
        check_resumed_stats(stats)?;
    }
    let ck = checkpoint::Checkpoint::read(path)?;
    if ck
        .header
        .obstacles
        .iter()
        .any(|o| matches!(o.shape, gpu_sph::scene::Shape::Mesh { .. }))
    {
        return Err(Error::input(format!(
            "{} holds a run with a mesh obstacle, whose triangles checkpoints do not carry yet: rerun the scene from its start",
            path.display()
        )));
    }
    let paths = choose_paths(cli)?;
    if let Some(ctx) = &paths.compute {
        check_limits(
            &ctx.limits,
            ck.header.config.particles,
            ck.header.config.table_size,
        )?;
    }
    probe_memory(ck.header.config.particles as u64, paths.compute.as_deref())?;
    let template = checkpoint::Template {
        header: ck.header.clone(),
        sim_params: ck.sim_params,
        fluid_params: ck.fluid_params,
        dfsph_params: ck.dfsph_params,
    };
    let state = ck.snapshot.state.clone();
    simulate_from(cli, paths, template, state, Some(ck))
}

/// Host bytes per particle a run holds at most, measured (peak RSS over N, `/usr/bin/time`):
/// about 180 on the CPU path with WCSPH and 360 with DFSPH; rounded up.
const HOST_BYTES_PER_PARTICLE: u64 = 512;
/// Device bytes per particle on a software adapter, whose device memory is host memory
/// (lavapipe: about 190 measured); rounded up.
const SOFTWARE_DEVICE_BYTES_PER_PARTICLE: u64 = 256;

/// Fails with one line, before anything of that size is built, when the host cannot hand out
/// the memory a run of `n` particles needs: Rust aborts on a failed allocation, and lavapipe
/// crashes on one, so the probe asks for it all once, fallibly, and gives it back.
fn probe_memory(n: u64, gpu: Option<&GpuContext>) -> Result<(), Error> {
    let software = gpu.is_some_and(|c| c.info.device_type == wgpu::DeviceType::Cpu);
    let per = HOST_BYTES_PER_PARTICLE
        + if software {
            SOFTWARE_DEVICE_BYTES_PER_PARTICLE
        } else {
            0
        };
    let bytes = n.saturating_mul(per);
    let mut probe: Vec<u8> = Vec::new();
    let fits = usize::try_from(bytes).is_ok_and(|b| probe.try_reserve_exact(b).is_ok());
    drop(probe);
    if fits {
        Ok(())
    } else {
        Err(Error::OutOfMemory(format!(
            "the host cannot allocate the {} MB a run of {n} particles needs",
            bytes >> 20
        )))
    }
}

/// Flags a resumed run may give: what to run and what to write, never the physics.
const RUN_CONTROL: &[&str] = &[
    "resume",
    "steps",
    "end_time",
    "headless",
    "cpu",
    "gpu",
    "output",
    "stats",
    "json",
    "export_dir",
    "export_every",
    "surface_dir",
    "surface_every",
    "surface_format",
    "surface_threshold",
    "surface_cube_size",
    "surface_smoothing",
    "screenshot",
    "color_by",
    "window_size",
    "render",
    "camera_target",
    "camera_distance",
    "camera_yaw",
    "camera_pitch",
    "checkpoint_every",
    "checkpoint_dir",
    "max_density_ratio",
    "max_speed_fraction",
    "energy_margin",
];

/// "K steps", "K more steps" or "until t = T s" for the run's first line.
fn steps_text(cli: &Cli, more: &str) -> String {
    match cli.end_time {
        Some(t) if cli.steps == u64::MAX => format!("until t = {t} s"),
        Some(t) => format!("{} {more}steps or until t = {t} s", cli.steps),
        None => format!("{} {more}steps", cli.steps),
    }
}

/// A resumed run appends to its `--stats` file: refuses, before anything is printed, a
/// file that holds something other than gpu-sph statistics (it would get rows appended).
fn check_resumed_stats(path: &std::path::Path) -> Result<(), Error> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    let header = gpu_sph::run::stats_header("");
    let columns = header.lines().last().unwrap_or_default();
    if text.trim().is_empty() || text.lines().any(|l| l == columns) {
        Ok(())
    } else {
        Err(Error::file(
            path,
            "is not a gpu-sph statistics file (its column header is not this version's): give --stats the resumed run's own file, or a new one",
        ))
    }
}

/// Opens `--stats` for a run: a new file with its header, or for a run resumed after
/// `resumed_at` steps the existing file with the rows up to that step kept (an interrupted run
/// may have written rows past its last checkpoint), so it reads as one uninterrupted run.
fn open_stats(
    path: &std::path::Path,
    geometry_line: &str,
    resumed_at: Option<u64>,
) -> Result<std::io::BufWriter<std::fs::File>, Error> {
    use std::io::Write;
    // A resumed run's file was checked by `check_resumed_stats` before anything was printed.
    let header = gpu_sph::run::stats_header(geometry_line);
    let kept = match resumed_at.and_then(|_| std::fs::read_to_string(path).ok()) {
        Some(text) if text.trim().is_empty() => header,
        Some(text) => {
            let at = resumed_at.unwrap_or(0);
            let mut kept = String::new();
            for line in text.lines() {
                let step = line.split(',').next().and_then(|c| c.parse::<u64>().ok());
                if step.is_none_or(|k| k <= at) {
                    kept.push_str(line);
                    kept.push('\n');
                }
            }
            kept
        }
        None => header,
    };
    let mut f = std::io::BufWriter::new(
        std::fs::File::create(path)
            .map_err(|e| Error::file(path, format!("cannot create: {e}")))?,
    );
    f.write_all(kept.as_bytes())
        .map_err(|e| Error::file(path, e.to_string()))?;
    Ok(f)
}

/// SIGINT and SIGTERM set `stop` to their number: the run finishes its step, writes a
/// checkpoint and exits. A second one while the first is being handled ends the process at
/// once (exit 1), so a stuck run can still be stopped.
fn register_signals(stop: &Arc<std::sync::atomic::AtomicUsize>) -> Result<(), Error> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let pending = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM] {
        let register = || -> std::io::Result<()> {
            signal_hook::flag::register_conditional_shutdown(signal, 1, pending.clone())?;
            signal_hook::flag::register(signal, pending.clone())?;
            signal_hook::flag::register_usize(signal, stop.clone(), signal as usize)?;
            Ok(())
        };
        register().map_err(|e| Error::input(format!("cannot handle signal {signal}: {e}")))?;
    }
    Ok(())
}

/// Runs the steps of a fresh (`resumed` = `None`) or resumed run from `state`.
fn simulate_from(
    cli: &Cli,
    paths: Paths,
    template: checkpoint::Template,
    state: gpu_sph::cpu::reorder::Particles,
    resumed: Option<checkpoint::Checkpoint>,
) -> Result<Outcome, Error> {
    use gpu_sph::run;
    let ctx = paths.compute.clone();
    let h = &template.header;
    let (config, params, fp, dp) = (
        &h.config,
        template.sim_params,
        template.fluid_params,
        template.dfsph_params,
    );
    let [tank_min, tank_max, fluid_size] = h.tank.map(glam::Vec3::from);
    let geometry_line = h.geometry.clone();
    let obstacles = gpu_sph::boundary::Boundary::for_solver(
        &h.obstacles,
        config.spacing,
        &params,
        &fp,
        dp.as_ref(),
    )
    .map(Arc::new);
    let from = resumed.as_ref().map(|c| c.run_from()).unwrap_or_default();
    let emitters = gpu_sph::emitter::Emitters {
        list: h.emitters.clone(),
        s: config.spacing,
    };
    let up_to = if emitters.is_empty() {
        String::new()
    } else {
        format!(" (up to {} with its emitters)", config.particles)
    };
    if !cli.json {
        match &resumed {
            Some(_) => println!(
                "gpu-sph: {}{up_to} particles from {}, resumed at step {} (t = {:.6} s), {}",
                state.len(),
                h.source,
                from.step,
                from.t,
                steps_text(cli, "more ")
            ),
            None => println!(
                "gpu-sph: {}{up_to} particles from {}, {}",
                state.len(),
                h.source,
                steps_text(cli, "")
            ),
        }
        println!("{geometry_line}");
        if let Some(b) = &obstacles {
            println!(
                "obstacles: {} bodies as {} boundary particles (Akinci et al. 2012)",
                h.obstacles.len(),
                b.pos.len()
            );
        }
    }
    let mut backend: Box<dyn run::Backend> = match &ctx {
        Some(ctx) => {
            if !cli.json {
                // Figures are only comparable on the same adapter: name it.
                println!(
                    "adapter: {} ({:?}, {:?})",
                    ctx.info.name, ctx.info.backend, ctx.info.device_type
                );
            }
            let mut sim = gpu_sph::gpu::fluid::Simulation::with_solver(
                ctx.clone(),
                &params,
                &fp,
                dp.as_ref(),
                &state,
            )?;
            sim.set_obstacles(obstacles.as_deref())?;
            if cli.bench {
                let report = gpu_sph::bench::bench_steps(
                    &sim,
                    || {
                        let mut cpu =
                            run::CpuSimulation::with_solver(params, fp, dp, state.clone());
                        cpu.obstacles = obstacles.clone();
                        cpu
                    },
                    &state,
                    cli.steps,
                    cli.repeat,
                )?;
                print_json_or(cli, &report, || report.to_table())?;
                return Ok(Outcome::Done);
            }
            if cli.verify {
                let report = match &dp {
                    Some(_) => verify::verify_dfsph_steps(
                        &sim,
                        &state,
                        obstacles.as_deref(),
                        &emitters,
                        cli.steps,
                        cli.tolerance,
                    )?,
                    None => verify::verify_steps(
                        &sim,
                        &state,
                        obstacles.as_deref(),
                        &emitters,
                        cli.steps,
                        cli.tolerance,
                    )?,
                };
                return print_report(cli, &report);
            }
            if let Some(carry) = resumed.as_ref().and_then(|c| c.carry.as_ref()) {
                sim.upload_carry(carry);
            }
            Box::new(sim)
        }
        None => {
            let mut cpu = match resumed.clone() {
                Some(c) => run::CpuSimulation::resume(params, fp, dp.zip(c.carry), c.snapshot),
                None => run::CpuSimulation::with_solver(params, fp, dp, state.clone()),
            };
            cpu.obstacles = obstacles.clone();
            Box::new(cpu)
        }
    };
    let mut stats_file = match &cli.stats {
        Some(path) => Some(open_stats(
            path,
            &geometry_line,
            resumed.is_some().then_some(from.step),
        )?),
        None => None,
    };
    let export = match &cli.export_dir {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .map_err(|e| Error::file(dir, format!("cannot create directory: {e}")))?;
            Some(run::Export {
                dir: dir.clone(),
                every: cli.export_every,
            })
        }
        None => None,
    };
    let multi = progress_target();
    let progress = match cli.end_time {
        Some(_) => bar(cli.steps, &multi, "steps    {pos} {msg}"),
        None => bar(cli.steps, &multi, "steps    {bar:40} {pos}/{len} {msg}"),
    };
    let meta = FrameMeta::of(config);
    let mut surfaces = match &cli.surface_dir {
        Some(dir) => {
            let every = cli.surface_every.unwrap_or(cli.export_every);
            let meshes = bar(
                cli.steps / every + 1,
                &multi,
                "surfaces {bar:40} {pos}/{len} {msg}",
            );
            Some(run::Surfaces {
                writer: surface::SurfaceWriter::start(
                    dir.clone(),
                    meta,
                    surface_settings(cli),
                    meshes,
                )?,
                every,
            })
        }
        None => None,
    };
    let start = std::time::Instant::now();
    let guards = gpu_sph::run::Guards {
        wcsph: template.header.solver == Solver::Wcsph,
        fixed_dt: fp.dt_fixed > 0.0,
        ..guards(cli)
    };
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    register_signals(&stop)?;
    let result = run::run(
        backend.as_mut(),
        &state,
        &fp,
        &guards,
        &from,
        run::Until {
            steps: cli.steps,
            time: cli.end_time,
        },
        cli.output.is_some() || cli.screenshot.is_some(),
        &emitters,
        run::Outputs {
            stats: stats_file.as_mut().map(|f| f as &mut dyn std::io::Write),
            export: export.as_ref(),
            surfaces: surfaces.as_mut(),
            meta: Some(meta),
            checkpoints: Some(run::Checkpointing {
                dir: cli.checkpoint_dir.clone(),
                every: cli.checkpoint_every,
                template: &template,
                stop: Some(&stop),
            }),
        },
        &progress,
    );
    progress.finish_and_clear();
    // The meshes still in line are written before the run reports (its errors first).
    let meshes = match surfaces.as_mut() {
        Some(sf) => Some(sf.writer.finish()),
        None => None,
    };
    let result = match (result, meshes) {
        (Ok(_), Some(Err(e))) => Err(e),
        (Ok(r), Some(Ok(count))) => {
            if !cli.json {
                let dir = cli
                    .surface_dir
                    .as_deref()
                    .unwrap_or(std::path::Path::new("."));
                println!("wrote {count} surface meshes to {}", dir.display());
            }
            Ok(r)
        }
        (r, _) => r,
    };
    let wall = start.elapsed().as_secs_f64();
    let (snap, last) = match result {
        Ok(r) => r,
        Err(Error::Unstable(msg)) => {
            eprintln!("gpu-sph: {msg}");
            return Ok(Outcome::VerifyFailed);
        }
        Err(Error::RunFailed(msg)) => {
            eprintln!("gpu-sph: {msg}");
            return Ok(Outcome::VerifyFailed);
        }
        Err(Error::Interrupted { message, signal }) => {
            eprintln!("gpu-sph: {message}");
            return Ok(Outcome::Interrupted(signal));
        }
        Err(e) => return Err(e),
    };
    if let Some(f) = stats_file.as_mut() {
        use std::io::Write;
        f.flush()
            .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
    }
    if let (Some(out), Some(snap)) = (&cli.output, &snap) {
        run::write_snapshot(out, snap, Some(&meta))?;
    }
    if let Some(st) = last {
        if cli.json {
            let v = serde_json::json!({ "particles": st.particles, "steps": st.step - from.step, "wall_s": wall, "geometry": geometry_line, "last": st });
            println!("{v}");
        } else {
            if h.solver == Solver::Dfsph {
                println!(
                    "DFSPH last step: {} + {} iterations (residuals {:.3e}, {:.3e}), density error mean {:.3e} max {:.3e}",
                    st.iterations_v,
                    st.iterations_d,
                    st.residual_v,
                    st.residual_d,
                    st.density_error_mean,
                    st.density_error_max
                );
            }
            println!(
                "after {} steps (t = {:.5} s, {:.2} ms/step): KE {:.4e} J, PE {:.4e} J, max speed {:.4} m/s, density {:.2}/{:.2}/{:.2}, front x = {:.4} m, outside {}",
                st.step,
                st.t,
                1e3 * wall / (st.step - from.step).max(1) as f64,
                st.kinetic,
                st.potential,
                st.max_speed,
                st.density_min,
                st.density_mean,
                st.density_max,
                st.front,
                st.outside
            );
            if fp.open != 0 && st.outside > 0 && st.outside == st.particles {
                println!(
                    "every particle left the tank through its open sides at step {}: the run ended there",
                    st.step
                );
            }
        }
    }
    if let (Some(path), Some(snap)) = (&cli.screenshot, snap) {
        // Moving obstacles are drawn where they are at the run's end.
        let end = last.as_ref().map_or(from.t, |st| st.t);
        let obstacles = obstacles.as_ref().map(|b| {
            let mut b = (**b).clone();
            b.place(end);
            Arc::new(b)
        });
        match paths.picture {
            Ok(ctx) => {
                let setup = gpu_sph::setup::Setup {
                    config: *config,
                    fluid_params: fp,
                    state: snap.state,
                    tank_min,
                    tank_max,
                    fluid_size,
                    obstacles,
                    emitters: Default::default(),
                    dfsph_params: None,
                };
                viewer::picture(ctx, viewer_options(cli, config.particles), setup, path)?;
                println!("picture of the last frame: {}", path.display());
            }
            Err(why) => eprintln!(
                "gpu-sph: no picture of the last frame, no adapter can render here: {}",
                why.split_whitespace().collect::<Vec<_>>().join(" ")
            ),
        }
    }
    Ok(Outcome::Done)
}
