//! Scene files from the command line: a built-in scene's file runs exactly as its name, flags
//! override the file, and every malformed file ends with exit 2 and one line naming the file,
//! the place and the fix.

use crate::common;

use common::cli::{assert_usage_error, file, run, tmp_dir};

const SCENE: &str = r#"{
  "tank": {"min": [0, 0, 0], "max": [0.4, 0.4, 0.2]},
  "fluid": [
    {"shape": {"box": {"min": [0, 0, 0], "max": [0.4, 0.06, 0.2]}}},
    {"shape": {"sphere": {"centre": [0.2, 0.25, 0.1], "radius": 0.06}}, "velocity": [0, -1, 0]}
  ],
  "physics": {"spacing": 0.01, "gravity": 0},
  "run": {"steps": 4},
  "outputs": {"json": true}
}"#;

fn stdout_of(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn a_builtin_scene_file_runs_exactly_as_its_name() {
    let dir = tmp_dir();
    let from_file = dir.join("drop-file.csv");
    let from_name = dir.join("drop-name.csv");
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/drop.json");
    let common = ["--headless", "--cpu", "--steps", "3", "--output"];
    let mut a: Vec<&str> = common.to_vec();
    a.extend([from_file.to_str().unwrap(), "--scene", scene]);
    let mut b: Vec<&str> = common.to_vec();
    b.extend([
        from_name.to_str().unwrap(),
        "--scene",
        "drop",
        "-n",
        "100000",
    ]);
    stdout_of(&a);
    stdout_of(&b);
    let (fa, fb) = (
        std::fs::read(&from_file).unwrap(),
        std::fs::read(&from_name).unwrap(),
    );
    assert!(fa.len() > 100_000, "{}", fa.len());
    assert!(
        fa == fb,
        "the scene file and the built-in name end in different states"
    );
}

#[test]
fn the_file_sets_the_run_and_flags_override_it() {
    let path = file("override.json", SCENE.as_bytes());
    let path = path.to_str().unwrap();
    // From the file alone: 4 steps, no gravity, a JSON summary.
    let text = stdout_of(&["--headless", "--cpu", "--scene", path]);
    let summary: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(summary["steps"], 4, "{text}");
    assert!(
        summary["geometry"]
            .as_str()
            .unwrap()
            .contains("g = 0 m/s^2"),
        "{text}"
    );
    let n = summary["particles"].as_u64().unwrap();
    // 40 x 6 x 20 lattice points under a sphere of radius 6 spacings (about 905 points).
    assert!((4800 + 850..4800 + 960).contains(&n), "{n}");
    // Flags override the file's values; the bodies still fix N.
    let text = stdout_of(&[
        "--headless",
        "--cpu",
        "--scene",
        path,
        "--steps",
        "2",
        "--gravity",
        "-3",
    ]);
    let summary: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(summary["steps"], 2, "{text}");
    assert!(
        summary["geometry"]
            .as_str()
            .unwrap()
            .contains("g = -3 m/s^2"),
        "{text}"
    );
    assert_eq!(summary["particles"].as_u64(), Some(n));
}

#[test]
fn malformed_scene_files_exit_2_with_one_line() {
    let edit = |name: &str, from: &str, to: &str| {
        assert!(SCENE.contains(from), "{from}");
        file(name, SCENE.replacen(from, to, 1).as_bytes())
    };
    let cases = [
        (edit("syntax.json", "\"run\":", "\"run\""), "line 8 column"),
        (
            edit("key.json", "\"gravity\"", "\"gravty\""),
            "physics.gravty: unknown key `gravty`: did you mean `gravity`?",
        ),
        (
            edit(
                "place.json",
                "\"steps\": 4",
                "\"steps\": 4, \"stats\": \"x\"",
            ),
            "belongs in \"outputs\"",
        ),
        (
            edit("shape.json", "\"sphere\"", "\"sphear\""),
            "fluid[1].shape: unknown kind `sphear`: did you mean `sphere`?",
        ),
        (
            edit("type.json", "\"radius\": 0.06", "\"radius\": \"big\""),
            "fluid[1].shape.sphere.radius",
        ),
        (
            edit("value.json", "\"steps\": 4", "\"steps\": -4"),
            "at run.steps",
        ),
        (
            edit("solver.json", "\"gravity\": 0", "\"solver\": \"sph\""),
            "at physics.solver",
        ),
        (
            edit("spacing.json", "\"spacing\": 0.01", "\"spacing\": 0"),
            "spacing.json: at physics.spacing: invalid value '0' for physics.spacing: expected a finite number > 0",
        ),
        (
            edit("steps.json", "\"steps\": 4", "\"steps\": 1.5"),
            "steps.json: at run.steps: invalid value '1.5' for run.steps: expected a whole number of steps",
        ),
        (
            edit(
                "wall.json",
                "\"max\": [0.4, 0.4, 0.2]}",
                "\"max\": [0.4, 0.4, 0.2], \"slip_length\": {\"w-\": 0}}",
            ),
            "at tank.slip_length.w-: no such wall; the walls are x-, x+, y-, y+, z-, z+",
        ),
        (
            edit(
                "slip.json",
                "\"max\": [0.4, 0.4, 0.2]}",
                "\"max\": [0.4, 0.4, 0.2], \"slip_length\": {\"y-\": -1}}",
            ),
            "at tank.slip_length.y-: -1 is no slip length",
        ),
        (
            edit(
                "slipflag.json",
                "\"gravity\": 0",
                "\"wall_slip_length\": \"sticky\"",
            ),
            "at physics.wall_slip_length",
        ),
        (
            edit("outside.json", "\"radius\": 0.06", "\"radius\": 0.3"),
            "fluid[1] spans",
        ),
        (
            edit(
                "zero.json",
                "\"max\": [0.4, 0.06, 0.2]",
                "\"max\": [0.4, 0, 0.2]",
            ),
            "zero or negative size",
        ),
        (
            edit("negative.json", "\"radius\": 0.06", "\"radius\": -0.06"),
            "radius > 0",
        ),
        (
            edit(
                "nan.json",
                "\"velocity\": [0, -1, 0]",
                "\"velocity\": [0, 1e999, 0]",
            ),
            "fluid[1]",
        ),
        (
            edit("huge.json", "\"spacing\": 0.01", "\"spacing\": 0.00001"),
            "more than 2^27",
        ),
        (
            file("scene.toml", b"[tank]\n"),
            "TOML scene files are not supported",
        ),
        (tmp_dir().join("missing.json"), "cannot read scene file"),
    ];
    for (path, needle) in cases {
        assert_usage_error(
            &["--headless", "--cpu", "--scene", path.to_str().unwrap()],
            needle,
        );
    }
    let ok = file("ok.json", SCENE.as_bytes());
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--scene",
            ok.to_str().unwrap(),
            "--input",
            "x.csv",
        ],
        "both bring the fluid",
    );
    assert_usage_error(
        &["--headless", "--cpu", "--scene", "dam-brak"],
        "did you mean dam-break?",
    );
}

