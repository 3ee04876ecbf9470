// Stage `dfsph_eos` (CPU mirror: src/solver/dfsph/eos.rs dfsph_eos): WCSPH's pressure on the shared
// stages. The stiffness kappa_i = p_i / rho_i from the Tait equation of state (Becker &
// Teschner 2007), p = B((rho/rho0)^7 - 1) clamped at 0 (a stretched fluid carries no
// pressure: no tensile clumping at the free surface), which `dfsph_pressure` then applies once
// with the step's dt: v_i -= dt sum_j m (p_i/rho_i^2 + p_j/rho_j^2) gradW_ij, the symmetric
// pressure force (Monaghan 1992) on the kernel the density summed.
// Inputs: dfsph_rho (N, slot order, with the walls' images and the obstacles). Output: kappa (N, in solve_fields).
// Worked example, rho0 = 1000, B = 1e5: rho = 1010 -> x^7 = 1.0721354, p = 7213.5 Pa,
// kappa = 7.1421 m^2/s^2; rho = 990 -> kappa = 0.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> dfsph_rho: array<f32>;
@group(0) @binding(3) var<storage, read_write> solve_fields: array<f32>;

// The Tait pressure, operation for operation as src/solver/dfsph/eos.rs tait.
fn tait(rho: f32) -> f32 {
    let x = rho / fluid.rest_density;
    let x2 = x * x;
    let x4 = x2 * x2;
    let x7 = x4 * x2 * x;
    return max(fluid.stiffness * (x7 - 1.0), 0.0);
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_eos(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    let rho = dfsph_rho[k];
    solve_fields[kappa_at(k)] = tait(rho) / rho;
}
