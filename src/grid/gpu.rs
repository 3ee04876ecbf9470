//! The GPU neighbour pipeline: hash → scan → scatter → order → density, one `encode_<stage>` per
//! pass. [`NeighbourPipelines`] holds the stateless kernels, [`NeighbourBuffers`] the state for
//! one (N, T); both are built once and reused across builds.

use std::sync::Arc;

use glam::Vec3;
use wgpu::util::DeviceExt;

use crate::core::Particles;
use crate::core::Stage;
use crate::gpu::context::GpuContext;
use crate::gpu::timer::StageTimer;
use crate::params::{MAX_TABLE_SIZE, SimParams};
use crate::{Error, Result, shaders};

pub use crate::core::limits::{GROUP, SCAN_BLOCK, WORKGROUP_SIZE};
/// Bytes per particle position (vec4<f32>).
const POSITION_BYTES: u64 = 16;

/// How a binding is declared in WGSL.
#[derive(Clone, Copy)]
pub(crate) enum Binding {
    Uniform,
    Read,
    ReadWrite,
}

pub(crate) fn layout(
    device: &wgpu::Device,
    label: &str,
    bindings: &[Binding],
) -> wgpu::BindGroupLayout {
    let entries: Vec<_> = bindings
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupLayoutEntry {
            binding: i as u32,
            visibility: wgpu::ShaderStages::COMPUTE,
            ty: wgpu::BindingType::Buffer {
                ty: match b {
                    Binding::Uniform => wgpu::BufferBindingType::Uniform,
                    Binding::Read => wgpu::BufferBindingType::Storage { read_only: true },
                    Binding::ReadWrite => wgpu::BufferBindingType::Storage { read_only: false },
                },
                has_dynamic_offset: false,
                min_binding_size: None,
            },
            count: None,
        })
        .collect();
    device.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some(label),
        entries: &entries,
    })
}

pub(crate) fn pipeline(
    device: &wgpu::Device,
    label: &str,
    bgl: &wgpu::BindGroupLayout,
    module: &wgpu::ShaderModule,
    entry: &str,
) -> wgpu::ComputePipeline {
    pipeline_groups(device, label, &[bgl], module, entry)
}

/// [`pipeline`] over several bind groups (group k laid out by `bgls[k]`).
pub(crate) fn pipeline_groups(
    device: &wgpu::Device,
    label: &str,
    bgls: &[&wgpu::BindGroupLayout],
    module: &wgpu::ShaderModule,
    entry: &str,
) -> wgpu::ComputePipeline {
    pipeline_specialised(device, label, bgls, module, entry, &[])
}

/// [`pipeline_groups`] with the module's pipeline-overridable constants set (`override` names
/// and values; those not named keep their defaults).
pub(crate) fn pipeline_specialised(
    device: &wgpu::Device,
    label: &str,
    bgls: &[&wgpu::BindGroupLayout],
    module: &wgpu::ShaderModule,
    entry: &str,
    constants: &[(&str, f64)],
) -> wgpu::ComputePipeline {
    let layouts: Vec<_> = bgls.iter().map(|l| Some(*l)).collect();
    let pl = device.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some(label),
        bind_group_layouts: &layouts,
        immediate_size: 0,
    });
    device.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some(label),
        layout: Some(&pl),
        module,
        entry_point: Some(entry),
        compilation_options: wgpu::PipelineCompilationOptions {
            constants,
            ..Default::default()
        },
        cache: None,
    })
}

/// A storage buffer the host can fill and read back (at least 16 bytes, so N = 0 or a vec4 of
/// padding never makes an empty binding).
pub(crate) fn storage_buffer(device: &wgpu::Device, label: &str, bytes: u64) -> wgpu::Buffer {
    device.create_buffer(&wgpu::BufferDescriptor {
        label: Some(label),
        size: bytes.max(16),
        usage: wgpu::BufferUsages::STORAGE
            | wgpu::BufferUsages::COPY_DST
            | wgpu::BufferUsages::COPY_SRC,
        mapped_at_creation: false,
    })
}

pub(crate) fn bind_group(
    device: &wgpu::Device,
    label: &str,
    layout: &wgpu::BindGroupLayout,
    buffers: &[&wgpu::Buffer],
) -> wgpu::BindGroup {
    let entries: Vec<_> = buffers
        .iter()
        .enumerate()
        .map(|(i, b)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: b.as_entire_binding(),
        })
        .collect();
    device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some(label),
        layout,
        entries: &entries,
    })
}

/// The compiled kernels and their bind group layouts; independent of N and T.
pub struct NeighbourPipelines {
    hash_layout: wgpu::BindGroupLayout,
    scan_layout: wgpu::BindGroupLayout,
    scatter_layout: wgpu::BindGroupLayout,
    order_layout: wgpu::BindGroupLayout,
    reorder_layout: wgpu::BindGroupLayout,
    density_layout: wgpu::BindGroupLayout,
    hash: wgpu::ComputePipeline,
    scan_reduce: wgpu::ComputePipeline,
    scan_block: wgpu::ComputePipeline,
    scan_block_top: wgpu::ComputePipeline,
    scatter: wgpu::ComputePipeline,
    order: wgpu::ComputePipeline,
    reorder: wgpu::ComputePipeline,
    density: wgpu::ComputePipeline,
}

