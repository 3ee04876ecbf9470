//! An orbit camera: it circles a target point at a distance, with yaw and pitch; left drag
//! orbits, right or middle drag pans, the wheel zooms. Right-handed, y up, wgpu's 0..1 depth.

use glam::{Mat4, Vec2, Vec3};

/// Where the camera is and how it projects.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OrbitCamera {
    /// The point the camera circles and looks at.
    pub target: Vec3,
    /// Distance from the target, m.
    pub distance: f32,
    /// Angle about the y axis, radians (0 looks along −z).
    pub yaw: f32,
    /// Angle above the horizontal, radians.
    pub pitch: f32,
    /// Vertical field of view, radians.
    pub fovy: f32,
    /// Where the target lands on screen, in normalized device coordinates (0, 0: the
    /// centre): a lens shift, so the framing can centre the tank in the area the panel leaves
    /// free without turning the view.
    pub shift: Vec2,
    /// A 2D run's camera ([`OrbitCamera::lock_to_plane`]): it looks along −z at the plane
    /// z = 0 and does not orbit, so a left drag pans as a right drag does.
    pub planar: bool,
}

/// The eight corners of the box `lo`–`hi`.
pub fn corners(lo: Vec3, hi: Vec3) -> [Vec3; 8] {
    std::array::from_fn(|i| {
        Vec3::new(
            if i & 1 == 0 { lo.x } else { hi.x },
            if i & 2 == 0 { lo.y } else { hi.y },
            if i & 4 == 0 { lo.z } else { hi.z },
        )
    })
}

/// Pitch stays short of the poles so the view never flips over.
const MAX_PITCH: f32 = 1.55;

impl OrbitCamera {
    /// A view of the box `lo`–`hi` from the front, slightly above and to the side, far enough
    /// back that the whole box fits in view.
    pub fn framing(lo: Vec3, hi: Vec3) -> Self {
        let fovy = 45f32.to_radians();
        let radius = 0.5 * (hi - lo).length().max(1e-6);
        Self {
            target: 0.5 * (lo + hi),
            distance: 1.15 * radius / (0.5 * fovy).sin(),
            yaw: -0.45,
            pitch: 0.35,
            fovy,
            shift: Vec2::ZERO,
            planar: false,
        }
    }

    /// Locks the camera to a 2D run's plane z = 0: head on (yaw and pitch 0, looking along
    /// −z), and no orbiting from then on.
    pub fn lock_to_plane(&mut self) {
        (self.yaw, self.pitch, self.planar) = (0.0, 0.0, true);
    }

    /// Moves to the nearest distance at which the box `lo`–`hi` fits a viewport of `aspect`
    /// (width / height) of which the panel leaves the horizontal band `free` (x from `free.0`
    /// to `free.1` in normalized device coordinates, −1 to 1): its eight corners fill 90% of
    /// the band's width or of the height, as seen from the current angles, and a lens shift
    /// centres them in the band. Example: a 1280 × 720 window with the 330 px panel on the
    /// left has `free` = (−0.48, 1); the dam break's tank then fills about 80% of the width
    /// right of the panel, where the bounding-sphere framing gave it 40% of the window.
    pub fn fit(&mut self, lo: Vec3, hi: Vec3, aspect: f32, free: (f32, f32)) {
        let cam = *self;
        let corners = corners(lo, hi);
        let aspect = aspect.max(1e-3);
        let t = (0.5 * cam.fovy).tan();
        // The corners' extent on screen at distance d (NDC, before any shift); None while a
        // corner lies behind the eye.
        let extent = |d: f32| {
            let c = Self { distance: d, ..cam };
            let view = c.view();
            let (mut x, mut y) = ((f32::MAX, f32::MIN), (f32::MAX, f32::MIN));
            for p in &corners {
                let v = view.transform_point3(*p);
                if v.z >= -1e-6 {
                    return None;
                }
                let (px, py) = (v.x / (-v.z * t * aspect), v.y / (-v.z * t));
                x = (x.0.min(px), x.1.max(px));
                y = (y.0.min(py), y.1.max(py));
            }
            Some((x, y))
        };
        let width = (free.1 - free.0).max(0.1);
        let fits = |d: f32| {
            extent(d).is_some_and(|(x, y)| x.1 - x.0 <= 0.9 * width && y.1 - y.0 <= 0.9 * 2.0)
        };
        // Twice the bounding sphere's distance always fits; halve the gap to the nearest that
        // does.
        let (mut near, mut far) = (0.0, 2.0 * Self::framing(lo, hi).distance);
        for _ in 0..40 {
            let mid = 0.5 * (near + far);
            if fits(mid) {
                far = mid;
            } else {
                near = mid;
            }
        }
        self.distance = far;
        if let Some((x, y)) = extent(far) {
            let centre = 0.5 * (free.0 + free.1);
            self.shift = Vec2::new(centre - 0.5 * (x.0 + x.1), -0.5 * (y.0 + y.1));
        }
    }

