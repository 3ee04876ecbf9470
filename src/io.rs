//! Particle files in and out: CSV (header naming the columns) and PLY (ascii or binary).
//!
//! Input: `x,y,z` are required, `vx,vy,vz` optional (all three or none). Every value must be
//! finite. Output: one row per particle in input order with `x,y,z,vx,vy,vz,density`;
//! PLY output is binary little endian with `float` properties, readable by ParaView and Blender.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use glam::Vec3;
use ply_rs_bw::parser::{Parser, Reader};
use ply_rs_bw::ply::{
    ElementDef, Encoding, Header, Property, PropertyAccess, PropertyAccessResult, PropertyDef,
    PropertyType, ScalarType,
};
use ply_rs_bw::writer::Writer;

use crate::{Error, Result};

/// Particles read from a file.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ParticleData {
    /// Positions, metres.
    pub positions: Vec<Vec3>,
    /// Velocities, m/s (zero where the file has none).
    pub velocities: Vec<Vec3>,
    /// PLY header comments, in order (none for CSV).
    pub comments: Vec<String>,
}

/// The output columns, in order.
pub const OUTPUT_COLUMNS: [&str; 7] = ["x", "y", "z", "vx", "vy", "vz", "density"];

enum Format {
    Csv,
    Ply,
}

fn format_of(path: &Path) -> Result<Format> {
    match path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase)
        .as_deref()
    {
        Some("csv") => Ok(Format::Csv),
        Some("ply") => Ok(Format::Ply),
        _ => Err(Error::file(
            path,
            "unknown file type: use a .csv or .ply extension",
        )),
    }
}

/// Folds a multi-line parser message into one line.
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Reads particles from a `.csv` or `.ply` file.
pub fn read_particles(path: &Path) -> Result<ParticleData> {
    let file = File::open(path).map_err(|e| Error::file(path, format!("cannot open: {e}")))?;
    // A file's own text (a quoted header, a field) may hold line breaks: a message is one line.
    let fold = |e: Error| match e {
        Error::File { path, message } => Error::File {
            path,
            message: one_line(&message),
        },
        e => e,
    };
    let data = match format_of(path)? {
        Format::Csv => read_csv(path, file).map_err(fold)?,
        Format::Ply => {
            // Read whole, so the counts the header claims can be checked against the bytes
            // that follow it before anything of their size is allocated.
            let mut bytes = Vec::new();
            BufReader::new(file)
                .read_to_end(&mut bytes)
                .map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
            read_ply(path, &bytes).map_err(fold)?
        }
    };
    if data.positions.is_empty() {
        return Err(Error::file(
            path,
            "holds no particles: add at least one row",
        ));
    }
    Ok(data)
}

fn finite(path: &Path, where_: &str, name: &str, v: f32) -> Result<f32> {
    if v.is_finite() {
        Ok(v)
    } else {
        Err(Error::file(
            path,
            format!("{where_}: {name} is {v}; every coordinate must be finite, fix or remove it"),
        ))
    }
}

