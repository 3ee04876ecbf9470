//! Headless stepping shared by the CPU and GPU paths: per-step statistics, blow-up checks,
//! frame export.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::core::Particles;
use crate::cpu::Grid;
use crate::cpu::dfsph::{self, DensityAlpha, DfsphCarry, DfsphStats};
use crate::cpu::interact::InteractParams;
use crate::cpu::stats::{BAD_DENSITY, BAD_POSITION, BAD_VELOCITY, StatsBlock, stats_block};
use crate::cpu::step::step_with;
use crate::emitter::Emitters;
use crate::gpu::fluid::{Simulation, Snapshot};
use crate::params::{DfsphParams, FluidParams, SimParams, SolverParams};
use crate::{Error, Result, io};

/// Something that advances particles one step at a time.
pub trait Backend {
    /// Advances one step.
    fn step(&mut self) -> Result<()>;
    /// Starts one step whose statistics block [`Backend::read_stats`] returns; the GPU runs it
    /// while the host reads the block of the step before.
    fn submit(&mut self) -> Result<()>;
    /// The statistics block of the oldest submitted step not yet read (waits for it).
    fn read_stats(&mut self) -> Result<StatsBlock>;
    /// The current state, densities and last dt (a full readback on the GPU; no step may be
    /// in flight).
    fn snapshot(&self) -> Result<Snapshot>;
    /// DFSPH: the state carried to the next step (warm start, last dt); `None` for WCSPH.
    fn carry(&self) -> Result<Option<DfsphCarry>>;
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
    /// Removes the particles outside the tank (those that left through an open side; see
    /// [`without_outside`]); returns how many and the energy they took (no step may be in
    /// flight).
    fn remove_outside(&mut self) -> Result<(u64, f64)>;
    /// Starts (`Some`) or stops (`None`) the viewer's mouse force (stage `interact`), which
    /// every following step applies, on either path and under either solver.
    fn set_interaction(&mut self, ip: Option<InteractParams>);
    /// The mouse force in effect.
    fn interaction(&self) -> Option<&InteractParams>;
}

/// The state of `snap` (and DFSPH's `carry`) without the particles outside the tank of `fp`,
/// the others in their order, renumbered by rank so ids stay 0..N (a carry's warm start
/// follows them); with how many left and the energy they took, ½ m |v|² + m |g| (y − floor)
/// each (the terms the statistics count). `None` when every particle is inside.
pub fn without_outside(
    snap: &Snapshot,
    carry: Option<&DfsphCarry>,
    fp: &FluidParams,
) -> Option<(Snapshot, Option<DfsphCarry>, u64, f64)> {
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
    let carry = carry.map(|c| DfsphCarry {
        warm: c
            .warm
            .iter()
            .zip(&kept_id)
            .filter(|(_, k)| **k)
            .map(|(w, _)| *w)
            .collect(),
        dt_prev: c.dt_prev,
    });
    let snap = Snapshot {
        state,
        density,
        ..snap.clone()
    };
    Some((snap, carry, gone as u64, energy))
}

impl Backend for Simulation {
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

    fn snapshot(&self) -> Result<Snapshot> {
        Simulation::snapshot(self).map_err(|e| self.grid.ctx.explain(e))
    }

