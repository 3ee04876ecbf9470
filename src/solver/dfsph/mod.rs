//! The solvers' stages on the CPU: the mirror of the `dfsph_*` WGSL stages, one function per
//! pass, with the same loops, the same pair order and the same `f32` operations, so the two
//! paths agree bit for bit on lavapipe. Both solvers are these stages: DFSPH's step (below)
//! and WCSPH's, the same stages without the solves ([`DfsphParams::is_wcsph`]).
//!
//! Divergence-free SPH (Bender & Koschier, "Divergence-Free Smoothed Particle Hydrodynamics",
//! SCA 2015; "Divergence-Free SPH for Incompressible and Viscous Fluids", IEEE TVCG 2017),
//! arranged as SPlisHSPlasH's `TimeStepDFSPH` arranges it. One step:
//! 1. neighbour grid and reorder (as for WCSPH), then [`dfsph_density`]: the density
//!    ρ_i = m Σ_j W_ij and the factor α_i = ρ_i / (|Σ_j m∇W_ij|² + Σ_j |m∇W_ij|²) (BK17 eq. 9);
//!    then the coarse levels both solves share ([`coarse_levels`]: [`dfsph_galerkin`],
//!    [`dfsph_levels`]; [`cells`] says what they are for);
//! 2. the divergence-free solve ([`Solve::Divergence`]): the residual e_i = Dρ_i/Dt · dt/ρ0
//!    from the density change rate Dρ_i/Dt = Σ_j m (v_i − v_j)·∇W_ij ([`dfsph_rate`]), the
//!    stiffness increment ω α_i e_i ρ0/dt² that keeps the stiffness applied so far, κ_sum_i,
//!    at or above 0, then v_i −= dt Σ_j m (κ_i/ρ_i + κ_j/ρ_j) ∇W_ij ([`dfsph_pressure`]), after
//!    every even iteration with a coarse correction added to the increments ([`dfsph_restrict`],
//!    [`dfsph_coarse`], [`dfsph_prolong`]), until the mean residual (|e_i| where κ_sum_i > 0,
//!    max(e_i, 0) elsewhere) ≤ η_v;
//! 3. [`dfsph_accel`]: gravity and viscosity (the standard SPH viscosity of ν, 1e-3 m²/s by
//!    default, both solvers; Monaghan's artificial viscosity Π term for term where α > 0);
//!    [`dfsph_timestep`]: dt = λ s / max|v + a dt_prev|, at most K times the explicit
//!    viscosity's stability limit (K = `--viscous-substeps`, default 1), clamped to
//!    [dt_min, dt_max] (dt_max at most the body-force bound √(0.003 s/|g|),
//!    [`crate::params::dfsph_dt_max`]); [`dfsph_predict`]: v += a dt/n, n ≤ K substeps each within
//!    the limit, [`dfsph_accel`] again before each later one; the last leaves v*;
//! 4. the constant-density solve ([`Solve::Density`]): the same passes with the residual
//!    e_i = (ρ_i + dt Dρ_i/Dt)/ρ0 − 1 and the increment ω |α_i| e_i ρ0/dt², until the mean
//!    residual ≤ η (at least two iterations);
//! 5. [`dfsph_integrate`]: x += v dt and the tank's clamp;
//! 6. the grid and [`dfsph_density`] again at the new positions, which gives this step's
//!    density error (mean and maximum of max(ρ/ρ0 − 1, 0)) and is the next step's step 1.
//!
//! The solves: Bender & Koschier's are one-sided relaxed Jacobi iterations (only compression
//! is corrected, so the free surface pulls nothing together); here each is the projected
//! Jacobi iteration on the stiffness summed over the solve, κ_sum ≥ 0 (the complementarity
//! problem the one-sided solve approximates: an expansion takes back stiffness applied before,
//! never more), with a coarse-grid correction every other iteration, whose iterations do not
//! grow with the water's depth (the relaxed Jacobi solve's grew with its square: [`cells`]).
//! Each step starts from no stiffness: the coarse levels rebuild the water's pressure within
//! the step, and every warm start from the last step's that was measured either left deep
//! resting columns moving or stopped them at the cap (docs/results.md, what was tried).
//!
//! One kernel throughout the solver, the run's [`kernel`] (Wendland's C2 function at 3
//! spacings by default, [`crate::kernel::wendland_c2`] says why; the cubic spline at 2 by
//! choice): its value [`kernel::w`] and its own gradient [`kernel::grad`], for the density, α,
//! the density change rate and the pressure accelerations, so the solve's linearisation is the
//! derivative of the density it corrects. (Density-only runs keep poly6.) Both solves'
//! relaxation ω follows from the kernel and its support ([`crate::params::dfsph_relaxation`]).
//!
//! WCSPH (weakly compressible SPH, Becker & Teschner 2007; Monaghan 1994) runs the same
//! stages with the pressure of the Tait equation of state instead of the solves: step 1 with ρ
//! alone (α goes unused, so its sums are skipped); no coarse levels and no divergence-free
//! solve; step 3 with the acoustic CFL condition beside the others (dt ≤ λ h / max(c(ρ_i) +
//! |v_i|), [`dfsph_timestep`]); in place of step 4, [`dfsph_eos`] (κ_i = p_i/ρ_i) and one
//! [`dfsph_pressure`] pass with the step's dt ([`wcsph_pressure`]): v' = v* − dt Σ_j m
//! (p_i/ρ_i² + p_j/ρ_j²) ∇W_ij, so the step is symplectic Euler with the symmetric pressure
//! force; then steps 5 and 6. Its density and its pressure force take the run's kernel, one
//! kernel for both, so the force is the gradient of the energy the equation of state stores
//! and does no work of its own: a wide resting column keeps its energy at α = 0 and comes to
//! rest (docs/results.md). The walls, the obstacles, the viscosities and the mouse force are
//! the stages', so both solvers share them.
//!
//! Walls: the tank's mirror particles (Colagrossi & Landrini 2003, see [`crate::boundary::tank`],
//! which the stages reach as [`crate::boundary::walls`]) take part in every sum
//! ([`group_pairs`]): an image of j carries j's density and stiffness, and j's velocity with
//! the normal components reflected in the density change rate (free slip,
//! [`crate::boundary::walls::image_vector`]) and in the viscosity as the walls' slip length
//! says ([`crate::boundary::walls::image_viscous_velocity`], free slip by default), the wall
//! model of both solvers. Images add
//! to the gradient sum of α_i but not to its Σ|m∇W_ij|² term, since an image is not an
//! unknown of its own, as SPlisHSPlasH treats boundary neighbours.
//!
//! Particle deficiency: with fewer than
//! [`DFSPH_MIN_NEIGHBOURS`](crate::params::DFSPH_MIN_NEIGHBOURS) neighbours (images included) α_i
//! is stored negated: the divergence-free solve skips the particle and its divergence does not
//! count towards the residual (SPlisHSPlasH's guard, which only that solve has), while the
//! constant-density solve uses |α_i|. Zeroing α for both solves let the sparse toe of a dam break
//! pass through itself (density errors of 70–160%, measured) and the front run 30% ahead of Martin
//! & Moyce.
//!
//! The implied pressure: the stiffness a solve applies is κ_i = p_i/ρ_i (the update is the
//! symmetric pressure gradient −dt Σ m (p_i/ρ_i² + p_j/ρ_j²)∇W_ij), so the pressure the
//! constant-density solve implies is p_i = ρ_i Σ_iterations κ_i, [`implied_pressure`].
//!
//! Pair lists: positions stay put through a step's two solves, so [`dfsph_density`]'s walk
//! records every pair it finds ([`PairList`], in walk order, 8 bytes a pair: the candidate,
//! its image's walls and the kernel gradient's factor) and the solves' [`dfsph_rate`] and
//! [`dfsph_pressure`] passes and [`dfsph_accel`] replay the list instead of walking again,
//! recomputing each pair's d from the group's [`Frame`] with the walk's operations: the same
//! terms in the same order, so the same bits as a walk (and as the GPU, which walks each
//! time). Measured on the 20k dam break: 4.2× less time a step over the first 150 steps; the
//! 8-byte pairs took another 15–20% off a 100k step (measured on the CPU path).
//!
//! Residuals are reduced in a fixed tree (no float atomics): [`block_sums`] per block of 256
//! particles (pairwise halving), then [`reduce_total`]; the GPU's workgroups do exactly this.
//!
//! Files: one per stage, named after its WGSL twin (`density.rs` mirrors `dfsph_density.wgsl`,
//! `rate.rs` `dfsph_rate.wgsl`, …), `pairs.rs` the pair walk of `dfsph_pairs.wgsl`, `blocks.rs`
//! the fixed-tree reductions; this file chains them into [`solve`] and [`dfsph_step`].
//!
//! Worked example (Wendland C2, h = 1, m = 1, ρ0 = 1, no walls in reach): two particles 0.5
//! apart have W(0.5) = 21/(2π) · 0.0625 · 3 = 0.6267 and ρ = 21/(2π) + 0.6267 = 3.9689 each;
//! |m∇W| = 210/π · 0.125 · 0.5 = 4.1778, so α = 3.9689 / (2 · 4.1778²) = 0.1137 (but 0 here in
//! practice: two particles are far below the neighbour threshold; the unit tests lower it).

