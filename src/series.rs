//! Particle frames as time series for the tools people use: VTK XML unstructured grids
//! (`.vtu`, written by the vtkio crate) gathered by a ParaView collection (`.pvd`) that
//! carries each frame's simulated time, so ParaView plays a run at its own pace; and the
//! classic bgeo of Houdini and partio (`.bgeo`, written by splashsurf_lib), as SPlisHSPlasH
//! exports. Every frame holds, per particle in input order: position, velocity, density,
//! pressure and the original id.
//!
//! Worked example: a run with `--export-dir out --export-every 10 --export-format vtu` writes
//! `out/frame_000000.vtu`, `out/frame_000010.vtu`, … and `out/frames.pvd`, whose entries read
//! `<DataSet timestep="0.0105" part="0" file="frame_000010.vtu"/>`: opened in ParaView, the
//! time slider runs in simulated seconds.

use std::path::{Path, PathBuf};

use glam::Vec3;

use crate::{Error, Result};

/// How particle frames are written (`--export-format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// Binary PLY with position, velocity and density (and the run's h, s, m, ρ0 as comments,
    /// which `--surface-from` reads).
    #[default]
    Ply,
    /// VTK XML unstructured grid per frame and a `frames.pvd` collection with the times
    /// (ParaView).
    Vtu,
    /// Houdini's classic bgeo per frame (Houdini, partio).
    Bgeo,
}

impl ExportFormat {
    /// The file name extension of a frame.
    pub fn extension(self) -> &'static str {
        match self {
            Self::Ply => "ply",
            Self::Vtu => "vtu",
            Self::Bgeo => "bgeo",
        }
    }
}

/// One frame's particles, in input order.
pub struct Frame<'a> {
    /// Positions, m.
    pub pos: &'a [Vec3],
    /// Velocities, m/s.
    pub vel: &'a [Vec3],
    /// Densities, kg/m³.
    pub density: &'a [f32],
    /// Pressures, Pa.
    pub pressure: &'a [f32],
    /// Original ids (the row of each particle in the run's input).
    pub id: &'a [u32],
}

#[cfg(feature = "native")]
fn flat(v: &[Vec3]) -> Vec<f32> {
    v.iter().flat_map(|p| p.to_array()).collect()
}

/// Writes `frame` as a VTK XML unstructured grid at `path`: one vertex cell per particle,
/// point data `velocity` (3 components), `density`, `pressure` and `id`.
#[cfg(feature = "native")]
pub fn write_vtu(path: &Path, frame: &Frame<'_>) -> Result<()> {
    use vtkio::model::{
        Attribute, Attributes, CellType, Cells, UnstructuredGridPiece, VertexNumbers,
    };
    let n = frame.pos.len() as u64;
    let piece = UnstructuredGridPiece {
        points: flat(frame.pos).into(),
        cells: Cells {
            cell_verts: VertexNumbers::XML {
                connectivity: (0..n).collect(),
                offsets: (1..=n).collect(),
            },
            types: vec![CellType::Vertex; n as usize],
        },
        data: Attributes {
            point: vec![
                Attribute::vectors("velocity").with_data(flat(frame.vel)),
                Attribute::scalars("density", 1).with_data(frame.density.to_vec()),
                Attribute::scalars("pressure", 1).with_data(frame.pressure.to_vec()),
                Attribute::scalars("id", 1).with_data(frame.id.to_vec()),
            ],
            cell: Vec::new(),
        },
    };
    export_vtu(path, piece, "gpu-sph particles", "VTK frame")
}

/// Writes a triangle mesh (`vertices` in m, `triangles` as vertex indices) as a VTK XML
/// unstructured grid at `path`: the surface meshes' format that a `.pvd` collection can hold.
#[cfg(feature = "native")]
pub fn write_mesh_vtu(path: &Path, vertices: &[Vec3], triangles: &[[usize; 3]]) -> Result<()> {
    use vtkio::model::{Attributes, CellType, Cells, UnstructuredGridPiece, VertexNumbers};
    let m = triangles.len() as u64;
    let piece = UnstructuredGridPiece {
        points: flat(vertices).into(),
        cells: Cells {
            cell_verts: VertexNumbers::XML {
                connectivity: triangles.iter().flatten().map(|&v| v as u64).collect(),
                offsets: (1..=m).map(|k| 3 * k).collect(),
            },
            types: vec![CellType::Triangle; triangles.len()],
        },
        data: Attributes::new(),
    };
    export_vtu(path, piece, "gpu-sph fluid surface", "mesh")
}

