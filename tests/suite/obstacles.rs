//! Obstacles as boundary particles (Akinci et al. 2012): the GPU passes match their CPU mirror
//! bit for bit, and fluid dropped on a sphere and on a thin plate never enters them.

use crate::common;

use gpu_sph::obstacle;
use gpu_sph::params::{ConfigOverrides, DfsphConfig, PhysicsConfig, SphConfig};
use gpu_sph::run::{Backend, CpuSimulation};
use gpu_sph::scene_file::SceneFile;
use gpu_sph::solver::{Solver, SolverParams};

use common::cli::{assert_usage_error, file, run};

/// Fluid that starts moving into three obstacles (a box with friction, a free-slip sphere, a
/// cylinder) so both passes and the friction act from the first step.
const TOUCHING: &str = r#"{
  "tank": {"min": [0, 0, 0], "max": [0.3, 0.3, 0.3]},
  "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.3, 0.1, 0.3]}}, "velocity": [0.2, 0.5, 0]}],
  "obstacles": [
    {"shape": {"box": {"min": [0.1, 0.1, 0.1], "max": [0.2, 0.2, 0.2]}}, "viscosity": 0.001},
    {"shape": {"sphere": {"centre": [0.05, 0.15, 0.05], "radius": 0.04}}, "slip": "free-slip"},
    {"shape": {"cylinder": {"base": [0.25, 0.11, 0.05], "axis": "y", "radius": 0.03, "length": 0.1}}}
  ],
  "physics": {"spacing": 0.01}
}"#;

/// Runs `--verify --tolerance 0 --steps 10` on scene `text` and returns the stage names of a
/// passing report (None where no adapter is required and none is found).
fn verify_bit_exact(name: &str, text: &str) -> Option<Vec<String>> {
    // WCSPH's step (DFSPH's are in the tests that name their solver).
    verify_report(name, text, &["--solver", "wcsph", "--steps", "10"]).map(|v| {
        v["stages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["stage"].as_str().unwrap().to_string())
            .collect()
    })
}

/// Runs `--verify --tolerance 0 --json` (1e-5 on an adapter that is not bit-exact,
/// `common::bit_exact`) and `extra` on scene `text`, asserts it passes and returns the report
/// (None where no adapter is required and none is found).
fn verify_report(name: &str, text: &str, extra: &[&str]) -> Option<serde_json::Value> {
    let path = file(name, text.as_bytes());
    let mut args = vec![
        "--headless",
        "--verify",
        "--tolerance",
        common::verify_tolerance(),
        "--json",
        "--scene",
        path.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    if common::cli::skipped_without_gpu(&out) {
        return None;
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(v["pass"], true, "{stdout}");
    Some(v)
}

#[test]
fn obstacle_passes_are_bit_exact_under_verify() {
    let Some(stages) = verify_bit_exact("touching.json", TOUCHING) else {
        return;
    };
    // The obstacles join the density, the friction (`dfsph_accel`) and the pressure push.
    for want in [
        "dfsph_density.rho",
        "dfsph_accel",
        "wcsph.pressure.velocity",
    ] {
        assert!(
            stages.iter().any(|s| s == want),
            "{want} missing from {stages:?}"
        );
    }
}

/// Runs `scene` on the CPU path for `seconds` of simulated time and checks, every 20 steps
/// (a frame), that no fluid particle lies inside an obstacle.
fn never_inside(scene: &str, seconds: f64) {
    never_inside_with(scene, seconds, Solver::Wcsph);
}

/// [`never_inside`] on `solver`'s CPU path.
fn never_inside_with(scene: &str, seconds: f64, solver: Solver) {
    let mut file = SceneFile::parse(scene, "t").unwrap();
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes"));
    file.load_meshes(dir, "t").unwrap();
    let desc = file.desc();
    let s = file.physics["spacing"].as_f64().unwrap() as f32;
    let built = desc.build("t", s, 0).unwrap();
    let n = built.positions.len() as u32;
    let o = ConfigOverrides {
        spacing: Some(s),
        ..Default::default()
    };
    let cfg = SphConfig::for_solver(n, o, solver).unwrap();
    let physics = PhysicsConfig::default();
    let fp = physics
        .fluid_params(&cfg, built.tank_min, built.tank_max, built.fluid_size.y)
        .unwrap();
    let sp = cfg.sim_params();
    let dp = SolverParams::new(solver, &DfsphConfig::default(), &cfg, &physics).unwrap();
    let boundary = obstacle::boundary(&desc.obstacles, s, &sp, &fp).unwrap();
    let state = gpu_sph::grid::reorder::Particles::new(built.positions, built.velocities);
    let mut sim = CpuSimulation::with_solver(sp, fp, dp, state);
    sim.obstacles = Some(std::sync::Arc::new(boundary));
    let (mut t, mut step, mut lowest) = (0.0f64, 0u64, f32::INFINITY);
    while t < seconds {
        sim.place_obstacles(t);
        sim.step().unwrap();
        step += 1;
        t += sim.current().dt as f64;
        if step % 20 == 0 {
            let snap = sim.current();
            assert!(snap.state.pos.iter().all(|p| p.is_finite()), "step {step}");
            for (k, p) in snap.state.pos.iter().enumerate() {
                for (j, ob) in desc.obstacles.iter().enumerate() {
                    // A moving obstacle's shape is tested in its own frame at time t.
                    let q = ob.moving().map_or(*p, |m| m.pose(t).to_body(*p));
                    let d = ob.shape.signed_distance(q);
                    lowest = lowest.min(d);
                    assert!(
                        d > 0.0,
                        "t = {t:.3} s: particle {k} at {p} is inside obstacle {j} ({d} m)"
                    );
                }
            }
        }
    }
    // The fluid reached the obstacles: some particle came within h of a surface.
    assert!(
        lowest < 2.0 * s,
        "closest approach {lowest} m: the fluid never met the obstacles"
    );
}

#[test]
fn under_dfsph_fluid_dropped_on_a_sphere_and_a_plate_never_enters_them() {
    // The same block on a sphere and, beside it, a plate 0.04 m thick (≥ h).
    never_inside_with(
        r#"{"tank": {"min": [0, 0, 0], "max": [0.8, 0.5, 0.4]},
            "fluid": [{"shape": {"box": {"min": [0.1, 0.28, 0.1], "max": [0.3, 0.4, 0.3]}}},
                      {"shape": {"box": {"min": [0.5, 0.28, 0.1], "max": [0.7, 0.4, 0.3]}}}],
            "obstacles": [{"shape": {"sphere": {"centre": [0.2, 0.14, 0.2], "radius": 0.08}}},
                          {"shape": {"box": {"min": [0.45, 0.12, 0.05], "max": [0.75, 0.16, 0.35]}}}],
            "physics": {"spacing": 0.02}}"#,
        2.0,
        Solver::Dfsph,
    );
}

#[test]
fn fluid_dropped_on_a_sphere_never_enters_it() {
    never_inside(
        r#"{"tank": {"min": [0, 0, 0], "max": [0.4, 0.5, 0.4]},
            "fluid": [{"shape": {"box": {"min": [0.1, 0.28, 0.1], "max": [0.3, 0.4, 0.3]}}}],
            "obstacles": [{"shape": {"sphere": {"centre": [0.2, 0.14, 0.2], "radius": 0.08}}}],
            "physics": {"spacing": 0.02}}"#,
        2.0,
    );
}

#[test]
fn fluid_dropped_on_a_thin_plate_never_enters_it() {
    // A plate h = 0.04 m thick (2 spacings), raised above the floor on nothing.
    never_inside(
        r#"{"tank": {"min": [0, 0, 0], "max": [0.4, 0.5, 0.4]},
            "fluid": [{"shape": {"box": {"min": [0.1, 0.3, 0.1], "max": [0.3, 0.4, 0.3]}}}],
            "obstacles": [{"shape": {"box": {"min": [0.05, 0.16, 0.05], "max": [0.35, 0.2, 0.35]}}}],
            "physics": {"spacing": 0.02}}"#,
        2.0,
    );
}