fn read_csv(path: &Path, file: File) -> Result<ParticleData> {
    let mut rdr = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .comment(Some(b'#'))
        .from_reader(BufReader::new(file));
    let headers = rdr
        .headers()
        .map_err(|e| Error::file(path, format!("line 1: cannot read the header: {e}")))?
        .clone();
    let col = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    for name in ["x", "y", "z", "vx", "vy", "vz"] {
        if headers
            .iter()
            .filter(|h| h.eq_ignore_ascii_case(name))
            .count()
            > 1
        {
            return Err(Error::file(
                path,
                format!("line 1: the header names column {name} more than once: keep one"),
            ));
        }
    }
    let pos = ["x", "y", "z"].map(col);
    let vel = ["vx", "vy", "vz"].map(col);
    let [Some(px), Some(py), Some(pz)] = pos else {
        return Err(Error::file(
            path,
            format!(
                "line 1: the header must name columns x,y,z (found: {}); add a header line such as x,y,z,vx,vy,vz",
                headers.iter().collect::<Vec<_>>().join(",")
            ),
        ));
    };
    let vel = match vel {
        [Some(a), Some(b), Some(c)] => Some([a, b, c]),
        [None, None, None] => None,
        _ => {
            return Err(Error::file(
                path,
                "line 1: the header names some of vx,vy,vz but not all three: give all or none",
            ));
        }
    };
    let mut data = ParticleData::default();
    let mut record = csv::StringRecord::new();
    loop {
        let more = rdr.read_record(&mut record).map_err(|e| {
            let line = e.position().map_or(0, |p| p.line());
            let what = match e.kind() {
                csv::ErrorKind::UnequalLengths {
                    expected_len, len, ..
                } => {
                    format!("expected {expected_len} fields as in the header, found {len}")
                }
                _ => e.to_string(),
            };
            Error::file(path, format!("line {line}: {what}"))
        })?;
        if !more {
            break;
        }
        let line = record.position().map_or(0, |p| p.line());
        let where_ = format!("line {line}");
        let field = |idx: usize, name: &str| -> Result<f32> {
            let text = record.get(idx).unwrap_or("");
            let v: f32 = text.parse().map_err(|_| {
                Error::file(path, format!("{where_}: {name} = {text:?} is not a number"))
            })?;
            finite(path, &where_, name, v)
        };
        data.positions
            .push(Vec3::new(field(px, "x")?, field(py, "y")?, field(pz, "z")?));
        data.velocities.push(match vel {
            Some([a, b, c]) => Vec3::new(field(a, "vx")?, field(b, "vy")?, field(c, "vz")?),
            None => Vec3::ZERO,
        });
    }
    Ok(data)
}

/// One PLY element as the parser fills it: the six fields we read, as `f64`.
#[derive(Clone, Copy, Default)]
struct PlyVertex {
    values: [f64; 6],
}

const PLY_FIELDS: [&str; 6] = ["x", "y", "z", "vx", "vy", "vz"];

impl PropertyAccess for PlyVertex {
    fn new() -> Self {
        Self::default()
    }

    fn set_property(&mut self, name: &str, property: Property) -> PropertyAccessResult {
        let Some(k) = PLY_FIELDS.iter().position(|&f| f == name) else {
            return PropertyAccessResult::Ignored;
        };
        let v = match property {
            Property::Float(v) => v as f64,
            Property::Double(v) => v,
            Property::Char(v) => v as f64,
            Property::UChar(v) => v as f64,
            Property::Short(v) => v as f64,
            Property::UShort(v) => v as f64,
            Property::Int(v) => v as f64,
            Property::UInt(v) => v as f64,
            _ => return PropertyAccessResult::Ignored,
        };
        self.values[k] = v;
        PropertyAccessResult::Set
    }
}

/// A PLY header as gpu-sph checks it before the parser sees the file.
struct PlyLayout {
    /// Bytes up to and including the `end_header` line.
    header_len: usize,
    /// Lines up to and including the `end_header` line.
    header_lines: usize,
    /// Whether the body is ASCII.
    ascii: bool,
    /// Each element's name, count and the fewest bytes one record can take.
    elements: Vec<(String, u64, u64)>,
    /// Each element's number of scalar properties, `None` where it has a list.
    scalars: Vec<Option<usize>>,
}

/// Size of a PLY scalar type in bytes, `None` for an unknown name.
fn ply_scalar_size(name: &str) -> Option<u64> {
    Some(match name {
        "char" | "uchar" | "int8" | "uint8" => 1,
        "short" | "ushort" | "int16" | "uint16" => 2,
        "int" | "uint" | "float" | "int32" | "uint32" | "float32" => 4,
        "double" | "float64" => 8,
        _ => return None,
    })
}

