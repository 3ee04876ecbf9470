//! The DFSPH passes on the GPU (the `dfsph_*` stages; CPU mirror [`crate::solver::dfsph`]), with
//! their buffers. A step's coarse levels are assembled once after its density
//! (`dfsph_galerkin`, `dfsph_levels`); a solve is encoded as rate, then pressure → rate for
//! each of the iterations the step may run, two walking dispatches an iteration, and after the
//! rate pass of every even one the coarse correction (`dfsph_restrict`, `dfsph_coarse`,
//! `dfsph_prolong`): each rate pass adds its residuals to an integer total, and every
//! invocation of the next passes decides from that total whether they run (`solve_again`), so
//! the decision stays on the GPU and nothing is read back per iteration. How many iterations a step encodes comes from the counts of
//! the steps from two before back ([`IterationBudget`]), which the host has read by then; the
//! CPU path caps its solves by the same rule.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use wgpu::util::DeviceExt;

use crate::core::Stage;
use crate::gpu::context::GpuContext;
use crate::grid::gpu::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline_groups,
    pipeline_specialised, storage_buffer,
};
use crate::params::{CoarseParams, DfsphParams, FluidParams, SolveParams};
use crate::solver::dfsph::{IterationBudget, Solve, SolverStats};
use crate::{Result, shaders};

/// One solve's bind groups, uniform block and stiffness sums.
pub struct SolveGroups {
    /// Its `SolveParams` (rewritten when the live count changes: the threshold follows N).
    params: wgpu::Buffer,
    pressure: wgpu::BindGroup,
    rate: wgpu::BindGroup,
    restrict: wgpu::BindGroup,
    coarse: wgpu::BindGroup,
    prolong: wgpu::BindGroup,
}

/// The solves' per-particle fields in one buffer (`solve_fields`,
/// shaders/solver/dfsph/dfsph_fields.wgsl), so that no stage binds more than the 10 storage
/// buffers a browser's WebGPU offers: the stiffness increments κ of the next velocity update,
/// each particle's residual e from the last rate pass, then Σ κ the divergence-free and the
/// constant-density solve applied per particle this step (each cleared at its solve's start),
/// `capacity` f32 each. The methods give each field's byte offset.
pub struct SolveFields {
    /// The buffer, 4 × capacity f32.
    pub buffer: wgpu::Buffer,
    capacity: u64,
}

impl SolveFields {
    fn new(d: &wgpu::Device, capacity: u32) -> Self {
        let capacity = u64::from(capacity);
        Self {
            buffer: storage_buffer(d, "sph.dfsph_solve_fields", 4 * capacity * 4),
            capacity,
        }
    }

    /// Bytes of one field.
    pub fn bytes(&self) -> u64 {
        self.capacity * 4
    }

    /// Where κ starts.
    pub fn kappa(&self) -> u64 {
        0
    }

    /// Where the residuals start.
    pub fn residual(&self) -> u64 {
        self.bytes()
    }

    /// Where solve `s`'s Σ κ starts.
    pub fn kappa_sum(&self, s: Solve) -> u64 {
        (2 + solve_index(s) as u64) * self.bytes()
    }
}

/// Bytes of one solve iteration's residual total: (low, high, NaN flag, 0).
const TOTAL_BYTES: u64 = 16;

/// What the host keeps of a DFSPH run on the GPU between steps, beside its buffers.
#[derive(Debug, Default)]
pub struct HostState {
    /// Whether the grid, ρ and α of the current state are on the GPU (a step ends by computing
    /// them at its new positions, for its density error and for the next step).
    pub primed: Cell<bool>,
    /// The iteration counts of the last steps read ([`IterationBudget`]) and the caps of the
    /// steps submitted but not yet read, oldest first.
    pub budget: RefCell<(IterationBudget, VecDeque<[u32; 2]>)>,
    /// Dispatches of the steps read so far whose iteration the solve did not run (they launch
    /// and exit at once), for `--bench`.
    pub idle: Cell<u64>,
    /// The caps of the last step encoded.
    pub last_caps: Cell<[u32; 2]>,
    /// The block the host built for the last step read.
    pub last_stats: Cell<SolverStats>,
}

/// The DFSPH kernels and their buffers, for one N.
pub struct GpuDfsph {
    /// The host's side of the run: whether the grid is primed, the iteration budget, the last
    /// caps and statistics.
    pub host: HostState,
    /// The pipelines and bind groups of every pass but the solves' groups.
    passes: Passes,
    /// The coarse grid and its solve's settings.
    pub cp: CoarseParams,
    /// Level 0's stored half-rows (`dfsph_galerkin`, fixed point: 28 words a cell), then the
    /// count of the pressure's anchors.
    pub coarse_op: wgpu::Buffer,
    /// Every level's rows (`dfsph_levels`, 27 f32 a cell).
    pub coarse_rows: wgpu::Buffer,
    /// The restricted residual (`dfsph_restrict`, fixed point: 2 words a level-0 cell).
    pub coarse_rhs: wgpu::Buffer,
    /// `dfsph_coarse`'s solution (its first level-0-cells f32) and scratch.
    pub coarse_work: wgpu::Buffer,
    /// κ, the residuals and each solve's Σ κ per particle.
    pub fields: SolveFields,
    /// Workgroups of `dfsph_timestep_blocks` (`grid::gpu::timestep_blocks`).
    step_blocks: u32,
    // The time step's maxima (v_max, S_max, WCSPH's signal speed bits, 0), folded by `dfsph_timestep_blocks`
    // and read by `dfsph_predict_first`; cleared before each fold.
    timestep_maxima: wgpu::Buffer,
    /// The two solves' bind groups and stiffness sums (divergence, density).
    pub solves: [SolveGroups; 2],
    /// The uniform block.
    pub params: wgpu::Buffer,
    /// The parameters it holds (`blocks` for the capacity).
    pub dp: DfsphParams,
    // ⌈live N / 256⌉, which the uniform block holds and the direct dispatches use.
    live_blocks: std::cell::Cell<u32>,
    /// Layout of bind group 1 of the walks that see obstacles (density, rate, pressure).
    pub boundary_layout: wgpu::BindGroupLayout,
    // Bind group 1 of those walks: the obstacles' boundary grid, or an empty one.
    boundary_bg: wgpu::BindGroup,
    // The empty one's buffers.
    _no_boundary: Vec<wgpu::Buffer>,
    // The power moving obstacles put in per particle, which `dfsph_pressure` accumulates
    // over the step's iterations (the fluid's `obstacle_power`), when there are obstacles.
    power: Option<wgpu::Buffer>,
    obstacle_power: wgpu::Buffer,
    /// ρ per particle, slot order (N).
    pub rho: wgpu::Buffer,
    /// α per particle (N).
    pub alpha: wgpu::Buffer,
    /// Density error block sums and maxima (⌈N/256⌉ each).
    pub error_sums: wgpu::Buffer,
    /// See `error_sums`.
    pub error_maxima: wgpu::Buffer,
    /// Each rate pass's residual total, (low, high, NaN flag, 0) per iteration k = 0 …
    /// max_iterations of the divergence solve, then of the density solve.
    pub totals: wgpu::Buffer,
    // Entry k (at k × iteration_stride) holds `Iteration { index: k }`, k = 0 … max_iterations;
    // bound with a dynamic offset as the last bind group of the solves' passes.
    iteration_bg: wgpu::BindGroup,
    _iterations: wgpu::Buffer,
    iteration_stride: u32,
    /// The density error per particle (N), which `dfsph_blocks` reduces.
    pub density_error: wgpu::Buffer,
    /// The indirect arguments of viscous substeps 2..K that `dfsph_predict_first` writes, 8 words
    /// each: `dfsph_accel`'s (x, y, z), the substep count n, `dfsph_predict`'s (x, 1, 1), 0.
    pub substep_args: wgpu::Buffer,
}

