//! The summary a headless run prints: what ran, how full the table is, densities, stage times.

use web_time::{Duration, Instant};

use glam::Vec3;
use serde::Serialize;

use crate::Result;
use crate::core::Stage;
use crate::cpu;
use crate::gpu::GpuNeighbours;
use crate::grid::{self, Grid};
use crate::params::SphConfig;

/// `x` with `sig` significant digits as a plain decimal (`7.478`, `0.000521`, `334.5`), in
/// scientific notation only outside 1e-4 ≤ |x| < 1e7 (`3.2e-9`), for lines people read.
pub fn plain(x: f64, sig: usize) -> String {
    let a = x.abs();
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    if !(1e-4..1e7).contains(&a) {
        return format!("{x:.prec$e}", prec = sig.saturating_sub(1));
    }
    let digits_before = a.log10().floor() as i64 + 1;
    let decimals = (sig as i64 - digits_before).max(0) as usize;
    format!("{x:.decimals$}")
}

/// Min, mean and max of a set of values.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Range {
    /// Smallest.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Largest.
    pub max: f64,
}

impl Range {
    /// The range of `values` (all zero when empty).
    pub fn of(values: &[f32]) -> Self {
        if values.is_empty() {
            return Self {
                min: 0.0,
                mean: 0.0,
                max: 0.0,
            };
        }
        let (mut min, mut max, mut sum) = (f64::INFINITY, f64::NEG_INFINITY, 0.0);
        for &v in values {
            let v = v as f64;
            min = min.min(v);
            max = max.max(v);
            sum += v;
        }
        Self {
            min,
            mean: sum / values.len() as f64,
            max,
        }
    }
}

/// What a headless run reports.
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    /// `cpu` or `gpu`.
    pub path: &'static str,
    /// Adapter description, on the GPU path.
    pub adapter: Option<String>,
    /// Where the particles came from.
    pub source: String,
    /// The configuration.
    pub config: SphConfig,
    /// Slots holding at least one particle.
    pub occupied_slots: u64,
    /// Particles per slot, N / T.
    pub load_factor: f64,
    /// Particles in the fullest slot.
    pub largest_slot: u32,
    /// Mean neighbours per particle (r² < h², self included); CPU path only.
    pub mean_neighbours: Option<f64>,
    /// Mean candidates examined per particle; CPU path only.
    pub mean_candidates: Option<f64>,
    /// Densities, kg/m³.
    pub density: Range,
    /// Wall time (CPU) or timestamp time (GPU) per stage, milliseconds.
    pub stage_ms: Vec<(String, f64)>,
    /// Wall time of the whole computation, milliseconds.
    pub total_ms: f64,
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Occupied slots and largest slot from `slot_start`.
fn occupancy(slot_start: &[u32]) -> (u64, u32) {
    slot_start.windows(2).fold((0, 0), |(occ, big), w| {
        let c = w[1] - w[0];
        (occ + (c > 0) as u64, big.max(c))
    })
}

impl Summary {
    fn new(
        path: &'static str,
        source: &str,
        config: &SphConfig,
        slot_start: &[u32],
        density: &[f32],
    ) -> Self {
        let (occupied_slots, largest_slot) = occupancy(slot_start);
        Self {
            path,
            adapter: None,
            source: source.to_string(),
            config: *config,
            occupied_slots,
            load_factor: config.particles as f64 / config.table_size as f64,
            largest_slot,
            mean_neighbours: None,
            mean_candidates: None,
            density: Range::of(density),
            stage_ms: Vec::new(),
            total_ms: 0.0,
        }
    }

