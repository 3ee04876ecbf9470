//! WCSPH's passes on the GPU (walls with the pressure fused in, forces, timestep, integrate)
//! and their buffers, which `Simulation` (fluid.rs) chains after the
//! neighbour pipeline; DFSPH and the obstacles share the buffers the fluid feels (accel,
//! step_state, obstacle_power).

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use crate::grid::gpu::{
    Binding, GpuNeighbours, bind_group, layout, pipeline, storage_buffer, timestep_blocks,
};
use crate::params::FluidParams;
use crate::{Result, shaders};

/// The fluid kernels and their buffers, for one N.
pub struct GpuFluid {
    pub(crate) walls: wgpu::ComputePipeline,
    pub(crate) forces: wgpu::ComputePipeline,
    pub(crate) timestep_blocks: wgpu::ComputePipeline,
    /// Workgroups of `timestep_blocks` ([`timestep_blocks`]).
    pub(crate) blocks: u32,
    /// The time step's maxima (v, a, s bits, 0), folded by `timestep_blocks` with atomicMax
    /// and read by `integrate`; cleared before each step's fold.
    pub(crate) timestep_maxima: wgpu::Buffer,
    pub(crate) integrate: wgpu::ComputePipeline,
    pub(crate) walls_bg: wgpu::BindGroup,
    pub(crate) forces_bg: wgpu::BindGroup,
    pub(crate) timestep_bg: wgpu::BindGroup,
    pub(crate) integrate_bg: wgpu::BindGroup,
    /// The fluid uniform block.
    pub params: wgpu::Buffer,
    /// Density with the walls' mirror particles, slot order (N): what the fluid feels.
    pub fluid_density: wgpu::Buffer,
    /// Pressure per particle, slot order (N).
    pub pressure_buf: wgpu::Buffer,
    /// Acceleration per particle, slot order (N, vec4).
    pub accel: wgpu::Buffer,
    /// (dt, v_max, a_max, s_max) of the last step.
    pub step_state: wgpu::Buffer,
    /// Per particle, slot order (N): Σ_b a_ib · v_b, the power per unit mass moving obstacles
    /// put in (written by `obstacle_forces`; zeros without obstacles), which `stats` sums.
    pub obstacle_power: wgpu::Buffer,
}

impl GpuFluid {
    /// Compiles the fluid kernels and allocates their buffers next to `grid`'s.
    pub fn new(ctx: &GpuContext, grid: &GpuNeighbours, fp: &FluidParams) -> Result<Self> {
        use Binding::*;
        let b = &grid.bufs;
        ctx.scoped(|| {
            let d = &ctx.device;
            let n64 = b.capacity as u64;
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
            let blocks = timestep_blocks(b.capacity, ctx.info.device_type);
            let timestep_maxima = storage("sph.timestep_maxima", 16);
            let obstacle_power = storage("sph.obstacle_power", n64 * 4);

            // walls.wgsl has the density fused in: it writes the densities (binding 3) too.
            let walls_l = layout(
                d,
                "sph.walls",
                &[
                    Uniform, Uniform, Read, ReadWrite, Read, ReadWrite, Read, Read, ReadWrite,
                ],
            );
            let forces_l = layout(
                d,
                "sph.forces",
                &[
                    Uniform, Uniform, Read, Read, Read, Read, Read, ReadWrite, Read, Read,
                ],
            );
            let timestep_l = layout(
                d,
                "sph.timestep",
                &[Uniform, Uniform, Read, Read, ReadWrite, Read, ReadWrite],
            );
            let integrate_l = layout(
                d,
                "sph.integrate",
                &[
                    Uniform, Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                    ReadWrite, Read,
                ],
            );
            let m = |label, src| ctx.shader(label, src);
            let w = |label, src| ctx.walking_shader(label, src, b.group_size, None);
            let walls_m = w("sph.walls", shaders::WALLS);
            let forces_m = w("sph.forces", shaders::FORCES);
            let timestep_m = m("sph.timestep", shaders::TIMESTEP);
            let integrate_m = m("sph.integrate", shaders::INTEGRATE);
            Self {
                walls: pipeline(d, "sph.walls", &walls_l, &walls_m, "walls"),
                forces: pipeline(d, "sph.forces", &forces_l, &forces_m, "forces"),
                timestep_blocks: pipeline(
                    d,
                    "sph.timestep_blocks",
                    &timestep_l,
                    &timestep_m,
                    "timestep_blocks",
                ),
                blocks,
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
                        &b.group_range,
                        &b.group_args,
                        &pressure_buf,
                    ],
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
                        &b.group_range,
                        &b.group_args,
                    ],
                ),
                timestep_bg: bind_group(
                    d,
                    "sph.timestep",
                    &timestep_l,
                    &[
                        &b.params,
                        &params,
                        &b.sorted_vel,
                        &accel,
                        &step_state,
                        &fluid_density,
                        &timestep_maxima,
                    ],
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
                        &timestep_maxima,
                    ],
                ),
                timestep_maxima,
                params,
                fluid_density,
                pressure_buf,
                accel,
                step_state,
                obstacle_power,
            }
        })
    }
}
