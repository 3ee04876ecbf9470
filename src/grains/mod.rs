//! Colliding spheres (`--model grains`): a discrete-element step (Cundall & Strack, "A discrete
//! numerical model for granular assemblies", Géotechnique 29, 1979) on the SPH step's spatial
//! hash, with every stage on the GPU and a CPU mirror here, bit-exact under `--verify`.
//!
//! A step: the grid (hash, scan, scatter, order, reorder, as the fluid's, with cells one
//! largest diameter wide so every sphere that can touch another lies in its 27 cells), then
//! [`contacts`] (shaders/grains/grain_contacts.wgsl) and [`integrate`]
//! (shaders/grains/grain_integrate.wgsl). The state is the GPU's: positions as (x, y, z, radius),
//! velocities as (vx, vy, vz, mass).
//!
//! The contact model, per pair with overlap δ = r_i + r_j − |x_i − x_j| > 0:
//! - normal: a linear spring–dashpot, F_n = max(k δ − c v_n, 0) with v_n the relative normal
//!   velocity (> 0 separating), c = 2ζ√(m* k), m* = m_i m_j/(m_i + m_j). The force never pulls
//!   (Schwager & Pöschel, "Coefficient of restitution and linear–dashpot model revisited",
//!   Granular Matter 2007): unclipped, the dashpot pulls a separating pair back, and spheres hung
//!   from the tank's ceiling. Clipped, a head-on contact ends when the force returns to zero,
//!   and ζ comes from the coefficient of restitution e by inverting their e(ζ)
//!   ([`restitution_of`]), not by the unclipped model's ζ = −ln e/√(π² + ln² e).
//!   Two corrections make the explicit step rebound with that e (measured head on in
//!   tests/suite/grains.rs; uncorrected, 10% low at e = 0.2 with dt = t_c/20, and scattered ±3% at
//!   e = 0.4 with dt = t_c/50 by the step's phase at first touch):
//!   the dashpot acts as c' = c/(1 + c dt/(2m*)), so a step damps by the trapezoidal rule's
//!   (1 − c dt/2m*)/(1 + c dt/2m*), exact to third order where c's 1 − c dt/m* is exact to
//!   first; and a contact that began within the last step (v_n < −δ/dt: in the symplectic step
//!   v_n is exactly the last step's (x_n − x_(n−1))/dt, so δ/|v_n| is how long ago it began)
//!   damps at v_n − δ/dt, adding the impulse c δ of the part of that step it missed;
//! - tangential: a viscous force −2√(m* k) v_t (the normal spring's critical damping, so sliding
//!   stops within about one contact time) capped by the Coulomb limit μ|F_n|, no contact history;
//! - walls: the tank's six planes as contacts with an infinitely heavy body (m* = m_i), damped
//!   from the walls' restitution;
//! - gravity. Spheres translate only: no rotation.
//!
//! Default stiffness: the pile's weight. The grains, packed at a solid fraction φ = 0.6 on the
//! tank's floor, stand H = V/(φA) high; the largest sphere at the bottom carries the column
//! above its cross-section (2r_max)², φρ g H (2r_max)², and force chains in granular packings
//! carry up to about three times the mean contact force (Mueth, Jaeger & Nagel 1998), so
//! k = 3 φρ g H (2r_max)² / (0.01 r_min) keeps the deepest resting overlap near 1% of the
//! smallest radius. Default time step: a fiftieth of the shortest contact's duration
//! t_c = π √(m*/k) (two of the smallest spheres), the fine end of the t_c/10 – t_c/50 that DEM
//! practice uses (O'Sullivan & Bray 2004), and finer for strong damping ([`default_dt`]): the
//! explicit dashpot's rebound error is first order in ζ ω dt (head on at t_c/50: 0.2% low at
//! e = 0.9, 1.1% at 0.5, 1.7% at 0.3, 2.1% at 0.2, 3.5% at 0.05; halving dt halves each), so
//! steps per contact grow with ζ beyond e = 0.3's.

use std::f64::consts::PI;

use bytemuck::{Pod, Zeroable};
use glam::{Vec3, Vec4, Vec4Swizzles};
use rand::rngs::Xoshiro256PlusPlus;
use rand::{RngExt, SeedableRng};
use rayon::prelude::*;
use serde::Serialize;

pub mod check;
pub mod gpu;

use crate::grid::Grid;
use crate::grid::walk::walk;
use crate::params::{SimParams, default_table_size, group_size, validate_table_size};
use crate::{Error, Result};

/// Solid fraction of a random pile, for the default stiffness (random loose to close packing
/// spans 0.55 – 0.64).
pub const PACKING: f64 = 0.6;
/// The same for discs in 2D: random close packing of equal discs covers 0.82 of the plane
/// (Berryman, "Random close packing of hard spheres and disks", Phys. Rev. A 27, 1983).
pub const PACKING_2D: f64 = 0.82;
/// The smallest coefficient of restitution: e = 0.01 takes ζ ≈ 5, and the explicit step damps
/// stably only while c dt/m* = 2ζ ω dt < 2 (ζ < 16 at the default dt).
pub const MIN_RESTITUTION: f32 = 0.01;
/// Contact durations per default time step.
pub const STEPS_PER_CONTACT: f64 = 50.0;
/// The resting overlap the default stiffness aims at, as a fraction of the smallest radius.
pub const TARGET_OVERLAP: f64 = 0.01;
/// Force-chain factor of the default stiffness: the largest contact force over the mean.
pub const FORCE_CHAIN: f64 = 3.0;

/// The uniform block of the grain stages. Must match `struct GrainParams` in
/// `shaders/common.wgsl` field for field.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable, Serialize)]
pub struct GrainParams {
    /// Lower corner of the tank (w unused).
    pub tank_min: [f32; 4],
    /// Upper corner of the tank (w unused).
    pub tank_max: [f32; 4],
    /// Gravity (w unused).
    pub gravity: [f32; 4],
    /// Normal spring stiffness k, N/m.
    pub stiffness: f32,
    /// Damping ratio of sphere–sphere contacts.
    pub contact_zeta: f32,
    /// Damping ratio of sphere–wall contacts.
    pub wall_zeta: f32,
    /// Coulomb friction coefficient μ.
    pub friction: f32,
    /// Time step, s.
    pub dt: f32,
    /// Number of obstacles (the `obstacles` buffer holds at least one entry).
    pub obstacles: u32,
    #[doc(hidden)]
    pub _pad: [u32; 2],
}

/// A still solid in the tank as the contact stage sees it (`struct GrainObstacle` in
/// shaders/grains/grain_contacts.wgsl): a box (`kind` 0: corners `a`, `b`), a ball (1: centre
/// `a.xyz`, radius `a.w`) or a cylinder (2: base centre `a.xyz`, radius `a.w`, length `b.x` along
/// axis `axis`, 0 = x, 1 = y, 2 = z).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Pod, Zeroable, Serialize)]
pub struct GrainObstacle {
    /// First parameter vector (see the type).
    pub a: [f32; 4],
    /// Second parameter vector.
    pub b: [f32; 4],
    /// 0 box, 1 ball, 2 cylinder.
    pub kind: u32,
    /// The cylinder's axis.
    pub axis: u32,
    #[doc(hidden)]
    pub _pad: [u32; 2],
}

impl GrainObstacle {
    /// The contact form of a scene obstacle; meshes and moving obstacles are not contacts yet.
    pub fn from_obstacle(o: &crate::obstacle::Obstacle, at: &str) -> Result<Self> {
        use crate::scene::Shape;
        if o.moving().is_some() {
            return Err(Error::InvalidInput(format!(
                "{at}: a moving obstacle is not a contact for --model grains yet: drop its motion or use --model fluid"
            )));
        }
        Ok(match o.shape {
            Shape::Box { min, max } => Self {
                a: Vec3::from(min).extend(0.0).to_array(),
                b: Vec3::from(max).extend(0.0).to_array(),
                kind: 0,
                ..Default::default()
            },
            Shape::Sphere { centre, radius } => Self {
                a: Vec3::from(centre).extend(radius).to_array(),
                kind: 1,
                ..Default::default()
            },
            Shape::Cylinder {
                base,
                axis,
                radius,
                length,
            } => Self {
                a: Vec3::from(base).extend(radius).to_array(),
                b: [length, 0.0, 0.0, 0.0],
                kind: 2,
                axis: axis.index() as u32,
                ..Default::default()
            },
            Shape::Mesh { ref file, .. } => {
                return Err(Error::InvalidInput(format!(
                    "{at}: mesh obstacle {file:?} is not a contact for --model grains yet (boxes, balls and cylinders are): use --model fluid for it"
                )));
            }
            Shape::Polygon { .. } => {
                return Err(Error::InvalidInput(format!(
                    "{at}: a polygon is a fluid body's shape, not an obstacle: use boxes, balls and cylinders"
                )));
            }
        })
    }
}

