//! Stage-by-stage comparison of the GPU pipeline against the CPU reference.
//!
//! Each GPU stage is fed the CPU's inputs and its outputs are compared with the CPU mirror's,
//! so a failure names the stage that diverged. Then the whole GPU pipeline runs from positions
//! alone and its final outputs are compared too, and run a second time to check that its
//! densities are bitwise reproducible.
//!
//! Integer stages must match exactly (the atomic ranks as a permutation of each slot's
//! `0..count`); densities within a relative tolerance; a NaN never passes.

use glam::Vec3;

use crate::Result;
use crate::core::Particles;
use crate::core::StatsBlock;
use crate::cpu;
use crate::gpu::GpuNeighbours;
use crate::grid::{self, Grid};
use crate::params::SimParams;

pub mod compare;
pub use compare::*;

/// Runs every comparison. `tol` is the relative density tolerance.
pub fn verify(
    gpu: &GpuNeighbours,
    positions: &[Vec3],
    params: &SimParams,
    tol: f64,
) -> Result<Report> {
    crate::gpu::context::finish(verify_async(gpu, positions, params, tol), "verify_async")
}

/// [`verify`], awaited (a web page's form).
pub async fn verify_async(
    gpu: &GpuNeighbours,
    positions: &[Vec3],
    params: &SimParams,
    tol: f64,
) -> Result<Report> {
    let n = positions.len();
    let t = params.table_size as usize;
    let grid = Grid::build(positions, params);
    let largest = grid.counts.iter().copied().max().unwrap_or(0);
    let group_size = gpu.bufs.group_size;
    crate::grid::gpu::check_loop_budget(&gpu.ctx.info, n as u32, largest, group_size)?;
    let state = Particles::new(positions.to_vec(), vec![Vec3::ZERO; n]);
    let sorted = grid::reorder::reorder(&state, &grid.sorted_ids);
    let sorted_density = cpu::density::density(&sorted.pos, &grid.slot_start, params).density;
    let cpu_density = sorted.to_input_order(&sorted_density);
    let b = &gpu.bufs;
    let mut rows = Vec::new();

    // hash: from positions.
    gpu.upload(&state);
    gpu.run(|g, e| {
        g.encode_clear(e);
        g.encode_hash(e);
    })?;
    let slots = gpu.read_u32_async(&b.particle_slot, n).await?;
    let ranks = gpu.read_u32_async(&b.particle_rank, n).await?;
    let counts = gpu.read_u32_async(&b.slot_start, t).await?;
    rows.push(compare_exact("hash.slot", &slots, &grid.slots));
    rows.push(compare_exact("hash.count", &counts, &grid.counts));
    rows.push(compare_ranks("hash.rank", &slots, &ranks, &grid.slot_start));

    // scan: from the CPU's counts.
    gpu.write_u32(&b.slot_start, &grid.counts);
    gpu.run(|g, e| g.encode_scan(e))?;
    let got = gpu.read_u32_async(&b.slot_start, t + 1).await?;
    rows.push(compare_exact("scan.slot_start", &got, &grid.slot_start));

    // scatter: from the CPU's slots, stable ranks and slot starts, so the result is exact.
    gpu.write_u32(&b.particle_slot, &grid.slots);
    gpu.write_u32(&b.particle_rank, &grid.ranks);
    gpu.write_u32(&b.slot_start, &grid.slot_start);
    gpu.run(|g, e| g.encode_scatter(e))?;
    let got = gpu.read_u32_async(&b.unordered_ids, n).await?;
    rows.push(compare_exact("scatter.ids", &got, &grid.sorted_ids));

    // order: from ids scrambled within each slot.
    let scrambled = reverse_within_slots(&grid.sorted_ids, &grid.slot_start);
    gpu.write_u32(&b.unordered_ids, &scrambled);
    gpu.run(|g, e| g.encode_order(e))?;
    let got = gpu.read_u32_async(&b.sorted_ids, n).await?;
    rows.push(compare_exact("order.sorted_ids", &got, &grid.sorted_ids));
    // The group list comes in any order: compare it sorted.
    let count = gpu.read_u32_async(&b.group_args, 4).await?[3] as usize;
    let raw = match count.min(n) {
        0 => Vec::new(),
        k => gpu.read_u32_async(&b.group_range, 2 * k).await?,
    };
    let mut got: Vec<[u32; 2]> = raw.chunks(2).map(|c| [c[0], c[1]]).collect();
    got.sort_unstable();
    let want = grid::order::groups(&grid.slot_start, group_size);
    rows.push(compare_exact("order.groups", &got.concat(), &want.concat()));

    // reorder: from the CPU's sorted ids.
    gpu.write_u32(&b.sorted_ids, &grid.sorted_ids);
    gpu.run(|g, e| g.encode_reorder(e))?;
    let got = gpu.read_vec3_async(&b.sorted_pos, n).await?;
    rows.push(compare_exact(
        "reorder.pos",
        &bits(&got),
        &bits(&sorted.pos),
    ));
    let got = gpu.read_u32_async(&b.sorted_id, n).await?;
    rows.push(compare_exact("reorder.id", &got, &sorted.id));

    // density: from the CPU's slot-order positions and slot starts.
    gpu.write_vec3(&b.sorted_pos, &sorted.pos);
    gpu.run(|g, e| g.encode_density(e))?;
    let got = gpu.read_f32_async(&b.density, n).await?;
    rows.push(compare_float("density", &got, &sorted_density, tol));

    // The whole GPU pipeline from positions alone, twice.
    let first = gpu.densities(positions)?;
    let got = gpu.read_u32_async(&b.slot_start, t + 1).await?;
    rows.push(compare_exact("pipeline.slot_start", &got, &grid.slot_start));
    let got = gpu.read_u32_async(&b.sorted_ids, n).await?;
    rows.push(compare_exact("pipeline.sorted_ids", &got, &grid.sorted_ids));
    rows.push(compare_float("pipeline.density", &first, &cpu_density, tol));
    let second = gpu.densities(positions)?;
    rows.push(compare_float("pipeline.repeatable", &second, &first, 0.0));

    let pass = rows.iter().all(|r| r.pass);
    Ok(Report {
        particles: n as u32,
        table_size: params.table_size,
        tolerance: tol,
        first_mismatch: rows.iter().find(|r| !r.pass).map(|r| r.stage.clone()),
        stages: rows,
        pass,
    })
}

