// Stage `emitter_probe` (CPU mirror: src/emitter.rs probe_hits): before an emitter adds a
// layer, how many fluid particles lie where the layer would go, so a layer is never placed on
// fluid already there. One invocation per live particle, every probe tested.
// Inputs: positions (N, the held order; the count does not depend on it), the probes (a
// count and up to MAX_PROBES boxes in the nozzle's frame: centre c and unit axes d, u, v;
// c.w = the layer's distance a along d, d.w = the half-thickness along d, u.w and v.w the
// half-widths, v.w < 0 for a disk of radius u.w).
// Output: hits[j] += 1 (integer atomics: the count is exact whatever the order) for each
// particle x with r = x - c, |r.d - a| < d.w and r.u, r.v inside the opening grown by s/2.
// Worked example: a disk probe at c = 0, d = +x, a = 0.01, half-thickness 0.005, radius 0.025:
// a particle at (0.012, 0.02, 0) is inside (|0.012 - 0.01| < 0.005, 0.02^2 < 0.025^2), one at
// (0.02, 0, 0) is not.

const MAX_PROBES: u32 = 16u;

struct Probe {
    c: vec4<f32>,
    d: vec4<f32>,
    u: vec4<f32>,
    v: vec4<f32>,
}

struct Probes {
    count: u32,
    _pad0: u32,
    _pad1: u32,
    _pad2: u32,
    probes: array<Probe, MAX_PROBES>,
}

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> probes: Probes;
@group(0) @binding(2) var<storage, read> positions: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read_write> hits: array<atomic<u32>, MAX_PROBES>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn emitter_probe(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    let x = positions[i].xyz;
    for (var j = 0u; j < probes.count; j++) {
        let p = probes.probes[j];
        let r = x - p.c.xyz;
        let a = r.x * p.d.x + r.y * p.d.y + r.z * p.d.z;
        if !(abs(a - p.c.w) < p.d.w) {
            continue;
        }
        let ru = r.x * p.u.x + r.y * p.u.y + r.z * p.u.z;
        let rv = r.x * p.v.x + r.y * p.v.y + r.z * p.v.z;
        var inside = false;
        if p.v.w < 0.0 {
            inside = ru * ru + rv * rv < p.u.w * p.u.w;
        } else {
            inside = abs(ru) < p.u.w && abs(rv) < p.v.w;
        }
        if inside {
            atomicAdd(&hits[j], 1u);
        }
    }
}