#[test]
fn fluid_dropped_on_a_mesh_obstacle_never_enters_it() {
    // The shipped torus (meshes/torus.obj) at twice its size: tube radius 0.06 m, above h.
    never_inside(
        r#"{"tank": {"min": [0, 0, 0], "max": [0.5, 0.5, 0.5]},
            "fluid": [{"shape": {"box": {"min": [0.1, 0.3, 0.1], "max": [0.4, 0.42, 0.4]}}}],
            "obstacles": [{"shape": {"mesh": {"file": "meshes/torus.obj", "scale": 2, "translation": [0.25, 0.12, 0.25]}}}],
            "physics": {"spacing": 0.02}}"#,
        2.0,
    );
}

#[test]
fn a_piston_paddle_never_lets_fluid_inside() {
    // A paddle 0.04 m thick (2 spacings) driven 0.05 m to and fro with a period of 0.5 s (peak
    // speed 0.63 m/s) through water 0.12 m deep: it meets the fluid on both strokes.
    never_inside(
        r#"{"tank": {"min": [0, 0, 0], "max": [0.6, 0.4, 0.2]},
            "fluid": [{"shape": {"box": {"min": [0.0, 0, 0], "max": [0.6, 0.12, 0.2]}}}],
            "obstacles": [{"shape": {"box": {"min": [0.2, 0.0, 0.0], "max": [0.24, 0.3, 0.2]}},
                           "motion": {"amplitude": [0.05, 0, 0], "period": 0.5}}],
            "physics": {"spacing": 0.02}}"#,
        1.0,
    );
}

#[test]
fn a_stirrer_never_lets_fluid_inside() {
    never_inside(
        r#"{"tank": {"min": [0, 0, 0], "max": [0.4, 0.4, 0.4]},
            "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.4, 0.14, 0.4]}}}],
            "obstacles": [{"shape": {"box": {"min": [0.18, 0.02, 0.08], "max": [0.22, 0.3, 0.32]}},
                           "motion": {"pivot": [0.2, 0, 0.2], "spin": 6.0}}],
            "physics": {"spacing": 0.02}}"#,
        1.0,
    );
}

/// Fluid around a piston and a stirrer, both moving from the first step.
const MOVING: &str = r#"{
  "tank": {"min": [0, 0, 0], "max": [0.3, 0.3, 0.3]},
  "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.3, 0.1, 0.3]}}}],
  "obstacles": [
    {"shape": {"box": {"min": [0.05, 0.0, 0.0], "max": [0.08, 0.2, 0.3]}},
     "motion": {"amplitude": [0.03, 0, 0], "period": 0.05, "phase": 0.5}},
    {"shape": {"box": {"min": [0.18, 0.02, 0.12], "max": [0.22, 0.2, 0.28]}},
     "motion": {"pivot": [0.2, 0, 0.2], "spin": 40.0}, "slip": "no-slip"},
    {"shape": {"sphere": {"centre": [0.25, 0.05, 0.05], "radius": 0.03}}}
  ],
  "physics": {"spacing": 0.01}
}"#;

#[test]
fn moving_obstacles_are_bit_exact_under_verify() {
    let Some(stages) = verify_bit_exact("moving.json", MOVING) else {
        return;
    };
    assert!(
        stages.iter().any(|s| s == "stats.obstacle_power"),
        "{stages:?}"
    );
}

