// The member walker (prepended after walk.wgsl to the stages that define `fn new_member(`):
// the `Walker` of the grouped walks whose visitors work member by member (walls, forces,
// the DFSPH walks), written once. The stage defines
//   struct Member { ... }            one particle of the group and its sums
//   fn new_member(i: u32) -> Member  particle i's member, its sums empty
//   fn finish(m: Member, i: u32)     stores particle i's results
//   fn visit(w: ptr<function, Walker>, k: u32)   candidate k for every member
// and binds `group_range` and `group_args`, the groups `order` listed.
// begin_round loads the group's members (places past the group's end repeat its last
// particle; their results are dropped), end_round finishes the members of the round.
// Worked example: a group of 3 in a round of members 0b101 loads particles first, first + 1,
// first + 2 (and first + 2 again for places 3-7) and finishes first and first + 2.

// Members a walker holds: GROUP, or 1 for pipelines built for single-particle groups
// (crowded tables, src/params.rs group_size), where the other seven would repeat the first's
// work; src/shaders.rs source_for sets it per pipeline, and visitors branch on it (a constant
// branch, folded away).
const MEMBERS: u32 = 8u;

struct Walker {
    m0: Member,
    m1: Member,
    m2: Member,
    m3: Member,
    m4: Member,
    m5: Member,
    m6: Member,
    m7: Member,
}

// Member l of the group `first..first + len`.
fn member_at(first: u32, len: u32, l: u32) -> Member {
    return new_member(first + min(l, len - 1u));
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    return Walker(
        member_at(first, len, 0u),
        member_at(first, len, 1u),
        member_at(first, len, 2u),
        member_at(first, len, 3u),
        member_at(first, len, 4u),
        member_at(first, len, 5u),
        member_at(first, len, 6u),
        member_at(first, len, 7u),
    );
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    if (members & 1u) != 0u { finish((*w).m0, first); }
    if (members & 2u) != 0u { finish((*w).m1, first + 1u); }
    if (members & 4u) != 0u { finish((*w).m2, first + 2u); }
    if (members & 8u) != 0u { finish((*w).m3, first + 3u); }
    if (members & 16u) != 0u { finish((*w).m4, first + 4u); }
    if (members & 32u) != 0u { finish((*w).m5, first + 5u); }
    if (members & 64u) != 0u { finish((*w).m6, first + 6u); }
    if (members & 128u) != 0u { finish((*w).m7, first + 7u); }
}

// The walk of group g of the list `order` made; an invocation past the list does nothing.
fn walk_listed_group(g: u32) {
    if g < group_args[3] {
        walk_group(group_range[g]);
    }
}
