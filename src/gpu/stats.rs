//! Stage `stats` on the GPU (`shaders/stats.wgsl`, CPU mirror [`crate::cpu::stats`]): the
//! step's statistics block, reduced on the device and read back through two staging buffers
//! in turn, so the host reads step k's 104 bytes while step k + 1 runs.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::sync::mpsc;

use super::context::GpuContext;
use super::neighbours::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline, storage_buffer,
};
use crate::core::Stage;
use crate::core::StatsBlock;
use crate::{Error, Result, shaders};

/// Bytes of the block the host reads per step.
pub const STATS_BYTES: u64 = std::mem::size_of::<StatsBlock>() as u64;
/// The words `stats_final` writes (the DFSPH block follows them).
const MAIN_BYTES: u64 = STATS_BYTES - 32;

/// What a step's statistics are computed from: the state the step ends with, in one order.
pub struct StatsInputs<'a> {
    /// Positions (vec4).
    pub pos: &'a wgpu::Buffer,
    /// Velocities (vec4).
    pub vel: &'a wgpu::Buffer,
    /// Original ids.
    pub id: &'a wgpu::Buffer,
    /// Densities.
    pub density: &'a wgpu::Buffer,
    /// The step state, dt in word 0.
    pub step_state: &'a wgpu::Buffer,
    /// The fluid parameters (uniform).
    pub fluid: &'a wgpu::Buffer,
    /// The power per unit mass moving obstacles put into each particle (zeros without).
    pub power: &'a wgpu::Buffer,
    /// DFSPH's 8-word statistics block, copied behind the general one.
    pub dfsph: Option<&'a wgpu::Buffer>,
}

/// A staging buffer being filled by a submitted step.
struct Pending {
    slot: usize,
    index: wgpu::SubmissionIndex,
    mapped: mpsc::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
}

/// The statistics pipelines, the block buffers and the two staging buffers.
pub struct GpuStats {
    blocks_pipe: wgpu::ComputePipeline,
    final_pipe: wgpu::ComputePipeline,
    bg: wgpu::BindGroup,
    out: wgpu::Buffer,
    dfsph: Option<wgpu::Buffer>,
    staging: [wgpu::Buffer; 2],
    next: std::cell::Cell<usize>,
    pending: RefCell<VecDeque<Pending>>,
}

impl GpuStats {
    /// Compiles the stage for `grid`'s N, reading `inputs`.
    pub fn new(ctx: &GpuContext, grid: &GpuNeighbours, inputs: &StatsInputs<'_>) -> Result<Self> {
        use Binding::*;
        let n = grid.bufs.capacity;
        ctx.scoped(|| {
            let d = &ctx.device;
            let blocks =
                storage_buffer(d, "sph.stats_blocks", groups(n, WORKGROUP_SIZE) as u64 * 64);
            let out = storage_buffer(d, "sph.stats_out", MAIN_BYTES);
            let l = layout(
                d,
                "sph.stats",
                &[
                    Uniform, Uniform, Read, Read, Read, Read, ReadWrite, Read, ReadWrite, Read,
                ],
            );
            let module = ctx.shader("sph.stats", shaders::STATS);
            let staging = || {
                d.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("sph.stats_staging"),
                    size: STATS_BYTES,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            };
            Self {
                blocks_pipe: pipeline(d, "sph.stats_blocks", &l, &module, "stats_blocks"),
                final_pipe: pipeline(d, "sph.stats_final", &l, &module, "stats_final"),
                bg: bind_group(
                    d,
                    "sph.stats",
                    &l,
                    &[
                        &grid.bufs.params,
                        inputs.fluid,
                        inputs.pos,
                        inputs.vel,
                        inputs.id,
                        inputs.density,
                        &blocks,
                        inputs.step_state,
                        &out,
                        inputs.power,
                    ],
                ),
                out,
                dfsph: inputs.dfsph.cloned(),
                staging: [staging(), staging()],
                next: std::cell::Cell::new(0),
                pending: RefCell::new(VecDeque::new()),
            }
        })
    }

    /// Encodes the reduction and the copy of the block (and DFSPH's) into the next staging
    /// buffer; returns that buffer's slot, which [`GpuStats::submitted`] needs.
    pub fn encode(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) -> Result<usize> {
        let slot = self.next.get();
        if self.pending.borrow().iter().any(|p| p.slot == slot) {
            return Err(Error::Map(
                "both statistics buffers are in flight: read one before the next step".into(),
            ));
        }
        {
            let mut pass = g.pass(e, Stage::Stats);
            pass.set_bind_group(0, &self.bg, &[]);
            pass.set_pipeline(&self.blocks_pipe);
            pass.dispatch_workgroups(groups(g.bufs.n.get(), WORKGROUP_SIZE), 1, 1);
            pass.set_pipeline(&self.final_pipe);
            pass.dispatch_workgroups(1, 1, 1);
        }
        g.note_dispatches(1);
        let st = &self.staging[slot];
        e.copy_buffer_to_buffer(&self.out, 0, st, 0, MAIN_BYTES);
        if let Some(d) = &self.dfsph {
            e.copy_buffer_to_buffer(d, 0, st, MAIN_BYTES, 32);
        }
        self.next.set(1 - slot);
        Ok(slot)
    }

    /// Starts mapping `slot` once submission `index` completes.
    pub fn submitted(&self, slot: usize, index: wgpu::SubmissionIndex) {
        let (tx, mapped) = mpsc::channel();
        self.staging[slot].map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.pending.borrow_mut().push_back(Pending {
            slot,
            index,
            mapped,
        });
    }

    /// Steps submitted whose block has not been read.
    pub fn in_flight(&self) -> usize {
        self.pending.borrow().len()
    }

    /// Waits for the oldest submitted step and reads its block (104 bytes).
    pub fn read(&self, ctx: &GpuContext) -> Result<StatsBlock> {
        let p = self
            .pending
            .borrow_mut()
            .pop_front()
            .ok_or_else(|| Error::Map("no step in flight to read statistics from".into()))?;
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(p.index),
                timeout: None,
            })
            .map_err(|e| Error::Device(e.to_string()))?;
        // Another thread's poll on the same device may be the one invoking the callback, so
        // wait for it rather than expect it to have run.
        p.mapped
            .recv()
            .map_err(|e| Error::Map(e.to_string()))?
            .map_err(|e| Error::Map(e.to_string()))?;
        let st = &self.staging[p.slot];
        let view = st
            .get_mapped_range(..)
            .map_err(|e| Error::Map(e.to_string()))?;
        let block: StatsBlock = bytemuck::pod_read_unaligned(&view);
        drop(view);
        st.unmap();
        ctx.count_mapped(STATS_BYTES);
        Ok(block)
    }
}
