//! The fluid stages: CPU worked examples, and GPU-vs-CPU parity of every fluid stage over
//! several steps (each step starts both paths from the same state).

mod common;

use glam::Vec3;
use gpu_sph::cpu::forces::{self, Fields};
use gpu_sph::cpu::integrate::advance;
use gpu_sph::cpu::pressure::tait;
use gpu_sph::cpu::reorder::Particles;
use gpu_sph::cpu::timestep::choose_dt;
use gpu_sph::gpu::fluid::Simulation;
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
    assert!((choose_dt(0.0, 1.0, &sp, &fp) - 4e-4).abs() < 1e-9);
    assert!(
        choose_dt(0.0, 1e5, &sp, &fp) < 4e-4,
        "the force condition binds"
    );
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
    let report = verify::verify_steps(&sim, &state, steps, 1e-5).unwrap();
    assert!(report.pass, "{kind:?} N={n}\n{}", report.to_table());
    assert_eq!(report.stages.len(), 9);
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
    let st = gpu_sph::run::stats(&snap, &fp, 100, 0.0).unwrap();
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
