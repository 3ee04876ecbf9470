//! The first sloshing mode of a rectangular tank, as a check of a model against linear wave
//! theory: its start, the elevation a run is read by, and the period and decay read from it.
//!
//! A tank of length L holding water of depth d, its surface started at rest at
//! d + A cos(πx/L), sloshes in its first mode: η(x, t) = A cos(πx/L) cos(ωt) with
//! ω² = g k tanh(k d), k = π/L (Lamb 1932, *Hydrodynamics*, §227). Water's own viscous decay
//! over one period, exp(−2 ν k² T), is 5e-5 at ν = 1e-6 m²/s in the tank of issue 34, so a
//! model whose wave loses more loses it to the model.
//!
//! Worked example: L = 0.6 m, d = 0.2 m, g = 9.81 m/s²: k = 5.236 /m, ω² = 40.1 /s², the
//! period [`linear_period`] 0.9922 s. A run's elevation series η(t) ([`end_wall_elevation`] per
//! frame) crosses zero near T/4, 3T/4 and 5T/4; [`measure`] reads the period as the time from
//! the first crossing to the third and the height kept as the crest between the second and third
//! crossings over η(0).

use glam::Vec3;

/// Linear theory's period of the first mode, 2π/ω with ω² = g k tanh(k d), k = π/L, s.
pub fn linear_period(length: f64, depth: f64, g: f64) -> f64 {
    let k = std::f64::consts::PI / length;
    2.0 * std::f64::consts::PI / (g * k * (k * depth).tanh()).sqrt()
}

/// A cubic lattice of spacing `s` filling a tank `length × width` (x, z; from the origin) up to
/// a surface d + A cos(πx/L): each column of the lattice holds the layers whose centres lie
/// below the surface at its x.
pub fn cosine_lattice(s: f32, length: f32, width: f32, depth: f32, amplitude: f32) -> Vec<Vec3> {
    let (nx, nz) = ((length / s).round() as u32, (width / s).round() as u32);
    let mut out = Vec::new();
    for i in 0..nx {
        let x = (i as f32 + 0.5) * s;
        let top = depth + amplitude * (std::f32::consts::PI * x / length).cos();
        let mut j = 0;
        while (j as f32 + 0.5) * s < top {
            out.extend((0..nz).map(|k| Vec3::new(x, (j as f32 + 0.5) * s, (k as f32 + 0.5) * s)));
            j += 1;
        }
    }
    out
}

/// Half the difference of the surface heights at the end walls x0 and x1, each the highest
/// particle within `h` of its wall, m. At the first mode this is A cos(ωt): the particles'
/// offset below the surface (about s/2) is the same at both walls and cancels. `None` when a
/// wall has no particle within `h`.
pub fn end_wall_elevation(positions: &[Vec3], x0: f32, x1: f32, h: f32) -> Option<f64> {
    let top = |near: &dyn Fn(f32) -> bool| {
        positions
            .iter()
            .filter(|p| near(p.x))
            .map(|p| p.y as f64)
            .reduce(f64::max)
    };
    Some(0.5 * (top(&|x| x - x0 < h)? - top(&|x| x1 - x < h)?))
}

/// The times where a sampled curve crosses zero, linear between samples.
pub fn zero_crossings(curve: &[(f64, f64)]) -> Vec<f64> {
    curve
        .windows(2)
        .filter(|w| (w[0].1 > 0.0) != (w[1].1 > 0.0))
        .map(|w| {
            let ((t0, a), (t1, b)) = (w[0], w[1]);
            t0 + (t1 - t0) * a / (a - b)
        })
        .collect()
}

/// A standing wave's period and the part of its height it keeps over one period.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Measured {
    /// From the first zero crossing of η to the third, s.
    pub period: f64,
    /// The crest between the second and third crossings over η at the first sample.
    pub kept: f64,
}

/// Reads [`Measured`] from an elevation series (t, η) that starts at a crest; `None` until the
/// series has crossed zero three times or when η(0) is not positive.
pub fn measure(eta: &[(f64, f64)]) -> Option<Measured> {
    let a0 = eta.first()?.1;
    let z = zero_crossings(eta);
    if z.len() < 3 || a0 <= 0.0 {
        return None;
    }
    let crest = eta
        .iter()
        .filter(|p| p.0 > z[1] && p.0 < z[2])
        .map(|p| p.1)
        .fold(f64::MIN, f64::max);
    Some(Measured {
        period: z[2] - z[0],
        kept: crest / a0,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The module's worked example: issue 34's tank.
    #[test]
    fn linear_period_of_the_issues_tank() {
        assert!((linear_period(0.6, 0.2, 9.81) - 0.9922).abs() < 5e-5);
    }

    /// A damped cosine A e^(−βt) cos(ωt) sampled every 5 ms: the period 2π/ω and the crest
    /// after one period e^(−βT) (the crest's sample lies within 2.5 ms of T).
    #[test]
    fn measure_reads_a_damped_cosine() {
        let (omega, beta) = (2.0 * std::f64::consts::PI / 0.9, 0.3);
        let eta: Vec<(f64, f64)> = (0..400)
            .map(|k| {
                let t = k as f64 * 0.005;
                (t, 0.02 * (-beta * t).exp() * (omega * t).cos())
            })
            .collect();
        let m = measure(&eta).unwrap();
        assert!((m.period - 0.9).abs() < 1e-3, "{m:?}");
        assert!((m.kept - (-beta * 0.9f64).exp()).abs() < 2e-3, "{m:?}");
        assert_eq!(measure(&eta[..150]), None, "two crossings are not a period");
    }

    /// 0.6 × 0.02 m at s = 0.01 m, d = 0.2 m, A = 0.02 m: 60 columns two particles wide. At
    /// x = 5 mm the surface is at 0.21999 m, so the layers' centres run to 0.215 m (22 layers);
    /// at x = 595 mm it is at 0.18001 m (18 layers, the top at 0.175 m); mid-tank 20. The
    /// lattice's own elevation is half the difference of the end columns' tops, A = 0.02 m.
    #[test]
    fn the_lattice_follows_the_cosine_and_the_walls_read_it() {
        let p = cosine_lattice(0.01, 0.6, 0.02, 0.2, 0.02);
        let layers = |x: f32| p.iter().filter(|q| (q.x - x).abs() < 1e-4).count() / 2;
        assert_eq!((layers(0.005), layers(0.595)), (22, 18));
        assert_eq!(layers(0.295), 20);
        let eta = end_wall_elevation(&p, 0.0, 0.6, 0.02).unwrap();
        assert!((eta - 0.5 * (0.215 - 0.175)).abs() < 1e-6, "{eta}");
        assert_eq!(end_wall_elevation(&p, 0.0, 2.0, 0.02), None);
    }
}
