//! The shapes scenes are made of (boxes, spheres, cylinders, polygons, closed triangle meshes): fluid
//! bodies, obstacles and the spheres' containers all use them, so they sit below the scene, the
//! boundary particles and the motions that place them.

use glam::Vec3;
use serde::{Deserialize, Serialize};

use crate::mesh::TriMesh;
use crate::{Error, Result};

fn one() -> f32 {
    1.0
}

/// A coordinate axis (a cylinder's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Axis {
    /// Along x.
    X,
    /// Along y (upright).
    Y,
    /// Along z.
    Z,
}

impl Axis {
    /// 0 for x, 1 for y, 2 for z.
    pub fn index(self) -> usize {
        self as usize
    }

    /// `d` split into its component along this axis and the rest (across).
    fn split(self, d: Vec3) -> (f32, Vec3) {
        let mut across = d;
        across[self.index()] = 0.0;
        (d[self.index()], across)
    }
}

/// The volume a fluid body fills, metres.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Shape {
    /// The axis-aligned box between two corners.
    Box {
        /// Lower corner.
        min: [f32; 3],
        /// Upper corner.
        max: [f32; 3],
    },
    /// A ball.
    Sphere {
        /// Centre.
        centre: [f32; 3],
        /// Radius.
        radius: f32,
    },
    /// The inside of a closed triangle mesh from an OBJ or STL file (ASCII or binary).
    Mesh {
        /// The file, relative to the scene file's directory.
        file: String,
        /// Uniform scale about the file's origin.
        #[serde(default = "one")]
        scale: f32,
        /// Rotation about x, y, z in degrees, applied in that order after the scale.
        #[serde(default)]
        rotation: [f32; 3],
        /// Translation after the rotation, metres.
        #[serde(default)]
        translation: [f32; 3],
        /// The triangles, transformed (loaded by `SceneFile::read`).
        #[serde(skip)]
        mesh: Option<std::sync::Arc<TriMesh>>,
    },
    /// A circular cylinder.
    Cylinder {
        /// Centre of one end.
        base: [f32; 3],
        /// The axis it extends along from `base`.
        axis: Axis,
        /// Radius.
        radius: f32,
        /// Length along the axis.
        length: f32,
    },
    /// A polygon in the xy plane (a fluid body's shape: a 2D run's section, or in 3D the
    /// prism it sweeps from `z[0]` to `z[1]`). Inside is the even–odd rule's (a point is
    /// inside when a ray from it crosses the edges an odd number of times; for a simple
    /// polygon, its interior), edges included.
    Polygon {
        /// Corners `[x, y]` in order around the polygon, either way round, at least 3.
        points: Vec<[f32; 2]>,
        /// The z range the prism spans; absent, the polygon is a 2D shape (`--dim 2` only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        z: Option<[f32; 2]>,
    },
}

/// The polygon's edges, each `(a, b)` from one corner to the next, the last closing it.
fn edges(points: &[[f32; 2]]) -> impl Iterator<Item = (glam::Vec2, glam::Vec2)> + '_ {
    let n = points.len();
    (0..n).map(move |i| (points[i].into(), points[(i + 1) % n].into()))
}

/// Whether `p` lies inside the polygon by the even–odd rule or on an edge (a lattice point on
/// a straight side counts as the box's faces do). The crossing test is Shimrat's (1962,
/// algorithm 112; Haines 1994, "Point in polygon strategies"): the edges whose y span holds
/// p.y (half open, so a ray through a corner counts it once) crossed to the right of p.
fn polygon_contains(points: &[[f32; 2]], p: glam::Vec2) -> bool {
    let mut inside = false;
    for (a, b) in edges(points) {
        let cross = (b - a).perp_dot(p - a);
        let on_edge = cross == 0.0
            && p.x >= a.x.min(b.x)
            && p.x <= a.x.max(b.x)
            && p.y >= a.y.min(b.y)
            && p.y <= a.y.max(b.y);
        if on_edge {
            return true;
        }
        if (a.y > p.y) != (b.y > p.y) && p.x < a.x + (p.y - a.y) / (b.y - a.y) * (b.x - a.x) {
            inside = !inside;
        }
    }
    inside
}

