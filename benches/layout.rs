//! Particle state layout, measured (issue 11, point 5): the grouped density walk reading its
//! candidates' positions as an array of structs or as a structure of arrays, on the CPU path
//! and on the GPU path, default dam break (spacing 0.01 m, h = 0.02 m).
//!
//! - `layout/cpu/vec3` (the CPU path's layout: 12-byte rows), `layout/cpu/vec4` (16-byte
//!   rows, the GPU's), `layout/cpu/columns` (x, y, z each an array): [`density::density_in`],
//!   one walk definition over the three layouts, the same bits in each (asserted here).
//! - `layout/gpu/vec4` (the GPU path's `array<vec4<f32>>`, the production `density` pass) and
//!   `layout/gpu/columns` (the same shader with each candidate read from three `array<f32>`),
//!   one indirect dispatch each, submit to done on the host clock; the two outputs are
//!   compared bit for bit before timing.
//!
//! `cargo bench --bench layout`; `GPU_SPH_BENCH_SIZES=20000,100000` picks the sizes.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{Vec3, Vec4};
use gpu_sph::cpu::Grid;
use gpu_sph::cpu::density::{self, Columns, Rows};
use gpu_sph::cpu::reorder::gather;
use gpu_sph::gpu::GpuContext;
use gpu_sph::gpu::neighbours::GpuNeighbours;
use gpu_sph::params::{ConfigOverrides, SimParams, SphConfig};
use gpu_sph::scene::{Scene, SceneKind};
use wgpu::util::DeviceExt;

fn sizes() -> Vec<usize> {
    std::env::var("GPU_SPH_BENCH_SIZES")
        .ok()
        .map(|s| s.split(',').filter_map(|x| x.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![20_000, 100_000])
}

fn setup(n: usize) -> (SimParams, Vec<Vec3>) {
    let s = 0.01;
    let cfg = SphConfig::new(
        n as u32,
        ConfigOverrides {
            smoothing_radius: Some(2.0 * s),
            spacing: Some(s),
            ..Default::default()
        },
    )
    .expect("bench configuration");
    (
        cfg.sim_params(),
        Scene::new(SceneKind::DamBreak, n, s, 0).positions,
    )
}

fn cpu(c: &mut Criterion) {
    let mut group = c.benchmark_group("layout/cpu");
    group.sample_size(10);
    for n in sizes() {
        let (params, positions) = setup(n);
        let grid = Grid::build(&positions, &params);
        let sorted = gather(&positions, &grid.sorted_ids);
        let rows: Vec<Vec4> = sorted.iter().map(|p| p.extend(0.0)).collect();
        let (x, y, z): (Vec<f32>, Vec<f32>, Vec<f32>) = (
            sorted.iter().map(|p| p.x).collect(),
            sorted.iter().map(|p| p.y).collect(),
            sorted.iter().map(|p| p.z).collect(),
        );
        let columns = Columns {
            x: &x,
            y: &y,
            z: &z,
        };
        let want = density::density(&sorted, &grid.slot_start, &params).density;
        for got in [
            density::density_in(&Rows(&rows), &grid.slot_start, &params).density,
            density::density_in(&columns, &grid.slot_start, &params).density,
        ] {
            assert!(
                want.iter()
                    .zip(&got)
                    .all(|(a, b)| a.to_bits() == b.to_bits()),
                "a layout changed the densities"
            );
        }
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new("vec3", n), |b| {
            b.iter(|| density::density(&sorted, &grid.slot_start, &params))
        });
        group.bench_function(BenchmarkId::new("vec4", n), |b| {
            b.iter(|| density::density_in(&Rows(&rows), &grid.slot_start, &params))
        });
        group.bench_function(BenchmarkId::new("columns", n), |b| {
            b.iter(|| density::density_in(&columns, &grid.slot_start, &params))
        });
    }
    group.finish();
}

