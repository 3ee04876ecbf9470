//! Obstacles as boundary particles (Akinci, Ihmsen, Akinci, Solenthaler & Teschner,
//! "Versatile Rigid-Fluid Coupling for Incompressible SPH", ACM TOG 31(4), 2012): the particles,
//! their volumes and their grid. The WCSPH stages that let the fluid feel them,
//! `obstacle_density` and `obstacle_forces`, are `cpu::obstacles` (CPU mirrors of
//! `shaders/obstacle.wgsl`).
//!
//! An obstacle's surface is sampled with particles at a spacing no larger than the fluid's s
//! ([`sample_surface`]). Each boundary particle b gets a volume from its own boundary
//! neighbourhood, V_b = 1 / Σ_k W(x_b − x_k) (Akinci eq. 4: densely sampled parts of the surface
//! count less per particle), and stands for the fluid mass ψ_b = ρ0 V_b (eq. 5). Then:
//! - density (eq. 6): ρ_i += Σ_b ψ_b W(x_i − x_b), with the poly6 kernel of the fluid's own
//!   density, so a fluid particle at a wall sees about the density of the interior;
//! - pressure force (eq. 10): a_i += −ψ_b (p_i / ρ_i²) ∇W(x_i − x_b), with the spiky gradient
//!   of the fluid's forces (Müller et al. 2003);
//! - friction (eqs. 11–13): a_i += −ψ_b Π_ib ∇W(x_i − x_b), Π_ib = −ν min(v_ib · x_ib, 0) /
//!   (|x_ib|² + 0.01 h²), ν = σ h c / (2 ρ_i), σ the fluid's artificial viscosity α for a
//!   no-slip obstacle and 0 for a free-slip one, v_ib = v_i − v_b with v_b the obstacle
//!   surface's velocity (zero on a still obstacle; `crate::motion` moves the others).
//!
//! The boundary particles live in a grid of their own: the fluid's cells and hash (inv_h,
//! the prime-XOR hash) in a table of T_b slots, built on the host: once for still obstacles,
//! and again before every step while one moves ([`Boundary::place`]: the pose comes from the
//! run's time, which only the host knows before the step). Each fluid particle walks the 27
//! cells around it in that grid, each slot once, in the fluid walk's order
//! (`hash::walk_slots`), and only when it lies within h of the obstacles' bounding box.
//! The tank keeps its mirror walls.
//!
//! Worked example, h = 1, ρ0 = 1, poly6_norm = 1: a lone boundary particle has Σ_k W = 1, so
//! ψ = 1; a fluid particle 0.5 away gains density 1 · (1 − 0.25)³ = 0.421875. With
//! 45/(π h⁶) taken as 1 and p/ρ² = 1, a resting fluid particle at x = 0.5 from that boundary
//! particle at 0 is pushed by 1 · (1 + 0) · (1 − 0.5)² · 0.5/0.5 = 0.25 along +x (no friction:
//! it does not approach).

use glam::{IVec3, Vec3};
use rayon::prelude::*;

use crate::hash::{cell_of, distance2, hash_cell, query_range, walk_slots};
use crate::params::{FluidParams, SimParams};
use crate::shape::{Axis, Shape};
use crate::{Error, Result};

/// Whether fluid slides along an obstacle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Slip {
    /// Friction from the fluid's artificial viscosity (Akinci et al. 2012, eq. 11).
    #[default]
    NoSlip,
    /// No friction: only the pressure force.
    FreeSlip,
}

/// A solid body in the tank.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Obstacle {
    /// Its solid volume (box, sphere, cylinder, closed mesh), where it is at t = 0.
    pub shape: Shape,
    /// Friction.
    #[serde(default)]
    pub slip: Slip,
    /// A prescribed motion; none keeps it still.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub motion: Option<crate::motion::Motion>,
}

