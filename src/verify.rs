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
use serde::Serialize;

use crate::Result;
use crate::core::Particles;
use crate::core::StatsBlock;
use crate::cpu;
use crate::gpu::GpuNeighbours;
use crate::grid::{self, Grid};
use crate::params::SimParams;
use crate::solver;

/// One row of the report.
#[derive(Clone, Debug, Serialize)]
pub struct StageReport {
    /// What was compared, `stage.output`.
    pub stage: String,
    /// Items compared.
    pub items: usize,
    /// Items outside tolerance (exact stages: any difference).
    pub mismatches: usize,
    /// Largest absolute difference.
    pub max_abs_error: f64,
    /// Largest relative difference.
    pub max_rel_error: f64,
    /// Whether the row passes.
    pub pass: bool,
    /// The item farthest outside the tolerance, where one is: what a failing row shows to
    /// tell a rounding difference from a wrong value.
    pub worst: Option<Worst>,
    /// Items that passed only because their integer decision (a neighbour counted or not)
    /// rests on a float within the tolerance of its threshold ([`compare_alpha`]).
    pub at_cutoff: usize,
}

/// A failing row's worst item.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Worst {
    /// Its index in the compared buffer.
    pub index: usize,
    /// The GPU's value.
    pub gpu: f64,
    /// The CPU reference's value.
    pub cpu: f64,
    /// Its error over its scale (exact rows: 0).
    pub rel: f64,
}

/// The whole verification.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// Particle count.
    pub particles: u32,
    /// Table size.
    pub table_size: u32,
    /// Relative tolerance applied to densities.
    pub tolerance: f64,
    /// One row per compared output.
    pub stages: Vec<StageReport>,
    /// Every row passed.
    pub pass: bool,
    /// Where the first mismatch appeared (step, stage, iteration), if any.
    pub first_mismatch: Option<String>,
}

impl Report {
    /// The report of a stepping verification from its merged rows.
    pub(crate) fn of_steps(
        sp: &SimParams,
        tol: f64,
        stages: Vec<StageReport>,
        first_mismatch: Option<String>,
    ) -> Self {
        Self {
            particles: sp.n,
            table_size: sp.table_size,
            tolerance: tol,
            pass: stages.iter().all(|r| r.pass),
            stages,
            first_mismatch,
        }
    }

    /// The report as an aligned text table ending in `PASS` or `FAIL`.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "verify: N = {}, T = {}, density tolerance {:e} relative\n{:<22} {:>10} {:>10} {:>12} {:>12}  verdict\n",
            self.particles,
            self.table_size,
            self.tolerance,
            "stage",
            "items",
            "mismatches",
            "max abs err",
            "max rel err"
        );
        for r in &self.stages {
            s += &format!(
                "{:<22} {:>10} {:>10} {:>12.3e} {:>12.3e}  {}\n",
                r.stage,
                r.items,
                r.mismatches,
                r.max_abs_error,
                r.max_rel_error,
                if r.pass { "ok" } else { "FAIL" }
            );
        }
        for r in self.stages.iter().filter(|r| r.at_cutoff > 0) {
            s += &format!(
                "{}: {} passed with the other sign, a candidate at the cutoff h (W = ∇W = 0 there)\n",
                r.stage, r.at_cutoff
            );
        }
        for r in self.stages.iter().filter(|r| !r.pass) {
            if let Some(w) = r.worst {
                s += &format!(
                    "worst of {}: item {}, GPU {:e}, CPU {:e}\n",
                    r.stage, w.index, w.gpu, w.cpu
                );
            }
        }
        if let Some(f) = &self.first_mismatch {
            s += &format!("first mismatch: {f}\n");
        }
        s += if self.pass { "PASS" } else { "FAIL" };
        s
    }
}

/// Compares two integer buffers exactly.
pub fn compare_exact(stage: &str, gpu: &[u32], cpu: &[u32]) -> StageReport {
    let mut mismatches = gpu.len().abs_diff(cpu.len());
    let mut max_abs = 0f64;
    let mut worst = None;
    for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        if g != c {
            mismatches += 1;
            let abs = (g as f64 - c as f64).abs();
            if worst.is_none() || abs > max_abs {
                worst = Some(Worst {
                    index: i,
                    gpu: g as f64,
                    cpu: c as f64,
                    rel: 0.0,
                });
            }
            max_abs = max_abs.max(abs);
        }
    }
    StageReport {
        stage: stage.to_string(),
        items: cpu.len(),
        mismatches,
        max_abs_error: max_abs,
        max_rel_error: 0.0,
        pass: mismatches == 0,
        worst,
        at_cutoff: 0,
    }
}

/// Compares floats within `tol` relative (relative to |cpu|, or absolute where cpu is 0);
/// a NaN or infinity on either side is a mismatch.
pub fn compare_float(stage: &str, gpu: &[f32], cpu: &[f32], tol: f64) -> StageReport {
    compare_with(stage, gpu, cpu, tol, |_, c| own_scale(c))
}

/// A value's own magnitude as its error scale, or 1 where it is 0 (then the error is absolute).
fn own_scale(c: f64) -> f64 {
    if c != 0.0 { c.abs() } else { 1.0 }
}

/// The shared float comparison: each error is divided by `scale(index, cpu value)`.
fn compare_with(
    stage: &str,
    gpu: &[f32],
    cpu: &[f32],
    tol: f64,
    scale: impl Fn(usize, f64) -> f64,
) -> StageReport {
    let mut mismatches = gpu.len().abs_diff(cpu.len());
    let (mut max_abs, mut max_rel) = (0f64, 0f64);
    let mut worst: Option<Worst> = None;
    for (i, (&g, &c)) in gpu.iter().zip(cpu).enumerate() {
        let (g, c) = (g as f64, c as f64);
        let (abs, rel) = if g.is_finite() && c.is_finite() {
            let abs = (g - c).abs();
            (abs, abs / scale(i, c))
        } else {
            (f64::INFINITY, f64::INFINITY)
        };
        max_abs = max_abs.max(abs);
        max_rel = max_rel.max(rel);
        if rel.is_nan() || rel > tol {
            mismatches += 1;
            if worst.is_none_or(|w| rel > w.rel) {
                worst = Some(Worst {
                    index: i,
                    gpu: g,
                    cpu: c,
                    rel,
                });
            }
        }
    }
    StageReport {
        stage: stage.to_string(),
        items: cpu.len(),
        mismatches,
        max_abs_error: max_abs,
        max_rel_error: max_rel,
        pass: mismatches == 0,
        worst,
        at_cutoff: 0,
    }
}

/// Checks atomic ranks: within each slot they must be a permutation of `0..count`.
pub fn compare_ranks(stage: &str, slots: &[u32], ranks: &[u32], slot_start: &[u32]) -> StageReport {
    let mut taken = vec![false; slots.len()];
    let mut mismatches = 0;
    for (&s, &r) in slots.iter().zip(ranks) {
        let (a, b) = (slot_start[s as usize], slot_start[s as usize + 1]);
        let place = a as u64 + r as u64;
        if place >= b as u64 || std::mem::replace(&mut taken[place as usize], true) {
            mismatches += 1;
        }
    }
    StageReport {
        stage: stage.to_string(),
        items: slots.len(),
        mismatches,
        max_abs_error: 0.0,
        max_rel_error: 0.0,
        pass: mismatches == 0,
        worst: None,
        at_cutoff: 0,
    }
}

