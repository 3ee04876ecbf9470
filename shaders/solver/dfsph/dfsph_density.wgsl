// Stage `dfsph_density` (CPU mirror: src/solver/dfsph/density.rs dfsph_density): the DFSPH density and
// factor (Bender & Koschier 2017, eq. 9), one invocation per group of the grouped walk.
// Inputs (slot order): sorted_pos, slot_start, the groups `order` listed (group_range,
// group_args). Outputs: dfsph_rho (N), alpha (N), and the density error
// max(rho/rho0 - 1, 0) (N; stage dfsph_blocks reduces it per block of 256).
// rho_i = m (W(0) + sum_j W_ij), images of the tank's walls included; with
// g_i = sum_j m gradW_ij (images included), g'_i = g_i + the own images' m gradW, and
// s_i = sum_j |H_j|^2 with H_j = sum_m R_m m gradW(x_i - R_m x_j) over neighbour j and its
// images (a neighbour reacts to i and to i's images alike), alpha_i = rho_i / (g'_i . g_i +
// s_i - sum_m (R_m g'_i) . m gradW_ii'), the exact diagonal of the solve with images moving as
// their reflected originals (derivation: src/solver/dfsph/density.rs DensitySums), negated with fewer
// than min_neighbours neighbours (the divergence-free solve skips such a particle, the
// constant-density solve uses |alpha|). Away from walls H_j = m gradW_ij. Near an obstacle,
// its boundary particles (bind group 1, boundary.wgsl) add psi_b W_ib to rho, psi_b gradW_ib
// to g and one each to the neighbour count. WCSPH (dfsph.state_equation = 1) needs rho alone:
// alpha is stored as 0 and its sums are skipped.
// Worked example (Wendland C2), h = 1, m = 1, two particles 0.5 apart: rho = 21/(2 pi) (1 +
// 0.1875) = 3.9689, |gradW| = 210/pi * 0.125 * 0.5 = 4.1778, alpha = 3.9689 / (2 * 4.1778^2)
// = 0.1137 (with the threshold lowered to 1).

// Whether this pipeline gathers alpha's sums (pipeline-overridable; src/solver/dfsph/gpu.rs
// builds WCSPH's without): with the never-taken branch built in, the walk held its registers
// and took 74 ms a step of the 20 000-particle WCSPH dam break on llvmpipe, against 25 ms
// without. DFSPH's keeps the runtime test: its results are those of a pipeline with the sums.
override ALPHA_SUMS: bool = true;

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<uniform> dfsph: DfsphParams;
@group(0) @binding(3) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read_write> dfsph_rho: array<f32>;
@group(0) @binding(6) var<storage, read_write> alpha: array<f32>;
@group(0) @binding(7) var<storage, read_write> density_error: array<f32>;
@group(0) @binding(8) var<storage, read> group_range: array<vec2<u32>>;
@group(0) @binding(9) var<uniform> group_args: vec4<u32>;

struct Member {
    i: u32,
    x: vec3<f32>,
    near: BoundaryNear,
    sum: f32,
    grad: vec3<f32>,
    grad2: f32,
    hj: vec3<f32>,
    nb: u32,
}

struct Cand {
    x: vec3<f32>,
}

fn new_member(i: u32) -> Member {
    let x = sorted_pos[i].xyz;
    return Member(i, x, boundary_near(x, params.h, fluid), kernel_w(0.0), vec3<f32>(0.0), 0.0, vec3<f32>(0.0), 0u);
}

fn candidate(k: u32) -> Cand {
    return Cand(sorted_pos[k].xyz);
}

fn dfsph_pair(m: Member, j: u32, c: Cand, d: vec3<f32>, r2: f32, image: u32) -> Member {
    var w = m;
    w.sum = w.sum + kernel_w(r2);
    // WCSPH (dfsph.state_equation = 1) applies no solve: alpha's sums are not gathered, and
    // its pipeline is built without them (ALPHA_SUMS).
    if ALPHA_SUMS && dfsph.state_equation == 0u {
        let gv = d * (fluid.mass * kernel_grad(r2));
        w.grad = w.grad + gv;
        // A neighbour comes first, then its images (dfsph_pairs.wgsl): the last neighbour's
        // H_j is complete when the next one starts; finish adds the last.
        if image == 0u {
            let h = w.hj;
            w.grad2 = w.grad2 + (h.x * h.x + h.y * h.y + h.z * h.z);
            w.hj = gv;
        } else if j != w.i {
            w.hj = w.hj + boundary_image_vector(gv, image);
        }
    }
    w.nb = w.nb + 1u;
    return w;
}

// The obstacles' boundary particles (boundary.wgsl): Σ ψ_b W, Σ ψ_b gradW and their count.
struct BoundarySums {
    sum: f32,
    grad: vec3<f32>,
    nb: u32,
}

fn boundary_pair(sums: BoundarySums, k: u32, d: vec3<f32>, r2: f32) -> BoundarySums {
    var s = sums;
    s.sum = s.sum + boundary_weight(k, kernel_w(r2));
    s.grad = s.grad + boundary_grad(k, d, kernel_grad(r2));
    s.nb = s.nb + 1u;
    return s;
}

fn finish(m: Member, i: u32) {
    if dfsph.state_equation != 0u {
        finish_density(m, i);
    } else {
        finish_alpha(m, i);
    }
}

// WCSPH's rho alone (alpha = 0): m sum W, the obstacles' sum psi_b W added (src/solver/dfsph/density.rs
// finish_density).
fn finish_density(m: Member, i: u32) {
    var rho = fluid.mass * m.sum;
    if near_obstacles(m.x) {
        rho = rho + walk_boundary(m.x, BoundarySums(0.0, vec3<f32>(0.0), 0u)).sum;
    }
    dfsph_rho[i] = rho;
    alpha[i] = 0.0;
    density_error[i] = max(rho / fluid.rest_density - 1.0, 0.0);
}

fn finish_alpha(m: Member, i: u32) {
    // Near an obstacle its boundary particles join rho, the gradient sum g (not the sum of
    // squares: they are no unknowns of the solve) and the neighbour count.
    var g = m.grad;
    var nb = m.nb;
    let near = near_obstacles(m.x);
    var bsum = 0.0;
    if near {
        let b = walk_boundary(m.x, BoundarySums(0.0, vec3<f32>(0.0), 0u));
        g = g + b.grad;
        nb = nb + b.nb;
        bsum = b.sum;
    }
    var rho = fluid.mass * m.sum;
    if near {
        rho = rho + bsum;
    }
    // The particle's own images carry its stiffness and move with it (src/solver/dfsph/density.rs
    // finish_alpha; the tank's model gives their share).
    let gp = g + boundary_own_gradient(m.x, m.near, fluid.mass, params.h2);
    let own = boundary_own_alpha_term(m.x, m.near, fluid.mass, params.h2, gp);
    let grad2 = m.grad2 + (m.hj.x * m.hj.x + m.hj.y * m.hj.y + m.hj.z * m.hj.z);
    let denom = gp.x * g.x + gp.y * g.y + gp.z * g.z + grad2 - own;
    // Below the neighbour threshold alpha is stored negated (src/solver/dfsph/density.rs finish_alpha).
    var a = 0.0;
    if denom > 0.0 {
        a = rho / denom;
    }
    if nb < dfsph.min_neighbours {
        a = -a;
    }
    dfsph_rho[i] = rho;
    alpha[i] = a;
    density_error[i] = max(rho / fluid.rest_density - 1.0, 0.0);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_density(@builtin(global_invocation_id) gid: vec3<u32>) {
    walk_listed_group(gid.x);
}
