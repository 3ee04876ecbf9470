// Stage `order` (CPU mirror: src/grid/order.rs): sort each slot's ids ascending, so the density
// sums run in a fixed order and GPU densities are bitwise reproducible run to run.
// Inputs: particle_slot (N), slot_start (T + 1), unordered_ids (N). Output: sorted_ids (N).
// Each particle's place is its slot's start plus the number of smaller ids in its slot.
// Also lists the density pass's groups: every slot cut into runs of params.group_size places
// (GROUP = 8, or 1 in crowded tables: src/params.rs group_size), each as
// [first, end) in slot order, appended in any order (the set is deterministic, the order of the
// list is not and changes no result). group_args = (workgroups, 1, 1, groups), reset to
// (0, 1, 1, 0) before the pass, is the density pass's indirect dispatch: exactly one
// invocation per group.
// Worked example: slots [0, 2, 0], slot_start [0, 2, 2, 3, 3], unordered [2, 0, 1] → [0, 2, 1];
// groups {[0, 2), [2, 3)}.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> particle_slot: array<u32>;
@group(0) @binding(2) var<storage, read> slot_start: array<u32>;
@group(0) @binding(3) var<storage, read> unordered_ids: array<u32>;
@group(0) @binding(4) var<storage, read_write> sorted_ids: array<u32>;
@group(0) @binding(5) var<storage, read_write> group_range: array<vec2<u32>>;
@group(0) @binding(6) var<storage, read_write> group_args: array<atomic<u32>, 4>;

fn smaller(k: u32, i: u32) -> u32 {
    return select(0u, 1u, unordered_ids[k] < i);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn order(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    let s = particle_slot[i];
    let begin = slot_start[s];
    let end = slot_start[s + 1u];
    var place = begin;
    var k = begin;
    for (; k + UNROLL <= end; k = k + UNROLL) {
        place = place + smaller(k + 0u, i);
        place = place + smaller(k + 1u, i);
        place = place + smaller(k + 2u, i);
        place = place + smaller(k + 3u, i);
    }
    for (; k < end; k = k + 1u) {
        place = place + smaller(k, i);
    }
    sorted_ids[place] = i;
    if (place - begin) % params.group_size == 0u {
        let g = atomicAdd(&group_args[3], 1u);
        group_range[g] = vec2<u32>(place, min(place + params.group_size, end));
        if g % WORKGROUP_SIZE == 0u {
            atomicAdd(&group_args[0], 1u);
        }
    }
}