impl NeighbourPipelines {
    /// Compiles every stage.
    pub fn new(ctx: &GpuContext) -> Result<Self> {
        use Binding::*;
        ctx.scoped(|| {
            let d = &ctx.device;
            let hash_layout = layout(
                d,
                "sph.hash",
                &[Uniform, Read, ReadWrite, ReadWrite, ReadWrite],
            );
            let scan_layout = layout(d, "sph.scan", &[Uniform, ReadWrite, ReadWrite]);
            let scatter_layout = layout(d, "sph.scatter", &[Uniform, Read, Read, Read, ReadWrite]);
            let order_layout = layout(
                d,
                "sph.order",
                &[Uniform, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite],
            );
            let reorder_layout = layout(
                d,
                "sph.reorder",
                &[
                    Uniform, Read, Read, Read, Read, ReadWrite, ReadWrite, ReadWrite,
                ],
            );
            let density_layout = layout(
                d,
                "sph.density",
                &[Uniform, Read, Read, ReadWrite, Read, Uniform],
            );
            let hash_m = ctx.shader("sph.hash", shaders::HASH);
            let scan_m = ctx.shader("sph.scan", shaders::SCAN);
            let scatter_m = ctx.shader("sph.scatter", shaders::SCATTER);
            let order_m = ctx.shader("sph.order", shaders::ORDER);
            let reorder_m = ctx.shader("sph.reorder", shaders::REORDER);
            let density_m = ctx.shader("sph.density", shaders::DENSITY);
            Self {
                hash: pipeline(d, "sph.hash", &hash_layout, &hash_m, "hash"),
                scan_reduce: pipeline(d, "sph.scan_reduce", &scan_layout, &scan_m, "scan_reduce"),
                scan_block: pipeline(d, "sph.scan_block", &scan_layout, &scan_m, "scan_block"),
                scan_block_top: pipeline(
                    d,
                    "sph.scan_block_top",
                    &scan_layout,
                    &scan_m,
                    "scan_block_top",
                ),
                scatter: pipeline(d, "sph.scatter", &scatter_layout, &scatter_m, "scatter"),
                order: pipeline(d, "sph.order", &order_layout, &order_m, "order"),
                reorder: pipeline(d, "sph.reorder", &reorder_layout, &reorder_m, "reorder"),
                density: pipeline(d, "sph.density", &density_layout, &density_m, "density"),
                hash_layout,
                scan_layout,
                scatter_layout,
                order_layout,
                reorder_layout,
                density_layout,
            }
        })
    }
}

/// The largest particle count and table size this device can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capacity {
    /// Largest N.
    pub max_particles: u32,
    /// Largest power-of-two T.
    pub max_table_size: u32,
}

/// Works out what fits in `limits`.
pub fn capacity(limits: &wgpu::Limits) -> Capacity {
    let binding = limits
        .max_storage_buffer_binding_size
        .min(limits.max_buffer_size);
    let groups = limits.max_compute_workgroups_per_dimension as u64;
    let max_particles = (binding / POSITION_BYTES)
        .min(groups * WORKGROUP_SIZE as u64)
        .min(u32::MAX as u64) as u32;
    // slot_start holds T + 1 words; the first scan level needs T / SCAN_BLOCK workgroups.
    let by_binding = binding / 4 - 1;
    let by_groups = groups * SCAN_BLOCK as u64;
    let fit = by_binding.min(by_groups).min(MAX_TABLE_SIZE as u64);
    let max_table_size = 1u32 << (63 - fit.leading_zeros());
    Capacity {
        max_particles,
        max_table_size,
    }
}

