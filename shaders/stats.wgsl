// Stage `stats` (CPU mirror: src/cpu/stats.rs): a step's statistics reduced on the device to a
// 64-byte block per 256 particles, which the host reads back and folds (cpu::stats::fold_blocks:
// lane l folds blocks l, l + 256, ... in order, then the tree), so no pass of one workgroup
// runs on the device and a run reads back N / 4 bytes per step instead of the state.
// stats_blocks, one invocation per particle: per particle |v|² = (vx² + vy²) + vz²,
// y − y_floor, ρ, max(ρ − ρ0, 0) and the Tait energy ẽ(ρ) (sums; see eos_energy), |v|², ρ,
// x, max(ρ − ρ0, 0) (maxima), ρ (minimum), outside the tank (count), non-finite position /
// velocity / density (bits 1, 2, 4, from the exponent bits: WGSL may assume floats are finite)
// and the smallest id with one; each workgroup reduces its 256 in the fixed tree
// (s[l] ∘= s[l + half], half = 128 … 1) into blocks[4 wid .. 4 wid + 4], with the ids of the
// largest ρ and |v|² (smaller id on a tie), the ẽ sum and the sum of m · obstacle_power (the
// power moving obstacles put in, W).
// Sums pad with 0, extremes with the first particle's own values: no infinity.
// Inputs: pos, vel, id, density, obstacle_power (one order). Output: blocks (16 words each).
// Worked example: two particles at rest, ρ = 1001 and 999 (ρ0 = 1000), heights 0.1 and 0.3:
// sums (0, 0.4, 2000, 1), maxima (0, 1001, x, 1), min 999; Σẽ = ẽ(1.001) ≈ 3.502e-6 (ρ = 999
// stores none: the pressure is clamped at 0 there).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> id: array<u32>;
@group(0) @binding(5) var<storage, read> density: array<f32>;
@group(0) @binding(6) var<storage, read_write> blocks: array<vec4<u32>>;
@group(0) @binding(7) var<storage, read> obstacle_power: array<f32>;

struct Item {
    sums: vec4<f32>,
    maxima: vec4<f32>,
    // (min ρ as bits, outside, non-finite bits, first bad id)
    rest: vec4<u32>,
    // The ids of the largest ρ and the largest |v|² (the smaller id on a tie).
    ids: vec2<u32>,
    // Σẽ(ρ).
    eos: f32,
    // Σ m · obstacle_power.
    power: f32,
}

var<workgroup> red_sums: array<vec4<f32>, WORKGROUP_SIZE>;
var<workgroup> red_maxima: array<vec4<f32>, WORKGROUP_SIZE>;
var<workgroup> red_rest: array<vec4<u32>, WORKGROUP_SIZE>;
var<workgroup> red_ids: array<vec2<u32>, WORKGROUP_SIZE>;
var<workgroup> red_eos: array<f32, WORKGROUP_SIZE>;
var<workgroup> red_power: array<f32, WORKGROUP_SIZE>;

fn finite(x: f32) -> bool {
    return (bitcast<u32>(x) & 0x7f800000u) != 0x7f800000u;
}

fn finite3(v: vec3<f32>) -> bool {
    return finite(v.x) && finite(v.y) && finite(v.z);
}

// The energy the Tait equation of state stores per unit of m B / ρ0 at x = ρ/ρ0:
// ∫₁ˣ (y⁷ − 1)/y² dy = (x⁷ − 7x + 6)/(6x) = (x − 1)²(x⁵ + 2x⁴ + 3x³ + 4x² + 5x + 6)/(6x), in the
// factored form, which does not cancel near x = 1; 0 below ρ0, where the pressure is clamped.
fn eos_energy(rho: f32) -> f32 {
    let x = rho / fluid.rest_density;
    let d = x - 1.0;
    let poly = ((((x + 2.0) * x + 3.0) * x + 4.0) * x + 5.0) * x + 6.0;
    return select(0.0, d * d * poly / (6.0 * x), x > 1.0);
}

