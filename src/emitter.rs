//! Emitters: nozzles that inject fluid during a run, layer by layer.
//!
//! A nozzle (a rectangle or a disk of area A, centred at c, facing the unit direction d)
//! emits at speed U between `start` and `end`. Each layer is the same set of L points of a
//! square lattice of spacing s on the nozzle, the arrangement the fluid bodies start in: for
//! a rectangle ⌈w/s⌉ × ⌈h/s⌉ cell centres; for a disk the lattice points inside it, the
//! lattice placed with a point at the centre or offset by s/2, whichever gives the fewer
//! points that still reach A/s². The layers leave every τ = L s³ / (A U) seconds, so the rate
//! is exactly A U / s³ particles per second, and consecutive layers lie one pitch
//! U τ = L s³ / A ≥ s apart along d. So a jet starts at most at ρ0 inside and below it at its
//! surface, with no pressure (the Tait pressure is clamped at 0): a denser pattern (Vogel's
//! sunflower spiral, tried first, packs 3% above ρ0 in places) starts it compressed, and the
//! jet bursts apart with energy no one put in.
//!
//! Layer k leaves at t_k = start + k τ for every k with t_k < end. A run emits at the end of
//! each step, at time t, every layer with t_k ≤ t not yet emitted, placed where it would be had
//! it left on time: x = c + U (t − t_k) d + offset, v = U d. So which layers a state holds
//! follows from its time alone (a checkpoint needs no emitter state), and the spacing along
//! the jet does not depend on the step size. Everything is computed on the host in f64 and
//! rounded once to f32, so both paths receive the same particles bit for bit.
//!
//! Worked example: a disk of radius 0.05 m at s = 0.01 m: A/s² = 78.54; the centred lattice
//! has 81 points inside, the offset one 80, so L = 80; at U = 1 m/s the rate is
//! π 0.05² · 1 / 0.01³ = 7854 particles/s and a layer leaves every
//! τ = 80 · 10⁻⁶ / (π 0.05² · 1) = 10.19 ms, 10.19 mm apart.
//!
//! **Never onto fluid.** Before a layer is added, stage `emitter_probe` (GPU, mirror
//! [`probe_hits`]) counts the fluid particles in its slab: within s/2 of its plane along d and
//! inside the opening grown by s/2 across it. A layer whose slab holds fluid is skipped (never
//! retried): a nozzle that the fluid in front of it blocks (submerged, or a jet that has
//! slowed) emits less, as a blocked real one would, instead of stacking particles onto
//! others. Which layers are still due still follows from the time alone. In free flow the
//! layer before lies one pitch (≥ s) ahead and nothing is skipped.
//!
//! The nozzle's frame: d as given (normalised), `u` = the unit vector along a × d with a = ŷ
//! (x̂ when d is within 26° of ±ŷ), `v` = d × u. A rectangle's `width` runs along u, its
//! `height` along v: for a horizontal jet, width is horizontal and height vertical.
//!
//! In 2D (`--dim 2`) a nozzle is its section by the plane z = 0, the chord the plane crosses
//! ([`Emitter::section`]), and the same layers follow at the 2D rate chord · U / s².

use glam::{DVec3, Vec3};
use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A nozzle's opening.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase", deny_unknown_fields)]
pub enum Nozzle {
    /// A rectangle, m.
    Rect {
        /// Extent along the nozzle's u axis.
        width: f32,
        /// Extent along its v axis.
        height: f32,
    },
    /// A disk, m.
    Circle {
        /// Its radius.
        radius: f32,
    },
}

/// One emitter of a scene (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Emitter {
    /// The opening.
    pub nozzle: Nozzle,
    /// Centre of the opening, m.
    pub position: [f32; 3],
    /// Direction of the jet (any length but zero).
    pub direction: [f32; 3],
    /// Speed of the jet, m/s.
    pub speed: f32,
    /// When it opens, s.
    #[serde(default)]
    pub start: f32,
    /// When it closes, s.
    pub end: f32,
}

/// The most layers one `emitter_probe` dispatch tests (shaders/emitter_probe.wgsl).
pub const MAX_PROBES: usize = 16;

