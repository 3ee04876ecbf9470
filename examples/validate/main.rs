//! Physical validation runs (not tests: they take minutes). Each prints its verdict, writes its
//! data and a PNG plot into `docs/`, and exits 1 when the check fails.
//!
//! ```sh
//! cargo run --release --example validate -- martin-moyce [--cpu] [-n 20000]
//! cargo run --release --example validate -- stability [--cpu] [-n 20000] [--steps 5000]
//! cargo run --release --example validate -- resolution RUN_DIR|PEER.csv...   # scripts/resolution.sh
//! cargo run --release --example validate -- standing-wave RUN_DIR...   # scripts/standing_wave.sh
//! cargo run --release --example validate -- resting-column [--nx 4] [--ny 20] [--nu 1e-6] [--alpha 0] [--slip free] [--max-dt 0.005] [--max-iterations 100] [--divergence-tolerance 0.001] [--density-tolerance 0.0001] [--relaxation 1]
//! ```
//!
//! `martin-moyce`: the default dam break (column a wide, 2a high) against Martin & Moyce
//! (1952): the surge front Z = x_front/a at T = t√(2g/a) must lie within 10% of every measured
//! point with 1 ≤ T ≤ 3. `stability`: the dam break for a number of steps with no non-finite
//! value, no particle outside the tank, and KE + PE never more than 1% above its start.
//! `resolution`: reads dam-break runs of the CLI (each directory holds `s.csv` from `--stats`
//! and frames in `f/` from `--export-dir`) and SPlisHSPlasH's (`.csv` files of
//! `../shared/peers/splishsplash_collapse.sh`), and plots every run's surge front and its column
//! height at the wall (the highest particle within a/8 of the back face, plus s/2, as the
//! peer's script measures it) against Martin & Moyce (1952), into
//! `docs/resolution_front.png`, `docs/resolution_height.png` and `docs/resolution.csv`. Prints
//! the errors, the front against a second experiment (Koshizuka & Oka 1996, into the csv too),
//! and the front read as a late start (`collapse::time_offset`: the one lag of the
//! experiment that fits best, and what is left after it); judges nothing (exit 0 unless a file
//! is bad).
//! `standing-wave`: reads runs of the first sloshing mode (`scripts/standing_wave.sh`) and
//! prints each one's period against linear theory (ω² = g k tanh(k d), k = π/L) and how much
//! of its height it keeps after one period; judges nothing. `resting-column`: a resting DFSPH
//! column with the physics given on the command line, against issue 34's bounds (see
//! `resting_column`).
//!
//! The readings live beside the tool, not in the library: `collapse.rs` (the front and the
//! column at the wall, the experiments' points) and `wave.rs` (the standing wave's elevation,
//! period and linear theory); the physics tests include them too.

mod collapse;
// `cosine_lattice` starts the physics tests' wave; the tool reads runs the scripts start.
#[allow(dead_code)]
mod wave;

use std::process::ExitCode;
use std::sync::Arc;

use gpu_sph::gpu::GpuContext;
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::grid::reorder::Particles;
use gpu_sph::params::{ConfigOverrides, FluidParams, PhysicsConfig, SphConfig};
use gpu_sph::run::{Backend, CpuSimulation, snapshot_stats as stats};
use gpu_sph::scene::{Scene, SceneKind};
use gpu_sph::solver::{Solver, SolverParams};
use plotters::prelude::*;

use collapse::{
    Column, KOSHIZUKA_OKA_FRONT, MARTIN_MOYCE_FRONT as MARTIN_MOYCE, MARTIN_MOYCE_HEIGHT,
    interpolate, time_offset, worst,
};

struct Args {
    mode: String,
    cpu: bool,
    n: usize,
    steps: u64,
}

fn args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let mode = it.next().ok_or(
        "usage: validate martin-moyce|stability [--cpu] [-n N] [--steps K], or validate resolution DIR...",
    )?;
    if mode == "resolution" || mode == "standing-wave" || mode == "resting-column" {
        return Ok(Args {
            mode,
            cpu: true,
            n: 0,
            steps: 0,
        });
    }
    let mut a = Args {
        mode,
        cpu: false,
        n: 20_000,
        steps: 5_000,
    };
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--cpu" => a.cpu = true,
            "-n" => a.n = value()?.parse().map_err(|e| format!("-n: {e}"))?,
            "--steps" => a.steps = value()?.parse().map_err(|e| format!("--steps: {e}"))?,
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(a)
}

