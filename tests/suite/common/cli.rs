//! Running the `gpu-sph` binary from tests: no window ever, one temporary directory per test,
//! and the one-line usage-error check.

use std::path::PathBuf;
use std::process::{Command, Output};

pub fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_gpu-sph"));
    // No test here may open a window, whatever the environment offers.
    c.env("RUST_LOG", "off")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY");
    c
}

pub fn run(args: &[&str]) -> Output {
    bin().args(args).output().expect("spawn gpu-sph")
}

thread_local! {
    /// The calling test's scratch directory, `gpu-sph-<test>-XXXXXX` under the system's temp
    /// dir. It is a thread-local because the integration tests share one process
    /// (tests/suite/main.rs) and libtest runs each test on a thread of its own, named after the
    /// test: two tests side by side never write the same file, and the directory goes when the
    /// test's thread ends, passed or failed. (A directory per process was left behind by every
    /// run: 53 MB each for this suite.)
    static SCRATCH: tempfile::TempDir = tempfile::Builder::new()
        .prefix(&format!(
            "gpu-sph-{}-",
            std::thread::current().name().unwrap_or("cli").replace("::", "-")
        ))
        .tempdir()
        .expect("a scratch directory under the system's temp dir");
}

pub fn tmp_dir() -> PathBuf {
    SCRATCH.with(|d| d.path().to_path_buf())
}

pub fn file(name: &str, contents: &[u8]) -> PathBuf {
    let p = tmp_dir().join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

/// Runs gpu-sph with `args` and asserts exit 0, naming stderr otherwise.
pub fn run_ok(args: &[&str]) -> Output {
    let out = run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A `--stats` file: its column names and its rows of numbers (comment lines skipped).
pub fn stats_rows(path: &std::path::Path) -> (Vec<String>, Vec<Vec<f64>>) {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines().filter(|l| !l.starts_with('#'));
    let header = lines.next().unwrap().split(',').map(String::from).collect();
    let rows = lines
        .map(|l| l.split(',').map(|x| x.parse().unwrap()).collect())
        .collect();
    (header, rows)
}

pub fn assert_usage_error(args: &[&str], needle: &str) {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
    assert_eq!(
        stderr.trim_end().lines().count(),
        1,
        "{args:?} printed more than one line: {stderr}"
    );
    assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    assert!(
        stderr.contains(needle),
        "{args:?}: {stderr:?} lacks {needle:?}"
    );
}

/// Whether a run that needs the GPU (`--verify`, `--bench`) found no adapter (exit 2) while the
/// GPU is not required (`GPU_SPH_REQUIRE_GPU` unset): then the caller skips, said on stderr.
pub fn skipped_without_gpu(out: &Output) -> bool {
    let skip =
        out.status.code() == Some(2) && std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1");
    if skip {
        eprintln!("SKIPPED: {}", String::from_utf8_lossy(&out.stderr));
    }
    skip
}
