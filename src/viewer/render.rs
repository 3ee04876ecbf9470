//! The scene renderer (see `shaders/render.wgsl`): particles as lit sphere impostors read
//! straight from the simulation's buffers, coloured by a field through a perceptual colour map,
//! plus the tank wireframe and a floor grid.

use glam::{Mat4, Vec3};
use wgpu::util::DeviceExt;

use crate::gpu::GpuContext;
use crate::gpu::fluid::Shown;
use crate::grid::gpu::bind_group;
use crate::shaders;

/// Depth buffer format of the scene pass.
pub const DEPTH_FORMAT: wgpu::TextureFormat = wgpu::TextureFormat::Depth32Float;

/// The colour map, sRGB: viridis (van der Walt & Smith, matplotlib) sampled at 0, 0.1, …, 1.
/// Perceptually uniform and readable in grey and by colour-blind viewers.
pub const COLORMAP_SRGB: [[u8; 3]; 11] = [
    [0x44, 0x01, 0x54],
    [0x48, 0x24, 0x75],
    [0x41, 0x44, 0x87],
    [0x35, 0x5f, 0x8d],
    [0x2a, 0x78, 0x8e],
    [0x21, 0x91, 0x8c],
    [0x22, 0xa8, 0x84],
    [0x44, 0xbf, 0x70],
    [0x7a, 0xd1, 0x51],
    [0xbd, 0xdf, 0x26],
    [0xfd, 0xe7, 0x25],
];

/// The colour map at `t` ∈ [0, 1], sRGB, interpolated as the shader does.
pub fn colormap_srgb(t: f32) -> [u8; 3] {
    let x = t.clamp(0.0, 1.0) * 10.0;
    let i = (x.floor() as usize).min(9);
    let f = x - i as f32;
    let (a, b) = (COLORMAP_SRGB[i], COLORMAP_SRGB[i + 1]);
    std::array::from_fn(|c| (a[c] as f32 + (b[c] as f32 - a[c] as f32) * f).round() as u8)
}

fn srgb_to_linear(c: u8) -> f32 {
    let c = c as f32 / 255.0;
    if c <= 0.04045 {
        c / 12.92
    } else {
        ((c + 0.055) / 1.055).powf(2.4)
    }
}

/// What colours the particles.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ColorField {
    /// |v|, m/s.
    Speed,
    /// ρ, kg/m³.
    Density,
    /// p, Pa.
    Pressure,
}

impl ColorField {
    /// Every field, in the order `C` cycles through them.
    pub const ALL: [ColorField; 3] = [ColorField::Speed, ColorField::Density, ColorField::Pressure];

    /// The next field in the cycle.
    pub fn next(self) -> Self {
        match self {
            ColorField::Speed => ColorField::Density,
            ColorField::Density => ColorField::Pressure,
            ColorField::Pressure => ColorField::Speed,
        }
    }

    /// Name and unit for the legend.
    pub fn label(self) -> &'static str {
        match self {
            ColorField::Speed => "speed (m/s)",
            ColorField::Density => "density (kg/m³)",
            ColorField::Pressure => "pressure (Pa)",
        }
    }

    /// Position in [`ColorField::ALL`] (and the shader's field number).
    pub fn index(self) -> u32 {
        match self {
            ColorField::Speed => 0,
            ColorField::Density => 1,
            ColorField::Pressure => 2,
        }
    }
}

/// The uniform block; must match `RenderParams` in `shaders/render.wgsl` (`tests/suite/layout.rs`).
#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
pub struct RenderParams {
    /// World to view.
    pub view: [[f32; 4]; 4],
    /// View to clip.
    pub proj: [[f32; 4]; 4],
    /// xyz: the unit direction towards the light in view space; w: 1 when each particle's
    /// radius is its position's w (the colliding spheres), 0 when every particle has `radius`.
    pub light_dir: [f32; 4],
    /// Sphere radius, m.
    pub radius: f32,
    /// 0 speed, 1 density, 2 pressure.
    pub field: u32,
    /// The value drawn at the colour map's start.
    pub range_min: f32,
    /// The value drawn at its end.
    pub range_max: f32,
    /// Linear-space colours at 0, 0.1, …, 1 of the colour map.
    pub colormap: [[f32; 4]; 11],
}

