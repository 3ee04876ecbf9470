//! The fluid passes on the GPU (walls, pressure, forces, timestep, integrate) and [`Simulation`], which
//! chains them after the neighbour pipeline into one step.

use std::sync::Arc;

use glam::Vec3;
use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::interact::GpuInteract;
use super::neighbours::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline, storage_buffer,
};
use super::timer::Stage;
use crate::cpu::interact::InteractParams;
use crate::cpu::reorder::Particles;
use crate::params::{FluidParams, SimParams};
use crate::{Result, shaders};

/// The fluid kernels and their buffers, for one N.
pub struct GpuFluid {
    walls: wgpu::ComputePipeline,
    pressure: wgpu::ComputePipeline,
    forces: wgpu::ComputePipeline,
    timestep: wgpu::ComputePipeline,
    integrate: wgpu::ComputePipeline,
    walls_bg: wgpu::BindGroup,
    pressure_bg: wgpu::BindGroup,
    forces_bg: wgpu::BindGroup,
    timestep_bg: wgpu::BindGroup,
    integrate_bg: wgpu::BindGroup,
    /// The fluid uniform block.
    pub params: wgpu::Buffer,
    /// Density with the walls' mirror particles, slot order (N): what the fluid feels.
    pub fluid_density: wgpu::Buffer,
    /// Pressure per particle, slot order (N).
    pub pressure_buf: wgpu::Buffer,
    /// Acceleration per particle, slot order (N, vec4).
    pub accel: wgpu::Buffer,
    /// (dt, v_max, a_max, 0) of the last step.
    pub step_state: wgpu::Buffer,
}

impl GpuFluid {
    /// Compiles the fluid kernels and allocates their buffers next to `grid`'s.
    pub fn new(ctx: &GpuContext, grid: &GpuNeighbours, fp: &FluidParams) -> Result<Self> {
        use Binding::*;
        let b = &grid.bufs;
        ctx.scoped(|| {
            let d = &ctx.device;
            let n64 = b.n as u64;
            let storage = |label: &str, bytes: u64| storage_buffer(d, label, bytes);
            let params = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("sph.fluid_params"),
                contents: bytemuck::bytes_of(fp),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            });
            let fluid_density = storage("sph.fluid_density", n64 * 4);
            let pressure_buf = storage("sph.pressure", n64 * 4);
            let accel = storage("sph.accel", n64 * 16);
            let step_state = storage("sph.step_state", 16);

            let walls_l = layout(
                d,
                "sph.walls",
                &[Uniform, Uniform, Read, Read, Read, ReadWrite],
            );
            let pressure_l = layout(d, "sph.pressure", &[Uniform, Uniform, Read, ReadWrite]);
            let forces_l = layout(
                d,
                "sph.forces",
                &[Uniform, Uniform, Read, Read, Read, Read, Read, ReadWrite],
            );
            let timestep_l = layout(
                d,
                "sph.timestep",
                &[Uniform, Uniform, Read, Read, ReadWrite],
            );
            let integrate_l = layout(
                d,
                "sph.integrate",
                &[
                    Uniform, Uniform, Read, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                ],
            );
            let m = |label, src| ctx.shader(label, src);
            let walls_m = m("sph.walls", shaders::WALLS);
            let pressure_m = m("sph.pressure", shaders::PRESSURE);
            let forces_m = m("sph.forces", shaders::FORCES);
            let timestep_m = m("sph.timestep", shaders::TIMESTEP);
            let integrate_m = m("sph.integrate", shaders::INTEGRATE);
            Self {
                walls: pipeline(d, "sph.walls", &walls_l, &walls_m, "walls"),
                pressure: pipeline(d, "sph.pressure", &pressure_l, &pressure_m, "pressure"),
                forces: pipeline(d, "sph.forces", &forces_l, &forces_m, "forces"),
                timestep: pipeline(d, "sph.timestep", &timestep_l, &timestep_m, "timestep"),
                integrate: pipeline(d, "sph.integrate", &integrate_l, &integrate_m, "integrate"),
                walls_bg: bind_group(
                    d,
                    "sph.walls",
                    &walls_l,
                    &[
                        &b.params,
                        &params,
                        &b.sorted_pos,
                        &b.density,
                        &b.slot_start,
                        &fluid_density,
                    ],
                ),
                pressure_bg: bind_group(
                    d,
                    "sph.pressure",
                    &pressure_l,
                    &[&b.params, &params, &fluid_density, &pressure_buf],
                ),
                forces_bg: bind_group(
                    d,
                    "sph.forces",
                    &forces_l,
                    &[
                        &b.params,
                        &params,
                        &b.sorted_pos,
                        &b.sorted_vel,
                        &fluid_density,
                        &pressure_buf,
                        &b.slot_start,
                        &accel,
                    ],
                ),
                timestep_bg: bind_group(
                    d,
                    "sph.timestep",
                    &timestep_l,
                    &[&b.params, &params, &b.sorted_vel, &accel, &step_state],
                ),
                integrate_bg: bind_group(
                    d,
                    "sph.integrate",
                    &integrate_l,
                    &[
                        &b.params,
                        &params,
                        &b.sorted_pos,
                        &b.sorted_vel,
                        &b.sorted_id,
                        &accel,
                        &step_state,
                        &b.positions,
                        &b.velocities,
                        &b.particle_id,
                    ],
                ),
                params,
                fluid_density,
                pressure_buf,
                accel,
                step_state,
            }
        })
    }
}