fn dam_break(a: &Args) -> Result<(Box<dyn Backend>, FluidParams, Scene, String), String> {
    let e = |e: gpu_sph::Error| e.to_string();
    let cfg =
        SphConfig::for_solver(a.n as u32, ConfigOverrides::default(), Solver::Wcsph).map_err(e)?;
    let scene = Scene::new(SceneKind::DamBreak, a.n, cfg.spacing, 0);
    let physics = PhysicsConfig::default();
    let fp = physics
        .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
        .map_err(e)?;
    let solver =
        SolverParams::new(Solver::Wcsph, &Default::default(), &cfg, &physics).map_err(e)?;
    let state = Particles::new(scene.positions.clone(), scene.velocities.clone());
    let sp = cfg.sim_params();
    let (backend, path): (Box<dyn Backend>, String) = if a.cpu {
        (
            Box::new(CpuSimulation::with_solver(sp, fp, solver, state)),
            "CPU reference".into(),
        )
    } else {
        let ctx = Arc::new(GpuContext::new().map_err(e)?);
        let name = ctx.info.name.clone();
        (
            Box::new(Simulation::with_solver(ctx, &sp, &fp, &solver, &state).map_err(e)?),
            format!("GPU ({name})"),
        )
    };
    Ok((backend, fp, scene, path))
}

fn font() -> Result<(), String> {
    let path = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
    let bytes = std::fs::read(path)
        .map_err(|e| format!("{path}: {e} (apt-get install fonts-dejavu-core for the plot)"))?;
    plotters::style::register_font(
        "sans-serif",
        FontStyle::Normal,
        Box::leak(bytes.into_boxed_slice()),
    )
    .map_err(|_| "bad font".to_string())
}

fn martin_moyce(a: &Args) -> Result<bool, String> {
    let (mut sim, fp, scene, path) = dam_break(a)?;
    let width = scene.fluid_size.x as f64;
    let g = (fp.gravity[1] as f64).abs();
    let t_scale = (2.0 * g / width).sqrt();
    let t_end = 3.4 / t_scale;
    println!(
        "dam break on the {path}: N = {}, a = {width:.4} m, column {:.4} m high, tank {:.4} m long; running to T = 3.4 (t = {t_end:.4} s)",
        a.n,
        scene.fluid_size.y,
        scene.tank_max.x - scene.tank_min.x
    );
    let mut curve = vec![(
        0.0,
        (sim.snapshot()
            .map_err(|e| e.to_string())?
            .state
            .pos
            .iter()
            .map(|p| p.x)
            .fold(0.0, f32::max) as f64
            - scene.tank_min.x as f64)
            / width,
    )];
    let (mut t, mut step) = (0.0f64, 0u64);
    while t < t_end {
        sim.step().map_err(|e| e.to_string())?;
        step += 1;
        let snap = sim.snapshot().map_err(|e| e.to_string())?;
        t += snap.dt as f64;
        let st = stats(&snap, &fp, step, t).map_err(|e| e.to_string())?;
        curve.push((t * t_scale, (st.front - scene.tank_min.x as f64) / width));
    }
    let at =
        |big_t: f64| interpolate(&curve, big_t).ok_or(format!("the run ended before T = {big_t}"));
    println!(
        "{step} steps. {:>6} {:>8} {:>8} {:>8}",
        "T", "Z exp", "Z sim", "error"
    );
    let mut ok = true;
    let mut rows = String::from("T,Z_experiment,Z_simulation,relative_error\n");
    for &(tt, z) in &MARTIN_MOYCE {
        let zs = at(tt)?;
        let err = (zs - z) / z;
        let judged = (1.0..=3.0).contains(&tt);
        if judged && err.abs() > 0.10 {
            ok = false;
        }
        println!(
            "{tt:>6.2} {z:>8.2} {zs:>8.3} {:>+7.1}%{}",
            100.0 * err,
            if judged {
                ""
            } else {
                "  (outside 1 ≤ T ≤ 3, not judged)"
            }
        );
        rows += &format!("{tt},{z},{zs:.4},{err:.4}\n");
    }
    std::fs::write("docs/martin_moyce.csv", rows).map_err(|e| e.to_string())?;
    font()?;
    let root = BitMapBackend::new("docs/martin_moyce.png", (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!(
                "Dam break surge front, gpu-sph ({path}, N = {}) vs Martin & Moyce 1952",
                a.n
            ),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(0.0..3.5, 0.5..4.5)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("T = t sqrt(2g/a)")
        .y_desc("Z = x_front / a")
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(LineSeries::new(curve.iter().copied(), BLUE.stroke_width(2)))
        .map_err(|e| e.to_string())?
        .label("gpu-sph")
        .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLUE.stroke_width(2)));
    chart
        .draw_series(
            MARTIN_MOYCE
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 5, RED.filled())),
        )
        .map_err(|e| e.to_string())?
        .label("Martin & Moyce (1952)")
        .legend(|(x, y)| Circle::new((x + 10, y), 5, RED.filled()));
    chart
        .draw_series([1.0, 3.0].map(|x| PathElement::new(vec![(x, 0.5), (x, 4.5)], BLACK.mix(0.3))))
        .map_err(|e| e.to_string())?;
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    println!(
        "wrote docs/martin_moyce.png and docs/martin_moyce.csv; {}",
        if ok {
            "PASS: within 10% for 1 ≤ T ≤ 3"
        } else {
            "FAIL"
        }
    );
    Ok(ok)
}

