//! The command line: the flags (`Cli`), their parsers, a scene file's settings merged under
//! them, and their translation into the run's configuration.

use std::path::PathBuf;
use std::sync::Arc;

use crate::Error;
use crate::params::{ConfigOverrides, DfsphConfig, PhysicsConfig, validate_table_size};
use crate::scene::{SceneChoice, SceneKind};
use crate::scene_file::{SceneArg, SceneFile};
use crate::setup::{RunSpec, Source};
use crate::solver::Solver;
use crate::surface::{MeshFormat, SurfaceSettings};
use crate::viewer::{self, SimPath, ViewerOptions, render::ColorField, surface::RenderMode};
use clap::{CommandFactory, FromArgMatches, Parser};

/// GPU compute SPH fluid simulator (wgpu + WGSL), validated stage by stage against a CPU
/// reference.
#[derive(Parser, Debug)]
#[command(
    name = "gpu-sph",
    version,
    about,
    after_help = "This page shows the common flags; --help lists them all. The manual: docs/usage.md.",
    after_long_help = "Every flag in detail, with examples: docs/usage.md.",
    // A negative number is a value, never a flag: each flag's own parser then names what it
    // takes (`--tolerance -1` was "unexpected argument '-1'").
    allow_negative_numbers = true
)]
#[command(group(clap::ArgGroup::new("physics").multiple(true)))]
#[command(group(clap::ArgGroup::new("run").multiple(true)))]
#[command(group(clap::ArgGroup::new("outputs").multiple(true)))]
#[command(group(clap::ArgGroup::new("viewer").multiple(true)))]
#[command(group(clap::ArgGroup::new("resumable").multiple(true)))]
#[command(group(clap::ArgGroup::new("fluid_only").multiple(true)))]
#[command(group(clap::ArgGroup::new("grains").multiple(true)))]
pub struct Cli {
    /// Run without a window (with --screenshot: render offscreen).
    #[arg(groups = ["resumable"], long, help_heading = "Run")]
    pub(crate) headless: bool,
    /// Step on the CPU reference path instead of the GPU (the default when the only adapter is
    /// a software renderer such as lavapipe, and for headless runs when there is none).
    #[arg(groups = ["run", "resumable"], long, conflicts_with_all = ["verify", "bench", "gpu"], help_heading = "Run")]
    pub(crate) cpu: bool,
    /// Step on the GPU path even when the adapter is a software renderer.
    #[arg(groups = ["run", "resumable"], long, help_heading = "Run")]
    pub(crate) gpu: bool,
    /// Number of particles (ignored with --input, which brings its own; with a scene file, the
    /// file is rescaled to about N: docs/scenes.md).
    #[arg(short = 'n', long = "particles", value_name = "N", allow_negative_numbers = true, value_parser = parse_count, help_heading = "Run")]
    pub(crate) particles: Option<u32>,
    /// Hash table size T, a power of two [default: next power of two ≥ 2N].
    #[arg(groups = ["physics"], long, value_name = "T", value_parser = parse_table_size, help_heading = "Run", hide_short_help = true)]
    pub(crate) table_size: Option<u32>,
    /// Particles per walking group, 1 to 8: a tuning knob, same results at every size
    /// [default: 8 on a software adapter such as lavapipe, 1 on a GPU; 1 where slots are
    /// crowded (N > 64 T)]
    #[arg(groups = ["fluid_only"], long, value_name = "K", help_heading = "Run", hide_short_help = true)]
    pub(crate) group_size: Option<u32>,
    /// Seed for scenes with randomness.
    #[arg(groups = ["physics"], 
        long,
        default_value_t = 0,
        help_heading = "Run",
        hide_short_help = true
    )]
    pub(crate) seed: u64,
    /// Simulation steps; 0 computes the neighbour grid and densities only.
    #[arg(groups = ["run", "resumable"], long, default_value_t = 0, value_parser = parse_steps, allow_hyphen_values = true, help_heading = "Run")]
    pub(crate) steps: u64,
    /// Headless runs: stop after the first step that reaches this simulated time, s (with
    /// --steps too, whichever comes first).
    #[arg(groups = ["run", "resumable"], long, value_name = "SECONDS", value_parser = parse_end_time, allow_hyphen_values = true, help_heading = "Run")]
    pub(crate) end_time: Option<f64>,
    /// Continue the run a checkpoint holds; --steps K counts the steps still to run. Only
    /// run-control flags may be given with it.
    #[arg(groups = ["resumable", "fluid_only"], long, value_name = "FILE", requires = "headless", help_heading = "Run")]
    pub(crate) resume: Option<PathBuf>,
    /// What the particles are: SPH fluid, or colliding spheres (a discrete-element model on the
    /// same grid; docs/grains.md).
    #[arg(groups = ["physics"], long, value_enum, default_value_t = Model::Fluid, help_heading = "Run")]
    pub(crate) model: Model,
    /// A built-in scene (dam-break, cube, random, drop) or a scene file (a path, or a name
    /// ending in .json): the tank, fluid bodies and any flag's setting (docs/scenes.md); flags
    /// given here override the file's.
    #[arg(long, default_value = "dam-break", value_name = "NAME|FILE", value_parser = SceneArg::parse, help_heading = "Scene")]
    pub(crate) scene: SceneArg,
    /// Print a built-in scene as a scene file (to start your own from) and exit; with -n N or
    /// --spacing S, the file of that scene at that N and s.
    #[arg(long, value_enum, value_name = "NAME", help_heading = "Scene")]
    pub(crate) print_scene: Option<SceneKind>,
    /// Lower corner of the tank, X,Y,Z in metres (with --steps) [default: the scene's, or for
    /// --input the particles' bounding box grown by 2h].
    #[arg(groups = ["fluid_only"], long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true, requires = "tank_max", help_heading = "Scene", hide_short_help = true)]
    pub(crate) tank_min: Option<glam::Vec3>,
    /// Upper corner of the tank, X,Y,Z in metres (with --steps).
    #[arg(groups = ["fluid_only"], long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true, requires = "tank_min", help_heading = "Scene", hide_short_help = true)]
    pub(crate) tank_max: Option<glam::Vec3>,
    /// Read particles from a .csv or .ply file.
    #[arg(groups = ["fluid_only"], 
        long,
        value_name = "FILE",
        requires = "headless",
        help_heading = "Scene"
    )]
    pub(crate) input: Option<PathBuf>,
    /// Smoothing radius (kernel support) h in metres [default: 3 × spacing with the Wendland
    /// C2 kernel, 2 × with the cubic spline; 2 × spacing for density-only runs].
    #[arg(groups = ["physics", "fluid_only"], long, value_name = "H", allow_hyphen_values = true, value_parser = parse_positive, help_heading = "Physics", hide_short_help = true)]
    pub(crate) smoothing_radius: Option<f32>,
    /// Initial particle spacing s in metres [default: 0.01].
    #[arg(groups = ["physics", "fluid_only"], long, value_name = "S", allow_hyphen_values = true, value_parser = parse_positive, help_heading = "Physics")]
    pub(crate) spacing: Option<f32>,
    /// Particle mass in kg [default: rest density × spacing³; with --steps, the mass that puts a
    /// lattice of that spacing exactly at rest density].
    #[arg(groups = ["physics", "fluid_only"], long, value_name = "M", allow_hyphen_values = true, value_parser = parse_positive, help_heading = "Physics", hide_short_help = true)]
    pub(crate) particle_mass: Option<f32>,
    /// Rest density in kg/m³ [default: 1000].
    #[arg(groups = ["physics", "fluid_only"], long, value_name = "R", allow_hyphen_values = true, value_parser = parse_positive, help_heading = "Physics", hide_short_help = true)]
    pub(crate) rest_density: Option<f32>,
    /// Gravity along y in m/s².
    #[arg(groups = ["physics"], long, default_value_t = -9.81, allow_hyphen_values = true, value_name = "G", help_heading = "Physics", hide_short_help = true)]
    pub(crate) gravity: f32,
    /// Physical (Müller) dynamic viscosity in Pa·s.
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        default_value_t = 0.0,
        allow_hyphen_values = true,
        value_name = "MU",
        help_heading = "Physics",
        hide_short_help = true
    )]
    pub(crate) viscosity: f32,
    /// Monaghan artificial viscosity α, on approaching pairs [default: 0; both solvers take
    /// the reference sound speed for it].
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        allow_hyphen_values = true,
        help_heading = "Physics",
        hide_short_help = true
    )]
    pub(crate) alpha: Option<f32>,
    /// Kinematic viscosity ν in m²/s, the standard SPH viscosity (both solvers) [default: 1e-3
    /// at s = 10 mm, ∝ s^1.5, a particle-scale dissipation; water's is 1e-6].
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        allow_hyphen_values = true,
        value_name = "NU",
        help_heading = "Physics",
        hide_short_help = true
    )]
    pub(crate) kinematic_viscosity: Option<f32>,
    /// Navier slip length of the tank's walls in the viscous terms, metres: `free` (the
    /// default), 0 no slip, or a length (partial slip); scene files may set it per wall.
    #[arg(groups = ["physics", "fluid_only"], long, value_name = "B", value_parser = parse_slip_length, allow_hyphen_values = true, help_heading = "Physics", hide_short_help = true)]
    pub(crate) wall_slip_length: Option<f32>,
    /// WCSPH: start the fluid at rest in hydrostatic equilibrium (each particle lowered by the
    /// equation of state's compression under the water above it), not at ρ0 everywhere. The
    /// default for scenes; this flag asks for it on a particle file too.
    #[arg(groups = ["physics", "fluid_only"], long, help_heading = "Physics", hide_short_help = true)]
    pub(crate) hydrostatic_start: bool,
    /// WCSPH: start a scene's fluid at ρ0 everywhere, as its lattice lies, instead of in
    /// hydrostatic equilibrium.
    #[arg(groups = ["fluid_only"], 
        long,
        conflicts_with = "hydrostatic_start",
        help_heading = "Physics",
        hide_short_help = true
    )]
    pub(crate) no_hydrostatic_start: bool,
    /// Speed of sound in m/s [default: 10 × √(2 g H), H the fluid's initial height].
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        allow_hyphen_values = true,
        value_name = "C",
        help_heading = "Physics",
        hide_short_help = true
    )]
    pub(crate) sound_speed: Option<f32>,
    /// Fraction of the normal speed a particle keeps when it meets a wall, 0..1 (--model grains:
    /// the walls' contact restitution, 0.01..1, default 0.5).
    #[arg(groups = ["physics"], 
        long,
        default_value_t = 0.0,
        allow_hyphen_values = true,
        value_name = "E",
        help_heading = "Physics",
        hide_short_help = true
    )]
    pub(crate) restitution: f32,
    /// Courant number of the CFL time step.
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        default_value_t = 0.4,
        allow_hyphen_values = true,
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) cfl: f32,
    /// Force a fixed time step in seconds instead of the CFL condition.
    #[arg(groups = ["physics"], 
        long,
        allow_hyphen_values = true,
        value_name = "SECONDS",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) dt: Option<f32>,
    /// Largest time step in seconds (both solvers).
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        default_value_t = 5e-3,
        allow_hyphen_values = true,
        value_name = "SECONDS",
        alias = "dt-max",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) max_dt: f32,
    /// Smallest time step in seconds: DFSPH clamps dt here, and a step whose dt reaches it
    /// ends the run as diverged (unless --dt fixes dt).
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        default_value_t = 1e-6,
        allow_hyphen_values = true,
        value_name = "SECONDS",
        alias = "dt-min",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) min_dt: f32,
    /// Pressure solver of fluid runs: dfsph (divergence-free, incompressible; the default) or
    /// wcsph (weakly compressible).
    #[arg(groups = ["physics", "fluid_only"], long, value_enum, default_value_t = Solver::Dfsph, help_heading = "Solver")]
    pub(crate) solver: Solver,
    /// DFSPH divergence-free solve tolerance: mean of max(Dρ/Dt, 0)·dt/ρ0, as a fraction
    /// (0.001 = 0.1%).
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        default_value_t = 1e-3,
        allow_hyphen_values = true,
        value_name = "FRACTION",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) divergence_tolerance: f32,
    /// DFSPH constant-density solve tolerance: mean of max(ρ*/ρ0 − 1, 0), as a fraction
    /// (0.0001 = 0.01%).
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        default_value_t = 1e-4,
        allow_hyphen_values = true,
        value_name = "FRACTION",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) density_tolerance: f32,
    /// Most iterations of each DFSPH solve per step.
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        default_value_t = 100,
        value_name = "K",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) max_iterations: u32,
    /// DFSPH: most explicit substeps of the viscous accelerations per step (1 to 16), so the
    /// step may be up to K times the viscosity's stability limit.
    #[arg(groups = ["physics", "fluid_only"], long, default_value_t = crate::params::DFSPH_VISCOUS_SUBSTEPS, value_name = "K", allow_hyphen_values = true, help_heading = "Solver", hide_short_help = true)]
    pub(crate) viscous_substeps: u32,
    /// The smoothing kernel of every sum either solver takes [default: wendland-c2, at 3
    /// spacings; cubic-spline at 2 spacings is SPlisHSPlasH's, about a third of the pairs,
    /// stiffer water: docs/results.md].
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        value_enum,
        value_name = "KERNEL",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) kernel: Option<crate::kernel::Kernel>,
    /// The dimension of the run's space: 2 runs in the plane z = 0 (the 2D kernels, the
    /// 3 × 3-cell walk, the tank's x and y walls; the built-in scenes' 2D forms or particles
    /// from a file with z = 0; with --model grains, discs) [default: 3].
    #[arg(groups = ["physics"],
        long,
        value_name = "D",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) dim: Option<u32>,
    /// DFSPH: the relaxation factor ω of both solves' Jacobi iterations, in (0, 1]: each
    /// iteration applies ω times the stiffness the solve's diagonal asks for [default: 0.9 of
    /// the iteration's stability bound at the run's support, 0.29 at h = 3 s].
    #[arg(groups = ["physics", "fluid_only"], 
        long,
        value_name = "OMEGA",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) relaxation: Option<f32>,
    /// A run whose largest density exceeds this multiple of the rest density and is still
    /// rising ends as diverged (0 disables).
    #[arg(groups = ["run", "resumable", "fluid_only"], 
        long,
        default_value_t = 2.0,
        allow_hyphen_values = true,
        value_name = "RATIO",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) max_density_ratio: f32,
    /// WCSPH: a run whose largest speed exceeds this fraction of the speed of sound ends as
    /// diverged (0 disables; the weakly compressible model assumes about 0.1).
    #[arg(groups = ["run", "resumable", "fluid_only"], 
        long,
        default_value_t = 0.5,
        allow_hyphen_values = true,
        value_name = "FRACTION",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) max_speed_fraction: f32,
    /// A run whose total energy (kinetic + potential, + the equation of state's for WCSPH)
    /// rises above the first step's by more than this fraction of it ends as diverged (0
    /// disables).
    #[arg(groups = ["run", "resumable"], 
        long,
        default_value_t = 0.05,
        allow_hyphen_values = true,
        value_name = "FRACTION",
        help_heading = "Solver",
        hide_short_help = true
    )]
    pub(crate) energy_margin: f32,
    /// Render --frames frames of the viewer, save the last as a PNG and exit (in the window, or
    /// offscreen with --headless); with --headless --steps K, a picture of the run's last frame.
    #[arg(groups = ["outputs", "resumable"], long, value_name = "FILE", conflicts_with_all = ["verify", "bench"], help_heading = "Outputs")]
    pub(crate) screenshot: Option<PathBuf>,
    /// Write one CSV row of statistics per step to FILE.
    #[arg(groups = ["outputs", "resumable"], 
        long,
        value_name = "FILE",
        requires = "headless",
        help_heading = "Outputs"
    )]
    pub(crate) stats: Option<PathBuf>,
    /// Write frames as binary PLY files into DIR.
    #[arg(groups = ["outputs", "resumable", "fluid_only"], 
        long,
        value_name = "DIR",
        requires = "headless",
        help_heading = "Outputs"
    )]
    pub(crate) export_dir: Option<PathBuf>,
    /// Write a frame every K steps.
    #[arg(groups = ["outputs", "resumable"], 
        long,
        default_value_t = 10,
        value_name = "K",
        allow_hyphen_values = true,
        requires = "export_dir",
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) export_every: u64,
    /// Frame format: ply (binary PLY, read back by --surface-from), vtu (VTK XML frames and a
    /// frames.pvd collection with their simulated times, for ParaView) or bgeo (Houdini).
    #[arg(groups = ["outputs", "resumable", "fluid_only"], 
        long,
        value_enum,
        default_value_t = crate::series::ExportFormat::Ply,
        requires = "export_dir",
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) export_format: crate::series::ExportFormat,
    /// Write a surface mesh of the fluid every --surface-every steps into DIR (created if
    /// missing), as surface_<step>.<ext>; with --surface-from, the meshes of those frames.
    #[arg(groups = ["outputs", "resumable", "fluid_only"], 
        long,
        value_name = "DIR",
        requires = "headless",
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) surface_dir: Option<PathBuf>,
    /// Write a surface every K steps [default: the --export-every cadence].
    #[arg(groups = ["outputs", "resumable"], 
        long,
        value_name = "K",
        requires = "surface_dir",
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) surface_every: Option<u64>,
    /// Mesh file format [default: obj; vtu with --export-format vtu, listed in the frames'
    /// .pvd].
    #[arg(groups = ["outputs", "resumable"], long, value_enum, default_value_t = MeshFormat::Obj, hide_default_value = true, requires = "surface_dir", help_heading = "Outputs", hide_short_help = true)]
    pub(crate) surface_format: MeshFormat,
    /// Iso-surface threshold as a fraction of the rest density.
    #[arg(groups = ["outputs", "resumable"], 
        long,
        default_value_t = 0.6,
        value_name = "FRACTION",
        allow_hyphen_values = true,
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) surface_threshold: f32,
    /// Marching-cubes cell edge relative to the particle radius r = (3m/4πρ0)^(1/3).
    #[arg(groups = ["outputs", "resumable"], 
        long,
        default_value_t = 0.5,
        value_name = "FACTOR",
        allow_hyphen_values = true,
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) surface_cube_size: f32,
    /// Laplacian smoothing iterations of each mesh (0: none; each shrinks it slightly).
    #[arg(groups = ["outputs", "resumable"], 
        long,
        default_value_t = 0,
        value_name = "K",
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) surface_smoothing: u32,
    /// Reconstruct surfaces of PLY frames already on disk (a frame, or a directory of them)
    /// into --surface-dir, then exit.
    #[arg(groups = ["fluid_only"], long, value_name = "PATH", requires_all = ["headless", "surface_dir"], conflicts_with_all = ["steps", "input", "verify", "bench"], help_heading = "Outputs", hide_short_help = true)]
    pub(crate) surface_from: Option<PathBuf>,
    /// Write x,y,z,vx,vy,vz,density per particle, in input order, to a .csv or .ply file.
    #[arg(groups = ["outputs", "resumable"], 
        long,
        value_name = "FILE",
        requires = "headless",
        help_heading = "Outputs"
    )]
    pub(crate) output: Option<PathBuf>,
    /// Print the summary or report as one JSON object (a failure as {"error", "message", "exit"}).
    #[arg(groups = ["outputs", "resumable"], long, help_heading = "Outputs")]
    pub(crate) json: bool,
    /// Write a checkpoint every K steps (0: only when SIGINT or SIGTERM stops the run).
    #[arg(groups = ["run", "resumable", "fluid_only"], 
        long,
        default_value_t = 0,
        value_name = "K",
        allow_hyphen_values = true,
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) checkpoint_every: u64,
    /// Directory for checkpoints (the last two are kept).
    #[arg(groups = ["run", "resumable"], 
        long,
        default_value = "checkpoints",
        value_name = "DIR",
        help_heading = "Outputs",
        hide_short_help = true
    )]
    pub(crate) checkpoint_dir: PathBuf,
    /// Frames to render before --screenshot saves.
    #[arg(groups = ["viewer"], long, default_value_t = 10, value_name = "K", value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) frames: u32,
    /// Simulation steps per rendered frame in the viewer (--model grains without it: sized to
    /// the simulated time per frame).
    #[arg(groups = ["viewer"], long, default_value_t = 2, value_name = "K", value_parser = clap::value_parser!(u32).range(1..), allow_hyphen_values = true, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) substeps: u32,
    /// Field that colours the particles in the viewer.
    #[arg(groups = ["viewer", "resumable", "fluid_only"], long, value_enum, default_value_t = ColorField::Speed, value_name = "FIELD", alias = "color-by", help_heading = "Viewer")]
    pub(crate) colour_by: ColorField,
    /// Window (or offscreen image) size in pixels, WIDTHxHEIGHT.
    #[arg(groups = ["viewer", "resumable"], long, default_value = "1280x720", value_parser = parse_size, value_name = "WxH", help_heading = "Viewer", hide_short_help = true)]
    pub(crate) window_size: (u32, u32),
    /// How the window presents frames.
    #[arg(groups = ["viewer"], long, value_enum, default_value_t = PresentMode::Fifo, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) present_mode: PresentMode,
    /// Print the viewer's mean simulation and render time per frame at exit.
    #[arg(groups = ["viewer"], long, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) timings: bool,
    /// How the viewer draws the fluid at start (S toggles): lit spheres coloured by
    /// --colour-by, or the screen-space water surface.
    #[arg(groups = ["viewer", "resumable", "fluid_only"], long, value_enum, default_value_t = RenderMode::Spheres, help_heading = "Viewer")]
    pub(crate) render: RenderMode,
    /// Start the viewer with its control panel hidden (H toggles it).
    #[arg(groups = ["viewer"], long, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) hide_ui: bool,
    /// Viewer camera: the point it circles and looks at, X,Y,Z in m (default: the tank's
    /// centre).
    #[arg(groups = ["viewer", "resumable"], long, value_name = "X,Y,Z", value_parser = parse_point, allow_hyphen_values = true, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) camera_target: Option<glam::Vec3>,
    /// Viewer camera: distance from its target in m (default: far enough to see the tank).
    #[arg(groups = ["viewer", "resumable"], long, value_name = "M", value_parser = parse_camera_distance, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) camera_distance: Option<f32>,
    /// Viewer camera: angle about the vertical in degrees, 0 looking along −z (default −25.8).
    #[arg(groups = ["viewer", "resumable"], long, value_name = "DEG", value_parser = parse_camera_yaw, allow_hyphen_values = true, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) camera_yaw: Option<f32>,
    /// Viewer camera: angle above the horizontal in degrees, −89 to 89 (default 20.1).
    #[arg(groups = ["viewer", "resumable"], long, value_name = "DEG", value_parser = parse_camera_pitch, allow_hyphen_values = true, help_heading = "Viewer", hide_short_help = true)]
    pub(crate) camera_pitch: Option<f32>,
    /// After --screenshot, shrink the window to 0x0 and back, rendering on (for the window test).
    #[arg(
        long,
        hide = true,
        requires = "screenshot",
        help_heading = "Viewer",
        hide_short_help = true
    )]
    pub(crate) exercise_resize: bool,
    /// --model grains: the largest sphere radius in m.
    #[arg(groups = ["physics", "grains"], 
        long,
        default_value_t = 0.004,
        value_name = "M",
        allow_hyphen_values = true,
        help_heading = "Grains (--model grains)",
        hide_short_help = true
    )]
    pub(crate) grain_radius: f32,
    /// --model grains: largest over smallest radius (radii uniform in between; 1: all equal).
    #[arg(groups = ["physics", "grains"], 
        long,
        default_value_t = 1.0,
        value_name = "RATIO",
        allow_hyphen_values = true,
        help_heading = "Grains (--model grains)",
        hide_short_help = true
    )]
    pub(crate) grain_ratio: f32,
    /// --model grains: material density in kg/m³ (glass: 2500).
    #[arg(groups = ["physics", "grains"], 
        long,
        default_value_t = 2500.0,
        value_name = "KG_M3",
        allow_hyphen_values = true,
        help_heading = "Grains (--model grains)",
        hide_short_help = true
    )]
    pub(crate) grain_density: f32,
    /// --model grains: normal contact stiffness in N/m [default: keeps the deepest overlap of
    /// the resting pile near 1% of the smallest radius].
    #[arg(groups = ["physics", "grains"], 
        long,
        value_name = "N_PER_M",
        allow_hyphen_values = true,
        help_heading = "Grains (--model grains)",
        hide_short_help = true
    )]
    pub(crate) contact_stiffness: Option<f32>,
    /// --model grains: coefficient of restitution of sphere–sphere contacts, 0.01..1 (walls use
    /// --restitution).
    #[arg(groups = ["physics", "grains"], 
        long,
        default_value_t = 0.5,
        value_name = "E",
        allow_hyphen_values = true,
        help_heading = "Grains (--model grains)",
        hide_short_help = true
    )]
    pub(crate) contact_restitution: f32,
    /// --model grains: Coulomb friction coefficient μ of contacts.
    #[arg(groups = ["physics", "grains"], 
        long,
        default_value_t = 0.5,
        value_name = "MU",
        allow_hyphen_values = true,
        help_heading = "Grains (--model grains)",
        hide_short_help = true
    )]
    pub(crate) contact_friction: f32,
    /// Run the GPU pipeline and the CPU reference on the same particles and compare every stage.
    #[arg(
        long,
        conflicts_with = "bench",
        requires = "headless",
        help_heading = "Verify and bench"
    )]
    pub(crate) verify: bool,
    /// Time every GPU pass and CPU stage (medians over --repeat runs); with --steps K, every
    /// pass of K whole fluid steps.
    #[arg(long, requires = "headless", help_heading = "Verify and bench")]
    pub(crate) bench: bool,
    /// With --bench: also time the all-pairs O(N²) density beside the grid (CPU path) at
    /// N = 5000 and 50000 (or at the run's N when that is 50000 or less).
    #[arg(
        long,
        requires = "bench",
        help_heading = "Verify and bench",
        hide_short_help = true
    )]
    pub(crate) brute_force: bool,
    /// Relative density tolerance for --verify.
    #[arg(
        long,
        default_value_t = 1e-5,
        value_name = "REL",
        help_heading = "Verify and bench",
        hide_short_help = true
    )]
    pub(crate) tolerance: f64,
    /// Repetitions for --bench.
    #[arg(
        long,
        default_value_t = 11,
        value_name = "K",
        help_heading = "Verify and bench",
        hide_short_help = true
    )]
    pub(crate) repeat: u32,
    /// The flags given on the command line (filled after parsing).
    #[arg(skip)]
    pub(crate) given: Vec<String>,
    /// The scene file `--scene` names (read after parsing).
    #[arg(skip)]
    pub(crate) scene_file: Option<Arc<SceneFile>>,
}