/// One step checked stage by stage by the checker of the solver `sim` runs (each solver with
/// a checker registers it here; DFSPH's and WCSPH's is
/// [`crate::solver::dfsph::verify::check_dfsph_step`]).
async fn check_step(
    sim: &crate::gpu::fluid::Simulation,
    state: &Particles,
    carry: &crate::core::Carry,
    boundary: Option<&crate::boundary::Boundary>,
    tol: f64,
    step: u64,
) -> Result<Checked> {
    use crate::solver::dfsph::verify::{check_dfsph_step, stages_of};
    if let Ok(d) = stages_of(sim) {
        return check_dfsph_step(sim, d, state, carry, boundary, tol, step).await;
    }
    Err(crate::Error::input(format!(
        "--verify has no stage-by-stage checker for the {} solver: run it without --verify",
        sim.solver_name()
    )))
}

/// `--verify --steps K`: GPU and CPU take each step of the run from the same state and every
/// stage's output is compared (by the checker of the solver the simulation runs,
/// [`check_step`]), then the GPU is resynchronised to the CPU's state so errors do not
/// compound. The steps go through the run's own driver loop ([`crate::run::drive`]) with the
/// CPU reference as the state it carries: moving obstacles are placed at each step's start
/// time and sent to both paths, the emitters' layers join as in a run (the GPU's
/// `emitter_probe` must count what the CPU's does), and particles that leave through an open
/// side are removed. The guards are [`crate::run::Guards::unjudged`]: a check reports, it
/// does not judge the run. The report names the step, stage (and iteration) of the first mismatch.
pub fn verify_solver_steps(
    sim: &crate::gpu::fluid::Simulation,
    start: &Particles,
    obstacles: Option<&crate::boundary::Boundary>,
    emitters: &crate::emitter::Emitters,
    steps: u64,
    tol: f64,
) -> Result<Report> {
    crate::gpu::context::finish(
        verify_solver_steps_async(sim, start, obstacles, emitters, steps, tol),
        "verify_solver_steps_async",
    )
}

