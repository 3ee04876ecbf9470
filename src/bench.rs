//! `--bench`: per-stage GPU and CPU times in one run, as medians over repetitions.
//!
//! GPU stage times come from timestamp queries when the adapter has them; otherwise each pass
//! is submitted and waited for on its own and timed on the host (the report says which).
//! On Mesa's lavapipe the "GPU" is the same CPU cores running the shaders: the ratio compares
//! the two code paths on one machine, not a GPU against a CPU.

use web_time::Instant;

use glam::Vec3;
use serde::Serialize;

use crate::Result;
use crate::core::Stage;
use crate::cpu;
use crate::gpu::GpuNeighbours;
use crate::grid::{self, Grid};
use crate::params::SimParams;

/// One stage's medians.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// Stage name.
    pub stage: String,
    /// GPU milliseconds (median).
    pub gpu_ms: Option<f64>,
    /// CPU milliseconds (median); `None` where the CPU path has no such stage.
    pub cpu_ms: Option<f64>,
    /// GPU / CPU.
    pub ratio: Option<f64>,
    /// Particles per second on the GPU path.
    pub gpu_particles_per_s: Option<f64>,
    /// Particles per second on the CPU path.
    pub cpu_particles_per_s: Option<f64>,
}

/// The whole benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    /// Particles.
    pub particles: u32,
    /// Table size.
    pub table_size: u32,
    /// Repetitions after warm-up.
    pub repeat: u32,
    /// How GPU stages were timed.
    pub gpu_timing: &'static str,
    /// Compute dispatches per grid build plus density.
    pub dispatches_per_build: usize,
    /// Rayon threads on the CPU path.
    pub cpu_threads: usize,
    /// Rows, the last one the total of grid build plus density.
    pub rows: Vec<BenchRow>,
    /// Host clock from submitting the whole GPU build plus density to its completion
    /// (includes the clears and copies between passes and the submission), median.
    pub gpu_wall_ms: Option<f64>,
    /// With `--brute-force`: the all-pairs density beside the grid at small N.
    pub brute_force: Option<Vec<BruteRow>>,
}

/// The all-pairs O(N²) density against the grid, on the CPU path, for one particle set.
#[derive(Clone, Debug, Serialize)]
pub struct BruteRow {
    /// Particles.
    pub particles: u32,
    /// All-pairs density, milliseconds (median).
    pub all_pairs_ms: f64,
    /// Grid build (hash, scan, scatter, reorder) plus density, milliseconds (median).
    pub grid_ms: f64,
    /// all_pairs_ms / grid_ms.
    pub speedup: f64,
    /// Largest relative difference between the two densities (summation order only).
    pub max_rel_diff: f64,
}

/// Times the all-pairs density and the grid path on each `(positions, params)` set.
pub fn brute_force(sets: &[(Vec<Vec3>, SimParams)], repeat: u32) -> Vec<BruteRow> {
    let repeat = repeat.max(1);
    sets.iter()
        .map(|(positions, params)| {
            let brute = cpu::density::all_pairs(positions, params);
            let grid_density = cpu_grid_density(positions, params);
            let max_rel_diff = brute
                .iter()
                .zip(&grid_density)
                .map(|(&b, &g)| ((b as f64 - g as f64) / b as f64).abs())
                .fold(0.0, f64::max);
            let (mut brute_ms, mut grid_ms) = (Vec::new(), Vec::new());
            for _ in 0..repeat {
                let t = Instant::now();
                std::hint::black_box(cpu::density::all_pairs(positions, params));
                brute_ms.push(ms_since(t));
                let t = Instant::now();
                std::hint::black_box(cpu_grid_density(positions, params));
                grid_ms.push(ms_since(t));
            }
            let all_pairs_ms = median(brute_ms).unwrap_or(0.0);
            let grid_ms = median(grid_ms).unwrap_or(0.0);
            BruteRow {
                particles: positions.len() as u32,
                all_pairs_ms,
                grid_ms,
                speedup: all_pairs_ms / grid_ms,
                max_rel_diff,
            }
        })
        .collect()
}

/// The CPU path's grid build plus density, densities in input order.
fn cpu_grid_density(positions: &[Vec3], params: &SimParams) -> Vec<f32> {
    let grid = Grid::build(positions, params);
    let sorted = grid::reorder::gather(positions, &grid.sorted_ids);
    let by_slot = cpu::density::density(&sorted, &grid.slot_start, params).density;
    let mut out = vec![0.0; by_slot.len()];
    for (&id, &d) in grid.sorted_ids.iter().zip(&by_slot) {
        out[id as usize] = d;
    }
    out
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    Some(v[v.len() / 2])
}

