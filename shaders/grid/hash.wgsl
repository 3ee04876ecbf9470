// Stage `hash` (CPU mirror: src/grid/hash.rs).
// Inputs: positions (N, xyz of vec4), params. Outputs: particle_slot (N), particle_rank (N),
// and per-slot counts accumulated with atomicAdd into slot_count (T; cleared before the build).
// slot_count is the same buffer the scan then turns, in place, into slot_start.
// Worked example, h = 1, T = 4, x = 0.5, 2.5, 0.7 (y = z = 0.5): cells 0, 2, 0 → slots 0, 2, 0;
// counts [2, 0, 1, 0]; ranks of particles 0 and 2 are {0, 1} in either order, particle 1 has 0.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read_write> slot_count: array<atomic<u32>>;
@group(0) @binding(3) var<storage, read_write> particle_slot: array<u32>;
@group(0) @binding(4) var<storage, read_write> particle_rank: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn hash(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    let s = hash_cell(cell_of(positions[i].xyz, params.inv_h), params.table_mask);
    particle_slot[i] = s;
    particle_rank[i] = atomicAdd(&slot_count[s], 1u);
}
