//! Prescribed motion of an obstacle: a rigid translation and a rotation about an axis through a
//! pivot, each a constant rate plus a sinusoid of one period. Enough for a piston wave-maker
//! (`amplitude`), a flap wave-maker (`swing` about a hinge at the paddle's foot) and a stirrer
//! (`spin`).
//!
//! A body point X (its position at t = 0, as the scene file gives the shape) is at
//!
//! x(t) = p + d(t) + R(θ(t)) (X − p),
//! d(t) = v t + A (sin(ωt + φ) − sin φ),  θ(t) = Ω t + Θ (sin(ωt + φ) − sin φ),
//!
//! with p the pivot, ω = 2π / period, R(θ) the rotation by θ about the unit axis; so every
//! obstacle starts where the file puts it, and moves with
//!
//! ẋ(t) = ḋ(t) + θ̇(t) â × R(θ(t)) (X − p),  ḋ = v + A ω cos(ωt + φ),  θ̇ = Ω + Θ ω cos(ωt + φ).
//!
//! The pose is evaluated on the host in f64 at the run's time and rounded once to f32, so the
//! GPU and the CPU reference receive the same boundary particles bit for bit.
//!
//! Worked example: a piston with A = (0.05, 0, 0), period 2 s, φ = 0: at t = 0.5 s it is
//! 0.05 sin(π/2) = 0.05 m along x and at rest (cos(π/2) = 0); at t = 1 s it is back at its start
//! moving at −0.05 π = −0.157 m/s.

use glam::{DQuat, DVec3, Vec3};

use crate::shape::Shape;

/// A prescribed rigid motion (see the module docs for the formulas).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Motion {
    /// Constant translation velocity v, m/s.
    #[serde(default)]
    pub velocity: [f32; 3],
    /// Amplitude A of the sinusoidal translation, m.
    #[serde(default)]
    pub amplitude: [f32; 3],
    /// Period of both sinusoids, s (needed when `amplitude` or `swing` is not zero).
    #[serde(default)]
    pub period: Option<f32>,
    /// Phase φ of both sinusoids, rad.
    #[serde(default)]
    pub phase: f32,
    /// The point the rotation turns about, at t = 0, m.
    #[serde(default)]
    pub pivot: [f32; 3],
    /// The rotation axis (any length but zero).
    #[serde(default = "default_axis")]
    pub axis: [f32; 3],
    /// Constant angular velocity Ω about the axis, rad/s (right-handed).
    #[serde(default)]
    pub spin: f32,
    /// Amplitude Θ of the sinusoidal rotation, rad.
    #[serde(default)]
    pub swing: f32,
}

fn default_axis() -> [f32; 3] {
    [0.0, 1.0, 0.0]
}

impl Motion {
    /// Whether the motion keeps a body in the plane z = 0 (a 2D run's): no translation along
    /// z, and any rotation about z. A turn about z leaves z untouched in the pose's arithmetic
    /// (the quaternion of an axis along z has no x or y part), so the plane's points stay at
    /// z = 0 bit for bit.
    pub fn keeps_the_plane(&self) -> bool {
        let turns = self.spin != 0.0 || self.swing != 0.0;
        self.velocity[2] == 0.0
            && self.amplitude[2] == 0.0
            && (!turns || (self.axis[0] == 0.0 && self.axis[1] == 0.0))
    }
}

/// The pose of a moving body at one time: rotation, where the pivot is, and the rates.
#[derive(Clone, Copy, Debug)]
pub struct Pose {
    rotation: DQuat,
    pivot0: DVec3,
    pivot: DVec3,
    velocity: DVec3,
    angular: DVec3,
    at_start: bool,
}

impl Pose {
    /// Where world point `x` sits in the body's frame at t = 0 (the inverse of
    /// [`Pose::place`]'s position): a shape's own tests (inside, distance) then apply.
    pub fn to_body(&self, x: Vec3) -> Vec3 {
        (self.pivot0 + self.rotation.inverse() * (x.as_dvec3() - self.pivot)).as_vec3()
    }

