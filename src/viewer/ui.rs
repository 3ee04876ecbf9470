//! The egui control panel: frame statistics, the colour legend, live physics and restart
//! settings, and the key bindings.

use crate::core::Stage;
use crate::scene::{SceneChoice, SceneKind};

use super::render::{ColorField, colormap_srgb};
use super::surface::{RenderMode, SurfaceStyle};

/// Timings and state of the last frame, for display.
#[derive(Clone, Debug, Default)]
pub struct FrameStats {
    /// Frames per second (smoothed).
    pub fps: f64,
    /// Wall time of the frame's simulation substeps (submit to completion), ms.
    pub sim_ms: f64,
    /// Wall time of the frame's rendering (submit to completion, before present), ms.
    pub render_ms: f64,
    /// Per-pass GPU times of the last substep, from timestamp queries where the adapter has them.
    pub stage_ms: Vec<(&'static str, f64)>,
    /// Steps taken since the last reset.
    pub steps: u64,
    /// Simulated time since the last reset, s.
    pub t: f64,
    /// The last step's dt, s.
    pub dt: f32,
    /// The last step's largest speed, m/s.
    pub v_max: f32,
}

/// Everything the panel can change. The viewer applies it after the panel has run.
#[derive(Clone, Debug)]
pub struct Controls {
    /// Spheres or the fluid surface.
    pub mode: RenderMode,
    /// The surface's filter and shading.
    pub style: SurfaceStyle,
    /// The simulation is paused.
    pub paused: bool,
    /// Take one step while paused.
    pub step_once: bool,
    /// The panel is shown.
    pub show_ui: bool,
    /// Field colouring the particles.
    pub field: ColorField,
    /// Colour map range per field (min, max), indexed like [`ColorField::ALL`].
    pub ranges: [(f32, f32); 3],
    /// Simulation steps per rendered frame.
    pub substeps: u32,
    /// Monaghan α, live.
    pub alpha: f32,
    /// Müller viscosity μ, Pa·s, live.
    pub viscosity: f32,
    /// Tait stiffness B, Pa, live (the speed of sound follows: c = √(7B/ρ0)).
    pub stiffness: f32,
    /// Gravity along y, m/s², live.
    pub gravity: f32,
    /// Peak acceleration of the mouse force, m/s².
    pub mouse_strength: f32,
    /// Reach of the mouse force around the cursor ray, m.
    pub mouse_radius: f32,
    /// Particle count for the next restart.
    pub particles: u32,
    /// log2 of the table size for the next restart; `None` = default for N.
    pub table_log2: Option<u32>,
    /// Scene for the next restart.
    pub scene: SceneChoice,
    /// Solver for the next restart.
    pub solver: crate::solver::Solver,
    /// The scene file the viewer started from, offered beside the built-in scenes.
    pub file: Option<SceneChoice>,
    /// Requests raised by buttons, handled by the viewer.
    pub request: Request,
    /// One line of news (screenshot saved, blow-up, restart failed).
    pub status: String,
    /// Simulated seconds a frame advances when the substeps are sized to it (grains).
    pub frame_time: f32,
    /// `--model grains`: their parameters as (name, value) rows, shown in place of the
    /// fluid's controls; `None` for the fluid.
    pub grains: Option<Vec<(String, String)>>,
    /// The colour range follows the data (off once min or max is edited).
    pub auto_range: bool,
    /// The field the range was last fitted to.
    pub fitted: Option<ColorField>,
}

/// What a button asked for this frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Request {
    /// Put the particles back at their initial state.
    pub reset: bool,
    /// Rebuild with the restart settings.
    pub restart: bool,
    /// Save a screenshot.
    pub screenshot: bool,
    /// Frame the tank again.
    pub reset_view: bool,
    /// Physics sliders moved.
    pub physics_changed: bool,
    /// Fit the colour range to the current values of the field.
    pub fit_range: bool,
}

/// The key bindings, as shown in the panel and docs/viewer.md.
pub const KEYS: &str = "Space pause · N step · R reset · C colour field · S spheres/surface · P screenshot · V reset view · H panel · Esc quit\n\
left drag orbit · right/middle drag pan · wheel zoom · Ctrl+left drag pull · Ctrl+right drag push";

fn legend(ui: &mut egui::Ui, field: ColorField, range: (f32, f32)) {
    ui.label(field.label());
    let (rect, _) = ui.allocate_exact_size(egui::vec2(220.0, 14.0), egui::Sense::hover());
    let steps = 44;
    for i in 0..steps {
        let t = (i as f32 + 0.5) / steps as f32;
        let [r, g, b] = colormap_srgb(t);
        let x0 = rect.left() + rect.width() * i as f32 / steps as f32;
        let x1 = rect.left() + rect.width() * (i + 1) as f32 / steps as f32;
        ui.painter().rect_filled(
            egui::Rect::from_min_max(
                egui::pos2(x0, rect.top()),
                egui::pos2(x1 + 0.5, rect.bottom()),
            ),
            0.0,
            egui::Color32::from_rgb(r, g, b),
        );
    }
    ui.horizontal(|ui| {
        ui.label(format!("{:.4}", range.0));
        ui.add_space(120.0);
        ui.label(format!("{:.4}", range.1));
    });
}

