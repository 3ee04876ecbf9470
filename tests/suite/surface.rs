//! Surface meshes from the command line: a resting cube gives a closed mesh of the fluid's
//! volume, a run writes one mesh per cadence step in step order, `--surface-from` rebuilds the
//! same triangles from the exported frames, and bad input exits 2 with one line.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common;

use common::cli::{assert_usage_error, run, tmp_dir};

/// An OBJ mesh: vertices and triangles (0-based).
struct Obj {
    vertices: Vec<[f64; 3]>,
    triangles: Vec<[usize; 3]>,
}

fn read_obj(path: &Path) -> Obj {
    let text = std::fs::read_to_string(path).unwrap();
    let mut obj = Obj {
        vertices: Vec::new(),
        triangles: Vec::new(),
    };
    for line in text.lines() {
        let mut w = line.split_whitespace();
        match w.next() {
            Some("v") => {
                let v: Vec<f64> = w.take(3).map(|x| x.parse().unwrap()).collect();
                obj.vertices.push([v[0], v[1], v[2]]);
            }
            Some("f") => {
                let f: Vec<usize> = w
                    .map(|x| x.split('/').next().unwrap().parse::<usize>().unwrap() - 1)
                    .collect();
                assert_eq!(f.len(), 3, "not a triangle: {line}");
                obj.triangles.push([f[0], f[1], f[2]]);
            }
            _ => {}
        }
    }
    obj
}

