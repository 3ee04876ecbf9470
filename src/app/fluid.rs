//! The fluid front ends: the viewer, headless runs (GPU or CPU path, outputs, checkpoints,
//! resume), `--verify`, `--bench` and the density-only run.

use std::sync::Arc;

use crate::checkpoint;
use crate::gpu::{GpuContext, GpuNeighbours, check_limits};
use crate::params::{ConfigOverrides, SphConfig, validate_positions, validate_velocities};
use crate::scene::Scene;
use crate::scene_file::SceneArg;
use crate::setup::{Setup, Source};
use crate::summary::Summary;
use crate::surface::{self, FrameMeta};
use crate::viewer;
use crate::{Error, bench, io, verify};

use super::Outcome;
use super::cli::{
    BRUTE_FORCE_SIZES, Cli, DEFAULT_PARTICLES, chosen, dfsph_config, overrides, physics,
    run_guards, run_spec, scene_choice, surface_settings, viewer_options,
};
use super::shared::{Paths, choose_paths, print_json_or, print_report};

/// The viewer: a window, or with `--headless --screenshot` an offscreen render.
fn view(cli: &Cli) -> Result<Outcome, Error> {
    // The viewer's panel can switch solver, so every value is checked before the window opens.
    check_physics(cli)?;
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

/// A progress bar drawn only on a terminal.
fn bar(len: u64, multi: &indicatif::MultiProgress, template: &str) -> indicatif::ProgressBar {
    let bar = multi.add(indicatif::ProgressBar::new(len));
    if let Ok(style) = indicatif::ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// `--surface-from PATH --surface-dir OUT`: meshes of frames already on disk.
fn surface_from(
    cli: &Cli,
    from: &std::path::Path,
    out: &std::path::Path,
) -> Result<Outcome, Error> {
    // `run` has validated the settings, as it does for every run.
    let settings = surface_settings(cli);
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
    let multi = crate::run::bars();
    let progress = bar(
        frames.len() as u64,
        &multi,
        "surfaces {bar:40} {pos}/{len} {msg}",
    );
    let (mut reconstruct_s, mut write_s) = (Vec::new(), Vec::new());
    for (i, path) in frames.iter().enumerate() {
        let (positions, meta) = surface::read_frame(path, fallback)?;
        let t0 = web_time::Instant::now();
        let mesh = surface::reconstruct(&positions, &meta, &settings)?;
        let t1 = web_time::Instant::now();
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

pub(crate) fn run(cli: &Cli) -> Result<Outcome, Error> {
    if let Some(kind) = cli.print_scene {
        // The file of what `--scene NAME -n N --spacing S` runs; the shipped one by default.
        let dim = cli.dim.unwrap_or(3);
        match (cli.particles, cli.spacing, dim) {
            (None, None, 3) => print!("{}", kind.file_text()),
            (n, s, dim) => {
                if dim == 2 && kind == crate::scene::SceneKind::Random {
                    return Err(Error::input(
                        "scene random has no 2D form (its random packing is three-dimensional): print dam-break, cube or drop with --dim 2",
                    ));
                }
                print!(
                    "{}",
                    crate::scene_file::builtin_file_text(
                        kind,
                        n.unwrap_or(DEFAULT_PARTICLES) as usize,
                        s.unwrap_or(crate::params::DEFAULT_SPACING),
                        dim
                    )
                )
            }
        }
        return Ok(Outcome::Done);
    }
    check_no_grains_flags(cli)?;
    check_sources(cli)?;
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
    if cli.hydrostatic_start {
        check_hydrostatic_start(cli)?;
    }
    if !cli.headless || (cli.screenshot.is_some() && cli.steps == 0) {
        return view(cli);
    }
    check_outputs(cli)?;
    if let Some(path) = &cli.screenshot {
        viewer::check_png_path(path)?;
    }
    if cli.bench && cli.repeat == 0 {
        return Err(Error::input(
            "--repeat must be ≥ 1 (the medians need at least one run)",
        ));
    }
    // Checked whether or not a mesh is asked for: a value no mesh can use is refused as
    // `--sound-speed nan` is (check_physics).
    surface_settings(cli).validate()?;
    if let (Some(from), Some(out)) = (&cli.surface_from, &cli.surface_dir) {
        return surface_from(cli, from, out);
    }
    check_run_flags(cli)?;
    if let Some(path) = &cli.resume {
        return resume(cli, path);
    }
    let overrides = overrides(cli);

    // The GPU comes first, so an N or T the device cannot hold fails before a scene of that
    // size is built.
    let paths = choose_paths(cli)?;
    let ctx = paths.compute.clone();
    let source = match &cli.input {
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
            Source::Particles {
                name: path.display().to_string(),
                positions: data.positions,
                velocities: data.velocities,
            }
        }
        None => Source::Scene(scene_choice(cli)),
    };
    let spec = run_spec(cli, source);
    let limits = ctx.as_deref().map(|c| &c.limits);
    let probe = |n: u32| probe_memory(n as u64, ctx.as_deref());
    if cli.steps > 0 {
        let setup = Setup::new(&spec, limits, probe)?;
        say_left_out(cli, setup.carved, setup.walled);
        let template = setup.template();
        return simulate_from(cli, paths, template, setup.state, setup.obstacles, None);
    }
    densities(cli, &spec, paths.compute, overrides)
}

/// The flags of a fluid or density run that contradict each other or the run, each refused in
/// one line.
fn check_run_flags(cli: &Cli) -> Result<(), Error> {
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
    if cli.steps == 0 && chosen(cli, "solver") {
        return Err(Error::input(format!(
            "--solver {} applies to fluid runs: add --steps K (a density-only run uses the poly6 density, whatever the solver)",
            cli.solver.name()
        )));
    }
    check_physics(cli)?;
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
    // A run that never steps records nothing of steps: asking for it is a mistake to name,
    // not a request to drop (it exited 0 with no file written).
    if cli.steps == 0
        && cli.resume.is_none()
        && let Some(flag) = [
            ("--stats", cli.stats.is_some()),
            ("--export-dir", cli.export_dir.is_some()),
            ("--checkpoint-every", cli.checkpoint_every > 0),
        ]
        .iter()
        .find_map(|&(f, given)| given.then_some(f))
    {
        return Err(Error::input(format!(
            "{flag} records the steps of a fluid run, and without --steps this run only computes densities: add --steps K or --end-time SECONDS (--output writes the densities)"
        )));
    }
    if let (Some(stats), Some(out)) = (&cli.stats, &cli.output)
        && stats == out
    {
        return Err(Error::input(format!(
            "--stats and --output both name {}: give them different files",
            out.display()
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
        io::ensure_output_dir_of(stats)?;
    }
    Ok(())
}

/// A density-only run (no `--steps`): the poly6 density of the start on the GPU (or the CPU
/// path without one), its summary and `--output`; `--verify` and `--bench` of the grid.
fn densities(
    cli: &Cli,
    spec: &crate::setup::RunSpec,
    ctx: Option<Arc<GpuContext>>,
    overrides: ConfigOverrides,
) -> Result<Outcome, Error> {
    let limits = ctx.as_deref().map(|c| &c.limits);
    let start = spec.start(limits, |n: u32| probe_memory(n as u64, ctx.as_deref()))?;
    say_left_out(cli, start.carved, start.walled);
    let (positions, velocities, source) = (start.positions, start.velocities, start.source);
    let n = u32::try_from(positions.len())
        .map_err(|_| Error::input("more than 2^32 particles: split the input"))?;
    // A density-only run sums poly6: DFSPH's kernel takes no part in it, so its configuration
    // does not name one.
    let overrides = ConfigOverrides {
        kernel: None,
        ..overrides
    };
    let config = SphConfig::new(n, overrides)?;
    validate_positions(&positions, config.smoothing_radius, "particle")?;
    validate_velocities(&velocities, "particle")?;
    crate::setup::check_neighbour_count(&positions, &config)?;
    // The densities are still worth a look (a point cloud may be sparse): said, not refused.
    if crate::setup::lonely(&positions, config.smoothing_radius) {
        eprintln!(
            "gpu-sph: warning: {}",
            crate::setup::lonely_line(&config, &positions)
        );
    }
    let params = config.sim_params();

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

/// `--input` beside a scene, refused in one line: each brings the fluid.
pub(crate) fn check_sources(cli: &Cli) -> Result<(), Error> {
    if let (Some(input), SceneArg::File(path)) = (&cli.input, &cli.scene) {
        return Err(Error::input(format!(
            "--input {} and scene file {} both bring the fluid: drop one (a scene file's settings alone can be given as flags)",
            input.display(),
            path.display()
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
    Ok(())
}

/// The grains' flags refused on a fluid run, in one line.
pub(crate) fn check_no_grains_flags(cli: &Cli) -> Result<(), Error> {
    if let Some(f) = super::cli::flags_in("grains")
        .iter()
        .find(|f| cli.given.contains(f))
    {
        return Err(Error::input(format!(
            "--{} sets the colliding spheres: add --model grains",
            f.replace('_', "-")
        )));
    }
    Ok(())
}

/// The physics settings a fluid run refuses together or alone, in one line each: the
/// divergence checks' margins, the time-step bounds.
pub(crate) fn check_physics(cli: &Cli) -> Result<(), Error> {
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
    if !(cli.min_dt.is_finite() && cli.min_dt >= 0.0) {
        return Err(Error::input(format!(
            "--min-dt must be a finite time step ≥ 0 s (default 1e-6: a step that falls to it has diverged; 0 turns that check off with WCSPH), got {}",
            cli.min_dt
        )));
    }
    // Each value alone before the relations between them: a largest step ≤ 0 is the cause
    // to name, not the default --min-dt it undercuts. A run that never steps (or never with
    // DFSPH) refuses a value no run can use too, rather than ignoring it.
    physics(cli).check()?;
    dfsph_config(cli).check()?;
    if let Some(dt) = cli
        .dt
        .filter(|&dt| chosen(cli, "max_dt") && dt > cli.max_dt)
    {
        return Err(Error::input(format!(
            "--dt {dt} exceeds --max-dt {}: a fixed step takes no largest step; drop one of them, or give a --dt of at most {}",
            cli.max_dt, cli.max_dt
        )));
    }
    if cli.dt.is_none() && cli.min_dt > cli.max_dt {
        return Err(Error::input(format!(
            "--min-dt {} exceeds --max-dt {}: lower --min-dt or raise --max-dt",
            cli.min_dt, cli.max_dt
        )));
    }
    Ok(())
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

/// Says what the scene left out of its bodies (obstacles carved, walls kept clear).
fn say_left_out(cli: &Cli, carved: usize, walled: usize) {
    if cli.json {
        return;
    }
    if carved > 0 {
        println!(
            "gpu-sph: the obstacles carved {carved} fluid particles (inside them or nearer their surface than the boundary layer holds fluid at rest density)"
        );
    }
    if walled > 0 {
        println!(
            "gpu-sph: left out {walled} fluid particles closer than half a spacing to a tank wall (their mirror images would start them compressed)"
        );
    }
}

/// `--hydrostatic-start` where it can act: a WCSPH fluid run (headless with steps, or the
/// viewer) under gravity pointing down.
pub(crate) fn check_hydrostatic_start(cli: &Cli) -> Result<(), Error> {
    let viewer = !cli.headless || (cli.screenshot.is_some() && cli.steps == 0);
    if !viewer && cli.steps == 0 {
        return Err(Error::input(
            "--hydrostatic-start moves the fluid of a run: add --steps K (a density-only run takes the positions as they are)",
        ));
    }
    if !cli.solver.weakly_compressible() {
        return Err(Error::input(
            "--hydrostatic-start is WCSPH's: DFSPH's fluid is incompressible and starts at ρ0 as it is; drop the flag or add --solver wcsph",
        ));
    }
    if cli.gravity >= 0.0 {
        return Err(Error::input(format!(
            "--hydrostatic-start needs gravity pointing down (-y), got --gravity {}: drop the flag or give a negative --gravity",
            cli.gravity
        )));
    }
    Ok(())
}

/// Continues the run a checkpoint holds (`--resume FILE`): only run-control flags may be
/// given; the physics, scene and configuration are the checkpoint's.
fn resume(cli: &Cli, path: &std::path::Path) -> Result<Outcome, Error> {
    let resumable = super::cli::flags_in("resumable");
    if let Some(flag) = cli.given.iter().find(|f| !resumable.contains(f)) {
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
    let (paths, template, state, obstacles, ck) = open_checkpoint(cli, path)?;
    if let Some(stats) = &cli.stats {
        check_resumed_stats(stats, &ck.header.geometry, ck.header.step, ck.header.t)?;
    }
    simulate_from(cli, paths, template, state, obstacles, Some(ck))
}

/// What a resumed run starts from: the path it steps on, its template, state and obstacles,
/// and the checkpoint (its carry and where the run stood).
pub(crate) type Resumed = (
    Paths,
    checkpoint::Template,
    crate::grid::reorder::Particles,
    Option<Arc<crate::boundary::Boundary>>,
    checkpoint::Checkpoint,
);

/// Reads the checkpoint at `path` and checks it fits the path `cli` chooses.
pub(crate) fn open_checkpoint(cli: &Cli, path: &std::path::Path) -> Result<Resumed, Error> {
    let ck = checkpoint::Checkpoint::read(path)?;
    if ck
        .header
        .obstacles
        .iter()
        .any(|o| matches!(o.shape, crate::scene::Shape::Mesh { .. }))
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
    let state = ck.snapshot.state.clone();
    // The obstacles' boundary particles are sampled anew from the shapes the checkpoint
    // holds: the sampling and ψ are deterministic, so they are the run's own bits.
    let obstacles = crate::obstacle::boundary(
        &ck.header.obstacles,
        ck.header.config.spacing,
        &ck.sim_params,
        &ck.fluid_params,
    )
    .map(Arc::new);
    // DFSPH's friction flag follows the obstacles, as a fresh run sets it (`Setup::new`).
    let solver = crate::obstacle::with_friction_of(ck.solver, obstacles.as_deref());
    let template = checkpoint::Template {
        header: ck.header.clone(),
        sim_params: ck.sim_params,
        fluid_params: ck.fluid_params,
        solver,
    };
    Ok((paths, template, state, obstacles, ck))
}

/// Every file and directory a headless fluid run will write, checked before it writes any
/// (unchecked, a checkpoint directory it cannot write fails at the first checkpoint, a
/// `--screenshot` that is a directory after the last step). The checkpoint directory is checked for every
/// stepping run: a signal's checkpoint goes there whatever `--checkpoint-every` says.
fn check_outputs(cli: &Cli) -> Result<(), Error> {
    if let Some(p) = &cli.output {
        io::check_file_target(p, "--output")?;
    }
    if let Some(p) = &cli.stats {
        io::check_file_target(p, "--stats")?;
        io::check_file_target(&io::stats_sidecar_path(p), "--stats (its .params.json)")?;
    }
    if let Some(p) = &cli.screenshot {
        io::check_file_target(p, "--screenshot")?;
    }
    for (flag, dir) in [
        ("--export-dir", &cli.export_dir),
        ("--surface-dir", &cli.surface_dir),
    ] {
        if let Some(d) = dir {
            io::check_dir_target(d, flag)?;
        }
    }
    if cli.steps > 0 && !cli.verify && !cli.bench {
        io::check_dir_target(&cli.checkpoint_dir, "--checkpoint-dir")?;
    }
    Ok(())
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
pub(crate) fn probe_memory(n: u64, gpu: Option<&GpuContext>) -> Result<(), Error> {
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

/// "K steps", "K more steps" or "until t = T s" for the run's first line.
fn steps_text(cli: &Cli, more: &str) -> String {
    match cli.end_time {
        Some(t) if cli.steps == u64::MAX => format!("until t = {t} s"),
        Some(t) => format!("{} {more}steps or until t = {t} s", cli.steps),
        None => format!("{} {more}steps", cli.steps),
    }
}

/// The settings of a run's parameter line: its parts between commas and semicolons outside
/// parentheses ("tank (0, 0, 0) to (1, 1, 1)" is one).
fn settings_of(line: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in line.char_indices() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            ',' | ';' if depth == 0 => {
                parts.push(line[start..i].trim());
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(line[start..].trim());
    parts
}

/// Whether the `--stats` file at `path` is the resumed run's by its sidecar: the parameters
/// line it records must be the checkpoint's run's `geometry`; Err names the first setting
/// that differs and `fix`.
fn check_stats_sidecar(path: &std::path::Path, geometry: &str, fix: &str) -> Result<(), Error> {
    let sidecar = io::stats_sidecar_path(path);
    let described = std::fs::read_to_string(&sidecar)
        .ok()
        .and_then(|s| serde_json::from_str::<serde_json::Value>(&s).ok())
        .and_then(|v| v["parameters"].as_str().map(String::from));
    match described {
        None => Err(Error::file(
            path,
            format!(
                "cannot be shown to be this run's: its {} is missing or unreadable; {fix}",
                sidecar.display()
            ),
        )),
        Some(p) if p != geometry => {
            let (mine, theirs) = (settings_of(geometry), settings_of(&p));
            let differs = mine.iter().zip(&theirs).find(|(a, b)| a != b).map_or_else(
                || "their lengths".to_string(),
                |(a, b)| format!("`{b}` where the checkpoint's run has `{a}`"),
            );
            Err(Error::file(
                path,
                format!(
                    "holds the statistics of another run: its {} differs in {differs}; {fix}",
                    sidecar.display()
                ),
            ))
        }
        Some(_) => Ok(()),
    }
}

/// A resumed run appends to its `--stats` file: refuses, before the run starts, a file that
/// is not this run's own up to the checkpoint (its rows would then read as one run that never
/// was): a file of something else, one whose `.params.json` describes another run (another
/// solver, N, tank…), one whose rows skip a step or stop before the checkpoint's `step`, or
/// whose row at that step has another time than the checkpoint's `t`. A missing or empty
/// file starts anew.
fn check_resumed_stats(
    path: &std::path::Path,
    geometry: &str,
    step: u64,
    t: f64,
) -> Result<(), Error> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Ok(());
    };
    if text.trim().is_empty() {
        return Ok(());
    }
    let fix = "give --stats the resumed run's own file, or a new one";
    let header = crate::run::stats_header();
    let columns = header.trim_end();
    let mut lines = text.lines();
    if lines.next() != Some(columns) {
        return Err(Error::file(
            path,
            format!(
                "is not a gpu-sph statistics file (its column header is not this version's): {fix}"
            ),
        ));
    }
    check_stats_sidecar(path, geometry, fix)?;
    let mut last: Option<u64> = None;
    let mut first: Option<u64> = None;
    let mut at_step = None;
    for (k, line) in lines.enumerate() {
        let mut fields = line.split(',');
        let row_step = fields.next().and_then(|c| c.parse::<u64>().ok());
        let Some(row_step) = row_step else {
            return Err(Error::file(
                path,
                format!("line {}: not a statistics row: {fix}", k + 2),
            ));
        };
        first.get_or_insert(row_step);
        if row_step > step {
            break;
        }
        if let Some(prev) = last
            && row_step != prev + 1
        {
            return Err(Error::file(
                path,
                format!(
                    "line {}: its rows jump from step {prev} to step {row_step}, so they are not one run's: {fix}",
                    k + 2
                ),
            ));
        }
        last = Some(row_step);
        if row_step == step {
            at_step = fields.next().map(String::from);
        }
    }
    // Rows that start right after the checkpoint are an earlier resume of it: all dropped.
    let resumed_before = last.is_none() && first == Some(step + 1);
    if step > 0 && last != Some(step) && !resumed_before {
        let held = last.map_or_else(
            || "no row up to it".to_string(),
            |l| format!("rows up to step {l}"),
        );
        return Err(Error::file(
            path,
            format!(
                "holds {held}, and the checkpoint is at step {step}: the rows between would be missing; {fix}"
            ),
        ));
    }
    if let Some(row_t) = at_step
        && row_t != format!("{t:.9}")
    {
        return Err(Error::file(
            path,
            format!(
                "its row of step {step} has t = {row_t} s, the checkpoint t = {t:.9} s: it is another run's; {fix}"
            ),
        ));
    }
    Ok(())
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
    let header = crate::run::stats_header();
    io::write_stats_sidecar(path, geometry_line, &crate::run::STATS_COLUMNS)?;
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

/// The flags after `--resume FILE` that continue this run with `left` steps still to run: its
/// end (`--steps`, `--end-time`) and the outputs it writes, so the line a signal prints runs
/// as printed.
fn resume_flags(cli: &Cli, left: u64) -> String {
    let quoted = |p: &std::path::Path| {
        let text = p.display().to_string();
        if text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+,:=@".contains(c))
        {
            text
        } else {
            format!("'{}'", text.replace('\'', r"'\''"))
        }
    };
    let mut flags = String::new();
    if cli.steps != u64::MAX {
        flags += &format!(" --steps {left}");
    }
    if let Some(t) = cli.end_time {
        flags += &format!(" --end-time {t}");
    }
    for (flag, path) in [
        ("--stats", &cli.stats),
        ("--output", &cli.output),
        ("--export-dir", &cli.export_dir),
        ("--surface-dir", &cli.surface_dir),
    ] {
        if let Some(p) = path {
            flags += &format!(" {flag} {}", quoted(p));
        }
    }
    if cli.export_dir.is_some() {
        flags += &format!(" --export-every {}", cli.export_every);
    }
    if cli.checkpoint_every > 0 {
        flags += &format!(" --checkpoint-every {}", cli.checkpoint_every);
    }
    if cli.given.iter().any(|g| g == "checkpoint_dir") {
        flags += &format!(" --checkpoint-dir {}", quoted(&cli.checkpoint_dir));
    }
    flags
}

/// Names the adapter a GPU run steps on: figures are only comparable on the same one.
fn say_adapter(ctx: &GpuContext) {
    println!(
        "adapter: {} ({:?}, {:?})",
        ctx.info.name, ctx.info.backend, ctx.info.device_type
    );
}

/// The path a run steps on: the GPU's [`crate::gpu::fluid::Simulation`] on `ctx`, or the CPU
/// reference without one, holding `state` (or the checkpoint `resumed`'s, with its carry) among
/// `obstacles`.
pub(crate) fn backend(
    ctx: Option<&Arc<GpuContext>>,
    template: &checkpoint::Template,
    state: &crate::grid::reorder::Particles,
    obstacles: Option<Arc<crate::boundary::Boundary>>,
    resumed: Option<&checkpoint::Checkpoint>,
) -> Result<Box<dyn crate::run::Backend + Send>, Error> {
    let (params, fp, solver) = (template.sim_params, template.fluid_params, template.solver);
    Ok(match ctx {
        Some(ctx) => {
            let mut sim = crate::gpu::fluid::Simulation::with_solver(
                ctx.clone(),
                &params,
                &fp,
                &solver,
                state,
            )?;
            sim.set_obstacles(obstacles.as_deref())?;
            if let Some(c) = resumed {
                sim.upload_carry(&c.carry)?;
            }
            Box::new(sim)
        }
        None => {
            let mut cpu = match resumed.cloned() {
                Some(c) => {
                    crate::run::CpuSimulation::resume(params, fp, &solver, &c.carry, c.snapshot)?
                }
                None => crate::run::CpuSimulation::with_solver(params, fp, solver, state.clone()),
            };
            cpu.obstacles = obstacles;
            Box::new(cpu)
        }
    })
}

/// Runs the steps of a fresh (`resumed` = `None`) or resumed run from `state`, among the
/// boundary particles of the run's `obstacles`.
fn simulate_from(
    cli: &Cli,
    paths: Paths,
    template: checkpoint::Template,
    state: crate::grid::reorder::Particles,
    obstacles: Option<Arc<crate::boundary::Boundary>>,
    resumed: Option<checkpoint::Checkpoint>,
) -> Result<Outcome, Error> {
    use crate::run;
    let ctx = paths.compute.clone();
    let h = &template.header;
    let (config, fp, solver) = (&h.config, template.fluid_params, template.solver);
    let geometry_line = h.geometry.clone();
    let from = resumed.as_ref().map(|c| c.run_from()).unwrap_or_default();
    let emitters = crate::emitter::Emitters {
        list: h.emitters.clone(),
        s: config.spacing,
    };
    if !cli.json {
        announce(
            cli,
            h,
            state.len(),
            resumed.is_some(),
            &from,
            obstacles.as_deref(),
        );
    }
    if let (Some(ctx), true) = (&ctx, cli.bench || cli.verify) {
        return check_or_bench(cli, ctx, &template, &state, obstacles, &emitters);
    }
    if let (Some(ctx), false) = (&ctx, cli.json) {
        say_adapter(ctx);
    }
    let mut backend = backend(
        ctx.as_ref(),
        &template,
        &state,
        obstacles.clone(),
        resumed.as_ref(),
    )?;
    // From here the run writes: a signal stops it at a step boundary, with a checkpoint.
    let stop = crate::run::signals::stepping();
    let resumed_at = resumed.is_some().then_some(from.step);
    let mut stats_file = cli
        .stats
        .as_ref()
        .map(|path| open_stats(path, &geometry_line, resumed_at))
        .transpose()?;
    let export = open_export(cli, resumed.is_some().then_some(from.t))?;
    let multi = crate::run::bars();
    let progress = run::Progress::new(&multi, cli.steps, cli.end_time, (from.step, from.t));
    let meta = FrameMeta::of(config);
    let mut surfaces = open_surfaces(cli, &multi, meta, export.as_ref())?;
    let start = web_time::Instant::now();
    let guards = run_guards(cli, &template);
    let end_step = from.step.saturating_add(cli.steps);
    let resume_flags = |k: u64| resume_flags(cli, end_step.saturating_sub(k));
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
                resume_flags: &resume_flags,
            }),
        },
        &progress,
        solver
            .solves()
            .map(|dp| (dp.max_iterations, [dp.eta_v as f64, dp.eta_d as f64])),
    );
    progress.finish();
    crate::run::signals::finishing();
    let result = with_meshes_written(cli, surfaces.as_mut(), result);
    let wall = start.elapsed().as_secs_f64();
    let (snap, last, capped) = match settled(cli, result)? {
        Ok(r) => r,
        Err(outcome) => return Ok(outcome),
    };
    if let Some(f) = stats_file.as_mut() {
        use std::io::Write;
        f.flush()
            .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
    }
    report_end(
        cli,
        snap.as_ref(),
        last.as_ref(),
        capped,
        (from.step, wall),
        h,
        &fp,
        meta,
    )?;
    if let (Some(path), Some(snap)) = (&cli.screenshot, snap) {
        // Moving obstacles are drawn where they are at the run's end.
        let end = last.as_ref().map_or(from.t, |st| st.t);
        picture_at_end(
            cli,
            paths.picture,
            &template,
            snap.state,
            obstacles,
            end,
            path,
        )?;
    }
    Ok(Outcome::Done)
}

/// A run's result, or the outcome its failure ends the command with, said on stderr: a run
/// that diverged or failed its checks, or one a signal interrupted.
fn settled<T>(cli: &Cli, result: Result<T, Error>) -> Result<Result<T, Outcome>, Error> {
    match result {
        Ok(r) => Ok(Ok(r)),
        Err(Error::Unstable(msg) | Error::RunFailed(msg)) => {
            super::say_diverged(cli, &msg);
            Ok(Err(Outcome::VerifyFailed))
        }
        Err(Error::Interrupted { message, signal }) => {
            eprintln!("gpu-sph: {message}");
            Ok(Err(Outcome::Interrupted(signal)))
        }
        Err(e) => Err(e),
    }
}

/// `result` once the surface meshes still in line are written (a run's error first, then
/// the writer's), saying how many were written.
fn with_meshes_written<T>(
    cli: &Cli,
    surfaces: Option<&mut crate::run::Surfaces>,
    result: Result<T, Error>,
) -> Result<T, Error> {
    let meshes = surfaces.map(|sf| sf.writer.finish());
    match (result, meshes) {
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
    }
}

/// What a finished run writes and says: `--output`'s particles, the capped solves' warning,
/// the last step's line (`(from_step, wall)`: the run's first step and its wall time, s).
#[allow(clippy::too_many_arguments)]
fn report_end(
    cli: &Cli,
    snap: Option<&crate::core::Snapshot>,
    last: Option<&crate::run::StepStats>,
    capped: Option<crate::run::Capped>,
    (from_step, wall): (u64, f64),
    h: &checkpoint::Header,
    fp: &crate::params::FluidParams,
    meta: FrameMeta,
) -> Result<(), Error> {
    if let (Some(out), Some(snap)) = (&cli.output, snap) {
        crate::run::write_snapshot(out, snap, Some(&meta))?;
    }
    if let Some(line) = capped.and_then(|c| c.warning()) {
        eprintln!("gpu-sph: {line}");
    }
    if let Some(st) = last {
        print_last_step(cli, st, from_step, wall, h, fp);
    }
    Ok(())
}

/// The run's opening lines: what it holds, where from, how far it goes, its geometry and
/// obstacles.
fn announce(
    cli: &Cli,
    h: &checkpoint::Header,
    n: usize,
    resumed: bool,
    from: &crate::run::RunFrom,
    obstacles: Option<&crate::boundary::Boundary>,
) {
    let up_to = if h.emitters.is_empty() {
        String::new()
    } else {
        format!(" (up to {} with its emitters)", h.config.particles)
    };
    if resumed {
        println!(
            "gpu-sph: {n}{up_to} particles from {}, resumed at step {} (t = {:.6} s), {}",
            h.source,
            from.step,
            from.t,
            steps_text(cli, "more ")
        );
    } else {
        println!(
            "gpu-sph: {n}{up_to} particles from {}, {}",
            h.source,
            steps_text(cli, "")
        );
    }
    println!("{}", h.geometry);
    if let Some(b) = obstacles {
        println!(
            "obstacles: {} bodies as {} boundary particles (Akinci et al. 2012)",
            h.obstacles.len(),
            b.pos.len()
        );
    }
}

/// `--bench` or `--verify` of the run on the GPU at `ctx` beside the CPU reference.
fn check_or_bench(
    cli: &Cli,
    ctx: &Arc<GpuContext>,
    template: &checkpoint::Template,
    state: &crate::grid::reorder::Particles,
    obstacles: Option<Arc<crate::boundary::Boundary>>,
    emitters: &crate::emitter::Emitters,
) -> Result<Outcome, Error> {
    let (params, fp, solver) = (template.sim_params, template.fluid_params, template.solver);
    if !cli.json {
        say_adapter(ctx);
    }
    let mut sim =
        crate::gpu::fluid::Simulation::with_solver(ctx.clone(), &params, &fp, &solver, state)?;
    sim.set_obstacles(obstacles.as_deref())?;
    if cli.bench {
        let report = crate::bench::bench_steps(
            &mut sim,
            || {
                let mut cpu =
                    crate::run::CpuSimulation::with_solver(params, fp, solver, state.clone());
                cpu.obstacles = obstacles.clone();
                cpu
            },
            state,
            emitters,
            cli.steps,
            cli.repeat,
        )?;
        print_json_or(cli, &report, || report.to_table())?;
        return Ok(Outcome::Done);
    }
    let report = verify::verify_solver_steps(
        &sim,
        state,
        obstacles.as_deref(),
        emitters,
        cli.steps,
        cli.tolerance,
    )?;
    print_report(cli, &report)
}

/// `--export-dir`'s frames (and their collection, for VTK XML), the directory made; a resumed
/// run's collection keeps its frames up to `resumed_at`.
fn open_export(cli: &Cli, resumed_at: Option<f64>) -> Result<Option<crate::run::Export>, Error> {
    let Some(dir) = &cli.export_dir else {
        return Ok(None);
    };
    io::ensure_dir(dir)?;
    let vtu = cli.export_format == crate::series::ExportFormat::Vtu;
    Ok(Some(crate::run::Export {
        dir: dir.clone(),
        every: cli.export_every,
        format: cli.export_format,
        collection: vtu
            .then(|| crate::series::Collection::open(dir, resumed_at))
            .transpose()?
            .map(|c| Arc::new(std::sync::Mutex::new(c))),
    }))
}

/// `--surface-dir`'s meshes, written beside the run (VTK XML ones join the frames'
/// collection).
fn open_surfaces(
    cli: &Cli,
    multi: &indicatif::MultiProgress,
    meta: FrameMeta,
    export: Option<&crate::run::Export>,
) -> Result<Option<crate::run::Surfaces>, Error> {
    let Some(dir) = &cli.surface_dir else {
        return Ok(None);
    };
    let every = cli.surface_every.unwrap_or(cli.export_every);
    let meshes = bar(
        cli.steps / every + 1,
        multi,
        "surfaces {bar:40} {pos}/{len} {msg}",
    );
    let settings = surface_settings(cli);
    let collection = export.and_then(|e| e.collection.clone());
    let joins = settings.format == crate::surface::MeshFormat::Vtu;
    if collection.is_some() && !joins && !cli.json {
        eprintln!(
            "gpu-sph: the {} meshes stay out of frames.pvd, which holds VTK XML files only: --surface-format vtu adds them",
            settings.format.extension().to_uppercase()
        );
    }
    Ok(Some(crate::run::Surfaces {
        writer: surface::SurfaceWriter::start(
            dir.clone(),
            meta,
            settings,
            meshes,
            collection.filter(|_| joins),
        )?,
        every,
    }))
}

/// The run's last lines (or its JSON object): the state after the last step, the ms a step,
/// and the solver's line.
fn print_last_step(
    cli: &Cli,
    st: &crate::run::StepStats,
    from_step: u64,
    wall: f64,
    h: &checkpoint::Header,
    fp: &crate::params::FluidParams,
) {
    if cli.json {
        let v = serde_json::json!({ "particles": st.particles, "steps": st.step - from_step, "wall_s": wall, "geometry": h.geometry, "last": st });
        println!("{v}");
        return;
    }
    if let Some(line) = crate::solver::summary(h.solver, st) {
        println!("{line}");
    }
    let p = crate::summary::plain;
    println!(
        "after {} steps (t = {:.5} s, {:.2} ms/step): kinetic energy {} J, potential energy {} J, max speed {} m/s, density min {} mean {} max {} kg/m³, front x = {} m, outside {}",
        st.step,
        st.t,
        1e3 * wall / (st.step - from_step).max(1) as f64,
        p(st.kinetic, 4),
        p(st.potential, 4),
        p(st.max_speed, 4),
        p(st.density_min, 5),
        p(st.density_mean, 5),
        p(st.density_max, 5),
        p(st.front, 4),
        st.outside
    );
    if fp.open != 0 && st.outside > 0 && st.outside == st.particles {
        println!(
            "every particle left the tank through its open sides at step {}: the run ended there",
            st.step
        );
    }
}

/// `--screenshot`: a picture of the run's last state `state` at time `end` (moving obstacles
/// drawn where they are then), or one line saying why there is none.
fn picture_at_end(
    cli: &Cli,
    picture: std::result::Result<Arc<GpuContext>, String>,
    template: &checkpoint::Template,
    state: crate::grid::reorder::Particles,
    obstacles: Option<Arc<crate::boundary::Boundary>>,
    end: f64,
    path: &std::path::Path,
) -> Result<(), Error> {
    match picture {
        Ok(ctx) => {
            let particles = template.header.config.particles;
            let setup = picture_setup(template, state, obstacles, end);
            viewer::picture(ctx, viewer_options(cli, particles), setup, path)?;
            println!("picture of the last frame: {}", path.display());
        }
        Err(why) => eprintln!(
            "gpu-sph: no picture of the last frame, no adapter can render here: {}",
            why.split_whitespace().collect::<Vec<_>>().join(" ")
        ),
    }
    Ok(())
}

/// The set-up a picture of `state` at time `end` draws: the run's `template` with moving
/// obstacles placed where they are then.
pub(crate) fn picture_setup(
    template: &checkpoint::Template,
    state: crate::grid::reorder::Particles,
    obstacles: Option<Arc<crate::boundary::Boundary>>,
    end: f64,
) -> Setup {
    let h = &template.header;
    let obstacles = obstacles.map(|b| {
        let mut b = (*b).clone();
        b.place(end);
        Arc::new(b)
    });
    let [tank_min, tank_max, fluid_size] = h.tank.map(glam::Vec3::from);
    Setup {
        config: h.config,
        physics: h.physics,
        fluid_params: template.fluid_params,
        state,
        source: h.source.clone(),
        tank_min,
        tank_max,
        fluid_size,
        shapes: h.obstacles.clone(),
        obstacles,
        emitters: Default::default(),
        solver: template.solver,
        carved: 0,
        walled: 0,
    }
}
