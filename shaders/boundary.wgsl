// The obstacles' boundary grid and its walk (CPU mirror: src/boundary.rs Boundary::walk),
// prepended to every stage that defines `fn boundary_pair(`: `obstacle_density` and
// `obstacle_forces` (WCSPH) and the DFSPH walks `dfsph_density`, `dfsph_rate` and
// `dfsph_pressure`. Bind group 1: the uniform block, bpos (xyz, psi_b), the grid's slot
// starts and bvel (velocity, friction factor); a stage without obstacles binds a block whose
// box is empty, so `near_obstacles` is false everywhere.
// The walk: the cells from cell_of(p - h) to cell_of(p + h), z then y then x, each non-empty
// slot once (an earlier cell of the query with the same slot means it was walked), its
// particles ascending; each particle k with r2 < h2 goes to the stage's
// boundary_pair(sums, k, x - bpos[k].xyz, r2), which folds it into the stage's own
// `BoundarySums`.
// Worked example: one boundary particle 0.5 from x at h = 1 is the only pair, with r2 = 0.25.

struct ObstacleParams {
    lo: vec4<f32>,
    hi: vec4<f32>,
    count: u32,
    table_mask: u32,
    poly6_norm: f32,
    _pad: f32,
}

@group(1) @binding(0) var<uniform> obstacle: ObstacleParams;
@group(1) @binding(1) var<storage, read> bpos: array<vec4<f32>>;
@group(1) @binding(2) var<storage, read> bslot_start: array<u32>;
@group(1) @binding(3) var<storage, read> bvel: array<vec4<f32>>;

fn boundary_slot(c: vec3<i32>) -> u32 {
    return hash_cell(c, obstacle.table_mask);
}

// Whether a cell before c in the walk order of the query lo..=hi maps to slot s.
fn walked_before(s: u32, c: vec3<i32>, lo: vec3<i32>, hi: vec3<i32>) -> bool {
    for (var z = lo.z; z <= c.z; z++) {
        for (var y = lo.y; y <= hi.y; y++) {
            for (var x = lo.x; x <= hi.x; x++) {
                let e = vec3<i32>(x, y, z);
                if (all(e == c)) {
                    return false;
                }
                if (boundary_slot(e) == s) {
                    return true;
                }
            }
        }
    }
    return false;
}

// Whether x lies in the boundary particles' bounding box grown by h (only there can one be
// within h).
fn near_obstacles(x: vec3<f32>) -> bool {
    return all(x >= obstacle.lo.xyz) && all(x <= obstacle.hi.xyz);
}

fn walk_boundary(x: vec3<f32>, start: BoundarySums) -> BoundarySums {
    var sums = start;
    let lo = query_lo(x, params);
    let hi = query_hi(x, lo, params);
    for (var cz = lo.z; cz <= hi.z; cz++) {
        for (var cy = lo.y; cy <= hi.y; cy++) {
            for (var cx = lo.x; cx <= hi.x; cx++) {
                let c = vec3<i32>(cx, cy, cz);
                let s = boundary_slot(c);
                let a = bslot_start[s];
                let b = bslot_start[s + 1u];
                if (a == b || walked_before(s, c, lo, hi)) {
                    continue;
                }
                for (var k = a; k < b; k++) {
                    let bp = bpos[k].xyz;
                    let r2 = distance2(x, bp);
                    if (r2 < params.h2) {
                        sums = boundary_pair(sums, k, x - bp, r2);
                    }
                }
            }
        }
    }
    return sums;
}
