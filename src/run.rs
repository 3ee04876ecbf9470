//! Headless stepping shared by the CPU and GPU paths: per-step statistics, blow-up checks,
//! frame export.

use std::io::Write;
use std::path::{Path, PathBuf};

use glam::Vec3;
use serde::Serialize;

use crate::cpu::Grid;
use crate::cpu::dfsph::{self, DensityAlpha, DfsphCarry};
use crate::cpu::reorder::Particles;
use crate::cpu::step::step_with;
use crate::gpu::fluid::{Simulation, Snapshot};
use crate::params::{DfsphParams, FluidParams, SimParams};
use crate::{Error, Result, io};

/// Something that advances particles one step at a time.
pub trait Backend {
    /// Advances one step.
    fn step(&mut self) -> Result<()>;
    /// The current state, densities and last dt.
    fn snapshot(&self) -> Result<Snapshot>;
}

impl Backend for Simulation {
    fn step(&mut self) -> Result<()> {
        Simulation::step(self, 1)
    }

    fn snapshot(&self) -> Result<Snapshot> {
        Simulation::snapshot(self)
    }
}

/// The DFSPH state of a CPU run.
struct CpuDfsph {
    dp: DfsphParams,
    carry: DfsphCarry,
    // The grid, slot-order state, ρ and α of the current state, which the last step computed.
    start: Option<(Grid, Particles, DensityAlpha)>,
}

/// The CPU reference as a [`Backend`].
pub struct CpuSimulation {
    /// Grid parameters.
    pub sp: SimParams,
    /// Fluid parameters.
    pub fp: FluidParams,
    /// The viewer's mouse force (WCSPH), applied while set.
    pub interaction: Option<crate::cpu::interact::InteractParams>,
    dfsph: Option<CpuDfsph>,
    snap: Snapshot,
}

impl CpuSimulation {
    /// Starts a WCSPH run from `state`.
    pub fn new(sp: SimParams, fp: FluidParams, state: Particles) -> Self {
        Self::with_solver(sp, fp, None, state)
    }

    /// Starts a WCSPH (`dfsph` = `None`) or DFSPH run from `state`.
    pub fn with_solver(
        sp: SimParams,
        fp: FluidParams,
        dfsph: Option<DfsphParams>,
        state: Particles,
    ) -> Self {
        let n = state.len();
        Self {
            sp,
            fp,
            interaction: None,
            dfsph: dfsph.map(|dp| CpuDfsph {
                carry: DfsphCarry::new(n, &dp),
                dp,
                start: None,
            }),
            snap: Snapshot {
                state,
                density: vec![0.0; n],
                dt: 0.0,
                dfsph: None,
            },
        }
    }

    /// Whether this run steps WCSPH (else DFSPH).
    pub fn is_wcsph(&self) -> bool {
        self.dfsph.is_none()
    }

    /// The state after the last step, without the copy [`Backend::snapshot`] makes.
    pub fn current(&self) -> &Snapshot {
        &self.snap
    }
}

impl Backend for CpuSimulation {
    fn step(&mut self) -> Result<()> {
        if let Some(d) = &mut self.dfsph {
            let tr = dfsph::dfsph_step(
                false,
                &self.snap.state,
                &d.carry,
                d.start.take(),
                &self.sp,
                &self.fp,
                &d.dp,
            );
            d.carry = tr.carry;
            // The GPU holds the new state in the new grid's slot order; so does this.
            self.snap = Snapshot {
                state: tr.next_sorted.clone(),
                density: tr.end.density.clone(),
                dt: tr.stats.dt,
                dfsph: Some(tr.stats),
            };
            d.start = Some((tr.next_grid, tr.next_sorted, tr.end));
            return Ok(());
        }
        let trace = step_with(
            &self.snap.state,
            &self.sp,
            &self.fp,
            self.interaction.as_ref(),
        );
        self.snap = Snapshot {
            state: trace.next,
            density: trace.fluid_density,
            dt: trace.timestep.dt,
            dfsph: None,
        };
        Ok(())
    }

