// Stage `dfsph_levels` (CPU mirror: src/solver/dfsph/levels.rs dfsph_levels): the 27-point rows
// of every coarse level of DFSPH's solves, in one workgroup (the levels are small: at most
// 2^15 cells on level 0, an eighth of that on each next one; one workgroup keeps the order of
// every sum fixed and needs no pass per level).
// Inputs: coarse_op (dfsph_galerkin: level 0's stored half-rows, fixed point). Output:
// coarse_rows, 27 f32 per cell, level after level from coarse.levels[l].w: level 0's from the
// stored halves (from_fixed; a backward offset reads the neighbour's entry at the mirrored
// offset), each coarser level's from its children (Galerkin aggregation: the entries of the
// children in (z, y, x) order, each child's offsets in row order, summed into the parent's
// entry at the offset between the parents).
// Worked example: two cells along x with rows (2 at the centre, -1 towards the other) -> their
// parent's row is 2 at its centre and nothing else.

@group(0) @binding(0) var<uniform> coarse: CoarseParams;
@group(0) @binding(1) var<storage, read> coarse_op: array<u32>;
@group(0) @binding(2) var<storage, read_write> coarse_rows: array<f32>;

// Cell k's coordinates in a grid of dims (x fastest).
fn coords(k: u32, dims: vec3<u32>) -> vec3<u32> {
    return vec3<u32>(k % dims.x, (k / dims.x) % dims.y, k / (dims.x * dims.y));
}

fn offset_of(o: u32) -> vec3<i32> {
    return vec3<i32>(i32(o % 3u) - 1, i32((o / 3u) % 3u) - 1, i32(o / 9u) - 1);
}

fn stored(cell: u32, e: u32) -> f32 {
    let w = 2u * (14u * cell + e);
    return from_fixed(vec2<u32>(coarse_op[w], coarse_op[w + 1u]), coarse.fixed);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_levels(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    let dims0 = coarse.levels[0].xyz;
    let n0 = dims0.x * dims0.y * dims0.z;
    for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
        let c = vec3<i32>(coords(k, dims0));
        for (var o = 0u; o < 27u; o = o + 1u) {
            var v = 0.0;
            if o >= 13u {
                v = stored(k, o - 13u);
            } else {
                let n = c + offset_of(o);
                if all(n >= vec3<i32>(0)) && all(n < vec3<i32>(dims0)) {
                    v = stored(coarse_index(vec3<u32>(n), dims0), 13u - o);
                }
            }
            if o == 13u {
                v = v * coarse.solve.z;
            }
            coarse_rows[27u * k + o] = v;
        }
    }
    storageBarrier();
    workgroupBarrier();
    for (var l = 1u; l < coarse.dims.w; l = l + 1u) {
        let fine = coarse.levels[l - 1u];
        let here = coarse.levels[l];
        let n = here.x * here.y * here.z;
        for (var k = t; k < n; k = k + WORKGROUP_SIZE) {
            let cc = coords(k, here.xyz);
            var row: array<f32, 27>;
            for (var o = 0u; o < 27u; o = o + 1u) {
                row[o] = 0.0;
            }
            for (var ch = 0u; ch < 8u; ch = ch + 1u) {
                let c = 2u * cc + vec3<u32>(ch & 1u, (ch >> 1u) & 1u, ch >> 2u);
                if all(c < fine.xyz) {
                    let base = 27u * (fine.w + coarse_index(c, fine.xyz));
                    for (var o = 0u; o < 27u; o = o + 1u) {
                        let v = coarse_rows[base + o];
                        if v != 0.0 {
                            let n = vec3<i32>(c) + offset_of(o);
                            let to = n / 2 - vec3<i32>(cc);
                            let tt = u32((to.x + 1) + 3 * (to.y + 1) + 9 * (to.z + 1));
                            row[tt] = row[tt] + v;
                        }
                    }
                }
            }
            let at = 27u * (here.w + k);
            for (var o = 0u; o < 27u; o = o + 1u) {
                coarse_rows[at + o] = row[o];
            }
        }
        storageBarrier();
        workgroupBarrier();
    }
}
