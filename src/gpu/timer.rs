//! Per-pass GPU times from timestamp queries (where the adapter has `TIMESTAMP_QUERY`).

use std::cell::Cell;

use super::context::GpuContext;
use crate::Result;

/// The GPU passes, in pipeline order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// `hash`.
    Hash,
    /// `scan`.
    Scan,
    /// `scatter`.
    Scatter,
    /// `order`.
    Order,
    /// `reorder`.
    Reorder,
    /// `density`.
    Density,
    /// `walls`.
    Walls,
    /// `pressure`.
    Pressure,
    /// `forces`.
    Forces,
    /// `timestep`.
    Timestep,
    /// `integrate`.
    Integrate,
    /// `dfsph_density`.
    DfsphDensity,
    /// `dfsph_warm`.
    DfsphWarm,
    /// `dfsph_pressure`.
    DfsphPressure,
    /// `dfsph_rate`.
    DfsphRate,
    /// `dfsph_control`.
    DfsphControl,
    /// `dfsph_accel`.
    DfsphAccel,
    /// `dfsph_timestep`.
    DfsphTimestep,
    /// `dfsph_predict`.
    DfsphPredict,
    /// `dfsph_integrate`.
    DfsphIntegrate,
    /// `dfsph_stats`.
    DfsphStats,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 21] = [
        Stage::Hash,
        Stage::Scan,
        Stage::Scatter,
        Stage::Order,
        Stage::Reorder,
        Stage::Density,
        Stage::Walls,
        Stage::Pressure,
        Stage::Forces,
        Stage::Timestep,
        Stage::Integrate,
        Stage::DfsphDensity,
        Stage::DfsphWarm,
        Stage::DfsphPressure,
        Stage::DfsphRate,
        Stage::DfsphControl,
        Stage::DfsphAccel,
        Stage::DfsphTimestep,
        Stage::DfsphPredict,
        Stage::DfsphIntegrate,
        Stage::DfsphStats,
    ];

    /// The stage's one name (WGSL file, entry point, CPU module).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Hash => "hash",
            Stage::Scan => "scan",
            Stage::Scatter => "scatter",
            Stage::Order => "order",
            Stage::Reorder => "reorder",
            Stage::Density => "density",
            Stage::Walls => "walls",
            Stage::Pressure => "pressure",
            Stage::Forces => "forces",
            Stage::Timestep => "timestep",
            Stage::Integrate => "integrate",
            Stage::DfsphDensity => "dfsph_density",
            Stage::DfsphWarm => "dfsph_warm",
            Stage::DfsphPressure => "dfsph_pressure",
            Stage::DfsphRate => "dfsph_rate",
            Stage::DfsphControl => "dfsph_control",
            Stage::DfsphAccel => "dfsph_accel",
            Stage::DfsphTimestep => "dfsph_timestep",
            Stage::DfsphPredict => "dfsph_predict",
            Stage::DfsphIntegrate => "dfsph_integrate",
            Stage::DfsphStats => "dfsph_stats",
        }
    }

    /// The wgpu label of the stage's pass.
    pub fn label(self) -> &'static str {
        match self {
            Stage::Hash => "sph.hash",
            Stage::Scan => "sph.scan",
            Stage::Scatter => "sph.scatter",
            Stage::Order => "sph.order",
            Stage::Reorder => "sph.reorder",
            Stage::Density => "sph.density",
            Stage::Walls => "sph.walls",
            Stage::Pressure => "sph.pressure",
            Stage::Forces => "sph.forces",
            Stage::Timestep => "sph.timestep",
            Stage::Integrate => "sph.integrate",
            Stage::DfsphDensity => "sph.dfsph_density",
            Stage::DfsphWarm => "sph.dfsph_warm",
            Stage::DfsphPressure => "sph.dfsph_pressure",
            Stage::DfsphRate => "sph.dfsph_rate",
            Stage::DfsphControl => "sph.dfsph_control",
            Stage::DfsphAccel => "sph.dfsph_accel",
            Stage::DfsphTimestep => "sph.dfsph_timestep",
            Stage::DfsphPredict => "sph.dfsph_predict",
            Stage::DfsphIntegrate => "sph.dfsph_integrate",
            Stage::DfsphStats => "sph.dfsph_stats",
        }
    }

    fn index(self) -> u32 {
        Stage::ALL.iter().position(|&s| s == self).unwrap_or(0) as u32
    }
}

/// A query set with a begin and an end timestamp per stage.
pub struct StageTimer {
    queries: wgpu::QuerySet,
    resolve: wgpu::Buffer,
    period_ns: f64,
    written: Cell<u32>,
}

const QUERIES: u32 = 2 * Stage::ALL.len() as u32;
/// Each stage's pair resolves to its own aligned slot of the resolve buffer.
const STRIDE: u64 = wgpu::QUERY_RESOLVE_BUFFER_ALIGNMENT;

impl StageTimer {
    /// Creates the query set; call only when the device has `TIMESTAMP_QUERY`.
    pub fn new(ctx: &GpuContext) -> Self {
        Self {
            queries: ctx.device.create_query_set(&wgpu::QuerySetDescriptor {
                label: Some("sph.timestamps"),
                ty: wgpu::QueryType::Timestamp,
                count: QUERIES,
            }),
            resolve: ctx.device.create_buffer(&wgpu::BufferDescriptor {
                label: Some("sph.timestamps.resolve"),
                size: STRIDE * Stage::ALL.len() as u64,
                usage: wgpu::BufferUsages::QUERY_RESOLVE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
            period_ns: ctx.queue.get_timestamp_period() as f64,
            written: Cell::new(0),
        }
    }

    /// The timestamp writes for `stage`'s pass.
    pub fn writes(&self, stage: Stage) -> wgpu::ComputePassTimestampWrites<'_> {
        let i = stage.index();
        self.written.set(self.written.get() | 1 << i);
        wgpu::ComputePassTimestampWrites {
            query_set: &self.queries,
            beginning_of_pass_write_index: Some(2 * i),
            end_of_pass_write_index: Some(2 * i + 1),
        }
    }

    /// Resolves the queries written since the last resolve into the readable buffer.
    pub fn encode_resolve(&self, encoder: &mut wgpu::CommandEncoder) {
        for s in Stage::ALL {
            if self.written.get() & (1 << s.index()) != 0 {
                let i = s.index();
                encoder.resolve_query_set(
                    &self.queries,
                    2 * i..2 * i + 2,
                    &self.resolve,
                    STRIDE * i as u64,
                );
            }
        }
    }

    /// Milliseconds per stage from the last resolved submission; `None` for stages not run
    /// since the previous call.
    pub fn read_ms(&self, ctx: &GpuContext) -> Result<[Option<f64>; Stage::ALL.len()]> {
        let raw: Vec<u64> =
            ctx.readback(&self.resolve, (STRIDE / 8) as usize * Stage::ALL.len())?;
        let per_stage = (STRIDE / 8) as usize;
        let written = self.written.replace(0);
        Ok(Stage::ALL.map(|s| {
            let i = s.index() as usize;
            let (begin, end) = (raw[per_stage * i], raw[per_stage * i + 1]);
            (written & (1 << i) != 0)
                .then(|| end.saturating_sub(begin) as f64 * self.period_ns / 1e6)
        }))
    }
}
