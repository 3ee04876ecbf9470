//! DFSPH stages: GPU contract tests on hand-made inputs with the values the CPU worked examples
//! give, and GPU-vs-CPU parity of every DFSPH pass, iteration by iteration, bit for bit on
//! lavapipe (`--verify --tolerance 0`'s comparison), at awkward sizes, T = 1, a particle alone,
//! and particles at walls, edges and corners.

use crate::common;

use glam::Vec3;
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::grid::reorder::Particles;
use gpu_sph::params::{
    ConfigOverrides, DfsphConfig, DfsphParams, FluidParams, PhysicsConfig, SimParams, SphConfig,
};
use gpu_sph::scene::{Scene, SceneKind};
use gpu_sph::solver::dfsph::{self, DfsphCarry};
use gpu_sph::solver::{Solver, SolverParams};
use gpu_sph::verify;

/// Bit-exact on lavapipe, where the GPU is the same CPU ([`common::bit_exact`]: Mesa's GL
/// driver on the same CPU is not); 1e-5 elsewhere.
fn tolerance(ctx: &gpu_sph::gpu::GpuContext) -> f64 {
    if common::bit_exact(ctx) { 0.0 } else { 1e-5 }
}

fn setup(
    n: usize,
    table_size: Option<u32>,
    tank: (Vec3, Vec3),
    height: f32,
) -> (SimParams, FluidParams, DfsphParams) {
    let o = ConfigOverrides {
        table_size,
        ..Default::default()
    };
    let cfg = SphConfig::for_solver(n as u32, o, Solver::Dfsph).unwrap();
    let ph = PhysicsConfig::default();
    let fp = ph.fluid_params(&cfg, tank.0, tank.1, height).unwrap();
    let dp = DfsphConfig::default().params(&cfg, &ph).unwrap();
    (cfg.sim_params(), fp, dp)
}

fn parity_of(state: &Particles, sp: &SimParams, fp: &FluidParams, dp: &DfsphParams, steps: u64) {
    let Some(ctx) = common::gpu() else { return };
    let tol = tolerance(&ctx);
    let sim = Simulation::with_solver(ctx, sp, fp, &SolverParams::of_stages(*dp), state).unwrap();
    let report =
        verify::verify_solver_steps(&sim, state, None, &Default::default(), steps, tol).unwrap();
    assert!(
        report.pass,
        "N = {}, T = {}\n{}",
        sp.n,
        sp.table_size,
        report.to_table()
    );
    // Every pass was compared: density, both solves (first rate, warm, pressure, rate,
    // control, iterations, Σκ), accel, timestep, predict, integrate, end, stats.
    assert!(report.stages.len() >= 25, "{}", report.to_table());
}

/// Scene `kind` of `n` particles (seed `seed`) with the default DFSPH setup in its tank.
fn scene_setup(
    kind: SceneKind,
    n: usize,
    table_size: Option<u32>,
    seed: u64,
) -> (Particles, SimParams, FluidParams, DfsphParams) {
    let probe = SphConfig::new(n as u32, ConfigOverrides::default()).unwrap();
    let scene = Scene::new(kind, n, probe.spacing, seed);
    let (sp, fp, dp) = setup(
        n,
        table_size,
        (scene.tank_min, scene.tank_max),
        scene.fluid_size.y,
    );
    (
        Particles::new(scene.positions, scene.velocities),
        sp,
        fp,
        dp,
    )
}

fn scene_parity(kind: SceneKind, n: usize, table_size: Option<u32>, steps: u64) {
    let (state, sp, fp, mut dp) = scene_setup(kind, n, table_size, 7);
    // A resting column's first solve builds its hydrostatic pressure from nothing and runs to
    // the limit; 8 iterations compare every pass as well as 100 do, in CI's time.
    dp.max_iterations = 8;
    parity_of(&state, &sp, &fp, &dp, steps);
}

#[test]
fn every_dfsph_stage_matches_the_cpu_at_awkward_sizes() {
    scene_parity(SceneKind::Random, 1, None, 3);
    scene_parity(SceneKind::Random, 64, None, 3);
    scene_parity(SceneKind::Random, 65, None, 3);
    scene_parity(SceneKind::DamBreak, 15_071, None, 1);
}

