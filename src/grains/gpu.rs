//! The colliding spheres on the GPU (`--model grains`): the fluid's grid build (hash, scan,
//! scatter, order, reorder; radius and mass ride in the w of position and velocity), then
//! `grain_contacts` and `grain_integrate`. CPU mirror: [`super`] (`contacts`, `integrate`).

use std::sync::Arc;

use glam::Vec4;
use wgpu::util::DeviceExt;

use super::{Frame, GrainObstacle, GrainParams, GrainPath, GrainSetup, to_input_order};
use crate::core::Stage;
use crate::gpu::context::GpuContext;
use crate::grid::gpu::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline, storage_buffer,
};
use crate::{Result, shaders};

/// Pipelines and buffers of the grain step for one capacity.
pub struct GpuGrains {
    /// The grid and the state buffers.
    pub g: GpuNeighbours,
    /// The contact block.
    pub params: wgpu::Buffer,
    /// Accelerations (vec4, w: elastic energy share), slot order.
    pub accel: wgpu::Buffer,
    /// Deepest overlap per sphere, slot order.
    pub overlap: wgpu::Buffer,
    contacts: wgpu::ComputePipeline,
    integrate: wgpu::ComputePipeline,
    contacts_bg: wgpu::BindGroup,
    integrate_bg: wgpu::BindGroup,
}

