//! Solid bodies in the tank, as scenes describe them (shape, friction, motion), and their
//! sampling into the boundary particles of `crate::boundary` (Akinci et al. 2012): points on
//! each surface at a spacing no larger than the fluid's, one [`Body`] per obstacle. The
//! boundary model itself (ψ, the grid, every pair term a solver asks of it) is
//! `crate::boundary::particles`; this is the scene's side of it.
//!
//! Worked example: a unit cube sampled at s = 0.5 gives the 26 points of a 3 × 3 × 3 lattice
//! on its surface ([`surface_count`] says 26 before making them).

use glam::Vec3;

use crate::boundary::{Body, Boundary};
use crate::params::{FluidParams, SimParams};
use crate::shape::{Axis, Shape};
use crate::solver::SolverParams;

/// Whether fluid slides along an obstacle: the switch form of [`Obstacle::viscosity`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Slip {
    /// The fluid's own viscosity as the obstacle's friction: a no-slip wall for that fluid
    /// ([`Obstacle::friction_viscosity`]).
    NoSlip,
    /// No friction: only the pressure force. The default, for the tank walls' reason
    /// ([`crate::params::slip_code`]).
    #[default]
    FreeSlip,
}

/// A solid body in the tank.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Obstacle {
    /// Its solid volume (box, sphere, cylinder, closed mesh), where it is at t = 0.
    pub shape: Shape,
    /// Friction as a switch (`no-slip`, `free-slip`); not with `viscosity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slip: Option<Slip>,
    /// Friction as a physical parameter: the kinematic viscosity ν_b (m²/s) of the standard
    /// SPH viscosity between the fluid and this obstacle's boundary particles
    /// (`crate::boundary::particles`); 0 is free slip, the fluid's own ν a no-slip wall.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub viscosity: Option<f32>,
    /// A prescribed motion; none keeps it still.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub motion: Option<crate::motion::Motion>,
}

impl Obstacle {
    /// The kinematic viscosity ν_b of its friction, m²/s, for a fluid whose own viscosity is
    /// `fluid_nu`: `viscosity` as given, the fluid's for `no-slip`, else 0 (free slip).
    pub fn friction_viscosity(&self, fluid_nu: f32) -> f32 {
        match (self.viscosity, self.slip) {
            (Some(nu), _) => nu,
            (None, Some(Slip::NoSlip)) => fluid_nu,
            _ => 0.0,
        }
    }

    /// Checks its friction's fields: `viscosity` finite and at least 0, and not beside `slip`.
    pub fn validate_friction(&self, at: &str) -> crate::Result<()> {
        match (self.viscosity, self.slip) {
            (Some(nu), _) if !(nu.is_finite() && nu >= 0.0) => Err(crate::Error::input(format!(
                "{at}: viscosity {nu} m^2/s is not a viscosity: give 0 (free slip) or more, e.g. 1e-3"
            ))),
            (Some(_), Some(_)) => Err(crate::Error::input(format!(
                "{at}: both \"slip\" and \"viscosity\" give its friction: keep one"
            ))),
            _ => Ok(()),
        }
    }

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
        // Refused as an obstacle (SceneDesc::validate): a polygon is a fluid body's shape.
        Shape::Polygon { .. } => 0.0,
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
        Shape::Polygon { .. } => Vec::new(),
    }
}

