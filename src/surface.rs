//! Surface meshes of the fluid for rendering tools (Blender, ParaView, Houdini), reconstructed
//! with `splashsurf_lib` (Löschner, Böttcher, Jeske and Bender, "Weighted Laplacian Smoothing
//! for Surface Reconstruction of Particle-based Fluids", VMV 2023; the library of the group that
//! makes SPlisHSPlasH): an SPH density with its cubic spline kernel on a sparse marching-cubes
//! grid, the iso-surface at a fraction of the rest density.
//!
//! splashsurf_lib takes each particle as a sphere of radius r and derives its volume as 4/3 π r³.
//! gpu-sph gives it the particle's own volume, r = (3m / 4πρ0)^(1/3) (≈ 0.62 s for m = ρ0 s³),
//! and the kernel's compact support h, the same support the simulation's kernels have. So a
//! resting lattice interpolates to about ρ0 inside and the iso threshold is a fraction of ρ0.
//!
//! Worked example: m = 1e-3 kg, ρ0 = 1000 kg/m³ give r = (3e-6 / 4π)^(1/3) = 6.20 mm; with the
//! default cube size 0.5 the marching-cubes cells are 3.10 mm.
//!
//! A 2D run's surface ([`reconstruct`] with `dim` 2) is its free surface's contour line: the
//! same SPH density, with the cubic spline's 2D normalisation 40/(7π h²) (Monaghan 2005), on a
//! square grid of cells `cube_size` r wide (r = √(m/πρ0), the disc of the particle's own area,
//! m being a mass per metre of depth), traced at the same fraction of ρ0 by marching squares
//! (the `contour` crate, d3-contour's algorithm, its corners placed by linear interpolation).
//! So that every mesh format and reader carries it, the line is written as a ribbon: swept
//! across the slab one spacing deep that the 2D particles stand for (z from −s/2 to s/2), two
//! triangles per segment. Worked example: m = 0.1 kg/m, ρ0 = 1000 give r = √(1e-4/π) = 5.64 mm,
//! cells of 2.82 mm.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::thread::JoinHandle;

use glam::Vec3;
#[cfg(feature = "native")]
use splashsurf_lib::mesh::MeshWithData;
use splashsurf_lib::mesh::{Mesh3d, TriMesh3d};
use splashsurf_lib::nalgebra::Vector3;

use crate::params::SphConfig;
use crate::{Error, Result};

/// File format of the meshes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MeshFormat {
    /// Wavefront OBJ (text): Blender, Houdini, most tools.
    Obj,
    /// Binary little-endian PLY: Blender, ParaView, MeshLab.
    Ply,
    /// Legacy VTK unstructured grid: ParaView.
    Vtk,
    /// VTK XML unstructured grid: ParaView; with `--export-format vtu` the meshes join the
    /// frames' `.pvd` collection (which holds VTK XML files only) as its part 1.
    Vtu,
}

impl MeshFormat {
    /// The file extension.
    pub fn extension(self) -> &'static str {
        match self {
            MeshFormat::Obj => "obj",
            MeshFormat::Ply => "ply",
            MeshFormat::Vtk => "vtk",
            MeshFormat::Vtu => "vtu",
        }
    }
}

/// The most Laplacian smoothing iterations: far more than any use (each shrinks the mesh), few
/// enough to finish.
pub const MAX_SMOOTHING: u32 = 1000;

/// The reconstruction's settings.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SurfaceSettings {
    /// Iso value as a fraction of ρ0 (splashsurf's default 0.6).
    pub iso_threshold: f32,
    /// Marching-cubes cell edge relative to the particle radius r (splashsurf's default 0.5).
    pub cube_size: f32,
    /// Laplacian smoothing iterations with β = 0.5 (0: none). Each one shrinks the mesh a little.
    pub smoothing: u32,
    /// Mesh file format.
    pub format: MeshFormat,
}

impl Default for SurfaceSettings {
    fn default() -> Self {
        Self {
            iso_threshold: 0.6,
            cube_size: 0.5,
            smoothing: 0,
            format: MeshFormat::Obj,
        }
    }
}

