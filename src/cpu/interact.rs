//! Stage `interact`, the CPU mirror of `shaders/interact.wgsl`: the viewer's mouse force.
//!
//! Inputs: positions in slot order (N), an [`InteractParams`] ray. Output: the accelerations
//! (N), incremented in place. A particle at distance d < R from the ray (and not behind its
//! origin) gets a += S (1 − d/R)² (q − x)/d, q its closest point on the ray: S > 0 pulls the
//! fluid towards the cursor ray, S < 0 pushes it away.
//!
//! Worked example: ray from the origin along +z, R = 1, S = 10, particle at (0.5, 0, 2):
//! q = (0, 0, 2), d = 0.5 → a += 10 · 0.25 · (−1, 0, 0) = (−2.5, 0, 0).

use glam::Vec3;
use rayon::prelude::*;

/// The mouse ray and its force; the Rust twin of `InteractParams` in `shaders/interact.wgsl`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct InteractParams {
    /// Ray origin (xyz; w unused).
    pub origin: [f32; 4],
    /// Unit ray direction (xyz; w unused).
    pub direction: [f32; 4],
    /// Reach R of the force around the ray, m.
    pub radius: f32,
    /// Peak acceleration S on the ray, m/s²: positive pulls, negative pushes.
    pub strength: f32,
    /// Padding to 16 bytes.
    pub _pad: [f32; 2],
}

impl InteractParams {
    /// A ray from `origin` along `direction` (normalised here).
    pub fn new(origin: Vec3, direction: Vec3, radius: f32, strength: f32) -> Self {
        Self {
            origin: origin.extend(0.0).to_array(),
            direction: direction.normalize_or_zero().extend(0.0).to_array(),
            radius,
            strength,
            _pad: [0.0; 2],
        }
    }
}

/// The acceleration the ray adds to a particle at `x`, with the GPU's operations in its order.
#[inline]
pub fn interact_accel(x: Vec3, ip: &InteractParams) -> Vec3 {
    let o = Vec3::from_slice(&ip.origin[..3]);
    let dir = Vec3::from_slice(&ip.direction[..3]);
    let rel = x - o;
    let along = rel.x * dir.x + rel.y * dir.y + rel.z * dir.z;
    let to_axis = dir * along - rel;
    let d = (to_axis.x * to_axis.x + to_axis.y * to_axis.y + to_axis.z * to_axis.z).sqrt();
    // Written so a NaN distance counts as outside.
    let inside = d > 0.0 && d < ip.radius;
    if along < 0.0 || !inside {
        return Vec3::ZERO;
    }
    let w = 1.0 - d / ip.radius;
    to_axis * (ip.strength * w * w / d)
}

/// Adds the ray's force to every particle's acceleration.
pub fn interact(sorted_pos: &[Vec3], accel: &mut [Vec3], ip: &InteractParams) {
    accel
        .par_iter_mut()
        .zip(sorted_pos.par_iter())
        .for_each(|(a, &x)| *a += interact_accel(x, ip));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example() {
        let ip = InteractParams::new(Vec3::ZERO, Vec3::Z, 1.0, 10.0);
        assert_eq!(
            interact_accel(Vec3::new(0.5, 0.0, 2.0), &ip),
            Vec3::new(-2.5, 0.0, 0.0)
        );
    }

    #[test]
    fn nothing_on_the_axis_behind_the_origin_or_out_of_reach() {
        let ip = InteractParams::new(Vec3::ZERO, Vec3::Z, 1.0, 10.0);
        assert_eq!(interact_accel(Vec3::new(0.0, 0.0, 3.0), &ip), Vec3::ZERO);
        assert_eq!(interact_accel(Vec3::new(0.5, 0.0, -1.0), &ip), Vec3::ZERO);
        assert_eq!(interact_accel(Vec3::new(1.0, 0.0, 1.0), &ip), Vec3::ZERO);
    }

    #[test]
    fn negative_strength_pushes_away() {
        let ip = InteractParams::new(Vec3::ZERO, Vec3::Z, 1.0, -10.0);
        let a = interact_accel(Vec3::new(0.0, 0.5, 1.0), &ip);
        assert!(a.y > 0.0 && a.x == 0.0 && a.z == 0.0, "{a}");
    }
}
