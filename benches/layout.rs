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
//! - `layout/cpu/forces_*` and `layout/gpu/forces_*`: the grouped forces walk, whose
//!   candidates are read whole (position, velocity, density, pressure), on the state of the
//!   dam break after 20 CPU steps: `fields` (the CPU path's: a 12-byte row array per vector
//!   field, an array per scalar) or `vec4` (the GPU path's: vec4 rows per vector field),
//!   `rows` (one 32-byte row per particle: x, ρ, v, p) and `columns` (every component its own
//!   array); the outputs compared bit for bit before timing. `layout/cpu/forces_packed` is
//!   what the CPU path runs: the arrays packed into rows on every call, then the rows' walk.
//!
//! The walls-into-density fusion (issue 11, point 3) was measured by this file at 32cd04e
//! (`--bench fusion`: the density and walls passes beside walls.wgsl with the density added);
//! walls.wgsl is that fused pass now.
//!
//! `cargo bench --bench layout`; `GPU_SPH_BENCH_SIZES=20000,100000` picks the sizes.

use std::sync::Arc;

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use glam::{Vec3, Vec4};
use gpu_sph::cpu::density::{self, Columns, Rows};
use gpu_sph::cpu::wcsph::forces::{self, FieldColumns, FieldRow, FieldRows, Fields};
use gpu_sph::cpu::wcsph::step::{StepTrace, step};
use gpu_sph::gpu::GpuContext;
use gpu_sph::gpu::fluid::Simulation;
use gpu_sph::grid::Grid;
use gpu_sph::grid::gpu::GpuNeighbours;
use gpu_sph::grid::reorder::gather;
use gpu_sph::params::{ConfigOverrides, FluidParams, PhysicsConfig, SimParams, Solver, SphConfig};
use gpu_sph::scene::{Scene, SceneChoice, SceneKind};
use gpu_sph::setup::{RunSpec, Setup, Source};
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

/// The default dam break after 20 CPU steps: parameters and the last step's trace.
fn stepped(n: usize) -> (SimParams, FluidParams, StepTrace) {
    let setup = Setup::new(
        &RunSpec {
            particles: n as u32,
            source: Source::Scene(SceneChoice::Builtin(SceneKind::DamBreak)),
            seed: 0,
            overrides: ConfigOverrides::default(),
            physics: PhysicsConfig::default(),
            solver: Solver::Wcsph,
            dfsph: Default::default(),
            tank: None,
            steps: true,
        },
        None,
        |_| Ok(()),
    )
    .expect("dam break");
    let (sp, fp) = (setup.config.sim_params(), setup.fluid_params);
    let mut state = setup.state;
    let mut trace = step(&state, &sp, &fp);
    for _ in 0..19 {
        state = trace.next.clone();
        trace = step(&state, &sp, &fp);
    }
    (sp, fp, trace)
}

fn bits(a: &[Vec3]) -> Vec<[u32; 3]> {
    a.iter().map(|v| v.to_array().map(f32::to_bits)).collect()
}

fn cpu_forces(c: &mut Criterion) {
    let mut group = c.benchmark_group("layout/cpu");
    group.sample_size(10);
    for n in sizes() {
        let (sp, fp, t) = stepped(n);
        let f = Fields {
            pos: &t.sorted.pos,
            vel: &t.sorted.vel,
            density: &t.fluid_density,
            pressure: &t.pressure,
        };
        let rows: Vec<FieldRow> = (0..n)
            .map(|k| FieldRow {
                x: f.pos[k].to_array(),
                rho: f.density[k],
                v: f.vel[k].to_array(),
                p: f.pressure[k],
            })
            .collect();
        let comp = |a: &[Vec3], c: usize| a.iter().map(|x| x[c]).collect::<Vec<f32>>();
        let (xs, vs) = (
            [0, 1, 2].map(|c| comp(f.pos, c)),
            [0, 1, 2].map(|c| comp(f.vel, c)),
        );
        let columns = FieldColumns {
            x: [&xs[0], &xs[1], &xs[2]],
            v: [&vs[0], &vs[1], &vs[2]],
            rho: f.density,
            p: f.pressure,
        };
        let slots = &t.grid.slot_start;
        let want = bits(&forces::forces_in(&f, slots, &sp, &fp));
        assert_eq!(want, bits(&forces::forces(&f, slots, &sp, &fp)));
        assert_eq!(want, bits(&t.acc), "the trace's accelerations");
        assert_eq!(
            want,
            bits(&forces::forces_in(&FieldRows(&rows), slots, &sp, &fp))
        );
        assert_eq!(want, bits(&forces::forces_in(&columns, slots, &sp, &fp)));
        group.throughput(Throughput::Elements(n as u64));
        group.bench_function(BenchmarkId::new("forces_fields", n), |b| {
            b.iter(|| forces::forces_in(&f, slots, &sp, &fp))
        });
        // What the CPU path runs: the arrays packed into rows each call, then the rows' walk.
        group.bench_function(BenchmarkId::new("forces_packed", n), |b| {
            b.iter(|| forces::forces(&f, slots, &sp, &fp))
        });
        group.bench_function(BenchmarkId::new("forces_rows", n), |b| {
            b.iter(|| forces::forces_in(&FieldRows(&rows), slots, &sp, &fp))
        });
        group.bench_function(BenchmarkId::new("forces_columns", n), |b| {
            b.iter(|| forces::forces_in(&columns, slots, &sp, &fp))
        });
    }
    group.finish();
}