impl SurfaceSettings {
    /// Rejects settings the reconstruction cannot use.
    pub fn validate(&self) -> Result<()> {
        if !(self.iso_threshold.is_finite() && self.iso_threshold > 0.0) {
            return Err(Error::input(format!(
                "--surface-threshold must be a finite fraction of ρ0 > 0 (typical 0.6), got {}",
                self.iso_threshold
            )));
        }
        // The marching cubes' work grows as the inverse cube of the cell: at 0.01 r a small
        // frame took hours; far above the kernel's radius (about 4 r at h = 2s) the surface is
        // gone, and splashsurf's grid index overflows.
        if !(0.1..=10.0).contains(&self.cube_size) {
            return Err(Error::input(format!(
                "--surface-cube-size must be 0.1 to 10 particle radii (typical 0.5), got {}",
                self.cube_size
            )));
        }
        if self.smoothing > MAX_SMOOTHING {
            return Err(Error::input(format!(
                "--surface-smoothing must be at most {MAX_SMOOTHING} iterations (typical 0 to 50; each shrinks the mesh), got {}",
                self.smoothing
            )));
        }
        Ok(())
    }
}

/// What a frame must carry for its surface to match the run: written as PLY header comments
/// `gpu-sph h …`, `gpu-sph s …`, `gpu-sph m …`, `gpu-sph rho0 …`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameMeta {
    /// Smoothing radius (kernel support) h, m.
    pub h: f32,
    /// Particle spacing s, m.
    pub s: f32,
    /// Particle mass m, kg.
    pub m: f32,
    /// Rest density ρ0, kg/m³.
    pub rho0: f32,
    /// The run's dimension: 3, or 2 for a run in the plane z = 0 (m per metre of depth).
    pub dim: u32,
}

const KEYS: [&str; 4] = ["h", "s", "m", "rho0"];

impl FrameMeta {
    /// The frame description of a run with `config`.
    pub fn of(config: &SphConfig) -> Self {
        Self {
            h: config.smoothing_radius,
            s: config.spacing,
            m: config.particle_mass,
            rho0: config.rest_density,
            dim: config.dim,
        }
    }

    /// The particle's own volume as a sphere: r = (3m / 4πρ0)^(1/3); in 2D its own area as a
    /// disc, r = √(m / πρ0).
    pub fn particle_radius(&self) -> f32 {
        let v = self.m as f64 / self.rho0 as f64;
        match self.dim {
            2 => (v / std::f64::consts::PI).sqrt() as f32,
            _ => (3.0 * v / (4.0 * std::f64::consts::PI)).cbrt() as f32,
        }
    }

    /// The PLY header comments (a 2D run's with `gpu-sph dim 2`).
    pub fn comments(&self) -> Vec<String> {
        let v = [self.h, self.s, self.m, self.rho0];
        let mut lines: Vec<String> = KEYS
            .iter()
            .zip(v)
            .map(|(k, v)| format!("gpu-sph {k} {v:e}"))
            .collect();
        if self.dim == 2 {
            lines.push("gpu-sph dim 2".into());
        }
        lines
    }

    /// Reads the description back from PLY comments; `None` when any value is missing.
    pub fn from_comments(comments: &[String]) -> Option<Self> {
        let get = |key: &str| {
            comments.iter().find_map(|c| {
                let mut w = c.split_whitespace();
                match (w.next(), w.next(), w.next()) {
                    (Some("gpu-sph"), Some(k), Some(v)) if k == key => v.parse::<f32>().ok(),
                    _ => None,
                }
            })
        };
        let meta = Self {
            h: get("h")?,
            s: get("s")?,
            m: get("m")?,
            rho0: get("rho0")?,
            dim: match get("dim") {
                Some(2.0) => 2,
                _ => 3,
            },
        };
        let ok = [meta.h, meta.s, meta.m, meta.rho0]
            .iter()
            .all(|v| v.is_finite() && *v > 0.0);
        ok.then_some(meta)
    }
}

/// A reconstructed surface: vertices and triangles.
pub type Mesh = TriMesh3d<f32>;

