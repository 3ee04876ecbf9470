//! Stage `forces`, the CPU mirror of `shaders/wcsph/forces.wgsl`.
//!
//! Inputs (slot order): positions, velocities, densities, pressures (N each), `slot_start`.
//! Output: the acceleration of every particle (N):
//! - pressure, symmetric so momentum is conserved: a_i += Σ_j m (p_i/ρ_i² + p_j/ρ_j²)
//!   · 45/(π h⁶) (h − r)² (x_i − x_j)/r, i.e. −m(…)∇W_spiky (Müller et al. 2003);
//! - artificial viscosity (Monaghan 1992), on approaching pairs only: Π_ij = −α c μ_ij / ρ̄_ij
//!   with μ_ij = h (v_ij · x_ij)/(r² + 0.01h²), added to the pressure term's
//!   (p_i/ρ_i² + p_j/ρ_j²). It only removes energy, and it removes what the spiky gradient,
//!   which is not the gradient of the poly6 density, would otherwise pump in (measured: a dam
//!   break gained 3% KE + PE in 200 steps without it, and loses energy monotonically with
//!   α = 0.05);
//! - physical viscosity: a_i += Σ_j (μ/ρ_i) m (v_j − v_i)/ρ_j · 45/(π h⁶)(h − r)
//!   (Müller et al. 2003), off by default;
//! - gravity;
//! - the walls, as mirror particles (Colagrossi & Landrini 2003; see [`super::walls`]): within
//!   h of a wall every candidate j also pushes through its images across the near walls (each
//!   subset of them, images 1 to 7), with j's density and pressure, by the same pair formula.
//!   The image's velocity enters only the viscous terms (the pressure term has none), where
//!   it is −v_j (no slip, as Morris et al. 1997 and Adami et al. 2012 give wall ghosts for
//!   the viscous terms; [`crate::boundary::tank::image_velocity`] gives the wall model of both
//!   solvers). The pressure of the images is what holds the fluid off the walls: there is no
//!   wall force.
//!
//! Pairs are those with r² < h², j ≠ i, found by the same walk as the density (the 27 cells,
//! each slot once); an image within h always has its original among them. Coincident particles (r = 0) get no pressure push from each other, since the
//! direction is undefined, only viscosity.
//!
//! Worked example, h = 1, m = 1, 45/(π h⁶) → k, no viscosity, no gravity: two particles at
//! x = 0 and x = 0.5 with ρ = 1 and p = 1 each push apart with
//! a = ±(1 + 1) · k · 0.5² · 1 = ±0.5k along x.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::tank::{
    WallPlanes, image_axes, reflect_across, uniform_slip, viscous_image_velocity, wall_planes,
};
#[cfg(test)]
use crate::boundary::tank::{subsets, wall_image_mask};
#[cfg(test)]
use crate::grid::key::distance2;
#[cfg(test)]
use crate::grid::walk::groups;
use crate::grid::walk::{GROUP, Positions, map_groups, walk_group};
use crate::params::{FluidParams, SimParams};

/// The slot-order fields the forces read.
#[derive(Clone, Copy)]
pub struct Fields<'a> {
    /// Positions.
    pub pos: &'a [Vec3],
    /// Velocities.
    pub vel: &'a [Vec3],
    /// Densities.
    pub density: &'a [f32],
    /// Pressures.
    pub pressure: &'a [f32],
}

/// How the forces walk reads a particle's fields: the layout of the state it walks. The
/// grouped walk is written once over this trait so the layouts can be measured on the same
/// code (`benches/layout.rs`); the CPU path runs on [`Fields`].
pub trait FieldSource: Positions {
    /// Particle k's position, velocity, density and pressure.
    fn get(&self, k: usize) -> (Vec3, Vec3, f32, f32);
}

impl Positions for Fields<'_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.pos.len()
    }
    #[inline(always)]
    fn at(&self, k: usize) -> Vec3 {
        self.pos[k]
    }
    #[inline(always)]
    fn each(&self, a: usize, b: usize, f: impl FnMut(f32, f32, f32)) {
        self.pos.each(a, b, f)
    }
}

impl FieldSource for Fields<'_> {
    #[inline(always)]
    fn get(&self, k: usize) -> (Vec3, Vec3, f32, f32) {
        (self.pos[k], self.vel[k], self.density[k], self.pressure[k])
    }
}

/// One particle's fields in one 32-byte row (x, ρ, v, p): a candidate is one cache line.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, bytemuck::Pod, bytemuck::Zeroable)]
pub struct FieldRow {
    /// Position.
    pub x: [f32; 3],
    /// Density.
    pub rho: f32,
    /// Velocity.
    pub v: [f32; 3],
    /// Pressure.
    pub p: f32,
}

