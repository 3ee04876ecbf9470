//! Scene files (`--scene FILE.json`): a whole run in one JSON document, the tank, the fluid
//! bodies and any setting a flag can give, by section. The schema, with every key's unit and
//! default, is in `docs/scenes.md`.
//!
//! JSON rather than TOML: it is what SPlisHSPlasH's scenes use, so users of either read the
//! other's files, and serde_json is already how gpu-sph writes its own metadata; one format
//! keeps one set of error messages. A `.toml` file is refused with a line saying so.
//!
//! Errors name the file, the line and column, the key path (`fluid[1].shape.sphere.radius`)
//! and a fix; an unknown key names the nearest known one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use glam::Vec3;
use serde::Deserialize;

use crate::scene::{Body, SceneDesc, SceneKind};
use crate::{Error, Result};

/// What `--scene` names: a built-in scene or a file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SceneArg {
    /// One of the built-in scenes.
    Builtin(SceneKind),
    /// A scene file.
    File(PathBuf),
}

impl SceneArg {
    /// Reads `--scene`'s value: anything with a path separator or a `.json`/`.toml`
    /// extension is a file, anything else a built-in name.
    pub fn parse(s: &str) -> std::result::Result<Self, String> {
        let lower = s.to_ascii_lowercase();
        if s.contains(['/', '\\']) || lower.ends_with(".json") || lower.ends_with(".toml") {
            return Ok(Self::File(PathBuf::from(s)));
        }
        SceneKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .map(Self::Builtin)
            .ok_or_else(|| {
                let names: Vec<&str> = SceneKind::ALL.iter().map(|k| k.name()).collect();
                let near = nearest(s, &names)
                    .map(|n| format!(" (did you mean {n}?)"))
                    .unwrap_or_default();
                format!(
                    "unknown scene {s:?}{near}: the built-in scenes are {}; a scene file needs a path separator or a .json extension, e.g. ./{s}.json",
                    names.join(", ")
                )
            })
    }
}

/// The tank of a scene file.
#[derive(Clone, Debug, Deserialize, serde::Serialize)]
#[serde(deny_unknown_fields)]
pub struct Tank {
    /// Lower corner, metres.
    pub min: [f32; 3],
    /// Upper corner, metres.
    pub max: [f32; 3],
    /// Sides with no wall (`"y+"` opens the top): fluid that leaves through one is removed
    /// from the run and counted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open: Vec<crate::scene::Side>,
    /// Per wall (`"x-"`, `"y-"`, …), its Navier slip length: metres (0 no slip, a length for
    /// wall friction) or `"free"`; walls not named take the run's `wall_slip_length`.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub slip_length: BTreeMap<String, serde_json::Value>,
}

impl Tank {
    /// Its walls' slip lengths, indexed by [`crate::scene::Side`] (f32::INFINITY for free
    /// slip); `None` where the run's applies. An unknown side or a value that is no length
    /// is refused, naming it.
    pub fn wall_slips(&self, name: &str) -> Result<[Option<f32>; 6]> {
        let mut out = [None; 6];
        for (side, value) in &self.slip_length {
            let s: crate::scene::Side = serde_json::from_value(serde_json::Value::String(side.clone()))
                .map_err(|_| {
                    Error::input(format!(
                        "{name}: at tank.slip_length.{side}: no such wall; the walls are x-, x+, y-, y+, z-, z+"
                    ))
                })?;
            // The flag's own reading of its text.
            let b = match value {
                serde_json::Value::String(t) => crate::params::parse_slip_length(t),
                serde_json::Value::Number(n) => crate::params::parse_slip_length(&n.to_string()),
                _ => None,
            };
            out[s as usize] = Some(b.ok_or_else(|| {
                Error::input(format!(
                    "{name}: at tank.slip_length.{side}: {value} is no slip length; give \"free\", 0 (no slip) or a length in metres"
                ))
            })?);
        }
        Ok(out)
    }
}

/// A setting's value as the file gives it (a number, a string, a boolean).
pub type Settings = BTreeMap<String, serde_json::Value>;