/// Checks a PLY header line by line, saying what is wrong in words (the parser's own errors
/// are debug dumps), and measures the fewest bytes each element's records can take.
fn check_ply_header(bytes: &[u8]) -> std::result::Result<PlyLayout, String> {
    let mut at = 0;
    let mut ascii = false;
    let mut elements: Vec<(String, u64, u64)> = Vec::new();
    let mut scalars: Vec<Option<usize>> = Vec::new();
    let mut format_seen = false;
    for number in 1.. {
        let Some(end) = bytes[at..].iter().position(|&b| b == b'\n') else {
            return Err(
                "the PLY header has no end_header line: the file is truncated or not PLY".into(),
            );
        };
        let raw = &bytes[at..at + end];
        at += end + 1;
        let line = std::str::from_utf8(raw)
            .map_err(|_| format!("line {number}: the PLY header must be ASCII text"))?
            .trim_end_matches('\r');
        let words: Vec<&str> = line.split_ascii_whitespace().collect();
        let bad = |what: String| Err(format!("line {number}: {what}"));
        if number == 1 {
            if line != "ply" {
                return bad("a PLY file starts with the line 'ply'".into());
            }
            continue;
        }
        match words.as_slice() {
            ["format", kind, "1.0"] => {
                ascii = match *kind {
                    "ascii" => true,
                    "binary_little_endian" | "binary_big_endian" => false,
                    other => {
                        return bad(format!(
                            "unknown PLY format '{other}': use ascii, binary_little_endian or binary_big_endian"
                        ));
                    }
                };
                format_seen = true;
            }
            ["format", ..] => {
                return bad(
                    "expected 'format ascii 1.0' (or binary_little_endian / binary_big_endian)"
                        .into(),
                );
            }
            ["comment", ..] | ["obj_info", ..] | [] => {}
            ["element", name, count] => {
                let count: u64 = count.parse().map_err(|_| {
                    format!("line {number}: element '{name}' has count '{count}', which is not a whole number ≥ 0")
                })?;
                if elements.iter().any(|e| e.0 == *name) {
                    return bad(format!("element '{name}' is declared twice"));
                }
                elements.push((name.to_string(), count, 0));
                scalars.push(Some(0));
            }
            ["element", ..] => return bad("expected 'element NAME COUNT'".into()),
            ["property", "list", count_type, item_type, _name] => {
                let (Some(c), Some(_)) = (ply_scalar_size(count_type), ply_scalar_size(item_type))
                else {
                    return bad(format!("unknown list types '{count_type} {item_type}'"));
                };
                let Some(e) = elements.last_mut() else {
                    return bad("a property comes before any element".into());
                };
                // An empty list: its count alone ("0 " in ASCII).
                e.2 += if ascii { 2 } else { c };
                if let Some(n) = scalars.last_mut() {
                    *n = None;
                }
            }
            ["property", ty, _name] => {
                let Some(size) = ply_scalar_size(ty) else {
                    return bad(format!(
                        "unknown property type '{ty}': use float, double, int, uchar…"
                    ));
                };
                let Some(e) = elements.last_mut() else {
                    return bad("a property comes before any element".into());
                };
                // A value and its separator in ASCII.
                e.2 += if ascii { 2 } else { size };
                if let Some(Some(n)) = scalars.last_mut() {
                    *n += 1;
                }
            }
            ["property", ..] => {
                return bad(
                    "expected 'property TYPE NAME' or 'property list COUNT_TYPE TYPE NAME'".into(),
                );
            }
            ["end_header"] => {
                if !format_seen {
                    return bad("the header ends without a 'format' line".into());
                }
                return Ok(PlyLayout {
                    header_len: at,
                    header_lines: number,
                    ascii,
                    elements,
                    scalars,
                });
            }
            [word, ..] => return bad(format!("unexpected '{word}' in the PLY header")),
        }
    }
    unreachable!("the loop returns")
}

