//! Triangle meshes from OBJ (tobj) and STL (stl_io, ASCII and binary) files, and the one
//! question a fluid body asks of a closed mesh: which points lie inside.
//!
//! Inside means an odd number of crossings of the ray from the point along +x (the Jordan
//! curve theorem in 3D; e.g. O'Rourke, "Computational Geometry in C", §7.4). A lattice fill asks
//! it for whole rows at once ([`TriMesh::row_crossings`]): one pass over the triangles gives
//! every crossing of the row's line, and each point then counts the crossings ahead of it.
//! The line is shifted off the lattice by an irrational fraction of the spacing
//! ([`ray_offset`]), so meshes authored on the same grid as the fluid (vertices and edges on
//! lattice rows) do not put the line through an edge, where a crossing would count twice or
//! not at all.
//!
//! Worked example: the unit cube [0, 1]³ as 12 triangles; the row y = z = 0.5 crosses its faces
//! x = 0 and x = 1, so the point (0.5, 0.5, 0.5) has one crossing ahead (inside) and
//! (1.5, 0.5, 0.5) none (outside).

use std::collections::HashMap;
use std::path::Path;

use glam::{Quat, Vec3};

use crate::{Error, Result};

/// A triangle soup, metres.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TriMesh {
    /// Corner positions, counter-clockwise seen from outside (orientation is not relied on).
    pub triangles: Vec<[Vec3; 3]>,
}

/// Scale (about the origin), then rotation, then translation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transform {
    /// Uniform scale factor.
    pub scale: f32,
    /// Rotation angles about x, y, z in degrees, applied in that order.
    pub rotation_deg: Vec3,
    /// Translation, metres.
    pub translation: Vec3,
}

impl Transform {
    /// `p` transformed.
    pub fn apply(&self, p: Vec3) -> Vec3 {
        let r = self.rotation_deg * (std::f32::consts::PI / 180.0);
        let q =
            Quat::from_rotation_z(r.z) * Quat::from_rotation_y(r.y) * Quat::from_rotation_x(r.x);
        q * (p * self.scale) + self.translation
    }
}

/// How far the rows a lattice fill asks about are shifted in (y, z) off the lattice, as
/// fractions of the spacing: irrational, so no authored vertex or edge lies on them.
pub fn ray_offset(s: f32) -> (f32, f32) {
    (s * 1e-3 * std::f32::consts::SQRT_2, s * 1e-3 * 1.732_050_8)
}

impl TriMesh {
    /// Reads `path` (`.obj` or `.stl`); `at` names the scene key in messages.
    pub fn read(path: &Path, at: &str) -> Result<Self> {
        let bytes = std::fs::read(path).map_err(|e| {
            Error::input(format!(
                "{at}: cannot read mesh {}: {e}: check the path",
                path.display()
            ))
        })?;
        Self::parse(&bytes, path, at)
    }

