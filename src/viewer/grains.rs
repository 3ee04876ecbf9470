//! The viewer's colliding spheres (`--model grains`): a pour ([`GrainSetup::pour`]) or a
//! scene's bodies filled ([`GrainSetup::from_scene`]) stepped on either path and drawn at each sphere's radius from the GPU buffers; Shift + left drag
//! spawns spheres where the cursor ray meets the tank's back plane.

use std::sync::Arc;

use glam::{Vec3, Vec4, Vec4Swizzles};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};

use crate::gpu::GpuContext;
use crate::grains::gpu::GpuGrains;
use crate::grains::{
    CpuGrains, GrainConfig, GrainGuards, GrainPath, GrainSetup, GrainStats, Spheres,
};
use crate::grid::gpu::storage_buffer;
use crate::run::{Hooks, RunFrom, Until};
use crate::{Error, Result};

/// Spheres the mouse may add beyond the pour (the buffers are sized once).
pub const SPAWN_ROOM: u32 = 20_000;

/// The colliding spheres of the viewer.
pub struct GrainsMode {
    /// The flags' pour.
    pub cfg: GrainConfig,
    setup: GrainSetup,
    /// The GPU's buffers: the GPU path's state, or the CPU path's copy to draw.
    pub gpu: GpuGrains,
    cpu: Option<CpuGrains>,
    /// Zeros bound where the renderer's density and pressure fields read (the spheres colour
    /// by speed).
    pub zeros: wgpu::Buffer,
    rng: Xoshiro256PlusPlus,
    /// Steps taken, simulated time and the energy the check compares with.
    pub at: RunFrom,
    /// The last step's statistics.
    pub last: Option<GrainStats>,
    /// The still obstacles' surfaces as points (x, y, z, drawn radius), and how many.
    obstacle_points: Option<(wgpu::Buffer, u32)>,
}

/// The wall time a frame's substeps may take before fewer are run (a frame every 0.25 s keeps
/// the window responsive on a CPU; a GPU meets the full simulated time per frame well inside).
const FRAME_BUDGET_MS: f64 = 250.0;

/// The most substeps one frame runs.
pub const MAX_SUBSTEPS: u32 = 10_000;

/// The points drawn for the still obstacles' `shapes`: each surface sampled at `r` (the largest
/// sphere radius), drawn at 0.6 r so neighbours overlap into a surface.
fn obstacle_points(shapes: &[crate::scene::Shape], r: f32) -> Vec<glam::Vec4> {
    shapes
        .iter()
        .flat_map(|shape| crate::obstacle::sample_surface(shape, r))
        .map(|p| p.extend(0.6 * r))
        .collect()
}

/// Keeps the last step's row, the diverged one's too (the panel shows its speed).
struct LastRow(Option<GrainStats>);

impl Hooks<Spheres<'_>> for LastRow {
    fn row(&mut self, s: &GrainStats) -> Result<()> {
        self.0 = Some(*s);
        Ok(())
    }
}

