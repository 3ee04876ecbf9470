//! The obstacle passes on the GPU (`shaders/obstacle.wgsl`; CPU mirror: `crate::boundary`):
//! the boundary particles and their grid, uploaded once (static obstacles never move), and the
//! two passes that add their density and push to the fluid's.

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::fluid::GpuFluid;
use super::neighbours::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline,
};
use super::timer::Stage;
use crate::boundary::Boundary;
use crate::{Result, shaders};

/// The obstacle kernels, the boundary buffers and their bind group.
pub struct GpuObstacles {
    density: wgpu::ComputePipeline,
    forces: wgpu::ComputePipeline,
    bg: wgpu::BindGroup,
    _buffers: [wgpu::Buffer; 3],
    /// The boundary particles (xyz, ψ), slot order of the boundary grid: the viewer draws them.
    pub bpos: wgpu::Buffer,
    /// Their count.
    pub count: u32,
}

impl GpuObstacles {
    /// Uploads `boundary` and builds the passes over `grid`'s and `fluid`'s buffers.
    pub fn new(
        ctx: &GpuContext,
        grid: &GpuNeighbours,
        fluid: &GpuFluid,
        boundary: &Boundary,
    ) -> Result<Self> {
        boundary.check_limits(&ctx.limits)?;
        use Binding::*;
        ctx.scoped(|| {
            let d = &ctx.device;
            let init = |label: &str, contents: &[u8], usage| {
                d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents,
                    usage,
                })
            };
            let storage = wgpu::BufferUsages::STORAGE;
            let params = init(
                "sph.obstacle_params",
                bytemuck::bytes_of(&boundary.params),
                wgpu::BufferUsages::UNIFORM,
            );
            let bpos: Vec<[f32; 4]> = boundary
                .pos
                .iter()
                .zip(&boundary.psi)
                .map(|(p, &psi)| p.extend(psi).to_array())
                .collect();
            let bpos = init("sph.boundary_pos", bytemuck::cast_slice(&bpos), storage);
            let bslot = init(
                "sph.boundary_slot_start",
                bytemuck::cast_slice(&boundary.slot_start),
                storage,
            );
            let bslip = init(
                "sph.boundary_slip",
                bytemuck::cast_slice(&boundary.slip),
                storage,
            );
            let l = layout(
                d,
                "sph.obstacles",
                &[
                    Uniform, Uniform, Uniform, Read, Read, ReadWrite, ReadWrite, ReadWrite, Read,
                    Read, Read,
                ],
            );
            let m = ctx.shader("sph.obstacles", shaders::OBSTACLES);
            let b = &grid.bufs;
            let bg = bind_group(
                d,
                "sph.obstacles",
                &l,
                &[
                    &b.params,
                    &fluid.params,
                    &params,
                    &b.sorted_pos,
                    &b.sorted_vel,
                    &fluid.fluid_density,
                    &fluid.pressure_buf,
                    &fluid.accel,
                    &bpos,
                    &bslot,
                    &bslip,
                ],
            );
            Self {
                density: pipeline(d, "sph.obstacle_density", &l, &m, "obstacle_density"),
                forces: pipeline(d, "sph.obstacle_forces", &l, &m, "obstacle_forces"),
                bg,
                _buffers: [params, bslot, bslip],
                bpos,
                count: boundary.pos.len() as u32,
            }
        })
    }

    /// Adds the obstacles' density (and re-derives the pressure), after `walls`.
    pub fn encode_density(&self, grid: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        let n = groups(grid.bufs.n, WORKGROUP_SIZE);
        grid.dispatch(e, Stage::ObstacleDensity, &self.density, &self.bg, n);
    }

    /// Adds the obstacles' push to the accelerations, after `forces` (and `interact`).
    pub fn encode_forces(&self, grid: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        let n = groups(grid.bufs.n, WORKGROUP_SIZE);
        grid.dispatch(e, Stage::ObstacleForces, &self.forces, &self.bg, n);
    }
}
