// Stage `dfsph_coarse` (CPU mirror: src/solver/dfsph/coarse.rs dfsph_coarse): the coarse solve of a
// DFSPH solve after the rate pass of iteration k (bind group 1), in one workgroup: the coarse
// problem is small (at most 2^15 cells on level 0) and a fixed order of every sum keeps its
// bits the CPU's. It runs when the solve goes on after that rate pass (solve_again, read by
// invocation 0 and shared with workgroupUniformLoad so the barriers stay in uniform control).
// Inputs: coarse_rows (dfsph_levels), coarse_rhs (dfsph_restrict, fixed point), totals, the
// anchors dfsph_galerkin counted (after its operator in coarse_op): with none, the water
// touches walls on every side, the operator is singular with the constant over the cells
// that have a diagonal in its null space, and the right-hand side's mean over those cells is
// taken out first (src/solver/dfsph/coarse.rs).
// Output: work[0 .. n0] = y, the level-0 solution of A_c y = r (the rest of `work` is scratch:
// r, d, q on level 0, then x, b, t over every level).
// Method: conjugate gradients preconditioned by one V-cycle (nu damped Jacobi sweeps of weight
// omega down and up each level, nu_c on the coarsest, residuals summed onto the parents,
// corrections copied back to the children; coarse.counts, coarse.solve), until
// |r|^2 <= tol |r0|^2 or counts.y iterations (Trottenberg, Oosterlee & Schueller,
// *Multigrid*, 2001, sections 2 and 7.8). Invocation t handles cells t, t + 256, ...; a dot
// product is each invocation's partial sum over its cells in that order, then the halving tree.
// Worked example: a chain of 8 cells with rows (2, -1) and r = e_3 converges in a few
// iterations to a tent peaking at cell 3 (src/solver/dfsph/coarse.rs solves_a_chain_laplacian).

@group(0) @binding(0) var<uniform> dfsph: DfsphParams;
@group(0) @binding(1) var<uniform> solve: SolveParams;
@group(0) @binding(2) var<uniform> coarse: CoarseParams;
@group(0) @binding(3) var<storage, read> coarse_rows: array<f32>;
@group(0) @binding(4) var<storage, read> coarse_rhs: array<u32>;
@group(0) @binding(5) var<storage, read> totals: array<vec4<u32>>;
@group(0) @binding(6) var<storage, read_write> work: array<f32>;
@group(0) @binding(7) var<storage, read> coarse_op: array<u32>;
@group(1) @binding(0) var<uniform> iteration: Iteration;

var<workgroup> red: array<f32, WORKGROUP_SIZE>;
var<workgroup> go: u32;

fn phase() {
    storageBarrier();
    workgroupBarrier();
}

// The workgroup's sum of each invocation's partial s, by the halving tree; every invocation
// gets it.
fn reduce(t: u32, s: f32) -> f32 {
    red[t] = s;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half >> 1u) {
        if t < half {
            red[t] = red[t] + red[t + half];
        }
        workgroupBarrier();
    }
    let total = workgroupUniformLoad(&red[0]);
    workgroupBarrier();
    return total;
}

fn dot(t: u32, a: u32, b: u32, n: u32) -> f32 {
    var s = 0.0;
    for (var c = t; c < n; c = c + WORKGROUP_SIZE) {
        s = s + work[a + c] * work[b + c];
    }
    return reduce(t, s);
}

fn coords(k: u32, dims: vec3<u32>) -> vec3<u32> {
    return vec3<u32>(k % dims.x, (k / dims.x) % dims.y, k / (dims.x * dims.y));
}

