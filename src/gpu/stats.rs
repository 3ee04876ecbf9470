//! Stage `stats` on the GPU (`shaders/stats.wgsl`, CPU mirror [`crate::cpu::stats`]): each
//! step's statistics reduced on the device to one 64-byte block per 256 particles, read back
//! through two staging buffers in turn (the host reads step k's while step k + 1 runs) and
//! folded on the host in the CPU mirror's second level, so no pass of one workgroup runs on
//! the device. A solver's density-error blocks and its solves' residual totals come back the
//! same way, for the host to build the solver's block (DFSPH's and WCSPH's:
//! [`crate::solver::dfsph::dfsph_stats`]).

use std::cell::RefCell;
use std::collections::VecDeque;

use super::context::GpuContext;
use crate::core::Stage;
use crate::core::StatsBlock;
use crate::grid::gpu::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline, storage_buffer,
};
use crate::{Error, Result, shaders};

/// Bytes of one block `stats_blocks` writes.
const BLOCK_BYTES: u64 = 64;

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
    /// The step state: (dt, v_max, …).
    pub step_state: &'a wgpu::Buffer,
    /// The fluid parameters (uniform).
    pub fluid: &'a wgpu::Buffer,
    /// The power per unit mass moving obstacles put into each particle (zeros without).
    pub power: &'a wgpu::Buffer,
    /// The solver's buffers behind its block.
    pub solve: Option<SolveInputs<'a>>,
}

/// A solver's buffers the host builds its block from.
pub struct SolveInputs<'a> {
    /// The density error's block sums (one per 256 particles).
    pub error_sums: &'a wgpu::Buffer,
    /// Its block maxima.
    pub error_maxima: &'a wgpu::Buffer,
    /// Both solves' residual totals, `slots` per solve.
    pub totals: &'a wgpu::Buffer,
    /// Totals per solve (max_iterations + 1).
    pub slots: u32,
}

/// What a step's statistics came back as, before the host folds the solver's block.
pub struct Read {
    /// The general block (the solver's words zero).
    pub block: StatsBlock,
    /// The step state (dt, v_max, …).
    pub step_state: [f32; 4],
    /// The solver's parts.
    pub solve: Option<SolveRead>,
}

/// A solver's parts of a step's statistics, read back.
pub struct SolveRead {
    /// The density error's block sums.
    pub error_sums: Vec<f32>,
    /// Its block maxima.
    pub error_maxima: Vec<f32>,
    /// Each solve's residual totals (velocity, density), four words each as the GPU stores
    /// them (DFSPH's `Total::from_words` reads them).
    pub totals: [Vec<[u32; 4]>; 2],
}

/// A staging buffer being filled by a submitted step.
struct Pending {
    slot: usize,
    index: wgpu::SubmissionIndex,
    mapped: futures_channel::oneshot::Receiver<std::result::Result<(), wgpu::BufferAsyncError>>,
    // The live count the step ended with.
    n: u32,
}

// Where each part lies in a staging buffer (bytes), for `blocks` blocks at most.
#[derive(Clone, Copy)]
struct Parts {
    step_state: u64,
    error_sums: u64,
    error_maxima: u64,
    totals: u64,
    end: u64,
}

impl Parts {
    fn new(blocks: u64, slots: Option<u32>) -> Self {
        let step_state = blocks * BLOCK_BYTES;
        let error_sums = step_state + 16;
        let error_maxima = error_sums + 4 * blocks;
        let totals = error_maxima + 4 * blocks;
        let end = match slots {
            Some(s) => totals + 2 * 16 * u64::from(s),
            None => error_sums,
        };
        Parts {
            step_state,
            error_sums,
            error_maxima,
            totals,
            end,
        }
    }
}

/// The statistics pipeline, the block buffer and the two staging buffers.
pub struct GpuStats {
    blocks_pipe: wgpu::ComputePipeline,
    bg: wgpu::BindGroup,
    blocks: wgpu::Buffer,
    step_state: wgpu::Buffer,
    solve: Option<(wgpu::Buffer, wgpu::Buffer, wgpu::Buffer, u32)>,
    parts: Parts,
    staging: [wgpu::Buffer; 2],
    next: std::cell::Cell<usize>,
    pending: RefCell<VecDeque<Pending>>,
}