/// The most storage buffers one stage binds, and that stage's name: what an adapter must grant
/// per shader stage. Counted from the stages' full sources (every `var<storage>` a stage
/// declares is an entry of its bind group layout). WebGPU grants 8 unless a page asks for more,
/// Chromium's SwiftShader offers 10, Vulkan drivers (lavapipe included) far more.
///
/// Worked example: `dfsph_rate` declares 10 (positions, slot starts, velocities, ρ, α, the
/// solves' fields, the groups, the residual totals, the obstacles' particles and their grid),
/// as many as `dfsph_pressure` and the most of any stage: `(10, "dfsph_rate")`.
pub fn storage_buffers_needed() -> (u32, &'static str) {
    // The sources are the binary's own: counted once.
    static NEEDED: std::sync::OnceLock<(u32, &'static str)> = std::sync::OnceLock::new();
    *NEEDED.get_or_init(|| most_declared("var<storage"))
}

/// The most uniform blocks one stage declares, and that stage's name (at most
/// [`MAX_UNIFORM_BLOCKS`]). Worked example: `dfsph_pressure` declares 7 (`params`, `fluid`,
/// `dfsph`, `solve`, `step_state`, `group_args`, `iteration`): `(7, "dfsph_pressure")`.
pub fn uniform_blocks_declared() -> (u32, &'static str) {
    most_declared("var<uniform")
}

/// The most uniform blocks a stage may declare. Mesa 22.3's lavapipe (the Vulkan driver of
/// machines without a GPU, CI's) records the uniform values a shader branches on in a table of
/// eight constant-buffer slots, slot 0 being its push constants; a stage with an eighth uniform
/// block has it write that block's entries past the table's end, into the heap, while it builds
/// the pipeline (valgrind: "Invalid write of size 4" under `create_compute_pipeline`). The run
/// then dies later at random ("malloc(): unaligned tcache chunk detected", SIGSEGV, a panic in
/// naga). WebGPU guarantees 12 per stage, so the bound is lavapipe's alone.
pub const MAX_UNIFORM_BLOCKS: u32 = 7;

// The most declarations starting with `pattern` in one stage's full source, and its name.
fn most_declared(pattern: &str) -> (u32, &'static str) {
    Stage::ALL
        .iter()
        .filter_map(|s| {
            let src = s.shader()?;
            let kernel = crate::shaders::uses_kernel(src).then(crate::kernel::Kernel::default);
            let full = crate::shaders::source_with(src, kernel);
            Some((full.matches(pattern).count() as u32, s.name()))
        })
        .max_by_key(|&(n, _)| n)
        .unwrap_or((0, "none"))
}

/// Fails with one line naming the limit when N or T do not fit the device.
pub fn check_limits(limits: &wgpu::Limits, n: u32, t: u32) -> Result<()> {
    let (buffers, stage) = storage_buffers_needed();
    if limits.max_compute_invocations_per_workgroup < WORKGROUP_SIZE
        || limits.max_compute_workgroup_size_x < WORKGROUP_SIZE
        || limits.max_storage_buffers_per_shader_stage < buffers
    {
        return Err(Error::LimitExceeded(format!(
            "this adapter allows {} invocations per workgroup and {} storage buffers per shader stage; gpu-sph needs {WORKGROUP_SIZE} and {buffers} (stage {stage}): use another adapter (WGPU_ADAPTER_NAME) or --cpu",
            limits.max_compute_invocations_per_workgroup,
            limits.max_storage_buffers_per_shader_stage
        )));
    }
    let cap = capacity(limits);
    if n > cap.max_particles {
        return Err(Error::LimitExceeded(format!(
            "-n {n} does not fit this adapter (max_storage_buffer_binding_size {} B at {POSITION_BYTES} B per particle, {} workgroups per dispatch): the largest N that fits is {}; pass -n {} or fewer",
            limits.max_storage_buffer_binding_size,
            limits.max_compute_workgroups_per_dimension,
            cap.max_particles,
            cap.max_particles
        )));
    }
    if t > cap.max_table_size {
        return Err(Error::LimitExceeded(format!(
            "--table-size {t} does not fit this adapter (max_storage_buffer_binding_size {} B holds T + 1 slot offsets of 4 B): the largest table that fits is {}; pass --table-size {} or smaller",
            limits.max_storage_buffer_binding_size, cap.max_table_size, cap.max_table_size
        )));
    }
    Ok(())
}

/// Candidates the density and order walks take per loop iteration (`UNROLL` in common.wgsl).
pub const UNROLL: u64 = 4;
/// Mesa's llvmpipe (lavapipe) ends an invocation after this many loop iterations in total.
pub const LLVMPIPE_LOOP_LIMIT: u64 = 65_535;

/// On llvmpipe, fails when a query could run past the driver's loop limit, which would
/// silently truncate the walk. `largest_slot` is the fullest slot after a build, `group_size`
/// the density group size of the run's [`SimParams`].
pub fn check_loop_budget(
    info: &wgpu::AdapterInfo,
    n: u32,
    largest_slot: u32,
    group_size: u32,
) -> Result<()> {
    if !info.name.to_lowercase().contains("llvmpipe") {
        return Ok(());
    }
    let candidates = (n as u64).min(27 * largest_slot as u64);
    // A density group walks once per distinct query range among its members: at most
    // group_size rounds, and only as many as the fullest slot has particles.
    let rounds = (group_size.clamp(1, GROUP) as u64).min(largest_slot.max(1) as u64);
    // Per round: unrolled iterations, the at most UNROLL − 1 tail iterations of each of 27
    // slots, and the cell and de-duplication loops.
    let iterations = rounds * (candidates / UNROLL + 27 * UNROLL + 600);
    if iterations > LLVMPIPE_LOOP_LIMIT {
        return Err(Error::LimitExceeded(format!(
            "this table puts up to {candidates} particles in one neighbour query, more than lavapipe can walk (it ends a shader invocation after {LLVMPIPE_LOOP_LIMIT} loop iterations): pass a larger --table-size or use --cpu"
        )));
    }
    Ok(())
}

/// A uniform buffer holding `bytes` that the host may rewrite.
fn uniform_buffer(d: &wgpu::Device, label: &str, bytes: &[u8]) -> wgpu::Buffer {
    d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents: bytes,
        usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
    })
}

