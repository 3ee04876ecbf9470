//! The redesign's bit guard: the default dam break, 50 steps, both solvers on both paths, against
//! the `--stats` rows and the `--output` values recorded before the house was rebuilt (issue 33).
//! A change of shape must leave every number as it was; a change of physics re-records the
//! files on purpose and says so in its commit.
//!
//! The files hold the CPU path's text, which is exact: the CSV writer prints the shortest text
//! that reads back to the same float. The GPU path must print the same text on a software adapter
//! (lavapipe, where every stage is bit-exact), and agree within 1e-5 relative elsewhere.
//!
//! To record them (only when the physics changes on purpose):
//! `GPU_SPH_BLESS=1 cargo test --test golden`.

mod common;

use std::path::PathBuf;

use common::cli::{run_ok, tmp_dir};

const PARTICLES: &str = "5000";
const STEPS: &str = "50";

fn golden(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("golden")
        .join(name)
}

/// The numeric rows of a CSV, its comment lines (`#`, the run's geometry) left out.
fn rows(text: &str) -> Vec<&str> {
    text.lines().filter(|l| !l.starts_with('#')).collect()
}

/// Runs the dam break and returns (stats, output) as text.
fn run(solver: &str, path: &str) -> (String, String) {
    let dir = tmp_dir();
    let stats = dir.join(format!("golden_{solver}_{path}_stats.csv"));
    let output = dir.join(format!("golden_{solver}_{path}_output.csv"));
    run_ok(&[
        "--headless",
        path,
        "--solver",
        solver,
        "-n",
        PARTICLES,
        "--steps",
        STEPS,
        "--stats",
        stats.to_str().unwrap(),
        "--output",
        output.to_str().unwrap(),
    ]);
    let read = |p: &PathBuf| std::fs::read_to_string(p).unwrap();
    (read(&stats), read(&output))
}

/// Every value of `got` equals `want`'s: as text (bits) when `exact`, else within 1e-5
/// relative (of the larger magnitude, with an absolute floor at the column's scale for values
/// that pass through zero). NaN never passes.
fn compare(what: &str, got: &str, want: &str, exact: bool) {
    let (g, w) = (rows(got), rows(want));
    assert_eq!(
        g.len(),
        w.len(),
        "{what}: {} rows, recorded {}",
        g.len(),
        w.len()
    );
    assert_eq!(g[0], w[0], "{what}: the header changed");
    let parse = |l: &str| -> Vec<f64> { l.split(',').map(|x| x.parse().unwrap()).collect() };
    let columns = g[0].split(',').count();
    let mut scale = vec![0f64; columns];
    for l in &w[1..] {
        for (s, v) in scale.iter_mut().zip(parse(l)) {
            *s = s.max(v.abs());
        }
    }
    for (k, (gl, wl)) in g.iter().zip(&w).enumerate().skip(1) {
        if exact {
            assert_eq!(gl, wl, "{what}: row {k} differs from the recorded bits");
            continue;
        }
        for (c, (a, b)) in parse(gl).into_iter().zip(parse(wl)).enumerate() {
            let tol = 1e-5 * a.abs().max(b.abs()).max(1e-3 * scale[c]);
            assert!(
                a.is_finite() && (a - b).abs() <= tol,
                "{what}: row {k} column {c}: {a} against the recorded {b}"
            );
        }
    }
}

fn check(solver: &str) {
    let bless = std::env::var("GPU_SPH_BLESS").as_deref() == Ok("1");
    let (stats, output) = run(solver, "--cpu");
    let (gs, go) = (
        golden(&format!("{solver}_stats.csv")),
        golden(&format!("{solver}_output.csv")),
    );
    if bless {
        std::fs::create_dir_all(gs.parent().unwrap()).unwrap();
        std::fs::write(&gs, &stats).unwrap();
        std::fs::write(&go, &output).unwrap();
    }
    let (want_stats, want_output) = (
        std::fs::read_to_string(&gs).unwrap(),
        std::fs::read_to_string(&go).unwrap(),
    );
    compare(&format!("{solver} CPU --stats"), &stats, &want_stats, true);
    compare(
        &format!("{solver} CPU --output"),
        &output,
        &want_output,
        true,
    );
    let Some(ctx) = common::gpu() else { return };
    let exact = ctx.info.device_type == wgpu::DeviceType::Cpu;
    let (stats, output) = run(solver, "--gpu");
    compare(&format!("{solver} GPU --stats"), &stats, &want_stats, exact);
    compare(
        &format!("{solver} GPU --output"),
        &output,
        &want_output,
        exact,
    );
}

#[test]
fn dfsph_dam_break_keeps_its_bits() {
    check("dfsph");
}

#[test]
fn wcsph_dam_break_keeps_its_bits() {
    check("wcsph");
}
