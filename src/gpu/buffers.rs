//! The buffers every solver's passes share with the rest of a run ([`GpuFluid`]): the fluid's
//! uniform block, the accelerations, the step state, the obstacles' power and what the viewer
//! draws (density, pressure). [`super::fluid::Simulation`] owns them; the solvers' stages
//! (`dfsph.rs`), the obstacles and the statistics bind them.

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use crate::Result;
use crate::grid::gpu::{GpuNeighbours, storage_buffer};
use crate::params::FluidParams;

/// The shared buffers, for one N.
pub struct GpuFluid {
    /// The fluid uniform block.
    pub params: wgpu::Buffer,
    /// Density per particle, the order the viewer draws (N).
    pub fluid_density: wgpu::Buffer,
    /// Pressure per particle, the order the viewer draws (N).
    pub pressure_buf: wgpu::Buffer,
    /// Acceleration per particle, slot order (N, vec4).
    pub accel: wgpu::Buffer,
    /// (dt, v_max, dt_prev, dt_sub) of the last step.
    pub step_state: wgpu::Buffer,
    /// Per particle, slot order (N): the power per unit mass moving obstacles put in (zeros
    /// without obstacles), which `stats` sums.
    pub obstacle_power: wgpu::Buffer,
}

impl GpuFluid {
    /// Allocates the buffers next to `grid`'s.
    pub fn new(ctx: &GpuContext, grid: &GpuNeighbours, fp: &FluidParams) -> Result<Self> {
        let b = &grid.bufs;
        ctx.scoped(|| {
            let d = &ctx.device;
            let n64 = b.capacity as u64;
            let storage = |label: &str, bytes: u64| storage_buffer(d, label, bytes);
            Self {
                params: d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some("sph.fluid_params"),
                    contents: bytemuck::bytes_of(fp),
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                }),
                fluid_density: storage("sph.fluid_density", n64 * 4),
                pressure_buf: storage("sph.pressure", n64 * 4),
                accel: storage("sph.accel", n64 * 16),
                // The passes that only read it bind it as a uniform (a storage binding fewer).
                step_state: d.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("sph.step_state"),
                    size: 16,
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::UNIFORM
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                    mapped_at_creation: false,
                }),
                obstacle_power: storage("sph.obstacle_power", n64 * 4),
            }
        })
    }
}