#[test]
fn every_dfsph_stage_matches_the_cpu_with_one_slot() {
    scene_parity(SceneKind::Random, 1, Some(1), 2);
    scene_parity(SceneKind::Cube, 64, Some(1), 2);
    scene_parity(SceneKind::DamBreak, 65, Some(1), 2);
    scene_parity(SceneKind::DamBreak, 15_071, Some(1), 1);
}

#[test]
fn every_dfsph_stage_matches_the_cpu_at_100k() {
    scene_parity(SceneKind::DamBreak, 100_000, None, 1);
}

#[test]
fn an_under_relaxed_solve_matches_the_cpu() {
    // ω < 1 scales every iteration's stiffness on both paths: with it the 3 000-particle dam
    // break's first step ends with other velocities than at ω = 1 (so the scaled κ is what the
    // report compares), and every pass and iteration stays bit-exact.
    let n = 3000;
    let (state, sp, fp, mut dp) = scene_setup(SceneKind::DamBreak, n, None, 7);
    dp.max_iterations = 8;
    dp.relaxation = 1.0;
    let velocities = |dp: &DfsphParams| {
        let tr = dfsph::dfsph_step(
            false,
            &state,
            &DfsphCarry::new(dp),
            None,
            None,
            &sp,
            &fp,
            dp,
        );
        tr.next.vel
    };
    let plain = velocities(&dp);
    dp.relaxation = 0.8;
    assert_ne!(velocities(&dp), plain, "ω = 0.8 changed nothing");
    parity_of(&state, &sp, &fp, &dp, 2);
}

#[test]
fn viscous_substeps_match_the_cpu_pass_by_pass() {
    // From rest the CFL step is dt_max, far past the viscous limit, so every step takes all K
    // substeps; the report then holds a row for each later substep's accelerations and
    // velocities, each bit-exact, and the substep count agrees. The viscous limit binds with
    // Monaghan's artificial viscosity at α = 0.05 and a 5 ms largest step (the default
    // ν = 1e-3 leaves it far above the step, so one substep would do).
    let Some(ctx) = common::gpu() else { return };
    let n = 3000;
    let probe = SphConfig::new(n as u32, ConfigOverrides::default()).unwrap();
    let scene = Scene::new(SceneKind::DamBreak, n, probe.spacing, 7);
    let (sp, mut fp, mut dp) = setup(
        n,
        None,
        (scene.tank_min, scene.tank_max),
        scene.fluid_size.y,
    );
    fp.alpha = 0.05;
    dp.dt_max = 0.005;
    dp.max_iterations = 8;
    dp.viscous_substeps = 4;
    let state = Particles::new(scene.positions, scene.velocities);
    let tr = dfsph::dfsph_step(
        false,
        &state,
        &DfsphCarry::new(&dp),
        None,
        None,
        &sp,
        &fp,
        &dp,
    );
    assert_eq!(tr.timestep.substeps, 4, "{:?}", tr.timestep);
    let tol = tolerance(&ctx);
    let sim = Simulation::with_solver(ctx, &sp, &fp, &SolverParams::of_stages(dp), &state).unwrap();
    let report =
        verify::verify_solver_steps(&sim, &state, None, &Default::default(), 2, tol).unwrap();
    assert!(report.pass, "{}", report.to_table());
    for k in 2..=4 {
        for stage in ["dfsph_accel", "dfsph_predict"] {
            let row = format!("{stage}.substep{k}");
            assert!(
                report.stages.iter().any(|s| s.stage == row),
                "no row {row}:\n{}",
                report.to_table()
            );
        }
    }
}

#[test]
fn particles_at_walls_edges_and_corners_match_the_cpu() {
    // A particle in each corner of a small tank, one on each edge and face, and a few inside,
    // moving towards the walls, so every image subset (1, 3 and 7 images) takes part.
    let s = 0.01;
    let (lo, hi) = (Vec3::ZERO, Vec3::splat(0.1));
    let mut pos = Vec::new();
    for &x in &[0.3 * s, 0.05, 0.1 - 0.3 * s] {
        for &y in &[0.3 * s, 0.05, 0.1 - 0.3 * s] {
            for &z in &[0.3 * s, 0.05, 0.1 - 0.3 * s] {
                pos.push(Vec3::new(x, y, z));
                pos.push(Vec3::new(x, y, z) + Vec3::new(0.6, 0.7, 0.4) * s);
            }
        }
    }
    let n = pos.len();
    let vel: Vec<Vec3> = pos.iter().map(|p| (*p - Vec3::splat(0.05)) * 4.0).collect();
    let (sp, fp, mut dp) = setup(n, Some(1), (lo, hi), 0.1);
    // Few neighbours each: let every particle take part in the solves.
    dp.min_neighbours = 1;
    parity_of(&Particles::new(pos, vel), &sp, &fp, &dp, 3);
}