/// Bytes of one substep's entry in `substep_args`.
const SUBSTEP_ARGS_BYTES: u64 = 32;

// Where substep k's (2..=K) arguments start in `substep_args`.
fn substep_offset(k: u32) -> u64 {
    SUBSTEP_ARGS_BYTES * u64::from(k - 2)
}

/// The uniform block of solve `which` (0 divergence, 1 density) over `n` live particles: its
/// fewest iterations, its threshold ([`crate::solver::dfsph::threshold`]) and the capacity of
/// the solves' fields.
fn solve_params(which: u32, dp: &DfsphParams, n: u32, capacity: u32) -> SolveParams {
    let i = which.min(1) as usize;
    let thr = crate::solver::dfsph::threshold([dp.eta_v, dp.eta_d][i], n);
    SolveParams {
        which,
        min_iterations: crate::solver::dfsph::MIN_ITERATIONS[i],
        threshold_lo: thr as u32,
        threshold_hi: (thr >> 32) as u32,
        capacity,
        _pad: [0; 3],
    }
}

fn solve_index(s: Solve) -> usize {
    match s {
        Solve::Divergence => 0,
        Solve::Density => 1,
    }
}

impl GpuDfsph {
    /// Compiles the DFSPH kernels and allocates their buffers next to `grid`'s; `accel` and
    /// `step_state` are the fluid passes' (the mouse force adds to the same accelerations),
    /// `cp` the coarse levels' grid.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        ctx: &GpuContext,
        grid: &GpuNeighbours,
        fluid_params: &wgpu::Buffer,
        accel: &wgpu::Buffer,
        step_state: &wgpu::Buffer,
        obstacle_power: &wgpu::Buffer,
        dp: &DfsphParams,
        cp: &CoarseParams,
        fp: &FluidParams,
    ) -> Result<Self> {
        let run = RunBuffers {
            b: &grid.bufs,
            fluid: fluid_params,
            accel,
            step_state,
            obstacle_power,
            fp,
            wcsph: dp.is_wcsph(),
        };
        ctx.scoped(|| {
            let d = &ctx.device;
            let o = Owned::new(ctx, grid, dp, cp);
            let solves = [Solve::Divergence, Solve::Density];
            let solve_bindings = solves.map(|s| solve_bindings(d, &run, &o, dp, s));
            let solve_l = solve_bindings[0].layouts(d);
            let boundary_layout = crate::gpu::obstacles::boundary_layout(d);
            let (boundary_bg, no_boundary) =
                crate::gpu::obstacles::no_boundary(d, &boundary_layout);
            let passes = Passes::new(ctx, grid, &run, &o, &solve_l, &boundary_layout);
            let [div, den] = solve_bindings;
            Self {
                host: HostState::default(),
                passes,
                step_blocks: crate::grid::gpu::timestep_blocks(
                    grid.bufs.capacity,
                    ctx.info.device_type,
                ),
                solves: [div.groups(d, &solve_l), den.groups(d, &solve_l)],
                dp: *dp,
                live_blocks: std::cell::Cell::new(dp.blocks),
                boundary_bg,
                _no_boundary: no_boundary,
                boundary_layout,
                power: None,
                obstacle_power: obstacle_power.clone(),
                cp: *cp,
                params: o.params,
                rho: o.rho,
                alpha: o.alpha,
                coarse_op: o.coarse_op,
                coarse_rows: o.coarse_rows,
                coarse_rhs: o.coarse_rhs,
                coarse_work: o.coarse_work,
                fields: o.fields,
                error_sums: o.error_sums,
                error_maxima: o.error_maxima,
                totals: o.totals,
                iteration_bg: o.iteration_bg,
                _iterations: o.iterations,
                iteration_stride: o.stride,
                density_error: o.density_error,
                substep_args: o.substep_args,
                timestep_maxima: o.timestep_maxima,
            }
        })
    }

    /// Makes the walks see the obstacles of bind group `bg` (laid out by `boundary_layout`;
    /// `None`: none).
    pub fn set_boundary(&mut self, d: &wgpu::Device, bg: Option<wgpu::BindGroup>) {
        self.power = bg.is_some().then(|| self.obstacle_power.clone());
        self.boundary_bg = match bg {
            Some(bg) => bg,
            None => {
                let (bg, buffers) = crate::gpu::obstacles::no_boundary(d, &self.boundary_layout);
                self._no_boundary = buffers;
                bg
            }
        };
    }

    /// Follows the run's fluid parameters `fp` (already on the GPU): rebuilds `dfsph_accel`'s
    /// pipeline when one of its terms turned on or off ([`accel_terms`]).
    pub fn set_fluid_params(&mut self, d: &wgpu::Device, fp: &FluidParams) {
        let terms = accel_terms(fp);
        if terms != self.passes.accel_terms {
            self.passes.accel = self.passes.accel_build.pipeline(d, &terms);
            self.passes.accel_terms = terms;
        }
    }

    /// Stage `dfsph_density` over the grid's slot-order positions.
    /// Then stage `dfsph_blocks` reduces the density error.
    pub fn encode_density(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphDensity,
            &self.passes.density,
            &[&self.passes.density_bg, &self.boundary_bg],
            &g.bufs.group_args,
            0,
        );
        g.dispatch(
            e,
            Stage::DfsphBlocks,
            &self.passes.blocks,
            &self.passes.density_blocks_bg,
            self.live_blocks.get(),
        );
    }

    /// Follows the live particle count `n` (see [`GpuNeighbours::set_live`]): the reductions
    /// fold ⌈n / 256⌉ blocks, as the CPU mirror's do, and the solves' thresholds follow n.
    pub fn set_live(&self, queue: &wgpu::Queue, n: u32) {
        let blocks = n.div_ceil(crate::params::REDUCE_BLOCK).max(1);
        if blocks != self.live_blocks.get() {
            self.live_blocks.set(blocks);
            let dp = DfsphParams { blocks, ..self.dp };
            queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&dp));
        }
        for (i, s) in self.solves.iter().enumerate() {
            let sp = solve_params(i as u32, &self.dp, n, self.fields.capacity as u32);
            queue.write_buffer(&s.params, 0, bytemuck::bytes_of(&sp));
        }
    }

    /// The dynamic offset of iteration entry `index`.
    fn iteration_offset(&self, index: u32) -> u32 {
        index * self.iteration_stride
    }

    /// A pass of `stage` with `pipe`, bind groups 0, 1, … from `bgs` and then the iteration
    /// entries `at` (indices), dispatched indirectly from the groups `order` listed (or
    /// over `workgroups`).
    #[allow(clippy::too_many_arguments)]
    fn dispatch_at(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        stage: Stage,
        pipe: &wgpu::ComputePipeline,
        bgs: &[&wgpu::BindGroup],
        at: &[u32],
        workgroups: Option<u32>,
    ) {
        let mut pass = g.pass(e, stage);
        pass.set_pipeline(pipe);
        for (k, bg) in bgs.iter().enumerate() {
            pass.set_bind_group(k as u32, *bg, &[]);
        }
        for (j, &index) in at.iter().enumerate() {
            pass.set_bind_group(
                (bgs.len() + j) as u32,
                &self.iteration_bg,
                &[self.iteration_offset(index)],
            );
        }
        match workgroups {
            Some(x) => pass.dispatch_workgroups(x, 1, 1),
            None => pass.dispatch_workgroups_indirect(&g.bufs.group_args, 0),
        }
    }

    /// Stages `dfsph_galerkin` and `dfsph_levels`: the step's coarse levels, from the grid,
    /// ρ and α of its start (the operator cleared first).
    pub fn encode_levels(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        e.clear_buffer(&self.coarse_op, 0, None);
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphGalerkin,
            &self.passes.galerkin,
            &[&self.passes.galerkin_bg, &self.boundary_bg],
            &g.bufs.group_args,
            0,
        );
        self.encode_levels_only(g, e);
    }

    /// Stage `dfsph_levels` alone, from the operator `coarse_op` holds.
    pub fn encode_levels_only(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch(
            e,
            Stage::DfsphLevels,
            &self.passes.levels,
            &self.passes.levels_bg,
            1,
        );
    }

    /// Stage `dfsph_pressure` of `solve` at iteration `k` ≥ 1, which runs only if the solve
    /// goes on after iteration k − 1.
    pub fn encode_pressure(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        solve: Solve,
        k: u32,
    ) {
        let s = &self.solves[solve_index(solve)];
        self.dispatch_at(
            g,
            e,
            Stage::DfsphPressure,
            &self.passes.pressure,
            &[&s.pressure, &self.boundary_bg],
            &[k],
            None,
        );
    }

    /// Stage `dfsph_rate` of `solve` at iteration `k`, which runs at k = 0 and where its
    /// pressure pass did, and adds its residuals to the total of k.
    pub fn encode_rate(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        solve: Solve,
        k: u32,
    ) {
        let s = &self.solves[solve_index(solve)];
        self.dispatch_at(
            g,
            e,
            Stage::DfsphRate,
            &self.passes.rate,
            &[&s.rate, &self.boundary_bg],
            &[k],
            None,
        );
    }

    /// Stages `dfsph_restrict`, `dfsph_coarse` and `dfsph_prolong` of `solve` after the rate
    /// pass of iteration `k`: the coarse correction, each pass running where the solve goes on
    /// after that rate pass (the residual on the cells cleared first).
    pub fn encode_correction(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        solve: Solve,
        k: u32,
    ) {
        let s = &self.solves[solve_index(solve)];
        let n = Some(groups(g.bufs.n.get(), WORKGROUP_SIZE));
        e.clear_buffer(&self.coarse_rhs, 0, None);
        self.dispatch_at(
            g,
            e,
            Stage::DfsphRestrict,
            &self.passes.restrict,
            &[&s.restrict],
            &[k],
            n,
        );
        self.dispatch_at(
            g,
            e,
            Stage::DfsphCoarse,
            &self.passes.coarse,
            &[&s.coarse],
            &[k],
            Some(1),
        );
        self.dispatch_at(
            g,
            e,
            Stage::DfsphProlong,
            &self.passes.prolong,
            &[&s.prolong],
            &[k],
            n,
        );
    }

    /// Clears the solve's totals and stiffness sums (and, for the divergence-free solve, the
    /// step's first, the power the pressure passes accumulate with obstacles) and runs its
    /// rate pass of iteration 0, on the velocities it starts from.
    pub fn encode_start(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, solve: Solve) {
        if let (Some(power), Solve::Divergence) = (&self.power, solve) {
            e.clear_buffer(power, 0, None);
        }
        let slots = u64::from(self.dp.max_iterations) + 1;
        let at = solve_index(solve) as u64 * slots * TOTAL_BYTES;
        e.clear_buffer(&self.totals, at, Some(slots * TOTAL_BYTES));
        let f = &self.fields;
        e.clear_buffer(&f.buffer, f.kappa_sum(solve), Some(f.bytes()));
        self.encode_rate(g, e, solve, 0);
    }

    /// A whole solve that may run `cap` iterations: its start, then pressure and rate for each
    /// iteration, with the coarse correction after the even rate passes before the cap
    /// (`corrects_after`); the passes after the solve has converged do nothing.
    pub fn encode_solve(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        solve: Solve,
        cap: u32,
    ) {
        let cap = cap.min(self.dp.max_iterations);
        self.encode_start(g, e, solve);
        for k in 0..=cap {
            if k > 0 {
                self.encode_pressure(g, e, solve, k);
                self.encode_rate(g, e, solve, k);
            }
            if k < cap && crate::solver::dfsph::corrects_after(k) {
                self.encode_correction(g, e, solve, k);
            }
        }
    }

    /// The caps a step encodes with `budget` (divergence, density; none for WCSPH).
    pub fn caps(&self, budget: &IterationBudget) -> [u32; 2] {
        crate::solver::dfsph::step_caps(budget, &self.dp)
    }

    /// The caps of the step after the next with `budget` (the next in flight).
    pub fn caps_ahead(&self, budget: &IterationBudget) -> [u32; 2] {
        match self.dp.is_wcsph() {
            true => [0; 2],
            false => {
                budget.caps_ahead(crate::solver::dfsph::MIN_ITERATIONS, self.dp.max_iterations)
            }
        }
    }

    /// WCSPH, at a step's start in place of the divergence-free solve's: clears the power the
    /// pressure pass accumulates with obstacles and both solves' totals, which the statistics
    /// then read as solves that ran no iteration.
    pub fn encode_wcsph_start(&self, e: &mut wgpu::CommandEncoder) {
        if let Some(power) = &self.power {
            e.clear_buffer(power, 0, None);
        }
        e.clear_buffer(&self.totals, 0, None);
    }

    /// WCSPH's pressure in place of the constant-density solve: stage `dfsph_eos` (κ = p/ρ
    /// from the equation of state), then one `dfsph_pressure` pass with the step's dt, as
    /// iteration 0 of the density solve's bind group (which always runs), its Σ κ cleared
    /// first so that it holds κ, the pressure the outputs read.
    pub fn encode_wcsph_pressure(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        self.encode_eos(g, e);
        self.encode_eos_force(g, e);
    }

    /// Stage `dfsph_eos` alone: κ = p/ρ into `kappa`.
    pub fn encode_eos(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch(
            e,
            Stage::DfsphEos,
            &self.passes.eos,
            &self.passes.eos_bg,
            groups(g.bufs.n.get(), WORKGROUP_SIZE),
        );
    }

    /// The pressure pass of [`GpuDfsph::encode_wcsph_pressure`] alone, from the κ `kappa` holds.
    pub fn encode_eos_force(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        let f = &self.fields;
        e.clear_buffer(&f.buffer, f.kappa_sum(Solve::Density), Some(f.bytes()));
        self.encode_pressure(g, e, Solve::Density, 0);
    }

    /// Stage `dfsph_accel`.
    pub fn encode_accel(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphAccel,
            &self.passes.accel,
            &[&self.passes.accel_bg, &self.boundary_bg],
            &g.bufs.group_args,
            0,
        );
    }

    /// Stage `dfsph_timestep`: each block's maxima folded into `timestep_maxima` (cleared
    /// first); `dfsph_predict_first` computes the step from them.
    pub fn encode_timestep(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        e.clear_buffer(&self.timestep_maxima, 0, None);
        g.dispatch(
            e,
            Stage::DfsphTimestep,
            &self.passes.timestep_blocks,
            &self.passes.timestep_bg,
            self.step_blocks,
        );
    }

    /// Stage `dfsph_predict`'s first substep (`dfsph_predict_first`), which also sets the step
    /// and the later substeps' arguments.
    pub fn encode_predict(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        let n = groups(g.bufs.n.get(), WORKGROUP_SIZE);
        g.dispatch_groups(
            e,
            Stage::DfsphPredict,
            &self.passes.predict_first,
            &[&self.passes.predict_bg, &self.passes.credit_bg],
            n,
        );
    }

    /// Stage `dfsph_accel` of viscous substep `k` (2..=K), dispatched from the arguments
    /// `dfsph_predict_first` wrote: nothing runs past the step's substep count.
    pub fn encode_substep_accel(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, k: u32) {
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphAccel,
            &self.passes.accel,
            &[&self.passes.accel_bg, &self.boundary_bg],
            &self.substep_args,
            substep_offset(k),
        );
    }

    /// Stage `dfsph_predict` of viscous substep `k` (2..=K), as
    /// [`GpuDfsph::encode_substep_accel`].
    pub fn encode_substep_predict(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, k: u32) {
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphPredict,
            &self.passes.predict,
            &[&self.passes.substep_predict_bg, &self.passes.credit_bg],
            &self.substep_args,
            substep_offset(k) + 16,
        );
    }

    /// The substep count of the last `dfsph_timestep` (1 where K = 1).
    pub fn read_substeps(&self, g: &GpuNeighbours) -> Result<u32> {
        crate::gpu::context::finish(self.read_substeps_async(g), "read_substeps_async")
    }

    /// [`GpuDfsph::read_substeps`], awaited (a web page's form).
    pub async fn read_substeps_async(&self, g: &GpuNeighbours) -> Result<u32> {
        if self.dp.viscous_substeps < 2 {
            return Ok(1);
        }
        Ok(g.read_u32_async(&self.substep_args, 4).await?[3])
    }

    /// Stage `dfsph_integrate`.
    pub fn encode_integrate(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        let n = groups(g.bufs.n.get(), WORKGROUP_SIZE);
        g.dispatch(
            e,
            Stage::DfsphIntegrate,
            &self.passes.integrate,
            &self.passes.integrate_bg,
            n,
        );
    }

    // Where the total of `solve` after iteration `k` lies in `totals` (bytes).
    fn total_offset(&self, solve: Solve, k: u32) -> u64 {
        let slots = u64::from(self.dp.max_iterations) + 1;
        (solve_index(solve) as u64 * slots + u64::from(k)) * TOTAL_BYTES
    }

    /// Reads the residual total of `solve` after iteration `k`.
    pub fn read_total(
        &self,
        g: &GpuNeighbours,
        solve: Solve,
        k: u32,
    ) -> Result<crate::solver::dfsph::Total> {
        crate::gpu::context::finish(self.read_total_async(g, solve, k), "read_total_async")
    }

    /// [`GpuDfsph::read_total`], awaited (a web page's form).
    pub async fn read_total_async(
        &self,
        g: &GpuNeighbours,
        solve: Solve,
        k: u32,
    ) -> Result<crate::solver::dfsph::Total> {
        let at = (self.total_offset(solve, k) / 4) as usize;
        let w = g.read_u32_async(&self.totals, at + 4).await?;
        Ok(crate::solver::dfsph::Total::from_words([
            w[at],
            w[at + 1],
            w[at + 2],
            w[at + 3],
        ]))
    }

    /// Writes `totals` as the totals of `solve` after iterations `first`, `first` + 1, …
    /// (verification puts the CPU's there for the passes that decide from them).
    pub fn write_totals(
        &self,
        q: &wgpu::Queue,
        solve: Solve,
        first: u32,
        totals: &[crate::solver::dfsph::Total],
    ) {
        let words: Vec<[u32; 4]> = totals.iter().map(|t| t.to_words()).collect();
        q.write_buffer(
            &self.totals,
            self.total_offset(solve, first),
            bytemuck::cast_slice(&words),
        );
    }
}