/// +1 for x ≥ 0, else −1.
#[inline]
fn sign(x: f32) -> f32 {
    if x >= 0.0 { 1.0 } else { -1.0 }
}

/// x where positive, else +0 (never −0, so that both sides agree to the bit).
#[inline]
fn pos(x: f32) -> f32 {
    if x > 0.0 { x } else { 0.0 }
}

#[inline]
fn len3(v: Vec3) -> f32 {
    (v.x * v.x + v.y * v.y + v.z * v.z).sqrt()
}

/// The signed distance from `p` to the surface of `o` (negative inside) and the unit outward
/// normal there: `obstacle_gap` of shaders/grains/grain_contacts.wgsl, operation for operation.
/// Outside a box or a cylinder the normal points from the nearest surface point to `p`; inside, out
/// through the nearest face (ties: x before y before z, the side before the caps).
pub fn obstacle_gap(o: &GrainObstacle, p: Vec3) -> (f32, Vec3) {
    let a = Vec3::from_slice(&o.a[..3]);
    match o.kind {
        0 => {
            let b = Vec3::from_slice(&o.b[..3]);
            let c = (a + b) * 0.5;
            let half = (b - a) * 0.5;
            let d = p - c;
            let q = d.abs() - half;
            let s = Vec3::new(sign(d.x), sign(d.y), sign(d.z));
            let out = Vec3::new(pos(q.x), pos(q.y), pos(q.z));
            let lo = len3(out);
            if lo > 0.0 {
                (lo, s * out / lo)
            } else if q.x >= q.y && q.x >= q.z {
                (q.x, Vec3::new(s.x, 0.0, 0.0))
            } else if q.y >= q.z {
                (q.y, Vec3::new(0.0, s.y, 0.0))
            } else {
                (q.z, Vec3::new(0.0, 0.0, s.z))
            }
        }
        1 => {
            let d = p - a;
            let l = len3(d);
            if l > 0.0 {
                (l - o.a[3], d / l)
            } else {
                (-o.a[3], Vec3::Y)
            }
        }
        _ => {
            let ax = Vec3::new(
                if o.axis == 0 { 1.0 } else { 0.0 },
                if o.axis == 1 { 1.0 } else { 0.0 },
                if o.axis == 2 { 1.0 } else { 0.0 },
            );
            let d = p - a;
            let along = d.x * ax.x + d.y * ax.y + d.z * ax.z;
            let across = d - ax * along;
            let ra = len3(across);
            let half = o.b[0] * 0.5;
            let from_mid = along - half;
            let qx = ra - o.a[3];
            let qy = from_mid.abs() - half;
            // Radially out: `across` over its length, or any direction across the axis on it.
            let radial = if ra > 0.0 {
                across / ra
            } else {
                Vec3::new(ax.y + ax.z, ax.x, 0.0)
            };
            let cap = ax * sign(from_mid);
            let (ox, oy) = (pos(qx), pos(qy));
            let lo = (ox * ox + oy * oy).sqrt();
            if lo > 0.0 {
                (lo, radial * (ox / lo) + cap * (oy / lo))
            } else if qx >= qy {
                (qx, radial)
            } else {
                (qy, cap)
            }
        }
    }
}

/// What the user chooses (flags or scene); `None` means derived.
#[derive(Clone, Debug)]
pub struct GrainConfig {
    /// Number of spheres poured.
    pub particles: u32,
    /// Largest radius, m.
    pub radius: f32,
    /// Largest over smallest radius (1: all equal); radii are uniform in between.
    pub ratio: f32,
    /// Material density, kg/m³.
    pub density: f32,
    /// Normal stiffness k, N/m [default: from the pile's weight, see the module doc].
    pub stiffness: Option<f32>,
    /// Restitution of sphere–sphere contacts, 0..1.
    pub restitution: f32,
    /// Restitution of sphere–wall contacts, 0..1.
    pub wall_restitution: f32,
    /// Coulomb friction coefficient.
    pub friction: f32,
    /// Time step, s [default: t_c / 50, finer below e = 0.3, see `default_dt`].
    pub dt: Option<f32>,
    /// Gravity along y, m/s².
    pub gravity: f32,
    /// Hash table size [default: next power of two ≥ 2N].
    pub table_size: Option<u32>,
    /// Seed of the radii and the pour's jitter.
    pub seed: u64,
    /// 3: spheres; 2: discs in the plane z = 0, masses and forces per metre of depth.
    pub dim: u32,
}

impl Default for GrainConfig {
    fn default() -> Self {
        Self {
            particles: 20_000,
            radius: 0.004,
            ratio: 1.0,
            density: 2500.0,
            stiffness: None,
            restitution: 0.5,
            wall_restitution: 0.5,
            friction: 0.5,
            dt: None,
            gravity: -9.81,
            table_size: None,
            seed: 0,
            dim: 3,
        }
    }
}

fn positive(v: f32, what: &str, fix: &str) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "{what} must be a positive finite number, got {v}: {fix}"
        )))
    }
}

fn unit(v: f32, what: &str) -> Result<()> {
    if (MIN_RESTITUTION..=1.0).contains(&v) {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "{what} must lie in {MIN_RESTITUTION}..1, got {v}: 1 rebounds elastically, and below {MIN_RESTITUTION} the dashpot grows too stiff for the explicit step (e → 0 needs ζ → ∞)"
        )))
    }
}

impl GrainConfig {
    /// Checks every value, naming the flag and the fix.
    pub fn validate(&self) -> Result<()> {
        if self.particles == 0 {
            return Err(Error::InvalidInput(
                "--particles must be at least 1 for --model grains".into(),
            ));
        }
        // The derived stiffness and time step scale with powers of the radius and density:
        // outside these ranges they overflow or vanish in f32, and the message would blame
        // --contact-stiffness and --dt.
        if !(1e-6..=10.0).contains(&self.radius) {
            return Err(Error::InvalidInput(format!(
                "--grain-radius must be 1e-6 to 10 m, got {}: give the largest radius in m, e.g. 0.004",
                self.radius
            )));
        }
        if !(1.0..=1e5).contains(&self.density) {
            return Err(Error::InvalidInput(format!(
                "--grain-density must be 1 to 1e5 kg/m³, got {}: give kg/m³, e.g. 2500 for glass",
                self.density
            )));
        }
        if !(self.ratio.is_finite() && (1.0..=64.0).contains(&self.ratio)) {
            return Err(Error::InvalidInput(format!(
                "--grain-ratio must lie in 1..64 (largest over smallest radius), got {}",
                self.ratio
            )));
        }
        if let Some(k) = self.stiffness {
            positive(
                k,
                "--contact-stiffness",
                "give N/m, or leave it out for the default",
            )?;
        }
        unit(self.restitution, "--contact-restitution")?;
        unit(self.wall_restitution, "--restitution")?;
        if !(self.friction.is_finite() && self.friction >= 0.0) {
            return Err(Error::InvalidInput(format!(
                "--contact-friction must be a finite number ≥ 0, got {}",
                self.friction
            )));
        }
        if let Some(dt) = self.dt {
            positive(
                dt,
                "--dt",
                "give seconds, or leave it out for the default (t_c/50, finer for strong damping)",
            )?;
        }
        if !self.gravity.is_finite() {
            return Err(Error::InvalidInput(format!(
                "--gravity must be finite, got {}",
                self.gravity
            )));
        }
        if let Some(t) = self.table_size {
            validate_table_size(t)?;
        }
        if !matches!(self.dim, 2 | 3) {
            return Err(Error::InvalidInput(format!(
                "--dim must be 2 or 3, got {}",
                self.dim
            )));
        }
        Ok(())
    }

