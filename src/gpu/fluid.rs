//! [`Simulation`]: one run on the GPU, the neighbour pipeline followed by the solver's passes
//! (a [`GpuSolver`], the run's from [`crate::solver::gpu`]), the obstacles', the mouse force and
//! the statistics, chained into one step.

use std::cell::Cell;
use std::sync::Arc;

use glam::Vec3;

pub use super::buffers::GpuFluid;
use super::context::GpuContext;
use super::interact::GpuInteract;
use super::stats::{GpuStats, StatsInputs};
use crate::core::Particles;
pub use crate::core::Snapshot;
use crate::core::Stage;
use crate::core::StatsBlock;
use crate::cpu::interact::InteractParams;
use crate::grid::gpu::{
    GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline, storage_buffer,
};
use crate::params::{FluidParams, SimParams};
use crate::solver::SolverParams;
use crate::solver::{Carry, GpuSolver};
use crate::{Error, Result, shaders};

/// One simulation on the GPU: the neighbour pipeline plus the fluid passes, driven one step at
/// a time by every front end.
pub struct Simulation {
    /// The neighbour pipeline and the particle state.
    pub grid: GpuNeighbours,
    /// The fluid passes.
    pub fluid: GpuFluid,
    /// Grid parameters.
    pub sim_params: SimParams,
    /// Fluid parameters.
    pub fluid_params: FluidParams,
    /// The viewer's mouse force, dispatched only while `interaction` is set.
    pub interact: GpuInteract,
    /// The statistics block of each submitted step.
    pub stats: GpuStats,
    interaction: Option<InteractParams>,
    /// The solver's passes and buffers.
    pub stages: Box<dyn GpuSolver>,
    /// The obstacles' boundary particles and their grid, when the scene has obstacles.
    pub obstacles: Option<super::obstacles::GpuObstacles>,
    // Steps submitted, and the test hook GPU_SPH_FAULT_DEVICE_LOSS_AFTER=K, which destroys the
    // device after the K-th submitted step so the tests can provoke a device loss mid-run.
    submitted: Cell<u64>,
    fault_after: Option<u64>,
    // Stage `emitter_probe`, built on first use.
    probe: std::cell::OnceCell<GpuProbe>,
}

/// The buffers a renderer draws the held state from, whichever solver runs: positions and
/// velocities (vec4 rows), density and pressure, each in the same order, and the obstacles'
/// boundary particles with their count.
pub struct Shown<'a> {
    /// Positions, xyz of vec4 rows.
    pub positions: &'a wgpu::Buffer,
    /// Velocities, xyz of vec4 rows.
    pub velocities: &'a wgpu::Buffer,
    /// Density, kg/m³.
    pub density: &'a wgpu::Buffer,
    /// Pressure, Pa.
    pub pressure: &'a wgpu::Buffer,
    /// Live particles.
    pub count: u32,
    /// The obstacles' boundary particles (positions as above) and their count.
    pub obstacles: Option<(&'a wgpu::Buffer, u32)>,
}

/// Stage `emitter_probe`'s kernel and buffers.
struct GpuProbe {
    pipeline: wgpu::ComputePipeline,
    bg: wgpu::BindGroup,
    params: wgpu::Buffer,
    hits: wgpu::Buffer,
}

