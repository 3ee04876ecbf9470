//! Checkpoints and `--resume`: a run stopped and resumed ends in the same bits as one that
//! never stopped, on both solvers and both paths; SIGTERM leaves a checkpoint; a bad
//! checkpoint or a physics flag on resume is refused in one line.

use std::path::{Path, PathBuf};
use std::process::Output;

use crate::common;

use common::cli::{assert_usage_error, bin, run, tmp_dir};

fn no_gpu(path: &str, out: &Output) -> bool {
    let stderr = String::from_utf8_lossy(&out.stderr);
    path == "--gpu"
        && stderr.contains("no adapter")
        && std::env::var("GPU_SPH_REQUIRE_GPU").is_err()
}

fn ok(args: &[&str]) -> Option<Output> {
    let out = run(args);
    if no_gpu(args[1], &out) {
        return None;
    }
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(out)
}

/// The `--stats` rows after `from` (comment and header lines dropped).
fn rows_after(path: &Path, from: u64) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|l| {
            l.split(',')
                .next()
                .and_then(|c| c.parse::<u64>().ok())
                .is_some_and(|k| k > from)
        })
        .map(String::from)
        .collect()
}

fn dir(name: &str) -> PathBuf {
    let d = tmp_dir().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn a_resumed_run_ends_in_the_same_bits_as_an_uninterrupted_one() {
    for solver in ["wcsph", "dfsph"] {
        for path in ["--cpu", "--gpu"] {
            let d = dir(&format!("resume-{solver}{path}"));
            let s = |name: &str| d.join(name).to_str().unwrap().to_string();
            let n = if path == "--gpu" { "600" } else { "1500" };
            let base = ["--headless", path, "--solver", solver, "-n", n];
            let (full_csv, full_stats, ck_dir) = (s("full.csv"), s("full.stats"), s("ck"));
            let full = [
                &base[..],
                &[
                    "--steps",
                    "12",
                    "--output",
                    &full_csv,
                    "--stats",
                    &full_stats,
                ],
            ]
            .concat();
            if ok(&full).is_none() {
                continue;
            }
            let first = [
                &base[..],
                &[
                    "--steps",
                    "6",
                    "--checkpoint-every",
                    "3",
                    "--checkpoint-dir",
                    &ck_dir,
                ],
            ]
            .concat();
            ok(&first).unwrap();
            let ck = s("ck/checkpoint_000000006.gpusph");
            assert!(
                Path::new(&ck).exists(),
                "{solver} {path}: no checkpoint at step 6"
            );
            let resumed = [
                "--headless",
                path,
                "--resume",
                &ck,
                "--steps",
                "6",
                "--output",
                &s("resumed.csv"),
                "--stats",
                &s("resumed.stats"),
            ];
            let out = ok(&resumed).unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(stdout.contains("resumed at step 6"), "{stdout}");
            assert_eq!(
                std::fs::read(s("full.csv")).unwrap(),
                std::fs::read(s("resumed.csv")).unwrap(),
                "{solver} {path}: the final states differ"
            );
            let (a, b) = (
                rows_after(Path::new(&s("full.stats")), 6),
                rows_after(Path::new(&s("resumed.stats")), 6),
            );
            assert_eq!(a.len(), 6);
            assert_eq!(a, b, "{solver} {path}: the statistics differ");
        }
    }
}

#[test]
fn sigterm_leaves_a_checkpoint_that_resumes_to_the_same_state() {
    let d = dir("sigterm");
    let s = |name: &str| d.join(name).to_str().unwrap().to_string();
    let base = ["--headless", "--cpu", "-n", "1000"];
    let child = bin()
        .args(base)
        .args(["--steps", "1000000", "--checkpoint-dir", &s("ck")])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(1500));
    // The shell's builtin kill: no procps needed.
    let killed = std::process::Command::new("sh")
        .args(["-c", &format!("kill -TERM {}", child.id())])
        .status()
        .unwrap();
    assert!(killed.success());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(128 + 15), "{stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains("SIGTERM after step"))
        .unwrap_or_else(|| panic!("no SIGTERM line: {stderr}"));
    // "… wrote FILE; continue with: gpu-sph --headless --resume FILE …"
    let ck = line
        .split_once("wrote ")
        .and_then(|(_, rest)| rest.split_once(';'))
        .map(|(file, _)| file.to_string())
        .unwrap_or_else(|| panic!("{line}"));
    assert!(Path::new(&ck).exists(), "{line}");
    let step: u64 = Path::new(&ck)
        .file_stem()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("checkpoint_"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{ck}"));
    assert!(step >= 1);
    let more = 4;
    ok(&[
        "--headless",
        "--cpu",
        "--resume",
        &ck,
        "--steps",
        &more.to_string(),
        "--output",
        &s("resumed.csv"),
    ])
    .unwrap();
    ok(&[
        &base[..],
        &[
            "--steps",
            &(step + more).to_string(),
            "--output",
            &s("full.csv"),
        ],
    ]
    .concat())
    .unwrap();
    assert_eq!(
        std::fs::read(s("full.csv")).unwrap(),
        std::fs::read(s("resumed.csv")).unwrap(),
        "resumed after SIGTERM at step {step}: the final states differ"
    );
}

#[test]
fn a_bad_checkpoint_or_a_physics_flag_on_resume_is_refused_in_one_line() {
    let d = dir("refused");
    let s = |name: &str| d.join(name).to_str().unwrap().to_string();
    ok(&[
        "--headless",
        "--cpu",
        "-n",
        "300",
        "--steps",
        "2",
        "--checkpoint-every",
        "2",
        "--checkpoint-dir",
        &s("ck"),
    ])
    .unwrap();
    let ck = s("ck/checkpoint_000000002.gpusph");
    let resume = ["--headless", "--cpu", "--resume", &ck, "--steps", "1"];
    for (flag, value) in [
        ("--gravity", "-1"),
        ("--sound-speed", "30"),
        ("--solver", "dfsph"),
        ("-n", "300"),
    ] {
        assert_usage_error(
            &[&resume[..], &[flag, value]].concat(),
            "cannot change on --resume",
        );
    }
    // Run control may change.
    ok(&[
        &resume[..],
        &["--stats", &s("x.stats"), "--max-speed-fraction", "0.4"],
    ]
    .concat())
    .unwrap();
    // A resumed run appends its rows: to anything but a statistics file it is refused.
    let foreign = d.join("particles.csv");
    std::fs::write(&foreign, b"x,y,z\n0,0,0\n").unwrap();
    assert_usage_error(
        &[&resume[..], &["--stats", foreign.to_str().unwrap()]].concat(),
        "not a gpu-sph statistics file",
    );
    assert_eq!(std::fs::read(&foreign).unwrap(), b"x,y,z\n0,0,0\n");
    let bytes = std::fs::read(&ck).unwrap();
    let truncated = d.join("truncated.gpusph");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).unwrap();
    let mut flipped = bytes.clone();
    let k = bytes.len() / 3;
    flipped[k] ^= 1;
    let corrupt = d.join("corrupt.gpusph");
    std::fs::write(&corrupt, &flipped).unwrap();
    let mut other = bytes.clone();
    other[8] = 99;
    let version = d.join("version.gpusph");
    std::fs::write(&version, &other).unwrap();
    let not = d.join("not.gpusph");
    std::fs::write(&not, b"x,y,z\n0,0,0\n").unwrap();
    for (file, needle) in [
        (&truncated, "truncated"),
        (&corrupt, "corrupt"),
        (&version, "format 99"),
        (&not, "not a gpu-sph checkpoint"),
    ] {
        assert_usage_error(
            &[
                "--headless",
                "--cpu",
                "--resume",
                file.to_str().unwrap(),
                "--steps",
                "1",
            ],
            needle,
        );
    }
    assert_usage_error(&["--headless", "--cpu", "--resume", &ck], "--steps");
}