    fn carry(&self) -> Result<Option<DfsphCarry>> {
        self.read_carry().map_err(|e| self.grid.ctx.explain(e))
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

    fn remove_outside(&mut self) -> Result<(u64, f64)> {
        let snap = Backend::snapshot(self)?;
        let carry = Backend::carry(self)?;
        match without_outside(&snap, carry.as_ref(), &self.fluid_params) {
            Some((snap, carry, count, energy)) => {
                self.replace(&snap, carry.as_ref())
                    .map_err(|e| self.grid.ctx.explain(e))?;
                Ok((count, energy))
            }
            None => Ok((0, 0.0)),
        }
    }
}

/// The DFSPH state of a CPU run.
struct CpuDfsph {
    dp: DfsphParams,
    carry: DfsphCarry,
    // The grid, slot-order state, ρ and α of the current state, which the last step computed.
    start: Option<(Grid, Particles, DensityAlpha)>,
}

/// The CPU reference as a [`Backend`].
pub struct CpuSimulation {
    /// Grid parameters.
    pub sp: SimParams,
    /// Fluid parameters.
    pub fp: FluidParams,
    /// The viewer's mouse force (either solver), applied while set.
    pub interaction: Option<InteractParams>,
    /// Obstacles as boundary particles (WCSPH), at the pose of the last
    /// [`Backend::place_obstacles`].
    pub obstacles: Option<std::sync::Arc<crate::boundary::Boundary>>,
    dfsph: Option<CpuDfsph>,
    snap: Snapshot,
    /// The last step's obstacle power per particle (empty without obstacles).
    power: Vec<f32>,
    blocks: std::collections::VecDeque<StatsBlock>,
}

impl CpuSimulation {
    /// Starts a WCSPH run from `state`.
    pub fn new(sp: SimParams, fp: FluidParams, state: Particles) -> Self {
        Self::with_solver(sp, fp, SolverParams::Wcsph, state)
    }

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
            dfsph: None,
        };
        let dfsph = solver.dfsph().map(|&dp| (dp, DfsphCarry::new(n, &dp)));
        Self::resume(sp, fp, dfsph, snap)
    }

    /// Continues a run from a checkpoint's state (in the order it was held) and, for DFSPH,
    /// its warm start.
    pub fn resume(
        sp: SimParams,
        fp: FluidParams,
        dfsph: Option<(DfsphParams, DfsphCarry)>,
        snap: Snapshot,
    ) -> Self {
        Self {
            sp,
            fp,
            interaction: None,
            obstacles: None,
            dfsph: dfsph.map(|(dp, carry)| CpuDfsph {
                dp,
                carry,
                start: None,
            }),
            snap,
            power: Vec::new(),
            blocks: Default::default(),
        }
    }

    /// The solver this run steps.
    pub fn solver(&self) -> crate::params::Solver {
        match self.dfsph {
            None => crate::params::Solver::Wcsph,
            Some(_) => crate::params::Solver::Dfsph,
        }
    }

    /// The state after the last step, without the copy [`Backend::snapshot`] makes.
    pub fn current(&self) -> &Snapshot {
        &self.snap
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
        if let Some(d) = &mut self.dfsph {
            let tr = dfsph::dfsph_step_with(
                false,
                &self.snap.state,
                &d.carry,
                d.start.take(),
                self.obstacles.as_deref(),
                self.interaction.as_ref(),
                &self.sp,
                &self.fp,
                &d.dp,
            );
            d.carry = tr.carry;
            // The GPU holds the new state in the new grid's slot order; so does this.
            self.snap = Snapshot {
                state: tr.next_sorted.clone(),
                density: tr.end.density.clone(),
                dt: tr.stats.dt,
                dfsph: Some(tr.stats),
            };
            d.start = Some((tr.next_grid, tr.next_sorted, tr.end));
            // Summed by index with the new state, as the GPU's statistics pass reads it.
            self.power = tr.power;
            return Ok(());
        }
        let trace = step_with(
            &self.snap.state,
            &self.sp,
            &self.fp,
            self.interaction.as_ref(),
            self.obstacles.as_deref(),
        );
        self.snap = Snapshot {
            state: trace.next,
            density: trace.fluid_density,
            dt: trace.timestep.dt,
            dfsph: None,
        };
        self.power = trace.obstacle_power;
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
                s.dfsph.as_ref(),
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

    fn carry(&self) -> Result<Option<DfsphCarry>> {
        Ok(self.dfsph.as_ref().map(|d| d.carry.clone()))
    }

    fn obstacles_move(&self) -> bool {
        self.obstacles.as_ref().is_some_and(|b| b.moves())
    }

    fn place_obstacles(&mut self, t: f64) {
        if let Some(b) = self.obstacles.as_mut().filter(|b| b.moves()) {
            std::sync::Arc::make_mut(b).place(t);
            // DFSPH: ρ and α of the step's start see the obstacles where they are now.
            if let Some(d) = &mut self.dfsph {
                d.start = None;
            }
        }
    }

    fn probe(&mut self, probes: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
        Ok(crate::cpu::clock::timed(
            crate::core::Stage::EmitterProbe,
            || crate::emitter::probe_hits(&self.snap.state.pos, probes),
        ))
    }

    fn remove_outside(&mut self) -> Result<(u64, f64)> {
        let carry = self.dfsph.as_ref().map(|d| &d.carry);
        let Some((snap, carry, count, energy)) = without_outside(&self.snap, carry, &self.fp)
        else {
            return Ok((0, 0.0));
        };
        self.snap = snap;
        // As the GPU: DFSPH computes the grid, ρ and α of the remaining state at once.
        if let (Some(d), Some(carry)) = (&mut self.dfsph, carry) {
            d.carry = carry;
            let (grid, sorted, da) = dfsph::prepare(
                &self.snap.state,
                self.obstacles.as_deref(),
                &self.sp,
                &self.fp,
                &d.dp,
            );
            self.snap.state = sorted.clone();
            self.snap.density = da.density.clone();
            d.start = Some((grid, sorted, da));
        }
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
        // As the GPU: DFSPH holds the state in the order it was in, plus the new particles,
        // and computes the grid, ρ and α at once.
        if let Some(d) = &mut self.dfsph {
            d.carry
                .warm
                .extend(std::iter::repeat_n([0.0; 2], batch.pos.len()));
            let (grid, sorted, da) = dfsph::prepare(
                &s.state,
                self.obstacles.as_deref(),
                &self.sp,
                &self.fp,
                &d.dp,
            );
            s.state = sorted.clone();
            s.density = da.density.clone();
            d.start = Some((grid, sorted, da));
        }
        Ok(())
    }
}

