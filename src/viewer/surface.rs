//! The fluid surface in the viewer: screen-space fluid rendering (van der Laan, Green and
//! Sainz, I3D 2009) with the narrow-range depth filter of Truong and Yuksel (I3D 2018); see
//! `shaders/surface.wgsl` for the passes and their worked example. The
//! particles' positions are read straight from the simulation's buffer, as the sphere renderer
//! does; the passes' targets follow the frame's size.

use glam::Mat4;

use crate::gpu::GpuContext;
use crate::gpu::fluid::Shown;
use crate::grid::gpu::bind_group;
use crate::shaders;

use super::render::{
    DEPTH_FORMAT, clear_attachment, depth_attachment, storage_entry, texture_2d, uniform_entry,
};

/// How the viewer draws the fluid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RenderMode {
    /// Lit spheres coloured by a field.
    Spheres,
    /// A screen-space water surface.
    Surface,
}

impl RenderMode {
    /// The other mode (the `S` key).
    pub fn toggled(self) -> Self {
        match self {
            RenderMode::Spheres => RenderMode::Surface,
            RenderMode::Surface => RenderMode::Spheres,
        }
    }
}

/// The surface's live settings (the panel's sliders).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfaceStyle {
    /// Filter half-width in particle spacings.
    pub filter_radius: f32,
    /// Half-width of the filter's depth range, in particle spacings: samples farther behind are
    /// left out, samples farther in front are clamped.
    pub depth_falloff: f32,
    /// Cap on the filter half-width, pixels.
    pub max_pixels: u32,
    /// Filter passes (each one x then y).
    pub iterations: u32,
    /// Fraction of the light that passes 10 cm of the fluid, per channel (sRGB-free, linear).
    pub colour: [f32; 3],
    /// Background shift per metre of thickness along the normal. 0.4: through the whole
    /// 0.3 m of the dam break's water the background moves 12 cm; at 1.5 it moved 45 cm, far
    /// enough for the normals' pixel-scale noise to throw neighbouring pixels onto the tank's
    /// one-pixel edges and back, which showed as bands of speckles along them.
    pub refraction: f32,
}

impl Default for SurfaceStyle {
    fn default() -> Self {
        Self {
            filter_radius: 3.0,
            depth_falloff: 3.0,
            max_pixels: 16,
            iterations: 3,
            colour: [0.12, 0.45, 0.8],
            refraction: 0.4,
        }
    }
}

impl SurfaceStyle {
    /// Beer–Lambert coefficients k (1/m) such that exp(−k · 0.1 m) is `colour`.
    pub fn absorption(&self) -> [f32; 3] {
        self.colour.map(|c| -c.clamp(1e-3, 1.0).ln() / 0.1)
    }
}

/// The uniform block; must match `SurfaceParams` in `shaders/surface.wgsl` (`tests/suite/layout.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct SurfaceParams {
    /// The camera's view matrix.
    pub view: [[f32; 4]; 4],
    /// Its projection.
    pub proj: [[f32; 4]; 4],
    /// xyz: the unit direction towards the light in view space.
    pub light_dir: [f32; 4],
    /// rgb: the absorption coefficient k per metre.
    pub absorption: [f32; 4],
    /// Width, height, 1/width, 1/height in pixels.
    pub screen: [f32; 4],
    /// Splat radius, m.
    pub radius: f32,
    /// The filter's half-width in world units, m.
    pub filter_radius: f32,
    /// Half-width of the filter's depth range, m.
    pub depth_falloff: f32,
    /// Cap on the filter's half-width, pixels.
    pub max_pixels: f32,
    /// Background offset per metre of thickness along the normal, m/m.
    pub refraction: f32,
    /// Padding to 16 bytes.
    pub pad0: f32,
    /// Padding.
    pub pad1: f32,
    /// Padding.
    pub pad2: f32,
}

/// Depth, thickness and background targets of one frame size.
struct Targets {
    size: (u32, u32),
    /// Ping-pong depth: splatted into [0], filtered x into [1], y back into [0].
    depth: [wgpu::TextureView; 2],
    thickness: wgpu::TextureView,
    background: wgpu::TextureView,
    zbuffer: wgpu::TextureView,
    /// Texture bind groups reading depth[0] and depth[1].
    reads: [wgpu::BindGroup; 2],
}

