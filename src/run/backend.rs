//! The two paths a run steps, behind one trait: the GPU [`Simulation`] and the CPU reference
//! [`CpuSimulation`], alike under both solvers (the mouse force, obstacles' motion, emitters and
//! removal through open sides included).

use crate::core::Particles;
use crate::cpu::interact::InteractParams;
use crate::cpu::stats::StatsBlock;
use crate::gpu::fluid::{Simulation, Snapshot};
use crate::params::{FluidParams, SimParams};
use crate::solver::SolverParams;
use crate::solver::{Carry, CpuSolver};
use crate::{Error, Result};

pub use crate::gpu::context::Pending;

/// Something that advances particles one step at a time.
pub trait Backend {
    /// Advances one step.
    fn step(&mut self) -> Result<()>;
    /// Starts one step whose statistics block [`Backend::read_stats`] returns; the GPU runs it
    /// while the host reads the block of the step before.
    fn submit(&mut self) -> Result<()>;
    /// The statistics block of the oldest submitted step not yet read (waits for it).
    fn read_stats(&mut self) -> Result<StatsBlock>;
    /// [`Backend::read_stats`] as a future: what the driver loop awaits, so that in a web page
    /// the browser can map the GPU's block back meanwhile. The CPU path's is ready at once.
    fn read_stats_async(&mut self) -> Pending<'_, StatsBlock> {
        Box::pin(std::future::ready(self.read_stats()))
    }
    /// The current state, densities and last dt (a full readback on the GPU; no step may be
    /// in flight).
    fn snapshot(&self) -> Result<Snapshot>;
    /// [`Backend::snapshot`] as a future (a web page awaits the GPU's readback); the CPU
    /// path's is ready at once.
    fn snapshot_async(&self) -> Pending<'_, Snapshot> {
        Box::pin(std::future::ready(self.snapshot()))
    }
    /// What the solver carries to the next step, in its own terms (no step may be in flight).
    fn carry(&self) -> Result<Carry>;
    /// [`Backend::carry`] as a future (a web page awaits the GPU's readback); the CPU path's
    /// is ready at once.
    fn carry_async(&self) -> Pending<'_, Carry> {
        Box::pin(std::future::ready(self.carry()))
    }
    /// Whether an obstacle moves: each step then needs the run's time before it is submitted,
    /// so steps are not pipelined.
    fn obstacles_move(&self) -> bool {
        false
    }
    /// Puts moving obstacles where they are at time `t` (s), for the next step.
    fn place_obstacles(&mut self, _t: f64) {}
    /// Adds emitted particles after the live ones (no step may be in flight).
    fn append(&mut self, batch: &crate::emitter::Batch) -> Result<()>;
    /// Stage `emitter_probe`: how many particles lie in each probe's slab (no step may be in
    /// flight).
    fn probe(&mut self, probes: &[crate::emitter::Probe]) -> Result<Vec<u32>>;
    /// [`Backend::probe`] as a future (what the driver loop awaits: a web page awaits the
    /// GPU's count); the CPU path's is ready at once.
    fn probe_async<'a>(&'a mut self, probes: &'a [crate::emitter::Probe]) -> Pending<'a, Vec<u32>> {
        Box::pin(std::future::ready(self.probe(probes)))
    }
    /// Removes the particles outside the tank (those that left through an open side; see
    /// [`without_outside`]); returns how many and the energy they took (no step may be in
    /// flight).
    fn remove_outside(&mut self) -> Result<(u64, f64)>;
    /// [`Backend::remove_outside`] as a future (what the driver loop awaits: a web page awaits
    /// the GPU's state); the CPU path's is ready at once.
    fn remove_outside_async(&mut self) -> Pending<'_, (u64, f64)> {
        Box::pin(std::future::ready(self.remove_outside()))
    }
    /// Replaces the velocities, given in the order [`Backend::snapshot`] holds the particles
    /// (no step may be in flight). The positions, and so the densities and DFSPH's factors,
    /// stay as they are.
    fn set_velocities(&mut self, vel: &[glam::Vec3]) -> Result<()>;
    /// Starts (`Some`) or stops (`None`) the viewer's mouse force (stage `interact`), which
    /// every following step applies, on either path and under either solver.
    fn set_interaction(&mut self, ip: Option<InteractParams>);
    /// The mouse force in effect.
    fn interaction(&self) -> Option<&InteractParams>;
    /// Milliseconds per stage (`core::Stage::ALL` order) of the passes run since the last call,
    /// and how many passes ran, where the path times its passes (the GPU with timestamp
    /// queries; no step may be in flight). The CPU path's stages are timed by `cpu::clock`.
    fn pass_times(&mut self) -> Result<Option<PassTimes>> {
        Ok(None)
    }
}