/// One row of `--stats`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct StepStats {
    /// Step number (1 after the first step).
    pub step: u64,
    /// Simulated time, s.
    pub t: f64,
    /// dt of this step, s.
    pub dt: f64,
    /// Kinetic energy ½ m Σ|v|², J.
    pub kinetic: f64,
    /// Potential energy m |g| Σ (y − floor), J.
    pub potential: f64,
    /// Largest speed, m/s.
    pub max_speed: f64,
    /// Smallest density.
    pub density_min: f64,
    /// Mean density.
    pub density_mean: f64,
    /// Largest density.
    pub density_max: f64,
    /// Surge front: the largest x of the fluid, m.
    pub front: f64,
    /// Particles outside the tank (must be 0).
    pub outside: u64,
    /// DFSPH divergence-free solve iterations (0 for WCSPH).
    pub iterations_v: u32,
    /// DFSPH constant-density solve iterations (0 for WCSPH).
    pub iterations_d: u32,
    /// Final mean residual of the divergence-free solve.
    pub residual_v: f64,
    /// Final mean residual of the constant-density solve.
    pub residual_d: f64,
    /// Mean over particles of max(ρ/ρ0 − 1, 0) at the step's new positions.
    pub density_error_mean: f64,
    /// Its maximum.
    pub density_error_max: f64,
    /// The energy the Tait equation of state stores, m B/ρ0 Σẽ(ρ), J (WCSPH; 0 for DFSPH,
    /// whose pressure does no reversible work).
    pub eos_energy: f64,
    /// The power moving obstacles put into the fluid this step, W (0 when none moves).
    pub obstacle_power: f64,
    /// Live particles in the step (emitters add some at the ends of steps).
    pub particles: u64,
}

impl StepStats {
    /// The solver's own line of a run's summary: DFSPH's last step (both solves' iterations and
    /// residuals, the density error); none for WCSPH, whose state the general line says.
    pub fn solver_line(&self, solver: crate::params::Solver) -> Option<String> {
        (solver == crate::params::Solver::Dfsph).then(|| {
            format!(
                "DFSPH last step: {} + {} iterations (residuals {:.3e}, {:.3e}), density error mean {:.3e} max {:.3e}",
                self.iterations_v,
                self.iterations_d,
                self.residual_v,
                self.residual_d,
                self.density_error_mean,
                self.density_error_max
            )
        })
    }
}

/// When a run counts as diverged, besides non-finite values and particles outside the tank.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Guards {
    /// A density above this multiple of ρ0 (0 disables).
    pub density_ratio: f32,
    /// WCSPH: a speed above this fraction of the sound speed (0 disables). The weakly
    /// compressible model holds for Mach numbers up to about 0.1 (Monaghan 1994); the dam break
    /// stays below about 0.15 c, so 0.5 c is far past the model, never a normal run.
    pub speed_fraction: f32,
    /// A time step below this, s (DFSPH clamps its dt here, so reaching it counts).
    pub dt_min: f32,
    /// Whether the solver is WCSPH (the speed check applies).
    pub wcsph: bool,
    /// Whether the user fixed dt (`--dt`): then the dt check does not apply.
    pub fixed_dt: bool,
    /// A total energy (kinetic + potential, + the equation of state's for WCSPH) above the
    /// first step's by this fraction of it (0 disables).
    pub energy_margin: f32,
}

impl Default for Guards {
    fn default() -> Self {
        Self {
            density_ratio: 2.0,
            speed_fraction: 0.5,
            dt_min: 1e-6,
            wcsph: true,
            fixed_dt: false,
            energy_margin: 0.05,
        }
    }
}

/// The total energy of a block, J: kinetic ½ m Σ|v|², gravitational m |g| Σ(y − y_floor) and,
/// for WCSPH, the energy the Tait equation of state stores, m B/ρ0 Σẽ(ρ)
/// ([`crate::cpu::stats::eos_energy`]).
pub fn total_energy(b: &StatsBlock, fp: &FluidParams, wcsph: bool) -> f64 {
    let m = fp.mass as f64;
    let g = (fp.gravity[1] as f64).abs();
    let eos = if wcsph {
        m * fp.stiffness as f64 / fp.rest_density as f64 * b.eos as f64
    } else {
        0.0
    };
    0.5 * m * b.sums[0] as f64 + m * g * b.sums[1] as f64 + eos
}

