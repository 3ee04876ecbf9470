// Stage `interact` (CPU mirror: src/cpu/interact.rs): the viewer's mouse force. Runs after
// `forces` and before `timestep` (so the time step sees the extra acceleration), only while
// the user drags with a modifier held.
// Inputs: sorted_pos (N, slot order), the ray (origin, unit direction), radius R and strength S.
// Output: accel (N, vec4), incremented in place.
// A particle at distance d < R from the ray is pulled towards its closest point on the ray
// (S > 0) or pushed away (S < 0): a += S (1 − d/R)² (q − x)/d, q the closest point; nothing
// for d = 0 (no direction) or d ≥ R, nor behind the ray's origin.
// Worked example: ray from (0, 0, 0) along +z, R = 1, S = 10, particle at (0.5, 0, 2):
// q = (0, 0, 2), d = 0.5 → a += 10 · 0.25 · (−1, 0, 0) = (−2.5, 0, 0).

struct InteractParams {
    origin: vec4<f32>,
    direction: vec4<f32>,
    radius: f32,
    strength: f32,
    _pad0: f32,
    _pad1: f32,
}

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> ip: InteractParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> accel: array<vec4<f32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn interact(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    let x = sorted_pos[i].xyz;
    let rel = x - ip.origin.xyz;
    let along = rel.x * ip.direction.x + rel.y * ip.direction.y + rel.z * ip.direction.z;
    let to_axis = ip.direction.xyz * along - rel;
    let d = sqrt(to_axis.x * to_axis.x + to_axis.y * to_axis.y + to_axis.z * to_axis.z);
    let inside = d > 0.0 && d < ip.radius;
    if along < 0.0 || !inside {
        return;
    }
    let w = 1.0 - d / ip.radius;
    let push = to_axis * (ip.strength * w * w / d);
    accel[i] = vec4<f32>(accel[i].xyz + push, accel[i].w);
}
