//! The viewer in the page's canvas: the native viewer ([`gpu_sph::viewer::Viewer`]: the orbit
//! camera, the mouse force, colouring by speed, density or pressure, the water surface, the
//! panel) driven by winit's web event loop, its input through the window's own handling
//! ([`gpu_sph::viewer::input::Input`]).
//!
//! A frame waits for the GPU (the steps' statistics, the colour range's readback), and a page
//! cannot block: each frame runs as a task of its own that takes the view, awaits
//! [`Viewer::advance_frame_async`], then takes the canvas's texture and draws
//! ([`Viewer::draw_frame`]) before it yields, since that texture lives only until the page
//! yields. Events that arrive while a frame is away wait in a queue and are applied, in order,
//! when it is back.
//!
//! Worked example: `?view=1&scene=dam-break&n=20000` opens the default dam break with 20 000
//! particles, DFSPH, stepped on the visitor's GPU, in the page's canvas.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

use gpu_sph::gpu::GpuContext;
use gpu_sph::viewer::input::Input;
use gpu_sph::viewer::{Viewer, ViewerOptions};
use wasm_bindgen::prelude::*;
use winit::application::ApplicationHandler;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, EventLoop};
use winit::platform::web::{EventLoopExtWebSys, WindowAttributesExtWebSys};
use winit::window::{Window, WindowId};

/// What the page hears of the view: each frame drawn (its count) and the line that stopped it.
pub struct Callbacks {
    /// Called after each frame with the number drawn so far and, in an offscreen view at its
    /// `read_at`th frame, what it shows as JSON (`width`, `height`, and
    /// `pixels_unlike_background`: how many pixels differ from its first, the background);
    /// otherwise `undefined`.
    pub frame: js_sys::Function,
    /// Called with one line when the view stops on an error.
    pub error: js_sys::Function,
}

/// Where the view draws.
#[derive(Clone, Copy, Debug, Default)]
pub struct Target {
    /// Into a texture of the canvas's size instead of the canvas, and read the `read_at`th
    /// frame back: what a test checks (headless Chromium on SwiftShader loses the device when a
    /// WebGPU canvas is presented; a page with nothing but a cleared canvas does too).
    pub offscreen: bool,
    /// The frame an offscreen view reads back.
    pub read_at: u64,
}

/// The GPU side of the view, built before the event loop starts.
struct Gpu {
    ctx: Arc<GpuContext>,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    viewer: Viewer,
    /// The offscreen view's texture, and the frame it reads back.
    offscreen: Option<(wgpu::Texture, u64)>,
}

/// The view once winit has given it its window.
struct Shown {
    window: Arc<Window>,
    gpu: Gpu,
    egui: egui_winit::State,
    input: Input,
    frames: u64,
}

/// Builds the viewer for `opts` on the browser's GPU, drawing into `canvas`, and starts
/// winit's event loop over it; returns once the loop runs (the page goes on).
pub async fn start(
    opts: ViewerOptions,
    canvas: web_sys::HtmlCanvasElement,
    target: Target,
    calls: Callbacks,
) -> Result<(), String> {
    let instance = wgpu::Instance::new(gpu_sph::gpu::context::without_indirect_validation(
        wgpu::InstanceDescriptor::new_without_display_handle_from_env(),
    ));
    let surface = instance
        .create_surface(wgpu::SurfaceTarget::Canvas(canvas.clone()))
        .map_err(|e| format!("cannot draw into the page's canvas: {e}"))?;
    let adapter = gpu_sph::gpu::context::pick_adapter(&instance, Some(&surface))
        .await
        .map_err(|e| e.to_string())?;
    let mut ctx = GpuContext::from_adapter(adapter)
        .await
        .map_err(|e| e.to_string())?;
    ctx.instance = Some(instance);
    let ctx = Arc::new(ctx);
    let size = (canvas.width(), canvas.height());
    let config = gpu_sph::viewer::surface_config(&surface, &ctx, size, opts.present_mode)
        .map_err(|e| e.to_string())?;
    surface.configure(&ctx.device, &config);
    // Offscreen, the frames are drawn in the format read back as RGBA bytes.
    let format = if target.offscreen {
        gpu_sph::viewer::offscreen_format(&ctx.adapter)
    } else {
        config.format
    };
    let viewer = ctx
        .scoped_async(|| Viewer::new(ctx.clone(), opts, format))
        .await
        .and_then(|v| v)
        .map_err(|e| e.to_string())?;
    let offscreen = target
        .offscreen
        .then(|| (viewer.capture_texture(size), target.read_at));
    let app = App {
        canvas: Some(canvas),
        gpu: Some(Gpu {
            ctx,
            surface,
            config,
            viewer,
            offscreen,
        }),
        shown: Rc::new(RefCell::new(None)),
        queued: Vec::new(),
        calls: Rc::new(calls),
        stopped: Rc::new(RefCell::new(false)),
    };
    let event_loop = EventLoop::new().map_err(|e| format!("cannot start the page's view: {e}"))?;
    event_loop.spawn_app(app);
    Ok(())
}

struct App {
    canvas: Option<web_sys::HtmlCanvasElement>,
    gpu: Option<Gpu>,
    /// The view; `None` while a frame has it (and before the window exists).
    shown: Rc<RefCell<Option<Shown>>>,
    /// Events that arrived while a frame had the view.
    queued: Vec<WindowEvent>,
    calls: Rc<Callbacks>,
    stopped: Rc<RefCell<bool>>,
}

