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

/// A scratch directory of the calling test's own, `gpu-sph-cli-<pid>/<test>`: the integration
/// tests share one process (tests/suite/main.rs), so a directory per process would let two
/// tests running side by side write the same file. libtest names each test's thread after the
/// test.
pub fn tmp_dir() -> PathBuf {
    let mut d = std::env::temp_dir().join(format!("gpu-sph-cli-{}", std::process::id()));
    if let Some(test) = std::thread::current().name() {
        d = d.join(test.replace("::", "-"));
    }
    std::fs::create_dir_all(&d).unwrap();
    d
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