/// Where one layer would go, for `emitter_probe`: centre c and the nozzle's unit axes d, u, v;
/// c.w the layer's distance along d, d.w the slab's half-thickness (s/2), u.w and v.w the
/// opening's half-widths grown by s/2 (v.w < 0: a disk of radius u.w).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct Probe {
    /// Centre, and the layer's distance along d.
    pub c: [f32; 4],
    /// The jet's unit direction, and the half-thickness.
    pub d: [f32; 4],
    /// The nozzle's u axis, and the half-width along it (a disk's radius).
    pub u: [f32; 4],
    /// The nozzle's v axis, and the half-width along it (negative for a disk).
    pub v: [f32; 4],
}

/// The uniform block of `emitter_probe`: a count and up to [`MAX_PROBES`] probes.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct ProbeBlock {
    /// Probes in use.
    pub count: u32,
    #[doc(hidden)]
    pub _pad: [u32; 3],
    /// The probes.
    pub probes: [Probe; MAX_PROBES],
}

impl ProbeBlock {
    /// The block of `probes` (at most [`MAX_PROBES`]).
    pub fn new(probes: &[Probe]) -> Self {
        let mut b = Self {
            count: probes.len() as u32,
            _pad: [0; 3],
            probes: [Probe::default(); MAX_PROBES],
        };
        b.probes[..probes.len()].copy_from_slice(probes);
        b
    }
}

/// Stage `emitter_probe` on the CPU: for each probe, how many of the particles at `pos` lie in
/// its slab (the WGSL stage's arithmetic, operation for operation).
pub fn probe_hits(pos: &[Vec3], probes: &[Probe]) -> Vec<u32> {
    let mut hits = vec![0u32; probes.len()];
    for x in pos {
        for (j, p) in probes.iter().enumerate() {
            let r = *x - Vec3::new(p.c[0], p.c[1], p.c[2]);
            let a = r.x * p.d[0] + r.y * p.d[1] + r.z * p.d[2];
            // A positive test, so a NaN counts as outside, as on the GPU.
            let in_slab = (a - p.c[3]).abs() < p.d[3];
            if !in_slab {
                continue;
            }
            let ru = r.x * p.u[0] + r.y * p.u[1] + r.z * p.u[2];
            let rv = r.x * p.v[0] + r.y * p.v[1] + r.z * p.v[2];
            let inside = if p.v[3] < 0.0 {
                ru * ru + rv * rv < p.u[3] * p.u[3]
            } else {
                ru.abs() < p.u[3] && rv.abs() < p.v[3]
            };
            if inside {
                hits[j] += 1;
            }
        }
    }
    hits
}

impl Emitter {
    fn frame(&self) -> (DVec3, DVec3, DVec3) {
        let d = Vec3::from(self.direction).as_dvec3().normalize_or_zero();
        let a = if d.y.abs() > 0.9 { DVec3::X } else { DVec3::Y };
        let u = a.cross(d).normalize_or_zero();
        (d, u, d.cross(u))
    }

    /// The opening's area, m².
    pub fn area(&self) -> f64 {
        match self.nozzle {
            Nozzle::Rect { width, height } => width as f64 * height as f64,
            Nozzle::Circle { radius } => std::f64::consts::PI * (radius as f64).powi(2),
        }
    }

    /// The offsets of one layer's points from the centre, in the nozzle's (u, v) plane, m.
    fn layer_2d(&self, s: f32) -> Vec<(f64, f64)> {
        let s = s as f64;
        match self.nozzle {
            Nozzle::Rect { width, height } => {
                let nu = ((width as f64 / s - 1e-6).ceil() as usize).max(1);
                let nv = ((height as f64 / s - 1e-6).ceil() as usize).max(1);
                let (ou, ov) = (0.5 * nu as f64, 0.5 * nv as f64);
                (0..nv)
                    .flat_map(|j| {
                        (0..nu).map(move |i| ((i as f64 + 0.5 - ou) * s, (j as f64 + 0.5 - ov) * s))
                    })
                    .collect()
            }
            Nozzle::Circle { radius } => {
                let r = radius as f64;
                let m = (r / s).ceil() as i64 + 1;
                // The square lattice's points in the disk, with a point at the centre or
                // offset by s/2: the fewer that still reach A/s², else the more.
                let disk = |offset: f64| -> Vec<(f64, f64)> {
                    (-m..=m)
                        .flat_map(|j| (-m..=m).map(move |i| (i, j)))
                        .map(|(i, j)| ((i as f64 + offset) * s, (j as f64 + offset) * s))
                        .filter(|(a, b)| a * a + b * b <= r * r)
                        .collect()
                };
                let (a, b) = (disk(0.0), disk(0.5));
                let need = self.area() / (s * s);
                let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
                let pick = if small.len() as f64 >= need {
                    small
                } else {
                    large
                };
                if pick.is_empty() {
                    vec![(0.0, 0.0)]
                } else {
                    pick
                }
            }
        }
    }