#[test]
fn gpu_and_cpu_runs_with_moving_obstacles_write_the_same_statistics() {
    // The run loop's own path (each step placed at its start time, steps one at a time), not
    // --verify's: the two paths' --stats files are the same bytes.
    let scene = file("moving-parity.json", MOVING.as_bytes());
    let (mut texts, mut paths) = (Vec::new(), Vec::new());
    for path in ["--cpu", "--gpu"] {
        let stats = common::cli::tmp_dir().join(format!("moving-parity{path}.csv"));
        let out = run(&[
            "--headless",
            path,
            "--scene",
            scene.to_str().unwrap(),
            "--steps",
            "20",
            "--stats",
            stats.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if path == "--gpu"
            && out.status.code() == Some(2)
            && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1")
        {
            eprintln!("SKIPPED: {stderr}");
            return;
        }
        assert_eq!(out.status.code(), Some(0), "{path}: {stderr}");
        texts.push(std::fs::read_to_string(&stats).unwrap());
        paths.push(stats);
    }
    assert_eq!(texts[0], texts[1], "CPU and GPU statistics differ");
    // 20 rows, and the obstacles did work in them (they moved).
    let (header, rows) = common::cli::stats_rows(&paths[0]);
    let power = header.iter().position(|h| h == "obstacle_power").unwrap();
    let powers: Vec<f64> = rows.iter().map(|r| r[power]).collect();
    assert_eq!(powers.len(), 20);
    assert!(powers.iter().any(|p| *p > 0.0), "{powers:?}");
}

#[test]
fn the_energy_check_credits_the_work_of_moving_obstacles() {
    // The piston and the stirrer put many times the fluid's starting energy in within 100
    // steps: the run goes on (the check compares the energy less their work), and that
    // balance never rises above the start.
    let scene = file("moving-energy.json", MOVING.as_bytes());
    let stats = common::cli::tmp_dir().join("moving-energy.csv");
    common::cli::run_ok(&[
        "--headless",
        "--cpu",
        "--scene",
        scene.to_str().unwrap(),
        "--steps",
        "100",
        "--stats",
        stats.to_str().unwrap(),
    ]);
    let (header, rows) = common::cli::stats_rows(&stats);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (ke, pe, eos, power, dt) = (
        col("kinetic"),
        col("potential"),
        col("eos_energy"),
        col("obstacle_power"),
        col("dt"),
    );
    let (mut e0, mut work, mut most) = (None, 0.0f64, 0.0f64);
    for v in rows {
        let e = v[ke] + v[pe] + v[eos];
        let Some(e0) = e0 else {
            e0 = Some(e);
            continue;
        };
        work += v[power] * v[dt];
        most = most.max(e / e0);
        assert!(
            e - work <= 1.05 * e0,
            "E − W = {} > 1.05 E0 = {}",
            e - work,
            1.05 * e0
        );
    }
    assert!(
        most > 2.0,
        "the obstacles did little work: E/E0 at most {most}"
    );
}

#[test]
fn moving_obstacles_move_the_boundary_and_its_grid() {
    // The CPU reference's boundary after place(t): every particle where the motion puts it,
    // and the grid still finds each one from its own position.
    let file = SceneFile::parse(MOVING, "t").unwrap();
    let desc = file.desc();
    let cfg = SphConfig::for_fluid(
        1000,
        ConfigOverrides {
            spacing: Some(0.01),
            ..Default::default()
        },
    )
    .unwrap();
    let sp = cfg.sim_params();
    let fp = PhysicsConfig::default()
        .fluid_params(&cfg, glam::Vec3::ZERO, glam::Vec3::splat(0.3), 0.1)
        .unwrap();
    let mut b = obstacle::boundary(&desc.obstacles, 0.01, &sp, &fp).unwrap();
    assert!(b.moves());
    let at_rest = b.clone();
    b.place(0.0);
    assert_eq!(b, at_rest, "t = 0 is the file's pose");
    b.place(0.0123);
    assert_ne!(b.pos, at_rest.pos);
    let mut psi_rest = at_rest.psi.clone();
    let mut psi = b.psi.clone();
    psi_rest.sort_by(f32::total_cmp);
    psi.sort_by(f32::total_cmp);
    assert_eq!(psi, psi_rest, "a rigid motion keeps each particle's ψ");
    let moving_speed = b.vel.iter().map(|v| v.length()).fold(0.0, f32::max);
    assert!(moving_speed > 1.0, "{moving_speed}");
    for (k, &p) in b.pos.iter().enumerate() {
        let mut found = false;
        b.walk(p, &sp, |j, r2| found |= j == k && r2 == 0.0);
        assert!(found, "boundary particle {k} at {p} not in its own cell");
    }
}

#[test]
fn bad_obstacles_exit_2_with_one_line() {
    let scene = |name: &str, obstacles: &str, extra: &str| {
        file(
            name,
            format!(
                r#"{{"tank": {{"min": [0, 0, 0], "max": [0.3, 0.3, 0.3]}},
                    "fluid": [{{"shape": {{"box": {{"min": [0, 0, 0], "max": [0.3, 0.1, 0.3]}}}}}}],
                    "obstacles": [{obstacles}]{extra}}}"#
            )
            .as_bytes(),
        )
    };
    let cases = [
        (
            scene(
                "ob-mesh.json",
                r#"{"shape": {"mesh": {"file": "x.obj"}}}"#,
                "",
            ),
            "obstacles[0].shape.mesh: cannot read mesh",
        ),
        (
            scene(
                "ob-out.json",
                r#"{"shape": {"sphere": {"centre": [0.3, 0.2, 0.15], "radius": 0.05}}}"#,
                "",
            ),
            "obstacles[0] spans",
        ),
        (
            scene(
                "ob-all.json",
                r#"{"shape": {"box": {"min": [0, 0, 0], "max": [0.3, 0.15, 0.3]}}}"#,
                "",
            ),
            "fluid[0] holds no particle",
        ),
        (
            scene(
                "ob-slip.json",
                r#"{"shape": {"sphere": {"centre": [0.15, 0.2, 0.15], "radius": 0.05}}, "slip": "sticky"}"#,
                "",
            ),
            "obstacles[0].slip",
        ),
        (
            scene(
                "ob-visc.json",
                r#"{"shape": {"sphere": {"centre": [0.15, 0.2, 0.15], "radius": 0.05}}, "viscosity": -0.001}"#,
                "",
            ),
            "obstacles[0]: viscosity -0.001 m^2/s is not a viscosity",
        ),
        (
            scene(
                "ob-visc-slip.json",
                r#"{"shape": {"sphere": {"centre": [0.15, 0.2, 0.15], "radius": 0.05}}, "viscosity": 0.001, "slip": "no-slip"}"#,
                "",
            ),
            "obstacles[0]: both \"slip\" and \"viscosity\" give its friction: keep one",
        ),
        (
            scene(
                "ob-period.json",
                r#"{"shape": {"sphere": {"centre": [0.15, 0.2, 0.15], "radius": 0.05}}, "motion": {"amplitude": [0.01, 0, 0]}}"#,
                "",
            ),
            "obstacles[0].motion: an amplitude or swing needs a \"period\"",
        ),
        (
            scene(
                "ob-motion-key.json",
                r#"{"shape": {"sphere": {"centre": [0.15, 0.2, 0.15], "radius": 0.05}}, "motion": {"spinn": 1}}"#,
                "",
            ),
            "did you mean `spin`?",
        ),
    ];
    for (path, needle) in cases {
        assert_usage_error(
            &["--headless", "--cpu", "--scene", path.to_str().unwrap()],
            needle,
        );
    }
}

