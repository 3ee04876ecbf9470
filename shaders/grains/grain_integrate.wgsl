// Stage `grain_integrate` (CPU mirror: src/grains/mod.rs `integrate`): symplectic Euler,
// v' = v + a·dt, x' = x + v'·dt. The walls are contacts (stage `grain_contacts`), so nothing
// is clamped here. Radius (pos.w) and mass (vel.w) ride along.
// Inputs (slot order): sorted_pos, sorted_vel, sorted_id, accel (N). Outputs: positions,
// velocities, particle_id (N): the next state, in this step's slot order.
// Worked example, dt = 0.1: x = (0, 1, 0), v = (1, 0, 0), a = (0, −10, 0) → v' = (1, −1, 0),
// x' = (0.1, 0.9, 0).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> grains: GrainParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> sorted_id: array<u32>;
@group(0) @binding(5) var<storage, read> accel: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> velocities: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> particle_id: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn grain_integrate(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    let p = sorted_pos[k];
    let u = sorted_vel[k];
    let v = u.xyz + accel[k].xyz * grains.dt;
    let x = p.xyz + v * grains.dt;
    positions[k] = vec4<f32>(x, p.w);
    velocities[k] = vec4<f32>(v, u.w);
    particle_id[k] = sorted_id[k];
}