impl Obstacle {
    /// Its motion, if it ever moves.
    pub fn moving(&self) -> Option<&crate::motion::Motion> {
        self.motion.as_ref().filter(|m| m.moves())
    }
}

/// The top speed of each moving obstacle's surface, as a velocity along x (for the default
/// speed of sound, which must be ten times the fastest thing the fluid meets).
pub fn top_speeds(obstacles: &[Obstacle]) -> Vec<Vec3> {
    obstacles
        .iter()
        .filter_map(|o| o.moving().map(|m| Vec3::X * m.max_speed(&o.shape)))
        .collect()
}

/// The uniform block of the obstacle stages (`shaders/obstacle.wgsl` `ObstacleParams`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ObstacleParams {
    /// Lower corner of the boundary particles' bounding box less h (xyz; w unused): a fluid
    /// particle outside [lo, hi] has no boundary neighbour.
    pub lo: [f32; 4],
    /// Upper corner plus h.
    pub hi: [f32; 4],
    /// Boundary particle count B.
    pub count: u32,
    /// T_b − 1 of the boundary grid's table.
    pub table_mask: u32,
    /// 315/(64π h³): W_poly6 = poly6_norm · (1 − r²/h²)³.
    pub poly6_norm: f32,
    #[doc(hidden)]
    pub _pad: f32,
}

/// Every obstacle's boundary particles, in the boundary grid's slot order, at the pose of the
/// last [`Boundary::place`] (t = 0 when built).
#[derive(Clone, Debug, PartialEq)]
pub struct Boundary {
    /// Positions, m.
    pub pos: Vec<Vec3>,
    /// Velocities, m/s (zero on a still obstacle).
    pub vel: Vec<Vec3>,
    /// ψ_b = ρ0 V_b, kg.
    pub psi: Vec<f32>,
    /// Friction factor: 1 no-slip, 0 free-slip (times the fluid's α).
    pub slip: Vec<f32>,
    /// Start of each slot's particles (T_b + 1).
    pub slot_start: Vec<u32>,
    /// The stages' uniform block.
    pub params: ObstacleParams,
    /// In sampling order: each particle's position at t = 0, its obstacle, ψ and slip.
    rest: Vec<Vec3>,
    owner: Vec<u32>,
    rest_psi: Vec<f32>,
    rest_slip: Vec<f32>,
    /// Each obstacle's motion, `None` for a still one.
    motions: Vec<Option<crate::motion::Motion>>,
    h: f32,
    inv_h: f32,
}

/// How many points [`sample_surface`] makes on `shape` at spacing `s`, at most (f64, counted
/// without making them), so an obstacle too large to sample is refused before it allocates.
/// Worked example: a unit cube at s = 0.5 has 3³ − 1 = 26 points, a sphere of radius 1 at
/// s = 1 ⌈√(4π)⌉² = 16.
pub fn surface_count(shape: &Shape, s: f32) -> f64 {
    let count = |len: f64| (len / s as f64).ceil().max(1.0);
    match *shape {
        Shape::Box { min, max } => {
            let n = [0, 1, 2].map(|a| count((max[a] - min[a]) as f64));
            (n[0] + 1.0) * (n[1] + 1.0) * (n[2] + 1.0) - (n[0] - 1.0) * (n[1] - 1.0) * (n[2] - 1.0)
        }
        Shape::Sphere { radius, .. } => {
            count(radius as f64 * (4.0 * std::f64::consts::PI).sqrt()).powi(2)
        }
        Shape::Cylinder { radius, length, .. } => {
            let ring = count(std::f64::consts::TAU * radius as f64);
            (count(length as f64) + 1.0) * ring + 2.0 * count(radius as f64) * ring
        }
        Shape::Mesh { ref mesh, .. } => mesh.as_ref().map_or(0.0, |m| m.surface_count(s)),
    }
}