/// The scan's levels over a table of `t` slots (`slot_start`, then each level's block sums,
/// then a zero above the top) bound to their passes, and the buffers the bind groups hold
/// (the levels' data and parameters), kept alive with them.
fn bind_scan_levels(
    d: &wgpu::Device,
    pipes: &NeighbourPipelines,
    slot_start: &wgpu::Buffer,
    t: u32,
) -> (Vec<ScanLevel>, Vec<wgpu::Buffer>) {
    let storage = |label: &str, bytes: u64| storage_buffer(d, label, bytes);
    let uniform = |label: &str, bytes: &[u8]| uniform_buffer(d, label, bytes);
    let lens = scan_levels(t);
    let zero = storage("sph.scan.zero", 4);
    let mut level_data = Vec::new();
    for (k, &len) in lens.iter().enumerate().skip(1) {
        level_data.push(storage(&format!("sph.scan.level{k}"), (len as u64 + 1) * 4));
    }
    let data_of = |k: usize| {
        if k == 0 {
            slot_start
        } else {
            &level_data[k - 1]
        }
    };
    let top = lens.len() - 1;
    let mut scan = Vec::new();
    let mut scan_params = Vec::new();
    for (k, &len) in lens.iter().enumerate() {
        let p = uniform(
            &format!("sph.scan.params{k}"),
            bytemuck::cast_slice(&[len, 0, 0, 0]),
        );
        let above = if k == top { &zero } else { data_of(k + 1) };
        let reduce = (k < top).then(|| {
            bind_group(
                d,
                "sph.scan_reduce",
                &pipes.scan_layout,
                &[&p, data_of(k), above],
            )
        });
        let block = bind_group(
            d,
            "sph.scan_block",
            &pipes.scan_layout,
            &[&p, data_of(k), above],
        );
        scan.push(ScanLevel { len, reduce, block });
        scan_params.push(p);
    }
    let mut keep = level_data;
    keep.push(zero);
    keep.extend(scan_params);
    (scan, keep)
}

/// One level of the multi-dispatch scan.
struct ScanLevel {
    len: u32,
    reduce: Option<wgpu::BindGroup>,
    block: wgpu::BindGroup,
}

/// The lengths of the scan levels for a table of `t` slots: `t`, then block sums until one
/// block holds a level.
pub fn scan_levels(t: u32) -> Vec<u32> {
    let mut lens = vec![t];
    while *lens.last().unwrap_or(&0) > SCAN_BLOCK {
        let last = lens[lens.len() - 1];
        lens.push(last.div_ceil(SCAN_BLOCK));
    }
    lens
}

/// Every buffer of the pipeline for one (N, T), with the bind groups that use them.
pub struct NeighbourBuffers {
    /// Live particle count N: the stages run over particles 0..N (an emitter raises it; see
    /// [`GpuNeighbours::set_live`]).
    pub n: std::cell::Cell<u32>,
    /// The most particles the buffers hold (the scene's maximum, emitters included).
    pub capacity: u32,
    // The uniform block's contents, whose `n` follows the live count.
    host_params: std::cell::Cell<SimParams>,
    /// Particles per density group (src/params.rs group_size): the walkers' member count.
    pub group_size: u32,
    /// Table size.
    pub t: u32,
    /// The uniform block.
    pub params: wgpu::Buffer,
    /// Positions as vec4 (N).
    pub positions: wgpu::Buffer,
    /// Counts after `hash`, slot starts (T + 1) after `scan`.
    pub slot_start: wgpu::Buffer,
    /// Slot of each particle (N).
    pub particle_slot: wgpu::Buffer,
    /// Atomic rank of each particle in its slot (N).
    pub particle_rank: wgpu::Buffer,
    /// Ids grouped by slot, arbitrary order within a slot (N).
    pub unordered_ids: wgpu::Buffer,
    /// Ids grouped by slot, ascending within a slot (N).
    pub sorted_ids: wgpu::Buffer,
    /// Velocities as vec4 (N), in the same order as `positions`.
    pub velocities: wgpu::Buffer,
    /// Original (input) index of each particle of `positions` (N).
    pub particle_id: wgpu::Buffer,
    /// Positions in slot order (N).
    pub sorted_pos: wgpu::Buffer,
    /// Velocities in slot order (N).
    pub sorted_vel: wgpu::Buffer,
    /// Original index of each particle in slot order (N).
    pub sorted_id: wgpu::Buffer,
    /// Density of each particle, slot order (N).
    pub density: wgpu::Buffer,
    /// The density groups `order` lists: [first, end) in slot order, up to N of them.
    pub group_range: wgpu::Buffer,
    /// (workgroups, 1, 1, groups): the density pass's indirect dispatch arguments and the
    /// number of groups `order` listed; reset from `group_args_reset` before each `order`.
    pub group_args: wgpu::Buffer,
    group_args_reset: wgpu::Buffer,
    // Kept alive for the bind groups that reference them.
    _scan_buffers: Vec<wgpu::Buffer>,
    scan: Vec<ScanLevel>,
    hash_bg: wgpu::BindGroup,
    scatter_bg: wgpu::BindGroup,
    order_bg: wgpu::BindGroup,
    reorder_bg: wgpu::BindGroup,
    density_bg: wgpu::BindGroup,
}