/// The fields as rows ([`FieldRow`]), an array of structs.
pub struct FieldRows<'a>(pub &'a [FieldRow]);

impl Positions for FieldRows<'_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.0.len()
    }
    #[inline(always)]
    fn at(&self, k: usize) -> Vec3 {
        Vec3::from_array(self.0[k].x)
    }
    #[inline(always)]
    fn each(&self, a: usize, b: usize, mut f: impl FnMut(f32, f32, f32)) {
        for r in &self.0[a..b] {
            f(r.x[0], r.x[1], r.x[2]);
        }
    }
}

impl FieldSource for FieldRows<'_> {
    #[inline(always)]
    fn get(&self, k: usize) -> (Vec3, Vec3, f32, f32) {
        let r = &self.0[k];
        (Vec3::from_array(r.x), Vec3::from_array(r.v), r.rho, r.p)
    }
}

/// The fields as a structure of arrays: each component its own array.
pub struct FieldColumns<'a> {
    /// x, y, z of every particle.
    pub x: [&'a [f32]; 3],
    /// vx, vy, vz of every particle.
    pub v: [&'a [f32]; 3],
    /// Densities.
    pub rho: &'a [f32],
    /// Pressures.
    pub p: &'a [f32],
}

impl Positions for FieldColumns<'_> {
    #[inline(always)]
    fn count(&self) -> usize {
        self.rho.len()
    }
    #[inline(always)]
    fn at(&self, k: usize) -> Vec3 {
        Vec3::new(self.x[0][k], self.x[1][k], self.x[2][k])
    }
    #[inline(always)]
    fn each(&self, a: usize, b: usize, mut f: impl FnMut(f32, f32, f32)) {
        for k in a..b {
            f(self.x[0][k], self.x[1][k], self.x[2][k]);
        }
    }
}

impl FieldSource for FieldColumns<'_> {
    #[inline(always)]
    fn get(&self, k: usize) -> (Vec3, Vec3, f32, f32) {
        let v = Vec3::new(self.v[0][k], self.v[1][k], self.v[2][k]);
        (self.at(k), v, self.rho[k], self.p[k])
    }
}