/// [`verify_solver_steps`], awaited (a web page's form: each stage's readback completes while
/// the page yields).
pub async fn verify_solver_steps_async(
    sim: &crate::gpu::fluid::Simulation,
    start: &Particles,
    obstacles: Option<&crate::boundary::Boundary>,
    emitters: &crate::emitter::Emitters,
    steps: u64,
    tol: f64,
) -> Result<Report> {
    let fp = sim.fluid_params;
    let mut verified = Verified {
        sim,
        carry: crate::core::Carry::default(),
        state: start.clone(),
        boundary: obstacles.cloned(),
        tol,
        step: 0,
        worst: Vec::new(),
        first_mismatch: None,
        pending: Vec::new(),
        uploaded: false,
        queued: 0,
    };
    let guards = crate::run::Guards::unjudged(sim.stages.weakly_compressible());
    let course = crate::run::Course {
        fp: &fp,
        guards: &guards,
        emitters,
    };
    let driven = crate::run::drive_async(
        &mut verified,
        &mut Default::default(),
        crate::run::Until::steps(steps),
        &course,
        &mut crate::run::NoHooks,
    )
    .await;
    // Probes after the last step (the layers its end releases) count too, as the next step's.
    let (pending, next) = (std::mem::take(&mut verified.pending), verified.step + 1);
    verified.record(pending, None, next);
    match driven {
        Ok(_) => {}
        // The reference itself diverged (a non-finite value, a particle outside a closed
        // tank): the rows so far are the report, with the divergence as a failing row.
        Err(crate::Error::Unstable(m)) => {
            let step = verified.step;
            verified.record(
                vec![StageReport {
                    stage: "run.diverged".into(),
                    items: 1,
                    mismatches: 1,
                    max_abs_error: 0.0,
                    max_rel_error: 0.0,
                    pass: false,
                    worst: None,
                    at_cutoff: 0,
                }],
                Some(format!("step {step}, the CPU reference diverged: {m}")),
                step,
            );
        }
        Err(e) => return Err(e),
    }
    Ok(Report::of_steps(
        &sim.sim_params,
        tol,
        verified.worst,
        verified.first_mismatch,
    ))
}

/// The CPU reference stepped alongside the GPU, every step checked stage by stage: the run
/// loop's backend under `--verify`.
struct Verified<'a> {
    sim: &'a crate::gpu::fluid::Simulation,
    state: Particles,
    carry: crate::core::Carry,
    boundary: Option<crate::boundary::Boundary>,
    tol: f64,
    step: u64,
    worst: Vec<StageReport>,
    first_mismatch: Option<String>,
    /// `emitter_probe` rows since the last step.
    pending: Vec<StageReport>,
    /// Whether the GPU holds `state` (uploaded for a probe, and not changed since).
    uploaded: bool,
    /// Steps submitted and not yet checked: a step is checked when its block is read.
    queued: u64,
}

impl Verified<'_> {
    /// Checks the oldest submitted step, stage by stage, and returns its block.
    async fn check_next(&mut self) -> Result<StatsBlock> {
        if self.queued == 0 {
            return Err(crate::Error::input(
                "no step submitted to read statistics from",
            ));
        }
        self.queued -= 1;
        self.step += 1;
        // The checkers upload the state they check (and the step changes it).
        self.uploaded = false;
        let (sim, b) = (self.sim, self.boundary.as_ref());
        let checked = check_step(sim, &self.state, &self.carry, b, self.tol, self.step).await?;
        let step = self.step;
        self.record(checked.rows, checked.first, step);
        // The probes before this step (its start's layers) count as its rows, after its own.
        let pending = std::mem::take(&mut self.pending);
        self.record(pending, None, step);
        self.state = checked.next;
        self.carry = checked.carry;
        Ok(checked.block)
    }

    /// Keeps the worst of `rows` (of step `step`), and the first mismatch: `first` where the
    /// checker named it (with its iteration), else the first failing row's stage.
    fn record(&mut self, rows: Vec<StageReport>, first: Option<String>, step: u64) {
        if self.first_mismatch.is_none() {
            self.first_mismatch = first.or_else(|| {
                rows.iter()
                    .find(|r| !r.pass)
                    .map(|r| format!("step {step}, {}", r.stage))
            });
        }
        merge(&mut self.worst, rows);
    }
}