impl NeighbourBuffers {
    /// The run's kernel, for the stages that evaluate it.
    pub fn kernel(&self) -> crate::kernel::Kernel {
        self.host_params.get().kernel_kind()
    }
}

impl NeighbourBuffers {
    /// Allocates every buffer for `params.n` particles (the capacity; all live at first) and
    /// `params.table_size` slots.
    /// The group size [`AUTO_GROUP`](crate::params::AUTO_GROUP) becomes the adapter's
    /// ([`resolve_group_size`](crate::params::resolve_group_size)); the uniform block and
    /// [`Self::group_size`] hold the size the walks run with.
    pub fn new(ctx: &GpuContext, pipes: &NeighbourPipelines, params: &SimParams) -> Result<Self> {
        let params = &SimParams {
            group_size: crate::params::resolve_group_size(
                params.group_size,
                ctx.info.device_type,
                ctx.info.backend,
            ),
            ..*params
        };
        let (n, t) = (params.n, params.table_size);
        check_limits(&ctx.limits, n, t)?;
        ctx.scoped(|| {
            let d = &ctx.device;
            let storage = |label: &str, bytes: u64| storage_buffer(d, label, bytes);
            let uniform = |label: &str, bytes: &[u8]| uniform_buffer(d, label, bytes);
            let n64 = n as u64;
            let params_buf = uniform("sph.params", bytemuck::bytes_of(params));
            let positions = storage("sph.positions", n64 * POSITION_BYTES);
            let slot_start = storage("sph.slot_start", (t as u64 + 1) * 4);
            let particle_slot = storage("sph.particle_slot", n64 * 4);
            let particle_rank = storage("sph.particle_rank", n64 * 4);
            let unordered_ids = storage("sph.unordered_ids", n64 * 4);
            let sorted_ids = storage("sph.sorted_ids", n64 * 4);
            let velocities = storage("sph.velocities", n64 * POSITION_BYTES);
            let particle_id = storage("sph.particle_id", n64 * 4);
            let sorted_pos = storage("sph.sorted_pos", n64 * POSITION_BYTES);
            let sorted_vel = storage("sph.sorted_vel", n64 * POSITION_BYTES);
            let sorted_id = storage("sph.sorted_id", n64 * 4);
            let density = storage("sph.density", n64 * 4);
            let group_range = storage("sph.group_range", n64 * 8);
            let group_args = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("sph.group_args"),
                contents: bytemuck::cast_slice(&[0u32, 1, 1, 0]),
                // The walks read it as a uniform (a storage binding fewer per stage).
                usage: wgpu::BufferUsages::STORAGE
                    | wgpu::BufferUsages::UNIFORM
                    | wgpu::BufferUsages::INDIRECT
                    | wgpu::BufferUsages::COPY_DST
                    | wgpu::BufferUsages::COPY_SRC,
            });
            let group_args_reset = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some("sph.group_args_reset"),
                contents: bytemuck::cast_slice(&[0u32, 1, 1, 0]),
                usage: wgpu::BufferUsages::COPY_SRC,
            });

            let (scan, keep) = bind_scan_levels(d, pipes, &slot_start, t);
            let hash_bg = bind_group(
                d,
                "sph.hash",
                &pipes.hash_layout,
                &[
                    &params_buf,
                    &positions,
                    &slot_start,
                    &particle_slot,
                    &particle_rank,
                ],
            );
            let scatter_bg = bind_group(
                d,
                "sph.scatter",
                &pipes.scatter_layout,
                &[
                    &params_buf,
                    &particle_slot,
                    &particle_rank,
                    &slot_start,
                    &unordered_ids,
                ],
            );
            let order_bg = bind_group(
                d,
                "sph.order",
                &pipes.order_layout,
                &[
                    &params_buf,
                    &particle_slot,
                    &slot_start,
                    &unordered_ids,
                    &sorted_ids,
                    &group_range,
                    &group_args,
                ],
            );
            let reorder_bg = bind_group(
                d,
                "sph.reorder",
                &pipes.reorder_layout,
                &[
                    &params_buf,
                    &sorted_ids,
                    &positions,
                    &velocities,
                    &particle_id,
                    &sorted_pos,
                    &sorted_vel,
                    &sorted_id,
                ],
            );
            let density_bg = bind_group(
                d,
                "sph.density",
                &pipes.density_layout,
                &[
                    &params_buf,
                    &sorted_pos,
                    &slot_start,
                    &density,
                    &group_range,
                    &group_args,
                ],
            );
            Self {
                n: std::cell::Cell::new(n),
                capacity: n,
                host_params: std::cell::Cell::new(*params),
                group_size: params.group_size,
                t,
                params: params_buf,
                positions,
                slot_start,
                particle_slot,
                particle_rank,
                unordered_ids,
                sorted_ids,
                velocities,
                particle_id,
                sorted_pos,
                sorted_vel,
                sorted_id,
                density,
                group_range,
                group_args,
                group_args_reset,
                _scan_buffers: keep,
                scan,
                hash_bg,
                scatter_bg,
                order_bg,
                reorder_bg,
                density_bg,
            }
        })
    }
}