#[test]
fn a_particle_alone_sees_only_its_wall_images() {
    // CPU contract: alone in mid-tank, ρ = m W(0) and α = 0 (no neighbours); at a corner its
    // three face images at 2d, three edge images at 2√2 d and one corner image at 2√3 d add
    // their kernel values.
    let (sp, fp, dp) = setup(1, Some(1), (Vec3::ZERO, Vec3::splat(1.0)), 1.0);
    let mid = [Vec3::splat(0.5)];
    let da = dfsph::dfsph_density(&mid, &[0, 1], None, &sp, &fp, &dp);
    assert_eq!(da.density, vec![fp.mass * sp.kernel_a[0]]);
    assert_eq!(da.alpha, vec![0.0]);
    let d = 0.3 * sp.h;
    let corner = [Vec3::splat(d)];
    let da = dfsph::dfsph_density(&corner, &[0, 1], None, &sp, &fp, &dp);
    let w = |r: f32| dfsph::kernel::w(r * r, &sp);
    let want = fp.mass
        * (sp.kernel_a[0]
            + 3.0 * w(2.0 * d)
            + 3.0 * w(2.0 * d * 2f32.sqrt())
            + w(2.0 * d * 3f32.sqrt()));
    assert!(
        (da.density[0] - want).abs() < 1e-3 * want,
        "{} vs {want}",
        da.density[0]
    );
}

#[test]
fn dfsph_passes_on_the_gpu_give_the_worked_examples() {
    // Two particles 0.5 h apart in mid-tank, approaching: after the full step on the GPU the
    // stats block says the solves ran (≥ 1 and ≥ 2 iterations) and the pair no longer
    // approaches; the warm start stored by id is what the CPU stores.
    let Some(ctx) = common::gpu() else { return };
    let (sp, fp, mut dp) = setup(2, None, (Vec3::ZERO, Vec3::splat(1.0)), 1.0);
    dp.min_neighbours = 1;
    // The pair's system over its diagonal has the eigenvalues 2 (the approach) and 0, so an
    // iteration scales the approach by 1 − 2ω: ω = ½ removes it in one. The default ω, sized
    // for a lattice's shortest mode, would stop at the tolerance with the pair still closing.
    dp.relaxation = 0.5;
    let h = sp.h;
    let state = Particles::new(
        vec![Vec3::splat(0.5), Vec3::new(0.5 + 0.5 * h, 0.5, 0.5)],
        vec![Vec3::new(0.2, 0.0, 0.0), Vec3::new(-0.2, 0.0, 0.0)],
    );
    let sim = Simulation::with_solver(ctx, &sp, &fp, &SolverParams::of_stages(dp), &state).unwrap();
    sim.step(1).unwrap();
    let snap = sim.snapshot().unwrap();
    let st = snap.solver.expect("DFSPH statistics");
    assert!(st.iterations_v >= 1 && st.iterations_d >= 2, "{st:?}");
    let tr = dfsph::dfsph_step(
        false,
        &state,
        &DfsphCarry::new(&dp),
        None,
        None,
        &sp,
        &fp,
        &dp,
    );
    assert_eq!(st.iterations_v, tr.stats.iterations_v);
    assert_eq!(st.iterations_d, tr.stats.iterations_d);
    let order = &snap.state.id;
    let v: Vec<Vec3> = (0..2)
        .map(|id| snap.state.vel[order.iter().position(|&i| i == id).unwrap()])
        .collect();
    assert!((v[0] - v[1]).x <= 1e-6, "the pair still approaches: {v:?}");
}

