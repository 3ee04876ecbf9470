// Stage `grain_contacts` (CPU mirror: src/grains/mod.rs `contacts`): the discrete-element contact
// forces of colliding spheres (Cundall & Strack, "A discrete numerical model for granular
// assemblies", Géotechnique 1979), one walk per sphere over the SPH step's grid, whose cells
// are the largest diameter wide, so every sphere that can touch i lies in its 27 cells.
// Inputs (slot order): sorted_pos (xyz, w = radius), sorted_vel (xyz, w = mass), slot_start;
// obstacles (grains.obstacles still solids).
// Outputs (slot order): accel (xyz = the acceleration, w = i's share of the elastic energy:
// ¼ k δ² per sphere contact, ½ k δ² per wall contact) and overlap (the deepest δ / min(r_i, r_j)
// of i's contacts).
// A contact of overlap δ = r_i + r_j − |x_i − x_j| > 0, normal n = (x_i − x_j)/|x_i − x_j|,
// relative velocity v = v_i − v_j, v_n = v·n (> 0 separating), effective mass
// m* = m_i m_j/(m_i + m_j) pushes i with
//   F_n = max(k δ − c' v_n', 0) n       (linear spring–dashpot that never pulls, Schwager &
//                                        Pöschel 2007; ζ from the restitution by their e(ζ),
//                                        inverted on the host)
//   F_t = −2√(m* k) v_t, scaled down to |F_t| ≤ μ|F_n|  (viscous friction under the Coulomb
//                                                        limit, no contact history)
// with c = 2ζ√(m* k) applied as c' = c/(1 + c dt/(2m*)) (the step then damps by the trapezoidal
// rule's factor, exact to third order), and v_n' = v_n − δ/dt for a contact that began within
// the last step (v_n < −δ/dt; v_n is exactly (x_n − x_(n−1))/dt in the symplectic step), adding
// the impulse c δ of the part of that step it missed, else v_n. Without the two, a head-on
// rebound came out 10% low at e = 0.2 (dt = t_c/20), and scattered ±3% at e = 0.4 with the
// step's phase at first touch (dt = t_c/50).
// A tank wall, and a still obstacle (the scene's boxes, balls, cylinders), is a contact with an
// infinitely heavy body (m* = m_i, the walls' ζ) at the signed distance of its surface. Then
// a_i = ΣF/m_i + g. Spheres do not rotate. Coincident centres (|x_i − x_j| = 0) exchange nothing.
// Worked example, k = 100, no damping or friction, m = 1, radii 0.5 at x = 0 and 0.9, no
// gravity: δ = 0.1, sphere 0 gets a = (−10, 0, 0), elastic share 0.25, overlap 0.2.

@group(0) @binding(0) var<uniform> params: SimParams;
@group(0) @binding(1) var<uniform> grains: GrainParams;
@group(0) @binding(2) var<storage, read> sorted_pos: array<vec4<f32>>;
@group(0) @binding(3) var<storage, read> sorted_vel: array<vec4<f32>>;
@group(0) @binding(4) var<storage, read> slot_start: array<u32>;
@group(0) @binding(5) var<storage, read_write> accel: array<vec4<f32>>;
@group(0) @binding(6) var<storage, read_write> overlap: array<f32>;
@group(0) @binding(7) var<storage, read> obstacles: array<GrainObstacle>;

// A still solid (src/grains/mod.rs GrainObstacle): kind 0 a box between corners a.xyz and b.xyz,
// 1 a ball (centre a.xyz, radius a.w), 2 a cylinder (base centre a.xyz, radius a.w, length b.x
// along axis 0 = x, 1 = y, 2 = z).
struct GrainObstacle {
    a: vec4<f32>,
    b: vec4<f32>,
    kind: u32,
    axis: u32,
    _pad0: u32,
    _pad1: u32,
}

// The signed distance from p to the obstacle's surface (negative inside) in x, the unit
// outward normal in yzw. Outside a box or cylinder the normal points from the nearest surface
// point to p; inside, out through the nearest face (ties: x before y before z, side before
// caps). Worked example: a box [0,1]³ and p = (0.5, 1.25, 0.5): gap 0.25, normal (0, 1, 0).
fn sgn(x: f32) -> f32 {
    return select(-1.0, 1.0, x >= 0.0);
}

fn pos_part(x: f32) -> f32 {
    return select(0.0, x, x > 0.0);
}

