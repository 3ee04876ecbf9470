//! The first GPU test: request the adapter, dispatch a trivial kernel from `shaders/`, read back.

use crate::common;

use gpu_sph::gpu::GpuContext;
use wgpu::util::DeviceExt;

#[test]
fn trivial_kernel_runs_and_reads_back() {
    let Some(ctx) = common::gpu() else { return };
    let d = &ctx.device;
    let input: Vec<u32> = (0..1000).map(|i| i * 7 + 1).collect();
    let make = |label, usage| {
        d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some(label),
            contents: bytemuck::cast_slice(&input),
            usage,
        })
    };
    let inp = make("smoke.in", wgpu::BufferUsages::STORAGE);
    let out = make(
        "smoke.out",
        wgpu::BufferUsages::STORAGE | wgpu::BufferUsages::COPY_SRC,
    );
    let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("smoke"),
        source: wgpu::ShaderSource::Wgsl(gpu_sph::shaders::SMOKE.into()),
    });
    let pipeline = d.create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
        label: Some("smoke"),
        layout: None,
        module: &module,
        entry_point: Some("smoke"),
        compilation_options: Default::default(),
        cache: None,
    });
    let bg = d.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("smoke"),
        layout: &pipeline.get_bind_group_layout(0),
        entries: &[
            wgpu::BindGroupEntry {
                binding: 0,
                resource: inp.as_entire_binding(),
            },
            wgpu::BindGroupEntry {
                binding: 1,
                resource: out.as_entire_binding(),
            },
        ],
    });
    let mut enc = d.create_command_encoder(&Default::default());
    {
        let mut pass = enc.begin_compute_pass(&Default::default());
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &bg, &[]);
        pass.dispatch_workgroups(1000u32.div_ceil(64), 1, 1);
    }
    ctx.submit_and_wait(enc).unwrap();
    let got: Vec<u32> = ctx.readback(&out, input.len()).unwrap();
    let want: Vec<u32> = input
        .iter()
        .enumerate()
        .map(|(i, &x)| 3 * x + i as u32)
        .collect();
    assert_eq!(got, want);
}

/// A device granting exactly the storage buffers per shader stage that `check_limits` says the
/// stages need (`grid::gpu::storage_buffers_needed`) builds and steps the dam break under both
/// solvers: the count is not short of what a pipeline's layout asks (a web page's adapter may
/// grant no more than it).
#[test]
fn both_solvers_run_on_a_device_granting_only_the_storage_buffers_the_stages_need() {
    use gpu_sph::app::session::{SceneGiven, Session};
    let Some(shared) = common::gpu() else { return };
    let (need, _) = gpu_sph::grid::gpu::storage_buffers_needed();
    let adapter = shared.adapter.clone();
    let limits = wgpu::Limits {
        max_storage_buffers_per_shader_stage: need,
        ..adapter.limits()
    };
    let (device, queue) = pollster::block_on(adapter.request_device(&wgpu::DeviceDescriptor {
        required_limits: limits.clone(),
        ..Default::default()
    }))
    .unwrap();
    let ctx = std::sync::Arc::new(GpuContext {
        adapter,
        device,
        queue,
        info: shared.info.clone(),
        limits,
        timestamps: false,
        mapped: Default::default(),
        lost: Default::default(),
        instance: None,
    });
    for solver in ["dfsph", "wcsph"] {
        let settings = serde_json::json!({ "particles": 2000, "solver": solver });
        let mut s = Session::on_gpu(
            SceneGiven::Name("dam-break".into()),
            settings.as_object().unwrap(),
            ctx.clone(),
        )
        .unwrap();
        s.step(3).unwrap();
        assert_eq!(s.steps(), 3, "{solver}");
        assert!(s.stats().unwrap().density_mean.is_finite(), "{solver}");
    }
}

/// A session's frame drawn into a texture and read back (the web page's `frame=1`, here
/// blocked on) shows the fluid: thousands of pixels unlike the background corner's.
#[test]
fn a_sessions_frame_read_back_from_a_texture_shows_the_particles() {
    use gpu_sph::app::session::{SceneGiven, Session};
    let Some(ctx) = common::gpu() else { return };
    let settings = serde_json::json!({ "particles": 3000 });
    let mut s = Session::on_gpu(
        SceneGiven::Name("dam-break".into()),
        settings.as_object().unwrap(),
        ctx,
    )
    .unwrap();
    s.step(1).unwrap();
    let size = (160, 120);
    let rgba = pollster::block_on(s.frame_async(size)).unwrap();
    assert_eq!(rgba.len(), 4 * 160 * 120);
    let drawn = rgba.chunks_exact(4).filter(|px| *px != &rgba[..4]).count();
    assert!(
        drawn > 160 * 120 / 50,
        "{drawn} pixels unlike the background"
    );
}