pub mod accel;
pub mod blocks;
pub mod cells;
pub mod coarse;
pub mod control;
pub mod density;
pub mod eos;
pub mod galerkin;
pub mod gpu;
pub mod integrate;
pub mod levels;
pub mod pairs;
pub mod predict;
pub mod pressure;
pub mod prolong;
pub mod rate;
pub mod restrict;
pub mod run;
pub mod timestep;
pub mod verify;

pub use accel::*;
pub use blocks::*;
pub use cells::*;
pub use coarse::*;
pub use control::*;
pub use density::*;
pub use eos::*;
pub use galerkin::*;
pub use integrate::*;
pub use levels::*;
pub use pairs::*;
pub use predict::*;
pub use pressure::*;
pub use prolong::*;
pub use rate::*;
pub use restrict::*;
pub use timestep::*;

use glam::Vec3;

use crate::boundary::Boundary;
use crate::core::Stage;
use crate::cpu::clock::{record_grid, timed};
use crate::cpu::interact::{InteractParams, interact};
use crate::grid::Grid;
use crate::grid::reorder::{self, Particles};
use crate::params::{CoarseParams, DfsphParams, FluidParams, SimParams};

pub use crate::core::SolverStats;
/// Particles a DFSPH run may hold: a [`Pair`] packs the candidate's index into 26 bits.
pub use crate::core::limits::DFSPH_MAX_PARTICLES as MAX_PARTICLES;
pub use crate::kernel;

/// The pressure the constant-density solve implied, p_i = ρ_i κ_sum_i (see the module doc).
pub fn implied_pressure(density: &[f32], kappa_sum: &[f32]) -> Vec<f32> {
    density.iter().zip(kappa_sum).map(|(r, k)| r * k).collect()
}

/// The state a DFSPH run carries from step to step besides the particles.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DfsphCarry {
    /// dt of the last step (the divergence solve's dt), s.
    pub dt_prev: f32,
    /// The solves' iteration counts of the last steps, which cap the next step's.
    pub budget: IterationBudget,
}

impl DfsphCarry {
    /// A run's start: dt_prev = dt_max, no counts yet.
    pub fn new(dp: &DfsphParams) -> Self {
        Self {
            dt_prev: dp.dt_max,
            budget: IterationBudget::default(),
        }
    }

    /// The carry as the shared layer holds it: `{"dt_prev": …, "iteration_budget": …}`. The f32
    /// goes through JSON's f64 exactly, so [`DfsphCarry::from_carry`] gives back the same bits.
    pub fn to_carry(&self) -> crate::solver::Carry {
        crate::solver::Carry(serde_json::json!({
            "dt_prev": self.dt_prev,
            "iteration_budget": self.budget,
        }))
    }

    /// The inverse of [`DfsphCarry::to_carry`]; a fresh run's ([`DfsphCarry::new`]) from the
    /// default carry. Err names what does not read.
    pub fn from_carry(c: &crate::solver::Carry, dp: &DfsphParams) -> Result<Self, String> {
        if c.0.is_null() {
            return Ok(Self::new(dp));
        }
        #[derive(serde::Deserialize)]
        struct Stored {
            dt_prev: f32,
            iteration_budget: IterationBudget,
        }
        let s: Stored = serde_json::from_value(c.0.clone())
            .map_err(|e| format!("the solver's carried state does not read: {e}"))?;
        if !(s.dt_prev.is_finite() && s.dt_prev > 0.0) {
            return Err(format!(
                "the solver's previous dt {} is not a positive number",
                s.dt_prev
            ));
        }
        Ok(Self {
            dt_prev: s.dt_prev,
            budget: s.iteration_budget,
        })
    }
}

/// Everything one solve computed, for verification.
#[derive(Clone, Debug, Default)]
pub struct SolveTrace {
    /// Velocities after each pressure update (iteration 1's first).
    pub velocities: Vec<Vec<Vec3>>,
    /// Σ κ after each pressure update (iteration 1's first).
    pub kappa_sums: Vec<Vec<f32>>,
    /// Each rate pass (iteration 0's, on the velocities the solve starts from, first).
    pub rates: Vec<Rate>,
    /// The stiffness increments of each pressure update (iteration 1's first): the rate pass's
    /// before, or the coarse correction's where one followed it.
    pub kappas: Vec<Vec<f32>>,
    /// The control state after each decision.
    pub states: Vec<SolveState>,
    /// The residual total after each iteration (0: the solve's start), as the GPU's rate
    /// passes leave them.
    pub totals: Vec<Total>,
    /// Σ κ applied per particle.
    pub kappa_sum: Vec<f32>,
    /// Each coarse correction (iterations 0, 2, 4, … that go on).
    pub corrections: Vec<Correction>,
}

/// One coarse correction of a solve, after the rate pass of iteration `k`.
#[derive(Clone, Debug, Default)]
pub struct Correction {
    /// The iteration whose rate pass it follows.
    pub k: u32,
    /// The residual on the level-0 cells (`dfsph_restrict`, fixed point).
    pub rhs: Vec<i64>,
    /// The coarse solution (`dfsph_coarse`).
    pub solution: CoarseSolution,
}

/// A step's coarse levels: the grid, the level-0 operator `dfsph_galerkin` assembled (fixed
/// point) and every level's rows (`dfsph_levels`), which both solves share.
#[derive(Clone, Debug)]
pub struct Coarse {
    /// The grid and the coarse solve's settings.
    pub cp: CoarseParams,
    /// The level-0 operator's stored halves, and the particles that anchor the pressure.
    pub op: Operator,
    /// Every level's rows.
    pub rows: Vec<[f32; 27]>,
}

/// Which iterations a coarse correction follows: the rate pass of every even one that goes on
/// (the solve's first, k = 0, first). A correction on every iteration, added to
/// the Jacobi increment it shares the residual with, overshoots what both correct and
/// diverges (measured); alternate iterations leave the Jacobi sweep between them to take out
/// what the cells cannot see.
pub fn corrects_after(k: u32) -> bool {
    k % 2 == 0
}