#[test]
fn a_scene_beyond_the_device_names_the_limit() {
    let path = file(
        "device.json",
        br#"{"tank": {"min": [0, 0, 0], "max": [5, 5, 5]},
             "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [4.5, 4.5, 4.5]}}}]}"#,
    );
    let out = run(&[
        "--headless",
        "--gpu",
        "--steps",
        "1",
        "--scene",
        path.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    // Without a GPU the run stops earlier, at the adapter; with one required, at the limit.
    let at_limit = stderr.contains("device.json fills 91125000 particles")
        && stderr.contains("max_storage_buffer_binding_size");
    if std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() == Ok("1") {
        assert!(at_limit, "{stderr}");
    } else {
        assert!(at_limit || stderr.contains("adapter"), "{stderr}");
    }
}

#[test]
fn print_scene_writes_the_builtin_file() {
    let text = stdout_of(&["--print-scene", "dam-break"]);
    let shipped = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/scenes/dam-break.json"
    ))
    .unwrap();
    assert_eq!(text, shipped);
}

/// A binary STL of the box [lo, hi] (12 facets), or its first `facets` facets.
fn box_stl(lo: f32, hi: f32, facets: usize) -> Vec<u8> {
    let c = |i: u32| {
        [
            if i & 1 == 0 { lo } else { hi },
            if i & 2 == 0 { lo } else { hi },
            if i & 4 == 0 { lo } else { hi },
        ]
    };
    let quads = [
        [0, 2, 3, 1],
        [4, 5, 7, 6],
        [0, 1, 5, 4],
        [2, 6, 7, 3],
        [0, 4, 6, 2],
        [1, 3, 7, 5],
    ];
    let mut tris = Vec::new();
    for q in quads {
        tris.push([c(q[0]), c(q[1]), c(q[2])]);
        tris.push([c(q[0]), c(q[2]), c(q[3])]);
    }
    tris.truncate(facets);
    let mut out = vec![0u8; 80];
    out.extend((tris.len() as u32).to_le_bytes());
    for t in tris {
        out.extend([0u8; 12]);
        for v in t {
            for x in v {
                out.extend(x.to_le_bytes());
            }
        }
        out.extend([0u8; 2]);
    }
    out
}