fn item(k: u32) -> Item {
    let x = pos[k].xyz;
    let v = vel[k].xyz;
    let rho = density[k];
    let lo = fluid.tank_min.xyz;
    let hi = fluid.tank_max.xyz;
    let bad = select(1u, 0u, finite3(x)) | select(2u, 0u, finite3(v)) | select(4u, 0u, finite(rho));
    let v2 = v.x * v.x + v.y * v.y + v.z * v.z;
    let err = max(rho - fluid.rest_density, 0.0);
    let inside = all(x >= lo) && all(x <= hi);
    return Item(
        vec4<f32>(v2, x.y - lo.y, rho, err),
        vec4<f32>(v2, rho, x.x, err),
        vec4<u32>(bitcast<u32>(rho), select(1u, 0u, inside), bad, select(0xffffffffu, id[k], bad != 0u)),
        vec2<u32>(id[k], id[k]),
        eos_energy(rho),
        fluid.mass * obstacle_power[k],
    );
}

// The neutral element of a set whose first element is `first`.
fn padding(first: Item) -> Item {
    return Item(vec4<f32>(0.0), first.maxima, vec4<u32>(first.rest.x, 0u, 0u, 0xffffffffu), first.ids, 0.0, 0.0);
}

// The id that goes with the larger of va and vb (the smaller id on a tie).
fn arg_max(va: f32, ia: u32, vb: f32, ib: u32) -> u32 {
    return select(select(ia, ib, vb > va), min(ia, ib), va == vb);
}

fn combine(a: Item, b: Item) -> Item {
    return Item(
        a.sums + b.sums,
        max(a.maxima, b.maxima),
        vec4<u32>(
            bitcast<u32>(min(bitcast<f32>(a.rest.x), bitcast<f32>(b.rest.x))),
            a.rest.y + b.rest.y,
            a.rest.z | b.rest.z,
            min(a.rest.w, b.rest.w),
        ),
        vec2<u32>(
            arg_max(a.maxima.y, a.ids.x, b.maxima.y, b.ids.x),
            arg_max(a.maxima.x, a.ids.y, b.maxima.x, b.ids.y),
        ),
        a.eos + b.eos,
        a.power + b.power,
    );
}

// The workgroup's tree; every invocation must call it (it holds barriers). Lane 0 gets the
// result.
fn reduce_items(l: u32, it: Item) -> Item {
    red_sums[l] = it.sums;
    red_maxima[l] = it.maxima;
    red_rest[l] = it.rest;
    red_ids[l] = it.ids;
    red_eos[l] = it.eos;
    red_power[l] = it.power;
    workgroupBarrier();
    for (var half = WORKGROUP_SIZE / 2u; half > 0u; half = half >> 1u) {
        if l < half {
            let c = combine(
                Item(red_sums[l], red_maxima[l], red_rest[l], red_ids[l], red_eos[l], red_power[l]),
                Item(red_sums[l + half], red_maxima[l + half], red_rest[l + half], red_ids[l + half], red_eos[l + half], red_power[l + half]),
            );
            red_sums[l] = c.sums;
            red_maxima[l] = c.maxima;
            red_rest[l] = c.rest;
            red_ids[l] = c.ids;
            red_eos[l] = c.eos;
            red_power[l] = c.power;
        }
        workgroupBarrier();
    }
    return Item(red_sums[0], red_maxima[0], red_rest[0], red_ids[0], red_eos[0], red_power[0]);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn stats_blocks(
    @builtin(global_invocation_id) gid: vec3<u32>,
    @builtin(local_invocation_id) lid: vec3<u32>,
    @builtin(workgroup_id) wid: vec3<u32>,
) {
    let first = wid.x * WORKGROUP_SIZE;
    var it = padding(item(first));
    if gid.x < params.n {
        it = item(gid.x);
    }
    let r = reduce_items(lid.x, it);
    if lid.x == 0u {
        blocks[4u * wid.x] = bitcast<vec4<u32>>(r.sums);
        blocks[4u * wid.x + 1u] = bitcast<vec4<u32>>(r.maxima);
        blocks[4u * wid.x + 2u] = r.rest;
        blocks[4u * wid.x + 3u] = vec4<u32>(r.ids, bitcast<u32>(r.eos), bitcast<u32>(r.power));
    }
}