fn dir(name: &str) -> PathBuf {
    let d = tmp_dir().join(name);
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

fn ok(args: &[&str]) -> String {
    let out = run(args);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Edges not shared by exactly two triangles.
fn open_edges(m: &Obj) -> usize {
    let mut count = HashMap::<(usize, usize), u32>::new();
    for t in &m.triangles {
        for k in 0..3 {
            let (a, b) = (t[k], t[(k + 1) % 3]);
            *count.entry((a.min(b), a.max(b))).or_default() += 1;
        }
    }
    count.values().filter(|&&c| c != 2).count()
}

fn volume(m: &Obj) -> f64 {
    let cross = |a: [f64; 3], b: [f64; 3]| {
        [
            a[1] * b[2] - a[2] * b[1],
            a[2] * b[0] - a[0] * b[2],
            a[0] * b[1] - a[1] * b[0],
        ]
    };
    m.triangles
        .iter()
        .map(|t| {
            let [a, b, c] = t.map(|i| m.vertices[i]);
            let x = cross(b, c);
            (a[0] * x[0] + a[1] * x[1] + a[2] * x[2]) / 6.0
        })
        .sum::<f64>()
        .abs()
}

/// The particle mass a run reports on its description line (`m = …`).
fn reported_mass(stdout: &str) -> f64 {
    let at = stdout
        .find(" m = ")
        .expect("no mass on the description line")
        + 5;
    stdout[at..]
        .split(|c: char| c == ',' || c == ';' || c.is_whitespace())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn a_resting_cube_gives_a_closed_mesh_of_its_volume() {
    let d = dir("cube");
    let s = 0.01f64;
    let n = 20;
    let mut csv = String::from("x,y,z\n");
    for i in 0..n {
        for j in 0..n {
            for k in 0..n {
                let p = [i, j, k].map(|c| (c as f64 + 0.5) * s);
                csv += &format!("{},{},{}\n", p[0], p[1], p[2]);
            }
        }
    }
    let input = d.join("cube.csv");
    std::fs::write(&input, csv).unwrap();
    let meshes = d.join("meshes");
    std::fs::create_dir_all(&meshes).unwrap();
    // A tank that fits the cube: the fluid rests on its floor and against its walls.
    let stdout = ok(&[
        "--headless",
        "--cpu",
        "--input",
        input.to_str().unwrap(),
        "--tank-min",
        "0,0,0",
        "--tank-max",
        "0.2,0.2,0.2",
        "--steps",
        "2",
        "--surface-dir",
        meshes.to_str().unwrap(),
        "--surface-every",
        "1",
    ]);
    let m = reported_mass(&stdout);
    let want = (n * n * n) as f64 * m / 1000.0;
    for step in 0..=2 {
        let mesh = read_obj(&meshes.join(format!("surface_{step:06}.obj")));
        assert!(mesh.triangles.len() > 1000);
        assert!(
            mesh.vertices.iter().flatten().all(|c| c.is_finite()),
            "non-finite vertex"
        );
        assert_eq!(open_edges(&mesh), 0, "step {step}: the mesh is not closed");
        let v = volume(&mesh);
        assert!(
            (v / want - 1.0).abs() <= 0.05,
            "step {step}: the mesh encloses {v:.4e} m³, N·m/ρ0 = {want:.4e} m³"
        );
    }
}

/// True when every triangle of `a` has a triangle in `b` with the same vertices in the same
/// cyclic order, each coordinate within 1e-6 relative (and the counts agree).
fn same_triangles(a: &Obj, b: &Obj) -> Result<(), String> {
    if a.triangles.len() != b.triangles.len() {
        return Err(format!(
            "{} triangles against {}",
            a.triangles.len(),
            b.triangles.len()
        ));
    }
    let close = |x: [f64; 3], y: [f64; 3]| {
        (0..3).all(|k| (x[k] - y[k]).abs() <= 1e-6 * x[k].abs().max(y[k].abs()).max(1e-3))
    };
    // Bucket b's triangles by their centroid on a grid far coarser than the tolerance.
    let cell = 1e-4;
    let key = |m: &Obj, t: &[usize; 3]| {
        let c = t.iter().fold([0.0; 3], |acc, &i| {
            std::array::from_fn(|k| acc[k] + m.vertices[i][k] / 3.0)
        });
        c.map(|x| (x / cell).floor() as i64)
    };
    let mut buckets = HashMap::<[i64; 3], Vec<usize>>::new();
    for (i, t) in b.triangles.iter().enumerate() {
        buckets.entry(key(b, t)).or_default().push(i);
    }
    let mut used = vec![false; b.triangles.len()];
    for t in &a.triangles {
        let k = key(a, t);
        let ta = t.map(|i| a.vertices[i]);
        let mut found = false;
        'search: for dx in -1..=1 {
            for dy in -1..=1 {
                for dz in -1..=1 {
                    let Some(list) = buckets.get(&[k[0] + dx, k[1] + dy, k[2] + dz]) else {
                        continue;
                    };
                    for &j in list {
                        if used[j] {
                            continue;
                        }
                        let tb = b.triangles[j].map(|i| b.vertices[i]);
                        if (0..3).any(|r| (0..3).all(|q| close(ta[q], tb[(q + r) % 3]))) {
                            used[j] = true;
                            found = true;
                            break 'search;
                        }
                    }
                }
            }
        }
        if !found {
            return Err(format!("triangle {ta:?} has no match"));
        }
    }
    Ok(())
}

#[test]
fn a_run_writes_meshes_in_step_order_and_frames_rebuild_them() {
    let d = dir("run");
    let (frames, meshes, again) = (d.join("frames"), d.join("meshes"), d.join("again"));
    for p in [&meshes, &again] {
        std::fs::create_dir_all(p).unwrap();
    }
    ok(&[
        "--headless",
        "--cpu",
        "-n",
        "3000",
        "--steps",
        "12",
        "--export-dir",
        frames.to_str().unwrap(),
        "--export-every",
        "4",
        "--surface-dir",
        meshes.to_str().unwrap(),
    ]);
    let names = |dir: &Path| {
        let mut v: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    // The default cadence is the frames' own.
    assert_eq!(
        names(&meshes),
        [
            "surface_000000.obj",
            "surface_000004.obj",
            "surface_000008.obj",
            "surface_000012.obj"
        ]
    );
    let out = ok(&[
        "--headless",
        "--surface-from",
        frames.to_str().unwrap(),
        "--surface-dir",
        again.to_str().unwrap(),
    ]);
    assert!(out.contains("wrote 4 surface meshes"), "{out}");
    assert_eq!(names(&meshes), names(&again));
    for name in names(&meshes) {
        let (a, b) = (read_obj(&meshes.join(&name)), read_obj(&again.join(&name)));
        assert!(!a.triangles.is_empty());
        same_triangles(&a, &b).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    // Another format, same cadence flag.
    let ply = d.join("ply");
    std::fs::create_dir_all(&ply).unwrap();
    ok(&[
        "--headless",
        "--surface-from",
        frames.join("frame_000008.ply").to_str().unwrap(),
        "--surface-dir",
        ply.to_str().unwrap(),
        "--surface-format",
        "ply",
    ]);
    assert_eq!(names(&ply), ["surface_000008.ply"]);
}

#[test]
fn bad_surface_input_exits_2_with_one_line() {
    let d = dir("bad");
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let o = out.to_str().unwrap();
    let run_with = |extra: &[&str]| {
        let mut a = vec!["--headless", "--cpu", "-n", "500", "--steps", "1"];
        a.extend_from_slice(extra);
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    // Missing directories are created (tests/suite/cli.rs); one below a plain file cannot be.
    let blocker = d.join("blocker");
    std::fs::write(&blocker, "").unwrap();
    let missing = blocker.join("meshes");
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            run_with(&["--surface-dir", missing.to_str().unwrap()]),
            "cannot create the directory",
        ),
        (
            run_with(&["--surface-dir", o, "--surface-cube-size", "0"]),
            "--surface-cube-size",
        ),
        (
            run_with(&["--surface-dir", o, "--surface-cube-size", "-1"]),
            "--surface-cube-size",
        ),
        (
            run_with(&["--surface-dir", o, "--surface-threshold", "0"]),
            "--surface-threshold",
        ),
        (
            run_with(&["--surface-dir", o, "--surface-threshold", "nan"]),
            "--surface-threshold",
        ),
        (
            run_with(&["--surface-dir", o, "--surface-every", "0"]),
            "≥ 1",
        ),
    ];
    for (args, needle) in &cases {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_usage_error(&args, needle);
    }
    // An empty particle set, and a frame without a vertex in it.
    let empty_csv = d.join("empty.csv");
    std::fs::write(&empty_csv, "x,y,z\n").unwrap();
    let empty_ply = d.join("frame_000000.ply");
    std::fs::write(
        &empty_ply,
        "ply\nformat ascii 1.0\ncomment gpu-sph h 2e-2\ncomment gpu-sph s 1e-2\ncomment gpu-sph m 1e-3\ncomment gpu-sph rho0 1e3\nelement vertex 0\nproperty float x\nproperty float y\nproperty float z\nend_header\n",
    )
    .unwrap();
    for from in [&empty_csv, &empty_ply] {
        assert_usage_error(
            &[
                "--headless",
                "--surface-from",
                from.to_str().unwrap(),
                "--surface-dir",
                o,
            ],
            "no particles",
        );
    }
    assert_usage_error(
        &[
            "--headless",
            "--surface-from",
            empty_ply.to_str().unwrap(),
            "--surface-dir",
            missing.to_str().unwrap(),
        ],
        "cannot create the directory",
    );
    // An unwritable directory (a file where the directory should be).
    let not_dir = d.join("file");
    std::fs::write(&not_dir, "").unwrap();
    assert_usage_error(
        &run_with(&["--surface-dir", not_dir.to_str().unwrap()])
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>(),
        "cannot create the directory",
    );
}