/// The buffers of the run the stages bind beside their own: the grid's, the fluid block, the
/// accelerations, the step state and the obstacles' power; and the fluid block's values and
/// the solver, which some pipelines are built for.
struct RunBuffers<'a> {
    b: &'a crate::grid::gpu::NeighbourBuffers,
    fluid: &'a wgpu::Buffer,
    accel: &'a wgpu::Buffer,
    step_state: &'a wgpu::Buffer,
    obstacle_power: &'a wgpu::Buffer,
    fp: &'a FluidParams,
    wcsph: bool,
}

/// One bind group as its stage declares it: each buffer with how the stage binds it, in
/// binding order, so the layout and the group follow from one list.
struct Bindings<'a> {
    label: &'static str,
    list: Vec<(Binding, &'a wgpu::Buffer)>,
}

impl<'a> Bindings<'a> {
    fn new(label: &'static str, list: Vec<(Binding, &'a wgpu::Buffer)>) -> Self {
        Self { label, list }
    }

    fn layout(&self, d: &wgpu::Device) -> wgpu::BindGroupLayout {
        let kinds: Vec<Binding> = self.list.iter().map(|(k, _)| *k).collect();
        layout(d, self.label, &kinds)
    }

    fn group(&self, d: &wgpu::Device, l: &wgpu::BindGroupLayout) -> wgpu::BindGroup {
        let buffers: Vec<&wgpu::Buffer> = self.list.iter().map(|(_, b)| *b).collect();
        bind_group(d, self.label, l, &buffers)
    }

    /// The layout and the group.
    fn laid_out(&self, d: &wgpu::Device) -> (wgpu::BindGroupLayout, wgpu::BindGroup) {
        let l = self.layout(d);
        let g = self.group(d, &l);
        (l, g)
    }
}