/// Pipelines and targets of the surface passes.
pub struct SurfaceRenderer {
    params_layout: wgpu::BindGroupLayout,
    textures_layout: wgpu::BindGroupLayout,
    uniform: wgpu::Buffer,
    params: wgpu::BindGroup,
    depth: wgpu::RenderPipeline,
    thickness: wgpu::RenderPipeline,
    filter: [wgpu::RenderPipeline; 2],
    composite: wgpu::RenderPipeline,
    /// Format of the background and the final target (the frame's sRGB view).
    format: wgpu::TextureFormat,
    /// Format of the view-space depth targets ([`depth_target`]).
    depth_target: wgpu::TextureFormat,
    targets: Option<Targets>,
    particle_count: u32,
}

/// The format of the view-space depth the surface is smoothed in: 32-bit float where the
/// adapter can render to it, else 16-bit (wgpu's GL backend on Mesa reports R32Float as not
/// renderable). A half float keeps 11 significant bits, so at the 1–3 m the camera stands
/// from the tank a depth is kept to 1–2 mm, a tenth to a fifth of the default spacing: the
/// smoothed surface keeps its shape, only detail finer than the particles is lost.
pub fn depth_target(adapter: &wgpu::Adapter) -> wgpu::TextureFormat {
    let needed = wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING;
    let f32_target = wgpu::TextureFormat::R32Float;
    if adapter
        .get_texture_format_features(f32_target)
        .allowed_usages
        .contains(needed)
    {
        f32_target
    } else {
        wgpu::TextureFormat::R16Float
    }
}
const THICKNESS_TARGET: wgpu::TextureFormat = wgpu::TextureFormat::R16Float;