fn read_ply(path: &Path, bytes: &[u8]) -> Result<ParticleData> {
    let layout = check_ply_header(bytes).map_err(|e| Error::file(path, e))?;
    if layout.ascii {
        check_ascii_vertices(bytes, &layout).map_err(|e| Error::file(path, e))?;
    }
    let body = (bytes.len() - layout.header_len) as u64;
    let mut need = 0u64;
    for (name, count, record) in &layout.elements {
        if *record == 0 && *count > 0 {
            return Err(Error::file(
                path,
                format!(
                    "element '{name}' has {count} records but no properties: declare its properties or a count of 0"
                ),
            ));
        }
        need = need.saturating_add(count.saturating_mul(*record));
        if need > body {
            return Err(Error::file(
                path,
                format!(
                    "the header promises {count} '{name}' elements, at least {need} bytes with those before it, but only {body} bytes follow the header: fix the count (or the file is truncated)"
                ),
            ));
        }
    }
    let parser = Parser::<PlyVertex>::new();
    let mut reader = Reader::new(std::io::Cursor::new(bytes));
    let header = parser
        .read_header(&mut reader)
        .map_err(|e| Error::file(path, one_line(&format!("bad PLY header: {e}"))))?;
    let Some(vertex) = header.elements.get("vertex") else {
        return Err(Error::file(
            path,
            "the PLY header declares no 'vertex' element",
        ));
    };
    let scalar = |name: &str| match vertex.properties.get(name).map(|p| &p.data_type) {
        Some(PropertyType::Scalar(ScalarType::Float | ScalarType::Double)) => Ok(true),
        None => Ok(false),
        Some(_) => Err(Error::file(
            path,
            format!("vertex property '{name}' must be float or double"),
        )),
    };
    let has_pos = [scalar("x")?, scalar("y")?, scalar("z")?];
    let has_vel = [scalar("vx")?, scalar("vy")?, scalar("vz")?];
    if has_pos != [true; 3] {
        return Err(Error::file(
            path,
            "the vertex element must have float or double x, y and z",
        ));
    }
    if has_vel != [true; 3] && has_vel != [false; 3] {
        return Err(Error::file(
            path,
            "the vertex element has some of vx, vy, vz: give all three or none",
        ));
    }
    let mut vertices = Vec::new();
    for (name, def) in &header.elements {
        let elems = read_element(path, &parser, &mut reader, def, &header)?;
        if name == "vertex" {
            vertices = elems;
            break;
        }
    }
    // Where the vertices end the file, nothing may follow them but (in ASCII) blank space: a
    // count smaller than the data would otherwise drop particles without a word.
    if header.elements.keys().last().map(String::as_str) == Some("vertex") {
        let at = (reader.get_mut().position() as usize).min(bytes.len());
        let rest = &bytes[at..];
        let extra = match header.encoding {
            Encoding::Ascii => rest.iter().any(|b| !b.is_ascii_whitespace()),
            _ => !rest.is_empty(),
        };
        if extra {
            return Err(Error::file(
                path,
                format!(
                    "{} bytes follow the {} vertices the header promises: fix the vertex count or remove the extra data",
                    rest.len(),
                    vertices.len()
                ),
            ));
        }
    }
    let mut data = ParticleData {
        positions: Vec::with_capacity(vertices.len()),
        velocities: Vec::with_capacity(vertices.len()),
        comments: header.comments.clone(),
    };
    for (i, v) in vertices.iter().enumerate() {
        let where_ = format!("vertex {i}");
        let f = |k: usize| finite(path, &where_, PLY_FIELDS[k], v.values[k] as f32);
        data.positions.push(Vec3::new(f(0)?, f(1)?, f(2)?));
        data.velocities.push(Vec3::new(f(3)?, f(4)?, f(5)?));
    }
    Ok(data)
}

