// Stage `surface` (no CPU mirror: it draws, it computes nothing the simulation reads).
// `SurfaceParams` must match `SurfaceParams` in src/viewer/surface.rs field for field.
//
// Screen-space fluid rendering after van der Laan, Green and Sainz, "Screen Space Fluid
// Rendering with Curvature Flow" (I3D 2009), with the depth smoothed by the narrow-range filter
// of Truong and Yuksel, "A Narrow-Range Filter for Screen-Space Fluid Rendering" (I3D 2018)
// instead of curvature flow (one pass per axis instead of tens of flow iterations):
//   1. depth:     each particle splatted as a sphere of radius r; nearest linear view depth per
//                 pixel (R32Float, 0 = no fluid) with a depth test;
//   2. thickness: the spheres' chord lengths 2·√(r² − ρ²) summed additively, no depth test;
//   3. filter:    narrow-range Gaussian local linear fit along x, then along y (repeated
//                 `iterations` times), with a world-space width projected per pixel so far
//                 water is not over-smoothed, and a depth range of ± `depth_falloff` about
//                 each pixel;
//   4. composite: view-space positions from the smoothed depth, normals from the smaller of the
//                 one-sided differences (so edges do not smear), Schlick's Fresnel (F0 = 0.02 of
//                 water) mixing a sky reflection with the background refracted by an offset
//                 along the normal proportional to the thickness, the refracted light attenuated
//                 per channel by Beer–Lambert exp(−k·thickness), plus a Blinn–Phong highlight.
//
// Worked example: a sphere of r = 6 mm at 1 m depth, seen head on: its centre pixel gets depth
// 0.994 m and thickness 12 mm; with k = (21.2, 8.0, 2.2) /m (the default colour: 12%, 45%, 80% of
// the light through 10 cm) the background behind it keeps exp(−k·0.012) = (78%, 91%, 97%).

struct SurfaceParams {
    view: mat4x4<f32>,
    proj: mat4x4<f32>,
    // xyz: direction towards the light in view space (unit).
    light_dir: vec4<f32>,
    // rgb: absorption coefficient k per metre.
    absorption: vec4<f32>,
    // width, height, 1/width, 1/height in pixels.
    screen: vec4<f32>,
    // Splat radius, m.
    radius: f32,
    // Filter half-width in world units, m.
    filter_radius: f32,
    // Half-width of the filter's depth range, m.
    depth_falloff: f32,
    // Cap on the filter half-width, pixels.
    max_pixels: f32,
    // Background offset per metre of thickness along the normal, m/m.
    refraction: f32,
    pad0: f32,
    pad1: f32,
    pad2: f32,
}

@group(0) @binding(0) var<uniform> sp: SurfaceParams;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(1) @binding(0) var depth_in: texture_2d<f32>;
@group(1) @binding(1) var thickness_in: texture_2d<f32>;
@group(1) @binding(2) var background: texture_2d<f32>;

struct SplatOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) uv: vec2<f32>,
    @location(1) centre_view: vec3<f32>,
}

@vertex
fn surface_splat_vs(@builtin(vertex_index) v: u32, @builtin(instance_index) k: u32) -> SplatOut {
    let uv = vec2<f32>(f32(v & 1u) * 2.0 - 1.0, f32(v >> 1u) * 2.0 - 1.0);
    let centre = (sp.view * vec4<f32>(positions[k].xyz, 1.0)).xyz;
    var out: SplatOut;
    out.clip = sp.proj * vec4<f32>(centre + vec3<f32>(uv * sp.radius, 0.0), 1.0);
    out.uv = uv;
    out.centre_view = centre;
    return out;
}

struct DepthOut {
    @location(0) depth: vec4<f32>,
    @builtin(frag_depth) z: f32,
}

@fragment
fn surface_depth_fs(in: SplatOut) -> DepthOut {
    let r2 = dot(in.uv, in.uv);
    if r2 > 1.0 {
        discard;
    }
    let surface = in.centre_view + vec3<f32>(in.uv, sqrt(1.0 - r2)) * sp.radius;
    let clip = sp.proj * vec4<f32>(surface, 1.0);
    var out: DepthOut;
    out.depth = vec4<f32>(-surface.z, 0.0, 0.0, 0.0);
    out.z = clip.z / clip.w;
    return out;
}