/// Points on the surface of `shape` at spacing at most `s`, in a fixed order.
pub fn sample_surface(shape: &Shape, s: f32) -> Vec<Vec3> {
    let tau = std::f64::consts::TAU;
    let count = |len: f64| ((len / s as f64).ceil() as usize).max(1);
    match *shape {
        Shape::Box { min, max } => {
            let (lo, hi) = (Vec3::from(min), Vec3::from(max));
            let n = [0, 1, 2].map(|a| count((hi[a] - lo[a]) as f64));
            let step = Vec3::new(
                (hi.x - lo.x) / n[0] as f32,
                (hi.y - lo.y) / n[1] as f32,
                (hi.z - lo.z) / n[2] as f32,
            );
            let mut out = Vec::new();
            for j in 0..=n[1] {
                for k in 0..=n[2] {
                    for i in 0..=n[0] {
                        let on_face =
                            i == 0 || i == n[0] || j == 0 || j == n[1] || k == 0 || k == n[2];
                        if on_face {
                            out.push(lo + Vec3::new(i as f32, j as f32, k as f32) * step);
                        }
                    }
                }
            }
            out
        }
        Shape::Sphere { centre, radius } => {
            // A Fibonacci lattice: n points of equal area 4πr²/n ≤ s² each.
            let r = radius as f64;
            let n = count(r * (4.0 * std::f64::consts::PI).sqrt()).pow(2);
            let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
            (0..n)
                .map(|k| {
                    let y = 1.0 - (2 * k + 1) as f64 / n as f64;
                    let ring = (1.0 - y * y).sqrt();
                    let phi = golden * k as f64;
                    Vec3::from(centre)
                        + (glam::DVec3::new(ring * phi.cos(), y, ring * phi.sin()) * r).as_vec3()
                })
                .collect()
        }
        Shape::Cylinder {
            base,
            axis,
            radius,
            length,
        } => {
            let (r, len) = (radius as f64, length as f64);
            // Local frame: u, v across, w along the axis.
            let (u, v, w) = match axis {
                Axis::X => (glam::DVec3::Y, glam::DVec3::Z, glam::DVec3::X),
                Axis::Y => (glam::DVec3::Z, glam::DVec3::X, glam::DVec3::Y),
                Axis::Z => (glam::DVec3::X, glam::DVec3::Y, glam::DVec3::Z),
            };
            let b = Vec3::from(base).as_dvec3();
            let ring = |rad: f64, t: f64, out: &mut Vec<Vec3>| {
                if rad == 0.0 {
                    out.push((b + w * t).as_vec3());
                    return;
                }
                let n = count(tau * rad);
                for i in 0..n {
                    let a = tau * i as f64 / n as f64;
                    out.push((b + w * t + (u * a.cos() + v * a.sin()) * rad).as_vec3());
                }
            };
            let mut out = Vec::new();
            let rows = count(len);
            for j in 0..=rows {
                ring(r, len * j as f64 / rows as f64, &mut out);
            }
            let rings = count(r);
            for t in [0.0, len] {
                for m in 0..rings {
                    ring(r * m as f64 / rings as f64, t, &mut out);
                }
            }
            out
        }
        Shape::Mesh { ref mesh, .. } => {
            mesh.as_ref().map_or_else(Vec::new, |m| m.sample_surface(s))
        }
    }
}

impl Boundary {
    /// Samples `obstacles` at spacing `s`, sorts the particles into their grid and gives each
    /// its ψ, for the fluid of `sp` (h) and `fp` (ρ0). `None` without obstacles.
    ///
    /// ψ comes from the particle's own rigid body (Akinci eq. 4): the still obstacles together
    /// form one body, each moving obstacle its own, so ψ stays valid however they move.
    pub fn new(obstacles: &[Obstacle], s: f32, sp: &SimParams, fp: &FluidParams) -> Option<Self> {
        Self::for_solver(obstacles, s, sp, fp, &crate::params::SolverParams::Wcsph)
    }

