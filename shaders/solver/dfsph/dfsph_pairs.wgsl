// The DFSPH pair walk (CPU mirror: src/solver/dfsph/pairs.rs group_pairs), prepended
// after walk.wgsl and members.wgsl to the DFSPH stages that walk: those that define `fn dfsph_pair(`. Such a
// stage binds `params`, `fluid`, `dfsph`, `sorted_pos`, `slot_start`, `group_range` and
// `group_args`, and defines
//   struct Member { i: u32, x: vec3<f32>, walls: WallPlanes, ... }   one particle of a group
//   struct Cand { ... }                       what a pair reads of the candidate
//   fn new_member(i: u32) -> Member           particle i's member, its sums empty
//   fn candidate(k: u32) -> Cand
//   fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, axes: vec3<bool>) -> Member
//   fn finish(m: Member, i: u32)              stores particle i's results
// The member walker (members.wgsl) holds the group: up to GROUP particles of one slot walk
// once (walk.wgsl), each candidate read once for all members. For each member and candidate k (r2 < h2):
// dfsph_pair for k itself if k != i (axes all false), then for each image of k across the
// member's near walls within h, in decreasing subset mask (axes = the reflected ones),
// d = x_i - (image of) x_k: each member's sums are those of a walk of its own, bit for bit.
// No function here returns early: on llvmpipe an early return inside the walk spends loop
// budget (see forces.wgsl). The run's kernel (shaders/kernel/, kernel_w and kernel_grad) precedes it.

// Candidate k itself for member m: a neighbour (r2 < h2) other than m.
fn own_pair(m: Member, k: u32, xk: vec3<f32>, c: Cand) -> Member {
    let d = m.x - xk;
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    var out = m;
    if r2 < params.h2 && k != m.i {
        out = dfsph_pair(m, k, c, d, r2, vec3<bool>(false));
    }
    return out;
}

// The walls across which m sees xk's images: its near walls if xk is a neighbour (an image is
// never nearer than its original), else none.
fn image_mask(m: Member, xk: vec3<f32>) -> u32 {
    return wall_image_mask(m.walls, m.x, xk, params.h2);
}

// Image s of candidate k for member m, if s is a subset of `seen` and the image lies within h.
fn image_pair(m: Member, k: u32, xk: vec3<f32>, c: Cand, seen: u32, s: u32) -> Member {
    let axes = image_axes(s);
    let d = m.x - reflect_across(xk, m.walls.plane, axes);
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    var out = m;
    if (seen & s) == s && r2 < params.h2 {
        out = dfsph_pair(m, k, c, d, r2, axes);
    }
    return out;
}

fn visit(w: ptr<function, Walker>, k: u32) {
    let xk = sorted_pos[k].xyz;
    let c = candidate(k);
    if MEMBERS == 1u {
        let e = image_mask((*w).m0, xk);
        (*w).m0 = own_pair((*w).m0, k, xk, c);
        if e != 0u {
            var s = e;
            loop {
                (*w).m0 = image_pair((*w).m0, k, xk, c, e, s);
                s = (s - 1u) & e;
                if s == 0u {
                    break;
                }
            }
        }
    } else {
        visit_members(w, k, xk, c);
    }
}

fn visit_members(w: ptr<function, Walker>, k: u32, xk: vec3<f32>, c: Cand) {
    let e0 = image_mask((*w).m0, xk);
    let e1 = image_mask((*w).m1, xk);
    let e2 = image_mask((*w).m2, xk);
    let e3 = image_mask((*w).m3, xk);
    let e4 = image_mask((*w).m4, xk);
    let e5 = image_mask((*w).m5, xk);
    let e6 = image_mask((*w).m6, xk);
    let e7 = image_mask((*w).m7, xk);
    (*w).m0 = own_pair((*w).m0, k, xk, c);
    (*w).m1 = own_pair((*w).m1, k, xk, c);
    (*w).m2 = own_pair((*w).m2, k, xk, c);
    (*w).m3 = own_pair((*w).m3, k, xk, c);
    (*w).m4 = own_pair((*w).m4, k, xk, c);
    (*w).m5 = own_pair((*w).m5, k, xk, c);
    (*w).m6 = own_pair((*w).m6, k, xk, c);
    (*w).m7 = own_pair((*w).m7, k, xk, c);
    // The members walk the subsets of their masks' union together, in decreasing order; each
    // takes those of its own mask (see forces.wgsl).
    let near = e0 | e1 | e2 | e3 | e4 | e5 | e6 | e7;
    if near != 0u {
        var s = near;
        loop {
            (*w).m0 = image_pair((*w).m0, k, xk, c, e0, s);
            (*w).m1 = image_pair((*w).m1, k, xk, c, e1, s);
            (*w).m2 = image_pair((*w).m2, k, xk, c, e2, s);
            (*w).m3 = image_pair((*w).m3, k, xk, c, e3, s);
            (*w).m4 = image_pair((*w).m4, k, xk, c, e4, s);
            (*w).m5 = image_pair((*w).m5, k, xk, c, e5, s);
            (*w).m6 = image_pair((*w).m6, k, xk, c, e6, s);
            (*w).m7 = image_pair((*w).m7, k, xk, c, e7, s);
            s = (s - 1u) & near;
            if s == 0u {
                break;
            }
        }
    }
}