/// The bit patterns of the coordinates, for exact comparison of copied floats.
pub fn bits(v: &[Vec3]) -> Vec<u32> {
    v.iter()
        .flat_map(|p| p.to_array().map(f32::to_bits))
        .collect()
}

/// Reverses the ids inside each slot: a deterministic scramble that gives the `order` stage
/// real work wherever a slot holds two or more particles.
pub fn reverse_within_slots(sorted_ids: &[u32], slot_start: &[u32]) -> Vec<u32> {
    let mut out = sorted_ids.to_vec();
    for w in slot_start.windows(2) {
        out[w[0] as usize..w[1] as usize].reverse();
    }
    out
}

/// Runs every comparison. `tol` is the relative density tolerance.
pub fn verify(
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
    let slots = gpu.read_u32(&b.particle_slot, n)?;
    let ranks = gpu.read_u32(&b.particle_rank, n)?;
    let counts = gpu.read_u32(&b.slot_start, t)?;
    rows.push(compare_exact("hash.slot", &slots, &grid.slots));
    rows.push(compare_exact("hash.count", &counts, &grid.counts));
    rows.push(compare_ranks("hash.rank", &slots, &ranks, &grid.slot_start));

    // scan: from the CPU's counts.
    gpu.write_u32(&b.slot_start, &grid.counts);
    gpu.run(|g, e| g.encode_scan(e))?;
    let got = gpu.read_u32(&b.slot_start, t + 1)?;
    rows.push(compare_exact("scan.slot_start", &got, &grid.slot_start));

    // scatter: from the CPU's slots, stable ranks and slot starts, so the result is exact.
    gpu.write_u32(&b.particle_slot, &grid.slots);
    gpu.write_u32(&b.particle_rank, &grid.ranks);
    gpu.write_u32(&b.slot_start, &grid.slot_start);
    gpu.run(|g, e| g.encode_scatter(e))?;
    let got = gpu.read_u32(&b.unordered_ids, n)?;
    rows.push(compare_exact("scatter.ids", &got, &grid.sorted_ids));

    // order: from ids scrambled within each slot.
    let scrambled = reverse_within_slots(&grid.sorted_ids, &grid.slot_start);
    gpu.write_u32(&b.unordered_ids, &scrambled);
    gpu.run(|g, e| g.encode_order(e))?;
    let got = gpu.read_u32(&b.sorted_ids, n)?;
    rows.push(compare_exact("order.sorted_ids", &got, &grid.sorted_ids));
    // The group list comes in any order: compare it sorted.
    let count = gpu.read_u32(&b.group_args, 4)?[3] as usize;
    let raw = match count.min(n) {
        0 => Vec::new(),
        k => gpu.read_u32(&b.group_range, 2 * k)?,
    };
    let mut got: Vec<[u32; 2]> = raw.chunks(2).map(|c| [c[0], c[1]]).collect();
    got.sort_unstable();
    let want = grid::order::groups(&grid.slot_start, group_size);
    rows.push(compare_exact("order.groups", &got.concat(), &want.concat()));

    // reorder: from the CPU's sorted ids.
    gpu.write_u32(&b.sorted_ids, &grid.sorted_ids);
    gpu.run(|g, e| g.encode_reorder(e))?;
    let got = gpu.read_vec3(&b.sorted_pos, n)?;
    rows.push(compare_exact(
        "reorder.pos",
        &bits(&got),
        &bits(&sorted.pos),
    ));
    let got = gpu.read_u32(&b.sorted_id, n)?;
    rows.push(compare_exact("reorder.id", &got, &sorted.id));

    // density: from the CPU's slot-order positions and slot starts.
    gpu.write_vec3(&b.sorted_pos, &sorted.pos);
    gpu.run(|g, e| g.encode_density(e))?;
    let got = gpu.read_f32(&b.density, n)?;
    rows.push(compare_float("density", &got, &sorted_density, tol));

    // The whole GPU pipeline from positions alone, twice.
    let first = gpu.densities(positions)?;
    let got = gpu.read_u32(&b.slot_start, t + 1)?;
    rows.push(compare_exact("pipeline.slot_start", &got, &grid.slot_start));
    let got = gpu.read_u32(&b.sorted_ids, n)?;
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

/// Compares a field with errors scaled by the field's largest magnitude on the CPU, so values
/// near zero (pressures at the free surface, accelerations that cancel) are judged against
/// the field's scale rather than themselves; a NaN never passes.
pub fn compare_scaled(stage: &str, gpu: &[f32], cpu: &[f32], tol: f64) -> StageReport {
    let scale = largest(cpu);
    compare_with(stage, gpu, cpu, tol, |_, _| scale)
}

/// A field's largest magnitude (at least the smallest positive f64): [`compare_scaled`]'s scale.
fn largest(cpu: &[f32]) -> f64 {
    cpu.iter()
        .fold(0f64, |m, &c| m.max((c as f64).abs()))
        .max(f64::MIN_POSITIVE)
}

/// Compares DFSPH's α (stage `dfsph_density`): its magnitude as [`compare_scaled`] does; its
/// sign is the particle-deficiency flag, fewer than `min_neighbours` candidates within h
/// (walls' images and obstacles' particles counted), an integer decision on r² < h². A GPU
/// whose r² rounds differently can count a pair at the cutoff that the CPU did not. Such a
/// pair adds nothing to ρ or |α| (W and ∇W vanish at h), so at a nonzero tolerance a flipped
/// sign passes where the magnitudes agree and the particle has a candidate whose r² lies
/// within the tolerance of h² ([`near_cutoff`]); at tolerance 0 every bit counts.
///
/// Example: on an NVIDIA H200 (2026-11-28), 4 of 959 692 α over the 10 steps of
/// `dam-break-jet.json` at 100k came back with the other sign.
pub(crate) fn compare_alpha(
    stage: &str,
    gpu: &[f32],
    cpu: &[f32],
    cutoff: impl Fn(usize) -> bool,
    tol: f64,
) -> StageReport {
    let scale = largest(cpu);
    let mut at_cutoff = 0;
    let judged: Vec<f32> = gpu
        .iter()
        .zip(cpu)
        .enumerate()
        .map(|(i, (&g, &c))| {
            let flipped = tol > 0.0 && g.is_finite() && g * c < 0.0;
            let same_size = ((g.abs() - c.abs()) as f64).abs() <= tol * scale;
            // The flag judged apart, the magnitude as any other α.
            if flipped && same_size && cutoff(i) {
                at_cutoff += 1;
                -g
            } else {
                g
            }
        })
        .collect();
    StageReport {
        at_cutoff,
        ..compare_with(stage, &judged, cpu, tol, |_, _| scale)
    }
}

/// Whether particle `k` at `pos[k]` has a candidate (another particle, an image of one or of
/// itself across the walls near it, or an obstacle's particle) whose distance squared lies
/// within `tol` h² of h² (at least 4 ulps of h², the rounding of an r² sum), in f64.
pub(crate) fn near_cutoff(
    k: usize,
    pos: &[Vec3],
    boundary: Option<&crate::boundary::Boundary>,
    sp: &SimParams,
    fp: &crate::params::FluidParams,
    tol: f64,
) -> bool {
    use crate::boundary::tank::{image_axes, reflect_across, subsets, wall_planes};
    let Some(&x) = pos.get(k) else {
        return false;
    };
    let h2 = sp.h2 as f64;
    let slack = tol.max(4.0 * f32::EPSILON as f64) * h2;
    let near = |y: Vec3| {
        let d = x.as_dvec3() - y.as_dvec3();
        (d.length_squared() - h2).abs() <= slack
    };
    let plain = pos.iter().enumerate().any(|(j, &p)| j != k && near(p));
    let walls = wall_planes(x, sp.h * (1.0 + tol as f32) + f32::EPSILON, fp);
    let images = subsets(walls.mask).any(|m| {
        let axes = image_axes(m);
        pos.iter()
            .any(|&p| near(reflect_across(p, walls.plane, axes)))
    });
    let obstacles = boundary.is_some_and(|b| b.pos.iter().any(|&q| near(q)));
    plain || images || obstacles
}

/// Compares floats, each error relative to its own `scale` (a NaN or infinity never passes).
pub fn compare_against(
    stage: &str,
    gpu: &[f32],
    cpu: &[f32],
    scale: &[f64],
    tol: f64,
) -> StageReport {
    compare_with(stage, gpu, cpu, tol, |i, _| {
        scale.get(i).copied().unwrap_or(0.0).max(f64::MIN_POSITIVE)
    })
}

/// The scales of the constant-density solve (stage doc of `dfsph_rate`): κ_i =
/// (ρ*_i − ρ0)|α_i|/dt² is a difference of nearly equal densities, so each κ is judged
/// relative to |κ_i| + ρ0 |α_i| / dt², the magnitude of the terms it is computed from (ρ*
/// within the tolerance of ρ0's size gives κ within the tolerance of this), and each residual
/// ρ*/ρ0 − 1 relative to |r| + 1 (block sums: the sum of those).
struct DensityScales<'a> {
    alpha: &'a [f32],
    dt: f32,
    rho0: f32,
}

