//! The DFSPH passes on the GPU (the `dfsph_*` stages; CPU mirror [`crate::cpu::dfsph`]), with
//! their buffers. A solve is encoded as warm → pressure → rate → control, then
//! `max_iterations` times pressure → rate → control, the pressure and rate passes dispatched
//! indirectly from the solve's control block: the control pass decides on the GPU whether
//! another iteration runs and writes 0 workgroups once the solve has converged, so nothing is
//! read back per iteration.

use wgpu::util::DeviceExt;

use super::context::GpuContext;
use super::neighbours::{
    Binding, GpuNeighbours, WORKGROUP_SIZE, bind_group, groups, layout, pipeline, pipeline_groups,
    storage_buffer,
};
use crate::core::Stage;
use crate::cpu::dfsph::{DfsphStats, Solve, SolveState};
use crate::params::{DfsphParams, SolveParams};
use crate::{Result, shaders};

/// One solve's bind groups and control block.
struct SolveGroups {
    // Bound in the bind groups; kept with them.
    _params: wgpu::Buffer,
    warm: wgpu::BindGroup,
    pressure: wgpu::BindGroup,
    rate: wgpu::BindGroup,
    blocks: wgpu::BindGroup,
    control: wgpu::BindGroup,
    /// (x, 1, 1, iterations, done, residual bits, 0, 0): the indirect dispatch arguments of
    /// the solve's pressure and rate passes, and where the solve stands.
    state: wgpu::Buffer,
}

/// The DFSPH kernels and their buffers, for one N.
pub struct GpuDfsph {
    density: wgpu::ComputePipeline,
    warm: wgpu::ComputePipeline,
    pressure: wgpu::ComputePipeline,
    rate: wgpu::ComputePipeline,
    blocks: wgpu::ComputePipeline,
    control: wgpu::ComputePipeline,
    accel: wgpu::ComputePipeline,
    timestep_blocks: wgpu::ComputePipeline,
    /// Workgroups of `dfsph_timestep_blocks` (`neighbours::timestep_blocks`).
    step_blocks: u32,
    timestep: wgpu::ComputePipeline,
    predict: wgpu::ComputePipeline,
    integrate: wgpu::ComputePipeline,
    stats_pipe: wgpu::ComputePipeline,
    density_bg: wgpu::BindGroup,
    density_blocks_bg: wgpu::BindGroup,
    accel_bg: wgpu::BindGroup,
    timestep_bg: wgpu::BindGroup,
    predict_bg: wgpu::BindGroup,
    integrate_bg: wgpu::BindGroup,
    stats_bg: wgpu::BindGroup,
    solves: [SolveGroups; 2],
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
    /// The stiffness of the next velocity update (N).
    pub kappa: wgpu::Buffer,
    /// Σ κ applied in this step per particle, (divergence, density) (N vec2).
    pub kappa_sum: wgpu::Buffer,
    /// Warm-start stiffness by particle id, (κ^v dt, κ dt²) of the last step (N vec2).
    pub warm_buf: wgpu::Buffer,
    /// Density error block sums and maxima (⌈N/256⌉ each).
    pub error_sums: wgpu::Buffer,
    /// See `error_sums`.
    pub error_maxima: wgpu::Buffer,
    /// Residual block sums of the last rate pass.
    pub residual_sums: wgpu::Buffer,
    /// The density error per particle (N), which `dfsph_blocks` reduces.
    pub density_error: wgpu::Buffer,
    /// The last rate pass's residual per particle (N).
    pub residual: wgpu::Buffer,
    /// The step's statistics block (8 words, [`DfsphStats`]).
    pub stats: wgpu::Buffer,
    /// The indirect arguments of viscous substeps 2..K that `dfsph_timestep` writes, 8 words
    /// each: `dfsph_accel`'s (x, y, z), the substep count n, `dfsph_predict`'s (x, 1, 1), 0.
    pub substep_args: wgpu::Buffer,
}

/// Bytes of one substep's entry in `substep_args`.
const SUBSTEP_ARGS_BYTES: u64 = 32;

