// Stage `pressure` (CPU mirror: src/cpu/pressure.rs): Tait equation of state
// (Becker & Teschner 2007), p = B((ρ/ρ0)^7 − 1), B = ρ0 c²/7, clamped at 0 (no tensile pull).
// Input: fluid_density (N, slot order; the density with the walls' mirror particles). Output: particle_pressure (N, slot order).
// Worked example, ρ0 = 1000, B = 1e5: ρ = 1010 → p ≈ 7213.5 Pa; ρ = 990 → 0.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> fluid_density: array<f32>;
@group(0) @binding(3) var<storage, read_write> particle_pressure: array<f32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn pressure(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    let x = fluid_density[k] / fluid.rest_density;
    let x2 = x * x;
    let x4 = x2 * x2;
    let x7 = x4 * x2 * x;
    particle_pressure[k] = max(fluid.stiffness * (x7 - 1.0), 0.0);
}