impl DensityScales<'_> {
    fn kappa(&self, kappa: &[f32], applied: usize) -> Vec<f64> {
        let per = self.rho0 as f64 / (self.dt as f64 * self.dt as f64);
        kappa
            .iter()
            .zip(self.alpha)
            .map(|(&k, &a)| (k as f64).abs() + applied.max(1) as f64 * per * (a as f64).abs())
            .collect()
    }
}

/// Compares Tait pressures p = B ((ρ/ρ0)^7 − 1): each error relative to |p| + B, the
/// magnitude of the terms the subtraction starts from (its rounding error bound), since near
/// ρ0 a pressure is a small difference of two numbers of size B and one ulp of ρ moves it by
/// about 7 B · 2^-24 (0.2 Pa at B = 4.5e5 Pa, where the first steps' pressures are tens of Pa).
pub fn compare_eos(stage: &str, gpu: &[f32], cpu: &[f32], stiffness: f32, tol: f64) -> StageReport {
    let b = (stiffness as f64).abs();
    compare_with(stage, gpu, cpu, tol, |_, c| c.abs() + b)
}

fn flat(v: &[Vec3]) -> Vec<f32> {
    v.iter().flat_map(|p| p.to_array()).collect()
}

/// Keeps the worst of each stage's rows over several steps.
pub(crate) fn merge(worst: &mut Vec<StageReport>, rows: Vec<StageReport>) {
    for r in rows {
        match worst.iter_mut().find(|w| w.stage == r.stage) {
            Some(w) => {
                w.items += r.items;
                w.mismatches += r.mismatches;
                w.max_abs_error = w.max_abs_error.max(r.max_abs_error);
                w.max_rel_error = w.max_rel_error.max(r.max_rel_error);
                w.pass &= r.pass;
                w.at_cutoff += r.at_cutoff;
                if let Some(rw) = r.worst {
                    if w.worst.is_none_or(|ww| rw.rel > ww.rel) {
                        w.worst = Some(rw);
                    }
                }
            }
            None => worst.push(r),
        }
    }
}

/// The statistics block (stage `stats`): its floats relative to their largest magnitude, its
/// counts and bits exactly; the equation-of-state energy (many orders below Σρ) relative to
/// itself plus `eos_sensitivity` ([`eos_sensitivity`] of the densities it was summed from);
/// the DFSPH block it carries bit for bit (`cpu.dfsph` is what it must have copied).
pub fn compare_stats(
    gpu: &StatsBlock,
    cpu: &StatsBlock,
    eos_sensitivity: f64,
    tol: f64,
) -> [StageReport; 5] {
    let floats = |b: &StatsBlock| {
        let mut v = b.sums.to_vec();
        v.extend_from_slice(&b.maxima);
        v.push(b.density_min);
        v.push(b.dt);
        v
    };
    let ints = |b: &StatsBlock| {
        vec![
            b.outside,
            b.non_finite,
            b.first_bad_id,
            b.n,
            b.density_max_id,
            b.speed_max_id,
        ]
    };
    [
        compare_scaled("stats.values", &floats(gpu), &floats(cpu), tol),
        compare_exact("stats.counts", &ints(gpu), &ints(cpu)),
        compare_with("stats.eos_energy", &[gpu.eos], &[cpu.eos], tol, |_, c| {
            (c.abs() + eos_sensitivity).max(f64::MIN_POSITIVE)
        }),
        compare_scaled("stats.obstacle_power", &[gpu.power], &[cpu.power], tol),
        // The DFSPH block is copied in whole (its values have rows of their own).
        compare_exact("stats.solver_block", &gpu.solver, &cpu.solver),
    ]
}

/// How much the summed equation-of-state energy (in units of m B / ρ0) moves per unit relative
/// change of every density: Σ x e'(x) = Σ (x⁷ − 1)⁺ / x with x = ρ/ρ0, since e'(x) is the
/// integrand (x⁷ − 1)/x². The energy is a sum of (x − 1)² terms, so its relative error is about
/// 2/(x − 1) times that of x: one ulp of ρ/ρ0 (which a GPU's division may give) is then far
/// above 1e-5 of the energy near rest, and this is the scale a density tolerance implies.
pub fn eos_sensitivity(density: &[f32], fp: &crate::params::FluidParams) -> f64 {
    let rho0 = fp.rest_density as f64;
    density
        .iter()
        .map(|&r| {
            let x = r as f64 / rho0;
            if x > 1.0 { (x.powi(7) - 1.0) / x } else { 0.0 }
        })
        .sum()
}

/// The stages `--verify` checks step by step (DFSPH's and WCSPH's, [`check_dfsph_step`]).
fn stages_of(sim: &crate::gpu::fluid::Simulation) -> Result<&crate::solver::dfsph::gpu::GpuDfsph> {
    sim.stages.as_any().downcast_ref().ok_or_else(|| {
        crate::Error::input(format!(
            "--verify has no stage-by-stage checker for the {} solver: run it without --verify",
            sim.solver().name()
        ))
    })
}