    /// Points per layer, L.
    pub fn layer_len(&self, s: f32) -> usize {
        self.layer_2d(s).len()
    }

    /// The rate, A U / s³ particles per second.
    pub fn rate(&self, s: f32) -> f64 {
        self.area() * self.speed as f64 / (s as f64).powi(3)
    }

    /// The time between layers, τ = L s³ / (A U), s.
    pub fn period(&self, s: f32) -> f64 {
        self.layer_len(s) as f64 / self.rate(s)
    }

    /// How many layers leave in all: those with t_k < end. Saturates at `u64::MAX` where
    /// the window holds more layers than f64 counts exactly ([`Emitter::validate`] refuses
    /// such an emitter).
    pub fn layers(&self, s: f32) -> u64 {
        let tau = self.period(s);
        let (start, end) = (self.start as f64, self.end as f64);
        let estimate = ((end - start) / tau).ceil().max(0.0);
        if estimate.is_nan() || estimate >= (1u64 << 52) as f64 {
            return u64::MAX;
        }
        let mut k = estimate as u64;
        while k > 0 && start + (k - 1) as f64 * tau >= end {
            k -= 1;
        }
        while start + k as f64 * tau < end {
            k += 1;
        }
        k
    }

    /// How many layers have left by time `t`: those with t_k ≤ t and t_k < end.
    pub fn layers_by(&self, t: f64, s: f32) -> u64 {
        let (tau, start) = (self.period(s), self.start as f64);
        if t < start {
            return 0;
        }
        let mut k = ((t - start) / tau).floor() as u64 + 1;
        while k > 0 && start + (k - 1) as f64 * tau > t {
            k -= 1;
        }
        while start + k as f64 * tau <= t {
            k += 1;
        }
        k.min(self.layers(s))
    }

    /// The most particles it adds to a run.
    pub fn total(&self, s: f32) -> u64 {
        self.layers(s).saturating_mul(self.layer_len(s) as u64)
    }

    /// The slab layer k would fill at time `t` (see [`Probe`]).
    pub fn probe(&self, k: u64, t: f64, s: f32) -> Probe {
        let (d, u, v) = self.frame();
        let (tau, start) = (self.period(s), self.start as f64);
        let a = self.speed as f64 * (t - (start + k as f64 * tau)).max(0.0);
        let half = 0.5 * s as f64;
        let (wu, wv) = match self.nozzle {
            Nozzle::Rect { width, height } => {
                let n = |w: f32| ((w as f64 / s as f64 - 1e-6).ceil()).max(1.0);
                (0.5 * n(width) * s as f64, 0.5 * n(height) * s as f64)
            }
            Nozzle::Circle { radius } => (radius as f64 + half, -1.0),
        };
        let c = Vec3::from(self.position);
        Probe {
            c: [c.x, c.y, c.z, a as f32],
            d: d.as_vec3().extend(half as f32).to_array(),
            u: u.as_vec3().extend(wu as f32).to_array(),
            v: v.as_vec3().extend(wv as f32).to_array(),
        }
    }

    /// Layers `from..to` as they stand at time `t` (≥ each one's t_k): positions, and the
    /// velocity they all share.
    fn emit(&self, from: u64, to: u64, t: f64, s: f32) -> (Vec<Vec3>, Vec3) {
        let (d, u, v) = self.frame();
        let c = Vec3::from(self.position).as_dvec3();
        let speed = self.speed as f64;
        let (tau, start) = (self.period(s), self.start as f64);
        let layer = self.layer_2d(s);
        let mut out = Vec::with_capacity(layer.len() * (to - from) as usize);
        for k in from..to {
            let travelled = speed * (t - (start + k as f64 * tau)).max(0.0);
            for &(a, b) in &layer {
                out.push((c + d * travelled + u * a + v * b).as_vec3());
            }
        }
        (out, (d * speed).as_vec3())
    }

