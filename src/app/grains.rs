//! `--model grains`: the colliding spheres' front ends.

use std::sync::Arc;

use crate::gpu::GpuContext;
use crate::viewer;
use crate::{Error, io};

use super::Outcome;
use super::cli::{
    BRUTE_FORCE_SIZES, Cli, DEFAULT_GRAINS, check_no_count_with_file, scene_choice, viewer_options,
};
use super::shared::{choose_paths, print_json_or, print_report};

/// `--model grains`: the colliding spheres' front ends (a headless run, `--verify`, `--bench`,
/// the viewer). The spheres are poured as flags say; fluid-only flags are refused by name.
pub(crate) fn grains(cli: &Cli) -> Result<Outcome, Error> {
    use crate::grains::{self as g, GrainPath, GrainSetup};
    let cfg = grain_config(cli)?;
    // A scene (built in, or a file) fills its bodies with spheres and brings its tank and still
    // obstacles; without one the spheres are poured from a block.
    let scene = cli.given.iter().any(|g| g == "scene") || cli.scene_file.is_some();
    let setup = if scene {
        check_no_count_with_file(cli)?;
        GrainSetup::from_scene(&cfg, &scene_choice(cli))?
    } else {
        GrainSetup::pour(&cfg)?
    };
    // A scene file's run section (its end time) does not turn a picture of the viewer into a
    // headless run: only --steps or --end-time on the command line do.
    let run_asked = cli.given.iter().any(|g| g == "steps" || g == "end_time");
    if !cli.headless || (cli.screenshot.is_some() && !run_asked) {
        return in_the_viewer(cli, cfg, setup, run_asked);
    }
    if cli.screenshot.is_some() {
        return Err(Error::input(
            "--screenshot with --model grains pictures the viewer: drop --steps and --end-time (the viewer pours the spheres itself)",
        ));
    }
    if cli.verify {
        let ctx = Arc::new(GpuContext::new()?);
        let report = g::check::verify(ctx, &setup, cli.steps.max(1), cli.tolerance)?;
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
        let b = g::check::bench(ctx, &cfg, cli.repeat, sizes)?;
        print_json_or(cli, &b, || b.to_table())?;
        return Ok(Outcome::Done);
    }
    if cli.steps == 0 {
        return Err(Error::input(
            "--model grains --headless runs need --steps K or --end-time SECONDS (or --verify, --bench)",
        ));
    }
    check_targets(cli)?;
    let paths = choose_paths(cli)?;
    let mut path: Box<dyn GrainPath> = match &paths.compute {
        Some(ctx) => Box::new(crate::grains::gpu::GpuGrains::new(
            ctx.clone(),
            &setup,
            setup.sim.n,
        )?),
        None => Box::new(g::CpuGrains::new(&setup)),
    };
    let gp = setup.grain;
    let (described, noun) = describe(&cfg, &setup, path.name());
    eprintln!("gpu-sph: {described}");
    // From here the run writes: a signal stops it after the step under way.
    let stop = crate::run::signals::stepping();
    let mut stats = stats_writer(cli, &described)?;
    let start = web_time::Instant::now();
    let result = step_all(cli, path.as_mut(), &gp, &mut stats, &stop)?;
    let done = match result {
        Ok(r) => r,
        Err(Error::Unstable(msg)) => {
            super::say_diverged(cli, &msg);
            return Ok(Outcome::VerifyFailed);
        }
        Err(Error::Interrupted { message, signal }) => {
            eprintln!("gpu-sph: {message}");
            return Ok(Outcome::Interrupted(signal));
        }
        Err(e) => return Err(e),
    };
    let wall = start.elapsed().as_secs_f64();
    let (first, last) = match (done.stats.first(), done.stats.last()) {
        (Some(a), Some(b)) => (*a, *b),
        _ => return Err(Error::input("no step ran: raise --steps or --end-time")),
    };
    let (end_pos, end_vel) = path.state()?;
    report(
        cli,
        &*path,
        &gp,
        (setup.len(), noun),
        &done,
        wall,
        first,
        last,
        &end_pos,
        &end_vel,
    )?;
    Ok(Outcome::Done)
}