/// The pressure, artificial-viscosity and viscosity push on particle `k` from a particle at
/// x_k − d (r² = |d|² < h²) with velocity `vj`, density `rho_j` and pressure `p_j`.
#[inline]
#[allow(clippy::too_many_arguments)]
fn interact(
    k: usize,
    d: Vec3,
    r2: f32,
    vj: Vec3,
    rho_j: f32,
    p_j: f32,
    f: &Fields,
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec3 {
    let r = r2.sqrt();
    let w = sp.h - r;
    let rho_k = f.density[k];
    let mut c = (vj - f.vel[k]) * (fp.viscosity / rho_k * fp.mass / rho_j * fp.kernel_45 * w);
    if r > 0.0 {
        let shared = f.pressure[k] / (rho_k * rho_k) + p_j / (rho_j * rho_j);
        let dv = f.vel[k] - vj;
        let approach = dv.x * d.x + dv.y * d.y + dv.z * d.z;
        let artificial = if approach < 0.0 {
            let mu = sp.h * approach / (r2 + 0.01 * sp.h2);
            -fp.alpha * fp.sound_speed * mu / (0.5 * (rho_k + rho_j))
        } else {
            0.0
        };
        c += d * (fp.mass * (shared + artificial) * fp.kernel_45 * w * w / r);
    }
    c
}

/// The contribution of neighbour `j` to particle `k`'s acceleration (pressure + viscosity),
/// for j ≠ k with r² < h².
#[inline]
pub fn pair(k: usize, j: usize, r2: f32, f: &Fields, sp: &SimParams, fp: &FluidParams) -> Vec3 {
    let d = f.pos[k] - f.pos[j];
    interact(k, d, r2, f.vel[j], f.density[j], f.pressure[j], f, sp, fp)
}

/// The push of image `m` of particle `j` (mirrored across m's walls, see [`super::walls`]):
/// j's density and pressure; its velocity enters only the viscous terms, as
/// [`viscous_image_velocity`] gives it (the walls' slip).
/// Zero unless m's walls are all near and the image lies within h; j = k counts, a particle
/// sees its own image.
#[inline]
pub fn image_pair(
    k: usize,
    j: usize,
    walls: &WallPlanes,
    m: u32,
    f: &Fields,
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec3 {
    if walls.mask & m != m {
        return Vec3::ZERO;
    }
    let axes = image_axes(m);
    let d = f.pos[k] - reflect_across(f.pos[j], walls.plane, axes);
    let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
    if r2 < sp.h2 {
        interact(
            k,
            d,
            r2,
            viscous_image_velocity(f.vel[j], f.pos[k], d, walls, axes, fp),
            f.density[j],
            f.pressure[j],
            f,
            sp,
            fp,
        )
    } else {
        Vec3::ZERO
    }
}

/// Candidate `j`'s push on particle `k` (near walls `walls`): the pair itself if j ≠ k and
/// r² < h², then its images in decreasing subset mask, in the GPU's order. The scalar form
/// the lanes of [`group_accelerations`] are tested against.
#[cfg(test)]
fn candidate(
    k: usize,
    j: usize,
    walls: &WallPlanes,
    f: &Fields,
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec3 {
    let r2 = distance2(f.pos[k], f.pos[j]);
    let mut c = if j != k && r2 < sp.h2 {
        pair(k, j, r2, f, sp, fp)
    } else {
        Vec3::ZERO
    };
    // Only a neighbour's images can reach the kernel (see `walls`).
    if wall_image_mask(walls, f.pos[k], f.pos[j], sp.h2) != 0 {
        let mut g = Vec3::ZERO;
        for m in subsets(walls.mask) {
            g += image_pair(k, j, walls, m, f, sp, fp);
        }
        c += g;
    }
    c
}

/// The per-lane operands of a group's members (see [`group_accelerations`]).
struct Lanes {
    q: [[f32; GROUP]; 3],
    v: [[f32; GROUP]; 3],
    rho: [f32; GROUP],
    p_term: [f32; GROUP],
    vm: [f32; GROUP],
    id: [u32; GROUP],
    /// Each member's near walls and their planes.
    mask: [u32; GROUP],
    plane: [[f32; GROUP]; 3],
}

/// [`interact`] for lane `l`: the push on the member from a particle (or image) at
/// x_l − d with velocity `uj`, density `rho_j` and p_j/ρ_j² `pj`; the same operations in the
/// same order.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn lane_push(
    o: &Lanes,
    l: usize,
    (dx, dy, dz): (f32, f32, f32),
    r2: f32,
    uj: Vec3,
    rho_j: f32,
    pj: f32,
    sp: &SimParams,
    fp: &FluidParams,
) -> (f32, f32, f32) {
    let r = r2.sqrt();
    let w = sp.h - r;
    let (vx, vy, vz) = (o.v[0][l], o.v[1][l], o.v[2][l]);
    // Without viscosity (the default) the term is ±0 in every component, which changes no
    // sum (see `group_accelerations`), so its division is skipped.
    let (cx, cy, cz) = if fp.viscosity != 0.0 {
        let cv = o.vm[l] / rho_j * fp.kernel_45 * w;
        ((uj.x - vx) * cv, (uj.y - vy) * cv, (uj.z - vz) * cv)
    } else {
        (0.0, 0.0, 0.0)
    };
    let shared = o.p_term[l] + pj;
    let (ux, uy, uz) = (vx - uj.x, vy - uj.y, vz - uj.z);
    let approach = ux * dx + uy * dy + uz * dz;
    let mu = sp.h * approach / (r2 + 0.01 * sp.h2);
    let artificial = if approach < 0.0 {
        -fp.alpha * fp.sound_speed * mu / (0.5 * (o.rho[l] + rho_j))
    } else {
        0.0
    };
    let s = fp.mass * (shared + artificial) * fp.kernel_45 * w * w / r;
    if r > 0.0 {
        (cx + dx * s, cy + dy * s, cz + dz * s)
    } else {
        (cx, cy, cz)
    }
}

/// The members' operands, one per lane, and the lanes with a wall within h (bit l). Unused
/// lanes repeat the first member with no walls; their results are dropped.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn member_lanes<S: FieldSource + ?Sized>(
    first: usize,
    len: usize,
    f: &S,
    sp: &SimParams,
    fp: &FluidParams,
) -> (Lanes, u32) {
    let mut o = Lanes {
        q: [[0.0; GROUP]; 3],
        v: [[0.0; GROUP]; 3],
        rho: [0.0; GROUP],
        p_term: [0.0; GROUP],
        vm: [0.0; GROUP],
        id: [0; GROUP],
        mask: [0; GROUP],
        plane: [[0.0; GROUP]; 3],
    };
    let mut near = 0u32;
    for l in 0..GROUP {
        let k = first + if l < len { l } else { 0 };
        let (x, u, r, p) = f.get(k);
        for c in 0..3 {
            (o.q[c][l], o.v[c][l]) = (x[c], u[c]);
        }
        o.rho[l] = r;
        o.p_term[l] = p / (r * r);
        // The first two factors of the viscous coefficient, in `interact`'s order.
        o.vm[l] = fp.viscosity / r * fp.mass;
        o.id[l] = k as u32;
        if l < len {
            let w = wall_planes(x, sp.h, fp);
            o.mask[l] = w.mask;
            for c in 0..3 {
                o.plane[c][l] = w.plane[c];
            }
            near |= ((w.mask != 0) as u32) << l;
        }
    }
    (o, near)
}

/// The accelerations of the group `first..first + len` (slot order; members share a query
/// range): one walk, each candidate visited once for all members, each member's sum in walk
/// order.
///
/// How it is fast without changing a bit: every candidate's pair term ([`interact`]) and
/// each of its images is evaluated for all members at once, one member per vector lane (AVX2
/// where the CPU has it), with the scalar code's operations in the scalar code's order, and
/// a lane the term does not apply to (r² ≥ h², the member itself, a wall subset the member is
/// not near) adds an exact zero. Adding +0 instead of nothing changes no sum: an accumulator
/// that starts at +0 never holds −0 in round-to-nearest, and x + (±0) = x for every other x.
/// Subsets run from 7 down to 1 for every lane, which is each member's own [`subsets`]
/// order (decreasing submasks).
// The lane loops index several arrays by lane, which is what vectorises.
#[allow(clippy::needless_range_loop)]
#[inline(always)]
fn group_accelerations<S: FieldSource + ?Sized>(
    first: usize,
    len: usize,
    f: &S,
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> [Vec3; GROUP] {
    let (o, near) = member_lanes(first, len, f, sp, fp);
    let live = (1u32 << len) - 1;
    let mut acc = [[0f32; GROUP]; 3];
    walk_group(first, f, slot_start, sp, |j| {
        let (xj, uj, rho_j, p_j) = f.get(j);
        let pj = p_j / (rho_j * rho_j);
        let mut within = [false; GROUP];
        let mut reach = 0u32;
        let mut dd = [(0f32, 0f32, 0f32); GROUP];
        let mut rr = [0f32; GROUP];
        for l in 0..GROUP {
            let d = (o.q[0][l] - xj.x, o.q[1][l] - xj.y, o.q[2][l] - xj.z);
            let r2 = d.0 * d.0 + d.1 * d.1 + d.2 * d.2;
            (dd[l], rr[l]) = (d, r2);
            within[l] = r2 < sp.h2;
            reach |= (within[l] as u32) << l;
        }
        // A candidate no member reaches (about a quarter of them) adds zeros everywhere.
        if reach & live == 0 {
            return;
        }
        let mut t = [[0f32; GROUP]; 3];
        for l in 0..GROUP {
            let c = lane_push(&o, l, dd[l], rr[l], uj, rho_j, pj, sp, fp);
            let pair = within[l] && o.id[l] != j as u32;
            t[0][l] = if pair { c.0 } else { 0.0 };
            t[1][l] = if pair { c.1 } else { 0.0 };
            t[2][l] = if pair { c.2 } else { 0.0 };
        }
        // Only a neighbour's images can reach the kernel (see `walls`).
        if reach & near != 0 {
            let mut g = [[0f32; GROUP]; 3];
            for m in (1..8u32).rev() {
                let axes = image_axes(m);
                let mut any = false;
                for l in 0..GROUP {
                    any |= within[l] && o.mask[l] & m == m;
                }
                if !any {
                    continue;
                }
                for l in 0..GROUP {
                    // reflect_across's operations, lane by lane.
                    let ix = if axes.x {
                        2.0 * o.plane[0][l] - xj.x
                    } else {
                        xj.x
                    };
                    let iy = if axes.y {
                        2.0 * o.plane[1][l] - xj.y
                    } else {
                        xj.y
                    };
                    let iz = if axes.z {
                        2.0 * o.plane[2][l] - xj.z
                    } else {
                        xj.z
                    };
                    let d = (o.q[0][l] - ix, o.q[1][l] - iy, o.q[2][l] - iz);
                    let r2 = d.0 * d.0 + d.1 * d.1 + d.2 * d.2;
                    let walls = WallPlanes {
                        mask: o.mask[l],
                        plane: Vec3::new(o.plane[0][l], o.plane[1][l], o.plane[2][l]),
                    };
                    let x = Vec3::new(o.q[0][l], o.q[1][l], o.q[2][l]);
                    let ui = viscous_image_velocity(uj, x, Vec3::from(d), &walls, axes, fp);
                    let c = lane_push(&o, l, d, r2, ui, rho_j, pj, sp, fp);
                    let on = within[l] && o.mask[l] & m == m && r2 < sp.h2;
                    g[0][l] += if on { c.0 } else { 0.0 };
                    g[1][l] += if on { c.1 } else { 0.0 };
                    g[2][l] += if on { c.2 } else { 0.0 };
                }
            }
            for c in 0..3 {
                for l in 0..GROUP {
                    t[c][l] += g[c][l];
                }
            }
        }
        for c in 0..3 {
            for l in 0..GROUP {
                acc[c][l] += t[c][l];
            }
        }
    });
    let g = Vec3::from_slice(&fp.gravity[..3]);
    let mut out = [Vec3::ZERO; GROUP];
    for (l, o) in out.iter_mut().enumerate() {
        *o = Vec3::new(acc[0][l], acc[1][l], acc[2][l]) + g;
    }
    out
}

/// [`group_accelerations`] in AVX2 intrinsics, eight members per instruction. LLVM
/// vectorised the portable lane loops only in part (masked stores and stack round trips
/// between the lane loops, measured with perf), so the lanes are spelt out: the same
/// operations in the same order (Rust never contracts a multiply and an add into an FMA, and
/// vector square roots and divisions round as the scalar ones do), a lane a term does not
/// apply to masked to +0.0 as the portable code's `if … else 0.0`, so the results are the
/// same bits (tested against the portable form and the scalar walk).
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use crate::cpu::simd::lanes::{holding, image_offset, norm2, splat3};
    use std::arch::x86_64::*;

    type V = __m256;

    /// The per-step constants of [`lane_push`](super::lane_push), broadcast.
    struct Consts {
        h: V,
        h2: V,
        soft: V,
        neg_ac: V,
        half: V,
        mass: V,
        k45: V,
        viscous: bool,
    }

    /// The members' operands as vectors.
    struct VLanes {
        q: [V; 3],
        v: [V; 3],
        rho: V,
        p_term: V,
        vm: V,
        id: __m256i,
        mask: __m256i,
        plane: [V; 3],
    }

    /// [`super::lane_push`] for all eight lanes.
    #[target_feature(enable = "avx2")]
    #[inline]
    fn push(o: &VLanes, d: [V; 3], r2: V, uj: [V; 3], rho_j: V, pj: V, k: &Consts) -> [V; 3] {
        let zero = _mm256_setzero_ps();
        let r = _mm256_sqrt_ps(r2);
        let w = _mm256_sub_ps(k.h, r);
        let mut c = [zero; 3];
        if k.viscous {
            let cv = _mm256_mul_ps(_mm256_mul_ps(_mm256_div_ps(o.vm, rho_j), k.k45), w);
            for a in 0..3 {
                c[a] = _mm256_mul_ps(_mm256_sub_ps(uj[a], o.v[a]), cv);
            }
        }
        let shared = _mm256_add_ps(o.p_term, pj);
        let u = [0, 1, 2].map(|a| _mm256_sub_ps(o.v[a], uj[a]));
        let approach = _mm256_add_ps(
            _mm256_add_ps(_mm256_mul_ps(u[0], d[0]), _mm256_mul_ps(u[1], d[1])),
            _mm256_mul_ps(u[2], d[2]),
        );
        let mu = _mm256_div_ps(_mm256_mul_ps(k.h, approach), _mm256_add_ps(r2, k.soft));
        let artificial = _mm256_div_ps(
            _mm256_mul_ps(k.neg_ac, mu),
            _mm256_mul_ps(k.half, _mm256_add_ps(o.rho, rho_j)),
        );
        let artificial = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(approach, zero), artificial);
        let s = _mm256_mul_ps(k.mass, _mm256_add_ps(shared, artificial));
        let s = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(s, k.k45), w), w);
        let s = _mm256_div_ps(s, r);
        let apart = _mm256_cmp_ps::<_CMP_GT_OQ>(r, zero);
        [0, 1, 2].map(|a| {
            let pushed = _mm256_add_ps(c[a], _mm256_mul_ps(d[a], s));
            _mm256_blendv_ps(c[a], pushed, apart)
        })
    }

    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn group_accelerations<S: FieldSource + ?Sized>(
        first: usize,
        len: usize,
        f: &S,
        slot_start: &[u32],
        sp: &SimParams,
        fp: &FluidParams,
        slip: f32,
    ) -> [Vec3; GROUP] {
        let (o, near) = member_lanes(first, len, f, sp, fp);
        // SAFETY (whole block): AVX2 is enabled on this function; every load and store goes
        // through an array of exactly eight lanes.
        unsafe {
            let ld = |a: &[f32; GROUP]| _mm256_loadu_ps(a.as_ptr());
            let ldi = |a: &[u32; GROUP]| _mm256_loadu_si256(a.as_ptr().cast());
            let o = VLanes {
                q: [ld(&o.q[0]), ld(&o.q[1]), ld(&o.q[2])],
                v: [ld(&o.v[0]), ld(&o.v[1]), ld(&o.v[2])],
                rho: ld(&o.rho),
                p_term: ld(&o.p_term),
                vm: ld(&o.vm),
                id: ldi(&o.id),
                mask: ldi(&o.mask),
                plane: [ld(&o.plane[0]), ld(&o.plane[1]), ld(&o.plane[2])],
            };
            let k = Consts {
                h: _mm256_set1_ps(sp.h),
                h2: _mm256_set1_ps(sp.h2),
                soft: _mm256_set1_ps(0.01 * sp.h2),
                neg_ac: _mm256_set1_ps(-fp.alpha * fp.sound_speed),
                half: _mm256_set1_ps(0.5),
                mass: _mm256_set1_ps(fp.mass),
                k45: _mm256_set1_ps(fp.kernel_45),
                viscous: fp.viscosity != 0.0,
            };
            let live = (1i32 << len) - 1;
            let zero = _mm256_setzero_ps();
            let mut acc = [zero; 3];
            walk_group(first, f, slot_start, sp, |j| {
                let (xj, uj, rho_j, p_j) = f.get(j);
                let pj = _mm256_set1_ps(p_j / (rho_j * rho_j));
                let xjv = splat3(xj);
                let d = [0, 1, 2].map(|a| _mm256_sub_ps(o.q[a], xjv[a]));
                let r2 = norm2(d);
                let within = _mm256_cmp_ps::<_CMP_LT_OQ>(r2, k.h2);
                let reach = _mm256_movemask_ps(within);
                // A candidate no member reaches (about a quarter of them) adds zeros everywhere.
                if reach & live == 0 {
                    return;
                }
                let rho_jv = _mm256_set1_ps(rho_j);
                let ujv = splat3(uj);
                let c = push(&o, d, r2, ujv, rho_jv, pj, &k);
                let me = _mm256_castsi256_ps(_mm256_cmpeq_epi32(o.id, _mm256_set1_epi32(j as i32)));
                let pair = _mm256_andnot_ps(me, within);
                let mut t = c.map(|c| _mm256_and_ps(pair, c));
                // Only a neighbour's images can reach the kernel (see `walls`).
                if reach & near as i32 != 0 {
                    let mut g = [zero; 3];
                    for m in (1..8u32).rev() {
                        let walled = _mm256_and_ps(within, holding(o.mask, m));
                        if _mm256_movemask_ps(walled) == 0 {
                            continue;
                        }
                        // viscous_image_velocity with every wall's factor `slip` (the caller
                        // comes here only then): the same for every lane.
                        let axes = image_axes(m);
                        let uiv = splat3(Vec3::select(axes, -uj, uj * slip));
                        let d = image_offset(&o.q, &o.plane, &xjv, m);
                        let r2 = norm2(d);
                        let c = push(&o, d, r2, uiv, rho_jv, pj, &k);
                        let on = _mm256_and_ps(walled, _mm256_cmp_ps::<_CMP_LT_OQ>(r2, k.h2));
                        for a in 0..3 {
                            g[a] = _mm256_add_ps(g[a], _mm256_and_ps(on, c[a]));
                        }
                    }
                    for a in 0..3 {
                        t[a] = _mm256_add_ps(t[a], g[a]);
                    }
                }
                for a in 0..3 {
                    acc[a] = _mm256_add_ps(acc[a], t[a]);
                }
            });
            let mut sums = [[0f32; GROUP]; 3];
            for a in 0..3 {
                _mm256_storeu_ps(sums[a].as_mut_ptr(), acc[a]);
            }
            let g = Vec3::from_slice(&fp.gravity[..3]);
            let mut out = [Vec3::ZERO; GROUP];
            for (l, o) in out.iter_mut().enumerate() {
                *o = Vec3::new(sums[0][l], sums[1][l], sums[2][l]) + g;
            }
            out
        }
    }
}

