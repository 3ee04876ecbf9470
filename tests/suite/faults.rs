//! GPU faults: a device lost in the middle of a run, and memory exhausted under a lowered
//! address-space limit (RLIMIT_AS, through the shell's `ulimit -v`), end with one line, never
//! a panic or a crash: exit 1 for a run under way, naming its last checkpoint; exit 2 before.

use std::process::Output;

use crate::common;

use common::cli::{bin, tmp_dir};

fn one_line(out: &Output) -> String {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(stderr.trim_end().lines().count(), 1, "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    stderr
}

fn no_gpu(out: &Output) -> bool {
    String::from_utf8_lossy(&out.stderr).contains("no adapter")
        && std::env::var("GPU_SPH_REQUIRE_GPU").is_err()
}

#[test]
fn a_device_lost_mid_run_exits_1_naming_the_last_checkpoint() {
    let dir = tmp_dir().join("lost");
    let _ = std::fs::remove_dir_all(&dir);
    let out = bin()
        .env("GPU_SPH_FAULT_DEVICE_LOSS_AFTER", "5")
        .args(["--headless", "--gpu", "-n", "1000", "--steps", "20"])
        .args([
            "--checkpoint-every",
            "2",
            "--checkpoint-dir",
            dir.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    if no_gpu(&out) {
        return;
    }
    let line = one_line(&out);
    assert_eq!(out.status.code(), Some(1), "{line}");
    assert!(line.contains("device was lost"), "{line}");
    // The loss comes with step 5; the last checkpoint before it is step 4's.
    assert!(
        line.contains("--resume") && line.contains("checkpoint_000000004"),
        "{line}"
    );
    // And that checkpoint resumes.
    let ck = dir.join("checkpoint_000000004.gpusph");
    let out = bin()
        .args([
            "--headless",
            "--gpu",
            "--resume",
            ck.to_str().unwrap(),
            "--steps",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Under `ulimit -v LIMIT_KB`, with lavapipe's thread count fixed so its address-space use
/// does not depend on the machine's cores.
fn limited(limit_kb: u64, args: &str) -> Output {
    let exe = env!("CARGO_BIN_EXE_gpu-sph");
    std::process::Command::new("sh")
        .args(["-c", &format!("ulimit -v {limit_kb} && exec {exe} {args}")])
        .env("RUST_LOG", "off")
        .env("LP_NUM_THREADS", "2")
        .env_remove("DISPLAY")
        .env_remove("WAYLAND_DISPLAY")
        .output()
        .unwrap()
}

#[test]
fn memory_exhausted_under_an_address_space_limit_exits_2_with_one_line() {
    // The CPU path: 4M particles cannot fit in 1 GB of address space.
    let out = limited(1_000_000, "--headless --cpu -n 4000000 --steps 1");
    let line = one_line(&out);
    assert_eq!(out.status.code(), Some(2), "{line}");
    assert!(line.contains("out of memory"), "{line}");
    // The GPU path on lavapipe, whose device memory is host memory: depending on where the
    // limit bites, the device request, the host probe or a buffer allocation fails, each in
    // one line (a hash table of 2^24 slots is not covered by the per-particle probe, so a
    // buffer allocation fails at the larger limit).
    for (limit_kb, args) in [
        (
            1_000_000,
            "--headless --gpu -n 100000 --table-size 16777216 --steps 2",
        ),
        (
            1_300_000,
            "--headless --gpu -n 100000 --table-size 16777216 --steps 2",
        ),
        (1_600_000, "--headless --gpu -n 4000000 --steps 1"),
    ] {
        // Mesa's GL driver fits these runs in the limit (the Vulkan driver's allocations do
        // not), so there the run finishes and there is no exhaustion to report.
        if common::gpu().is_some_and(|ctx| ctx.info.backend != wgpu::Backend::Vulkan) {
            eprintln!("SKIPPED: the address-space limit is not met on a non-Vulkan adapter");
            return;
        }
        let out = limited(limit_kb, args);
        if no_gpu(&out) {
            continue;
        }
        let line = one_line(&out);
        assert_eq!(out.status.code(), Some(2), "{limit_kb} KB, {args}: {line}");
        assert!(line.contains("memory"), "{limit_kb} KB, {args}: {line}");
    }
}