/// Issue 35's count, with the coarse levels: a DFSPH step encodes two dispatches per
/// iteration each solve may run and three per coarse correction it may run (after iterations
/// 0, 2, … below its cap), plus a constant, and how many it may run follows the counts of the
/// steps before. On the 20k dam break every step encodes exactly 2 (cap_v + cap_d) +
/// 3 (⌈cap_v/2⌉ + ⌈cap_d/2⌉) + 13 + 2L (L scan levels), and a step whose solves converged after
/// as many iterations as the most of the steps their caps looked at (a steady state) at most
/// that for the iterations that ran, plus the margin's iterations (e = max(ran, m) a solve,
/// m = `ITERATION_MARGIN`: 2e dispatches) and corrections (⌈e/2⌉ a solve: 3 each).
#[test]
fn a_dfsph_step_encodes_two_dispatches_per_iteration_it_may_run() {
    let Some(ctx) = common::gpu() else { return };
    let (state, sp, fp, dp) = scene_setup(SceneKind::DamBreak, 20_000, None, 0);
    let sim = Simulation::with_solver(ctx, &sp, &fp, &SolverParams::of_stages(dp), &state).unwrap();
    let g = &sim.grid;
    // dispatches_per_build() = 3 + 2L (hash, scan, scatter, order, reorder, density); the
    // rest: dfsph_blocks, the coarse levels' two, each solve's first rate pass, dfsph_accel,
    // dfsph_timestep, dfsph_predict, dfsph_integrate, the statistics.
    let constant = 10 + g.dispatches_per_build() as u64;
    let encoded_for = |c: [u32; 2]| {
        let (a, b) = (u64::from(c[0]), u64::from(c[1]));
        2 * (a + b) + 3 * (a.div_ceil(2) + b.div_ceil(2)) + constant
    };
    let mut budget = dfsph::IterationBudget::default();
    let mut steady = 0;
    // 24 steps: until the first steps' counts leave the 8-step window no later step can run
    // its window's most.
    for step in 1..=24 {
        let caps = budget.caps(dfsph::MIN_ITERATIONS, dp.max_iterations);
        let before = g.dispatches.get();
        sim.submit_step().unwrap();
        let encoded = g.dispatches.get() - before;
        let block = sim.read_stats().unwrap();
        let st = dfsph::SolverStats::from_words(&block.solver);
        let ran = [st.iterations_v, st.iterations_d];
        assert!(
            ran[0] <= caps[0] && ran[1] <= caps[1],
            "step {step}: ran {ran:?} of {caps:?}"
        );
        if step > 1 {
            assert_eq!(encoded, encoded_for(caps), "step {step}: caps {caps:?}");
        }
        let margin = dfsph::ITERATION_MARGIN;
        let extra = |k: u32| u64::from(k.max(margin));
        if caps == [ran[0] + ran[0].max(margin), ran[1] + ran[1].max(margin)] {
            steady += 1;
            let (e0, e1) = (extra(ran[0]), extra(ran[1]));
            let bound = encoded_for(ran) + 2 * (e0 + e1) + 3 * (e0.div_ceil(2) + e1.div_ceil(2));
            assert!(
                encoded <= bound,
                "step {step}: {encoded} dispatches for {ran:?} iterations (bound {bound})"
            );
        }
        budget.push_step(caps, &st);
    }
    assert!(
        steady > 0,
        "no step ran as many iterations as its window's most"
    );
}

/// The solve at depth: resting columns 8 × L × 8 at s = 10 mm, L = 20, 80 and 160 layers, in a
/// tank that fits them (1.5 L s high), run as a user runs them (`--input`, default settings,
/// the CPU path, 60 steps): from the 21st step every step meets the density tolerance (its
/// constant-density residual at most η = 1e-4, `stopped_d` 0), and the mean iterations a step
/// at 160 layers are at most 1.5× those at 20 (relaxed Jacobi alone, without the coarse levels,
/// stops the 80- and 160-layer columns at the 100-iteration cap 4× and 9× over η).
#[test]
fn resting_columns_converge_in_iterations_that_do_not_grow_with_depth() {
    let means = resting_column_iterations();
    assert!(
        means[2] <= 1.5 * means[0],
        "160 layers take {:.1} iterations a step, 20 layers {:.1}",
        means[2],
        means[0]
    );
}

/// The mean density iterations a step over steps 21–60 of the resting columns 20, 80 and 160
/// layers deep, every step of them within the tolerance (asserted as they are read); run once
/// per test binary (here and `tests/suite/results.rs`).
pub(crate) fn resting_column_iterations() -> [f64; 3] {
    static M: std::sync::OnceLock<[f64; 3]> = std::sync::OnceLock::new();
    *M.get_or_init(resting_columns)
}

