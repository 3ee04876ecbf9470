// Stage `reorder` (CPU mirror: src/grid/reorder.rs): gather the particle state into slot order,
// out[k] = in[sorted_ids[k]], so later stages read neighbours that sit together in memory.
// Inputs: sorted_ids (N), positions, velocities (vec4, N), particle_id (N).
// Outputs: sorted_pos, sorted_vel (vec4, N), sorted_id (N, the original index of each).
// Worked example: sorted_ids [0, 2, 1], positions [a, b, c], ids [7, 8, 9] → [a, c, b], [7, 9, 8].

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> sorted_ids: array<u32>;
@group(0) @binding(2) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> velocities: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> particle_id: array<u32>;
@group(0) @binding(5) var<storage, read_write> sorted_pos: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> sorted_vel: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> sorted_id: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn reorder(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    let i = sorted_ids[k];
    sorted_pos[k] = positions[i];
    sorted_vel[k] = velocities[i];
    sorted_id[k] = particle_id[i];
}
