//! What a headless run writes besides its result: particle frames, surfaces, checkpoints.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::gpu::fluid::Snapshot;
use crate::{Result, io};

/// Where, how often and how frames are written.
#[derive(Debug)]
pub struct Export {
    /// Directory of `frame_NNNNNN.<ext>` files.
    pub dir: PathBuf,
    /// Every how many steps.
    pub every: u64,
    /// The file format.
    pub format: crate::series::ExportFormat,
    /// `.vtu` frames: the `frames.pvd` collection with their times.
    pub collection: Option<crate::surface::Shared>,
}

/// Surface meshes written during a run.
pub struct Surfaces {
    /// The reconstruction thread.
    pub writer: crate::surface::SurfaceWriter,
    /// Every how many steps.
    pub every: u64,
}

/// What a run writes besides its result.
#[derive(Default)]
pub struct Outputs<'a> {
    /// One statistics row per step.
    pub stats: Option<&'a mut dyn Write>,
    /// Particle frames.
    pub export: Option<&'a Export>,
    /// Surface meshes.
    pub surfaces: Option<&'a mut Surfaces>,
    /// The run's description, written into every frame's PLY header.
    pub meta: Option<crate::surface::FrameMeta>,
    /// Checkpoints.
    pub checkpoints: Option<Checkpointing<'a>>,
}

/// Writes a snapshot in input order, with `meta` in a PLY header.
pub fn write_snapshot(
    path: &Path,
    s: &Snapshot,
    meta: Option<&crate::surface::FrameMeta>,
) -> Result<()> {
    let pos = s.state.to_input_order(&s.state.pos);
    let vel = s.state.to_input_order(&s.state.vel);
    let density = s.state.to_input_order(&s.density);
    let comments = meta.map(|m| m.comments()).unwrap_or_default();
    io::write_particles_with(path, &pos, &vel, &density, &comments)
}

impl Outputs<'_> {
    /// Whether step k writes a frame or a surface.
    pub(super) fn wants_frame(&self, k: u64) -> bool {
        self.export.is_some_and(|ex| k % ex.every == 0)
            || self.surfaces.as_ref().is_some_and(|sf| k % sf.every == 0)
    }
}

/// Writes `snap` in input order to `path` as `format`: PLY (with `meta` in its header), or VTU
/// and partio BGEO with position, velocity, density, pressure and id.
pub fn write_particles(
    path: &Path,
    format: crate::series::ExportFormat,
    snap: &Snapshot,
    fp: &crate::params::FluidParams,
    meta: Option<&crate::surface::FrameMeta>,
) -> Result<()> {
    use crate::series::{ExportFormat, Frame, write_bgeo, write_vtu};
    if format == ExportFormat::Ply {
        return write_snapshot(path, snap, meta);
    }
    let order = |v: &[f32]| snap.state.to_input_order(v);
    // The equation of state's pressure of each density (WCSPH's own pressure; for DFSPH, which
    // solves for no pressure field, a measure of its density error).
    let pressure = crate::solver::dfsph::tait_pressures(&snap.density, fp);
    let frame = Frame {
        pos: &snap.state.to_input_order(&snap.state.pos),
        vel: &snap.state.to_input_order(&snap.state.vel),
        density: &order(&snap.density),
        pressure: &order(&pressure),
        id: &snap.state.to_input_order(&snap.state.id),
    };
    if format == ExportFormat::Vtu {
        write_vtu(path, &frame)
    } else {
        write_bgeo(path, &frame)
    }
}

/// Writes what step `k` (at simulated time `t`) owes: a particle frame, a surface.
pub(super) fn write_frame(
    out: &mut Outputs<'_>,
    k: u64,
    t: f64,
    snap: &Snapshot,
    fp: &crate::params::FluidParams,
) -> Result<()> {
    if let Some(ex) = out.export.filter(|ex| k % ex.every == 0) {
        let name = format!("frame_{k:06}.{}", ex.format.extension());
        write_particles(&ex.dir.join(&name), ex.format, snap, fp, out.meta.as_ref())?;
        if let Some(c) = &ex.collection {
            c.lock()
                .unwrap_or_else(|e| e.into_inner())
                .add(t, crate::series::PARTICLES, &name)?;
        }
    }
    if let Some(sf) = out.surfaces.as_deref_mut().filter(|sf| k % sf.every == 0) {
        sf.writer
            .submit(k, t, snap.state.to_input_order(&snap.state.pos))?;
    }
    Ok(())
}

/// Checkpoints written during a run: every `every` steps (0: never on a schedule) and when
/// `stop` holds a signal number (SIGINT, SIGTERM), after which the run ends.
pub struct Checkpointing<'a> {
    /// The directory the files go to.
    pub dir: PathBuf,
    /// Every how many steps (counted from the run's first step, resumed or not).
    pub every: u64,
    /// What every checkpoint shares: the run's description and parameters.
    pub template: &'a crate::checkpoint::Template,
    /// Set to a signal's number by its handler.
    pub stop: Option<&'a std::sync::atomic::AtomicUsize>,
    /// The flags that continue the run from a checkpoint of step k, after `--resume FILE`
    /// (`--steps` still to run or `--end-time`, the outputs to go on with), for the line a
    /// signal's checkpoint prints.
    pub resume_flags: &'a dyn Fn(u64) -> String,
}

impl Checkpointing<'_> {
    pub(super) fn stop_signal(&self) -> Option<usize> {
        self.stop
            .map(|s| s.load(std::sync::atomic::Ordering::SeqCst))
            .filter(|&s| s != 0)
    }
}