fn mesh_scene(name: &str, mesh: &str) -> std::path::PathBuf {
    let text = format!(
        r#"{{"tank": {{"min": [0, 0, 0], "max": [0.4, 0.4, 0.4]}},
            "fluid": [{{"shape": {{"mesh": {{"file": "{mesh}", "translation": [0.1, 0.1, 0.1]}}}}}}]}}"#
    );
    file(name, text.as_bytes())
}

#[test]
fn a_binary_stl_fills_its_box_and_bad_meshes_exit_2() {
    file("box.stl", &box_stl(0.0, 0.2, 12));
    let ok = mesh_scene("stl.json", "box.stl");
    let text = stdout_of(&[
        "--headless",
        "--cpu",
        "--json",
        "--scene",
        ok.to_str().unwrap(),
    ]);
    let summary: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    // A box of 0.2 m at s = 0.01 m: 20³ cell centres inside.
    assert_eq!(summary["config"]["particles"], 8000, "{text}");

    file("open.stl", &box_stl(0.0, 0.2, 11));
    let mut truncated = box_stl(0.0, 0.2, 12);
    truncated.truncate(300);
    file("cut.stl", &truncated);
    file("empty.obj", b"# nothing\n");
    file("nan.obj", b"v 0 0 0\nv nan 0 0\nv 0 1 0\nf 1 2 3\n");
    file("model.ply", b"ply\n");
    let cases = [
        ("missing.json", "nowhere.obj", "cannot read mesh"),
        ("open.json", "open.stl", "is not closed"),
        ("cut.json", "cut.stl", "cannot read mesh"),
        ("empty.json", "empty.obj", "has no triangles"),
        ("nan.json", "nan.obj", "non-finite vertex"),
        ("ply.json", "model.ply", "give a .obj or .stl file"),
    ];
    for (scene, mesh, needle) in cases {
        let path = mesh_scene(&format!("mesh-{scene}"), mesh);
        assert_usage_error(
            &["--headless", "--cpu", "--scene", path.to_str().unwrap()],
            needle,
        );
    }
    // The same open mesh as an obstacle is refused as an obstacle, not as a fluid body.
    let obstacle = file(
        "open-obstacle.json",
        br#"{"tank": {"min": [0, 0, 0], "max": [0.6, 0.4, 0.4]},
            "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.1, 0.1, 0.1]}}}],
            "obstacles": [{"shape": {"mesh": {"file": "open.stl", "translation": [0.3, 0.1, 0.1]}}}],
            "physics": {"spacing": 0.02}}"#,
    );
    assert_usage_error(
        &["--headless", "--cpu", "--scene", obstacle.to_str().unwrap()],
        "obstacles[0].shape.mesh: mesh",
    );
    assert_usage_error(
        &["--headless", "--cpu", "--scene", obstacle.to_str().unwrap()],
        "an obstacle (its inside is kept clear of fluid) needs a watertight mesh",
    );
}

