//! Checkpoints: the whole state of a run in one file, so a run that is interrupted (Ctrl-C, a
//! killed job, a crash at hour three) continues where it stopped, bit for bit.
//!
//! A checkpoint holds the particles (positions, velocities and densities in original order,
//! plus the order the solver holds them in, which fixes every sum's order), the step, the
//! simulated time, the last dt, DFSPH's carried state (the previous dt and the solves' recent
//! iteration counts), the energy the divergence check compares with, and the configuration and scene the
//! run was started with. Resuming from it and stepping K more steps gives the same bits as
//! never having stopped.
//!
//! Layout (little-endian): the magic `GPUSPHCK`, the format version (u32), the header's length
//! (u32) and the header (JSON: program version, solver, step, time, configuration, scene);
//! then sections, each a u64 byte length and its bytes: the grid parameters, the fluid
//! parameters, the DFSPH parameters (empty for WCSPH), positions, velocities, densities
//! (original order), the current order (ids); last a CRC-32
//! of everything before it. Every length is
//! checked against N before anything of that size is allocated, so a corrupt or truncated file
//! is refused in one line, never read as garbage.
//!
//! Files are written atomically (a temporary file in the same directory, flushed to disk, then
//! renamed over the final name, and the directory synced), and only the last two are kept.

use std::io::Write;
use std::path::{Path, PathBuf};

use glam::Vec3;
use serde::{Deserialize, Serialize};

use crate::core::Snapshot;
use crate::core::SolverStats;
use crate::core::{Particles, RunFrom};
use crate::params::{DfsphParams, FluidParams, PhysicsConfig, SimParams, SphConfig};
use crate::solver::Carry;
use crate::solver::{Solver, SolverParams};
use crate::{Error, Result};

/// The format version; a file of another is refused. 2: `DfsphParams::relaxation` took a
/// padding word, which a format-1 file holds as 0 (a solve that would apply no stiffness).
/// 3: DFSPH's kernel became Wendland C2, whose constants take the cubic spline's words.
/// 4: DFSPH's solves start from no stiffness (the coarse levels took the warm start's
/// place), so the warm-start section is gone. 5: the kernel's id and constants moved from
/// `DfsphParams` to `SimParams`. 6: WCSPH runs on the shared stages: its file carries their
/// parameter block (`DfsphParams::state_equation` = 1, a padding word before) and previous dt.
/// 7: the header holds the solver's carried state as the solver writes it (`solver_state`) and
/// its statistics block as `solver_stats`, in place of DFSPH's `dt_prev`, `iteration_budget`
/// and `dfsph_stats`.
pub const FORMAT: u32 = 7;
/// The file name extension.
pub const EXTENSION: &str = "gpusph";
const MAGIC: &[u8; 8] = b"GPUSPHCK";
/// Checkpoints kept in a directory (the newest).
pub const KEEP: usize = 2;

/// What a checkpoint says about its run, besides the arrays.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The gpu-sph version that wrote it (another version is refused: the bits would differ).
    pub program: String,
    /// The solver.
    pub solver: Solver,
    /// Steps taken so far.
    pub step: u64,
    /// Simulated time, s.
    pub t: f64,
    /// N.
    pub n: u32,
    /// dt of the last step, s.
    pub dt: f32,
    /// The energy the divergence check compares with (after the first step).
    pub start_energy: Option<f64>,
    /// The work moving obstacles have done on the fluid so far, J (the energy check credits it).
    #[serde(default)]
    pub obstacle_work: f64,
    /// The solver's statistics block of the last step ([`SolverStats::to_words`]).
    pub solver_stats: Option<[u32; 8]>,
    /// What the solver carries to the next step, in its own terms ([`Carry`]; DFSPH's and
    /// WCSPH's: the last dt and the solves' iteration budget).
    pub solver_state: Carry,
    /// The run's configuration.
    pub config: SphConfig,
    /// The physics the run was started with.
    pub physics: PhysicsConfig,
    /// Where the particles came from (scene and seed, or the input file).
    pub source: String,
    /// The run's geometry and physics line.
    pub geometry: String,
    /// The tank's lower and upper corner and the initial fluid body's size, m.
    pub tank: [[f32; 3]; 3],
    /// The scene's obstacles (their boundary particles are sampled anew on resume, the same
    /// bits: the sampling and ψ are deterministic).
    #[serde(default)]
    pub obstacles: Vec<crate::obstacle::Obstacle>,
    /// The scene's emitters (which layers a state holds follows from its time).
    #[serde(default)]
    pub emitters: Vec<crate::emitter::Emitter>,
    /// The energy emitted particles brought in so far, J (the energy check's reference
    /// includes it).
    #[serde(default)]
    pub emitted_energy: f64,
    /// The energy particles that left through open sides took away so far, J.
    #[serde(default)]
    pub removed_energy: f64,
}

