// Stage `render` (no CPU mirror: it draws, it computes nothing the simulation reads).
// `RenderParams` must match `RenderParams` in src/viewer/render.rs field for field.
//
// Particles: one instanced quad (4 vertices, triangle strip) per particle, read straight from
// the simulation's buffers (positions, velocities, density, pressure: all in the last step's
// slot order, so index k is the same particle in each). The fragment stage turns the quad into a
// lit sphere impostor and writes the sphere's true depth, so spheres intersect correctly.
// Obstacles: their boundary particles, the same impostors in grey.
// Lines: the tank wireframe and the floor grid, from a plain vertex buffer.
//
// Worked example: a particle at the camera's target, radius 0.005, seen head on: the quad spans
// ±0.005 in view space; the fragment at uv = (0, 0) lies 0.005 nearer the camera than the
// centre and is lit by the full headlight.

struct RenderParams {
    view: mat4x4<f32>,
    proj: mat4x4<f32>,
    // xyz: direction towards the light in view space (unit); w: 1 when each particle's radius
    // is its position's w (the colliding spheres), 0 when every particle has `radius`.
    light_dir: vec4<f32>,
    radius: f32,
    // 0 speed, 1 density, 2 pressure.
    field: u32,
    range_min: f32,
    range_max: f32,
    // Linear-space colours at 0, 0.1, …, 1 of the colour map.
    colormap: array<vec4<f32>, 11>,
}

@group(0) @binding(0) var<uniform> rp: RenderParams;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> velocities: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> density: array<f32>;
@group(0) @binding(4) var<storage, read> pressure: array<f32>;

fn colormap(t: f32) -> vec3<f32> {
    let x = clamp(t, 0.0, 1.0) * 10.0;
    let i = min(u32(floor(x)), 9u);
    return mix(rp.colormap[i].rgb, rp.colormap[i + 1u].rgb, x - f32(i));
}

fn field_value(k: u32) -> f32 {
    switch rp.field {
        case 1u: {
            return density[k];
        }
        case 2u: {
            return pressure[k];
        }
        default: {
            return length(velocities[k].xyz);
        }
    }
}

struct ParticleOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) centre_view: vec3<f32>,
    @location(2) colour: vec3<f32>,
    @location(3) radius: f32,
}

// Corner v of the quad around the sphere at `positions[k]`, in `colour`.
fn impostor(v: u32, k: u32, colour: vec3<f32>) -> ParticleOut {
    let uv = vec2<f32>(f32(v & 1u) * 2.0 - 1.0, f32(v >> 1u) * 2.0 - 1.0);
    let p = positions[k];
    let radius = select(rp.radius, p.w, rp.light_dir.w > 0.5);
    let centre = (rp.view * vec4<f32>(p.xyz, 1.0)).xyz;
    let corner = centre + vec3<f32>(uv * radius, 0.0);
    var out: ParticleOut;
    out.clip = rp.proj * vec4<f32>(corner, 1.0);
    out.uv = uv;
    out.centre_view = centre;
    out.colour = colour;
    out.radius = radius;
    return out;
}

@vertex
fn render_particles_vs(@builtin(vertex_index) v: u32, @builtin(instance_index) k: u32) -> ParticleOut {
    let span = max(rp.range_max - rp.range_min, 1e-30);
    return impostor(v, k, colormap((field_value(k) - rp.range_min) / span));
}

struct FragOut {
    @location(0) colour: vec4<f32>,
    @builtin(frag_depth) depth: f32,
}

// Obstacles: the boundary particles (bound to `positions` in a bind group of their own), as
// the same lit spheres in one grey.
@vertex
fn render_obstacles_vs(@builtin(vertex_index) v: u32, @builtin(instance_index) k: u32) -> ParticleOut {
    return impostor(v, k, vec3<f32>(0.35, 0.33, 0.3));
}

@fragment
fn render_obstacles_fs(in: ParticleOut) -> FragOut {
    return shade(in);
}

@fragment
fn render_particles_fs(in: ParticleOut) -> FragOut {
    return shade(in);
}

fn shade(in: ParticleOut) -> FragOut {
    let r2 = dot(in.uv, in.uv);
    if r2 > 1.0 {
        discard;
    }
    let normal = vec3<f32>(in.uv, sqrt(1.0 - r2));
    let surface = in.centre_view + normal * in.radius;
    let clip = rp.proj * vec4<f32>(surface, 1.0);
    let diffuse = max(dot(normal, rp.light_dir.xyz), 0.0);
    let half_dir = normalize(rp.light_dir.xyz + vec3<f32>(0.0, 0.0, 1.0));
    let specular = pow(max(dot(normal, half_dir), 0.0), 32.0);
    var out: FragOut;
    out.colour = vec4<f32>(in.colour * (0.25 + 0.75 * diffuse) + vec3<f32>(0.3 * specular), 1.0);
    out.depth = clip.z / clip.w;
    return out;
}

struct LineOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) colour: vec4<f32>,
}

@vertex
fn render_lines_vs(@location(0) position: vec3<f32>, @location(1) colour: vec4<f32>) -> LineOut {
    var out: LineOut;
    out.clip = rp.proj * rp.view * vec4<f32>(position, 1.0);
    out.colour = colour;
    return out;
}

@fragment
fn render_lines_fs(in: LineOut) -> @location(0) vec4<f32> {
    return in.colour;
}
