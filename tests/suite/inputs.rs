//! Bad inputs, third round: nothing hangs, nothing is spliced, nothing is found out late, the
//! true cause is named, nothing odd is accepted without a word; and a property test per input
//! surface (flags, scene JSON, checkpoints, environment; particle files are `tests/parsers.rs`)
//! holding the contract: exit 0 (a run) or exit 2 with one line, within a bound, never a panic,
//! never a changed input file.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::common::cli::{assert_usage_error, bin, file, run, run_ok, tmp_dir};

/// Sends `signal` (INT, TERM) to `child` through the shell's builtin kill.
fn signal(child: &Child, signal: &str) {
    let ok = Command::new("sh")
        .args(["-c", &format!("kill -{signal} {}", child.id())])
        .status()
        .unwrap();
    assert!(ok.success());
}

/// Waits for `child` at most `limit`, killing it past that: a hang is a failure, not a stuck
/// test.
fn wait_within(mut child: Child, limit: Duration, what: &str) -> Output {
    let start = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            return child.wait_with_output().unwrap();
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().unwrap();
            panic!(
                "{what}: still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Starts `cmd` with a progress line every step and its stderr watched.
fn started(cmd: &mut Command) -> (Child, Watch) {
    let mut child = cmd
        .env("GPU_SPH_PROGRESS_SECONDS", "0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let watch = Watch::new(&mut child);
    (child, watch)
}

/// A child's stderr, read on a thread of its own as it comes.
struct Watch {
    text: std::sync::Arc<std::sync::Mutex<String>>,
    reader: std::thread::JoinHandle<()>,
}

impl Watch {
    fn new(child: &mut Child) -> Self {
        let mut err = child.stderr.take().unwrap();
        let text = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = text.clone();
        let reader = std::thread::spawn(move || {
            let mut buf = [0u8; 256];
            while let Ok(k) = err.read(&mut buf) {
                if k == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..k]));
            }
        });
        Self { text, reader }
    }

    /// Waits until the stderr holds `needle` (the run reached that point).
    fn until(&self, needle: &str, limit: Duration) {
        let start = Instant::now();
        while !self.text.lock().unwrap().contains(needle) {
            assert!(
                start.elapsed() < limit,
                "never printed {needle:?}: {}",
                self.text.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Everything the child printed, once it has ended.
    fn all(self) -> String {
        self.reader.join().unwrap();
        self.text.lock().unwrap().clone()
    }
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_string()
}

// ---------------------------------------------------------------------------------------------
// 1. Nothing hangs, and signals are honoured from the first instruction to the last.

#[test]
fn a_signal_during_set_up_stops_at_once_with_one_line_and_writes_nothing() {
    let d = tmp_dir().join("setup");
    // A million particles' set-up (the glass, the checks, the solver's buffers) takes
    // seconds: the signal lands inside it.
    let child = bin()
        .args(["--headless", "--cpu", "-n", "1000000", "--steps", "5"])
        .args(["--stats", &s(&d.join("s.csv")), "--checkpoint-dir"])
        .arg(d.join("ck"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(400));
    signal(&child, "INT");
    let out = wait_within(child, Duration::from_secs(10), "SIGINT in set-up");
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(128 + 2), "{err}");
    assert!(
        err.contains("SIGINT: stopped before the run wrote anything"),
        "{err}"
    );
    assert!(!d.join("s.csv").exists() && !d.join("ck").exists(), "{err}");
}

#[test]
fn a_second_signal_stops_at_once_naming_what_was_kept() {
    let d = tmp_dir().join("second");
    // In the steps: a progress line per step.
    let (child, watch) = started(
        bin()
            .args(["--headless", "--cpu", "-n", "60000", "--steps", "1000"])
            .arg("--checkpoint-dir")
            .arg(d.join("ck")),
    );
    watch.until("step 1 of", Duration::from_secs(120));
    signal(&child, "INT");
    std::thread::sleep(Duration::from_millis(30));
    signal(&child, "INT");
    let out = wait_within(child, Duration::from_secs(30), "two SIGINTs");
    // The first signal's line and the second's: exit 128 + 2, never 1 (a diverged run).
    let err = watch.all();
    assert_eq!(out.status.code(), Some(130), "{err}");
    assert!(
        err.contains("SIGINT: stopping after the step under way"),
        "{err}"
    );
    let last = err
        .lines()
        .find(|l| l.starts_with("gpu-sph: second SIGINT") || l.contains("SIGINT after step"))
        .unwrap_or_else(|| panic!("no line for the second SIGINT: {err}"));
    // Whatever checkpoint a line names is whole: it resumes.
    if let Some(ck) = last
        .split_whitespace()
        .find(|w| w.ends_with(".gpusph") || w.ends_with(".gpusph;"))
    {
        let ck = ck.trim_end_matches(';');
        run_ok(&["--headless", "--cpu", "--resume", ck, "--steps", "1"]);
    } else {
        assert!(last.contains("wrote no checkpoint"), "{last}");
    }
}

#[test]
fn set_up_that_would_take_long_is_refused_up_front() {
    // h/s = 50: half a million neighbours each; set-up stalled, a step took 33 s at 10 000.
    let start = Instant::now();
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "-n",
            "20000",
            "--smoothing-radius",
            "0.5",
            "--steps",
            "1",
        ],
        "neighbours",
    );
    // The same for a density-only run and for a particle file.
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "-n",
            "20000",
            "--smoothing-radius",
            "0.2",
        ],
        "neighbours",
    );
    assert!(start.elapsed() < Duration::from_secs(30));
    // Spheres are bounded as the fluid is: a count past 2^27 grew memory until killed.
    for n in ["200000000", "2000000000"] {
        assert_usage_error(
            &[
                "--headless",
                "--cpu",
                "--model",
                "grains",
                "-n",
                n,
                "--steps",
                "1",
            ],
            "at most 134217728 spheres",
        );
    }
    // Small built-in scenes are refused at once (the bound's search filled up to 999 glass
    // scenes: minutes).
    let start = Instant::now();
    assert_usage_error(
        &["--headless", "--cpu", "-n", "2", "--steps", "1"],
        "too few particles for scene dam-break",
    );
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[test]
fn spheres_stop_on_a_signal_with_one_line() {
    let d = tmp_dir().join("grains");
    let stats = d.join("g.csv");
    std::fs::create_dir_all(&d).unwrap();
    let (child, watch) = started(
        bin()
            .args(["--headless", "--cpu", "--model", "grains", "-n", "2000"])
            .args(["--steps", "100000000", "--stats", &s(&stats)]),
    );
    watch.until("step ", Duration::from_secs(60));
    signal(&child, "TERM");
    let out = wait_within(child, Duration::from_secs(20), "SIGTERM to spheres");
    let err = watch.all();
    assert_eq!(out.status.code(), Some(128 + 15), "{err}");
    assert!(err.contains("SIGTERM after step"), "{err}");
    let rows = std::fs::read_to_string(&stats).unwrap();
    assert!(rows.lines().count() >= 2, "{rows}");
}

