//! Two-dimensional runs (`--dim 2`): every stage bit for bit under `--verify`, the 2D dam
//! break against Martin & Moyce, a resting tank's hydrostatic pressure, a standing wave's
//! period against linear theory, and the refusals of what a 2D run does not take.

use crate::common;
use crate::physics::{headless_cpu, rest_limit};

use common::cli::{assert_usage_error, file, run};
use common::hydro::layer_slope;
use glam::Vec3;
use gpu_sph::params::{ConfigOverrides, PhysicsConfig};
use gpu_sph::run::{Backend, snapshot_stats as stats};
use gpu_sph::setup::Source;
use gpu_sph::solver::Solver;

const SOLVERS: [Solver; 2] = [Solver::Dfsph, Solver::Wcsph];

fn planar(spacing: f32) -> ConfigOverrides {
    ConfigOverrides {
        spacing: Some(spacing),
        dim: Some(2),
        ..Default::default()
    }
}

/// Both solvers' every stage, GPU against the CPU mirror, bit for bit in the plane: the
/// 9-cell walk, the 2D kernel and the tank's walls with the z walls out of reach.
#[test]
fn planar_runs_every_stage_bit_for_bit_under_both_solvers() {
    for solver in ["dfsph", "wcsph"] {
        let out = run(&[
            "--headless",
            "--verify",
            "--dim",
            "2",
            "--solver",
            solver,
            "-n",
            "3000",
            "--steps",
            "3",
            "--tolerance",
            common::verify_tolerance(),
            "--json",
        ]);
        if common::cli::skipped_without_gpu(&out) {
            continue;
        }
        assert_eq!(
            out.status.code(),
            Some(0),
            "{solver}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["pass"], true, "{solver}");
    }
}

/// The 2D dam break (a column a = 0.2 m wide and 2a high in a tank 5a long) at `n` particles
/// at spacing `s` ([`crate::physics::collapse_against_martin_moyce`], the front over
/// 1.8 ≤ T ≤ 3): its front and column errors. Every particle stays in the plane.
fn dam_break_2d(solver: Solver, n: u32, s: f32) -> (f64, f64) {
    let (f, h, column, end) =
        crate::physics::collapse_against_martin_moyce(solver, n, planar(s), 1.8);
    assert!((column.a - 0.2).abs() < 1e-4, "a = {}", column.a);
    assert!(end.iter().all(|p| p.z == 0.0));
    (f, h)
}

/// The 2D collapse at 20 and 40 particles across the column, both solvers: the column at the
/// back wall within 10% of Martin & Moyce over 0.5 ≤ τ ≤ 3 (measured within −4.0 … +6.6%).
/// The front leads the experiment by 8–15% over 1.8 ≤ T ≤ 3 (the same lead as in 3D and as
/// SPlisHSPlasH's: read as a late start of the experiment, ΔT = 0.21–0.25, it is within 2%,
/// docs/results.md), so the front's bound here is a guard, 20%, not the experiment's 10%.
#[test]
fn planar_dam_break_column_falls_as_the_experiment_did() {
    for solver in SOLVERS {
        for (n, s) in [(800, 0.01), (3200, 0.005)] {
            let (front, column) = dam_break_2d(solver, n, s);
            assert!(
                column.abs() <= 0.10,
                "{solver:?} {n}: column {:+.1}%",
                100.0 * column
            );
            assert!(
                front.abs() <= 0.20,
                "{solver:?} {n}: front {:+.1}%",
                100.0 * front
            );
        }
    }
}

/// A 2D tank of water at rest, 40 particles wide and 30 deep at s = 10 mm, 3 s: it comes to
/// rest (largest speed over the last 0.5 s below 1% of √(gH)) and its pressure rises with
/// depth at ρ0 g within 10%, more than 2h below the surface: WCSPH's Tait pressure from the
/// hydrostatic start, DFSPH's implied pressure ρ_i Σκ_i from the lattice. The square lattice
/// is not the plane's resting packing: between 0.7 and 1.6 s both solvers' water rearranges
/// (largest speeds 0.06 m/s), and then settles (measured with `--stats`, docs/results.md).
#[test]
fn planar_resting_tank_comes_to_rest_with_hydrostatic_pressure() {
    use gpu_sph::grid::reorder::Particles;
    use gpu_sph::solver::dfsph::{implied_pressure, tait};
    let s = 0.01f32;
    let (nx, ny) = (40u32, 30u32);
    let positions: Vec<Vec3> = (0..ny)
        .flat_map(|j| {
            (0..nx).map(move |i| Vec3::new((i as f32 + 0.5) * s, (j as f32 + 0.5) * s, 0.0))
        })
        .collect();
    let n = positions.len();
    let height = ny as f32 * s;
    let limit = rest_limit(height);
    let hydrostatic =
        |solver: Solver, samples: Vec<(f64, f64)>, cfg: &gpu_sph::params::SphConfig| {
            let (slope, layers) = layer_slope(samples, s as f64, 2.0 * cfg.smoothing_radius as f64);
            let want = cfg.rest_density as f64 * 9.81;
            eprintln!(
                "{solver:?} 2D tank: dp/dd = {slope:.1} Pa/m over {layers} layers, ρ0 g = {want:.1}"
            );
            assert!(layers >= 10, "only {layers} layers");
            assert!(
                (slope - want).abs() <= 0.10 * want,
                "{solver:?}: dp/dd = {slope:.1} Pa/m, hydrostatic {want:.1}"
            );
        };
    // WCSPH, set up as a headless run of a particle file in the plane.
    let physics = PhysicsConfig {
        hydrostatic_start: true,
        ..Default::default()
    };
    let source = Source::Particles {
        name: "2D tank".into(),
        positions: positions.clone(),
        velocities: vec![Vec3::ZERO; n],
    };
    let tank = Some((Vec3::ZERO, Vec3::new(nx as f32 * s, 2.0 * height, 0.0)));
    let (mut sim, cfg, fp) =
        headless_cpu(source, n as u32, planar(s), physics, Solver::Wcsph, tank);
    let (mut t, mut late) = (0.0f64, 0.0f32);
    while t < 3.0 {
        sim.step().unwrap();
        t += sim.current().dt as f64;
        if t > 2.5 {
            let v = sim
                .current()
                .state
                .vel
                .iter()
                .map(|v| v.length())
                .fold(0.0, f32::max);
            late = late.max(v);
        }
    }
    eprintln!("WCSPH 2D tank: late speed {late:.4} m/s (limit {limit:.4})");
    assert!((late as f64) < limit, "WCSPH: still moving at {late} m/s");
    let snap = sim.current();
    assert_eq!(stats(snap, &fp, 0, t).unwrap().outside, 0);
    let top = snap.state.pos.iter().map(|p| p.y).fold(f32::MIN, f32::max) + 0.5 * s;
    let samples = (snap.state.pos.iter().zip(&snap.density))
        .map(|(p, &r)| ((top - p.y) as f64, tait(r, &fp) as f64))
        .collect();
    hydrostatic(Solver::Wcsph, samples, &cfg);
    // DFSPH, stepped directly for its implied pressure.
    let physics = PhysicsConfig::default();
    let cfg = gpu_sph::params::SphConfig::for_solver(n as u32, planar(s), Solver::Dfsph).unwrap();
    let h = cfg.smoothing_radius;
    let fp = physics
        .fluid_params(
            &cfg,
            Vec3::new(0.0, 0.0, -h),
            Vec3::new(nx as f32 * s, 2.0 * height, h),
            height,
        )
        .unwrap();
    let state = Particles::new(positions, vec![Vec3::ZERO; n]);
    let (mut late, mut last) = (0.0f32, None);
    crate::physics::dfsph_run(state, &cfg, &fp, &physics, 2.0, |t, tr| {
        assert!(
            tr.next.pos.iter().all(|p| p.z == 0.0),
            "t = {t:.3}: off the plane"
        );
        if t > 1.5 {
            let v = tr.next.vel.iter().map(|v| v.length()).fold(0.0, f32::max);
            late = late.max(v);
        }
        last = Some(tr.clone());
    });
    eprintln!("DFSPH 2D tank: late speed {late:.4} m/s (limit {limit:.4})");
    assert!((late as f64) < limit, "DFSPH: still moving at {late} m/s");
    let tr = last.unwrap();
    let p = implied_pressure(&tr.start.density, &tr.density.kappa_sum);
    let top = tr.sorted.pos.iter().map(|x| x.y).fold(f32::MIN, f32::max) + 0.5 * s;
    let samples = (tr.sorted.pos.iter().zip(&p))
        .map(|(x, &pk)| ((top - x.y) as f64, pk as f64))
        .collect();
    hydrostatic(Solver::Dfsph, samples, &cfg);
}

/// The first sloshing mode in 2D: a tank 0.6 m long with 0.2 m of water, its surface started
/// at rest at a 2 cm cosine, s = 10 mm (1 200 particles), both solvers: the period within 5% of
/// linear theory, ω² = g k tanh(k d).
#[test]
fn planar_standing_wave_keeps_its_period() {
    use crate::wave;
    let (s, length, depth) = (0.01f32, 0.6f32, 0.2f32);
    let positions: Vec<Vec3> = wave::cosine_lattice(s, length, s, depth, 0.02)
        .into_iter()
        .map(|p| p.with_z(0.0))
        .collect();
    for solver in SOLVERS {
        let n = positions.len();
        let physics = PhysicsConfig {
            hydrostatic_start: solver == Solver::Wcsph,
            ..Default::default()
        };
        let source = Source::Particles {
            name: "2D standing wave".into(),
            velocities: vec![Vec3::ZERO; n],
            positions: positions.clone(),
        };
        let tank = Some((Vec3::ZERO, Vec3::new(length, 0.4, 0.0)));
        let (mut sim, cfg, _) = headless_cpu(source, n as u32, planar(s), physics, solver, tank);
        let h = cfg.smoothing_radius;
        let elevation = |pos: &[Vec3]| wave::end_wall_elevation(pos, 0.0, length, h).unwrap();
        let mut eta = vec![(0.0, elevation(&sim.current().state.pos))];
        let mut t = 0.0f64;
        let measured = loop {
            sim.step().unwrap();
            t += sim.current().dt as f64;
            eta.push((t, elevation(&sim.current().state.pos)));
            if let Some(m) = wave::measure(&eta) {
                break m;
            }
            assert!(t < 2.0, "{solver:?}: no period by t = 2 s");
        };
        let theory = wave::linear_period(length as f64, depth as f64, 9.81);
        let error = measured.period / theory - 1.0;
        eprintln!(
            "{solver:?} 2D standing wave: period {:.4} s against {theory:.4} s ({:+.1}%), {:.0}% of the height kept",
            measured.period,
            100.0 * error,
            100.0 * measured.kept
        );
        assert!(
            error.abs() <= 0.05,
            "{solver:?}: period {:+.1}%",
            100.0 * error
        );
    }
}

/// What a 2D run does not take is refused in one line naming the fix.
#[test]
fn planar_refusals_name_the_fix() {
    let base = ["--headless", "--cpu", "--end-time", "0.001"];
    fn with<'a>(base: &[&'a str], extra: &[&'a str]) -> Vec<&'a str> {
        [base, extra].concat()
    }
    assert_usage_error(&with(&base, &["--dim", "4"]), "--dim must be 2 or 3");
    assert_usage_error(
        &with(&base, &["--dim", "2", "--scene", "random"]),
        "scene random has no 2D form",
    );
    assert_usage_error(
        &with(&base, &["--dim", "2", "--viscosity", "0.1"]),
        "--kinematic-viscosity",
    );
    let off = file("off.csv", b"x,y,z\n0.1,0.1,0\n0.11,0.1,0.005\n0.12,0.1,0\n");
    assert_usage_error(
        &with(
            &base,
            &[
                "--dim",
                "2",
                "--input",
                off.to_str().unwrap(),
                "--spacing",
                "0.01",
            ],
        ),
        "data row 2 (particle 1) lies at z = 0.005 off the plane",
    );
    let scene = file(
        "s.json",
        gpu_sph::scene::SceneKind::Cube.file_text().as_bytes(),
    );
    assert_usage_error(
        &with(&base, &["--dim", "2", "--scene", scene.to_str().unwrap()]),
        "fluid[0] does not cross the plane z = 0",
    );
    let obstacle = file(
        "o.json",
        br#"{"tank": {"min": [0, 0, 0], "max": [1, 1, 0.2]},
            "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.2, 0.4, 0.2]}}}],
            "obstacles": [{"shape": {"sphere": {"centre": [0.6, 0.1, 0.1], "radius": 0.05}}}]}"#,
    );
    assert_usage_error(
        &with(
            &base,
            &["--dim", "2", "--scene", obstacle.to_str().unwrap()],
        ),
        "obstacles[0] does not cross the plane z = 0",
    );
}

