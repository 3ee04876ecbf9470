//! The viewer's mouse and keyboard, shared by the window ([`super::window`]) and a web page's
//! canvas: winit's events turned into camera moves, the mouse force, spawned spheres and the
//! panel's keys.
//!
//! Worked example: a left drag of (10, 0) px with no modifier orbits the camera by (10, 0)
//! px's worth of yaw; with Ctrl held it pushes the fluid along the ray under the cursor.

use glam::Vec2;
use winit::event::{ElementState, KeyEvent, MouseButton, MouseScrollDelta, WindowEvent};
use winit::keyboard::{Key, ModifiersState, NamedKey};

use super::Viewer;

/// What an event asks of the front end beyond the viewer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Asked {
    /// Nothing more.
    Nothing,
    /// Close the view (the window's close button, Escape).
    Close,
}

/// The mouse's buttons, position and modifiers, between events.
#[derive(Default)]
pub struct Input {
    cursor: Vec2,
    left: bool,
    right: bool,
    middle: bool,
    modifiers: ModifiersState,
}

impl Input {
    /// Applies `event` to `viewer`, drawn `size` pixels large; `consumed`: egui took it (the
    /// pointer is over the panel).
    pub fn event(
        &mut self,
        viewer: &mut Viewer,
        event: &WindowEvent,
        consumed: bool,
        size: (u32, u32),
    ) -> Asked {
        match event {
            WindowEvent::CloseRequested => return Asked::Close,
            WindowEvent::ModifiersChanged(m) => self.modifiers = m.state(),
            WindowEvent::KeyboardInput { event, .. }
                if !consumed && !viewer.egui().egui_wants_keyboard_input() =>
            {
                return key(viewer, event);
            }
            WindowEvent::MouseInput { state, button, .. } => {
                let down = *state == ElementState::Pressed;
                // A press over the panel belongs to the panel; a release always ends a drag.
                if down && consumed {
                    return Asked::Nothing;
                }
                match button {
                    MouseButton::Left => self.left = down,
                    MouseButton::Right => self.right = down,
                    MouseButton::Middle => self.middle = down,
                    _ => {}
                }
                self.update_mouse_force(viewer, size);
            }
            WindowEvent::CursorMoved { position, .. } => {
                let p = Vec2::new(position.x as f32, position.y as f32);
                let delta = p - self.cursor;
                self.cursor = p;
                let ctrl = self.modifiers.control_key();
                let spawning = viewer.is_grains() && self.modifiers.shift_key();
                if ctrl || spawning {
                    self.update_mouse_force(viewer, size);
                } else if self.left && !viewer.camera().planar {
                    viewer.camera_mut().orbit(delta);
                } else if self.left || self.right || self.middle {
                    viewer.camera_mut().pan(delta, size.1 as f32);
                }
            }
            WindowEvent::MouseWheel { delta, .. } if !consumed => {
                let steps = match delta {
                    MouseScrollDelta::LineDelta(_, y) => *y,
                    MouseScrollDelta::PixelDelta(p) => p.y as f32 / 40.0,
                };
                viewer.camera_mut().zoom(steps);
            }
            _ => {}
        }
        Asked::Nothing
    }

    fn update_mouse_force(&self, viewer: &mut Viewer, size: (u32, u32)) {
        let view = Vec2::new(size.0 as f32, size.1 as f32);
        // Colliding spheres: Shift + left drag spawns them on the tank's back plane.
        if viewer.is_grains() && self.modifiers.shift_key() && self.left {
            let ray = viewer.camera().ray(self.cursor, view);
            viewer.spawn(ray);
            return;
        }
        let ctrl = self.modifiers.control_key();
        let ray =
            (ctrl && (self.left || self.right)).then(|| viewer.camera().ray(self.cursor, view));
        viewer.set_mouse_force(ray, self.left);
    }
}

fn key(viewer: &mut Viewer, event: &KeyEvent) -> Asked {
    if event.state != ElementState::Pressed {
        return Asked::Nothing;
    }
    let c = viewer.controls_mut();
    match &event.logical_key {
        Key::Named(NamedKey::Escape) => return Asked::Close,
        Key::Named(NamedKey::Space) => c.paused = !c.paused,
        Key::Character(s) => match s.to_lowercase().as_str() {
            "n" => {
                c.paused = true;
                c.step_once = true;
            }
            "r" => c.request.reset = true,
            "c" => c.field = c.field.next(),
            "s" => c.mode = c.mode.toggled(),
            "p" => c.request.screenshot = true,
            "v" => c.request.reset_view = true,
            "h" => c.show_ui = !c.show_ui,
            _ => {}
        },
        _ => {}
    }
    Asked::Nothing
}