/// `--verify --steps K`: GPU and CPU take each step of the run from the same state and every
/// stage's output is compared ([`check_dfsph_step`], for either solver the
/// simulation runs), then the GPU is resynchronised to the CPU's state so errors do not
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
    let fp = sim.fluid_params;
    let mut verified = Verified {
        sim,
        carry: solver::dfsph::DfsphCarry::new(&stages_of(sim)?.dp),
        state: start.clone(),
        boundary: obstacles.cloned(),
        tol,
        step: 0,
        worst: Vec::new(),
        first_mismatch: None,
        pending: Vec::new(),
        uploaded: false,
        blocks: Default::default(),
    };
    let guards = crate::run::Guards::unjudged(sim.solver().weakly_compressible());
    let course = crate::run::Course {
        fp: &fp,
        guards: &guards,
        emitters,
    };
    let driven = crate::run::drive(
        &mut verified,
        &mut Default::default(),
        crate::run::Until::steps(steps),
        &course,
        &mut crate::run::NoHooks,
    );
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

/// One step checked: its rows, the first that failed (named, where the checker names more
/// than the stage), the CPU's next state and carry and the CPU's statistics block,
/// which the run loop reads.
struct Checked {
    rows: Vec<StageReport>,
    first: Option<String>,
    next: Particles,
    carry: solver::dfsph::DfsphCarry,
    block: StatsBlock,
}

/// The CPU reference stepped alongside the GPU, every step checked stage by stage: the run
/// loop's backend under `--verify`.
struct Verified<'a> {
    sim: &'a crate::gpu::fluid::Simulation,
    state: Particles,
    carry: solver::dfsph::DfsphCarry,
    boundary: Option<crate::boundary::Boundary>,
    tol: f64,
    step: u64,
    worst: Vec<StageReport>,
    first_mismatch: Option<String>,
    /// `emitter_probe` rows since the last step.
    pending: Vec<StageReport>,
    /// Whether the GPU holds `state` (uploaded for a probe, and not changed since).
    uploaded: bool,
    blocks: std::collections::VecDeque<StatsBlock>,
}

impl Verified<'_> {
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
    // The run loop submits and reads; a step whose block nobody reads is one checked all the
    // same.
    fn step(&mut self) -> Result<()> {
        self.submit()?;
        self.blocks.pop_back();
        Ok(())
    }

    fn submit(&mut self) -> Result<()> {
        self.step += 1;
        // The checkers upload the state they check (and the step changes it).
        self.uploaded = false;
        let (sim, b) = (self.sim, self.boundary.as_ref());
        let d = stages_of(sim)?;
        let checked = check_dfsph_step(sim, d, &self.state, &self.carry, b, self.tol, self.step)?;
        let step = self.step;
        self.record(checked.rows, checked.first, step);
        // The probes before this step (its start's layers) count as its rows, after its own.
        let pending = std::mem::take(&mut self.pending);
        self.record(pending, None, step);
        self.state = checked.next;
        self.carry = checked.carry;
        self.blocks.push_back(checked.block);
        Ok(())
    }

    fn read_stats(&mut self) -> Result<StatsBlock> {
        self.blocks
            .pop_front()
            .ok_or_else(|| crate::Error::input("no step submitted to read statistics from"))
    }

    fn snapshot(&self) -> Result<crate::gpu::fluid::Snapshot> {
        Ok(crate::gpu::fluid::Snapshot {
            density: vec![0.0; self.state.len()],
            state: self.state.clone(),
            dt: 0.0,
            solver: None,
        })
    }

    fn carry(&self) -> Result<solver::Carry> {
        Ok(self.carry.to_carry())
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
        // One upload serves every probe of an emission (they come in chunks of MAX_PROBES).
        if !self.uploaded {
            self.sim.upload(&self.state);
            self.uploaded = true;
        }
        let got = self.sim.probe(probes)?;
        let want = crate::emitter::probe_hits(&self.state.pos, probes);
        self.pending
            .push(compare_exact("emitter_probe", &got, &want));
        Ok(want)
    }

    fn remove_outside(&mut self) -> Result<(u64, f64)> {
        let snap = self.snapshot()?;
        let fp = &self.sim.fluid_params;
        Ok(
            match crate::run::without_outside(&snap, &self.carry.to_carry(), fp) {
                Some((kept, _, count, energy)) => {
                    self.uploaded = false;
                    self.state = kept.state;
                    (count, energy)
                }
                None => (0, 0.0),
            },
        )
    }

    fn set_interaction(&mut self, _ip: Option<crate::cpu::interact::InteractParams>) {}

    fn interaction(&self) -> Option<&crate::cpu::interact::InteractParams> {
        None
    }
}

/// Collects a step's rows and remembers the first that fails.
struct Rows {
    step: u64,
    rows: Vec<StageReport>,
    first: Option<String>,
}

impl Rows {
    fn push(&mut self, r: StageReport, iteration: Option<usize>) {
        if !r.pass && self.first.is_none() {
            self.first = Some(match iteration {
                Some(k) => format!("step {}, {} iteration {k}", self.step, r.stage),
                None => format!("step {}, {}", self.step, r.stage),
            });
        }
        self.rows.push(r);
    }
}

/// Fixed-point sums as the GPU's (low, high) words.
fn fixed_words(v: &[i64]) -> Vec<u32> {
    v.iter().flat_map(|&x| solver::dfsph::to_words(x)).collect()
}

