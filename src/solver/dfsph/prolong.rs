//! Stage `dfsph_prolong`, the CPU mirror of `shaders/solver/dfsph/dfsph_prolong.wgsl` (its header gives
//! the inputs, the outputs and a worked example); [`super::cells`] describes the coarse levels.

use glam::Vec3;

use crate::params::{CoarseParams, DfsphParams, FluidParams};

use super::cells::*;
use super::control::Solve;

/// Stage `dfsph_prolong`: the next velocity update's stiffness at iteration `k` of `solve`
/// (step `dt`), with the coarse correction ŷ (`dfsph_coarse`, level-0 cells) added where it
/// acts: for a coarse member in play ([`coarse_member`], [`in_play`]),
/// κ_i = max(κ_sum + J_i + ρ_i ŷ_c / S2 · ρ0/dt², 0) − κ_sum ([`projected`]; J_i the Jacobi
/// increment, [`jacobi_increment`]), with c its cell; `kappa` (the rate pass's, slot order)
/// elsewhere, unchanged.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_prolong(
    solve: Solve,
    k: u32,
    pos: &[Vec3],
    residual: &[f32],
    kappa_sum: &[f32],
    density: &[f32],
    alpha: &[f32],
    y: &[f32],
    kappa: &mut [f32],
    dt: f32,
    fp: &FluidParams,
    dp: &DfsphParams,
    cp: &CoarseParams,
) {
    let dims = [cp.dims[0], cp.dims[1], cp.dims[2]];
    let scale = kappa_scale(dt, fp);
    for i in 0..pos.len() {
        let (e, ks, a) = (residual[i], kappa_sum[i], alpha[i]);
        if coarse_member(density[i], a, cp) && in_play(solve, k, e, ks, a) {
            let yc = y[cell_index(coarse_cell(pos[i], cp).0, dims)];
            let inc =
                jacobi_increment(solve, e, a, scale, dp) + density[i] * yc * cp.inv_cell[3] * scale;
            kappa[i] = projected(ks, inc);
        }
    }
}