/// Pipelines plus buffers: the whole GPU neighbour search for one (N, T).
pub struct GpuNeighbours {
    /// The shared device.
    pub ctx: Arc<GpuContext>,
    /// The kernels.
    pub pipes: NeighbourPipelines,
    /// The state.
    pub bufs: NeighbourBuffers,
    /// Per-stage timestamp queries, where the adapter has them.
    pub timer: Option<StageTimer>,
    /// Compute dispatches encoded so far (each pass counts one; the scan's pass adds its
    /// further dispatches), for `--bench` and the dispatch-count test.
    pub dispatches: std::cell::Cell<u64>,
}

pub(crate) fn to_vec4(v: &[Vec3]) -> Vec<[f32; 4]> {
    v.iter().map(|p| [p.x, p.y, p.z, 0.0]).collect()
}

pub(crate) fn groups(items: u32, per_group: u32) -> u32 {
    items.div_ceil(per_group).max(1)
}

impl GpuNeighbours {
    /// Compiles the kernels and allocates buffers for `params`.
    pub fn new(ctx: Arc<GpuContext>, params: &SimParams) -> Result<Self> {
        let pipes = NeighbourPipelines::new(&ctx)?;
        let bufs = NeighbourBuffers::new(&ctx, &pipes, params)?;
        let timer = ctx.timestamps.then(|| StageTimer::new(&ctx));
        Ok(Self {
            ctx,
            pipes,
            bufs,
            timer,
            dispatches: Default::default(),
        })
    }

    /// Sets the live count N (at most the capacity): every stage encoded after runs over
    /// particles 0..N, and the uniform block says so.
    pub fn set_live(&self, n: u32) {
        assert!(n <= self.bufs.capacity, "{n} particles exceed the capacity");
        if n != self.bufs.n.get() {
            let mut p = self.bufs.host_params.get();
            p.n = n;
            self.bufs.host_params.set(p);
            self.bufs.n.set(n);
            self.ctx
                .queue
                .write_buffer(&self.bufs.params, 0, bytemuck::bytes_of(&p));
        }
    }

    /// Copies the particle state to the GPU (positions and velocities as vec4, w = 0) and
    /// makes its length the live count; at most the capacity.
    pub fn upload(&self, state: &Particles) {
        self.set_live(state.len() as u32);
        let q = &self.ctx.queue;
        q.write_buffer(
            &self.bufs.positions,
            0,
            bytemuck::cast_slice(&to_vec4(&state.pos)),
        );
        q.write_buffer(
            &self.bufs.velocities,
            0,
            bytemuck::cast_slice(&to_vec4(&state.vel)),
        );
        q.write_buffer(&self.bufs.particle_id, 0, bytemuck::cast_slice(&state.id));
    }

    /// Uploads positions in input order, with zero velocities.
    pub fn upload_positions(&self, positions: &[Vec3]) {
        self.upload(&Particles::new(
            positions.to_vec(),
            vec![Vec3::ZERO; positions.len()],
        ));
    }

    /// Overwrites a vec4 buffer from the host (w = 0).
    pub fn write_vec3(&self, buffer: &wgpu::Buffer, data: &[Vec3]) {
        self.ctx
            .queue
            .write_buffer(buffer, 0, bytemuck::cast_slice(&to_vec4(data)));
    }

    /// Reads `len` vec4s from `buffer`, dropping w.
    pub fn read_vec3(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<Vec3>> {
        crate::gpu::context::finish(self.read_vec3_async(buffer, len), "read_vec3_async")
    }

    /// [`GpuNeighbours::read_vec3`], awaited (a web page's form).
    pub async fn read_vec3_async(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<Vec3>> {
        let raw: Vec<[f32; 4]> = self.ctx.readback_async(buffer, len).await?;
        Ok(raw.iter().map(|v| Vec3::new(v[0], v[1], v[2])).collect())
    }

    /// Reads the w components of `len` vec4s from `buffer`.
    pub fn read_w(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        crate::gpu::context::finish(self.read_w_async(buffer, len), "read_w_async")
    }

    /// [`GpuNeighbours::read_w`], awaited (a web page's form).
    pub async fn read_w_async(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        let raw: Vec<[f32; 4]> = self.ctx.readback_async(buffer, len).await?;
        Ok(raw.iter().map(|v| v[3]).collect())
    }

    /// Overwrites a `u32` buffer from the host (verification feeds stages the CPU's inputs).
    pub fn write_u32(&self, buffer: &wgpu::Buffer, data: &[u32]) {
        self.ctx
            .queue
            .write_buffer(buffer, 0, bytemuck::cast_slice(data));
    }

    pub(crate) fn pass<'e>(
        &'e self,
        encoder: &'e mut wgpu::CommandEncoder,
        stage: Stage,
    ) -> wgpu::ComputePass<'e> {
        self.dispatches.set(self.dispatches.get() + 1);
        encoder.begin_compute_pass(&wgpu::ComputePassDescriptor {
            label: Some(stage.label()),
            timestamp_writes: self.timer.as_ref().and_then(|t| t.writes(stage)),
        })
    }