/// Checks an ASCII body's vertex rows in words before the parser sees them (its own errors
/// dump the parser's state): each row holds one number per declared property, every one
/// finite. Rows of the elements before `vertex` are skipped, one line each; a short body is
/// left to the parser's truncation check. Worked example: a row `nan 0 0` on line 9 gives
/// "line 9: vertex 1: nan is not finite; every coordinate must be finite, fix or remove it".
fn check_ascii_vertices(bytes: &[u8], layout: &PlyLayout) -> std::result::Result<(), String> {
    let mut rows = bytes[layout.header_len..]
        .split(|&b| b == b'\n')
        .enumerate()
        .map(|(i, l)| (layout.header_lines + 1 + i, l))
        .filter(|(_, l)| !l.iter().all(u8::is_ascii_whitespace));
    for ((name, count, _), scalars) in layout.elements.iter().zip(&layout.scalars) {
        if name != "vertex" {
            rows.by_ref().take(*count as usize).for_each(drop);
            continue;
        }
        let Some(n) = *scalars else { return Ok(()) };
        for k in 0..*count {
            let Some((line, raw)) = rows.next() else {
                return Ok(());
            };
            let text = std::str::from_utf8(raw)
                .map_err(|_| format!("line {line}: vertex {k} is not ASCII text"))?;
            let values: Vec<&str> = text.split_ascii_whitespace().collect();
            if values.len() != n {
                return Err(format!(
                    "line {line}: vertex {k} has {} values, the header declares {n} properties: fix the row or the header",
                    values.len()
                ));
            }
            for v in values {
                match v.parse::<f64>() {
                    Ok(x) if x.is_finite() => {}
                    Ok(_) => {
                        return Err(format!(
                            "line {line}: vertex {k}: {v} is not finite; every coordinate must be finite, fix or remove it"
                        ));
                    }
                    Err(_) => {
                        return Err(format!(
                            "line {line}: vertex {k}: {v:?} is not a number: fix or remove the row"
                        ));
                    }
                }
            }
        }
        return Ok(());
    }
    Ok(())
}

/// Reads one element's records. Binary records are read one at a time into a vector that grows
/// as they arrive, so a header promising more records than the file holds fails at the end of
/// the data instead of allocating for the promise.
fn read_element<R: BufRead>(
    path: &Path,
    parser: &Parser<PlyVertex>,
    reader: &mut Reader<R>,
    def: &ElementDef,
    header: &Header,
) -> Result<Vec<PlyVertex>> {
    let short = |i: usize, e: &dyn std::fmt::Display| {
        Error::file(
            path,
            format!(
                "element '{}' {i} of the {} the header promises: {e}",
                def.name, def.count
            ),
        )
    };
    match header.encoding {
        Encoding::Ascii => parser
            .read_payload_for_element(reader, def, header)
            .map_err(|e| Error::file(path, one_line(&format!("element '{}': {e}", def.name)))),
        Encoding::BinaryLittleEndian | Encoding::BinaryBigEndian => {
            let mut out = Vec::with_capacity(def.count.min(1 << 16));
            let inner = reader.get_mut();
            for i in 0..def.count {
                let e = if header.encoding == Encoding::BinaryLittleEndian {
                    parser.read_little_endian_element(inner, def)
                } else {
                    parser.read_big_endian_element(inner, def)
                };
                out.push(e.map_err(|e| short(i, &e))?);
            }
            Ok(out)
        }
    }
}

/// Checks that `path` has an extension gpu-sph can write and creates its directory, before
/// any work is done.
pub fn check_output_path(path: &Path) -> Result<()> {
    format_of(path)?;
    ensure_output_dir_of(path)
}

/// Creates, before any work, the directory an output file goes into where it is missing (as
/// `--export-dir` and `--surface-dir` are created: one rule for every output), so a run never
/// computes to its end and then fails to write.
pub fn ensure_output_dir_of(path: &Path) -> Result<()> {
    match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => ensure_dir(d),
        _ => Ok(()),
    }
}