    /// [`Boundary::new`] for WCSPH (`dfsph` = `None`: ψ from the poly6 kernel of its density)
    /// or DFSPH (ψ from the cubic spline of its density, ψ_b = ρ0 / Σ_k W_cubic(x_b − x_k)),
    /// since ψ_b must make a boundary particle weigh in the density as the fluid it stands
    /// for, with the kernel that density uses.
    pub fn for_solver(
        obstacles: &[Obstacle],
        s: f32,
        sp: &SimParams,
        fp: &FluidParams,
        solver: &crate::params::SolverParams,
    ) -> Option<Self> {
        let dfsph = solver.dfsph();
        let mut rest = Vec::new();
        let mut owner = Vec::new();
        let mut rest_slip = Vec::new();
        for (k, o) in obstacles.iter().enumerate() {
            let points = sample_surface(&o.shape, s);
            let factor = match o.slip {
                Slip::NoSlip => 1.0,
                Slip::FreeSlip => 0.0,
            };
            rest_slip.extend(std::iter::repeat_n(factor, points.len()));
            owner.extend(std::iter::repeat_n(k as u32, points.len()));
            rest.extend(points);
        }
        if rest.is_empty() {
            return None;
        }
        let b = rest.len();
        let table = (2 * b).next_power_of_two().max(1) as u32;
        let poly6_norm = (315.0 / (64.0 * std::f64::consts::PI * (sp.h as f64).powi(3))) as f32;
        let motions: Vec<_> = obstacles.iter().map(|o| o.moving().copied()).collect();
        let mut boundary = Self {
            pos: Vec::new(),
            vel: Vec::new(),
            psi: Vec::new(),
            slip: Vec::new(),
            slot_start: Vec::new(),
            params: ObstacleParams {
                table_mask: table - 1,
                poly6_norm,
                ..Default::default()
            },
            rest_psi: vec![0.0; b],
            rest,
            owner,
            rest_slip,
            motions,
            h: sp.h,
            inv_h: sp.inv_h,
        };
        let order = boundary.arrange(0.0);
        // The rigid body of each particle in slot order: 0 for the still ones together.
        let body: Vec<u32> = order
            .iter()
            .map(|&i| {
                let o = boundary.owner[i] as usize;
                if boundary.motions[o].is_some() {
                    o as u32 + 1
                } else {
                    0
                }
            })
            .collect();
        // ψ_b = ρ0 / (poly6_norm Σ_k (1 − r²/h²)³), or ρ0 / Σ_k W_cubic, over the boundary
        // neighbours of its own body (self included).
        let psi: Vec<f32> = (0..b)
            .into_par_iter()
            .map(|i| {
                let mut sum = 0.0f32;
                boundary.walk(boundary.pos[i], sp, |k, r2| {
                    if body[k] == body[i] {
                        sum += match dfsph {
                            None => crate::kernel::poly6_term(r2, sp),
                            Some(dp) => crate::kernel::cubic_w(r2, sp, dp),
                        };
                    }
                });
                match dfsph {
                    None => fp.rest_density / (poly6_norm * sum),
                    Some(_) => fp.rest_density / sum,
                }
            })
            .collect();
        for (j, &i) in order.iter().enumerate() {
            boundary.rest_psi[i] = psi[j];
        }
        boundary.psi = psi;
        Some(boundary)
    }

    /// Whether any obstacle moves.
    pub fn moves(&self) -> bool {
        self.motions.iter().any(Option::is_some)
    }

    /// Puts the moving obstacles where they are at time `t` (s) and rebuilds the boundary grid;
    /// nothing happens when none moves.
    pub fn place(&mut self, t: f64) {
        if self.moves() {
            self.arrange(t);
        }
    }

