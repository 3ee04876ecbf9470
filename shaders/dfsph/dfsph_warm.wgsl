// Stage `dfsph_warm` (CPU mirror: src/cpu/dfsph/warm.rs dfsph_warm): a solve's starting stiffness
// from what the same solve applied to the particle last step (SPlisHSPlasH's warm start):
// half of it, and only where the solve finds compression now (kappa > 0 from the rate pass
// just before).
// Inputs: sorted_id (N), warm (N by particle id: (kappa_v dt, kappa dt^2) of the last step),
// kappa (N, the rate pass's), step_state[0] = this solve's dt. Outputs: kappa (N, slot
// order): 0.5 w.x / dt for the divergence-free solve, 0.5 w.y / (dt dt) for the
// constant-density solve, 0 where kappa was not > 0; kappa_sum (the solve's component) = 0.
// Worked example: w = (2e-3, 8e-6), dt = 2e-3, kappa > 0 -> kappa_v = 0.5, kappa = 1.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> dfsph: DfsphParams;
@group(0) @binding(2) var<uniform> solve: SolveParams;
@group(0) @binding(3) var<storage, read> sorted_id: array<u32>;
@group(0) @binding(4) var<storage, read> warm: array<vec2<f32>>;
@group(0) @binding(5) var<storage, read> step_state: array<f32, 4>;
@group(0) @binding(6) var<storage, read_write> kappa: array<f32>;
@group(0) @binding(7) var<storage, read_write> kappa_sum: array<vec2<f32>>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_warm(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    let dt = step_state[0];
    let w = warm[sorted_id[k]];
    let compressed = kappa[k] > 0.0;
    var kw = 0.0;
    if solve.which == 0u {
        if compressed {
            kw = 0.5 * w.x / dt;
        }
        kappa_sum[k].x = 0.0;
    } else {
        if compressed {
            kw = 0.5 * w.y / (dt * dt);
        }
        kappa_sum[k].y = 0.0;
    }
    kappa[k] = kw;
}