/// A scene file runs in 2D as its section by the plane z = 0 (`physics.dim` in the file, as
/// the flag): a box's rectangle and a ball's disc, each a lattice of one layer at z = 0, with
/// the counts of those sections.
#[test]
fn a_scene_file_runs_as_its_section_by_the_plane() {
    use common::cli::{run_ok, tmp_dir};
    let scene = file(
        "plane.json",
        br#"{"tank": {"min": [0, 0, -0.5], "max": [1, 0.6, 0.5]},
            "fluid": [{"shape": {"box": {"min": [0, 0, -0.1], "max": [0.2, 0.4, 0.3]}}},
                      {"shape": {"sphere": {"centre": [0.6, 0.2, 0.05], "radius": 0.1}}}],
            "physics": {"dim": 2, "spacing": 0.01}}"#,
    );
    let out = tmp_dir().join("plane.csv");
    run_ok(&[
        "--headless",
        "--cpu",
        "--scene",
        scene.to_str().unwrap(),
        "--steps",
        "5",
        "--output",
        out.to_str().unwrap(),
    ]);
    let (header, rows) = common::cli::stats_rows(&out);
    let z = header.iter().position(|c| c == "z").unwrap();
    assert!(rows.iter().all(|r| r[z] == 0.0));
    // 20 × 40 for the rectangle; the disc of radius √(0.1² − 0.05²) = 86.6 mm holds the
    // lattice points within it, about π r²/s² = 236.
    let disc = rows.len() - 800;
    assert!((200..=260).contains(&disc), "{} particles", rows.len());
}