    /// The smallest radius.
    pub fn smallest(&self) -> f32 {
        self.radius / self.ratio
    }

    /// A radius uniform in [r_max/ratio, r_max] from `rng` (r_max itself, drawing nothing,
    /// when all are equal).
    fn draw_radius(&self, rng: &mut Xoshiro256PlusPlus) -> f32 {
        let (r_min, r_max) = (self.smallest(), self.radius);
        if r_max > r_min {
            rng.random_range(r_min..r_max)
        } else {
            r_max
        }
    }
}

/// The damping ratio of a linear spring–dashpot whose head-on collisions rebound with
/// restitution `e` (ζ = −ln e / √(π² + ln² e); e = 0 is critical damping).
pub fn damping_ratio(e: f32) -> f32 {
    if e >= 1.0 {
        return 0.0;
    }
    let target = (e as f64).max(MIN_RESTITUTION as f64);
    // e(ζ) falls monotonically from 1 at ζ = 0 towards 0 as ζ → ∞ (e ≈ 1/(4ζ²) there): bisect
    // in ζ over [0, 100], where e(100) = 2.5e-5 lies below any accepted e.
    let (mut lo, mut hi) = (0.0f64, 100.0f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if restitution_of(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (0.5 * (lo + hi)) as f32
}

/// The coefficient of restitution of a linear spring–dashpot contact of damping ratio ζ whose
/// force is never attractive (Schwager & Pöschel 2007): the contact ends when the force
/// k δ + c δ̇ returns to zero, at t_e, and e = exp(−ζω t_e) in every regime, with ω t_e =
/// (π − atan2(2ζs, 1 − 2ζ²))/s, s = √(1 − ζ²) below critical damping, 2 at ζ = 1, and
/// ln((ζ + s)/(ζ − s))/s, s = √(ζ² − 1), above.
pub fn restitution_of(zeta: f64) -> f64 {
    let z = zeta;
    let wt = if z < 1.0 - 1e-9 {
        let s = (1.0 - z * z).sqrt();
        (PI - (2.0 * z * s).atan2(1.0 - 2.0 * z * z)) / s
    } else if z > 1.0 + 1e-9 {
        let s = (z * z - 1.0).sqrt();
        ((z + s) / (z - s)).ln() / s
    } else {
        2.0
    };
    (-z * wt).exp()
}

/// Mass of a sphere of radius `r` and density `rho`.
pub fn sphere_mass(r: f32, rho: f32) -> f32 {
    (rho as f64 * 4.0 / 3.0 * PI * (r as f64).powi(3)) as f32
}

/// Mass of a grain of radius `r` and density `rho` in `dim` dimensions: a sphere's, or in 2D a
/// disc's per metre of depth, ρ π r² (kg/m), so forces, stiffness and energies are per metre
/// of depth as the 2D fluid's are.
pub fn grain_mass(r: f32, rho: f32, dim: u32) -> f32 {
    match dim {
        2 => (rho as f64 * PI * (r as f64).powi(2)) as f32,
        _ => sphere_mass(r, rho),
    }
}

/// A set of spheres and the uniform blocks that step them.
#[derive(Clone, Debug)]
pub struct GrainSetup {
    /// Positions (x, y, z, radius), input order.
    pub pos: Vec<Vec4>,
    /// Velocities (vx, vy, vz, mass), input order.
    pub vel: Vec<Vec4>,
    /// The grid's block: cells one largest diameter wide.
    pub sim: SimParams,
    /// The contact block.
    pub grain: GrainParams,
    /// Still obstacles, contacts as the walls are (`grain.obstacles` of them).
    pub obstacles: Vec<GrainObstacle>,
    /// Their shapes as the scene gives them, for the viewer to draw.
    pub shapes: Vec<crate::scene::Shape>,
}

/// Refuses a configuration, spheres or tank [`GrainSetup::new`] cannot start from, in one
/// line each: not one radius and velocity per centre, a tank not finite and open, a disc off
/// the plane of a 2D run, a sphere not finite or outside the tank.
fn check_spheres(
    cfg: &GrainConfig,
    centres: &[Vec3],
    radii: &[f32],
    velocities: &[Vec3],
    lo: Vec3,
    hi: Vec3,
) -> Result<()> {
    cfg.validate()?;
    let n = centres.len();
    if n == 0 || radii.len() != n || velocities.len() != n {
        return Err(Error::InvalidInput(
            "grains: give one radius and one velocity per centre, at least one sphere".into(),
        ));
    }
    if !(lo.is_finite() && hi.is_finite() && hi.cmpgt(lo).all()) {
        return Err(Error::InvalidInput(format!(
            "the tank {lo} – {hi} must be finite with max above min on every axis"
        )));
    }
    let planar = cfg.dim == 2;
    if planar && let Some(k) = centres.iter().position(|c| c.z != 0.0) {
        return Err(Error::InvalidInput(format!(
            "disc {k} at {} lies off the plane z = 0 of a 2D run (--dim 2): give it z = 0",
            centres[k]
        )));
    }
    for (k, (&c, &r)) in centres.iter().zip(radii).enumerate() {
        if !(c.is_finite() && r.is_finite() && r > 0.0 && velocities[k].is_finite()) {
            return Err(Error::InvalidInput(format!(
                "sphere {k}: centre {c}, radius {r}, velocity {} must be finite with r > 0",
                velocities[k]
            )));
        }
        if c.cmplt(lo).any() || c.cmpgt(hi).any() {
            return Err(Error::InvalidInput(format!(
                "sphere {k} at {c} lies outside the tank {lo} – {hi}: move it or widen the tank"
            )));
        }
    }
    Ok(())
}

impl GrainSetup {
    /// Spheres at `centres` with `radii` and `velocities` in the tank `lo`–`hi`, the
    /// stiffness and time step from `cfg` or derived (module doc).
    pub fn new(
        cfg: &GrainConfig,
        centres: &[Vec3],
        radii: &[f32],
        velocities: &[Vec3],
        lo: Vec3,
        hi: Vec3,
    ) -> Result<Self> {
        check_spheres(cfg, centres, radii, velocities, lo, hi)?;
        let n = centres.len();
        let planar = cfg.dim == 2;
        let largest = radii.iter().copied().fold(0.0f32, f32::max);
        let masses: Vec<f32> = radii
            .iter()
            .map(|&r| grain_mass(r, cfg.density, cfg.dim))
            .collect();
        let stiffness = match cfg.stiffness {
            Some(k) => k,
            None => default_stiffness(radii, cfg.density, cfg.gravity, (lo, hi), cfg.dim),
        };
        let lightest = masses.iter().copied().fold(f32::INFINITY, f32::min);
        let (contact_zeta, wall_zeta) = (
            damping_ratio(cfg.restitution),
            damping_ratio(cfg.wall_restitution),
        );
        let dt = cfg
            .dt
            .unwrap_or_else(|| default_dt(lightest, stiffness, contact_zeta.max(wall_zeta)));
        if !(stiffness.is_finite() && stiffness > 0.0 && dt.is_finite() && dt > 0.0) {
            return Err(Error::InvalidInput(format!(
                "grains: stiffness {stiffness} N/m and time step {dt} s must be positive and finite: give --contact-stiffness and --dt"
            )));
        }
        let particles = u32::try_from(n)
            .map_err(|_| Error::InvalidInput(format!("{n} spheres exceed 2³² − 1")))?;
        let table_size = match cfg.table_size {
            Some(t) => validate_table_size(t)?,
            None => default_table_size(particles),
        };
        let h = 2.0 * largest;
        let h64 = h as f64;
        let sim = SimParams {
            n: particles,
            table_size,
            table_mask: table_size - 1,
            group_size: group_size(particles, table_size),
            h,
            inv_h: (1.0 / h64) as f32,
            h2: h * h,
            inv_h2: (1.0 / (h64 * h64)) as f32,
            density_scale: 0.0,
            planar: planar as u32,
            ..bytemuck::Zeroable::zeroed()
        };
        let grain = GrainParams {
            tank_min: lo.extend(0.0).to_array(),
            tank_max: hi.extend(0.0).to_array(),
            gravity: [0.0, cfg.gravity, 0.0, 0.0],
            stiffness,
            contact_zeta,
            wall_zeta,
            friction: cfg.friction,
            dt,
            obstacles: 0,
            _pad: [0; 2],
        };
        Ok(Self {
            pos: centres
                .iter()
                .zip(radii)
                .map(|(c, &r)| c.extend(r))
                .collect(),
            vel: velocities
                .iter()
                .zip(&masses)
                .map(|(v, &m)| v.extend(m))
                .collect(),
            sim,
            grain,
            obstacles: Vec::new(),
            shapes: Vec::new(),
        })
    }

    /// The scene's still obstacles as contacts ([`GrainObstacle::from_obstacle`]).
    pub fn with_obstacles(mut self, obstacles: &[crate::obstacle::Obstacle]) -> Result<Self> {
        self.obstacles = obstacles
            .iter()
            .enumerate()
            .map(|(k, o)| GrainObstacle::from_obstacle(o, &format!("obstacle {k}")))
            .collect::<Result<_>>()?;
        self.grain.obstacles = self.obstacles.len() as u32;
        self.shapes = obstacles.iter().map(|o| o.shape.clone()).collect();
        Ok(self)
    }

    /// Spheres filling a scene's bodies: its lattice at pitch 2.2 r_max (so none touch; the
    /// scene leaves out points within that of an obstacle or half of it of a wall, and
    /// applies each body's jitter, count and velocity), radii uniform in [r_max/ratio, r_max],
    /// the tank and the still obstacles the scene's. A built-in scene is sized for
    /// `cfg.particles`; a file's bodies fix the count.
    pub fn from_scene(cfg: &GrainConfig, choice: &crate::scene::SceneChoice) -> Result<Self> {
        use crate::scene::SceneChoice;
        cfg.validate()?;
        let a = 2.2 * cfg.radius;
        let label = choice.label();
        let desc = match (choice, cfg.dim) {
            (SceneChoice::Builtin(crate::scene::SceneKind::Random), 2) => {
                return Err(Error::InvalidInput(
                    "scene random has no 2D form (its random packing is three-dimensional): discs take dam-break, cube, drop or a scene file".into(),
                ));
            }
            (SceneChoice::Builtin(kind), 2) => {
                crate::scene::SceneDesc::builtin_planar(*kind, cfg.particles as usize, a)
            }
            (SceneChoice::Builtin(kind), _) => {
                crate::scene::SceneDesc::builtin(*kind, cfg.particles as usize, a)
            }
            // In 2D the tank's z walls lie 1.1 r_max off the plane, out of every disc's reach.
            (SceneChoice::Described { desc, .. }, 2) => desc.section(&label, a)?,
            (SceneChoice::Described { desc, .. }, _) => (**desc).clone(),
        };
        if !desc.emitters.is_empty() || desc.open != 0 {
            return Err(Error::InvalidInput(format!(
                "{label}: emitters and open tank sides are the fluid's; --model grains runs in a closed tank: remove them or use --model fluid"
            )));
        }
        let scene = desc.build(&label, a, cfg.seed)?;
        if scene.positions.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{label}: no sphere of radius {} m fits its bodies at pitch 2.2 r: enlarge the bodies or lower --grain-radius",
                cfg.radius
            )));
        }
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed ^ 0x9e37_79b9);
        let radii: Vec<f32> = scene
            .positions
            .iter()
            .map(|_| cfg.draw_radius(&mut rng))
            .collect();
        Self::new(
            cfg,
            &scene.positions,
            &radii,
            &scene.velocities,
            scene.tank_min,
            scene.tank_max,
        )?
        .with_obstacles(&desc.obstacles)
    }

    /// The pour: `cfg.particles` spheres of radii uniform in [r_max/ratio, r_max] on a jittered
    /// lattice (pitch 2.2 r_max, so none touch), a block about twice as wide as tall whose
    /// floor lies a quarter of its width above the tank's, in a tank that fits it; at rest.
    /// In 2D the block is a rectangle of discs at z = 0, jittered in x and y, the tank's z
    /// walls 1.1 r_max off the plane.
    pub fn pour(cfg: &GrainConfig) -> Result<Self> {
        cfg.validate()?;
        let n = cfg.particles as usize;
        let a = 2.2 * cfg.radius;
        let planar = cfg.dim == 2;
        // `side` spheres across x, and as many across z in 3D (one row in 2D).
        let side = match planar {
            true => (2.0 * n as f64).sqrt(),
            false => (2.0 * n as f64).cbrt(),
        };
        let side = (side.ceil() as usize).max(1);
        let across = if planar { 1 } else { side };
        let layers = n.div_ceil(side * across);
        let width = side as f32 * a;
        let floor = 0.25 * width;
        let top = floor + layers as f32 * a + a;
        let (lo, hi) = match planar {
            true => (
                Vec3::new(0.0, 0.0, -0.5 * a),
                Vec3::new(width, top, 0.5 * a),
            ),
            false => (Vec3::ZERO, Vec3::new(width, top, width)),
        };
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(cfg.seed);
        let jitter = 0.04 * a;
        let mut centres = Vec::with_capacity(n);
        let mut radii = Vec::with_capacity(n);
        for k in 0..n {
            let (ix, rest) = (k % side, k / side);
            let (iz, iy) = (rest % across, rest / across);
            let z = if planar { 0.0 } else { (iz as f32 + 0.5) * a };
            let base = Vec3::new((ix as f32 + 0.5) * a, floor + (iy as f32 + 0.5) * a, z);
            let jx = rng.random_range(-jitter..jitter);
            let jy = rng.random_range(-jitter..jitter);
            let jz = if planar {
                0.0
            } else {
                rng.random_range(-jitter..jitter)
            };
            centres.push(base + Vec3::new(jx, jy, jz));
            radii.push(cfg.draw_radius(&mut rng));
        }
        let vel = vec![Vec3::ZERO; n];
        Self::new(cfg, &centres, &radii, &vel, lo, hi)
    }

    /// Number of spheres.
    pub fn len(&self) -> usize {
        self.pos.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// The shortest contact duration π√(m*/k), two of the lightest spheres.
    pub fn contact_time(&self) -> f32 {
        let lightest = self.vel.iter().map(|v| v.w).fold(f32::INFINITY, f32::min);
        contact_time(lightest, self.grain.stiffness)
    }
}