/// What one frame shows.
#[derive(Clone, Copy, Debug)]
pub struct View {
    /// World to view.
    pub view: Mat4,
    /// View to clip.
    pub proj: Mat4,
    /// Sphere radius, m.
    pub radius: f32,
    /// Each particle's radius is its position's w instead (the colliding spheres).
    pub radius_from_w: bool,
    /// The field that colours the particles.
    pub field: ColorField,
    /// The field's value at the bottom and top of the colour map.
    pub range: (f32, f32),
}

#[repr(C)]
#[derive(Clone, Copy, Debug, bytemuck::Pod, bytemuck::Zeroable)]
struct LineVertex {
    position: [f32; 3],
    colour: [f32; 4],
}

/// The tank's 12 edges and a floor grid around it.
fn line_geometry(lo: Vec3, hi: Vec3) -> Vec<LineVertex> {
    let mut out = Vec::new();
    let mut line = |a: Vec3, b: Vec3, colour: [f32; 4]| {
        out.push(LineVertex {
            position: a.to_array(),
            colour,
        });
        out.push(LineVertex {
            position: b.to_array(),
            colour,
        });
    };
    let grid = [0.025, 0.027, 0.032, 1.0];
    let size = hi - lo;
    // A grid step of 1, 2 or 5 times a power of ten, about a tenth of the tank's footprint.
    let target = 0.1 * size.x.max(size.z);
    let decade = 10f32.powf(target.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * decade)
        .find(|&s| s >= target)
        .unwrap_or(decade);
    let margin = 0.5 * size.x.max(size.z);
    let (x0, x1) = (lo.x - margin, hi.x + margin);
    let (z0, z1) = (lo.z - margin, hi.z + margin);
    // Below the tank's floor by half a percent of its size: nearer, the depth buffer cannot
    // tell the grid from the tank's bottom edges at the framing distance, and they z-fight.
    let y = lo.y - 5e-3 * size.max_element().max(1e-3);
    let first = |a: f32| (a / step).ceil() as i64;
    for i in first(x0)..=(x1 / step).floor() as i64 {
        let x = i as f32 * step;
        line(Vec3::new(x, y, z0), Vec3::new(x, y, z1), grid);
    }
    for i in first(z0)..=(z1 / step).floor() as i64 {
        let z = i as f32 * step;
        line(Vec3::new(x0, y, z), Vec3::new(x1, y, z), grid);
    }
    let edge = [0.55, 0.58, 0.62, 1.0];
    let corner = |i: u32| {
        Vec3::new(
            if i & 1 == 0 { lo.x } else { hi.x },
            if i & 2 == 0 { lo.y } else { hi.y },
            if i & 4 == 0 { lo.z } else { hi.z },
        )
    };
    for i in 0..8u32 {
        for bit in [1, 2, 4] {
            if i & bit == 0 {
                line(corner(i), corner(i | bit), edge);
            }
        }
    }
    out
}

/// Pipelines, uniform block and bindings for one target format.
pub struct Renderer {
    layout: wgpu::BindGroupLayout,
    particles: wgpu::RenderPipeline,
    obstacles: wgpu::RenderPipeline,
    lines: wgpu::RenderPipeline,
    uniform: wgpu::Buffer,
    bind_group: wgpu::BindGroup,
    // The obstacles' boundary particles bound as `positions`, and their count.
    obstacle_group: Option<(wgpu::BindGroup, u32)>,
    line_vertices: wgpu::Buffer,
    line_count: u32,
    particle_count: u32,
}