fn stability(a: &Args) -> Result<bool, String> {
    let (mut sim, fp, _scene, path) = dam_break(a)?;
    let first = stats(&sim.snapshot().map_err(|e| e.to_string())?, &fp, 0, 0.0)
        .map_err(|e| e.to_string())?;
    let e0 = first.kinetic + first.potential;
    println!(
        "stability on the {path}: N = {}, {} steps, E0 = {e0:.6} J",
        a.n, a.steps
    );
    let (mut t, mut worst, mut series) = (0.0f64, 0.0f64, Vec::new());
    for step in 1..=a.steps {
        sim.step().map_err(|e| e.to_string())?;
        let snap = sim.snapshot().map_err(|e| e.to_string())?;
        t += snap.dt as f64;
        // stats() fails on a non-finite value or a particle outside the tank.
        let st = stats(&snap, &fp, step, t).map_err(|e| e.to_string())?;
        let ratio = (st.kinetic + st.potential) / e0;
        worst = worst.max(ratio);
        series.push((step as f64, ratio));
        if step % 500 == 0 {
            println!(
                "step {step}: t = {t:.4} s, (KE + PE)/E0 = {ratio:.5}, max speed {:.3} m/s, outside {}",
                st.max_speed, st.outside
            );
        }
    }
    let ok = worst <= 1.01;
    font()?;
    let root = BitMapBackend::new("docs/stability.png", (900, 500)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let lo = series.iter().map(|s| s.1).fold(1.0, f64::min) - 0.02;
    let mut chart = ChartBuilder::on(&root)
        .caption(
            format!("Dam break energy, gpu-sph ({path}, N = {})", a.n),
            ("sans-serif", 20),
        )
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(60)
        .build_cartesian_2d(0.0..a.steps as f64, lo..1.02)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc("step")
        .y_desc("(KE + PE) / E0")
        .draw()
        .map_err(|e| e.to_string())?;
    chart
        .draw_series(LineSeries::new(series, BLUE.stroke_width(2)))
        .map_err(|e| e.to_string())?;
    chart
        .draw_series([PathElement::new(
            vec![(0.0, 1.01), (a.steps as f64, 1.01)],
            RED.mix(0.6),
        )])
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())?;
    println!(
        "largest (KE + PE)/E0 = {worst:.5}; no NaN, no particle outside; wrote docs/stability.png; {}",
        if ok {
            "PASS"
        } else {
            "FAIL: energy rose more than 1%"
        }
    );
    Ok(ok)
}

/// One CLI run of the study: its label and its curves, Z(T) and η(τ).
struct Run {
    label: String,
    front: Vec<(f64, f64)>,
    height: Vec<(f64, f64)>,
    /// The front's time scale √(2g/a), 1/s: T = t · this.
    front_rate: f64,
}