    /// Where body point `x0` (its position at t = 0) is, and its velocity.
    pub fn place(&self, x0: Vec3) -> (Vec3, Vec3) {
        let arm = self.rotation * (x0.as_dvec3() - self.pivot0);
        let v = (self.velocity + self.angular.cross(arm)).as_vec3();
        // At t = 0 exactly where the file put it (p + (X − p) need not round back to X).
        let x = if self.at_start {
            x0
        } else {
            (self.pivot + arm).as_vec3()
        };
        (x, v)
    }
}

impl Motion {
    fn omega(&self) -> f64 {
        self.period
            .map_or(0.0, |p| std::f64::consts::TAU / p as f64)
    }

    fn unit_axis(&self) -> DVec3 {
        Vec3::from(self.axis).as_dvec3().normalize_or_zero()
    }

    /// The pose at time `t` (s).
    pub fn pose(&self, t: f64) -> Pose {
        let w = self.omega();
        let phi = self.phase as f64;
        let (sine, rate) = if w > 0.0 {
            ((w * t + phi).sin() - phi.sin(), w * (w * t + phi).cos())
        } else {
            (0.0, 0.0)
        };
        let v = Vec3::from(self.velocity).as_dvec3();
        let a = Vec3::from(self.amplitude).as_dvec3();
        let axis = self.unit_axis();
        let theta = self.spin as f64 * t + self.swing as f64 * sine;
        let theta_rate = self.spin as f64 + self.swing as f64 * rate;
        let pivot0 = Vec3::from(self.pivot).as_dvec3();
        Pose {
            rotation: DQuat::from_axis_angle(axis, theta),
            pivot0,
            pivot: pivot0 + v * t + a * sine,
            velocity: v + a * rate,
            angular: axis * theta_rate,
            at_start: t == 0.0,
        }
    }

    /// An upper bound on the speed of any point of `shape` under this motion, m/s: the
    /// translation's plus the rotation's rate times the farthest corner of the shape's bounds
    /// from the pivot.
    pub fn max_speed(&self, shape: &Shape) -> f32 {
        let w = self.omega();
        let (lo, hi) = shape.bounds();
        let p = Vec3::from(self.pivot);
        let reach = [lo.x, hi.x]
            .into_iter()
            .flat_map(|x| [lo.y, hi.y].map(|y| (x, y)))
            .flat_map(|(x, y)| [lo.z, hi.z].map(|z| Vec3::new(x, y, z)))
            .map(|c| c.distance(p))
            .fold(0.0f32, f32::max) as f64;
        let translation = Vec3::from(self.velocity).length() as f64
            + Vec3::from(self.amplitude).length() as f64 * w;
        let rotation = (self.spin.abs() as f64 + self.swing.abs() as f64 * w) * reach;
        (translation + rotation) as f32
    }

    /// Whether the body ever moves.
    pub fn moves(&self) -> bool {
        let any = |v: [f32; 3]| v.iter().any(|&c| c != 0.0);
        any(self.velocity) || any(self.amplitude) || self.spin != 0.0 || self.swing != 0.0
    }