    /// Its section by the plane z = 0, for a 2D run (`--dim 2`): the chord the plane cuts
    /// from the opening, as a nozzle one spacing across the plane. A jet in the plane has u =
    /// ±ẑ and v in the plane (the frame above), so the chord lies along v: a rectangle's
    /// `height` when |z| ≤ width/2 of its centre, a disk's 2√(r² − z²) when |z| < r. The section
    /// is the rectangle `{width: s, height: chord}` centred at z = 0: its layer is the chord's
    /// ⌈chord/s⌉ cell centres at z = 0 exactly (u · 0 adds nothing), and its area s · chord
    /// makes the rate chord · U / s² particles a second, the 2D fluid's per metre of depth.
    /// Worked example: a disk of radius 0.03 m centred on the plane, s = 0.01 m, U = 1.2 m/s:
    /// a chord of 0.06 m, 6 points a layer, 720 particles a second, a layer every 8.33 ms.
    /// Fails with one line naming `at` and the fix when the jet leaves the plane or the
    /// opening misses it.
    pub fn section(&self, at: &str, s: f32) -> Result<Self> {
        if !self
            .position
            .iter()
            .chain(&self.direction)
            .all(|x| x.is_finite())
        {
            // Left for [`Emitter::validate`]'s line about the value itself.
            return Ok(self.clone());
        }
        let [_, _, dz] = self.direction;
        if dz != 0.0 {
            return Err(Error::input(format!(
                "{at}.direction leaves the plane z = 0 (its z is {dz}): a 2D run (--dim 2) takes jets in the plane, give the direction z = 0; or drop --dim 2"
            )));
        }
        let z = self.position[2];
        let chord = match self.nozzle {
            Nozzle::Rect { width, height } if z.abs() <= 0.5 * width => Some(height),
            Nozzle::Circle { radius } if z.abs() < radius => {
                Some((2.0 * ((radius as f64).powi(2) - (z as f64).powi(2)).sqrt()) as f32)
            }
            _ => None,
        };
        let Some(chord) = chord else {
            return Err(Error::input(format!(
                "{at}'s nozzle does not cross the plane z = 0 (its centre at z = {z}): move it onto the plane; or drop --dim 2"
            )));
        };
        let [x, y, _] = self.position;
        Ok(Self {
            nozzle: Nozzle::Rect {
                width: s,
                height: chord,
            },
            position: [x, y, 0.0],
            ..self.clone()
        })
    }