impl Renderer {
    /// Builds the pipelines for `format` and binds them to the `shown` buffers and the tank.
    pub fn new(
        ctx: &GpuContext,
        format: wgpu::TextureFormat,
        shown: &Shown<'_>,
        tank: (Vec3, Vec3),
    ) -> Self {
        let d = &ctx.device;
        let storage = |binding| storage_entry(binding, wgpu::ShaderStages::VERTEX);
        let layout = d.create_bind_group_layout(&wgpu::BindGroupLayoutDescriptor {
            label: Some("sph.render"),
            entries: &[
                uniform_entry(0, wgpu::ShaderStages::VERTEX_FRAGMENT),
                storage(1),
                storage(2),
                storage(3),
                storage(4),
            ],
        });
        let pl = d.create_pipeline_layout(&wgpu::PipelineLayoutDescriptor {
            label: Some("sph.render"),
            bind_group_layouts: &[Some(&layout)],
            immediate_size: 0,
        });
        let module = d.create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some("sph.render"),
            source: wgpu::ShaderSource::Wgsl(shaders::RENDER.into()),
        });
        let target = [Some(wgpu::ColorTargetState {
            format,
            blend: None,
            write_mask: wgpu::ColorWrites::ALL,
        })];
        let make = |name: &str,
                    topology: wgpu::PrimitiveTopology,
                    buffers: &[Option<wgpu::VertexBufferLayout>]| {
            d.create_render_pipeline(&wgpu::RenderPipelineDescriptor {
                label: Some(&format!("sph.render.{name}")),
                layout: Some(&pl),
                vertex: wgpu::VertexState {
                    module: &module,
                    entry_point: Some(&format!("render_{name}_vs")),
                    compilation_options: Default::default(),
                    buffers,
                },
                primitive: wgpu::PrimitiveState {
                    topology,
                    ..Default::default()
                },
                depth_stencil: Some(depth_test()),
                multisample: Default::default(),
                fragment: Some(wgpu::FragmentState {
                    module: &module,
                    entry_point: Some(&format!("render_{name}_fs")),
                    compilation_options: Default::default(),
                    targets: &target,
                }),
                multiview_mask: None,
                cache: None,
            })
        };
        let particles = make("particles", wgpu::PrimitiveTopology::TriangleStrip, &[]);
        let obstacles = make("obstacles", wgpu::PrimitiveTopology::TriangleStrip, &[]);
        let lines = make(
            "lines",
            wgpu::PrimitiveTopology::LineList,
            &[Some(wgpu::VertexBufferLayout {
                array_stride: std::mem::size_of::<LineVertex>() as u64,
                step_mode: wgpu::VertexStepMode::Vertex,
                attributes: &wgpu::vertex_attr_array![0 => Float32x3, 1 => Float32x4],
            })],
        );
        let uniform = d.create_buffer(&wgpu::BufferDescriptor {
            label: Some("sph.render_params"),
            size: std::mem::size_of::<RenderParams>() as u64,
            usage: wgpu::BufferUsages::UNIFORM | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let (bind_group, line_vertices, line_count, obstacle_group) =
            Self::bindings(ctx, &layout, &uniform, shown, tank);
        Self {
            layout,
            particles,
            obstacles,
            lines,
            uniform,
            bind_group,
            obstacle_group,
            line_vertices,
            line_count,
            particle_count: shown.count,
        }
    }

    fn bindings(
        ctx: &GpuContext,
        layout: &wgpu::BindGroupLayout,
        uniform: &wgpu::Buffer,
        s: &Shown<'_>,
        tank: (Vec3, Vec3),
    ) -> (
        wgpu::BindGroup,
        wgpu::Buffer,
        u32,
        Option<(wgpu::BindGroup, u32)>,
    ) {
        let d = &ctx.device;
        let fluid_group = bind_group(
            d,
            "sph.render",
            layout,
            &[uniform, s.positions, s.velocities, s.density, s.pressure],
        );
        // The obstacles' pipeline reads only `positions`; the other bindings keep the fluid's.
        let obstacle_group = s.obstacles.map(|(bpos, count)| {
            let group = bind_group(
                d,
                "sph.render.obstacles",
                layout,
                &[uniform, bpos, s.velocities, s.density, s.pressure],
            );
            (group, count)
        });
        let lines = line_geometry(tank.0, tank.1);
        let line_vertices = d.create_buffer_init(&wgpu::util::BufferInitDescriptor {
            label: Some("sph.render_lines"),
            contents: bytemuck::cast_slice(&lines),
            usage: wgpu::BufferUsages::VERTEX,
        });
        (
            fluid_group,
            line_vertices,
            lines.len() as u32,
            obstacle_group,
        )
    }

    /// Points the renderer at other particle buffers and another tank (after a restart with
    /// another N, T or scene).
    pub fn rebind(&mut self, ctx: &GpuContext, shown: &Shown<'_>, tank: (Vec3, Vec3)) {
        let (bg, lines, count, obstacles) =
            Self::bindings(ctx, &self.layout, &self.uniform, shown, tank);
        self.bind_group = bg;
        self.obstacle_group = obstacles;
        self.line_vertices = lines;
        self.line_count = count;
        self.particle_count = shown.count;
    }

    /// Sets how many particles the next draws show.
    pub fn set_count(&mut self, count: u32) {
        self.particle_count = count;
    }

    /// Writes the uniform block for the next draw.
    pub fn prepare(&self, ctx: &GpuContext, v: &View) {
        let light = Vec3::new(0.4, 0.7, 0.6).normalize();
        let params = RenderParams {
            view: v.view.to_cols_array_2d(),
            proj: v.proj.to_cols_array_2d(),
            light_dir: light
                .extend(if v.radius_from_w { 1.0 } else { 0.0 })
                .to_array(),
            radius: v.radius,
            field: v.field.index(),
            range_min: v.range.0,
            range_max: v.range.1,
            colormap: COLORMAP_SRGB.map(|c| {
                [
                    srgb_to_linear(c[0]),
                    srgb_to_linear(c[1]),
                    srgb_to_linear(c[2]),
                    1.0,
                ]
            }),
        };
        ctx.queue
            .write_buffer(&self.uniform, 0, bytemuck::bytes_of(&params));
    }

    /// Draws the tank wireframe and the floor grid into a pass with a [`DEPTH_FORMAT`] depth
    /// attachment.
    pub fn draw_lines(&self, pass: &mut wgpu::RenderPass<'_>) {
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_pipeline(&self.lines);
        pass.set_vertex_buffer(0, self.line_vertices.slice(..));
        pass.draw(0..self.line_count, 0..1);
    }

    /// Draws the lines, the obstacles and the particles into a pass with a [`DEPTH_FORMAT`]
    /// depth attachment.
    pub fn draw(&self, pass: &mut wgpu::RenderPass<'_>) {
        self.draw_lines(pass);
        self.draw_obstacles(pass);
        pass.set_bind_group(0, &self.bind_group, &[]);
        pass.set_pipeline(&self.particles);
        pass.draw(0..4, 0..self.particle_count);
    }

    /// Draws the obstacles' boundary particles, if any.
    pub fn draw_obstacles(&self, pass: &mut wgpu::RenderPass<'_>) {
        if let Some((group, count)) = &self.obstacle_group {
            pass.set_bind_group(0, group, &[]);
            pass.set_pipeline(&self.obstacles);
            pass.draw(0..4, 0..*count);
        }
    }
}

