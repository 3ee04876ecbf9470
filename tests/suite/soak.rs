//! The short version of the soak (`scripts/soak.sh`, issue 14): 20 000 particles of the default
//! dam break for 800 steps on the CPU path with a checkpoint every 200 steps; the run's own
//! checks hold throughout and its resident memory grows by at most 5% from the second
//! checkpoint (step 400, once the front has crossed the floor and the working set has its size)
//! to the end. The long one (100 000 particles, 20 000 steps) is
//! `scripts/soak.sh 100000 20000 2000`.

#[test]
fn a_short_soak_holds_its_invariants_and_its_memory() {
    let dir = crate::common::cli::tmp_dir().join("soak");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/soak.sh");
    let out = std::process::Command::new("bash")
        .args([script, "20000", "800", "200", dir.to_str().unwrap()])
        .env("BIN", env!("CARGO_BIN_EXE_gpu-sph"))
        .env("FROM", "2")
        .env("RUST_LOG", "off")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("soak passed"),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("after 800 steps"), "{stdout}");
    let rows = std::fs::read_to_string(dir.join("stats.csv"))
        .unwrap()
        .lines()
        .filter(|l| l.starts_with(|c: char| c.is_ascii_digit()))
        .count();
    assert_eq!(rows, 800);
}