/// A whole run's state.
#[derive(Clone, Debug)]
pub struct Checkpoint {
    /// The run's description and scalars.
    pub header: Header,
    /// Grid parameters.
    pub sim_params: SimParams,
    /// Fluid parameters.
    pub fluid_params: FluidParams,
    /// The solver and its parameters.
    pub solver: SolverParams,
    /// The state, densities and last dt, in the order the solver holds them.
    pub snapshot: Snapshot,
    /// What the solver carries to the next step.
    pub carry: Carry,
}

fn section(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    out.extend_from_slice(bytes);
}

/// Reads the parts of a checkpoint in order, every length checked before it is used.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    path: &'a Path,
}

impl<'a> Reader<'a> {
    fn corrupt(&self, what: &str) -> Error {
        Error::file(
            self.path,
            format!("corrupt or truncated checkpoint ({what}): resume from the one before it"),
        )
    }

    fn take(&mut self, len: usize, what: &str) -> Result<&'a [u8]> {
        let end = self
            .at
            .checked_add(len)
            .filter(|&e| e <= self.bytes.len())
            .ok_or_else(|| self.corrupt(what))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn u32(&mut self, what: &str) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4, what)?.try_into().unwrap()))
    }

    /// A section that must hold exactly `expect` bytes (one of `expect`).
    fn section(&mut self, what: &str, expect: &[usize]) -> Result<&'a [u8]> {
        let len = u64::from_le_bytes(self.take(8, what)?.try_into().unwrap());
        match usize::try_from(len) {
            Ok(len) if expect.contains(&len) => self.take(len, what),
            _ => Err(self.corrupt(what)),
        }
    }
}

fn vec3s(bytes: &[u8]) -> Vec<Vec3> {
    bytes
        .chunks_exact(12)
        .map(|c| {
            let f: [f32; 3] = bytemuck::pod_read_unaligned(c);
            Vec3::from(f)
        })
        .collect()
}

fn pods<T: bytemuck::Pod>(bytes: &[u8]) -> Vec<T> {
    bytes
        .chunks_exact(std::mem::size_of::<T>())
        .map(bytemuck::pod_read_unaligned)
        .collect()
}

/// What every checkpoint of a run shares: its header (step, time and the other per-step
/// fields are filled in by [`Template::at`]) and parameters.
#[derive(Clone, Debug)]
pub struct Template {
    /// The run's header.
    pub header: Header,
    /// Grid parameters.
    pub sim_params: SimParams,
    /// Fluid parameters.
    pub fluid_params: FluidParams,
    /// The solver and its parameters.
    pub solver: SolverParams,
}

impl Template {
    /// The checkpoint of the state `snapshot` (and `carry`) reached at `at`.
    pub fn at(&self, snapshot: Snapshot, carry: Carry, at: &RunFrom) -> Checkpoint {
        Checkpoint {
            header: Header {
                step: at.step,
                t: at.t,
                n: snapshot.state.len() as u32,
                dt: snapshot.dt,
                start_energy: at.start_energy,
                obstacle_work: at.obstacle_work,
                emitted_energy: at.emitted_energy,
                removed_energy: at.removed_energy,
                solver_stats: snapshot.solver.as_ref().map(SolverStats::to_words),
                solver_state: carry.clone(),
                ..self.header.clone()
            },
            sim_params: self.sim_params,
            fluid_params: self.fluid_params,
            solver: self.solver,
            snapshot,
            carry,
        }
    }
}

impl Checkpoint {
    /// Where the run continues: step, time and the divergence checks' state.
    pub fn run_from(&self) -> RunFrom {
        RunFrom {
            step: self.header.step,
            t: self.header.t,
            start_energy: self.header.start_energy,
            obstacle_work: self.header.obstacle_work,
            emitted_energy: self.header.emitted_energy,
            removed_energy: self.header.removed_energy,
        }
    }

