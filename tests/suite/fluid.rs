//! The fluid stages under WCSPH: GPU-vs-CPU parity of every stage over several steps (each
//! step starts both paths from the same state), the statistics and the readbacks. The stages'
//! worked examples are their modules' unit tests; DFSPH's runs are tests/suite/dfsph.rs's.

use crate::common;

use gpu_sph::cpu::stats::stats_block;
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::grid::reorder::Particles;
use gpu_sph::params::{ConfigOverrides, PhysicsConfig, SphConfig};
use gpu_sph::scene::{Scene, SceneKind};
use gpu_sph::solver::{Solver, SolverParams};
use gpu_sph::verify;

/// A WCSPH run of scene `kind` with `n` particles: its configuration, fluid, scene and solver.
fn setup(
    kind: SceneKind,
    n: usize,
) -> (SphConfig, gpu_sph::params::FluidParams, Scene, SolverParams) {
    let cfg = SphConfig::for_solver(n as u32, ConfigOverrides::default(), Solver::Wcsph).unwrap();
    let scene = Scene::new(kind, n, cfg.spacing, 3);
    let physics = PhysicsConfig::default();
    let fp = physics
        .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
        .unwrap();
    let solver = SolverParams::new(Solver::Wcsph, &Default::default(), &cfg, &physics).unwrap();
    (cfg, fp, scene, solver)
}

/// A GPU simulation of `setup`'s run from `state`.
fn simulation(
    ctx: std::sync::Arc<gpu_sph::gpu::GpuContext>,
    cfg: &SphConfig,
    fp: &gpu_sph::params::FluidParams,
    solver: &SolverParams,
    state: &Particles,
) -> Simulation {
    Simulation::with_solver(ctx, &cfg.sim_params(), fp, solver, state).unwrap()
}

fn parity(kind: SceneKind, n: usize, steps: u64) {
    let Some(ctx) = common::gpu() else { return };
    let (cfg, fp, scene, solver) = setup(kind, n);
    let state = Particles::new(scene.positions, scene.velocities);
    let sim = simulation(ctx, &cfg, &fp, &solver, &state);
    let report =
        verify::verify_solver_steps(&sim, &state, None, &Default::default(), steps, 1e-5).unwrap();
    assert!(report.pass, "{kind:?} N={n}\n{}", report.to_table());
    // Every stage of a WCSPH step has its row: the grid, ρ (and α, 0), the accelerations and
    // their viscous rate, the step and its substeps, v*, the equation of state, the pressure,
    // the new state (three rows), ρ and α at its end, the stages' statistics (two rows), and
    // five of the statistics block.
    for stage in ["dfsph_eos", "wcsph.pressure.velocity", "dfsph_timestep"] {
        assert!(report.stages.iter().any(|r| r.stage == stage), "{stage}");
    }
    assert_eq!(report.stages.len(), 22, "{}", report.to_table());
}

#[test]
fn every_fluid_stage_matches_the_cpu() {
    parity(SceneKind::DamBreak, 3000, 20);
    parity(SceneKind::Drop, 2000, 10);
    parity(SceneKind::Cube, 65, 5);
    parity(SceneKind::Random, 1, 3);
}

#[test]
fn gpu_steps_keep_every_particle_in_the_tank_and_finite() {
    let Some(ctx) = common::gpu() else { return };
    let (cfg, fp, scene, solver) = setup(SceneKind::DamBreak, 2000);
    let state = Particles::new(scene.positions, scene.velocities);
    let sim = simulation(ctx, &cfg, &fp, &solver, &state);
    sim.step(100).unwrap();
    let snap = sim.snapshot().unwrap();
    let s = &snap.state;
    let block = stats_block(&s.pos, &s.vel, &s.id, &snap.density, &fp, snap.dt, None);
    let st = gpu_sph::run::step_stats(&block, &fp, 100, 0.0).unwrap();
    assert_eq!(st.outside, 0);
    assert!(
        st.max_speed > 0.1,
        "the column must be falling: {}",
        st.max_speed
    );
    let mut ids = snap.state.id.clone();
    ids.sort_unstable();
    assert_eq!(
        ids,
        (0..2000).collect::<Vec<u32>>(),
        "the permutation is kept"
    );
}