/// A run's `--stats` file (`s.csv`): g from the run's parameters (its `s.params.json`), its rows
/// by column name.
struct StatsCsv {
    g: f64,
    names: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl StatsCsv {
    fn read(dir: &std::path::Path) -> Result<Self, String> {
        let path = dir.join("s.csv");
        let text =
            std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        // The run's parameters line sits in the sidecar `s.params.json` (older runs wrote it
        // as the CSV's first line, which is still read).
        let sidecar = gpu_sph::io::stats_sidecar_path(&path);
        let parameters = std::fs::read_to_string(&sidecar)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|j| j["parameters"].as_str().map(String::from))
            .unwrap_or_else(|| text.lines().next().unwrap_or_default().to_string());
        let g = parameters
            .split("g = ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|v| v.trim_end_matches(',').parse::<f64>().ok())
            .map(f64::abs)
            .ok_or(format!(
                "{}: no g in the run's parameters (nor in the first line of s.csv)",
                sidecar.display()
            ))?;
        let mut lines = text.lines().filter(|l| !l.starts_with('#'));
        let split = |l: &str| l.split(',').map(String::from).collect::<Vec<_>>();
        let names = split(lines.next().ok_or("s.csv: empty")?);
        let rows = lines.map(split).collect();
        Ok(Self { g, names, rows })
    }

    /// The values of columns `cols` in each row where all of them parse.
    fn columns<const K: usize>(&self, cols: [&str; K]) -> Result<Vec<[f64; K]>, String> {
        let mut at = [0; K];
        for (a, name) in at.iter_mut().zip(cols) {
            *a = self
                .names
                .iter()
                .position(|n| n == name)
                .ok_or(format!("s.csv: no column {name}"))?;
        }
        Ok(self
            .rows
            .iter()
            .filter_map(|r| {
                let mut v = [0.0; K];
                for (x, &c) in v.iter_mut().zip(&at) {
                    *x = r.get(c)?.parse().ok()?;
                }
                Some(v)
            })
            .collect())
    }

    /// DFSPH runs count their constant-density iterations (at least two a step); WCSPH writes 0.
    fn solver(&self) -> Result<&'static str, String> {
        let dfsph = self.columns(["iterations_d"])?.iter().any(|v| v[0] != 0.0);
        Ok(if dfsph { "DFSPH" } else { "WCSPH" })
    }
}

/// A frame's `gpu-sph KEY VALUE` comment (the CLI writes h, s, m and ρ0 into each frame).
fn frame_value(
    data: &gpu_sph::io::ParticleData,
    path: &std::path::Path,
    key: &str,
) -> Result<f64, String> {
    data.comments
        .iter()
        .find_map(|c| c.strip_prefix(&format!("gpu-sph {key} ")))
        .and_then(|v| v.parse::<f64>().ok())
        .ok_or(format!("{}: no '{key}' comment", path.display()))
}

