//! The command line: bad input exits 2 with one line on stderr and no panic; a CSV round trip
//! reproduces the input order with oracle-checked densities.

use std::path::{Path, PathBuf};

use glam::Vec3;

use crate::common;

use common::cli::{assert_usage_error, bin, file, run, run_ok, stats_rows, tmp_dir};

#[test]
fn bad_flags_exit_2_with_one_line() {
    let base = ["--headless", "--cpu"];
    let cases: [(&[&str], &str); 11] = [
        (&["--table-size", "1000"], "use 512 or 1024"),
        (&["--group-size", "9"], "--group-size 8"),
        (&["--group-size", "0"], "1 to 8"),
        (&["--table-size", "0"], "power of two"),
        (&["-n", "0"], "-n 10000"),
        (
            &["--smoothing-radius", "-1"],
            "'--smoothing-radius <H>': expected a finite number > 0",
        ),
        (
            &["--smoothing-radius", "nan"],
            "'--smoothing-radius <H>': expected a finite number > 0",
        ),
        (&["--scene", "nope"], "dam-break"),
        (&["--particles", "ten"], "invalid value"),
        (&["--bogus"], "--bogus"),
        (&["--table-size", "33554432"], "2^24"),
    ];
    for (extra, needle) in cases {
        let args: Vec<&str> = base.iter().chain(extra.iter()).copied().collect();
        assert_usage_error(&args, needle);
    }
}

#[test]
fn bad_solver_flags_exit_2_with_one_line() {
    let base = ["--headless", "--cpu", "-n", "500", "--solver", "dfsph"];
    let cases: [(&[&str], &str); 12] = [
        (&[], "add --steps K"),
        (
            &["--steps", "2", "--viscous-substeps", "0"],
            "--viscous-substeps",
        ),
        (
            &["--steps", "2", "--viscous-substeps", "17"],
            "--viscous-substeps",
        ),
        (
            &["--steps", "2", "--max-iterations", "0"],
            "--max-iterations",
        ),
        (&["--steps", "2", "--relaxation", "0"], "--relaxation"),
        (&["--steps", "2", "--relaxation", "1.5"], "--relaxation"),
        (
            &["--steps", "2", "--density-tolerance", "2"],
            "density tolerance",
        ),
        (
            &["--steps", "2", "--divergence-tolerance", "nan"],
            "divergence tolerance",
        ),
        (&["--steps", "2", "--min-dt", "0.1"], "--min-dt"),
        // The largest step itself is the cause, not the default --min-dt it undercuts.
        (
            &["--steps", "2", "--max-dt", "-1"],
            "largest time step must be a finite number > 0, got -1",
        ),
        (
            &["--steps", "2", "--max-dt", "0"],
            "largest time step must be a finite number > 0, got 0",
        ),
        // A negative count reaches its flag's parser rather than reading as a flag of its own.
        (
            &["--steps", "2", "--viscous-substeps", "-1"],
            "'-1' for '--viscous-substeps",
        ),
    ];
    for (extra, needle) in cases {
        let args: Vec<&str> = base.iter().chain(extra.iter()).copied().collect();
        assert_usage_error(&args, needle);
    }
    // The viewer runs DFSPH too: without a display it fails as any viewer does.
    assert_usage_error(&["--solver", "dfsph"], "cannot open a window");
    assert_usage_error(&["--headless", "--solver", "iisph"], "wcsph");
}

/// A density-only run (no `--steps`) uses no physics, and a WCSPH run none of DFSPH's settings,
/// but a value no run can use is bad input all the same: it was ignored with exit 0
/// (`--sound-speed nan`, `--relaxation 5`), and is now refused in the words a run that uses it
/// prints. Valid values still leave such a run alone.
#[test]
fn runs_refuse_physics_and_solver_values_no_run_can_use() {
    let base = ["--headless", "--cpu", "-n", "300"];
    let cases: [(&[&str], &str); 13] = [
        (
            &["--sound-speed", "nan"],
            "speed of sound must be a finite number > 0",
        ),
        (
            &["--relaxation", "5"],
            "--relaxation must be in (0, 1], got 5",
        ),
        (
            &["--density-tolerance", "nan"],
            "density tolerance must be a fraction",
        ),
        (
            &["--steps", "1", "--solver", "wcsph", "--relaxation", "5"],
            "--relaxation must be in (0, 1], got 5",
        ),
        (&["--sound-speed", "1e30"], "exceeds 100000 m/s"),
        (&["--gravity", "inf"], "gravity must be finite"),
        (&["--alpha", "11"], "artificial viscosity must be 0 to 10"),
        (&["--viscosity", "nan"], "viscosity must be 0 to 1e4 Pa s"),
        (&["--cfl", "2"], "CFL number must be in (0, 1]"),
        (&["--restitution", "nan"], "restitution must be in [0, 1]"),
        (
            &["--kinematic-viscosity", "5"],
            "kinematic viscosity must be 0 to 1",
        ),
        (&["--dt", "0"], "time step must be a finite number > 0"),
        (&["--surface-cube-size", "nan"], "0.1 to 10"),
    ];
    for (extra, needle) in cases {
        let args: Vec<&str> = base.iter().chain(extra.iter()).copied().collect();
        assert_usage_error(&args, needle);
    }
    // The viewer (here offscreen, for its picture) checks them before it opens.
    let picture = tmp_dir().join("refused_picture.png");
    assert_usage_error(
        &[
            base.as_slice(),
            &[
                "--screenshot",
                picture.to_str().unwrap(),
                "--solver",
                "wcsph",
                "--relaxation",
                "5",
            ],
        ]
        .concat(),
        "--relaxation must be in (0, 1], got 5",
    );
    assert!(!picture.exists());
    // Nor does a run that never steps drop the records of steps it was asked for.
    let dir = tmp_dir().join("density_only_records");
    let stats = dir.join("s.csv");
    let frames = dir.join("frames");
    for (flag, path) in [
        ("--stats", stats.to_str().unwrap()),
        ("--export-dir", frames.to_str().unwrap()),
        ("--checkpoint-every", "5"),
    ] {
        assert_usage_error(
            &[base.as_slice(), &[flag, path]].concat(),
            &format!("{flag} records the steps of a fluid run"),
        );
    }
    assert!(!stats.exists() && !frames.exists());
    let ok = run_ok(
        &[
            base.as_slice(),
            &["--sound-speed", "30", "--gravity", "-3.7", "--cfl", "0.3"],
        ]
        .concat(),
    );
    assert!(
        ok.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
}

/// DFSPH is the default solver of fluid runs; a density-only run has no solver to default, so
/// it runs without one, and naming either solver there is refused (no front end asks which
/// solver was named).
#[test]
fn dfsph_is_the_default_solver_of_fluid_runs() {
    let fluid = run_ok(&["--headless", "--cpu", "-n", "800", "--steps", "2"]);
    let stdout = String::from_utf8_lossy(&fluid.stdout);
    assert!(stdout.contains("solver DFSPH"), "{stdout}");
    assert!(stdout.contains("DFSPH last step"), "{stdout}");
    let wcsph = run_ok(&[
        "--headless",
        "--cpu",
        "-n",
        "800",
        "--steps",
        "2",
        "--solver",
        "wcsph",
    ]);
    assert!(!String::from_utf8_lossy(&wcsph.stdout).contains("DFSPH"));
    let density = run_ok(&["--headless", "--cpu", "-n", "800"]);
    assert!(!String::from_utf8_lossy(&density.stdout).contains("DFSPH"));
    assert_usage_error(
        &["--headless", "--cpu", "-n", "800", "--solver", "dfsph"],
        "add --steps K",
    );
    assert_usage_error(
        &["--headless", "--cpu", "-n", "800", "--solver", "wcsph"],
        "add --steps K",
    );
}

/// A solve that stops at its cap above its tolerance says so: in the statistics (`stopped_d`,
/// 1 on that step's row) and in one line at the end naming the solve, the count, the cap and
/// the fix; a run whose solves converge says nothing and writes 0.
#[test]
fn a_dfsph_run_says_when_its_density_solve_stopped_at_the_cap() {
    let dir = tmp_dir();
    let stats = dir.join("capped.csv");
    let base = ["--headless", "--cpu", "-n", "800", "--steps", "3"];
    // Two iterations cannot reach the 0.01% tolerance from the lattice's first steps.
    let capped = run_ok(
        &[
            &base[..],
            &["--max-iterations", "2", "--stats", stats.to_str().unwrap()],
        ]
        .concat(),
    );
    let stderr = String::from_utf8_lossy(&capped.stderr);
    let line = stderr
        .lines()
        .find(|l| l.contains("stopped short of its tolerance"))
        .unwrap_or_else(|| panic!("no cap line: {stderr}"));
    assert!(
        line.contains("constant-density solve")
            && line.contains("at its iteration cap (--max-iterations 2) in")
            && line.contains("of 3 steps"),
        "{line}"
    );
    assert!(line.contains("raise --max-iterations (now 2)"), "{line}");
    let text = std::fs::read_to_string(&stats).unwrap();
    let mut rows = text.lines();
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = header.iter().position(|&c| c == "stopped_d").unwrap();
    let stopped: Vec<&str> = rows.map(|r| r.split(',').nth(col).unwrap()).collect();
    assert!(stopped.contains(&"1"), "{text}");
    let free = dir.join("free.csv");
    let out = run_ok(&[&base[..], &["--stats", free.to_str().unwrap()]].concat());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("stopped short"), "{stderr}");
    let text = std::fs::read_to_string(&free).unwrap();
    assert!(text.lines().skip(1).all(|r| r.ends_with(",0,0")), "{text}");
}