/// Reconstructs the surface of `positions`.
pub fn reconstruct(positions: &[Vec3], meta: &FrameMeta, s: &SurfaceSettings) -> Result<Mesh> {
    s.validate()?;
    if positions.is_empty() {
        return Err(Error::input(
            "no particles to reconstruct a surface from: give a frame with at least one particle",
        ));
    }
    if let Some(i) = positions.iter().position(|p| !p.is_finite()) {
        return Err(Error::input(format!(
            "particle {i} is at {}: a surface needs finite positions",
            positions[i]
        )));
    }
    if meta.dim == 2 {
        return reconstruct_planar(positions, meta, s);
    }
    let r = meta.particle_radius();
    let mut params = splashsurf_lib::Parameters::new(r, meta.h, s.cube_size * r);
    params.rest_density = meta.rho0;
    params.iso_surface_threshold = s.iso_threshold;
    let points: Vec<Vector3<f32>> = positions
        .iter()
        .map(|p| Vector3::new(p.x, p.y, p.z))
        .collect();
    let recon = splashsurf_lib::reconstruct_surface::<i64, f32>(&points, &params)
        .map_err(|e| Error::input(format!("surface reconstruction failed: {e:#}")))?;
    let mut mesh = recon.mesh;
    if s.smoothing > 0 {
        let connectivity = mesh.vertex_vertex_connectivity();
        let weights = vec![1.0f32; mesh.vertices.len()];
        splashsurf_lib::postprocessing::par_laplacian_smoothing_inplace(
            &mut mesh,
            &connectivity,
            s.smoothing as usize,
            0.5,
            &weights,
        );
    }
    Ok(mesh)
}

/// The most grid nodes a 2D surface samples (a frame's extent over the cell's edge, squared):
/// beyond it a typo in the cell size would exhaust memory.
const MAX_PLANAR_NODES: usize = 1 << 28;

/// [`reconstruct`] in 2D (the module doc): the contour line of the density at the iso
/// fraction of ρ0, written as a ribbon one spacing deep.
fn reconstruct_planar(positions: &[Vec3], meta: &FrameMeta, s: &SurfaceSettings) -> Result<Mesh> {
    use rayon::prelude::*;
    let r = meta.particle_radius();
    let cell = s.cube_size * r;
    let h = meta.h;
    let plane: Vec<glam::Vec2> = positions.iter().map(|p| p.truncate()).collect();
    let (lo, hi) = plane.iter().fold(
        (
            glam::Vec2::splat(f32::INFINITY),
            glam::Vec2::splat(f32::NEG_INFINITY),
        ),
        |(lo, hi), p| (lo.min(*p), hi.max(*p)),
    );
    // A margin past the kernel's reach, so the border's nodes are empty and every line closes.
    let origin = lo - glam::Vec2::splat(h + 2.0 * cell);
    let nodes = ((hi + glam::Vec2::splat(h + 2.0 * cell) - origin) / cell).ceil() + 1.0;
    let (nx, ny) = (nodes.x as usize, nodes.y as usize);
    if nx.saturating_mul(ny) > MAX_PLANAR_NODES {
        return Err(Error::input(format!(
            "a 2D surface of cells {cell:.3e} m over {:.3} × {:.3} m would sample {nx} × {ny} grid nodes, more than 2^28: raise --surface-cube-size",
            hi.x - lo.x,
            hi.y - lo.y
        )));
    }
    let search = crate::neighbours::NeighbourSearch::planar(&plane, h)?;
    let kernel = crate::kernel::Kernel::CubicSpline;
    let (h64, m) = (h as f64, meta.m as f64);
    let density: Vec<f64> = (0..nx * ny)
        .into_par_iter()
        .map(|k| {
            let at = origin + glam::Vec2::new((k % nx) as f32, (k / nx) as f32) * cell;
            let mut rho = 0.0f64;
            search.for_each_near(at.extend(0.0), |_, d2| {
                rho += m * kernel.w64_in(h64, (d2 as f64).sqrt() / h64, 2);
            });
            rho
        })
        .collect();
    let iso = (s.iso_threshold * meta.rho0) as f64;
    let lines = contour::ContourBuilder::new(nx, ny, true)
        .x_origin(origin.x as f64)
        .y_origin(origin.y as f64)
        .x_step(cell as f64)
        .y_step(cell as f64)
        .lines(&density, &[iso])
        .map_err(|e| Error::input(format!("2D surface tracing failed: {e:?}")))?;
    let mut mesh = Mesh::default();
    for line in lines.iter().flat_map(|l| l.geometry().0.iter()) {
        let mut ring: Vec<glam::Vec2> = line
            .0
            .iter()
            .map(|c| glam::Vec2::new(c.x as f32, c.y as f32))
            .collect();
        // d3-contour's rings repeat their first point last.
        let closed = ring.len() > 2 && ring.first() == ring.last();
        if closed {
            ring.pop();
        }
        smooth_ring(&mut ring, s.smoothing, closed);
        ribbon(&mut mesh, &ring, closed, 0.5 * meta.s);
    }
    Ok(mesh)
}