    /// Places every particle at time `t`, sorts them into the grid (a counting sort by slot,
    /// stable in sampling order) and returns the sampling index of each slot-order particle.
    fn arrange(&mut self, t: f64) -> Vec<usize> {
        let poses: Vec<_> = self
            .motions
            .iter()
            .map(|m| m.as_ref().map(|m| m.pose(t)))
            .collect();
        let (world, vel): (Vec<Vec3>, Vec<Vec3>) = self
            .rest
            .iter()
            .zip(&self.owner)
            .map(|(&x0, &o)| match &poses[o as usize] {
                Some(pose) => pose.place(x0),
                None => (x0, Vec3::ZERO),
            })
            .unzip();
        let b = world.len();
        let mask = self.params.table_mask;
        let slots: Vec<u32> = world
            .iter()
            .map(|p| hash_cell(cell_of(*p, self.inv_h), mask))
            .collect();
        let mut slot_start = vec![0u32; mask as usize + 2];
        for &s in &slots {
            slot_start[s as usize + 1] += 1;
        }
        for i in 0..=mask as usize {
            slot_start[i + 1] += slot_start[i];
        }
        let mut next = slot_start.clone();
        let mut order = vec![0usize; b];
        for (i, &s) in slots.iter().enumerate() {
            order[next[s as usize] as usize] = i;
            next[s as usize] += 1;
        }
        self.pos = order.iter().map(|&i| world[i]).collect();
        self.vel = order.iter().map(|&i| vel[i]).collect();
        self.slip = order.iter().map(|&i| self.rest_slip[i]).collect();
        self.psi = order.iter().map(|&i| self.rest_psi[i]).collect();
        self.slot_start = slot_start;
        let h = self.h;
        let lo = self.pos.iter().copied().fold(Vec3::INFINITY, Vec3::min) - h;
        let hi = self.pos.iter().copied().fold(Vec3::NEG_INFINITY, Vec3::max) + h;
        self.params.lo = lo.extend(0.0).to_array();
        self.params.hi = hi.extend(0.0).to_array();
        self.params.count = b as u32;
        order
    }

    /// Whether `x` lies within the boundary particles' bounding box grown by h (only there
    /// can one be within h).
    #[inline]
    pub fn near(&self, x: Vec3) -> bool {
        let p = &self.params;
        let (lo, hi) = (Vec3::from_slice(&p.lo[..3]), Vec3::from_slice(&p.hi[..3]));
        x.cmpge(lo).all() && x.cmple(hi).all()
    }

    /// Calls `visit(b, r²)` for every boundary particle b within h of `x`, in walk order.
    #[inline]
    pub fn walk(&self, x: Vec3, sp: &SimParams, mut visit: impl FnMut(usize, f32)) {
        let p = &self.params;
        if !self.near(x) {
            return;
        }
        let (qlo, qhi): (IVec3, IVec3) = query_range(x, sp.h, sp.inv_h);
        walk_slots(qlo, qhi, &self.slot_start, p.table_mask, |a, b| {
            for k in a as usize..b as usize {
                let r2 = distance2(x, self.pos[k]);
                if r2 < sp.h2 {
                    visit(k, r2);
                }
            }
        });
    }

    // The pair terms, one per quantity a solver sums (WGSL twins of the same names with a
    // `boundary_` prefix in shaders/boundary.wgsl): b is the boundary particle, d = x − x_b,
    // r2 = |d|², g the kernel's gradient factor (∇W = g d) and w its value, each the stage's
    // own kernel. Worked example: ψ_b = 2, g = −3, d = (0.5, 0, 0): grad = (−3, 0, 0).

    /// Density (Akinci eq. 6): ψ_b W.
    #[inline]
    pub fn weight(&self, b: usize, w: f32) -> f32 {
        self.psi[b] * w
    }

    /// The density's gradient sum (DFSPH's α): ψ_b ∇W.
    #[inline]
    pub fn grad(&self, b: usize, d: Vec3, g: f32) -> Vec3 {
        d * (self.psi[b] * g)
    }

