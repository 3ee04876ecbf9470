//! The file readers never panic, never hang and never allocate for what a file only claims:
//! property-based tests feed them random and mutated particle files (CSV, PLY), scene files
//! (JSON) and meshes (OBJ, binary and ASCII STL): truncations, flipped bytes, huge counts,
//! wrong types, NaN and inf in every field, duplicate headers and keys, unicode. A counting
//! allocator bounds what a read may allocate by the file's size.
//!
//! One test function, so the allocator's peak belongs to the read it measures.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use gpu_sph::io::read_particles;
use gpu_sph::mesh::TriMesh;
use gpu_sph::scene_file::SceneFile;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
            PEAK.fetch_max(live, Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

thread_local! {
    /// The calling test's scratch directory: libtest runs each test on a thread of its own, so
    /// it goes when the test ends, passed or failed.
    static SCRATCH: tempfile::TempDir = tempfile::tempdir().unwrap();
}

fn scratch() -> std::path::PathBuf {
    SCRATCH.with(|d| d.path().to_path_buf())
}

/// Reads `bytes` as a file named `name`: never a panic; an error is one line naming the file;
/// the read allocates at most 16 × the file's size plus 256 KiB (buffers and the parser's own
/// tables).
fn check(name: &str, bytes: &[u8]) -> Result<(), TestCaseError> {
    let path = scratch().join(name);
    std::fs::write(&path, bytes).unwrap();
    let before = LIVE.load(Relaxed);
    PEAK.store(before, Relaxed);
    let ext = name.rsplit('.').next().unwrap_or("");
    let result = std::panic::catch_unwind(|| match ext {
        "json" => SceneFile::read(&path).map(|_| ()),
        "obj" | "stl" => TriMesh::read(&path, name).map(|_| ()),
        _ => read_particles(&path).map(|data| {
            assert!(!data.positions.is_empty());
            assert!(data.positions.iter().all(|p| p.is_finite()));
            assert!(data.velocities.iter().all(|v| v.is_finite()));
        }),
    });
    let peak = PEAK.load(Relaxed) - before;
    let result =
        result.map_err(|_| TestCaseError::fail(format!("{name}: panicked on {bytes:?}")))?;
    if ext == "json" {
        // A scene that reads is then filled, when it is small enough for a test.
        if let Ok(file) = SceneFile::read(&path) {
            let desc = file.desc();
            let s = 0.01;
            let filled = std::panic::catch_unwind(|| {
                desc.validate(name, s)?;
                if desc.count(s) <= 200_000 {
                    let scene = desc.build(name, s, 0)?;
                    assert!(scene.positions.iter().all(|p| p.is_finite()));
                }
                Ok::<(), gpu_sph::Error>(())
            })
            .map_err(|_| TestCaseError::fail(format!("{name}: filling panicked on {bytes:?}")))?;
            if let Err(e) = filled {
                prop_assert!(!e.to_string().contains('\n'), "{name}: {e}");
            }
        }
    }
    let bound = 16 * bytes.len() + (256 << 10);
    prop_assert!(
        peak <= bound,
        "{name}: allocated {peak} bytes for a file of {}",
        bytes.len()
    );
    match result {
        Ok(()) => {}
        Err(e) => {
            let msg = e.to_string();
            prop_assert!(!msg.contains('\n'), "{name}: {msg}");
            prop_assert!(msg.contains(name), "{name}: {msg}");
        }
    }
    Ok(())
}

/// A valid scene file with every kind of body and setting.
const SCENE: &str = r#"{
  "description": "fuzz",
  "tank": {"min": [0, 0, 0], "max": [0.4, 0.4, 0.2]},
  "fluid": [
    {"shape": {"box": {"min": [0, 0, 0], "max": [0.4, 0.05, 0.2]}}, "count": 1500, "jitter": 0.1},
    {"shape": {"sphere": {"centre": [0.2, 0.25, 0.1], "radius": 0.05}}, "velocity": [0, -1, 0]},
    {"shape": {"cylinder": {"base": [0.1, 0.1, 0.1], "axis": "y", "radius": 0.03, "length": 0.1}}, "fill": "random"}
  ],
  "physics": {"spacing": 0.01, "gravity": -9.81, "solver": "dfsph", "seed": 3},
  "run": {"steps": 10, "cpu": true},
  "outputs": {"stats": "s.csv"},
  "viewer": {"window_size": "640x480"}
}"#;

/// A valid closed OBJ: a tetrahedron.
const OBJ: &str =
    "# tetrahedron\nv 0 0 0\nv 1 0 0\nv 0 1 0\nv 0 0 1\nf 1 3 2\nf 1 2 4\nf 1 4 3\nf 2 3 4\n";