/// Laplacian smoothing of a line, β = 0.5, `iterations` times (an open line keeps its ends).
fn smooth_ring(ring: &mut [glam::Vec2], iterations: u32, closed: bool) {
    let n = ring.len();
    if n < 3 {
        return;
    }
    for _ in 0..iterations {
        let before = ring.to_vec();
        for (i, p) in ring.iter_mut().enumerate() {
            let (prev, next) = match (closed, i) {
                (true, _) => (before[(i + n - 1) % n], before[(i + 1) % n]),
                (false, 0) => continue,
                (false, i) if i == n - 1 => continue,
                (false, i) => (before[i - 1], before[i + 1]),
            };
            *p += 0.5 * (0.5 * (prev + next) - *p);
        }
    }
}

/// Appends `ring` swept from z = −half to half: two vertices per point, two triangles per
/// segment (the closing one too when `closed`).
fn ribbon(mesh: &mut Mesh, ring: &[glam::Vec2], closed: bool, half: f32) {
    let first = mesh.vertices.len();
    for p in ring {
        mesh.vertices.push(Vector3::new(p.x, p.y, -half));
        mesh.vertices.push(Vector3::new(p.x, p.y, half));
    }
    let n = ring.len();
    let segments = if closed { n } else { n.saturating_sub(1) };
    for k in 0..segments {
        let (a, b) = (first + 2 * k, first + 2 * ((k + 1) % n));
        mesh.triangles.push([a, b, a + 1]);
        mesh.triangles.push([a + 1, b, b + 1]);
    }
}

/// Writes `mesh` to `path` in `format`.
#[cfg(feature = "native")]
pub fn write_mesh(mesh: &Mesh, path: &Path, format: MeshFormat) -> Result<()> {
    let data = MeshWithData::new(mesh.clone());
    let written = match format {
        MeshFormat::Obj => splashsurf_lib::io::obj_format::mesh_to_obj(&data, path),
        MeshFormat::Ply => splashsurf_lib::io::ply_format::mesh_to_ply(&data, path),
        MeshFormat::Vtk => {
            splashsurf_lib::io::vtk_format::write_vtk(&data, path, "gpu-sph fluid surface")
        }
        MeshFormat::Vtu => {
            let vertices: Vec<Vec3> = mesh
                .vertices
                .iter()
                .map(|v| Vec3::new(v.x, v.y, v.z))
                .collect();
            return crate::series::write_mesh_vtu(path, &vertices, &mesh.triangles);
        }
    };
    written.map_err(|e| Error::file(path, format!("cannot write the mesh: {e:#}")))
}

/// Reads a mesh written by [`write_mesh`] (OBJ or PLY, by extension).
#[cfg(feature = "native")]
pub fn read_mesh(path: &Path) -> Result<Mesh> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    let read = match ext.as_deref() {
        Some("obj") => splashsurf_lib::io::obj_format::surface_mesh_from_obj::<f32, _>(path),
        Some("ply") => splashsurf_lib::io::ply_format::surface_mesh_from_ply::<f32, _>(path),
        _ => return Err(Error::file(path, "unknown mesh type: use .obj or .ply")),
    };
    read.map(|m| m.mesh)
        .map_err(|e| Error::file(path, format!("cannot read the mesh: {e:#}")))
}

