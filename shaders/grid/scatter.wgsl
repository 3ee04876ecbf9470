// Stage `scatter` (CPU mirror: src/grid/scatter.rs).
// Inputs: particle_slot (N), particle_rank (N), slot_start (T + 1). Output: unordered_ids (N),
// the particle ids grouped by slot; within a slot their order follows the atomic ranks.
// Worked example: slots [0, 2, 0], ranks [1, 0, 0], slot_start [0, 2, 2, 3, 3] → [2, 0, 1].

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> particle_slot: array<u32>;
@group(0) @binding(2) var<storage, read> particle_rank: array<u32>;
@group(0) @binding(3) var<storage, read> slot_start: array<u32>;
@group(0) @binding(4) var<storage, read_write> unordered_ids: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn scatter(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    unordered_ids[slot_start[particle_slot[i]] + particle_rank[i]] = i;
}