/// A headless GPU run maps its statistics once per step (64 bytes per 256 particles and the
/// 16-byte step state, 400 bytes at 1 500 particles) and nothing else,
/// except the whole state where a frame is exported (counted on a device of its own, so
/// other tests' readbacks do not count).
#[test]
fn a_headless_gpu_run_reads_back_only_its_statistics_block() {
    use std::sync::atomic::Ordering::Relaxed;

    use gpu_sph::run::{Export, Outputs, Until, run};

    if common::gpu().is_none() {
        return;
    }
    let ctx = std::sync::Arc::new(gpu_sph::gpu::GpuContext::new().unwrap());
    let n = 1500;
    let (cfg, fp, scene, solver) = setup(SceneKind::DamBreak, n);
    let state = Particles::new(scene.positions, scene.velocities);
    let mut sim = simulation(ctx.clone(), &cfg, &fp, &solver, &state);
    let counts = || {
        let m = &ctx.mapped;
        (
            m.maps.load(Relaxed),
            m.bytes.load(Relaxed),
            m.largest.load(Relaxed),
        )
    };
    let bar = gpu_sph::run::Progress::hidden();
    let (maps0, bytes0, _) = counts();
    let guards = gpu_sph::run::Guards::default();
    let (snap, last, _) = run(
        &mut sim,
        &state,
        &fp,
        &guards,
        &Default::default(),
        Until::steps(12),
        false,
        &Default::default(),
        Outputs::default(),
        &bar,
        None,
    )
    .unwrap();
    let (maps, bytes, largest) = counts();
    let stats_bytes = sim.stats.bytes_per_step();
    // The blocks, the step state and the density error's block sums and maxima (WCSPH has no
    // solve whose totals would come back).
    let blocks = 1500u64.div_ceil(256);
    assert_eq!(stats_bytes, blocks * 64 + 16 + 2 * 4 * blocks);
    assert!(snap.is_none());
    assert_eq!(last.unwrap().step, 12);
    assert_eq!(maps - maps0, 12, "one mapping per step");
    assert_eq!(bytes - bytes0, 12 * stats_bytes);
    assert_eq!(largest, stats_bytes, "nothing larger than the statistics");

    // Frames at steps 0, 5 and 10: the state is read there, and only there.
    let dir = common::cli::tmp_dir().join("mapped");
    std::fs::create_dir_all(&dir).unwrap();
    let export = Export {
        dir: dir.clone(),
        every: 5,
        format: Default::default(),
        collection: None,
    };
    let out = Outputs {
        export: Some(&export),
        ..Default::default()
    };
    run(
        &mut sim,
        &state,
        &fp,
        &guards,
        &Default::default(),
        Until::steps(12),
        false,
        &Default::default(),
        out,
        &bar,
        None,
    )
    .unwrap();
    let (maps2, bytes2, _) = counts();
    // A snapshot reads positions and velocities (vec4), ids and densities (its dt is the last
    // statistics block's).
    let snapshot = (n * (16 + 16 + 4 + 4)) as u64;
    assert_eq!(bytes2 - bytes, 12 * stats_bytes + 3 * snapshot);
    // Four mappings a snapshot.
    assert_eq!(maps2 - maps, 12 + 3 * 4);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
}

/// Both paths print the same statistics, bit for bit, from the same f32 tree.
/// `dfsph_accel`'s pipeline is built with only the viscosity terms the run has on; a term
/// turned on live (the viewer's sliders) rebuilds it, and the GPU's accelerations then carry
/// the term as the CPU's do, and differ from those without it.
#[test]
fn a_viscosity_term_turned_on_live_acts_on_the_gpu() {
    let Some(ctx) = common::gpu() else { return };
    let (cfg, fp, scene, solver) = setup(SceneKind::DamBreak, 1500);
    assert_eq!(
        (fp.alpha, fp.viscosity),
        (0.0, 0.0),
        "the defaults leave both off"
    );
    // A shearing, compressing start, so every term has relative velocities to act on.
    let vel = scene
        .positions
        .iter()
        .map(|p| glam::Vec3::new((p.y * 40.0).sin(), 0.0, (p.x * 40.0).cos()) * 0.2)
        .collect();
    let state = Particles::new(scene.positions, vel);
    let mut sim = simulation(ctx, &cfg, &fp, &solver, &state);
    let live = gpu_sph::params::FluidParams {
        alpha: 0.05,
        viscosity: 0.01,
        ..fp
    };
    sim.set_fluid_params(&live);
    let report =
        verify::verify_solver_steps(&sim, &state, None, &Default::default(), 3, 1e-5).unwrap();
    assert!(report.pass, "{}", report.to_table());
    let with_terms = sim.snapshot().unwrap();
    sim.set_fluid_params(&fp);
    let report =
        verify::verify_solver_steps(&sim, &state, None, &Default::default(), 3, 1e-5).unwrap();
    assert!(report.pass, "{}", report.to_table());
    let without = sim.snapshot().unwrap();
    assert_ne!(
        with_terms.state.vel, without.state.vel,
        "the live terms change the run"
    );
}

#[test]
fn gpu_and_cpu_runs_have_identical_statistics() {
    use gpu_sph::run::{Backend, CpuSimulation};

    let Some(ctx) = common::gpu() else { return };
    if !common::bit_exact(&ctx) {
        eprintln!(
            "SKIPPED: {} is not bit-exact with the CPU mirror",
            ctx.info.name
        );
        return;
    }
    let (cfg, fp, scene, solver) = setup(SceneKind::DamBreak, 2500);
    let state = Particles::new(scene.positions, scene.velocities);
    let mut gpu = simulation(ctx, &cfg, &fp, &solver, &state);
    let mut cpu = CpuSimulation::with_solver(cfg.sim_params(), fp, solver, state.clone());
    for _ in 0..15 {
        gpu.submit().unwrap();
        cpu.submit().unwrap();
        assert_eq!(gpu.read_stats().unwrap(), cpu.read_stats().unwrap());
    }
}

/// The device flags non-finite values from their exponent bits (WGSL may assume floats are
/// finite) and names the smallest offending id, as the CPU mirror does.
#[test]
fn the_gpu_statistics_flag_non_finite_values_with_the_smallest_id() {
    use gpu_sph::cpu::stats::{BAD_POSITION, BAD_VELOCITY};

    let Some(ctx) = common::gpu() else { return };
    let (cfg, fp, scene, solver) = setup(SceneKind::DamBreak, 700);
    let mut state = Particles::new(scene.positions, scene.velocities);
    let sim = simulation(ctx, &cfg, &fp, &solver, &state);
    state.vel[650].y = f32::NAN;
    state.pos[400].z = f32::NEG_INFINITY;
    state.vel[30].x = f32::INFINITY;
    sim.upload(&state);
    let got = sim.stats_now().unwrap();
    let density = sim.snapshot().unwrap().density;
    let want = stats_block(
        &state.pos, &state.vel, &state.id, &density, &fp, got.dt, None,
    );
    assert_eq!(got.non_finite, BAD_POSITION | BAD_VELOCITY);
    assert_eq!(got.first_bad_id, 30);
    assert_eq!(
        (got.non_finite, got.first_bad_id),
        (want.non_finite, want.first_bad_id)
    );
}