impl crate::run::Backend for Verified<'_> {
    fn step(&mut self) -> Result<()> {
        self.submit()?;
        self.read_stats().map(|_| ())
    }

    // A step is checked when the loop reads it (its readbacks are awaited in a web page), in
    // the order steps were submitted; nothing changes the state between the two.
    fn submit(&mut self) -> Result<()> {
        self.queued += 1;
        Ok(())
    }

    fn read_stats(&mut self) -> Result<StatsBlock> {
        crate::gpu::context::finish(self.check_next(), "Verified::read_stats_async")
    }

    fn read_stats_async(&mut self) -> crate::run::Pending<'_, StatsBlock> {
        Box::pin(self.check_next())
    }

    fn snapshot(&self) -> Result<crate::gpu::fluid::Snapshot> {
        Ok(crate::gpu::fluid::Snapshot {
            density: vec![0.0; self.state.len()],
            state: self.state.clone(),
            dt: 0.0,
            solver: None,
        })
    }

    fn carry(&self) -> Result<crate::core::Carry> {
        Ok(self.carry.clone())
    }

    fn set_velocities(&mut self, vel: &[glam::Vec3]) -> Result<()> {
        if vel.len() != self.state.len() {
            return Err(crate::Error::input("one velocity per particle"));
        }
        self.state.vel.copy_from_slice(vel);
        self.uploaded = false;
        Ok(())
    }

    fn obstacles_move(&self) -> bool {
        self.boundary.as_ref().is_some_and(|b| b.moves())
    }

    fn place_obstacles(&mut self, t: f64) {
        // Placed on the host and sent to both paths, as a run does.
        if let Some(b) = self.boundary.as_mut().filter(|b| b.moves()) {
            b.place(t);
            self.sim.upload_obstacles(b);
        }
    }

    fn append(&mut self, batch: &crate::emitter::Batch) -> Result<()> {
        batch.append_to(&mut self.state);
        self.uploaded = false;
        Ok(())
    }

    /// The CPU's `emitter_probe` decides which layers land; the GPU's, run on the same state,
    /// must count the same.
    fn probe(&mut self, probes: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
        crate::gpu::context::finish(self.probe_async(probes), "Verified::probe_async")
    }

    fn probe_async<'a>(
        &'a mut self,
        probes: &'a [crate::emitter::Probe],
    ) -> crate::run::Pending<'a, Vec<u32>> {
        Box::pin(async move {
            // One upload serves every probe of an emission (they come in chunks of MAX_PROBES).
            if !self.uploaded {
                self.sim.upload(&self.state);
                self.uploaded = true;
            }
            let got = self.sim.probe_async(probes).await?;
            let want = crate::emitter::probe_hits(&self.state.pos, probes);
            self.pending
                .push(compare_exact("emitter_probe", &got, &want));
            Ok(want)
        })
    }

    fn remove_outside(&mut self) -> Result<(u64, f64)> {
        let snap = self.snapshot()?;
        let fp = &self.sim.fluid_params;
        Ok(match crate::run::without_outside(&snap, &self.carry, fp) {
            Some((kept, _, count, energy)) => {
                self.uploaded = false;
                self.state = kept.state;
                (count, energy)
            }
            None => (0, 0.0),
        })
    }

    fn set_interaction(&mut self, _ip: Option<crate::cpu::interact::InteractParams>) {}

    fn interaction(&self) -> Option<&crate::cpu::interact::InteractParams> {
        None
    }
}