/// Creates the output directory where missing and rejects one that cannot be written, before
/// any work.
pub fn check_output_dir(dir: &Path) -> Result<()> {
    crate::io::ensure_dir(dir)?;
    let probe = dir.join(format!(".gpu-sph-write-test-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| {
        Error::file(
            dir,
            format!("--surface-dir is not writable ({e}): choose a writable directory"),
        )
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// The mesh file of `step` in `dir`: `surface_<step>.<ext>`, zero-padded like the frames so
/// the names sort in step order.
pub fn mesh_path(dir: &Path, step: u64, format: MeshFormat) -> PathBuf {
    dir.join(format!("surface_{step:06}.{}", format.extension()))
}

/// One frame to surface.
struct Job {
    step: u64,
    /// Its simulated time, s.
    t: f64,
    positions: Vec<Vec3>,
}

/// The `.pvd` collection the meshes join (`--export-format vtu` with `--surface-format vtu`).
pub type Shared = std::sync::Arc<std::sync::Mutex<crate::series::Collection>>;

/// Reconstructs and writes meshes on a thread of its own, so a run keeps stepping meanwhile.
/// At most two frames wait in line; a run that outpaces the reconstruction waits for it.
pub struct SurfaceWriter {
    jobs: Option<mpsc::SyncSender<Job>>,
    worker: Option<JoinHandle<Result<u64>>>,
}

impl SurfaceWriter {
    /// Starts the worker writing into `dir`; it advances `bar` once per mesh written, and adds
    /// each mesh to `collection` when given.
    pub fn start(
        dir: PathBuf,
        meta: FrameMeta,
        settings: SurfaceSettings,
        bar: indicatif::ProgressBar,
        collection: Option<Shared>,
    ) -> Result<Self> {
        settings.validate()?;
        check_output_dir(&dir)?;
        let (tx, rx) = mpsc::sync_channel::<Job>(2);
        let worker = std::thread::Builder::new()
            .name("gpu-sph-surface".into())
            .spawn(move || -> Result<u64> {
                let mut written = 0;
                for job in rx {
                    let mesh = reconstruct(&job.positions, &meta, &settings)?;
                    let path = mesh_path(&dir, job.step, settings.format);
                    write_mesh(&mesh, &path, settings.format)?;
                    if let Some(c) = &collection {
                        let mut c = c.lock().unwrap_or_else(|e| e.into_inner());
                        let name = crate::series::relative(&path, c.dir());
                        // ParaView reads '/' on every platform.
                        let name = name.to_string_lossy().replace('\\', "/");
                        c.add(job.t, crate::series::SURFACES, &name)?;
                    }
                    written += 1;
                    bar.inc(1);
                }
                Ok(written)
            })
            .map_err(|e| Error::input(format!("cannot start the surface thread: {e}")))?;
        Ok(Self {
            jobs: Some(tx),
            worker: Some(worker),
        })
    }

    /// Queues the frame of `step`, at simulated time `t` (positions in input order).
    pub fn submit(&mut self, step: u64, t: f64, positions: Vec<Vec3>) -> Result<()> {
        let sent = self
            .jobs
            .as_ref()
            .map(|tx| tx.send(Job { step, t, positions }).is_ok())
            .unwrap_or(false);
        if sent {
            Ok(())
        } else {
            // The worker stopped: its error says why.
            self.finish()
                .and(Err(Error::input("the surface thread stopped")))
        }
    }

    /// Waits for the queued meshes; returns how many were written.
    pub fn finish(&mut self) -> Result<u64> {
        drop(self.jobs.take());
        match self.worker.take() {
            Some(w) => w
                .join()
                .map_err(|_| Error::input("the surface thread panicked"))?,
            None => Ok(0),
        }
    }
}

impl Drop for SurfaceWriter {
    fn drop(&mut self) {
        let _ = self.finish();
    }
}

/// Edges used by other than exactly two triangles (0 for a closed manifold mesh).
pub fn open_edges(mesh: &Mesh) -> usize {
    let mut count = std::collections::HashMap::<(usize, usize), u32>::new();
    for t in &mesh.triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *count.entry((a.min(b), a.max(b))).or_default() += 1;
        }
    }
    count.values().filter(|&&c| c != 2).count()
}

/// The volume a closed, consistently oriented mesh encloses (divergence theorem), m³.
pub fn enclosed_volume(mesh: &Mesh) -> f64 {
    let v = |i: usize| {
        let p = mesh.vertices[i];
        glam::DVec3::new(p.x as f64, p.y as f64, p.z as f64)
    };
    mesh.triangles
        .iter()
        .map(|t| v(t[0]).dot(v(t[1]).cross(v(t[2]))) / 6.0)
        .sum::<f64>()
        .abs()
}

/// Particle frames to surface: one `.ply` file, or every `.ply` in a directory in name order.
pub fn frames_in(path: &Path) -> Result<Vec<PathBuf>> {
    if path.is_file() {
        return Ok(vec![path.to_path_buf()]);
    }
    if !path.is_dir() {
        return Err(Error::file(
            path,
            "--surface-from needs an existing .ply frame or a directory of them",
        ));
    }
    let mut out: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::file(path, format!("cannot list: {e}")))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e.eq_ignore_ascii_case("ply"))
        })
        .collect();
    out.sort();
    if out.is_empty() {
        return Err(Error::file(
            path,
            "holds no .ply frames: export some with --export-dir",
        ));
    }
    Ok(out)
}