impl Guards {
    /// Fails with one line naming the step, the quantity, the particle and a fix when the
    /// block shows a diverged run. A density above the bound counts at any step, the first
    /// included: at 2ρ0 the Tait pressure is 127 B, far outside the weakly compressible model,
    /// and a start that dense (particles stacked on one point) is no fluid to simulate.
    /// `start_energy` is the [`total_energy`] the energy check compares with (the first
    /// step's).
    pub fn check(
        &self,
        b: &StatsBlock,
        start_energy: f64,
        work: f64,
        fp: &FluidParams,
        step: u64,
        t: f64,
    ) -> Result<()> {
        let fix = "use a smaller --cfl or --dt, a larger --sound-speed, or a finer --spacing";
        let rho0 = fp.rest_density;
        if self.density_ratio > 0.0 && b.maxima[1] > self.density_ratio * rho0 {
            return Err(Error::Unstable(format!(
                "step {step}: density {:.1} kg/m^3 at particle {} is above {}x the rest density (t = {t:.6} s): the run diverged; {fix}",
                b.maxima[1], b.density_max_id, self.density_ratio
            )));
        }
        let speed = b.maxima[0].sqrt();
        if self.wcsph && self.speed_fraction > 0.0 && speed > self.speed_fraction * fp.sound_speed {
            return Err(Error::Unstable(format!(
                "step {step}: speed {speed:.4} m/s at particle {} is above {}x the speed of sound {} m/s (t = {t:.6} s): the run diverged; {fix}",
                b.speed_max_id, self.speed_fraction, fp.sound_speed
            )));
        }
        // What moving obstacles put in is no gain of the scheme's.
        let energy = total_energy(b, fp, self.wcsph) - work;
        if self.energy_margin > 0.0
            && start_energy > 0.0
            && energy > start_energy * (1.0 + self.energy_margin as f64)
        {
            let what = match (self.wcsph, work != 0.0) {
                (true, false) => "kinetic + potential + equation-of-state",
                (true, true) => {
                    "kinetic + potential + equation-of-state, less the moving obstacles' work"
                }
                (false, _) => "kinetic + potential",
            };
            return Err(Error::Unstable(format!(
                "step {step}: the total ({what}) energy {energy:.4e} J is {:.1}% above its start {start_energy:.4e} J, more than --energy-margin {} (t = {t:.6} s, fastest particle {}): the run diverged; {fix}",
                100.0 * (energy / start_energy - 1.0),
                self.energy_margin,
                b.speed_max_id
            )));
        }
        if !self.fixed_dt && b.dt <= self.dt_min && step > 0 {
            return Err(Error::Unstable(format!(
                "step {step}: the time step {:.3e} s reached --dt-min {:.3e} s (t = {t:.6} s, fastest particle {}): the run diverged; {fix}",
                b.dt, self.dt_min, b.speed_max_id
            )));
        }
        Ok(())
    }
}

/// The statistics of a step from its block (the same bits on both paths); fails with the
/// step, the quantity and the particle on a non-finite value, or on particles outside the tank.
pub fn step_stats(b: &StatsBlock, fp: &FluidParams, step: u64, t: f64) -> Result<StepStats> {
    if b.non_finite != 0 {
        let what = [
            (BAD_POSITION, "position"),
            (BAD_VELOCITY, "velocity"),
            (BAD_DENSITY, "density"),
        ]
        .iter()
        .filter(|(bit, _)| b.non_finite & bit != 0)
        .map(|(_, w)| *w)
        .collect::<Vec<_>>()
        .join(" and ");
        return Err(Error::Unstable(format!(
            "step {step}: non-finite {what} at particle {} (t = {t:.6} s): the run blew up; reduce --dt or the speed of sound, or raise --viscosity",
            b.first_bad_id
        )));
    }
    if !b.dt.is_finite() {
        return Err(Error::Unstable(format!(
            "step {step}: non-finite time step"
        )));
    }
    // Through an open side leaving is no error: the run removes them after the step.
    if b.outside > 0 && fp.open == 0 {
        return Err(Error::Unstable(format!(
            "step {step}: {} particles outside the tank (t = {t:.6} s)",
            b.outside
        )));
    }
    let g = (fp.gravity[1] as f64).abs();
    let m = fp.mass as f64;
    let n = b.n.max(1) as f64;
    let rho0 = fp.rest_density as f64;
    let mut st = StepStats {
        step,
        t,
        dt: b.dt as f64,
        kinetic: 0.5 * m * b.sums[0] as f64,
        potential: m * g * b.sums[1] as f64,
        max_speed: (b.maxima[0] as f64).sqrt(),
        density_min: b.density_min as f64,
        density_mean: b.sums[2] as f64 / n,
        density_max: b.maxima[1] as f64,
        front: b.maxima[2] as f64,
        outside: b.outside as u64,
        iterations_v: 0,
        iterations_d: 0,
        residual_v: 0.0,
        residual_d: 0.0,
        density_error_mean: b.sums[3] as f64 / (rho0 * n),
        density_error_max: b.maxima[3] as f64 / rho0,
        eos_energy: 0.0,
        obstacle_power: b.power as f64,
        particles: b.n as u64,
    };
    // DFSPH reduces its density error at the new positions in its own block.
    if b.dfsph != [0; 8] {
        let d = DfsphStats::from_words(&b.dfsph);
        st.iterations_v = d.iterations_v;
        st.iterations_d = d.iterations_d;
        st.residual_v = d.residual_v as f64;
        st.residual_d = d.residual_d as f64;
        st.density_error_mean = d.error_mean as f64;
        st.density_error_max = d.error_max as f64;
    } else {
        st.eos_energy = total_energy(b, fp, true) - total_energy(b, fp, false);
    }
    Ok(st)
}