    /// Parses a mesh file's `bytes` (a file given without a file system: a web page's), the
    /// format by the extension of `path`, which names it in messages; `at` names the scene key.
    pub fn parse(bytes: &[u8], path: &Path, at: &str) -> Result<Self> {
        let ext = path
            .extension()
            .map(|e| e.to_string_lossy().to_ascii_lowercase())
            .unwrap_or_default();
        let fail =
            |why: String| Error::input(format!("{at}: cannot read mesh {}: {why}", path.display()));
        let mesh = match ext.as_str() {
            "obj" => {
                let opts = tobj::LoadOptions {
                    triangulate: true,
                    single_index: true,
                    ..Default::default()
                };
                // Materials are not read: a fill or an obstacle needs only the faces.
                let no_materials = |_: &Path| Err(tobj::LoadError::OpenFileFailed);
                let (models, _) =
                    tobj::load_obj_buf(&mut std::io::Cursor::new(bytes), &opts, no_materials)
                        .map_err(|e| fail(format!("{e}: is it a Wavefront OBJ file?")))?;
                let mut triangles = Vec::new();
                for m in &models {
                    let p = &m.mesh.positions;
                    let vertex = |i: u32| -> Option<Vec3> {
                        let i = i as usize * 3;
                        Some(Vec3::new(*p.get(i)?, *p.get(i + 1)?, *p.get(i + 2)?))
                    };
                    for t in m.mesh.indices.chunks_exact(3) {
                        match (vertex(t[0]), vertex(t[1]), vertex(t[2])) {
                            (Some(a), Some(b), Some(c)) => triangles.push([a, b, c]),
                            _ => {
                                return Err(fail(format!(
                                    "a face of object {:?} names a vertex the file does not define",
                                    m.name
                                )));
                            }
                        }
                    }
                }
                TriMesh { triangles }
            }
            "stl" => {
                let stl = stl_io::read_stl(&mut std::io::Cursor::new(bytes))
                    .map_err(|e| fail(format!("{e}: is it an ASCII or binary STL file?")))?;
                let v = |i: usize| -> Option<Vec3> {
                    stl.vertices.get(i).map(|v| Vec3::new(v[0], v[1], v[2]))
                };
                let mut triangles = Vec::with_capacity(stl.faces.len());
                for f in &stl.faces {
                    let [a, b, c] = f.vertices;
                    match (v(a), v(b), v(c)) {
                        (Some(a), Some(b), Some(c)) => triangles.push([a, b, c]),
                        _ => return Err(fail("a facet names a missing vertex".into())),
                    }
                }
                TriMesh { triangles }
            }
            _ => {
                return Err(fail(
                    "unknown format: give a .obj or .stl file (ASCII or binary STL)".into(),
                ));
            }
        };
        mesh.check(path, at)?;
        Ok(mesh)
    }

    /// Refuses a mesh without triangles, with non-finite vertices, or that is not closed (a
    /// fluid volume needs an inside).
    fn check(&self, path: &Path, at: &str) -> Result<()> {
        let name = path.display();
        if self.triangles.is_empty() {
            return Err(Error::input(format!(
                "{at}: mesh {name} has no triangles: export the model's faces"
            )));
        }
        if let Some(k) = self
            .triangles
            .iter()
            .position(|t| t.iter().any(|v| !v.is_finite()))
        {
            return Err(Error::input(format!(
                "{at}: mesh {name}: triangle {k} has a non-finite vertex: repair the model"
            )));
        }
        // Closed: every edge (between vertices welded by exact position) is shared by an even
        // number of triangles, so every ray enters as often as it leaves.
        let mut ids: HashMap<[u32; 3], u32> = HashMap::new();
        let mut edges: HashMap<(u32, u32), u32> = HashMap::new();
        for t in &self.triangles {
            let v = t.map(|p| {
                let n = ids.len() as u32;
                *ids.entry(p.to_array().map(|c| (c + 0.0).to_bits()))
                    .or_insert(n)
            });
            for (a, b) in [(v[0], v[1]), (v[1], v[2]), (v[2], v[0])] {
                *edges.entry((a.min(b), a.max(b))).or_default() += 1;
            }
        }
        if let Some(((a, b), n)) = edges.iter().filter(|(_, n)| *n % 2 == 1).min() {
            let pos: HashMap<u32, [u32; 3]> = ids.iter().map(|(k, v)| (*v, *k)).collect();
            let at_pos = |i: &u32| Vec3::from_array(pos[i].map(f32::from_bits));
            return Err(Error::input(format!(
                "{at}: mesh {name} is not closed (the edge {} – {} borders {n} triangle(s)): {} needs a watertight mesh to tell inside from outside; close its holes",
                at_pos(a),
                at_pos(b),
                if at.contains("obstacles[") {
                    "an obstacle (its inside is kept clear of fluid)"
                } else {
                    "a fluid body (its inside is filled)"
                }
            )));
        }
        Ok(())
    }

    /// The mesh with every vertex transformed.
    pub fn transformed(&self, t: &Transform) -> Self {
        Self {
            triangles: self
                .triangles
                .iter()
                .map(|tri| tri.map(|p| t.apply(p)))
                .collect(),
        }
    }

