// Stage `rows` (CPU mirror: src/grid/neighbours.rs, `NeighbourSearch::within`): the neighbour
// search library's compressed rows on the GPU, over the grid the SPH step builds.
// Inputs (slot order, from the grid build): sorted_pos, slot_start (T + 1), sorted_id (each
// slot place's input index). Entry points, one invocation per slot place k:
//   rows_count: row_len[k] = how many j ≠ k lie closer than h (r² < h², the shared predicate);
//   rows_fill:  the input indices of those j written to row_ids[row_start[k] ..][..row_len],
//               then sorted ascending in place (insertion sort: rows hold tens of entries).
// The host turns row_len into row_start (in input order) between the two.
// Worked example, h = 1, points at x = 0, 0.5, 3 (input order 0, 1, 2): row_len 1, 1, 0;
// rows {1}, {0}, {}.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> slot_start: array<u32>;
@group(0) @binding(3) var<storage, read> sorted_id: array<u32>;
@group(0) @binding(4) var<storage, read_write> row_len: array<u32>;
@group(0) @binding(5) var<storage, read> row_start: array<u32>;
@group(0) @binding(6) var<storage, read_write> row_ids: array<u32>;

// Set by the entry point: rows_fill writes, rows_count only counts.
var<private> writing: bool;

struct Walker {
    i: u32,
    x: vec3<f32>,
    n: u32,
    base: u32,
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    var base = 0u;
    if writing {
        base = row_start[first];
    }
    return Walker(first, sorted_pos[first].xyz, 0u, base);
}

fn visit(w: ptr<function, Walker>, k: u32) {
    if k != (*w).i && distance2((*w).x, sorted_pos[k].xyz) < params.h2 {
        if writing {
            row_ids[(*w).base + (*w).n] = sorted_id[k];
        }
        (*w).n = (*w).n + 1u;
    }
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    if !writing {
        row_len[first] = (*w).n;
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn rows_count(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    writing = false;
    walk_one(i);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn rows_fill(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    writing = true;
    walk_one(i);
    let base = row_start[i];
    let len = row_len[i];
    for (var a = 1u; a < len; a = a + 1u) {
        let v = row_ids[base + a];
        var b = a;
        loop {
            if b == 0u || row_ids[base + b - 1u] <= v {
                break;
            }
            row_ids[base + b] = row_ids[base + b - 1u];
            b = b - 1u;
        }
        row_ids[base + b] = v;
    }
}