fn obstacle_gap(o: GrainObstacle, p: vec3<f32>) -> vec4<f32> {
    let a = o.a.xyz;
    if o.kind == 0u {
        let b = o.b.xyz;
        let c = (a + b) * 0.5;
        let half = (b - a) * 0.5;
        let d = p - c;
        let q = abs(d) - half;
        let s = vec3<f32>(sgn(d.x), sgn(d.y), sgn(d.z));
        let out = vec3<f32>(pos_part(q.x), pos_part(q.y), pos_part(q.z));
        let lo = sqrt(out.x * out.x + out.y * out.y + out.z * out.z);
        if lo > 0.0 {
            return vec4<f32>(lo, s * out / lo);
        } else if q.x >= q.y && q.x >= q.z {
            return vec4<f32>(q.x, s.x, 0.0, 0.0);
        } else if q.y >= q.z {
            return vec4<f32>(q.y, 0.0, s.y, 0.0);
        }
        return vec4<f32>(q.z, 0.0, 0.0, s.z);
    }
    if o.kind == 1u {
        let d = p - a;
        let l = sqrt(d.x * d.x + d.y * d.y + d.z * d.z);
        if l > 0.0 {
            return vec4<f32>(l - o.a.w, d / l);
        }
        return vec4<f32>(-o.a.w, 0.0, 1.0, 0.0);
    }
    let ax = vec3<f32>(
        select(0.0, 1.0, o.axis == 0u),
        select(0.0, 1.0, o.axis == 1u),
        select(0.0, 1.0, o.axis == 2u),
    );
    let d = p - a;
    let along = d.x * ax.x + d.y * ax.y + d.z * ax.z;
    let across = d - ax * along;
    let ra = sqrt(across.x * across.x + across.y * across.y + across.z * across.z);
    let half = o.b.x * 0.5;
    let from_mid = along - half;
    let qx = ra - o.a.w;
    let qy = abs(from_mid) - half;
    var radial = vec3<f32>(ax.y + ax.z, ax.x, 0.0);
    if ra > 0.0 {
        radial = across / ra;
    }
    let cap = ax * sgn(from_mid);
    let ox = pos_part(qx);
    let oy = pos_part(qy);
    let lo = sqrt(ox * ox + oy * oy);
    if lo > 0.0 {
        return vec4<f32>(lo, radial * (ox / lo) + cap * (oy / lo));
    } else if qx >= qy {
        return vec4<f32>(qx, radial);
    }
    return vec4<f32>(qy, cap);
}

struct Walker {
    i: u32,
    x: vec3<f32>,
    v: vec3<f32>,
    r: f32,
    m: f32,
    f: vec3<f32>,
    energy: f32,
    deepest: f32,
}

// The force on a body from a contact of overlap delta along n, relative velocity vr.
fn contact(n: vec3<f32>, delta: f32, vr: vec3<f32>, me: f32, zeta: f32) -> vec3<f32> {
    let crit = 2.0 * sqrt(me * grains.stiffness);
    let c0 = zeta * crit;
    let c = c0 / (1.0 + 0.5 * c0 * grains.dt / me);
    let vn = vr.x * n.x + vr.y * n.y + vr.z * n.z;
    let lim = delta / grains.dt;
    var rate = vn;
    if vn < -lim {
        rate = vn - lim;
    }
    let push = grains.stiffness * delta - c * rate;
    let normal = select(0.0, push, push > 0.0);
    let vt = vr - n * vn;
    var ft = vt * (-crit);
    let ft2 = ft.x * ft.x + ft.y * ft.y + ft.z * ft.z;
    let limit = grains.friction * abs(normal);
    if ft2 > limit * limit {
        ft = ft * (limit / sqrt(ft2));
    }
    return n * normal + ft;
}

fn begin_round(first: u32, len: u32, members: u32) -> Walker {
    let p = sorted_pos[first];
    let v = sorted_vel[first];
    return Walker(first, p.xyz, v.xyz, p.w, v.w, vec3<f32>(0.0), 0.0, 0.0);
}

fn visit(w: ptr<function, Walker>, k: u32) {
    let p = sorted_pos[k];
    let d = (*w).x - p.xyz;
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    let reach = (*w).r + p.w;
    if k != (*w).i && r2 < reach * reach {
        let dist = sqrt(r2);
        if dist > 0.0 {
            let vk = sorted_vel[k];
            let delta = reach - dist;
            let me = (*w).m * vk.w / ((*w).m + vk.w);
            (*w).f = (*w).f + contact(d / dist, delta, (*w).v - vk.xyz, me, grains.contact_zeta);
            (*w).energy = (*w).energy + 0.25 * grains.stiffness * delta * delta;
            (*w).deepest = max((*w).deepest, delta / min((*w).r, p.w));
        }
    }
}

// A wall at distance gap from the centre, normal n into the tank.
fn wall(w: ptr<function, Walker>, gap: f32, n: vec3<f32>) {
    let delta = (*w).r - gap;
    if delta > 0.0 {
        (*w).f = (*w).f + contact(n, delta, (*w).v, (*w).m, grains.wall_zeta);
        (*w).energy = (*w).energy + 0.5 * grains.stiffness * delta * delta;
        (*w).deepest = max((*w).deepest, delta / (*w).r);
    }
}

fn end_round(w: ptr<function, Walker>, first: u32, members: u32) {
    let x = (*w).x;
    let lo = grains.tank_min.xyz;
    let hi = grains.tank_max.xyz;
    wall(w, x.x - lo.x, vec3<f32>(1.0, 0.0, 0.0));
    wall(w, hi.x - x.x, vec3<f32>(-1.0, 0.0, 0.0));
    wall(w, x.y - lo.y, vec3<f32>(0.0, 1.0, 0.0));
    wall(w, hi.y - x.y, vec3<f32>(0.0, -1.0, 0.0));
    wall(w, x.z - lo.z, vec3<f32>(0.0, 0.0, 1.0));
    wall(w, hi.z - x.z, vec3<f32>(0.0, 0.0, -1.0));
    for (var k = 0u; k < grains.obstacles; k = k + 1u) {
        let g = obstacle_gap(obstacles[k], x);
        wall(w, g.x, g.yzw);
    }
    accel[first] = vec4<f32>((*w).f / (*w).m + grains.gravity.xyz, (*w).energy);
    overlap[first] = (*w).deepest;
}

@compute @workgroup_size(WORKGROUP_SIZE)
fn grain_contacts(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if i >= params.n {
        return;
    }
    walk_one(i);
}
