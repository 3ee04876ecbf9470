// Shared by every stage: prepended to each stage's source before compilation.
// `SimParams` must match `SimParams` in src/params.rs field for field; the hash and the kernel
// must match src/grid/key.rs and src/cpu/density.rs operation for operation, so the CPU reference
// lands every particle in the same cell and slot.

const WORKGROUP_SIZE: u32 = 256u;
// Walks over a slot's particles take UNROLL candidates per loop iteration. Mesa's llvmpipe
// (lavapipe) ends an invocation's loops after 65535 iterations in total, shared by every loop
// of the shader; one iteration per candidate would silently truncate a slot of 100k particles
// (T = 1). With 4 per iteration a query can examine about 260k candidates there (the host
// checks, see check_loop_budget); unrolling further costs more than it buys (measured: 16 per
// iteration made the density pass 45% slower on lavapipe, 4 per iteration 18%).
const UNROLL: u32 = 4u;
// The density pass gives each invocation a group of up to GROUP consecutive particles of one
// slot (src/grid/gpu.rs GROUP): it fetches each candidate once for all of them.
const GROUP: u32 = 8u;
// Most cells a query box spans per axis (src/grid/key.rs MAX_QUERY_SPAN).
const MAX_QUERY_SPAN: i32 = 4;

struct SimParams {
    n: u32,
    table_size: u32,
    table_mask: u32,
    // Places per density group (src/params.rs group_size), at most GROUP.
    group_size: u32,
    h: f32,
    inv_h: f32,
    h2: f32,
    inv_h2: f32,
    density_scale: f32,
    // DFSPH's kernel (src/kernel/mod.rs Kernel::id); the stages call kernel_w and kernel_grad
    // of the file src/shaders.rs prepends for it, which read kernel_a and kernel_b.
    kernel: u32,
    // 1 in a 2D run (points in the plane z = 0): a query visits the plane's 3 x 3 cells.
    planar: u32,
    _pad1: u32,
    kernel_a: vec4<f32>,
    kernel_b: vec4<f32>,
}

struct FluidParams {
    tank_min: vec4<f32>,
    tank_max: vec4<f32>,
    gravity: vec4<f32>,
    rest_density: f32,
    stiffness: f32,
    mass: f32,
    viscosity: f32,
    kernel_45: f32,
    sound_speed: f32,
    cfl: f32,
    dt_fixed: f32,
    dt_max: f32,
    restitution: f32,
    alpha: f32,
    // Open sides: bit 2 axis (lower), 2 axis + 1 (upper); no wall there.
    open: u32,
    // Navier slip length of the lower / upper wall of each axis, m; negative: free slip; 0: no slip.
    slip_lo: vec4<f32>,
    slip_hi: vec4<f32>,
    // DFSPH's kinematic viscosity, m^2/s, and 10 times it (the standard form's factor).
    kinematic_viscosity: f32,
    viscosity_factor: f32,
}

// The colliding spheres' uniform block (src/grains/mod.rs GrainParams, field for field).
struct GrainParams {
    tank_min: vec4<f32>,
    tank_max: vec4<f32>,
    gravity: vec4<f32>,
    // Normal spring stiffness k_n, N/m.
    stiffness: f32,
    // Damping ratio ζ of a sphere–sphere contact (from --contact-restitution).
    contact_zeta: f32,
    // Damping ratio of a sphere–wall contact (from --restitution).
    wall_zeta: f32,
    // Coulomb friction coefficient μ.
    friction: f32,
    dt: f32,
    // Number of still obstacles (grain_contacts' `obstacles` holds at least one entry).
    obstacles: u32,
    _pad1: u32,
    _pad2: u32,
}

// The DFSPH uniform block (src/params.rs DfsphParams, field for field).
struct DfsphParams {
    spacing: f32,
    cfl: f32,
    dt_min: f32,
    dt_max: f32,
    eta_v: f32,
    eta_d: f32,
    max_iterations: u32,
    min_neighbours: u32,
    blocks: u32,
    dt_fixed: f32,
    wall_inset: f32,
    viscous_limit: f32,
    viscous_substeps: u32,
    relaxation: f32,
    // 1 when an obstacle has friction (src/params.rs DfsphParams::friction): dfsph_accel walks
    // the boundary and dfsph_predict credits its power.
    friction: u32,
    // 1: WCSPH's pressure from the equation of state, no solve (src/params.rs
    // DfsphParams::state_equation); 0: DFSPH's solves.
    state_equation: u32,
}