/// Milliseconds per stage (`core::Stage::ALL` order, `None` for a stage that did not run) and
/// the number of passes timed.
pub type PassTimes = ([Option<f64>; crate::core::Stage::ALL.len()], usize);

/// The state of `snap` (and the solver's `carry`, unchanged) without the particles outside the tank of `fp`,
/// the others in their order, renumbered by rank so ids stay 0..N; with how many left and the energy they took, ½ m |v|² + m |g| (y − floor)
/// each (the terms the statistics count). `None` when every particle is inside.
pub fn without_outside(
    snap: &Snapshot,
    carry: &Carry,
    fp: &FluidParams,
) -> Option<(Snapshot, Carry, u64, f64)> {
    let lo = glam::Vec3::from_slice(&fp.tank_min[..3]);
    let hi = glam::Vec3::from_slice(&fp.tank_max[..3]);
    let st = &snap.state;
    let keep: Vec<bool> = st
        .pos
        .iter()
        .map(|x| x.cmpge(lo).all() && x.cmple(hi).all())
        .collect();
    let gone = keep.iter().filter(|k| !**k).count();
    if gone == 0 {
        return None;
    }
    // new_id[old id]: the rank among the kept ids.
    let n = st.len();
    let mut kept_id = vec![false; n];
    for (k, &id) in st.id.iter().enumerate() {
        kept_id[id as usize] = keep[k];
    }
    let mut new_id = vec![u32::MAX; n];
    let mut next = 0u32;
    for (old, &kept) in kept_id.iter().enumerate() {
        if kept {
            new_id[old] = next;
            next += 1;
        }
    }
    let (m, g) = (fp.mass as f64, (fp.gravity[1] as f64).abs());
    let mut energy = 0.0f64;
    let mut state = Particles::default();
    let mut density = Vec::with_capacity(n - gone);
    for k in 0..n {
        if keep[k] {
            state.pos.push(st.pos[k]);
            state.vel.push(st.vel[k]);
            state.id.push(new_id[st.id[k] as usize]);
            density.push(snap.density[k]);
        } else {
            energy += 0.5 * m * st.vel[k].as_dvec3().length_squared()
                + m * g * (st.pos[k].y as f64 - fp.tank_min[1] as f64);
        }
    }
    let carry = carry.clone();
    let snap = Snapshot {
        state,
        density,
        ..snap.clone()
    };
    Some((snap, carry, gone as u64, energy))
}

/// Refuses velocities that are not one per live particle.
fn check_len(vel: &[glam::Vec3], n: usize) -> Result<()> {
    if vel.len() == n {
        Ok(())
    } else {
        Err(Error::input(format!(
            "{} velocities given for {n} particles: give one per particle",
            vel.len()
        )))
    }
}

impl Backend for Simulation {
    fn set_velocities(&mut self, vel: &[glam::Vec3]) -> Result<()> {
        let mut snap = Backend::snapshot(self)?;
        check_len(vel, snap.state.len())?;
        snap.state.vel.copy_from_slice(vel);
        // As after removing particles: the state uploaded and, for DFSPH, ρ and α computed
        // from the unchanged positions with the carry (previous dt, iteration budget) kept.
        let carry = Backend::carry(self)?;
        self.replace(&snap, &carry)
            .map_err(|e| self.grid.ctx.explain(e))
    }

    fn set_interaction(&mut self, ip: Option<InteractParams>) {
        Simulation::set_interaction(self, ip);
    }

    fn interaction(&self) -> Option<&InteractParams> {
        Simulation::interaction(self)
    }

    fn step(&mut self) -> Result<()> {
        Simulation::step(self, 1).map_err(|e| self.grid.ctx.explain(e))
    }

    fn submit(&mut self) -> Result<()> {
        Simulation::submit_step(self).map_err(|e| self.grid.ctx.explain(e))
    }

    fn read_stats(&mut self) -> Result<StatsBlock> {
        Simulation::read_stats(self).map_err(|e| self.grid.ctx.explain(e))
    }

