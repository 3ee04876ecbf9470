//! Per-pass GPU times from timestamp queries (where the adapter has `TIMESTAMP_QUERY`).

use std::cell::RefCell;

use super::context::GpuContext;
use crate::Result;
pub use crate::core::Stage;

/// A query set with a begin and an end timestamp per pass, in the order the passes are
/// encoded, so a stage dispatched many times in a step (the DFSPH solve passes) is summed.
pub struct StageTimer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    period_ns: f64,
    /// The stage of each timed pass since the last read.
    log: RefCell<Vec<Stage>>,
}

/// Passes timed between two reads; later ones run untimed (wgpu allows 4096 queries a set).
const MAX_PASSES: usize = (wgpu::QUERY_SET_MAX_QUERIES / 2) as usize;

impl StageTimer {
    /// Creates the query set; call only when the device has `TIMESTAMP_QUERY`.
    pub fn new(ctx: &GpuContext) -> Self {
        Self {
            queries: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("sph.timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: 2 * MAX_PASSES as u32,
            }),
            resolve: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("sph.timestamps.resolve"),
                size: 16 * MAX_PASSES as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            period_ns: ctx.queue.get_timestamp_period() as f64,
            log: RefCell::new(Vec::new()),
        }
    }

    /// The timestamp writes for the next pass, of `stage`; `None` once the set is full.
    pub fn writes(&self, stage: Stage) -> Option<wgpu::ComputePassTimestampWrites<'_>> {
        let mut log = self.log.borrow_mut();
        if log.len() >= MAX_PASSES {
            return None;
        }
        let i = log.len() as u32;
        log.push(stage);
        Some(wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        })
    }

    /// Resolves the queries written since the last read into the readable buffer.
    pub fn encode_resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        let n = self.log.borrow().len() as u32;
        if n > 0 {
            encoder.resolve_query_set(&self.queries, 0..2 * n, &self.resolve, 0);
        }
    }

    /// Milliseconds per stage (summed over its passes) since the previous call; `None` for
    /// stages not run.
    pub fn read_ms(&self, ctx: &GpuContext) -> Result<[Option<f64>; Stage::ALL.len()]> {
        crate::gpu::context::finish(self.read_ms_async(ctx), "StageTimer::read_ms_async")
    }

    /// [`StageTimer::read_ms`], awaited (the viewer's form: a web page cannot block).
    pub async fn read_ms_async(&self, ctx: &GpuContext) -> Result<[Option<f64>; Stage::ALL.len()]> {
        let log = self.log.replace(Vec::new());
        let mut out = [None; Stage::ALL.len()];
        if log.is_empty() {
            return Ok(out);
        }
        let raw: Vec<u64> = ctx.readback_async(&self.resolve, 2 * log.len()).await?;
        for (k, stage) in log.iter().enumerate() {
            let ms = raw[2 * k + 1].saturating_sub(raw[2 * k]) as f64 * self.period_ns / 1e6;
            let slot = &mut out[stage.index()];
            *slot = Some(slot.unwrap_or(0.0) + ms);
        }
        Ok(out)
    }

    /// Passes timed since the last read (the dispatches of what ran, up to the set's size).
    pub fn passes(&self) -> usize {
        self.log.borrow().len()
    }
}