/// Particle counts of the `--brute-force` comparison.
pub(crate) const BRUTE_FORCE_SIZES: [usize; 2] = [5_000, 50_000];

/// Default particle count of the built-in scenes.
pub(crate) const DEFAULT_PARTICLES: u32 = 100_000;

/// `--model` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum Model {
    /// SPH fluid (either solver).
    Fluid,
    /// Colliding spheres of individual radii: spring–dashpot contacts with friction.
    Grains,
}

/// Default sphere count of `--model grains`.
pub(crate) const DEFAULT_GRAINS: u32 = 20_000;

/// `--present-mode` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum PresentMode {
    Immediate,
    Mailbox,
    Fifo,
}

/// A particle count: a whole number from 1 (a negative or fractional one is named as such,
/// not taken for a flag).
fn parse_count(s: &str) -> Result<u32, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if n >= 1 => {
            u32::try_from(n).map_err(|_| format!("{n} is more than 2^32 − 1 particles"))
        }
        Ok(n) => Err(format!(
            "a particle count is a whole number ≥ 1, got {n}: pass e.g. -n 10000"
        )),
        Err(_) => Err(format!(
            "a particle count is a whole number ≥ 1, got {s:?}: pass e.g. -n 10000"
        )),
    }
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

/// A length, mass or density: a finite number > 0. Checked by the flag's own parser so a scene
/// file's value (`physics.spacing: 0`) is refused naming the file and the key.
fn parse_positive(s: &str) -> Result<f32, String> {
    match s.trim().parse::<f32>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(format!("expected a finite number > 0, got {s:?}")),
    }
}

