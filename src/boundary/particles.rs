//! Obstacles as boundary particles (Akinci, Ihmsen, Akinci, Solenthaler & Teschner,
//! "Versatile Rigid-Fluid Coupling for Incompressible SPH", ACM TOG 31(4), 2012): the particles,
//! their volumes and their grid. The stages' walks let the fluid feel them (`dfsph_density`,
//! `dfsph_rate`, `dfsph_pressure`, `dfsph_accel`, both solvers; `shaders/boundary.wgsl` is the
//! GPU's side).
//!
//! An obstacle's surface is sampled with particles at a spacing no larger than the fluid's s
//! (on the scene side: `crate::obstacle::sample_surface`), one [`Body`] per obstacle. Each boundary particle b gets a volume from its own boundary
//! neighbourhood, V_b = 1 / Σ_k W(x_b − x_k) (Akinci eq. 4: densely sampled parts of the surface
//! count less per particle), and stands for the fluid mass ψ_b = ρ0 V_b (eq. 5). Then:
//! - density (eq. 6): ρ_i += Σ_b ψ_b W(x_i − x_b), with the run's kernel, the fluid's own
//!   density's, so a fluid particle at a wall sees about the density of the interior;
//! - pressure force (eq. 10): a_i += −ψ_b (p_i / ρ_i²) ∇W(x_i − x_b) (the stages apply it as
//!   κ_i/ρ_i, p_i = κ_i ρ_i);
//! - friction, both solvers: the standard SPH viscosity (Monaghan 2005, "Smoothed particle
//!   hydrodynamics", Rep. Prog. Phys. 68, eq. 6.6; the boundary term SPlisHSPlasH's
//!   Viscosity_Standard adds) of the obstacle's own kinematic viscosity ν_b, with the
//!   boundary particle's volume ψ_b/ρ0 where a fluid neighbour has m/ρ_j:
//!   a_i += 10 ν_b (ψ_b/ρ0) (v_ib · x_ib) / (|x_ib|² + 0.01 h²) ∇W(x_i − x_b) over every pair,
//!   v_ib = v_i − v_b with v_b the obstacle surface's velocity (zero on a still obstacle;
//!   `crate::motion` moves the others). ν_b = 0 (the default) is free slip; ν_b equal to
//!   the fluid's viscosity makes the obstacle a no-slip wall for that fluid. Each particle
//!   carries f_b = 10 ν_b/ρ0 ([`Boundary::friction`]). Akinci et al.'s own friction
//!   (eqs. 11–13) took ν from the artificial viscosity α, which DFSPH does not have.
//!
//! The boundary particles live in a grid of their own: the fluid's cells and hash (inv_h,
//! the prime-XOR hash) in a table of T_b slots, built on the host: once for still obstacles,
//! and again before every step while one moves ([`Boundary::place`]: the pose comes from the
//! run's time, which only the host knows before the step). Each fluid particle walks the 27
//! cells around it in that grid, each slot once, in the fluid walk's order
//! (`grid::key::walk_slots`), and only when it lies within h of the obstacles' bounding box.
//! The tank keeps its mirror walls.
//!
//! Worked example, Wendland C2, h = 1, ρ0 = 1: a lone boundary particle has Σ_k W = W(0) =
//! 21/(2π) = 3.3423, so ψ = 0.29920; a fluid particle 0.5 away gains density ψ W(0.5) =
//! ψ W(0) (1 − q)⁴ (1 + 4q) = 0.1875 (q = 0.5).

use glam::{IVec3, Vec3};
use rayon::prelude::*;

use crate::grid::key::{cell_of, distance2, hash_cell, query_range_of, walk_slots};
use crate::params::{FluidParams, SimParams};
use crate::{Error, Result};

/// One rigid body's boundary particles, as the scene side sampled them.
#[derive(Clone, Debug, PartialEq)]
pub struct Body {
    /// Where its particles are at t = 0.
    pub points: Vec<Vec3>,
    /// Its friction f = 10 ν_b/ρ0 from its kinematic viscosity ν_b (m²/s; 0: free slip), the
    /// standard viscosity's factor over ρ0 (see the module doc).
    pub friction: f32,
    /// Its prescribed motion, if it ever moves.
    pub motion: Option<crate::motion::Motion>,
}

/// The obstacles' block (`shaders/boundary.wgsl` `ObstacleParams`), at the head of their grid's
/// storage buffer on the GPU.
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
    #[doc(hidden)]
    pub _pad: [f32; 2],
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
    /// Friction f_b = 10 ν_b/ρ0 of each particle's obstacle (0: free slip).
    pub friction: Vec<f32>,
    /// Start of each slot's particles (T_b + 1).
    pub slot_start: Vec<u32>,
    /// The stages' uniform block.
    pub params: ObstacleParams,
    /// In sampling order: each particle's position at t = 0, its obstacle, ψ and friction.
    rest: Vec<Vec3>,
    owner: Vec<u32>,
    rest_psi: Vec<f32>,
    rest_friction: Vec<f32>,
    /// Each obstacle's motion, `None` for a still one.
    motions: Vec<Option<crate::motion::Motion>>,
    h: f32,
    inv_h: f32,
}