/// π √(m*/k) for two spheres of mass `m` (m* = m/2).
pub fn contact_time(m: f32, k: f32) -> f32 {
    (PI * (0.5 * m as f64 / k as f64).sqrt()) as f32
}

/// The damping ratio up to which [`STEPS_PER_CONTACT`] steps per contact serve: ζ of e = 0.3.
/// The explicit dashpot's rebound error is first order in ζ ω dt (tests/suite/grains.rs: halving dt
/// halves it, 1.7% at e = 0.3 with t_c/50), so more damping takes proportionally more steps.
pub fn reference_zeta() -> f32 {
    damping_ratio(0.3)
}

/// The default time step: [`contact_time`] / [`STEPS_PER_CONTACT`], divided further by
/// ζ/[`reference_zeta`] where the strongest damping ratio `zeta` (contacts' or walls') exceeds
/// it: t_c/50 for e ≥ 0.3, t_c/74 at e = 0.2, t_c/125 at e = 0.1, t_c/196 at e = 0.05.
pub fn default_dt(lightest: f32, k: f32, zeta: f32) -> f32 {
    let steps = STEPS_PER_CONTACT * (zeta as f64 / reference_zeta() as f64).max(1.0);
    (contact_time(lightest, k) as f64 / steps) as f32
}

/// The default stiffness (module doc): the pile the spheres make on the tank's floor.
/// Without gravity, Earth's (a pile would need it). In 2D the discs' pile, per metre of
/// depth: area Σ π r² over [`PACKING_2D`] times the floor's width stands H high, and the
/// bottom disc carries the column 2 r_max wide above it, 3 φ ρ g H (2 r_max) (N/m).
pub fn default_stiffness(
    radii: &[f32],
    density: f32,
    gravity: f32,
    (lo, hi): (Vec3, Vec3),
    dim: u32,
) -> f32 {
    let planar = dim == 2;
    let (volume, floor, packing): (f64, f64, f64) = match planar {
        true => (
            radii.iter().map(|&r| PI * (r as f64).powi(2)).sum(),
            (hi.x - lo.x) as f64,
            PACKING_2D,
        ),
        false => (
            radii
                .iter()
                .map(|&r| 4.0 / 3.0 * PI * (r as f64).powi(3))
                .sum(),
            ((hi.x - lo.x) as f64) * ((hi.z - lo.z) as f64),
            PACKING,
        ),
    };
    let height = volume / (packing * floor);
    let g = if gravity != 0.0 {
        gravity.abs() as f64
    } else {
        9.81
    };
    let r_max = radii.iter().copied().fold(0.0f32, f32::max) as f64;
    let r_min = radii.iter().copied().fold(f32::INFINITY, f32::min) as f64;
    let width = match planar {
        true => 2.0 * r_max,
        false => (2.0 * r_max).powi(2),
    };
    let force = FORCE_CHAIN * packing * density as f64 * g * height * width;
    (force / (TARGET_OVERLAP * r_min)) as f32
}