/// Writes one unstructured-grid `piece` as a VTK XML file at `path`; an error names `what`.
#[cfg(feature = "native")]
fn export_vtu(
    path: &Path,
    piece: vtkio::model::UnstructuredGridPiece,
    title: &str,
    what: &str,
) -> Result<()> {
    use vtkio::model::{ByteOrder, DataSet, Version, Vtk};
    let vtk = Vtk {
        version: Version::XML { major: 1, minor: 0 },
        title: title.into(),
        byte_order: ByteOrder::LittleEndian,
        data: DataSet::inline(piece),
        file_path: None,
    };
    vtk.export(path)
        .map_err(|e| Error::file(path, format!("cannot write the {what}: {e}")))
}

/// `to` as a path relative to the directory `from` (`../surfaces/x.vtu`), or `to` itself when
/// the two share no root; both are made absolute first.
pub fn relative(to: &Path, from: &Path) -> PathBuf {
    let abs = |p: &Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let (to, from) = (abs(to), abs(from));
    let (a, b): (Vec<_>, Vec<_>) = (to.components().collect(), from.components().collect());
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    if common == 0 {
        return to;
    }
    let mut out = PathBuf::new();
    for _ in common..b.len() {
        out.push("..");
    }
    for c in &a[common..] {
        out.push(c);
    }
    out
}

/// Writes `frame` as a classic (version 5) bgeo at `path`: point attributes `v` (velocity, the
/// name Houdini gives it), `density`, `pressure` and `id`.
#[cfg(feature = "native")]
pub fn write_bgeo(path: &Path, frame: &Frame<'_>) -> Result<()> {
    use splashsurf_lib::io::bgeo_format::{
        AttribDefinition, AttributeStorage, BgeoAttributeType as AttribType, BgeoFile, BgeoHeader,
        write_bgeo_file,
    };
    let n = i32::try_from(frame.pos.len())
        .map_err(|_| Error::file(path, "more than 2^31 particles for a bgeo file"))?;
    let defs = [
        ("v", 3, AttribType::Vector),
        ("density", 1, AttribType::Float),
        ("pressure", 1, AttribType::Float),
        ("id", 1, AttribType::Int),
    ];
    let bgeo = BgeoFile {
        header: BgeoHeader {
            magic_bytes: *b"Bgeo",
            version_char: b'V',
            version: 5,
            num_points: n,
            num_prims: 0,
            num_point_groups: 0,
            num_prim_groups: 0,
            num_point_attrib: defs.len() as i32,
            num_vertex_attrib: 0,
            num_prim_attrib: 0,
            num_attrib: 0,
        },
        positions: AttributeStorage::Vector(3, flat(frame.pos)),
        weights: AttributeStorage::Float(vec![1.0; frame.pos.len()]),
        attribute_definitions: defs
            .iter()
            .map(|&(name, size, attr_type)| AttribDefinition {
                name: name.into(),
                attr_type,
                size,
                default_values: vec![0; size],
            })
            .collect(),
        attribute_data: vec![
            ("v".into(), AttributeStorage::Vector(3, flat(frame.vel))),
            (
                "density".into(),
                AttributeStorage::Float(frame.density.to_vec()),
            ),
            (
                "pressure".into(),
                AttributeStorage::Float(frame.pressure.to_vec()),
            ),
            (
                "id".into(),
                AttributeStorage::Int(frame.id.iter().map(|&i| i as i32).collect()),
            ),
        ],
    };
    let file = std::fs::File::create(path)
        .map_err(|e| Error::file(path, format!("cannot create: {e}")))?;
    write_bgeo_file(&bgeo, std::io::BufWriter::new(file), false)
        .map_err(|e| Error::file(path, format!("cannot write the bgeo frame: {e:#}")))
}

/// A ParaView collection (`.pvd`): the frames written so far with their simulated times,
/// rewritten whole after each frame so the file is complete whenever the run stops.
#[derive(Debug)]
pub struct Collection {
    path: PathBuf,
    entries: Vec<Entry>,
}

/// One file of a collection: its simulated time, its part (0: the particles, 1: the surface
/// meshes) and its name relative to the collection.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// Simulated time, s.
    pub t: f64,
    /// The part: ParaView shows each part as a block of its own.
    pub part: u32,
    /// The file, relative to the collection's directory.
    pub file: String,
}

/// The collection's part of the particle frames.
pub const PARTICLES: u32 = 0;
/// The collection's part of the surface meshes.
pub const SURFACES: u32 = 1;