// Which DFSPH solve a pass serves (src/params.rs SolveParams): 0 divergence-free, 1 constant
// density; its fewest iterations and tolerance.
struct SolveParams {
    which: u32,
    min_iterations: u32,
    // The fixed-point total a converged solve's residuals must not exceed,
    // floor(eta N 2^24) (src/solver/dfsph/control.rs threshold), low and high words.
    threshold_lo: u32,
    threshold_hi: u32,
    // The capacity C of the solves' fields (solve_fields, dfsph_fields.wgsl).
    capacity: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
}

// The position of a DFSPH pass in its solve (src/solver/dfsph/gpu.rs), bound with a dynamic offset:
// iteration k. Rate pass 0 reads the velocities the solve starts from; pressure pass k >= 1
// applies the increments after rate pass k - 1 (and any coarse correction after it).
struct Iteration {
    index: u32,
    _a: u32,
    _b: u32,
    _c: u32,
}

// Most levels of the coarse grid (src/core/limits.rs MAX_COARSE_LEVELS).
const MAX_LEVELS: u32 = 16u;

// The coarse levels of DFSPH's solves (src/params.rs CoarseParams, field for field;
// src/solver/dfsph/cells.rs describes them).
struct CoarseParams {
    // Level-0 cells per axis, and the number of levels.
    dims: vec4<u32>,
    // The grid's lower corner.
    origin: vec4<f32>,
    // Cell size per axis; w: the density below which a particle is at the free surface.
    cell: vec4<f32>,
    // 1 / cell per axis; w: 1 / S2.
    inv_cell: vec4<f32>,
    // Per level: cells per axis and its first cell in the levels' arrays.
    levels: array<vec4<u32>, MAX_LEVELS>,
    // All levels' cells, the coarse solve's most iterations, sweeps per level and direction,
    // sweeps on the coarsest level.
    counts: vec4<u32>,
    // The smoother's weight, the coarse solve's tolerance on |r|^2 / |r0|^2.
    solve: vec4<f32>,
    // 2^16, 2^-32: from_fixed's scales, never literals in a product (NIR re-associates those
    // and changes the rounding).
    fixed: vec4<f32>,
}

// The level-0 cell of x and on which half of it x lies (1: the upper) per axis, clamped to the
// grid (src/solver/dfsph/cells.rs coarse_cell). Worked example: cells of 0.25 m from 0, x = 0.3
// -> cell 1, lower half.
struct CoarseCell {
    c: vec3<u32>,
    upper: vec3<bool>,
}

fn coarse_cell(x: vec3<f32>, cp: CoarseParams) -> CoarseCell {
    let q = (x - cp.origin.xyz) * cp.inv_cell.xyz;
    let last = vec3<f32>(cp.dims.xyz - vec3<u32>(1u));
    let k = clamp(floor(q), vec3<f32>(0.0), last);
    return CoarseCell(vec3<u32>(k), (q - k) >= vec3<f32>(0.5));
}

// A level-0 cell's index (x fastest).
fn coarse_index(c: vec3<u32>, dims: vec3<u32>) -> u32 {
    return (c.z * dims.y + c.y) * dims.x + c.x;
}

// Whether the coarse levels act on a particle: below the free surface and in the solves
// (src/solver/dfsph/cells.rs coarse_member).
fn coarse_member(rho: f32, alpha: f32, cp: CoarseParams) -> bool {
    return alpha != 0.0 && rho >= cp.cell.w;
}

// Whether a coarse member is in play at iteration k of solve `which` (0 divergence-free):
// it carries pressure or is compressed, or it is the first correction (cells.rs in_play).
fn in_play(which: u32, k: u32, e: f32, kappa_sum: f32, alpha: f32) -> bool {
    let solved = which == 1u || alpha > 0.0;
    return solved && (k == 0u || kappa_sum > 0.0 || e > 0.0);
}

// A particle's residual e from its density change rate (src/solver/dfsph/rate.rs residual_of):
// (rho + dt rate) / rho0 - 1 for the constant-density solve, rate dt / rho0 for the
// divergence-free one (0 where alpha <= 0).
fn residual_of(which: u32, rate: f32, rho: f32, alpha: f32, dt: f32, rho0: f32) -> f32 {
    var e = 0.0;
    if which == 1u {
        e = (rho + dt * rate) / rho0 - 1.0;
    } else if alpha > 0.0 {
        e = rate * dt / rho0;
    }
    return e;
}