impl Controls {
    /// Draws the panel; `info` is the static description (N, T, h…).
    pub fn panel(&mut self, ctx: &egui::Context, stats: &FrameStats, info: &[(String, String)]) {
        egui::Window::new("gpu-sph")
            .default_pos(egui::pos2(8.0, 8.0))
            .default_width(250.0)
            .resizable(false)
            .default_height(ctx.content_rect().height() - 24.0)
            .show(ctx, |ui| {
                // Taller than the window (the surface mode's controls at 720 px): it scrolls.
                let height = ctx.content_rect().height() - 60.0;
                egui::ScrollArea::vertical()
                    .max_height(height.max(100.0))
                    .show(ui, |ui| self.panel_body(ui, stats, info));
            });
    }

    /// The panel's contents.
    fn panel_body(&mut self, ui: &mut egui::Ui, stats: &FrameStats, info: &[(String, String)]) {
        ui.label(format!(
            "{:.1} fps · sim {:.1} ms · render {:.1} ms",
            stats.fps, stats.sim_ms, stats.render_ms
        ));
        if !stats.stage_ms.is_empty() {
            egui::CollapsingHeader::new("GPU passes (last substep)").show(ui, |ui| {
                for (name, ms) in &stats.stage_ms {
                    ui.label(format!("{name}: {ms:.2} ms"));
                }
            });
        }
        for (k, v) in info {
            ui.label(format!("{k}: {v}"));
        }
        ui.label(format!(
            "t = {:.4} s · step {} · dt = {:.2e} s · v max = {:.3} m/s",
            stats.t, stats.steps, stats.dt, stats.v_max
        ));
        ui.separator();
        if let Some(params) = &self.grains {
            let params = params.clone();
            self.grains_panel(ui, &params);
            return;
        }

        ui.horizontal(|ui| {
            ui.label("draw");
            ui.selectable_value(&mut self.mode, RenderMode::Spheres, "spheres");
            ui.selectable_value(&mut self.mode, RenderMode::Surface, "surface (S)");
        });
        if self.mode == RenderMode::Surface {
            surface_panel(ui, &mut self.style);
        } else {
            self.colour_panel(ui);
        }
        ui.separator();
        self.physics_panel(ui);
        ui.separator();
        self.restart_panel(ui);
        if !self.status.is_empty() {
            ui.separator();
            ui.label(&self.status);
        }
        ui.separator();
        ui.small(KEYS);
    }

    /// The physics a run changes while it runs (applied at the next step), the substeps a
    /// frame and the mouse force.
    fn physics_panel(&mut self, ui: &mut egui::Ui) {
        ui.label("live physics");
        let mut changed = false;
        changed |= ui
            .add(egui::Slider::new(&mut self.alpha, 0.0..=1.0).text("α (artificial)"))
            .changed();
        changed |= ui
            .add(
                egui::Slider::new(&mut self.viscosity, 0.0..=10.0)
                    .logarithmic(true)
                    .text("μ (Pa·s)"),
            )
            .changed();
        changed |= ui
            .add(
                egui::Slider::new(&mut self.stiffness, 1e3..=1e8)
                    .logarithmic(true)
                    .text("B (Pa)"),
            )
            .changed();
        changed |= ui
            .add(egui::Slider::new(&mut self.gravity, -30.0..=30.0).text("g (m/s²)"))
            .changed();
        self.request.physics_changed |= changed;
        ui.add(egui::Slider::new(&mut self.substeps, 1..=32).text("substeps/frame"));
        ui.add(
            egui::Slider::new(&mut self.mouse_strength, 0.0..=500.0)
                .logarithmic(true)
                .text("mouse force (m/s²)"),
        );
    }