#[test]
fn example_scenes_load_and_fill() {
    let dir = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/examples"));
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    assert!(names.len() >= 3, "{names:?}");
    for path in names {
        let file = gpu_sph::scene_file::SceneFile::read(&path).unwrap();
        if file.physics.get("model").and_then(|m| m.as_str()) == Some("grains") {
            // Colliding spheres fill the bodies at 2.2 radii.
            let radius = file.physics["grain_radius"].as_f64().unwrap() as f32;
            let dim = file
                .physics
                .get("dim")
                .and_then(|d| d.as_u64())
                .unwrap_or(3);
            let cfg = gpu_sph::grains::GrainConfig {
                radius,
                dim: dim as u32,
                ..Default::default()
            };
            let choice = gpu_sph::scene::SceneChoice::Described {
                name: path.display().to_string(),
                desc: std::sync::Arc::new(file.desc()),
            };
            let setup = gpu_sph::grains::GrainSetup::from_scene(&cfg, &choice).unwrap();
            assert!(setup.len() > 100 && !setup.obstacles.is_empty(), "{path:?}");
            continue;
        }
        let s = file.physics["spacing"].as_f64().unwrap() as f32;
        let scene = file.desc().build("example", s, 0).unwrap();
        assert!(scene.positions.len() > 1000, "{path:?}");
    }
}

/// The particles a density-only run (`--steps 0`) of `args` writes: their count, and the
/// extents of the fluid along x, y and z.
fn fluid_extent(name: &str, args: &[&str]) -> (usize, [f64; 3]) {
    let out = tmp_dir().join(name);
    let mut all = vec!["--headless", "--cpu", "--output", out.to_str().unwrap()];
    all.extend_from_slice(args);
    stdout_of(&all);
    let text = std::fs::read_to_string(&out).unwrap();
    let (mut lo, mut hi) = ([f64::INFINITY; 3], [f64::NEG_INFINITY; 3]);
    let mut n = 0;
    for line in text.lines().skip(1) {
        let v: Vec<f64> = line
            .split(',')
            .take(3)
            .map(|x| x.parse().unwrap())
            .collect();
        for k in 0..3 {
            lo[k] = lo[k].min(v[k]);
            hi[k] = hi[k].max(v[k]);
        }
        n += 1;
    }
    (n, [hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2]])
}

/// `-n N` with a scene file rescales its spacing: the dam-break file at -n 12000 holds about
/// 12 000 particles in a column of the 100k file's shape (aspect ratios within 10%), and a
/// smoothing radius the file gives keeps its ratio to the spacing.
#[test]
fn n_with_a_scene_file_rescales_its_spacing_and_keeps_the_shape() {
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/dam-break.json");
    let (n_full, full) = fluid_extent("full.csv", &["--scene", scene]);
    let (n_small, small) = fluid_extent("small.csv", &["--scene", scene, "-n", "12000"]);
    assert!(n_full > 95_000, "{n_full}");
    assert!(n_small.abs_diff(12_000) < 600, "{n_small}");
    for (k, axis) in [(0, "x"), (2, "z")] {
        let (a, b) = (full[1] / full[k], small[1] / small[k]);
        assert!(
            (b / a - 1.0).abs() < 0.1,
            "height/{axis}: {a} at 100k, {b} at 12k"
        );
    }
    // A file that sets h = 2.5 s keeps h = 2.5 s at the new spacing.
    let path = file(
        "scaled_h.json",
        r#"{"tank": {"min": [0, 0, 0], "max": [0.4, 0.4, 0.2]},
            "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [0.2, 0.2, 0.2]}}}],
            "physics": {"spacing": 0.01, "smoothing_radius": 0.025}}"#
            .as_bytes(),
    );
    let out = run(&[
        "--headless",
        "--cpu",
        "--scene",
        path.to_str().unwrap(),
        "-n",
        "1000",
        "--json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let (h, s) = (
        json["config"]["smoothing_radius"].as_f64().unwrap(),
        json["config"]["spacing"].as_f64().unwrap(),
    );
    assert!((h / s - 2.5).abs() < 1e-3, "h {h}, s {s}");
    assert!(
        (s / 0.01 - 2.0).abs() < 0.1,
        "8000 → 1000 particles doubles s: {s}"
    );
}