// Where substep k's (2..=K) arguments start in `substep_args`.
fn substep_offset(k: u32) -> u64 {
    SUBSTEP_ARGS_BYTES * u64::from(k - 2)
}

fn solve_index(s: Solve) -> usize {
    match s {
        Solve::Divergence => 0,
        Solve::Density => 1,
    }
}

impl GpuDfsph {
    /// Compiles the DFSPH kernels and allocates their buffers next to `grid`'s; `accel` and
    /// `step_state` are the fluid passes' (the mouse force adds to the same accelerations).
    pub fn new(
        ctx: &GpuContext,
        grid: &GpuNeighbours,
        fluid_params: &wgpu::Buffer,
        accel: &wgpu::Buffer,
        step_state: &wgpu::Buffer,
        obstacle_power: &wgpu::Buffer,
        dp: &DfsphParams,
    ) -> Result<Self> {
        use Binding::*;
        let b = &grid.bufs;
        ctx.scoped(|| {
            let d = &ctx.device;
            let n64 = b.capacity as u64;
            let blocks = dp.blocks as u64;
            let storage = |label: &str, bytes: u64| storage_buffer(d, label, bytes);
            let uniform = |label: &str, bytes: &[u8]| {
                d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(label),
                    contents: bytes,
                    usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
                })
            };
            let params = uniform("sph.dfsph_params", bytemuck::bytes_of(dp));
            let rho = storage("sph.dfsph_rho", n64 * 4);
            let alpha = storage("sph.dfsph_alpha", n64 * 4);
            let kappa = storage("sph.dfsph_kappa", n64 * 4);
            let kappa_sum = storage("sph.dfsph_kappa_sum", n64 * 8);
            let warm_buf = storage("sph.dfsph_warm", n64 * 8);
            let error_sums = storage("sph.dfsph_error_sums", blocks * 4);
            let error_maxima = storage("sph.dfsph_error_maxima", blocks * 4);
            let residual_sums = storage("sph.dfsph_residual_sums", blocks * 4);
            let residual_maxima = storage("sph.dfsph_residual_maxima", blocks * 4);
            let density_error = storage("sph.dfsph_density_error", n64 * 4);
            let residual = storage("sph.dfsph_residual", n64 * 4);
            let stats = storage("sph.dfsph_stats", 32);
            // dfsph_timestep's level-1 maxima: one vec2 per block.
            let step_blocks = super::neighbours::timestep_blocks(b.capacity, ctx.info.device_type);
            let timestep_blocks = storage("sph.dfsph_timestep_blocks", 8 * u64::from(step_blocks));
            let substep_args = d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("sph.dfsph_substep_args"),
                size: SUBSTEP_ARGS_BYTES * u64::from(dp.viscous_substeps.max(2) - 1),
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::INDIRECT
                    | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });

            let m = |label, src| ctx.shader(label, src);
            let w = |label, src| ctx.walking_shader(label, src, b.group_size);
            let density_l = layout(
                d,
                "sph.dfsph_density",
                &[
                    Uniform, Uniform, Uniform, Read, Read, ReadWrite, ReadWrite, ReadWrite, Read,
                    Read,
                ],
            );
            let warm_l = layout(
                d,
                "sph.dfsph_warm",
                &[
                    Uniform, Uniform, Uniform, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                ],
            );
            let pressure_l = layout(
                d,
                "sph.dfsph_pressure",
                &[
                    Uniform, Uniform, Uniform, Uniform, Read, Read, Read, Read, Read, ReadWrite,
                    ReadWrite, Read, Read, ReadWrite,
                ],
            );
            let rate_l = layout(
                d,
                "sph.dfsph_rate",
                &[
                    Uniform, Uniform, Uniform, Uniform, Read, Read, Read, Read, Read, Read,
                    ReadWrite, ReadWrite, Read, Read,
                ],
            );
            let blocks_l = layout(
                d,
                "sph.dfsph_blocks",
                &[Uniform, Read, ReadWrite, ReadWrite],
            );
            let control_l = layout(
                d,
                "sph.dfsph_control",
                &[Uniform, Uniform, Uniform, Read, ReadWrite],
            );
            let accel_l = layout(
                d,
                "sph.dfsph_accel",
                &[
                    Uniform, Uniform, Uniform, Read, Read, Read, Read, ReadWrite, Read, Read,
                ],
            );
            let timestep_l = layout(
                d,
                "sph.dfsph_timestep",
                &[
                    Uniform, Uniform, Read, Read, ReadWrite, Read, ReadWrite, ReadWrite,
                ],
            );
            let predict_l = layout(d, "sph.dfsph_predict", &[Uniform, Read, Read, ReadWrite]);
            let integrate_l = layout(
                d,
                "sph.dfsph_integrate",
                &[
                    Uniform, Uniform, Read, Read, Read, Read, Read, ReadWrite, ReadWrite,
                    ReadWrite, ReadWrite, Uniform,
                ],
            );
            let stats_l = layout(
                d,
                "sph.dfsph_stats",
                &[Uniform, Uniform, Read, Read, Read, Read, Read, ReadWrite],
            );
            let density_m = w("sph.dfsph_density", shaders::DFSPH_DENSITY);
            let warm_m = m("sph.dfsph_warm", shaders::DFSPH_WARM);
            let pressure_m = w("sph.dfsph_pressure", shaders::DFSPH_PRESSURE);
            let rate_m = w("sph.dfsph_rate", shaders::DFSPH_RATE);
            let control_m = m("sph.dfsph_control", shaders::DFSPH_CONTROL);
            let blocks_m = m("sph.dfsph_blocks", shaders::DFSPH_BLOCKS);
            let accel_m = w("sph.dfsph_accel", shaders::DFSPH_ACCEL);
            let timestep_m = m("sph.dfsph_timestep", shaders::DFSPH_TIMESTEP);
            let predict_m = m("sph.dfsph_predict", shaders::DFSPH_PREDICT);
            let integrate_m = m("sph.dfsph_integrate", shaders::DFSPH_INTEGRATE);
            let stats_m = m("sph.dfsph_stats", shaders::DFSPH_STATS);

            let solve = |which: Solve| {
                let i = solve_index(which);
                let sp = SolveParams {
                    which: i as u32,
                    min_iterations: match which {
                        Solve::Divergence => 1,
                        Solve::Density => 2,
                    },
                    eta: match which {
                        Solve::Divergence => dp.eta_v,
                        Solve::Density => dp.eta_d,
                    },
                    _pad: 0,
                };
                let sparams = uniform(&format!("sph.dfsph_solve{i}"), bytemuck::bytes_of(&sp));
                let state = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                    label: Some(&format!("sph.dfsph_solve_state{i}")),
                    contents: bytemuck::cast_slice(&[0u32, 1, 1, 0, 1, 0, 0, 0]),
                    usage: wgpu::BufferUsages::STORAGE
                        | wgpu::BufferUsages::INDIRECT
                        | wgpu::BufferUsages::COPY_DST
                        | wgpu::BufferUsages::COPY_SRC,
                });
                SolveGroups {
                    warm: bind_group(
                        d,
                        "sph.dfsph_warm",
                        &warm_l,
                        &[
                            &b.params,
                            &params,
                            &sparams,
                            &b.sorted_id,
                            &warm_buf,
                            step_state,
                            &kappa,
                            &kappa_sum,
                            &state,
                        ],
                    ),
                    pressure: bind_group(
                        d,
                        "sph.dfsph_pressure",
                        &pressure_l,
                        &[
                            &b.params,
                            fluid_params,
                            &params,
                            &sparams,
                            &b.sorted_pos,
                            &b.slot_start,
                            &rho,
                            &kappa,
                            step_state,
                            &b.sorted_vel,
                            &kappa_sum,
                            &b.group_range,
                            &b.group_args,
                            obstacle_power,
                        ],
                    ),
                    rate: bind_group(
                        d,
                        "sph.dfsph_rate",
                        &rate_l,
                        &[
                            &b.params,
                            fluid_params,
                            &params,
                            &sparams,
                            &b.sorted_pos,
                            &b.slot_start,
                            &b.sorted_vel,
                            &rho,
                            &alpha,
                            step_state,
                            &kappa,
                            &residual,
                            &b.group_range,
                            &b.group_args,
                        ],
                    ),
                    blocks: bind_group(
                        d,
                        "sph.dfsph_blocks",
                        &blocks_l,
                        &[&b.params, &residual, &residual_sums, &residual_maxima],
                    ),
                    control: bind_group(
                        d,
                        "sph.dfsph_control",
                        &control_l,
                        &[&b.params, &params, &sparams, &residual_sums, &state],
                    ),
                    _params: sparams,
                    state,
                }
            };
            let solves = [solve(Solve::Divergence), solve(Solve::Density)];
            let boundary_layout = super::obstacles::boundary_layout(d);
            let (boundary_bg, no_boundary) = super::obstacles::no_boundary(d, &boundary_layout);
            let bl = &boundary_layout;
            Self {
                density: pipeline_groups(
                    d,
                    "sph.dfsph_density",
                    &[&density_l, bl],
                    &density_m,
                    "dfsph_density",
                ),
                warm: pipeline(d, "sph.dfsph_warm", &warm_l, &warm_m, "dfsph_warm"),
                pressure: pipeline_groups(
                    d,
                    "sph.dfsph_pressure",
                    &[&pressure_l, bl],
                    &pressure_m,
                    "dfsph_pressure",
                ),
                rate: pipeline_groups(d, "sph.dfsph_rate", &[&rate_l, bl], &rate_m, "dfsph_rate"),
                blocks: pipeline(d, "sph.dfsph_blocks", &blocks_l, &blocks_m, "dfsph_blocks"),
                control: pipeline(
                    d,
                    "sph.dfsph_control",
                    &control_l,
                    &control_m,
                    "dfsph_control",
                ),
                accel: pipeline(d, "sph.dfsph_accel", &accel_l, &accel_m, "dfsph_accel"),
                timestep_blocks: pipeline(
                    d,
                    "sph.dfsph_timestep_blocks",
                    &timestep_l,
                    &timestep_m,
                    "dfsph_timestep_blocks",
                ),
                step_blocks,
                timestep: pipeline(
                    d,
                    "sph.dfsph_timestep",
                    &timestep_l,
                    &timestep_m,
                    "dfsph_timestep",
                ),
                predict: pipeline(
                    d,
                    "sph.dfsph_predict",
                    &predict_l,
                    &predict_m,
                    "dfsph_predict",
                ),
                integrate: pipeline(
                    d,
                    "sph.dfsph_integrate",
                    &integrate_l,
                    &integrate_m,
                    "dfsph_integrate",
                ),
                stats_pipe: pipeline(d, "sph.dfsph_stats", &stats_l, &stats_m, "dfsph_stats"),
                density_bg: bind_group(
                    d,
                    "sph.dfsph_density",
                    &density_l,
                    &[
                        &b.params,
                        fluid_params,
                        &params,
                        &b.sorted_pos,
                        &b.slot_start,
                        &rho,
                        &alpha,
                        &density_error,
                        &b.group_range,
                        &b.group_args,
                    ],
                ),
                density_blocks_bg: bind_group(
                    d,
                    "sph.dfsph_blocks",
                    &blocks_l,
                    &[&b.params, &density_error, &error_sums, &error_maxima],
                ),
                accel_bg: bind_group(
                    d,
                    "sph.dfsph_accel",
                    &accel_l,
                    &[
                        &b.params,
                        fluid_params,
                        &params,
                        &b.sorted_pos,
                        &b.slot_start,
                        &b.sorted_vel,
                        &rho,
                        accel,
                        &b.group_range,
                        &b.group_args,
                    ],
                ),
                timestep_bg: bind_group(
                    d,
                    "sph.dfsph_timestep",
                    &timestep_l,
                    &[
                        &b.params,
                        &params,
                        &b.sorted_vel,
                        accel,
                        step_state,
                        &b.group_args,
                        &substep_args,
                        &timestep_blocks,
                    ],
                ),
                predict_bg: bind_group(
                    d,
                    "sph.dfsph_predict",
                    &predict_l,
                    &[&b.params, accel, step_state, &b.sorted_vel],
                ),
                integrate_bg: bind_group(
                    d,
                    "sph.dfsph_integrate",
                    &integrate_l,
                    &[
                        &b.params,
                        fluid_params,
                        &b.sorted_pos,
                        &b.sorted_vel,
                        &b.sorted_id,
                        &kappa_sum,
                        step_state,
                        &b.positions,
                        &b.velocities,
                        &b.particle_id,
                        &warm_buf,
                        &params,
                    ],
                ),
                stats_bg: bind_group(
                    d,
                    "sph.dfsph_stats",
                    &stats_l,
                    &[
                        &b.params,
                        &params,
                        &error_sums,
                        &error_maxima,
                        &solves[0].state,
                        &solves[1].state,
                        step_state,
                        &stats,
                    ],
                ),
                solves,
                params,
                dp: *dp,
                live_blocks: std::cell::Cell::new(dp.blocks),
                boundary_bg,
                _no_boundary: no_boundary,
                boundary_layout,
                power: None,
                obstacle_power: obstacle_power.clone(),
                rho,
                alpha,
                kappa,
                kappa_sum,
                warm_buf,
                error_sums,
                error_maxima,
                residual_sums,
                density_error,
                residual,
                stats,
                substep_args,
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
                let (bg, buffers) = super::obstacles::no_boundary(d, &self.boundary_layout);
                self._no_boundary = buffers;
                bg
            }
        };
    }

    /// Stage `dfsph_density` over the grid's slot-order positions.
    /// Then stage `dfsph_blocks` reduces the density error.
    pub fn encode_density(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphDensity,
            &self.density,
            &[&self.density_bg, &self.boundary_bg],
            &g.bufs.group_args,
            0,
        );
        g.dispatch(
            e,
            Stage::DfsphBlocks,
            &self.blocks,
            &self.density_blocks_bg,
            self.live_blocks.get(),
        );
    }

    /// Follows the live particle count `n` (see [`GpuNeighbours::set_live`]): the reductions
    /// fold ⌈n / 256⌉ blocks, as the CPU mirror's do.
    pub fn set_live(&self, queue: &wgpu::Queue, n: u32) {
        let blocks = n.div_ceil(crate::params::REDUCE_BLOCK).max(1);
        if blocks != self.live_blocks.get() {
            self.live_blocks.set(blocks);
            let dp = DfsphParams { blocks, ..self.dp };
            queue.write_buffer(&self.params, 0, bytemuck::bytes_of(&dp));
        }
    }

    /// Stage `dfsph_warm` of `solve`.
    pub fn encode_warm(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, solve: Solve) {
        let s = &self.solves[solve_index(solve)];
        g.dispatch(
            e,
            Stage::DfsphWarm,
            &self.warm,
            &s.warm,
            self.live_blocks.get(),
        );
    }

    /// Stage `dfsph_pressure` of `solve` (indirect).
    pub fn encode_pressure(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, solve: Solve) {
        let s = &self.solves[solve_index(solve)];
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphPressure,
            &self.pressure,
            &[&s.pressure, &self.boundary_bg],
            &s.state,
            0,
        );
    }

    /// Stage `dfsph_rate` of `solve` and `dfsph_blocks` of its residuals (indirect: the
    /// control block's ⌈N/256⌉ workgroups cover every group, or 0 once converged).
    pub fn encode_rate(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, solve: Solve) {
        let s = &self.solves[solve_index(solve)];
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphRate,
            &self.rate,
            &[&s.rate, &self.boundary_bg],
            &s.state,
            0,
        );
        g.dispatch_indirect(e, Stage::DfsphBlocks, &self.blocks, &s.blocks, &s.state);
    }

    /// Stage `dfsph_control` of `solve` (one workgroup).
    pub fn encode_control(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, solve: Solve) {
        let s = &self.solves[solve_index(solve)];
        g.dispatch(e, Stage::DfsphControl, &self.control, &s.control, 1);
    }

    /// Stage `dfsph_rate` of `solve` over every particle, dispatched directly: the rate pass
    /// before the warm start, which decides where it applies.
    /// The divergence-free solve's first pass is the step's first: with obstacles it also
    /// clears the power the pressure passes accumulate.
    pub fn encode_first_rate(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, solve: Solve) {
        if let (Some(power), Solve::Divergence) = (&self.power, solve) {
            e.clear_buffer(power, 0, None);
        }
        let s = &self.solves[solve_index(solve)];
        g.dispatch_groups(
            e,
            Stage::DfsphRate,
            &self.rate,
            &[&s.rate, &self.boundary_bg],
            self.live_blocks.get(),
        );
        g.dispatch(
            e,
            Stage::DfsphBlocks,
            &self.blocks,
            &s.blocks,
            self.live_blocks.get(),
        );
    }

    /// A whole solve: rate, warm, pressure, rate, control, then `max_iterations` times
    /// pressure, rate, control (those of a converged solve dispatch nothing).
    pub fn encode_solve(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, solve: Solve) {
        self.encode_first_rate(g, e, solve);
        self.encode_warm(g, e, solve);
        for _ in 0..=self.dp.max_iterations {
            self.encode_pressure(g, e, solve);
            self.encode_rate(g, e, solve);
            self.encode_control(g, e, solve);
        }
    }

    /// Stage `dfsph_accel`.
    pub fn encode_accel(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch_indirect(
            e,
            Stage::DfsphAccel,
            &self.accel,
            &self.accel_bg,
            &g.bufs.group_args,
        );
    }

    /// Stage `dfsph_timestep`: the blocks' maxima, then one workgroup.
    pub fn encode_timestep(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch(
            e,
            Stage::DfsphTimestep,
            &self.timestep_blocks,
            &self.timestep_bg,
            self.step_blocks,
        );
        g.dispatch(
            e,
            Stage::DfsphTimestep,
            &self.timestep,
            &self.timestep_bg,
            1,
        );
    }

    /// Stage `dfsph_predict`: the first viscous substep.
    pub fn encode_predict(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        let n = groups(g.bufs.n.get(), WORKGROUP_SIZE);
        g.dispatch(e, Stage::DfsphPredict, &self.predict, &self.predict_bg, n);
    }

    /// Stage `dfsph_accel` of viscous substep `k` (2..=K), dispatched from the arguments
    /// `dfsph_timestep` wrote: nothing runs past the step's substep count.
    pub fn encode_substep_accel(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder, k: u32) {
        g.dispatch_indirect_groups(
            e,
            Stage::DfsphAccel,
            &self.accel,
            &[&self.accel_bg],
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
            &self.predict,
            &[&self.predict_bg],
            &self.substep_args,
            substep_offset(k) + 16,
        );
    }

    /// The substep count of the last `dfsph_timestep` (1 where K = 1).
    pub fn read_substeps(&self, g: &GpuNeighbours) -> Result<u32> {
        if self.dp.viscous_substeps < 2 {
            return Ok(1);
        }
        Ok(g.read_u32(&self.substep_args, 4)?[3])
    }

    /// Stage `dfsph_integrate`.
    pub fn encode_integrate(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        let n = groups(g.bufs.n.get(), WORKGROUP_SIZE);
        g.dispatch(
            e,
            Stage::DfsphIntegrate,
            &self.integrate,
            &self.integrate_bg,
            n,
        );
    }

    /// Stage `dfsph_stats` (one workgroup).
    pub fn encode_stats(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder) {
        g.dispatch(e, Stage::DfsphStats, &self.stats_pipe, &self.stats_bg, 1);
    }

    /// Reads a solve's control block.
    pub fn read_solve_state(&self, g: &GpuNeighbours, solve: Solve) -> Result<SolveState> {
        let raw = g.read_u32(&self.solves[solve_index(solve)].state, 8)?;
        Ok(SolveState {
            iterations: raw[3],
            done: raw[4] != 0,
            residual: f32::from_bits(raw[5]),
        })
    }

    /// Reads the statistics block (32 bytes).
    pub fn read_stats(&self, g: &GpuNeighbours) -> Result<DfsphStats> {
        let r = g.read_u32(&self.stats, 8)?;
        Ok(DfsphStats::from_words(&[
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7],
        ]))
    }
}
