// Stage `free_fall`, the test double's one stage (CPU mirror: `FreeFall::integrate` in
// tests/suite/solver/mod.rs): symplectic Euler under gravity alone, v' = v + g dt,
// x' = x + v' dt, then the tank's clamp (no inset).
// Inputs (slot order): sorted_pos, sorted_vel, sorted_id, step_state = (dt, 0, 0, 0).
// Outputs: positions, velocities, particle_id (the next state in this step's slot order).
// Worked example, g = (0, -10, 0), dt = 0.1, tank [0, 1]^3, e = 0: x = (0.5, 0.5, 0.5),
// v = (1, 0, 0) -> v' = (1, -1, 0), x' = (0.6, 0.4, 0.5).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> sorted_id: array<u32>;
@group(0) @binding(5) var<storage, read> step_state: array<f32, 4>;
@group(0) @binding(6) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> velocities: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> particle_id: array<u32>;

@compute @workgroup_size(WORKGROUP_SIZE)
fn free_fall(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    let dt = step_state[0];
    var v = sorted_vel[k].xyz + fluid.gravity.xyz * dt;
    var x = sorted_pos[k].xyz + v * dt;
    clamp_to_box(&x, &v, fluid.tank_min.xyz, fluid.tank_max.xyz, fluid.restitution, fluid.open);
    positions[k] = vec4<f32>(x, 0.0);
    velocities[k] = vec4<f32>(v, 0.0);
    particle_id[k] = sorted_id[k];
}