    /// Lower and upper corner of the bounding box.
    pub fn bounds(&self) -> (Vec3, Vec3) {
        self.triangles
            .iter()
            .flatten()
            .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), p| {
                (lo.min(*p), hi.max(*p))
            })
    }

    /// Enclosed volume, m³ (divergence theorem over the triangles).
    pub fn volume(&self) -> f64 {
        self.triangles
            .iter()
            .map(|[a, b, c]| a.as_dvec3().dot(b.as_dvec3().cross(c.as_dvec3())) / 6.0)
            .sum::<f64>()
            .abs()
    }

    /// The x of every crossing of the line {(x, y, z)} with the mesh, sorted.
    pub fn row_crossings(&self, y: f32, z: f32) -> Vec<f32> {
        let mut xs: Vec<f32> = self
            .triangles
            .iter()
            .filter_map(|[a, b, c]| {
                // Barycentric coordinates of (y, z) in the triangle projected on the yz plane.
                let (ay, az) = (a.y - y, a.z - z);
                let (by, bz) = (b.y - y, b.z - z);
                let (cy, cz) = (c.y - y, c.z - z);
                let wa = by * cz - bz * cy;
                let wb = cy * az - cz * ay;
                let wc = ay * bz - az * by;
                let inside =
                    (wa > 0.0 && wb > 0.0 && wc > 0.0) || (wa < 0.0 && wb < 0.0 && wc < 0.0);
                inside.then(|| (wa * a.x + wb * b.x + wc * c.x) / (wa + wb + wc))
            })
            .collect();
        xs.sort_by(f32::total_cmp);
        xs
    }

    /// Whether `p` lies inside the (closed) mesh, asked along the shifted line of spacing
    /// `s` (see [`ray_offset`]).
    pub fn contains(&self, p: Vec3, s: f32) -> bool {
        let (dy, dz) = ray_offset(s);
        inside_row(&self.row_crossings(p.y + dy, p.z + dz), p.x)
    }
}

impl TriMesh {
    /// Signed distance from `p` to the (closed) mesh, m: negative inside.
    pub fn signed_distance(&self, p: Vec3) -> f32 {
        let d = self
            .triangles
            .iter()
            .map(|t| closest_on_triangle(p, t).distance(p))
            .fold(f32::INFINITY, f32::min);
        // The sign from a ray shifted by a few micrometres only (see ray_offset).
        if self.contains(p, 1e-3) { -d } else { d }
    }

    /// How many points [`TriMesh::sample_surface`] makes at spacing `s`, counted without
    /// making them (f64: a mesh scaled far past its tank counts more than any integer holds).
    pub fn surface_count(&self, s: f32) -> f64 {
        self.triangles
            .iter()
            .map(|[a, b, c]| {
                let longest = a.distance(*b).max(b.distance(*c)).max(c.distance(*a));
                let n = (longest as f64 / s as f64).ceil().max(1.0);
                (n + 1.0) * (n + 2.0) / 2.0
            })
            .sum()
    }

    /// Points on every triangle at spacing at most `s`: a barycentric grid of n = ⌈longest
    /// edge / s⌉ intervals per triangle. Edges shared by two triangles are sampled by both
    /// (ψ of the boundary particles, from their own neighbourhood, discounts the extra ones).
    pub fn sample_surface(&self, s: f32) -> Vec<Vec3> {
        let mut out = Vec::new();
        for [a, b, c] in &self.triangles {
            let longest = a.distance(*b).max(b.distance(*c)).max(c.distance(*a));
            let n = ((longest / s).ceil() as u32).max(1);
            for i in 0..=n {
                for j in 0..=n - i {
                    let (u, v) = (i as f32 / n as f32, j as f32 / n as f32);
                    out.push(*a + (*b - *a) * u + (*c - *a) * v);
                }
            }
        }
        out
    }
}

/// The point of triangle `t` closest to `p` (Ericson, "Real-Time Collision Detection", 2005,
/// §5.1.5: the Voronoi regions of the vertices, edges and face in turn).
fn closest_on_triangle(p: Vec3, t: &[Vec3; 3]) -> Vec3 {
    let [a, b, c] = *t;
    let (ab, ac, ap) = (b - a, c - a, p - a);
    let (d1, d2) = (ab.dot(ap), ac.dot(ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = p - b;
    let (d3, d4) = (ab.dot(bp), ac.dot(bp));
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return a + ab * (d1 / (d1 - d3));
    }
    let cp = p - c;
    let (d5, d6) = (ab.dot(cp), ac.dot(cp));
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return a + ac * (d2 / (d2 - d6));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return b + (c - b) * ((d4 - d3) / ((d4 - d3) + (d5 - d6)));
    }
    let denom = 1.0 / (va + vb + vc);
    a + ab * (vb * denom) + ac * (vc * denom)
}

