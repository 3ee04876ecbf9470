//! The window front end: winit 0.30's `ApplicationHandler`, a wgpu surface, mouse and keyboard.
//! Every failure ends the event loop with an [`Error`] instead of a panic; a lost or outdated
//! surface is reconfigured, a zero-size (minimised) window renders nothing until it is restored.

use std::path::PathBuf;
use std::sync::Arc;

use winit::application::ApplicationHandler;
use winit::dpi::PhysicalSize;
use winit::event::WindowEvent;
use winit::event_loop::{ActiveEventLoop, ControlFlow, EventLoop};
use winit::window::{Window, WindowId};

use super::input::{Asked, Input};
use super::{Viewer, ViewerOptions, check_png_path};
use crate::gpu::GpuContext;
use crate::gpu::context::pick_adapter;
use crate::{Error, Result};

/// Opens the window and runs until it is closed (or, with `--screenshot`, until the
/// screenshot is saved).
pub fn run(opts: ViewerOptions) -> Result<()> {
    if let Some(path) = &opts.screenshot {
        check_png_path(path)?;
    }
    let no_display = |why: String| {
        Error::NoDisplay(format!(
            "cannot open a window ({why}): run with --headless, or start a display (e.g. Xvfb :99 & DISPLAY=:99)"
        ))
    };
    let unset = |v: &str| std::env::var_os(v).is_none_or(|s| s.is_empty());
    if unset("DISPLAY") && unset("WAYLAND_DISPLAY") {
        return Err(no_display(
            "neither DISPLAY nor WAYLAND_DISPLAY is set".into(),
        ));
    }
    let event_loop = EventLoop::new().map_err(|e| no_display(e.to_string()))?;
    let mut app = App {
        opts,
        state: None,
        result: Ok(()),
    };
    event_loop
        .run_app(&mut app)
        .map_err(|e| no_display(e.to_string()))?;
    app.result
}

struct App {
    opts: ViewerOptions,
    state: Option<WindowState>,
    result: Result<()>,
}

/// The `--screenshot` run's progress through its script.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Script {
    /// Render until `frames` frames, then save.
    Frames,
    /// Shrunk to 0 × 0: one redraw must render nothing.
    Shrunk,
    /// Restored: render a frame, then exit.
    Restored,
}

struct WindowState {
    window: Arc<Window>,
    instance: wgpu::Instance,
    surface: wgpu::Surface<'static>,
    config: wgpu::SurfaceConfiguration,
    ctx: Arc<GpuContext>,
    viewer: Viewer,
    egui: egui_winit::State,
    input: Input,
    frames: u32,
    script: Script,
    screenshot_count: u32,
}

impl App {
    fn fail(&mut self, event_loop: &ActiveEventLoop, e: Error) {
        if self.result.is_ok() {
            self.result = Err(e);
        }
        event_loop.exit();
    }

    fn create(&mut self, event_loop: &ActiveEventLoop) -> Result<WindowState> {
        let (w, h) = self.opts.size;
        let window = Arc::new(
            event_loop
                .create_window(
                    Window::default_attributes()
                        .with_title("gpu-sph")
                        .with_inner_size(PhysicalSize::new(w.max(1), h.max(1))),
                )
                .map_err(|e| {
                    Error::NoDisplay(format!("cannot create a window: {e}: run with --headless"))
                })?,
        );
        let instance = wgpu::Instance::new(crate::gpu::context::without_indirect_validation(
            wgpu::InstanceDescriptor::new_with_display_handle_from_env(Box::new(
                event_loop.owned_display_handle(),
            )),
        ));
        let surface = instance.create_surface(window.clone()).map_err(|e| {
            Error::NoDisplay(format!(
                "cannot draw into the window: {e}: run with --headless"
            ))
        })?;
        let adapter = pollster::block_on(pick_adapter(&instance, Some(&surface)))?;
        let ctx = Arc::new(pollster::block_on(GpuContext::from_adapter(adapter))?);
        let size = window.inner_size();
        let config = super::surface_config(
            &surface,
            &ctx,
            (size.width, size.height),
            self.opts.present_mode,
        )?;
        if size.width > 0 && size.height > 0 {
            surface.configure(&ctx.device, &config);
        }
        let format = config.format;
        let viewer = Viewer::new(ctx.clone(), self.opts.clone(), format)?;
        let egui = egui_winit::State::new(
            viewer.egui().clone(),
            egui::ViewportId::ROOT,
            &window,
            Some(window.scale_factor() as f32),
            None,
            Some(ctx.limits.max_texture_dimension_2d as usize),
        );
        log::info!(
            "window {}x{}, surface {format:?}, {:?}",
            size.width,
            size.height,
            config.present_mode
        );
        Ok(WindowState {
            window,
            instance,
            surface,
            config,
            ctx,
            viewer,
            egui,
            input: Input::default(),
            frames: 0,
            script: Script::Frames,
            screenshot_count: 0,
        })
    }
}

impl WindowState {
    fn resize(&mut self, size: PhysicalSize<u32>) {
        self.config.width = size.width;
        self.config.height = size.height;
        if size.width > 0 && size.height > 0 {
            self.surface.configure(&self.ctx.device, &self.config);
        }
    }

    fn visible(&self) -> bool {
        self.config.width > 0 && self.config.height > 0
    }

    fn size(&self) -> (u32, u32) {
        (self.config.width, self.config.height)
    }