    /// The density change rate: ψ_b (v − v_b)·∇W, v_b the surface's velocity.
    #[inline]
    pub fn rate(&self, b: usize, d: Vec3, g: f32, v: Vec3) -> f32 {
        let gv = d * (self.psi[b] * g);
        let dv = v - self.vel[b];
        dv.x * gv.x + dv.y * gv.y + dv.z * gv.z
    }

    /// DFSPH's pressure push with the particle's own stiffness ki = κ_i/ρ_i (eq. 10 with the
    /// particle's pressure mirrored onto the boundary), and its power against the surface's
    /// velocity.
    #[inline]
    pub fn pressure(&self, b: usize, d: Vec3, g: f32, ki: f32) -> (Vec3, f32) {
        let c = d * (self.psi[b] * g) * ki;
        let vb = self.vel[b];
        (c, c.x * vb.x + c.y * vb.y + c.z * vb.z)
    }

    /// The friction's ν = h c α / (2ρ) of a particle of density `rho` (Akinci eq. 13 with the
    /// fluid's artificial viscosity α; a free-slip obstacle's particles carry slip 0).
    #[inline]
    pub fn friction_nu(rho: f32, sp: &SimParams, fp: &FluidParams) -> f32 {
        sp.h * fp.sound_speed * fp.alpha / (2.0 * rho)
    }