/// The statistics of a snapshot, through the same block as a run's.
pub fn snapshot_stats(s: &Snapshot, fp: &FluidParams, step: u64, t: f64) -> Result<StepStats> {
    let st = &s.state;
    let b = stats_block(
        &st.pos,
        &st.vel,
        &st.id,
        &s.density,
        fp,
        s.dt,
        s.dfsph.as_ref(),
    );
    step_stats(&b, fp, step, t)
}

/// Fails with one line when a starting state has a non-finite value or a particle outside
/// the tank.
pub fn check_start(state: &Particles, fp: &FluidParams) -> Result<()> {
    if state.is_empty() {
        return Ok(());
    }
    let density = vec![fp.rest_density; state.len()];
    let b = stats_block(&state.pos, &state.vel, &state.id, &density, fp, 0.0, None);
    if b.non_finite != 0 {
        return Err(Error::input(format!(
            "particle {} starts with a non-finite position or velocity: fix the input",
            b.first_bad_id
        )));
    }
    if b.outside > 0 {
        return Err(Error::input(format!(
            "{} particles start outside the tank: widen --tank-min/--tank-max",
            b.outside
        )));
    }
    Ok(())
}

/// The `--stats` CSV header, after comment lines recording the geometry.
pub fn stats_header(geometry: &str) -> String {
    format!(
        "# {geometry}\nstep,t,dt,kinetic,potential,max_speed,density_min,density_mean,density_max,front,outside,iterations_v,iterations_d,residual_v,residual_d,density_error_mean,density_error_max,eos_energy,obstacle_power,particles\n"
    )
}

impl StepStats {
    /// The row as a CSV line.
    pub fn csv_line(&self) -> String {
        format!(
            "{},{:.9},{:.6e},{:.9e},{:.9e},{:.6},{:.4},{:.4},{:.4},{:.6},{},{},{},{:.6e},{:.6e},{:.6e},{:.6e},{:.9e},{:.6e},{}\n",
            self.step,
            self.t,
            self.dt,
            self.kinetic,
            self.potential,
            self.max_speed,
            self.density_min,
            self.density_mean,
            self.density_max,
            self.front,
            self.outside,
            self.iterations_v,
            self.iterations_d,
            self.residual_v,
            self.residual_d,
            self.density_error_mean,
            self.density_error_max,
            self.eos_energy,
            self.obstacle_power,
            self.particles
        )
    }
}

/// Where and how often frames are written.
#[derive(Clone, Debug)]
pub struct Export {
    /// Directory of `frame_NNNNNN.ply` files.
    pub dir: PathBuf,
    /// Every how many steps.
    pub every: u64,
}

/// Surface meshes written during a run.
pub struct Surfaces {
    /// The reconstruction thread.
    pub writer: crate::surface::SurfaceWriter,
    /// Every how many steps.
    pub every: u64,
}

/// What a run writes besides its result.
#[derive(Default)]
pub struct Outputs<'a> {
    /// One statistics row per step.
    pub stats: Option<&'a mut dyn Write>,
    /// Particle frames.
    pub export: Option<&'a Export>,
    /// Surface meshes.
    pub surfaces: Option<&'a mut Surfaces>,
    /// The run's description, written into every frame's PLY header.
    pub meta: Option<crate::surface::FrameMeta>,
    /// Checkpoints.
    pub checkpoints: Option<Checkpointing<'a>>,
}

/// Writes a snapshot in input order, with `meta` in a PLY header.
pub fn write_snapshot(
    path: &Path,
    s: &Snapshot,
    meta: Option<&crate::surface::FrameMeta>,
) -> Result<()> {
    let pos = s.state.to_input_order(&s.state.pos);
    let vel = s.state.to_input_order(&s.state.vel);
    let density = s.state.to_input_order(&s.density);
    let comments = meta.map(|m| m.comments()).unwrap_or_default();
    io::write_particles_with(path, &pos, &vel, &density, &comments)
}