    /// Renders and presents one frame; `capture` also saves it as a PNG. Returns whether a frame
    /// was drawn.
    fn redraw(&mut self, capture: Option<PathBuf>) -> Result<bool> {
        if !self.visible() {
            return Ok(false);
        }
        let frame = match self.surface.get_current_texture() {
            wgpu::CurrentSurfaceTexture::Success(t) => t,
            wgpu::CurrentSurfaceTexture::Suboptimal(t) => {
                // Draw this one, then match the surface again.
                let drawn = self.draw(t, capture)?;
                self.surface.configure(&self.ctx.device, &self.config);
                return Ok(drawn);
            }
            wgpu::CurrentSurfaceTexture::Timeout | wgpu::CurrentSurfaceTexture::Occluded => {
                return Ok(false);
            }
            wgpu::CurrentSurfaceTexture::Outdated => {
                self.surface.configure(&self.ctx.device, &self.config);
                return Ok(false);
            }
            wgpu::CurrentSurfaceTexture::Lost => {
                self.surface = self
                    .instance
                    .create_surface(self.window.clone())
                    .map_err(|e| {
                        Error::NoDisplay(format!(
                            "the window's surface was lost and cannot be recreated: {e}"
                        ))
                    })?;
                self.surface.configure(&self.ctx.device, &self.config);
                return Ok(false);
            }
            wgpu::CurrentSurfaceTexture::Validation => {
                log::warn!("surface validation error; skipping a frame");
                return Ok(false);
            }
        };
        self.draw(frame, capture)
    }

    fn draw(&mut self, frame: wgpu::SurfaceTexture, capture: Option<PathBuf>) -> Result<bool> {
        let size = (frame.texture.width(), frame.texture.height());
        let input = self.egui.take_egui_input(&self.window);
        let shot = capture.map(|p| (self.viewer.capture_texture(size), p));
        let out = self.viewer.frame(
            &frame.texture,
            self.window.scale_factor() as f32,
            input,
            shot.as_ref().map(|(t, _)| t),
        )?;
        self.egui.handle_platform_output(&self.window, out);
        self.window.pre_present_notify();
        self.ctx.queue.present(frame);
        if let Some((texture, path)) = shot {
            self.viewer.save_png(&texture, &path)?;
            self.viewer.controls_mut().status = format!("saved {}", path.display());
            log::info!("saved {}", path.display());
        }
        self.frames += 1;
        Ok(true)
    }
}

impl ApplicationHandler for App {
    fn resumed(&mut self, event_loop: &ActiveEventLoop) {
        if self.state.is_some() {
            return;
        }
        match self.create(event_loop) {
            Ok(s) => {
                s.window.request_redraw();
                self.state = Some(s);
            }
            Err(e) => self.fail(event_loop, e),
        }
    }

    fn window_event(&mut self, event_loop: &ActiveEventLoop, _: WindowId, event: WindowEvent) {
        let Some(s) = self.state.as_mut() else {
            return;
        };
        let consumed = s.egui.on_window_event(&s.window, &event).consumed;
        match event {
            WindowEvent::Resized(size) => s.resize(size),
            WindowEvent::RedrawRequested => {
                if let Err(e) = self.redraw(event_loop) {
                    self.fail(event_loop, e);
                }
            }
            other => {
                let size = s.size();
                if s.input.event(&mut s.viewer, &other, consumed, size) == Asked::Close {
                    event_loop.exit();
                }
            }
        }
    }

    fn about_to_wait(&mut self, event_loop: &ActiveEventLoop) {
        match &self.state {
            Some(s) if s.visible() || s.script == Script::Shrunk => {
                event_loop.set_control_flow(ControlFlow::Poll);
                s.window.request_redraw();
            }
            // Minimised: sleep until the window changes instead of spinning.
            _ => event_loop.set_control_flow(ControlFlow::Wait),
        }
    }
}

impl App {
    /// One redraw, plus the `--screenshot` script: after `frames` frames save the image, then
    /// (with `exercise_resize`) shrink to 0 × 0, check that a redraw there draws nothing, restore
    /// the size, draw once more, and exit.
    fn redraw(&mut self, event_loop: &ActiveEventLoop) -> Result<()> {
        let opts = &self.opts;
        let Some(s) = self.state.as_mut() else {
            return Ok(());
        };
        let script_shot = opts.screenshot.is_some()
            && s.script == Script::Frames
            && s.frames + 1 >= opts.frames.max(1);
        let shot = if script_shot {
            opts.screenshot.clone()
        } else if s.viewer.take_screenshot_request() {
            s.screenshot_count += 1;
            Some(PathBuf::from(format!(
                "gpu-sph-{}-{}.png",
                std::process::id(),
                s.screenshot_count
            )))
        } else {
            None
        };
        let drawn = s.redraw(shot)?;
        if opts.screenshot.is_none() {
            return Ok(());
        }
        match s.script {
            Script::Frames if script_shot && drawn => {
                if opts.exercise_resize {
                    s.script = Script::Shrunk;
                    s.resize(PhysicalSize::new(0, 0));
                } else {
                    event_loop.exit();
                }
            }
            Script::Shrunk => {
                if drawn {
                    return Err(Error::Device(
                        "a frame was drawn into a 0 × 0 surface".into(),
                    ));
                }
                s.script = Script::Restored;
                let size = s.window.inner_size();
                let size = if size.width == 0 || size.height == 0 {
                    PhysicalSize::new(opts.size.0.max(1), opts.size.1.max(1))
                } else {
                    size
                };
                s.resize(size);
            }
            Script::Restored if drawn => {
                if opts.print_timings {
                    println!("{}", s.viewer.timing_line());
                }
                event_loop.exit();
            }
            _ => {}
        }
        if s.script == Script::Frames
            && !opts.exercise_resize
            && drawn
            && script_shot
            && opts.print_timings
        {
            println!("{}", s.viewer.timing_line());
        }
        Ok(())
    }
}
