//! Stage `interact` on the GPU (see `shaders/interact.wgsl`): the viewer's mouse force, added to
//! the accelerations between `forces` and `timestep`.

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use crate::cpu::interact::InteractParams;
use crate::grid::gpu::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline,
};
use crate::{Result, shaders};

/// The `interact` kernel, its uniform block and its bind group.
pub struct GpuInteract {
    pipeline: wgpu::ComputePipeline,
    bind_group: wgpu::BindGroup,
    params: wgpu::Buffer,
}

impl GpuInteract {
    /// Compiles the kernel and binds it to `grid`'s slot-order positions and `accel`.
    pub fn new(ctx: &GpuContext, grid: &GpuNeighbours, accel: &wgpu::Buffer) -> Result<Self> {
        use Binding::*;
        ctx.scoped(|| {
            let d = &ctx.device;
            let params = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("sph.interact_params"),
                contents: bytemuck::bytes_of(&InteractParams::new(
                    glam::Vec3::ZERO,
                    glam::Vec3::Z,
                    0.0,
                    0.0,
                )),
                usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            });
            let l = layout(d, "sph.interact", &[Uniform, Uniform, Read, ReadWrite]);
            let m = ctx.shader("sph.interact", shaders::INTERACT);
            Self {
                pipeline: pipeline(d, "sph.interact", &l, &m, "interact"),
                bind_group: bind_group(
                    d,
                    "sph.interact",
                    &l,
                    &[&grid.bufs.params, &params, &grid.bufs.sorted_pos, accel],
                ),
                params,
            }
        })
    }

    /// Sets the ray for the following dispatches.
    pub fn set(&self, ctx: &GpuContext, ip: &InteractParams) {
        ctx.queue
            .write_buffer(&self.params, 0, bytemuck::bytes_of(ip));
    }

    /// Encodes one dispatch over N.
    pub fn encode(&self, encoder: &mut wgpu::CommandEncoder, n: u32) {
        let mut pass = encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some("sph.interact"),
            timestamp_writes: None,
        });
        pass.set_pipeline(&self.pipeline);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.dispatch_workgroups(groups(n, WORKGROUP_SIZE), 1, 1);
    }
}