    /// Fails with one line naming `at` (its place in the file) and the fix when a value is
    /// not finite or out of range, or a point of its layer lies outside the tank (closer than
    /// s/2 to a wall) or nearer an obstacle than the scenes' fluid starts (the boundary's
    /// standoff, `obstacle::standoff`, given beside the obstacles).
    pub fn validate(
        &self,
        at: &str,
        s: f32,
        tank: (Vec3, Vec3),
        (obstacles, standoff): (&[crate::obstacle::Obstacle], f32),
    ) -> Result<()> {
        let mut values = self.position.iter().chain(&self.direction).chain([
            &self.speed,
            &self.start,
            &self.end,
        ]);
        let sizes = match self.nozzle {
            Nozzle::Rect { width, height } => vec![("width", width), ("height", height)],
            Nozzle::Circle { radius } => vec![("radius", radius)],
        };
        if !values.all(|x| x.is_finite()) || sizes.iter().any(|(_, x)| !x.is_finite()) {
            return Err(Error::input(format!(
                "{at}: every value must be finite: replace the NaN or infinity"
            )));
        }
        for (name, x) in sizes {
            if x <= 0.0 {
                return Err(Error::input(format!(
                    "{at}.nozzle.{name} must be > 0 m, got {x}: give the opening's size"
                )));
            }
        }
        if self.speed <= 0.0 {
            return Err(Error::input(format!(
                "{at}.speed must be > 0 m/s, got {}: the jet's speed sets the rate (area · speed / s³)",
                self.speed
            )));
        }
        if Vec3::from(self.direction).length_squared() == 0.0 {
            return Err(Error::input(format!(
                "{at}.direction must not be zero: give the jet's direction, e.g. [0, -1, 0]"
            )));
        }
        if !(self.start >= 0.0 && self.end > self.start) {
            return Err(Error::input(format!(
                "{at}: start {} s and end {} s must satisfy 0 <= start < end",
                self.start, self.end
            )));
        }
        // Bound the nozzle and the count before building a layer's lattice or counting its
        // layers: both take time in proportion to what they count.
        let extent = match self.nozzle {
            Nozzle::Rect { width, height } => 0.5 * width.max(height),
            Nozzle::Circle { radius } => radius,
        };
        let diagonal = (tank.1 - tank.0).length();
        if extent > diagonal {
            return Err(Error::input(format!(
                "{at}: the nozzle reaches {extent} m from its centre, farther than the tank's diagonal ({diagonal} m): shrink its nozzle"
            )));
        }
        let (s64, span) = (s as f64, self.end as f64 - self.start as f64);
        let estimate =
            (self.area() / (s64 * s64)).max(1.0) * (span * self.speed as f64 / s64).max(1.0);
        if estimate.is_nan() || estimate > 4.0 * (1u64 << 27) as f64 {
            return Err(Error::input(format!(
                "{at}: emits about {estimate:.3e} particles at spacing {s} m, more than 2^27: shorten its time window, narrow the nozzle, slow the jet or use a larger spacing"
            )));
        }
        if self.total(s) > 1 << 27 {
            return Err(Error::input(format!(
                "{at}: emits {} particles at spacing {s} m, more than 2^27: shorten its time window, narrow the nozzle or use a larger spacing",
                self.total(s)
            )));
        }
        let margin = 0.5 * s * (1.0 - 1e-3);
        // As the scenes' fluid bodies: no closer to an obstacle than the distance at which one
        // layer of its boundary particles leaves the fluid at rho0 (nearer, the layer starts
        // compressed and an explicit pressure blows it off the surface).
        let (points, _) = self.emit(0, 1, self.start as f64, s);
        for p in points {
            if (p - tank.0).min_element() < margin || (tank.1 - p).min_element() < margin {
                return Err(Error::input(format!(
                    "{at}: the nozzle's point {p} lies outside the tank {} – {} or within s/2 of a wall: move the emitter inward or shrink its nozzle",
                    tank.0, tank.1
                )));
            }
            if let Some(i) = obstacles
                .iter()
                .position(|o| o.shape.signed_distance(p) < standoff)
            {
                return Err(Error::input(format!(
                    "{at}: the nozzle's point {p} lies inside obstacles[{i}] or within {standoff:.4} m of it (the boundary's standoff, {:.2} spacings, where its particles hold the fluid at rho0): move the emitter off the obstacle",
                    standoff / s
                )));
            }
        }
        Ok(())
    }
}

/// A chunk of due layers, (emitter, layer) pairs, with their slabs' probes
/// ([`Emitters::probes_due`]).
pub type DueProbes = (Vec<(usize, u64)>, Vec<Probe>);

/// A run's emitters at spacing s, and what emitting costs the energy balance.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Emitters {
    /// The emitters, in the scene file's order.
    pub list: Vec<Emitter>,
    /// The spacing s, m.
    pub s: f32,
}

/// Particles that leave the emitters at one time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// Positions, m.
    pub pos: Vec<Vec3>,
    /// Velocities, m/s.
    pub vel: Vec<Vec3>,
}

impl Batch {
    /// Whether it holds no particle.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }

    /// Appends the batch to `state` with the next ids (ids stay 0..N).
    pub fn append_to(&self, state: &mut crate::core::Particles) {
        let n = state.len() as u32;
        state.pos.extend_from_slice(&self.pos);
        state.vel.extend_from_slice(&self.vel);
        state.id.extend(n..n + self.pos.len() as u32);
    }

    /// The energy the batch brings in, J: kinetic ½ m Σ|v|² plus gravitational m |g| Σ(y − floor),
    /// the same terms the statistics count.
    pub fn energy(&self, mass: f32, gravity: f32, floor: f32) -> f64 {
        let m = mass as f64;
        let g = (gravity as f64).abs();
        self.pos
            .iter()
            .zip(&self.vel)
            .map(|(p, v)| {
                0.5 * m * v.as_dvec3().length_squared() + m * g * (p.y as f64 - floor as f64)
            })
            .sum()
    }
}

impl Emitters {
    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The most particles they add to a run.
    pub fn total(&self) -> u64 {
        self.list.iter().map(|e| e.total(self.s)).sum()
    }

    /// How many particles have left by time `t` (see [`Emitter::layers_by`]).
    pub fn emitted_by(&self, t: f64) -> u64 {
        self.list
            .iter()
            .map(|e| e.layers_by(t, self.s) * e.layer_len(self.s) as u64)
            .sum()
    }

    /// Whether an emitter may still emit after time `t`.
    pub fn active_after(&self, t: f64) -> bool {
        self.list
            .iter()
            .any(|e| e.layers_by(t, self.s) < e.layers(self.s))
    }