    /// The camera's position.
    pub fn eye(&self) -> Vec3 {
        let (sy, cy) = self.yaw.sin_cos();
        let (sp, cp) = self.pitch.sin_cos();
        self.target + self.distance * Vec3::new(sy * cp, sp, cy * cp)
    }

    /// World to view.
    pub fn view(&self) -> Mat4 {
        glam::camera::rh::view::look_at_mat4(self.eye(), self.target, Vec3::Y)
    }

    /// View to clip for a viewport of `aspect` = width / height.
    pub fn proj(&self, aspect: f32) -> Mat4 {
        let near = (0.01 * self.distance).max(1e-5);
        // wgpu clip space: z in [0, 1], y up (the "directx" convention).
        let perspective = glam::camera::rh::proj::directx::perspective(
            self.fovy,
            aspect.max(1e-6),
            near,
            100.0 * self.distance + 1.0,
        );
        Mat4::from_translation(self.shift.extend(0.0)) * perspective
    }

    /// Turns by a mouse drag of `delta` pixels (a camera locked to a plane does not turn).
    pub fn orbit(&mut self, delta: Vec2) {
        if self.planar {
            return;
        }
        self.yaw -= 0.005 * delta.x;
        self.pitch = (self.pitch + 0.005 * delta.y).clamp(-MAX_PITCH, MAX_PITCH);
    }

    /// Slides the target in the view plane by a drag of `delta` pixels in a viewport
    /// `height` pixels high, so the point under the cursor follows it.
    pub fn pan(&mut self, delta: Vec2, height: f32) {
        let world_per_pixel = 2.0 * self.distance * (0.5 * self.fovy).tan() / height.max(1.0);
        let view = self.view();
        let right = view.row(0).truncate();
        let up = view.row(1).truncate();
        self.target += world_per_pixel * (-delta.x * right + delta.y * up);
    }

    /// Moves closer (positive `steps`, wheel notches) or further away.
    pub fn zoom(&mut self, steps: f32) {
        self.distance = (self.distance * 0.9f32.powf(steps)).clamp(1e-4, 1e6);
    }

