//! DFSPH's and WCSPH's side of the solver interface ([`crate::solver`]): the CPU path's
//! stepper ([`CpuDfsph`], which chains [`super::dfsph_step_with`]) and the GPU path's
//! ([`GpuDfsph`]'s passes chained into a step, with the iteration budget the host keeps).

use std::any::Any;
use std::collections::VecDeque;

use super::gpu::GpuDfsph;
use super::{DensityAlpha, DfsphCarry, Solve, SolverStats};
use crate::Result;
use crate::boundary::Boundary;
use crate::core::{Particles, Snapshot, StatsBlock};
use crate::cpu::interact::InteractParams;
use crate::gpu::buffers::GpuFluid;
use crate::gpu::context::Pending;
use crate::gpu::stats::{Read, SolveInputs};
use crate::grid::Grid;
use crate::grid::gpu::GpuNeighbours;
use crate::params::{CoarseParams, DfsphParams, FluidParams, SimParams};
use crate::solver::SolverParams;
use crate::solver::{Carry, CpuSolver, GpuSolver};

/// The stages on the CPU path: their parameters (either solver's), the carried state, and the
/// grid, slot-order state, ρ and α of the current state.
pub struct CpuDfsph {
    dp: DfsphParams,
    /// The last dt and the iteration counts.
    carry: DfsphCarry,
    /// The grid, slot-order state, ρ and α of the current state, which the last step computed
    /// (`None` when the state changed since).
    start: Option<(Grid, Particles, DensityAlpha)>,
}

impl CpuDfsph {
    /// `solver`, with the carried state a checkpoint held (a fresh run's: [`Carry::default`]).
    pub fn new(solver: &SolverParams, carry: &Carry) -> std::result::Result<Self, String> {
        let dp = *solver.stages();
        Ok(Self {
            dp,
            carry: DfsphCarry::from_carry(carry, &dp)?,
            start: None,
        })
    }
}

impl CpuSolver for CpuDfsph {
    fn name(&self) -> &'static str {
        SolverParams::of_stages(self.dp).solver().name()
    }

    fn step(
        &mut self,
        snap: &Snapshot,
        obstacles: Option<&Boundary>,
        interaction: Option<&InteractParams>,
        sp: &SimParams,
        fp: &FluidParams,
    ) -> (Snapshot, Vec<f32>) {
        let tr = super::dfsph_step_with(
            false,
            &snap.state,
            &self.carry,
            self.start.take(),
            obstacles,
            interaction,
            sp,
            fp,
            &self.dp,
        );
        self.carry = tr.carry;
        // The GPU holds the new state in the new grid's slot order; so does this.
        let next = Snapshot {
            state: tr.next_sorted.clone(),
            density: tr.end.density.clone(),
            dt: tr.stats.dt,
            solver: Some(tr.stats),
        };
        self.start = Some((tr.next_grid, tr.next_sorted, tr.end));
        (next, tr.power)
    }

    fn restart(&mut self) {
        self.start = None;
    }

    // As the GPU, the grid, ρ and α of the new state are computed at once, and held in slot
    // order.
    fn settle(
        &mut self,
        snap: &mut Snapshot,
        obstacles: Option<&Boundary>,
        sp: &SimParams,
        fp: &FluidParams,
    ) {
        let (grid, sorted, da) = super::prepare(&snap.state, obstacles, sp, fp, &self.dp);
        snap.state = sorted.clone();
        snap.density = da.density.clone();
        self.start = Some((grid, sorted, da));
    }

    fn carry(&self) -> Carry {
        self.carry.to_carry()
    }
}

/// How a run builds DFSPH ([`crate::solver::builders`]).
pub static DFSPH: crate::solver::Builders = crate::solver::Builders {
    summary: dfsph_summary,
    // Its pressure does no reversible work and it has no sound speed.
    weakly_compressible: false,
    ..WCSPH
};

/// How a run builds WCSPH: DFSPH's stages and their carried state, no solve to summarise.
pub static WCSPH: crate::solver::Builders = crate::solver::Builders {
    cpu: |solver, carry| Ok(Box::new(CpuDfsph::new(solver, carry)?)),
    gpu: |solver, grid, fluid, sp, fp| Ok(Box::new(gpu(solver, grid, fluid, sp, fp)?)),
    check_carry,
    summary: |_| None,
    weakly_compressible: true,
};