    /// One compute pass of `stage`: `pipe` with `bg`, `groups_x` workgroups.
    pub(crate) fn dispatch(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        stage: Stage,
        pipe: &wgpu::ComputePipeline,
        bg: &wgpu::BindGroup,
        groups_x: u32,
    ) {
        self.dispatch_groups(encoder, stage, pipe, &[bg], groups_x);
    }

    /// [`GpuNeighbours::dispatch`] with bind groups 0, 1, … from `bgs`.
    pub(crate) fn dispatch_groups(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        stage: Stage,
        pipe: &wgpu::ComputePipeline,
        bgs: &[&wgpu::BindGroup],
        groups_x: u32,
    ) {
        self.bound_pass(encoder, stage, pipe, bgs)
            .dispatch_workgroups(groups_x, 1, 1);
    }

    /// A compute pass of `stage` with `pipe` set and bind groups 0, 1, … from `bgs`.
    fn bound_pass<'e>(
        &'e self,
        encoder: &'e mut wgpu::CommandEncoder,
        stage: Stage,
        pipe: &wgpu::ComputePipeline,
        bgs: &[&wgpu::BindGroup],
    ) -> wgpu::ComputePass<'e> {
        let mut pass = self.pass(encoder, stage);
        pass.set_pipeline(pipe);
        for (k, bg) in bgs.iter().enumerate() {
            pass.set_bind_group(k as u32, *bg, &[]);
        }
        pass
    }

    /// One compute pass of `stage` with bind groups 0, 1, … from `bgs`, dispatched indirectly
    /// from the arguments (x, y, z) at byte `offset` of `args`.
    pub(crate) fn dispatch_indirect_groups(
        &self,
        encoder: &mut wgpu::CommandEncoder,
        stage: Stage,
        pipe: &wgpu::ComputePipeline,
        bgs: &[&wgpu::BindGroup],
        args: &wgpu::Buffer,
        offset: u64,
    ) {
        self.bound_pass(encoder, stage, pipe, bgs)
            .dispatch_workgroups_indirect(args, offset);
    }

    /// Zeroes the slot counts (a GPU-side clear, no upload).
    pub fn encode_clear(&self, encoder: &mut wgpu::CommandEncoder) {
        encoder.clear_buffer(&self.bufs.slot_start, 0, None);
    }

    /// Stage `hash`: one dispatch over N.
    pub fn encode_hash(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = self.pass(encoder, Stage::Hash);
        pass.set_pipeline(&self.pipes.hash);
        pass.set_bind_group(0, &self.bufs.hash_bg, &[]);
        pass.dispatch_workgroups(groups(self.bufs.n.get(), WORKGROUP_SIZE), 1, 1);
    }

    /// Stage `scan`: reduce up the levels, then scan back down from the level below the top
    /// (which sums the top's entries itself): 2 (levels − 1) dispatches, 1 for one level.
    pub fn encode_scan(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = self.pass(encoder, Stage::Scan);
        let levels = &self.bufs.scan;
        let mut dispatched = 0;
        pass.set_pipeline(&self.pipes.scan_reduce);
        for level in levels {
            if let Some(bg) = &level.reduce {
                pass.set_bind_group(0, bg, &[]);
                pass.dispatch_workgroups(groups(level.len, SCAN_BLOCK), 1, 1);
                dispatched += 1;
            }
        }
        // The top (one block) is scanned only where it is the only level.
        let below_top = levels.len().saturating_sub(2);
        for (k, level) in levels.iter().enumerate().rev() {
            let pipe = if levels.len() == 1 || k < below_top {
                &self.pipes.scan_block
            } else if k == below_top {
                &self.pipes.scan_block_top
            } else {
                continue;
            };
            pass.set_pipeline(pipe);
            pass.set_bind_group(0, &level.block, &[]);
            pass.dispatch_workgroups(groups(level.len, SCAN_BLOCK), 1, 1);
            dispatched += 1;
        }
        // The pass counted one.
        self.note_dispatches(dispatched - 1);
    }

    /// Counts `k` more dispatches than passes (a pass that dispatches several times).
    pub(crate) fn note_dispatches(&self, k: u64) {
        self.dispatches.set(self.dispatches.get() + k);
    }

    /// Stage `scatter`: one dispatch over N.
    pub fn encode_scatter(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = self.pass(encoder, Stage::Scatter);
        pass.set_pipeline(&self.pipes.scatter);
        pass.set_bind_group(0, &self.bufs.scatter_bg, &[]);
        pass.dispatch_workgroups(groups(self.bufs.n.get(), WORKGROUP_SIZE), 1, 1);
    }

    /// Stage `order`: one dispatch over N (after resetting the group list's arguments).
    pub fn encode_order(&self, encoder: &mut wgpu::CommandEncoder) {
        let b = &self.bufs;
        encoder.copy_buffer_to_buffer(&b.group_args_reset, 0, &b.group_args, 0, 16);
        let mut pass = self.pass(encoder, Stage::Order);
        pass.set_pipeline(&self.pipes.order);
        pass.set_bind_group(0, &self.bufs.order_bg, &[]);
        pass.dispatch_workgroups(groups(self.bufs.n.get(), WORKGROUP_SIZE), 1, 1);
    }

    /// Stage `density`: one indirect dispatch, one invocation per group `order` listed.
    pub fn encode_density(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = self.pass(encoder, Stage::Density);
        pass.set_pipeline(&self.pipes.density);
        pass.set_bind_group(0, &self.bufs.density_bg, &[]);
        pass.dispatch_workgroups_indirect(&self.bufs.group_args, 0);
    }

    /// Stage `reorder`: one dispatch over N.
    pub fn encode_reorder(&self, encoder: &mut wgpu::CommandEncoder) {
        let mut pass = self.pass(encoder, Stage::Reorder);
        pass.set_pipeline(&self.pipes.reorder);
        pass.set_bind_group(0, &self.bufs.reorder_bg, &[]);
        pass.dispatch_workgroups(groups(self.bufs.n.get(), WORKGROUP_SIZE), 1, 1);
    }

    /// The grid build: clear, hash, scan, scatter, order, reorder.
    pub fn encode_build(&self, encoder: &mut wgpu::CommandEncoder) {
        self.encode_clear(encoder);
        self.encode_hash(encoder);
        self.encode_scan(encoder);
        self.encode_scatter(encoder);
        self.encode_order(encoder);
        self.encode_reorder(encoder);
    }

    /// Compute dispatches in one grid build plus density.
    pub fn dispatches_per_build(&self) -> usize {
        // hash, scan (2 (levels − 1), or 1), scatter, order, reorder, density
        5 + (2 * (self.bufs.scan.len() - 1)).max(1)
    }

    /// A fresh command encoder.
    pub fn encoder(&self) -> wgpu::CommandEncoder {
        self.ctx
            .device
            .create_command_encoder(&wgpu::CommandEncoderDescriptor {
                label: Some("sph.step"),
            })
    }

    /// Encodes with `f`, submits, and waits, catching validation errors.
    pub fn run(&self, f: impl FnOnce(&Self, &mut wgpu::CommandEncoder)) -> Result<()> {
        self.ctx.scoped(|| {
            let mut encoder = self.encoder();
            f(self, &mut encoder);
            if let Some(t) = &self.timer {
                t.encode_resolve(&mut encoder);
            }
            self.ctx.submit_and_wait(encoder)
        })?
    }

    /// Full build plus density on `positions`; returns the densities in input order.
    pub fn densities(&self, positions: &[Vec3]) -> Result<Vec<f32>> {
        self.upload_positions(positions);
        self.run(|g, e| {
            g.encode_build(e);
            g.encode_density(e);
        })?;
        let n = self.bufs.n.get() as usize;
        let sorted = self.read_f32(&self.bufs.density, n)?;
        let ids = self.read_u32(&self.bufs.sorted_id, n)?;
        let mut out = vec![0.0; n];
        for (&id, &d) in ids.iter().zip(&sorted) {
            out[id as usize] = d;
        }
        Ok(out)
    }

    /// Reads `len` u32s from `buffer`.
    pub fn read_u32(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<u32>> {
        self.ctx.readback(buffer, len)
    }

    /// [`GpuNeighbours::read_u32`], awaited (a web page's form).
    pub async fn read_u32_async(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<u32>> {
        self.ctx.readback_async(buffer, len).await
    }

    /// Reads `len` f32s from `buffer`.
    pub fn read_f32(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        self.ctx.readback(buffer, len)
    }

    /// [`GpuNeighbours::read_f32`], awaited (a web page's form).
    pub async fn read_f32_async(&self, buffer: &wgpu::Buffer, len: usize) -> Result<Vec<f32>> {
        self.ctx.readback_async(buffer, len).await
    }

    /// [`GpuNeighbours::read_f32_async`] from byte `offset` of `buffer`.
    pub async fn read_f32_at_async(
        &self,
        buffer: &wgpu::Buffer,
        offset: u64,
        len: usize,
    ) -> Result<Vec<f32>> {
        self.ctx.readback_at_async(buffer, offset, len).await
    }
}

/// The workgroups B of the time step's first level (both solvers) for up to `capacity`
/// particles: ceil(capacity / 256) on a GPU, so that each invocation takes one particle and the
/// reduction spreads over the whole chip (one workgroup alone took 1.8 ms of an 8.3 ms step at
/// 1M on an H200); on a software adapter [`SOFTWARE_BLOCKS`], since llvmpipe pays per workgroup
/// for its barriers: there ceil(N / 256) blocks measured 3× slower than one workgroup at 20k,
/// and 2, 4 or 8 blocks as fast as one at 20k and 1.2–1.6× faster at 100k (benchmarks.md).
pub(crate) fn timestep_blocks(capacity: u32, kind: wgpu::DeviceType) -> u32 {
    let per_particle = groups(capacity, WORKGROUP_SIZE);
    match kind {
        wgpu::DeviceType::Cpu => per_particle.min(SOFTWARE_BLOCKS),
        _ => per_particle,
    }
}

/// [`timestep_blocks`] on a software adapter.
pub(crate) const SOFTWARE_BLOCKS: u32 = 4;