/// A scene file as read: the scene proper, and the settings sections, which the front end
/// checks against its flags (see [`SECTIONS`]).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SceneFile {
    /// Free text, shown nowhere; for the reader of the file.
    #[serde(default)]
    pub description: Option<String>,
    /// The tank (a closed box).
    pub tank: Tank,
    /// The fluid bodies.
    pub fluid: Vec<Body>,
    /// Solid obstacles (boxes, spheres, cylinders), as boundary particles.
    #[serde(default)]
    pub obstacles: Vec<crate::obstacle::Obstacle>,
    /// Nozzles that add fluid during the run.
    #[serde(default)]
    pub emitters: Vec<crate::emitter::Emitter>,
    /// Physics settings: the solver and fluid parameters, and the seed.
    #[serde(default)]
    pub physics: Settings,
    /// Run settings (headless runs): steps, the path, divergence checks, checkpoints.
    #[serde(default)]
    pub run: Settings,
    /// Output settings (headless runs): particle, statistics, frame and surface files.
    #[serde(default)]
    pub outputs: Settings,
    /// Viewer settings.
    #[serde(default)]
    pub viewer: Settings,
}

/// The settings sections of a scene file. The keys each takes are the flags of its clap group
/// (`app::cli::flags_in`), by their ids (the long names with `_` for `-`), which
/// [`SceneFile::check_keys`] is given.
pub const SECTIONS: [&str; 4] = ["physics", "run", "outputs", "viewer"];

/// Keys renamed so every limit reads `max_…`/`min_…` and colour has one spelling: a file
/// written with the old name still reads (section, old, new).
const RENAMED: [(&str, &str, &str); 3] = [
    ("physics", "dt_max", "max_dt"),
    ("physics", "dt_min", "min_dt"),
    ("viewer", "color_by", "colour_by"),
];

/// The known name closest to `key` by edit distance, when it is close enough to be a typo.
pub fn nearest<'a>(key: &str, known: &[&'a str]) -> Option<&'a str> {
    known
        .iter()
        .map(|k| (strsim::levenshtein(key, k), *k))
        .min()
        .filter(|(d, k)| *d <= 3.max(k.len() / 3))
        .map(|(_, k)| k)
}

/// Rewrites serde's "unknown field `x`, expected one of `a`, `b`" (and the same for
/// variants) to name the nearest known one.
fn explain(msg: &str) -> String {
    for what in ["field", "variant"] {
        let head = format!("unknown {what} `");
        let Some(rest) = msg.strip_prefix(&head) else {
            continue;
        };
        let names: Vec<&str> = rest.split('`').skip(2).step_by(2).collect();
        let key = rest.split('`').next().unwrap_or("");
        let noun = if what == "field" { "key" } else { "kind" };
        return match nearest(key, &names) {
            Some(n) => format!("unknown {noun} `{key}`: did you mean `{n}`?"),
            None => format!(
                "unknown {noun} `{key}`: expected one of {}",
                names.join(", ")
            ),
        };
    }
    // serde_json's words for a list longer than its type (a fourth coordinate of a point).
    if msg == "trailing characters" {
        return "a list with more elements than it takes (a point or size has 3)".into();
    }
    msg.to_string()
}