/// Whether `solver`'s block is its own (WCSPH's with the equation of state, DFSPH's without)
/// and `carry` reads as the family's carried state.
fn check_carry(solver: &SolverParams, carry: &Carry) -> std::result::Result<(), String> {
    let dp = solver.stages();
    if SolverParams::of_stages(*dp).solver() != solver.solver() {
        return Err(format!(
            "the solver is {} but its parameters are the other solver's",
            solver.solver().name()
        ));
    }
    super::DfsphCarry::from_carry(carry, dp).map(|_| ())
}

/// The summary's line of a DFSPH run: its last step's solves (iterations and residuals) and
/// density error.
fn dfsph_summary(st: &crate::run::StepStats) -> Option<String> {
    Some(format!(
        "DFSPH last step: {} + {} iterations (residuals {:.3e}, {:.3e}), density error mean {:.3e} max {:.3e}",
        st.iterations_v,
        st.iterations_d,
        st.residual_v,
        st.residual_d,
        st.density_error_mean,
        st.density_error_max
    ))
}

/// The stages' passes for `solver`, beside `grid`'s and `fluid`'s.
pub fn gpu(
    solver: &SolverParams,
    grid: &GpuNeighbours,
    fluid: &GpuFluid,
    sp: &SimParams,
    fp: &FluidParams,
) -> Result<GpuDfsph> {
    let dp = solver.stages();
    GpuDfsph::new(
        &grid.ctx,
        grid,
        &fluid.params,
        &fluid.accel,
        &fluid.step_state,
        &fluid.obstacle_power,
        dp,
        &CoarseParams::new(fp, sp.kernel_kind(), sp.h, dp.spacing, fp.mass, sp.dim()),
        fp,
    )
}

impl GpuDfsph {
    /// The caps of the step being encoded, from the counts of the steps from two before back
    /// ([`IterationBudget`](super::IterationBudget)), which the host has read unless more than
    /// one step is in flight; records them for the step's statistics block.
    fn next_caps(&self) -> [u32; 2] {
        let mut b = self.host.budget.borrow_mut();
        let (read, pending) = &mut *b;
        let caps = match pending.len() {
            _ if self.dp.is_wcsph() => [0; 2],
            0 => self.caps(read),
            // The step before is in flight: the newest read is the one two before.
            1 => self.caps_ahead(read),
            // `step` and the driver keep at most one unread step ahead of an encode; were
            // there more, the full count keeps the solve uncapped.
            _ => [self.dp.max_iterations; 2],
        };
        pending.push_back(caps);
        self.host.last_caps.set(caps);
        caps
    }

    /// Completes a statistics block read back: the host builds the solver's block from the
    /// density error's blocks and the solves' totals of a step that had `caps`
    /// ([`super::dfsph_stats`], as the CPU path builds its own).
    pub fn finish(&self, r: Read, caps: [u32; 2]) -> StatsBlock {
        let mut block = r.block;
        if let Some(raw) = &r.solve {
            let totals: [Vec<super::Total>; 2] = raw
                .totals
                .each_ref()
                .map(|t| t.iter().map(|&w| super::Total::from_words(w)).collect());
            // WCSPH ran no solve: no totals to replay, as on the CPU.
            let totals = match self.dp.is_wcsph() {
                true => [&[][..]; 2],
                false => [&totals[0][..], &totals[1][..]],
            };
            let st = super::dfsph_stats(
                &raw.error_sums,
                &raw.error_maxima,
                totals,
                caps,
                block.n,
                &self.dp,
                r.step_state[0],
                r.step_state[1],
            );
            block.solver = st.to_words();
            self.host.last_stats.set(st);
        }
        block
    }

    /// Records the counts of the oldest unread step, which had `caps`, from its statistics
    /// block.
    fn record_counts(&self, caps: [u32; 2], block: &StatsBlock) {
        let st = SolverStats::from_words(&block.solver);
        let unrun =
            caps[0].saturating_sub(st.iterations_v) + caps[1].saturating_sub(st.iterations_d);
        self.host
            .idle
            .set(self.host.idle.get() + 2 * u64::from(unrun));
        self.host.budget.borrow_mut().0.push_step(caps, &st);
    }
}