    /// The world-space ray through pixel `cursor` of a `size` viewport: (origin, unit direction).
    pub fn ray(&self, cursor: Vec2, size: Vec2) -> (Vec3, Vec3) {
        let ndc = Vec2::new(
            2.0 * cursor.x / size.x.max(1.0) - 1.0,
            1.0 - 2.0 * cursor.y / size.y.max(1.0),
        );
        let inv = (self.proj(size.x / size.y.max(1.0)) * self.view()).inverse();
        let near = inv.project_point3(ndc.extend(0.0));
        let far = inv.project_point3(ndc.extend(1.0));
        (near, (far - near).normalize_or_zero())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn framing_looks_at_the_box_centre_and_sees_every_corner() {
        let (lo, hi) = (Vec3::ZERO, Vec3::new(0.5, 0.3, 0.1));
        let cam = OrbitCamera::framing(lo, hi);
        let vp = cam.proj(16.0 / 9.0) * cam.view();
        let centre = vp.project_point3(0.5 * (lo + hi));
        assert!(centre.truncate().length() < 1e-5, "{centre}");
        for c in corners(lo, hi) {
            let p = vp.project_point3(c);
            assert!(
                p.x.abs() <= 1.0 && p.y.abs() <= 1.0 && (0.0..=1.0).contains(&p.z),
                "corner {c} at {p}"
            );
        }
    }

    /// The dam break's tank (5a × 3a × a) in a 16:9 view whose left quarter the panel takes:
    /// every corner lands in the free band, the box is centred there, and it fills at least
    /// 85% of the band's width or of the height (the bounding-sphere framing: about 40% of the
    /// whole width).
    #[test]
    fn fit_centres_the_box_in_the_free_band_and_fills_it() {
        let (lo, hi) = (Vec3::ZERO, Vec3::new(1.85, 1.11, 0.37));
        let free = (-0.5, 1.0);
        let mut cam = OrbitCamera::framing(lo, hi);
        cam.fit(lo, hi, 16.0 / 9.0, free);
        let vp = cam.proj(16.0 / 9.0) * cam.view();
        let (mut x, mut y) = ((f32::MAX, f32::MIN), (f32::MAX, f32::MIN));
        for c in corners(lo, hi) {
            let p = vp.project_point3(c);
            x = (x.0.min(p.x), x.1.max(p.x));
            y = (y.0.min(p.y), y.1.max(p.y));
        }
        assert!(
            x.0 >= free.0 && x.1 <= free.1 && y.0 >= -1.0 && y.1 <= 1.0,
            "{x:?} {y:?}"
        );
        assert!((0.5 * (x.0 + x.1) - 0.25).abs() < 1e-3, "{x:?}");
        assert!(0.5 * (y.0 + y.1).abs() < 1e-3, "{y:?}");
        let filled = ((x.1 - x.0) / (free.1 - free.0)).max((y.1 - y.0) / 2.0);
        assert!(filled > 0.85, "{filled}");
    }

    #[test]
    fn the_centre_pixel_ray_passes_through_the_target() {
        let cam = OrbitCamera::framing(Vec3::ZERO, Vec3::ONE);
        let (o, d) = cam.ray(Vec2::new(400.0, 300.0), Vec2::new(800.0, 600.0));
        let closest = o + d * (cam.target - o).dot(d);
        assert!((closest - cam.target).length() < 1e-4, "{closest}");
    }

    #[test]
    fn a_camera_locked_to_the_plane_looks_along_minus_z_and_does_not_turn() {
        let mut cam = OrbitCamera::framing(Vec3::ZERO, Vec3::new(1.0, 1.0, 0.0));
        cam.lock_to_plane();
        let before = cam;
        cam.orbit(Vec2::new(300.0, 200.0));
        assert_eq!(cam, before);
        let look = (cam.target - cam.eye()).normalize();
        assert!((look - Vec3::NEG_Z).length() < 1e-6, "{look}");
    }

    #[test]
    fn orbit_keeps_the_distance_and_pitch_stays_below_the_pole() {
        let mut cam = OrbitCamera::framing(Vec3::ZERO, Vec3::ONE);
        let d = (cam.eye() - cam.target).length();
        cam.orbit(Vec2::new(300.0, 10_000.0));
        assert!(((cam.eye() - cam.target).length() - d).abs() < 1e-4);
        assert!(cam.pitch <= MAX_PITCH);
        assert!(cam.view().is_finite());
    }

    #[test]
    fn pan_moves_the_target_and_zoom_the_distance() {
        let mut cam = OrbitCamera::framing(Vec3::ZERO, Vec3::ONE);
        let (t, d) = (cam.target, cam.distance);
        cam.pan(Vec2::new(100.0, 0.0), 600.0);
        assert!((cam.target - t).length() > 0.0);
        assert!((cam.distance - d).abs() < 1e-6);
        cam.zoom(1.0);
        assert!(cam.distance < d);
    }
}