/// The production forces shader and its variants: `fields(k)`, the one place a candidate's
/// fields are read, rewritten to read `rows` or `columns`.
fn forces_source(variant: &str) -> String {
    let source =
        gpu_sph::shaders::source_for(gpu_sph::shaders::FORCES, gpu_sph::grid::gpu::GROUP, None);
    let read = "    let rho = particle_density[k];\n    return Fields(sorted_pos[k].xyz, \
                sorted_vel[k].xyz, rho, particle_pressure[k] / (rho * rho));";
    assert!(
        source.contains(read),
        "forces.wgsl no longer reads a candidate as `{read}`"
    );
    let (body, decls) = match variant {
        "vec4" => return source,
        "rows" => (
            "    let r = rows[k];\n    \
             return Fields(r.xr.xyz, r.vp.xyz, r.xr.w, r.vp.w / (r.xr.w * r.xr.w));",
            "struct Row { xr: vec4<f32>, vp: vec4<f32> }\n\
             @group(0) @binding(10) var<storage, read> rows: array<Row>;\n",
        ),
        _ => (
            "    let rho = particle_density[k];\n    \
             return Fields(vec3<f32>(col_x[k], col_y[k], col_z[k]), \
             vec3<f32>(col_vx[k], col_vy[k], col_vz[k]), rho, particle_pressure[k] / (rho * rho));",
            "@group(0) @binding(10) var<storage, read> col_x: array<f32>;\n\
             @group(0) @binding(11) var<storage, read> col_y: array<f32>;\n\
             @group(0) @binding(12) var<storage, read> col_z: array<f32>;\n\
             @group(0) @binding(13) var<storage, read> col_vx: array<f32>;\n\
             @group(0) @binding(14) var<storage, read> col_vy: array<f32>;\n\
             @group(0) @binding(15) var<storage, read> col_vz: array<f32>;\n",
        ),
    };
    source.replace(read, body) + "\n" + decls
}

/// The production density shader with every candidate read from three `array<f32>`s (the
/// members' own positions still come from `sorted_pos`, read once per walk).
fn columns_source() -> String {
    let source =
        gpu_sph::shaders::source_for(gpu_sph::shaders::DENSITY, gpu_sph::grid::gpu::GROUP, None);
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

/// The device, or `None` (said on stderr) where there is none and none is required.
fn context() -> Option<Arc<GpuContext>> {
    match GpuContext::new() {
        Ok(ctx) => Some(Arc::new(ctx)),
        Err(e) => {
            assert!(
                std::env::var("GPU_SPH_REQUIRE_GPU").as_deref() != Ok("1"),
                "GPU_SPH_REQUIRE_GPU=1 but no GPU is usable: {e}"
            );
            eprintln!("SKIPPED layout/gpu (no GPU adapter): {e}");
            None
        }
    }
}

fn storage_init(d: &wgpu::Device, label: &str, contents: &[u8]) -> wgpu::Buffer {
    d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some(label),
        contents,
        usage: wgpu::BufferUsages::STORAGE,
    })
}