/// A valid ASCII STL: one facet.
const STL: &str = "solid t\nfacet normal 0 0 1\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nvertex 0 1 0\nendloop\nendfacet\nendsolid t\n";

/// A binary STL of `n` copies of one facet.
fn binary_stl(n: u32) -> Vec<u8> {
    let mut out = vec![0u8; 80];
    out.extend(n.to_le_bytes());
    for _ in 0..n {
        for x in [
            0.0f32, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0,
        ] {
            out.extend(x.to_le_bytes());
        }
        out.extend([0u8; 2]);
    }
    out
}

const TOKENS: &[&str] = &[
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e39",
    "-5",
    "0",
    "4000000000",
    "18446744073709551616",
    "x",
    "vx",
    "ü",
    "∞",
    "\u{feff}",
    ",",
    " ",
    "\n",
    "\r\n",
    "\"",
    "#",
    "property",
    "element",
    "list",
    "end_header",
    "float",
    "double",
    "uchar",
    "int",
    "{",
    "}",
    "[",
    "]",
    ":",
    "null",
    "true",
    "\"box\"",
    "\"mesh\"",
    "\"count\"",
    "1e30",
    "-1",
    "v",
    "f",
    "vertex",
    "facet",
];

fn valid_csv() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(prop::array::uniform6(-10.0f32..10.0), 1..20),
        any::<bool>(),
    )
        .prop_map(|(rows, with_vel)| {
            let mut s = String::from(if with_vel {
                "x,y,z,vx,vy,vz\n"
            } else {
                "x,y,z\n"
            });
            for r in rows {
                let cols = if with_vel { &r[..] } else { &r[..3] };
                s += &cols
                    .iter()
                    .map(f32::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                s.push('\n');
            }
            s.into_bytes()
        })
}

fn valid_ply() -> impl Strategy<Value = Vec<u8>> {
    (
        prop::collection::vec(prop::array::uniform3(-10.0f32..10.0), 1..20),
        0..3usize,
        any::<bool>(),
    )
        .prop_map(|(rows, format, face_first)| {
            let name = ["ascii", "binary_little_endian", "binary_big_endian"][format];
            let mut h = format!("ply\nformat {name} 1.0\ncomment fuzz\n");
            if face_first {
                h += "element face 1\nproperty list uchar int vertex_indices\n";
            }
            h += &format!(
                "element vertex {}\nproperty float x\nproperty float y\nproperty float z\nend_header\n",
                rows.len()
            );
            let mut out = h.into_bytes();
            if face_first {
                match format {
                    0 => out.extend_from_slice(b"3 0 0 0\n"),
                    1 => {
                        out.push(3);
                        (0..3).for_each(|_| out.extend_from_slice(&0i32.to_le_bytes()));
                    }
                    _ => {
                        out.push(3);
                        (0..3).for_each(|_| out.extend_from_slice(&0i32.to_be_bytes()));
                    }
                }
            }
            for r in &rows {
                put(&mut out, format, r);
            }
            out
        })
}

/// Appends one record in the file's format (0 ASCII, 1 little-, 2 big-endian).
fn put(out: &mut Vec<u8>, format: usize, v: &[f32]) {
    match format {
        0 => {
            let line = v.iter().map(f32::to_string).collect::<Vec<_>>().join(" ");
            out.extend_from_slice(line.as_bytes());
            out.push(b'\n');
        }
        1 => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_le_bytes())),
        _ => v
            .iter()
            .for_each(|x| out.extend_from_slice(&x.to_be_bytes())),
    }
}

