//! The shapes scenes are made of (boxes, spheres, cylinders, closed triangle meshes): fluid
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
        }
        Ok(())
    }
}