/// Points on the outline of `shape`'s section by the plane z = 0 at spacing at most `s`, in
/// a fixed order, at z = 0: a 2D run's boundary particles (Akinci et al.'s single layer, on
/// the line the 2D fluid meets). A box's rectangle from its corner around, a cylinder along z
/// its circle from angle 0; the scene cuts every other shape to one of these first
/// (`SceneDesc::in_plane`), and anything else yields none.
pub fn sample_outline(shape: &Shape, s: f32) -> Vec<Vec3> {
    let count = |len: f64| ((len / s as f64).ceil() as usize).max(1);
    match *shape {
        Shape::Box { min, max } => {
            let corners = [
                glam::DVec2::new(min[0] as f64, min[1] as f64),
                glam::DVec2::new(max[0] as f64, min[1] as f64),
                glam::DVec2::new(max[0] as f64, max[1] as f64),
                glam::DVec2::new(min[0] as f64, max[1] as f64),
            ];
            let mut out = Vec::new();
            for k in 0..4 {
                let (a, b) = (corners[k], corners[(k + 1) % 4]);
                let n = count(a.distance(b));
                for i in 0..n {
                    let p = a.lerp(b, i as f64 / n as f64);
                    out.push(Vec3::new(p.x as f32, p.y as f32, 0.0));
                }
            }
            out
        }
        Shape::Cylinder {
            base,
            axis: Axis::Z,
            radius,
            ..
        } => {
            let r = radius as f64;
            let n = count(std::f64::consts::TAU * r);
            (0..n)
                .map(|i| {
                    let a = std::f64::consts::TAU * i as f64 / n as f64;
                    Vec3::new(
                        (base[0] as f64 + r * a.cos()) as f32,
                        (base[1] as f64 + r * a.sin()) as f32,
                        0.0,
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The fluid's own kinematic viscosity, m²/s, what a `no-slip` obstacle takes as its
/// friction: its ν plus the viscosity an artificial viscosity acts as, α c h / 10 (Monaghan
/// 2005, §6.1; 0 at the default α = 0).
pub fn fluid_viscosity(sp: &SimParams, fp: &FluidParams) -> f32 {
    fp.kinematic_viscosity + fp.alpha * fp.sound_speed * sp.h / 10.0
}

/// `solver` for a run whose obstacles are `boundary`: DFSPH's friction flag set when one has
/// friction ([`crate::params::DfsphParams::friction`]), for a fresh run and a resumed one alike.
pub fn with_friction_of(mut solver: SolverParams, boundary: Option<&Boundary>) -> SolverParams {
    let dp = solver.stages_mut();
    *dp = dp.with_friction(boundary.is_some_and(Boundary::has_friction));
    solver
}

/// The boundary particles of `obstacles` sampled at spacing `s`, for the fluid of `sp` and
/// `fp` (see [`Boundary::from_bodies`]), each body with its friction
/// f = 2(d + 2) ν_b/ρ0 ([`Obstacle::friction_viscosity`]; the standard viscosity's factor,
/// 10 in 3D, 8 in 2D, Monaghan 2005 eq. 6.6); `None` without obstacles. A 2D run's (`sp`
/// planar) are sampled along the outline of each obstacle's section ([`sample_outline`]).
pub fn boundary(
    obstacles: &[Obstacle],
    s: f32,
    sp: &SimParams,
    fp: &FluidParams,
) -> Option<Boundary> {
    let bodies: Vec<Body> = obstacles
        .iter()
        .map(|o| Body {
            points: match sp.planar {
                0 => sample_surface(&o.shape, s),
                _ => sample_outline(&o.shape, s),
            },
            friction: (2 * sp.dim() + 4) as f32 * o.friction_viscosity(fluid_viscosity(sp, fp))
                / fp.rest_density,
            motion: o.moving().copied(),
        })
        .collect();
    Boundary::from_bodies(&bodies, sp, fp)
}

/// The obstacles rebuilt for fluid parameters `fp` set live (the viewer's sliders), where a
/// `no-slip` obstacle's friction follows them: its ν_b is the fluid's own viscosity
/// ([`fluid_viscosity`]: ν, and α c h / 10 where α is set, so α and the stiffness move it). `None`
/// where no obstacle's friction follows the fluid: the boundary built at the start stands.
pub fn refollowed(
    obstacles: &[Obstacle],
    s: f32,
    sp: &SimParams,
    fp: &FluidParams,
) -> Option<Option<Boundary>> {
    obstacles
        .iter()
        .any(|o| o.viscosity.is_none() && o.slip == Some(Slip::NoSlip))
        .then(|| boundary(obstacles, s, sp, fp))
}

/// How far off an obstacle's surface fluid starts, m, at spacing `s` (the scenes' fluid bodies
/// and the emitters' nozzles): the largest [`crate::kernel::Kernel::boundary_standoff`] of the
/// kernels at their default supports, where one layer of boundary particles leaves a fluid
/// lattice at rho0 (1.339 s, Wendland C2's; in 2D, `dim` = 2, where one row leaves the square
/// lattice at rho0, 1.354 s). Nearer, the fluid starts compressed.
pub fn standoff(s: f32, dim: u32) -> f32 {
    crate::kernel::Kernel::ALL
        .iter()
        .map(|k| k.boundary_standoff((k.default_support() * s) as f64, s as f64, dim))
        .fold(0.0, f64::max) as f32
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let (sp, fp) = fluid(s);
        let plate = Obstacle {
            shape: Shape::Box {
                min: [-0.2, -0.05, -0.2],
                max: [0.2, 0.0, 0.2],
            },
            slip: Some(Slip::NoSlip),
            viscosity: None,
            motion: None,
        };
        let b = boundary(&[plate], s, &sp, &fp).unwrap();
        let on = b
            .pos
            .iter()
            .copied()
            .min_by(|p, q| p.length().total_cmp(&q.length()))
            .unwrap();
        let heights = [0.0, 0.25, 0.5, 1.0, 1.5, 2.0].map(|k| on + Vec3::Y * (k * s));
        let rho = heights.map(|x| {
            crate::solver::dfsph::boundary_density(Some(&b), x, &sp).map_or(0.0, |(sum, ..)| sum)
        });
        assert!((rho[0] / fp.rest_density - 1.0).abs() < 1e-5, "{rho:?}");
        assert!(rho.windows(2).all(|w| w[1] < w[0]), "{rho:?}");
        assert_eq!(rho[5], 0.0, "{rho:?}");
    }

    /// The default fluid at spacing `s` in the tank [−1, 1]³.
    fn fluid(s: f32) -> (SimParams, FluidParams) {
        let cfg = crate::params::SphConfig::for_fluid(
            1000,
            crate::params::ConfigOverrides {
                spacing: Some(s),
                ..Default::default()
            },
        )
        .unwrap();
        let fp = crate::params::PhysicsConfig::default()
            .fluid_params(&cfg, Vec3::splat(-1.0), Vec3::splat(1.0), 0.1)
            .unwrap();
        (cfg.sim_params(), fp)
    }

    #[test]
    fn a_no_slip_obstacles_friction_follows_the_fluid_set_live() {
        let s = 0.01;
        let (sp, fp) = fluid(s);
        let cube = |x: f32, slip, viscosity| Obstacle {
            shape: Shape::Box {
                min: [x, 0.0, 0.0],
                max: [x + 0.1, 0.1, 0.1],
            },
            slip,
            viscosity,
            motion: None,
        };
        let no_slip = cube(-0.5, Some(Slip::NoSlip), None);
        let given = cube(0.0, None, Some(2e-3));
        let free = cube(0.5, Some(Slip::FreeSlip), None);
        let frictions = |b: &Boundary| {
            let mut f = b.friction.clone();
            f.sort_by(f32::total_cmp);
            f.dedup();
            f
        };
        // α raised from 0 (the viewer's slider): the no-slip cube's ν_b = ν + α c h / 10
        // grows, the given ν_b and the free-slip cube stay.
        let live = FluidParams { alpha: 0.1, ..fp };
        let all = [no_slip.clone(), given.clone(), free.clone()];
        let b = refollowed(&all, s, &sp, &live).unwrap().unwrap();
        let nu = live.kinematic_viscosity + live.alpha * live.sound_speed * sp.h / 10.0;
        let want = [
            0.0,
            10.0 * 2e-3 / fp.rest_density,
            10.0 * nu / fp.rest_density,
        ];
        let mut want = want.to_vec();
        want.sort_by(f32::total_cmp);
        assert_eq!(frictions(&b), want);
        let before = boundary(&all, s, &sp, &fp).unwrap();
        assert_ne!(frictions(&before), want, "the test must see the change");
        // Nothing follows the fluid: the start's boundary stands.
        assert!(refollowed(&[given, free], s, &sp, &live).is_none());
    }
}