/// The polygon's area by the shoelace formula, m² (positive whichever way round).
pub(crate) fn polygon_area(points: &[[f32; 2]]) -> f64 {
    let twice: f64 = edges(points)
        .map(|(a, b)| a.x as f64 * b.y as f64 - b.x as f64 * a.y as f64)
        .sum();
    0.5 * twice.abs()
}

/// The distance from `p` to the polygon's nearest edge, m.
fn polygon_edge_distance(points: &[[f32; 2]], p: glam::Vec2) -> f32 {
    edges(points)
        .map(|(a, b)| {
            let ab = b - a;
            let t = ((p - a).dot(ab) / ab.length_squared()).clamp(0.0, 1.0);
            p.distance(a + ab * t)
        })
        .fold(f32::INFINITY, f32::min)
}

impl Shape {
    /// Lower and upper corner of the bounding box.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        match *self {
            Shape::Box { min, max } => (Vec3::from(min), Vec3::from(max)),
            Shape::Sphere { centre, radius } => {
                let c = Vec3::from(centre);
                (c - radius, c + radius)
            }
            Shape::Cylinder {
                base,
                axis,
                radius,
                length,
            } => {
                let b = Vec3::from(base);
                let mut lo = b - radius;
                let mut hi = b + radius;
                lo[axis.index()] = b[axis.index()];
                hi[axis.index()] = b[axis.index()] + length;
                (lo, hi)
            }
            Shape::Mesh { ref mesh, .. } => {
                mesh.as_ref().map_or((Vec3::NAN, Vec3::NAN), |m| m.bounds())
            }
            Shape::Polygon { ref points, z } => {
                let [z0, z1] = z.unwrap_or([0.0, 0.0]);
                let lo = points.iter().fold(Vec3::splat(f32::INFINITY), |m, p| {
                    m.min(Vec3::new(p[0], p[1], z0))
                });
                let hi = points.iter().fold(Vec3::splat(f32::NEG_INFINITY), |m, p| {
                    m.max(Vec3::new(p[0], p[1], z1))
                });
                (lo, hi)
            }
        }
    }

    /// Whether point `p` lies inside (faces included; a mesh asks along a line shifted off
    /// the lattice of spacing `s`, see `mesh::ray_offset`).
    pub fn contains(&self, p: Vec3, s: f32) -> bool {
        match *self {
            Shape::Mesh { ref mesh, .. } => mesh.as_ref().is_some_and(|m| m.contains(p, s)),
            Shape::Box { min, max } => p.cmpge(min.into()).all() && p.cmple(max.into()).all(),
            Shape::Sphere { centre, radius } => {
                p.distance_squared(centre.into()) <= radius * radius
            }
            Shape::Cylinder {
                base,
                axis,
                radius,
                length,
            } => {
                let (along, across) = axis.split(p - Vec3::from(base));
                (0.0..=length).contains(&along) && across.length_squared() <= radius * radius
            }
            Shape::Polygon { ref points, z } => {
                let [z0, z1] = z.unwrap_or([0.0, 0.0]);
                (z0..=z1).contains(&p.z) && polygon_contains(points, p.truncate())
            }
        }
    }

    /// Signed distance from `p` to the surface, m: negative inside (an unloaded mesh: +∞).
    pub fn signed_distance(&self, p: Vec3) -> f32 {
        match *self {
            Shape::Box { min, max } => {
                let c = (Vec3::from(min) + Vec3::from(max)) * 0.5;
                let half = (Vec3::from(max) - Vec3::from(min)) * 0.5;
                let q = (p - c).abs() - half;
                q.max(Vec3::ZERO).length() + q.max_element().min(0.0)
            }
            Shape::Sphere { centre, radius } => p.distance(centre.into()) - radius,
            Shape::Cylinder {
                base,
                axis,
                radius,
                length,
            } => {
                let (along, across) = axis.split(p - Vec3::from(base));
                let q = glam::Vec2::new(
                    across.length() - radius,
                    (along - 0.5 * length).abs() - 0.5 * length,
                );
                q.max(glam::Vec2::ZERO).length() + q.max_element().min(0.0)
            }
            Shape::Mesh { ref mesh, .. } => mesh
                .as_ref()
                .map_or(f32::INFINITY, |m| m.signed_distance(p)),
            Shape::Polygon { ref points, z } => {
                let edge = polygon_edge_distance(points, p.truncate());
                let across = match polygon_contains(points, p.truncate()) {
                    true => -edge,
                    false => edge,
                };
                let [z0, z1] = z.unwrap_or([0.0, 0.0]);
                let q = glam::Vec2::new(across, (p.z - 0.5 * (z0 + z1)).abs() - 0.5 * (z1 - z0));
                q.max(glam::Vec2::ZERO).length() + q.max_element().min(0.0)
            }
        }
    }

    /// Checks that every size is finite and positive; `at` names the body in messages.
    pub(crate) fn validate(&self, at: &str) -> Result<()> {
        let finite = |v: &[f32]| v.iter().all(|x| x.is_finite());
        let bad = |what: String| Err(Error::input(format!("{at}: {what}")));
        match *self {
            Shape::Box { min, max } => {
                if !finite(&min) || !finite(&max) {
                    return bad("box corners must be finite numbers".into());
                }
                if (0..3).any(|i| max[i] <= min[i]) {
                    return bad(format!(
                        "box max {max:?} must exceed min {min:?} on every axis (a zero or negative size): swap or widen them"
                    ));
                }
            }
            Shape::Sphere { centre, radius } => {
                if !(finite(&centre) && radius.is_finite() && radius > 0.0) {
                    return bad(format!(
                        "sphere needs a finite centre and a radius > 0, got radius {radius}"
                    ));
                }
            }
            Shape::Cylinder {
                base,
                radius,
                length,
                ..
            } => {
                if !(finite(&base)
                    && radius.is_finite()
                    && radius > 0.0
                    && length.is_finite()
                    && length > 0.0)
                {
                    return bad(format!(
                        "cylinder needs a finite base, radius > 0 and length > 0, got radius {radius}, length {length}"
                    ));
                }
            }
            Shape::Mesh {
                ref file,
                scale,
                rotation,
                translation,
                ref mesh,
            } => {
                if !(scale.is_finite() && scale > 0.0 && finite(&rotation) && finite(&translation))
                {
                    return bad(format!(
                        "mesh {file:?} needs a finite scale > 0 and finite rotation and translation, got scale {scale}"
                    ));
                }
                if mesh.is_none() {
                    return bad(format!(
                        "mesh {file:?} was not loaded: scene files with meshes are read with SceneFile::read"
                    ));
                }
            }
            Shape::Polygon { ref points, z } => {
                if points.len() < 3 {
                    return bad(format!(
                        "a polygon needs at least 3 points [x, y], got {}",
                        points.len()
                    ));
                }
                if !points.iter().all(|p| finite(p)) || !z.is_none_or(|z| finite(&z)) {
                    return bad("polygon points and z must be finite numbers".into());
                }
                if polygon_area(points) <= 0.0 {
                    return bad(
                        "the polygon's points enclose no area (all on one line): give its corners in order around it"
                            .into(),
                    );
                }
                if let Some([z0, z1]) = z
                    && z1 <= z0
                {
                    return bad(format!(
                        "polygon z [{z0}, {z1}] must run from low to high: swap or widen it"
                    ));
                }
            }
        }
        Ok(())
    }
}
