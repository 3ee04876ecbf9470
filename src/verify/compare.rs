//! The comparisons `--verify` judges a stage by (integers exactly, floats relative to a scale
//! each field's own doc gives; a NaN never passes), its report, and what a solver's
//! step-by-step checker hands back ([`Checked`], [`Rows`]).

use glam::Vec3;
use serde::Serialize;

use crate::core::Particles;
use crate::core::StatsBlock;
use crate::params::SimParams;

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
pub(crate) fn own_scale(c: f64) -> f64 {
    if c != 0.0 { c.abs() } else { 1.0 }
}

/// The shared float comparison: each error is divided by `scale(index, cpu value)`.
pub(crate) fn compare_with(
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

/// Compares a field with errors scaled by the field's largest magnitude on the CPU, so values
/// near zero (pressures at the free surface, accelerations that cancel) are judged against
/// the field's scale rather than themselves; a NaN never passes.
pub fn compare_scaled(stage: &str, gpu: &[f32], cpu: &[f32], tol: f64) -> StageReport {
    let scale = largest(cpu);
    compare_with(stage, gpu, cpu, tol, |_, _| scale)
}

/// A field's largest magnitude (at least the smallest positive f64): [`compare_scaled`]'s scale.
pub(crate) fn largest(cpu: &[f32]) -> f64 {
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
    use crate::boundary::walls;
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
    let around = walls::near(x, sp.h * (1.0 + tol as f32) + f32::EPSILON, fp);
    let images = walls::images(&around).any(|image| {
        pos.iter()
            .any(|&p| near(walls::image_at(p, &around, image)))
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

/// Compares Tait pressures p = B ((ρ/ρ0)^7 − 1): each error relative to |p| + B, the
/// magnitude of the terms the subtraction starts from (its rounding error bound), since near
/// ρ0 a pressure is a small difference of two numbers of size B and one ulp of ρ moves it by
/// about 7 B · 2^-24 (0.2 Pa at B = 4.5e5 Pa, where the first steps' pressures are tens of Pa).
pub fn compare_eos(stage: &str, gpu: &[f32], cpu: &[f32], stiffness: f32, tol: f64) -> StageReport {
    let b = (stiffness as f64).abs();
    compare_with(stage, gpu, cpu, tol, |_, c| c.abs() + b)
}

pub(crate) fn flat(v: &[Vec3]) -> Vec<f32> {
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
/// One step checked: its rows, the first that failed (named, where the checker names more
/// than the stage), the CPU's next state and carry and the CPU's statistics block,
/// which the run loop reads.
pub(crate) struct Checked {
    pub(crate) rows: Vec<StageReport>,
    pub(crate) first: Option<String>,
    pub(crate) next: Particles,
    pub(crate) carry: crate::core::Carry,
    pub(crate) block: StatsBlock,
}
/// Collects a step's rows and remembers the first that fails.
pub(crate) struct Rows {
    pub(crate) step: u64,
    pub(crate) rows: Vec<StageReport>,
    pub(crate) first: Option<String>,
}

impl Rows {
    pub(crate) fn push(&mut self, r: StageReport, iteration: Option<usize>) {
        if !r.pass && self.first.is_none() {
            self.first = Some(match iteration {
                Some(k) => format!("step {}, {} iteration {k}", self.step, r.stage),
                None => format!("step {}, {}", self.step, r.stage),
            });
        }
        self.rows.push(r);
    }
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
                .map(|&r| crate::cpu::stats::eos_energy(r, &fp) as f64)
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
