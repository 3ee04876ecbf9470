//! [`Simulation`]: one run on the GPU, the neighbour pipeline followed by the solver's passes
//! (WCSPH's in `wcsph.rs`, DFSPH's in `dfsph.rs`), the obstacles', the mouse force and the
//! statistics, chained into one step.

use std::cell::Cell;
use std::collections::VecDeque;
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
use crate::params::{FluidParams, SimParams, SolverParams};
use crate::solver::Carry;
use crate::solver::dfsph::gpu::GpuDfsph;
use crate::solver::dfsph::{DfsphCarry, Solve, SolverStats};
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
    /// The solvers' shared stages and their buffers (WCSPH or DFSPH, as their block says).
    pub stages: Box<GpuDfsph>,
    /// The obstacles' passes, when the scene has obstacles (WCSPH).
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
    /// Which solver the stages run.
    pub fn solver(&self) -> crate::params::Solver {
        SolverParams(self.stages.dp).solver()
    }

    /// Builds the pipelines of `solver` and uploads `state`.
    pub fn with_solver(
        ctx: Arc<GpuContext>,
        sp: &SimParams,
        fp: &FluidParams,
        solver: &SolverParams,
        state: &Particles,
    ) -> Result<Self> {
        let grid = GpuNeighbours::new(ctx, sp)?;
        let grid_params = SimParams {
            group_size: grid.bufs.group_size,
            ..*sp
        };
        let fluid = GpuFluid::new(&grid.ctx, &grid, fp)?;
        let interact = GpuInteract::new(&grid.ctx, &grid, &fluid.accel)?;
        let dp = solver.stages();
        let stages = Box::new(GpuDfsph::new(
            &grid.ctx,
            &grid,
            &fluid.params,
            &fluid.accel,
            &fluid.step_state,
            &fluid.obstacle_power,
            dp,
            &crate::params::CoarseParams::new(fp, sp.kernel_kind(), sp.h, dp.spacing, fp.mass),
        )?);
        let b = &grid.bufs;
        let inputs = StatsInputs {
            pos: &b.sorted_pos,
            vel: &b.sorted_vel,
            id: &b.sorted_id,
            density: &stages.rho,
            step_state: &fluid.step_state,
            fluid: &fluid.params,
            power: &fluid.obstacle_power,
            dfsph: Some(super::stats::DfsphInputs {
                error_sums: &stages.error_sums,
                error_maxima: &stages.error_maxima,
                totals: &stages.totals,
                // WCSPH runs no solve: no totals to read back.
                slots: match stages.dp.is_wcsph() {
                    true => 0,
                    false => stages.dp.max_iterations + 1,
                },
            }),
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
        // The DFSPH walks see them through bind group 1; the grid's ρ and α are recomputed.
        {
            let d = &mut self.stages;
            let dev = &self.grid.ctx.device;
            let bg = self
                .obstacles
                .as_ref()
                .map(|o| o.boundary_bind_group(dev, &d.boundary_layout));
            d.set_boundary(dev, bg);
            d.host.primed.set(false);
        }
        Ok(())
    }

    /// Whether an obstacle moves: then each step needs the run's time first
    /// ([`Simulation::place_obstacles`]).
    pub fn obstacles_move(&self) -> bool {
        self.obstacles.as_ref().is_some_and(|o| o.moves())
    }

    /// Puts moving obstacles where they are at time `t` (s), for the next submitted step.
    /// DFSPH then recomputes ρ and α of the step's start with the obstacles there.
    pub fn place_obstacles(&mut self, t: f64) {
        if let Some(o) = &mut self.obstacles
            && o.moves()
        {
            o.place(&self.grid.ctx.queue, t);
            self.stages.host.primed.set(false);
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

    /// Replaces the particle state (DFSPH: with a fresh start); its length becomes the live
    /// count, at most the capacity.
    pub fn upload(&self, state: &Particles) {
        self.grid.upload(state);
        let d = &self.stages;
        d.set_live(&self.grid.ctx.queue, state.len() as u32);
        self.set_carry(&DfsphCarry::new(&d.dp));
    }

    /// Replaces the state with `snap` (as [`Simulation::upload`]) and the solver's carried
    /// state with `carry`, computing the grid, ρ and α at once (`crate::run::without_outside`
    /// removes particles this way).
    pub fn replace(&self, snap: &Snapshot, carry: &Carry) -> Result<()> {
        self.upload(&snap.state);
        self.upload_carry(carry)?;
        self.grid.run(|_, e| self.encode_prime(e))
    }

    /// DFSPH: copies the state the last step left in slot order, with its ρ, into the buffers
    /// the viewer draws from (`positions`, `velocities`, `fluid_density`), which the solver
    /// does not read before its next step writes them. Nothing for WCSPH, whose state is
    /// there.
    pub fn expose_for_render(&self) -> Result<()> {
        let d = &self.stages;
        if !d.host.primed.get() {
            return Ok(());
        }
        let b = &self.grid.bufs;
        let n = b.n.get() as u64;
        self.grid.run(|_, e| {
            e.copy_buffer_to_buffer(&b.sorted_pos, 0, &b.positions, 0, n * 16);
            e.copy_buffer_to_buffer(&b.sorted_vel, 0, &b.velocities, 0, n * 16);
            e.copy_buffer_to_buffer(&b.sorted_id, 0, &b.particle_id, 0, n * 4);
            e.copy_buffer_to_buffer(&d.rho, 0, &self.fluid.fluid_density, 0, n * 4);
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
        self.grid.read_u32(&p.hits, probes.len())
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
        if d.host.primed.get() {
            let mut e = self.grid.encoder();
            let n64 = n as u64;
            e.copy_buffer_to_buffer(&b.sorted_pos, 0, &b.positions, 0, n64 * 16);
            e.copy_buffer_to_buffer(&b.sorted_vel, 0, &b.velocities, 0, n64 * 16);
            e.copy_buffer_to_buffer(&b.sorted_id, 0, &b.particle_id, 0, n64 * 4);
            q.submit([e.finish()]);
            d.host.primed.set(false);
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
        {
            let d = &self.stages;
            d.set_live(q, n + m);
            self.grid.run(|_, e| self.encode_prime(e))?;
        }
        Ok(())
    }

    /// Replaces the state the solver carries between steps (a checkpoint's, or what
    /// [`Simulation::read_carry`] read); Err when it is not the solver's.
    pub fn upload_carry(&self, carry: &Carry) -> Result<()> {
        let c = DfsphCarry::from_carry(carry, &self.stages.dp).map_err(Error::input)?;
        self.set_carry(&c);
        Ok(())
    }

    /// The stages' carried state (previous dt, iteration counts).
    fn set_carry(&self, carry: &DfsphCarry) {
        {
            let d = &self.stages;
            *d.host.budget.borrow_mut() = (carry.budget, VecDeque::new());
            let q = &self.grid.ctx.queue;
            q.write_buffer(
                &self.fluid.step_state,
                0,
                bytemuck::cast_slice(&[carry.dt_prev, 0.0, 0.0, 0.0]),
            );
            d.host.primed.set(false);
        }
    }

    /// Encodes one full step: grid build, reorder, walls (with the density and the pressure
    /// fused in), forces, (interact,
    /// while the viewer's mouse force is on), timestep, integrate. Nothing is read back.
    pub fn encode_step(&self, e: &mut wgpu::CommandEncoder) {
        self.encode_dfsph_step(e, &self.stages);
    }

    /// DFSPH: the grid and ρ, α of the current state, unless the last step left them.
    pub fn encode_prime(&self, e: &mut wgpu::CommandEncoder) {
        let d = &self.stages;
        if !d.host.primed.get() {
            self.grid.encode_build(e);
            d.encode_density(&self.grid, e);
            d.host.primed.set(true);
        }
    }

    /// One DFSPH step (src/solver/dfsph/mod.rs lists the stages; WCSPH's, the same stages without
    /// the solves, `dfsph_eos` and one pressure pass in place of the second): divergence-free solve,
    /// non-pressure accelerations (and the mouse force), time step, predicted velocities in
    /// up to K viscous substeps (those past the step's count dispatch nothing),
    /// constant-density solve, positions; then the grid, ρ and α at the new positions and the
    /// statistics block.
    fn encode_dfsph_step(&self, e: &mut wgpu::CommandEncoder, d: &GpuDfsph) {
        let g = &self.grid;
        let caps = self.next_caps(d);
        self.encode_prime(e);
        let wcsph = d.dp.is_wcsph();
        if wcsph {
            d.encode_wcsph_start(e);
        } else {
            d.encode_levels(g, e);
            d.encode_solve(g, e, Solve::Divergence, caps[0]);
        }
        d.encode_accel(g, e);
        if self.interaction.is_some() {
            self.interact.encode(e, g.bufs.n.get());
        }
        d.encode_timestep(g, e);
        d.encode_predict(g, e);
        for k in 2..=d.dp.viscous_substeps {
            d.encode_substep_accel(g, e, k);
            if self.interaction.is_some() {
                self.interact.encode(e, g.bufs.n.get());
            }
            d.encode_substep_predict(g, e, k);
        }
        if wcsph {
            d.encode_wcsph_pressure(g, e);
        } else {
            d.encode_solve(g, e, Solve::Density, caps[1]);
        }
        d.encode_integrate(g, e);
        g.encode_build(e);
        d.encode_density(g, e);
        d.host.primed.set(true);
    }

    /// DFSPH: the caps of the step being encoded, from the counts of the steps from two before
    /// back ([`IterationBudget`](crate::solver::dfsph::IterationBudget)), which the host has read
    /// unless more than one step is in flight; records them for the step's statistics block.
    fn next_caps(&self, d: &GpuDfsph) -> [u32; 2] {
        let mut b = d.host.budget.borrow_mut();
        let (read, pending) = &mut *b;
        let caps = match pending.len() {
            _ if d.dp.is_wcsph() => [0; 2],
            0 => d.caps(read),
            // The step before is in flight: the newest read is the one two before.
            1 => d.caps_ahead(read),
            // `step` and the driver keep at most one unread step ahead of an encode; were
            // there more, the full count keeps the solve uncapped.
            _ => [d.dp.max_iterations; 2],
        };
        pending.push_back(caps);
        d.host.last_caps.set(caps);
        caps
    }

    /// Completes a statistics block read back: for DFSPH, the host builds DFSPH's block from
    /// the density error's blocks and the solves' totals of a step that had `caps`
    /// ([`crate::solver::dfsph::dfsph_stats`], as the CPU path builds its own).
    fn finish(&self, r: super::stats::Read, caps: [u32; 2]) -> StatsBlock {
        let mut block = r.block;
        if let Some(raw) = &r.dfsph {
            let d = &self.stages;
            // WCSPH ran no solve: no totals to replay, as on the CPU.
            let totals = match d.dp.is_wcsph() {
                true => [&[][..]; 2],
                false => [&raw.totals[0][..], &raw.totals[1][..]],
            };
            let st = crate::solver::dfsph::dfsph_stats(
                &raw.error_sums,
                &raw.error_maxima,
                totals,
                caps,
                block.n,
                &d.dp,
                r.step_state[0],
                r.step_state[1],
            );
            block.solver = st.to_words();
            d.host.last_stats.set(st);
        }
        block
    }

    /// DFSPH: records the counts of the oldest unread step, which had `caps`, from its
    /// statistics block.
    fn record_counts(&self, caps: [u32; 2], block: &StatsBlock) {
        {
            let d = &self.stages;
            let st = SolverStats::from_words(&block.solver);
            let unrun =
                caps[0].saturating_sub(st.iterations_v) + caps[1].saturating_sub(st.iterations_d);
            d.host.idle.set(d.host.idle.get() + 2 * u64::from(unrun));
            d.host.budget.borrow_mut().0.push_step(caps, &st);
        }
    }

    /// DFSPH: the dispatches of the steps read so far that belonged to iterations their solve
    /// did not run (each launches and exits at once); 0 for WCSPH.
    pub fn idle_dispatches(&self) -> u64 {
        self.stages.host.idle.get()
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
        let caps = self.stages.host.last_caps.get();
        self.stats_after(caps)
    }

    /// [`Simulation::stats_now`] for DFSPH solves that had `caps` iterations (the last step
    /// encoded's, or a verification's own).
    pub fn stats_after(&self, caps: [u32; 2]) -> Result<StatsBlock> {
        let ctx = &self.grid.ctx;
        ctx.scoped(|| {
            let mut e = self.grid.encoder();
            let slot = self.stats.encode(&self.grid, &mut e)?;
            let index = ctx.queue.submit([e.finish()]);
            self.stats.submitted(slot, index, self.grid.bufs.n.get());
            let r = self.stats.read(ctx)?;
            Ok(self.finish(r, caps))
        })?
    }

    /// The statistics block of the oldest submitted step not yet read; waits for that step.
    pub fn read_stats(&self) -> Result<StatsBlock> {
        let r = self.stats.read(&self.grid.ctx)?;
        let caps = self.stages.host.budget.borrow_mut().1.pop_front();
        let block = self.finish(r, caps.unwrap_or_default());
        if let Some(caps) = caps {
            self.record_counts(caps, &block);
        }
        Ok(block)
    }

    /// Reads the current state, densities and last dt.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let b = &self.grid.bufs;
        let n = b.n.get() as usize;
        let d = &self.stages;
        if d.host.primed.get() {
            // The step ended with a reorder: the slot-order buffers hold the state, with ρ.
            let state = Particles {
                pos: self.grid.read_vec3(&b.sorted_pos, n)?,
                vel: self.grid.read_vec3(&b.sorted_vel, n)?,
                id: self.grid.read_u32(&b.sorted_id, n)?,
            };
            let density = self.grid.read_f32(&d.rho, n)?;
            let stats = d.host.last_stats.get();
            return Ok(Snapshot {
                state,
                density,
                dt: stats.dt,
                solver: Some(stats),
            });
        }
        let state = Particles {
            pos: self.grid.read_vec3(&b.positions, n)?,
            vel: self.grid.read_vec3(&b.velocities, n)?,
            id: self.grid.read_u32(&b.particle_id, n)?,
        };
        let density = self.grid.read_f32(&self.fluid.fluid_density, n)?;
        let dt = self.grid.read_f32(&self.fluid.step_state, 4)?[0];
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
        let d = &self.stages;
        let dt_prev = self.grid.read_f32(&self.fluid.step_state, 4)?[0];
        Ok(DfsphCarry {
            dt_prev,
            budget: d.host.budget.borrow().0,
        }
        .to_carry())
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
