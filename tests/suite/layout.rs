//! Every Rust twin of a WGSL struct, field for field: the same names in the same order at the
//! same byte offsets, and the same size, read from the shaders with naga. Padding members
//! (`_pad…`, `pad…`) are matched by the size alone. A field added, moved or retyped on one side
//! only fails here, not in a run. Constants the Rust and the WGSL share are compared too.

use std::mem::{offset_of, size_of};

use gpu_sph::core::limits;
use gpu_sph::shaders;

fn module(stage_source: &str) -> naga::Module {
    let src = shaders::source_with(stage_source, Some(gpu_sph::kernel::Kernel::default()));
    naga::front::wgsl::parse_str(&src).unwrap_or_else(|e| panic!("{}", e.emit_to_string(&src)))
}

/// The named members of WGSL struct `name` (padding left out) with their offsets, and its size.
fn wgsl_layout(m: &naga::Module, name: &str) -> (Vec<(String, usize)>, usize) {
    let (_, ty) = m
        .types
        .iter()
        .find(|(_, t)| t.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no struct {name} in the shader"));
    let naga::TypeInner::Struct { members, span } = &ty.inner else {
        panic!("{name} is not a struct")
    };
    let fields = members
        .iter()
        .filter_map(|m| {
            let n = m.name.clone()?;
            (!n.starts_with("_pad") && !n.starts_with("pad")).then_some((n, m.offset as usize))
        })
        .collect();
    (fields, *span as usize)
}

/// Asserts that WGSL struct `$wgsl` in `$src` and Rust type `$ty` have the fields listed, at the
/// same offsets, and the same size.
macro_rules! twin {
    ($src:expr, $wgsl:literal, $ty:ty, [$($field:ident),* $(,)?]) => {{
        let (fields, span) = wgsl_layout(&module($src), $wgsl);
        let rust: Vec<(String, usize)> =
            vec![$((stringify!($field).to_string(), offset_of!($ty, $field))),*];
        assert_eq!(fields, rust, "struct {}: WGSL members against the Rust fields", $wgsl);
        assert_eq!(span, size_of::<$ty>(), "struct {}: WGSL size against Rust", $wgsl);
    }};
}

#[test]
fn grid_and_fluid_blocks() {
    use gpu_sph::params::{DfsphParams, FluidParams, SimParams, SolveParams};
    twin!(
        shaders::HASH,
        "SimParams",
        SimParams,
        [
            n,
            table_size,
            table_mask,
            group_size,
            h,
            inv_h,
            h2,
            inv_h2,
            density_scale,
            kernel,
            planar,
            kernel_a,
            kernel_b
        ]
    );
    twin!(
        shaders::DFSPH_INTEGRATE,
        "FluidParams",
        FluidParams,
        [
            tank_min,
            tank_max,
            gravity,
            rest_density,
            stiffness,
            mass,
            viscosity,
            kernel_45,
            sound_speed,
            cfl,
            dt_fixed,
            dt_max,
            restitution,
            alpha,
            open,
            slip_lo,
            slip_hi,
            kinematic_viscosity,
            viscosity_factor
        ]
    );
    twin!(
        shaders::DFSPH_PRESSURE,
        "DfsphParams",
        DfsphParams,
        [
            spacing,
            cfl,
            dt_min,
            dt_max,
            eta_v,
            eta_d,
            max_iterations,
            min_neighbours,
            blocks,
            dt_fixed,
            wall_inset,
            viscous_limit,
            viscous_substeps,
            relaxation,
            friction,
            state_equation
        ]
    );
    twin!(
        shaders::DFSPH_RATE,
        "SolveParams",
        SolveParams,
        [which, min_iterations, threshold_lo, threshold_hi, capacity]
    );
}

#[test]
fn statistics_blocks() {
    use gpu_sph::core::{SolverStats, StatsBlock};
    // The host folds the GPU's per-block statistics into the block (cpu::stats::fold_blocks),
    // so the block has no WGSL twin; its DFSPH words are SolverStats, word for word.
    assert_eq!(
        size_of::<StatsBlock>() - offset_of!(StatsBlock, solver),
        size_of::<SolverStats>()
    );
    assert_eq!(size_of::<SolverStats>(), 32);
}

#[test]
fn boundary_interaction_emitter_and_grain_blocks() {
    twin!(
        shaders::DFSPH_DENSITY,
        "ObstacleParams",
        gpu_sph::boundary::ObstacleParams,
        [lo, hi, count, table_mask]
    );
    twin!(
        shaders::INTERACT,
        "InteractParams",
        gpu_sph::cpu::interact::InteractParams,
        [origin, direction, radius, strength]
    );
    twin!(
        shaders::EMITTER_PROBE,
        "Probe",
        gpu_sph::emitter::Probe,
        [c, d, u, v]
    );
    twin!(
        shaders::GRAIN_CONTACTS,
        "GrainParams",
        gpu_sph::grains::GrainParams,
        [
            tank_min,
            tank_max,
            gravity,
            stiffness,
            contact_zeta,
            wall_zeta,
            friction,
            dt,
            obstacles
        ]
    );
    twin!(
        shaders::GRAIN_CONTACTS,
        "GrainObstacle",
        gpu_sph::grains::GrainObstacle,
        [a, b, kind, axis]
    );
}

#[test]
fn drawing_blocks() {
    twin!(
        shaders::RENDER,
        "RenderParams",
        gpu_sph::viewer::render::RenderParams,
        [
            view, proj, light_dir, radius, field, range_min, range_max, colormap
        ]
    );
    twin!(
        shaders::SURFACE,
        "SurfaceParams",
        gpu_sph::viewer::surface::SurfaceParams,
        [
            view,
            proj,
            light_dir,
            absorption,
            screen,
            radius,
            filter_radius,
            depth_falloff,
            max_pixels,
            refraction
        ]
    );
    twin!(
        shaders::MESH,
        "MeshParams",
        gpu_sph::viewer::mesh::MeshParams,
        [view_proj, eye, light_dir]
    );
}

/// The value of WGSL constant `name`.
fn wgsl_const(m: &naga::Module, name: &str) -> u32 {
    let (_, c) = m
        .constants
        .iter()
        .find(|(_, c)| c.name.as_deref() == Some(name))
        .unwrap_or_else(|| panic!("no constant {name}"));
    match m.global_expressions[c.init] {
        naga::Expression::Literal(naga::Literal::U32(v)) => v,
        ref e => panic!("{name} is not a u32 literal: {e:?}"),
    }
}

#[test]
fn shared_constants() {
    let m = module(shaders::SCAN);
    assert_eq!(wgsl_const(&m, "WORKGROUP_SIZE"), limits::WORKGROUP_SIZE);
    assert_eq!(wgsl_const(&m, "GROUP"), limits::GROUP);
    assert_eq!(wgsl_const(&m, "SCAN_BLOCK"), limits::SCAN_BLOCK);
    let m = module(shaders::DFSPH_ACCEL);
    assert_eq!(wgsl_const(&m, "MEMBERS"), limits::GROUP);
    let m = module(shaders::EMITTER_PROBE);
    assert_eq!(
        wgsl_const(&m, "MAX_PROBES") as usize,
        gpu_sph::emitter::MAX_PROBES
    );
}

/// The most globals in `space` that one stage's module declares (naga's count), and its name.
fn most_globals(space: impl Fn(naga::AddressSpace) -> bool) -> (u32, &'static str) {
    gpu_sph::core::Stage::ALL
        .iter()
        .filter_map(|s| Some((s.shader()?, s.name())))
        .map(|(src, name)| {
            let m = module(src);
            let n = m
                .global_variables
                .iter()
                .filter(|(_, g)| space(g.space))
                .count() as u32;
            (n, name)
        })
        .max_by_key(|&(n, _)| n)
        .unwrap()
}

/// The storage buffers an adapter must grant per shader stage, as `check_limits` counts them
/// from the sources, equal naga's count of storage globals in the stage that binds the most
/// (a declaration the text count missed or miscounted would let a short adapter through, to
/// fail at pipeline creation instead of in one line).
#[test]
fn the_storage_buffers_a_stage_needs_are_what_naga_counts() {
    let (need, stage) = gpu_sph::grid::gpu::storage_buffers_needed();
    let counted = most_globals(|space| matches!(space, naga::AddressSpace::Storage { .. }));
    assert_eq!((need, stage), counted);
    // Where a page asks for more than WebGPU's default 8, Chromium's SwiftShader (the WebGPU
    // of a headless browser without a GPU) offers 10: every stage fits that.
    assert!(need <= 10, "{need} ({stage})");
}

/// No stage declares more uniform blocks than Mesa 22.3's lavapipe holds without writing past
/// its table (`grid::gpu::MAX_UNIFORM_BLOCKS`), counted by naga and equal to the text count.
#[test]
fn no_stage_declares_more_uniform_blocks_than_lavapipe_holds() {
    let counted = most_globals(|space| space == naga::AddressSpace::Uniform);
    assert_eq!(gpu_sph::grid::gpu::uniform_blocks_declared(), counted);
    assert!(
        counted.0 <= gpu_sph::grid::gpu::MAX_UNIFORM_BLOCKS,
        "{} uniform blocks in {}",
        counted.0,
        counted.1
    );
}

/// An adapter granting one storage buffer fewer than the stages bind is refused in one line
/// that names the stage and both counts; one granting exactly that many is not.
#[test]
fn an_adapter_short_of_storage_buffers_is_refused_naming_the_stage() {
    let (need, stage) = gpu_sph::grid::gpu::storage_buffers_needed();
    let mut limits = wgpu::Limits {
        max_storage_buffers_per_shader_stage: need,
        ..wgpu::Limits::default()
    };
    gpu_sph::grid::gpu::check_limits(&limits, 1000, 1024).unwrap();
    limits.max_storage_buffers_per_shader_stage = need - 1;
    let e = gpu_sph::grid::gpu::check_limits(&limits, 1000, 1024)
        .unwrap_err()
        .to_string();
    assert!(!e.contains('\n'), "{e}");
    for needle in [
        format!("{} storage buffers per shader stage", need - 1),
        format!("{need} (stage {stage})"),
    ] {
        assert!(e.contains(&needle), "{needle:?} not in {e}");
    }
}