/// Checks, writing nothing that stays, that the file `path` (given by `flag`) can be written
/// where it goes: not a directory, an existing file open for writing, and the nearest
/// existing directory on its way writable. A run calls it for every file it will write before
/// it writes any, so a long run is not lost to a path that fails at its end.
pub fn check_file_target(path: &Path, flag: &str) -> Result<()> {
    if path.is_dir() {
        return Err(Error::file(
            path,
            format!("is a directory, and {flag} names a file: give a file's path"),
        ));
    }
    if path.exists() {
        return std::fs::OpenOptions::new()
            .append(true)
            .open(path)
            .map(drop)
            .map_err(|e| {
                Error::file(
                    path,
                    format!("{flag} cannot write it ({e}): choose a writable place"),
                )
            });
    }
    writable_ancestor(path, flag)
}

/// As [`check_file_target`], for the directory `dir` a run writes into (`flag`): an existing
/// one must be a writable directory, a missing one creatable.
pub fn check_dir_target(dir: &Path, flag: &str) -> Result<()> {
    if dir.exists() {
        if !dir.is_dir() {
            return Err(Error::file(
                dir,
                format!(
                    "is a file where {flag} needs a directory: cannot create the directory; give a directory's path"
                ),
            ));
        }
        return probe_dir(dir, dir, flag);
    }
    writable_ancestor(dir, flag)
}

/// The nearest existing ancestor of `path` is a directory this process can write into.
fn writable_ancestor(path: &Path, flag: &str) -> Result<()> {
    let here = Path::new(".");
    let ancestor = path
        .ancestors()
        .skip(1)
        .map(|a| if a.as_os_str().is_empty() { here } else { a })
        .find(|a| a.exists())
        .unwrap_or(here);
    if !ancestor.is_dir() {
        return Err(Error::file(
            path,
            format!(
                "{flag} cannot create the directory it goes into: {} is a file, not a directory",
                ancestor.display()
            ),
        ));
    }
    probe_dir(ancestor, path, flag)
}

/// Creates and removes a file in `dir`: the one test of writing that holds for every user
/// (permission bits say nothing for root, or on a read-only mount).
fn probe_dir(dir: &Path, target: &Path, flag: &str) -> Result<()> {
    let probe = dir.join(format!(".gpu-sph-probe-{}", std::process::id()));
    match std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
    {
        Ok(f) => {
            // Closed before it is removed (a no-op on wasm32, whose File holds nothing).
            #[allow(clippy::drop_non_drop)]
            drop(f);
            let _ = std::fs::remove_file(&probe);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => Err(Error::file(
            target,
            format!(
                "{flag} cannot write into {} ({e}): choose a writable place",
                dir.display()
            ),
        )),
    }
}

/// Creates directory `dir` (and its parents) where missing; an error names it and why.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    std::fs::create_dir_all(dir).map_err(|e| {
        Error::file(
            dir,
            format!("cannot create the directory ({e}): choose a writable place"),
        )
    })
}

/// The sidecar of a `--stats` file: `stats.csv` → `stats.params.json`.
pub fn stats_sidecar_path(stats: &Path) -> std::path::PathBuf {
    stats.with_extension("params.json")
}

/// Writes the sidecar of the `--stats` file `stats`: the run's parameters (`geometry`, the
/// line the run prints) and each column's unit, as JSON, so the CSV itself is one header row
/// and numbers. Example: `{"parameters": "tank (0, 0, 0) to …", "columns": [{"name": "t",
/// "unit": "s"}, …]}`.
pub fn write_stats_sidecar(stats: &Path, geometry: &str, columns: &[(&str, &str)]) -> Result<()> {
    let path = stats_sidecar_path(stats);
    let json = serde_json::json!({
        "stats": stats.file_name().map(|n| n.to_string_lossy().into_owned()),
        "parameters": geometry,
        "columns": columns
            .iter()
            .map(|(name, unit)| serde_json::json!({"name": name, "unit": unit}))
            .collect::<Vec<_>>(),
    });
    let text = serde_json::to_string_pretty(&json).unwrap_or_default() + "\n";
    std::fs::write(&path, text).map_err(|e| Error::file(&path, format!("cannot write: {e}")))
}