impl GpuSolver for GpuDfsph {
    fn name(&self) -> &'static str {
        SolverParams::of_stages(self.dp).solver().name()
    }

    fn weakly_compressible(&self) -> bool {
        SolverParams::of_stages(self.dp).weakly_compressible()
    }

    fn density(&self) -> &wgpu::Buffer {
        &self.rho
    }

    fn stats_inputs(&self) -> Option<SolveInputs<'_>> {
        Some(SolveInputs {
            error_sums: &self.error_sums,
            error_maxima: &self.error_maxima,
            totals: &self.totals,
            // WCSPH runs no solve: no totals to read back.
            slots: match self.dp.is_wcsph() {
                true => 0,
                false => self.dp.max_iterations + 1,
            },
        })
    }

    fn boundary_layout(&self) -> &wgpu::BindGroupLayout {
        &self.boundary_layout
    }

    fn set_boundary(&mut self, d: &wgpu::Device, bg: Option<wgpu::BindGroup>) {
        GpuDfsph::set_boundary(self, d, bg);
        self.host.primed.set(false);
    }

    fn set_fluid_params(&mut self, d: &wgpu::Device, fp: &FluidParams) {
        GpuDfsph::set_fluid_params(self, d, fp);
    }

    fn set_live(&self, q: &wgpu::Queue, n: u32) {
        GpuDfsph::set_live(self, q, n);
    }

    fn restart(&self) {
        self.host.primed.set(false);
    }

    fn primed(&self) -> bool {
        self.host.primed.get()
    }

    fn set_carry(
        &self,
        q: &wgpu::Queue,
        fluid: &GpuFluid,
        carry: &Carry,
    ) -> std::result::Result<(), String> {
        let carry = DfsphCarry::from_carry(carry, &self.dp)?;
        *self.host.budget.borrow_mut() = (carry.budget, VecDeque::new());
        q.write_buffer(
            &fluid.step_state,
            0,
            bytemuck::cast_slice(&[carry.dt_prev, 0.0, 0.0, 0.0]),
        );
        self.host.primed.set(false);
        Ok(())
    }

    fn read_carry<'a>(&'a self, g: &'a GpuNeighbours, fluid: &'a GpuFluid) -> Pending<'a, Carry> {
        Box::pin(async move {
            let dt_prev = g.read_f32_async(&fluid.step_state, 4).await?[0];
            Ok(DfsphCarry {
                dt_prev,
                budget: self.host.budget.borrow().0,
            }
            .to_carry())
        })
    }

    fn encode_prime(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        if !self.host.primed.get() {
            g.encode_build(e);
            self.encode_density(g, e);
            self.host.primed.set(true);
        }
    }

    /// One DFSPH step ([`super`] lists the stages; WCSPH's, the same stages without the
    /// solves, `dfsph_eos` and one pressure pass in place of the second): divergence-free
    /// solve, non-pressure accelerations (and the driver's forces), time step, predicted
    /// velocities in up to K viscous substeps (those past the step's count dispatch nothing),
    /// constant-density solve, positions; then the grid, ρ and α at the new positions.
    fn encode_step(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        forces: &dyn Fn(&mut wgpu::CommandEncoder),
    ) {
        let caps = self.next_caps();
        self.encode_prime(g, e);
        let wcsph = self.dp.is_wcsph();
        if wcsph {
            self.encode_wcsph_start(e);
        } else {
            self.encode_levels(g, e);
            self.encode_solve(g, e, Solve::Divergence, caps[0]);
        }
        self.encode_accel(g, e);
        forces(e);
        self.encode_timestep(g, e);
        self.encode_predict(g, e);
        for k in 2..=self.dp.viscous_substeps {
            self.encode_substep_accel(g, e, k);
            forces(e);
            self.encode_substep_predict(g, e, k);
        }
        if wcsph {
            self.encode_wcsph_pressure(g, e);
        } else {
            self.encode_solve(g, e, Solve::Density, caps[1]);
        }
        self.encode_integrate(g, e);
        g.encode_build(e);
        self.encode_density(g, e);
        self.host.primed.set(true);
    }

    fn read_block(&self, r: Read) -> StatsBlock {
        let caps = self.host.budget.borrow_mut().1.pop_front();
        let block = self.finish(r, caps.unwrap_or_default());
        if let Some(caps) = caps {
            self.record_counts(caps, &block);
        }
        block
    }

    fn block_now(&self, r: Read) -> StatsBlock {
        self.finish(r, self.host.last_caps.get())
    }

    fn last_stats(&self) -> SolverStats {
        self.host.last_stats.get()
    }

    fn idle_dispatches(&self) -> u64 {
        self.host.idle.get()
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}