/// The force on a body from a contact of overlap `delta` along `n` with relative velocity
/// `vr` and effective mass `me` (contact in shaders/grains/grain_contacts.wgsl).
#[inline]
fn contact(n: Vec3, delta: f32, vr: Vec3, me: f32, zeta: f32, gp: &GrainParams) -> Vec3 {
    let crit = 2.0 * (me * gp.stiffness).sqrt();
    let c0 = zeta * crit;
    let c = c0 / (1.0 + 0.5 * c0 * gp.dt / me);
    let vn = vr.x * n.x + vr.y * n.y + vr.z * n.z;
    let lim = delta / gp.dt;
    let rate = if vn < -lim { vn - lim } else { vn };
    let push = gp.stiffness * delta - c * rate;
    let normal = if push > 0.0 { push } else { 0.0 };
    let vt = vr - n * vn;
    let mut ft = vt * (-crit);
    let ft2 = ft.x * ft.x + ft.y * ft.y + ft.z * ft.z;
    let limit = gp.friction * normal.abs();
    if ft2 > limit * limit {
        ft *= limit / ft2.sqrt();
    }
    n * normal + ft
}

/// What one sphere's contacts add up to (the walker of grain_contacts.wgsl).
struct Walker {
    f: Vec3,
    energy: f32,
    deepest: f32,
}

impl Walker {
    #[inline]
    fn wall(&mut self, gap: f32, n: Vec3, r: f32, v: Vec3, m: f32, gp: &GrainParams) {
        let delta = r - gap;
        if delta > 0.0 {
            self.f += contact(n, delta, v, m, gp.wall_zeta, gp);
            self.energy += 0.5 * gp.stiffness * delta * delta;
            self.deepest = self.deepest.max(delta / r);
        }
    }
}

/// Stage `grain_contacts`, the CPU mirror of `shaders/grains/grain_contacts.wgsl` (its doc gives
/// the model and a worked example). Inputs (slot order): positions (xyz, radius), velocities (xyz,
/// mass), the grid's `slot_start`, the still obstacles. Outputs (slot order): the accelerations
/// with each sphere's share of the elastic energy in w, and each sphere's deepest overlap over the
/// smaller radius.
pub fn contacts(
    pos: &[Vec4],
    vel: &[Vec4],
    slot_start: &[u32],
    sp: &SimParams,
    gp: &GrainParams,
    obstacles: &[GrainObstacle],
) -> (Vec<Vec4>, Vec<f32>) {
    let obstacles = &obstacles[..gp.obstacles as usize];
    let xyz: Vec<Vec3> = pos.iter().map(|p| p.xyz()).collect();
    let g = Vec3::from_slice(&gp.gravity[..3]);
    let lo = Vec3::from_slice(&gp.tank_min[..3]);
    let hi = Vec3::from_slice(&gp.tank_max[..3]);
    (0..pos.len())
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            let (x, r) = (xyz[i], pos[i].w);
            let (v, m) = (vel[i].xyz(), vel[i].w);
            let mut w = Walker {
                f: Vec3::ZERO,
                energy: 0.0,
                deepest: 0.0,
            };
            walk(x, &xyz, slot_start, sp, |k, r2| {
                let k = k as usize;
                let reach = r + pos[k].w;
                if k != i && r2 < reach * reach {
                    let dist = r2.sqrt();
                    if dist > 0.0 {
                        let d = x - xyz[k];
                        let delta = reach - dist;
                        let mk = vel[k].w;
                        let me = m * mk / (m + mk);
                        w.f += contact(d / dist, delta, v - vel[k].xyz(), me, gp.contact_zeta, gp);
                        w.energy += 0.25 * gp.stiffness * delta * delta;
                        w.deepest = w.deepest.max(delta / r.min(pos[k].w));
                    }
                }
            });
            w.wall(x.x - lo.x, Vec3::X, r, v, m, gp);
            w.wall(hi.x - x.x, Vec3::NEG_X, r, v, m, gp);
            w.wall(x.y - lo.y, Vec3::Y, r, v, m, gp);
            w.wall(hi.y - x.y, Vec3::NEG_Y, r, v, m, gp);
            w.wall(x.z - lo.z, Vec3::Z, r, v, m, gp);
            w.wall(hi.z - x.z, Vec3::NEG_Z, r, v, m, gp);
            for o in obstacles {
                let (gap, n) = obstacle_gap(o, x);
                w.wall(gap, n, r, v, m, gp);
            }
            ((w.f / m + g).extend(w.energy), w.deepest)
        })
        .unzip()
}

/// Stage `grain_integrate`, the CPU mirror of `shaders/grains/grain_integrate.wgsl`: v' = v + a·dt,
/// x' = x + v'·dt; radius and mass ride along in w.
pub fn integrate(
    pos: &[Vec4],
    vel: &[Vec4],
    accel: &[Vec4],
    gp: &GrainParams,
) -> (Vec<Vec4>, Vec<Vec4>) {
    pos.iter()
        .zip(vel)
        .zip(accel)
        .map(|((p, u), a)| {
            let v = u.xyz() + a.xyz() * gp.dt;
            let x = p.xyz() + v * gp.dt;
            (x.extend(p.w), v.extend(u.w))
        })
        .unzip()
}

/// Everything one step saw, slot order: the state it started from, the grid, the contact
/// stage's outputs. Both paths fill it from bit-identical buffers.
#[derive(Clone, Debug, Default)]
pub struct Frame {
    /// Positions (xyz, radius) the step started from.
    pub pos: Vec<Vec4>,
    /// Velocities (xyz, mass) the step started from.
    pub vel: Vec<Vec4>,
    /// Original index of each sphere.
    pub id: Vec<u32>,
    /// Slot starts (T + 1).
    pub slot_start: Vec<u32>,
    /// Accelerations (w: elastic energy share).
    pub accel: Vec<Vec4>,
    /// Deepest overlap over the smaller radius, per sphere.
    pub overlap: Vec<f32>,
}

/// The statistics of one step, of the state it started from (time t).
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct GrainStats {
    /// Steps taken before this state.
    pub step: u64,
    /// Simulated time, s (`t`, the fluid's name, in the CSV and JSON).
    #[serde(rename = "t")]
    pub time: f64,
    /// Kinetic energy, J.
    pub kinetic: f64,
    /// Gravitational potential energy above the tank's floor, J.
    pub potential: f64,
    /// Elastic energy of the contact springs, J.
    pub elastic: f64,
    /// The sum, J.
    pub total: f64,
    /// Largest speed, m/s.
    pub max_speed: f32,
    /// Deepest overlap over the smaller radius of its contact.
    pub deepest_overlap: f32,
    /// Spheres whose centre lies outside the tank.
    pub outside: u32,
    /// Original index of the first sphere (in slot order) with a non-finite value.
    pub first_nonfinite: Option<u32>,
    /// Original index of the first sphere outside the tank.
    pub first_outside: Option<u32>,
}