/// `--print-scene NAME --dim 2` prints the file of the 2D scene `--dim 2 --scene NAME` runs
/// (its physics saying `"dim": 2`): run as `--scene FILE`, it ends in the same bytes.
#[test]
fn a_printed_2d_scene_runs_as_the_built_in_one() {
    use common::cli::{run_ok, tmp_dir};
    let sized = ["-n", "800", "--spacing", "0.01"];
    let text = run_ok(&[&["--print-scene", "drop", "--dim", "2"][..], &sized].concat()).stdout;
    let value: serde_json::Value = serde_json::from_slice(&text).unwrap();
    assert_eq!(value["physics"]["dim"], 2);
    let scene = file("drop2d.json", &text);
    let dir = tmp_dir();
    let (a, b) = (dir.join("file.csv"), dir.join("builtin.csv"));
    let base = ["--headless", "--cpu", "--steps", "10"];
    let from_file = [
        "--scene",
        scene.to_str().unwrap(),
        "--output",
        a.to_str().unwrap(),
    ];
    run_ok(&[&base[..], &from_file].concat());
    let builtin = [
        "--dim",
        "2",
        "--scene",
        "drop",
        "--output",
        b.to_str().unwrap(),
    ];
    run_ok(&[&base[..], &builtin, &sized].concat());
    assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    assert_usage_error(
        &["--print-scene", "random", "--dim", "2"],
        "scene random has no 2D form",
    );
}