    /// The file's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = serde_json::to_vec(&self.header).expect("a header always serialises");
        let st = &self.snapshot.state;
        let flat = |v: Vec<Vec3>| -> Vec<f32> { v.iter().flat_map(|p| p.to_array()).collect() };
        let mut out = Vec::with_capacity(64 + header.len() + st.len() * 48);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT.to_le_bytes());
        out.extend_from_slice(&(header.len() as u32).to_le_bytes());
        out.extend_from_slice(&header);
        section(&mut out, bytemuck::bytes_of(&self.sim_params));
        section(&mut out, bytemuck::bytes_of(&self.fluid_params));
        section(&mut out, bytemuck::bytes_of(self.solver.stages()));
        section(
            &mut out,
            bytemuck::cast_slice(&flat(st.to_input_order(&st.pos))),
        );
        section(
            &mut out,
            bytemuck::cast_slice(&flat(st.to_input_order(&st.vel))),
        );
        section(
            &mut out,
            bytemuck::cast_slice(&st.to_input_order(&self.snapshot.density)),
        );
        section(&mut out, bytemuck::cast_slice(&st.id));
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parses a checkpoint file's bytes; `path` names it in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self> {
        if bytes.len() < 8 || &bytes[..8] != MAGIC {
            return Err(Error::file(
                path,
                "not a gpu-sph checkpoint (no GPUSPHCK magic): pass a file from --checkpoint-dir",
            ));
        }
        let mut r = Reader { bytes, at: 8, path };
        let format = r.u32("format version")?;
        if format != FORMAT {
            return Err(Error::file(
                path,
                format!(
                    "checkpoint format {format}, this gpu-sph reads format {FORMAT}: resume it with the version that wrote it"
                ),
            ));
        }
        if bytes.len() < 4 + r.at {
            return Err(r.corrupt("no checksum"));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32fast::hash(body) != u32::from_le_bytes(crc.try_into().unwrap()) {
            return Err(r.corrupt("checksum mismatch"));
        }
        r.bytes = body;
        let header_len = r.u32("header length")? as usize;
        let header: Header = serde_json::from_slice(r.take(header_len, "header")?)
            .map_err(|e| r.corrupt(&format!("header: {e}")))?;
        let program = env!("CARGO_PKG_VERSION");
        if header.program != program {
            return Err(Error::file(
                path,
                format!(
                    "checkpoint written by gpu-sph {}, this is {program}: resume it with the version that wrote it",
                    header.program
                ),
            ));
        }
        let n = header.n as usize;
        let sim_params =
            bytemuck::pod_read_unaligned(r.section("grid parameters", &[size_of::<SimParams>()])?);
        let fluid_params = bytemuck::pod_read_unaligned(
            r.section("fluid parameters", &[size_of::<FluidParams>()])?,
        );
        let dp = r.section("stage parameters", &[size_of::<DfsphParams>()])?;
        let solver = SolverParams::with_stages(header.solver, bytemuck::pod_read_unaligned(dp));
        let pos = vec3s(r.section("positions", &[n * 12])?);
        let vel = vec3s(r.section("velocities", &[n * 12])?);
        let density: Vec<f32> = pods(r.section("densities", &[n * 4])?);
        let order: Vec<u32> = pods(r.section("order", &[n * 4])?);
        if r.at != body.len() {
            return Err(r.corrupt("trailing bytes"));
        }
        let mut seen = vec![false; n];
        for &id in &order {
            match seen.get_mut(id as usize) {
                Some(s) if !*s => *s = true,
                _ => return Err(r.corrupt("the order is not a permutation")),
            }
        }
        let state = Particles {
            pos: order.iter().map(|&i| pos[i as usize]).collect(),
            vel: order.iter().map(|&i| vel[i as usize]).collect(),
            id: order.clone(),
        };
        let density = order.iter().map(|&i| density[i as usize]).collect();
        let carry = header.solver_state.clone();
        crate::solver::check_carry(&solver, &carry).map_err(|why| r.corrupt(&why))?;
        consistent(&header, &sim_params, &fluid_params).map_err(|why| r.corrupt(why))?;
        Ok(Self {
            snapshot: Snapshot {
                state,
                density,
                dt: header.dt,
                solver: header.solver_stats.map(|w| SolverStats::from_words(&w)),
            },
            header,
            sim_params,
            fluid_params,
            solver,
            carry,
        })
    }

    /// Reads and checks a checkpoint file.
    pub fn read(path: &Path) -> Result<Self> {
        let bytes =
            std::fs::read(path).map_err(|e| Error::file(path, format!("cannot read: {e}")))?;
        Self::from_bytes(&bytes, path)
    }

    /// Writes this checkpoint to `path` atomically (a file beside it, then renamed), creating
    /// its directory if missing.
    pub fn write_to(&self, path: &Path) -> Result<()> {
        let io = |what: &str, e: std::io::Error| Error::file(path, format!("{what}: {e}"));
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir)
            .map_err(|e| io("cannot create the checkpoint directory", e))?;
        let name = path.file_name().map_or_else(
            || Self::file_name(self.header.step),
            |n| n.to_string_lossy().into_owned(),
        );
        let tmp = dir.join(format!(".{name}.tmp"));
        {
            let mut f =
                std::fs::File::create(&tmp).map_err(|e| io("cannot write a checkpoint", e))?;
            f.write_all(&self.to_bytes())
                .and_then(|_| f.sync_all())
                .map_err(|e| io("cannot write a checkpoint", e))?;
        }
        std::fs::rename(&tmp, path).map_err(|e| io("cannot rename a checkpoint", e))?;
        // The rename itself is durable only once the directory is synced (POSIX); elsewhere
        // opening a directory fails and the rename is as durable as the platform makes it.
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    /// The file name of the checkpoint after `step` steps.
    pub fn file_name(step: u64) -> String {
        format!("checkpoint_{step:09}.{EXTENSION}")
    }

    /// Writes this checkpoint into `dir` atomically and removes all but the newest [`KEEP`];
    /// returns its path.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let io = |what: &str, e: std::io::Error| Error::file(dir, format!("{what}: {e}"));
        std::fs::create_dir_all(dir)
            .map_err(|e| io("cannot create the checkpoint directory", e))?;
        let path = dir.join(Self::file_name(self.header.step));
        self.write_to(&path)?;
        let mut old = checkpoints_in(dir);
        old.retain(|p| p != &path);
        let excess = (old.len() + 1).saturating_sub(KEEP);
        for p in old.into_iter().take(excess) {
            std::fs::remove_file(&p).map_err(|e| io("cannot remove an old checkpoint", e))?;
        }
        Ok(path)
    }
}

