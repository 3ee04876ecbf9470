//! The fluid stages: CPU worked examples, and GPU-vs-CPU parity of every fluid stage over
//! several steps (each step starts both paths from the same state).

use crate::common;

use glam::Vec3;
use gpu_sph::cpu::stats::stats_block;
use gpu_sph::cpu::wcsph::forces::{self, Fields};
use gpu_sph::cpu::wcsph::integrate::advance;
use gpu_sph::cpu::wcsph::pressure::tait;
use gpu_sph::cpu::wcsph::timestep::{choose_dt, signal_speed, timestep};
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::grid::reorder::Particles;
use gpu_sph::params::{ConfigOverrides, PhysicsConfig, SphConfig};
use gpu_sph::scene::{Scene, SceneKind};
use gpu_sph::verify;

fn setup(kind: SceneKind, n: usize) -> (SphConfig, gpu_sph::params::FluidParams, Scene) {
    let cfg = SphConfig::new(n as u32, ConfigOverrides::default()).unwrap();
    let scene = Scene::new(kind, n, cfg.spacing, 3);
    let fp = PhysicsConfig::default()
        .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
        .unwrap();
    (cfg, fp, scene)
}

#[test]
fn pressure_worked_example() {
    let (_, mut fp, _) = setup(SceneKind::Cube, 10);
    fp.rest_density = 1000.0;
    fp.stiffness = 1e5;
    assert!(
        (tait(1010.0, &fp) - 7213.5).abs() < 1.0,
        "{}",
        tait(1010.0, &fp)
    );
    assert_eq!(tait(990.0, &fp), 0.0);
    assert_eq!(tait(1000.0, &fp), 0.0);
}

#[test]
fn integrate_worked_example() {
    let (_, mut fp, _) = setup(SceneKind::Cube, 10);
    fp.tank_min = [0.0; 4];
    fp.tank_max = [1.0, 1.0, 1.0, 0.0];
    fp.restitution = 0.0;
    let (x, v) = advance(
        Vec3::new(0.5, 0.05, 0.5),
        Vec3::new(1.0, -1.0, 0.0),
        Vec3::ZERO,
        0.1,
        &fp,
    );
    assert_eq!(x, Vec3::new(0.6, 0.0, 0.5));
    assert_eq!(v, Vec3::new(1.0, 0.0, 0.0));
}

#[test]
fn timestep_worked_example() {
    let (cfg, mut fp, _) = setup(SceneKind::Cube, 10);
    let sp = cfg.sim_params();
    fp.sound_speed = 20.0;
    fp.cfl = 0.4;
    // Below ρ0 the signal speed is c0 + |v|.
    let s = signal_speed(0.0, 0.9 * fp.rest_density, &fp);
    assert_eq!(s, 20.0);
    assert!((choose_dt(s, 1.0, &sp, &fp) - 4e-4).abs() < 1e-9);
    assert!(
        choose_dt(s, 1e5, &sp, &fp) < 4e-4,
        "the force condition binds"
    );
    // One particle at rest at 1.1 ρ0: c = 20 · 1.1³ = 26.62 m/s sets the step.
    let t = timestep(
        &[Vec3::ZERO, Vec3::new(1.0, 0.0, 0.0)],
        &[Vec3::ZERO; 2],
        &[1.1 * fp.rest_density, fp.rest_density],
        &sp,
        &fp,
    );
    assert!((t.s_max - 26.62).abs() < 1e-3, "{t:?}");
    assert_eq!(t.v_max, 1.0);
    assert!((t.dt - 0.4 * 0.02 / 26.62).abs() < 1e-9, "{t:?}");
    fp.dt_fixed = 1e-5;
    assert_eq!(choose_dt(100.0, 1e9, &sp, &fp), 1e-5);
}

#[test]
fn forces_worked_example_is_symmetric() {
    let (cfg, mut fp, _) = setup(SceneKind::Cube, 10);
    let sp = SphConfig {
        smoothing_radius: 1.0,
        ..cfg
    }
    .sim_params();
    fp.mass = 1.0;
    fp.viscosity = 0.0;
    fp.gravity = [0.0; 4];
    fp.tank_min = [-10.0; 4]; // no wall within reach
    fp.tank_max = [10.0; 4];
    fp.kernel_45 = 45.0 / std::f32::consts::PI;
    let pos = [Vec3::ZERO, Vec3::new(0.5, 0.0, 0.0)];
    let f = Fields {
        pos: &pos,
        vel: &[Vec3::ZERO; 2],
        density: &[1.0; 2],
        pressure: &[1.0; 2],
    };
    let starts = [0, 2];
    let sp1 = gpu_sph::params::SimParams {
        table_size: 1,
        table_mask: 0,
        ..sp
    };
    let a = forces::forces(&f, &starts, &sp1, &fp);
    let want = 2.0 * fp.kernel_45 * 0.25;
    assert!(
        (a[0].x + want).abs() < 1e-4 && (a[1].x - want).abs() < 1e-4,
        "{a:?}"
    );
    assert_eq!(a[0] + a[1], Vec3::ZERO, "momentum is conserved");
}

fn parity(kind: SceneKind, n: usize, steps: u64) {
    let Some(ctx) = common::gpu() else { return };
    let (cfg, fp, scene) = setup(kind, n);
    let state = Particles::new(scene.positions, scene.velocities);
    let sim = Simulation::new(ctx, &cfg.sim_params(), &fp, &state).unwrap();
    let report =
        verify::verify_solver_steps(&sim, &state, None, &Default::default(), steps, 1e-5).unwrap();
    assert!(report.pass, "{kind:?} N={n}\n{}", report.to_table());
    // Nine step rows and five of the statistics block (values, counts, the EOS energy, the
    // obstacles' power, the DFSPH block it carries).
    assert_eq!(report.stages.len(), 14);
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
    let (cfg, fp, scene) = setup(SceneKind::DamBreak, 2000);
    let state = Particles::new(scene.positions, scene.velocities);
    let sim = Simulation::new(ctx, &cfg.sim_params(), &fp, &state).unwrap();
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
    let (cfg, fp, scene) = setup(SceneKind::DamBreak, n);
    let state = Particles::new(scene.positions, scene.velocities);
    let mut sim = Simulation::new(ctx.clone(), &cfg.sim_params(), &fp, &state).unwrap();
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
    assert_eq!(stats_bytes, 1500u64.div_ceil(256) * 64 + 16);
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
    // A snapshot reads positions and velocities (vec4), ids, densities and the step state.
    let snapshot = (n * (16 + 16 + 4 + 4) + 16) as u64;
    assert_eq!(bytes2 - bytes, 12 * stats_bytes + 3 * snapshot);
    assert_eq!(maps2 - maps, 12 + 3 * 5);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 3);
}

/// Both paths print the same statistics, bit for bit, from the same f32 tree.
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
    let (cfg, fp, scene) = setup(SceneKind::DamBreak, 2500);
    let state = Particles::new(scene.positions, scene.velocities);
    let mut gpu = Simulation::new(ctx, &cfg.sim_params(), &fp, &state).unwrap();
    let mut cpu = CpuSimulation::new(cfg.sim_params(), fp, state.clone());
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
    let (cfg, fp, scene) = setup(SceneKind::DamBreak, 700);
    let mut state = Particles::new(scene.positions, scene.velocities);
    let sim = Simulation::new(ctx, &cfg.sim_params(), &fp, &state).unwrap();
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