// Row `cell` of the level whose cells start at `at` (cell c of dims) times the vector whose
// level-l part starts at xo: the 27 terms in row order, neighbours outside the grid skipped.
fn row_times(at: u32, cell: u32, c: vec3<u32>, dims: vec3<u32>, xo: u32) -> f32 {
    let r = 27u * (at + cell);
    let b = xo + cell;
    let sy = dims.x;
    let sz = dims.x * dims.y;
    let lo = c > vec3<u32>(0u);
    let hi = c + vec3<u32>(1u) < dims;
    var s = 0.0;
    if lo.x && lo.y && lo.z { s = s + coarse_rows[r + 0u] * work[b - 1u - sy - sz]; }
    if lo.y && lo.z { s = s + coarse_rows[r + 1u] * work[b - sy - sz]; }
    if hi.x && lo.y && lo.z { s = s + coarse_rows[r + 2u] * work[b + 1u - sy - sz]; }
    if lo.x && lo.z { s = s + coarse_rows[r + 3u] * work[b - 1u - sz]; }
    if lo.z { s = s + coarse_rows[r + 4u] * work[b - sz]; }
    if hi.x && lo.z { s = s + coarse_rows[r + 5u] * work[b + 1u - sz]; }
    if lo.x && hi.y && lo.z { s = s + coarse_rows[r + 6u] * work[b - 1u + sy - sz]; }
    if hi.y && lo.z { s = s + coarse_rows[r + 7u] * work[b + sy - sz]; }
    if hi.x && hi.y && lo.z { s = s + coarse_rows[r + 8u] * work[b + 1u + sy - sz]; }
    if lo.x && lo.y { s = s + coarse_rows[r + 9u] * work[b - 1u - sy]; }
    if lo.y { s = s + coarse_rows[r + 10u] * work[b - sy]; }
    if hi.x && lo.y { s = s + coarse_rows[r + 11u] * work[b + 1u - sy]; }
    if lo.x { s = s + coarse_rows[r + 12u] * work[b - 1u]; }
    s = s + coarse_rows[r + 13u] * work[b];
    if hi.x { s = s + coarse_rows[r + 14u] * work[b + 1u]; }
    if lo.x && hi.y { s = s + coarse_rows[r + 15u] * work[b - 1u + sy]; }
    if hi.y { s = s + coarse_rows[r + 16u] * work[b + sy]; }
    if hi.x && hi.y { s = s + coarse_rows[r + 17u] * work[b + 1u + sy]; }
    if lo.x && lo.y && hi.z { s = s + coarse_rows[r + 18u] * work[b - 1u - sy + sz]; }
    if lo.y && hi.z { s = s + coarse_rows[r + 19u] * work[b - sy + sz]; }
    if hi.x && lo.y && hi.z { s = s + coarse_rows[r + 20u] * work[b + 1u - sy + sz]; }
    if lo.x && hi.z { s = s + coarse_rows[r + 21u] * work[b - 1u + sz]; }
    if hi.z { s = s + coarse_rows[r + 22u] * work[b + sz]; }
    if hi.x && hi.z { s = s + coarse_rows[r + 23u] * work[b + 1u + sz]; }
    if lo.x && hi.y && hi.z { s = s + coarse_rows[r + 24u] * work[b - 1u + sy + sz]; }
    if hi.y && hi.z { s = s + coarse_rows[r + 25u] * work[b + sy + sz]; }
    if hi.x && hi.y && hi.z { s = s + coarse_rows[r + 26u] * work[b + 1u + sy + sz]; }
    return s;
}

// The offsets of the scratch vectors in `work`.
struct Layout {
    y: u32,
    r: u32,
    d: u32,
    q: u32,
    x: u32,
    b: u32,
    t: u32,
}

fn layout_of() -> Layout {
    let n0 = coarse.dims.x * coarse.dims.y * coarse.dims.z;
    let all = coarse.counts.x;
    return Layout(0u, n0, 2u * n0, 3u * n0, 4u * n0, 4u * n0 + all, 4u * n0 + 2u * all);
}

// A damped Jacobi sweep on level l: t = b - A x, then x += omega t / a_cc where a_cc > 0.
fn sweep(t: u32, lay: Layout, l: u32) {
    let lv = coarse.levels[l];
    let n = lv.x * lv.y * lv.z;
    for (var k = t; k < n; k = k + WORKGROUP_SIZE) {
        let ax = row_times(lv.w, k, coords(k, lv.xyz), lv.xyz, lay.x + lv.w);
        work[lay.t + lv.w + k] = work[lay.b + lv.w + k] - ax;
    }
    phase();
    for (var k = t; k < n; k = k + WORKGROUP_SIZE) {
        let diag = coarse_rows[27u * (lv.w + k) + 13u];
        if diag > 0.0 {
            let at = lay.x + lv.w + k;
            work[at] = work[at] + coarse.solve.x * work[lay.t + lv.w + k] / diag;
        }
    }
    phase();
}

fn zero(t: u32, at: u32, n: u32) {
    for (var k = t; k < n; k = k + WORKGROUP_SIZE) {
        work[at + k] = 0.0;
    }
    phase();
}