impl GpuStats {
    /// Compiles the stage for `grid`'s N, reading `inputs`.
    pub fn new(ctx: &GpuContext, grid: &GpuNeighbours, inputs: &StatsInputs<'_>) -> Result<Self> {
        use Binding::*;
        let n = grid.bufs.capacity;
        let capacity_blocks = u64::from(groups(n, WORKGROUP_SIZE));
        let parts = Parts::new(capacity_blocks, inputs.solve.as_ref().map(|d| d.slots));
        ctx.scoped(|| {
            let d = &ctx.device;
            let blocks = storage_buffer(d, "sph.stats_blocks", capacity_blocks * BLOCK_BYTES);
            let l = layout(
                d,
                "sph.stats",
                &[Uniform, Uniform, Read, Read, Read, Read, ReadWrite, Read],
            );
            let module = ctx.shader("sph.stats", shaders::STATS);
            let staging = || {
                d.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("sph.stats_staging"),
                    size: parts.end,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                })
            };
            Self {
                blocks_pipe: pipeline(d, "sph.stats_blocks", &l, &module, "stats_blocks"),
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
                        inputs.power,
                    ],
                ),
                blocks,
                step_state: inputs.step_state.clone(),
                solve: inputs.solve.as_ref().map(|i| {
                    (
                        i.error_sums.clone(),
                        i.error_maxima.clone(),
                        i.totals.clone(),
                        i.slots,
                    )
                }),
                parts,
                staging: [staging(), staging()],
                next: std::cell::Cell::new(0),
                pending: RefCell::new(VecDeque::new()),
            }
        })
    }

    /// Bytes one step's statistics map back: 64 per 256 particles of the capacity, the step
    /// state, and DFSPH's density-error blocks and residual totals.
    pub fn bytes_per_step(&self) -> u64 {
        self.parts.end
    }

    /// Encodes the blocks and their copy (with the step state and DFSPH's buffers) into the
    /// next staging buffer; returns that buffer's slot, which [`GpuStats::submitted`] needs.
    pub fn encode(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) -> Result<usize> {
        let slot = self.next.get();
        if self.pending.borrow().iter().any(|p| p.slot == slot) {
            return Err(Error::Map(
                "both statistics buffers are in flight: read one before the next step".into(),
            ));
        }
        let blocks = u64::from(groups(g.bufs.n.get(), WORKGROUP_SIZE));
        g.dispatch(e, Stage::Stats, &self.blocks_pipe, &self.bg, blocks as u32);
        let (st, p) = (&self.staging[slot], self.parts);
        e.copy_buffer_to_buffer(&self.blocks, 0, st, 0, blocks * BLOCK_BYTES);
        e.copy_buffer_to_buffer(&self.step_state, 0, st, p.step_state, 16);
        if let Some((sums, maxima, totals, slots)) = &self.solve {
            e.copy_buffer_to_buffer(sums, 0, st, p.error_sums, 4 * blocks);
            e.copy_buffer_to_buffer(maxima, 0, st, p.error_maxima, 4 * blocks);
            if *slots > 0 {
                e.copy_buffer_to_buffer(totals, 0, st, p.totals, 2 * 16 * u64::from(*slots));
            }
        }
        self.next.set(1 - slot);
        Ok(slot)
    }

    /// Starts mapping `slot` once submission `index` completes.
    pub fn submitted(&self, slot: usize, index: wgpu::SubmissionIndex, n: u32) {
        let (tx, mapped) = futures_channel::oneshot::channel();
        self.staging[slot].map_async(wgpu::MapMode::Read, .., move |r| {
            let _ = tx.send(r);
        });
        self.pending.borrow_mut().push_back(Pending {
            slot,
            index,
            mapped,
            n,
        });
    }

    /// Steps submitted whose block has not been read.
    pub fn in_flight(&self) -> usize {
        self.pending.borrow().len()
    }

    /// Waits for the oldest submitted step and reads what it left (DFSPH's block still to be
    /// built by the caller, [`Read::solve`]).
    pub fn read(&self, ctx: &GpuContext) -> Result<Read> {
        super::context::finish(self.read_async(ctx), "GpuStats::read_async")
    }

    /// [`GpuStats::read`] without blocking: a web page awaits the mapping, which the browser
    /// completes once the page yields.
    pub async fn read_async(&self, ctx: &GpuContext) -> Result<Read> {
        let p = self
            .pending
            .borrow_mut()
            .pop_front()
            .ok_or_else(|| Error::Map("no step in flight to read statistics from".into()))?;
        #[cfg(not(target_arch = "wasm32"))]
        ctx.device
            .poll(wgpu::PollType::Wait {
                submission_index: Some(p.index),
                timeout: None,
            })
            .map_err(|e| Error::Device(e.to_string()))?;
        #[cfg(target_arch = "wasm32")]
        let _ = &p.index;
        // Another thread's poll on the same device may be the one invoking the callback, so
        // wait for it rather than expect it to have run.
        p.mapped
            .await
            .map_err(|e| Error::Map(e.to_string()))?
            .map_err(|e| Error::Map(e.to_string()))?;
        let st = &self.staging[p.slot];
        let view = st
            .get_mapped_range(..)
            .map_err(|e| Error::Map(e.to_string()))?;
        let blocks = groups(p.n, WORKGROUP_SIZE) as usize;
        let words = |at: u64, len: usize| -> Vec<u32> {
            let at = at as usize;
            bytemuck::pod_collect_to_vec(&view[at..at + 4 * len])
        };
        let flat = words(0, 16 * blocks);
        let items: Vec<[u32; 16]> = flat
            .chunks_exact(16)
            .map(|c| c.try_into().expect("16 words"))
            .collect();
        let ss = words(self.parts.step_state, 4);
        let step_state = [0, 1, 2, 3].map(|k| f32::from_bits(ss[k]));
        let floats = |w: Vec<u32>| -> Vec<f32> { w.into_iter().map(f32::from_bits).collect() };
        let solve = self.solve.as_ref().map(|(_, _, _, slots)| {
            let slots = *slots as usize;
            let totals: Vec<[u32; 4]> = words(self.parts.totals, 2 * 4 * slots)
                .chunks_exact(4)
                .map(|c| [c[0], c[1], c[2], c[3]])
                .collect();
            SolveRead {
                error_sums: floats(words(self.parts.error_sums, blocks)),
                error_maxima: floats(words(self.parts.error_maxima, blocks)),
                totals: [totals[..slots].to_vec(), totals[slots..].to_vec()],
            }
        });
        drop(view);
        st.unmap();
        ctx.count_mapped(self.parts.end);
        let block = crate::cpu::stats::fold_blocks(&items, p.n, step_state[0], None);
        Ok(Read {
            block,
            step_state,
            solve,
        })
    }
}