/// The run's line (what `--stats`' sidecar and the terminal carry) and the particles' noun.
fn describe(
    cfg: &crate::grains::GrainConfig,
    setup: &crate::grains::GrainSetup,
    path: &str,
) -> (String, &'static str) {
    let gp = setup.grain;
    let (r_lo, r_hi) = (cfg.smallest(), cfg.radius);
    let noun = match cfg.dim {
        2 => "discs",
        _ => "spheres",
    };
    let described = format!(
        "{} {noun}, radii {r_lo}–{r_hi} m, {} kg/m³, k = {:.4e} N/m, dt = {:.3e} s (contact time {:.3e} s), tank {:?}–{:?} m, {} path{}",
        setup.len(),
        cfg.density,
        gp.stiffness,
        gp.dt,
        setup.contact_time(),
        &gp.tank_min[..3],
        &gp.tank_max[..3],
        path,
        match cfg.dim {
            2 => "; in 2D masses, stiffness and energies are per metre of depth",
            _ => "",
        }
    );
    (described, noun)
}

/// Steps `path` as the command line asks, each row to `stats` and the progress bars, until the
/// end, a guard or a signal (`stop`, set since the run started writing); `stats` flushed.
fn step_all(
    cli: &Cli,
    path: &mut dyn crate::grains::GrainPath,
    gp: &crate::grains::GrainParams,
    stats: &mut Option<std::io::BufWriter<std::fs::File>>,
    stop: &std::sync::atomic::AtomicUsize,
) -> Result<Result<crate::grains::GrainRun, Error>, Error> {
    use crate::grains::{self as g, GrainGuards};
    let guards = GrainGuards {
        energy_margin: cli.energy_margin as f64,
    };
    let multi = crate::run::bars();
    let progress = crate::run::Progress::new(&multi, cli.steps, cli.end_time, (0, 0.0));
    let result = g::run(path, gp, cli.steps, cli.end_time, guards, |s| {
        progress.advance(s.step, s.time);
        if let Some(w) = stats.as_mut() {
            use std::io::Write;
            writeln!(w, "{}", s.csv_row())
                .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
        }
        match stop.load(std::sync::atomic::Ordering::SeqCst) {
            0 => Ok(()),
            signal => Err(Error::Interrupted {
                message: format!(
                    "{} after step {} (t = {:.6} s): the spheres keep no checkpoint; {}",
                    crate::run::signals::signal_name(signal),
                    s.step,
                    s.time,
                    match &cli.stats {
                        Some(p) =>
                            format!("--stats {} holds the rows up to this step", p.display()),
                        None => "nothing else was written".into(),
                    }
                ),
                signal: signal as i32,
            }),
        }
    });
    progress.finish();
    crate::run::signals::finishing();
    if let Some(w) = stats.as_mut() {
        use std::io::Write;
        w.flush()
            .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
    }
    Ok(result)
}

/// `--model grains` in the viewer (a window, or `--headless --screenshot` without a run): the
/// spheres of `setup` stepped until it closes.
fn in_the_viewer(
    cli: &Cli,
    cfg: crate::grains::GrainConfig,
    setup: crate::grains::GrainSetup,
    run_asked: bool,
) -> Result<Outcome, Error> {
    if cli.input.is_some() || cli.output.is_some() || cli.stats.is_some() {
        return Err(Error::input(
            "--output and --stats belong to headless runs: add --headless --steps K",
        ));
    }
    if run_asked && !cli.headless {
        return Err(Error::input(
            "--steps and --end-time run without a window: add --headless (the viewer steps until closed; set --substeps per frame)",
        ));
    }
    // The fluid's options (its N among them) go unused: the viewer steps the spheres only.
    let mut opts = viewer_options(cli, 0);
    opts.grains = Some((cfg, setup));
    // Unless --substeps fixes them, the spheres' substeps are sized to the simulated time
    // per frame (see viewer::grains::GrainsMode::next_substeps).
    if !cli.given.iter().any(|g| g == "substeps") {
        opts.substeps = 0;
    }
    if cli.headless {
        viewer::run_offscreen(opts)?;
    } else {
        viewer::window::run(opts)?;
    }
    Ok(Outcome::Done)
}