/// One change to a file: cut it, flip a byte, put a token in, or replace a line with one.
#[derive(Clone, Debug)]
enum Mutation {
    Truncate(prop::sample::Index),
    Flip(prop::sample::Index, u8),
    Insert(prop::sample::Index, &'static str),
    ReplaceWord(prop::sample::Index, &'static str),
    DuplicateLine(prop::sample::Index),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let token = prop::sample::select(TOKENS);
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        (any::<prop::sample::Index>(), 1..=255u8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<prop::sample::Index>(), token.clone()).prop_map(|(i, t)| Mutation::Insert(i, t)),
        (any::<prop::sample::Index>(), token).prop_map(|(i, t)| Mutation::ReplaceWord(i, t)),
        any::<prop::sample::Index>().prop_map(Mutation::DuplicateLine),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match m {
        Mutation::Truncate(i) => bytes.truncate(i.index(bytes.len())),
        Mutation::Flip(i, b) => {
            let k = i.index(bytes.len());
            bytes[k] ^= b;
        }
        Mutation::Insert(i, t) => {
            let k = i.index(bytes.len() + 1);
            bytes.splice(k..k, t.bytes());
        }
        Mutation::ReplaceWord(i, t) => {
            // The word (between separators) around a position.
            let sep = |c: &u8| matches!(c, b' ' | b',' | b'\n' | b'\r');
            let k = i.index(bytes.len());
            let start = bytes[..k].iter().rposition(sep).map_or(0, |p| p + 1);
            let end = bytes[k..]
                .iter()
                .position(sep)
                .map_or(bytes.len(), |p| k + p);
            bytes.splice(start..end, t.bytes());
        }
        Mutation::DuplicateLine(i) => {
            let k = i.index(bytes.len());
            let start = bytes[..k]
                .iter()
                .rposition(|&c| c == b'\n')
                .map_or(0, |p| p + 1);
            let end = bytes[k..]
                .iter()
                .position(|&c| c == b'\n')
                .map_or(bytes.len(), |p| k + p + 1);
            let line = bytes[start..end].to_vec();
            bytes.splice(start..start, line);
        }
    }
}

#[test]
fn readers_survive_random_and_mutated_files() {
    // Bounded so CI stays quick; PROPTEST_CASES raises it for a longer hunt.
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(2000);
    let mut runner = TestRunner::new(Config {
        cases,
        failure_persistence: None,
        ..Config::default()
    });
    // Mutated valid files, up to four changes each.
    for (name, strategy) in [
        ("m.csv", valid_csv().boxed()),
        ("m.ply", valid_ply().boxed()),
        ("m.json", Just(SCENE.as_bytes().to_vec()).boxed()),
        ("m.obj", Just(OBJ.as_bytes().to_vec()).boxed()),
        ("m.stl", Just(STL.as_bytes().to_vec()).boxed()),
        ("b.stl", (0u32..20).prop_map(binary_stl).boxed()),
    ] {
        runner
            .run(
                &(strategy, prop::collection::vec(mutation(), 0..4)),
                |(mut bytes, muts)| {
                    for m in &muts {
                        apply(&mut bytes, m);
                    }
                    check(name, &bytes)
                },
            )
            .unwrap();
    }
    // Arbitrary bytes, and headers that promise more than the file holds.
    for name in ["r.csv", "r.ply", "r.json", "r.obj", "r.stl"] {
        runner
            .run(&prop::collection::vec(any::<u8>(), 0..400), |bytes| {
                check(name, &bytes)
            })
            .unwrap();
    }
    runner
        .run(
            &(0u64..u64::MAX, 0..3usize, prop::collection::vec(any::<u8>(), 0..64)),
            |(count, format, body)| {
                let name = ["ascii", "binary_little_endian", "binary_big_endian"][format];
                let mut bytes = format!(
                    "ply\nformat {name} 1.0\nelement vertex {count}\nproperty double x\nproperty double y\nproperty double z\nend_header\n"
                )
                .into_bytes();
                bytes.extend_from_slice(&body);
                check("count.ply", &bytes)
            },
        )
        .unwrap();
}

/// Each malformed header says what is wrong in words, not in a parser's debug dump.
#[test]
fn malformed_ply_headers_are_explained_in_words() {
    let dir = scratch();
    let body = "property float x\nproperty float y\nproperty float z\nend_header\n1 2 3\n";
    let cases = [
        (
            format!("ply\nformat ascii 1.0\nelement vertex -5\n{body}"),
            "count '-5', which is not a whole number",
        ),
        (
            format!("ply\nformat ascii 2.0\nelement vertex 1\n{body}"),
            "expected 'format ascii 1.0'",
        ),
        (
            format!("ply\nformat text 1.0\nelement vertex 1\n{body}"),
            "unknown PLY format 'text'",
        ),
        (
            format!("plyx\nformat ascii 1.0\nelement vertex 1\n{body}"),
            "starts with the line 'ply'",
        ),
        (
            format!("ply\nformat ascii 1.0\nelement vertex 1\nproperty real w\n{body}"),
            "unknown property type 'real'",
        ),
        (
            format!("ply\nformat ascii 1.0\nproperty float w\nelement vertex 1\n{body}"),
            "before any element",
        ),
        (
            format!("ply\nformat ascii 1.0\nelement vertex 9\n{body}"),
            "promises 9 'vertex' elements",
        ),
        (
            "ply\nformat ascii 1.0\nelement vertex 1\n".to_string(),
            "no end_header",
        ),
        (
            format!("ply\nformat ascii 1.0\nvertices 1\n{body}"),
            "unexpected 'vertices'",
        ),
    ];
    for (k, (text, want)) in cases.iter().enumerate() {
        let path = dir.join(format!("h{k}.ply"));
        std::fs::write(&path, text).unwrap();
        let e = read_particles(&path).unwrap_err().to_string();
        assert!(e.contains(want), "{e:?} lacks {want:?}");
        assert!(!e.contains("ParseError") && !e.contains('\n'), "{e}");
    }
}