impl SurfaceRenderer {
    /// Builds the pipelines; the final pass writes `format` (the frame's sRGB view).
    pub fn new(ctx: &GpuContext, format: wgpu::TextureFormat, shown: &Shown<'_>) -> Self {
        let d = &ctx.device;
        let depth_target = depth_target(&ctx.adapter);
        let [params_layout, textures_layout] = bind_group_layouts(d);
        let (splat_layout, screen_layout) = pipeline_layouts(d, &params_layout, &textures_layout);
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("sph.surface"),
            source: wgpu::ShaderSource::Wgsl(shaders::SURFACE.into()),
        });
        let pipeline = |name: &str,
                        layout: &wgpu::PipelineLayout,
                        vs: &str,
                        target: wgpu::TextureFormat,
                        blend: Option<wgpu::BlendState>,
                        depth: Option<wgpu::DepthStencilState>,
                        strip: bool| {
            let topology = if strip {
                wgpu::PrimitiveTopology::TriangleStrip
            } else {
                wgpu::PrimitiveTopology::TriangleList
            };
            let target = wgpu::ColorTargetState {
                format: target,
                blend,
                write_mask: wgpu::ColorWrites::ALL,
            };
            surface_pipeline(d, &module, name, layout, vs, topology, target, depth)
        };
        let depth = pipeline(
            "depth",
            &splat_layout,
            "surface_splat_vs",
            depth_target,
            None,
            Some(super::render::depth_test()),
            true,
        );
        let add = wgpu::BlendComponent {
            src_factor: wgpu::BlendFactor::One,
            dst_factor: wgpu::BlendFactor::One,
            operation: wgpu::BlendOperation::Add,
        };
        let thickness = pipeline(
            "thickness",
            &splat_layout,
            "surface_splat_vs",
            THICKNESS_TARGET,
            Some(wgpu::BlendState {
                color: add,
                alpha: add,
            }),
            None,
            true,
        );
        let screen = |name| {
            pipeline(
                name,
                &screen_layout,
                "surface_screen_vs",
                depth_target,
                None,
                None,
                false,
            )
        };
        let filter = [screen("filter_x"), screen("filter_y")];
        let composite = pipeline(
            "composite",
            &screen_layout,
            "surface_screen_vs",
            format,
            None,
            None,
            false,
        );
        let uniform = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sph.surface_params"),
            size: std::mem::size_of::<SurfaceParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let params = Self::params_group(ctx, &params_layout, &uniform, shown);
        Self {
            params_layout,
            textures_layout,
            uniform,
            params,
            depth,
            thickness,
            filter,
            composite,
            format,
            depth_target,
            targets: None,
            particle_count: shown.count,
        }
    }

    fn params_group(
        ctx: &GpuContext,
        layout: &wgpu::BindGroupLayout,
        uniform: &wgpu::Buffer,
        shown: &Shown<'_>,
    ) -> wgpu::BindGroup {
        bind_group(
            &ctx.device,
            "sph.surface.params",
            layout,
            &[uniform, shown.positions],
        )
    }

    /// Points the renderer at other particle buffers (after a restart).
    pub fn rebind(&mut self, ctx: &GpuContext, shown: &Shown<'_>) {
        self.params = Self::params_group(ctx, &self.params_layout, &self.uniform, shown);
        self.particle_count = shown.count;
    }

    /// The background target for a frame of `size`, to draw the tank into before [`Self::draw`].
    pub fn background(&mut self, ctx: &GpuContext, size: (u32, u32)) -> &wgpu::TextureView {
        &self.targets(ctx, size).background
    }

    fn targets(&mut self, ctx: &GpuContext, size: (u32, u32)) -> &Targets {
        if self.targets.as_ref().is_none_or(|t| t.size != size) {
            let depth_target = self.depth_target;
            let make = |label: &str, format| {
                texture_2d(
                    ctx,
                    label,
                    size,
                    format,
                    wgpu::TextureUsages::RENDER_ATTACHMENT | wgpu::TextureUsages::TEXTURE_BINDING,
                    &[],
                )
                .create_view(&Default::default())
            };
            let depth = [
                make("sph.surface.depth0", depth_target),
                make("sph.surface.depth1", depth_target),
            ];
            let thickness = make("sph.surface.thickness", THICKNESS_TARGET);
            let background = make("sph.surface.background", self.format);
            let zbuffer = texture_2d(
                ctx,
                "sph.surface.z",
                size,
                DEPTH_FORMAT,
                wgpu::TextureUsages::RENDER_ATTACHMENT,
                &[],
            )
            .create_view(&Default::default());
            let read = |src: &wgpu::TextureView| {
                ctx.device.create_bind_group(&wgpu::BindGroupDescriptor {
                    label: Some("sph.surface.textures"),
                    layout: &self.textures_layout,
                    entries: &[
                        wgpu::BindGroupEntry {
                            binding: 0,
                            resource: wgpu::BindingResource::TextureView(src),
                        },
                        wgpu::BindGroupEntry {
                            binding: 1,
                            resource: wgpu::BindingResource::TextureView(&thickness),
                        },
                        wgpu::BindGroupEntry {
                            binding: 2,
                            resource: wgpu::BindingResource::TextureView(&background),
                        },
                    ],
                })
            };
            let reads = [read(&depth[0]), read(&depth[1])];
            self.targets = Some(Targets {
                size,
                depth,
                thickness,
                background,
                zbuffer,
                reads,
            });
        }
        self.targets.as_ref().expect("just allocated")
    }

    /// Writes the uniform block for the next draw: `camera` is (world to view, view to clip),
    /// `spacing` the particle spacing s and `radius` the splat radius.
    pub fn prepare(
        &self,
        ctx: &GpuContext,
        (view, proj): (Mat4, Mat4),
        size: (u32, u32),
        spacing: f32,
        radius: f32,
        style: &SurfaceStyle,
    ) {
        let light = glam::Vec3::new(0.4, 0.7, 0.6).normalize();
        let k = style.absorption();
        let (w, h) = (size.0.max(1) as f32, size.1.max(1) as f32);
        let params = SurfaceParams {
            view: view.to_cols_array_2d(),
            proj: proj.to_cols_array_2d(),
            light_dir: light.extend(0.0).to_array(),
            absorption: [k[0], k[1], k[2], 0.0],
            screen: [w, h, 1.0 / w, 1.0 / h],
            radius,
            filter_radius: style.filter_radius * spacing,
            depth_falloff: style.depth_falloff.max(1e-3) * spacing,
            max_pixels: style.max_pixels.max(1) as f32,
            refraction: style.refraction,
            pad0: 0.0,
            pad1: 0.0,
            pad2: 0.0,
        };
        ctx.queue
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&params));
    }

    /// Encodes the depth, thickness, filter and composite passes; the composite writes
    /// `target` (which must have the format given to [`Self::new`]). The background must have
    /// been drawn into [`Self::background`] for this size first.
    pub fn draw(
        &mut self,
        ctx: &GpuContext,
        encoder: &mut wgpu::CommandEncoder,
        target: &wgpu::TextureView,
        size: (u32, u32),
        iterations: u32,
    ) {
        let count = self.particle_count;
        self.targets(ctx, size);
        let t = self.targets.as_ref().expect("allocated above");
        let begin = |encoder: &mut wgpu::CommandEncoder,
                     label: &str,
                     view: &wgpu::TextureView,
                     z: Option<&wgpu::TextureView>| {
            encoder
                .begin_render_pass(&wgpu::RenderPassDescriptor {
                    label: Some(label),
                    color_attachments: &[clear_attachment(view, wgpu::Color::TRANSPARENT)],
                    depth_stencil_attachment: z.map(depth_attachment),
                    timestamp_writes: None,
                    occlusion_query_set: None,
                    multiview_mask: None,
                })
                .forget_lifetime()
        };
        {
            let mut pass = begin(encoder, "sph.surface.depth", &t.depth[0], Some(&t.zbuffer));
            pass.set_pipeline(&self.depth);
            pass.set_bind_group(0, &self.params, &[]);
            pass.draw(0..4, 0..count);
        }
        {
            let mut pass = begin(encoder, "sph.surface.thickness", &t.thickness, None);
            pass.set_pipeline(&self.thickness);
            pass.set_bind_group(0, &self.params, &[]);
            pass.draw(0..4, 0..count);
        }
        for _ in 0..iterations {
            for (dir, (src, dst)) in [(0, 1), (1, 0)].into_iter().enumerate() {
                let mut pass = begin(encoder, "sph.surface.filter", &t.depth[dst], None);
                pass.set_pipeline(&self.filter[dir]);
                pass.set_bind_group(0, &self.params, &[]);
                pass.set_bind_group(1, &t.reads[src], &[]);
                pass.draw(0..3, 0..1);
            }
        }
        let mut pass = begin(encoder, "sph.surface.composite", target, None);
        pass.set_pipeline(&self.composite);
        pass.set_bind_group(0, &self.params, &[]);
        pass.set_bind_group(1, &t.reads[0], &[]);
        pass.draw(0..3, 0..1);
    }
}