/// A 2D run's checkpoint holds its dimension: 20 steps resumed after 20 give the file 40 steps
/// give, bit for bit, and `--dim` may not change on resume.
#[test]
fn planar_checkpoints_resume_in_the_same_bits() {
    use common::cli::{run_ok, tmp_dir};
    let dir = tmp_dir();
    let (ck, full, resumed) = (dir.join("ck"), dir.join("full.csv"), dir.join("res.csv"));
    let base = ["--headless", "--cpu", "--dim", "2", "-n", "1000"];
    run_ok(
        &[
            &base[..],
            &["--steps", "40", "--checkpoint-every", "20"],
            &["--checkpoint-dir", ck.to_str().unwrap()],
            &["--output", full.to_str().unwrap()],
        ]
        .concat(),
    );
    let from = ck.join("checkpoint_000000020.gpusph");
    let from = from.to_str().unwrap();
    run_ok(&[
        "--headless",
        "--cpu",
        "--resume",
        from,
        "--steps",
        "20",
        "--output",
        resumed.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(&full).unwrap(),
        std::fs::read(&resumed).unwrap()
    );
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--resume",
            from,
            "--steps",
            "1",
            "--dim",
            "3",
        ],
        "--dim cannot change on --resume",
    );
}

/// A 2D run's surface meshes are its free surface's contour: closed lines written as ribbons
/// one spacing deep (two vertices a point, two triangles a segment), around the column.
#[test]
fn a_2d_runs_surface_is_its_outline_as_a_ribbon() {
    use common::cli::{run_ok, tmp_dir};
    let dir = tmp_dir().join("surfaces2d");
    let d = dir.to_str().unwrap();
    let base = [
        "--headless",
        "--cpu",
        "--dim",
        "2",
        "-n",
        "800",
        "--spacing",
        "0.01",
    ];
    let more = ["--steps", "10", "--surface-dir", d, "--surface-every", "10"];
    run_ok(&[&base[..], &more].concat());
    let mesh = gpu_sph::surface::read_mesh(&dir.join("surface_000010.obj")).unwrap();
    assert!(!mesh.vertices.is_empty());
    assert!(mesh.vertices.iter().all(|v| v.z.abs() == 0.005));
    assert_eq!(mesh.triangles.len(), mesh.vertices.len());
    // The column is 0.2 m wide and 0.4 m high from the floor.
    let top = mesh.vertices.iter().map(|v| v.y).fold(f32::MIN, f32::max);
    let right = mesh.vertices.iter().map(|v| v.x).fold(f32::MIN, f32::max);
    assert!(
        (top - 0.4).abs() < 0.01 && (right - 0.2).abs() < 0.015,
        "{top} {right}"
    );
}