impl Boundary {
    /// Sorts the particles of `bodies` into their grid and gives each its ψ, for the fluid of
    /// `sp` (h) and `fp` (ρ0) under `solver`. `None` when they have no particle. The scene
    /// side samples the bodies (`crate::obstacle::boundary`).
    ///
    /// ψ comes from the particle's own rigid body (Akinci eq. 4): the still bodies together
    /// form one, each moving body its own, so ψ stays valid however they move. ψ_b must make a
    /// boundary particle weigh in the density as the fluid it stands for, with the kernel that
    /// density uses, the run's: ψ_b = ρ0 / Σ_k W(x_b − x_k).
    pub fn from_bodies(bodies: &[Body], sp: &SimParams, fp: &FluidParams) -> Option<Self> {
        let mut rest = Vec::new();
        let mut owner = Vec::new();
        let mut rest_friction = Vec::new();
        for (k, body) in bodies.iter().enumerate() {
            rest_friction.extend(std::iter::repeat_n(body.friction, body.points.len()));
            owner.extend(std::iter::repeat_n(k as u32, body.points.len()));
            rest.extend_from_slice(&body.points);
        }
        if rest.is_empty() {
            return None;
        }
        let b = rest.len();
        let table = (2 * b).next_power_of_two().max(1) as u32;
        let motions: Vec<_> = bodies.iter().map(|b| b.motion).collect();
        let mut boundary = Self {
            pos: Vec::new(),
            vel: Vec::new(),
            psi: Vec::new(),
            friction: Vec::new(),
            slot_start: Vec::new(),
            params: ObstacleParams {
                table_mask: table - 1,
                ..Default::default()
            },
            rest_psi: vec![0.0; b],
            rest,
            owner,
            rest_friction,
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
        // ψ_b = ρ0 / Σ_k W, over the boundary neighbours of its own body (self included).
        let psi: Vec<f32> = (0..b)
            .into_par_iter()
            .map(|i| {
                let mut sum = 0.0f32;
                boundary.walk(boundary.pos[i], sp, |k, r2| {
                    if body[k] == body[i] {
                        sum += crate::kernel::w(r2, sp);
                    }
                });
                fp.rest_density / sum
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
        self.friction = order.iter().map(|&i| self.rest_friction[i]).collect();
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
        let (qlo, qhi): (IVec3, IVec3) = query_range_of(x, sp);
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

    /// Whether any obstacle has friction (ν_b > 0): only then do DFSPH's viscous passes walk
    /// the boundary.
    pub fn has_friction(&self) -> bool {
        self.rest_friction.iter().any(|&f| f > 0.0)
    }

    /// DFSPH's friction (Wendland gradient factor g, r2 > 0) on a particle moving at `v`: the
    /// module doc's standard viscosity, ψ_b f_b (v_ib·x_ib)/(r² + 0.01h²) g d as
    /// `dfsph_accel` adds a fluid pair's; returns that acceleration, its coefficient's share
    /// of the row sum S (c r², c = ψ_b f_b g/(r² + 0.01h²)), and its power against the
    /// surface's velocity. Worked example, ψ_b f_b = 1, h = 1, g = −1, d = (0.5, 0, 0), a
    /// still obstacle, the particle moving at v = (−1, 0, 0) towards it: v_ib·x_ib = −0.5,
    /// c = −1/0.26 = −3.85, a = d (c · −0.5) = (0.96, 0, 0), against its motion; share 0.96.
    #[inline]
    pub fn viscous(
        &self,
        b: usize,
        d: Vec3,
        r2: f32,
        g: f32,
        v: Vec3,
        sp: &SimParams,
    ) -> (Vec3, f32, f32) {
        let vb = self.vel[b];
        let u = v - vb;
        let vx = u.x * d.x + u.y * d.y + u.z * d.z;
        let c = self.psi[b] * self.friction[b] / (r2 + 0.01 * sp.h2) * g;
        let a = d * (c * vx);
        (a, c * r2, a.x * vb.x + a.y * vb.y + a.z * vb.z)
    }

    /// Checks that the boundary fits the device: B particles of 16 + 4 bytes and T_b + 1 slot
    /// offsets within one storage binding.
    pub fn check_limits(&self, limits: &wgpu::Limits) -> Result<()> {
        // (xyz, ψ) and (velocity, friction) of each, 16 B apiece, in one buffer.
        let bytes = self.pos.len() as u64 * 32;
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
    use crate::params::{ConfigOverrides, PhysicsConfig, SphConfig};

    /// A boundary of one still particle at the origin with ψ_b f_b = 1, for h = 1.
    fn lone(friction: f32) -> (Boundary, SimParams, FluidParams) {
        let cfg = SphConfig::new(
            1,
            ConfigOverrides {
                smoothing_radius: Some(1.0),
                spacing: Some(0.5),
                ..Default::default()
            },
        )
        .unwrap();
        let sp = cfg.sim_params();
        let fp = PhysicsConfig::default()
            .fluid_params(&cfg, Vec3::splat(-2.0), Vec3::splat(2.0), 1.0)
            .unwrap();
        let body = Body {
            points: vec![Vec3::ZERO],
            friction,
            motion: None,
        };
        let mut b = Boundary::from_bodies(&[body], &sp, &fp).unwrap();
        b.psi = vec![1.0];
        (b, sp, fp)
    }

    #[test]
    fn dfsph_friction_worked_example() {
        let (b, sp, _) = lone(1.0);
        let d = Vec3::new(0.5, 0.0, 0.0);
        let (a, share, power) = b.viscous(0, d, 0.25, -1.0, Vec3::new(-1.0, 0.0, 0.0), &sp);
        let c = -1.0 / 0.26f32;
        assert!(
            (a.x - 0.5 * c * -0.5).abs() < 1e-6 && a.y == 0.0 && a.z == 0.0,
            "{a}"
        );
        assert!(a.x > 0.0, "the friction opposes the approach");
        assert!((share - c * 0.25).abs() < 1e-6, "{share}");
        assert_eq!(power, 0.0, "a still obstacle does no work");
    }
}