/// The step a frame's name carries (`frame_000120.ply` → 120), else its position in the list.
pub fn step_of(path: &Path, index: usize) -> u64 {
    path.file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.rsplit('_').next())
        .and_then(|d| d.parse().ok())
        .unwrap_or(index as u64)
}

/// Reads a frame for surfacing: its positions and the run's description from its comments,
/// or `fallback` when it has none (a file from another tool).
pub fn read_frame(path: &Path, fallback: Option<FrameMeta>) -> Result<(Vec<Vec3>, FrameMeta)> {
    let data = crate::io::read_particles(path)?;
    let meta = FrameMeta::from_comments(&data.comments).or(fallback).ok_or_else(|| {
        Error::file(
            path,
            "carries no gpu-sph header comments (h, s, m, rho0): give --spacing, --smoothing-radius, --particle-mass and --rest-density as in its run",
        )
    })?;
    Ok((data.positions, meta))
}

/// [`write_mesh`] of the native build (feature `native`: splashsurf_lib's writers); a build
/// without it (the web page's) refuses in one line.
#[cfg(not(feature = "native"))]
pub fn write_mesh(_mesh: &Mesh, path: &Path, _format: MeshFormat) -> Result<()> {
    Err(Error::file(
        path,
        "this build writes no mesh files (the native gpu-sph does)",
    ))
}