impl SceneFile {
    /// Reads and parses the scene file at `path`.
    pub fn read(path: &Path) -> Result<Self> {
        let lower = path.to_string_lossy().to_ascii_lowercase();
        if lower.ends_with(".toml") {
            return Err(Error::input(format!(
                "{}: TOML scene files are not supported; write the scene as JSON (schema in docs/scenes.md, or start from gpu-sph --print-scene dam-break)",
                path.display()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::input(format!(
                "cannot read scene file {}: {e}: check the path (built-in scenes are {})",
                path.display(),
                SceneKind::ALL.map(|k| k.name()).join(", ")
            ))
        })?;
        let name = path.display().to_string();
        let mut file = Self::parse(&text, &name)?;
        file.load_meshes(path.parent().unwrap_or(Path::new(".")), &name)?;
        Ok(file)
    }

    /// Rescales the file so its fluid bodies hold about `n` particles: the spacing s becomes
    /// s·(N₀/n)^⅓, N₀ the particles at the file's spacing, then is corrected a few times
    /// against the count the lattice really gives (its layers are whole); each body's `count`
    /// scales by n/N₀, and a smoothing radius or particle mass the file gives keeps its ratio
    /// to s (h ∝ s, m ∝ s³). The tank, the shapes, obstacles and nozzles are untouched, so the
    /// scene keeps its shape and only the resolution changes. Example: the dam-break file
    /// (0.37 × 0.74 × 0.37 m at s = 0.01 m, 100 000 particles) at n = 12 000 gets s ≈ 0.0203 m
    /// and a column of 18 × 36 × 18 = 11 664 particles.
    pub fn scale_to(&mut self, n: u64, name: &str) -> Result<()> {
        let spacing = |v: Option<&serde_json::Value>| -> Result<f32> {
            match v {
                None => Ok(crate::params::DEFAULT_SPACING),
                Some(v) => v
                    .as_f64()
                    .map(|x| x as f32)
                    .filter(|x| x.is_finite() && *x > 0.0)
                    .ok_or_else(|| {
                        Error::input(format!(
                            "{name}: at physics.spacing: expected a finite number > 0, got {v}"
                        ))
                    }),
            }
        };
        let s0 = spacing(self.physics.get("spacing"))?;
        let desc = self.desc();
        desc.validate(name, s0)?;
        let n0 = desc.count(s0);
        if n0 == 0 {
            return Err(Error::input(format!(
                "{name}: its fluid bodies hold no particle at spacing {s0} m, so -n {n} cannot scale them: enlarge the bodies or set physics.spacing"
            )));
        }
        let ratio = n as f64 / n0 as f64;
        for b in &mut self.fluid {
            b.count = b.count.map(|c| ((c as f64 * ratio).round() as u64).max(1));
        }
        let scaled = self.desc();
        let count_at = |s: f32| -> Result<u64> {
            scaled.validate(&format!("{name} at -n {n}"), s)?;
            Ok(scaled.count(s))
        };
        let mut s = (s0 as f64 / ratio.cbrt()) as f32;
        let mut best = (s, count_at(s)?);
        for _ in 0..4 {
            let got = best.1.max(1) as f64;
            s = (best.0 as f64 * (got / n as f64).cbrt()) as f32;
            let c = count_at(s)?;
            if c.abs_diff(n) < best.1.abs_diff(n) {
                best = (s, c);
            }
        }
        let s = best.0;
        let k = s as f64 / s0 as f64;
        let mut set = |key: &str, power: i32| {
            if let Some(x) = self.physics.get(key).and_then(|v| v.as_f64()) {
                self.physics.insert(key.into(), (x * k.powi(power)).into());
            }
        };
        set("smoothing_radius", 1);
        set("particle_mass", 3);
        self.physics.insert("spacing".into(), (s as f64).into());
        Ok(())
    }

    /// Reads every mesh the bodies name (relative to `dir`, the scene file's directory) and
    /// places it by its scale, rotation and translation.
    pub fn load_meshes(&mut self, dir: &Path, name: &str) -> Result<()> {
        self.load_meshes_with(name, |file, at| {
            crate::mesh::TriMesh::read(&dir.join(file), at)
        })
    }

    /// [`SceneFile::load_meshes`] with each mesh read by `read(file, at)` (`file` as the scene
    /// names it, `at` the scene key for messages): where files come without a file system, as
    /// a web page's file input gives them.
    pub fn load_meshes_with(
        &mut self,
        name: &str,
        mut read: impl FnMut(&str, &str) -> Result<crate::mesh::TriMesh>,
    ) -> Result<()> {
        let places: Vec<String> = (0..self.fluid.len())
            .map(|i| format!("fluid[{i}]"))
            .chain((0..self.obstacles.len()).map(|i| format!("obstacles[{i}]")))
            .collect();
        let fluid = self.fluid.iter_mut().map(|b| &mut b.shape);
        let solid = self.obstacles.iter_mut().map(|o| &mut o.shape);
        for (shape, place) in fluid.chain(solid).zip(places) {
            if let crate::scene::Shape::Mesh {
                file,
                scale,
                rotation,
                translation,
                mesh,
            } = shape
            {
                let at = format!("{name}: at {place}.shape.mesh");
                let finite = [*scale]
                    .iter()
                    .chain(rotation.iter())
                    .chain(translation.iter())
                    .all(|x| x.is_finite());
                if !(finite && *scale > 0.0) {
                    return Err(Error::input(format!(
                        "{at}: scale must be finite and > 0, rotation and translation finite: fix the transform"
                    )));
                }
                let placed = read(file, &at)?.transformed(&crate::mesh::Transform {
                    scale: *scale,
                    rotation_deg: Vec3::from(*rotation),
                    translation: Vec3::from(*translation),
                });
                *mesh = Some(std::sync::Arc::new(placed));
            }
        }
        Ok(())
    }

    /// Parses scene text; `name` names it in messages.
    pub fn parse(text: &str, name: &str) -> Result<Self> {
        // serde_json calls some shape errors syntax (a fourth element in a 3-vector is
        // "trailing characters"): text that parses as JSON has only schema errors.
        let is_json = serde_json::from_str::<serde_json::Value>(text).is_ok();
        let fail = |place: String, inner: &serde_json::Error| {
            let mut msg = inner.to_string();
            // serde_json appends " at line L column C"; it is said up front instead.
            if let Some(i) = msg.rfind(" at line ") {
                msg.truncate(i);
            }
            let place = if place.is_empty() || place == "." {
                String::new()
            } else {
                format!(", at {place}")
            };
            let fix = match inner.classify() {
                serde_json::error::Category::Syntax | serde_json::error::Category::Eof
                    if !is_json =>
                {
                    "; fix the JSON syntax there"
                }
                _ => "; see docs/scenes.md for the schema",
            };
            Error::input(format!(
                "{name}: line {} column {}{place}: {}{fix}",
                inner.line(),
                inner.column(),
                explain(&msg)
            ))
        };
        let mut de = serde_json::Deserializer::from_str(text);
        let mut file: Self = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| fail(e.path().to_string(), e.inner()))?;
        de.end().map_err(|e| fail(String::new(), &e))?;
        for (section, old, new) in RENAMED {
            let settings = match section {
                "physics" => &mut file.physics,
                _ => &mut file.viewer,
            };
            if let Some(value) = settings.remove(old) {
                if settings.contains_key(new) {
                    return Err(Error::input(format!(
                        "{name}: at {section}.{old}: `{old}` is the old name of `{new}`, which is given too: drop `{old}`"
                    )));
                }
                settings.insert(new.into(), value);
            }
        }
        file.tank.wall_slips(name)?;
        Ok(file)
    }

    /// Refuses a key that no flag of its section takes (`keys_of(section)`: the section's
    /// keys), naming the section it belongs in or the nearest known key.
    pub fn check_keys(&self, name: &str, keys_of: impl Fn(&str) -> Vec<String>) -> Result<()> {
        let all: Vec<(&str, Vec<String>)> = SECTIONS.iter().map(|&s| (s, keys_of(s))).collect();
        for (section, keys) in &all {
            for key in self.section(section).keys() {
                if keys.iter().any(|k| k == key) {
                    continue;
                }
                let elsewhere = all
                    .iter()
                    .find(|(_, k)| k.iter().any(|k| k == key))
                    .map(|(s, _)| format!(": it belongs in \"{s}\""));
                let known: Vec<&str> = keys.iter().map(String::as_str).collect();
                let hint = elsewhere.unwrap_or_else(|| match nearest(key, &known) {
                    Some(n) => format!(": did you mean `{n}`?"),
                    None => format!(": known keys are {}", known.join(", ")),
                });
                return Err(Error::input(format!(
                    "{name}: at {section}.{key}: unknown key `{key}`{hint}"
                )));
            }
        }
        Ok(())
    }

    /// The settings of section `name` (one of [`SECTIONS`]).
    pub fn section(&self, name: &str) -> &Settings {
        match name {
            "physics" => &self.physics,
            "run" => &self.run,
            "outputs" => &self.outputs,
            _ => &self.viewer,
        }
    }

    /// The scene it describes.
    pub fn desc(&self) -> SceneDesc {
        SceneDesc {
            tank_min: Vec3::from(self.tank.min),
            tank_max: Vec3::from(self.tank.max),
            bodies: self.fluid.clone(),
            obstacles: self.obstacles.clone(),
            emitters: self.emitters.clone(),
            open: crate::scene::Side::mask(&self.tank.open),
            // Checked when the file was read.
            slip: self.tank.wall_slips("").unwrap_or_default(),
            planar: false,
        }
    }
}

/// A setting's value as the text its flag takes: numbers and strings as they are, booleans
/// as `true`/`false`, `[x, y, z]` as `x,y,z`. `None` for objects, nulls and nested arrays.
pub fn flag_text(v: &serde_json::Value) -> Option<String> {
    use serde_json::Value;
    match v {
        Value::Number(n) => Some(n.to_string()),
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Array(a) => a
            .iter()
            .map(|x| x.as_number().map(|n| n.to_string()))
            .collect::<Option<Vec<_>>>()
            .map(|v| v.join(",")),
        _ => None,
    }
}

/// The scene file of built-in scene `kind` with `n` particles at spacing `s` in `dim`
/// dimensions, as JSON text: what `scenes/*.json` hold (for N = 100 000, s = 0.01 m, 3D). In 2D
/// it is the scene `--dim 2 --scene NAME` runs ([`SceneDesc::builtin_planar`]: its bodies one
/// spacing thick about z = 0) with `"dim": 2` among its physics, so run as `--scene FILE` it
/// is a 2D run of the same particles.
pub fn builtin_file_text(kind: SceneKind, n: usize, s: f32, dim: u32) -> String {
    let d = match dim {
        2 => SceneDesc::builtin_planar(kind, n, s),
        _ => SceneDesc::builtin(kind, n, s),
    };
    let what = match kind {
        SceneKind::DamBreak => {
            "dam break (Martin & Moyce 1952): a water column a wide and 2a high against the left wall of a tank 5a long"
        }
        SceneKind::Cube => "a jittered cube of water on the floor in the middle of the tank",
        SceneKind::Random => "a random hard-sphere packing filling a box, relaxed to rest density",
        SceneKind::Drop => "a block of water falling into a pool",
    };
    #[derive(serde::Serialize)]
    struct Physics {
        spacing: f32,
        seed: u64,
        #[serde(skip_serializing_if = "is_3d")]
        dim: u32,
    }
    fn is_3d(dim: &u32) -> bool {
        *dim == 3
    }
    #[derive(serde::Serialize)]
    struct File<'a> {
        description: String,
        tank: Tank,
        fluid: &'a [Body],
        physics: Physics,
    }
    let file = File {
        description: format!(
            "Built-in scene {} at N = {n}, s = {s} m: {what}.",
            kind.name()
        ),
        tank: Tank {
            min: d.tank_min.to_array(),
            max: d.tank_max.to_array(),
            open: Vec::new(),
            slip_length: BTreeMap::new(),
        },
        fluid: &d.bodies,
        physics: Physics {
            spacing: s,
            seed: 0,
            dim,
        },
    };
    let text = serde_json::to_string_pretty(&file).unwrap_or_default();
    compact_number_arrays(&text) + "\n"
}

