//! The grains' `--verify` (the GPU path against the CPU mirror, stage by stage) and `--bench`
//! (whole steps on both paths, the contact search against the all-pairs oracle).

use glam::Vec4;
use serde::Serialize;

use super::gpu::GpuGrains;
use super::*;
use crate::Result;

/// `--verify --model grains`: steps the GPU and the CPU path side by side from `setup` and
/// compares every stage's output each step (grid and reorder exactly, the contact and
/// integration floats within `tol` relative; 0 asks for identical bits), until `steps` steps
/// or the first mismatch.
pub fn verify(
    ctx: std::sync::Arc<crate::gpu::GpuContext>,
    setup: &GrainSetup,
    steps: u64,
    tol: f64,
) -> Result<crate::verify::Report> {
    use crate::verify::{Report, compare_exact, compare_float, merge};
    let gpu = GpuGrains::new(ctx, setup, setup.sim.n)?;
    let mut cpu = CpuGrains::new(setup);
    let flat = |v: &[Vec4]| -> Vec<f32> { bytemuck::cast_slice(v).to_vec() };
    let mut worst = Vec::new();
    let mut first = None;
    for step in 0..steps.max(1) {
        gpu.g.run(|_, e| gpu.encode_step(e))?;
        let g = gpu.frame()?;
        let c = cpu.step()?;
        let (gp, gv, gi) = gpu.raw_state()?;
        let rows = vec![
            compare_exact("scan.slot_start", &g.slot_start, &c.slot_start),
            compare_exact("reorder.sorted_id", &g.id, &c.id),
            compare_float("reorder.sorted_pos", &flat(&g.pos), &flat(&c.pos), tol),
            compare_float("reorder.sorted_vel", &flat(&g.vel), &flat(&c.vel), tol),
            compare_float(
                "grain_contacts.accel",
                &flat(&g.accel),
                &flat(&c.accel),
                tol,
            ),
            compare_float("grain_contacts.overlap", &g.overlap, &c.overlap, tol),
            compare_float(
                "grain_integrate.positions",
                &flat(&gp),
                &flat(&cpu.pos),
                tol,
            ),
            compare_float(
                "grain_integrate.velocities",
                &flat(&gv),
                &flat(&cpu.vel),
                tol,
            ),
            compare_exact("grain_integrate.particle_id", &gi, &cpu.id),
        ];
        if first.is_none() {
            if let Some(r) = rows.iter().find(|r| !r.pass) {
                first = Some(format!("step {step}, {}", r.stage));
            }
        }
        let failed = first.is_some();
        merge(&mut worst, rows);
        if failed {
            break;
        }
    }
    Ok(Report::of_steps(&setup.sim, tol, worst, first))
}

/// One row of the grains benchmark.
#[derive(Clone, Debug, Serialize)]
pub struct BenchRow {
    /// What was timed.
    pub what: String,
    /// Spheres.
    pub spheres: usize,
    /// Median wall time, ms.
    pub median_ms: f64,
    /// Overlapping pairs found (searches only).
    pub pairs: Option<u64>,
}

/// `--bench --model grains`: medians of whole steps on both paths, and with `brute_force` the
/// all-pairs contact search beside the grid's at each of `sizes`.
#[derive(Clone, Debug, Serialize)]
pub struct GrainBench {
    /// The rows.
    pub rows: Vec<BenchRow>,
    /// The GPU adapter.
    pub adapter: String,
    /// Compute dispatches per GPU step.
    pub dispatches_per_step: usize,
}

impl GrainBench {
    /// An aligned text table.
    pub fn to_table(&self) -> String {
        let mut s = format!(
            "grains benchmark (GPU adapter: {}; {} dispatches per GPU step)\n{:<44} {:>9} {:>12} {:>10}\n",
            self.adapter, self.dispatches_per_step, "what", "spheres", "median ms", "pairs"
        );
        for r in &self.rows {
            let pairs = r.pairs.map(|p| p.to_string()).unwrap_or_default();
            s += &format!(
                "{:<44} {:>9} {:>12.3} {:>10}\n",
                r.what, r.spheres, r.median_ms, pairs
            );
        }
        s
    }
}

fn median_ms(repeat: u32, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    f()?;
    let mut t = Vec::with_capacity(repeat as usize);
    for _ in 0..repeat.max(1) {
        let start = web_time::Instant::now();
        f()?;
        t.push(start.elapsed().as_secs_f64() * 1e3);
    }
    t.sort_by(f64::total_cmp);
    Ok(t[t.len() / 2])
}

/// Runs the grains benchmark (see [`GrainBench`]): `repeat` timed runs after one warm-up.
pub fn bench(
    ctx: std::sync::Arc<crate::gpu::GpuContext>,
    cfg: &GrainConfig,
    repeat: u32,
    brute_force: Option<&[usize]>,
) -> Result<GrainBench> {
    let setup = GrainSetup::pour(cfg)?;
    let n = setup.len();
    let mut rows = Vec::new();
    let mut cpu = CpuGrains::new(&setup);
    let ms = median_ms(repeat, || cpu.step().map(|_| ()))?;
    rows.push(BenchRow {
        what: "step, CPU path".into(),
        spheres: n,
        median_ms: ms,
        pairs: None,
    });
    let gpu = GpuGrains::new(ctx.clone(), &setup, setup.sim.n)?;
    let ms = median_ms(repeat, || gpu.g.run(|_, e| gpu.encode_step(e)))?;
    rows.push(BenchRow {
        what: "step, GPU path".into(),
        spheres: n,
        median_ms: ms,
        pairs: None,
    });
    for &size in brute_force.unwrap_or(&[]) {
        let c = GrainConfig {
            particles: size as u32,
            ..cfg.clone()
        };
        let s = squeezed(&c)?;
        let mut pairs = 0;
        let ms = median_ms(repeat, || {
            pairs = brute_force_contacts(&s.pos);
            Ok(())
        })?;
        rows.push(BenchRow {
            what: "all-pairs contact search, CPU (rayon)".into(),
            spheres: size,
            median_ms: ms,
            pairs: Some(pairs),
        });
        let ms = median_ms(repeat, || {
            pairs = grid_contacts(&s.pos, &s.sim);
            Ok(())
        })?;
        rows.push(BenchRow {
            what: "grid contact search, CPU (build + walk)".into(),
            spheres: size,
            median_ms: ms,
            pairs: Some(pairs),
        });
        let g = GpuGrains::new(ctx.clone(), &s, s.sim.n)?;
        let ms = median_ms(repeat, || {
            g.g.run(|_, e| {
                g.g.encode_build(e);
                g.encode_contacts(e);
            })
        })?;
        rows.push(BenchRow {
            what: "grid build + contacts, GPU path".into(),
            spheres: size,
            median_ms: ms,
            pairs: None,
        });
    }
    Ok(GrainBench {
        rows,
        adapter: crate::gpu::context::describe(&ctx.info),
        dispatches_per_step: gpu.dispatches_per_step(),
    })
}