impl GrainStats {
    /// The statistics of `f` at step `step`, time `time` (host sums in slot order, f64).
    pub fn of(f: &Frame, step: u64, time: f64, gp: &GrainParams) -> Self {
        let g = Vec3::from_slice(&gp.gravity[..3]).as_dvec3();
        let lo = Vec3::from_slice(&gp.tank_min[..3]);
        let hi = Vec3::from_slice(&gp.tank_max[..3]);
        let mut s = GrainStats {
            step,
            time,
            ..Default::default()
        };
        for k in 0..f.pos.len() {
            let (p, u, a) = (f.pos[k], f.vel[k], f.accel[k]);
            if !(p.is_finite() && u.is_finite() && a.is_finite() && f.overlap[k].is_finite()) {
                s.first_nonfinite.get_or_insert(f.id[k]);
                continue;
            }
            let m = u.w as f64;
            let v = u.xyz().as_dvec3();
            s.kinetic += 0.5 * m * v.length_squared();
            s.potential -= m * g.dot((p.xyz() - lo).as_dvec3());
            s.elastic += a.w as f64;
            s.max_speed = s.max_speed.max(u.xyz().length());
            s.deepest_overlap = s.deepest_overlap.max(f.overlap[k]);
            if p.xyz().cmplt(lo).any() || p.xyz().cmpgt(hi).any() {
                s.outside += 1;
                s.first_outside.get_or_insert(f.id[k]);
            }
        }
        s.total = s.kinetic + s.potential + s.elastic;
        s
    }

    /// The CSV header of [`GrainStats::csv_row`] (the fluid's names where they mean the same).
    pub const CSV_HEADER: &'static str =
        "step,t,kinetic,potential,elastic,total,max_speed,deepest_overlap,outside";

    /// The columns of [`Self::CSV_HEADER`] and their units, for the `--stats` sidecar.
    pub const COLUMNS: [(&'static str, &'static str); 9] = [
        ("step", "steps taken"),
        ("t", "s"),
        ("kinetic", "J"),
        ("potential", "J"),
        ("elastic", "J"),
        ("total", "J"),
        ("max_speed", "m/s"),
        ("deepest_overlap", "fraction of the smaller radius"),
        ("outside", "spheres"),
    ];

    /// One CSV row.
    pub fn csv_row(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{},{}",
            self.step,
            self.time,
            self.kinetic,
            self.potential,
            self.elastic,
            self.total,
            self.max_speed,
            self.deepest_overlap,
            self.outside
        )
    }
}

/// A path that steps the spheres.
pub trait GrainPath {
    /// One step; returns what it saw.
    fn step(&mut self) -> Result<Frame>;
    /// The current state in input order: positions (xyz, radius), velocities (xyz, mass).
    fn state(&self) -> Result<(Vec<Vec4>, Vec<Vec4>)>;
    /// Replaces the state (input order; ids 0..N), e.g. after spheres were added.
    fn replace(&mut self, pos: &[Vec4], vel: &[Vec4]) -> Result<()>;
    /// The path's name.
    fn name(&self) -> &'static str;
}

/// The CPU reference path.
pub struct CpuGrains {
    sim: SimParams,
    grain: GrainParams,
    obstacles: Vec<GrainObstacle>,
    pos: Vec<Vec4>,
    vel: Vec<Vec4>,
    id: Vec<u32>,
}

fn gather<T: Copy>(v: &[T], ids: &[u32]) -> Vec<T> {
    ids.iter().map(|&k| v[k as usize]).collect()
}

/// Scatters slot-order values back to input order by their ids.
pub fn to_input_order<T: Copy + Default>(v: &[T], id: &[u32]) -> Vec<T> {
    let mut out = vec![T::default(); v.len()];
    for (&i, &x) in id.iter().zip(v) {
        out[i as usize] = x;
    }
    out
}

impl CpuGrains {
    /// The CPU path on `setup`.
    pub fn new(setup: &GrainSetup) -> Self {
        Self {
            sim: setup.sim,
            grain: setup.grain,
            obstacles: setup.obstacles.clone(),
            pos: setup.pos.clone(),
            vel: setup.vel.clone(),
            id: (0..setup.len() as u32).collect(),
        }
    }
}

impl GrainPath for CpuGrains {
    fn step(&mut self) -> Result<Frame> {
        let xyz: Vec<Vec3> = self.pos.iter().map(|p| p.xyz()).collect();
        let grid = Grid::build(&xyz, &self.sim);
        let pos = gather(&self.pos, &grid.sorted_ids);
        let vel = gather(&self.vel, &grid.sorted_ids);
        let id = gather(&self.id, &grid.sorted_ids);
        let (accel, overlap) = contacts(
            &pos,
            &vel,
            &grid.slot_start,
            &self.sim,
            &self.grain,
            &self.obstacles,
        );
        let (next_pos, next_vel) = integrate(&pos, &vel, &accel, &self.grain);
        self.pos = next_pos;
        self.vel = next_vel;
        self.id = id.clone();
        Ok(Frame {
            pos,
            vel,
            id,
            slot_start: grid.slot_start,
            accel,
            overlap,
        })
    }

    fn state(&self) -> Result<(Vec<Vec4>, Vec<Vec4>)> {
        Ok((
            to_input_order(&self.pos, &self.id),
            to_input_order(&self.vel, &self.id),
        ))
    }

    fn replace(&mut self, pos: &[Vec4], vel: &[Vec4]) -> Result<()> {
        self.sim.n = pos.len() as u32;
        self.pos = pos.to_vec();
        self.vel = vel.to_vec();
        self.id = (0..pos.len() as u32).collect();
        Ok(())
    }

    fn name(&self) -> &'static str {
        "cpu"
    }
}

/// The checks that stop a run (the fluid's `--energy-margin`, non-finite values, spheres that
/// left the tank).
#[derive(Clone, Copy, Debug)]
pub struct GrainGuards {
    /// Largest rise of the total energy above its start, as a fraction (0 disables).
    pub energy_margin: f64,
}

/// The end of a run: the statistics of every step and the final state.
#[derive(Clone, Debug, Default)]
pub struct GrainRun {
    /// One row per step.
    pub stats: Vec<GrainStats>,
    /// Simulated time reached, s.
    pub time: f64,
}

/// One step's report to the driver loop: the statistics of the state it started from (their
/// step and time are the driver's to fill in), the step's dt, and where the first sphere
/// outside the tank was and how fast it moved (for the guards' message).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GrainStep {
    /// The step's statistics.
    pub stats: GrainStats,
    /// The time step, s.
    pub dt: f32,
    /// Position and speed of [`GrainStats::first_outside`].
    pub left: Option<(Vec3, f32)>,
}

impl GrainStep {
    /// The report of the step that saw `f`.
    pub fn of(f: &Frame, gp: &GrainParams) -> Self {
        let stats = GrainStats::of(f, 0, 0.0, gp);
        let left = stats.first_outside.map(|id| {
            let k = f.id.iter().position(|&i| i == id).unwrap_or(0);
            (f.pos[k].xyz(), f.vel[k].xyz().length())
        });
        Self {
            stats,
            dt: gp.dt,
            left,
        }
    }
}

/// The spheres as a model of the one driver loop ([`crate::run::drive`]), on either path: a
/// step runs when it is submitted (its contacts are read back and summed on the host, so steps
/// run one at a time), and is judged by [`check`].
pub struct Spheres<'p> {
    path: &'p mut dyn GrainPath,
    gp: GrainParams,
    pending: Option<GrainStep>,
}

impl<'p> Spheres<'p> {
    /// The spheres that `path` steps with parameters `gp`.
    pub fn new(path: &'p mut dyn GrainPath, gp: GrainParams) -> Self {
        Self {
            path,
            gp,
            pending: None,
        }
    }

    fn step_now(&mut self) -> Result<GrainStep> {
        let frame = self.path.step()?;
        Ok(GrainStep::of(&frame, &self.gp))
    }
}