/// A headless run's `--stats` and `--output` targets, checked before it steps.
fn check_targets(cli: &Cli) -> Result<(), Error> {
    if let Some(p) = &cli.stats {
        io::check_file_target(p, "--stats")?;
        io::check_file_target(&io::stats_sidecar_path(p), "--stats (its .params.json)")?;
    }
    if let Some(out) = &cli.output {
        io::check_file_target(out, "--output")?;
        if out.extension().and_then(|e| e.to_str()) != Some("csv") {
            return Err(Error::input(format!(
                "--output {}: the spheres are written as CSV (x,y,z,vx,vy,vz,radius): name a .csv file",
                out.display()
            )));
        }
        io::ensure_output_dir_of(out)?;
    }
    Ok(())
}

/// The `--stats` file with its sidecar and header written, if asked.
fn stats_writer(
    cli: &Cli,
    described: &str,
) -> Result<Option<std::io::BufWriter<std::fs::File>>, Error> {
    use crate::grains as g;
    Ok(match &cli.stats {
        Some(p) => {
            io::ensure_output_dir_of(p)?;
            io::write_stats_sidecar(p, described, &g::GrainStats::COLUMNS)?;
            let f = std::fs::File::create(p)
                .map_err(|e| Error::input(format!("cannot write --stats {}: {e}", p.display())))?;
            let mut w = std::io::BufWriter::new(f);
            use std::io::Write;
            writeln!(w, "{}", g::GrainStats::CSV_HEADER)
                .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
            Some(w)
        }
        None => None,
    })
}

/// The spheres' configuration from the command line, a fluid flag or a count past the limit
/// refused in one line.
fn grain_config(cli: &Cli) -> Result<crate::grains::GrainConfig, Error> {
    use crate::grains::GrainConfig;
    let fluid_only = super::cli::flags_in("fluid_only");
    if let Some(f) = fluid_only.iter().find(|f| cli.given.contains(f)) {
        let spheres: Vec<String> = super::cli::flags_in("grains")
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
        dim: cli.dim.unwrap_or(3),
    };
    // Bounded before anything of that size is built, as the fluid is: a count past either
    // grows memory until the process is killed.
    if cli
        .particles
        .is_some_and(|n| n > crate::core::limits::MAX_PARTICLES)
    {
        return Err(Error::LimitExceeded(format!(
            "-n {}: --model grains runs at most {} spheres at once: use fewer",
            cfg.particles,
            crate::core::limits::MAX_PARTICLES
        )));
    }
    super::fluid::probe_memory(u64::from(cfg.particles), None)?;
    Ok(cfg)
}

/// The run's last lines (or its JSON object): steps, energies, overlaps and the spheres at
/// rest; `--output` the end state.
#[allow(clippy::too_many_arguments)]
fn report(
    cli: &Cli,
    path: &dyn crate::grains::GrainPath,
    gp: &crate::grains::GrainParams,
    (spheres, noun): (usize, &str),
    done: &crate::grains::GrainRun,
    wall: f64,
    first: crate::grains::GrainStats,
    last: crate::grains::GrainStats,
    end_pos: &[glam::Vec4],
    end_vel: &[glam::Vec4],
) -> Result<(), Error> {
    use crate::grains as g;
    let rest = g::resting_overlap(end_pos, end_vel, gp)?;
    let summary = serde_json::json!({
        "model": "grains",
        "path": path.name(),
        "spheres": spheres,
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
            "{} steps ({:.4} s simulated) in {wall:.2} s on the {} path; energy {} J → {} J (peak {:.5} of the start); at the last step: kinetic energy {} J, deepest overlap {:.3}% of the smaller radius, largest speed {:.4} m/s; {} of {} {noun} at rest (< {} m/s), deepest overlap among them {:.3}%",
            done.stats.len(),
            done.time,
            path.name(),
            crate::summary::plain(first.total, 5),
            crate::summary::plain(last.total, 5),
            summary["energy_peak_over_start"].as_f64().unwrap_or(0.0),
            crate::summary::plain(last.kinetic, 4),
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
        for (p, v) in end_pos.iter().zip(end_vel) {
            text += &format!("{},{},{},{},{},{},{}\n", p.x, p.y, p.z, v.x, v.y, v.z, p.w);
        }
        std::fs::write(out, text)
            .map_err(|e| Error::input(format!("cannot write --output {}: {e}", out.display())))?;
    }
    Ok(())
}