/// One of the surface's render pipelines: `name`'s fragment entry `surface_{name}_fs` after
/// the vertex entry `vs` (no vertex buffers: the splats and the screen triangle are made from
/// the vertex index).
#[allow(clippy::too_many_arguments)]
fn surface_pipeline(
    d: &wgpu::Device,
    module: &wgpu::ShaderModule,
    name: &str,
    layout: &wgpu::PipelineLayout,
    vs: &str,
    topology: wgpu::PrimitiveTopology,
    target: wgpu::ColorTargetState,
    depth: Option<wgpu::DepthStencilState>,
) -> wgpu::RenderPipeline {
    d.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
        label: Some(&format!("sph.surface.{name}")),
        layout: Some(layout),
        vertex: wgpu::VertexState {
            module,
            entry_point: Some(vs),
            compilation_options: Default::default(),
            buffers: &[],
        },
        primitive: wgpu::PrimitiveState {
            topology,
            ..Default::default()
        },
        depth_stencil: depth,
        multisample: Default::default(),
        fragment: Some(wgpu::FragmentState {
            module,
            entry_point: Some(&format!("surface_{name}_fs")),
            compilation_options: Default::default(),
            targets: &[Some(target)],
        }),
        multiview_mask: None,
        cache: None,
    })
}

/// The surface's bind group layouts: its parameters (uniform block and the particles), and
/// the three screen textures the filter and composite passes read.
fn bind_group_layouts(d: &wgpu::Device) -> [wgpu::BindGroupLayout; 2] {
    let params_layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("sph.surface.params"),
        entries: &[
            uniform_entry(0, wgpu::ShaderStages::VERTEX_FRAGMENT),
            storage_entry(1, wgpu::ShaderStages::VERTEX),
        ],
    });
    let texture = |binding| wgpu::BindGroupLayoutEntry {
        binding,
        visibility: wgpu::ShaderStages::FRAGMENT,
        ty: wgpu::BindingType::Texture {
            sample_type: wgpu::TextureSampleType::Float { filterable: false },
            view_dimension: wgpu::TextureViewDimension::D2,
            multisampled: false,
        },
        count: None,
    };
    let textures_layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
        label: Some("sph.surface.textures"),
        entries: &[texture(0), texture(1), texture(2)],
    });
    [params_layout, textures_layout]
}

/// The splat passes' pipeline layout (parameters) and the screen passes' (parameters and
/// textures).
fn pipeline_layouts(
    d: &wgpu::Device,
    params_layout: &wgpu::BindGroupLayout,
    textures_layout: &wgpu::BindGroupLayout,
) -> (wgpu::PipelineLayout, wgpu::PipelineLayout) {
    let splat_layout = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("sph.surface.splat"),
        bind_group_layouts: &[Some(params_layout)],
        immediate_size: 0,
    });
    let screen_layout = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
        label: Some("sph.surface.screen"),
        bind_group_layouts: &[Some(params_layout), Some(textures_layout)],
        immediate_size: 0,
    });
    (splat_layout, screen_layout)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absorption_reproduces_the_colour_through_ten_centimetres() {
        let style = SurfaceStyle::default();
        for (k, c) in style.absorption().iter().zip(style.colour) {
            assert!(((-k * 0.1).exp() - c).abs() < 1e-6);
        }
        assert_eq!(RenderMode::Spheres.toggled(), RenderMode::Surface);
        assert_eq!(RenderMode::Surface.toggled(), RenderMode::Spheres);
    }
}