/// A 2D scene with obstacles: a still disc (a cylinder along z) on the floor and a piston
/// moving along x, each its section's outline of boundary particles. Every stage bit for bit
/// under both solvers, and the collapsing column flows around the disc without entering it,
/// in its plane.
#[test]
fn planar_obstacles_are_bit_exact_and_keep_the_water_out() {
    use common::cli::{run_ok, tmp_dir};
    const SCENE: &[u8] = br#"{"tank": {"min": [0, 0, -0.5], "max": [1, 0.6, 0.5]},
        "fluid": [{"shape": {"box": {"min": [0, 0, -0.1], "max": [0.2, 0.4, 0.1]}}}],
        "obstacles": [
            {"shape": {"cylinder": {"base": [0.45, 0.06, -0.2], "axis": "z", "radius": 0.05, "length": 0.4}}},
            {"shape": {"box": {"min": [0.85, 0, -0.2], "max": [0.9, 0.3, 0.2]}},
             "motion": {"amplitude": [0.03, 0, 0], "period": 1.0}}],
        "physics": {"dim": 2, "spacing": 0.01}}"#;
    let scene = file("obstacles2d.json", SCENE);
    let path = scene.to_str().unwrap();
    verify_scene_under_both_solvers(path, "5");
    let end = tmp_dir().join("obstacles2d_end.csv");
    run_ok(&[
        "--headless",
        "--cpu",
        "--scene",
        path,
        "--end-time",
        "0.4",
        "--output",
        end.to_str().unwrap(),
    ]);
    let (header, rows) = common::cli::stats_rows(&end);
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();
    let (x, y, z) = (col("x"), col("y"), col("z"));
    assert!(rows.iter().all(|r| r[z] == 0.0));
    let nearest = rows
        .iter()
        .map(|r| ((r[x] - 0.45).powi(2) + (r[y] - 0.06).powi(2)).sqrt())
        .fold(f64::INFINITY, f64::min);
    assert!(
        nearest > 0.05,
        "a particle {nearest} m from the disc's centre"
    );
    // The water has reached the disc and gone past it.
    assert!(
        rows.iter().any(|r| r[x] > 0.55),
        "the front stopped short of the disc"
    );
    let moving = file(
        "lifting2d.json",
        &String::from_utf8_lossy(SCENE)
            .replace(
                r#""amplitude": [0.03, 0, 0]"#,
                r#""amplitude": [0.03, 0, 0.01]"#,
            )
            .into_bytes(),
    );
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--steps",
            "1",
            "--scene",
            moving.to_str().unwrap(),
        ],
        "obstacles[1]'s motion leaves the plane z = 0",
    );
}