/// The scene's background colour (linear).
pub const BACKGROUND: wgpu::Color = wgpu::Color {
    r: 0.015,
    g: 0.016,
    b: 0.02,
    a: 1.0,
};

/// A colour attachment of `view`, cleared to `clear` and stored.
pub fn clear_attachment(
    view: &wgpu::TextureView,
    clear: wgpu::Color,
) -> Option<wgpu::RenderPassColorAttachment<'_>> {
    Some(wgpu::RenderPassColorAttachment {
        view,
        depth_slice: None,
        resolve_target: None,
        ops: wgpu::Operations {
            load: wgpu::LoadOp::Clear(clear),
            store: wgpu::StoreOp::Store,
        },
    })
}

/// The depth test every drawing pass uses: nearer fragments win and write their depth.
pub fn depth_test() -> wgpu::DepthStencilState {
    wgpu::DepthStencilState {
        format: DEPTH_FORMAT,
        depth_write_enabled: Some(true),
        depth_compare: Some(wgpu::CompareFunction::Less),
        stencil: Default::default(),
        bias: Default::default(),
    }
}

/// A depth attachment of `view`, cleared to the far plane and discarded after the pass.
pub fn depth_attachment(view: &wgpu::TextureView) -> wgpu::RenderPassDepthStencilAttachment<'_> {
    wgpu::RenderPassDepthStencilAttachment {
        view,
        depth_ops: Some(wgpu::Operations {
            load: wgpu::LoadOp::Clear(1.0),
            store: wgpu::StoreOp::Discard,
        }),
        stencil_ops: None,
    }
}