@fragment
fn surface_thickness_fs(in: SplatOut) -> @location(0) vec4<f32> {
    let r2 = dot(in.uv, in.uv);
    if r2 > 1.0 {
        discard;
    }
    return vec4<f32>(2.0 * sp.radius * sqrt(1.0 - r2), 0.0, 0.0, 0.0);
}

// One triangle covering the screen.
@vertex
fn surface_screen_vs(@builtin(vertex_index) v: u32) -> @builtin(position) vec4<f32> {
    let x = f32((v << 1u) & 2u) * 2.0 - 1.0;
    let y = f32(v & 2u) * 2.0 - 1.0;
    return vec4<f32>(x, y, 0.0, 1.0);
}

fn load_depth(p: vec2<i32>) -> f32 {
    let size = vec2<i32>(sp.screen.xy);
    return textureLoad(depth_in, clamp(p, vec2<i32>(0), size - 1), 0).r;
}

// The narrow-range filter of Truong and Yuksel (I3D 2018), one axis, with a local linear fit
// (Fan and Gijbels, "Local Polynomial Modelling", 1996) in place of the weighted mean: over the
// samples whose depth lies within ± depth_falloff of the centre's (others are another sheet of
// water, or a particle standing out, and are left out, so silhouettes stay sharp), the
// Gaussian-weighted least-squares line d = a + b·i is fitted and a, its value at the centre,
// kept. Inside the water the window is symmetric and a is the weighted mean; at a rim it is
// one-sided, where a mean pulls a sloping surface towards its inner side by up to the range,
// pass after pass, and the rim grew a comb of teeth one pixel wide. A line follows the slope.
// Worked example: samples d = 1.00, 1.01, 1.02 m at i = 0, 1, 2 (a rim at i = 0) give the mean
// 1.01 m but the line's a = 1.00 m, the rim's own depth.
fn narrow_range(p: vec2<i32>, dir: vec2<i32>) -> f32 {
    let d0 = load_depth(p);
    if d0 <= 0.0 {
        return 0.0;
    }
    // The world-space half-width, projected at this depth: sp.proj[1][1] is cot(fovy/2).
    let px = sp.filter_radius * sp.proj[1][1] * 0.5 * sp.screen.y / d0;
    let half = i32(clamp(px, 1.0, sp.max_pixels));
    let sigma = max(0.5 * f32(half), 0.5);
    let inv_space = 1.0 / (2.0 * sigma * sigma);
    var w0 = 0.0;
    var w1 = 0.0;
    var w2 = 0.0;
    var wd = 0.0;
    var wdi = 0.0;
    for (var i = -half; i <= half; i++) {
        let d = load_depth(p + dir * i);
        if d <= 0.0 || abs(d - d0) > sp.depth_falloff {
            continue;
        }
        let x = f32(i);
        let w = exp(-x * x * inv_space);
        w0 += w;
        w1 += w * x;
        w2 += w * x * x;
        // Relative to d0, so the sums keep f32's digits at a metre's depth.
        wd += w * (d - d0);
        wdi += w * (d - d0) * x;
    }
    let det = w0 * w2 - w1 * w1;
    // A lone sample, or all on one pixel: no slope to fit, the mean (d0 itself).
    if det <= 1e-6 * w0 * w0 {
        return d0 + wd / w0;
    }
    return d0 + (wd * w2 - wdi * w1) / det;
}

@fragment
fn surface_filter_x_fs(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    return vec4<f32>(narrow_range(vec2<i32>(frag.xy), vec2<i32>(1, 0)), 0.0, 0.0, 0.0);
}

@fragment
fn surface_filter_y_fs(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    return vec4<f32>(narrow_range(vec2<i32>(frag.xy), vec2<i32>(0, 1)), 0.0, 0.0, 0.0);
}

// The view-space point seen at pixel p with linear depth d (symmetric perspective).
fn view_point(p: vec2<i32>, d: f32) -> vec3<f32> {
    let ndc = vec2<f32>(
        (f32(p.x) + 0.5) * sp.screen.z * 2.0 - 1.0,
        1.0 - (f32(p.y) + 0.5) * sp.screen.w * 2.0,
    );
    return vec3<f32>(ndc.x * d / sp.proj[0][0], ndc.y * d / sp.proj[1][1], -d);
}