/// Whether a checkpoint's header and parameter blocks agree with each other, as a file this
/// program wrote does: a block that passed the checksum can still have been written by hand
/// (and an empty state, a grid that is not the configuration's or a step count near 2^64 would
/// only fail later, deep in a run). Returns what is wrong.
fn consistent(
    header: &Header,
    sp: &SimParams,
    fp: &FluidParams,
) -> std::result::Result<(), &'static str> {
    if header.n == 0 || header.n > header.config.particles {
        return Err("its particle count is 0 or above the configuration's capacity");
    }
    if header.step > 1 << 53 || !(0.0..1e12).contains(&header.t) {
        return Err("its step or time is out of range");
    }
    let want = header.config.sim_params();
    let geometry = |p: &SimParams| {
        (
            p.table_size,
            p.table_mask,
            p.h.to_bits(),
            p.inv_h.to_bits(),
            p.h2.to_bits(),
            p.inv_h2.to_bits(),
            p.density_scale.to_bits(),
            p.kernel,
            p.kernel_a.map(f32::to_bits),
            p.kernel_b.map(f32::to_bits),
        )
    };
    if geometry(sp) != geometry(&want) || sp.n != want.n {
        return Err("its grid parameters are not its configuration's");
    }
    let floats = bytemuck::cast_slice::<FluidParams, f32>(std::slice::from_ref(fp));
    // The last word is `open`, a bit mask.
    if floats[..floats.len() - 1].iter().any(|x| !x.is_finite())
        || !(fp.rest_density > 0.0 && fp.mass > 0.0)
    {
        return Err("its fluid parameters are not finite or not positive");
    }
    Ok(())
}