/// The buffers the stages own.
struct Owned {
    params: wgpu::Buffer,
    rho: wgpu::Buffer,
    alpha: wgpu::Buffer,
    fields: SolveFields,
    coarse_params: wgpu::Buffer,
    coarse_op: wgpu::Buffer,
    coarse_rows: wgpu::Buffer,
    coarse_rhs: wgpu::Buffer,
    coarse_work: wgpu::Buffer,
    error_sums: wgpu::Buffer,
    error_maxima: wgpu::Buffer,
    totals: wgpu::Buffer,
    iterations: wgpu::Buffer,
    iteration_l: wgpu::BindGroupLayout,
    iteration_bg: wgpu::BindGroup,
    stride: u32,
    density_error: wgpu::Buffer,
    friction_power: wgpu::Buffer,
    timestep_maxima: wgpu::Buffer,
    substep_args: wgpu::Buffer,
}

fn uniform(d: &wgpu::Device, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytes,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    })
}

impl Owned {
    fn new(ctx: &GpuContext, grid: &GpuNeighbours, dp: &DfsphParams, cp: &CoarseParams) -> Self {
        let d = &ctx.device;
        let n64 = grid.bufs.capacity as u64;
        let blocks = dp.blocks as u64;
        let storage = |label: &str, bytes: u64| storage_buffer(d, label, bytes);
        let (n0, all) = (cp.cells() as u64, cp.all_cells() as u64);
        let slots = u64::from(dp.max_iterations) + 1;
        let stride = d.limits().min_uniform_buffer_offset_alignment.max(16);
        let mut entries = vec![0u8; stride as usize * slots as usize];
        for k in 0..slots as usize {
            let at = k * stride as usize;
            entries[at..at + 4].copy_from_slice(&(k as u32).to_le_bytes());
        }
        let iterations = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sph.dfsph_iterations"),
            contents: &entries,
            usage: wgpu::BufferUsages::UNIFORM,
        });
        let iteration_l = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sph.dfsph_iteration"),
            entries: &[wgpu::BindGroupLayoutEntry {
                binding: 0,
                visibility: wgpu::ShaderStages::COMPUTE,
                ty: wgpu::BindingType::Buffer {
                    ty: wgpu::BufferBindingType::Uniform,
                    has_dynamic_offset: true,
                    min_binding_size: wgpu::BufferSize::new(16),
                },
                count: None,
            }],
        });
        let iteration_bg = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("sph.dfsph_iteration"),
            layout: &iteration_l,
            entries: &[wgpu::BindGroupEntry {
                binding: 0,
                resource: wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &iterations,
                    offset: 0,
                    size: wgpu::BufferSize::new(16),
                }),
            }],
        });
        Self {
            params: uniform(d, "sph.dfsph_params", bytemuck::bytes_of(dp)),
            rho: storage("sph.dfsph_rho", n64 * 4),
            alpha: storage("sph.dfsph_alpha", n64 * 4),
            fields: SolveFields::new(d, grid.bufs.capacity),
            coarse_params: uniform(d, "sph.dfsph_coarse_params", bytemuck::bytes_of(cp)),
            coarse_op: storage("sph.dfsph_coarse_op", (n0 * 28 + 1) * 4),
            coarse_rows: storage("sph.dfsph_coarse_rows", all * 27 * 4),
            coarse_rhs: storage("sph.dfsph_coarse_rhs", n0 * 2 * 4),
            coarse_work: storage("sph.dfsph_coarse_work", (4 * n0 + 3 * all) * 4),
            error_sums: storage("sph.dfsph_error_sums", blocks * 4),
            error_maxima: storage("sph.dfsph_error_maxima", blocks * 4),
            totals: storage("sph.dfsph_totals", 2 * slots * TOTAL_BYTES),
            iterations,
            iteration_l,
            iteration_bg,
            stride,
            density_error: storage("sph.dfsph_density_error", n64 * 4),
            // Each particle's power from the obstacles' friction in the last `dfsph_accel`.
            friction_power: storage("sph.dfsph_friction_power", n64 * 4),
            timestep_maxima: storage("sph.dfsph_timestep_maxima", 16),
            substep_args: d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("sph.dfsph_substep_args"),
                size: SUBSTEP_ARGS_BYTES * u64::from(dp.viscous_substeps.max(2) - 1),
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::INDIRECT
                    | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            }),
        }
    }
}