fn resting_columns() -> [f64; 3] {
    use crate::common::cli::{file, run_ok, stats_rows, tmp_dir};
    let mut means = Vec::new();
    for layers in [20u32, 80, 160] {
        let mut csv = String::from("x,y,z\n");
        for j in 0..layers {
            for k in 0..8 {
                for i in 0..8 {
                    let p = [i, j, k].map(|c| (c as f64 + 0.5) * 0.01);
                    csv += &format!("{},{},{}\n", p[0], p[1], p[2]);
                }
            }
        }
        let input = file(&format!("col{layers}.csv"), csv.as_bytes());
        let stats = tmp_dir().join(format!("col{layers}_stats.csv"));
        let top = format!("0.08,{},0.08", 1.5 * layers as f64 * 0.01);
        run_ok(&[
            "--headless",
            "--cpu",
            "--input",
            input.to_str().unwrap(),
            "--spacing",
            "0.01",
            "--tank-min",
            "0,0,0",
            "--tank-max",
            &top,
            "--steps",
            "60",
            "--stats",
            stats.to_str().unwrap(),
        ]);
        let (names, rows) = stats_rows(&stats);
        let col = |name: &str| names.iter().position(|n| n == name).unwrap();
        let (it, res, stopped) = (col("iterations_d"), col("residual_d"), col("stopped_d"));
        assert_eq!(rows.len(), 60);
        for r in &rows[20..] {
            assert!(
                r[res] <= 1e-4 && r[stopped] == 0.0,
                "{layers} layers, step {}: residual {} after {} iterations",
                r[0],
                r[res],
                r[it]
            );
        }
        let mean = rows[20..].iter().map(|r| r[it]).sum::<f64>() / 40.0;
        eprintln!("{layers} layers: {mean:.1} density iterations a step");
        means.push(mean);
    }
    [means[0], means[1], means[2]]
}

/// The cubic spline, the second kernel: every stage of both solvers bit for bit under
/// `--verify`; the scene file's `physics.kernel` picks it as the flag does, with its own
/// default support (2 spacings) and lattice mass, under either solver.
#[test]
fn the_cubic_spline_runs_every_stage_bit_for_bit_under_both_solvers() {
    use common::cli::{file, run, run_ok};
    for solver in ["dfsph", "wcsph"] {
        let out = run(&[
            "--headless",
            "--verify",
            "--solver",
            solver,
            "--kernel",
            "cubic-spline",
            "-n",
            "3000",
            "--steps",
            "3",
            "--tolerance",
            common::verify_tolerance(),
            "--json",
        ]);
        if common::cli::skipped_without_gpu(&out) {
            continue;
        }
        assert_eq!(
            out.status.code(),
            Some(0),
            "{solver}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["pass"], true, "{solver}");
    }
    // The run's description names the kernel and its support (h = 2 s at s = 10 mm).
    let geometry = |args: &[&str]| -> String {
        let mut all = vec![
            "--headless",
            "--cpu",
            "-n",
            "1000",
            "--steps",
            "1",
            "--json",
        ];
        all.extend_from_slice(args);
        let v: serde_json::Value = serde_json::from_slice(&run_ok(&all).stdout).unwrap();
        v["geometry"].as_str().unwrap().to_string()
    };
    let printed = run_ok(&["--print-scene", "dam-break", "-n", "1000"]).stdout;
    let mut scene: serde_json::Value = serde_json::from_slice(&printed).unwrap();
    scene["physics"]["kernel"] = "cubic-spline".into();
    let scene = file("cubic_scene.json", scene.to_string().as_bytes());
    let (flag, from_file, wendland) = (
        geometry(&["--kernel", "cubic-spline"]),
        geometry(&["--scene", scene.to_str().unwrap()]),
        geometry(&[]),
    );
    assert!(
        flag.contains("h = 0.02,") && flag.contains("DFSPH: cubic spline,"),
        "{flag}"
    );
    assert!(wendland.contains("h = 0.03,") && wendland.contains("DFSPH: Wendland C2,"));
    assert_eq!(flag, from_file);
    let wcsph = geometry(&["--solver", "wcsph", "--kernel", "cubic-spline"]);
    assert!(
        wcsph.contains("h = 0.02,") && wcsph.contains("WCSPH: cubic spline,"),
        "{wcsph}"
    );
}