// The residual a particle counts: |e| where it carries pressure, max(e, 0) elsewhere, a NaN
// kept as NaN so the total's flag sees it (rate.rs lcp_residual).
fn lcp_residual(e: f32, kappa_sum: f32) -> f32 {
    return select(0.0, abs(e), kappa_sum > 0.0 || !(e <= 0.0));
}

// The Jacobi increment omega |alpha| e scale, where the solve takes the particle
// (cells.rs jacobi_increment; scale = rho0 / dt^2).
fn jacobi_increment(which: u32, e: f32, alpha: f32, scale: f32, omega: f32) -> f32 {
    var j = 0.0;
    if which == 1u {
        j = e * scale * abs(alpha) * omega;
    } else if alpha > 0.0 {
        j = e * scale * alpha * omega;
    }
    return j;
}

// The increment that moves kappa_sum by inc and keeps it >= 0 (cells.rs projected).
fn projected(kappa_sum: f32, inc: f32) -> f32 {
    return max(kappa_sum + inc, 0.0) - kappa_sum;
}

fn is_finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

// floor(v 2^32) exactly, as (low, high) words of a two's complement 64-bit integer, from v's
// bits (no float operation, whose rounding could differ between devices): the mantissa
// shifted by the exponent, rounded down; |v| >= 2^30 saturates to +-2^62; 0 for NaN and
// infinities (cells.rs to_fixed). Worked example: -1.25 -> (0xc0000000, 0xfffffffe);
// -2^-33 -> (0xffffffff, 0xffffffff), i.e. -1.
fn to_fixed(v: f32) -> vec2<u32> {
    let b = bitcast<u32>(v);
    let e = (b >> 23u) & 0xffu;
    let negative = (b >> 31u) != 0u;
    var mag = vec2<u32>(0u);
    var inexact = false;
    if e == 0xffu {
        return vec2<u32>(0u);
    } else if e >= 157u {
        mag = vec2<u32>(0u, 0x40000000u);
    } else if e != 0u {
        let m = (b & 0x7fffffu) | 0x800000u;
        let sh = i32(e) - 118;
        if sh >= 32 {
            mag = vec2<u32>(0u, m << u32(sh - 32));
        } else if sh > 0 {
            mag = vec2<u32>(m << u32(sh), m >> u32(32 - sh));
        } else if sh == 0 {
            mag = vec2<u32>(m, 0u);
        } else if sh > -24 {
            let s = u32(-sh);
            mag = vec2<u32>(m >> s, 0u);
            inexact = (m & ((1u << s) - 1u)) != 0u;
        } else {
            inexact = true;
        }
    } else {
        inexact = (b & 0x7fffffu) != 0u;
    }
    var w = mag;
    if negative {
        // -mag, one less where bits were cut off (the floor of a negative value): ~mag + 1 or ~mag.
        w = ~mag;
        if !inexact {
            w.x = w.x + 1u;
            if w.x == 0u {
                w.y = w.y + 1u;
            }
        }
    }
    return w;
}

// A fixed-point value (low, high) as f32, in the operations of cells.rs from_fixed
// (k = CoarseParams.fixed).
fn from_fixed(w: vec2<u32>, k: vec4<f32>) -> f32 {
    let hi = f32(bitcast<i32>(w.y));
    return ((hi * k.x + f32(w.x >> 16u)) * k.x + f32(w.x & 0xffffu)) * k.y;
}

// Whether a solve goes on after the rate evaluation of iteration j, whose residual total is
// w = (low, high, NaN flag, 0): while fewer than min_iterations ran, or the total exceeds
// the threshold (a NaN residual stops it), up to max_iterations
// (src/solver/dfsph/control.rs again_after). Every invocation of the next iteration's passes
// takes this decision from the same four words, so none needs a pass of its own.
// Worked example: threshold (100, 0), w = (101, 0, 0, 0), j = 3 >= min 2 -> true.
fn solve_again(j: u32, w: vec4<u32>, s: SolveParams, max_iterations: u32) -> bool {
    let over = w.y > s.threshold_hi || (w.y == s.threshold_hi && w.x > s.threshold_lo);
    return j < max_iterations && (j < s.min_iterations || (w.z == 0u && over));
}