/// A step count: a whole number ≥ 0 (a scene file's `run.steps: 1.5` is refused so).
fn parse_steps(s: &str) -> Result<u64, String> {
    s.trim()
        .parse::<u64>()
        .map_err(|_| format!("expected a whole number of steps ≥ 0 such as 1000, got {s:?}"))
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
pub(crate) fn one_line_clap_error(e: &clap::Error) -> String {
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

/// With `--scene FILE`: reads the file and parses the command line again with the file's
/// settings added after the flags given, each only where its flag was not given (so a flag
/// overrides the file). Each value is first checked by its flag's own parser, so an error
/// names the key. The run and outputs sections apply to `--headless` runs only (the viewer
/// runs until closed and writes nothing).
pub(crate) fn with_scene_file(
    cli: Cli,
    args: &[std::ffi::OsString],
    preloaded: Option<(PathBuf, SceneFile)>,
) -> Result<Cli, Error> {
    let (path, mut file) = match (preloaded, &cli.scene) {
        (Some((name, file)), _) => (name, file),
        (None, SceneArg::File(path)) => (path.clone(), SceneFile::read(path)?),
        (None, SceneArg::Builtin(_)) => return Ok(cli),
    };
    let path = &path;
    let name = path.display();
    file.check_keys(&name.to_string(), flags_in)?;
    let grains = cli.model == Model::Grains
        || file.physics.get("model").and_then(|m| m.as_str()) == Some("grains");
    if let (Some(n), false) = (cli.particles, grains) {
        if cli.given.iter().any(|g| g == "spacing") {
            return Err(Error::input(format!(
                "-n {n} and --spacing both set the resolution of scene file {name}: give one (-n rescales the file's spacing)"
            )));
        }
        file.scale_to(n as u64, &name.to_string())?;
    }
    let cmd = Cli::command();
    let mut extra: Vec<std::ffi::OsString> = Vec::new();
    for section in crate::scene_file::SECTIONS {
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
            let text = crate::scene_file::flag_text(value).ok_or_else(|| {
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
        .try_get_matches_from(args.iter().cloned().chain(extra))
        .and_then(|m| Cli::from_arg_matches(&m))
        .map_err(|e| {
            Error::input(format!(
                "{name}: with the file's settings: {}",
                one_line_clap_error(&e)
            ))
        })?;
    Ok(Cli {
        given: cli.given,
        scene: SceneArg::File(path.clone()),
        scene_file: Some(Arc::new(file)),
        ..matches
    })
}

/// `e` with the flags it names that took their value from the scene file (not the command
/// line) named as the file and key path they came from: the checks of values and of their
/// relations speak in flags, and a value the user wrote in a file is to be found there
/// (docs/scenes.md).
pub(crate) fn attribute_to_scene_file(cli: &Cli, e: Error) -> Error {
    let (Some(file), SceneArg::File(path)) = (&cli.scene_file, &cli.scene) else {
        return e;
    };
    if !matches!(e, Error::InvalidInput(_) | Error::LimitExceeded(_)) {
        return e;
    }
    let msg = e.to_string();
    let name = path.display().to_string();
    if msg.starts_with(&name) {
        return e;
    }
    let cmd = Cli::command();
    let mut out = msg.clone();
    let mut first = None;
    for word in msg.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-')) {
        let Some(long) = word.strip_prefix("--") else {
            continue;
        };
        let Some(arg) = cmd.get_arguments().find(|a| a.get_long() == Some(long)) else {
            continue;
        };
        let id = arg.get_id().as_str();
        if cli.given.iter().any(|g| g == id) {
            continue;
        }
        let Some(section) = crate::scene_file::SECTIONS
            .iter()
            .find(|section| file.section(section).contains_key(id))
        else {
            continue;
        };
        let key = format!("{section}.{id}");
        out = out.replace(&format!("--{long}"), &key);
        first.get_or_insert(key);
    }
    match first {
        Some(key) => Error::input(format!("{name}: at {key}: {out}")),
        None => e,
    }
}

/// Whether the physics setting `key` (a flag's id, a scene file's `physics.key`) was chosen,
/// on the command line or in the scene file, rather than left at its default: a density-only
/// run has no solver to default, and a fixed `--dt` ignores a default `--max-dt` but contradicts
/// a chosen one.
pub(crate) fn chosen(cli: &Cli, key: &str) -> bool {
    cli.given.iter().any(|g| g == key)
        || (cli.scene_file.as_ref()).is_some_and(|f| f.section("physics").contains_key(key))
}

/// The scene `--scene` chose: a built-in one, or the file's description.
pub(crate) fn scene_choice(cli: &Cli) -> SceneChoice {
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

/// A scene file's spheres are sized by --grain-radius, so `-n` beside one is a
/// contradiction, said in one line (a fluid file rescales its spacing instead, see
/// [`SceneFile::scale_to`]).
pub(crate) fn check_no_count_with_file(cli: &Cli) -> Result<(), Error> {
    match (&cli.scene, cli.particles) {
        (SceneArg::File(path), Some(n)) => Err(Error::input(format!(
            "-n {n} does not apply to scene file {} with --model grains: its bodies and --grain-radius fix the number of spheres; drop -n or change --grain-radius",
            path.display()
        ))),
        _ => Ok(()),
    }
}

/// The divergence checks the flags ask for (the solver's own fields from the flags too).
pub(crate) fn guards(cli: &Cli) -> crate::run::Guards {
    crate::run::Guards {
        density_ratio: cli.max_density_ratio,
        speed_fraction: cli.max_speed_fraction,
        dt_min: cli.min_dt,
        wcsph: cli.solver.weakly_compressible(),
        fixed_dt: cli.dt.is_some(),
        energy_margin: cli.energy_margin,
        tolerances: [0.0; 2],
    }
}

/// The checks a fluid run of `template` is judged by: the flags' margins, with WCSPH's energy
/// rule and a fixed step's where the run has them.
pub(crate) fn run_guards(cli: &Cli, template: &crate::checkpoint::Template) -> crate::run::Guards {
    crate::run::Guards {
        wcsph: template.solver.weakly_compressible(),
        fixed_dt: template.fluid_params.dt_fixed > 0.0,
        tolerances: template
            .solver
            .solves()
            .map_or([0.0; 2], |dp| [dp.eta_v, dp.eta_d]),
        ..guards(cli)
    }
}

/// The flags of one of the clap groups the flags are filed in, by their ids (the long names
/// with `_` for `-`), in the order `Cli` declares them: a scene file's section (`physics`,
/// `run`, `outputs`, `viewer`: the keys it takes), `resumable` (the run control a `--resume`
/// may change: steps, outputs, checkpoints, the path, the divergence checks), `fluid_only`
/// (refused by `--model grains`) and `grains` (the spheres' own). A new flag is filed where it
/// is declared, in its `#[arg(groups = [...])]`; no list elsewhere names it.
pub(crate) fn flags_in(group: &str) -> Vec<String> {
    let mut cmd = Cli::command();
    // The flags join their groups when the command is built.
    cmd.build();
    let found = cmd.get_groups().find(|g| g.get_id() == group);
    let Some(found) = found else {
        unreachable!("no flag group {group}: Cli declares the groups it files flags in")
    };
    found.get_args().map(|id| id.to_string()).collect()
}

pub(crate) fn overrides(cli: &Cli) -> ConfigOverrides {
    ConfigOverrides {
        table_size: cli.table_size,
        smoothing_radius: cli.smoothing_radius,
        spacing: cli.spacing,
        particle_mass: cli.particle_mass,
        rest_density: cli.rest_density,
        group_size: cli.group_size,
        kernel: cli.kernel,
        dim: cli.dim,
    }
}

pub(crate) fn dfsph_config(cli: &Cli) -> DfsphConfig {
    DfsphConfig {
        divergence_tolerance: cli.divergence_tolerance,
        density_tolerance: cli.density_tolerance,
        max_iterations: cli.max_iterations,
        dt_min: cli.min_dt,
        viscous_substeps: cli.viscous_substeps,
        relaxation: cli.relaxation,
    }
}

pub(crate) fn physics(cli: &Cli) -> PhysicsConfig {
    let defaults = PhysicsConfig::default();
    PhysicsConfig {
        gravity: cli.gravity,
        viscosity: cli.viscosity,
        alpha: cli.alpha.unwrap_or(defaults.alpha),
        sound_speed: cli.sound_speed,
        cfl: cli.cfl,
        dt: cli.dt,
        restitution: cli.restitution,
        dt_max: cli.max_dt,
        wall_slip_length: cli.wall_slip_length,
        kinematic_viscosity: cli.kinematic_viscosity.or(defaults.kinematic_viscosity),
        // A scene's fluid starts at rest, so under its weight; a particle file may be a run's
        // state, compressed already, and is taken as it is unless the flag asks.
        hydrostatic_start: if cli.no_hydrostatic_start {
            false
        } else if chosen(cli, "hydrostatic_start") {
            cli.hydrostatic_start
        } else {
            cli.input.is_none()
        },
    }
}

/// `--wall-slip-length`: [`crate::params::parse_slip_length`], refused in its own words.
fn parse_slip_length(s: &str) -> Result<f32, String> {
    crate::params::parse_slip_length(s).ok_or_else(|| {
        format!("`{s}` is not a slip length: give free, 0 (no slip) or a length in metres")
    })
}

/// The run the flags and scene file describe, its fluid from `source`.
pub(crate) fn run_spec(cli: &Cli, source: Source) -> RunSpec {
    RunSpec {
        source,
        particles: cli.particles.unwrap_or(DEFAULT_PARTICLES),
        seed: cli.seed,
        overrides: overrides(cli),
        physics: physics(cli),
        solver: cli.solver,
        dfsph: dfsph_config(cli),
        tank: cli.tank_min.zip(cli.tank_max),
        steps: cli.steps > 0,
    }
}

/// The viewer's options from the flags, for `particles` particles.
pub(crate) fn viewer_options(cli: &Cli, particles: u32) -> ViewerOptions {
    ViewerOptions {
        setup: RunSpec {
            particles,
            steps: true,
            ..run_spec(cli, Source::Scene(scene_choice(cli)))
        },
        substeps: cli.substeps,
        field: cli.colour_by,
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

pub(crate) fn surface_settings(cli: &Cli) -> SurfaceSettings {
    SurfaceSettings {
        iso_threshold: cli.surface_threshold,
        cube_size: cli.surface_cube_size,
        smoothing: cli.surface_smoothing,
        // With VTK XML frames the meshes are VTK XML too, so one .pvd holds both.
        format: if cli.export_format == crate::series::ExportFormat::Vtu
            && !chosen(cli, "surface_format")
        {
            MeshFormat::Vtu
        } else {
            cli.surface_format
        },
    }
}

/// `--stats -` refused in one line: standard output carries the run's own report, so the
/// rows would interleave with it, and `-` written as a file name is never what was meant.
pub(crate) fn check_stats_path(cli: &Cli) -> Result<(), Error> {
    match &cli.stats {
        Some(path) if path.as_os_str() == "-" => Err(Error::input(
            "--stats - would write the statistics into a file named '-': they go to a file (standard output carries the run's report), so give a path, e.g. --stats stats.csv",
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser, error::ErrorKind};

    use super::{Cli, flags_in};

    /// The flag groups read as the four lists they replace did: the scene file's sections
    /// part the settings, a resume may change no physics, the spheres' flags and the fluid's
    /// are apart, and each group is given together without clap refusing the combination.
    #[test]
    fn the_flag_groups_file_every_setting_once() {
        Cli::command().debug_assert();
        let sections: Vec<Vec<String>> = crate::scene_file::SECTIONS
            .iter()
            .map(|s| flags_in(s))
            .collect();
        for (i, a) in sections.iter().enumerate() {
            for b in &sections[i + 1..] {
                assert!(
                    a.iter().all(|f| !b.contains(f)),
                    "{a:?} and {b:?} share a key"
                );
            }
        }
        let (resumable, fluid, grains) = (
            flags_in("resumable"),
            flags_in("fluid_only"),
            flags_in("grains"),
        );
        assert!(
            resumable.iter().all(|f| !sections[0].contains(f)),
            "{resumable:?}"
        );
        assert!(
            grains
                .iter()
                .all(|f| !fluid.contains(f) && sections[0].contains(f))
        );
        assert!(sections[0].contains(&"kernel".to_string()) && fluid.contains(&"kernel".into()));
        assert_eq!(grains.len(), 6);
        // Flags of one group given together parse (the groups allow many).
        let cli = Cli::try_parse_from([
            "gpu-sph",
            "--headless",
            "--steps",
            "3",
            "--stats",
            "s.csv",
            "--output",
            "o.csv",
        ]);
        assert!(cli.is_ok(), "{cli:?}");
    }

    /// A negative value reaches its flag's own parser, which names what the flag takes, on
    /// every flag that takes a value: clap otherwise reads `-1` as a flag of its own and says
    /// "unexpected argument '-1'", blaming the value's sign on nothing the user wrote.
    #[test]
    fn every_value_flag_reads_a_negative_value_as_its_value() {
        let cmd = Cli::command();
        let mut misread = Vec::new();
        for arg in cmd.get_arguments() {
            let Some(long) = arg.get_long() else { continue };
            if !arg.get_action().takes_values() || arg.is_positional() {
                continue;
            }
            let flag = format!("--{long}");
            if let Err(e) = Cli::try_parse_from(["gpu-sph", flag.as_str(), "-1"])
                && e.kind() == ErrorKind::UnknownArgument
            {
                misread.push(flag);
            }
        }
        assert!(misread.is_empty(), "read -1 as a flag: {misread:?}");
    }
}