impl GpuGrains {
    /// Compiles the stages and uploads `setup`; the buffers hold `capacity` spheres (at least
    /// the setup's).
    pub fn new(ctx: Arc<GpuContext>, setup: &GrainSetup, capacity: u32) -> Result<Self> {
        use Binding::*;
        let mut sp = setup.sim;
        sp.n = capacity.max(sp.n);
        let g = GpuNeighbours::new(ctx.clone(), &sp)?;
        let built = ctx.scoped(|| {
            let d = &ctx.device;
            let params = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("sph.grain_params"),
                contents: bytemuck::bytes_of(&setup.grain),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            });
            let cap = sp.n as u64;
            let accel = storage_buffer(d, "sph.grain_accel", cap * 16);
            let overlap = storage_buffer(d, "sph.grain_overlap", cap * 4);
            // A binding cannot be empty: without obstacles one zeroed entry that
            // `grain.obstacles` = 0 keeps unread.
            let none = [GrainObstacle::default()];
            let solids = if setup.obstacles.is_empty() {
                &none[..]
            } else {
                &setup.obstacles[..]
            };
            let obstacles = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("sph.grain_obstacles"),
                contents: bytemuck::cast_slice(solids),
                usage: wgpu::BufferUsages::STORAGE,
            });
            let cl = layout(
                d,
                "sph.grain_contacts",
                &[
                    Uniform, Uniform, Read, Read, Read, ReadWrite, ReadWrite, Read,
                ],
            );
            let il = layout(
                d,
                "sph.grain_integrate",
                &[
                    Uniform, Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                ],
            );
            let cm = ctx.shader("sph.grain_contacts", shaders::GRAIN_CONTACTS);
            let im = ctx.shader("sph.grain_integrate", shaders::GRAIN_INTEGRATE);
            let b = &g.bufs;
            let contacts_bg = bind_group(
                d,
                "sph.grain_contacts",
                &cl,
                &[
                    &b.params,
                    &params,
                    &b.sorted_pos,
                    &b.sorted_vel,
                    &b.slot_start,
                    &accel,
                    &overlap,
                    &obstacles,
                ],
            );
            let integrate_bg = bind_group(
                d,
                "sph.grain_integrate",
                &il,
                &[
                    &b.params,
                    &params,
                    &b.sorted_pos,
                    &b.sorted_vel,
                    &b.sorted_id,
                    &accel,
                    &b.positions,
                    &b.velocities,
                    &b.particle_id,
                ],
            );
            (
                params,
                accel,
                overlap,
                pipeline(d, "sph.grain_contacts", &cl, &cm, "grain_contacts"),
                pipeline(d, "sph.grain_integrate", &il, &im, "grain_integrate"),
                contacts_bg,
                integrate_bg,
            )
        })?;
        let (params, accel, overlap, contacts, integrate, contacts_bg, integrate_bg) = built;
        let out = Self {
            g,
            params,
            accel,
            overlap,
            contacts,
            integrate,
            contacts_bg,
            integrate_bg,
        };
        out.upload(&setup.pos, &setup.vel);
        Ok(out)
    }

    /// Replaces the state (input order, ids 0..N) and makes N the live count.
    pub fn upload(&self, pos: &[Vec4], vel: &[Vec4]) {
        self.g.set_live(pos.len() as u32);
        let q = &self.g.ctx.queue;
        let b = &self.g.bufs;
        q.write_buffer(&b.positions, 0, bytemuck::cast_slice(pos));
        q.write_buffer(&b.velocities, 0, bytemuck::cast_slice(vel));
        let ids: Vec<u32> = (0..pos.len() as u32).collect();
        q.write_buffer(&b.particle_id, 0, bytemuck::cast_slice(&ids));
    }

    /// Writes a new contact block (the viewer changes it).
    pub fn set_params(&self, gp: &GrainParams) {
        self.g
            .ctx
            .queue
            .write_buffer(&self.params, 0, bytemuck::bytes_of(gp));
    }

    /// Encodes one step: the grid build, `grain_contacts`, `grain_integrate`.
    pub fn encode_step(&self, e: &mut wgpu::CommandEncoder) {
        let n = self.g.bufs.n.get();
        self.g.encode_build(e);
        self.encode_contacts(e);
        self.g.dispatch(
            e,
            Stage::GrainIntegrate,
            &self.integrate,
            &self.integrate_bg,
            groups(n, WORKGROUP_SIZE),
        );
    }

    /// Encodes `grain_contacts` alone (verification runs it on the CPU's grid).
    pub fn encode_contacts(&self, e: &mut wgpu::CommandEncoder) {
        let n = self.g.bufs.n.get();
        self.g.dispatch(
            e,
            Stage::GrainContacts,
            &self.contacts,
            &self.contacts_bg,
            groups(n, WORKGROUP_SIZE),
        );
    }

    /// Compute dispatches per step.
    pub fn dispatches_per_step(&self) -> usize {
        // the build less density, then contacts and integrate
        self.g.dispatches_per_build() - 1 + 2
    }

    /// The live count.
    pub fn len(&self) -> usize {
        self.g.bufs.n.get() as usize
    }

    /// Whether no sphere is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the last step saw (reads back the slot-order buffers).
    pub fn frame(&self) -> Result<Frame> {
        let n = self.len();
        let b = &self.g.bufs;
        let ctx = &self.g.ctx;
        let v4 = |buf: &wgpu::Buffer| -> Result<Vec<Vec4>> {
            let raw: Vec<[f32; 4]> = ctx.readback(buf, n)?;
            Ok(raw.into_iter().map(Vec4::from_array).collect())
        };
        Ok(Frame {
            pos: v4(&b.sorted_pos)?,
            vel: v4(&b.sorted_vel)?,
            id: ctx.readback(&b.sorted_id, n)?,
            slot_start: ctx.readback(&b.slot_start, b.t as usize + 1)?,
            accel: v4(&self.accel)?,
            overlap: ctx.readback(&self.overlap, n)?,
        })
    }

    /// The state after the last step, slot order, with ids.
    pub fn raw_state(&self) -> Result<(Vec<Vec4>, Vec<Vec4>, Vec<u32>)> {
        let n = self.len();
        let b = &self.g.bufs;
        let ctx = &self.g.ctx;
        let pos: Vec<[f32; 4]> = ctx.readback(&b.positions, n)?;
        let vel: Vec<[f32; 4]> = ctx.readback(&b.velocities, n)?;
        let id: Vec<u32> = ctx.readback(&b.particle_id, n)?;
        Ok((
            pos.into_iter().map(Vec4::from_array).collect(),
            vel.into_iter().map(Vec4::from_array).collect(),
            id,
        ))
    }
}

impl GrainPath for GpuGrains {
    fn step(&mut self) -> Result<Frame> {
        self.g.run(|_, e| self.encode_step(e))?;
        self.frame()
    }

    fn state(&self) -> Result<(Vec<Vec4>, Vec<Vec4>)> {
        let (pos, vel, id) = self.raw_state()?;
        Ok((to_input_order(&pos, &id), to_input_order(&vel, &id)))
    }

    fn replace(&mut self, pos: &[Vec4], vel: &[Vec4]) -> Result<()> {
        if pos.len() > self.g.bufs.capacity as usize {
            return Err(crate::Error::LimitExceeded(format!(
                "{} spheres exceed the {} the buffers hold",
                pos.len(),
                self.g.bufs.capacity
            )));
        }
        self.upload(pos, vel);
        Ok(())
    }

    fn name(&self) -> &'static str {
        "gpu"
    }
}