/// The production density shader with every candidate read from three `array<f32>`s (the
/// members' own positions still come from `sorted_pos`, read once per walk).
fn columns_source() -> String {
    let source =
        gpu_sph::shaders::source_for(gpu_sph::shaders::DENSITY, gpu_sph::gpu::neighbours::GROUP);
    let read = "let c = sorted_pos[k].xyz;";
    assert!(
        source.contains(read),
        "density.wgsl no longer reads candidates as `{read}`"
    );
    source.replace(
        read,
        "let c = vec3<f32>(sorted_x[k], sorted_y[k], sorted_z[k]);",
    ) + "\n@group(0) @binding(6) var<storage, read> sorted_x: array<f32>;\n\
           @group(0) @binding(7) var<storage, read> sorted_y: array<f32>;\n\
           @group(0) @binding(8) var<storage, read> sorted_z: array<f32>;\n"
}

fn gpu(c: &mut Criterion) {
    let ctx = match GpuContext::new() {
        Ok(ctx) => Arc::new(ctx),
        Err(e) => {
            assert!(
                std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1"),
                "GPU_SPH_REQUIRE_GPU=1 but no GPU is usable: {e}"
            );
            eprintln!("SKIPPED layout/gpu (no GPU adapter): {e}");
            return;
        }
    };
    let d = &ctx.device;
    let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("sph.density_columns"),
        source: wgpu::ShaderSource::Wgsl(columns_source().into()),
    });
    let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("sph.density_columns"),
        layout: None,
        module: &module,
        entry_point: Some("density"),
        compilation_options: Default::default(),
        cache: None,
    });
    let mut group = c.benchmark_group("layout/gpu");
    group.sample_size(10);
    for n in sizes() {
        let (params, positions) = setup(n);
        let g = GpuNeighbours::new(ctx.clone(), &params).expect("GPU neighbour buffers");
        g.upload_positions(&positions);
        g.run(|g, e| {
            g.encode_build(e);
            g.encode_density(e);
        })
        .expect("grid build");
        let b = &g.bufs;
        let sorted: Vec<Vec4> = g.ctx.readback(&b.sorted_pos, n).expect("readback");
        let column = |label: &str, f: fn(&Vec4) -> f32| {
            let v: Vec<f32> = sorted.iter().map(f).collect();
            d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
                label: Some(label),
                contents: bytemuck::cast_slice(&v),
                usage: wgpu::BufferUsages::STORAGE,
            })
        };
        let (x, y, z) = (
            column("sph.sorted_x", |p| p.x),
            column("sph.sorted_y", |p| p.y),
            column("sph.sorted_z", |p| p.z),
        );
        let out = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sph.density_columns.out"),
            size: n as u64 * 4,
            usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
            mapped_at_creation: false,
        });
        let entries: Vec<wgpu::BindGroupEntry> = [
            &b.params,
            &b.sorted_pos,
            &b.slot_start,
            &out,
            &b.group_range,
            &b.group_args,
            &x,
            &y,
            &z,
        ]
        .iter()
        .enumerate()
        .map(|(i, buf)| wgpu::BindGroupEntry {
            binding: i as u32,
            resource: buf.as_entire_binding(),
        })
        .collect();
        let bind = d.create_bind_group(&wgpu::BindGroupDescriptor {
            label: Some("sph.density_columns"),
            layout: &pipeline.get_bind_group_layout(0),
            entries: &entries,
        });
        let columns = |e: &mut wgpu::CommandEncoder| {
            let mut pass = e.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
            pass.set_pipeline(&pipeline);
            pass.set_bind_group(0, &bind, &[]);
            pass.dispatch_workgroups_indirect(&b.group_args, 0);
        };
        g.run(|_, e| columns(e)).expect("columns density");
        let want: Vec<f32> = g.ctx.readback(&b.density, n).expect("readback");
        let got: Vec<f32> = g.ctx.readback(&out, n).expect("readback");
        assert!(
            want.iter()
                .zip(&got)
                .all(|(a, b)| a.to_bits() == b.to_bits()),
            "the columns layout changed the GPU densities"
        );
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new("vec4", n), |bch| {
            bch.iter(|| g.run(|g, e| g.encode_density(e)).expect("density"))
        });
        group.bench_function(BenchmarkId::new("columns", n), |bch| {
            bch.iter(|| g.run(|_, e| columns(e)).expect("density"))
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots();
    targets = cpu, gpu
}
criterion_main!(benches);