#[test]
fn dfsph_runs_on_both_paths_with_identical_statistics() {
    let dir = tmp_dir();
    let mut rows = Vec::new();
    for (path, name) in [
        (&["--cpu"][..], "dfsph_cpu.csv"),
        (&["--gpu"][..], "dfsph_gpu.csv"),
    ] {
        let stats = dir.join(name);
        let mut args = vec![
            "--headless",
            "--solver",
            "dfsph",
            "-n",
            "1500",
            "--steps",
            "4",
            "--stats",
            stats.to_str().unwrap(),
        ];
        args.extend_from_slice(path);
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if path == ["--gpu"]
            && stderr.contains("adapter")
            && std::env::var("GPU_SPH_REQUIRE_GPU").is_err()
        {
            return;
        }
        assert!(out.status.success(), "{args:?}: {stderr}");
        let text = std::fs::read_to_string(&stats).unwrap();
        let body: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(String::from)
            .collect();
        assert!(body[0].ends_with(
            "iterations_v,iterations_d,residual_v,residual_d,density_error_mean,density_error_max,eos_energy,obstacle_power,particles,stopped_v,stopped_d"
        ));
        assert_eq!(body.len(), 5);
        rows.push(body);
    }
    // The GPU path reduces its residuals and density errors in the CPU mirror's f32 tree.
    assert_eq!(rows[0], rows[1], "CPU and GPU statistics differ");
}

#[test]
fn bad_files_exit_2_with_one_line() {
    let ply_header = |n: u64| {
        format!("ply\nformat binary_little_endian 1.0\nelement vertex {n}\nproperty float x\nproperty float y\nproperty float z\nend_header\n")
            .into_bytes()
    };
    let mut short_ply = ply_header(1 << 40);
    short_ply.extend_from_slice(bytemuck::cast_slice(&[1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]));
    let cases: [(PathBuf, &str); 6] = [
        (
            file("nan.csv", b"x,y,z\n0,0,0\n1,nan,2\n"),
            "line 3: y is NaN",
        ),
        (file("inf.csv", b"x,y,z\n0,inf,0\n"), "line 2: y is inf"),
        (file("two.csv", b"x,y,z\n0,0,0\n1,2\n"), "line 3"),
        (
            file("short.ply", &short_ply),
            "promises 1099511627776 'vertex' elements",
        ),
        (tmp_dir().join("missing.csv"), "cannot open"),
        (file("what.txt", b"x,y,z\n"), ".csv or .ply"),
    ];
    for (path, needle) in cases {
        assert_usage_error(
            &["--headless", "--cpu", "--input", path.to_str().unwrap()],
            needle,
        );
    }
}

fn read_csv(path: &Path) -> Vec<Vec<f64>> {
    let mut r = csv::Reader::from_path(path).unwrap();
    assert_eq!(
        r.headers().unwrap().iter().collect::<Vec<_>>(),
        ["x", "y", "z", "vx", "vy", "vz", "density"]
    );
    r.records()
        .map(|rec| rec.unwrap().iter().map(|v| v.parse().unwrap()).collect())
        .collect()
}

fn round_trip(extra: &[&str]) -> Option<(Vec<Vec3>, Vec<Vec<f64>>)> {
    // An unordered, irregular particle set with negative coordinates, so a reordering shows.
    let positions: Vec<Vec3> = (0..700)
        .map(|i| {
            let f = i as f32;
            Vec3::new(
                (f * 0.618).fract() * 0.2 - 0.1,
                (f * 0.377).fract() * 0.1,
                -(f * 0.123).fract() * 0.15,
            )
        })
        .collect();
    let mut text = String::from("x,y,z,vx,vy,vz\n");
    for (i, p) in positions.iter().enumerate() {
        text += &format!("{},{},{},{},0,0\n", p.x, p.y, p.z, i);
    }
    let input = file(&format!("in{}.csv", extra.len()), text.as_bytes());
    let output = tmp_dir().join(format!("out{}.csv", extra.len()));
    let mut args = vec![
        "--headless",
        "--steps",
        "0",
        "--input",
        input.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    if out.status.code() == Some(2)
        && String::from_utf8_lossy(&out.stderr).contains("adapter")
        && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1")
    {
        eprintln!("SKIPPED: no GPU adapter");
        return None;
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((positions, read_csv(&output)))
}

fn check_round_trip(positions: &[Vec3], rows: &[Vec<f64>]) {
    assert_eq!(rows.len(), positions.len());
    let h = 0.02; // the default 2 × 0.01 m
    let mass = 1000.0f32 * 0.01f32.powi(3);
    let want = gpu_sph::grid::oracle::densities(positions, h, (1000.0f64 * 1e-6) as f32);
    assert!((mass - 1e-3).abs() < 1e-9);
    for (i, (p, row)) in positions.iter().zip(rows).enumerate() {
        assert_eq!(
            [row[0] as f32, row[1] as f32, row[2] as f32],
            p.to_array(),
            "row {i} is out of order"
        );
        assert_eq!(row[3], i as f64, "velocity of row {i}");
        let rel = (row[6] - want[i]).abs() / want[i];
        assert!(rel <= 1e-5, "density {i}: {} vs oracle {}", row[6], want[i]);
    }
}

#[test]
fn cpu_round_trip_keeps_order_and_matches_the_oracle() {
    let (positions, rows) = round_trip(&["--cpu"]).unwrap();
    check_round_trip(&positions, &rows);
}

#[test]
fn gpu_round_trip_keeps_order_and_matches_the_oracle() {
    if let Some((positions, rows)) = round_trip(&["--gpu"]) {
        check_round_trip(&positions, &rows);
    }
}

#[test]
fn json_summary_is_one_object() {
    let out = run(&[
        "--headless",
        "--cpu",
        "-n",
        "2000",
        "--scene",
        "cube",
        "--json",
    ]);
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["config"]["particles"], 2000);
    assert_eq!(v["config"]["table_size"], 4096);
    assert!(v["mean_neighbours"].as_f64().unwrap() > 10.0);
    let rho = v["density"]["mean"].as_f64().unwrap();
    assert!(rho > 300.0 && rho < 1500.0, "{rho}");
}

#[test]
fn verify_passes_and_reports_every_stage() {
    let out = run(&[
        "--headless",
        "--verify",
        "-n",
        "5000",
        "--scene",
        "random",
        "--json",
    ]);
    if common::cli::skipped_without_gpu(&out) {
        return;
    }
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["pass"], true);
    let stages: Vec<&str> = v["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    for want in [
        "hash.slot",
        "hash.count",
        "hash.rank",
        "scan.slot_start",
        "scatter.ids",
        "order.sorted_ids",
        "density",
        "pipeline.density",
        "pipeline.repeatable",
    ] {
        assert!(stages.contains(&want), "{want} missing from {stages:?}");
    }
}