    fn read_stats_async(&mut self) -> Pending<'_, StatsBlock> {
        Box::pin(async move {
            let read = Simulation::read_stats_async(self).await;
            read.map_err(|e| self.grid.ctx.explain(e))
        })
    }

    fn snapshot(&self) -> Result<Snapshot> {
        Simulation::snapshot(self).map_err(|e| self.grid.ctx.explain(e))
    }

    fn snapshot_async(&self) -> Pending<'_, Snapshot> {
        Box::pin(async move {
            let snap = Simulation::snapshot_async(self).await;
            snap.map_err(|e| self.grid.ctx.explain(e))
        })
    }

    fn carry(&self) -> Result<Carry> {
        self.read_carry().map_err(|e| self.grid.ctx.explain(e))
    }

    fn carry_async(&self) -> Pending<'_, Carry> {
        Box::pin(async move {
            let carry = self.read_carry_async().await;
            carry.map_err(|e| self.grid.ctx.explain(e))
        })
    }

    fn obstacles_move(&self) -> bool {
        Simulation::obstacles_move(self)
    }

    fn place_obstacles(&mut self, t: f64) {
        Simulation::place_obstacles(self, t);
    }

    fn append(&mut self, batch: &crate::emitter::Batch) -> Result<()> {
        Simulation::append(self, batch).map_err(|e| self.grid.ctx.explain(e))
    }

    fn probe(&mut self, probes: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
        Simulation::probe(self, probes).map_err(|e| self.grid.ctx.explain(e))
    }

    fn probe_async<'a>(&'a mut self, probes: &'a [crate::emitter::Probe]) -> Pending<'a, Vec<u32>> {
        Box::pin(async move {
            let hits = Simulation::probe_async(self, probes).await;
            hits.map_err(|e| self.grid.ctx.explain(e))
        })
    }

    fn pass_times(&mut self) -> Result<Option<PassTimes>> {
        let Some(timer) = self.grid.timer.as_ref() else {
            return Ok(None);
        };
        let passes = timer.passes();
        let ms = timer
            .read_ms(&self.grid.ctx)
            .map_err(|e| self.grid.ctx.explain(e))?;
        Ok(Some((ms, passes)))
    }

    fn remove_outside(&mut self) -> Result<(u64, f64)> {
        crate::gpu::context::finish(self.remove_outside_async(), "Backend::remove_outside_async")
    }

    fn remove_outside_async(&mut self) -> Pending<'_, (u64, f64)> {
        Box::pin(async move {
            let snap = Backend::snapshot_async(self).await?;
            let carry = Backend::carry_async(self).await?;
            match without_outside(&snap, &carry, &self.fluid_params) {
                Some((snap, carry, count, energy)) => {
                    self.replace(&snap, &carry)
                        .map_err(|e| self.grid.ctx.explain(e))?;
                    Ok((count, energy))
                }
                None => Ok((0, 0.0)),
            }
        })
    }
}

/// The CPU reference as a [`Backend`].
pub struct CpuSimulation {
    /// Grid parameters.
    pub sp: SimParams,
    /// Fluid parameters.
    pub fp: FluidParams,
    /// The viewer's mouse force (either solver), applied while set.
    pub interaction: Option<InteractParams>,
    /// Obstacles as boundary particles, at the pose of the last
    /// [`Backend::place_obstacles`].
    pub obstacles: Option<std::sync::Arc<crate::boundary::Boundary>>,
    solver: Box<dyn CpuSolver>,
    snap: Snapshot,
    /// The last step's obstacle power per particle (empty without obstacles).
    power: Vec<f32>,
    blocks: std::collections::VecDeque<StatsBlock>,
}

impl CpuSimulation {
    /// Starts a run of `solver` from `state`.
    pub fn with_solver(
        sp: SimParams,
        fp: FluidParams,
        solver: SolverParams,
        state: Particles,
    ) -> Self {
        let n = state.len();
        let snap = Snapshot {
            state,
            density: vec![0.0; n],
            dt: 0.0,
            solver: None,
        };
        let stepper = crate::solver::cpu(&solver, &Carry::default())
            .expect("a fresh run's carry is every solver's");
        Self::with_stepper(sp, fp, stepper, snap)
    }

    /// A run of the solver `stepper` (a solver registered in [`crate::solver`], or one of the
    /// caller's own) from `snap`.
    pub fn with_stepper(
        sp: SimParams,
        fp: FluidParams,
        stepper: Box<dyn CpuSolver>,
        snap: Snapshot,
    ) -> Self {
        Self {
            sp,
            fp,
            interaction: None,
            obstacles: None,
            solver: stepper,
            snap,
            power: Vec::new(),
            blocks: Default::default(),
        }
    }