    /// The layers that leave after time `before` up to time `t` (t_k in (before, t]; every
    /// t_k ≤ t when `before` is `None`), as (emitter, k), emitter by emitter.
    pub fn due(&self, before: Option<f64>, t: f64) -> Vec<(usize, u64)> {
        let mut out = Vec::new();
        for (i, e) in self.list.iter().enumerate() {
            let from = before.map_or(0, |b| e.layers_by(b, self.s));
            let to = e.layers_by(t, self.s);
            out.extend((from..to).map(|k| (i, k)));
        }
        out
    }

    /// The layers due after `before` up to `t` whose slab `probe` finds empty ([`Probe`];
    /// `probe` counts the fluid in up to [`MAX_PROBES`] slabs at a time), placed as they stand
    /// at `t`.
    pub fn between(
        &self,
        before: Option<f64>,
        t: f64,
        mut probe: impl FnMut(&[Probe]) -> crate::Result<Vec<u32>>,
    ) -> crate::Result<Batch> {
        let mut out = Batch::default();
        for (layers, probes) in self.probes_due(before, t) {
            let hits = probe(&probes)?;
            self.land(&layers, &hits, t, &mut out);
        }
        Ok(out)
    }

    /// The layers due after `before` up to `t` as (emitter, layer) pairs with their slabs'
    /// probes, in chunks of at most [`MAX_PROBES`] (what one `emitter_probe` pass counts): what
    /// [`Emitters::between`] probes, for a caller that awaits each count.
    pub fn probes_due(&self, before: Option<f64>, t: f64) -> Vec<DueProbes> {
        self.due(before, t)
            .chunks(MAX_PROBES)
            .map(|chunk| {
                let probes = chunk
                    .iter()
                    .map(|&(i, k)| self.list[i].probe(k, t, self.s))
                    .collect();
                (chunk.to_vec(), probes)
            })
            .collect()
    }

    /// Adds to `out` the layers of `layers` whose slab the probe found empty (`hits` 0),
    /// placed as they stand at `t`.
    pub fn land(&self, layers: &[(usize, u64)], hits: &[u32], t: f64, out: &mut Batch) {
        for (&(i, k), &h) in layers.iter().zip(hits) {
            if h == 0 {
                let (pos, vel) = self.list[i].emit(k, k + 1, t, self.s);
                out.vel.extend(std::iter::repeat_n(vel, pos.len()));
                out.pos.extend(pos);
            }
        }
    }