impl GrainsMode {
    /// Starts `setup`'s spheres (made from `cfg`); `on_cpu` steps them on the CPU path.
    pub fn new(
        ctx: Arc<GpuContext>,
        cfg: GrainConfig,
        setup: GrainSetup,
        on_cpu: bool,
    ) -> Result<Self> {
        let capacity = setup.sim.n.saturating_add(SPAWN_ROOM);
        let gpu = GpuGrains::new(ctx.clone(), &setup, capacity)?;
        let zeros = storage_buffer(&ctx.device, "sph.grain_zeros", capacity as u64 * 4);
        let points = obstacle_points(&setup.shapes, cfg.radius);
        let obstacle_points = (!points.is_empty()).then(|| {
            use wgpu::util::DeviceExt;
            let buffer = ctx
                .device
                .create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("sph.grain_obstacle_points"),
                    contents: bytemuck::cast_slice(&points),
                    usage: wgpu::BufferUsages::STORAGE,
                });
            (buffer, points.len() as u32)
        });
        Ok(Self {
            obstacle_points,
            rng: Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x5eed),
            cpu: on_cpu.then(|| CpuGrains::new(&setup)),
            cfg,
            setup,
            gpu,
            zeros,
            at: RunFrom::default(),
            last: None,
        })
    }

    /// The tank.
    pub fn tank(&self) -> (Vec3, Vec3) {
        let g = &self.setup.grain;
        (
            Vec3::from_slice(&g.tank_min[..3]),
            Vec3::from_slice(&g.tank_max[..3]),
        )
    }

    /// The buffers the renderer draws the spheres from: positions (xyz, radius) and velocities,
    /// with zeros for the density and pressure colour fields.
    pub fn shown(&self) -> crate::gpu::fluid::Shown<'_> {
        let b = &self.gpu.g.bufs;
        crate::gpu::fluid::Shown {
            positions: &b.positions,
            velocities: &b.velocities,
            density: &self.zeros,
            pressure: &self.zeros,
            count: self.len(),
            obstacles: self.obstacle_points.as_ref().map(|(b, n)| (b, *n)),
        }
    }

    /// The substeps of the next frame, after one of `done` substeps took `sim_ms`: as many as
    /// advance the simulated time by `frame_time` s (the panel's, 1/60 s: real time at 60 frames a
    /// second), fewer where they would take more than [`FRAME_BUDGET_MS`] of wall time, and at
    /// most four times the last frame's, so a slow machine finds its pace within a few frames.
    /// Example: dt = 2.0e-5 s wants 834 substeps; at 0.5 ms each the budget allows 500.
    pub fn next_substeps(&self, done: u32, sim_ms: f64, frame_time: f32) -> u32 {
        let wanted = (frame_time as f64 / self.dt() as f64).ceil();
        let per_step = sim_ms / done.max(1) as f64;
        let budget = if per_step > 0.0 {
            FRAME_BUDGET_MS / per_step
        } else {
            f64::INFINITY
        };
        let grown = 4.0 * done.max(1) as f64;
        wanted
            .min(budget)
            .min(grown)
            .clamp(1.0, MAX_SUBSTEPS as f64) as u32
    }

    /// What the spheres started from (R returns to it).
    pub fn setup(&self) -> &GrainSetup {
        &self.setup
    }

    /// The time step, s.
    pub fn dt(&self) -> f32 {
        self.setup.grain.dt
    }

    /// Spheres live now.
    pub fn len(&self) -> u32 {
        self.gpu.len() as u32
    }

    /// Whether none are.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the CPU path steps them.
    pub fn on_cpu(&self) -> bool {
        self.cpu.is_some()
    }

    /// Back to the pour.
    pub fn reset(&mut self) -> Result<()> {
        self.set_state(&self.setup.pos.clone(), &self.setup.vel.clone())?;
        self.at = RunFrom::default();
        Ok(())
    }

    fn set_state(&mut self, pos: &[Vec4], vel: &[Vec4]) -> Result<()> {
        self.gpu.replace(pos, vel)?;
        if let Some(cpu) = &mut self.cpu {
            cpu.replace(pos, vel)?;
        }
        // Spheres added or reset change the energy: compare anew.
        self.at.start_energy = None;
        self.last = None;
        Ok(())
    }

    /// `steps` steps through the driver loop, each checked as a headless run checks it; the
    /// CPU path's state is then copied to the GPU buffers the renderer draws (a diverged run's
    /// too, so the picture shows it).
    pub fn advance(&mut self, steps: u32, energy_margin: f64) -> Result<()> {
        let guards = GrainGuards { energy_margin };
        let path: &mut dyn GrainPath = match &mut self.cpu {
            Some(cpu) => cpu,
            None => &mut self.gpu,
        };
        let mut last = LastRow(self.last);
        let driven = crate::run::drive(
            &mut Spheres::new(path, self.setup.grain),
            &mut self.at,
            Until::steps(steps as u64),
            &guards,
            &mut last,
        );
        self.last = last.0;
        if let Some(cpu) = &self.cpu {
            let (pos, vel) = cpu.state()?;
            self.gpu.upload(&pos, &vel);
        }
        driven.map(|_| ())
    }

    /// Spawns a sphere where the ray `origin + s·dir` meets the tank's back plane (the face
    /// farthest along `view_dir`), a largest radius inside it, unless it would overlap a sphere
    /// or an obstacle, or the buffers are full. Returns whether one was added.
    pub fn spawn(&mut self, origin: Vec3, dir: Vec3, view_dir: Vec3) -> Result<bool> {
        let (lo, hi) = self.tank();
        let axis = view_dir.abs().max_position();
        let (plane, inward) = if view_dir[axis] > 0.0 {
            (hi[axis], -1.0)
        } else {
            (lo[axis], 1.0)
        };
        if dir[axis].abs() < 1e-6 {
            return Ok(false);
        }
        let s = (plane - origin[axis]) / dir[axis];
        if !(s.is_finite() && s > 0.0) {
            return Ok(false);
        }
        let r_max = self.cfg.radius;
        let mut c = origin + dir * s;
        c[axis] = plane + inward * r_max;
        if self.setup.sim.planar != 0 {
            c.z = 0.0;
        }
        if c.cmplt(lo + r_max).any() || c.cmpgt(hi - r_max).any() {
            return Ok(false);
        }
        if self.len() as usize >= self.gpu.g.bufs.capacity as usize {
            return Err(Error::input(format!(
                "{} spheres fill the buffers: reset (R) to pour again",
                self.len()
            )));
        }
        let r_min = self.cfg.smallest();
        let r = if r_max > r_min {
            self.rng.random_range(r_min..r_max)
        } else {
            r_max
        };
        if self
            .setup
            .obstacles
            .iter()
            .any(|o| crate::grains::obstacle_gap(o, c).0 < r)
        {
            return Ok(false);
        }
        let (mut pos, mut vel) = match &self.cpu {
            Some(cpu) => cpu.state()?,
            None => self.gpu.state()?,
        };
        if pos
            .iter()
            .any(|p| (p.xyz() - c).length_squared() < (p.w + r) * (p.w + r))
        {
            return Ok(false);
        }
        pos.push(c.extend(r));
        vel.push(Vec3::ZERO.extend(crate::grains::grain_mass(r, self.cfg.density, self.cfg.dim)));
        self.set_state(&pos, &vel)?;
        Ok(true)
    }
}
