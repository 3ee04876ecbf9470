//! gpu-sph in a web page: the simulator on the browser's WebGPU, driven by `web/index.html`.
//!
//! The page hands [`run`] its URL's parameters; [`run`] builds the run as the command line's
//! headless run would ([`gpu_sph::app::session::Session`], the same scene files, flags and
//! one-line refusals), steps it through the same driver loop, awaited
//! ([`gpu_sph::run::drive_async`]: the browser maps each step's statistics back while the page
//! yields), and returns the report the page writes into its `#report` element.
//!
//! Worked example: `?scene=dam-break&n=3000&steps=20&report=1` runs 20 DFSPH steps of the
//! default dam break with 3 000 particles on the visitor's GPU; the report's `stats` is the
//! `--stats` row of step 20, as `gpu-sph --headless --gpu -n 3000 --steps 20 --stats FILE`
//! writes it.
//!
//! On a native target the crate is empty (the page is wasm32 only; `scripts/web.sh` builds it).
#![cfg(target_arch = "wasm32")]

use std::sync::Arc;

use gpu_sph::app::session::{SceneGiven, Session};
use gpu_sph::gpu::GpuContext;
use serde_json::{Map, Value, json};
use wasm_bindgen::prelude::*;

mod view;

/// The page's own parameters; every other one is a setting (a scene file's key, a flag's
/// name with `_` or `-`).
const PAGE_KEYS: &[&str] = &[
    "scene",
    "n",
    "steps",
    "report",
    "verify",
    "tolerance",
    "frame",
    "view",
    "frames",
    "offscreen",
];

#[wasm_bindgen(start)]
fn start() {
    // A panic names its cause in the browser's console instead of "unreachable".
    console_error_panic_hook::set_once();
    // Warnings and errors (wgpu's uncaught validation errors among them) go to the console.
    if log::set_logger(&Console).is_ok() {
        log::set_max_level(log::LevelFilter::Warn);
    }
}

/// The `log` crate's lines, into the browser's console.
struct Console;

impl log::Log for Console {
    fn enabled(&self, m: &log::Metadata) -> bool {
        m.level() <= log::Level::Warn
    }

    fn log(&self, r: &log::Record) {
        if self.enabled(r.metadata()) {
            let line = JsValue::from_str(&format!("{} {}: {}", r.level(), r.target(), r.args()));
            match r.level() {
                log::Level::Error => web_sys::console::error_1(&line),
                _ => web_sys::console::warn_1(&line),
            }
        }
    }

    fn flush(&self) {}
}

/// What the page asks for, from its URL's parameters.
struct Ask {
    scene: SceneGiven,
    steps: u64,
    settings: Map<String, Value>,
    verify: Option<f64>,
    frame: bool,
}

fn number<T: std::str::FromStr>(
    params: &Map<String, Value>,
    key: &str,
    default: T,
) -> Result<T, String> {
    match params.get(key).and_then(Value::as_str) {
        None | Some("") => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("{key}={text}: expected a whole number")),
    }
}

/// A scene file chosen in the page: its JSON text and the mesh files chosen with it (their
/// names and bytes, in the same order).
struct Chosen {
    text: Option<String>,
    mesh_names: Vec<String>,
    mesh_bytes: Vec<js_sys::Uint8Array>,
}

/// The page's URL parameters (`params`, a JSON object of strings) and what they ask, with the
/// scene file `chosen`.
fn ask(params: &str, chosen: Chosen) -> Result<(Map<String, Value>, Ask), String> {
    let params: Map<String, Value> =
        serde_json::from_str(params).map_err(|e| format!("the page's parameters: {e}"))?;
    let ask = ask_of(&params, chosen)?;
    Ok((params, ask))
}

/// What `params` ask for, with the scene file `chosen`.
fn ask_of(params: &Map<String, Value>, chosen: Chosen) -> Result<Ask, String> {
    let name = params
        .get("scene")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .unwrap_or("dam-break")
        .to_string();
    let scene = match chosen.text {
        Some(text) => SceneGiven::Uploaded {
            text,
            name,
            meshes: chosen
                .mesh_names
                .into_iter()
                .zip(chosen.mesh_bytes.iter().map(js_sys::Uint8Array::to_vec))
                .collect(),
        },
        None if !chosen.mesh_names.is_empty() => {
            return Err(format!(
                "{} chosen without a scene file: choose the scene file (.json) together with the meshes it names",
                chosen.mesh_names.join(", ")
            ));
        }
        None => SceneGiven::Name(name),
    };
    let mut settings = Map::new();
    settings.insert("particles".into(), json!(number(params, "n", 20_000u64)?));
    // The page computes on the visitor's GPU whatever its kind (a software adapter included:
    // the point of the page is that GPU's result).
    settings.insert("gpu".into(), json!(true));
    for (key, value) in params {
        if PAGE_KEYS.contains(&key.as_str()) {
            continue;
        }
        let text = value.as_str().unwrap_or_default();
        // A flag is `key=true` (or `on`); "1" stays a value (`group_size=1`).
        let value = match text {
            "true" | "on" => json!(true),
            "false" | "off" => json!(false),
            _ => json!(text),
        };
        settings.insert(key.replace('-', "_"), value);
    }
    let on = |key: &str| {
        params
            .get(key)
            .and_then(Value::as_str)
            .is_some_and(|v| v == "1" || v == "true")
    };
    // The verify tolerance off lavapipe: another compiler's float operations agree within
    // 1e-5 relative, not to the bit; `tolerance=0` asks for the bits.
    let verify = match on("verify") {
        false => None,
        true => Some(match params.get("tolerance").and_then(Value::as_str) {
            None | Some("") => 1e-5,
            Some(t) => t
                .parse::<f64>()
                .ok()
                .filter(|x| x.is_finite() && *x >= 0.0)
                .ok_or_else(|| format!("tolerance={t}: expected a number >= 0"))?,
        }),
    };
    let frame = on("frame");
    Ok(Ask {
        scene,
        steps: number(params, "steps", 100)?,
        settings,
        verify,
        frame,
    })
}

