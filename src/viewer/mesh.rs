//! Offscreen pictures of a surface mesh (see `shaders/mesh.wgsl`): a reconstructed fluid
//! surface from `--surface-dir`, framed like the viewer frames a tank, written as a PNG. Used by
//! `examples/mesh_png.rs` for the mesh picture of docs/surfaces.md.

use std::path::Path;

use glam::Vec3;
use wgpu::util::DeviceExt;

use crate::gpu::GpuContext;
use crate::shaders;
use crate::surface::Mesh;
use crate::{Error, Result};

use super::camera::OrbitCamera;
use super::render::{
    BACKGROUND, DEPTH_FORMAT, clear_attachment, depth_attachment, texture_2d, uniform_entry,
};

/// The uniform block; must match `MeshParams` in `shaders/mesh.wgsl` (`tests/suite/layout.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct MeshParams {
    /// Projection times view.
    pub view_proj: [[f32; 4]; 4],
    /// The camera's position.
    pub eye: [f32; 4],
    /// Towards the light.
    pub light_dir: [f32; 4],
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct Vertex {
    position: [f32; 3],
    normal: [f32; 3],
}

/// Area-weighted vertex normals.
fn vertex_normals(mesh: &Mesh) -> Vec<Vec3> {
    let v = |i: usize| Vec3::new(mesh.vertices[i].x, mesh.vertices[i].y, mesh.vertices[i].z);
    let mut n = vec![Vec3::ZERO; mesh.vertices.len()];
    for t in &mesh.triangles {
        let face = (v(t[1]) - v(t[0])).cross(v(t[2]) - v(t[0]));
        for &i in t {
            n[i] += face;
        }
    }
    n.into_iter().map(|x| x.normalize_or(Vec3::Y)).collect()
}

/// Renders `mesh` at `size` pixels, seen from the viewer's default angle on `frame` (the box
/// to frame, e.g. the tank), and saves it as a PNG at `path`.
pub fn render_png(
    ctx: &GpuContext,
    mesh: &Mesh,
    frame: (Vec3, Vec3),
    size: (u32, u32),
    path: &Path,
) -> Result<()> {
    if mesh.triangles.is_empty() {
        return Err(Error::input("the mesh has no triangles: nothing to draw"));
    }
    let d = &ctx.device;
    let (vbuf, ibuf, count) = mesh_buffers(d, mesh)?;
    let camera = OrbitCamera::framing(frame.0, frame.1);
    let view_proj = camera.proj(size.0 as f32 / size.1.max(1) as f32) * camera.view();
    let eye = camera.view().inverse().transform_point3(Vec3::ZERO);
    let params = MeshParams {
        view_proj: view_proj.to_cols_array_2d(),
        eye: eye.extend(1.0).to_array(),
        light_dir: Vec3::new(0.3, 1.0, 0.5).normalize().extend(0.0).to_array(),
    };
    let ubuf = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("sph.mesh.params"),
        contents: bytemuck::bytes_of(&params),
        usage: wgpu::BufferUsages::UNIFORM,
    });
    let layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("sph.mesh"),
        entries: &[uniform_entry(0, wgpu::ShaderStages::VERTEX_FRAGMENT)],
    });
    let group = d.create_bind_group(&wgpu::BindGroupDescriptor {
        label: Some("sph.mesh"),
        layout: &layout,
        entries: &[wgpu::BindGroupEntry {
            binding: 0,
            resource: ubuf.as_entire_binding(),
        }],
    });
    let format = wgpu::TextureFormat::Rgba8UnormSrgb;
    let pipeline = mesh_pipeline(d, &layout, format);
    let target = texture_2d(
        ctx,
        "sph.mesh.target",
        size,
        format,
        wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::COPY_SRC,
        &[],
    );
    let zbuffer = texture_2d(
        ctx,
        "sph.mesh.z",
        size,
        DEPTH_FORMAT,
        wgpu::TextureUsages::RENDER_ATTACHMENT,
        &[],
    );
    let (view, zview) = (
        target.create_view(&Default::default()),
        zbuffer.create_view(&Default::default()),
    );
    let mut encoder = d.create_command_encoder(&Default::default());
    {
        let mut pass = encoder.begin_render_pass(&wgpu::RenderPassDescriptor {
            label: Some("sph.mesh"),
            color_attachments: &[clear_attachment(&view, BACKGROUND)],
            depth_stencil_attachment: Some(depth_attachment(&zview)),
            timestamp_writes: None,
            occlusion_query_set: None,
            multiview_mask: None,
        });
        pass.set_pipeline(&pipeline);
        pass.set_bind_group(0, &group, &[]);
        pass.set_vertex_buffer(0, vbuf.slice(..));
        pass.set_index_buffer(ibuf.slice(..), wgpu::IndexFormat::Uint32);
        pass.draw_indexed(0..count, 0, 0..1);
    }
    ctx.queue.submit([encoder.finish()]);
    let rgba = super::read_rgba(ctx, &target)?;
    image::save_buffer(
        path,
        &rgba,
        target.width(),
        target.height(),
        image::ExtendedColorType::Rgba8,
    )
    .map_err(|e| Error::file(path, format!("cannot write the picture: {e}")))
}

/// The mesh's vertex buffer (positions and vertex normals), its index buffer and the index
/// count.
fn mesh_buffers(d: &wgpu::Device, mesh: &Mesh) -> Result<(wgpu::Buffer, wgpu::Buffer, u32)> {
    let normals = vertex_normals(mesh);
    let vertices: Vec<Vertex> = mesh
        .vertices
        .iter()
        .zip(&normals)
        .map(|(p, n)| Vertex {
            position: [p.x, p.y, p.z],
            normal: n.to_array(),
        })
        .collect();
    let indices: Vec<u32> = mesh
        .triangles
        .iter()
        .flatten()
        .map(|&i| {
            u32::try_from(i).map_err(|_| Error::input("the mesh has more than 2^32 vertices"))
        })
        .collect::<Result<_>>()?;
    let vbuf = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("sph.mesh.vertices"),
        contents: bytemuck::cast_slice(&vertices),
        usage: wgpu::BufferUsages::VERTEX,
    });
    let ibuf = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
        label: Some("sph.mesh.indices"),
        contents: bytemuck::cast_slice(&indices),
        usage: wgpu::BufferUsages::INDEX,
    });
    Ok((vbuf, ibuf, indices.len() as u32))
}

/// The mesh's render pipeline (`shaders::MESH`: lit triangles, depth-tested) into `format`.
fn mesh_pipeline(
    d: &wgpu::Device,
    layout: &wgpu::BindGroupLayout,
    format: wgpu::TextureFormat,
) -> wgpu::RenderPipeline {
    let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
        label: Some("sph.mesh"),
        source: wgpu::ShaderSource::Wgsl(shaders::MESH.into()),
    });
    d.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some("sph.mesh"),
        layout: Some(&d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("sph.mesh"),
            bind_group_layouts: &[Some(layout)],
            immediate_size: 0,
        })),
        vertex: wgpu::VertexState {
            module: &module,
            entry_point: Some("mesh_vs"),
            compilation_options: Default::default(),
            buffers: &[Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<Vertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x3],
            })],
        },
        primitive: Default::default(),
        depth_stencil: Some(super::render::depth_test()),
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module: &module,
            entry_point: Some("mesh_fs"),
            compilation_options: Default::default(),
            targets: &[Some(format.into())],
        }),
        multiview_mask: None,
        cache: None,
    })
}
