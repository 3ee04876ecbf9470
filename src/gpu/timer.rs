//! Per-pass GPU times from timestamp queries (where the adapter has `TIMESTAMP_QUERY`).

use std::cell::RefCell;

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
    /// `obstacle_density`.
    ObstacleDensity,
    /// `obstacle_forces`.
    ObstacleForces,
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
    /// `dfsph_blocks`.
    DfsphBlocks,
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
    /// `stats`: the statistics block of either solver.
    Stats,
    /// `emitter_probe`: the fluid in the slabs emitters' layers would fill.
    EmitterProbe,
    /// `grain_contacts`: the colliding spheres' contact forces.
    GrainContacts,
    /// `grain_integrate`: the colliding spheres' symplectic Euler step.
    GrainIntegrate,
}

impl Stage {
    /// Every stage, in order.
    pub const ALL: [Stage; 28] = [
        Stage::Hash,
        Stage::Scan,
        Stage::Scatter,
        Stage::Order,
        Stage::Reorder,
        Stage::Density,
        Stage::Walls,
        Stage::Pressure,
        Stage::ObstacleDensity,
        Stage::Forces,
        Stage::ObstacleForces,
        Stage::Timestep,
        Stage::Integrate,
        Stage::DfsphDensity,
        Stage::DfsphWarm,
        Stage::DfsphPressure,
        Stage::DfsphRate,
        Stage::DfsphBlocks,
        Stage::DfsphControl,
        Stage::DfsphAccel,
        Stage::DfsphTimestep,
        Stage::DfsphPredict,
        Stage::DfsphIntegrate,
        Stage::DfsphStats,
        Stage::Stats,
        Stage::EmitterProbe,
        Stage::GrainContacts,
        Stage::GrainIntegrate,
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
            Stage::ObstacleDensity => "obstacle_density",
            Stage::ObstacleForces => "obstacle_forces",
            Stage::Forces => "forces",
            Stage::Timestep => "timestep",
            Stage::Integrate => "integrate",
            Stage::DfsphDensity => "dfsph_density",
            Stage::DfsphWarm => "dfsph_warm",
            Stage::DfsphPressure => "dfsph_pressure",
            Stage::DfsphRate => "dfsph_rate",
            Stage::DfsphBlocks => "dfsph_blocks",
            Stage::DfsphControl => "dfsph_control",
            Stage::DfsphAccel => "dfsph_accel",
            Stage::DfsphTimestep => "dfsph_timestep",
            Stage::DfsphPredict => "dfsph_predict",
            Stage::DfsphIntegrate => "dfsph_integrate",
            Stage::DfsphStats => "dfsph_stats",
            Stage::Stats => "stats",
            Stage::EmitterProbe => "emitter_probe",
            Stage::GrainContacts => "grain_contacts",
            Stage::GrainIntegrate => "grain_integrate",
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
            Stage::ObstacleDensity => "sph.obstacle_density",
            Stage::ObstacleForces => "sph.obstacle_forces",
            Stage::Forces => "sph.forces",
            Stage::Timestep => "sph.timestep",
            Stage::Integrate => "sph.integrate",
            Stage::DfsphDensity => "sph.dfsph_density",
            Stage::DfsphWarm => "sph.dfsph_warm",
            Stage::DfsphPressure => "sph.dfsph_pressure",
            Stage::DfsphRate => "sph.dfsph_rate",
            Stage::DfsphBlocks => "sph.dfsph_blocks",
            Stage::DfsphControl => "sph.dfsph_control",
            Stage::DfsphAccel => "sph.dfsph_accel",
            Stage::DfsphTimestep => "sph.dfsph_timestep",
            Stage::DfsphPredict => "sph.dfsph_predict",
            Stage::DfsphIntegrate => "sph.dfsph_integrate",
            Stage::DfsphStats => "sph.dfsph_stats",
            Stage::Stats => "sph.stats",
            Stage::EmitterProbe => "sph.emitter_probe",
            Stage::GrainContacts => "sph.grain_contacts",
            Stage::GrainIntegrate => "sph.grain_integrate",
        }
    }

    fn index(self) -> u32 {
        Stage::ALL.iter().position(|&s| s == self).unwrap_or(0) as u32
    }
}

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
        let log = self.log.replace(Vec::new());
        let mut out = [None; Stage::ALL.len()];
        if log.is_empty() {
            return Ok(out);
        }
        let raw: Vec<u64> = ctx.readback(&self.resolve, 2 * log.len())?;
        for (k, stage) in log.iter().enumerate() {
            let ms = raw[2 * k + 1].saturating_sub(raw[2 * k]) as f64 * self.period_ns / 1e6;
            let slot = &mut out[stage.index() as usize];
            *slot = Some(slot.unwrap_or(0.0) + ms);
        }
        Ok(out)
    }

    /// Passes timed since the last read (the dispatches of what ran, up to the set's size).
    pub fn passes(&self) -> usize {
        self.log.borrow().len()
    }
}
