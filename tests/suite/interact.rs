//! Stage `interact` (the viewer's mouse force): the GPU kernel against its CPU mirror, bit for
//! bit, on hand-made accelerations and a ray through a particle block.

use crate::common;

use glam::Vec3;
use gpu_sph::cpu::interact::{InteractParams, interact};
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::grid::reorder::Particles;
use gpu_sph::params::{ConfigOverrides, PhysicsConfig, SphConfig};
use gpu_sph::scene::{Scene, SceneKind};
use gpu_sph::solver::SolverParams;

fn check(n: usize, ip: InteractParams) {
    let Some(ctx) = common::gpu() else { return };
    let cfg = SphConfig::new(n as u32, ConfigOverrides::default()).unwrap();
    let scene = Scene::new(SceneKind::Random, n, cfg.spacing, 7);
    let fp = PhysicsConfig::default()
        .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
        .unwrap();
    let state = Particles::new(scene.positions.clone(), scene.velocities.clone());
    let solver = SolverParams::new(
        gpu_sph::solver::Solver::Wcsph,
        &Default::default(),
        &cfg,
        &PhysicsConfig::default(),
    )
    .unwrap();
    let mut sim = Simulation::with_solver(ctx, &cfg.sim_params(), &fp, &solver, &state).unwrap();
    let accel: Vec<Vec3> = (0..n)
        .map(|k| Vec3::new(k as f32 * 1e-3, -9.81, 0.5 - (k % 7) as f32))
        .collect();
    sim.grid
        .write_vec3(&sim.grid.bufs.sorted_pos, &scene.positions);
    sim.grid.write_vec3(&sim.fluid.accel, &accel);
    sim.set_interaction(Some(ip));
    sim.grid
        .run(|g, e| sim.interact.encode(e, g.bufs.n.get()))
        .unwrap();
    let gpu = sim.grid.read_vec3(&sim.fluid.accel, n).unwrap();
    let mut cpu = accel.clone();
    interact(&scene.positions, &mut cpu, &ip);
    let touched = cpu.iter().zip(&accel).filter(|(a, b)| a != b).count();
    assert!(
        touched > 0,
        "the ray touched no particle: the test checks nothing"
    );
    for k in 0..n {
        assert!(cpu[k].is_finite(), "particle {k}: {}", cpu[k]);
        assert_eq!(
            gpu[k].to_array().map(f32::to_bits),
            cpu[k].to_array().map(f32::to_bits),
            "particle {k}: GPU {} CPU {}",
            gpu[k],
            cpu[k]
        );
    }
}

#[test]
fn gpu_matches_cpu_pulling_along_a_diagonal_ray() {
    let n = 5000;
    let cfg = SphConfig::new(n as u32, ConfigOverrides::default()).unwrap();
    let scene = Scene::new(SceneKind::Random, n, cfg.spacing, 7);
    let centre = scene.positions.iter().copied().sum::<Vec3>() / n as f32;
    let origin = centre - Vec3::new(1.0, 0.7, 0.4);
    let ip = InteractParams::new(origin, centre - origin, 0.05, 40.0);
    check(n, ip);
}

#[test]
fn gpu_matches_cpu_pushing_with_a_ray_through_a_particle() {
    let n = 777;
    let cfg = SphConfig::new(n as u32, ConfigOverrides::default()).unwrap();
    let scene = Scene::new(SceneKind::Random, n, cfg.spacing, 7);
    // A ray straight through particle 5: it gets d = 0 and no force; its neighbours do.
    let p = scene.positions[5];
    let ip = InteractParams::new(p + Vec3::new(0.0, 0.0, 1.0), -Vec3::Z, 0.04, -25.0);
    check(n, ip);
}