fn report(f: &js_sys::Function, value: JsValue) {
    // The page's own callback failing is the page's to show in its console.
    let _ = f.call1(&JsValue::NULL, &value);
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        let (Some(canvas), Some(gpu)) = (self.canvas.take(), self.gpu.take()) else {
            return;
        };
        let attributes = Window::default_attributes()
            .with_title("gpu-sph")
            .with_canvas(Some(canvas))
            .with_prevent_default(true);
        let window = match event_loop.create_window(attributes) {
            Ok(w) => Arc::new(w),
            Err(e) => {
                self.stop(&format!("cannot open the view in the canvas: {e}"));
                return;
            }
        };
        let egui = egui_winit::State::new(
            gpu.viewer.egui().clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            None,
            Some(gpu.ctx.limits.max_texture_dimension_2d as usize),
        );
        window.request_redraw();
        *self.shown.borrow_mut() = Some(Shown {
            window,
            gpu,
            egui,
            input: Input::default(),
            frames: 0,
        });
    }

    fn window_event(&mut self, _: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        if *self.stopped.borrow() {
            return;
        }
        let Some(mut shown) = self.shown.borrow_mut().take() else {
            self.queued.push(event);
            return;
        };
        for queued in std::mem::take(&mut self.queued) {
            shown.apply(queued);
        }
        if matches!(event, WindowEvent::RedrawRequested) {
            self.frame(shown);
        } else {
            shown.apply(event);
            *self.shown.borrow_mut() = Some(shown);
        }
    }
}

impl App {
    fn stop(&self, line: &str) {
        *self.stopped.borrow_mut() = true;
        report(&self.calls.error, JsValue::from_str(line));
    }

    /// Runs one frame as its own task; the view comes back when it is drawn.
    fn frame(&self, mut shown: Shown) {
        let slot = self.shown.clone();
        let calls = self.calls.clone();
        let stopped = self.stopped.clone();
        wasm_bindgen_futures::spawn_local(async move {
            match shown.frame().await {
                Ok(read) => {
                    let pixels = read.map_or(JsValue::UNDEFINED, |r| JsValue::from_str(&r));
                    let frames = JsValue::from_f64(shown.frames as f64);
                    // The page's own callback failing is the page's to show in its console.
                    let _ = calls.frame.call2(&JsValue::NULL, &frames, &pixels);
                    shown.window.request_redraw();
                    *slot.borrow_mut() = Some(shown);
                }
                Err(e) => {
                    *stopped.borrow_mut() = true;
                    report(&calls.error, JsValue::from_str(&e));
                }
            }
        });
    }
}

impl Shown {
    fn apply(&mut self, event: WindowEvent) {
        let consumed = self.egui.on_window_event(&self.window, &event).consumed;
        if let WindowEvent::Resized(size) = event {
            let g = &mut self.gpu;
            g.config.width = size.width;
            g.config.height = size.height;
            if size.width > 0 && size.height > 0 {
                g.surface.configure(&g.ctx.device, &g.config);
            }
            return;
        }
        let size = (self.gpu.config.width, self.gpu.config.height);
        // Closing is the tab's: Escape does nothing here.
        self.input
            .event(&mut self.gpu.viewer, &event, consumed, size);
    }

    /// Draws one frame; an offscreen view's `read_at`th frame is read back and described (see
    /// [`Callbacks::frame`]).
    async fn frame(&mut self) -> Result<Option<String>, String> {
        let g = &mut self.gpu;
        if g.config.width == 0 || g.config.height == 0 {
            return Ok(None);
        }
        g.viewer
            .advance_frame_async()
            .await
            .map_err(|e| e.to_string())?;
        let scale = self.window.scale_factor() as f32;
        if let Some((texture, read_at)) = &g.offscreen {
            let input = self.egui.take_egui_input(&self.window);
            let out = g
                .viewer
                .draw_frame(texture, scale, input, None)
                .map_err(|e| e.to_string())?;
            self.egui.handle_platform_output(&self.window, out);
            self.frames += 1;
            if self.frames != *read_at {
                return Ok(None);
            }
            let rgba = gpu_sph::viewer::read_rgba_async(&g.ctx, texture)
                .await
                .map_err(|e| e.to_string())?;
            let summary = crate::frame_summary(&rgba, (texture.width(), texture.height()));
            return Ok(Some(summary.to_string()));
        }
        // From here to the present nothing yields: the canvas's texture lives until then.
        let frame = match g.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t)
            | wgpu::CurrentSurfaceTexture::Suboptimal(t) => t,
            wgpu::CurrentSurfaceTexture::Outdated | wgpu::CurrentSurfaceTexture::Lost => {
                g.surface.configure(&g.ctx.device, &g.config);
                return Ok(None);
            }
            _ => return Ok(None),
        };
        let input = self.egui.take_egui_input(&self.window);
        let out = g
            .viewer
            .draw_frame(&frame.texture, scale, input, None)
            .map_err(|e| e.to_string())?;
        // A screenshot (P) saves a file, which a page has not: the request is dropped.
        g.viewer.take_screenshot_request();
        self.egui.handle_platform_output(&self.window, out);
        g.ctx.queue.present(frame);
        self.frames += 1;
        Ok(None)
    }
}