    /// What a restart builds (particle count, table size, scene, solver), and the run's
    /// buttons.
    fn restart_panel(&mut self, ui: &mut egui::Ui) {
        ui.label("restart with");
        ui.add(
            egui::DragValue::new(&mut self.particles)
                .range(1..=4_000_000)
                .speed(500.0)
                .prefix("N "),
        );
        let table_text = match self.table_log2 {
            Some(k) => format!("T = 2^{k}"),
            None => "T = default".to_string(),
        };
        egui::ComboBox::from_label("table size")
            .selected_text(table_text)
            .show_ui(ui, |ui| {
                ui.selectable_value(&mut self.table_log2, None, "default (≥ 2N)");
                for k in 0..=24 {
                    ui.selectable_value(&mut self.table_log2, Some(k), format!("2^{k}"));
                }
            });
        // A file by its name alone: its whole path wrapped letter by letter.
        let short = |c: &SceneChoice| {
            let label = c.label();
            std::path::Path::new(&label)
                .file_name()
                .map_or(label.clone(), |f| f.to_string_lossy().into_owned())
        };
        egui::ComboBox::from_label("scene")
            .selected_text(short(&self.scene))
            .show_ui(ui, |ui| {
                for s in SceneKind::ALL {
                    let choice = SceneChoice::Builtin(s);
                    ui.selectable_value(&mut self.scene, choice, s.name());
                }
                if let Some(file) = self.file.clone() {
                    let label = short(&file);
                    ui.selectable_value(&mut self.scene, file, label);
                }
            });
        ui.horizontal(|ui| {
            use crate::solver::Solver;
            ui.label("solver");
            for &solver in <Solver as clap::ValueEnum>::value_variants() {
                ui.selectable_value(&mut self.solver, solver, solver.name().to_uppercase());
            }
        });
        ui.horizontal(|ui| {
            self.request.restart |= ui.button("restart").clicked();
            self.request.reset |= ui.button("reset (R)").clicked();
        });
        ui.horizontal(|ui| {
            if ui
                .button(if self.paused { "resume" } else { "pause" })
                .clicked()
            {
                self.paused = !self.paused;
            }
            self.step_once |= ui.button("step (N)").clicked();
            self.request.screenshot |= ui.button("screenshot (P)").clicked();
            self.request.reset_view |= ui.button("view (V)").clicked();
        });
    }
}

impl Controls {
    /// The colour field, its range and its legend (spheres mode: the surface is not coloured
    /// by a field).
    fn colour_panel(&mut self, ui: &mut egui::Ui) {
        let fi = self.field.index() as usize;
        egui::ComboBox::from_label("colour")
            .selected_text(self.field.label())
            .show_ui(ui, |ui| {
                for f in ColorField::ALL {
                    ui.selectable_value(&mut self.field, f, f.label());
                }
            });
        let range = &mut self.ranges[fi];
        let speed = (0.01 * (range.1 - range.0).abs()).max(1e-6) as f64;
        let edited = ui
            .add(
                egui::DragValue::new(&mut range.0)
                    .speed(speed)
                    .prefix("min "),
            )
            .changed()
            | ui.add(
                egui::DragValue::new(&mut range.1)
                    .speed(speed)
                    .prefix("max "),
            )
            .changed();
        let range = *range;
        if edited {
            self.auto_range = false;
        }
        ui.checkbox(&mut self.auto_range, "range follows the data");
        legend(ui, self.field, range);
    }

    /// The colliding spheres' own panel: their speed legend, their parameters (set by flags),
    /// the pace, and the run's buttons.
    fn grains_panel(&mut self, ui: &mut egui::Ui, params: &[(String, String)]) {
        let range = self.ranges[ColorField::Speed.index() as usize];
        legend(ui, ColorField::Speed, range);
        ui.separator();
        ui.label("spheres (flags set them: --grain-radius, --contact-*)");
        for (k, v) in params {
            ui.label(format!("{k}: {v}"));
        }
        ui.separator();
        let mut ms = 1e3 * self.frame_time;
        ui.add(
            egui::Slider::new(&mut ms, 0.05..=50.0)
                .logarithmic(true)
                .text("simulated ms per frame"),
        );
        self.frame_time = 1e-3 * ms;
        ui.label(format!("{} substeps this frame", self.substeps));
        ui.horizontal(|ui| {
            self.request.reset |= ui.button("reset (R)").clicked();
            if ui
                .button(if self.paused { "resume" } else { "pause" })
                .clicked()
            {
                self.paused = !self.paused;
            }
            self.step_once |= ui.button("step (N)").clicked();
        });
        ui.horizontal(|ui| {
            self.request.screenshot |= ui.button("screenshot (P)").clicked();
            self.request.reset_view |= ui.button("view (V)").clicked();
        });
        if !self.status.is_empty() {
            ui.separator();
            ui.label(&self.status);
        }
        ui.separator();
        ui.small(KEYS);
    }
}

fn surface_panel(ui: &mut egui::Ui, style: &mut SurfaceStyle) {
    ui.add(egui::Slider::new(&mut style.filter_radius, 0.0..=6.0).text("filter width (s)"));
    ui.add(egui::Slider::new(&mut style.depth_falloff, 0.1..=5.0).text("depth falloff (s)"));
    ui.add(egui::Slider::new(&mut style.max_pixels, 1..=32).text("filter cap (px)"));
    ui.add(egui::Slider::new(&mut style.iterations, 0..=6).text("filter passes"));
    ui.add(egui::Slider::new(&mut style.refraction, 0.0..=6.0).text("refraction"));
    ui.horizontal(|ui| {
        ui.color_edit_button_rgb(&mut style.colour);
        ui.label("light left after 10 cm");
    });
    if ui.button("default look").clicked() {
        *style = SurfaceStyle::default();
    }
}

/// Stage names with their times, for the panel.
pub fn stage_times(ms: &[Option<f64>]) -> Vec<(&'static str, f64)> {
    Stage::ALL
        .iter()
        .zip(ms)
        .filter_map(|(s, m)| m.map(|m| (s.name(), m)))
        .collect()
}