/// A 2D jet: an emitter's nozzle cut by the plane to its chord (a disk of radius 3 cm centred
/// on the plane, so 6 cm: 6 points a layer, chord · U / s² = 720 particles a second at
/// 1.2 m/s). Every stage bit for bit under both solvers with the jet running; over its window
/// the count follows the 2D rate and every particle stays at z = 0; a jet out of the plane and
/// a nozzle off it are refused in one line.
#[test]
fn a_2d_emitter_pours_its_chord_at_the_2d_rate_bit_for_bit() {
    use common::cli::{run_ok, stats_rows, tmp_dir};
    let jet = |nozzle: &str, position: &str, direction: &str| {
        format!(
            r#"{{"tank": {{"min": [0, 0, -0.5], "max": [1, 0.6, 0.5]}},
            "fluid": [{{"shape": {{"box": {{"min": [0, 0, -0.1], "max": [1, 0.05, 0.1]}}}}}}],
            "emitters": [{{"nozzle": {nozzle}, "position": {position}, "direction": {direction},
                           "speed": 1.2, "start": 0, "end": 0.2}}],
            "physics": {{"dim": 2, "spacing": 0.01}}}}"#
        )
    };
    let disk = r#"{"circle": {"radius": 0.03}}"#;
    let scene = file(
        "jet2d.json",
        jet(disk, "[0.9, 0.3, 0]", "[-1, -0.5, 0]").as_bytes(),
    );
    let path = scene.to_str().unwrap();
    verify_scene_under_both_solvers(path, "12");
    let (stats, end) = (tmp_dir().join("jet2d.csv"), tmp_dir().join("jet2d_end.csv"));
    run_ok(&[
        "--headless",
        "--cpu",
        "--scene",
        path,
        "--end-time",
        "0.3",
        "--stats",
        stats.to_str().unwrap(),
        "--output",
        end.to_str().unwrap(),
    ]);
    let (header, rows) = stats_rows(&stats);
    let n = header.iter().position(|h| h == "particles").unwrap();
    let emitted = rows.last().unwrap()[n] - rows[0][n];
    // 0.2 s at 720 a second in whole layers of 6: the layers leaving at k τ < 0.2 s.
    let tau = 6.0 * 0.01f64.powi(2) / (0.06 * 1.2);
    let want = 6.0 * (0.2 / tau).ceil();
    assert_eq!(emitted, want, "{emitted} emitted, the 2D rate gives {want}");
    let (header, rows) = stats_rows(&end);
    let z = header.iter().position(|c| c == "z").unwrap();
    assert!(rows.iter().all(|r| r[z] == 0.0));
    let base = ["--headless", "--cpu", "--steps", "1", "--scene"];
    let leaves = file(
        "jet2d_z.json",
        jet(disk, "[0.9, 0.3, 0]", "[-1, 0, 0.1]").as_bytes(),
    );
    assert_usage_error(
        &[&base[..], &[leaves.to_str().unwrap()]].concat(),
        "emitters[0].direction leaves the plane z = 0",
    );
    let off = file(
        "jet2d_off.json",
        jet(disk, "[0.9, 0.3, 0.04]", "[-1, 0, 0]").as_bytes(),
    );
    assert_usage_error(
        &[&base[..], &[off.to_str().unwrap()]].concat(),
        "emitters[0]'s nozzle does not cross the plane z = 0",
    );
}

/// `--verify` at the adapter's tolerance over `steps` steps of the scene file at `path`, under
/// both solvers: every stage passes (skipped where no adapter is found).
fn verify_scene_under_both_solvers(path: &str, steps: &str) {
    for solver in ["dfsph", "wcsph"] {
        let out = run(&[
            "--headless",
            "--verify",
            "--tolerance",
            common::verify_tolerance(),
            "--solver",
            solver,
            "--scene",
            path,
            "--steps",
            steps,
            "--json",
        ]);
        if common::cli::skipped_without_gpu(&out) {
            break;
        }
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["pass"], true, "{solver}: {v}");
    }
}