/// `--print-scene NAME -n N` prints the file of that N, which runs as the built-in scene does;
/// -n and --spacing together on a file are refused.
#[test]
fn print_scene_at_n_and_n_with_spacing_on_a_file() {
    let text = stdout_of(&["--print-scene", "drop", "-n", "5000"]);
    assert!(text.contains("N = 5000"), "{text}");
    let printed = file("drop5000.json", text.as_bytes());
    let (from_file, _) = fluid_extent("drop5000-file.csv", &["--scene", printed.to_str().unwrap()]);
    let (from_name, _) = fluid_extent("drop5000-name.csv", &["--scene", "drop", "-n", "5000"]);
    assert_eq!(from_file, from_name);
    let scene = concat!(env!("CARGO_MANIFEST_DIR"), "/scenes/drop.json");
    assert_usage_error(
        &[
            "--headless",
            "--scene",
            scene,
            "-n",
            "5000",
            "--spacing",
            "0.02",
        ],
        "give one",
    );
}

/// Limits read `max_…`/`min_…` and colour has one spelling; files and scripts written with the
/// old names (`dt_max`, `--dt-max`, `color_by`) still run, the same as with the new ones.
#[test]
fn renamed_keys_and_flags_still_read() {
    let text = |physics: &str| {
        format!(
            r#"{{"tank": {{"min": [0, 0, 0], "max": [0.3, 0.3, 0.3]}},
                "fluid": [{{"shape": {{"box": {{"min": [0, 0, 0], "max": [0.1, 0.1, 0.1]}}}}}}],
                "physics": {{"spacing": 0.02, {physics}}}}}"#
        )
    };
    let old = file("old-keys.json", text(r#""dt_max": 0.002"#).as_bytes());
    let new = file("new-keys.json", text(r#""max_dt": 0.002"#).as_bytes());
    let both = file(
        "both-keys.json",
        text(r#""dt_max": 0.002, "max_dt": 0.002"#).as_bytes(),
    );
    let run_json = |args: &[&str]| -> serde_json::Value {
        let mut all = vec!["--headless", "--cpu", "--steps", "3", "--json"];
        all.extend_from_slice(args);
        serde_json::from_str(stdout_of(&all).trim()).unwrap()
    };
    let a = run_json(&["--scene", old.to_str().unwrap()]);
    let b = run_json(&["--scene", new.to_str().unwrap()]);
    assert_eq!(a["last"], b["last"]);
    assert!(a["last"]["dt"].as_f64().unwrap() <= 0.002 + 1e-9);
    let c = run_json(&["-n", "300", "--dt-max", "0.002"]);
    let d = run_json(&["-n", "300", "--max-dt", "0.002"]);
    assert_eq!(c["last"], d["last"]);
    assert_usage_error(
        &["--headless", "--cpu", "--scene", both.to_str().unwrap()],
        "`dt_max` is the old name of `max_dt`",
    );
}