/// The coarse correction after iteration `k` of a solve: the residual `rate.residual`
/// restricted to the coarse cells (`dfsph_restrict`), solved there (`dfsph_coarse`) and
/// prolonged into the increments `kappa` (`dfsph_prolong`), at the Σ κ `kappa_sum` so far.
#[allow(clippy::too_many_arguments)]
fn correction(
    which: Solve,
    k: u32,
    sorted: &Particles,
    rate: &Rate,
    da: &DensityAlpha,
    coarse: &Coarse,
    kappa_sum: &[f32],
    kappa: &mut [f32],
    dt: f32,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> Correction {
    let cp = &coarse.cp;
    let rhs = timed(Stage::DfsphRestrict, || {
        dfsph_restrict(
            which,
            k,
            &sorted.pos,
            &rate.residual,
            kappa_sum,
            &da.density,
            &da.alpha,
            cp,
        )
    });
    let solution = timed(Stage::DfsphCoarse, || {
        dfsph_coarse(&coarse.rows, coarse.op.anchors, &rhs, cp)
    });
    timed(Stage::DfsphProlong, || {
        dfsph_prolong(
            which,
            k,
            &sorted.pos,
            &rate.residual,
            kappa_sum,
            &da.density,
            &da.alpha,
            &solution.y,
            kappa,
            dt,
            fp,
            dp,
            cp,
        )
    });
    Correction { k, rhs, solution }
}

/// Runs one solve from velocities `vel` (updated in place), the mirror of the GPU's sequence
/// rate → control → [restrict → coarse → prolong] → (pressure → rate → control → …)*, the
/// coarse correction after the even iterations ([`corrects_after`]), κ_sum starting from 0.
/// With `record`, the trace keeps every iteration's velocities, rate pass and increments (for
/// verification); without, only the control states, so a run does not copy N values per
/// iteration.
#[allow(clippy::too_many_arguments)]
pub fn solve(
    record: bool,
    which: Solve,
    sorted: &Particles,
    vel: &mut [Vec3],
    da: &DensityAlpha,
    coarse: &Coarse,
    b: Option<&Boundary>,
    power: &mut [f32],
    dt: f32,
    cap: u32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> SolveTrace {
    let n = sorted.len();
    let (eta, min_it) = match which {
        Solve::Divergence => (dp.eta_v, MIN_ITERATIONS[0]),
        Solve::Density => (dp.eta_d, MIN_ITERATIONS[1]),
    };
    let thr = threshold(eta, n as u32);
    let mut tr = SolveTrace {
        kappa_sum: vec![0.0; n],
        ..Default::default()
    };
    let mut state = SolveState::default();
    let mut kappa = Vec::new();
    for k in 0u32.. {
        if k > 0 {
            timed(Stage::DfsphPressure, || {
                dfsph_pressure(
                    &sorted.pos,
                    vel,
                    &da.density,
                    &kappa,
                    &mut tr.kappa_sum,
                    &da.pairs,
                    b,
                    power,
                    dt,
                    sp,
                    fp,
                )
            });
            if record {
                tr.velocities.push(vel.to_vec());
                tr.kappa_sums.push(tr.kappa_sum.clone());
            }
        }
        let rate = timed(Stage::DfsphRate, || {
            dfsph_rate(
                which,
                &sorted.pos,
                vel,
                &da.density,
                &da.alpha,
                &tr.kappa_sum,
                &da.pairs,
                b,
                dt,
                sp,
                fp,
                dp,
            )
        });
        let again = timed(Stage::DfsphControl, || {
            dfsph_control(
                &mut state,
                rate.total,
                n as u32,
                thr,
                min_it,
                cap,
                dp.max_iterations,
            )
        });
        tr.totals.push(rate.total);
        tr.states.push(state);
        if !again {
            if record {
                tr.rates.push(rate);
            }
            break;
        }
        kappa.clone_from(&rate.kappa);
        if corrects_after(k) {
            let c = correction(
                which,
                k,
                sorted,
                &rate,
                da,
                coarse,
                &tr.kappa_sum,
                &mut kappa,
                dt,
                fp,
                dp,
            );
            tr.corrections.push(c);
        }
        if record {
            tr.rates.push(rate);
            tr.kappas.push(kappa.clone());
        }
    }
    tr
}

/// The coarse levels of a step from its start (`dfsph_galerkin`, `dfsph_levels`).
pub fn coarse_levels(
    sorted: &Particles,
    da: &DensityAlpha,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> Coarse {
    let cp = CoarseParams::new(fp, sp.kernel_kind(), sp.h, dp.spacing, fp.mass, sp.dim());
    let op = timed(Stage::DfsphGalerkin, || {
        dfsph_galerkin(
            &sorted.pos,
            &da.density,
            &da.alpha,
            &da.pairs,
            b,
            sp,
            fp,
            &cp,
        )
    });
    let rows = timed(Stage::DfsphLevels, || dfsph_levels(&op.op, &cp));
    Coarse { cp, op, rows }
}

/// Everything one DFSPH step computed, in the step's slot order.
#[derive(Clone, Debug)]
pub struct DfsphTrace {
    /// The grid of the step's starting positions.
    pub grid: Grid,
    /// Per particle (this slot order): the power per unit mass the obstacles' pushes put in,
    /// summed over both solves' iterations (empty without obstacles).
    pub power: Vec<f32>,
    /// The state gathered into slot order.
    pub sorted: Particles,
    /// ρ and α at the start.
    pub start: DensityAlpha,
    /// The coarse levels both solves share (none for WCSPH, which solves nothing).
    pub coarse: Option<Coarse>,
    /// The divergence-free solve.
    pub divergence: SolveTrace,
    /// Non-pressure accelerations (the first substep's).
    pub acc: Vec<Vec3>,
    /// The explicit viscous terms' row sums S_i (accel.w on the GPU).
    pub viscous_rate: Vec<f32>,
    /// The step and its substeps.
    pub timestep: Timestep,
    /// The velocities after the first substep (v* where there is one).
    pub predicted: Vec<Vec3>,
    /// Each later substep's accelerations and the velocities after it (recorded traces only);
    /// the last velocities are v*.
    pub substeps: Vec<(Vec<Vec3>, Vec<Vec3>)>,
    /// The constant-density solve (empty for WCSPH).
    pub density: SolveTrace,
    /// WCSPH's pressure in place of the solves: the equation of state's stiffness and the
    /// velocities after `dfsph_pressure` applied it.
    pub eos: Option<EosTrace>,
    /// The state after the step (this step's slot order).
    pub next: Particles,
    /// The carried state after the step.
    pub carry: DfsphCarry,
    /// The grid of the new positions.
    pub next_grid: Grid,
    /// The new state in the new grid's slot order.
    pub next_sorted: Particles,
    /// ρ and α at the new positions (the next step's start).
    pub end: DensityAlpha,
    /// The step's statistics block.
    pub stats: SolverStats,
}

/// WCSPH's pressure step in place of DFSPH's solves: what [`wcsph_pressure`] computed.
#[derive(Clone, Debug, Default)]
pub struct EosTrace {
    /// κ_i = p_i/ρ_i from the equation of state ([`dfsph_eos`]).
    pub kappa: Vec<f32>,
    /// The velocities after [`dfsph_pressure`] applied it for the step's dt (recorded traces
    /// only).
    pub vel: Vec<Vec3>,
}

/// WCSPH's pressure: the equation of state's stiffness ([`dfsph_eos`]) applied once for the
/// step's `dt` by [`dfsph_pressure`] to `vel` (v* after the non-pressure accelerations), which
/// makes the step symplectic Euler, v' = v + dt (a_np + a_p), x' = x + dt v'.
#[allow(clippy::too_many_arguments)]
pub fn wcsph_pressure(
    record: bool,
    sorted: &Particles,
    vel: &mut [Vec3],
    da: &DensityAlpha,
    b: Option<&Boundary>,
    power: &mut [f32],
    dt: f32,
    sp: &SimParams,
    fp: &FluidParams,
) -> EosTrace {
    let kappa = timed(Stage::DfsphEos, || dfsph_eos(&da.density, fp));
    let mut kappa_sum = vec![0.0; kappa.len()];
    timed(Stage::DfsphPressure, || {
        dfsph_pressure(
            &sorted.pos,
            vel,
            &da.density,
            &kappa,
            &mut kappa_sum,
            &da.pairs,
            b,
            power,
            dt,
            sp,
            fp,
        )
    });
    EosTrace {
        kappa,
        vel: if record { vel.to_vec() } else { Vec::new() },
    }
}

/// The iteration caps of a step (divergence-free, constant density) from the carried budget;
/// none for WCSPH, which solves nothing.
pub fn step_caps(budget: &IterationBudget, dp: &DfsphParams) -> [u32; 2] {
    match dp.is_wcsph() {
        true => [0; 2],
        false => budget.caps(MIN_ITERATIONS, dp.max_iterations),
    }
}

/// Stage `dfsph_stats`, on the host on both paths: a step's statistics block from the density
/// error's block sums and maxima at its new positions, both solves' residual totals
/// (divergence, density; the GPU's read back) and the caps they had, over `n` particles, with
/// the step's dt and v_max. The solves' iterations and last mean residuals are [`replay`]ed
/// from the totals.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_stats(
    error_sums: &[f32],
    error_maxima: &[f32],
    totals: [&[Total]; 2],
    caps: [u32; 2],
    n: u32,
    dp: &DfsphParams,
    dt: f32,
    v_max: f32,
) -> SolverStats {
    let solve = |c: usize| {
        let eta = [dp.eta_v, dp.eta_d][c];
        replay(
            totals[c],
            caps[c],
            n,
            threshold(eta, n),
            MIN_ITERATIONS[c],
            dp.max_iterations,
        )
    };
    let (v, d) = (solve(0), solve(1));
    SolverStats {
        iterations_v: v.iterations,
        residual_v: v.residual,
        iterations_d: d.iterations,
        residual_d: d.residual,
        error_mean: reduce_total(error_sums) / n as f32,
        error_max: reduce_max(error_maxima),
        dt,
        v_max,
    }
}

/// ρ, α and the grid of a state: what a DFSPH step starts from.
pub fn prepare(
    state: &Particles,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> (Grid, Particles, DensityAlpha) {
    let (grid, gt) = Grid::build_timed(&state.pos, sp);
    record_grid(&gt);
    let sorted = timed(Stage::Reorder, || reorder::reorder(state, &grid.sorted_ids));
    let da = timed(Stage::DfsphDensity, || {
        dfsph_density(&sorted.pos, &grid.slot_start, b, sp, fp, dp)
    });
    (grid, sorted, da)
}

/// Advances `state` by one DFSPH step. `start`, if given, is [`prepare`] of `state` (the last
/// step's end), so it is not computed twice. `record` keeps every iteration in the trace
/// (see [`solve`]).
#[allow(clippy::too_many_arguments)]
pub fn dfsph_step(
    record: bool,
    state: &Particles,
    carry: &DfsphCarry,
    start: Option<(Grid, Particles, DensityAlpha)>,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> DfsphTrace {
    dfsph_step_with(record, state, carry, start, b, None, sp, fp, dp)
}

/// A step's non-pressure part ([`non_pressure`]): the first substep's accelerations and
/// viscous row sums, the step, the velocities after the first substep and each later
/// substep's accelerations and velocities (kept when recording).
struct NonPressure {
    acc: Vec<Vec3>,
    viscous_rate: Vec<f32>,
    timestep: Timestep,
    predicted: Vec<Vec3>,
    substeps: Vec<(Vec<Vec3>, Vec<Vec3>)>,
}

/// The non-pressure accelerations (`dfsph_accel`, with the viewer's force `interaction` after
/// it, as the GPU dispatches `interact` after each `dfsph_accel`), the step they allow
/// (`dfsph_timestep` from the last step's `dt_v`) and their substeps applied to `vel`
/// (`dfsph_predict`), the obstacles' friction power credited to `power` per substep. The later
/// substeps take the accelerations again at the velocities the last one left, at the same
/// positions and densities (the first substep's S_i stands).
#[allow(clippy::too_many_arguments)]
fn non_pressure(
    record: bool,
    sorted: &Particles,
    vel: &mut [Vec3],
    da: &DensityAlpha,
    b: Option<&Boundary>,
    interaction: Option<&InteractParams>,
    power: &mut [f32],
    dt_v: f32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> NonPressure {
    let forces = |vel: &[Vec3]| {
        // The obstacles' friction, where an obstacle has one (`DfsphParams::friction`).
        let friction = b.filter(|_| dp.friction != 0);
        let mut a = timed(Stage::DfsphAccel, || {
            dfsph_accel_with(&sorted.pos, vel, &da.density, &da.pairs, friction, sp, fp)
        });
        if let Some(ip) = interaction {
            interact(&sorted.pos, &mut a.acc, ip);
        }
        a
    };
    let Accel {
        acc,
        rate: viscous_rate,
        power: friction_power,
    } = forces(vel);
    let ts = timed(Stage::DfsphTimestep, || {
        dfsph_timestep(vel, &acc, &viscous_rate, &da.density, dt_v, sp, fp, dp)
    });
    timed(Stage::DfsphPredict, || {
        dfsph_predict(vel, &acc, ts.dt_sub);
        credit_friction(power, &friction_power, ts.dt_sub / ts.dt);
    });
    let predicted = vel.to_vec();
    let mut substeps = Vec::new();
    for _ in 1..ts.substeps {
        let Accel {
            acc: a,
            power: friction_power,
            ..
        } = forces(vel);
        timed(Stage::DfsphPredict, || {
            dfsph_predict(vel, &a, ts.dt_sub);
            credit_friction(power, &friction_power, ts.dt_sub / ts.dt);
        });
        if record {
            substeps.push((a, vel.to_vec()));
        }
    }
    NonPressure {
        acc,
        viscous_rate,
        timestep: ts,
        predicted,
        substeps,
    }
}

/// [`dfsph_step`] with the viewer's mouse force: stage `interact` adds it to the non-pressure
/// accelerations of every substep, before the time step reads them, as the GPU's step
/// dispatches it after each `dfsph_accel`.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_step_with(
    record: bool,
    state: &Particles,
    carry: &DfsphCarry,
    start: Option<(Grid, Particles, DensityAlpha)>,
    b: Option<&Boundary>,
    interaction: Option<&InteractParams>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> DfsphTrace {
    let (grid, sorted, da) = start.unwrap_or_else(|| prepare(state, b, sp, fp, dp));
    // The power the obstacles put in, per particle of this slot order, over both solves.
    let mut power = match b {
        Some(_) => vec![0.0f32; sorted.len()],
        None => Vec::new(),
    };
    let wcsph = dp.is_wcsph();
    let coarse = (!wcsph).then(|| coarse_levels(&sorted, &da, b, sp, fp, dp));
    let mut vel = sorted.vel.clone();
    let dt_v = carry.dt_prev;
    let caps = step_caps(&carry.budget, dp);
    // Both solves on this step's start (sorted state, ρ and α, coarse levels), each on the
    // velocities and obstacle power of the moment it runs.
    let run_solve = |kind, vel: &mut Vec<Vec3>, power: &mut Vec<f32>, coarse, dt, cap| {
        solve(
            record, kind, &sorted, vel, &da, coarse, b, power, dt, cap, sp, fp, dp,
        )
    };
    let divergence = match &coarse {
        Some(coarse) => run_solve(
            Solve::Divergence,
            &mut vel,
            &mut power,
            coarse,
            dt_v,
            caps[0],
        ),
        None => SolveTrace::default(),
    };
    let np = non_pressure(
        record,
        &sorted,
        &mut vel,
        &da,
        b,
        interaction,
        &mut power,
        dt_v,
        sp,
        fp,
        dp,
    );
    let (dt, v_max) = (np.timestep.dt, np.timestep.v_max);
    let (density, eos) = match &coarse {
        Some(coarse) => {
            let density = run_solve(Solve::Density, &mut vel, &mut power, coarse, dt, caps[1]);
            (density, None)
        }
        None => {
            let e = wcsph_pressure(record, &sorted, &mut vel, &da, b, &mut power, dt, sp, fp);
            (SolveTrace::default(), Some(e))
        }
    };
    let moved = Particles {
        pos: sorted.pos.clone(),
        vel,
        id: sorted.id.clone(),
    };
    let next = timed(Stage::DfsphIntegrate, || {
        dfsph_integrate(&moved, dt, fp, dp.wall_inset)
    });
    let (next_grid, next_sorted, end) = prepare(&next, b, sp, fp, dp);
    let stats = timed(Stage::SolverStats, || {
        dfsph_stats(
            &end.error_sums,
            &end.error_maxima,
            [&divergence.totals, &density.totals],
            caps,
            next.len() as u32,
            dp,
            dt,
            v_max,
        )
    });
    let mut budget = carry.budget;
    budget.push_step(caps, &stats);
    DfsphTrace {
        grid,
        power,
        sorted,
        start: da,
        coarse,
        divergence,
        acc: np.acc,
        viscous_rate: np.viscous_rate,
        timestep: np.timestep,
        predicted: np.predicted,
        substeps: np.substeps,
        density,
        eos,
        next,
        carry: DfsphCarry {
            dt_prev: dt,
            budget,
        },
        next_grid,
        next_sorted,
        end,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::boundary::walls;
    use crate::grid::walk::groups_in_space_order;

    use crate::params::{ConfigOverrides, DfsphConfig, PhysicsConfig, SphConfig};

    pub(super) fn setup(h: f32, tank: f32) -> (SimParams, FluidParams, DfsphParams) {
        let cfg = SphConfig::new(
            2,
            ConfigOverrides {
                smoothing_radius: Some(h),
                spacing: Some(h / 2.0),
                particle_mass: Some(1.0),
                rest_density: Some(1.0),
                table_size: Some(1),
                group_size: None,
                kernel: None,
                dim: None,
            },
        )
        .unwrap();
        let sp = cfg.sim_params();
        let ph = PhysicsConfig {
            gravity: 0.0,
            ..Default::default()
        };
        let fp = ph
            .fluid_params(&cfg, Vec3::ZERO, Vec3::splat(tank), 1.0)
            .unwrap();
        let mut dp = DfsphConfig::default().params(&cfg, &ph).unwrap();
        dp.min_neighbours = 1;
        (sp, fp, dp)
    }

    /// `n` random points in the cube `offset + [0, span)³` with random velocities in
    /// [−½, ½)³, drawn from `rng`, and their grid: (grid, slot-order positions, velocities).
    fn sorted_cloud(
        rng: &mut rand::rngs::Xoshiro256PlusPlus,
        n: usize,
        span: f32,
        offset: f32,
        sp: &SimParams,
    ) -> (Grid, Vec<Vec3>, Vec<Vec3>) {
        use rand::RngExt;
        let pos: Vec<Vec3> = (0..n)
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()) * span + offset)
            .collect();
        let vel: Vec<Vec3> = (0..n)
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()) - 0.5)
            .collect();
        let g = Grid::build(&pos, sp);
        let sorted = reorder::gather(&pos, &g.sorted_ids);
        let v = reorder::gather(&vel, &g.sorted_ids);
        (g, sorted, v)
    }

    /// The solve's passes replay the density walk's recorded pairs: each group's density
    /// change rates from the list are the walk's bit for bit, with particles at walls, edges
    /// and corners (images in the list) and every cell aliased into one slot (T = 1).
    #[test]
    fn pair_list_replays_the_walk_bit_for_bit() {
        use rand::SeedableRng;
        use rand::rngs::Xoshiro256PlusPlus;
        let (sp, fp, dp) = setup(0.2, 1.0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let (g, sorted, v) = sorted_cloud(&mut rng, 400, 0.98, 0.01, &sp);
        let da = dfsph_density(&sorted, &g.slot_start, None, &sp, &fp, &dp);
        let list = &da.pairs;
        assert_eq!(list.groups, groups_in_space_order(&sorted[..], &sp));
        let images = list
            .pairs
            .iter()
            .flatten()
            .filter(|p| p.image() != 0)
            .count();
        assert!(images > 0, "the corners' images are in the list");
        for ((&(first, len), pairs), frame) in list.groups.iter().zip(&list.pairs).zip(&list.frames)
        {
            let (first, len) = (first as usize, len as usize);
            let walked = group_rates(first, len, &sorted, &v, &g.slot_start, &sp, &fp);
            let listed = listed_rates(first, pairs, frame, &sorted, &v, fp.mass, true);
            for l in 0..len {
                assert_eq!(
                    walked[l].to_bits(),
                    listed[l].to_bits(),
                    "particle {}",
                    first + l
                );
            }
        }
    }

    /// The eight-lane forms give the portable code's bits: WCSPH's density walk (ρ, and each
    /// member's pairs in its own order), the kinematic viscosity's replay (free-slip walls and
    /// walls with a slip length, whose images take the scalar path), the density change rate's
    /// and the pressure's replays,
    /// group by group, for a cloud filling a small tank (images at walls, edges and corners,
    /// every cell aliased into one slot) and one in a tank under 2h wide (where the lane walk
    /// declines the groups whose members see opposite walls). On a CPU without AVX2 both sides
    /// are the portable code.
    #[test]
    fn the_lane_forms_give_the_portable_bits() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        for (tank, seed) in [(1.0f32, 3u64), (0.3, 4)] {
            let (sp, mut fp, mut dp) = setup(0.2, tank);
            dp.state_equation = 1;
            assert!(dp.is_wcsph());
            fp.kinematic_viscosity = 1e-3;
            fp.viscosity_factor = 10.0 * fp.kinematic_viscosity;
            // A mass other than a power of two, so that m's place in a product shows.
            fp.mass = 0.7;
            let mut rng = Xoshiro256PlusPlus::seed_from_u64(seed);
            let n = 600;
            let (g, sorted, v) = sorted_cloud(&mut rng, n, 0.98 * tank, 0.005, &sp);
            let kd: Vec<f32> = (0..n).map(|_| rng.random::<f32>()).collect();
            let (mut pairs, mut images) = (0, 0);
            for (first, len) in groups_in_space_order(&sorted[..], &sp) {
                let (first, len) = (first as usize, len as usize);
                let (list, frame) =
                    lane_walks_agree(first, len, &sorted, &g.slot_start, &sp, &fp, &dp);
                pairs += list.len();
                images += list.iter().filter(|p| p.image() != 0).count();
                let replay = Replayed {
                    first,
                    len,
                    list: &list,
                    frame: &frame,
                    pos: &sorted,
                    vel: &v,
                };
                lane_replays_agree(&replay, &kd, &sp, &mut fp);
            }
            assert!(
                pairs > 10_000 && images > 1_000,
                "{pairs} pairs, {images} images"
            );
        }
    }

    /// DFSPH's and WCSPH's density walks of one group, in lanes and portable: ρ and α the same
    /// bits, each member's pairs the same in the same order. Returns WCSPH's pairs and frame.
    fn lane_walks_agree(
        first: usize,
        len: usize,
        sorted: &[Vec3],
        slot_start: &[u32],
        sp: &SimParams,
        fp: &FluidParams,
        wcsph: &DfsphParams,
    ) -> (Vec<Pair>, Frame) {
        let mut dfsph = *wcsph;
        dfsph.state_equation = 0;
        let walk = |lanes, dp: &DfsphParams| {
            density::group_density_alpha(first, len, sorted, slot_start, None, lanes, sp, fp, dp)
        };
        let of = |list: &[Pair], l| -> Vec<(u32, u32)> {
            list.iter()
                .filter(|p| p.member() == l)
                .map(|p| (p.jt, p.g.to_bits()))
                .collect()
        };
        let bits = |(rho, alpha): (f32, f32)| (rho.to_bits(), alpha.to_bits());
        let mut kept = None;
        for dp in [&dfsph, wcsph] {
            let ((best, best_pairs, frame), (portable, portable_pairs, portable_frame)) =
                (walk(true, dp), walk(false, dp));
            assert_eq!(frame, portable_frame);
            assert_eq!(best_pairs.len(), portable_pairs.len());
            for l in 0..len {
                let k = first + l;
                assert_eq!(
                    bits(best[l]),
                    bits(portable[l]),
                    "ρ, α of {k}, WCSPH {}",
                    dp.is_wcsph()
                );
                assert_eq!(of(&best_pairs, l), of(&portable_pairs, l), "pairs of {k}");
            }
            kept = Some((best_pairs, frame));
        }
        kept.unwrap()
    }

    /// One group's pairs and what the replays read.
    struct Replayed<'a> {
        first: usize,
        len: usize,
        list: &'a [Pair],
        frame: &'a Frame,
        pos: &'a [Vec3],
        vel: &'a [Vec3],
    }

    /// The replays of one group's pairs, in lanes and portable, the same bits: the viscosity's
    /// (free-slip walls, then walls of slip length 0.01), the density change rate's and the
    /// pressure's (κ/ρ in `kd`).
    fn lane_replays_agree(r: &Replayed, kd: &[f32], sp: &SimParams, fp: &mut FluidParams) {
        let bits = |v: Vec3| v.to_array().map(f32::to_bits);
        let (first, n) = (r.first, r.pos.len());
        let rho: Vec<f32> = (0..n).map(|k| 1.0 + 0.1 * (k % 7) as f32).collect();
        for slip in [-1.0, 0.01] {
            fp.slip_lo = [slip, slip, slip, 0.0];
            fp.slip_hi = fp.slip_lo;
            let fp = &*fp;
            let accel = |lanes| {
                accel::group_pairs_accel(first, r.list, r.frame, r.pos, r.vel, &rho, lanes, sp, fp)
            };
            let ((a, s), (pa, ps)) = (accel(true), accel(false));
            for l in 0..r.len {
                assert_eq!(bits(a[l]), bits(pa[l]), "slip {slip}: a of {}", first + l);
                assert_eq!(
                    s[l].to_bits(),
                    ps[l].to_bits(),
                    "slip {slip}: S of {}",
                    first + l
                );
            }
        }
        let rates =
            |lanes| rate::listed_rates(first, r.list, r.frame, r.pos, r.vel, fp.mass, lanes);
        let (a, pa) = (rates(true), rates(false));
        for l in 0..r.len {
            assert_eq!(a[l].to_bits(), pa[l].to_bits(), "rate of {}", first + l);
        }
        let push = |lanes| pressure::group_pushes(first, r.list, r.frame, r.pos, kd, lanes, fp);
        let (a, pa) = (push(true), push(false));
        for l in 0..r.len {
            assert_eq!(bits(a[l]), bits(pa[l]), "push of {}", first + l);
        }
    }

    /// α is the exact Jacobi diagonal of the solve, walls' images included: a stiffness
    /// κ_k = 1 on particle k alone, applied by `dfsph_pressure`, changes k's density change
    /// rate (`density_rate`, images moving as reflected originals) by −dt/α_k, for every
    /// particle of a jittered lattice filling a small tank (a third of them within h of two or
    /// three walls). The neighbours' reaction to k's own images (H_j in `DensitySums`) is
    /// part of it: without it α near the walls is up to 42% too large here.
    #[test]
    fn alpha_is_the_exact_diagonal_of_the_solve_at_walls_edges_and_corners() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        let (sp, fp, dp) = setup(0.2, 0.6);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut pos = Vec::new();
        for i in 0..6 {
            for j in 0..6 {
                for k in 0..6 {
                    let jitter = Vec3::new(rng.random(), rng.random(), rng.random()) - 0.5;
                    pos.push((Vec3::new(i as f32, j as f32, k as f32) + 0.5) * 0.1 + jitter * 0.04);
                }
            }
        }
        let state = Particles::new(pos.clone(), vec![Vec3::ZERO; pos.len()]);
        let (g, sorted, da) = prepare(&state, None, &sp, &fp, &dp);
        let dt = 1e-3;
        let (mut worst, mut edges) = (0.0f32, 0);
        for k in 0..pos.len() {
            let a = da.alpha[k];
            assert!(a > 0.0 && a.is_finite(), "particle {k}: alpha {a}");
            // Two walls within h (an edge or a corner): three images or more.
            if walls::images(&walls::near(sorted.pos[k], sp.h, &fp)).count() >= 3 {
                edges += 1;
            }
            let mut kappa = vec![0.0; pos.len()];
            kappa[k] = 1.0;
            let mut vel = vec![Vec3::ZERO; pos.len()];
            let mut sum = vec![0.0; pos.len()];
            dfsph_pressure(
                &sorted.pos,
                &mut vel,
                &da.density,
                &kappa,
                &mut sum,
                &da.pairs,
                None,
                &mut [],
                dt,
                &sp,
                &fp,
            );
            let rate = density_rate(k, &sorted.pos, &vel, &g.slot_start, &sp, &fp);
            let err = (rate * a / dt + 1.0).abs();
            worst = worst.max(err);
        }
        eprintln!("worst relative error of the diagonal {worst}, {edges} particles at edges");
        assert!(edges >= 72, "{edges} particles at edges and corners");
        assert!(worst < 1e-4, "alpha is off the solve's diagonal by {worst}");
    }

    /// The doc's worked example: the floor holds a particle half a spacing above it.
    #[test]
    fn integrate_keeps_particles_half_a_spacing_inside_the_walls() {
        let (_, fp, dp) = setup(0.01, 1.0);
        assert_eq!(dp.wall_inset, 0.0025);
        let moved = Particles {
            pos: vec![Vec3::new(0.5, 0.05, 0.5)],
            vel: vec![Vec3::new(1.0, -1.0, 0.0)],
            id: vec![0],
        };
        let next = dfsph_integrate(&moved, 0.1, &fp, 0.005);
        assert_eq!(next.pos[0], Vec3::new(0.6, 0.005, 0.5));
        assert_eq!(next.vel[0], Vec3::new(1.0, 0.0, 0.0));
    }

    #[test]
    fn wendland_kernel_worked_values() {
        let (sp, _, _) = setup(1.0, 10.0);
        let k = 21.0 / (2.0 * std::f32::consts::PI);
        assert_eq!(kernel::w(0.0, &sp), sp.kernel_a[0]);
        assert!((sp.kernel_a[0] - k).abs() < 1e-6);
        // q = 0.5: k · 0.5⁴ · 3 = 0.6267.
        assert!((kernel::w(0.25, &sp) - k * 0.0625 * 3.0).abs() < 1e-6);
        assert!((kernel::w(0.25, &sp) - 0.6267).abs() < 1e-4);
        assert_eq!(kernel::w(1.0, &sp), 0.0);
        assert_eq!(kernel::w(1.5, &sp), 0.0);
        // g at q = 0.5: −210/π · 0.125 = −8.356.
        assert!((kernel::grad(0.25, &sp) + 210.0 / std::f32::consts::PI * 0.125).abs() < 1e-4);
        assert_eq!(kernel::grad(0.0, &sp), 0.0);
        assert_eq!(kernel::grad(1.0, &sp), 0.0);
    }

    #[test]
    fn worked_example_two_particles() {
        let (sp, fp, dp) = setup(1.0, 10.0);
        let pos = vec![Vec3::new(5.0, 5.0, 5.0), Vec3::new(5.5, 5.0, 5.0)];
        let g = Grid::build(&pos, &sp);
        let sorted = reorder::gather(&pos, &g.sorted_ids);
        let da = dfsph_density(&sorted, &g.slot_start, None, &sp, &fp, &dp);
        // ρ = m (W(0) + W(0.5)) = k (1 + 0.1875); |∇W(0.5)| = 210/π · 0.125 · 0.5.
        let k = 21.0 / (2.0 * std::f32::consts::PI);
        let rho = k + k * 0.1875;
        assert!((da.density[0] - rho).abs() < 1e-5);
        let l = 210.0 / std::f32::consts::PI * 0.125 * 0.5;
        assert!((da.alpha[0] - rho / (2.0 * l * l)).abs() < 1e-6);
    }

    /// `dfsph_accel`'s worked example: the viscous term slows the approaching particle, pushes
    /// the pair apart symmetrically (momentum kept), leaves a receding pair alone, and S is
    /// the pair's |coefficient| r² either way.
    #[test]
    fn accel_worked_example_and_viscous_rate() {
        let (sp, mut fp, dp) = setup(1.0, 10.0);
        fp.alpha = 1.0;
        fp.sound_speed = 1.0;
        // Π alone first: the default ν off.
        fp.kinematic_viscosity = 0.0;
        fp.viscosity_factor = 0.0;
        let pos = vec![Vec3::new(5.0, 5.0, 5.0), Vec3::new(5.5, 5.0, 5.0)];
        let vel = vec![Vec3::new(1.0, 0.0, 0.0), Vec3::ZERO];
        let g = Grid::build(&pos, &sp);
        let sorted = reorder::gather(&pos, &g.sorted_ids);
        let v = reorder::gather(&vel, &g.sorted_ids);
        let pairs = dfsph_density(&sorted, &g.slot_start, None, &sp, &fp, &dp).pairs;
        let (acc, rate) = dfsph_accel(&sorted, &v, &[1.0, 1.0], &pairs, &sp, &fp);
        let i = g.sorted_ids.iter().position(|&k| k == 0).unwrap();
        // g(0.5) = −210/π · 0.125 (wendland_grad's worked example).
        let coef = 1.0 / 0.26 * (-210.0 / std::f32::consts::PI * 0.125);
        let want = -0.5 * (coef * -0.5);
        assert!((acc[i].x - want).abs() < 1e-4, "{acc:?} want {want}");
        assert!((want + 8.034).abs() < 1e-3);
        assert!((acc[0] + acc[1]).length() < 1e-5, "momentum: {acc:?}");
        assert!(
            (rate[i] - 8.034).abs() < 1e-3 && rate[0] == rate[1],
            "{rate:?}"
        );
        // Receding, the pair feels no artificial viscosity (Π), and S bounds it all the same.
        let away = vec![Vec3::new(-1.0, 0.0, 0.0), Vec3::ZERO];
        let va = reorder::gather(&away, &g.sorted_ids);
        let (acc, rate_away) = dfsph_accel(&sorted, &va, &[1.0, 1.0], &pairs, &sp, &fp);
        assert_eq!(acc, vec![Vec3::ZERO; 2]);
        assert_eq!(rate_away, rate);
        // The standard viscosity of 10ν = 1 (ρ = 1, so ρ_j = ρ̄): the same on the approaching
        // pair, and the receding pair held back as much (every pair, not only approaching ones).
        fp.alpha = 0.0;
        fp.kinematic_viscosity = 0.1;
        fp.viscosity_factor = 1.0;
        let (acc, rate_nu) = dfsph_accel(&sorted, &v, &[1.0, 1.0], &pairs, &sp, &fp);
        assert!((acc[i].x - want).abs() < 1e-4, "{acc:?} want {want}");
        assert!((acc[0] + acc[1]).length() < 1e-5, "momentum: {acc:?}");
        assert_eq!(rate_nu, rate);
        let (acc, _) = dfsph_accel(&sorted, &va, &[1.0, 1.0], &pairs, &sp, &fp);
        assert!((acc[i].x + want).abs() < 1e-4, "{acc:?} want {}", -want);
        // Without viscosity nothing is walked and nothing limits the step.
        fp.kinematic_viscosity = 0.0;
        fp.viscosity_factor = 0.0;
        let (acc, rate) = dfsph_accel(&sorted, &v, &[1.0, 1.0], &pairs, &sp, &fp);
        assert_eq!(acc, vec![Vec3::ZERO; 2]);
        assert_eq!(rate, vec![0.0; 2]);
    }

    /// `dfsph_timestep`'s worked example and its limits.
    #[test]
    fn timestep_takes_the_cfl_and_the_viscous_limit_in_substeps() {
        let (sp, mut fp, mut dp) = setup(0.02, 1.0);
        assert_eq!((dp.spacing, dp.cfl, dp.dt_max), (0.01, 0.4, 5e-3));
        dp.viscous_substeps = 2;
        let v = [Vec3::new(2.0, 0.0, 0.0)];
        let a = [Vec3::ZERO];
        let ts = |v: &[Vec3], s: f32, dp: &DfsphParams, fp: &FluidParams| {
            let t = dfsph_timestep(v, &a, &[s], &[fp.rest_density], 1e-3, &sp, fp, dp);
            (t.dt, t.v_max, t.substeps, t.dt_sub)
        };
        let ts = |v: &[Vec3], s: f32, dp: &DfsphParams| ts(v, s, dp, &fp);
        // The CFL step within the viscous limit (2.5 ms): one substep.
        assert_eq!(ts(&v, 200.0, &dp), (0.002, 2.0, 1, 0.002));
        // The worked example: the CFL step past the limit (1.25 ms), within twice it.
        assert_eq!(ts(&v, 400.0, &dp), (0.002, 2.0, 2, 0.001));
        // The CFL step past twice the limit: two substeps at the limit.
        assert_eq!(ts(&v, 1000.0, &dp), (0.001, 2.0, 2, 0.0005));
        // At rest without viscosity: dt_max in one.
        assert_eq!(ts(&[Vec3::ZERO], 0.0, &dp).0, dp.dt_max);
        assert_eq!(ts(&[Vec3::ZERO], 0.0, &dp).2, 1);
        // dt_min wins over the limit; the substeps stay at K.
        assert_eq!(
            ts(&[Vec3::ZERO], 1e9, &dp),
            (dp.dt_min, 0.0, 2, 0.5 * dp.dt_min)
        );
        // K = 1 (the default) is the explicit limit alone.
        dp.viscous_substeps = 1;
        assert_eq!(ts(&v, 1000.0, &dp), (0.0005, 2.0, 1, 0.0005));
        // WCSPH: the acoustic CFL step λ h / (c0 + |v|) = 0.4 · 0.02 / 22 within the rest.
        let wcsph = DfsphParams {
            state_equation: 1,
            ..dp
        };
        fp.sound_speed = 20.0;
        let t = dfsph_timestep(&v, &a, &[0.0], &[fp.rest_density], 1e-3, &sp, &fp, &wcsph);
        assert_eq!((t.dt, t.v_max), (0.4 * 0.02 / 22.0, 2.0));
        // Compressed to 1.1 ρ0 at rest, the local sound speed c0 · 1.1³ sets it.
        let rho = [1.1 * fp.rest_density];
        let t = dfsph_timestep(&[Vec3::ZERO], &a, &[0.0], &rho, 1e-3, &sp, &fp, &wcsph);
        assert_eq!(t.dt, 0.4 * 0.02 / super::signal_speed(0.0, rho[0], &fp));
        assert!((t.dt - 0.4 * 0.02 / (20.0 * 1.331)).abs() < 1e-9);
    }

    #[test]
    fn approaching_pair_compresses_and_the_solve_stops_it() {
        let (sp, fp, dp) = setup(1.0, 10.0);
        let pos = vec![Vec3::new(5.0, 5.0, 5.0), Vec3::new(5.5, 5.0, 5.0)];
        let vel = vec![Vec3::new(1.0, 0.0, 0.0), Vec3::new(-1.0, 0.0, 0.0)];
        let state = Particles::new(pos, vel);
        let (g, sorted, da) = prepare(&state, None, &sp, &fp, &dp);
        let r0 = density_rate(0, &sorted.pos, &sorted.vel, &g.slot_start, &sp, &fp);
        assert!(r0 > 0.0, "approach is compression: {r0}");
        let mut vel = sorted.vel.clone();
        let coarse = coarse_levels(&sorted, &da, None, &sp, &fp, &dp);
        let tr = solve(
            true,
            Solve::Divergence,
            &sorted,
            &mut vel,
            &da,
            &coarse,
            None,
            &mut [],
            1e-3,
            dp.max_iterations,
            &sp,
            &fp,
            &dp,
        );
        let last = tr.states.last().unwrap();
        assert!(last.residual <= dp.eta_v, "{last:?}");
        // Momentum is conserved by the symmetric update.
        assert!((vel[0] + vel[1]).length() < 1e-5);
        // The approach is stopped to within the tolerance: the density change rate left, as
        // the solve's residual D dt/ρ0, at most η_v, from 1e-3 · r0 before.
        let r1 = density_rate(0, &sorted.pos, &vel, &g.slot_start, &sp, &fp);
        assert!(
            r1 * 1e-3 / fp.rest_density <= dp.eta_v,
            "{r1} from {r0}: {vel:?}"
        );
        assert!(r1 < 0.1 * r0, "{r1} from {r0}");
    }

    #[test]
    fn reduction_tree_matches_the_plain_sum_closely() {
        let v: Vec<f32> = (0..1000).map(|i| (i % 7) as f32 * 0.25).collect();
        let total = reduce_total(&block_sums(&v));
        let plain: f32 = v.iter().sum();
        assert_eq!(total, plain, "exact for these dyadic values");
        assert_eq!(reduce_max(&block_maxima(&v)), 1.5);
        assert_eq!(block_sums(&v).len(), 4);
    }

    #[test]
    fn control_stops_at_tolerance_after_the_minimum() {
        let zero = Total::default();
        let mut s = SolveState::default();
        assert!(dfsph_control(&mut s, zero, 1, 1 << 20, 2, 100, 100));
        assert!(dfsph_control(&mut s, zero, 1, 1 << 20, 2, 100, 100));
        assert!(!dfsph_control(&mut s, zero, 1, 1 << 20, 2, 100, 100));
        assert_eq!(s.iterations, 2);
        assert!(s.done);
        // A mean of 1 over one particle against η = 0.1: on to the limit, 3 …
        let one = Total::of(&[1.0]);
        let thr = threshold(0.1, 1);
        let mut s = SolveState::default();
        for _ in 0..3 {
            assert!(dfsph_control(&mut s, one, 1, thr, 1, 100, 3));
        }
        assert!(!dfsph_control(&mut s, one, 1, thr, 1, 100, 3));
        assert_eq!((s.iterations, s.residual), (3, 1.0));
        // … or to the step's cap, 2.
        let mut s = SolveState::default();
        for _ in 0..2 {
            assert!(dfsph_control(&mut s, one, 1, thr, 1, 2, 100));
        }
        assert!(!dfsph_control(&mut s, one, 1, thr, 1, 2, 100));
        assert_eq!(s.iterations, 2);
        // A NaN residual stops the solve and reads as NaN.
        let mut s = SolveState {
            iterations: 1,
            ..Default::default()
        };
        assert!(!dfsph_control(
            &mut s,
            Total::of(&[f32::NAN, 1.0]),
            2,
            thr,
            1,
            100,
            100
        ));
        assert!(s.residual.is_nan());
    }

    #[test]
    fn residual_totals_are_exact_integer_sums() {
        // 0.25 is 2^22 units; 300 of them need the carry word's bit 0 past 2^32.
        let v = vec![0.25f32; 1100];
        let t = Total::of(&v);
        assert_eq!(t.sum, 1100 << 22);
        assert_eq!(t.to_words(), [(1100u64 << 22) as u32, 1, 0, 0]);
        assert_eq!(Total::from_words(t.to_words()), t);
        assert_eq!(t.mean(1100), 0.25);
        // Truncated to 2^-24; saturated at 256; NaN and negatives count 0.
        assert_eq!(fixed_residual(1.5e-7), 2);
        assert_eq!(fixed_residual(300.0), u32::MAX);
        assert_eq!(fixed_residual(f32::NAN), 0);
        assert_eq!(fixed_residual(-1.0), 0);
        // mean ≤ η ⇔ total ≤ ⌊η n 2^24⌋, to one unit: η = 1e-4 over 3 particles.
        assert_eq!(threshold(1e-4, 3), 5033);
        let at = Total {
            sum: 5033,
            nan: false,
        };
        assert!(!again_after(5, at, 5033, 2, 100));
        assert!(again_after(5, Total { sum: 5034, ..at }, 5033, 2, 100));
        assert!(
            again_after(1, at, 5033, 2, 100),
            "below the fewest iterations"
        );
    }

    #[test]
    fn caps_follow_the_counts_of_the_steps_before() {
        let o = |encoded, iterations| Outcome {
            encoded,
            iterations,
        };
        let m = ITERATION_MARGIN;
        // Twice the most recent count, and at least the margin more.
        let c = |most: u32| most + most.max(m);
        let mut b = IterationBudget::default();
        assert_eq!(
            b.caps(MIN_ITERATIONS, 100),
            [100, 100],
            "no history: uncapped"
        );
        b.push([o(100, 1), o(100, 5)]);
        assert_eq!(
            b.caps(MIN_ITERATIONS, 100),
            [100, 100],
            "one step: still none two before"
        );
        assert_eq!(
            b.caps_ahead(MIN_ITERATIONS, 100),
            [c(1), c(5)],
            "with the next in flight"
        );
        b.push([o(100, 3), o(100, 9)]);
        // Converged two steps before: the most it used in the window and the margin.
        assert_eq!(b.caps(MIN_ITERATIONS, 100), [c(1), c(5)]);
        b.push([o(1 + m, 3), o(5 + m, 4)]);
        assert_eq!(b.caps(MIN_ITERATIONS, 100), [c(3), c(9)]);
        b.push([o(3 + m, 1), o(9 + m, 9 + m)]);
        // Ran every iteration it had two steps before: the limit; never below the fewest.
        assert_eq!(b.caps(MIN_ITERATIONS, 100), [c(3), c(9)]);
        b.push([o(3 + m, 1), o(9 + m, 2)]);
        assert_eq!(b.caps(MIN_ITERATIONS, 100), [c(3), 100]);
        assert_eq!(b.caps(MIN_ITERATIONS, 5), [5, 5]);
        // The window forgets: after BUDGET_WINDOW more steps of one iteration, 1 + the margin.
        for _ in 0..BUDGET_WINDOW + 1 {
            b.push([o(3, 1), o(4, 1)]);
        }
        assert_eq!(b.caps(MIN_ITERATIONS, 100), [1 + m, 1 + m]);
        assert_eq!(c(10), 20, "a count of 10 may double");
    }
}