/// One solve's bindings (its own uniform block beside the shared buffers).
struct SolveBindings<'a> {
    params: wgpu::Buffer,
    run: &'a RunBuffers<'a>,
    o: &'a Owned,
}

/// The solves' layouts (both solves bind the same kinds).
struct SolveLayouts {
    pressure: wgpu::BindGroupLayout,
    rate: wgpu::BindGroupLayout,
    restrict: wgpu::BindGroupLayout,
    coarse: wgpu::BindGroupLayout,
    prolong: wgpu::BindGroupLayout,
}

fn solve_bindings<'a>(
    d: &wgpu::Device,
    run: &'a RunBuffers<'a>,
    o: &'a Owned,
    dp: &DfsphParams,
    which: Solve,
) -> SolveBindings<'a> {
    let i = solve_index(which);
    let sp = solve_params(i as u32, dp, run.b.n.get(), run.b.capacity);
    SolveBindings {
        params: uniform(d, &format!("sph.dfsph_solve{i}"), bytemuck::bytes_of(&sp)),
        run,
        o,
    }
}

impl SolveBindings<'_> {
    /// Stages `dfsph_pressure`, `dfsph_rate`, `dfsph_restrict`, `dfsph_coarse`,
    /// `dfsph_prolong`, in that order.
    fn all(&self) -> [Bindings<'_>; 5] {
        use Binding::*;
        let (b, r, o) = (self.run.b, self.run, self.o);
        let (sp, f) = (&self.params, &self.o.fields.buffer);
        [
            Bindings::new(
                "sph.dfsph_pressure",
                vec![
                    (Uniform, &b.params),
                    (Uniform, r.fluid),
                    (Uniform, &o.params),
                    (Uniform, sp),
                    (Read, &b.sorted_pos),
                    (Read, &b.slot_start),
                    (Read, &o.rho),
                    (ReadWrite, f),
                    (Uniform, r.step_state),
                    (ReadWrite, &b.sorted_vel),
                    (Read, &b.group_range),
                    (Uniform, &b.group_args),
                    (ReadWrite, r.obstacle_power),
                    (Read, &o.totals),
                ],
            ),
            Bindings::new(
                "sph.dfsph_rate",
                vec![
                    (Uniform, &b.params),
                    (Uniform, r.fluid),
                    (Uniform, &o.params),
                    (Uniform, sp),
                    (Read, &b.sorted_pos),
                    (Read, &b.slot_start),
                    (Read, &b.sorted_vel),
                    (Read, &o.rho),
                    (Read, &o.alpha),
                    (Uniform, r.step_state),
                    (ReadWrite, f),
                    (Read, &b.group_range),
                    (Uniform, &b.group_args),
                    (ReadWrite, &o.totals),
                ],
            ),
            Bindings::new(
                "sph.dfsph_restrict",
                vec![
                    (Uniform, &b.params),
                    (Uniform, &o.params),
                    (Uniform, sp),
                    (Uniform, &o.coarse_params),
                    (Read, &b.sorted_pos),
                    (Read, f),
                    (Read, &o.rho),
                    (Read, &o.alpha),
                    (Read, &o.totals),
                    (ReadWrite, &o.coarse_rhs),
                ],
            ),
            Bindings::new(
                "sph.dfsph_coarse",
                vec![
                    (Uniform, &o.params),
                    (Uniform, sp),
                    (Uniform, &o.coarse_params),
                    (Read, &o.coarse_rows),
                    (Read, &o.coarse_rhs),
                    (Read, &o.totals),
                    (ReadWrite, &o.coarse_work),
                    (Read, &o.coarse_op),
                ],
            ),
            Bindings::new(
                "sph.dfsph_prolong",
                vec![
                    (Uniform, &b.params),
                    (Uniform, r.fluid),
                    (Uniform, &o.params),
                    (Uniform, sp),
                    (Uniform, &o.coarse_params),
                    (Read, &b.sorted_pos),
                    (ReadWrite, f),
                    (Read, &o.rho),
                    (Read, &o.alpha),
                    (Read, &o.coarse_work),
                    (Uniform, r.step_state),
                    (Read, &o.totals),
                ],
            ),
        ]
    }

    fn layouts(&self, d: &wgpu::Device) -> SolveLayouts {
        let [pressure, rate, restrict, coarse, prolong] = self.all().map(|g| g.layout(d));
        SolveLayouts {
            pressure,
            rate,
            restrict,
            coarse,
            prolong,
        }
    }

    fn groups(self, d: &wgpu::Device, l: &SolveLayouts) -> SolveGroups {
        let [pressure, rate, restrict, coarse, prolong] = self.all();
        SolveGroups {
            pressure: pressure.group(d, &l.pressure),
            rate: rate.group(d, &l.rate),
            restrict: restrict.group(d, &l.restrict),
            coarse: coarse.group(d, &l.coarse),
            prolong: prolong.group(d, &l.prolong),
            params: self.params,
        }
    }
}