/// Writes one row per particle (`x,y,z,vx,vy,vz,density`) as CSV or binary PLY, by extension.
pub fn write_particles(
    path: &Path,
    positions: &[Vec3],
    velocities: &[Vec3],
    density: &[f32],
) -> Result<()> {
    write_particles_with(path, positions, velocities, density, &[])
}

/// [`write_particles`], with `comments` in a PLY header (a CSV has no place for them).
pub fn write_particles_with(
    path: &Path,
    positions: &[Vec3],
    velocities: &[Vec3],
    density: &[f32],
    comments: &[String],
) -> Result<()> {
    let format = format_of(path)?;
    let file = File::create(path).map_err(|e| Error::file(path, format!("cannot create: {e}")))?;
    let mut out = BufWriter::new(file);
    let rows = positions.iter().zip(velocities).zip(density);
    let io_err = |e: &dyn std::fmt::Display| Error::file(path, format!("write failed: {e}"));
    match format {
        Format::Csv => {
            let mut w = csv::Writer::from_writer(out);
            w.write_record(OUTPUT_COLUMNS).map_err(|e| io_err(&e))?;
            for ((p, v), d) in rows {
                let row = [p.x, p.y, p.z, v.x, v.y, v.z, *d];
                w.write_record(row.iter().map(|x| x.to_string()))
                    .map_err(|e| io_err(&e))?;
            }
            w.flush().map_err(|e| io_err(&e))?;
        }
        Format::Ply => {
            let mut header = Header::new();
            header.encoding = Encoding::BinaryLittleEndian;
            let mut def = ElementDef::new("vertex".to_string());
            def.count = positions.len();
            for name in OUTPUT_COLUMNS {
                def.properties.insert(
                    name.to_string(),
                    PropertyDef::new(name.to_string(), PropertyType::Scalar(ScalarType::Float)),
                );
            }
            header.comments.push("written by gpu-sph".to_string());
            header.comments.extend(comments.iter().cloned());
            header.elements.insert("vertex".to_string(), def.clone());
            let writer = Writer::<OutVertex>::new();
            writer
                .write_header(&mut out, &header)
                .map_err(|e| io_err(&e))?;
            for ((p, v), d) in rows {
                let vertex = OutVertex([p.x, p.y, p.z, v.x, v.y, v.z, *d]);
                writer
                    .write_little_endian_element(&mut out, &vertex, &def)
                    .map_err(|e| io_err(&e))?;
            }
            out.flush().map_err(|e| io_err(&e))?;
        }
    }
    Ok(())
}

/// One output record, in [`OUTPUT_COLUMNS`] order.
struct OutVertex([f32; 7]);

impl PropertyAccess for OutVertex {
    fn new() -> Self {
        Self([0.0; 7])
    }

    fn get_float(&self, name: &str) -> Option<f32> {
        OUTPUT_COLUMNS
            .iter()
            .position(|&c| c == name)
            .map(|k| self.0[k])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        /// The calling test's scratch directory: libtest runs each test on a thread of its
        /// own, so it goes when the test ends.
        static SCRATCH: tempfile::TempDir = tempfile::tempdir().unwrap();
    }

    fn tmp(name: &str, contents: &[u8]) -> std::path::PathBuf {
        let p = SCRATCH.with(|d| d.path().join(name));
        std::fs::write(&p, contents).unwrap();
        p
    }

