// Stage `mesh` (no CPU mirror: it draws). Renders a triangle mesh (a reconstructed fluid
// surface) with per-vertex normals: a headlight-and-sky Lambert term in a water colour, and the
// Schlick Fresnel rim of water (F0 = 0.02) towards the sky, so the shape reads without textures.
// `MeshParams` must match `MeshParams` in src/viewer/mesh.rs.
//
// Worked example: a face turned straight at the camera and the light gets the full water
// colour and no rim (Fresnel 0.02); a face seen edge-on takes the sky colour.

struct MeshParams {
    view_proj: mat4x4<f32>,
    // xyz: the camera position, world space.
    eye: vec4<f32>,
    // xyz: direction towards the light, world space (unit).
    light_dir: vec4<f32>,
}

@group(0) @binding(0) var<uniform> mp: MeshParams;

struct MeshOut {
    @builtin(position) clip: vec4<f32>,
    @location(0) world: vec3<f32>,
    @location(1) normal: vec3<f32>,
}

@vertex
fn mesh_vs(@location(0) position: vec3<f32>, @location(1) normal: vec3<f32>) -> MeshOut {
    var out: MeshOut;
    out.clip = mp.view_proj * vec4<f32>(position, 1.0);
    out.world = position;
    out.normal = normal;
    return out;
}

@fragment
fn mesh_fs(in: MeshOut) -> @location(0) vec4<f32> {
    let n = normalize(in.normal);
    let to_eye = normalize(mp.eye.xyz - in.world);
    // Two-sided: the marching-cubes winding may face either way.
    let nn = select(n, -n, dot(n, to_eye) < 0.0);
    let water = vec3<f32>(0.05, 0.30, 0.55);
    let sky = vec3<f32>(0.55, 0.65, 0.78);
    let diffuse = 0.3 + 0.7 * max(dot(nn, mp.light_dir.xyz), 0.0);
    let fresnel = 0.02 + 0.98 * pow(1.0 - clamp(dot(nn, to_eye), 0.0, 1.0), 5.0);
    let half_dir = normalize(mp.light_dir.xyz + to_eye);
    let specular = pow(max(dot(nn, half_dir), 0.0), 64.0);
    return vec4<f32>(mix(water * diffuse, sky, fresnel) + vec3<f32>(0.4 * specular), 1.0);
}
