//! Stage `interact` (the viewer's mouse force): the GPU kernel against its CPU mirror, bit for
//! bit, on hand-made accelerations and a ray through a particle block.

mod common;

use glam::Vec3;
use gpu_sph::cpu::interact::{InteractParams, interact};
use gpu_sph::cpu::reorder::Particles;
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::params::{ConfigOverrides, PhysicsConfig, SphConfig};
use gpu_sph::scene::{Scene, SceneKind};

fn check(n: usize, ip: InteractParams) {
    let Some(ctx) = common::gpu() else { return };
    let cfg = SphConfig::new(n as u32, ConfigOverrides::default()).unwrap();
    let scene = Scene::new(SceneKind::Random, n, cfg.spacing, 7);
    let fp = PhysicsConfig::default()
        .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
        .unwrap();
    let state = Particles::new(scene.positions.clone(), scene.velocities.clone());
    let mut sim = Simulation::new(ctx, &cfg.sim_params(), &fp, &state).unwrap();
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
