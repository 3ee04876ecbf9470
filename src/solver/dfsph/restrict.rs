//! Stage `dfsph_restrict`, the CPU mirror of `shaders/solver/dfsph/dfsph_restrict.wgsl` (its header
//! gives the inputs, the outputs and a worked example); [`super::cells`] describes the coarse
//! levels.

use glam::Vec3;

use crate::params::CoarseParams;

use super::cells::*;
use super::control::Solve;

/// Stage `dfsph_restrict`: the residual on the level-1 cells at iteration `k` of `solve`,
/// Σ [`to_fixed`](e_i) over the coarse members in play in each cell ([`coarse_member`],
/// [`in_play`]), wrapping sums; `residual` is the rate pass's e_i (slot order), `kappa_sum`
/// the solve's κ_sum.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_restrict(
    solve: Solve,
    k: u32,
    pos: &[Vec3],
    residual: &[f32],
    kappa_sum: &[f32],
    density: &[f32],
    alpha: &[f32],
    cp: &CoarseParams,
) -> Vec<i64> {
    let dims = [cp.dims[0], cp.dims[1], cp.dims[2]];
    let mut rhs = vec![0i64; cp.cells()];
    for i in 0..pos.len() {
        if coarse_member(density[i], alpha[i], cp)
            && in_play(solve, k, residual[i], kappa_sum[i], alpha[i])
        {
            let c = cell_index(coarse_cell(pos[i], cp).0, dims);
            rhs[c] = rhs[c].wrapping_add(to_fixed(residual[i]));
        }
    }
    rhs
}