fn gpu_forces(c: &mut Criterion) {
    let Some(ctx) = context() else { return };
    let d = &ctx.device;
    let mut group = c.benchmark_group("layout/gpu");
    group.sample_size(10);
    for n in sizes() {
        let (sp, fp, t) = stepped(n);
        let sim = Simulation::new(ctx.clone(), &sp, &fp, &t.next).expect("simulation");
        sim.step(1).expect("one GPU step");
        let (g, fl) = (&sim.grid, &sim.fluid);
        let b = &g.bufs;
        let pos: Vec<Vec4> = ctx.readback(&b.sorted_pos, n).expect("readback");
        let vel: Vec<Vec4> = ctx.readback(&b.sorted_vel, n).expect("readback");
        let rho: Vec<f32> = ctx.readback(&fl.fluid_density, n).expect("readback");
        let p: Vec<f32> = ctx.readback(&fl.pressure_buf, n).expect("readback");
        let rows: Vec<[Vec4; 2]> = (0..n)
            .map(|k| {
                [
                    pos[k].truncate().extend(rho[k]),
                    vel[k].truncate().extend(p[k]),
                ]
            })
            .collect();
        let rows = storage_init(d, "sph.rows", bytemuck::cast_slice(&rows));
        let col = |v: &[Vec4], c: usize, label: &str| {
            let x: Vec<f32> = v.iter().map(|q| q[c]).collect();
            storage_init(d, label, bytemuck::cast_slice(&x))
        };
        let cols = [
            col(&pos, 0, "sph.col_x"),
            col(&pos, 1, "sph.col_y"),
            col(&pos, 2, "sph.col_z"),
            col(&vel, 0, "sph.col_vx"),
            col(&vel, 1, "sph.col_vy"),
            col(&vel, 2, "sph.col_vz"),
        ];
        let mut want: Option<Vec<[u32; 4]>> = None;
        for variant in ["vec4", "rows", "columns"] {
            let out = d.create_buffer(&wgpu::BufferDescriptor {
                label: Some("sph.forces_layout.out"),
                size: n as u64 * 16,
                usage: wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
                mapped_at_creation: false,
            });
            let mut bound: Vec<(u32, &wgpu::Buffer)> = vec![
                (0, &b.params),
                (1, &fl.params),
                (2, &b.sorted_pos),
                (6, &b.slot_start),
                (7, &out),
                (8, &b.group_range),
                (9, &b.group_args),
            ];
            match variant {
                "vec4" => bound.extend([
                    (3, &b.sorted_vel),
                    (4, &fl.fluid_density),
                    (5, &fl.pressure_buf),
                ]),
                "rows" => bound.push((10, &rows)),
                _ => {
                    bound.extend([(4, &fl.fluid_density), (5, &fl.pressure_buf)]);
                    bound.extend(cols.iter().enumerate().map(|(i, c)| (10 + i as u32, c)));
                }
            }
            let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
                label: Some("sph.forces_layout"),
                source: wgpu::ShaderSource::Wgsl(forces_source(variant).into()),
            });
            let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some("sph.forces_layout"),
                layout: None,
                module: &module,
                entry_point: Some("forces"),
                compilation_options: Default::default(),
                cache: None,
            });
            let entries: Vec<wgpu::BindGroupEntry> = bound
                .iter()
                .map(|&(binding, buf)| wgpu::BindGroupEntry {
                    binding,
                    resource: buf.as_entire_binding(),
                })
                .collect();
            let bind = d.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some("sph.forces_layout"),
                layout: &pipeline.get_bind_group_layout(0),
                entries: &entries,
            });
            let run = |e: &mut wgpu::CommandEncoder| {
                let mut pass = e.begin_compute_pass(&wgpu::ComputePassDescriptor::default());
                pass.set_pipeline(&pipeline);
                pass.set_bind_group(0, &bind, &[]);
                pass.dispatch_workgroups_indirect(&b.group_args, 0);
            };
            g.run(|_, e| run(e)).expect("forces");
            let got: Vec<[u32; 4]> = ctx.readback(&out, n).expect("readback");
            match &want {
                None => want = Some(got),
                Some(w) => assert!(w == &got, "the {variant} layout changed the GPU forces"),
            }
            group.throughput(Throughput::Elements(n as u64));
            group.bench_function(BenchmarkId::new(format!("forces_{variant}"), n), |bch| {
                bch.iter(|| g.run(|_, e| run(e)).expect("forces"))
            });
        }
    }
    group.finish();
}

fn gpu(c: &mut Criterion) {
    let Some(ctx) = context() else { return };
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
    targets = cpu, cpu_forces, gpu, gpu_forces
}
criterion_main!(benches);