    fn snapshot(&self) -> Result<Snapshot> {
        Ok(self.snap.clone())
    }
}

/// One row of `--stats`.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct StepStats {
    /// Step number (1 after the first step).
    pub step: u64,
    /// Simulated time, s.
    pub t: f64,
    /// dt of this step, s.
    pub dt: f64,
    /// Kinetic energy ½ m Σ|v|², J.
    pub kinetic: f64,
    /// Potential energy m |g| Σ (y − floor), J.
    pub potential: f64,
    /// Largest speed, m/s.
    pub max_speed: f64,
    /// Smallest density.
    pub density_min: f64,
    /// Mean density.
    pub density_mean: f64,
    /// Largest density.
    pub density_max: f64,
    /// Surge front: the largest x of the fluid, m.
    pub front: f64,
    /// Particles outside the tank (must be 0).
    pub outside: u64,
    /// DFSPH divergence-free solve iterations (0 for WCSPH).
    pub iterations_v: u32,
    /// DFSPH constant-density solve iterations (0 for WCSPH).
    pub iterations_d: u32,
    /// Final mean residual of the divergence-free solve.
    pub residual_v: f64,
    /// Final mean residual of the constant-density solve.
    pub residual_d: f64,
    /// Mean over particles of max(ρ/ρ0 − 1, 0) at the step's new positions.
    pub density_error_mean: f64,
    /// Its maximum.
    pub density_error_max: f64,
}

/// Statistics of a snapshot; fails with the step and quantity on a non-finite value or a
/// particle outside the tank.
pub fn stats(s: &Snapshot, fp: &FluidParams, step: u64, t: f64) -> Result<StepStats> {
    let lo = Vec3::from_slice(&fp.tank_min[..3]);
    let hi = Vec3::from_slice(&fp.tank_max[..3]);
    let g = (fp.gravity[1] as f64).abs();
    let m = fp.mass as f64;
    let mut st = StepStats {
        step,
        t,
        dt: s.dt as f64,
        kinetic: 0.0,
        potential: 0.0,
        max_speed: 0.0,
        density_min: f64::INFINITY,
        density_mean: 0.0,
        density_max: f64::NEG_INFINITY,
        front: f64::NEG_INFINITY,
        outside: 0,
        iterations_v: 0,
        iterations_d: 0,
        residual_v: 0.0,
        residual_d: 0.0,
        density_error_mean: 0.0,
        density_error_max: 0.0,
    };
    let rho0 = fp.rest_density as f64;
    let bad = |what: &str, k: usize| {
        Error::Unstable(format!(
            "step {step}: non-finite {what} at particle {} (t = {t:.6} s): the run blew up; reduce --dt or the speed of sound, or raise --viscosity",
            s.state.id[k]
        ))
    };
    for k in 0..s.state.len() {
        let (x, v, d) = (s.state.pos[k], s.state.vel[k], s.density[k]);
        if !x.is_finite() {
            return Err(bad("position", k));
        }
        if !v.is_finite() {
            return Err(bad("velocity", k));
        }
        if !d.is_finite() {
            return Err(bad("density", k));
        }
        if !(x.cmpge(lo).all() && x.cmple(hi).all()) {
            st.outside += 1;
        }
        let v2 = v.length_squared() as f64;
        st.kinetic += 0.5 * m * v2;
        st.potential += m * g * (x.y - lo.y) as f64;
        st.max_speed = st.max_speed.max(v2.sqrt());
        st.density_min = st.density_min.min(d as f64);
        st.density_max = st.density_max.max(d as f64);
        st.density_mean += d as f64;
        st.front = st.front.max(x.x as f64);
        let e = (d as f64 / rho0 - 1.0).max(0.0);
        st.density_error_mean += e;
        st.density_error_max = st.density_error_max.max(e);
    }
    st.density_mean /= s.state.len().max(1) as f64;
    st.density_error_mean /= s.state.len().max(1) as f64;
    // DFSPH reduces its density error on the device, in the CPU mirror's f32 tree.
    if let Some(d) = &s.dfsph {
        st.iterations_v = d.iterations_v;
        st.iterations_d = d.iterations_d;
        st.residual_v = d.residual_v as f64;
        st.residual_d = d.residual_d as f64;
        st.density_error_mean = d.error_mean as f64;
        st.density_error_max = d.error_max as f64;
    }
    if !s.dt.is_finite() {
        return Err(Error::Unstable(format!(
            "step {step}: non-finite time step"
        )));
    }
    if st.outside > 0 {
        return Err(Error::Unstable(format!(
            "step {step}: {} particles outside the tank (t = {t:.6} s)",
            st.outside
        )));
    }
    Ok(st)
}

