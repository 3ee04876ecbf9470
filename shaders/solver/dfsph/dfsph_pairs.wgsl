// The DFSPH pair walk (CPU mirror: src/solver/dfsph/pairs.rs group_pairs), prepended
// after walk.wgsl and members.wgsl to the DFSPH stages that walk: those that define `fn dfsph_pair(`. Such a
// stage binds `params`, `fluid`, `dfsph`, `sorted_pos`, `slot_start`, `group_range` and
// `group_args`, and defines
//   struct Member { i: u32, x: vec3<f32>, near: BoundaryNear, ... }  one particle of a group
//   struct Cand { ... }                       what a pair reads of the candidate
//   fn new_member(i: u32) -> Member           particle i's member, its sums empty
//   fn candidate(k: u32) -> Cand
//   fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, image: u32) -> Member
//   fn finish(m: Member, i: u32)              stores particle i's results
// The member walker (members.wgsl) holds the group: up to GROUP particles of one slot walk
// once (walk.wgsl), each candidate read once for all members. For each member and candidate k (r2 < h2):
// dfsph_pair for k itself if k != i (image 0), then for each image of k the walls model
// (boundary_tank.wgsl, the boundary_* functions) gives the member within h, in the model's
// order, d = x_i - (image of) x_k: each member's sums are those of a walk of its own, bit for
// bit. The walker names no wall: which images there are and where they lie is the model's.
// No function here returns early: on llvmpipe an early return inside the walk spends loop
// budget (measured on the walks this one replaced). The run's kernel (shaders/kernel/, kernel_w and kernel_grad) precedes it.

// Candidate k itself for member m: a neighbour (r2 < h2) other than m.
fn own_pair(m: Member, k: u32, xk: vec3<f32>, c: Cand) -> Member {
    let d = m.x - xk;
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    var out = m;
    if r2 < params.h2 && k != m.i {
        out = dfsph_pair(m, k, c, d, r2, 0u);
    }
    return out;
}

// The set of xk's images m sees (none unless xk is a neighbour: an image is never nearer than
// its original).
fn image_set(m: Member, xk: vec3<f32>) -> u32 {
    return boundary_images(m.near, m.x, xk, params.h2);
}

// Image s of candidate k for member m, if s is in the set m sees and lies within h.
fn image_pair(m: Member, k: u32, xk: vec3<f32>, c: Cand, seen: u32, s: u32) -> Member {
    let d = m.x - boundary_image_at(xk, m.near, s);
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    var out = m;
    if boundary_sees(seen, s) && r2 < params.h2 {
        out = dfsph_pair(m, k, c, d, r2, s);
    }
    return out;
}

fn visit(w: ptr<function, Walker>, k: u32) {
    let xk = sorted_pos[k].xyz;
    let c = candidate(k);
    if MEMBERS == 1u {
        let e = image_set((*w).m0, xk);
        (*w).m0 = own_pair((*w).m0, k, xk, c);
        if e != 0u {
            var s = boundary_first_image(e);
            loop {
                (*w).m0 = image_pair((*w).m0, k, xk, c, e, s);
                s = boundary_next_image(e, s);
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
    let e0 = image_set((*w).m0, xk);
    let e1 = image_set((*w).m1, xk);
    let e2 = image_set((*w).m2, xk);
    let e3 = image_set((*w).m3, xk);
    let e4 = image_set((*w).m4, xk);
    let e5 = image_set((*w).m5, xk);
    let e6 = image_set((*w).m6, xk);
    let e7 = image_set((*w).m7, xk);
    (*w).m0 = own_pair((*w).m0, k, xk, c);
    (*w).m1 = own_pair((*w).m1, k, xk, c);
    (*w).m2 = own_pair((*w).m2, k, xk, c);
    (*w).m3 = own_pair((*w).m3, k, xk, c);
    (*w).m4 = own_pair((*w).m4, k, xk, c);
    (*w).m5 = own_pair((*w).m5, k, xk, c);
    (*w).m6 = own_pair((*w).m6, k, xk, c);
    (*w).m7 = own_pair((*w).m7, k, xk, c);
    // The members walk the images of their sets' union together, in the model's order; each
    // takes those of its own set (in lockstep: one loop, not eight).
    let near = e0 | e1 | e2 | e3 | e4 | e5 | e6 | e7;
    if near != 0u {
        var s = boundary_first_image(near);
        loop {
            (*w).m0 = image_pair((*w).m0, k, xk, c, e0, s);
            (*w).m1 = image_pair((*w).m1, k, xk, c, e1, s);
            (*w).m2 = image_pair((*w).m2, k, xk, c, e2, s);
            (*w).m3 = image_pair((*w).m3, k, xk, c, e3, s);
            (*w).m4 = image_pair((*w).m4, k, xk, c, e4, s);
            (*w).m5 = image_pair((*w).m5, k, xk, c, e5, s);
            (*w).m6 = image_pair((*w).m6, k, xk, c, e6, s);
            (*w).m7 = image_pair((*w).m7, k, xk, c, e7, s);
            s = boundary_next_image(near, s);
            if s == 0u {
                break;
            }
        }
    }
}