    /// Continues a run of `solver` from a checkpoint's state (in the order it was held) and
    /// what the solver carried to the next step; Err when `carry` is not the solver's.
    pub fn resume(
        sp: SimParams,
        fp: FluidParams,
        solver: &SolverParams,
        carry: &Carry,
        snap: Snapshot,
    ) -> Result<Self> {
        let stepper = crate::solver::cpu(solver, carry).map_err(Error::input)?;
        Ok(Self::with_stepper(sp, fp, stepper, snap))
    }

    /// The name of the solver this run steps.
    pub fn solver_name(&self) -> &'static str {
        self.solver.name()
    }

    /// The state after the last step, without the copy [`Backend::snapshot`] makes.
    pub fn current(&self) -> &Snapshot {
        &self.snap
    }

    /// The pressure a viewer colours by: the Tait pressure of the current densities, p =
    /// B((ρ/ρ0)⁷ − 1) clamped at 0 (WCSPH's own; DFSPH holds no pressure between steps, and the
    /// Tait pressure of its density shows where it compresses).
    pub fn shown_pressure(&self) -> Vec<f32> {
        crate::solver::dfsph::tait_pressures(&self.snap.density, &self.fp)
    }
}

impl Backend for CpuSimulation {
    fn set_interaction(&mut self, ip: Option<InteractParams>) {
        self.interaction = ip;
    }

    fn interaction(&self) -> Option<&InteractParams> {
        self.interaction.as_ref()
    }

    fn step(&mut self) -> Result<()> {
        let (snap, power) = self.solver.step(
            &self.snap,
            self.obstacles.as_deref(),
            self.interaction.as_ref(),
            &self.sp,
            &self.fp,
        );
        self.snap = snap;
        self.power = power;
        Ok(())
    }

    fn submit(&mut self) -> Result<()> {
        self.step()?;
        let s = &self.snap;
        let power = (!self.power.is_empty()).then_some(&self.power[..]);
        let block = crate::cpu::clock::timed(crate::core::Stage::Stats, || {
            crate::cpu::stats::stats_block_with_power(
                &s.state.pos,
                &s.state.vel,
                &s.state.id,
                &s.density,
                power,
                &self.fp,
                s.dt,
                s.solver.as_ref(),
            )
        });
        self.blocks.push_back(block);
        Ok(())
    }

    fn read_stats(&mut self) -> Result<StatsBlock> {
        self.blocks
            .pop_front()
            .ok_or_else(|| Error::input("no step submitted to read statistics from"))
    }

    fn snapshot(&self) -> Result<Snapshot> {
        Ok(self.snap.clone())
    }

    fn carry(&self) -> Result<Carry> {
        Ok(self.solver.carry())
    }

    fn obstacles_move(&self) -> bool {
        self.obstacles.as_ref().is_some_and(|b| b.moves())
    }

    fn place_obstacles(&mut self, t: f64) {
        if let Some(b) = self.obstacles.as_mut().filter(|b| b.moves()) {
            std::sync::Arc::make_mut(b).place(t);
            self.solver.restart();
        }
    }

    fn probe(&mut self, probes: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
        Ok(crate::cpu::clock::timed(
            crate::core::Stage::EmitterProbe,
            || crate::emitter::probe_hits(&self.snap.state.pos, probes),
        ))
    }

    fn set_velocities(&mut self, vel: &[glam::Vec3]) -> Result<()> {
        check_len(vel, self.snap.state.len())?;
        self.snap.state.vel.copy_from_slice(vel);
        // The step's start holds the slot-order state, velocities included.
        self.solver.restart();
        Ok(())
    }

    fn remove_outside(&mut self) -> Result<(u64, f64)> {
        let carry = self.solver.carry();
        let Some((mut snap, _, count, energy)) = without_outside(&self.snap, &carry, &self.fp)
        else {
            return Ok((0, 0.0));
        };
        let obstacles = self.obstacles.as_deref();
        self.solver.settle(&mut snap, obstacles, &self.sp, &self.fp);
        self.snap = snap;
        Ok((count, energy))
    }

    fn append(&mut self, batch: &crate::emitter::Batch) -> Result<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let s = &mut self.snap;
        batch.append_to(&mut s.state);
        s.density
            .extend(std::iter::repeat_n(self.fp.rest_density, batch.pos.len()));
        let obstacles = self.obstacles.as_deref();
        self.solver.settle(s, obstacles, &self.sp, &self.fp);
        Ok(())
    }
}