impl Simulation {
    /// The name of the solver the stages run.
    pub fn solver_name(&self) -> &'static str {
        self.stages.name()
    }

    /// Builds the pipelines of `solver` and uploads `state`.
    pub fn with_solver(
        ctx: Arc<GpuContext>,
        sp: &SimParams,
        fp: &FluidParams,
        solver: &SolverParams,
        state: &Particles,
    ) -> Result<Self> {
        Self::with_stages(ctx, sp, fp, state, |grid, fluid| {
            crate::solver::gpu(solver, grid, fluid, sp, fp)
        })
    }

    /// Builds the pipelines of the solver `stages` makes beside the grid's and the fluid's
    /// buffers (a solver registered in [`crate::solver`], or one of the caller's own) and
    /// uploads `state`.
    pub fn with_stages(
        ctx: Arc<GpuContext>,
        sp: &SimParams,
        fp: &FluidParams,
        state: &Particles,
        stages: impl FnOnce(&GpuNeighbours, &GpuFluid) -> Result<Box<dyn GpuSolver>>,
    ) -> Result<Self> {
        let grid = GpuNeighbours::new(ctx, sp)?;
        let grid_params = SimParams {
            group_size: grid.bufs.group_size,
            ..*sp
        };
        let fluid = GpuFluid::new(&grid.ctx, &grid, fp)?;
        let interact = GpuInteract::new(&grid.ctx, &grid, &fluid.accel)?;
        let stages = stages(&grid, &fluid)?;
        let b = &grid.bufs;
        let inputs = StatsInputs {
            pos: &b.sorted_pos,
            vel: &b.sorted_vel,
            id: &b.sorted_id,
            density: stages.density(),
            step_state: &fluid.step_state,
            fluid: &fluid.params,
            power: &fluid.obstacle_power,
            solve: stages.stats_inputs(),
        };
        let stats = GpuStats::new(&grid.ctx, &grid, &inputs)?;
        let sim = Self {
            stats,
            grid,
            fluid,
            // With the group size the GPU resolved for its adapter.
            sim_params: grid_params,
            fluid_params: *fp,
            interact,
            interaction: None,
            stages,
            obstacles: None,
            submitted: Cell::new(0),
            fault_after: std::env::var("GPU_SPH_FAULT_DEVICE_LOSS_AFTER")
                .ok()
                .and_then(|k| k.parse().ok()),
            probe: Default::default(),
        };
        sim.upload(state);
        Ok(sim)
    }

    /// Adds obstacles (`None` removes them): their boundary particles are uploaded, and the
    /// stages' walks see them (see `crate::boundary`). Moving ones start at t = 0; call
    /// [`Simulation::place_obstacles`] before each step.
    pub fn set_obstacles(&mut self, boundary: Option<&crate::boundary::Boundary>) -> Result<()> {
        self.obstacles = match boundary {
            Some(b) => Some(super::obstacles::GpuObstacles::new(&self.grid.ctx, b)?),
            None => {
                // No obstacle puts power in any more.
                let zeros = vec![0u8; self.grid.bufs.capacity as usize * 4];
                self.grid
                    .ctx
                    .queue
                    .write_buffer(&self.fluid.obstacle_power, 0, &zeros);
                None
            }
        };
        // The solver's walks see them through bind group 1; the step's start is recomputed.
        let dev = &self.grid.ctx.device;
        let bg = self
            .obstacles
            .as_ref()
            .map(|o| o.boundary_bind_group(dev, self.stages.boundary_layout()));
        self.stages.set_boundary(dev, bg);
        Ok(())
    }

    /// Whether an obstacle moves: then each step needs the run's time first
    /// ([`Simulation::place_obstacles`]).
    pub fn obstacles_move(&self) -> bool {
        self.obstacles.as_ref().is_some_and(|o| o.moves())
    }

    /// Puts moving obstacles where they are at time `t` (s), for the next submitted step.
    /// The solver then recomputes the step's start with the obstacles there.
    pub fn place_obstacles(&mut self, t: f64) {
        if let Some(o) = &mut self.obstacles
            && o.moves()
        {
            o.place(&self.grid.ctx.queue, t);
            self.stages.restart();
        }
    }

    /// Uploads obstacles the caller has placed itself (`--verify` places the CPU reference's
    /// copy and sends the same particles here); the boundary must be the one set.
    pub fn upload_obstacles(&self, boundary: &crate::boundary::Boundary) {
        if let Some(o) = &self.obstacles {
            o.upload(&self.grid.ctx.queue, boundary);
        }
    }

    /// Replaces the fluid parameters (viscosity, stiffness, gravity… changed live).
    pub fn set_fluid_params(&mut self, fp: &FluidParams) {
        self.fluid_params = *fp;
        self.grid
            .ctx
            .queue
            .write_buffer(&self.fluid.params, 0, bytemuck::bytes_of(fp));
        self.stages.set_fluid_params(&self.grid.ctx.device, fp);
    }

    /// The mouse force of the following steps, if on.
    pub fn interaction(&self) -> Option<&InteractParams> {
        self.interaction.as_ref()
    }

    /// Starts (`Some`) or stops (`None`) the mouse force of the following steps.
    pub fn set_interaction(&mut self, ip: Option<InteractParams>) {
        if let Some(ip) = &ip {
            self.interact.set(&self.grid.ctx, ip);
        }
        self.interaction = ip;
    }

    /// Replaces the particle state, with a fresh start of the solver; its length becomes the
    /// live count, at most the capacity.
    pub fn upload(&self, state: &Particles) {
        self.grid.upload(state);
        let (d, q) = (&self.stages, &self.grid.ctx.queue);
        d.set_live(q, state.len() as u32);
        d.set_carry(q, &self.fluid, &Carry::default())
            .expect("a fresh run's carry is every solver's");
    }

    /// Replaces the state with `snap` (as [`Simulation::upload`]) and the solver's carried
    /// state with `carry`, computing the grid, ρ and α at once (`crate::run::without_outside`
    /// removes particles this way).
    pub fn replace(&self, snap: &Snapshot, carry: &Carry) -> Result<()> {
        self.upload(&snap.state);
        self.upload_carry(carry)?;
        self.grid.run(|_, e| self.encode_prime(e))
    }

    /// Copies the state the last step left in slot order, with its ρ, into the buffers the
    /// viewer draws from (`positions`, `velocities`, `fluid_density`), which the solver does not
    /// read before its next step writes them; nothing when the state is there already (no step
    /// since it was uploaded).
    pub fn expose_for_render(&self) -> Result<()> {
        let d = &self.stages;
        if !d.primed() {
            return Ok(());
        }
        let b = &self.grid.bufs;
        let n = b.n.get() as u64;
        self.grid.run(|_, e| {
            e.copy_buffer_to_buffer(&b.sorted_pos, 0, &b.positions, 0, n * 16);
            e.copy_buffer_to_buffer(&b.sorted_vel, 0, &b.velocities, 0, n * 16);
            e.copy_buffer_to_buffer(&b.sorted_id, 0, &b.particle_id, 0, n * 4);
            e.copy_buffer_to_buffer(d.density(), 0, &self.fluid.fluid_density, 0, n * 4);
        })
    }

    /// The buffers a renderer draws from (after [`Simulation::expose_for_render`], or
    /// [`Simulation::show`]).
    pub fn shown(&self) -> Shown<'_> {
        let b = &self.grid.bufs;
        Shown {
            positions: &b.positions,
            velocities: &b.velocities,
            density: &self.fluid.fluid_density,
            pressure: &self.fluid.pressure_buf,
            count: b.n.get(),
            obstacles: self.obstacles.as_ref().map(|o| (&o.bpos, o.count)),
        }
    }

    /// Puts a state stepped elsewhere (the CPU path's, in its slot order, with its density and
    /// `pressure`) into the buffers [`Simulation::shown`] names, for the renderer (it replaces
    /// the GPU's held state: a viewer stepping the CPU path does not step this simulation).
    pub fn show(&self, snap: &Snapshot, pressure: &[f32]) {
        self.grid.upload(&snap.state);
        let q = &self.grid.ctx.queue;
        q.write_buffer(
            &self.fluid.fluid_density,
            0,
            bytemuck::cast_slice(&snap.density),
        );
        q.write_buffer(&self.fluid.pressure_buf, 0, bytemuck::cast_slice(pressure));
    }

    /// Stage `emitter_probe` over the held state: how many particles lie in each probe's slab
    /// (at most [`crate::emitter::MAX_PROBES`]); no step may be in flight.
    pub fn probe(&self, probes: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
        super::context::finish(self.probe_async(probes), "Simulation::probe_async")
    }

    /// [`Simulation::probe`], awaited (a web page's form).
    pub async fn probe_async(&self, probes: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
        let ctx = &self.grid.ctx;
        let p = match self.probe.get() {
            Some(p) => p,
            None => {
                let built = ctx.scoped(|| {
                    use crate::grid::gpu::Binding::*;
                    let d = &ctx.device;
                    let params = d.create_buffer(&wgpu::BufferDescriptor {
                        label: Some("sph.emitter_probe_params"),
                        size: std::mem::size_of::<crate::emitter::ProbeBlock>() as u64,
                        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                        mapped_at_creation: false,
                    });
                    let hits = storage_buffer(
                        d,
                        "sph.emitter_probe_hits",
                        crate::emitter::MAX_PROBES as u64 * 4,
                    );
                    let l = layout(d, "sph.emitter_probe", &[Uniform, Uniform, Read, ReadWrite]);
                    let m = ctx.shader("sph.emitter_probe", shaders::EMITTER_PROBE);
                    let b = &self.grid.bufs;
                    GpuProbe {
                        pipeline: pipeline(d, "sph.emitter_probe", &l, &m, "emitter_probe"),
                        bg: bind_group(
                            d,
                            "sph.emitter_probe",
                            &l,
                            &[&b.params, &params, &b.positions, &hits],
                        ),
                        params,
                        hits,
                    }
                })?;
                self.probe.get_or_init(|| built)
            }
        };
        let q = &ctx.queue;
        q.write_buffer(
            &p.params,
            0,
            bytemuck::bytes_of(&crate::emitter::ProbeBlock::new(probes)),
        );
        q.write_buffer(&p.hits, 0, &[0u8; crate::emitter::MAX_PROBES * 4]);
        let n = groups(self.grid.bufs.n.get(), WORKGROUP_SIZE);
        self.grid
            .run(|g, e| g.dispatch(e, Stage::EmitterProbe, &p.pipeline, &p.bg, n))?;
        self.grid.read_u32_async(&p.hits, probes.len()).await
    }

    /// Adds emitted particles after the live ones, with the next ids, at rest density (see
    /// `crate::emitter`); no step may be in flight. WCSPH holds its state in `positions`;
    /// DFSPH's last step left it in slot order, which becomes the held order, and the grid, ρ
    /// and α are computed at once, so a snapshot taken now holds them. The CPU mirror ([`crate::run::CpuSimulation`]) does the same.
    pub fn append(&self, batch: &crate::emitter::Batch) -> Result<()> {
        let m = batch.pos.len() as u32;
        if m == 0 {
            return Ok(());
        }
        let b = &self.grid.bufs;
        let n = b.n.get();
        if n + m > b.capacity {
            return Err(crate::Error::input(format!(
                "{} particles exceed the capacity of {} the run was sized for",
                n + m,
                b.capacity
            )));
        }
        let q = &self.grid.ctx.queue;
        let d = &self.stages;
        if d.primed() {
            let mut e = self.grid.encoder();
            let n64 = n as u64;
            e.copy_buffer_to_buffer(&b.sorted_pos, 0, &b.positions, 0, n64 * 16);
            e.copy_buffer_to_buffer(&b.sorted_vel, 0, &b.velocities, 0, n64 * 16);
            e.copy_buffer_to_buffer(&b.sorted_id, 0, &b.particle_id, 0, n64 * 4);
            q.submit([e.finish()]);
            d.restart();
        }
        let ids: Vec<u32> = (n..n + m).collect();
        let at = |bytes: u64| n as u64 * bytes;
        q.write_buffer(
            &b.positions,
            at(16),
            bytemuck::cast_slice(&crate::grid::gpu::to_vec4(&batch.pos)),
        );
        q.write_buffer(
            &b.velocities,
            at(16),
            bytemuck::cast_slice(&crate::grid::gpu::to_vec4(&batch.vel)),
        );
        q.write_buffer(&b.particle_id, at(4), bytemuck::cast_slice(&ids));
        let rho0 = vec![self.fluid_params.rest_density; m as usize];
        q.write_buffer(
            &self.fluid.fluid_density,
            at(4),
            bytemuck::cast_slice(&rho0),
        );
        self.grid.set_live(n + m);
        d.set_live(q, n + m);
        self.grid.run(|_, e| self.encode_prime(e))?;
        Ok(())
    }

    /// Replaces the state the solver carries between steps (a checkpoint's, or what
    /// [`Simulation::read_carry`] read); Err when it is not the solver's.
    pub fn upload_carry(&self, carry: &Carry) -> Result<()> {
        self.stages
            .set_carry(&self.grid.ctx.queue, &self.fluid, carry)
            .map_err(Error::input)
    }

    /// Encodes one full step: the solver's passes from the step's start to the next (the grid
    /// and the density at the new positions included), with the mouse force while it is on.
    /// Nothing is read back.
    pub fn encode_step(&self, e: &mut wgpu::CommandEncoder) {
        let g = &self.grid;
        let forces = |e: &mut wgpu::CommandEncoder| {
            if self.interaction.is_some() {
                self.interact.encode(e, g.bufs.n.get());
            }
        };
        self.stages.encode_step(g, e, &forces);
    }

    /// The solver's start of a step (the grid and density of the current state), unless the
    /// last step left it.
    pub fn encode_prime(&self, e: &mut wgpu::CommandEncoder) {
        self.stages.encode_prime(&self.grid, e);
    }

    /// The dispatches of the steps read so far that did no work (DFSPH: iterations their
    /// solve did not run; each launches and exits at once).
    pub fn idle_dispatches(&self) -> u64 {
        self.stages.idle_dispatches()
    }

    /// Runs `steps` steps, each submitted with its statistics block while the host reads the
    /// block of the step before (DFSPH's caps need the counts of the step two before).
    pub fn step(&self, steps: u32) -> Result<()> {
        for k in 0..steps {
            self.submit_step()?;
            if k > 0 {
                self.read_stats()?;
            }
        }
        if steps > 0 {
            self.read_stats()?;
        }
        Ok(())
    }

    /// Submits one step and its statistics block without waiting: [`Simulation::read_stats`]
    /// returns the block once the step is done. At most two steps may be in flight.
    pub fn submit_step(&self) -> Result<()> {
        let ctx = &self.grid.ctx;
        ctx.scoped(|| {
            let mut e = self.grid.encoder();
            self.encode_step(&mut e);
            let slot = self.stats.encode(&self.grid, &mut e)?;
            if let Some(t) = &self.grid.timer {
                t.encode_resolve(&mut e);
            }
            let index = ctx.queue.submit([e.finish()]);
            self.stats.submitted(slot, index, self.grid.bufs.n.get());
            self.submitted.set(self.submitted.get() + 1);
            if self.fault_after == Some(self.submitted.get()) {
                ctx.device.destroy();
            }
            Ok(())
        })?
    }

    /// The statistics block of the current state (the stage alone, for verification); no step
    /// may be in flight.
    pub fn stats_now(&self) -> Result<StatsBlock> {
        // The statistics read the slot-order state, which a state just uploaded is not yet.
        self.grid.run(|_, e| self.encode_prime(e))?;
        let r = self.stats_read_now()?;
        Ok(self.stages.block_now(r))
    }

    /// The statistics pass over the held state, read back before the solver builds its block
    /// (a solver's `--verify` checker builds it for the iterations it checked).
    pub fn stats_read_now(&self) -> Result<super::stats::Read> {
        super::context::finish(self.stats_read_now_async(), "stats_read_now_async")
    }

    /// [`Simulation::stats_read_now`], awaited (a web page's form).
    pub async fn stats_read_now_async(&self) -> Result<super::stats::Read> {
        let ctx = &self.grid.ctx;
        ctx.scoped(|| {
            let mut e = self.grid.encoder();
            let slot = self.stats.encode(&self.grid, &mut e)?;
            let index = ctx.queue.submit([e.finish()]);
            self.stats.submitted(slot, index, self.grid.bufs.n.get());
            Ok::<_, crate::Error>(())
        })??;
        self.stats.read_async(ctx).await
    }

    /// The statistics block of the oldest submitted step not yet read; waits for that step.
    pub fn read_stats(&self) -> Result<StatsBlock> {
        super::context::finish(self.read_stats_async(), "Simulation::read_stats_async")
    }

    /// [`Simulation::read_stats`] without blocking (what a web page awaits).
    pub async fn read_stats_async(&self) -> Result<StatsBlock> {
        let r = self.stats.read_async(&self.grid.ctx).await?;
        Ok(self.stages.read_block(r))
    }

    /// Reads the current state, densities and last dt.
    pub fn snapshot(&self) -> Result<Snapshot> {
        super::context::finish(self.snapshot_async(), "Simulation::snapshot_async")
    }

    /// [`Simulation::snapshot`], awaited (a web page's form).
    pub async fn snapshot_async(&self) -> Result<Snapshot> {
        let b = &self.grid.bufs;
        let n = b.n.get() as usize;
        let d = &self.stages;
        if d.primed() {
            // The step ended with a reorder: the slot-order buffers hold the state, with ρ.
            let state = Particles {
                pos: self.grid.read_vec3_async(&b.sorted_pos, n).await?,
                vel: self.grid.read_vec3_async(&b.sorted_vel, n).await?,
                id: self.grid.read_u32_async(&b.sorted_id, n).await?,
            };
            let density = self.grid.read_f32_async(d.density(), n).await?;
            let stats = d.last_stats();
            return Ok(Snapshot {
                state,
                density,
                dt: stats.dt,
                solver: Some(stats),
            });
        }
        let state = Particles {
            pos: self.grid.read_vec3_async(&b.positions, n).await?,
            vel: self.grid.read_vec3_async(&b.velocities, n).await?,
            id: self.grid.read_u32_async(&b.particle_id, n).await?,
        };
        let density = self
            .grid
            .read_f32_async(&self.fluid.fluid_density, n)
            .await?;
        let dt = self.grid.read_f32_async(&self.fluid.step_state, 4).await?[0];
        Ok(Snapshot {
            state,
            density,
            dt,
            solver: None,
        })
    }

    /// Reads the state the solver carries to the next step (the last dt, the iteration
    /// counts); no step may be in flight.
    pub fn read_carry(&self) -> Result<Carry> {
        super::context::finish(self.read_carry_async(), "Simulation::read_carry_async")
    }

    /// [`Simulation::read_carry`] without blocking (what a web page awaits).
    pub async fn read_carry_async(&self) -> Result<Carry> {
        self.stages.read_carry(&self.grid, &self.fluid).await
    }

    /// Reads the slot-order fields of the last step: pressure, acceleration, (dt, v_max, a_max,
    /// s_max).
    pub fn read_fields(&self) -> Result<(Vec<f32>, Vec<Vec3>, [f32; 4])> {
        let n = self.grid.bufs.n.get() as usize;
        let p = self.grid.read_f32(&self.fluid.pressure_buf, n)?;
        let a = self.grid.read_vec3(&self.fluid.accel, n)?;
        let s = self.grid.read_f32(&self.fluid.step_state, 4)?;
        Ok((p, a, [s[0], s[1], s[2], s[3]]))
    }
}