#[test]
fn oversize_particle_count_names_the_limit() {
    let out = run(&["--headless", "--gpu", "-n", "50000000", "--scene", "random"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    // Without a GPU the run stops earlier, at the adapter; with one required, at the limit.
    if std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() == Ok("1") {
        assert!(stderr.contains("or fewer"), "{stderr}");
    } else {
        assert!(
            stderr.contains("or fewer") || stderr.contains("adapter"),
            "{stderr}"
        );
    }
}

#[test]
fn missing_adapter_names_the_fix() {
    let out = bin()
        .args(["--headless", "--gpu", "-n", "100"])
        .env("WGPU_ADAPTER_NAME", "no-such-adapter-anywhere")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("mesa-vulkan-drivers") && stderr.contains("--cpu"),
        "{stderr}"
    );
    // A backend name wgpu does not know selects none: the line says so, without wgpu's own
    // warnings before it.
    let out = bin()
        .args(["--headless", "--gpu", "-n", "100"])
        .env("WGPU_BACKEND", "bogus")
        .env_remove("RUST_LOG")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("WGPU_BACKEND=\"bogus\""), "{stderr}");
}

#[test]
fn headless_only_modes_without_headless_are_refused() {
    for flag in ["--verify", "--bench"] {
        assert_usage_error(&[flag, "-n", "10"], "--headless");
    }
}