/// The checkpoint files in `dir`, oldest (fewest steps) first.
pub fn checkpoints_in(dir: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("checkpoint_") && n.ends_with(EXTENSION))
        })
        .collect();
    // Zero-padded step numbers sort as names.
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ConfigOverrides, PhysicsConfig};
    use crate::solver::dfsph::{DfsphCarry, IterationBudget, Outcome};

    fn sample(dfsph: bool) -> Checkpoint {
        let config = SphConfig::new(3, ConfigOverrides::default()).unwrap();
        let physics = PhysicsConfig::default();
        let fp = physics
            .fluid_params(&config, Vec3::ZERO, Vec3::ONE, 0.5)
            .unwrap();
        let state = Particles {
            pos: vec![Vec3::new(0.1, 0.2, 0.3), Vec3::splat(0.5), Vec3::splat(0.7)],
            vel: vec![Vec3::X, Vec3::Y, Vec3::Z],
            id: vec![2, 0, 1],
        };
        let outcome = |encoded, iterations| Outcome {
            encoded,
            iterations,
        };
        let mut budget = IterationBudget::default();
        budget.push([outcome(100, 2), outcome(100, 4)]);
        budget.push([outcome(3, 1), outcome(6, 6)]);
        let carry = DfsphCarry {
            dt_prev: 2e-3,
            budget,
        };
        Checkpoint {
            header: Header {
                program: env!("CARGO_PKG_VERSION").into(),
                solver: if dfsph { Solver::Dfsph } else { Solver::Wcsph },
                step: 7,
                t: 0.1 + 0.2,
                n: 3,
                dt: 1e-4,
                start_energy: Some(1.0 / 3.0),
                obstacle_work: 0.25,
                solver_stats: None,
                solver_state: carry.to_carry(),
                config,
                physics,
                source: "test".into(),
                geometry: "line".into(),
                tank: [[0.0; 3], [1.0; 3], [0.5; 3]],
                obstacles: Vec::new(),
                emitters: Vec::new(),
                emitted_energy: 0.0,
                removed_energy: 0.0,
            },
            sim_params: config.sim_params(),
            fluid_params: fp,
            solver: SolverParams::of_stages(DfsphParams {
                state_equation: u32::from(!dfsph),
                ..bytemuck::Zeroable::zeroed()
            }),
            snapshot: Snapshot {
                state,
                density: vec![1000.0, 1001.0, 999.0],
                dt: 1e-4,
                solver: None,
            },
            carry: carry.to_carry(),
        }
    }

    #[test]
    fn a_checkpoint_round_trips_exactly() {
        for dfsph in [false, true] {
            let c = sample(dfsph);
            let back = Checkpoint::from_bytes(&c.to_bytes(), Path::new("x")).unwrap();
            assert_eq!(back.header, c.header);
            assert_eq!(back.snapshot.state, c.snapshot.state);
            assert_eq!(back.snapshot.density, c.snapshot.density);
            assert_eq!(back.sim_params, c.sim_params);
            assert_eq!(back.fluid_params, c.fluid_params);
            assert_eq!(back.carry, c.carry);
        }
    }

    #[test]
    fn every_truncation_and_every_flipped_byte_is_refused() {
        let bytes = sample(true).to_bytes();
        for len in 0..bytes.len() {
            let e = Checkpoint::from_bytes(&bytes[..len], Path::new("x")).unwrap_err();
            assert!(matches!(e, Error::File { .. }), "{len}: {e}");
        }
        for k in 0..bytes.len() {
            let mut b = bytes.clone();
            b[k] ^= 0x10;
            let e = Checkpoint::from_bytes(&b, Path::new("x")).unwrap_err();
            assert!(e.to_string().lines().count() == 1, "{k}: {e}");
        }
    }

    #[test]
    fn another_format_or_program_version_is_refused() {
        let mut bytes = sample(false).to_bytes();
        bytes[8] = 9;
        let e = Checkpoint::from_bytes(&bytes, Path::new("x")).unwrap_err();
        assert!(e.to_string().contains("format 9"), "{e}");
        let mut c = sample(false);
        c.header.program = "0.0.1".into();
        let e = Checkpoint::from_bytes(&c.to_bytes(), Path::new("x")).unwrap_err();
        assert!(e.to_string().contains("gpu-sph 0.0.1"), "{e}");
    }

    #[test]
    fn blocks_that_disagree_are_refused_though_their_checksum_holds() {
        let refused = |c: Checkpoint, what: &str| {
            let e = Checkpoint::from_bytes(&c.to_bytes(), Path::new("x")).unwrap_err();
            assert!(e.to_string().contains(what), "{e}");
            assert_eq!(e.to_string().lines().count(), 1);
        };
        let mut c = sample(false);
        c.header.step = u64::MAX;
        refused(c, "step or time");
        let mut c = sample(false);
        c.sim_params = bytemuck::Zeroable::zeroed();
        refused(c, "grid parameters");
        let mut c = sample(false);
        c.fluid_params.mass = f32::NAN;
        refused(c, "fluid parameters");
        let mut c = sample(false);
        c.header.n = 0;
        c.snapshot.state = Particles::default();
        c.snapshot.density.clear();
        refused(c, "particle count");
        let mut c = sample(false);
        c.header.solver = Solver::Dfsph;
        refused(c, "the other solver's");
    }

    #[test]
    fn only_the_last_two_are_kept() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("checkpoints");
        let mut c = sample(false);
        for step in [10, 20, 30] {
            c.header.step = step;
            c.write(&dir).unwrap();
        }
        let names: Vec<String> = checkpoints_in(&dir)
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [Checkpoint::file_name(20), Checkpoint::file_name(30)]
        );
        let back = Checkpoint::read(&dir.join(Checkpoint::file_name(30))).unwrap();
        assert_eq!(back.header.step, 30);
    }
}
