// Stage `dfsph_integrate` (CPU mirror: src/solver/dfsph/integrate.rs dfsph_integrate): x' = x + v dt with
// the tank's hard clamp held dfsph.wall_inset (half a spacing) inside the walls, so a particle
// never meets its own mirror image (an outward normal speed becomes -restitution times itself,
// as in `integrate`).
// Inputs (slot order): sorted_pos, sorted_vel, sorted_id, step_state = (dt, v_max, dt_prev, 0).
// Outputs: positions, velocities, particle_id (the next state in this step's slot order).
// Worked example, tank [0, 1]^3, inset 0.005, e = 0, dt = 0.1: x = (0.5, 0.05, 0.5),
// v = (1, -1, 0) -> x' = (0.6, 0.005, 0.5), v' = (1, 0, 0).

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> fluid: FluidParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> sorted_id: array<u32>;
@group(0) @binding(5) var<uniform> step_state: vec4<f32>;
@group(0) @binding(6) var<storage, read_write> positions: array<vec4<f32>>;
@group(0) @binding(7) var<storage, read_write> velocities: array<vec4<f32>>;
@group(0) @binding(8) var<storage, read_write> particle_id: array<u32>;
@group(0) @binding(9) var<uniform> dfsph: DfsphParams;

@compute @workgroup_size(WORKGROUP_SIZE)
fn dfsph_integrate(@builtin(global_invocation_id) gid: vec3<u32>) {
    let k = gid.x;
    if k >= params.n {
        return;
    }
    let dt = step_state[0];
    var v = sorted_vel[k].xyz;
    var x = sorted_pos[k].xyz + v * dt;
    let inset = vec3<f32>(dfsph.wall_inset);
    clamp_to_box(&x, &v, fluid.tank_min.xyz + inset, fluid.tank_max.xyz - inset, fluid.restitution, fluid.open);
    positions[k] = vec4<f32>(x, 0.0);
    velocities[k] = vec4<f32>(v, 0.0);
    particle_id[k] = sorted_id[k];
}