impl Collection {
    /// The collection `dir/frames.pvd`. A run resumed at time `resumed_at` keeps the entries
    /// of the file already there up to that time (later ones are being written anew); a fresh
    /// run starts empty.
    pub fn open(dir: &Path, resumed_at: Option<f64>) -> Result<Self> {
        let path = dir.join("frames.pvd");
        let entries = match resumed_at {
            Some(t) if path.exists() => read_pvd(&path)?.into_iter().filter(|e| e.t <= t).collect(),
            _ => Vec::new(),
        };
        Ok(Self { path, entries })
    }

    /// The collection's directory (entries' names are relative to it).
    pub fn dir(&self) -> &Path {
        self.path.parent().unwrap_or(Path::new("."))
    }

    /// Adds `file` (a name in the collection's directory) at simulated time `t` as `part` and
    /// rewrites the collection, its entries in time order (the meshes are written by a thread
    /// of their own, and may come late).
    pub fn add(&mut self, t: f64, part: u32, file: &str) -> Result<()> {
        self.entries.push(Entry {
            t,
            part,
            file: file.to_string(),
        });
        self.entries
            .sort_by(|a, b| a.t.total_cmp(&b.t).then(a.part.cmp(&b.part)));
        let mut text = String::from(
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"Collection\" version=\"0.1\" byte_order=\"LittleEndian\">\n  <Collection>\n",
        );
        for e in &self.entries {
            text += &format!(
                "    <DataSet timestep=\"{}\" part=\"{}\" file=\"{}\"/>\n",
                e.t, e.part, e.file
            );
        }
        text += "  </Collection>\n</VTKFile>\n";
        std::fs::write(&self.path, text)
            .map_err(|e| Error::file(&self.path, format!("cannot write: {e}")))
    }
}

/// The entries of a `.pvd` collection, in file order.
pub fn read_pvd(path: &Path) -> Result<Vec<Entry>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
    let attr = |line: &str, key: &str| -> Option<String> {
        let start = line.find(&format!("{key}=\""))? + key.len() + 2;
        let len = line[start..].find('"')?;
        Some(line[start..start + len].to_string())
    };
    text.lines()
        .filter(|l| l.trim_start().starts_with("<DataSet"))
        .map(|l| {
            let t = attr(l, "timestep").and_then(|t| t.parse::<f64>().ok());
            let part = attr(l, "part").map_or(Some(0), |p| p.parse::<u32>().ok());
            match (t, part, attr(l, "file")) {
                (Some(t), Some(part), Some(file)) => Ok(Entry { t, part, file }),
                _ => Err(Error::file(
                    path,
                    format!("not a DataSet entry: {}", l.trim()),
                )),
            }
        })
        .collect()
}

/// The file formats of other tools are the native program's (feature `native`): a build
/// without them (the web page's) refuses each such file in one line.
#[cfg(not(feature = "native"))]
fn not_built(path: &Path, what: &str) -> Result<()> {
    Err(Error::file(
        path,
        format!(
            "this build writes no {what} (the native gpu-sph does): use the CSV or PLY exports"
        ),
    ))
}

/// [`write_vtu`] of the native build; here one line naming it.
#[cfg(not(feature = "native"))]
pub fn write_vtu(path: &Path, _frame: &Frame<'_>) -> Result<()> {
    not_built(path, "VTK files")
}

/// [`write_mesh_vtu`] of the native build; here one line naming it.
#[cfg(not(feature = "native"))]
pub fn write_mesh_vtu(path: &Path, _vertices: &[Vec3], _triangles: &[[usize; 3]]) -> Result<()> {
    not_built(path, "VTK files")
}