    #[test]
    fn csv_with_and_without_velocities() {
        let p = tmp("a.csv", b"x,y,z\n1,2,3\n-4.5, 0 ,1e-3\n");
        let d = read_particles(&p).unwrap();
        assert_eq!(
            d.positions,
            vec![Vec3::new(1.0, 2.0, 3.0), Vec3::new(-4.5, 0.0, 1e-3)]
        );
        assert_eq!(d.velocities, vec![Vec3::ZERO; 2]);
        let p = tmp("b.csv", b"vx,x,vy,y,vz,z\n1,2,3,4,5,6\n");
        let d = read_particles(&p).unwrap();
        assert_eq!(d.positions, vec![Vec3::new(2.0, 4.0, 6.0)]);
        assert_eq!(d.velocities, vec![Vec3::new(1.0, 3.0, 5.0)]);
    }

    #[test]
    fn malformed_csv_names_the_line() {
        let cases: [(&[u8], &str); 5] = [
            (b"x,y,z\n1,2,3\n1,2\n", "line 3"),
            (b"x,y,z\n1,nan,3\n", "line 2: y is NaN"),
            (b"x,y,z\n1,2,inf\n", "line 2: z is inf"),
            (b"x,y,z\n1,abc,3\n", "not a number"),
            (b"a,b,c\n1,2,3\n", "must name columns x,y,z"),
        ];
        for (text, want) in cases {
            let err = read_particles(&tmp("bad.csv", text))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{err:?} lacks {want:?}");
            assert!(!err.contains('\n'));
        }
        assert!(read_particles(&tmp("empty.csv", b"x,y,z\n")).is_err());
    }

    #[test]
    fn ply_round_trip_and_ascii() {
        let pos = vec![Vec3::new(1.0, -2.0, 3.5), Vec3::new(0.25, 0.0, -1e4)];
        let vel = vec![Vec3::new(0.1, 0.2, 0.3), Vec3::ZERO];
        let p = tmp("rt.ply", b"");
        write_particles(&p, &pos, &vel, &[1000.0, 999.5]).unwrap();
        let d = read_particles(&p).unwrap();
        assert_eq!(d.positions, pos);
        assert_eq!(d.velocities, vel);

        let ascii = b"ply\nformat ascii 1.0\nelement vertex 2\nproperty double x\nproperty double y\nproperty double z\nend_header\n1 2 3\n4 5 6\n";
        let d = read_particles(&tmp("a.ply", ascii)).unwrap();
        assert_eq!(d.positions[1], Vec3::new(4.0, 5.0, 6.0));
    }

    #[test]
    fn ply_that_promises_too_much_fails_cleanly() {
        let mut bin = b"ply\nformat binary_little_endian 1.0\nelement vertex 4000000000\nproperty float x\nproperty float y\nproperty float z\nend_header\n".to_vec();
        bin.extend_from_slice(bytemuck::cast_slice(&[1.0f32, 2.0, 3.0]));
        let err = read_particles(&tmp("short.ply", &bin))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("promises 4000000000 'vertex' elements"),
            "{err}"
        );
        let ascii = b"ply\nformat ascii 1.0\nelement vertex 5\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n";
        assert!(read_particles(&tmp("short_a.ply", ascii)).is_err());
        let nan = b"ply\nformat ascii 1.0\nelement vertex 1\nproperty float x\nproperty float y\nproperty float z\nend_header\n1 nan 3\n";
        let err = read_particles(&tmp("nan.ply", nan))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("line 8: vertex 0: nan is not finite") && !err.contains('\n'),
            "{err}"
        );
        let mut bin = b"ply\nformat binary_little_endian 1.0\nelement vertex 2\nproperty double x\nproperty double y\nproperty double z\nend_header\n".to_vec();
        bin.extend_from_slice(bytemuck::cast_slice(&[
            1.0f64,
            2.0,
            3.0,
            4.0,
            f64::INFINITY,
            6.0,
        ]));
        let err = read_particles(&tmp("inf.ply", &bin))
            .unwrap_err()
            .to_string();
        assert!(err.contains("vertex 1: y is inf"), "{err}");
    }
}
