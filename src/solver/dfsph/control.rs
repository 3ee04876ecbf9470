//! Stage `dfsph_control`: whether a solve runs another iteration, the CPU mirror of
//! `solve_again` in `shaders/common.wgsl`, which every pass of the next iteration evaluates
//! (its header gives the inputs, the outputs and a worked example); [`super`] describes the
//! method (Bender & Koschier 2015, 2017) and how the stages chain into a step.

use super::blocks::*;

/// Which solve a pass serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solve {
    /// The divergence-free solve (before the non-pressure forces, with the previous dt).
    Divergence,
    /// The constant-density solve (after them, with this step's dt).
    Density,
}

impl Solve {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Solve::Divergence => "divergence",
            Solve::Density => "density",
        }
    }
}

/// Where a solve stands: what the host learns of it from the statistics block.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveState {
    /// Iterations run (pressure updates after the solve's first rate pass).
    pub iterations: u32,
    /// No further iteration runs.
    pub done: bool,
    /// The mean residual of the last rate evaluation.
    pub residual: f32,
}

/// The fixed-point total a solve's mean residual must not exceed, over `n` particles:
/// ⌊η n 2²⁴⌋ (so "total ≤ threshold" is "mean ≤ η" to one unit of 2⁻²⁴ per particle). The
/// host computes it for both paths; the GPU reads it from the solve's uniform block.
pub fn threshold(eta: f32, n: u32) -> u64 {
    (f64::from(eta.max(0.0)) * f64::from(n) * f64::from(FIXED_ONE)).floor() as u64
}

/// Whether the solve goes on after the rate evaluation of iteration `j` with residual total
/// `total`: while fewer than `min_iterations` ran, or the total exceeds the threshold (a NaN
/// residual stops it, as a NaN mean did), up to `max_iterations`. Every invocation of the
/// GPU's `dfsph_pressure` and `dfsph_rate` takes this decision from the same words
/// (`solve_again` in `common.wgsl`).
pub fn again_after(
    j: u32,
    total: Total,
    thr: u64,
    min_iterations: u32,
    max_iterations: u32,
) -> bool {
    j < max_iterations && (j < min_iterations || (!total.nan && total.sum > thr))
}

/// Stage `dfsph_control`, the decision alone (the GPU takes it inside the passes of the
/// next iteration): updates `state` after the rate evaluation of its iteration, and returns
/// whether another iteration runs. `cap` is how many iterations the step encoded.
pub fn dfsph_control(
    state: &mut SolveState,
    total: Total,
    n: u32,
    thr: u64,
    min_iterations: u32,
    cap: u32,
    max_iterations: u32,
) -> bool {
    if state.done {
        return false;
    }
    state.residual = total.mean(n);
    let again = state.iterations < cap
        && again_after(state.iterations, total, thr, min_iterations, max_iterations);
    if again {
        state.iterations += 1;
    } else {
        state.done = true;
    }
    again
}

/// How many iterations a solve encoded and how many ran.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    /// Iterations encoded (the cap).
    pub encoded: u32,
    /// Iterations run.
    pub iterations: u32,
}

/// The fewest iterations more than the steps before needed that a step encodes: a step
/// encodes at least twice the most recent count, and at least this many more. Four, not two: the
/// coarse correction comes after every other iteration ([`super::corrects_after`]), so a solve's
/// count moves two at a time, and with a margin of two the 20k dam break's collapse stopped
/// short in 4 of its 399 steps and the 1M dam break's third step stopped at 11. Twice the count,
/// because a collapse's need grows with its pressure: the 1M dam break's constant-density solve
/// went from 10 iterations to 18 within three steps (steps 12–16), and with the most plus four
/// alone its 15th step stopped at 14 (measured on the CPU path). An iteration encoded but not
/// needed costs a GPU its dispatches, which exit at once, and the CPU path nothing.
pub const ITERATION_MARGIN: u32 = 4;

/// How many steps' counts, from the one two before back, a step's caps look at: a count
/// varies from step to step, and with the step two before alone the narrow resting column of
/// `tests/suite/physics.rs` was capped into never coming to rest (docs/performance.md, the cap).
pub const BUDGET_WINDOW: usize = 8;

/// The iterations each solve of a step may run, from the counts of the steps before: the GPU
/// runs a step ahead of the host's reads, so the step two before is the newest whose
/// statistics block the host has when it encodes this one, and the CPU path applies the same
/// rule to its own counts so the paths stay bit for bit alike. A solve gets the most
/// iterations it ran over the [`BUDGET_WINDOW`] steps from two before back, twice over and at
/// least [`ITERATION_MARGIN`] more; if the step two before ran every iteration it had (it was capped),
/// or there is no such step (a run's first two steps), `max_iterations`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct IterationBudget {
    /// The outcomes (divergence, density) of the last steps, newest first.
    pub recent: [Option<[Outcome; 2]>; BUDGET_WINDOW + 1],
}

impl IterationBudget {
    /// The caps (divergence, density) of the next step.
    pub fn caps(&self, min: [u32; 2], max_iterations: u32) -> [u32; 2] {
        caps_from(&self.recent[1..], min, max_iterations)
    }

    /// The caps of the step after the next (when the next is in flight): the newest
    /// recorded step is then the one two before it.
    pub fn caps_ahead(&self, min: [u32; 2], max_iterations: u32) -> [u32; 2] {
        caps_from(&self.recent[..BUDGET_WINDOW], min, max_iterations)
    }

    /// Records a step's outcomes.
    pub fn push(&mut self, o: [Outcome; 2]) {
        self.recent.rotate_right(1);
        self.recent[0] = Some(o);
    }

    /// Records a step that had `caps` from its statistics block.
    pub fn push_step(&mut self, caps: [u32; 2], st: &crate::core::SolverStats) {
        self.push([
            Outcome {
                encoded: caps[0],
                iterations: st.iterations_v,
            },
            Outcome {
                encoded: caps[1],
                iterations: st.iterations_d,
            },
        ]);
    }
}

/// The caps from `known`, the outcomes from the step two before back (newest first).
fn caps_from(known: &[Option<[Outcome; 2]>], min: [u32; 2], max_iterations: u32) -> [u32; 2] {
    let Some(newest) = known[0] else {
        return [max_iterations; 2];
    };
    let cap = |c: usize| {
        let want = if newest[c].iterations >= newest[c].encoded {
            max_iterations
        } else {
            known
                .iter()
                .flatten()
                .map(|o| o[c].iterations)
                .max()
                .map_or(ITERATION_MARGIN, |most| most + most.max(ITERATION_MARGIN))
        };
        want.clamp(min[c], max_iterations.max(min[c]))
    };
    [cap(0), cap(1)]
}

/// The fewest iterations of each solve (divergence, density).
pub const MIN_ITERATIONS: [u32; 2] = [1, 2];

/// How a solve that may run `cap` iterations ends, replayed from its residual totals after
/// each iteration (`totals[k]` after iteration k, 0 the solve's start): the decisions
/// [`dfsph_control`] takes as the solve runs, so the GPU's totals, read back, give the state the
/// CPU path's loop reached.
pub fn replay(
    totals: &[Total],
    cap: u32,
    n: u32,
    thr: u64,
    min_iterations: u32,
    max_iterations: u32,
) -> SolveState {
    let mut state = SolveState::default();
    for &t in totals {
        if !dfsph_control(&mut state, t, n, thr, min_iterations, cap, max_iterations) {
            break;
        }
    }
    state
}
