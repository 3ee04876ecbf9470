//! A picture of a surface mesh from `--surface-dir`, drawn by gpu-sph's offscreen mesh
//! renderer (`gpu_sph::viewer::mesh`), framed on the mesh's bounding box unless told otherwise.
//!
//! ```sh
//! cargo run --release --example mesh_png -- surface_000400.obj docs/surface_mesh.png \
//!     [--frame 0,0,0,1.1,0.66,0.21] [--size 960x540]
//! ```

use std::path::PathBuf;
use std::process::ExitCode;

use glam::Vec3;
use gpu_sph::gpu::GpuContext;

fn parse_frame(s: &str) -> Option<(Vec3, Vec3)> {
    let v: Vec<f32> = s
        .split(',')
        .map(|c| c.trim().parse().ok())
        .collect::<Option<_>>()?;
    match v[..] {
        [a, b, c, d, e, f] => Some((Vec3::new(a, b, c), Vec3::new(d, e, f))),
        _ => None,
    }
}

fn parse_size(s: &str) -> Option<(u32, u32)> {
    let (w, h) = s.split_once('x')?;
    Some((w.parse().ok()?, h.parse().ok()?))
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: mesh_png MESH.obj|ply OUT.png [--frame x0,y0,z0,x1,y1,z1] [--size WxH]";
    let (Some(mesh), Some(out)) = (args.first(), args.get(1)) else {
        eprintln!("{usage}");
        return ExitCode::from(2);
    };
    let mut frame = None;
    let mut size = (960, 540);
    let mut rest = args[2..].iter();
    while let Some(flag) = rest.next() {
        let value = rest.next().map(String::as_str).unwrap_or("");
        let ok = match flag.as_str() {
            "--frame" => parse_frame(value).map(|f| frame = Some(f)).is_some(),
            "--size" => parse_size(value).map(|s| size = s).is_some(),
            _ => false,
        };
        if !ok {
            eprintln!("bad argument {flag} {value:?}; {usage}");
            return ExitCode::from(2);
        }
    }
    let result = gpu_sph::surface::read_mesh(&PathBuf::from(mesh)).and_then(|m| {
        let bounds = m
            .vertices
            .iter()
            .fold((Vec3::INFINITY, Vec3::NEG_INFINITY), |(lo, hi), v| {
                let p = Vec3::new(v.x, v.y, v.z);
                (lo.min(p), hi.max(p))
            });
        let ctx = GpuContext::new()?;
        let frame = frame.unwrap_or(bounds);
        gpu_sph::viewer::mesh::render_png(&ctx, &m, frame, size, &PathBuf::from(out))
    });
    match result {
        Ok(()) => {
            println!("wrote {out}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mesh_png: {e}");
            ExitCode::from(2)
        }
    }
}