/// One solve, pass by pass, against its CPU trace: the rate pass at its start, then per
/// iteration the control decision, the coarse correction where one follows (the residual on
/// the cells, the coarse solution, the increments), the velocities and Σ κ after the pressure
/// update and the rate pass's κ, residuals and total; then the iteration counts.
#[allow(clippy::too_many_arguments)]
fn verify_solve(
    sim: &crate::gpu::fluid::Simulation,
    which: solver::dfsph::Solve,
    cap: u32,
    tr: &solver::dfsph::SolveTrace,
    start_vel: &[Vec3],
    scales: Option<&DensityScales>,
    tol: f64,
    out: &mut Rows,
) -> Result<()> {
    let d = stages_of(sim)?;
    let g = &sim.grid;
    let n = g.bufs.n.get() as usize;
    let name = which.name();
    let q = &g.ctx.queue;
    let sums = &d.solves[match which {
        solver::dfsph::Solve::Divergence => 0,
        solver::dfsph::Solve::Density => 1,
    }]
    .kappa_sum;
    let kappa_row = |stage: &str, got: &[f32], want: &[f32], applied: usize| match scales {
        Some(sc) => compare_against(stage, got, want, &sc.kappa(want, applied), tol),
        None => compare_scaled(stage, got, want, tol),
    };
    // The density solve's residual ρ*/ρ0 − 1 is a difference of numbers near 1: judged
    // relative to |x| + 1 (as `DensityScales`).
    let residual_scale = |x: f32| match scales {
        Some(_) => (x as f64).abs() + 1.0,
        None => own_scale(x as f64),
    };
    // A rate pass's rows: κ, the residuals, and the total (the same integer where the
    // residuals have the same bits; its mean within the tolerance elsewhere).
    let rate_rows = |out: &mut Rows, it: usize| -> Result<()> {
        let rate = tr.rates.get(it).cloned().unwrap_or_default();
        let got = g.read_f32(&d.kappa, n)?;
        out.push(
            kappa_row(&format!("{name}.rate.kappa"), &got, &rate.kappa, it + 1),
            Some(it),
        );
        let got = g.read_f32(&d.residual, n)?;
        let scale: Vec<f64> = rate.residual.iter().map(|&e| residual_scale(e)).collect();
        out.push(
            compare_against(&format!("{name}.rate.e"), &got, &rate.residual, &scale, tol),
            Some(it),
        );
        let total = d.read_total(g, which, it as u32)?;
        let (got_mean, want_mean) = (total.mean(n as u32), rate.total.mean(n as u32));
        let mut row = compare_against(
            &format!("{name}.rate.residual"),
            &[got_mean],
            &[want_mean],
            &[residual_scale(want_mean)],
            tol,
        );
        if tol == 0.0 && total != rate.total {
            row.pass = false;
            row.mismatches = row.mismatches.max(1);
        }
        out.push(row, Some(it));
        Ok(())
    };
    // Every pass runs on the CPU's inputs, so a row judges that pass's own rounding.
    g.write_vec3(&g.bufs.sorted_vel, start_vel);
    g.run(|g, e| d.encode_start(g, e, which))?;
    rate_rows(out, 0)?;
    let (eta, min_it) = match which {
        solver::dfsph::Solve::Divergence => (d.dp.eta_v, solver::dfsph::MIN_ITERATIONS[0]),
        solver::dfsph::Solve::Density => (d.dp.eta_d, solver::dfsph::MIN_ITERATIONS[1]),
    };
    let mut it = 0usize;
    loop {
        // The decision the next passes take, from the GPU's total (the passes themselves are
        // judged by the rows below and by the step's iteration counts).
        let total = d.read_total(g, which, it as u32)?;
        let mut got_state = tr
            .states
            .get(it.wrapping_sub(1))
            .copied()
            .filter(|_| it > 0)
            .unwrap_or_default();
        solver::dfsph::dfsph_control(
            &mut got_state,
            total,
            n as u32,
            solver::dfsph::threshold(eta, n as u32),
            min_it,
            cap,
            d.dp.max_iterations,
        );
        let want = tr.states.get(it).copied().unwrap_or_default();
        let mut state_row = compare_exact(
            &format!("{name}.control"),
            &[got_state.iterations, got_state.done as u32],
            &[want.iterations, want.done as u32],
        );
        let res = compare_against(
            "",
            &[got_state.residual],
            &[want.residual],
            &[residual_scale(want.residual)],
            tol,
        );
        state_row.pass &= res.pass;
        state_row.mismatches += res.mismatches;
        state_row.max_abs_error = state_row.max_abs_error.max(res.max_abs_error);
        state_row.max_rel_error = res.max_rel_error;
        state_row.worst = state_row.worst.or(res.worst);
        out.push(state_row, Some(it));
        // The CPU's state after iteration `it`: its rate pass and increments, and the Σ κ and
        // velocities they were computed at; none after its last.
        let next = tr.rates.get(it).zip(tr.kappas.get(it));
        let Some((rate, kappa)) = next.filter(|_| !got_state.done && it < cap as usize) else {
            let counts = compare_exact(
                &format!("{name}.iterations"),
                &[got_state.iterations, got_state.done as u32],
                &[want.iterations, 1],
            );
            out.push(counts, None);
            break;
        };
        let ks = match it {
            0 => vec![0.0; n],
            _ => tr.kappa_sums[it - 1].clone(),
        };
        let vel = match it {
            0 => start_vel,
            _ => &tr.velocities[it - 1][..],
        };
        d.write_totals(q, which, it as u32, &[rate.total]);
        if let Some(c) = tr.corrections.iter().find(|c| c.k == it as u32) {
            q.write_buffer(&d.residual, 0, bytemuck::cast_slice(&rate.residual));
            q.write_buffer(&d.kappa, 0, bytemuck::cast_slice(&rate.kappa));
            q.write_buffer(sums, 0, bytemuck::cast_slice(&ks));
            g.write_vec3(&g.bufs.sorted_vel, vel);
            g.run(|g, e| d.encode_correction(g, e, which, it as u32))?;
            let got = g.read_u32(&d.coarse_rhs, 2 * c.rhs.len())?;
            out.push(
                compare_exact(&format!("{name}.restrict"), &got, &fixed_words(&c.rhs)),
                Some(it),
            );
            let got = g.read_f32(&d.coarse_work, c.solution.y.len())?;
            out.push(
                compare_scaled(&format!("{name}.coarse"), &got, &c.solution.y, tol),
                Some(it),
            );
            let got = g.read_f32(&d.kappa, n)?;
            out.push(
                kappa_row(&format!("{name}.prolong"), &got, kappa, it + 1),
                Some(it),
            );
        }
        // The pressure update of iteration it + 1 from the CPU's increments, velocities and Σ κ.
        q.write_buffer(&d.kappa, 0, bytemuck::cast_slice(kappa));
        q.write_buffer(sums, 0, bytemuck::cast_slice(&ks));
        g.write_vec3(&g.bufs.sorted_vel, vel);
        d.write_totals(q, which, it as u32 + 1, &[Default::default()]);
        it += 1;
        g.run(|g, e| d.encode_pressure(g, e, which, it as u32))?;
        let want = flat(&tr.velocities[it - 1]);
        let got = flat(&g.read_vec3(&g.bufs.sorted_vel, n)?);
        out.push(
            compare_scaled(&format!("{name}.pressure.velocity"), &got, &want, tol),
            Some(it),
        );
        let want = &tr.kappa_sums[it - 1];
        let got = g.read_f32(sums, n)?;
        out.push(
            kappa_row(&format!("{name}.kappa_sum"), &got, want, it),
            Some(it),
        );
        g.write_vec3(&g.bufs.sorted_vel, &tr.velocities[it - 1]);
        q.write_buffer(sums, 0, bytemuck::cast_slice(want));
        g.run(|g, e| d.encode_rate(g, e, which, it as u32))?;
        rate_rows(out, it)?;
    }
    // The iteration after the last must do nothing on the GPU: its passes decide so from the
    // last total.
    if it < cap as usize {
        if let Some(r) = tr.rates.last() {
            d.write_totals(q, which, it as u32, &[r.total]);
        }
        d.write_totals(q, which, it as u32 + 1, &[Default::default()]);
        let before = g.read_vec3(&g.bufs.sorted_vel, n)?;
        g.run(|g, e| {
            d.encode_pressure(g, e, which, it as u32 + 1);
            d.encode_rate(g, e, which, it as u32 + 1);
        })?;
        let after = g.read_vec3(&g.bufs.sorted_vel, n)?;
        let skipped = d.read_total(g, which, it as u32 + 1)? == solver::dfsph::Total::default();
        out.push(
            compare_exact(
                &format!("{name}.converged_passes_skip"),
                &[(after == before) as u32, skipped as u32],
                &[1, 1],
            ),
            None,
        );
    }
    Ok(())
}

/// WCSPH's pressure in a checked step, pass by pass from the CPU's inputs: `dfsph_eos`'s κ,
/// then the pressure pass from the CPU's κ on the velocities `predicted` (v*).
fn verify_eos(
    sim: &crate::gpu::fluid::Simulation,
    d: &crate::solver::dfsph::gpu::GpuDfsph,
    eos: &solver::dfsph::EosTrace,
    predicted: &[Vec3],
    tol: f64,
    out: &mut Rows,
) -> Result<()> {
    let g = &sim.grid;
    let n = predicted.len();
    g.run(|g, e| d.encode_eos(g, e))?;
    let got = g.read_f32(&d.kappa, n)?;
    out.push(compare_scaled("dfsph_eos", &got, &eos.kappa, tol), None);
    let q = &g.ctx.queue;
    q.write_buffer(&d.kappa, 0, bytemuck::cast_slice(&eos.kappa));
    g.write_vec3(&g.bufs.sorted_vel, predicted);
    g.run(|g, e| d.encode_eos_force(g, e))?;
    let got = flat(&g.read_vec3(&g.bufs.sorted_vel, n)?);
    out.push(
        compare_scaled("wcsph.pressure.velocity", &got, &flat(&eos.vel), tol),
        None,
    );
    Ok(())
}