/// [`write_bgeo`] of the native build; here one line naming it.
#[cfg(not(feature = "native"))]
pub fn write_bgeo(path: &Path, _frame: &Frame<'_>) -> Result<()> {
    not_built(path, "bgeo files")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Positions, velocities, densities, pressures and ids of `n` made-up particles.
    type Columns = (Vec<Vec3>, Vec<Vec3>, Vec<f32>, Vec<f32>, Vec<u32>);

    fn frame<'a>(
        pos: &'a [Vec3],
        vel: &'a [Vec3],
        density: &'a [f32],
        pressure: &'a [f32],
        id: &'a [u32],
    ) -> Frame<'a> {
        Frame {
            pos,
            vel,
            density,
            pressure,
            id,
        }
    }

    fn frame_of(n: usize) -> Columns {
        let pos = (0..n).map(|i| Vec3::new(i as f32, 0.5, -1.0)).collect();
        let vel = (0..n).map(|i| Vec3::new(0.0, -(i as f32), 2.0)).collect();
        let density = (0..n).map(|i| 1000.0 + i as f32).collect();
        let pressure = (0..n).map(|i| 10.0 * i as f32).collect();
        (pos, vel, density, pressure, (0..n as u32).collect())
    }

    #[test]
    fn a_collection_lists_its_frames_with_their_times_and_a_resume_keeps_the_earlier_ones() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let mut c = Collection::open(dir, None).unwrap();
        c.add(0.0, PARTICLES, "frame_000000.vtu").unwrap();
        c.add(0.0105, PARTICLES, "frame_000010.vtu").unwrap();
        c.add(0.021, PARTICLES, "frame_000020.vtu").unwrap();
        // A mesh written late still lands in time order, after its frame.
        c.add(0.0105, SURFACES, "surface_000010.vtu").unwrap();
        let read = read_pvd(&dir.join("frames.pvd")).unwrap();
        let entry = |t, part, file: &str| Entry {
            t,
            part,
            file: file.into(),
        };
        assert_eq!(read[1], entry(0.0105, PARTICLES, "frame_000010.vtu"));
        assert_eq!(read[2], entry(0.0105, SURFACES, "surface_000010.vtu"));
        assert_eq!(read.len(), 4);
        let resumed = Collection::open(dir, Some(0.0105)).unwrap();
        assert_eq!(resumed.entries.len(), 3);
    }

    #[test]
    fn a_vtu_frame_reads_back_with_its_attributes() {
        use vtkio::model::{Attribute, DataSet, Piece};
        let (pos, vel, density, pressure, id) = frame_of(5);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("frame.vtu");
        write_vtu(&path, &frame(&pos, &vel, &density, &pressure, &id)).unwrap();
        let vtk = vtkio::Vtk::import(&path).unwrap();
        let DataSet::UnstructuredGrid { pieces, .. } = vtk.data else {
            panic!("not an unstructured grid");
        };
        let Piece::Inline(piece) = &pieces[0] else {
            panic!("not inline");
        };
        assert_eq!(
            piece.points.clone().into_vec::<f32>().unwrap()[3..6],
            [1.0, 0.5, -1.0]
        );
        let named = |name: &str| {
            piece
                .data
                .point
                .iter()
                .find_map(|a| match a {
                    Attribute::DataArray(d) if d.name == name => Some(d.data.clone()),
                    _ => None,
                })
                .unwrap_or_else(|| panic!("no {name}"))
        };
        assert_eq!(
            named("velocity").into_vec::<f32>().unwrap()[3..6],
            [0.0, -1.0, 2.0]
        );
        assert_eq!(named("density").into_vec::<f32>().unwrap(), density);
        assert_eq!(named("pressure").into_vec::<f32>().unwrap(), pressure);
        assert_eq!(named("id").into_vec::<u32>().unwrap(), id);
    }

    #[test]
    fn a_bgeo_frame_reads_back_with_its_attributes() {
        use splashsurf_lib::io::bgeo_format::{AttributeStorage, load_bgeo_file};
        let (pos, vel, density, pressure, id) = frame_of(4);
        let tmp = tempfile::tempdir().unwrap();
        let path = tmp.path().join("frame.bgeo");
        write_bgeo(&path, &frame(&pos, &vel, &density, &pressure, &id)).unwrap();
        let read = load_bgeo_file(&path).unwrap();
        assert_eq!(read.header.num_points, 4);
        let AttributeStorage::Vector(3, p) = &read.positions else {
            panic!("positions");
        };
        assert_eq!(p[3..6], [1.0, 0.5, -1.0]);
        let named = |name: &str| {
            read.attribute_data
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, s)| s.clone())
                .unwrap_or_else(|| panic!("no {name}"))
        };
        match named("v") {
            AttributeStorage::Vector(3, v) => assert_eq!(v[3..6], [0.0, -1.0, 2.0]),
            other => panic!("v: {other:?}"),
        }
        match named("pressure") {
            AttributeStorage::Float(v) => assert_eq!(v, pressure),
            other => panic!("pressure: {other:?}"),
        }
        match named("id") {
            AttributeStorage::Int(v) => assert_eq!(v, [0, 1, 2, 3]),
            other => panic!("id: {other:?}"),
        }
        match named("density") {
            AttributeStorage::Float(v) => assert_eq!(v, density),
            other => panic!("density: {other:?}"),
        }
    }
}