// A residual in units of 2^-24, truncated; >= 256 saturates, NaN and negatives give 0
// (src/solver/dfsph/blocks.rs fixed_residual).
fn fixed_residual(r: f32) -> u32 {
    var f = 0u;
    if r >= 256.0 {
        f = 0xffffffffu;
    } else if r >= 0.0 {
        f = u32(r * 16777216.0);
    }
    return f;
}

// The bits atomicMax folds a maximum of non-negative floats by: they order as the floats do;
// 0 and -0 give 0, and a NaN's bits are larger than any number's, so a NaN wins as it should
// not go unseen. Worked example: max_bits(1.5) = 0x3fc00000.
fn max_bits(x: f32) -> u32 {
    return select(bitcast<u32>(x), 0u, x <= 0.0);
}

fn is_nan(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

// floor(p * inv_h): multiply by the reciprocal exactly as the CPU does, never divide.
fn cell_of(p: vec3<f32>, inv_h: f32) -> vec3<i32> {
    return vec3<i32>(floor(p * inv_h));
}

// Prime-XOR hash with wrapping i32 multiplies. The cell is always a runtime value: the same
// overflow in a constant expression would be a shader-creation error.
fn hash_cell(c: vec3<i32>, mask: u32) -> u32 {
    let h = (c.x * 73856093) ^ (c.y * 19349663) ^ (c.z * 83492791);
    return bitcast<u32>(h) & mask;
}

// r², summed in the CPU's order: (dx² + dy²) + dz².
fn distance2(a: vec3<f32>, b: vec3<f32>) -> f32 {
    let d = a - b;
    return d.x * d.x + d.y * d.y + d.z * d.z;
}

// Un-normalised poly6 term (1 − r²/h²)³ (Müller et al. 2003) for a pair with r² < h².
fn poly6_term(r2: f32, inv_h2: f32) -> f32 {
    let q = max(1.0 - r2 * inv_h2, 0.0);
    return q * q * q;
}

// The inclusive cell range of a neighbour query around p: cells of p − h and p + h (the 27
// around p; see src/grid/key.rs query_range for why not simply cell_of(p) ± 1).
// A 2D run's query keeps the plane's cell layer, z = 0, alone (src/grid/key.rs
// query_range_planar): 9 cells instead of 27.
fn query_lo(p: vec3<f32>, params: SimParams) -> vec3<i32> {
    var lo = cell_of(p - vec3<f32>(params.h), params.inv_h);
    if params.planar != 0u {
        lo.z = 0;
    }
    return lo;
}

fn query_hi(p: vec3<f32>, lo: vec3<i32>, params: SimParams) -> vec3<i32> {
    var hi = min(cell_of(p + vec3<f32>(params.h), params.inv_h), lo + vec3<i32>(MAX_QUERY_SPAN - 1));
    if params.planar != 0u {
        hi.z = 0;
    }
    return hi;
}

// The particles [begin, end) of block w when `blocks` workgroups share n particles in
// contiguous blocks of ceil(n / blocks) (the time step's first level, src/grid/gpu.rs
// timestep_blocks). Example: n = 10, 4 blocks -> [0, 3), [3, 6), [6, 9), [9, 10).
fn block_span(w: u32, blocks: u32, n: u32) -> vec2<u32> {
    let chunk = (n + blocks - 1u) / blocks;
    return vec2<u32>(min(w * chunk, n), min((w + 1u) * chunk, n));
}

// The fixed reduction tree of one workgroup (src/solver/dfsph/blocks.rs block_sums, block_maxima):
// s[l] += s[l + half] (and the max) for half = 128, 64, ..., 1; lane 0 ends with the block's
// sum and max. Every invocation of the workgroup must call it (it holds barriers).
var<workgroup> red_sum: array<f32, WORKGROUP_SIZE>;
var<workgroup> red_max: array<f32, WORKGROUP_SIZE>;

fn reduce_block(l: u32, s: f32, m: f32) -> vec2<f32> {
    red_sum[l] = s;
    red_max[l] = m;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half >> 1u) {
        if l < half {
            red_sum[l] = red_sum[l] + red_sum[l + half];
            red_max[l] = max(red_max[l], red_max[l + half]);
        }
        workgroupBarrier();
    }
    return vec2<f32>(red_sum[0], red_max[0]);
}