/// DFSPH's coarse levels in a checked step: the operator's integer sums exactly, the rows
/// from the CPU's operator (then left on the GPU for the solves).
fn verify_levels(
    sim: &crate::gpu::fluid::Simulation,
    d: &crate::solver::dfsph::gpu::GpuDfsph,
    coarse: &solver::dfsph::Coarse,
    tol: f64,
    out: &mut Rows,
) -> Result<()> {
    let g = &sim.grid;
    let q = &g.ctx.queue;
    // The coarse levels: the operator's integer sums exactly, the rows from the CPU's operator.
    g.run(|g, e| d.encode_levels(g, e))?;
    let mut words = fixed_words(&coarse.op.op);
    words.push(coarse.op.anchors);
    let got = g.read_u32(&d.coarse_op, words.len())?;
    out.push(compare_exact("dfsph_galerkin", &got, &words), None);
    g.write_u32(&d.coarse_op, &words);
    g.run(|g, e| d.encode_levels_only(g, e))?;
    let got = g.read_f32(&d.coarse_rows, 27 * coarse.rows.len())?;
    out.push(
        compare_scaled("dfsph_levels", &got, &coarse.rows.concat(), tol),
        None,
    );
    let rows: Vec<f32> = coarse.rows.concat();
    q.write_buffer(&d.coarse_rows, 0, bytemuck::cast_slice(&rows));
    Ok(())
}

