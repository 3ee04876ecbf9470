// The one neighbour walk of the GPU path (CPU mirror: src/grid/walk.rs), prepended after
// common.wgsl to the stages that walk, and only to them (src/shaders.rs `source`).
// A walking stage binds `params`, `sorted_pos` and `slot_start`, and says only what one walk
// accumulates:
//   struct Walker { ... }                                      its members' sums
//   fn begin_round(first: u32, len: u32, members: u32) -> Walker
//   fn visit(w: ptr<function, Walker>, k: u32)                 candidate k, for every member
//   fn end_round(w: ptr<function, Walker>, first: u32, members: u32)
// (module-scope declarations may come in any order, so this file calls what the stage
// defines after it). `walk_group` walks a group of consecutive slot-order particles: members
// with the same query range (normally all: they share a cell) walk together in one round,
// each candidate read once for all of them; a member with another range (a different cell
// aliasing into the slot) gets a round of its own. `walk_one` is the group of one particle.
// Inputs: sorted_pos (N, slot order), slot_start (T + 1). Output: whatever end_round stores.
// The walk: the cells from cell_of(p - h) to cell_of(p + h) (the 27 around p), z then y then
// x, each slot once (first_visit), its particles ascending, UNROLL per loop iteration.
// Worked example, h = 1, T = 1, particles at x = 0.1 and 5: the 27 cells all map to slot 0,
// which is walked once, visiting candidates 0 and 1.

// Slot de-duplication of a query walk without a private array (an indexed private array is
// slow on llvmpipe, where every invocation's copy is read lane by lane). Two 64-bit filters
// remember the slots visited so far; a slot missing from either was not visited before (the
// common case). When both say "maybe", the slots of the cells before `c` in walk order are
// recomputed and compared, so the answer is exact: false when an earlier cell of the query
// already mapped to slot s (hash aliasing), and the caller skips it and counts nobody twice.
struct Visited {
    a: vec2<u32>,
    b: vec2<u32>,
}

fn first_visit(v: ptr<function, Visited>, s: u32, c: vec3<i32>, lo: vec3<i32>, hi: vec3<i32>, mask: u32) -> bool {
    let ka = s & 63u;
    let kb = (s * 2654435761u) >> 26u;
    let bit_a = 1u << (ka & 31u);
    let bit_b = 1u << (kb & 31u);
    let word_a = select((*v).a.x, (*v).a.y, ka >= 32u);
    let word_b = select((*v).b.x, (*v).b.y, kb >= 32u);
    let maybe = (word_a & bit_a) != 0u && (word_b & bit_b) != 0u;
    if ka >= 32u { (*v).a.y = (*v).a.y | bit_a; } else { (*v).a.x = (*v).a.x | bit_a; }
    if kb >= 32u { (*v).b.y = (*v).b.y | bit_b; } else { (*v).b.x = (*v).b.x | bit_b; }
    if !maybe {
        return true;
    }
    for (var z = lo.z; z <= c.z; z = z + 1) {
        for (var y = lo.y; y <= hi.y; y = y + 1) {
            for (var x = lo.x; x <= hi.x; x = x + 1) {
                if x == c.x && y == c.y && z == c.z {
                    return true;
                }
                if hash_cell(vec3<i32>(x, y, z), mask) == s {
                    return false;
                }
            }
        }
    }
    return true;
}

// Calls visit(w, k) for every particle k of every distinct slot of the cells lo..=hi.
fn walk_range(lo: vec3<i32>, hi: vec3<i32>, w: ptr<function, Walker>) {
    var visited = Visited(vec2<u32>(0u), vec2<u32>(0u));
    for (var cz = lo.z; cz <= hi.z; cz = cz + 1) {
        for (var cy = lo.y; cy <= hi.y; cy = cy + 1) {
            for (var cx = lo.x; cx <= hi.x; cx = cx + 1) {
                let c = vec3<i32>(cx, cy, cz);
                let s = hash_cell(c, params.table_mask);
                if !first_visit(&visited, s, c, lo, hi, params.table_mask) {
                    continue;
                }
                let end = slot_start[s + 1u];
                var k = slot_start[s];
                for (; k + UNROLL <= end; k = k + UNROLL) {
                    visit(w, k + 0u);
                    visit(w, k + 1u);
                    visit(w, k + 2u);
                    visit(w, k + 3u);
                }
                for (; k < end; k = k + 1u) {
                    visit(w, k);
                }
            }
        }
    }
}

// Walks the group [r.x, r.y) (at most GROUP particles) in rounds of members sharing a query
// range.
fn walk_group(r: vec2<u32>) {
    let len = r.y - r.x;
    let everyone = (1u << len) - 1u;
    var done = 0u;
    loop {
        if done == everyone {
            break;
        }
        // The first member not yet done leads this round; members sharing its range follow.
        let leader = sorted_pos[r.x + firstTrailingBit(~done)].xyz;
        let lo = query_lo(leader, params);
        let hi = query_hi(leader, lo, params);
        var members = 1u;
        if len > 1u {
            members = 0u;
            for (var l = 0u; l < len; l = l + 1u) {
                let p = sorted_pos[r.x + l].xyz;
                let plo = query_lo(p, params);
                if all(plo == lo) && all(query_hi(p, plo, params) == hi) {
                    members = members | (1u << l);
                }
            }
        }
        var w = begin_round(r.x, len, members);
        walk_range(lo, hi, &w);
        end_round(&w, r.x, members);
        done = done | members;
    }
}

// The walk of particle i alone.
fn walk_one(i: u32) {
    walk_group(vec2<u32>(i, i + 1u));
}
