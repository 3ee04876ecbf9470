// Shared by every stage: prepended to each stage's source before compilation.
// `SimParams` must match `SimParams` in src/params.rs field for field; the hash and the kernel
// must match src/hash.rs and src/cpu/density.rs operation for operation, so the CPU reference
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
// slot (src/gpu/neighbours.rs GROUP): it fetches each candidate once for all of them.
const GROUP: u32 = 8u;
// Most cells a query box spans per axis (src/hash.rs MAX_QUERY_SPAN).
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
    _pad1: f32,
    _pad2: f32,
    _pad3: f32,
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
    kernel_w: f32,
    kernel_grad: f32,
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
    kernel_w4: f32,
    _pad0: u32,
    _pad1: u32,
    wall_inset: f32,
    viscous_limit: f32,
    viscous_substeps: u32,
    relaxation: f32,
    // 1 when an obstacle has friction (src/params.rs DfsphParams::friction): dfsph_accel walks
    // the boundary and dfsph_predict credits its power.
    friction: u32,
}

// Which DFSPH solve a pass serves (src/params.rs SolveParams): 0 divergence-free, 1 constant
// density; its fewest iterations and tolerance.
struct SolveParams {
    which: u32,
    min_iterations: u32,
    // The fixed-point total a converged solve's residuals must not exceed,
    // floor(eta N 2^24) (src/cpu/dfsph/control.rs threshold), low and high words.
    threshold_lo: u32,
    threshold_hi: u32,
}

// The position of a DFSPH pass in its solve (src/gpu/dfsph.rs), bound with a dynamic offset:
// index 0 is the pressure and rate passes that apply the warm start, k >= 1 iteration k,
// FIRST_RATE the rate pass before the warm start (it runs always and totals nothing).
struct Iteration {
    index: u32,
    _a: u32,
    _b: u32,
    _c: u32,
}

const FIRST_RATE: u32 = 0xffffffffu;

// Whether a solve goes on after the rate evaluation of iteration j, whose residual total is
// w = (low, high, NaN flag, 0): while fewer than min_iterations ran, or the total exceeds
// the threshold (a NaN residual stops it), up to max_iterations
// (src/cpu/dfsph/control.rs again_after). Every invocation of the next iteration's passes
// takes this decision from the same four words, so none needs a pass of its own.
// Worked example: threshold (100, 0), w = (101, 0, 0, 0), j = 3 >= min 2 -> true.
fn solve_again(j: u32, w: vec4<u32>, s: SolveParams, max_iterations: u32) -> bool {
    let over = w.y > s.threshold_hi || (w.y == s.threshold_hi && w.x > s.threshold_lo);
    return j < max_iterations && (j < s.min_iterations || (w.z == 0u && over));
}

// A residual in units of 2^-24, truncated; >= 256 saturates, NaN and negatives give 0
// (src/cpu/dfsph/blocks.rs fixed_residual).
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
// around p; see src/hash.rs query_range for why not simply cell_of(p) ± 1).
fn query_lo(p: vec3<f32>, params: SimParams) -> vec3<i32> {
    return cell_of(p - vec3<f32>(params.h), params.inv_h);
}

fn query_hi(p: vec3<f32>, lo: vec3<i32>, params: SimParams) -> vec3<i32> {
    return min(cell_of(p + vec3<f32>(params.h), params.inv_h), lo + vec3<i32>(MAX_QUERY_SPAN - 1));
}

// The particles [begin, end) of block w when `blocks` workgroups share n particles in
// contiguous blocks of ceil(n / blocks) (the time step's first level, src/gpu/neighbours.rs
// timestep_blocks). Example: n = 10, 4 blocks -> [0, 3), [3, 6), [6, 9), [9, 10).
fn block_span(w: u32, blocks: u32, n: u32) -> vec2<u32> {
    let chunk = (n + blocks - 1u) / blocks;
    return vec2<u32>(min(w * chunk, n), min((w + 1u) * chunk, n));
}

// The fixed reduction tree of one workgroup (src/cpu/dfsph/blocks.rs block_sums, block_maxima):
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