    /// [`Emitters::between`] probing the particles at `pos` on the host.
    pub fn between_host(&self, before: Option<f64>, t: f64, pos: &[Vec3]) -> Batch {
        self.between(before, t, |p| Ok(probe_hits(pos, p)))
            .expect("the host probe does not fail")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jet(nozzle: Nozzle) -> Emitter {
        Emitter {
            nozzle,
            position: [0.5, 0.5, 0.5],
            direction: [1.0, 0.0, 0.0],
            speed: 1.0,
            start: 0.1,
            end: 1.1,
        }
    }

    #[test]
    fn the_worked_example_holds() {
        let e = jet(Nozzle::Circle { radius: 0.05 });
        assert_eq!(e.layer_len(0.01), 80);
        assert!((e.rate(0.01) - 7853.98).abs() < 0.01);
        assert!((e.period(0.01) - 0.010186).abs() < 1e-6);
    }

    #[test]
    fn counts_follow_the_rate_over_the_window() {
        for nozzle in [
            Nozzle::Circle { radius: 0.05 },
            Nozzle::Rect {
                width: 0.08,
                height: 0.043,
            },
        ] {
            let e = jet(nozzle);
            let s = 0.01;
            let list = Emitters {
                list: vec![e.clone()],
                s,
            };
            for t in [0.35, 0.6, 1.1] {
                let want = e.rate(s) * (t - e.start as f64);
                let got = list.emitted_by(t) as f64;
                // At most one layer apart.
                assert!(
                    (got - want).abs() <= e.layer_len(s) as f64,
                    "{t}: {got} {want}"
                );
            }
            assert_eq!(list.emitted_by(0.05), 0);
            assert_eq!(list.emitted_by(50.0), list.total());
            // Nothing lost or repeated when emitting in pieces.
            let mut n = 0;
            let mut before = None;
            for k in 0..200 {
                let t = k as f64 * 0.0071;
                n += list.between_host(before, t, &[]).pos.len() as u64;
                before = Some(t);
            }
            assert_eq!(n, list.emitted_by(before.unwrap()));
        }
    }

    #[test]
    fn layers_leave_one_pitch_apart_on_the_jet() {
        let e = jet(Nozzle::Rect {
            width: 0.04,
            height: 0.02,
        });
        let s = 0.01;
        let list = Emitters {
            list: vec![e.clone()],
            s,
        };
        let b = list.between_host(None, 0.1 + 2.5 * e.period(s), &[]);
        assert_eq!(b.pos.len(), 3 * 8);
        let pitch = (b.pos[0].x - b.pos[8].x) as f64;
        assert!(
            (pitch - e.period(s) * e.speed as f64).abs() < 1e-6,
            "{pitch}"
        );
        assert!((pitch - s as f64).abs() < 1e-6);
        for p in &b.pos[16..] {
            assert!((p.x - (0.5 + 0.5 * s)).abs() < 1e-6, "{p}");
        }
        assert!(b.vel.iter().all(|v| *v == Vec3::X));
    }

    #[test]
    fn a_layer_is_never_placed_onto_fluid() {
        let e = jet(Nozzle::Circle { radius: 0.02 });
        let s = 0.01;
        // Layer 0 at its own time lies in the nozzle's plane: its slab is |a| < s/2 across a
        // disk of radius 0.02 + s/2.
        let p = e.probe(0, 0.1, s);
        let at = |x: f32, y: f32| Vec3::new(0.5 + x, 0.5 + y, 0.5);
        assert_eq!(probe_hits(&[at(0.002, 0.01)], &[p]), vec![1]);
        assert_eq!(probe_hits(&[at(0.008, 0.0)], &[p]), vec![0]);
        assert_eq!(probe_hits(&[at(0.0, 0.026)], &[p]), vec![0]);
        let list = Emitters {
            list: vec![e.clone()],
            s,
        };
        // At its own time layer 0 stands in the nozzle's plane, on the particle at c.
        let t = e.start as f64;
        assert_eq!(
            list.between_host(None, t, &[at(0.0, 0.0)]).pos.len(),
            0,
            "a layer onto fluid is skipped"
        );
        assert_eq!(list.between_host(None, t, &[]).pos.len(), e.layer_len(s));
    }

    #[test]
    fn bad_emitters_are_refused_with_the_fix() {
        let tank = (Vec3::ZERO, Vec3::ONE);
        let s = 0.01;
        let check = |e: Emitter| {
            e.validate("e", s, tank, (&[], 0.0))
                .unwrap_err()
                .to_string()
        };
        let ok = jet(Nozzle::Circle { radius: 0.05 });
        assert!(ok.validate("e", s, tank, (&[], 0.0)).is_ok());
        assert!(
            check(Emitter {
                speed: 0.0,
                ..ok.clone()
            })
            .contains("speed must be > 0")
        );
        assert!(
            check(Emitter {
                nozzle: Nozzle::Circle { radius: -1.0 },
                ..ok.clone()
            })
            .contains("radius must be > 0")
        );
        assert!(
            check(Emitter {
                end: 0.0,
                ..ok.clone()
            })
            .contains("start")
        );
        assert!(
            check(Emitter {
                direction: [0.0; 3],
                ..ok.clone()
            })
            .contains("direction")
        );
        assert!(
            check(Emitter {
                position: [0.02, 0.5, 0.5],
                direction: [0.0, 1.0, 0.0],
                ..ok.clone()
            })
            .contains("outside the tank")
        );
        assert!(
            check(Emitter {
                speed: f32::NAN,
                ..ok.clone()
            })
            .contains("finite")
        );
        // Refused before a layer is built or its layers are counted (a nozzle of 1e6 m built
        // a lattice for ever; an end of 1e30 s overflowed the layer count).
        assert!(
            check(Emitter {
                nozzle: Nozzle::Circle { radius: 1e6 },
                ..ok.clone()
            })
            .contains("farther than the tank's diagonal")
        );
        for (speed, end) in [(0.5, 1e30), (1e30, 0.2)] {
            let e = Emitter {
                speed,
                end,
                ..ok.clone()
            };
            assert!(check(e.clone()).contains("more than 2^27"), "{e:?}");
            assert_eq!(e.total(s), u64::MAX);
        }
    }
}