    /// WCSPH's push (spiky gradient, r2 > 0) of a particle moving at `v` with own = p/ρ²:
    /// pressure (eq. 10) and friction Π_ib (eqs. 11–12) in one factor, and its power against
    /// the surface's velocity.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn push(
        &self,
        b: usize,
        d: Vec3,
        r2: f32,
        v: Vec3,
        own: f32,
        nu: f32,
        sp: &SimParams,
        fp: &FluidParams,
    ) -> (Vec3, f32) {
        let r = r2.sqrt();
        let w = sp.h - r;
        // Relative to the obstacle's surface (x − 0 keeps x's bits on a still one).
        let vb = self.vel[b];
        let u = v - vb;
        let approach = u.x * d.x + u.y * d.y + u.z * d.z;
        let friction = if approach < 0.0 {
            -(self.slip[b] * nu) * approach / (r2 + 0.01 * sp.h2)
        } else {
            0.0
        };
        let c = self.psi[b] * (own + friction) * fp.kernel_45 * w * w / r;
        (d * c, c * (d.x * vb.x + d.y * vb.y + d.z * vb.z))
    }

    /// Checks that the boundary fits the device: B particles of 16 + 4 bytes and T_b + 1 slot
    /// offsets within one storage binding.
    pub fn check_limits(&self, limits: &wgpu::Limits) -> Result<()> {
        let bytes = self.pos.len() as u64 * 16;
        let table = self.slot_start.len() as u64 * 4;
        let max = limits.max_storage_buffer_binding_size;
        if bytes > max || table > max {
            return Err(Error::LimitExceeded(format!(
                "the obstacles' {} boundary particles need {} B in one buffer, more than this adapter's max_storage_buffer_binding_size {max} B: use a larger spacing or smaller obstacles",
                self.pos.len(),
                bytes.max(table)
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpu::obstacles::obstacle_density;

    fn nearest_gap(points: &[Vec3]) -> f32 {
        points
            .iter()
            .map(|p| {
                points
                    .iter()
                    .filter(|q| *q != p)
                    .map(|q| p.distance(*q))
                    .fold(f32::INFINITY, f32::min)
            })
            .fold(0.0, f32::max)
    }

    #[test]
    fn surface_counts_bound_the_samples_without_making_them() {
        let s = 0.01;
        let cube = Shape::Box {
            min: [0.0; 3],
            max: [1.0; 3],
        };
        assert_eq!(surface_count(&cube, 0.5), 26.0);
        let sphere = Shape::Sphere {
            centre: [0.0; 3],
            radius: 1.0,
        };
        assert_eq!(surface_count(&sphere, 1.0), 16.0);
        for shape in [
            cube,
            sphere,
            Shape::Box {
                min: [0.1, 0.2, 0.3],
                max: [0.15, 0.27, 0.4],
            },
            Shape::Sphere {
                centre: [0.5; 3],
                radius: 0.037,
            },
            Shape::Cylinder {
                base: [0.5; 3],
                axis: Axis::Y,
                radius: 0.03,
                length: 0.1,
            },
        ] {
            let made = sample_surface(&shape, s).len() as f64;
            let counted = surface_count(&shape, s);
            match shape {
                Shape::Cylinder { .. } => assert!(counted >= made, "{counted} < {made}"),
                _ => assert_eq!(counted, made, "{shape:?}"),
            }
        }
        // A sphere of 5 km at 1 cm is refused by this count, not by the allocator.
        let huge = Shape::Sphere {
            centre: [0.0; 3],
            radius: 5000.0,
        };
        assert!(surface_count(&huge, s) > (1u64 << 27) as f64);
    }

    #[test]
    fn surfaces_are_sampled_at_most_s_apart_and_on_the_surface() {
        let s = 0.01;
        let shapes = [
            Shape::Box {
                min: [0.0, 0.0, 0.0],
                max: [0.1, 0.05, 0.033],
            },
            Shape::Sphere {
                centre: [0.0, 0.0, 0.0],
                radius: 0.05,
            },
            Shape::Cylinder {
                base: [0.0, 0.0, 0.0],
                axis: Axis::Z,
                radius: 0.03,
                length: 0.07,
            },
        ];
        for shape in &shapes {
            let pts = sample_surface(shape, s);
            assert!(pts.len() > 20, "{shape:?}");
            // Every point has a neighbour within s (no holes wider than s).
            assert!(
                nearest_gap(&pts) <= s * 1.01,
                "{shape:?}: {}",
                nearest_gap(&pts)
            );
            // No duplicates.
            let mut keys: Vec<[u32; 3]> =
                pts.iter().map(|p| p.to_array().map(f32::to_bits)).collect();
            keys.sort();
            keys.dedup();
            assert_eq!(keys.len(), pts.len(), "{shape:?}");
        }
        let sphere = sample_surface(&shapes[1], s);
        assert!(sphere.iter().all(|p| (p.length() - 0.05).abs() < 1e-6));
    }

    #[test]
    fn psi_normalises_the_boundary_to_rest_density_on_its_surface() {
        // Akinci eq. 5: at a boundary particle's own position the boundary alone contributes
        // Σ_b ψ_b W = ρ0 Σ_b W_ib / Σ_k W_ik = ρ0; it falls off with the distance from the
        // surface, to nothing beyond h.
        let s = 0.01;
        let cfg = crate::params::SphConfig::for_fluid(
            1000,
            crate::params::ConfigOverrides {
                spacing: Some(s),
                ..Default::default()
            },
        )
        .unwrap();
        let sp = cfg.sim_params();
        let fp = crate::params::PhysicsConfig::default()
            .fluid_params(&cfg, Vec3::splat(-1.0), Vec3::splat(1.0), 0.1)
            .unwrap();
        let plate = Obstacle {
            shape: Shape::Box {
                min: [-0.2, -0.05, -0.2],
                max: [0.2, 0.0, 0.2],
            },
            slip: Slip::NoSlip,
            motion: None,
        };
        let b = Boundary::new(&[plate], s, &sp, &fp).unwrap();
        let on = b
            .pos
            .iter()
            .copied()
            .min_by(|p, q| p.length().total_cmp(&q.length()))
            .unwrap();
        let heights = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0].map(|k| on + Vec3::Y * (k * s));
        let (rho, _) = obstacle_density(&heights, &[0.0; 6], &b, &sp, &fp);
        assert!((rho[0] / fp.rest_density - 1.0).abs() < 1e-5, "{rho:?}");
        assert!(rho.windows(2).all(|w| w[1] < w[0]), "{rho:?}");
        assert_eq!(rho[5], 0.0, "{rho:?}");
    }
}