/// The values of `dfsph_accel`'s pipeline-overridable constants for the fluid `fp`: each
/// viscosity term on (1) where its coefficient is nonzero (a NaN one too, as the stage's
/// runtime test reads it), else compiled out (0). The pass adds the same terms either way;
/// a term compiled out costs no registers in the walk (the shader's header has the figures).
/// Worked example: the defaults (μ = 0, α = 0, ν = 1e-3) → MU_TERM 0, ALPHA_TERM 0, NU_TERM 1.
pub fn accel_terms(fp: &FluidParams) -> [(&'static str, f64); 3] {
    let on = |c: f32| f64::from(u8::from(c != 0.0));
    [
        ("MU_TERM", on(fp.viscosity)),
        ("ALPHA_TERM", on(fp.alpha)),
        ("NU_TERM", on(fp.kinematic_viscosity)),
    ]
}

/// What rebuilds `dfsph_accel`'s pipeline for other terms: its module and bind group layouts.
struct AccelBuild {
    module: wgpu::ShaderModule,
    layouts: [wgpu::BindGroupLayout; 2],
}

impl AccelBuild {
    fn pipeline(&self, d: &wgpu::Device, terms: &[(&str, f64)]) -> wgpu::ComputePipeline {
        let [a, b] = &self.layouts;
        pipeline_specialised(
            d,
            "sph.dfsph_accel",
            &[a, b],
            &self.module,
            "dfsph_accel",
            terms,
        )
    }
}

/// The stages' pipelines and their bind groups but the solves'.
struct Passes {
    density: wgpu::ComputePipeline,
    galerkin: wgpu::ComputePipeline,
    levels: wgpu::ComputePipeline,
    pressure: wgpu::ComputePipeline,
    rate: wgpu::ComputePipeline,
    restrict: wgpu::ComputePipeline,
    coarse: wgpu::ComputePipeline,
    prolong: wgpu::ComputePipeline,
    galerkin_bg: wgpu::BindGroup,
    levels_bg: wgpu::BindGroup,
    blocks: wgpu::ComputePipeline,
    accel: wgpu::ComputePipeline,
    // The terms `accel` was built with, and what rebuilds it for others.
    accel_terms: [(&'static str, f64); 3],
    accel_build: AccelBuild,
    timestep_blocks: wgpu::ComputePipeline,
    predict_first: wgpu::ComputePipeline,
    predict: wgpu::ComputePipeline,
    // WCSPH's equation of state (`dfsph_eos`) and its bind group.
    eos: wgpu::ComputePipeline,
    eos_bg: wgpu::BindGroup,
    integrate: wgpu::ComputePipeline,
    density_bg: wgpu::BindGroup,
    density_blocks_bg: wgpu::BindGroup,
    accel_bg: wgpu::BindGroup,
    timestep_bg: wgpu::BindGroup,
    predict_bg: wgpu::BindGroup,
    // Group 1 of the predict passes: DFSPH's block, the friction power, the obstacles' power.
    credit_bg: wgpu::BindGroup,
    // The later substeps' bind group: without the substep arguments they are dispatched from.
    substep_predict_bg: wgpu::BindGroup,
    integrate_bg: wgpu::BindGroup,
}

impl Passes {
    fn new(
        ctx: &GpuContext,
        grid: &GpuNeighbours,
        r: &RunBuffers<'_>,
        o: &Owned,
        solve: &SolveLayouts,
        boundary: &wgpu::BindGroupLayout,
    ) -> Self {
        let (d, b) = (&ctx.device, &grid.bufs);
        let [density, galerkin, accel, credit] = walk_bindings(r, o).map(|g| g.laid_out(d));
        let [
            levels,
            blocks,
            timestep,
            eos,
            predict,
            substep_predict,
            integrate,
        ] = step_bindings(r, o).map(|g| g.laid_out(d));
        let it = &o.iteration_l;
        let m = |label, src| ctx.shader(label, src);
        let w = |label, src| ctx.walking_shader(label, src, b.group_size, Some(b.kernel()));
        // Each pass's entry point is its label without "sph.". Built with the run's kernel:
        // the walking stages, and those that include the tank's model.
        let entry = |label: &'static str| label.trim_start_matches("sph.");
        let walking = |label, layouts: &[&wgpu::BindGroupLayout], src| {
            pipeline_groups(d, label, layouts, &w(label, src), entry(label))
        };
        let plain = |label, layouts: &[&wgpu::BindGroupLayout], src| {
            pipeline_groups(d, label, layouts, &m(label, src), entry(label))
        };
        let predict_m = m("sph.dfsph_predict", shaders::DFSPH_PREDICT);
        let predicting = |label, layouts: &[&wgpu::BindGroupLayout]| {
            pipeline_groups(d, label, layouts, &predict_m, entry(label))
        };
        let accel_build = AccelBuild {
            module: w("sph.dfsph_accel", shaders::DFSPH_ACCEL),
            layouts: [accel.0, boundary.clone()],
        };
        let accel_terms = accel_terms(r.fp);
        // WCSPH's density walk gathers no α: its pipeline is built without those sums.
        let alpha_sums = [("ALPHA_SUMS", f64::from(u8::from(!r.wcsph)))];
        let (pressure_l, rate_l) = (
            &[&solve.pressure, boundary, it],
            &[&solve.rate, boundary, it],
        );
        Self {
            density: pipeline_specialised(
                d,
                "sph.dfsph_density",
                &[&density.0, boundary],
                &w("sph.dfsph_density", shaders::DFSPH_DENSITY),
                "dfsph_density",
                &alpha_sums,
            ),
            galerkin: walking(
                "sph.dfsph_galerkin",
                &[&galerkin.0, boundary],
                shaders::DFSPH_GALERKIN,
            ),
            levels: plain("sph.dfsph_levels", &[&levels.0], shaders::DFSPH_LEVELS),
            restrict: plain(
                "sph.dfsph_restrict",
                &[&solve.restrict, it],
                shaders::DFSPH_RESTRICT,
            ),
            coarse: plain(
                "sph.dfsph_coarse",
                &[&solve.coarse, it],
                shaders::DFSPH_COARSE,
            ),
            prolong: plain(
                "sph.dfsph_prolong",
                &[&solve.prolong, it],
                shaders::DFSPH_PROLONG,
            ),
            pressure: walking("sph.dfsph_pressure", pressure_l, shaders::DFSPH_PRESSURE),
            rate: walking("sph.dfsph_rate", rate_l, shaders::DFSPH_RATE),
            blocks: plain("sph.dfsph_blocks", &[&blocks.0], shaders::DFSPH_BLOCKS),
            accel: accel_build.pipeline(d, &accel_terms),
            accel_terms,
            accel_build,
            timestep_blocks: plain(
                "sph.dfsph_timestep_blocks",
                &[&timestep.0],
                shaders::DFSPH_TIMESTEP,
            ),
            predict_first: predicting("sph.dfsph_predict_first", &[&predict.0, &credit.0]),
            predict: predicting("sph.dfsph_predict", &[&substep_predict.0, &credit.0]),
            eos: plain("sph.dfsph_eos", &[&eos.0], shaders::DFSPH_EOS),
            // It clamps to the tank, whose model (own images) evaluates the kernel.
            integrate: walking(
                "sph.dfsph_integrate",
                &[&integrate.0],
                shaders::DFSPH_INTEGRATE,
            ),
            galerkin_bg: galerkin.1,
            levels_bg: levels.1,
            eos_bg: eos.1,
            density_bg: density.1,
            density_blocks_bg: blocks.1,
            accel_bg: accel.1,
            timestep_bg: timestep.1,
            predict_bg: predict.1,
            credit_bg: credit.1,
            substep_predict_bg: substep_predict.1,
            integrate_bg: integrate.1,
        }
    }
}

/// The bind groups (group 0) of the walking passes but the solves', as their stages declare
/// them: `dfsph_density`, `dfsph_galerkin`, `dfsph_accel`, and group 1 of both predict entry
/// points (the friction power's credit), in that order.
fn walk_bindings<'a>(r: &RunBuffers<'a>, o: &'a Owned) -> [Bindings<'a>; 4] {
    use Binding::*;
    let b = r.b;
    [
        Bindings::new(
            "sph.dfsph_density",
            vec![
                (Uniform, &b.params),
                (Uniform, r.fluid),
                (Uniform, &o.params),
                (Read, &b.sorted_pos),
                (Read, &b.slot_start),
                (ReadWrite, &o.rho),
                (ReadWrite, &o.alpha),
                (ReadWrite, &o.density_error),
                (Read, &b.group_range),
                (Uniform, &b.group_args),
            ],
        ),
        Bindings::new(
            "sph.dfsph_galerkin",
            vec![
                (Uniform, &b.params),
                (Uniform, r.fluid),
                (Uniform, &o.params),
                (Uniform, &o.coarse_params),
                (Read, &b.sorted_pos),
                (Read, &b.slot_start),
                (Read, &o.rho),
                (Read, &o.alpha),
                (Read, &b.group_range),
                (Uniform, &b.group_args),
                (ReadWrite, &o.coarse_op),
            ],
        ),
        Bindings::new(
            "sph.dfsph_accel",
            vec![
                (Uniform, &b.params),
                (Uniform, r.fluid),
                (Uniform, &o.params),
                (Read, &b.sorted_pos),
                (Read, &b.slot_start),
                (Read, &b.sorted_vel),
                (Read, &o.rho),
                (ReadWrite, r.accel),
                (Read, &b.group_range),
                (Uniform, &b.group_args),
                (ReadWrite, &o.friction_power),
            ],
        ),
        Bindings::new(
            "sph.dfsph_credit",
            vec![
                (Uniform, &o.params),
                (Read, &o.friction_power),
                (ReadWrite, r.obstacle_power),
            ],
        ),
    ]
}

/// The bind groups of the per-particle passes: `dfsph_levels`, `dfsph_blocks`,
/// `dfsph_timestep`, `dfsph_eos`, `dfsph_predict`, the later substeps' `dfsph_predict`
/// (without the substep arguments they are dispatched from) and `dfsph_integrate`, in that
/// order.
fn step_bindings<'a>(r: &RunBuffers<'a>, o: &'a Owned) -> [Bindings<'a>; 7] {
    use Binding::*;
    let b = r.b;
    [
        Bindings::new(
            "sph.dfsph_levels",
            vec![
                (Uniform, &o.coarse_params),
                (Read, &o.coarse_op),
                (ReadWrite, &o.coarse_rows),
            ],
        ),
        Bindings::new(
            "sph.dfsph_blocks",
            vec![
                (Uniform, &b.params),
                (Read, &o.density_error),
                (ReadWrite, &o.error_sums),
                (ReadWrite, &o.error_maxima),
            ],
        ),
        Bindings::new(
            "sph.dfsph_timestep",
            vec![
                (Uniform, &b.params),
                (Uniform, &o.params),
                (Read, &b.sorted_vel),
                (Read, r.accel),
                (ReadWrite, r.step_state),
                (Uniform, &b.group_args),
                (ReadWrite, &o.substep_args),
                (ReadWrite, &o.timestep_maxima),
                (Uniform, r.fluid),
                (Read, &o.rho),
            ],
        ),
        Bindings::new(
            "sph.dfsph_eos",
            vec![
                (Uniform, &b.params),
                (Uniform, r.fluid),
                (Read, &o.rho),
                (ReadWrite, &o.fields.buffer),
            ],
        ),
        Bindings::new(
            "sph.dfsph_predict",
            vec![
                (Uniform, &b.params),
                (Read, r.accel),
                (ReadWrite, r.step_state),
                (ReadWrite, &b.sorted_vel),
                (Uniform, &o.params),
                (Read, &o.timestep_maxima),
                (Uniform, &b.group_args),
                (ReadWrite, &o.substep_args),
            ],
        ),
        Bindings::new(
            "sph.dfsph_predict_substep",
            vec![
                (Uniform, &b.params),
                (Read, r.accel),
                (ReadWrite, r.step_state),
                (ReadWrite, &b.sorted_vel),
            ],
        ),
        Bindings::new(
            "sph.dfsph_integrate",
            vec![
                (Uniform, &b.params),
                (Uniform, r.fluid),
                (Read, &b.sorted_pos),
                (Read, &b.sorted_vel),
                (Read, &b.sorted_id),
                (Uniform, r.step_state),
                (ReadWrite, &b.positions),
                (ReadWrite, &b.velocities),
                (ReadWrite, &b.particle_id),
                (Uniform, &o.params),
            ],
        ),
    ]
}