/// Whether `x` is inside given a row's sorted crossings: an odd number lies ahead of it.
pub fn inside_row(crossings: &[f32], x: f32) -> bool {
    let ahead = crossings.len() - crossings.partition_point(|&c| c <= x);
    ahead % 2 == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The box [lo, hi] as 12 triangles.
    pub fn cuboid(lo: Vec3, hi: Vec3) -> TriMesh {
        let c = |i: u32| {
            Vec3::new(
                if i & 1 == 0 { lo.x } else { hi.x },
                if i & 2 == 0 { lo.y } else { hi.y },
                if i & 4 == 0 { lo.z } else { hi.z },
            )
        };
        let quads = [
            [0, 2, 3, 1],
            [4, 5, 7, 6],
            [0, 1, 5, 4],
            [2, 6, 7, 3],
            [0, 4, 6, 2],
            [1, 3, 7, 5],
        ];
        let mut triangles = Vec::new();
        for q in quads {
            triangles.push([c(q[0]), c(q[1]), c(q[2])]);
            triangles.push([c(q[0]), c(q[2]), c(q[3])]);
        }
        TriMesh { triangles }
    }

    #[test]
    fn cube_inside_outside_and_volume() {
        let m = cuboid(Vec3::ZERO, Vec3::ONE);
        assert!(m.contains(Vec3::splat(0.5), 0.01));
        assert!(!m.contains(Vec3::new(1.5, 0.5, 0.5), 0.01));
        assert!(!m.contains(Vec3::new(-0.5, 0.5, 0.5), 0.01));
        // On a lattice whose rows pass through the mesh's edges (y = z = 0 and 1).
        assert!(m.contains(Vec3::new(0.5, 0.0, 0.0), 0.01));
        assert!((m.volume() - 1.0).abs() < 1e-6);
        assert!(m.check(Path::new("cube"), "t").is_ok());
    }

    #[test]
    fn signed_distance_and_surface_samples_of_a_cube() {
        let m = cuboid(Vec3::ZERO, Vec3::ONE);
        assert!((m.signed_distance(Vec3::splat(0.5)) + 0.5).abs() < 1e-6);
        assert!((m.signed_distance(Vec3::new(2.0, 0.5, 0.5)) - 1.0).abs() < 1e-6);
        assert!((m.signed_distance(Vec3::new(2.0, 2.0, 0.5)) - 2f32.sqrt()).abs() < 1e-6);
        let pts = m.sample_surface(0.1);
        assert!(pts.iter().all(|p| m.signed_distance(*p).abs() < 1e-5));
        // Every point of the surface lies within s of a sample.
        for probe in [Vec3::new(0.33, 0.0, 0.71), Vec3::new(1.0, 0.52, 0.18)] {
            let near = pts
                .iter()
                .map(|p| p.distance(probe))
                .fold(f32::INFINITY, f32::min);
            assert!(near < 0.1, "{probe}: {near}");
        }
    }

    #[test]
    fn an_open_mesh_is_refused() {
        let mut m = cuboid(Vec3::ZERO, Vec3::ONE);
        m.triangles.pop();
        let e = m.check(Path::new("open.obj"), "t").unwrap_err().to_string();
        assert!(e.contains("not closed"), "{e}");
    }

    #[test]
    fn transform_scales_rotates_then_translates() {
        let t = Transform {
            scale: 2.0,
            rotation_deg: Vec3::new(0.0, 0.0, 90.0),
            translation: Vec3::new(1.0, 0.0, 0.0),
        };
        let p = t.apply(Vec3::X);
        assert!((p - Vec3::new(1.0, 2.0, 0.0)).length() < 1e-6, "{p}");
    }
}