/// The frames of a run directory (`f/frame_<step>.ply`) with their steps, in step order.
fn frames(dir: &std::path::Path) -> Result<Vec<(u64, std::path::PathBuf)>, String> {
    let mut frames = std::fs::read_dir(dir.join("f"))
        .map_err(|e| format!("{}: {e}", dir.join("f").display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "ply"))
        .map(|path| {
            path.file_stem()
                .and_then(|s| s.to_str())
                .and_then(|s| s.rsplit('_').next())
                .and_then(|s| s.parse().ok())
                .map(|step| (step, path.clone()))
                .ok_or(format!("{}: not frame_<step>.ply", path.display()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    frames.sort();
    Ok(frames)
}

/// Reads one run: a run directory of the CLI, or a `.csv` of SPlisHSPlasH's
/// (`../shared/peers/splishsplash_collapse.sh`, or `scripts/peer_collapse.sh`). Both are
/// measured alike, as the peer's script measures: from the column's back face x0 and the floor
/// y0 at the first frame (the lowest centre less s/2), the front is the largest x + s/2 and the
/// height the highest particle within a/8 of the back face + s/2; the column width a is the
/// fluid's extent in x at the first frame (centres, plus one spacing).
fn read_run(path: &std::path::Path) -> Result<Run, String> {
    if path.extension().is_some_and(|e| e == "csv") {
        return read_peer_run(path);
    }
    let dir = path;
    let stats = StatsCsv::read(dir)?;
    let g = stats.g;
    let rows = stats.columns(["step", "t", "front"])?;
    let mut column: Option<Column> = None;
    let mut label = String::new();
    let mut height = Vec::new();
    for (step, path) in frames(dir)? {
        let t = if step == 0 {
            0.0
        } else {
            match rows.iter().find(|r| r[0] as u64 == step) {
                Some(r) => r[1],
                None => continue,
            }
        };
        let data = gpu_sph::io::read_particles(&path).map_err(|e| e.to_string())?;
        let s = frame_value(&data, &path, "s")?;
        if column.is_none() {
            column = Column::of(&data.positions, s);
        }
        let c = column.ok_or(format!("{}: no particles", path.display()))?;
        if label.is_empty() {
            label = format!("N = {}, s = {:.2} mm", data.positions.len(), 1e3 * s);
        }
        height.extend(c.height(t, &data.positions, g));
    }
    let c = column.ok_or(format!("{}: no frames", dir.display()))?;
    let front = rows.iter().map(|r| c.front(r[1], r[2], g)).collect();
    Ok(Run {
        label: format!("{}, {label}", stats.solver()?),
        front,
        height,
        front_rate: (2.0 * g / c.a).sqrt(),
    })
}

/// SPlisHSPlasH's collapse CSV (`t,front,height` in metres from the column's back face and
/// floor, as [`read_run`] measures ours), its column width a its first front, g = 9.81 m/s²
/// (the peer's scene).
fn read_peer_run(path: &std::path::Path) -> Result<Run, String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut lines = text.lines();
    if lines.next() != Some("t,front,height") {
        return Err("not a collapse CSV of SPlisHSPlasH (its header is t,front,height)".into());
    }
    let rows = lines
        .map(|l| {
            let v: Vec<f64> = l.split(',').filter_map(|x| x.parse().ok()).collect();
            <[f64; 3]>::try_from(v).map_err(|_| format!("bad row '{l}'"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let width = rows.first().ok_or("no rows")?[1];
    let g = 9.81;
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("peer");
    Ok(Run {
        label: format!("SPlisHSPlasH ({stem})"),
        front: rows
            .iter()
            .map(|r| (r[0] * (2.0 * g / width).sqrt(), r[1] / width))
            .collect(),
        height: rows
            .iter()
            .map(|r| (r[0] * (g / width).sqrt(), r[2] / (2.0 * width)))
            .collect(),
        front_rate: (2.0 * g / width).sqrt(),
    })
}

/// Draws every run's curve of `pick` against the measured points, into `file`.
#[allow(clippy::too_many_arguments)]
fn plot_runs(
    runs: &[Run],
    pick: fn(&Run) -> &[(f64, f64)],
    measured: &[(f64, f64)],
    file: &str,
    caption: &str,
    x_desc: &str,
    y_desc: &str,
    ranges: (std::ops::Range<f64>, std::ops::Range<f64>),
    legend: SeriesLabelPosition,
) -> Result<(), String> {
    let root = BitMapBackend::new(file, (900, 600)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 20))
        .margin(15)
        .x_label_area_size(45)
        .y_label_area_size(55)
        .build_cartesian_2d(ranges.0, ranges.1)
        .map_err(|e| e.to_string())?;
    chart
        .configure_mesh()
        .x_desc(x_desc)
        .y_desc(y_desc)
        .draw()
        .map_err(|e| e.to_string())?;
    let (mut ours, mut peers) = (0, 0);
    for run in runs {
        // The reference's runs in greys, ours in colours: the two codes read apart at a glance.
        let colour = if run.label.starts_with("SPlisHSPlasH") {
            peers += 1;
            [
                RGBColor(0, 0, 0),
                RGBColor(100, 100, 100),
                RGBColor(170, 170, 170),
            ][(peers - 1) % 3]
                .to_rgba()
        } else {
            ours += 1;
            [RED, BLUE, GREEN, MAGENTA, CYAN, RGBColor(230, 140, 0)][(ours - 1) % 6].to_rgba()
        };
        // WCSPH solid, DFSPH dashed-looking (thinner), so the solvers read apart.
        let width = if run.label.starts_with("WCSPH") { 2 } else { 1 };
        chart
            .draw_series(LineSeries::new(
                pick(run).iter().copied(),
                colour.stroke_width(width),
            ))
            .map_err(|e| e.to_string())?
            .label(run.label.clone())
            .legend(move |(x, y)| {
                PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(width))
            });
    }
    chart
        .draw_series(
            measured
                .iter()
                .map(|&(x, y)| Circle::new((x, y), 5, BLACK.filled())),
        )
        .map_err(|e| e.to_string())?
        .label("Martin & Moyce (1952)")
        .legend(|(x, y)| Circle::new((x + 10, y), 5, BLACK.filled()));
    chart
        .configure_series_labels()
        .background_style(WHITE)
        .border_style(BLACK)
        .position(legend)
        .draw()
        .map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

fn resolution(dirs: &[String]) -> Result<bool, String> {
    if dirs.is_empty() {
        return Err("resolution needs run directories (scripts/resolution.sh makes them)".into());
    }
    let runs = dirs
        .iter()
        .map(|d| read_run(std::path::Path::new(d)).map_err(|e| format!("{d}: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let mut csv = String::from("run,quantity,x,measured,simulated,relative_error\n");
    for run in &runs {
        println!(
            "{} (front to T = {:.2}):",
            run.label,
            run.front.last().map_or(0.0, |p| p.0)
        );
        for (name, curve, data) in [
            ("front Z(T)", &run.front, &MARTIN_MOYCE[..]),
            ("height eta(tau)", &run.height, &MARTIN_MOYCE_HEIGHT[..]),
            // Koshizuka & Oka's column is 0.146 m wide against ours 0.22 m: Froude scaling
            // makes Z(T) the same for both, surface tension and viscosity aside. Their first
            // point is the start, Z = 1 at T = 0, which no run's curve is read at.
            (
                "front Z(T), Koshizuka & Oka",
                &run.front,
                &KOSHIZUKA_OKA_FRONT[1..],
            ),
        ] {
            let mut line = format!("  {name}:");
            for &(x, m) in data {
                if let Some(v) = interpolate(curve, x) {
                    let e = (v - m) / m;
                    line += &format!(" {x:.2}:{:+.1}%", 100.0 * e);
                    csv += &format!("\"{}\",{name},{x},{m},{v:.4},{e:.4}\n", run.label);
                }
            }
            println!("{line}");
        }
        if let Some((x, e)) = worst(&run.front, &KOSHIZUKA_OKA_FRONT, 1.4, 3.0) {
            println!(
                "  front against Koshizuka & Oka, worst for 1.4 <= T <= 3: {:+.1}% at T = {x:.2}",
                100.0 * e
            );
        }
        if let Some(o) = time_offset(&run.front, &MARTIN_MOYCE, 1.4, 3.0) {
            println!(
                "  front read as a late start, 1.4 <= T <= 3: the experiment trails by T = {:.3} \
                 ({:.1} ms), then worst {:+.1}% at T = {:.2}, rms {:.1}%",
                o.lag,
                1e3 * o.lag / run.front_rate,
                100.0 * o.worst.1,
                o.worst.0,
                100.0 * o.rms
            );
        }
    }
    std::fs::write("docs/resolution.csv", csv).map_err(|e| e.to_string())?;
    font()?;
    plot_runs(
        &runs,
        |r| &r.front,
        &MARTIN_MOYCE,
        "docs/resolution_front.png",
        "Dam break surge front by resolution (gpu-sph a = 0.22 m; SPlisHSPlasH grey)",
        "T = t sqrt(2g/a)",
        "Z = x_front / a",
        (0.0..3.5, 0.9..4.5),
        // The fronts rise to the right: the upper left is empty.
        SeriesLabelPosition::UpperLeft,
    )?;
    plot_runs(
        &runs,
        |r| &r.height,
        &MARTIN_MOYCE_HEIGHT,
        "docs/resolution_height.png",
        "Dam break column height at the wall (gpu-sph a = 0.22 m; SPlisHSPlasH grey)",
        "tau = t sqrt(g/a)",
        "eta = H / 2a",
        (0.0..3.6, 0.0..1.05),
        // The heights fall from the upper left, where the legend hid their start.
        SeriesLabelPosition::LowerLeft,
    )?;
    println!("wrote docs/resolution_front.png, docs/resolution_height.png, docs/resolution.csv");
    Ok(true)
}

/// One standing-wave run: half the difference of the surface heights at the two end walls
/// (the highest particle within h of each), against simulated time. At the first mode the
/// surface is η(x, t) = A cos(πx/L) cos(ωt), so this is A cos(ωt), with the particles' height
/// offset (about s/2 under the surface) the same at both walls and cancelled.
struct Wave {
    label: String,
    /// (t, half the height difference), m.
    eta: Vec<(f64, f64)>,
    /// Tank length L, fluid depth d, m; gravity, m/s².
    length: f64,
    depth: f64,
    g: f64,
}

fn read_wave(dir: &std::path::Path) -> Result<Wave, String> {
    let stats = StatsCsv::read(dir)?;
    let times: std::collections::HashMap<u64, f64> = stats
        .columns(["step", "t"])?
        .iter()
        .map(|r| (r[0] as u64, r[1]))
        .collect();
    let solver = stats.solver()?;
    let (mut eta, mut geometry, mut label) = (Vec::new(), None, String::new());
    for (step, path) in frames(dir)? {
        let t = match (step, times.get(&step)) {
            (0, _) => 0.0,
            (_, Some(&t)) => t,
            _ => continue,
        };
        let data = gpu_sph::io::read_particles(&path).map_err(|e| e.to_string())?;
        let h = frame_value(&data, &path, "h")?;
        // The tank spans the first frame's fluid in x (to within s/2 of each wall): L and the
        // mean depth d (the cosine's mean is zero) come from it.
        let (lo, hi) = data
            .positions
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), p| {
                (a.min(p.x as f64), b.max(p.x as f64))
            });
        let &mut (x0, x1, _) = geometry.get_or_insert_with(|| {
            let s = data
                .comments
                .iter()
                .find_map(|c| c.strip_prefix("gpu-sph s "))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0);
            (lo - 0.5 * s, hi + 0.5 * s, s)
        });
        let Some(e) = wave::end_wall_elevation(&data.positions, x0 as f32, x1 as f32, h as f32)
        else {
            return Err(format!(
                "{}: no particle within h of an end wall",
                path.display()
            ));
        };
        if label.is_empty() {
            label = format!("{solver}, N = {}", data.positions.len());
        }
        eta.push((t, e));
    }
    let (x0, x1, s) = geometry.ok_or(format!("{}: no frames", dir.display()))?;
    let path0 = dir.join("f").join("frame_000000.ply");
    let first =
        gpu_sph::io::read_particles(&path0).map_err(|e| format!("{}: {e}", path0.display()))?;
    // Volume over the footprint: particles × s³ / (L × W), W from the first frame's extent in z.
    let (zlo, zhi) = first
        .positions
        .iter()
        .fold((f64::MAX, f64::MIN), |(a, b), p| {
            (a.min(p.z as f64), b.max(p.z as f64))
        });
    let width = zhi - zlo + s;
    let depth = first.positions.len() as f64 * s * s * s / ((x1 - x0) * width);
    Ok(Wave {
        label,
        eta,
        length: x1 - x0,
        depth,
        g: stats.g,
    })
}

/// `standing-wave DIR...`: the first sloshing mode (scripts/standing_wave.sh makes the runs).
/// Per run: the period from the zero crossings of the end walls' height difference (the
/// first and third: one period) against linear theory ω² = g k tanh(k d), k = π/L, and the
/// part of the start amplitude the wave keeps after one period (its largest value between
/// the second and third crossings over its value at t = 0). Judges nothing.
fn standing_wave(dirs: &[String]) -> Result<bool, String> {
    if dirs.is_empty() {
        return Err(
            "standing-wave needs run directories (scripts/standing_wave.sh makes them)".into(),
        );
    }
    for d in dirs {
        let w = read_wave(std::path::Path::new(d)).map_err(|e| format!("{d}: {e}"))?;
        let period = wave::linear_period(w.length, w.depth, w.g);
        let a0 = w.eta.first().map_or(0.0, |p| p.1);
        let m = wave::measure(&w.eta);
        let (measured, kept) = (m.map(|m| m.period), m.map(|m| m.kept));
        println!(
            "{d}: {}; L = {:.3} m, d = {:.4} m, A0 = {:.4} m; linear period {:.4} s, measured {}; kept after one period {}",
            w.label,
            w.length,
            w.depth,
            a0,
            period,
            measured.map_or("(fewer than three zero crossings)".into(), |p| format!(
                "{p:.4} s ({:+.1}%)",
                100.0 * (p / period - 1.0)
            )),
            kept.map_or("-".into(), |k| format!("{:.0}%", 100.0 * k))
        );
        let series: Vec<String> = w
            .eta
            .iter()
            .map(|(t, e)| format!("{t:.4}:{:.4}", e / a0))
            .collect();
        println!("  eta/A0 by t: {}", series.join(" "));
    }
    Ok(true)
}

/// A resting `nx × ny × nx` DFSPH column in a tank of its own cross-section for 3 s on the CPU
/// path, as `tests/suite/physics.rs`'s `dfsph_column_rests` runs it but with the physics from the
/// command line (`--nx 4 --ny 20 --nu 1e-3 --alpha 0 --slip free --max-dt 0.005
/// --relaxation 0.8 --max-iterations 100 --divergence-tolerance 0.001 --density-tolerance
/// 0.0001`, these the defaults, DFSPH's as a run has them): prints the density error, the step, the fastest particle (where it is) and the
/// rms speed every 0.25 s, then the worst of each against issue 34's bounds (density
/// error mean ≤ 0.1% and max ≤ 1% at every step, speed below 1% of √(gH) over the last 0.5 s).
/// Exit 1 when a bound fails.
fn resting_column(rest: &[String]) -> Result<bool, String> {
    use gpu_sph::params::{DfsphConfig, parse_slip_length};
    use gpu_sph::solver::Solver;
    use gpu_sph::solver::dfsph::{DfsphCarry, dfsph_step};
    let (mut nx, mut ny) = (4u32, 20u32);
    let mut solver = DfsphConfig::default();
    let mut physics = PhysicsConfig::default();
    let mut it = rest.iter();
    while let Some(flag) = it.next() {
        let value = it.next().ok_or(format!("{flag} needs a value"))?;
        let num = |v: &str| v.parse::<f32>().map_err(|e| format!("{flag} {v}: {e}"));
        match flag.as_str() {
            "--nx" => nx = num(value)? as u32,
            "--ny" => ny = num(value)? as u32,
            "--nu" => physics.kinematic_viscosity = Some(num(value)?),
            "--alpha" => physics.alpha = num(value)?,
            "--slip" => {
                let b = parse_slip_length(value)
                    .ok_or(format!("--slip {value}: a length in metres or free"))?;
                physics.wall_slip_length = Some(b);
            }
            "--max-dt" => physics.dt_max = num(value)?,
            "--max-iterations" => solver.max_iterations = num(value)? as u32,
            "--divergence-tolerance" => solver.divergence_tolerance = num(value)?,
            "--density-tolerance" => solver.density_tolerance = num(value)?,
            "--relaxation" => solver.relaxation = Some(num(value)?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    let n = nx * ny * nx;
    let cfg = SphConfig::for_solver(n, ConfigOverrides::default(), Solver::Dfsph)
        .map_err(|e| e.to_string())?;
    let s = cfg.spacing;
    let mut pos = Vec::with_capacity(n as usize);
    for j in 0..ny {
        for k in 0..nx {
            for i in 0..nx {
                pos.push((glam::Vec3::new(i as f32, j as f32, k as f32) + 0.5) * s);
            }
        }
    }
    let height = ny as f32 * s;
    let tank_max = glam::Vec3::new(nx as f32 * s, 2.0 * height, nx as f32 * s);
    let fp = physics
        .fluid_params(&cfg, glam::Vec3::ZERO, tank_max, height)
        .map_err(|e| e.to_string())?;
    let dp = solver.params(&cfg, &physics).map_err(|e| e.to_string())?;
    let sp = cfg.sim_params();
    let mut state = Particles::new(pos, vec![glam::Vec3::ZERO; n as usize]);
    let mut carry = DfsphCarry::new(&dp);
    let mut start = None;
    let (mut t, mut next_print, mut steps, mut iterations) = (0.0f64, 0.0f64, 0u64, 0u64);
    let (mut worst_mean, mut worst_max, mut late) = (0.0f32, 0.0f32, 0.0f32);
    while t < 3.0 {
        let tr = dfsph_step(false, &state, &carry, start.take(), None, &sp, &fp, &dp);
        t += tr.stats.dt as f64;
        steps += 1;
        iterations += tr.stats.iterations_d as u64;
        worst_mean = worst_mean.max(tr.stats.error_mean);
        worst_max = worst_max.max(tr.stats.error_max);
        let (fastest, v) = tr
            .next
            .vel
            .iter()
            .map(|v| v.length())
            .enumerate()
            .fold((0, 0.0f32), |a, (k, v)| if v > a.1 { (k, v) } else { a });
        let rms = (tr.next.vel.iter().map(|v| v.length_squared()).sum::<f32>() / n as f32).sqrt();
        if !v.is_finite() {
            return Err(format!("t = {t:.3} s: a velocity is not finite"));
        }
        if t >= 2.5 {
            late = late.max(v);
        }
        if t >= next_print {
            next_print += 0.25;
            println!(
                "t {t:.3} s: dt {:.2} ms, {} iterations, density error mean {:.4}% max {:.3}%, fastest {v:.4} m/s at {:.3}, rms {rms:.4} m/s",
                1e3 * tr.stats.dt,
                tr.stats.iterations_d,
                100.0 * tr.stats.error_mean,
                100.0 * tr.stats.error_max,
                tr.next.pos[fastest]
            );
        }
        state = tr.next.clone();
        carry = tr.carry;
        start = Some((tr.next_grid.clone(), tr.next_sorted.clone(), tr.end.clone()));
    }
    let limit = 0.01 * (9.81 * height).sqrt();
    let ok = worst_mean <= 1e-3 && worst_max <= 1e-2 && late < limit;
    println!(
        "{nx} x {ny} x {nx}, {steps} steps, {:.1} iterations a step: worst density error mean {:.4}% max {:.3}%, fastest over the last 0.5 s {late:.4} m/s (limit {limit:.4}): {}",
        iterations as f64 / steps as f64,
        100.0 * worst_mean,
        100.0 * worst_max,
        if ok { "PASS" } else { "FAIL" }
    );
    Ok(ok)
}

fn main() -> ExitCode {
    // As in gpu-sph's own main: a reader that has gone (`validate … | head -3`) ends the
    // process quietly at its next write instead of a panic on a failed print.
    #[cfg(unix)]
    // SAFETY: the first call in main, before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let rest: Vec<String> = std::env::args().skip(2).collect();
    let result = args().and_then(|a| match a.mode.as_str() {
        "martin-moyce" => martin_moyce(&a),
        "stability" => stability(&a),
        "resolution" => resolution(&rest),
        "standing-wave" => standing_wave(&rest),
        "resting-column" => resting_column(&rest),
        other => Err(format!(
            "unknown mode {other}: martin-moyce, stability, resolution, standing-wave or resting-column"
        )),
    });
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("validate: {e}");
            ExitCode::from(2)
        }
    }
}