/// A uniform buffer entry of a bind group layout.
pub fn uniform_entry(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Uniform,
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A read-only storage buffer entry of a bind group layout.
pub fn storage_entry(binding: u32, visibility: wgpu::ShaderStages) -> wgpu::BindGroupLayoutEntry {
    wgpu::BindGroupLayoutEntry {
        binding,
        visibility,
        ty: wgpu::BindingType::Buffer {
            ty: wgpu::BufferBindingType::Storage { read_only: true },
            has_dynamic_offset: false,
            min_binding_size: None,
        },
        count: None,
    }
}

/// A 2D texture of `size` (at least 1 × 1).
pub fn texture_2d(
    ctx: &GpuContext,
    label: &str,
    size: (u32, u32),
    format: wgpu::TextureFormat,
    usage: wgpu::TextureUsages,
    view_formats: &[wgpu::TextureFormat],
) -> wgpu::Texture {
    ctx.device.create_texture(&wgpu::TextureDescriptor {
        label: Some(label),
        size: wgpu::Extent3d {
            width: size.0.max(1),
            height: size.1.max(1),
            depth_or_array_layers: 1,
        },
        mip_level_count: 1,
        sample_count: 1,
        dimension: wgpu::TextureDimension::D2,
        format,
        usage,
        view_formats,
    })
}

/// A depth texture that follows the size of its colour target.
pub struct DepthTarget {
    view: wgpu::TextureView,
    size: (u32, u32),
}

impl DepthTarget {
    /// The depth view for a `size` target, reallocated when the size changes.
    pub fn view<'a>(
        slot: &'a mut Option<DepthTarget>,
        ctx: &GpuContext,
        size: (u32, u32),
    ) -> &'a wgpu::TextureView {
        if slot.as_ref().is_none_or(|d| d.size != size) {
            let texture = texture_2d(
                ctx,
                "sph.render_depth",
                size,
                DEPTH_FORMAT,
                wgpu::TextureUsages::RENDER_ATTACHMENT,
                &[],
            );
            *slot = Some(DepthTarget {
                view: texture.create_view(&Default::default()),
                size,
            });
        }
        &slot.as_ref().expect("just allocated").view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn colormap_ends_and_midpoint() {
        assert_eq!(colormap_srgb(0.0), COLORMAP_SRGB[0]);
        assert_eq!(colormap_srgb(1.0), COLORMAP_SRGB[10]);
        assert_eq!(colormap_srgb(0.5), COLORMAP_SRGB[5]);
        assert_eq!(colormap_srgb(-3.0), COLORMAP_SRGB[0]);
        assert_eq!(colormap_srgb(f32::INFINITY), COLORMAP_SRGB[10]);
    }

    #[test]
    fn lines_include_the_twelve_tank_edges() {
        let v = line_geometry(Vec3::ZERO, Vec3::new(0.5, 0.3, 0.2));
        assert_eq!(v.len() % 2, 0);
        let edges = v
            .chunks(2)
            .filter(|p| p[0].colour == [0.55, 0.58, 0.62, 1.0])
            .count();
        assert_eq!(edges, 12);
        assert!(v.len() / 2 > 12, "no floor grid");
    }
}