fn group_accelerations_best<S: FieldSource + ?Sized>(
    first: usize,
    len: usize,
    f: &S,
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> [Vec3; GROUP] {
    // The vector walk gives every lane one image velocity: walls whose slip needs no distance.
    #[cfg(target_arch = "x86_64")]
    if let (true, Some(slip)) = (crate::cpu::simd::has_avx2(), uniform_slip(fp)) {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { avx2::group_accelerations(first, len, f, slot_start, sp, fp, slip) };
    }
    group_accelerations(first, len, f, slot_start, sp, fp)
}

/// Runs the forces stage, group by group ([`map_groups`]: groups in Morton order), on the
/// fields packed into 32-byte rows first ([`FieldRow`]: a candidate is then one cache line;
/// the layout measured fastest for this walk, docs/benchmarks.md). The same bits as on
/// `f`'s own arrays.
pub fn forces(f: &Fields, slot_start: &[u32], sp: &SimParams, fp: &FluidParams) -> Vec<Vec3> {
    let rows: Vec<FieldRow> = f
        .pos
        .par_iter()
        .zip(f.vel)
        .zip(f.density)
        .zip(f.pressure)
        .map(|(((x, v), &rho), &p)| FieldRow {
            x: x.to_array(),
            rho,
            v: v.to_array(),
            p,
        })
        .collect();
    forces_in(&FieldRows(&rows), slot_start, sp, fp)
}

/// [`forces`] reading the fields in the layout `f`; the same bits in every layout.
pub fn forces_in<S: FieldSource + ?Sized>(
    f: &S,
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
) -> Vec<Vec3> {
    map_groups(f, sp, |first, len| {
        group_accelerations_best(first, len, f, slot_start, sp, fp)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::Grid;
    use crate::grid::reorder;
    use crate::grid::walk::walk;
    use crate::params::{ConfigOverrides, PhysicsConfig, SphConfig};
    use rand::rngs::Xoshiro256PlusPlus;
    use rand::{RngExt, SeedableRng};

    /// The lane forms (AVX2 and portable) equal the scalar walk of each particle on its own
    /// ([`candidate`] per candidate, in walk order), bit for bit: random particles filling a 1 m box (walls,
    /// edges and corners within h), two coincident particles, every cell in one slot
    /// (T = 1, so groups see far particles too), with and without physical viscosity.
    #[test]
    fn lanes_equal_the_scalar_walk_bit_for_bit() {
        let h = 0.2;
        let cfg = SphConfig::new(
            2,
            ConfigOverrides {
                smoothing_radius: Some(h),
                spacing: Some(h / 2.0),
                particle_mass: Some(1.0),
                rest_density: Some(1.0),
                table_size: Some(1),
                group_size: None,
                kernel: None,
            },
        )
        .unwrap();
        let sp = cfg.sim_params();
        let mut fp = PhysicsConfig::default()
            .fluid_params(&cfg, Vec3::ZERO, Vec3::ONE, 1.0)
            .unwrap();
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut pos: Vec<Vec3> = (0..300)
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()) * 0.99 + 0.005)
            .collect();
        pos[1] = pos[0];
        let vel: Vec<Vec3> = (0..pos.len())
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()) - 0.5)
            .collect();
        let density: Vec<f32> = (0..pos.len())
            .map(|_| 0.8 + 0.4 * rng.random::<f32>())
            .collect();
        let pressure: Vec<f32> = (0..pos.len()).map(|_| rng.random::<f32>() - 0.2).collect();
        let g = Grid::build(&pos, &sp);
        let (p, v) = (
            reorder::gather(&pos, &g.sorted_ids),
            reorder::gather(&vel, &g.sorted_ids),
        );
        let (d, pr) = (
            reorder::gather(&density, &g.sorted_ids),
            reorder::gather(&pressure, &g.sorted_ids),
        );
        let f = Fields {
            pos: &p,
            vel: &v,
            density: &d,
            pressure: &pr,
        };
        // No slip and free slip (the vector walk), a slip length on the lower walls with free
        // upper ones (the portable lanes).
        for (viscosity, (lo, hi)) in [
            (0.0, (0.0, 0.0)),
            (0.3, (0.0, 0.0)),
            (0.3, (-1.0, -1.0)),
            (0.3, (0.05, -1.0)),
        ] {
            fp.viscosity = viscosity;
            fp.slip_lo = [lo, lo, lo, 0.0];
            fp.slip_hi = [hi, hi, hi, 0.0];
            let lanes = forces(&f, &g.slot_start, &sp, &fp);
            let mut walled = 0;
            for k in 0..p.len() {
                let walls = wall_planes(p[k], sp.h, &fp);
                walled += (walls.mask != 0) as usize;
                let mut a = Vec3::ZERO;
                walk(p[k], &p, &g.slot_start, &sp, |j, _| {
                    a += candidate(k, j as usize, &walls, &f, &sp, &fp);
                });
                let a = a + Vec3::from_slice(&fp.gravity[..3]);
                assert_eq!(
                    a.to_array().map(f32::to_bits),
                    lanes[k].to_array().map(f32::to_bits),
                    "particle {k}, viscosity {viscosity}, slip {lo} {hi}: {a} vs {}",
                    lanes[k]
                );
            }
            assert!(walled > 50, "walls within h of many particles: {walled}");
            // Every layout of the same fields gives the same bits.
            let rows: Vec<FieldRow> = (0..p.len())
                .map(|k| FieldRow {
                    x: p[k].to_array(),
                    rho: d[k],
                    v: v[k].to_array(),
                    p: pr[k],
                })
                .collect();
            let comp = |a: &[Vec3], c: usize| a.iter().map(|x| x[c]).collect::<Vec<f32>>();
            let (xs, vs) = (
                [0, 1, 2].map(|c| comp(&p, c)),
                [0, 1, 2].map(|c| comp(&v, c)),
            );
            let columns = FieldColumns {
                x: [&xs[0], &xs[1], &xs[2]],
                v: [&vs[0], &vs[1], &vs[2]],
                rho: &d,
                p: &pr,
            };
            let bits = |a: &[Vec3]| {
                a.iter()
                    .map(|x| x.to_array().map(f32::to_bits))
                    .collect::<Vec<_>>()
            };
            assert_eq!(
                bits(&lanes),
                bits(&forces_in(&FieldRows(&rows), &g.slot_start, &sp, &fp))
            );
            assert_eq!(
                bits(&lanes),
                bits(&forces_in(&columns, &g.slot_start, &sp, &fp))
            );
            // The portable lane form, which `forces` does not take where AVX2 is present.
            for (first, len) in groups(&p[..], &sp) {
                let a =
                    group_accelerations(first as usize, len as usize, &f, &g.slot_start, &sp, &fp);
                for (l, a) in a.iter().take(len as usize).enumerate() {
                    let k = first as usize + l;
                    assert_eq!(
                        a.to_array().map(f32::to_bits),
                        lanes[k].to_array().map(f32::to_bits),
                        "portable lanes, particle {k}, viscosity {viscosity}"
                    );
                }
            }
        }
    }

    /// The walls' slip length in the viscous terms: fluid sliding uniformly along the floor
    /// (a lattice moving at 1 m/s along x, equal densities, no pressure, Müller viscosity
    /// only) is not braked by free-slip walls (every a_x exactly 0: each image moves as its
    /// original along the wall), is braked by no-slip walls within h of the floor, and by a
    /// slip length b = s (Navier) less than by no slip but more than by free slip.
    #[test]
    fn free_slip_walls_let_fluid_slide_and_a_slip_length_brakes_it_less_than_no_slip() {
        let (s, h) = (0.1f32, 0.2f32);
        let cfg = SphConfig::new(
            1000,
            ConfigOverrides {
                smoothing_radius: Some(h),
                spacing: Some(s),
                particle_mass: Some(1.0),
                rest_density: Some(1.0),
                table_size: Some(1024),
                group_size: None,
                kernel: None,
            },
        )
        .unwrap();
        let sp = cfg.sim_params();
        let mut fp = PhysicsConfig {
            gravity: 0.0,
            viscosity: 0.3,
            alpha: 0.0,
            ..Default::default()
        }
        .fluid_params(&cfg, Vec3::ZERO, Vec3::splat(1.0), 1.0)
        .unwrap();
        let pos: Vec<Vec3> = (0..1000)
            .map(|i| {
                (Vec3::new((i % 10) as f32, (i / 100) as f32, ((i / 10) % 10) as f32) + 0.5) * s
            })
            .collect();
        let g = Grid::build(&pos, &sp);
        let p = reorder::gather(&pos, &g.sorted_ids);
        let v = vec![Vec3::X; p.len()];
        let (d, pr) = (vec![1.0f32; p.len()], vec![0.0f32; p.len()]);
        let f = Fields {
            pos: &p,
            vel: &v,
            density: &d,
            pressure: &pr,
        };
        // The brake on the bottom layer, summed: the floor is the only wall across which
        // tangential x-motion is sheared (the x walls see it as normal motion, which every
        // wall model reflects).
        let mut brake = |b: f32| {
            fp.slip_lo = [-1.0, b, -1.0, 0.0];
            fp.slip_hi = [-1.0, -1.0, -1.0, 0.0];
            let a = forces(&f, &g.slot_start, &sp, &fp);
            let mut sum = 0.0f32;
            for k in 0..p.len() {
                let interior_x = p[k].x > h && p[k].x < 1.0 - h;
                if b < 0.0 && interior_x {
                    assert_eq!(a[k].x, 0.0, "free slip braked particle {k} at {}", p[k]);
                }
                if p[k].y < 0.5 * s + 1e-4 && interior_x {
                    sum -= a[k].x;
                }
            }
            sum
        };
        let (free, partial, none) = (brake(-1.0), brake(s), brake(0.0));
        assert_eq!(free, 0.0);
        assert!(
            0.0 < partial && partial < none,
            "brake on the bottom layer: free {free}, b = s {partial}, no slip {none}"
        );
    }
}