// The difference towards the neighbour along `dir` whose depth is closer to the centre's; a
// neighbour without fluid is never chosen over one with. Where both neighbours lie beyond the
// filter's depth range the pixel sits on a depth edge (a sheet of water in front of another,
// seen across its rim): the step is not a slope of this surface, and taken as one it turns the
// normal edge-on, so the rim shows as a comb of bright sky reflections one pixel wide. There
// the surface is taken as flat along `dir`.
fn tangent(p: vec2<i32>, dir: vec2<i32>, centre: vec3<f32>) -> vec3<f32> {
    let df = load_depth(p + dir);
    let db = load_depth(p - dir);
    let forward = view_point(p + dir, df) - centre;
    let backward = centre - view_point(p - dir, db);
    var t = backward;
    if db <= 0.0 || (df > 0.0 && abs(forward.z) < abs(backward.z)) {
        t = forward;
    }
    if abs(t.z) > sp.depth_falloff {
        t.z = 0.0;
    }
    return t;
}

fn sky(dir_world: vec3<f32>) -> vec3<f32> {
    let up = clamp(dir_world.y, -1.0, 1.0);
    let horizon = vec3<f32>(0.55, 0.62, 0.70);
    let zenith = vec3<f32>(0.16, 0.30, 0.55);
    let ground = vec3<f32>(0.05, 0.05, 0.06);
    if up < 0.0 {
        return mix(horizon, ground, min(-up * 4.0, 1.0));
    }
    return mix(horizon, zenith, sqrt(up));
}

fn load_background(p: vec2<i32>) -> vec3<f32> {
    let size = vec2<i32>(sp.screen.xy);
    return textureLoad(background, clamp(p, vec2<i32>(0), size - 1), 0).rgb;
}

// The background seen through the water: a 5-tap average 2 px wide, as the water's small-scale
// ripples blur it. A single texel would pick out the tank's and the grid's one-pixel lines
// wherever the refraction offset lands on them, as speckles in lines.
fn refracted_background(p: vec2<i32>) -> vec3<f32> {
    return 0.2 * (load_background(p) + load_background(p + vec2<i32>(2, 0))
        + load_background(p - vec2<i32>(2, 0)) + load_background(p + vec2<i32>(0, 2))
        + load_background(p - vec2<i32>(0, 2)));
}

@fragment
fn surface_composite_fs(@builtin(position) frag: vec4<f32>) -> @location(0) vec4<f32> {
    let p = vec2<i32>(frag.xy);
    let d = load_depth(p);
    if d <= 0.0 {
        return vec4<f32>(load_background(p), 1.0);
    }
    let centre = view_point(p, d);
    var n = normalize(cross(tangent(p, vec2<i32>(1, 0), centre), tangent(p, vec2<i32>(0, 1), centre)));
    if n.z < 0.0 {
        n = -n;
    }
    let to_eye = normalize(-centre);
    let cos_theta = clamp(dot(n, to_eye), 0.0, 1.0);
    let fresnel = 0.02 + 0.98 * pow(1.0 - cos_theta, 5.0);
    // The view matrix is a rotation and a translation: its transpose maps view to world.
    let r = reflect(-to_eye, n);
    let rot = mat3x3<f32>(sp.view[0].xyz, sp.view[1].xyz, sp.view[2].xyz);
    let reflected = sky(transpose(rot) * r);
    let thickness = textureLoad(thickness_in, p, 0).r;
    let shift_world = n.xy * thickness * sp.refraction;
    let shift_px = vec2<f32>(shift_world.x, -shift_world.y) * sp.proj[1][1] * 0.5 * sp.screen.y / d;
    let behind = refracted_background(p + vec2<i32>(shift_px));
    // Beer–Lambert: what is not transmitted is absorbed or scattered; the scattered part
    // lights the water with the sky's ambient in the colour the absorption leaves.
    let transmitted = exp(-sp.absorption.rgb * thickness);
    let tint = exp(-sp.absorption.rgb * 0.1);
    let ambient = 0.35 + 0.65 * max(dot(n, sp.light_dir.xyz), 0.0);
    let refracted = behind * transmitted + (1.0 - transmitted) * tint * ambient;
    let half_dir = normalize(sp.light_dir.xyz + to_eye);
    let specular = pow(max(dot(n, half_dir), 0.0), 64.0);
    return vec4<f32>(mix(refracted, reflected, fresnel) + vec3<f32>(0.35 * specular), 1.0);
}