// One V-cycle from level 0's right-hand side at `rhs`: level 0's x is the result.
fn vcycle(t: u32, lay: Layout, rhs: u32) {
    let levels = coarse.dims.w;
    let n0 = coarse.dims.x * coarse.dims.y * coarse.dims.z;
    for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
        work[lay.b + k] = work[rhs + k];
    }
    phase();
    for (var l = 0u; l + 1u < levels; l = l + 1u) {
        let lv = coarse.levels[l];
        let n = lv.x * lv.y * lv.z;
        zero(t, lay.x + lv.w, n);
        for (var s = 0u; s < coarse.counts.z; s = s + 1u) {
            sweep(t, lay, l);
        }
        for (var k = t; k < n; k = k + WORKGROUP_SIZE) {
            let ax = row_times(lv.w, k, coords(k, lv.xyz), lv.xyz, lay.x + lv.w);
            work[lay.t + lv.w + k] = work[lay.b + lv.w + k] - ax;
        }
        phase();
        let up = coarse.levels[l + 1u];
        let nc = up.x * up.y * up.z;
        for (var kc = t; kc < nc; kc = kc + WORKGROUP_SIZE) {
            let cc = coords(kc, up.xyz);
            var s = 0.0;
            for (var ch = 0u; ch < 8u; ch = ch + 1u) {
                let c = 2u * cc + vec3<u32>(ch & 1u, (ch >> 1u) & 1u, ch >> 2u);
                if all(c < lv.xyz) {
                    s = s + work[lay.t + lv.w + coarse_index(c, lv.xyz)];
                }
            }
            work[lay.b + up.w + kc] = s;
        }
        phase();
    }
    let last = coarse.levels[levels - 1u];
    zero(t, lay.x + last.w, last.x * last.y * last.z);
    for (var s = 0u; s < coarse.counts.w; s = s + 1u) {
        sweep(t, lay, levels - 1u);
    }
    for (var m = levels - 1u; m > 0u; m = m - 1u) {
        let l = m - 1u;
        let lv = coarse.levels[l];
        let up = coarse.levels[m];
        let n = lv.x * lv.y * lv.z;
        for (var k = t; k < n; k = k + WORKGROUP_SIZE) {
            let c = coords(k, lv.xyz);
            let parent = coarse_index(c / 2u, up.xyz);
            let at = lay.x + lv.w + k;
            work[at] = work[at] + work[lay.x + up.w + parent];
        }
        phase();
        for (var s = 0u; s < coarse.counts.z; s = s + 1u) {
            sweep(t, lay, l);
        }
    }
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_coarse(@builtin(local_invocation_id) lid: vec3<u32>) {
    let t = lid.x;
    if t == 0u {
        let k = iteration.index;
        let base = solve.which * (dfsph.max_iterations + 1u);
        go = select(0u, 1u, solve_again(k, totals[base + k], solve, dfsph.max_iterations));
    }
    if workgroupUniformLoad(&go) == 0u {
        return;
    }
    let lay = layout_of();
    let n0 = coarse.dims.x * coarse.dims.y * coarse.dims.z;
    let dims0 = coarse.dims.xyz;
    for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
        work[lay.y + k] = 0.0;
        work[lay.r + k] = from_fixed(vec2<u32>(coarse_rhs[2u * k], coarse_rhs[2u * k + 1u]), coarse.fixed);
        // The active cells' indicator, in q for now.
        work[lay.q + k] = select(0.0, 1.0, coarse_rows[27u * k + 13u] > 0.0);
    }
    phase();
    if t == 0u {
        go = coarse_op[28u * n0];
    }
    if workgroupUniformLoad(&go) == 0u {
        let count = dot(t, lay.q, lay.q, n0);
        if count > 0.0 {
            let mean = dot(t, lay.r, lay.q, n0) / count;
            for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
                work[lay.r + k] = work[lay.r + k] - mean * work[lay.q + k];
            }
            phase();
        }
    }
    let rr0 = dot(t, lay.r, lay.r, n0);
    if !(rr0 > 0.0) {
        return;
    }
    vcycle(t, lay, lay.r);
    for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
        work[lay.d + k] = work[lay.x + k];
    }
    phase();
    var rz = dot(t, lay.r, lay.x, n0);
    var iterations = 0u;
    loop {
        if iterations >= coarse.counts.y || !(rz > 0.0) {
            break;
        }
        for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
            work[lay.q + k] = row_times(0u, k, coords(k, dims0), dims0, lay.d);
        }
        phase();
        let dq = dot(t, lay.d, lay.q, n0);
        if !(dq > 0.0) {
            break;
        }
        let a = rz / dq;
        for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
            work[lay.y + k] = work[lay.y + k] + a * work[lay.d + k];
            work[lay.r + k] = work[lay.r + k] - a * work[lay.q + k];
        }
        phase();
        iterations = iterations + 1u;
        let rr = dot(t, lay.r, lay.r, n0);
        if rr <= coarse.solve.y * rr0 {
            break;
        }
        vcycle(t, lay, lay.r);
        let rz1 = dot(t, lay.r, lay.x, n0);
        let beta = rz1 / rz;
        rz = rz1;
        for (var k = t; k < n0; k = k + WORKGROUP_SIZE) {
            work[lay.d + k] = work[lay.x + k] + beta * work[lay.d + k];
        }
        phase();
    }
}