impl crate::run::Model for Spheres<'_> {
    type Block = GrainStep;
    type Row = GrainStats;
    type Guards = GrainGuards;
    type Course<'c>
        = GrainGuards
    where
        Self: 'c;

    fn guards(course: &GrainGuards) -> GrainGuards {
        *course
    }

    fn serial(&self, _course: &GrainGuards) -> bool {
        true
    }

    fn submit(&mut self) -> Result<()> {
        self.pending = Some(self.step_now()?);
        Ok(())
    }

    /// The submitted step's report (a read with none submitted runs the step then).
    async fn read(&mut self) -> Result<GrainStep> {
        match self.pending.take() {
            Some(s) => Ok(s),
            None => self.step_now(),
        }
    }

    fn dt(block: &GrainStep) -> f32 {
        block.dt
    }

    /// The statistics are of the state the step started from: step `at.step − 1`, at time
    /// `t_before`.
    fn row(
        &self,
        _course: &GrainGuards,
        block: &GrainStep,
        at: &crate::run::RunFrom,
        t_before: f64,
    ) -> Result<GrainStats> {
        Ok(GrainStats {
            step: at.step - 1,
            time: t_before,
            ..block.stats
        })
    }

    fn check(
        &self,
        _course: &GrainGuards,
        block: &GrainStep,
        row: &GrainStats,
        at: &mut crate::run::RunFrom,
        guards: GrainGuards,
    ) -> Result<()> {
        let e0 = *at.start_energy.get_or_insert(row.total);
        check(row, block.left, e0, &self.gp, guards)
    }
}

/// Hands each row to a closure and keeps them all.
struct Rows<F> {
    row: F,
    all: Vec<GrainStats>,
}

impl<F: FnMut(&GrainStats) -> Result<()>> crate::run::Hooks<Spheres<'_>> for Rows<F> {
    fn row(&mut self, s: &GrainStats) -> Result<()> {
        (self.row)(s)?;
        self.all.push(*s);
        Ok(())
    }
}

/// Runs `steps` steps (or until the first step that reaches `end_time`) from the start through
/// the driver loop, checking every step, calling `row` with each step's statistics. A diverged
/// run is an [`Error::Unstable`] naming the step, the sphere and the fix.
pub fn run(
    path: &mut dyn GrainPath,
    gp: &GrainParams,
    steps: u64,
    end_time: Option<f64>,
    guards: GrainGuards,
    row: impl FnMut(&GrainStats) -> Result<()>,
) -> Result<GrainRun> {
    let mut at = crate::run::RunFrom::default();
    let mut rows = Rows {
        row,
        all: Vec::new(),
    };
    crate::run::drive(
        &mut Spheres::new(path, *gp),
        &mut at,
        crate::run::Until {
            steps,
            time: end_time,
        },
        &guards,
        &mut rows,
    )?;
    Ok(GrainRun {
        stats: rows.all,
        time: at.t,
    })
}

/// Below this speed a sphere is at rest in [`resting_overlap`], m/s: an impact this slow deepens
/// a contact by only v/ω (2.4e-4 of the smallest radius in the 20 000-sphere 4:1 pile of
/// docs/results.md), so
/// what overlap a resting sphere has is the load it carries, not a collision.
pub const REST_SPEED: f32 = 0.01;

/// The overlaps of the spheres at rest: the pile's static state, apart from the spheres still
/// moving through it.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct RestingOverlap {
    /// Spheres slower than [`REST_SPEED`].
    pub at_rest: usize,
    /// Of all spheres.
    pub spheres: usize,
    /// The deepest overlap, over the smaller radius, of a contact between two spheres at rest
    /// or between one and a wall (0 without one).
    pub deepest: f32,
}

/// [`RestingOverlap`] of a state (positions with radii in w, velocities) in the tank `gp`, the
/// pairs found by [`crate::grid::neighbours::overlapping_spheres`].
pub fn resting_overlap(pos: &[Vec4], vel: &[Vec4], gp: &GrainParams) -> Result<RestingOverlap> {
    let still: Vec<bool> = vel.iter().map(|v| v.xyz().length() < REST_SPEED).collect();
    let centres: Vec<Vec3> = pos.iter().map(|p| p.xyz()).collect();
    let radii: Vec<f32> = pos.iter().map(|p| p.w).collect();
    let mut deepest = 0.0f32;
    for (i, j) in crate::grid::neighbours::overlapping_spheres(&centres, &radii)? {
        let (i, j) = (i as usize, j as usize);
        if still[i] && still[j] {
            let delta = radii[i] + radii[j] - centres[i].distance(centres[j]);
            deepest = deepest.max(delta / radii[i].min(radii[j]));
        }
    }
    let (lo, hi) = (
        Vec3::from_slice(&gp.tank_min[..3]),
        Vec3::from_slice(&gp.tank_max[..3]),
    );
    for (k, c) in centres.iter().enumerate() {
        if still[k] {
            let gap = (*c - lo).min(hi - *c).min_element();
            deepest = deepest.max((radii[k] - gap) / radii[k]);
        }
    }
    Ok(RestingOverlap {
        at_rest: still.iter().filter(|&&s| s).count(),
        spheres: pos.len(),
        deepest,
    })
}

/// The checks of one step's statistics against the start energy `e0`: non-finite values,
/// spheres outside the tank (`left`: where the first was and how fast, [`GrainStep::left`]),
/// the energy margin. One line naming the step, the sphere and the fix.
pub fn check(
    s: &GrainStats,
    left: Option<(Vec3, f32)>,
    e0: f64,
    gp: &GrainParams,
    guards: GrainGuards,
) -> Result<()> {
    if let Some(id) = s.first_nonfinite {
        return Err(Error::Unstable(format!(
            "step {}: sphere {id} has a non-finite position, velocity or force: lower --dt (now {} s) or --contact-stiffness",
            s.step, gp.dt
        )));
    }
    if let (Some(id), Some((at, speed))) = (s.first_outside, left) {
        return Err(Error::Unstable(format!(
            "step {}: sphere {id} left the tank at {at} moving at {speed:.3} m/s: a contact let it through; lower --dt (now {} s) or raise --contact-stiffness (now {} N/m)",
            s.step, gp.dt, gp.stiffness
        )));
    }
    if guards.energy_margin > 0.0 && s.total > e0 + guards.energy_margin * e0.abs() {
        return Err(Error::Unstable(format!(
            "step {}: total energy {:.6e} J rose {:.2}% above its start {:.6e} J (limit {:.2}%): lower --dt (now {} s)",
            s.step,
            s.total,
            100.0 * (s.total - e0) / e0.abs(),
            e0,
            100.0 * guards.energy_margin,
            gp.dt
        )));
    }
    Ok(())
}

/// The all-pairs contact search, for `--bench --brute-force`: every overlapping pair i < j by
/// testing all N(N − 1)/2 pairs (rayon over i). Returns the number of pairs.
pub fn brute_force_contacts(pos: &[Vec4]) -> u64 {
    (0..pos.len())
        .into_par_iter()
        .map(|i| {
            let (x, r) = (pos[i].xyz(), pos[i].w);
            pos[i + 1..]
                .iter()
                .filter(|q| {
                    let reach = r + q.w;
                    crate::grid::key::distance2(x, q.xyz()) < reach * reach
                })
                .count() as u64
        })
        .sum()
}

/// The grid's contact search over the same spheres: build the grid, then walk every sphere's
/// 27 cells, counting the overlapping pairs i < j (slot-order indices). Returns the pairs.
pub fn grid_contacts(pos: &[Vec4], sp: &SimParams) -> u64 {
    let xyz: Vec<Vec3> = pos.iter().map(|p| p.xyz()).collect();
    let grid = Grid::build(&xyz, sp);
    let sorted = gather(&xyz, &grid.sorted_ids);
    let radius: Vec<f32> = grid.sorted_ids.iter().map(|&k| pos[k as usize].w).collect();
    (0..sorted.len())
        .into_par_iter()
        .with_min_len(64)
        .map(|i| {
            let mut c = 0u64;
            walk(sorted[i], &sorted, &grid.slot_start, sp, |k, r2| {
                let reach = radius[i] + radius[k as usize];
                if (k as usize) > i && r2 < reach * reach {
                    c += 1;
                }
            });
            c
        })
        .sum()
}