/// The `--stats` CSV header, after comment lines recording the geometry.
pub fn stats_header(geometry: &str) -> String {
    format!(
        "# {geometry}\nstep,t,dt,kinetic,potential,max_speed,density_min,density_mean,density_max,front,outside,iterations_v,iterations_d,residual_v,residual_d,density_error_mean,density_error_max\n"
    )
}

impl StepStats {
    /// The row as a CSV line.
    pub fn csv_line(&self) -> String {
        format!(
            "{},{:.9},{:.6e},{:.9e},{:.9e},{:.6},{:.4},{:.4},{:.4},{:.6},{},{},{},{:.6e},{:.6e},{:.6e},{:.6e}\n",
            self.step,
            self.t,
            self.dt,
            self.kinetic,
            self.potential,
            self.max_speed,
            self.density_min,
            self.density_mean,
            self.density_max,
            self.front,
            self.outside,
            self.iterations_v,
            self.iterations_d,
            self.residual_v,
            self.residual_d,
            self.density_error_mean,
            self.density_error_max
        )
    }
}

/// Where and how often frames are written.
#[derive(Clone, Debug)]
pub struct Export {
    /// Directory of `frame_NNNNNN.ply` files.
    pub dir: PathBuf,
    /// Every how many steps.
    pub every: u64,
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

fn write_frame(out: &mut Outputs<'_>, k: u64, snap: &Snapshot) -> Result<()> {
    if let Some(ex) = out.export.filter(|ex| k % ex.every == 0) {
        write_snapshot(
            &ex.dir.join(format!("frame_{k:06}.ply")),
            snap,
            out.meta.as_ref(),
        )?;
    }
    if let Some(sf) = out.surfaces.as_deref_mut().filter(|sf| k % sf.every == 0) {
        sf.writer
            .submit(k, snap.state.to_input_order(&snap.state.pos))?;
    }
    Ok(())
}

/// Runs `steps` steps, checking every step; writes stats rows, frames and surfaces if asked.
/// Returns the final snapshot and the last statistics.
pub fn run(
    backend: &mut dyn Backend,
    fp: &FluidParams,
    steps: u64,
    mut out: Outputs<'_>,
    progress: &indicatif::ProgressBar,
) -> Result<(Snapshot, Option<StepStats>)> {
    let mut t = 0.0f64;
    let mut last = None;
    let mut snap = backend.snapshot()?;
    stats(&snap, fp, 0, 0.0)?;
    write_frame(&mut out, 0, &snap)?;
    for k in 1..=steps {
        backend.step()?;
        snap = backend.snapshot()?;
        t += snap.dt as f64;
        let st = stats(&snap, fp, k, t)?;
        if let Some(o) = out.stats.as_deref_mut() {
            o.write_all(st.csv_line().as_bytes())
                .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
        }
        write_frame(&mut out, k, &snap)?;
        last = Some(st);
        progress.inc(1);
    }
    // The last step's snapshot is the final state: no second readback.
    Ok((snap, last))
}