#[test]
fn obstacles_carve_the_fluid_they_overlap() {
    let file = SceneFile::parse(TOUCHING, "t").unwrap();
    let scene = file.desc().build("t", 0.01, 0).unwrap();
    assert!(scene.carved > 0);
    assert_eq!(scene.positions.len() + scene.carved, 30 * 10 * 30);
    for p in &scene.positions {
        for o in &file.obstacles {
            assert!(o.shape.signed_distance(*p) >= 0.01, "{p}");
        }
    }
}

#[test]
fn a_run_with_obstacles_resumes_to_the_same_bits() {
    resumes_to_the_same_bits("still", TOUCHING);
}

#[test]
fn a_run_with_moving_obstacles_resumes_to_the_same_bits() {
    resumes_to_the_same_bits("moving", MOVING);
}

fn resumes_to_the_same_bits(name: &str, text: &str) {
    let scene = file(&format!("resume-obstacles-{name}.json"), text.as_bytes());
    let dir = common::cli::tmp_dir().join(format!("obstacle-checkpoints-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    let (full, resumed) = (
        common::cli::tmp_dir().join(format!("obstacles-full-{name}.csv")),
        common::cli::tmp_dir().join(format!("obstacles-resumed-{name}.csv")),
    );
    let s = scene.to_str().unwrap();
    let ok = common::cli::run_ok;
    ok(&[
        "--headless",
        "--cpu",
        "--scene",
        s,
        "--steps",
        "40",
        "--output",
        full.to_str().unwrap(),
    ]);
    ok(&[
        "--headless",
        "--cpu",
        "--scene",
        s,
        "--steps",
        "20",
        "--checkpoint-every",
        "20",
        "--checkpoint-dir",
        dir.to_str().unwrap(),
    ]);
    let ck = dir.join("checkpoint_000000020.gpusph");
    ok(&[
        "--headless",
        "--cpu",
        "--resume",
        ck.to_str().unwrap(),
        "--steps",
        "20",
        "--output",
        resumed.to_str().unwrap(),
    ]);
    assert!(std::fs::read(&full).unwrap() == std::fs::read(&resumed).unwrap());
}

#[test]
fn the_viewer_draws_a_scene_with_obstacles() {
    let scene = file("viewer-obstacles.json", TOUCHING.as_bytes());
    let png = common::cli::tmp_dir().join("viewer-obstacles.png");
    let _ = std::fs::remove_file(&png);
    let out = run(&[
        "--headless",
        "--scene",
        scene.to_str().unwrap(),
        "--screenshot",
        png.to_str().unwrap(),
        "--frames",
        "2",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if out.status.code() == Some(2) && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1") {
        eprintln!("SKIPPED: {stderr}");
        return;
    }
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(std::fs::metadata(&png).unwrap().len() > 1000);
}

/// A pool with a still sphere, a piston paddle and a jet whose first layer leaves just after
/// the start, so layers join while `--verify` and short runs are under way.
const EMITTING: &str = r#"{
  "tank": {"min": [0, 0, 0], "max": [0.2, 0.2, 0.1]},
  "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.2, 0.03, 0.1]}}}],
  "obstacles": [
    {"shape": {"sphere": {"centre": [0.14, 0.06, 0.05], "radius": 0.02}}},
    {"shape": {"box": {"min": [0.02, 0.0, 0.0], "max": [0.03, 0.08, 0.1]}}, "motion": {"amplitude": [0.01, 0, 0], "period": 0.5}, "slip": "no-slip"}
  ],
  "emitters": [
    {"nozzle": {"rect": {"width": 0.03, "height": 0.02}}, "position": [0.06, 0.12, 0.05], "direction": [1, -0.2, 0], "speed": 3.0, "start": 0.0005, "end": 1}
  ],
  "physics": {"spacing": 0.01}
}"#;

/// Items of stage `name` in a verify report.
fn items(report: &serde_json::Value, name: &str) -> u64 {
    report["stages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["stage"] == name)
        .unwrap_or_else(|| panic!("no stage {name}: {report}"))["items"]
        .as_u64()
        .unwrap()
}

#[test]
fn emitters_are_bit_exact_under_verify_on_both_solvers() {
    // A still and a moving obstacle and an emitter, on both solvers.
    for (name, text, solver, steps, stage) in [
        (
            "emit-wcsph.json",
            EMITTING,
            "wcsph",
            30,
            "dfsph_integrate.id",
        ),
        (
            "emit-dfsph.json",
            EMITTING,
            "dfsph",
            20,
            "dfsph_integrate.id",
        ),
    ] {
        let Some(one) = verify_report(name, text, &["--solver", solver, "--steps", "1"]) else {
            return;
        };
        let n0 = items(&one, stage);
        let k = steps.to_string();
        let Some(report) = verify_report(name, text, &["--solver", solver, "--steps", &k]) else {
            return;
        };
        // Layers joined during the verified steps: later steps held more particles.
        assert!(
            items(&report, stage) > steps * n0,
            "{solver}: {} items over {steps} steps from {n0} particles",
            items(&report, stage)
        );
    }
}

#[test]
fn gpu_and_cpu_runs_with_emitters_write_the_same_statistics() {
    for (name, text, solver, steps) in [
        ("emit-parity-w.json", EMITTING, "wcsph", "40"),
        ("emit-parity-d.json", EMITTING, "dfsph", "20"),
    ] {
        let scene = file(name, text.as_bytes());
        let mut texts = Vec::new();
        for path in ["--cpu", "--gpu"] {
            let stats = common::cli::tmp_dir().join(format!("{name}{path}.csv"));
            let output = common::cli::tmp_dir().join(format!("{name}{path}.out.csv"));
            let out = run(&[
                "--headless",
                path,
                "--solver",
                solver,
                "--scene",
                scene.to_str().unwrap(),
                "--steps",
                steps,
                "--stats",
                stats.to_str().unwrap(),
                "--output",
                output.to_str().unwrap(),
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if path == "--gpu"
                && out.status.code() == Some(2)
                && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1")
            {
                eprintln!("SKIPPED: {stderr}");
                return;
            }
            assert_eq!(out.status.code(), Some(0), "{solver} {path}: {stderr}");
            let (header, rows) = common::cli::stats_rows(&stats);
            let n = header.iter().position(|h| h == "particles").unwrap();
            assert!(
                rows.last().unwrap()[n] > rows[0][n],
                "{solver}: the emitter added nothing"
            );
            // The paddle's work is counted on both solvers.
            let pw = header.iter().position(|h| h == "obstacle_power").unwrap();
            assert!(
                rows.iter().any(|r| r[pw] != 0.0),
                "{solver}: no obstacle power"
            );
            texts.push((
                std::fs::read_to_string(&stats).unwrap(),
                std::fs::read(&output).unwrap(),
            ));
        }
        // The same bits where the adapter computes them (`common::bit_exact`); elsewhere each
        // path's own counts are checked above.
        if common::gpu().is_none_or(|c| common::bit_exact(&c)) {
            assert!(texts[0] == texts[1], "{solver}: CPU and GPU runs differ");
        }
    }
}

#[test]
fn an_emitters_count_follows_its_rate() {
    // A disk of radius 2 cm at s = 1 cm and 2 m/s: 13 points a layer, 1 256.6 particles per
    // second, a layer every 10.3 ms; open from 0.05 s to 1.25 s, 116 layers.
    let text = r#"{
      "tank": {"min": [0, 0, 0], "max": [0.6, 0.3, 0.1]},
      "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.6, 0.03, 0.1]}}}],
      "emitters": [{"nozzle": {"circle": {"radius": 0.02}}, "position": [0.04, 0.2, 0.05],
                    "direction": [1, 0, 0], "speed": 2.0, "start": 0.05, "end": 1.25}],
      "physics": {"spacing": 0.01}
    }"#;
    let scene = file("emit-rate.json", text.as_bytes());
    let stats = common::cli::tmp_dir().join("emit-rate.csv");
    common::cli::run_ok(&[
        "--headless",
        "--cpu",
        "--scene",
        scene.to_str().unwrap(),
        "--end-time",
        "1.3",
        "--stats",
        stats.to_str().unwrap(),
    ]);
    let (header, rows) = common::cli::stats_rows(&stats);
    let col = |name: &str| header.iter().position(|h| h == name).unwrap();
    let (t, n) = (col("t"), col("particles"));
    let rate = std::f64::consts::PI * 0.02f64.powi(2) * 2.0 / 0.01f64.powi(3);
    let layer = 13.0;
    let n0 = rows[0][n];
    // A row holds the particles its step ran with, those emitted by the step before's end.
    let mut before = 0.0f64;
    for r in &rows {
        let emitted = r[n] - n0;
        let want = rate * (before.clamp(0.05, 1.25) - 0.05);
        assert!(
            (emitted - want).abs() <= layer,
            "at t = {before}: {emitted} emitted, the rate gives {want}"
        );
        before = r[t];
    }
    let total = rows.last().unwrap()[n] - n0;
    let want = rate * 1.2;
    assert!(
        (total - want).abs() <= 0.01 * want,
        "{total} emitted over the window, the rate gives {want}"
    );
}

#[test]
fn a_run_with_emitters_resumes_to_the_same_bits() {
    resumes_to_the_same_bits("emitting", EMITTING);
}

#[test]
fn the_viewer_shows_emitters_working() {
    let scene = file("viewer-emitting.json", EMITTING.as_bytes());
    let png = common::cli::tmp_dir().join("viewer-emitting.png");
    let live = |frames: &str, substeps: &str| -> Option<u64> {
        let out = run(&[
            "--headless",
            "--scene",
            scene.to_str().unwrap(),
            "--screenshot",
            png.to_str().unwrap(),
            "--steps",
            "0",
            "--frames",
            frames,
            "--substeps",
            substeps,
            "--timings",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if out.status.code() == Some(2)
            && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1")
        {
            eprintln!("SKIPPED: {stderr}");
            return None;
        }
        assert_eq!(out.status.code(), Some(0), "{stderr}");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let n = stdout.split("N = ").nth(1).expect("a timing line");
        Some(n.split(':').next().unwrap().parse().unwrap())
    };
    let Some(first) = live("1", "1") else {
        return;
    };
    let later = live("4", "10").unwrap();
    assert!(later > first, "{first} then {later} particles");
}

#[test]
fn bad_emitters_exit_2_with_one_line() {
    let scene = |name: &str, emitter: &str| {
        file(
            name,
            format!(
                r#"{{"tank": {{"min": [0, 0, 0], "max": [0.3, 0.3, 0.3]}},
                    "fluid": [{{"shape": {{"box": {{"min": [0, 0, 0], "max": [0.3, 0.05, 0.3]}}}}}}],
                    "obstacles": [{{"shape": {{"sphere": {{"centre": [0.15, 0.2, 0.15], "radius": 0.05}}}}}}],
                    "emitters": [{emitter}]}}"#
            )
            .as_bytes(),
        )
    };
    let ok = r#""position": [0.05, 0.2, 0.05], "direction": [1, 0, 0], "speed": 1, "end": 1"#;
    let cases = [
        (
            format!(r#"{{"nozzle": {{"circle": {{"radius": 0}}}}, {ok}}}"#),
            "emitters[0].nozzle.radius must be > 0",
        ),
        (
            format!(r#"{{"nozzle": {{"rect": {{"width": 0.02, "height": -1}}}}, {ok}}}"#),
            "emitters[0].nozzle.height must be > 0",
        ),
        (
            r#"{"nozzle": {"circle": {"radius": 0.02}}, "position": [0.05, 0.2, 0.05], "direction": [1, 0, 0], "speed": 0, "end": 1}"#.to_string(),
            "emitters[0].speed must be > 0",
        ),
        (
            r#"{"nozzle": {"circle": {"radius": 0.02}}, "position": [0.29, 0.2, 0.05], "direction": [0, 1, 0], "speed": 1, "end": 1}"#.to_string(),
            "emitters[0]: the nozzle's point",
        ),
        (
            r#"{"nozzle": {"circle": {"radius": 0.02}}, "position": [0.15, 0.2, 0.15], "direction": [1, 0, 0], "speed": 1, "end": 1}"#.to_string(),
            "inside obstacles[0]",
        ),
        (
            // 12 mm off the sphere at s = 10 mm: beyond s but nearer than the boundary's
            // standoff (1.34 s), where the first layer would start compressed.
            r#"{"nozzle": {"circle": {"radius": 0.02}}, "position": [0.088, 0.2, 0.15], "direction": [-1, 0, 0], "speed": 1, "end": 1}"#.to_string(),
            "the boundary's standoff, 1.34 spacings",
        ),
        (
            r#"{"nozzle": {"circle": {"radius": 0.02}}, "position": [0.05, 0.2, 0.05], "direction": [1, 0, 0], "speed": 1, "start": 2, "end": 1}"#.to_string(),
            "0 <= start < end",
        ),
        (
            format!(r#"{{"nozzle": {{"circle": {{"radius": 0.02}}}}, "sped": 1, {ok}}}"#),
            "did you mean `speed`?",
        ),
        (
            format!(r#"{{"nozzle": {{"square": {{"side": 0.02}}}}, {ok}}}"#),
            "unknown kind `square`",
        ),
    ];
    for (i, (emitter, needle)) in cases.iter().enumerate() {
        let path = scene(&format!("bad-emitter-{i}.json"), emitter);
        assert_usage_error(
            &[
                "--headless",
                "--cpu",
                "--scene",
                path.to_str().unwrap(),
                "--steps",
                "1",
            ],
            needle,
        );
    }
}

/// A block thrown at the tank's open side (x+) and top (y+).
const SPILLING: &str = r#"{
  "tank": {"min": [0, 0, 0], "max": [0.3, 0.3, 0.1], "open": ["x+", "y+"]},
  "fluid": [{"shape": {"box": {"min": [0.18, 0, 0], "max": [0.28, 0.1, 0.1]}}, "velocity": [3.0, 2.0, 0]}],
  "physics": {"spacing": 0.01}
}"#;

#[test]
fn open_sides_are_bit_exact_under_verify_on_both_solvers() {
    for solver in ["wcsph", "dfsph"] {
        let stage = "dfsph_integrate.id";
        let Some(report) = verify_report(
            "spill.json",
            SPILLING,
            &["--solver", solver, "--steps", "60"],
        ) else {
            return;
        };
        // 1000 particles at the start: fewer were stepped on average, so some left.
        // Six counts per step (the DFSPH block's words have their own row).
        let steps = items(&report, "stats.counts") / 6;
        assert!(
            items(&report, stage) < 1000 * steps,
            "{solver}: nothing left the tank"
        );
    }
}

#[test]
fn fluid_leaving_through_an_open_side_is_removed_and_counted() {
    let scene = file("spill-run.json", SPILLING.as_bytes());
    for solver in ["wcsph", "dfsph"] {
        let mut outs = Vec::new();
        for path in ["--cpu", "--gpu"] {
            let stats = common::cli::tmp_dir().join(format!("spill-{solver}{path}.csv"));
            let output = common::cli::tmp_dir().join(format!("spill-{solver}{path}.out.csv"));
            let out = run(&[
                "--headless",
                path,
                "--solver",
                solver,
                "--scene",
                scene.to_str().unwrap(),
                "--steps",
                "80",
                "--stats",
                stats.to_str().unwrap(),
                "--output",
                output.to_str().unwrap(),
            ]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            if path == "--gpu"
                && out.status.code() == Some(2)
                && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1")
            {
                eprintln!("SKIPPED: {stderr}");
                return;
            }
            assert_eq!(out.status.code(), Some(0), "{solver} {path}: {stderr}");
            let (header, rows) = common::cli::stats_rows(&stats);
            let col = |name: &str| header.iter().position(|h| h == name).unwrap();
            let (outside, n) = (col("outside"), col("particles"));
            // Each row's leavers are gone from the next row's count.
            for w in rows.windows(2) {
                assert_eq!(w[1][n], w[0][n] - w[0][outside], "{solver} {path}");
            }
            let left: f64 = rows.iter().map(|r| r[outside]).sum();
            assert!(left > 0.0, "{solver}: nothing left the tank");
            let last = rows.last().unwrap();
            let written = std::fs::read_to_string(&output)
                .unwrap()
                .lines()
                .filter(|l| !l.starts_with('#') && !l.starts_with('x'))
                .count();
            assert_eq!(written as f64, last[n] - last[outside], "{solver} {path}");
            assert_eq!(rows[0][n] - left, written as f64);
            outs.push((
                std::fs::read(&stats).unwrap(),
                std::fs::read(&output).unwrap(),
            ));
        }
        if common::gpu().is_none_or(|c| common::bit_exact(&c)) {
            assert!(outs[0] == outs[1], "{solver}: CPU and GPU runs differ");
        }
    }
    // A side's name is checked.
    let bad = file(
        "spill-bad.json",
        SPILLING.replace("\"y+\"", "\"top\"").as_bytes(),
    );
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--scene",
            bad.to_str().unwrap(),
            "--steps",
            "1",
        ],
        "unknown kind `top`",
    );
}

#[test]
fn a_nozzle_inside_the_fluid_adds_nothing_onto_it() {
    // The nozzle sits in the middle of a still pool: every layer's slab holds fluid.
    let text = r#"{
      "tank": {"min": [0, 0, 0], "max": [0.2, 0.2, 0.1]},
      "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.2, 0.1, 0.1]}}}],
      "emitters": [{"nozzle": {"circle": {"radius": 0.02}}, "position": [0.1, 0.05, 0.05],
                    "direction": [1, 0, 0], "speed": 1.0, "start": 0.0, "end": 1}],
      "physics": {"spacing": 0.01}
    }"#;
    let scene = file("emit-submerged.json", text.as_bytes());
    let mut texts = Vec::new();
    for path in ["--cpu", "--gpu"] {
        let stats = common::cli::tmp_dir().join(format!("emit-submerged{path}.csv"));
        let out = run(&[
            "--headless",
            path,
            "--scene",
            scene.to_str().unwrap(),
            "--steps",
            "60",
            "--stats",
            stats.to_str().unwrap(),
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if path == "--gpu"
            && out.status.code() == Some(2)
            && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1")
        {
            eprintln!("SKIPPED: {stderr}");
            return;
        }
        assert_eq!(out.status.code(), Some(0), "{path}: {stderr}");
        let (header, rows) = common::cli::stats_rows(&stats);
        let n = header.iter().position(|h| h == "particles").unwrap();
        assert!(
            rows.iter().all(|r| r[n] == 2000.0),
            "{path}: a layer landed on the fluid"
        );
        texts.push(std::fs::read_to_string(&stats).unwrap());
    }
    assert_eq!(texts[0], texts[1], "CPU and GPU statistics differ");
}

/// A hydrostatic column (0.1 × 0.2 × 0.04 m at s = 0.01 m) with a fixed box 0.03 × 0.04 m
/// submerged in it, spanning the tank's depth, its bottom 0.06 m above the floor.
const SUBMERGED_BOX: &str = r#"{
  "tank": {"min": [0, 0, 0], "max": [0.1, 0.4, 0.04]},
  "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.1, 0.2, 0.04]}}}],
  "obstacles": [{"shape": {"box": {"min": [0.035, 0.06, 0.0], "max": [0.065, 0.1, 0.04]}}}],
  "physics": {"spacing": 0.01}
}"#;

/// The column with a submerged box comes to rest and holds hydrostatic pressure beside the box
/// (issue 12), by the plain column's criteria (tests/suite/physics.rs): after 5 s the largest speed
/// over the last half second is below 1% of √(gH), and layer-mean pressure rises with depth at
/// ρ0 g within 10% beside the box. Measured on this column (CPU path, the GPU's bits): the
/// fluid above the box's edges falls into the gaps the carving left beside it (0.8 m/s in
/// the first 0.1 s), the column is below the limit (0.014 m/s) from 1.5 s and at 0.0063 m/s
/// over 4.5–5 s; slope 0.991 ρ0 g. Later its glass around the box relaxes in bursts up to
/// 0.018 m/s (6–7 s; with Monaghan's α = 0.05 in place of ν it stays below 0.005 m/s from 3 s).
#[test]
fn a_column_with_a_submerged_box_comes_to_rest_with_hydrostatic_pressure() {
    let (g, rho0, s, h, height) = (9.81f64, 1000.0f64, 0.01f64, 0.02f64, 0.2f64);
    let scene = file("submerged-box.json", SUBMERGED_BOX.as_bytes());
    let dir = common::cli::tmp_dir();
    let stats = dir.join("submerged-box.csv");
    let out = dir.join("submerged-box-out.csv");
    let line = common::cli::run_ok(&[
        "--headless",
        "--cpu",
        "--solver",
        "wcsph",
        "--scene",
        scene.to_str().unwrap(),
        "--end-time",
        "5",
        "--steps",
        "100000",
        "--stats",
        stats.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&line.stderr);
    let (header, rows) = common::cli::stats_rows(&stats);
    let col = |name: &str| header.iter().position(|c| c == name).unwrap();
    let (t, speed, outside) = (col("t"), col("max_speed"), col("outside"));
    let last = rows.last().unwrap();
    assert!(last[t] >= 5.0, "ran to t = {} s: {stderr}", last[t]);
    assert_eq!(last[outside], 0.0);
    let late = rows.iter().filter(|r| r[t] >= last[t] - 0.5);
    let fastest = late.map(|r| r[speed]).fold(0.0, f64::max);
    let limit = 0.01 * (g * height).sqrt();
    assert!(
        fastest < limit,
        "over the last 0.5 s the column still moves at {fastest} m/s (limit {limit})"
    );

    // Pressure beside the box: particles more than s from its sides and at least 2h deep,
    // binned in layers one spacing thick, the Tait pressure of their density.
    // The Tait stiffness the run chose, from the parameters in the stats sidecar
    // ("…, B = 5.5e4 Pa, …").
    let sidecar = std::fs::read_to_string(stats.with_extension("params.json")).unwrap();
    let sidecar: serde_json::Value = serde_json::from_str(&sidecar).unwrap();
    let b: f64 = sidecar["parameters"]
        .as_str()
        .unwrap()
        .split("B = ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut reader = csv::Reader::from_path(&out).unwrap();
    let cols: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let at = |name: &str| cols.iter().position(|c| c == name).unwrap();
    let (x, y, z, rho) = (at("x"), at("y"), at("z"), at("density"));
    let particles: Vec<[f64; 4]> = reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            [x, y, z, rho].map(|k| r[k].parse::<f64>().unwrap())
        })
        .collect();
    let top = particles.iter().map(|p| p[1]).fold(f64::MIN, f64::max) + 0.5 * s;
    let mut samples = Vec::new();
    for p in &particles {
        assert!(
            !(0.035..=0.065).contains(&p[0]) || !(0.06..=0.1).contains(&p[1]),
            "particle inside the box at {p:?}"
        );
        let depth = top - p[1];
        if (0.035 - s..=0.065 + s).contains(&p[0]) || depth < 2.0 * h {
            continue;
        }
        samples.push((depth, (b * ((p[3] / rho0).powi(7) - 1.0)).max(0.0)));
    }
    let (slope, layers) = common::hydro::layer_slope(samples, s, 2.0 * h);
    assert!(layers >= 10, "only {layers} layers beside the box");
    let want = rho0 * g;
    eprintln!(
        "submerged box: late speed {fastest:.4} m/s, slope {:.3} rho0 g",
        slope / want
    );
    assert!(
        (slope - want).abs() <= 0.10 * want,
        "beside the box dp/dd = {slope:.1} Pa/m, hydrostatic {want:.1} Pa/m"
    );
}

/// A cylinder spinning about its own axis in still water: its surface moves only along
/// itself, so the pressure does next to no work on the water; its friction (`viscosity`) is
/// what drags the water round, on both solvers, and its work is credited to the obstacles'
/// power (the run's energy check would end the run as diverged otherwise).
#[test]
fn a_spinning_cylinder_stirs_the_water_only_through_its_friction() {
    let scene = |friction: &str| {
        format!(
            r#"{{
  "tank": {{"min": [0, 0, 0], "max": [0.2, 0.12, 0.2]}},
  "fluid": [{{"shape": {{"box": {{"min": [0, 0, 0], "max": [0.2, 0.06, 0.2]}}}}}}],
  "obstacles": [{{"shape": {{"cylinder": {{"base": [0.1, 0.0, 0.1], "axis": "y", "radius": 0.03, "length": 0.1}}}},
                  "motion": {{"pivot": [0.1, 0, 0.1], "spin": 20.0}}{friction}}}],
  "physics": {{"spacing": 0.01}}
}}"#
        )
    };
    for (solver, steps) in [("dfsph", "80"), ("wcsph", "300")] {
        let mut kinetic = Vec::new();
        for (tag, friction) in [("free", ""), ("visc", r#", "viscosity": 0.01"#)] {
            let name = format!("spin-{solver}-{tag}");
            let path = file(&format!("{name}.json"), scene(friction).as_bytes());
            let stats = common::cli::tmp_dir().join(format!("{name}.csv"));
            common::cli::run_ok(&[
                "--headless",
                "--cpu",
                "--solver",
                solver,
                "--scene",
                path.to_str().unwrap(),
                "--steps",
                steps,
                "--stats",
                stats.to_str().unwrap(),
            ]);
            let (header, rows) = common::cli::stats_rows(&stats);
            let col = |name: &str| header.iter().position(|h| h == name).unwrap();
            let (ke, power, dt) = (col("kinetic"), col("obstacle_power"), col("dt"));
            let work: f64 = rows.iter().map(|r| r[power] * r[dt]).sum();
            let last = rows.last().unwrap()[ke];
            eprintln!("{solver} {tag}: kinetic {last:.3e} J, obstacle work {work:.3e} J");
            if tag == "visc" {
                assert!(work > 0.0, "{solver}: the friction did no work ({work})");
            }
            kinetic.push(last);
        }
        assert!(
            kinetic[1] > 5.0 * kinetic[0],
            "{solver}: kinetic energy {:.3e} J with friction against {:.3e} J without",
            kinetic[1],
            kinetic[0]
        );
    }
}