/// The spheres of the pour squeezed to half its lattice pitch (towards the tank's floor
/// corner), so they overlap as in a dense pile: the search benchmark's input.
pub fn squeezed(cfg: &GrainConfig) -> Result<GrainSetup> {
    let mut s = GrainSetup::pour(cfg)?;
    for p in &mut s.pos {
        *p = (p.xyz() * 0.5).extend(p.w);
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two(k: f32) -> (GrainSetup, GrainConfig) {
        let cfg = GrainConfig {
            stiffness: Some(k),
            restitution: 1.0,
            friction: 0.0,
            gravity: 0.0,
            density: 3.0 / (4.0 * std::f32::consts::PI * 0.125),
            dt: Some(1e-3),
            ..Default::default()
        };
        let c = [Vec3::new(2.0, 2.0, 2.0), Vec3::new(2.9, 2.0, 2.0)];
        let s = GrainSetup::new(
            &cfg,
            &c,
            &[0.5, 0.5],
            &[Vec3::ZERO; 2],
            Vec3::ZERO,
            Vec3::splat(4.0),
        )
        .unwrap();
        (s, cfg)
    }

    #[test]
    fn worked_example_from_the_shader_doc() {
        let (s, _) = two(100.0);
        assert!((s.vel[0].w - 1.0).abs() < 1e-6, "mass {}", s.vel[0].w);
        let grid = Grid::build(&[s.pos[0].xyz(), s.pos[1].xyz()], &s.sim);
        let pos = gather(&s.pos, &grid.sorted_ids);
        let vel = gather(&s.vel, &grid.sorted_ids);
        let (a, o) = contacts(&pos, &vel, &grid.slot_start, &s.sim, &s.grain, &[]);
        let first = grid.sorted_ids.iter().position(|&k| k == 0).unwrap();
        assert!((a[first].x + 10.0).abs() < 1e-3, "{}", a[first]);
        assert!((a[first].w - 0.25).abs() < 1e-5);
        assert!((o[first] - 0.2).abs() < 1e-5);
    }

    #[test]
    fn damping_ratio_limits() {
        assert_eq!(damping_ratio(1.0), 0.0);
        // Continuous through critical damping, where e = e^−2 (the force vanishes at t_e = 2/ω).
        assert!((restitution_of(1.0) - (-2.0f64).exp()).abs() < 1e-12);
        assert!((restitution_of(1.0 - 1e-6) - restitution_of(1.0 + 1e-6)).abs() < 1e-5);
        // Weak damping: e ≈ 1 − πζ + ... as the unclipped model, whose e = exp(−πζ/√(1 − ζ²)).
        let z = 1e-3;
        let unclipped = (-z * PI / (1.0 - z * z).sqrt()).exp();
        assert!((restitution_of(z) - unclipped).abs() < 1e-5);
        for e in [0.01, 0.1, 0.5, 0.9] {
            let z = damping_ratio(e) as f64;
            assert!((restitution_of(z) - e as f64).abs() < 1e-6, "{e}: ζ {z}");
        }
        // Strong damping: e ≈ 1/(4ζ²).
        assert!((restitution_of(50.0) * 4.0 * 2500.0 - 1.0).abs() < 1e-2);
    }

    #[test]
    fn obstacle_gaps_and_normals() {
        let close = |(g, n): (f32, Vec3), want: f32, dir: Vec3| {
            assert!(
                (g - want).abs() < 1e-6 && (n - dir).length() < 1e-6,
                "{g} {n}"
            );
        };
        let cube = GrainObstacle {
            a: [0.0; 4],
            b: [1.0, 1.0, 1.0, 0.0],
            kind: 0,
            ..Default::default()
        };
        // The shader doc's worked example, then inside (out through the nearest face) and
        // beyond an edge (from the nearest surface point).
        close(
            obstacle_gap(&cube, Vec3::new(0.5, 1.25, 0.5)),
            0.25,
            Vec3::Y,
        );
        close(obstacle_gap(&cube, Vec3::new(0.5, 0.9, 0.5)), -0.1, Vec3::Y);
        close(
            obstacle_gap(&cube, Vec3::new(0.5, 0.5, 0.05)),
            -0.05,
            Vec3::NEG_Z,
        );
        let corner = obstacle_gap(&cube, Vec3::new(1.3, 1.4, 0.5));
        close(corner, 0.5, Vec3::new(0.6, 0.8, 0.0));
        let ball = GrainObstacle {
            a: [1.0, 0.0, 0.0, 0.5],
            kind: 1,
            ..Default::default()
        };
        close(obstacle_gap(&ball, Vec3::new(1.0, 2.0, 0.0)), 1.5, Vec3::Y);
        close(
            obstacle_gap(&ball, Vec3::new(0.8, 0.0, 0.0)),
            -0.3,
            Vec3::NEG_X,
        );
        let post = GrainObstacle {
            a: [0.0, 0.0, 0.0, 1.0],
            b: [2.0, 0.0, 0.0, 0.0],
            kind: 2,
            axis: 1,
            ..Default::default()
        };
        close(obstacle_gap(&post, Vec3::new(2.0, 1.0, 0.0)), 1.0, Vec3::X);
        close(obstacle_gap(&post, Vec3::new(0.0, 3.0, 0.0)), 1.0, Vec3::Y);
        close(
            obstacle_gap(&post, Vec3::new(0.0, -0.5, 0.0)),
            0.5,
            Vec3::NEG_Y,
        );
        close(obstacle_gap(&post, Vec3::new(0.5, 1.0, 0.0)), -0.5, Vec3::X);
        close(obstacle_gap(&post, Vec3::new(0.0, 1.9, 0.1)), -0.1, Vec3::Y);
        let rim = obstacle_gap(&post, Vec3::new(0.0, 2.3, 1.4));
        close(rim, 0.5, Vec3::new(0.0, 0.6, 0.8));
        // Agrees with the scene's own signed distance for every kind.
        use crate::scene::{Axis, Shape};
        let shapes = [
            Shape::Box {
                min: [0.0, 0.1, 0.2],
                max: [0.5, 0.4, 0.3],
            },
            Shape::Sphere {
                centre: [0.2, 0.2, 0.2],
                radius: 0.15,
            },
            Shape::Cylinder {
                base: [0.1, 0.1, 0.1],
                axis: Axis::Z,
                radius: 0.1,
                length: 0.3,
            },
        ];
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(3);
        for shape in shapes {
            let o = crate::obstacle::Obstacle {
                shape: shape.clone(),
                slip: None,
                viscosity: None,
                motion: None,
            };
            let g = GrainObstacle::from_obstacle(&o, "test").unwrap();
            for _ in 0..2000 {
                let p = Vec3::new(rng.random(), rng.random(), rng.random()) * 0.6 - 0.05;
                let (gap, n) = obstacle_gap(&g, p);
                let want = shape.signed_distance(p);
                assert!(
                    (gap - want).abs() < 1e-5,
                    "{shape:?} at {p}: {gap} vs {want}"
                );
                assert!((n.length() - 1.0).abs() < 1e-5, "{n}");
                // The normal points up the distance field.
                let ahead = shape.signed_distance(p + n * 1e-3);
                assert!(ahead > want, "{shape:?} at {p}: {n}");
            }
        }
    }

    #[test]
    fn brute_force_and_grid_count_the_same_pairs() {
        let cfg = GrainConfig {
            particles: 3000,
            ratio: 4.0,
            ..Default::default()
        };
        let mut s = GrainSetup::pour(&cfg).unwrap();
        // Squeeze the lattice so spheres overlap.
        for p in &mut s.pos {
            *p = (p.xyz() * 0.5).extend(p.w);
        }
        let pairs = brute_force_contacts(&s.pos);
        assert!(pairs > 100, "{pairs}");
        assert_eq!(grid_contacts(&s.pos, &s.sim), pairs);
    }

    #[test]
    fn bad_values_are_refused_with_the_flag_named() {
        for (cfg, flag) in [
            (
                GrainConfig {
                    radius: f32::NAN,
                    ..Default::default()
                },
                "--grain-radius",
            ),
            (
                GrainConfig {
                    ratio: 0.5,
                    ..Default::default()
                },
                "--grain-ratio",
            ),
            (
                GrainConfig {
                    restitution: 1.5,
                    ..Default::default()
                },
                "--contact-restitution",
            ),
            (
                GrainConfig {
                    friction: -1.0,
                    ..Default::default()
                },
                "--contact-friction",
            ),
        ] {
            let e = GrainSetup::pour(&cfg).unwrap_err().to_string();
            assert!(e.contains(flag), "{e}");
        }
    }
}
