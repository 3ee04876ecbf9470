//! The first GPU test: request the adapter, dispatch a trivial kernel from `shaders/`, read back.

use crate::common;

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