/// [`read_mesh`] of the native build; here one line naming it.
#[cfg(not(feature = "native"))]
pub fn read_mesh(path: &Path) -> Result<Mesh> {
    Err(Error::file(
        path,
        "this build reads no mesh files (the native gpu-sph does)",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radius_of_the_lattice_mass() {
        let meta = FrameMeta {
            h: 0.02,
            s: 0.01,
            m: 1e-3,
            rho0: 1000.0,
            dim: 3,
        };
        assert!((meta.particle_radius() - 6.2035e-3).abs() < 1e-6);
    }

    #[test]
    fn comments_round_trip() {
        let meta = FrameMeta {
            h: 0.021,
            s: 0.0105,
            m: 1.1e-3,
            rho0: 998.0,
            dim: 3,
        };
        assert_eq!(FrameMeta::from_comments(&meta.comments()), Some(meta));
        assert_eq!(FrameMeta::from_comments(&meta.comments()[..3]), None);
        assert_eq!(FrameMeta::from_comments(&["gpu-sph h nan".into(); 1]), None);
    }

    #[test]
    fn step_from_frame_names() {
        assert_eq!(step_of(Path::new("a/frame_000120.ply"), 7), 120);
        assert_eq!(step_of(Path::new("a/other.ply"), 7), 7);
    }

    #[test]
    fn bad_settings_and_inputs() {
        let meta = FrameMeta {
            h: 0.02,
            s: 0.01,
            m: 1e-3,
            rho0: 1000.0,
            dim: 3,
        };
        let ok = SurfaceSettings::default();
        assert!(reconstruct(&[], &meta, &ok).is_err());
        // A cube of 0.01 r ran for hours and one of 1e30 r overflowed splashsurf's grid index
        // (a panic).
        for bad in [0.01, 1e30] {
            let s = SurfaceSettings {
                cube_size: bad,
                ..ok
            };
            assert!(reconstruct(&[Vec3::ZERO], &meta, &s).is_err());
        }
        for bad in [0.0, -1.0, f32::NAN] {
            let s = SurfaceSettings {
                cube_size: bad,
                ..ok
            };
            assert!(reconstruct(&[Vec3::ZERO], &meta, &s).is_err());
            let s = SurfaceSettings {
                iso_threshold: bad,
                ..ok
            };
            assert!(reconstruct(&[Vec3::ZERO], &meta, &s).is_err());
        }
        assert!(reconstruct(&[Vec3::NAN], &meta, &ok).is_err());
        let s = SurfaceSettings {
            smoothing: MAX_SMOOTHING + 1,
            ..ok
        };
        let e = reconstruct(&[Vec3::ZERO], &meta, &s)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--surface-smoothing must be at most"), "{e}");
    }

    /// A 2D block's surface is one closed line around it (a ribbon one spacing deep) that
    /// encloses the block's area, and a 2D frame's comments say its dimension.
    #[test]
    fn a_resting_2d_block_is_one_line_around_its_area() {
        let s = 0.01f32;
        let (nx, ny) = (40, 30);
        let pos: Vec<Vec3> = (0..ny)
            .flat_map(|j| (0..nx).map(move |i| Vec3::new(i as f32, j as f32, 0.0) * s))
            .collect();
        let meta = FrameMeta {
            h: 3.0 * s,
            s,
            m: 1000.0 * s * s,
            rho0: 1000.0,
            dim: 2,
        };
        assert_eq!(FrameMeta::from_comments(&meta.comments()), Some(meta));
        assert!((meta.particle_radius() - 5.6419e-3).abs() < 1e-6);
        let mesh = reconstruct(&pos, &meta, &SurfaceSettings::default()).unwrap();
        assert!(mesh.vertices.iter().all(|v| v.z.abs() == 0.5 * s));
        // Two vertices per point of the line and two triangles per segment: one closed line.
        assert_eq!(mesh.triangles.len(), mesh.vertices.len());
        let line: Vec<glam::Vec2> = mesh
            .vertices
            .iter()
            .step_by(2)
            .map(|v| glam::Vec2::new(v.x, v.y))
            .collect();
        let twice: f32 = (0..line.len())
            .map(|k| line[k].perp_dot(line[(k + 1) % line.len()]))
            .sum();
        // The particles stand for the cells of side s around them: 40 s × 30 s.
        let want = (nx * ny) as f32 * s * s;
        let area = 0.5 * twice.abs();
        assert!((area / want - 1.0).abs() < 0.05, "area {area} vs {want}");
        let top = line.iter().map(|p| p.y).fold(f32::MIN, f32::max);
        assert!((top - (ny as f32 - 0.5) * s).abs() < 0.5 * s, "top {top}");
    }

    #[test]
    fn a_resting_cube_is_closed_and_holds_its_volume() {
        let s = 0.01f32;
        let n = 12;
        let mut pos = Vec::new();
        for i in 0..n {
            for j in 0..n {
                for k in 0..n {
                    pos.push(Vec3::new(i as f32, j as f32, k as f32) * s);
                }
            }
        }
        let meta = FrameMeta {
            h: 2.0 * s,
            s,
            m: 1000.0 * s * s * s,
            rho0: 1000.0,
            dim: 3,
        };
        let mesh = reconstruct(&pos, &meta, &SurfaceSettings::default()).unwrap();
        assert_eq!(open_edges(&mesh), 0);
        let want = pos.len() as f64 * (s as f64).powi(3);
        let got = enclosed_volume(&mesh);
        assert!((got / want - 1.0).abs() < 0.05, "volume {got} vs {want}");
    }
}