    /// Checks the values; `at` names the obstacle in messages.
    pub fn validate(&self, at: &str) -> crate::Result<()> {
        let finite = self
            .velocity
            .iter()
            .chain(&self.amplitude)
            .chain(&self.pivot)
            .chain(&self.axis)
            .chain([&self.phase, &self.spin, &self.swing])
            .chain(self.period.as_ref())
            .all(|v| v.is_finite());
        if !finite {
            return Err(crate::Error::input(format!(
                "{at}.motion: every value must be finite: replace the NaN or infinity"
            )));
        }
        let sinusoid = self.amplitude.iter().any(|&c| c != 0.0) || self.swing != 0.0;
        match self.period {
            Some(p) if p <= 0.0 => Err(crate::Error::input(format!(
                "{at}.motion.period must be > 0 s, got {p}: give the oscillation's period, e.g. 1.0"
            ))),
            None if sinusoid => Err(crate::Error::input(format!(
                "{at}.motion: an amplitude or swing needs a \"period\" (s), e.g. \"period\": 1.0"
            ))),
            _ if self.unit_axis() == DVec3::ZERO && (self.spin != 0.0 || self.swing != 0.0) => {
                Err(crate::Error::input(format!(
                    "{at}.motion.axis must not be zero: give the rotation axis, e.g. [0, 1, 0]"
                )))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paddle() -> Shape {
        Shape::Box {
            min: [0.0, 0.0, 0.0],
            max: [0.02, 0.3, 0.2],
        }
    }

    #[test]
    fn the_worked_example_holds() {
        let m = Motion {
            velocity: [0.0; 3],
            amplitude: [0.05, 0.0, 0.0],
            period: Some(2.0),
            phase: 0.0,
            pivot: [0.0; 3],
            axis: default_axis(),
            spin: 0.0,
            swing: 0.0,
        };
        let x0 = Vec3::new(0.01, 0.1, 0.1);
        let (x, v) = m.pose(0.5).place(x0);
        assert!((x - x0 - Vec3::new(0.05, 0.0, 0.0)).length() < 1e-7, "{x}");
        assert!(v.length() < 1e-7, "{v}");
        let (x, v) = m.pose(1.0).place(x0);
        assert!((x - x0).length() < 1e-7, "{x}");
        assert!((v.x + 0.05 * std::f32::consts::PI).abs() < 1e-6, "{v}");
        assert_eq!(m.pose(0.0).place(x0).0, x0);
        assert!(m.max_speed(&paddle()) >= 0.05 * std::f32::consts::PI);
    }

    #[test]
    fn velocity_is_the_derivative_of_position() {
        let m = Motion {
            velocity: [0.1, 0.0, -0.2],
            amplitude: [0.0, 0.03, 0.01],
            period: Some(0.7),
            phase: 0.3,
            pivot: [0.01, 0.0, 0.1],
            axis: [0.0, 0.0, 2.0],
            spin: 1.5,
            swing: 0.2,
        };
        let x0 = Vec3::new(0.02, 0.25, 0.05);
        for t in [0.1, 0.45, 1.3] {
            let e = 1e-4;
            let (a, _) = m.pose(t - e).place(x0);
            let (b, _) = m.pose(t + e).place(x0);
            let (_, v) = m.pose(t).place(x0);
            let fd = (b - a) / (2.0 * e as f32);
            assert!((fd - v).length() < 1e-3 * v.length().max(1.0), "{fd} {v}");
            assert!(v.length() <= m.max_speed(&paddle()));
        }
        // to_body undoes place.
        let (x, _) = m.pose(0.9).place(x0);
        assert!((m.pose(0.9).to_body(x) - x0).length() < 1e-6);
        // A rotation keeps distances to the pivot's path.
        let (x, _) = m.pose(0.9).place(x0);
        let p = m.pose(0.9).pivot.as_vec3();
        let r0 = x0.distance(Vec3::from(m.pivot));
        assert!((x.distance(p) - r0).abs() < 1e-6);
    }

    #[test]
    fn bad_motions_are_named() {
        let base = Motion {
            velocity: [0.0; 3],
            amplitude: [0.0; 3],
            period: None,
            phase: 0.0,
            pivot: [0.0; 3],
            axis: default_axis(),
            spin: 0.0,
            swing: 0.0,
        };
        assert!(base.validate("o").is_ok());
        assert!(!base.moves());
        let e = Motion {
            amplitude: [0.1, 0.0, 0.0],
            ..base
        };
        assert!(e.validate("o").unwrap_err().to_string().contains("period"));
        let e = Motion {
            period: Some(0.0),
            ..base
        };
        assert!(e.validate("o").unwrap_err().to_string().contains("> 0"));
        let e = Motion {
            spin: 1.0,
            axis: [0.0; 3],
            ..base
        };
        assert!(e.validate("o").unwrap_err().to_string().contains("axis"));
        let e = Motion {
            phase: f32::NAN,
            ..base
        };
        assert!(e.validate("o").unwrap_err().to_string().contains("finite"));
    }
}