    /// Runs the CPU reference (grid + density) and summarises it; also returns the densities.
    pub fn run_cpu(positions: &[Vec3], config: &SphConfig, source: &str) -> (Self, Vec<f32>) {
        let params = config.sim_params();
        let start = Instant::now();
        let (grid, times) = Grid::build_timed(positions, &params);
        let t_reorder = Instant::now();
        let sorted = grid::reorder::gather(positions, &grid.sorted_ids);
        let t_density = Instant::now();
        let out = cpu::density::density(&sorted, &grid.slot_start, &params);
        let density_time = t_density.elapsed();
        let mut density = vec![0.0; out.density.len()];
        for (&id, &d) in grid.sorted_ids.iter().zip(&out.density) {
            density[id as usize] = d;
        }
        let total = start.elapsed();
        let mut s = Self::new("cpu", source, config, &grid.slot_start, &density);
        let n = positions.len().max(1) as f64;
        s.mean_neighbours = Some(out.neighbour_pairs as f64 / n);
        s.mean_candidates = Some(out.candidates as f64 / n);
        s.stage_ms = vec![
            ("hash".into(), ms(times.hash)),
            ("scan".into(), ms(times.scan)),
            ("scatter".into(), ms(times.scatter)),
            ("reorder".into(), ms(t_density - t_reorder)),
            ("density".into(), ms(density_time)),
        ];
        s.total_ms = ms(total);
        (s, density)
    }

    /// Runs the GPU pipeline and summarises it; also returns the densities.
    pub fn run_gpu(
        gpu: &GpuNeighbours,
        positions: &[Vec3],
        config: &SphConfig,
        source: &str,
    ) -> Result<(Self, Vec<f32>)> {
        let start = Instant::now();
        let density = gpu.densities(positions)?;
        let total = start.elapsed();
        let slot_start = gpu.read_u32(&gpu.bufs.slot_start, config.table_size as usize + 1)?;
        let mut s = Self::new("gpu", source, config, &slot_start, &density);
        crate::grid::gpu::check_loop_budget(
            &gpu.ctx.info,
            config.particles,
            s.largest_slot,
            gpu.bufs.group_size,
        )?;
        s.adapter = Some(crate::gpu::context::describe(&gpu.ctx.info));
        if let Some(timer) = &gpu.timer {
            let times = timer.read_ms(&gpu.ctx)?;
            s.stage_ms = Stage::ALL
                .iter()
                .zip(times)
                .filter_map(|(st, t)| t.map(|t| (st.name().to_string(), t)))
                .collect();
        }
        s.total_ms = ms(total);
        Ok((s, density))
    }

    /// The summary as text lines.
    pub fn to_text(&self) -> String {
        let c = &self.config;
        let mut out = format!("gpu-sph ({} path) on {}\n", self.path, self.source);
        if let Some(a) = &self.adapter {
            out += &format!("adapter: {a}\n");
        }
        out += &format!(
            "N = {}, T = {}, h = {} m, m = {} kg, rho0 = {} kg/m^3, s = {} m\n",
            c.particles,
            c.table_size,
            c.smoothing_radius,
            c.particle_mass,
            c.rest_density,
            c.spacing
        );
        out += &format!(
            "slots: {} occupied ({:.1}%), load factor N/T = {:.3}, largest slot {}\n",
            self.occupied_slots,
            100.0 * self.occupied_slots as f64 / c.table_size as f64,
            self.load_factor,
            self.largest_slot
        );
        if let (Some(nb), Some(cand)) = (self.mean_neighbours, self.mean_candidates) {
            out += &format!("per particle: {nb:.2} neighbours, {cand:.2} candidates examined\n");
        }
        out += &format!(
            "density: min {:.3}, mean {:.3}, max {:.3} kg/m^3\n",
            self.density.min, self.density.mean, self.density.max
        );
        let stages: Vec<String> = self
            .stage_ms
            .iter()
            .map(|(n, t)| format!("{n} {t:.3}"))
            .collect();
        out += &format!(
            "time (ms): {}; total {:.3}",
            stages.join(", "),
            self.total_ms
        );
        out
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_numbers_read_as_people_write_them() {
        use super::plain;
        assert_eq!(plain(7.4784, 4), "7.478");
        assert_eq!(plain(334.49, 4), "334.5");
        assert_eq!(plain(0.00052124, 4), "0.0005212");
        assert_eq!(plain(1013.49, 4), "1013");
        assert_eq!(plain(-2.5e-9, 3), "-2.50e-9");
        assert_eq!(plain(0.0, 4), "0");
    }
}