impl Outputs<'_> {
    /// Whether step k writes a frame or a surface.
    fn wants_frame(&self, k: u64) -> bool {
        self.export.is_some_and(|ex| k % ex.every == 0)
            || self.surfaces.as_ref().is_some_and(|sf| k % sf.every == 0)
    }
}

fn write_frame(out: &mut Outputs<'_>, k: u64, snap: &Snapshot) -> Result<()> {
    if let Some(ex) = out.export.filter(|ex| k % ex.every == 0) {
        write_snapshot(
            &ex.dir.join(format!("frame_{k:06}.ply")),
            snap,
            out.meta.as_ref(),
        )?;
    }
    if let Some(sf) = out.surfaces.as_deref_mut().filter(|sf| k % sf.every == 0) {
        sf.writer
            .submit(k, snap.state.to_input_order(&snap.state.pos))?;
    }
    Ok(())
}

pub use crate::core::RunFrom;

/// Checkpoints written during a run: every `every` steps (0: never on a schedule) and when
/// `stop` holds a signal number (SIGINT, SIGTERM), after which the run ends.
pub struct Checkpointing<'a> {
    /// The directory the files go to.
    pub dir: PathBuf,
    /// Every how many steps (counted from the run's first step, resumed or not).
    pub every: u64,
    /// What every checkpoint shares: the run's description and parameters.
    pub template: &'a crate::checkpoint::Template,
    /// Set to a signal's number by its handler.
    pub stop: Option<&'a std::sync::atomic::AtomicUsize>,
}

impl Checkpointing<'_> {
    fn stop_signal(&self) -> Option<usize> {
        self.stop
            .map(|s| s.load(std::sync::atomic::Ordering::SeqCst))
            .filter(|&s| s != 0)
    }
}

fn signal_name(signal: usize) -> String {
    match signal as i32 {
        signal_hook::consts::SIGINT => "SIGINT".into(),
        signal_hook::consts::SIGTERM => "SIGTERM".into(),
        s => format!("signal {s}"),
    }
}

/// Runs `steps` steps from `start` (the state the backend holds), checking every step from
/// its statistics block; writes stats rows, frames, surfaces and checkpoints if asked. The
/// state is read back only for a frame or a checkpoint, and at the end when `want_final` (for
/// `--output`); otherwise the next step runs while the host reads the last one's block. Step
/// numbers (rows, frames, checkpoints) continue from `from`. Returns the final snapshot (if
/// read) and the last statistics. A signal ends the run after the step under way, with a
/// checkpoint, as [`Error::Interrupted`]; an error after a checkpoint names it.
#[allow(clippy::too_many_arguments)]
pub fn run(
    backend: &mut dyn Backend,
    start: &Particles,
    fp: &FluidParams,
    guards: &Guards,
    from: &RunFrom,
    until: Until,
    want_final: bool,
    emitters: &Emitters,
    mut out: Outputs<'_>,
    progress: &indicatif::ProgressBar,
) -> Result<(Option<Snapshot>, Option<StepStats>)> {
    check_start(start, fp)?;
    if from.step == 0 && out.wants_frame(0) {
        write_frame(&mut out, 0, &backend.snapshot()?)?;
    }
    let mut latest: Option<PathBuf> = None;
    let result = run_steps(
        backend,
        fp,
        guards,
        from,
        until,
        want_final,
        emitters,
        &mut out,
        progress,
        &mut latest,
    );
    let resume = |p: &Option<PathBuf>| match p {
        Some(p) => format!(
            "continue from the last checkpoint with --resume {}",
            p.display()
        ),
        None => "no checkpoint was written yet (--checkpoint-every K writes them)".into(),
    };
    match result {
        Err(Error::Unstable(m)) => Err(Error::Unstable(match &latest {
            Some(p) => format!(
                "{m} (the last checkpoint, {}, holds the run before it diverged)",
                p.display()
            ),
            None => m,
        })),
        // Faults outside the simulation end a run under way with exit 1 and where to go on.
        Err(
            e @ (Error::DeviceLost(_)
            | Error::OutOfMemory(_)
            | Error::Validation(_)
            | Error::Map(_)
            | Error::Device(_)),
        ) => Err(Error::RunFailed(format!("{e}; {}", resume(&latest)))),
        r => r,
    }
}

/// Adds the particles `emitters` release in (before, t] to `backend`; returns the energy
/// they bring in and how many.
fn emit(
    backend: &mut dyn Backend,
    emitters: &Emitters,
    fp: &FluidParams,
    before: Option<f64>,
    t: f64,
) -> Result<(f64, u64)> {
    let batch = emitters.between(before, t, |p| backend.probe(p))?;
    if batch.is_empty() {
        return Ok((0.0, 0));
    }
    backend.append(&batch)?;
    Ok((
        batch.energy(fp.mass, fp.gravity[1], fp.tank_min[1]),
        batch.pos.len() as u64,
    ))
}