/// The viewer's mouse force moves the water on both paths under both solvers (on a software
/// adapter the viewer steps the CPU path, so a CPU DFSPH step that dropped the force left the
/// water still under the default solver). A ray along z just above the dam-break column pulls
/// its top layers towards its axis: after a few steps the particles within its reach move
/// towards it faster than in the same run without the force, and the GPU step agrees with its
/// CPU mirror.
#[test]
fn the_mouse_force_moves_the_water_on_both_paths_under_both_solvers() {
    use gpu_sph::params::DfsphConfig;
    use gpu_sph::run::{Backend, CpuSimulation};
    use gpu_sph::solver::Solver;

    let n = 3000;
    let steps = 6;
    for solver in [Solver::Wcsph, Solver::Dfsph] {
        let cfg = SphConfig::for_solver(n as u32, ConfigOverrides::default(), solver).unwrap();
        let scene = Scene::new(SceneKind::DamBreak, n, cfg.spacing, 7);
        let ph = PhysicsConfig::default();
        let fp = ph
            .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
            .unwrap();
        let dp = SolverParams::new(solver, &DfsphConfig::default(), &cfg, &ph).unwrap();
        let sp = cfg.sim_params();
        let state = Particles::new(scene.positions.clone(), scene.velocities.clone());
        // Along z just above the column's free surface, reaching its top layers: it lifts them,
        // as a user dragging the surface up does (a ray through the bulk only compresses it).
        let lo = scene.positions.iter().copied().fold(Vec3::MAX, Vec3::min);
        let hi = scene.positions.iter().copied().fold(Vec3::MIN, Vec3::max);
        let radius = (hi.x - lo.x) / 3.0;
        let mid = Vec3::new(
            0.5 * (lo.x + hi.x),
            hi.y + 0.5 * radius,
            0.5 * (lo.z + hi.z),
        );
        let origin = Vec3::new(mid.x, mid.y, lo.z - 0.1);
        let ip = InteractParams::new(origin, Vec3::Z, radius, 50.0);
        let axis_of = |x: Vec3| Vec3::new(mid.x, mid.y, x.z);
        // Σ over the particles that start within reach of v · (unit towards the axis).
        let pull = |s: &gpu_sph::gpu::fluid::Snapshot| -> f32 {
            let pos = s.state.to_input_order(&s.state.pos);
            let vel = s.state.to_input_order(&s.state.vel);
            (0..n)
                .filter(|&k| (scene.positions[k] - axis_of(scene.positions[k])).length() < radius)
                .map(|k| vel[k].dot((axis_of(pos[k]) - pos[k]).normalize_or_zero()))
                .sum()
        };
        let run = |b: &mut dyn Backend| {
            for _ in 0..steps {
                b.step().unwrap();
            }
            b.snapshot().unwrap()
        };
        let cpu_with = |force: bool| {
            let mut c = CpuSimulation::with_solver(sp, fp, dp, state.clone());
            c.interaction = force.then_some(ip);
            run(&mut c)
        };
        let (still, pulled) = (cpu_with(false), cpu_with(true));
        let reached = (0..n)
            .filter(|&k| (scene.positions[k] - axis_of(scene.positions[k])).length() < radius)
            .count();
        assert!(
            reached > 50,
            "{solver:?}: the ray reaches {reached} particles"
        );
        // Each reached particle gains up to S t towards the axis (S = 50 m/s², t = a few ms);
        // a tenth of a millimetre per second on average is far above rounding and far below it.
        let gain = (pull(&pulled) - pull(&still)) / reached as f32;
        assert!(
            gain > 1e-3,
            "{solver:?} CPU: the force changed the pull towards the ray by {gain} m/s"
        );
        let Some(ctx) = common::gpu() else { continue };
        let mut g = Simulation::with_solver(ctx.clone(), &sp, &fp, &dp, &state).unwrap();
        g.set_interaction(Some(ip));
        let gpu = run(&mut g);
        let gain_gpu = (pull(&gpu) - pull(&still)) / reached as f32;
        assert!(
            gain_gpu > 1e-3,
            "{solver:?} GPU: the force changed the pull towards the ray by {gain_gpu} m/s"
        );
        if common::bit_exact(&ctx) {
            let bits = |s: &gpu_sph::gpu::fluid::Snapshot| {
                s.state
                    .to_input_order(&s.state.vel)
                    .iter()
                    .flat_map(|v| v.to_array().map(f32::to_bits))
                    .collect::<Vec<_>>()
            };
            assert!(
                bits(&gpu) == bits(&pulled),
                "{solver:?}: the GPU's pulled velocities differ from the CPU mirror's"
            );
        }
    }
}