/// DFSPH: has GPU and CPU take one step from the same state, pass by pass, comparing every
/// stage's output (ρ and α, the coarse levels, each iteration of both solves, the
/// accelerations, dt, the predicted velocities, the positions, ρ and α at the new positions
/// and the statistics block). The first mismatch is named with its step, stage and
/// iteration.
#[allow(clippy::too_many_arguments)]
fn check_dfsph_step(
    sim: &crate::gpu::fluid::Simulation,
    d: &crate::solver::dfsph::gpu::GpuDfsph,
    state: &Particles,
    carry: &solver::dfsph::DfsphCarry,
    boundary: Option<&crate::boundary::Boundary>,
    tol: f64,
    step: u64,
) -> Result<Checked> {
    use solver::dfsph::{Solve, dfsph_step};
    let (sp, fp, dp) = (&sim.sim_params, &sim.fluid_params, &d.dp);
    let g = &sim.grid;
    let n = state.len();
    let tr = dfsph_step(true, state, carry, None, boundary, sp, fp, dp);
    let largest = tr.grid.counts.iter().copied().max().unwrap_or(0);
    crate::grid::gpu::check_loop_budget(&g.ctx.info, sp.n, largest, 1)?;
    sim.upload(state);
    sim.upload_carry(&carry.to_carry())?;
    let mut out = Rows {
        step,
        rows: Vec::new(),
        first: None,
    };
    g.run(|_, e| sim.encode_prime(e))?;
    let got = g.read_u32(&g.bufs.sorted_ids, n)?;
    out.push(
        compare_exact("grid.sorted_ids", &got, &tr.grid.sorted_ids),
        None,
    );
    // A `dfsph_density` pass's ρ and α (`names`) against the CPU's at the positions `pos` it
    // walked, α's deficiency flag judged at the cutoff ([`compare_alpha`]).
    let density_rows =
        |out: &mut Rows, names: [&str; 2], want: &solver::dfsph::DensityAlpha, pos| {
            let (rho, alpha) = (g.read_f32(&d.rho, n)?, g.read_f32(&d.alpha, n)?);
            let cutoff = |k| near_cutoff(k, pos, boundary, sp, fp, tol);
            out.push(compare_float(names[0], &rho, &want.density, tol), None);
            out.push(
                compare_alpha(names[1], &alpha, &want.alpha, cutoff, tol),
                None,
            );
            Ok::<(), crate::Error>(())
        };
    let names = ["dfsph_density.rho", "dfsph_density.alpha"];
    density_rows(&mut out, names, &tr.start, &tr.sorted.pos)?;
    // From here every pass runs on the CPU's inputs (as `check_wcsph_step` does): a GPU whose
    // division and fused multiply-adds round differently is judged pass by pass, not on
    // an ulp amplified through the solves' iterations. On lavapipe the uploads rewrite
    // the values the GPU already holds.
    let q = &g.ctx.queue;
    q.write_buffer(&d.rho, 0, bytemuck::cast_slice(&tr.start.density));
    q.write_buffer(&d.alpha, 0, bytemuck::cast_slice(&tr.start.alpha));
    let caps = d.caps(&carry.budget);
    match &tr.coarse {
        Some(coarse) => {
            verify_levels(sim, d, coarse, tol, &mut out)?;
            verify_solve(
                sim,
                Solve::Divergence,
                caps[0],
                &tr.divergence,
                &tr.sorted.vel,
                None,
                tol,
                &mut out,
            )?;
        }
        None => g.run(|_, e| d.encode_wcsph_start(e))?,
    }
    let solved = tr.divergence.velocities.last().unwrap_or(&tr.sorted.vel);
    g.write_vec3(&g.bufs.sorted_vel, solved);
    g.run(|g, e| d.encode_accel(g, e))?;
    let got = flat(&g.read_vec3(&sim.fluid.accel, n)?);
    out.push(
        compare_scaled("dfsph_accel", &got, &flat(&tr.acc), tol),
        None,
    );
    out.push(
        compare_scaled(
            "dfsph_accel.viscous_rate",
            &g.read_w(&sim.fluid.accel, n)?,
            &tr.viscous_rate,
            tol,
        ),
        None,
    );
    // The step comes from the maxima `dfsph_timestep` folds, computed by the first substep's
    // `dfsph_predict_first`.
    g.run(|g, e| {
        d.encode_timestep(g, e);
        d.encode_predict(g, e);
    })?;
    let st = g.read_f32(&sim.fluid.step_state, 4)?;
    let ts = tr.timestep;
    out.push(
        compare_float(
            "dfsph_timestep",
            &[st[0], st[1], st[3]],
            &[ts.dt, ts.v_max, ts.dt_sub],
            tol,
        ),
        None,
    );
    out.push(
        compare_exact(
            "dfsph_timestep.substeps",
            &[d.read_substeps(g)?],
            &[ts.substeps],
        ),
        None,
    );
    let got = flat(&g.read_vec3(&g.bufs.sorted_vel, n)?);
    out.push(
        compare_scaled("dfsph_predict", &got, &flat(&tr.predicted), tol),
        None,
    );
    // The later viscous substeps, each from the GPU's own previous one (the substep count
    // matched above, or that row fails).
    for (k, (acc, vel)) in (2..).zip(&tr.substeps) {
        g.run(|g, e| d.encode_substep_accel(g, e, k))?;
        let got = flat(&g.read_vec3(&sim.fluid.accel, n)?);
        out.push(
            compare_scaled(&format!("dfsph_accel.substep{k}"), &got, &flat(acc), tol),
            None,
        );
        g.run(|g, e| d.encode_substep_predict(g, e, k))?;
        let got = flat(&g.read_vec3(&g.bufs.sorted_vel, n)?);
        out.push(
            compare_scaled(&format!("dfsph_predict.substep{k}"), &got, &flat(vel), tol),
            None,
        );
    }
    let predicted = tr.substeps.last().map_or(&tr.predicted, |(_, v)| v);
    let pressed = match &tr.eos {
        None => {
            let scales = DensityScales {
                alpha: &tr.start.alpha,
                dt: tr.timestep.dt,
                rho0: fp.rest_density,
            };
            verify_solve(
                sim,
                Solve::Density,
                caps[1],
                &tr.density,
                predicted,
                Some(&scales),
                tol,
                &mut out,
            )?;
            tr.density.velocities.last().unwrap_or(predicted)
        }
        Some(eos) => {
            verify_eos(sim, d, eos, predicted, tol, &mut out)?;
            &eos.vel
        }
    };
    g.write_vec3(&g.bufs.sorted_vel, pressed);
    g.run(|g, e| d.encode_integrate(g, e))?;
    let got = flat(&g.read_vec3(&g.bufs.positions, n)?);
    out.push(
        compare_scaled("dfsph_integrate.position", &got, &flat(&tr.next.pos), tol),
        None,
    );
    let got = flat(&g.read_vec3(&g.bufs.velocities, n)?);
    out.push(
        compare_scaled("dfsph_integrate.velocity", &got, &flat(&tr.next.vel), tol),
        None,
    );
    out.push(
        compare_exact(
            "dfsph_integrate.id",
            &g.read_u32(&g.bufs.particle_id, n)?,
            &tr.next.id,
        ),
        None,
    );
    // ρ and α at the new positions from the CPU's: the neighbour threshold of α makes it
    // jump where a position's last bit moves a neighbour across h.
    g.upload(&tr.next);
    // The solves' totals as the CPU had them, from which the host replays their decisions
    // (the density error's blocks are the GPU's own).
    for (which, solve) in [
        (Solve::Divergence, &tr.divergence),
        (Solve::Density, &tr.density),
    ] {
        let mut totals = solve.totals.clone();
        totals.resize(d.dp.max_iterations as usize + 1, Default::default());
        d.write_totals(q, which, 0, &totals);
    }
    g.run(|g, e| {
        g.encode_build(e);
        d.encode_density(g, e);
    })?;
    density_rows(
        &mut out,
        ["end.rho", "end.alpha"],
        &tr.end,
        &tr.next_sorted.pos,
    )?;
    let w = tr.stats;
    // The general statistics read ρ: from the CPU's, so that the densest particle's id is
    // one answer, not two that a last bit decides.
    q.write_buffer(&d.rho, 0, bytemuck::cast_slice(&tr.end.density));
    let got = d.finish(sim.stats_read_now()?, caps);
    let s = solver::dfsph::SolverStats::from_words(&got.solver);
    out.push(
        compare_exact(
            "dfsph_stats.iterations",
            &[s.iterations_v, s.iterations_d],
            &[w.iterations_v, w.iterations_d],
        ),
        None,
    );
    let want = [
        w.residual_v,
        w.residual_d,
        w.error_mean,
        w.error_max,
        w.dt,
        w.v_max,
    ];
    // ρ*/ρ0 − 1 and max(ρ/ρ0 − 1, 0) relative to |x| + 1 (differences of numbers near 1,
    // as `DensityScales`), the others relative to themselves.
    let own = |x: f32| own_scale(x as f64);
    let near_one = |x: f32| (x as f64).abs() + 1.0;
    let scales = [
        own(want[0]),
        near_one(want[1]),
        near_one(want[2]),
        near_one(want[3]),
        own(want[4]),
        own(want[5]),
    ];
    out.push(
        compare_against(
            "dfsph_stats.values",
            &[
                s.residual_v,
                s.residual_d,
                s.error_mean,
                s.error_max,
                s.dt,
                s.v_max,
            ],
            &want,
            &scales,
            tol,
        ),
        None,
    );
    // The obstacles' power is summed by index, in the step's start order, as on the GPU.
    // The DFSPH block the statistics must carry is the GPU's own (its values were judged
    // above); the rest from the CPU's state.
    let mut want = crate::cpu::stats::stats_block_with_power(
        &tr.next_sorted.pos,
        &tr.next_sorted.vel,
        &tr.next_sorted.id,
        &tr.end.density,
        (!tr.power.is_empty()).then_some(&tr.power[..]),
        fp,
        tr.stats.dt,
        Some(&tr.stats),
    );
    // The CPU's own block is what the run loop reads (dt, the count, the guards).
    let block = want;
    want.solver = s.to_words();
    let eos = eos_sensitivity(&tr.end.density, fp);
    for r in compare_stats(&got, &want, eos, tol) {
        out.push(r, None);
    }
    Ok(Checked {
        rows: out.rows,
        first: out.first,
        next: tr.next,
        carry: tr.carry,
        block,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nan_never_passes() {
        let r = compare_float("d", &[1.0, f32::NAN], &[1.0, 1.0], 1.0);
        assert!(!r.pass);
        assert_eq!(r.mismatches, 1);
        assert!(!compare_float("d", &[1.0], &[f32::NAN], 1.0).pass);
        assert!(!compare_float("d", &[f32::INFINITY], &[f32::INFINITY], 1.0).pass);
    }

    #[test]
    fn tolerance_is_relative() {
        assert!(compare_float("d", &[1000.009], &[1000.0], 1e-5).pass);
        let r = compare_float("d", &[1000.02], &[1000.0], 1e-5);
        assert!(!r.pass && (r.max_rel_error - 2e-5).abs() < 1e-6);
        assert!(
            !compare_float("d", &[1.0, 2.0], &[1.0], 1.0).pass,
            "length mismatch must fail"
        );
    }

    #[test]
    fn scaled_comparison_judges_against_the_field() {
        // An error of 1 on a field whose largest value is 100 is 1%, even where the value is 0.
        let r = compare_scaled("p", &[1.0, 100.0], &[0.0, 100.0], 0.02);
        assert!(r.pass && (r.max_rel_error - 0.01).abs() < 1e-12);
        assert!(!compare_scaled("p", &[1.0, 100.0], &[0.0, 100.0], 0.005).pass);
        assert!(!compare_scaled("p", &[f32::NAN], &[1.0], 1.0).pass);
    }

    #[test]
    fn exact_and_rank_checks() {
        assert!(compare_exact("x", &[1, 2, 3], &[1, 2, 3]).pass);
        let r = compare_exact("x", &[1, 5, 3], &[1, 2, 3]);
        assert_eq!((r.mismatches, r.max_abs_error), (1, 3.0));
        // Slot 0 holds particles 0 and 2, slot 2 holds particle 1.
        let starts = [0, 2, 2, 3, 3];
        assert!(compare_ranks("r", &[0, 2, 0], &[1, 0, 0], &starts).pass);
        assert!(
            !compare_ranks("r", &[0, 2, 0], &[1, 0, 1], &starts).pass,
            "duplicate rank"
        );
        assert!(
            !compare_ranks("r", &[0, 2, 0], &[0, 0, 2], &starts).pass,
            "rank past the slot"
        );
    }

    #[test]
    fn alpha_sign_flips_pass_only_at_the_cutoff() {
        let cpu = [1e-7f32, 2e-7];
        let flipped = [1e-7f32, -2e-7];
        let r = compare_alpha("a", &flipped, &cpu, |i| i == 1, 1e-5);
        assert!(
            r.pass && r.at_cutoff == 1 && r.max_abs_error == 0.0,
            "{r:?}"
        );
        // Bit for bit asked: the flag counts.
        assert!(!compare_alpha("a", &flipped, &cpu, |_| true, 0.0).pass);
        // No candidate at the cutoff: the flip is an error.
        let r = compare_alpha("a", &flipped, &cpu, |_| false, 1e-5);
        assert!(!r.pass && r.at_cutoff == 0 && r.worst.is_some_and(|w| w.index == 1));
        // A flip with another magnitude is an error wherever it is.
        assert!(!compare_alpha("a", &[1e-7, -2.1e-7], &cpu, |_| true, 1e-5).pass);
        assert!(!compare_alpha("a", &[1e-7, f32::NAN], &cpu, |_| true, 1e-5).pass);
    }

    /// The default dam break of 3 000 particles and its parameters.
    fn dam_break() -> (crate::scene::Scene, SimParams, crate::params::FluidParams) {
        use crate::params::{ConfigOverrides, PhysicsConfig, SphConfig};
        use crate::scene::{Scene, SceneKind};
        let cfg = SphConfig::new(3000, ConfigOverrides::default()).unwrap();
        let scene = Scene::new(SceneKind::DamBreak, 3000, cfg.spacing, 0);
        let fp = PhysicsConfig::default()
            .fluid_params(&cfg, scene.tank_min, scene.tank_max, scene.fluid_size.y)
            .unwrap();
        (scene, cfg.sim_params(), fp)
    }

    #[test]
    fn near_cutoff_finds_neighbours_and_images_at_h() {
        let (scene, sp, fp) = dam_break();
        let h = sp.h;
        let mid = (scene.tank_min + scene.tank_max) * 0.5;
        let near = |pos: &[Vec3]| near_cutoff(0, pos, None, &sp, &fp, 1e-5);
        assert!(near(&[mid, mid + Vec3::new(h, 0.0, 0.0)]));
        assert!(!near(&[mid, mid + Vec3::new(0.9 * h, 0.0, 0.0)]));
        assert!(!near(&[mid, mid + Vec3::new(1.01 * h, 0.0, 0.0)]));
        // Its own image across the wall x = min, h/2 away.
        let at_wall = Vec3::new(scene.tank_min.x + 0.5 * h, mid.y, mid.z);
        assert!(near(&[at_wall]));
        assert!(!near(&[Vec3::new(
            scene.tank_min.x + 0.4 * h,
            mid.y,
            mid.z
        )]));
        // Another particle's image: j 0.3 h from the wall, k 0.7 h from it (0.4 h apart).
        let k = Vec3::new(scene.tank_min.x + 0.7 * h, mid.y, mid.z);
        let j = Vec3::new(scene.tank_min.x + 0.3 * h, mid.y, mid.z);
        assert!(near(&[k, j]));
        assert!(!near(&[k, j + Vec3::new(0.0, 0.1 * h, 0.0)]));
    }

    #[test]
    fn eos_energy_is_judged_against_its_density_sensitivity() {
        let (_, _, fp) = dam_break();
        // Densities from 0.99 ρ0 to 1.012 ρ0, as a dam break's are.
        let d: Vec<f32> = (0..3000)
            .map(|k| fp.rest_density * (0.99 + 0.022 * (k % 101) as f32 / 100.0))
            .collect();
        let d = &d;
        let e = |d: &[f32]| {
            d.iter()
                .map(|&r| cpu::stats::eos_energy(r, &fp) as f64)
                .sum::<f64>()
        };
        // Every density up by 1e-6 relative moves the energy by about 1e-6 of the sensitivity.
        let up: Vec<f32> = d.iter().map(|&r| r * (1.0 + 1e-6)).collect();
        let s = eos_sensitivity(d, &fp);
        let moved = (e(&up) - e(d)).abs();
        assert!(
            s > 0.0 && e(d) > 0.0,
            "the trace must hold compressed particles"
        );
        assert!(
            moved > 0.3e-6 * s && moved < 3e-6 * s,
            "moved {moved}, sensitivity {s}"
        );
        let block = |eos: f32| StatsBlock {
            eos,
            ..StatsBlock::default()
        };
        let (a, b) = (block(e(d) as f32), block(e(&up) as f32));
        let rows = compare_stats(&b, &a, s, 1e-5);
        assert!(rows[2].pass, "{:?}", rows[2]);
        let rows = compare_stats(&b, &a, s, 1e-7);
        assert!(!rows[2].pass, "{:?}", rows[2]);
    }

    #[test]
    fn each_item_has_its_own_scale() {
        let r = compare_against("k", &[1.0, 11.0], &[0.0, 10.0], &[1e6, 10.0], 0.2);
        assert!(r.pass && (r.max_rel_error - 0.1).abs() < 1e-12, "{r:?}");
        assert!(!compare_against("k", &[1.0, 11.0], &[0.0, 10.0], &[1e6, 10.0], 0.05).pass);
        assert!(!compare_against("k", &[f32::NAN], &[0.0], &[1e9], 1.0).pass);
    }

    #[test]
    fn density_solve_scales_follow_the_densities() {
        // dt = 1 ms, rho0 = 1000: one unit of |alpha| weighs rho0 / dt^2 = 1e9 per kappa.
        let alpha = [1e-6f32, 2e-6];
        let sc = DensityScales {
            alpha: &alpha,
            dt: 1e-3,
            rho0: 1000.0,
        };
        let k = sc.kappa(&[0.0, 5.0], 1);
        // (dt is an f32: 1e-3 within 1e-7 relative.)
        assert!(
            (k[0] - 1000.0).abs() < 1e-3 && (k[1] - 2005.0).abs() < 1e-3,
            "{k:?}"
        );
        // Three kappas summed weigh three times.
        assert!((sc.kappa(&[0.0, 0.0], 3)[0] - 3000.0).abs() < 1e-3);
    }

    #[test]
    fn pressures_are_judged_against_the_stiffness() {
        // B = 4.5e5 Pa: one ulp of density near rho0 moves p by about 0.2 Pa, within 1e-5 of
        // |p| + B; 10 Pa is not.
        let b = 4.5e5f32;
        assert!(compare_eos("p", &[20.2], &[20.0], b, 1e-5).pass);
        assert!(!compare_eos("p", &[30.0], &[20.0], b, 1e-5).pass);
        assert!(!compare_eos("p", &[f32::NAN], &[20.0], b, 1.0).pass);
        // Far from rest the pressure itself is the scale.
        let r = compare_eos("p", &[2.0e6 + 2.0], &[2.0e6], b, 1.0);
        assert!((r.max_rel_error - 2.0 / 2.45e6).abs() < 1e-9);
    }

    #[test]
    fn reversal_scrambles_only_within_slots() {
        assert_eq!(
            reverse_within_slots(&[0, 2, 1, 3, 4], &[0, 2, 2, 5]),
            vec![2, 0, 4, 3, 1]
        );
    }
}