fn ms_since(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// How long the GPU works before anything is timed. Pipelines compile on their first dispatch,
/// and a GPU that idled holds a low clock until it has worked for a while: an NVIDIA H200
/// (2026-11-28) idles at 345 MHz and works at 1 980; after one warm-up step the 1M WCSPH bench
/// of 5 steps took 16.6 ms a step against 3.9 ms in a 200-step run (benchmarks.md).
pub const WARM_UP_SECONDS: f64 = 0.5;

/// Runs `work` once (the pipelines' compilation), then again until [`WARM_UP_SECONDS`] have
/// passed since that first run ended (at most 10 000 runs); returns how many ran.
fn warm_up(mut work: impl FnMut() -> Result<()>) -> Result<u32> {
    work()?;
    let start = Instant::now();
    let mut runs = 1;
    while start.elapsed().as_secs_f64() < WARM_UP_SECONDS && runs < 10_000 {
        work()?;
        runs += 1;
    }
    Ok(runs)
}

/// Times the GPU pipeline and the CPU reference on the same particles.
pub fn bench(
    gpu: &GpuNeighbours,
    positions: &[Vec3],
    params: &SimParams,
    repeat: u32,
) -> Result<BenchReport> {
    let repeat = repeat.max(1);
    let n = positions.len() as f64;
    gpu.upload_positions(positions);
    let full = |g: &GpuNeighbours, e: &mut wgpu::CommandEncoder| {
        g.encode_build(e);
        g.encode_density(e);
    };
    warm_up(|| {
        gpu.run(full)?;
        if let Some(t) = &gpu.timer {
            t.read_ms(&gpu.ctx)?;
        }
        Ok(())
    })?;

    let (gpu_stage, gpu_total, gpu_wall, timing) = time_gpu(gpu, repeat, full)?;
    let (cpu_stage, cpu_total) = time_cpu(positions, params, repeat);

    let row = |stage: &str, g: Option<f64>, c: Option<f64>| BenchRow {
        stage: stage.to_string(),
        gpu_ms: g,
        cpu_ms: c,
        ratio: g.zip(c).map(|(g, c)| g / c),
        gpu_particles_per_s: g.map(|g| n / (g / 1e3)),
        cpu_particles_per_s: c.map(|c| n / (c / 1e3)),
    };
    let mut rows: Vec<BenchRow> = Stage::ALL
        .iter()
        .enumerate()
        .map(|(k, s)| {
            row(
                s.name(),
                median(gpu_stage[k].clone()),
                median(cpu_stage[k].clone()),
            )
        })
        .filter(|r| r.gpu_ms.is_some() || r.cpu_ms.is_some())
        .collect();
    rows.push(row("total", median(gpu_total), median(cpu_total)));
    Ok(BenchReport {
        particles: positions.len() as u32,
        table_size: params.table_size,
        repeat,
        gpu_timing: timing,
        dispatches_per_build: gpu.dispatches_per_build(),
        cpu_threads: rayon::current_num_threads(),
        rows,
        gpu_wall_ms: median(gpu_wall),
        brute_force: None,
    })
}

/// Times per stage (by [`Stage::ALL`]'s index), whole builds and their wall clock, `repeat`
/// times each, with timestamp queries where the adapter has them, else one submit and wait per
/// pass; and how it timed.
#[allow(clippy::type_complexity)]
fn time_gpu(
    gpu: &GpuNeighbours,
    repeat: u32,
    full: impl Fn(&GpuNeighbours, &mut wgpu::CommandEncoder),
) -> Result<(Vec<Vec<f64>>, Vec<f64>, Vec<f64>, &'static str)> {
    let mut gpu_stage: Vec<Vec<f64>> = vec![Vec::new(); Stage::ALL.len()];
    let mut gpu_total = Vec::new();
    let mut gpu_wall = Vec::new();
    let timing = if let Some(timer) = &gpu.timer {
        for _ in 0..repeat {
            let t = Instant::now();
            gpu.run(&full)?;
            gpu_wall.push(ms_since(t));
            let times = timer.read_ms(&gpu.ctx)?;
            let mut sum = 0.0;
            for (k, t) in times.iter().enumerate() {
                if let Some(t) = t {
                    gpu_stage[k].push(*t);
                    sum += t;
                }
            }
            gpu_total.push(sum);
        }
        "timestamp queries"
    } else {
        let passes: [fn(&GpuNeighbours, &mut wgpu::CommandEncoder); 6] = [
            |g, e| {
                g.encode_clear(e);
                g.encode_hash(e)
            },
            |g, e| g.encode_scan(e),
            |g, e| g.encode_scatter(e),
            |g, e| g.encode_order(e),
            |g, e| g.encode_reorder(e),
            |g, e| g.encode_density(e),
        ];
        for _ in 0..repeat {
            let mut sum = 0.0;
            for (k, pass) in passes.iter().enumerate() {
                let t = Instant::now();
                gpu.run(*pass)?;
                let dt = ms_since(t);
                gpu_stage[k].push(dt);
                sum += dt;
            }
            gpu_total.push(sum);
            let t = Instant::now();
            gpu.run(&full)?;
            gpu_wall.push(ms_since(t));
        }
        "one submit and wait per pass, host clock (no timestamp queries)"
    };
    Ok((gpu_stage, gpu_total, gpu_wall, timing))
}

/// The CPU reference's times per stage (by [`Stage::ALL`]'s index) and whole builds, `repeat`
/// times each.
fn time_cpu(positions: &[Vec3], params: &SimParams, repeat: u32) -> (Vec<Vec<f64>>, Vec<f64>) {
    let state =
        grid::reorder::Particles::new(positions.to_vec(), vec![Vec3::ZERO; positions.len()]);
    let mut cpu_stage: Vec<Vec<f64>> = vec![Vec::new(); Stage::ALL.len()];
    let mut cpu_total = Vec::new();
    for _ in 0..repeat {
        let start = Instant::now();
        let (grid, times) = Grid::build_timed(positions, params);
        let t = Instant::now();
        // The whole state, as the GPU's reorder moves it (positions, velocities, ids).
        let sorted = grid::reorder::reorder(&state, &grid.sorted_ids).pos;
        let reorder_ms = ms_since(t);
        let t = Instant::now();
        let out = cpu::density::density(&sorted, &grid.slot_start, params);
        let density_ms = ms_since(t);
        cpu_total.push(ms_since(start));
        std::hint::black_box(out);
        cpu_stage[0].push(times.hash.as_secs_f64() * 1e3);
        cpu_stage[1].push(times.scan.as_secs_f64() * 1e3);
        cpu_stage[2].push(times.scatter.as_secs_f64() * 1e3);
        cpu_stage[4].push(reorder_ms);
        cpu_stage[5].push(density_ms);
    }
    (cpu_stage, cpu_total)
}

impl BenchReport {
    /// The report as a text table.
    pub fn to_table(&self) -> String {
        let f = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
        let mut s = format!(
            "bench: N = {}, T = {}, median of {} after {} s of warm-up; GPU timed by {}; {} dispatches per build + density; CPU {} threads\n",
            self.particles,
            self.table_size,
            self.repeat,
            WARM_UP_SECONDS,
            self.gpu_timing,
            self.dispatches_per_build,
            self.cpu_threads
        );
        s += &format!(
            "{:<10} {:>10} {:>10} {:>9} {:>14} {:>14}\n",
            "stage", "GPU ms", "CPU ms", "GPU/CPU", "GPU particles/s", "CPU particles/s"
        );
        for r in &self.rows {
            s += &format!(
                "{:<10} {:>10} {:>10} {:>9} {:>14} {:>14}\n",
                r.stage,
                f(r.gpu_ms, 3),
                f(r.cpu_ms, 3),
                f(r.ratio, 2),
                r.gpu_particles_per_s
                    .map_or("-".into(), |v| format!("{v:.3e}")),
                r.cpu_particles_per_s
                    .map_or("-".into(), |v| format!("{v:.3e}")),
            );
        }
        if let Some(w) = self.gpu_wall_ms {
            s += &format!("GPU build + density, submit to done on the host clock: {w:.3} ms\n");
        }
        if let Some(brute) = &self.brute_force {
            s += "\nall-pairs O(N^2) density beside the grid (CPU path; grid = build + density)\n";
            s += &format!(
                "{:<10} {:>14} {:>10} {:>9} {:>13}\n",
                "N", "all-pairs ms", "grid ms", "speed-up", "max rel diff"
            );
            for r in brute {
                s += &format!(
                    "{:<10} {:>14.3} {:>10.3} {:>9.1} {:>13.2e}\n",
                    r.particles, r.all_pairs_ms, r.grid_ms, r.speedup, r.max_rel_diff
                );
            }
        }
        s.pop();
        s
    }
}

/// `--bench --steps K`: a whole fluid step, pass by pass, on both paths.
#[derive(Clone, Debug, Serialize)]
pub struct StepBenchReport {
    /// Particles.
    pub particles: u32,
    /// The solver's name (`wcsph`, `dfsph`).
    pub solver: &'static str,
    /// Steps per repetition.
    pub steps: u64,
    /// Repetitions after the warm-up ([`WARM_UP_SECONDS`] of steps).
    pub repeat: u32,
    /// How GPU passes were timed.
    pub gpu_timing: &'static str,
    /// Rayon threads on the CPU path.
    pub cpu_threads: usize,
    /// Per pass: mean milliseconds per step (a pass dispatched several times in a step, as
    /// the DFSPH solve passes are, summed), median over the repetitions.
    pub rows: Vec<BenchRow>,
    /// GPU: host clock from submitting one step to its completion, ms per step (median).
    pub gpu_step_ms: f64,
    /// CPU: wall time of one step, ms (median).
    pub cpu_step_ms: f64,
    /// GPU compute passes (dispatches) per step, where timestamp queries count them.
    pub gpu_dispatches_per_step: Option<f64>,
    /// GPU dispatches encoded per step (the encoder's count, every adapter).
    pub gpu_dispatches_encoded: f64,
    /// Of those, the ones that did work: DFSPH's iterations past a solve's convergence
    /// launch and exit at once and are not counted here.
    pub gpu_dispatches_working: f64,
    /// DFSPH: mean iterations per step of the divergence-free and the constant-density
    /// solve on the GPU path.
    pub gpu_iterations: Option<[f64; 2]>,
    /// The same on the CPU path.
    pub cpu_iterations: Option<[f64; 2]>,
}

/// The bench's additions to the driver loop: each step's wall time on the host clock, from
/// the end of the step before to its own block read, and each pass's time where the path
/// times its passes. Steps run one at a time (the state of each is "wanted"), so a step's time
/// is its own.
#[derive(Default)]
struct Timed {
    last: Option<Instant>,
    wall: f64,
    steps: u64,
    sums: Vec<Option<f64>>,
    passes: usize,
    timed: bool,
    iterations: [u64; 2],
}

impl Timed {
    fn new() -> Self {
        Self {
            last: Some(Instant::now()),
            ..Default::default()
        }
    }

    /// Mean milliseconds per step taken.
    fn per_step(&self, ms: f64) -> f64 {
        ms / self.steps.max(1) as f64
    }
}

impl<B: crate::run::Backend + ?Sized> crate::run::Hooks<B> for Timed {
    fn wants_state(&mut self, _k: u64, _last: bool) -> bool {
        true
    }

    fn row(&mut self, st: &crate::run::StepStats) -> Result<()> {
        self.iterations[0] += u64::from(st.iterations_v);
        self.iterations[1] += u64::from(st.iterations_d);
        let now = Instant::now();
        if let Some(t) = self.last {
            self.wall += (now - t).as_secs_f64() * 1e3;
        }
        self.steps += 1;
        self.last = Some(now);
        Ok(())
    }

    fn stepped(
        &mut self,
        backend: &mut B,
        _at: &crate::run::RunFrom,
        _wants_state: bool,
    ) -> Result<crate::run::Flow> {
        if let Some((ms, count)) = backend.pass_times()? {
            self.timed = true;
            self.passes += count;
            self.sums.resize(ms.len(), None);
            for (s, ms) in self.sums.iter_mut().zip(ms) {
                if let Some(ms) = ms {
                    *s = Some(s.unwrap_or(0.0) + ms);
                }
            }
        }
        // The host work after a step (the timer's readback) is not the next step's.
        self.last = Some(Instant::now());
        Ok(crate::run::Flow::Go)
    }
}

/// Times `steps` steps from `start` on both paths, `repeat` times, through the run's driver
/// loop (obstacles placed, emitters and open sides as in a run; the guards
/// [`crate::run::Guards::unjudged`]): each GPU pass by timestamp queries (where the adapter has
/// them) and each CPU stage by the host clock, a stage run several times in a step (the DFSPH
/// solve passes) summed. Both paths start from the same state each repetition.
pub fn bench_steps(
    sim: &mut crate::gpu::fluid::Simulation,
    cpu_sim: impl Fn() -> crate::run::CpuSimulation,
    start: &grid::reorder::Particles,
    emitters: &crate::emitter::Emitters,
    steps: u64,
    repeat: u32,
) -> Result<StepBenchReport> {
    use crate::run::{Backend, Course, Guards, RunFrom, Until, drive};
    let repeat = repeat.max(1);
    let steps = steps.max(1);
    let n = start.len() as f64;
    let timed = sim.grid.timer.is_some();
    sim.upload(start);
    warm_up(|| {
        sim.submit_step()?;
        sim.read_stats()?;
        sim.pass_times()?;
        Ok(())
    })?;
    let stages = Stage::ALL.len();
    let (mut gpu_stage, mut gpu_step, mut passes): (Vec<Vec<f64>>, Vec<f64>, Vec<f64>) =
        (vec![Vec::new(); stages], Vec::new(), Vec::new());
    let (mut encoded, mut working) = (Vec::new(), Vec::new());
    let mut gpu_iterations = [Vec::new(), Vec::new()];
    let fp = sim.fluid_params;
    let guards = Guards::unjudged(sim.stages.weakly_compressible());
    let course = Course {
        fp: &fp,
        guards: &guards,
        emitters,
    };
    for _ in 0..repeat {
        sim.upload(start);
        // As a headless run steps: the step, its statistics block, the block read back.
        let mut hooks = Timed::new();
        let (before, idle) = (sim.grid.dispatches.get(), sim.idle_dispatches());
        drive(
            sim,
            &mut RunFrom::default(),
            Until::steps(steps),
            &course,
            &mut hooks,
        )?;
        let all = (sim.grid.dispatches.get() - before) as f64;
        encoded.push(hooks.per_step(all));
        working.push(hooks.per_step(all - (sim.idle_dispatches() - idle) as f64));
        for (v, &it) in gpu_iterations.iter_mut().zip(&hooks.iterations) {
            v.push(hooks.per_step(it as f64));
        }
        for (k, s) in hooks.sums.iter().enumerate() {
            if let Some(s) = s {
                gpu_stage[k].push(hooks.per_step(*s));
            }
        }
        gpu_step.push(hooks.per_step(hooks.wall));
        if hooks.timed {
            passes.push(hooks.per_step(hooks.passes as f64));
        }
    }

    let solver = sim.solver_name();
    let (cpu_stage, cpu_step, cpu_iterations) = cpu_sittings(cpu_sim, &course, steps, repeat)?;
    // Reported for a solver that solves (one that ran no iteration has none to report).
    let iterations = |v: [Vec<f64>; 2]| {
        let [a, b] = v;
        median(a)
            .zip(median(b))
            .map(|(a, b)| [a, b])
            .filter(|it| it.iter().any(|&i| i > 0.0))
    };

    let rows = bench_rows(&gpu_stage, &cpu_stage, n);
    Ok(StepBenchReport {
        particles: start.len() as u32,
        solver,
        steps,
        repeat,
        gpu_timing: if timed {
            "timestamp queries"
        } else {
            "none (no timestamp queries: whole steps on the host clock only)"
        },
        cpu_threads: rayon::current_num_threads(),
        rows,
        gpu_step_ms: median(gpu_step).unwrap_or(0.0),
        cpu_step_ms: median(cpu_step).unwrap_or(0.0),
        gpu_dispatches_per_step: if timed { median(passes) } else { None },
        gpu_dispatches_encoded: median(encoded).unwrap_or(0.0),
        gpu_dispatches_working: median(working).unwrap_or(0.0),
        gpu_iterations: iterations(gpu_iterations),
        cpu_iterations: iterations(cpu_iterations),
    })
}

/// The CPU path's sittings of [`bench_steps`]: `repeat` runs of `steps` steps, each from a
/// fresh `cpu_sim()` through the driver loop, every stage timed. Returns each stage's ms a
/// step per sitting, the whole step's, and both solves' iterations a step.
#[allow(clippy::type_complexity)]
fn cpu_sittings(
    cpu_sim: impl Fn() -> crate::run::CpuSimulation,
    course: &crate::run::Course<'_>,
    steps: u64,
    repeat: u32,
) -> Result<(Vec<Vec<f64>>, Vec<f64>, [Vec<f64>; 2])> {
    use crate::run::{RunFrom, Until, drive};
    let stages = Stage::ALL.len();
    let (mut cpu_stage, mut cpu_step): (Vec<Vec<f64>>, Vec<f64>) =
        (vec![Vec::new(); stages], Vec::new());
    let mut cpu_iterations = [Vec::new(), Vec::new()];
    for _ in 0..repeat {
        let mut sums = vec![None::<f64>; stages];
        let mut run = cpu_sim();
        let mut hooks = Timed::new();
        let (stepped, times) = cpu::clock::time_stages(|| {
            drive(
                &mut run,
                &mut RunFrom::default(),
                Until::steps(steps),
                course,
                &mut hooks,
            )
        });
        stepped?;
        for (stage, ms) in times {
            let k = Stage::ALL.iter().position(|s| *s == stage).unwrap_or(0);
            sums[k] = Some(sums[k].unwrap_or(0.0) + ms);
        }
        for (k, s) in sums.iter().enumerate() {
            if let Some(s) = s {
                cpu_stage[k].push(hooks.per_step(*s));
            }
        }
        cpu_step.push(hooks.per_step(hooks.wall));
        for (v, &it) in cpu_iterations.iter_mut().zip(&hooks.iterations) {
            v.push(hooks.per_step(it as f64));
        }
    }
    Ok((cpu_stage, cpu_step, cpu_iterations))
}

/// The report's rows: each stage timed on either path, its medians, their ratio and the
/// particles a second they give at `n` particles.
fn bench_rows(gpu_stage: &[Vec<f64>], cpu_stage: &[Vec<f64>], n: f64) -> Vec<BenchRow> {
    Stage::ALL
        .iter()
        .enumerate()
        .map(|(k, s)| {
            let (g, c) = (median(gpu_stage[k].clone()), median(cpu_stage[k].clone()));
            BenchRow {
                stage: s.name().to_string(),
                gpu_ms: g,
                cpu_ms: c,
                ratio: g.zip(c).map(|(g, c)| g / c),
                gpu_particles_per_s: g.map(|g| n / (g / 1e3)),
                cpu_particles_per_s: c.map(|c| n / (c / 1e3)),
            }
        })
        .filter(|r| r.gpu_ms.is_some() || r.cpu_ms.is_some())
        .collect()
}

impl StepBenchReport {
    /// The report as a text table.
    pub fn to_table(&self) -> String {
        let f = |v: Option<f64>, p: usize| v.map_or("-".to_string(), |v| format!("{v:.p$}"));
        let mut s = format!(
            "bench: {} whole step, N = {}, {} steps per repetition, median of {} after {} s of warm-up steps; GPU passes timed by {}; CPU {} threads\n",
            self.solver,
            self.particles,
            self.steps,
            self.repeat,
            WARM_UP_SECONDS,
            self.gpu_timing,
            self.cpu_threads
        );
        s += &format!(
            "{:<16} {:>10} {:>10} {:>9}\n",
            "pass (ms/step)", "GPU ms", "CPU ms", "GPU/CPU"
        );
        for r in &self.rows {
            s += &format!(
                "{:<16} {:>10} {:>10} {:>9}\n",
                r.stage,
                f(r.gpu_ms, 3),
                f(r.cpu_ms, 3),
                f(r.ratio, 2)
            );
        }
        s += &format!(
            "GPU whole step, submit to done on the host clock: {:.3} ms/step; dispatches per step: {:.1} encoded, {:.1} working, {} timed\n",
            self.gpu_step_ms,
            self.gpu_dispatches_encoded,
            self.gpu_dispatches_working,
            f(self.gpu_dispatches_per_step, 1)
        );
        if let (Some(g), Some(c)) = (self.gpu_iterations, self.cpu_iterations) {
            s += &format!(
                "iterations per step (divergence, density): GPU {:.2}, {:.2}; CPU {:.2}, {:.2}\n",
                g[0], g[1], c[0], c[1]
            );
        }
        s += &format!("CPU whole step: {:.3} ms/step", self.cpu_step_ms);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn warm_up_works_for_its_time_and_stops_at_an_error() {
        let start = Instant::now();
        let mut runs = 0;
        let counted = warm_up(|| {
            runs += 1;
            std::thread::sleep(std::time::Duration::from_millis(50));
            Ok(())
        })
        .unwrap();
        assert_eq!(counted, runs);
        // The first run, then runs until WARM_UP_SECONDS have passed after it.
        assert!(runs >= 2, "{runs} runs");
        assert!(start.elapsed().as_secs_f64() >= 0.05 + WARM_UP_SECONDS);
        let mut calls = 0;
        let failed = warm_up(|| {
            calls += 1;
            if calls == 3 {
                Err(crate::Error::Device("lost".into()))
            } else {
                Ok(())
            }
        });
        assert!(failed.is_err() && calls == 3);
    }
}
