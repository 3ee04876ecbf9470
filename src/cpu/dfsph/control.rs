//! Stage `dfsph_control`, the CPU mirror of `shaders/dfsph/dfsph_control.wgsl` (its header gives the inputs,
//! the outputs and a worked example); [`super`] describes the method (Bender & Koschier 2015,
//! 2017) and how the stages chain into a step.

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

/// Where a solve stands: the GPU's `SolveState` block.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveState {
    /// Iterations run (pressure updates after the warm start).
    pub iterations: u32,
    /// No further iteration runs.
    pub done: bool,
    /// The mean residual of the last rate evaluation.
    pub residual: f32,
}

/// Stage `dfsph_control`: the mean residual from the block sums; decides whether another
/// iteration runs: while fewer than `min_iterations`, or the mean exceeds η, up to
/// `max_iterations`. Returns whether it does.
pub fn dfsph_control(
    state: &mut SolveState,
    sums: &[f32],
    n: u32,
    eta: f32,
    min_iterations: u32,
    max_iterations: u32,
) -> bool {
    if state.done {
        return false;
    }
    let mean = reduce_total(sums) / n as f32;
    state.residual = mean;
    let again =
        state.iterations < max_iterations && (state.iterations < min_iterations || mean > eta);
    if again {
        state.iterations += 1;
    } else {
        state.done = true;
    }
    again
}