/// Runs what `params` (the page's URL parameters, as a JSON object of strings) asks on the
/// browser's GPU and returns the report as JSON text; a refusal or failure is one line.
/// `scene_text` is a scene file's JSON (a file dropped on the page), which `scene` then names;
/// `mesh_names` and `mesh_bytes` the mesh files chosen with it.
#[wasm_bindgen]
pub async fn run(
    params: String,
    scene_text: Option<String>,
    mesh_names: Vec<String>,
    mesh_bytes: Vec<js_sys::Uint8Array>,
) -> Result<String, String> {
    let chosen = Chosen {
        text: scene_text,
        mesh_names,
        mesh_bytes,
    };
    let (_, ask) = ask(&params, chosen)?;
    let ctx = Arc::new(GpuContext::new_async().await.map_err(|e| e.to_string())?);
    let info = &ctx.info;
    let adapter = json!({
        "name": gpu_sph::gpu::context::describe(info),
        "backend": format!("{:?}", info.backend),
        "device_type": format!("{:?}", info.device_type),
        "driver": format!("{} {}", info.driver, info.driver_info),
        "max_storage_buffers_per_shader_stage": ctx.limits.max_storage_buffers_per_shader_stage,
    });
    let built = ctx
        .scoped_async(|| Session::on_gpu(ask.scene.clone(), &ask.settings, ctx.clone()))
        .await;
    let mut session = built.and_then(|s| s).map_err(|e| e.to_string())?;
    // As `--verify --steps K`: the K steps from the start, on this GPU and on the CPU mirror
    // compiled into the page, stage by stage; then the run's own K steps.
    let verified = match ask.verify {
        Some(tolerance) => Some(
            session
                .verify_async(ask.steps, tolerance)
                .await
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let clock = web_time::Instant::now();
    session
        .step_async(ask.steps)
        .await
        .map_err(|e| e.to_string())?;
    let seconds = clock.elapsed().as_secs_f64();
    let mut report = json!({
        "adapter": adapter,
        "geometry": session.geometry(),
        "steps": session.steps(),
        "time": session.time(),
        "stats": session.stats(),
        "stepping_s": seconds,
        "steps_per_s": session.steps() as f64 / seconds.max(1e-9),
    });
    if ask.frame {
        let size = (320, 240);
        let rgba = session.frame_async(size).await.map_err(|e| e.to_string())?;
        report["frame"] = frame_summary(&rgba, size);
    }
    if let Some(v) = verified {
        report["verify"] = serde_json::to_value(&v).map_err(|e| e.to_string())?;
    }
    serde_json::to_string(&report).map_err(|e| e.to_string())
}

/// Opens the viewer on what `params` asks (scene, N, solver, any setting, a scene file and
/// its meshes, as [`run`] takes them) in `canvas`, stepping on the browser's GPU; `on_frame` hears the count of frames drawn
/// after each, `on_error` the one line that stops the view. Returns once the view runs, or the
/// line that refused it.
#[wasm_bindgen]
#[allow(clippy::too_many_arguments)]
pub async fn view(
    params: String,
    scene_text: Option<String>,
    mesh_names: Vec<String>,
    mesh_bytes: Vec<js_sys::Uint8Array>,
    canvas: web_sys::HtmlCanvasElement,
    on_frame: js_sys::Function,
    on_error: js_sys::Function,
) -> Result<(), String> {
    let chosen = Chosen {
        text: scene_text,
        mesh_names,
        mesh_bytes,
    };
    let (params, ask) = ask(&params, chosen)?;
    let target = view::Target {
        offscreen: params.get("offscreen").and_then(Value::as_str) == Some("1"),
        read_at: number(&params, "frames", 3)?,
    };
    let mut opts = Session::viewer_options(ask.scene, &ask.settings).map_err(|e| e.to_string())?;
    opts.size = (canvas.width(), canvas.height());
    // A canvas presents in step with the page's refresh: WebGPU's one mode.
    opts.present_mode = wgpu::PresentMode::Fifo;
    let calls = view::Callbacks {
        frame: on_frame,
        error: on_error,
    };
    view::start(opts, canvas, target, calls).await
}

/// What a drawn frame shows: its size and how many pixels differ from its first (a corner:
/// the background), which the particles drawn make thousands of.
fn frame_summary(rgba: &[u8], size: (u32, u32)) -> Value {
    let background = &rgba[..4];
    let drawn = rgba.chunks_exact(4).filter(|px| *px != background).count();
    json!({ "width": size.0, "height": size.1, "pixels_unlike_background": drawn })
}