// ---------------------------------------------------------------------------------------------
// 2. Nothing is spliced: a resumed run appends only to its own statistics.

#[test]
fn a_resumed_run_appends_only_to_its_own_statistics() {
    let d = tmp_dir();
    let p = |n: &str| s(&d.join(n));
    let base = ["--headless", "--cpu", "-n", "1000"];
    run_ok(
        &[
            &base[..],
            &[
                "--steps",
                "12",
                "--checkpoint-every",
                "10",
                "--stats",
                &p("own.csv"),
            ],
            &["--checkpoint-dir", &p("ck")],
        ]
        .concat(),
    );
    let ck = p("ck/checkpoint_000000010.gpusph");
    let resume = |stats: &str| {
        [
            "--headless",
            "--cpu",
            "--resume",
            &ck,
            "--steps",
            "2",
            "--stats",
            stats,
        ]
        .map(String::from)
    };
    fn args(v: &[String; 8]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    // Another N, another solver: their .params.json differs.
    run_ok(&[
        "--headless",
        "--cpu",
        "-n",
        "1500",
        "--steps",
        "3",
        "--stats",
        &p("other_n.csv"),
    ]);
    run_ok(
        &[
            &base[..],
            &[
                "--solver",
                "wcsph",
                "--steps",
                "12",
                "--stats",
                &p("wcsph.csv"),
            ],
        ]
        .concat(),
    );
    for (stats, needle) in [
        ("other_n.csv", "holds the statistics of another run"),
        ("wcsph.csv", "holds the statistics of another run"),
    ] {
        let sidecar = d.join(stats).with_extension("params.json");
        let before = (
            std::fs::read(p(stats)).unwrap(),
            std::fs::read(&sidecar).unwrap(),
        );
        assert_usage_error(&args(&resume(&p(stats))), needle);
        let after = (
            std::fs::read(p(stats)).unwrap(),
            std::fs::read(&sidecar).unwrap(),
        );
        assert_eq!(after, before, "{stats} or its .params.json changed");
    }
    // The run's own file, cut short of the checkpoint or with a row missing.
    let own = std::fs::read_to_string(p("own.csv")).unwrap();
    let lines: Vec<&str> = own.lines().collect();
    let sidecar = std::fs::read(p("own.params.json")).unwrap();
    for (name, kept, needle) in [
        (
            "short.csv",
            [&lines[..4]].concat(),
            "holds rows up to step 3",
        ),
        (
            "jump.csv",
            [&lines[..4], &lines[8..]].concat(),
            "rows jump from step 3 to step 8",
        ),
    ] {
        std::fs::write(p(name), kept.join("\n") + "\n").unwrap();
        std::fs::write(d.join(name).with_extension("params.json"), &sidecar).unwrap();
        assert_usage_error(&args(&resume(&p(name))), needle);
    }
    // Its own file resumes, keeping its rows to step 10 and continuing at 11.
    run_ok(&args(&resume(&p("own.csv"))));
    let after = std::fs::read_to_string(p("own.csv")).unwrap();
    let steps: Vec<&str> = after
        .lines()
        .skip(1)
        .map(|l| l.split(',').next().unwrap())
        .collect();
    assert_eq!(steps, (1..=12).map(|k| k.to_string()).collect::<Vec<_>>());
}

// ---------------------------------------------------------------------------------------------
// 3. Nothing is found out late: every output is checked before the run writes any.

#[test]
fn outputs_are_checked_before_anything_is_written() {
    let d = tmp_dir();
    let p = |n: &str| s(&d.join(n));
    std::fs::create_dir_all(d.join("a_dir")).unwrap();
    std::fs::write(d.join("a_file"), b"kept").unwrap();
    let base = ["--headless", "--cpu", "-n", "1000", "--steps", "3"];
    let stats = p("stats.csv");
    for (extra, needle) in [
        (
            vec!["--checkpoint-dir", &p("a_file/ck")],
            "a_file is a file, not a directory",
        ),
        (
            vec!["--checkpoint-dir", &p("a_file")],
            "where --checkpoint-dir needs a directory",
        ),
        (
            vec!["--screenshot", &p("a_dir")],
            "--screenshot names a file",
        ),
        (
            vec!["--export-dir", &p("a_file")],
            "where --export-dir needs a directory",
        ),
        (vec!["--output", &p("a_dir")], "--output names a file"),
        (vec!["--surface-dir", &p("a_file/m")], "a_file is a file"),
    ] {
        let args: Vec<&str> = base
            .iter()
            .copied()
            .chain(["--stats", &stats])
            .chain(extra)
            .collect();
        assert_usage_error(&args, needle);
        assert!(
            !d.join("stats.csv").exists(),
            "{args:?} wrote --stats first"
        );
        assert!(!d.join("stats.params.json").exists(), "{args:?}");
    }
    // A directory that exists but cannot be written (permission bits bind every user but
    // root, for whom the probe file is the only test there is).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        use std::os::unix::fs::PermissionsExt;
        let ro = d.join("read_only");
        std::fs::create_dir_all(&ro).unwrap();
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
        assert_usage_error(
            &[&base[..], &["--checkpoint-dir", &s(&ro)]].concat(),
            "--checkpoint-dir cannot write into",
        );
        std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // --stats aimed at a directory leaves no orphan sidecar.
    assert_usage_error(
        &[&base[..], &["--stats", &p("a_dir")]].concat(),
        "--stats names a file",
    );
    assert!(!d.join("a_dir.params.json").exists());
    assert_eq!(std::fs::read(d.join("a_file")).unwrap(), b"kept");
}

#[test]
fn the_line_a_signal_prints_resumes_as_printed() {
    let d = tmp_dir();
    let (child, watch) = started(
        bin()
            .current_dir(&d)
            .args(["--headless", "--cpu", "-n", "1000", "--steps", "1000000"])
            .args(["--stats", "run.csv"]),
    );
    watch.until("step 3 of", Duration::from_secs(60));
    signal(&child, "TERM");
    let out = wait_within(child, Duration::from_secs(20), "SIGTERM");
    let rest = watch.all();
    assert_eq!(out.status.code(), Some(143), "{rest}");
    let printed = rest
        .lines()
        .find_map(|l| {
            l.split_once("continue with: gpu-sph ")
                .map(|(_, c)| c.to_string())
        })
        .unwrap_or_else(|| panic!("no command to continue with: {rest}"));
    assert!(
        printed.contains("--steps ") && printed.contains("--stats run.csv"),
        "{printed}"
    );
    // Run as printed (its words; no path here holds a space), stopped once it has resumed.
    let (again, watch) = started(bin().current_dir(&d).args(printed.split_whitespace()));
    watch.until("of 1000000", Duration::from_secs(60));
    signal(&again, "TERM");
    let out = wait_within(again, Duration::from_secs(20), "the printed command");
    assert_eq!(out.status.code(), Some(143));
}

// ---------------------------------------------------------------------------------------------
// 4. The true cause is named.

#[test]
fn the_true_cause_is_named() {
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--tank-min",
            "1,1,1",
            "--tank-max",
            "0,0,0",
            "--steps",
            "1",
        ],
        "--tank-min [1, 1, 1] is not below --tank-max [0, 0, 0] in x",
    );
    // A scene file's value: its file and key path, not a flag the user never typed.
    let scene = run_ok(&["--print-scene", "cube", "-n", "300"]).stdout;
    let mut json: serde_json::Value = serde_json::from_slice(&scene).unwrap();
    json["outputs"] = serde_json::json!({ "export_every": 0 });
    json["physics"]["solver"] = serde_json::json!("wcsph");
    let f = file("bad.json", json.to_string().as_bytes());
    let out = run(&[
        "--headless",
        "--cpu",
        "--scene",
        &s(&f),
        "--steps",
        "2",
        "--export-dir",
        &s(&tmp_dir().join("frames")),
    ]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.json: at outputs.export_every: outputs.export_every must be ≥ 1"),
        "{err}"
    );
    assert!(!err.contains("--export-every"), "{err}");
    // A particle file's value: its row and column.
    let f = file(
        "fast.csv",
        b"x,y,z,vx,vy,vz\n0,0,0,0,0,0\n0.01,0,0,0,0,0\n0,0.01,0,0,-1e30,0\n",
    );
    for extra in [&[][..], &["--sound-speed", "50"][..]] {
        assert_usage_error(
            &[
                &["--headless", "--cpu", "--input", &s(&f), "--steps", "1"][..],
                extra,
            ]
            .concat(),
            "fast.csv: data row 3 (particle 2), column vy",
        );
    }
    // A sparse file is told its own spacing, and runs with it.
    let mut sparse = String::from("x,y,z\n");
    for i in 0..6 {
        for j in 0..6 {
            sparse += &format!("{},{},0.5\n", 0.5 * i as f32, 0.5 * j as f32);
        }
    }
    let f = file("sparse.csv", sparse.as_bytes());
    let args = ["--headless", "--cpu", "--input", &s(&f), "--steps", "1"];
    assert_usage_error(&args, "the points lie about 0.500 m apart");
    for again in [
        &["--smoothing-radius", "0.02"][..],
        &["--spacing", "0.5"][..],
    ] {
        let out = run(&[&args[..], again].concat());
        let err = stderr(&out);
        if again[0] == "--spacing" {
            assert_eq!(out.status.code(), Some(0), "{err}");
        } else {
            // The suggestion is not the value just passed.
            assert!(err.contains("--spacing 0.500"), "{err}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 5. Nothing odd is accepted without a word.

#[test]
fn odd_inputs_are_refused_with_a_word() {
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "--scene",
            "cube",
            "-n",
            "1",
            "--steps",
            "1",
        ],
        "a fluid needs two or more",
    );
    let one = file("one.csv", b"x,y,z\n0.1,0.1,0.1\n");
    assert_usage_error(
        &["--headless", "--cpu", "--input", &s(&one), "--steps", "1"],
        "one.csv holds one particle",
    );
    assert_usage_error(
        &[
            "--headless",
            "--cpu",
            "-n",
            "1000",
            "--tank-min",
            "-1e30,-1e30,-1e30",
            "--tank-max",
            "1e30,1e30,1e30",
            "--steps",
            "1",
        ],
        "reach 1.000e30 m from the origin",
    );
    for (var, value) in [
        ("GPU_SPH_PROGRESS_SECONDS", "soon"),
        ("WGPU_BACKEND", "vulkan,cuda"),
        ("WGPU_POWER_PREF", "max"),
    ] {
        let out = bin()
            .env(var, value)
            .args(["--headless", "--cpu", "-n", "300", "--steps", "1"])
            .output()
            .unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{var}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{err}");
        assert!(err.contains(&format!("{var}={value:?}")), "{err}");
    }
}

// ---------------------------------------------------------------------------------------------
// Property tests, one per input surface: exit 0 or exit 2 with one line, within a bound,
// never a panic, never a changed input file.

/// Runs `cmd` under the contract (exit 0; exit 2 with one line; or, for a run that set out and
/// diverged, exit 1 with one line naming the step); `inputs` are files it reads, which must
/// not change.
fn holds_contract(mut cmd: Command, inputs: &[PathBuf], what: &str) -> Result<(), TestCaseError> {
    let before: Vec<Vec<u8>> = inputs.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_within(child, Duration::from_secs(60), what);
    let err = stderr(&out);
    prop_assert!(!err.contains("panicked"), "{what}: {err}");
    match out.status.code() {
        Some(0) => {}
        // A run that set out and diverged: one line naming the step.
        Some(1) => {
            let lines: Vec<&str> = err.lines().filter(|l| !l.contains("warning")).collect();
            prop_assert_eq!(lines.len(), 1, "{}: {}", what, err);
            prop_assert!(lines[0].starts_with("gpu-sph: step "), "{what}: {err}");
        }
        Some(2) => {
            prop_assert_eq!(err.trim_end().lines().count(), 1, "{}: {}", what, err);
            prop_assert!(err.starts_with("gpu-sph: "), "{what}: {err}");
        }
        code => prop_assert!(false, "{what}: exit {code:?}: {err}"),
    }
    for (p, b) in inputs.iter().zip(&before) {
        prop_assert_eq!(
            &std::fs::read(p).unwrap(),
            b,
            "{} changed {}",
            what,
            p.display()
        );
    }
    Ok(())
}

/// A value a user might type for a flag: numbers of every size and sign, and words.
fn a_value() -> impl Strategy<Value = String> {
    prop_oneof![
        (-1e6f64..1e6).prop_map(|v| format!("{v}")),
        prop::sample::select(vec![
            "0",
            "-0",
            "1",
            "-1",
            "nan",
            "inf",
            "-inf",
            "1e30",
            "-1e30",
            "1e-30",
            "0.5",
            "2",
            "abc",
            "",
            "1,2",
            "1,2,3",
            "0,0,0",
            "1e9,1e9,1e9",
            "dfsph",
            "wcsph",
            "x.csv",
        ])
        .prop_map(String::from),
    ]
}

const FLAGS: &[&str] = &[
    "--spacing",
    "--smoothing-radius",
    "--rest-density",
    "--sound-speed",
    "--alpha",
    "--gravity",
    "--cfl",
    "--max-dt",
    "--min-dt",
    "--dt",
    "--solver",
    "--relaxation",
    "--max-iterations",
    "--density-tolerance",
    "--divergence-tolerance",
    "--kinematic-viscosity",
    "--table-size",
    "--group-size",
    "--tank-min",
    "--tank-max",
    "--end-time",
    "--export-every",
    "--max-density-ratio",
    "--energy-margin",
    "--seed",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn any_flag_value_is_a_run_or_one_line(
        picks in prop::collection::vec((prop::sample::select(FLAGS.to_vec()), a_value()), 1..3),
    ) {
        let mut cmd = bin();
        cmd.current_dir(tmp_dir())
            .args(["--headless", "--cpu", "--scene", "cube", "-n", "300", "--steps", "2"]);
        for (flag, value) in &picks {
            cmd.arg(format!("{flag}={value}"));
        }
        holds_contract(cmd, &[], &format!("{picks:?}"))?;
    }

    #[test]
    fn any_scene_file_is_a_run_or_one_line(
        edits in prop::collection::vec((0usize..64, a_value()), 1..4),
    ) {
        let scene = run_ok(&["--print-scene", "cube", "-n", "300"]).stdout;
        let mut json: serde_json::Value = serde_json::from_slice(&scene).unwrap();
        // Replace the k-th leaf (depth first) by a value of another kind, or drop its key.
        for (k, value) in &edits {
            let mut leaves = Vec::new();
            collect_leaves(&json, String::new(), &mut leaves);
            let at = &leaves[k % leaves.len()];
            let new = serde_json::from_str(value).unwrap_or(serde_json::Value::String(value.clone()));
            if let Some(slot) = json.pointer_mut(at) {
                *slot = if value.is_empty() { serde_json::Value::Null } else { new };
            }
        }
        let f = file("fuzz.json", json.to_string().as_bytes());
        let mut cmd = bin();
        cmd.current_dir(tmp_dir())
            .args(["--headless", "--cpu", "--steps", "2", "--scene"])
            .arg(&f);
        holds_contract(cmd, std::slice::from_ref(&f), &json.to_string())?;
    }

    #[test]
    fn any_damaged_checkpoint_is_a_run_or_one_line(
        cuts in prop::collection::vec((0.0f64..1.0, any::<u8>()), 1..4),
        truncate in prop::option::of(0.0f64..1.0),
    ) {
        let ck = checkpoint();
        let mut bytes = std::fs::read(&ck).unwrap();
        for (at, byte) in &cuts {
            let i = ((bytes.len() - 1) as f64 * at) as usize;
            bytes[i] ^= byte | 1;
        }
        if let Some(t) = truncate {
            bytes.truncate((bytes.len() as f64 * t) as usize);
        }
        let f = file("damaged.gpusph", &bytes);
        let mut cmd = bin();
        cmd.current_dir(tmp_dir())
            .args(["--headless", "--cpu", "--steps", "1", "--resume"])
            .arg(&f);
        holds_contract(cmd, std::slice::from_ref(&f), &format!("{cuts:?} {truncate:?}"))?;
    }

    #[test]
    fn any_environment_is_a_run_or_one_line(
        vars in prop::collection::vec((
            prop::sample::select(vec![
                "GPU_SPH_PROGRESS_SECONDS", "WGPU_BACKEND", "WGPU_POWER_PREF",
                "WGPU_ADAPTER_NAME", "GPU_SPH_FAULT_DEVICE_LOSS_AFTER",
            ]),
            a_value(),
        ), 1..3),
    ) {
        let mut cmd = bin();
        cmd.current_dir(tmp_dir())
            .args(["--headless", "--cpu", "-n", "300", "--scene", "cube", "--steps", "2"]);
        for (var, value) in &vars {
            cmd.env(var, value);
        }
        holds_contract(cmd, &[], &format!("{vars:?}"))?;
    }
}

/// JSON pointers to every leaf of `v`.
fn collect_leaves(v: &serde_json::Value, at: String, out: &mut Vec<String>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, x) in m {
                collect_leaves(x, format!("{at}/{k}"), out);
            }
        }
        serde_json::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                collect_leaves(x, format!("{at}/{i}"), out);
            }
        }
        _ => out.push(at),
    }
}

/// A small run's checkpoint, made once per test thread.
fn checkpoint() -> PathBuf {
    let d = tmp_dir().join("source");
    let ck = d.join("checkpoint_000000002.gpusph");
    if !ck.exists() {
        run_ok(&[
            "--headless",
            "--cpu",
            "--scene",
            "cube",
            "-n",
            "300",
            "--steps",
            "2",
            "--checkpoint-every",
            "2",
            "--checkpoint-dir",
            &s(&d),
        ]);
    }
    ck
}