/// Puts each array of numbers on one line (`[0.0, 0.5, 1.0]`), as people write them.
fn compact_number_arrays(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('[') {
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let end = rest.find(']').unwrap_or(rest.len() - 1);
        let inner = &rest[1..end];
        if inner.contains(['{', '[', '"']) {
            out.push('[');
            rest = &rest[1..];
            continue;
        }
        let items: Vec<&str> = inner.split(',').map(str::trim).collect();
        out.push('[');
        out.push_str(&items.join(", "));
        out.push(']');
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scene::Scene;

    const N: usize = 100_000;
    const S: f32 = 0.01;

    #[test]
    fn builtin_scene_files_give_the_builtin_particles_bit_for_bit() {
        for kind in SceneKind::ALL {
            let file = SceneFile::parse(kind.file_text(), kind.name()).unwrap();
            let spacing = file.physics["spacing"].as_f64().unwrap() as f32;
            let seed = file.physics["seed"].as_u64().unwrap();
            let from_file = file.desc().build(kind.name(), spacing, seed).unwrap();
            let builtin = Scene::new(kind, N, S, 0);
            assert_eq!(from_file.positions.len(), N, "{kind:?}");
            let bits = |v: &[Vec3]| -> Vec<[u32; 3]> {
                v.iter().map(|p| p.to_array().map(f32::to_bits)).collect()
            };
            assert_eq!(
                bits(&from_file.positions),
                bits(&builtin.positions),
                "{kind:?}"
            );
            assert_eq!(
                bits(&from_file.velocities),
                bits(&builtin.velocities),
                "{kind:?}"
            );
            assert_eq!(from_file.tank_min, builtin.tank_min, "{kind:?}");
            assert_eq!(from_file.tank_max, builtin.tank_max, "{kind:?}");
            assert_eq!(
                from_file.fluid_size.to_array().map(f32::to_bits),
                builtin.fluid_size.to_array().map(f32::to_bits),
                "{kind:?}"
            );
        }
    }

    #[test]
    fn shipped_scene_files_are_what_the_generator_writes() {
        for kind in SceneKind::ALL {
            assert_eq!(
                kind.file_text(),
                builtin_file_text(kind, N, S, 3),
                "scenes/{}.json is stale: regenerate with `cargo test --lib -- --ignored write_builtin_scene_files`",
                kind.name()
            );
        }
    }

    /// Regenerates `scenes/*.json` from [`builtin_file_text`].
    #[test]
    #[ignore]
    fn write_builtin_scene_files() {
        for kind in SceneKind::ALL {
            let path = format!("{}/scenes/{}.json", env!("CARGO_MANIFEST_DIR"), kind.name());
            std::fs::write(path, builtin_file_text(kind, N, S, 3)).unwrap();
        }
    }

    fn err(text: &str) -> String {
        SceneFile::parse(text, "t.json")
            .and_then(|f| f.desc().build("t.json", S, 0))
            .unwrap_err()
            .to_string()
    }

    const TANK: &str = r#""tank": {"min": [0, 0, 0], "max": [1, 1, 1]}"#;

    /// A polygon fills as its section in 2D: a rectangle given as a polygon is the box's
    /// lattice point for point, a triangle holds its area in particles, and in 3D a polygon
    /// needs its z range (then it is the prism's lattice).
    #[test]
    fn polygons_fill_their_section_in_2d_and_their_prism_in_3d() {
        let s = 0.01;
        let planar = |shape: &str| {
            let text = format!(
                r#"{{"tank": {{"min": [0, 0, -0.5], "max": [1, 1, 0.5]}}, "fluid": [{{"shape": {shape}}}]}}"#
            );
            let desc = SceneFile::parse(&text, "t.json").unwrap().desc();
            desc.in_plane("t.json", s)
                .and_then(|d| d.build("t.json", s, 0))
        };
        let boxed = planar(r#"{"box": {"min": [0.1, 0, -0.1], "max": [0.3, 0.4, 0.1]}}"#).unwrap();
        let square =
            planar(r#"{"polygon": {"points": [[0.1, 0], [0.3, 0], [0.3, 0.4], [0.1, 0.4]]}}"#)
                .unwrap();
        assert_eq!(boxed.positions, square.positions);
        assert_eq!(square.positions.len(), 20 * 40);
        let triangle =
            planar(r#"{"polygon": {"points": [[0.1, 0], [0.5, 0], [0.1, 0.4]]}}"#).unwrap();
        // Area 0.08 m² at 1e-4 m² a particle: 800, the lattice points in or on it.
        let n = triangle.positions.len() as f64;
        assert!((n / 800.0 - 1.0).abs() < 0.05, "{n}");
        assert!(
            triangle
                .positions
                .iter()
                .all(|p| p.z == 0.0 && p.x + p.y <= 0.5 + 1e-6)
        );
        let e = planar(r#"{"polygon": {"points": [[0, 0], [0.1, 0.1], [0.2, 0.2]]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("enclose no area"), "{e}");
        let e = planar(r#"{"polygon": {"points": [[0, 0], [0.1, 0]]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("at least 3 points"), "{e}");
        let e = planar(r#"{"polygon": {"points": [[0, 0], [0.1, 0], [0, 0.1]], "z": [0.1, 0.2]}}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("does not cross the plane z = 0"), "{e}");
        let e = err(&format!(
            r#"{{{TANK}, "fluid": [{{"shape": {{"polygon": {{"points": [[0, 0], [0.1, 0], [0, 0.1]]}}}}}}]}}"#
        ));
        assert!(e.contains("is a 2D shape") && e.contains("--dim 2"), "{e}");
        let solid = |shape: &str| {
            let text = format!(r#"{{{TANK}, "fluid": [{{"shape": {shape}}}]}}"#);
            let file = SceneFile::parse(&text, "t.json").unwrap();
            file.desc().build("t.json", s, 0).unwrap()
        };
        let prism = solid(
            r#"{"polygon": {"points": [[0.1, 0], [0.3, 0], [0.3, 0.4], [0.1, 0.4]], "z": [0.2, 0.25]}}"#,
        );
        let cuboid = solid(r#"{"box": {"min": [0.1, 0, 0.2], "max": [0.3, 0.4, 0.25]}}"#);
        assert_eq!(prism.positions, cuboid.positions);
        let e = err(&format!(
            r#"{{{TANK}, "fluid": [{{"shape": {{"box": {{"min": [0, 0, 0], "max": [0.1, 0.1, 0.1]}}}}}}], "obstacles": [{{"shape": {{"polygon": {{"points": [[0.5, 0], [0.6, 0], [0.5, 0.1]], "z": [0, 1]}}}}}}]}}"#
        ));
        assert!(e.contains("not an obstacle"), "{e}");
    }

    #[test]
    fn unknown_keys_name_the_nearest_known_one_and_the_place() {
        let e = err(&format!(
            "{{{TANK}, \"fluid\": [{{\"shape\": {{\"box\": {{\"min\": [0,0,0], \"maz\": [1,1,1]}}}}}}]}}"
        ));
        assert!(e.contains("t.json: line 1 column"), "{e}");
        assert!(e.contains("fluid[0].shape.box"), "{e}");
        assert!(e.contains("did you mean `max`?"), "{e}");
        let e = err(&format!(
            "{{{TANK}, \"fluid\": [{{\"shape\": {{\"sphre\": {{}}}}}}]}}"
        ));
        assert!(
            e.contains("unknown kind `sphre`: did you mean `sphere`?"),
            "{e}"
        );
        // The sections' keys are the flags' groups (`app::cli::flags_in`); two stand in here.
        let keys = |section: &str| -> Vec<String> {
            match section {
                "physics" => vec!["gravity".into(), "spacing".into()],
                "run" => vec!["steps".into()],
                _ => Vec::new(),
            }
        };
        let key_err = |settings: &str| {
            let text = format!("{{{TANK}, \"fluid\": [], {settings}}}");
            let file = SceneFile::parse(&text, "t.json").unwrap();
            file.check_keys("t.json", keys).unwrap_err().to_string()
        };
        let e = key_err(r#""physics": {"gravty": -9}"#);
        assert!(
            e.contains("at physics.gravty") && e.contains("`gravity`"),
            "{e}"
        );
        let e = key_err(r#""physics": {"steps": 9}"#);
        assert!(e.contains("belongs in \"run\""), "{e}");
        let text = format!("{{{TANK}, \"fluid\": [], \"physics\": {{\"spacing\": 0.01}}}}");
        let file = SceneFile::parse(&text, "t.json").unwrap();
        assert!(file.check_keys("t.json", keys).is_ok());
        let e = err(&format!("{{{TANK}, \"fluid\": [], \"tnak\": 1}}"));
        assert!(e.contains("did you mean `tank`?"), "{e}");
    }

    #[test]
    fn valid_json_of_the_wrong_shape_is_not_called_a_syntax_error() {
        let e = err(&format!(
            "{{{TANK}, \"fluid\": [{{\"shape\": {{\"box\": {{\"min\": [0, 0, 0], \"max\": [1, 1, 1, 1]}}}}}}]}}"
        ));
        assert!(e.contains("more elements than it takes"), "{e}");
        assert!(e.contains("see docs/scenes.md for the schema"), "{e}");
        assert!(!e.contains("syntax"), "{e}");
    }

    #[test]
    fn malformed_json_names_line_and_column() {
        let e = err("{\n  \"tank\": {\"min\": [0, 0, 0],,\n}");
        assert!(e.starts_with("t.json: line 2 column"), "{e}");
        assert!(e.contains("fix the JSON syntax"), "{e}");
        let e = err("{\"tank\": ");
        assert!(e.contains("line 1"), "{e}");
        let e = err(&format!(
            "{{{TANK}, \"fluid\": [{{\"shape\": {{\"sphere\": {{\"centre\": [0.5,0.5,0.5], \"radius\": \"big\"}}}}}}]}}"
        ));
        assert!(e.contains("fluid[0].shape.sphere.radius"), "{e}");
    }

    #[test]
    fn bad_bodies_are_refused_with_a_fix() {
        let body = |shape: &str| err(&format!("{{{TANK}, \"fluid\": [{{\"shape\": {shape}}}]}}"));
        let e = body(r#"{"box": {"min": [0, 0, 0], "max": [2, 0.5, 0.5]}}"#);
        assert!(
            e.contains("fluid[0]") && e.contains("outside the tank"),
            "{e}"
        );
        let e = body(r#"{"box": {"min": [0.5, 0, 0], "max": [0.5, 0.5, 0.5]}}"#);
        assert!(e.contains("zero or negative size"), "{e}");
        let e = body(r#"{"sphere": {"centre": [0.5, 0.5, 0.5], "radius": -1}}"#);
        assert!(e.contains("radius > 0"), "{e}");
        let e = body(r#"{"sphere": {"centre": [0.5, 0.5, 0.5], "radius": 0.001}}"#);
        assert!(e.contains("holds no particle"), "{e}");
        let e = body(
            r#"{"cylinder": {"base": [0.5, 0, 0.5], "axis": "w", "radius": 0.1, "length": 0.5}}"#,
        );
        assert!(e.contains("axis"), "{e}");
        let e = body(
            r#"{"box": {"min": [0, 0, 0], "max": [0.1, 0.1, 0.1]}}, "fill": "random", "count": 5000"#,
        );
        assert!(e.contains("more than 1.2 per s³"), "{e}");
        let e = err(&format!("{{{TANK}, \"fluid\": []}}"));
        assert!(e.contains("no fluid bodies"), "{e}");
        let e = err(
            r#"{"tank": {"min": [0, 0, 0], "max": [100, 100, 100]}, "fluid": [{"shape": {"box": {"min": [0, 0, 0], "max": [100, 100, 100]}}}]}"#,
        );
        assert!(e.contains("more than 2^27"), "{e}");
    }

    #[test]
    fn shapes_fill_their_volume_at_the_spacing() {
        let s = 0.02;
        let text = format!(
            r#"{{{TANK}, "fluid": [
                {{"shape": {{"sphere": {{"centre": [0.5, 0.5, 0.5], "radius": 0.2}}}}, "velocity": [1, 0, 0]}},
                {{"shape": {{"cylinder": {{"base": [0.2, 0, 0.2], "axis": "y", "radius": 0.1, "length": 0.3}}}}}},
                {{"shape": {{"box": {{"min": [0.7, 0, 0.7], "max": [0.9, 0.2, 0.9]}}}}, "fill": "random"}}
            ]}}"#
        );
        let file = SceneFile::parse(&text, "t").unwrap();
        let (scene, counts) = file.desc().fill(s, 1);
        let sphere = 4.0 / 3.0 * std::f32::consts::PI * 0.2f32.powi(3) / s.powi(3);
        let cylinder = std::f32::consts::PI * 0.01 * 0.3 / s.powi(3);
        assert!(
            (counts[0] as f32 / sphere - 1.0).abs() < 0.05,
            "{counts:?} {sphere}"
        );
        assert!(
            (counts[1] as f32 / cylinder - 1.0).abs() < 0.08,
            "{counts:?} {cylinder}"
        );
        assert_eq!(counts[2], 1000);
        assert!(scene.velocities[..counts[0]].iter().all(|v| *v == Vec3::X));
        assert!(
            scene.velocities[counts[0]..]
                .iter()
                .all(|v| *v == Vec3::ZERO)
        );
        let shapes: Vec<_> = file.fluid.iter().map(|b| b.shape.clone()).collect();
        let mut start = 0;
        for (shape, &c) in shapes.iter().zip(&counts) {
            assert!(
                scene.positions[start..start + c]
                    .iter()
                    .all(|p| shape.contains(*p, s))
            );
            start += c;
        }
        assert!(
            (scene.fluid_size.y - 0.7).abs() < 1e-6,
            "{}",
            scene.fluid_size
        );
    }

    #[test]
    fn a_mesh_body_fills_the_inside_of_the_torus() {
        let text = r#"{"tank": {"min": [0, 0, 0], "max": [0.3, 0.2, 0.3]},
            "fluid": [{"shape": {"mesh": {"file": "meshes/torus.obj", "translation": [0.15, 0.05, 0.15]}}}]}"#;
        let mut file = SceneFile::parse(text, "t").unwrap();
        let dir = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scenes"));
        file.load_meshes(dir, "t").unwrap();
        let s = 0.005;
        let desc = file.desc();
        let scene = desc.build("t", s, 0).unwrap();
        assert_eq!(desc.count(s), scene.positions.len() as u64);
        let (big, small) = (0.08f32, 0.03f32);
        let volume = 2.0 * std::f32::consts::PI.powi(2) * big * small * small;
        let n = scene.positions.len() as f32;
        assert!(
            (n * s.powi(3) / volume - 1.0).abs() < 0.03,
            "{n} points, {volume} m³"
        );
        // Every point inside the torus, none in its hole; the 32 facets around the axis lie
        // up to R (1 − cos(π/32)) = 0.39 mm inside the true torus's inner side.
        for p in &scene.positions {
            let q = *p - Vec3::new(0.15, 0.05, 0.15);
            let ring = (q.x * q.x + q.z * q.z).sqrt() - big;
            assert!((ring * ring + q.y * q.y).sqrt() <= small + 0.0004, "{p}");
        }
    }

    #[test]
    fn scene_names_and_paths() {
        assert_eq!(
            SceneArg::parse("drop"),
            Ok(SceneArg::Builtin(SceneKind::Drop))
        );
        assert_eq!(
            SceneArg::parse("my.json"),
            Ok(SceneArg::File(PathBuf::from("my.json")))
        );
        assert_eq!(
            SceneArg::parse("dir/x"),
            Ok(SceneArg::File(PathBuf::from("dir/x")))
        );
        let e = SceneArg::parse("dam-brak").unwrap_err();
        assert!(e.contains("did you mean dam-break?"), "{e}");
    }
}