/// One simulation on the GPU: the neighbour pipeline plus the fluid passes, driven one step at
/// a time by every front end.
pub struct Simulation {
    /// The neighbour pipeline and the particle state.
    pub grid: GpuNeighbours,
    /// The fluid passes.
    pub fluid: GpuFluid,
    /// Grid parameters.
    pub sim_params: SimParams,
    /// Fluid parameters.
    pub fluid_params: FluidParams,
    /// The viewer's mouse force, dispatched only while `interaction` is set.
    pub interact: GpuInteract,
    interaction: Option<InteractParams>,
}

/// A state read back from the GPU, in the order the GPU holds it.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Positions, velocities and original ids.
    pub state: Particles,
    /// Density of each particle in the last step, with the walls' mirror particles.
    pub density: Vec<f32>,
    /// dt of the last step.
    pub dt: f32,
}

impl Simulation {
    /// Builds the pipelines and uploads `state`.
    pub fn new(
        ctx: Arc<GpuContext>,
        sp: &SimParams,
        fp: &FluidParams,
        state: &Particles,
    ) -> Result<Self> {
        let grid = GpuNeighbours::new(ctx, sp)?;
        let fluid = GpuFluid::new(&grid.ctx, &grid, fp)?;
        let interact = GpuInteract::new(&grid.ctx, &grid, &fluid.accel)?;
        grid.upload(state);
        Ok(Self {
            grid,
            fluid,
            sim_params: *sp,
            fluid_params: *fp,
            interact,
            interaction: None,
        })
    }

    /// Replaces the fluid parameters (viscosity, stiffness, gravity… changed live).
    pub fn set_fluid_params(&mut self, fp: &FluidParams) {
        self.fluid_params = *fp;
        self.grid
            .ctx
            .queue
            .write_buffer(&self.fluid.params, 0, bytemuck::bytes_of(fp));
    }

    /// Starts (`Some`) or stops (`None`) the mouse force of the following steps.
    pub fn set_interaction(&mut self, ip: Option<InteractParams>) {
        if let Some(ip) = &ip {
            self.interact.set(&self.grid.ctx, ip);
        }
        self.interaction = ip;
    }

    /// Replaces the particle state.
    pub fn upload(&self, state: &Particles) {
        self.grid.upload(state);
    }

    fn dispatch(
        &self,
        e: &mut wgpu::CommandEncoder,
        stage: Stage,
        pipe: &wgpu::ComputePipeline,
        bg: &wgpu::BindGroup,
        groups_x: u32,
    ) {
        let mut pass = self.grid.pass(e, stage);
        pass.set_pipeline(pipe);
        pass.set_bind_group(0, bg, &[]);
        pass.dispatch_workgroups(groups_x, 1, 1);
    }

    /// Encodes one full step: grid build, reorder, density, walls, pressure, forces, (interact,
    /// while the viewer's mouse force is on), timestep, integrate. Nothing is read back.
    pub fn encode_step(&self, e: &mut wgpu::CommandEncoder) {
        let n_groups = groups(self.grid.bufs.n, WORKGROUP_SIZE);
        let f = &self.fluid;
        self.grid.encode_build(e);
        self.grid.encode_density(e);
        self.dispatch(e, Stage::Walls, &f.walls, &f.walls_bg, n_groups);
        self.dispatch(e, Stage::Pressure, &f.pressure, &f.pressure_bg, n_groups);
        self.dispatch(e, Stage::Forces, &f.forces, &f.forces_bg, n_groups);
        if self.interaction.is_some() {
            self.interact.encode(e, self.grid.bufs.n);
        }
        self.dispatch(e, Stage::Timestep, &f.timestep, &f.timestep_bg, 1);
        self.dispatch(e, Stage::Integrate, &f.integrate, &f.integrate_bg, n_groups);
    }

    /// Runs `steps` steps in one submission.
    pub fn step(&self, steps: u32) -> Result<()> {
        self.grid.run(|_, e| {
            for _ in 0..steps {
                self.encode_step(e);
            }
        })
    }

    /// Reads the current state, densities and last dt.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let b = &self.grid.bufs;
        let n = b.n as usize;
        let state = Particles {
            pos: self.grid.read_vec3(&b.positions, n)?,
            vel: self.grid.read_vec3(&b.velocities, n)?,
            id: self.grid.read_u32(&b.particle_id, n)?,
        };
        let density = self.grid.read_f32(&self.fluid.fluid_density, n)?;
        let dt = self.grid.read_f32(&self.fluid.step_state, 4)?[0];
        Ok(Snapshot { state, density, dt })
    }

    /// Reads the slot-order fields of the last step: pressure, acceleration, (dt, v_max, a_max).
    pub fn read_fields(&self) -> Result<(Vec<f32>, Vec<Vec3>, [f32; 3])> {
        let n = self.grid.bufs.n as usize;
        let p = self.grid.read_f32(&self.fluid.pressure_buf, n)?;
        let a = self.grid.read_vec3(&self.fluid.accel, n)?;
        let s = self.grid.read_f32(&self.fluid.step_state, 4)?;
        Ok((p, a, [s[0], s[1], s[2]]))
    }
}
