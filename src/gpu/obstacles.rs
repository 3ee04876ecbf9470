//! The obstacles on the GPU (CPU mirror: `crate::boundary`): the boundary particles and their
//! grid, uploaded once, and again before each step while an obstacle moves
//! ([`GpuObstacles::upload`]); the stages' walks read them through `shaders/boundary.wgsl`.

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use crate::Result;
use crate::boundary::Boundary;
use crate::grid::gpu::{Binding, bind_group, layout};

/// The boundary particles as the passes read them (`bparticles` in shaders/boundary.wgsl):
/// (xyz, ψ) of each, then (velocity, friction) of each, in one buffer so that a walk binds
/// one storage buffer for both.
fn packed(boundary: &Boundary) -> Vec<[f32; 4]> {
    let pos = boundary
        .pos
        .iter()
        .zip(&boundary.psi)
        .map(|(p, &psi)| p.extend(psi).to_array());
    let vel = boundary
        .vel
        .iter()
        .zip(&boundary.friction)
        .map(|(v, &f)| v.extend(f).to_array());
    pos.chain(vel).collect()
}

/// The obstacles' block followed by their grid's slot starts (`obstacles` in
/// shaders/boundary.wgsl): one storage buffer, no uniform block (see
/// [`crate::grid::gpu::MAX_UNIFORM_BLOCKS`] for why).
fn grid_bytes(params: &crate::boundary::ObstacleParams, slot_start: &[u32]) -> Vec<u8> {
    let mut bytes = bytemuck::bytes_of(params).to_vec();
    bytes.extend_from_slice(bytemuck::cast_slice(slot_start));
    bytes
}

/// The layout of bind group 1 of every stage that walks the obstacles (shaders/boundary.wgsl):
/// the particles, then the obstacles' block and slot starts.
pub fn boundary_layout(d: &wgpu::Device) -> wgpu::BindGroupLayout {
    use Binding::*;
    layout(d, "sph.boundary", &[Read, Read])
}

/// Bind group 1 for a stage without obstacles: an empty box, so no particle is near one.
pub fn no_boundary(
    d: &wgpu::Device,
    l: &wgpu::BindGroupLayout,
) -> (wgpu::BindGroup, Vec<wgpu::Buffer>) {
    let none = crate::boundary::ObstacleParams {
        lo: [f32::INFINITY; 4],
        hi: [f32::NEG_INFINITY; 4],
        ..Default::default()
    };
    let init = |label: &str, contents: &[u8], usage| {
        d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents,
            usage,
        })
    };
    let grid = init(
        "sph.no_boundary_grid",
        &grid_bytes(&none, &[0; 4]),
        wgpu::BufferUsages::STORAGE,
    );
    let zeros = init("sph.no_boundary", &[0u8; 16], wgpu::BufferUsages::STORAGE);
    let bg = bind_group(d, "sph.no_boundary", l, &[&zeros, &grid]);
    (bg, vec![grid, zeros])
}

/// The obstacles' boundary buffers, which the stages' walks bind as their group 1
/// ([`GpuObstacles::boundary_bind_group`]).
pub struct GpuObstacles {
    /// The obstacles' block, then their grid's slot starts.
    grid: wgpu::Buffer,
    /// The boundary particles, slot order of the boundary grid: `count` entries (xyz, ψ), which
    /// the viewer draws, then `count` entries (velocity, friction).
    pub bpos: wgpu::Buffer,
    /// Their count.
    pub count: u32,
    /// The host's copy while an obstacle moves, re-placed before each step.
    moving: Option<Boundary>,
}

impl GpuObstacles {
    /// Uploads `boundary`.
    pub fn new(ctx: &GpuContext, boundary: &Boundary) -> Result<Self> {
        boundary.check_limits(&ctx.limits)?;
        ctx.scoped(|| {
            let d = &ctx.device;
            let init = |label: &str, contents: &[u8], usage| {
                d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents,
                    usage,
                })
            };
            let storage = wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_DST;
            let bpos = init(
                "sph.boundary_particles",
                bytemuck::cast_slice(&packed(boundary)),
                storage,
            );
            let grid = init(
                "sph.boundary_grid",
                &grid_bytes(&boundary.params, &boundary.slot_start),
                storage,
            );
            Self {
                grid,
                bpos,
                count: boundary.pos.len() as u32,
                moving: boundary.moves().then(|| boundary.clone()),
            }
        })
    }

    /// Bind group 1 (shaders/boundary.wgsl) over these obstacles for pipelines laid out with
    /// `l` ([`boundary_layout`]): the DFSPH walks.
    pub fn boundary_bind_group(
        &self,
        d: &wgpu::Device,
        l: &wgpu::BindGroupLayout,
    ) -> wgpu::BindGroup {
        bind_group(d, "sph.boundary", l, &[&self.bpos, &self.grid])
    }

    /// Whether an obstacle moves (then [`GpuObstacles::place`] must run before each step).
    pub fn moves(&self) -> bool {
        self.moving.is_some()
    }

    /// Puts moving obstacles where they are at time `t` (s) for the next step.
    pub fn place(&mut self, queue: &wgpu::Queue, t: f64) {
        if let Some(mut b) = self.moving.take() {
            b.place(t);
            self.upload(queue, &b);
            self.moving = Some(b);
        }
    }

    /// Uploads `boundary` re-placed ([`Boundary::place`]): same particles, new positions,
    /// velocities and grid. Queue writes land before the next submitted step.
    pub fn upload(&self, queue: &wgpu::Queue, boundary: &Boundary) {
        queue.write_buffer(&self.bpos, 0, bytemuck::cast_slice(&packed(boundary)));
        let grid = grid_bytes(&boundary.params, &boundary.slot_start);
        queue.write_buffer(&self.grid, 0, &grid);
    }
}