#[test]
fn steps_write_stats_frames_and_output() {
    let dir = tmp_dir().join("steps");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (stats, frames, output) = (dir.join("s.csv"), dir.join("frames"), dir.join("out.csv"));
    let out = run(&[
        "--headless",
        "--cpu",
        "-n",
        "500",
        "--steps",
        "5",
        "--stats",
        stats.to_str().unwrap(),
        "--export-dir",
        frames.to_str().unwrap(),
        "--export-every",
        "2",
        "--output",
        output.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&stats).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    // One header row and numbers: the parameters are in the sidecar.
    assert!(lines[0].starts_with("step,t,dt,kinetic,potential"));
    assert_eq!(lines.len(), 1 + 5);
    let sidecar = std::fs::read_to_string(dir.join("s.params.json")).unwrap();
    let sidecar: serde_json::Value = serde_json::from_str(&sidecar).unwrap();
    assert!(sidecar["parameters"].as_str().unwrap().starts_with("tank"));
    assert_eq!(sidecar["columns"][1]["name"], "t");
    assert_eq!(sidecar["columns"][1]["unit"], "s");
    for (k, line) in lines[1..].iter().enumerate() {
        let f: Vec<f64> = line.split(',').map(|v| v.parse().unwrap()).collect();
        assert_eq!(f[0] as usize, k + 1);
        assert!(f[2] > 0.0 && f[10] == 0.0, "{line}");
    }
    for name in ["frame_000000.ply", "frame_000002.ply", "frame_000004.ply"] {
        assert!(frames.join(name).exists(), "{name}");
    }
    assert_eq!(read_csv(&output).len(), 500);
}

#[test]
fn bench_prints_its_table_and_json_with_brute_force() {
    let args = [
        "--headless",
        "--bench",
        "--brute-force",
        "-n",
        "3000",
        "--scene",
        "cube",
        "--repeat",
        "1",
    ];
    let out = run(&args);
    if common::cli::skipped_without_gpu(&out) {
        return;
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    let header = text
        .lines()
        .find(|l| l.starts_with("stage"))
        .unwrap_or_else(|| panic!("no table header in {text}"));
    for col in ["GPU ms", "CPU ms", "GPU/CPU", "particles/s"] {
        assert!(header.contains(col), "{col} missing from {header}");
    }
    for stage in [
        "hash", "scan", "scatter", "order", "reorder", "density", "total",
    ] {
        assert!(
            text.lines()
                .any(|l| l.split_whitespace().next() == Some(stage)),
            "no {stage} row in {text}"
        );
    }
    assert!(text.contains("median of 1"), "{text}");
    let brute = text
        .lines()
        .skip_while(|l| !l.starts_with("all-pairs"))
        .nth(2)
        .unwrap_or_else(|| panic!("no all-pairs row in {text}"));
    assert_eq!(brute.split_whitespace().next(), Some("3000"), "{brute}");

    let out = run(&[&args[..], &["--json"]].concat());
    assert!(out.status.success());
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["particles"], 3000);
    assert_eq!(v["repeat"], 1);
    assert!(v["gpu_timing"].as_str().is_some_and(|s| !s.is_empty()));
    assert!(v["dispatches_per_build"].as_u64().unwrap() <= 8);
    let rows = v["rows"].as_array().unwrap();
    let total = rows.last().unwrap();
    assert_eq!(total["stage"], "total");
    for key in [
        "gpu_ms",
        "cpu_ms",
        "ratio",
        "gpu_particles_per_s",
        "cpu_particles_per_s",
    ] {
        assert!(
            total[key].as_f64().is_some_and(|x| x > 0.0),
            "{key}: {total}"
        );
    }
    let brute = &v["brute_force"][0];
    assert_eq!(brute["particles"], 3000);
    // Same densities up to summation order.
    assert!(brute["max_rel_diff"].as_f64().unwrap() < 1e-5, "{brute}");
    assert!(brute["all_pairs_ms"].as_f64().unwrap() > 0.0);
}

/// A resting block from a file in a tank given by --tank-min/--tank-max that fits it exactly:
/// the run keeps every particle inside (stats column `outside`) and the tank is the one given.
#[test]
fn a_file_runs_in_the_tank_the_flags_give() {
    let mut csv = String::from("x,y,z\n");
    for j in 0..6 {
        for k in 0..4 {
            for i in 0..4 {
                let p = |a: i32| (a as f32 + 0.5) * 0.01;
                csv += &format!("{},{},{}\n", p(i), p(j), p(k));
            }
        }
    }
    let input = file("block.csv", csv.as_bytes());
    let stats = tmp_dir().join("block_stats.csv");
    let out = run(&[
        "--headless",
        "--cpu",
        "--input",
        input.to_str().unwrap(),
        "--steps",
        "30",
        "--tank-min",
        "0,0,0",
        "--tank-max",
        "0.04,0.12,0.04",
        "--stats",
        stats.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&stats).unwrap();
    let sidecar = std::fs::read_to_string(stats.with_extension("params.json")).unwrap();
    assert!(
        sidecar.contains("tank (0.0000, 0.0000, 0.0000) to (0.0400, 0.1200, 0.0400)"),
        "{sidecar}"
    );
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let outside = header.iter().position(|&c| c == "outside").unwrap();
    let rows: Vec<&str> = lines.collect();
    assert_eq!(rows.len(), 30);
    assert!(
        rows.iter().all(|r| r.split(',').nth(outside) == Some("0")),
        "a particle left the tank"
    );
}

#[test]
fn a_tank_that_misses_a_particle_or_is_malformed_is_refused() {
    let input = file("one.csv", b"x,y,z\n0.5,0.5,0.5\n0.1,0.1,0.1\n");
    let base = [
        "--headless",
        "--cpu",
        "--input",
        input.to_str().unwrap(),
        "--steps",
        "1",
    ];
    let with = |extra: &[&'static str]| -> Vec<String> {
        base.iter()
            .map(|s| s.to_string())
            .chain(extra.iter().map(|s| s.to_string()))
            .collect()
    };
    for (extra, needle) in [
        (
            &["--tank-min", "0,0,0", "--tank-max", "0.3,1,1"][..],
            "outside the tank",
        ),
        (&["--tank-min", "0,0", "--tank-max", "1,1,1"], "X,Y,Z"),
        (&["--tank-min", "0,0,nan", "--tank-max", "1,1,1"], "X,Y,Z"),
        (&["--tank-min", "0,0,0"], "--tank-max"),
    ] {
        let args = with(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_usage_error(&args, needle);
    }
}

/// Without any adapter a headless run still runs, on the CPU path, and says so in one line.
#[test]
fn without_an_adapter_a_run_takes_the_cpu_path_and_says_so() {
    let out = bin()
        .args(["--headless", "-n", "300", "--steps", "2"])
        .env("WGPU_ADAPTER_NAME", "no-such-adapter-anywhere")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("CPU path"), "{stderr}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("after 2 steps"));
}

/// On a software adapter (lavapipe in CI) a headless run takes the CPU path by default and
/// says so; `--gpu` takes the GPU path; both write identical statistics. On a real GPU the
/// default stays the GPU path, silently.
#[test]
fn a_software_adapter_runs_the_cpu_path_unless_told_otherwise() {
    let Some(ctx) = common::gpu() else { return };
    let software = ctx.info.device_type == wgpu::DeviceType::Cpu;
    let dir = tmp_dir();
    let mut tables = Vec::new();
    for (flags, name) in [
        (&[][..], "path_default.csv"),
        (&["--gpu"][..], "path_gpu.csv"),
        (&["--cpu"][..], "path_cpu.csv"),
    ] {
        let stats = dir.join(name);
        let mut args = vec![
            "--headless",
            "-n",
            "2000",
            "--steps",
            "10",
            "--stats",
            stats.to_str().unwrap(),
        ];
        args.extend_from_slice(flags);
        let out = run(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {stderr}");
        let said = stderr.contains("software renderer") && stderr.contains("--gpu");
        assert_eq!(said, software && flags.is_empty(), "{args:?}: {stderr}");
        let text = std::fs::read_to_string(&stats).unwrap();
        let rows: Vec<String> = text
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(String::from)
            .collect();
        assert_eq!(rows.len(), 11);
        tables.push(rows);
    }
    assert_eq!(tables[0], tables[1], "default and --gpu statistics differ");
    assert_eq!(tables[1], tables[2], "--gpu and --cpu statistics differ");
}

#[test]
fn bench_times_the_whole_step_pass_by_pass() {
    for solver in ["wcsph", "dfsph"] {
        let args = [
            "--headless",
            "--bench",
            "--steps",
            "2",
            "--repeat",
            "1",
            "-n",
            "1500",
            "--solver",
            solver,
        ];
        let out = run(&args);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if stderr.contains("adapter") && std::env::var("GPU_SPH_REQUIRE_GPU").is_err() {
            return;
        }
        assert!(out.status.success(), "{args:?}: {stderr}");
        assert!(stdout.contains("GPU whole step"), "{stdout}");
        assert!(stdout.contains("CPU whole step"), "{stdout}");
        let passes: &[&str] = if solver == "wcsph" {
            &[
                "hash",
                "dfsph_density",
                "dfsph_accel",
                "dfsph_eos",
                "dfsph_pressure",
                "dfsph_timestep",
                "dfsph_integrate",
            ]
        } else {
            &[
                "dfsph_density",
                "dfsph_pressure",
                "dfsph_rate",
                "dfsph_integrate",
            ]
        };
        for pass in passes {
            assert!(
                stdout.lines().any(|l| l.starts_with(pass)),
                "{solver}: no {pass} row in {stdout}"
            );
        }
        let mut json_args = args.to_vec();
        json_args.push("--json");
        let out = run(&json_args);
        let v: serde_json::Value =
            serde_json::from_slice(&out.stdout).expect("--bench --steps --json prints JSON");
        assert_eq!(v["solver"], solver);
        for pass in passes {
            let row = v["rows"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["stage"] == *pass)
                .unwrap_or_else(|| panic!("{solver}: no {pass} row"));
            assert!(row["cpu_ms"].as_f64().is_some(), "{solver} {pass}: {row}");
            if v["gpu_timing"] == "timestamp queries" {
                assert!(row["gpu_ms"].as_f64().is_some(), "{solver} {pass}: {row}");
            }
        }
        assert!(v["cpu_step_ms"].as_f64().unwrap() > 0.0);
        assert!(v["gpu_step_ms"].as_f64().unwrap() > 0.0);
    }
    assert_usage_error(
        &["--headless", "--bench", "--steps", "2", "--repeat", "0"],
        "--repeat",
    );
}

/// A block of 12³ particles at just over half the spacing (about 8 rest densities; points
/// closer than s/2, such as 500 coincident ones, are refused before the run, see
/// `starts_and_flags_that_cannot_run_name_their_true_cause`): the
/// run ends with exit 1 and one line naming the step, the quantity, the particle and a fix, on
/// both paths and both solvers, instead of printing a result. Both solvers' density passes
/// twice ρ0 at step 1 (DFSPH's: 6445 kg/m³; its solve corrects the step's own compression and
/// cannot undo eight rest densities in one step of at most dt_max).
#[test]
fn a_diverging_run_is_stopped_with_the_step_quantity_and_particle() {
    let mut csv = b"x,y,z\n".to_vec();
    for i in 0..12 {
        for j in 0..12 {
            for k in 0..12 {
                let c = |n: i32| 0.5 + 0.00505 * n as f32;
                csv.extend_from_slice(format!("{},{},{}\n", c(i), c(j), c(k)).as_bytes());
            }
        }
    }
    let input = file("coincident.csv", &csv);
    for (path, solver, step, quantity) in [
        ("--cpu", "wcsph", "step 1:", "at particle"),
        ("--gpu", "wcsph", "step 1:", "at particle"),
        ("--cpu", "dfsph", "step 1:", "density"),
        ("--gpu", "dfsph", "step 1:", "density"),
    ] {
        let out = run(&[
            "--headless",
            path,
            "--solver",
            solver,
            "--input",
            input.to_str().unwrap(),
            "--steps",
            "50",
        ]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        if path == "--gpu" && stderr.contains("no adapter") {
            continue;
        }
        assert_eq!(out.status.code(), Some(1), "{path}: {stderr}");
        let line = stderr
            .lines()
            .find(|l| l.contains("diverged"))
            .unwrap_or_else(|| panic!("{path}: no divergence line in {stderr}"));
        assert!(line.contains(step), "{line}");
        assert!(
            line.contains(quantity) && line.contains("particle "),
            "{line}"
        );
        assert!(
            line.contains("--cfl") && line.contains("--sound-speed"),
            "{line}"
        );
    }
    // With the checks off the same WCSPH run (whose time step has a floor to switch off) is not
    // stopped by them (the time step too: at 8 ρ0 the local sound speed, c0 (ρ/ρ0)³, takes dt
    // towards 1e-9 s).
    let out = run(&[
        "--headless",
        "--cpu",
        "--solver",
        "wcsph",
        "--input",
        input.to_str().unwrap(),
        "--steps",
        "3",
        "--max-speed-fraction",
        "0",
        "--max-density-ratio",
        "0",
        "--energy-margin",
        "0",
        "--min-dt",
        "0",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("diverged"), "{stderr}");
}

#[test]
fn an_end_time_stops_the_run_at_the_first_step_that_reaches_it() {
    let stats = common::cli::tmp_dir().join("end-time.csv");
    let out = common::cli::run_ok(&[
        "--headless",
        "--cpu",
        "-n",
        "2000",
        "--end-time",
        "0.02",
        "--stats",
        stats.to_str().unwrap(),
    ]);
    let (header, rows) = common::cli::stats_rows(&stats);
    let col = header.iter().position(|h| h == "t").unwrap();
    let t: Vec<f64> = rows.iter().map(|r| r[col]).collect();
    assert!(t.len() > 10, "{t:?}");
    assert!(*t.last().unwrap() >= 0.02, "{t:?}");
    assert!(t[t.len() - 2] < 0.02, "{t:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("until t = 0.02 s"), "{stdout}");
    assert!(
        stdout.contains(&format!("after {} steps", t.len())),
        "{stdout}"
    );
    // A step count that comes first wins.
    let out = run(&[
        "--headless",
        "--cpu",
        "-n",
        "2000",
        "--end-time",
        "10",
        "--steps",
        "3",
    ]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("after 3 steps"));
    for (args, needle) in [
        (&["--headless", "--end-time", "0"][..], "--end-time"),
        (&["--headless", "--end-time", "nan"], "--end-time"),
        (
            &["--headless", "--end-time", "-1"],
            "expected a simulated time > 0",
        ),
        (
            &["--headless", "--export-dir", "f", "--export-every", "-1"],
            "'-1' for '--export-every",
        ),
        (
            &["--headless", "--checkpoint-every", "-1"],
            "'-1' for '--checkpoint-every",
        ),
        (&["--end-time", "1"], "add --headless"),
        (&["--headless", "--verify", "--end-time", "1"], "--steps K"),
    ] {
        assert_usage_error(args, needle);
    }
}

#[test]
fn divergence_bounds_must_be_finite_and_not_negative() {
    for (flag, v) in [
        ("--max-density-ratio", "nan"),
        ("--max-density-ratio", "-1"),
        ("--max-speed-fraction", "inf"),
        ("--energy-margin", "-0.1"),
    ] {
        assert_usage_error(
            &["--headless", "--cpu", "-n", "100", "--steps", "1", flag, v],
            flag,
        );
    }
}

/// A layer one particle high gets its sound speed from the fall to the floor (at least h),
/// not from its zero thickness, and runs without tripping a divergence check.
#[test]
fn a_one_particle_high_layer_runs_with_the_derived_sound_speed() {
    let mut csv = b"x,y,z\n".to_vec();
    for i in 0..30 {
        for k in 0..30 {
            csv.extend_from_slice(
                format!(
                    "{},0.05,{}\n",
                    0.005 + 0.01 * i as f32,
                    0.005 + 0.01 * k as f32
                )
                .as_bytes(),
            );
        }
    }
    let input = file("layer.csv", &csv);
    let out = run(&[
        "--headless",
        "--cpu",
        "--input",
        input.to_str().unwrap(),
        "--steps",
        "400",
    ]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    // The default tank pads the layer by 2h = 0.06 m (DFSPH's h = 3 s):
    // c = 10 √(2 · 9.81 · 0.06) = 10.850 m/s.
    assert!(stdout.contains("c = 10.850 m/s"), "{stdout}");
    assert!(!stderr.contains("warning"), "{stderr}");
    let last = stdout.lines().last().unwrap();
    assert!(last.contains("outside 0"), "{last}");
}

/// A sound speed given below 10 √(2 g Δy) is warned about in one line, and the run goes on.
#[test]
fn a_low_sound_speed_is_warned_about() {
    let out = run(&[
        "--headless",
        "--cpu",
        "-n",
        "500",
        "--steps",
        "2",
        "--sound-speed",
        "1",
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|l| l.starts_with("warning:"))
        .collect();
    assert_eq!(warnings.len(), 1, "{stderr}");
    assert!(
        warnings[0].contains("--sound-speed 1 m/s"),
        "{}",
        warnings[0]
    );
}

/// A malformed PLY header and a header promising more than the file holds: exit 2, one line
/// in words.
#[test]
fn malformed_ply_files_exit_2_with_one_line_in_words() {
    let body = "property float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n";
    for (name, text, needle) in [
        (
            "neg.ply",
            format!("ply\nformat ascii 1.0\nelement vertex -5\n{body}"),
            "not a whole number",
        ),
        (
            "huge.ply",
            format!("ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\n{body}"),
            "promises 4000000000 'vertex' elements",
        ),
        // These gave the parser's own state dump.
        (
            "nan.ply",
            format!("ply\nformat ascii 1.0\nelement vertex 2\n{body}nan 0 0\n"),
            "line 9: vertex 1: nan is not finite",
        ),
        (
            "text.ply",
            format!(
                "ply\nformat ascii 1.0\nelement vertex 1\n{}",
                body.replace("1 2 3", "1 two 3")
            ),
            "line 8: vertex 0: \"two\" is not a number",
        ),
        (
            "short_row.ply",
            format!(
                "ply\nformat ascii 1.0\nelement vertex 1\n{}",
                body.replace("1 2 3", "1 2")
            ),
            "vertex 0 has 2 values, the header declares 3",
        ),
    ] {
        let input = file(name, text.as_bytes());
        assert_usage_error(
            &[
                "--headless",
                "--cpu",
                "--input",
                input.to_str().unwrap(),
                "--steps",
                "1",
            ],
            needle,
        );
    }
}

/// Bad input of the kinds that can panic, hang, abort on an allocation, run on garbage or blame
/// a flag the user never gave: one line naming the fix, exit 2, before any work.
#[test]
fn audited_bad_inputs_exit_2_with_one_line_naming_the_fix() {
    let base = ["--headless", "--cpu", "--steps", "2"];
    let scene = |name: &str, extra: &str| {
        let text = format!(
            r#"{{"tank":{{"min":[0,0,0],"max":[0.1,0.1,0.1]}},"fluid":[{{"shape":{{"box":{{"min":[0,0,0],"max":[0.05,0.05,0.05]}}}}}}],"physics":{{"spacing":0.01}}{extra}}}"#
        );
        file(name, text.as_bytes())
    };
    let jet = |nozzle: &str, end: &str| {
        format!(
            r#","emitters":[{{"nozzle":{nozzle},"position":[0.08,0.08,0.05],"direction":[-1,0,0],"speed":0.5,"start":0,"end":{end}}}]"#
        )
    };
    let scenes = [
        // An emitter window of 1e30 s overflowed the layer count (a panic).
        (scene("long_jet.json", &jet(r#"{"circle":{"radius":0.01}}"#, "1e30")), "more than 2^27"),
        // A nozzle of 1e6 m built its lattice for ever.
        (scene("wide_jet.json", &jet(r#"{"circle":{"radius":1e6}}"#, "1")), "shrink its nozzle"),
        // An obstacle of 5 km at 1 cm aborted on a 37 TB allocation (here 500 m, inside the
        // 65 536 spacings a tank may reach from the origin).
        (
            file(
                "huge_obstacle.json",
                br#"{"tank":{"min":[-600,-600,-600],"max":[600,600,600]},"fluid":[{"shape":{"box":{"min":[550,550,550],"max":[550.05,550.05,550.05]}}}],"physics":{"spacing":0.01},"obstacles":[{"shape":{"sphere":{"centre":[0,0,0],"radius":500}}}]}"#,
            ),
            "boundary particles",
        ),
        // An obstacle moving at 1e30 m/s vanished from the speed of sound in a NaN.
        (
            scene(
                "fast_obstacle.json",
                r#","obstacles":[{"shape":{"box":{"min":[0.07,0,0.07],"max":[0.09,0.02,0.09]}},"motion":{"velocity":[1e30,0,0]}}]"#,
            ),
            "obstacle speeds",
        ),
    ];
    for (path, needle) in &scenes {
        let args: Vec<&str> = base
            .iter()
            .copied()
            .chain(["--scene", path.to_str().unwrap()])
            .collect();
        assert_usage_error(&args, needle);
    }
    let out = tmp_dir().join("audit_out.csv");
    let out = out.to_str().unwrap();
    let flags: [(&[&str], &str); 12] = [
        (
            &["--min-dt", "-1"],
            "--min-dt must be a finite time step ≥ 0",
        ),
        (
            &["--min-dt", "nan"],
            "--min-dt must be a finite time step ≥ 0",
        ),
        (&["--min-dt", "0.01", "--max-dt", "0.001"], "lower --min-dt"),
        (
            &["--surface-dir", ".", "--surface-cube-size", "1e30"],
            "0.1 to 10",
        ),
        (
            &["--surface-dir", ".", "--surface-cube-size", "0.01"],
            "0.1 to 10",
        ),
        (
            &["--surface-dir", ".", "--surface-smoothing", "1000000000"],
            "at most 1000",
        ),
        (
            &["--stats", out, "--output", out],
            "give them different files",
        ),
        (&["--stats", "-"], "give a path, e.g. --stats stats.csv"),
        (&["--sound-speed", "1e30"], "exceeds 100000 m/s"),
        (&["--sound-speed", "0"], "--sound-speed 20"),
        (&["--spacing", "1e30"], "--spacing 0.01"),
        (&["--table-size", "1099511627776"], "2^24"),
    ];
    for (extra, needle) in flags {
        let args: Vec<&str> = base.iter().chain(extra.iter()).copied().collect();
        assert_usage_error(&args, needle);
    }
    for mode in ["--verify", "--bench"] {
        assert_usage_error(
            &[
                "--headless",
                mode,
                "-n",
                "100",
                "--steps",
                "1",
                "--output",
                out,
            ],
            "writes a run's results",
        );
    }
    // A directory that cannot be made (here below a plain file) was found only when the
    // finished run wrote its file; missing ones are created (every_output_creates_its_directory).
    let blocker = file("audit_blocker", b"");
    let below = blocker.join("x.csv");
    let below = below.to_str().unwrap();
    // Grains write their files through the same flags; `--stats -` would name a file '-'.
    for (model, flag, path, needle) in [
        ("fluid", "--output", below, "cannot create the directory"),
        ("fluid", "--stats", below, "cannot create the directory"),
        ("grains", "--output", below, "cannot create the directory"),
        (
            "grains",
            "--stats",
            "-",
            "give a path, e.g. --stats stats.csv",
        ),
    ] {
        assert_usage_error(
            &[
                "--model",
                model,
                "--headless",
                "--cpu",
                "-n",
                "100",
                "--steps",
                "2",
                flag,
                path,
            ],
            needle,
        );
    }
    let csv = file("audit_in.csv", b"x,y,z\n0.1,0.1,0.1\n");
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--steps",
            "1",
            "--input",
            csv.to_str().unwrap(),
            "--scene",
            "cube",
        ],
        "drop --scene",
    );
    // A vertex count below the data dropped particles without a word.
    let ply = file(
        "audit_extra.ply",
        b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n0.1 0.1 0.1\n0.2 0.2 0.2\n",
    );
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--steps",
            "1",
            "--input",
            ply.to_str().unwrap(),
        ],
        "follow the 1 vertices",
    );
}

/// A start the first step would blow apart, a fluid with no neighbours and flags that
/// contradict each other are refused before the run in one line naming the true cause (not
/// "diverged; use a smaller --cfl or --dt", which cannot help, or nothing).
#[test]
fn starts_and_flags_that_cannot_run_name_their_true_cause() {
    // The walls' slip length is a length or `free`; the standard viscosity is DFSPH's.
    for bad in ["sticky", "-1"] {
        assert_usage_error(
            &[
                "--headless",
                "--cpu",
                "--steps",
                "2",
                "--wall-slip-length",
                bad,
            ],
            "is not a slip length: give free, 0 (no slip) or a length in metres",
        );
    }
    assert_usage_error(
        &["--headless", "--cpu", "--steps", "2", "--spacing", "1e-9"],
        "m is too small for f32: the kernels' constant 45/(π h⁶)",
    );
    assert_usage_error(
        &["--headless", "--cpu", "--steps", "2", "--hydrostatic-start"],
        "--hydrostatic-start is WCSPH's: DFSPH's fluid is incompressible",
    );
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--solver",
            "wcsph",
            "--hydrostatic-start",
        ],
        "--hydrostatic-start moves the fluid of a run: add --steps K",
    );
    let wcsph = ["--headless", "--cpu", "--solver", "wcsph", "--steps", "2"];
    assert_usage_error(
        &[&wcsph[..], &["--gravity", "9.81", "--hydrostatic-start"]].concat(),
        "--hydrostatic-start needs gravity pointing down (-y), got --gravity 9.81",
    );
    // A file that repeats a lattice point: data rows are counted from 1.
    let mut csv = String::from("x,y,z\n");
    for i in 0..6 {
        for j in 0..6 {
            for k in 0..6 {
                let c = |n: i32| (2 + n) as f32 / 100.0;
                csv += &format!("{},{},{}\n", c(i), c(j), c(k));
            }
        }
    }
    csv += "0.04,0.04,0.04\n";
    let repeated = file("repeated.csv", csv.as_bytes());
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--input",
            repeated.to_str().unwrap(),
            "--steps",
            "2",
        ],
        "its data rows 87 and 217 repeat a point",
    );
    // Two fluid bodies that overlap.
    let body = r#"{"shape": {"box": {"min": [0.0, 0.0, 0.0], "max": [0.1, 0.1, 0.1]}}}"#;
    let overlap = file(
        "overlapping-bodies.json",
        format!(
            r#"{{"tank": {{"min": [0, 0, 0], "max": [0.3, 0.3, 0.3]}}, "fluid": [{body}, {body}], "physics": {{"spacing": 0.01}}}}"#
        )
        .as_bytes(),
    );
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--scene",
            overlap.to_str().unwrap(),
            "--steps",
            "2",
        ],
        "two of its fluid bodies overlap there",
    );
    // No particle within h of another: refused for a fluid run, said for a density-only one.
    let lonely = [
        "--headless",
        "--cpu",
        "-n",
        "2000",
        "--smoothing-radius",
        "0.001",
    ];
    let steps: Vec<&str> = lonely.iter().copied().chain(["--steps", "2"]).collect();
    assert_usage_error(
        &steps,
        "no particle has another within the smoothing radius h = 0.001 m",
    );
    let density = run_ok(&lonely);
    let said = String::from_utf8_lossy(&density.stderr);
    assert!(said.contains("warning: no particle has another"), "{said}");
    // A fixed step above the largest one asked for.
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "-n",
            "800",
            "--steps",
            "2",
            "--dt",
            "0.01",
            "--max-dt",
            "0.005",
        ],
        "--dt 0.01 exceeds --max-dt 0.005",
    );
    // Steps and lengths that are not steps or lengths, each through its flag's own parser.
    assert_usage_error(
        &["--headless", "--cpu", "--steps", "-3"],
        "invalid value '-3' for '--steps <STEPS>': expected a whole number of steps",
    );
    assert_usage_error(
        &["--headless", "--cpu", "--steps", "2", "--spacing", "0"],
        "invalid value '0' for '--spacing <S>': expected a finite number > 0",
    );
    // Particle counts that are not counts, or too few for the built-in scene.
    assert_usage_error(
        &["--headless", "--cpu", "-n", "-5", "--steps", "2"],
        "a particle count is a whole number ≥ 1, got -5",
    );
    assert_usage_error(
        &["--headless", "--cpu", "-n", "1.5", "--steps", "2"],
        "a particle count is a whole number ≥ 1, got \"1.5\"",
    );
    for n in ["1", "2", "8"] {
        assert_usage_error(
            &["--headless", "--cpu", "-n", n, "--steps", "2"],
            &format!(
                "-n {n} is too few particles for scene dam-break: its tank would be one spacing thin; pass -n 12 or more"
            ),
        );
    }
}

/// Gravity pointing up: the fluid falls to the ceiling and its potential energy, measured from
/// the wall gravity points at, falls with it, so the energy check does not stop the run (it
/// did at step 24, 5.4% "above its start", while the potential assumed gravity down).
/// Measured: 6.81 J at the start, 3.41 J after 150 steps.
#[test]
fn gravity_pointing_up_runs_with_its_own_potential_energy() {
    let dir = tmp_dir();
    let stats = dir.join("s.csv");
    run_ok(&[
        "--headless",
        "--cpu",
        "-n",
        "3000",
        "--gravity",
        "9.81",
        "--steps",
        "150",
        "--stats",
        stats.to_str().unwrap(),
    ]);
    let (names, rows) = stats_rows(&stats);
    let pe = names.iter().position(|n| n == "potential").unwrap();
    let (first, last) = (rows[0][pe], rows[rows.len() - 1][pe]);
    assert!(
        first > 0.0 && last < 0.75 * first,
        "potential {first} J at the start, {last} J after 150 steps"
    );
}

/// `--json` says a failure on stdout as one JSON object (kind, one-line message, exit status)
/// beside the line on stderr: a diverged run (exit 1) and bad flags (exit 2).
#[test]
fn json_failures_are_json_objects_on_stdout() {
    for (args, kind, exit, needle) in [
        (
            &[
                "--headless",
                "--cpu",
                "-n",
                "3000",
                "--steps",
                "5",
                "--dt",
                "0.5",
                "--json",
            ][..],
            "diverged",
            1,
            "the run diverged",
        ),
        (
            &["--headless", "--cpu", "-n", "-5", "--json"][..],
            "usage",
            2,
            "a particle count is a whole number",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(exit), "{args:?}");
        let stdout = String::from_utf8(out.stdout).unwrap();
        let v: serde_json::Value = serde_json::from_str(stdout.trim())
            .unwrap_or_else(|e| panic!("{args:?}: stdout {stdout:?} is not JSON: {e}"));
        assert_eq!(v["error"], kind, "{args:?}");
        assert_eq!(v["exit"], exit, "{args:?}");
        let message = v["message"].as_str().unwrap();
        assert!(message.contains(needle), "{args:?}: {message}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert!(stderr.contains(message), "{args:?}: stderr {stderr}");
    }
}

/// `--help` is grouped under one heading per part of a run, and `-h` is the short page: the
/// common flags only, pointing at `--help` for the rest.
#[test]
fn help_is_grouped_and_h_is_the_short_page() {
    let long = String::from_utf8(run_ok(&["--help"]).stdout).unwrap();
    let headings = [
        "Run:",
        "Scene:",
        "Physics:",
        "Solver:",
        "Outputs:",
        "Viewer:",
        "Grains (--model grains):",
        "Verify and bench:",
    ];
    let lines: Vec<&str> = long.lines().collect();
    let mut at = 0;
    for heading in headings {
        at += lines[at..]
            .iter()
            .position(|l| *l == heading)
            .unwrap_or_else(|| panic!("--help lacks the heading {heading:?} (in this order)"));
    }
    let short = String::from_utf8(run_ok(&["-h"]).stdout).unwrap();
    assert!(short.lines().count() * 4 < long.lines().count(), "{short}");
    assert!(short.contains("--help lists them all"), "{short}");
    assert!(!short.contains("--contact-friction"), "{short}");
    assert!(long.contains("--contact-friction"), "{long}");
}

/// Every long flag `--help` prints is documented in docs/usage.md's flag reference.
#[test]
fn every_flag_of_help_is_documented_in_the_usage_page() {
    let help = String::from_utf8(run_ok(&["--help"]).stdout).unwrap();
    let usage =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/usage.md"))
            .unwrap();
    let flags: std::collections::BTreeSet<&str> = help
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            let l = l
                .strip_prefix("-n, ")
                .or(l.strip_prefix("-h, "))
                .or(l.strip_prefix("-V, "))
                .unwrap_or(l);
            l.starts_with("--")
                .then(|| l.split([' ', '=']).next().unwrap())
        })
        .collect();
    assert!(flags.len() > 60, "{flags:?}");
    let missing: Vec<&&str> = flags
        .iter()
        .filter(|f| !usage.contains(&format!("`{f}`")) && !usage.contains(&format!("`{f} ")))
        .collect();
    assert!(missing.is_empty(), "not in docs/usage.md: {missing:?}");
}

/// Every output creates its missing (nested) directory, one rule for all: statistics, frames,
/// surfaces, the particles and the picture; the statistics are one header row and numbers,
/// their units and the run's parameters in the sidecar; the grains' columns take the fluid's
/// names.
#[test]
fn every_output_creates_its_directory_and_statistics_are_plain_csv() {
    let dir = tmp_dir().join("outputs-alike");
    let _ = std::fs::remove_dir_all(&dir);
    let at = |p: &str| dir.join(p).to_str().unwrap().to_string();
    let (stats, frames, surfaces, output) = (
        at("a/b/stats.csv"),
        at("c/d/frames"),
        at("e/f/meshes"),
        at("g/h/out.csv"),
    );
    let out = run(&[
        "--headless",
        "--cpu",
        "-n",
        "500",
        "--steps",
        "4",
        "--stats",
        &stats,
        "--export-dir",
        &frames,
        "--export-every",
        "2",
        "--surface-dir",
        &surfaces,
        "--output",
        &output,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for p in [&stats, &output] {
        assert!(Path::new(p).is_file(), "{p}");
    }
    assert!(Path::new(&frames).join("frame_000004.ply").is_file());
    assert!(Path::new(&surfaces).join("surface_000004.obj").is_file());
    let text = std::fs::read_to_string(&stats).unwrap();
    assert!(text.lines().all(|l| !l.starts_with('#')), "{text}");
    assert!(text.starts_with("step,t,dt,"), "{text}");
    assert!(Path::new(&stats).with_extension("params.json").is_file());

    let grains = at("i/j/grains.csv");
    let out = run(&[
        "--model",
        "grains",
        "--headless",
        "--cpu",
        "-n",
        "200",
        "--steps",
        "3",
        "--stats",
        &grains,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&grains).unwrap();
    assert!(text.starts_with("step,t,kinetic,"), "{text}");
    let sidecar =
        std::fs::read_to_string(Path::new(&grains).with_extension("params.json")).unwrap();
    assert!(sidecar.contains("spheres"), "{sidecar}");
}

/// Where stderr is not a terminal a run prints a progress line every few seconds (here every
/// step, `GPU_SPH_PROGRESS_SECONDS=0`) with the share done and the time left; the summary is
/// labelled in plain numbers.
#[test]
fn progress_lines_without_a_terminal_and_a_labelled_summary() {
    let out = bin()
        .args(["--headless", "--cpu", "-n", "500", "--end-time", "0.01"])
        .env("GPU_SPH_PROGRESS_SECONDS", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("%, ")).collect();
    assert!(lines.len() >= 3, "{stderr}");
    assert!(
        lines[1].contains("of 0.01 s") && lines[1].contains("left"),
        "{stderr}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("density min "), "{stdout}");
    assert!(
        stdout.contains(" mean ") && stdout.contains(" max "),
        "{stdout}"
    );
    assert!(!stdout.contains("e0 J"), "{stdout}");

    // Grains' headless runs (hundreds of thousands of steps) were silent without a terminal.
    let out = bin()
        .args([
            "--model",
            "grains",
            "--headless",
            "--cpu",
            "-n",
            "200",
            "--steps",
            "20",
        ])
        .env("GPU_SPH_PROGRESS_SECONDS", "0")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        stderr.contains("gpu-sph: step 10 of 20, t = ") && stderr.contains("left"),
        "{stderr}"
    );
}

/// `--export-format vtu` writes VTK frames and a `.pvd` collection whose times are the `--stats`
/// rows' at the exported steps, each frame with velocity, density, pressure and id; `bgeo`
/// frames read back with the same attributes.
#[test]
fn vtu_and_bgeo_frames_carry_their_times_and_attributes() {
    let dir = tmp_dir().join("series");
    let _ = std::fs::remove_dir_all(&dir);
    let (stats, vtu, bgeo) = (dir.join("s.csv"), dir.join("vtu"), dir.join("bgeo"));
    for (out, format) in [(&vtu, "vtu"), (&bgeo, "bgeo")] {
        let o = run(&[
            "--headless",
            "--cpu",
            "-n",
            "400",
            "--steps",
            "6",
            "--stats",
            stats.to_str().unwrap(),
            "--export-dir",
            out.to_str().unwrap(),
            "--export-every",
            "3",
            "--export-format",
            format,
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    }
    // The row of step k holds the time after it.
    let (header, rows) = stats_rows(&stats);
    let t_col = header.iter().position(|c| c == "t").unwrap();
    let time_after = |k: usize| {
        rows.iter()
            .find(|r| r[0] as usize == k)
            .map_or(0.0, |r| r[t_col])
    };
    let pvd = gpu_sph::series::read_pvd(&vtu.join("frames.pvd")).unwrap();
    let files: Vec<&str> = pvd.iter().map(|e| e.file.as_str()).collect();
    assert_eq!(
        files,
        ["frame_000000.vtu", "frame_000003.vtu", "frame_000006.vtu"]
    );
    for (k, t) in [0usize, 3, 6].iter().zip(pvd.iter().map(|e| e.t)) {
        assert!(
            (t - time_after(*k)).abs() < 1e-8,
            "step {k}: pvd {t}, stats {}",
            time_after(*k)
        );
    }
    let vtk = vtkio::Vtk::import(vtu.join("frame_000003.vtu")).unwrap();
    let vtkio::model::DataSet::UnstructuredGrid { pieces, .. } = vtk.data else {
        panic!("not an unstructured grid");
    };
    let vtkio::model::Piece::Inline(piece) = &pieces[0] else {
        panic!("not inline");
    };
    let names: Vec<String> = piece
        .data
        .point
        .iter()
        .map(|a| match a {
            vtkio::model::Attribute::DataArray(d) => d.name.clone(),
            vtkio::model::Attribute::Field { name, .. } => name.clone(),
        })
        .collect();
    assert_eq!(names, ["velocity", "density", "pressure", "id"]);
    assert_eq!(piece.num_points(), 400);
    let b =
        splashsurf_lib::io::bgeo_format::load_bgeo_file(bgeo.join("frame_000003.bgeo")).unwrap();
    assert_eq!(b.header.num_points, 400);
    let names: Vec<&str> = b.attribute_data.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["v", "density", "pressure", "id"]);
}

/// With `--export-format vtu` and `--surface-dir`, the meshes are VTK XML too and join the
/// frames' `.pvd` as part 1, at their frames' times, named relative to it; a mesh format the
/// collection cannot hold is said in one line and left out.
#[test]
fn surface_meshes_join_the_frames_collection() {
    let dir = tmp_dir().join("series-surfaces");
    let _ = std::fs::remove_dir_all(&dir);
    let (frames, surfaces) = (dir.join("frames"), dir.join("surfaces"));
    let o = run(&[
        "--headless",
        "--cpu",
        "-n",
        "1500",
        "--steps",
        "4",
        "--export-dir",
        frames.to_str().unwrap(),
        "--export-every",
        "2",
        "--export-format",
        "vtu",
        "--surface-dir",
        surfaces.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let pvd = gpu_sph::series::read_pvd(&frames.join("frames.pvd")).unwrap();
    let listed: Vec<(u32, &str)> = pvd.iter().map(|e| (e.part, e.file.as_str())).collect();
    assert_eq!(
        listed,
        [
            (0, "frame_000000.vtu"),
            (1, "../surfaces/surface_000000.vtu"),
            (0, "frame_000002.vtu"),
            (1, "../surfaces/surface_000002.vtu"),
            (0, "frame_000004.vtu"),
            (1, "../surfaces/surface_000004.vtu"),
        ]
    );
    for pair in pvd.chunks(2) {
        assert_eq!(pair[0].t.to_bits(), pair[1].t.to_bits(), "{pair:?}");
    }
    let vtk = vtkio::Vtk::import(surfaces.join("surface_000004.vtu")).unwrap();
    let vtkio::model::DataSet::UnstructuredGrid { pieces, .. } = vtk.data else {
        panic!("not an unstructured grid");
    };
    let vtkio::model::Piece::Inline(piece) = &pieces[0] else {
        panic!("not inline");
    };
    assert!(piece.num_points() > 100, "{}", piece.num_points());
    assert!(
        piece
            .cells
            .types
            .iter()
            .all(|t| *t == vtkio::model::CellType::Triangle)
    );
    let o = run(&[
        "--headless",
        "--cpu",
        "-n",
        "1500",
        "--steps",
        "2",
        "--export-dir",
        dir.join("f2").to_str().unwrap(),
        "--export-format",
        "vtu",
        "--surface-dir",
        dir.join("s2").to_str().unwrap(),
        "--surface-format",
        "obj",
    ]);
    assert!(o.status.success());
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("the OBJ meshes stay out of frames.pvd"),
        "{stderr}"
    );
    let pvd = gpu_sph::series::read_pvd(&dir.join("f2").join("frames.pvd")).unwrap();
    assert!(pvd.iter().all(|e| e.part == 0), "{pvd:?}");
}

/// A reader that goes away (`gpu-sph … | head -1`) ends the run quietly, as it ends `cat`: by
/// SIGPIPE's default action at the next write, not with a panic's backtrace (exit 101), which
/// every print gave while Rust's start-up left SIGPIPE ignored.
#[cfg(unix)]
#[test]
fn a_closed_stdout_ends_the_run_without_a_panic() {
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = bin()
        .args(["--headless", "--cpu", "-n", "2000", "--steps", "200"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGPIPE),
        "{:?}: {stderr}",
        out.status
    );
}