/// When a run ends: after `steps` steps, or after the first step that reaches simulated time
/// `time` (s), whichever comes first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Until {
    /// Steps to run (from the start or the resumed step).
    pub steps: u64,
    /// Simulated time to reach, s.
    pub time: Option<f64>,
}

impl Until {
    /// `steps` steps, whatever time they reach.
    pub fn steps(steps: u64) -> Self {
        Self { steps, time: None }
    }
}

#[allow(clippy::too_many_arguments)]
fn run_steps(
    backend: &mut dyn Backend,
    fp: &FluidParams,
    guards: &Guards,
    from: &RunFrom,
    until: Until,
    want_final: bool,
    emitters: &Emitters,
    out: &mut Outputs<'_>,
    progress: &indicatif::ProgressBar,
    latest: &mut Option<PathBuf>,
) -> Result<(Option<Snapshot>, Option<StepStats>)> {
    let mut t = from.t;
    let mut last = None;
    let mut snap = None;
    let mut start_energy = from.start_energy;
    let mut work = from.obstacle_work;
    let mut emitted = from.emitted_energy;
    let mut removed = from.removed_energy;
    let steps = until.steps;
    // A moving obstacle's pose needs the time each step starts at, known only once the step
    // before has been read, and an end time is known to be reached only then; emitters add
    // particles at that time: then steps run one at a time.
    // Particles leaving through an open side are removed before the next step.
    let one_at_a_time = backend.obstacles_move() || until.time.is_some() || fp.open != 0;
    // A state at time t holds every layer that left by t (`crate::emitter`): a fresh run
    // emits those of t = 0 first (their energy is in the first step's, the reference); a
    // resumed one has them.
    if from.step == 0 && steps > 0 {
        emit(backend, emitters, fp, None, t)?;
    }
    if steps > 0 {
        backend.place_obstacles(t);
        backend.submit()?;
    }
    for i in 1..=steps {
        let k = from.step + i;
        let ck = out.checkpoints.as_ref();
        let stop = ck.and_then(Checkpointing::stop_signal);
        let due = ck.is_some_and(|c| c.every > 0 && k % c.every == 0) || stop.is_some();
        let needs_state = out.wants_frame(k) || (i == steps && want_final) || due;
        // Step k + 1 runs while step k's block is read, unless step k's state is wanted or
        // emitters may add particles at its end.
        let pipelined = !needs_state && !one_at_a_time && !emitters.active_after(t);
        if i < steps && pipelined {
            backend.submit()?;
        }
        let block = backend.read_stats()?;
        let t_before = t;
        t += block.dt as f64;
        let st = step_stats(&block, fp, k, t)?;
        if let Some(o) = out.stats.as_deref_mut() {
            o.write_all(st.csv_line().as_bytes())
                .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
        }
        // After the row, so the stats file shows the step that diverged.
        // The first step's work is in its own energy, which the check starts from.
        let first = start_energy.is_none();
        let e0 = *start_energy.get_or_insert_with(|| total_energy(&block, fp, guards.wcsph));
        if !first {
            work += block.power as f64 * block.dt as f64;
        }
        guards.check(&block, e0 + emitted - removed, work, fp, k, t)?;
        last = Some(st);
        let mut live = block.n as u64;
        if fp.open != 0 && block.outside > 0 {
            let (gone, energy) = backend.remove_outside()?;
            removed += energy;
            live -= gone;
        }
        if !pipelined {
            let (energy, added) = emit(backend, emitters, fp, Some(t_before), t)?;
            emitted += energy;
            live += added;
        }
        progress.inc(1);
        // Every particle left through the open sides (and no emitter added one): nothing is
        // left to step; the run ends here (its last row shows them all outside).
        if live == 0 {
            if want_final {
                snap = Some(Snapshot {
                    state: Particles::default(),
                    density: Vec::new(),
                    dt: block.dt,
                    dfsph: None,
                });
            }
            break;
        }
        let reached = until.time.is_some_and(|end| t >= end);
        if let Some(end) = until.time {
            progress.set_message(format!("t = {t:.4} of {end} s"));
        }
        if needs_state {
            let s = backend.snapshot()?;
            write_frame(out, k, &s)?;
            if let Some(c) = out.checkpoints.as_ref().filter(|_| due) {
                let at = RunFrom {
                    step: k,
                    t,
                    start_energy,
                    obstacle_work: work,
                    emitted_energy: emitted,
                    removed_energy: removed,
                };
                let path = c
                    .template
                    .at(s.clone(), backend.carry()?, &at)
                    .write(&c.dir)?;
                *latest = Some(path.clone());
                if let Some(signal) = stop {
                    if let Some(o) = out.stats.as_deref_mut() {
                        o.flush()
                            .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
                    }
                    return Err(Error::Interrupted {
                        message: format!(
                            "{} after step {k} (t = {t:.6} s): wrote {}; continue with --resume {}",
                            signal_name(signal),
                            path.display(),
                            path.display()
                        ),
                        signal: signal as i32,
                    });
                }
            }
            snap = Some(s);
        }
        if reached {
            if want_final && !needs_state {
                snap = Some(backend.snapshot()?);
            }
            break;
        }
        if i < steps && !pipelined {
            backend.place_obstacles(t);
            backend.submit()?;
        }
    }
    if want_final && snap.is_none() {
        snap = Some(backend.snapshot()?);
    }
    Ok((snap, last))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{PhysicsConfig, SphConfig};

    fn fp() -> FluidParams {
        let cfg = SphConfig::new(2, Default::default()).unwrap();
        PhysicsConfig::default()
            .fluid_params(&cfg, glam::Vec3::ZERO, glam::Vec3::ONE, 0.5)
            .unwrap()
    }

    fn block(rho_max: f32, speed: f32, dt: f32) -> StatsBlock {
        StatsBlock {
            maxima: [speed * speed, rho_max, 0.5, 0.0],
            dt,
            n: 1,
            density_max_id: 7,
            speed_max_id: 9,
            ..Default::default()
        }
    }

    #[test]
    fn guards_name_the_quantity_and_the_particle() {
        let (g, fp) = (Guards::default(), fp());
        let ok = block(1000.0, 0.1, 1e-4);
        assert!(g.check(&ok, 0.0, 0.0, &fp, 1, 0.0).is_ok());
        let dense = block(2100.0, 0.1, 1e-4);
        let e = g
            .check(&dense, 0.0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("density") && e.contains("particle 7"), "{e}");
        // Above the bound at the first step too.
        assert!(g.check(&dense, 0.0, 0.0, &fp, 1, 0.0).is_err());
        let fast = block(1000.0, 0.6 * fp.sound_speed, 1e-4);
        let e = g
            .check(&fast, 0.0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("speed") && e.contains("particle 9"), "{e}");
        let dfsph = Guards { wcsph: false, ..g };
        assert!(dfsph.check(&fast, 0.0, 0.0, &fp, 2, 0.0).is_ok());
        let tiny = block(1000.0, 0.1, 1e-6);
        let e = g
            .check(&tiny, 0.0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--dt-min"), "{e}");
        let fixed = Guards {
            fixed_dt: true,
            ..g
        };
        assert!(fixed.check(&tiny, 0.0, 0.0, &fp, 2, 0.0).is_ok());
    }

    #[test]
    fn an_energy_gain_beyond_the_margin_stops_the_run() {
        let (g, fp) = (Guards::default(), fp());
        let at = |v2: f32, y: f32, eos: f32| StatsBlock {
            sums: [v2, y, 0.0, 0.0],
            eos,
            ..block(1000.0, 0.1, 1e-4)
        };
        let start = at(0.0, 1.0, 0.0);
        let e0 = total_energy(&start, &fp, true);
        // Potential m g · 1 turned into kinetic ½ m Σv², 4% more: within the margin.
        let moving = at(2.0 * 9.81 * 1.04, 0.0, 0.0);
        assert!(g.check(&moving, e0, 0.0, &fp, 2, 0.0).is_ok());
        let gained = at(2.0 * 9.81 * 1.06, 0.0, 0.0);
        let e = g
            .check(&gained, e0, 0.0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("energy") && e.contains("--energy-margin"), "{e}");
        // A compressed start's stored energy counts for WCSPH: released, it is no gain.
        let eos0 = (0.06 * fp.rest_density as f64 * 9.81 / fp.stiffness as f64) as f32;
        let compressed = at(0.0, 1.0, eos0);
        let e0 = total_energy(&compressed, &fp, true);
        assert!(g.check(&gained, e0, 0.0, &fp, 2, 0.0).is_ok());
        let off = Guards {
            energy_margin: 0.0,
            ..g
        };
        let e0 = total_energy(&start, &fp, true);
        assert!(off.check(&gained, e0, 0.0, &fp, 2, 0.0).is_ok());
        // The same gain done by a moving obstacle (6% of e0 as work) is no divergence.
        assert!(g.check(&gained, e0, 0.06 * e0, &fp, 2, 0.0).is_ok());
        let e = g
            .check(&gained, e0, 0.005 * e0, &fp, 2, 0.0)
            .unwrap_err()
            .to_string();
        assert!(e.contains("less the moving obstacles' work"), "{e}");
    }
}
