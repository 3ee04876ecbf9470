//! Stage `dfsph_galerkin`, the CPU mirror of `shaders/solver/dfsph/dfsph_galerkin.wgsl` (its header
//! gives the inputs, the outputs and a worked example); [`super::cells`] describes the coarse
//! levels.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::Boundary;
use crate::grid::walk::GROUP;
use crate::kernel;
use crate::params::{CoarseParams, FluidParams, SimParams};

use super::cells::*;
use super::pairs::*;

/// A particle's eight corner sums u_a: u_a = Σ m∇W_ij over its pairs whose unknown lies in the
/// cell of corner a (a's bit per axis: the neighbouring cell on the particle's side).
type Corners = [Vec3; 8];

/// The corner of j's cell `cj` as seen from particle i's cell `ci`: bit a set where they
/// differ along axis a.
#[inline]
fn corner(ci: [u32; 3], cj: [u32; 3]) -> usize {
    (ci[0] != cj[0]) as usize | ((ci[1] != cj[1]) as usize) << 1 | ((ci[2] != cj[2]) as usize) << 2
}

/// The cell of corner `a` of a particle in cell `c` with halves `upper`.
#[inline]
fn corner_cell(c: [u32; 3], upper: [bool; 3], a: usize) -> [i32; 3] {
    let mut out = [0i32; 3];
    for ax in 0..3 {
        let step = if a >> ax & 1 == 1 {
            if upper[ax] { 1 } else { -1 }
        } else {
            0
        };
        out[ax] = c[ax] as i32 + step;
    }
    out
}

/// The entries one particle adds to the level-1 operator, as (cell, stored index, value):
/// for corners a ≤ b with u_a·u_b ≠ 0, u_a·u_b / S2 into row a's stored half (the centre for
/// a = b), or row b's where the offset from a's cell to b's points backwards. The GPU's
/// `finish` (dfsph_galerkin.wgsl) adds the same values with atomics.
pub fn particle_entries(
    u: &Corners,
    c: [u32; 3],
    upper: [bool; 3],
    cp: &CoarseParams,
    mut add: impl FnMut(usize, usize, i64),
) {
    let dims = [cp.dims[0], cp.dims[1], cp.dims[2]];
    let inv_s2 = cp.inv_cell[3];
    for a in 0..8 {
        for b in a..8 {
            let (ua, ub) = (u[a], u[b]);
            let v = (ua.x * ub.x + ua.y * ub.y + ua.z * ub.z) * inv_s2;
            if v == 0.0 {
                continue;
            }
            let ca = corner_cell(c, upper, a);
            let cb = corner_cell(c, upper, b);
            let o = [cb[0] - ca[0], cb[1] - ca[1], cb[2] - ca[2]];
            let k = offset_index(o);
            let (row, stored) = if k >= 13 { (ca, k - 13) } else { (cb, 13 - k) };
            let row = cell_index(row.map(|x| x as u32), dims);
            add(row, stored, to_fixed(v));
        }
    }
}

/// What `dfsph_galerkin` assembles: the level-0 operator's stored half-rows and how many of the
/// particles in the solves are not coarse members (the free surface's, which anchor the
/// pressure: with none, the water touches walls on every side and its pressure is set only up
/// to a constant, which the coarse solve then leaves alone).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Operator {
    /// Each level-0 cell's [`STORED`] fixed-point entries.
    pub op: Vec<i64>,
    /// Particles with α ≠ 0 that are no coarse member.
    pub anchors: u32,
}

/// Stage `dfsph_galerkin`: the level-0 coarse operator Â_c = Pᵀ A P / (dt^k S2) of a step,
/// each cell's stored half-row ([`STORED`] fixed-point entries, wrapping sums), from the pairs
/// `dfsph_density` recorded (`pairs`, slot order `pos`, ρ and α, obstacles `b`). For every
/// particle i, u_a = Σ_j m∇W_ij ([i ∈ M] [a = 0] + [j ∈ M] [a = corner of j]) over its pairs in
/// walk order (images with their original's cell), then the obstacles' Σ_b ψ_b ∇W_ib added to
/// u_0 where i ∈ M (M: the coarse members, [`coarse_member`]); Â_c[A][B] = Σ_i u_A · u_B / S2;
/// and the particles in the solves outside M counted.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_galerkin(
    pos: &[Vec3],
    density: &[f32],
    alpha: &[f32],
    pairs: &PairList,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    cp: &CoarseParams,
) -> Operator {
    let cells: Vec<([u32; 3], [bool; 3])> = pos.iter().map(|&x| coarse_cell(x, cp)).collect();
    let member: Vec<bool> = density
        .iter()
        .zip(alpha)
        .map(|(&r, &a)| coarse_member(r, a, cp))
        .collect();
    // Fixed-point sums wrap and so are exact in any order: each rayon job adds into an
    // operator of its own and the jobs' operators are added together, with no list of
    // entries between and no serial pass over them.
    let size = cp.cells() * STORED;
    let op = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .fold(
            || vec![0i64; size],
            |mut op, (&(first, len), (list, frame))| {
                let (first, len) = (first as usize, len as usize);
                let mut u = [[Vec3::ZERO; 8]; GROUP];
                for p in list {
                    let l = p.member();
                    let (i, j) = (first + l, p.j());
                    let g = frame.grad(p, pos, fp.mass);
                    if member[i] {
                        u[l][0] += g;
                    }
                    if member[j] {
                        u[l][corner(cells[i].0, cells[j].0)] += g;
                    }
                }
                for (l, ul) in u.iter_mut().enumerate().take(len) {
                    let i = first + l;
                    if member[i]
                        && let Some(b) = b.filter(|b| b.near(pos[i]))
                    {
                        let x = pos[i];
                        let mut sum = Vec3::ZERO;
                        b.walk(x, sp, |k, r2| {
                            sum += b.grad(k, x - b.pos[k], kernel::grad(r2, sp));
                        });
                        ul[0] += sum;
                    }
                    particle_entries(ul, cells[i].0, cells[i].1, cp, |row, k, v| {
                        op[row * STORED + k] = op[row * STORED + k].wrapping_add(v);
                    });
                }
                op
            },
        )
        .reduce(
            || vec![0i64; size],
            |mut a, b| {
                for (x, y) in a.iter_mut().zip(b) {
                    *x = x.wrapping_add(y);
                }
                a
            },
        );
    let anchors = (0..pos.len())
        .filter(|&i| alpha[i] != 0.0 && !member[i])
        .count() as u32;
    Operator { op, anchors }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corners_name_the_neighbouring_cells() {
        assert_eq!(corner([1, 2, 3], [1, 2, 3]), 0);
        assert_eq!(corner([1, 2, 3], [0, 2, 4]), 0b101);
        assert_eq!(
            corner_cell([1, 2, 3], [false, true, true], 0b101),
            [0, 2, 4]
        );
    }

    /// One particle with two corners: u_0 = (1, 0, 0), u_1 = (1, 0, 0) (its +x neighbour cell),
    /// S2 = 1: the diagonal gets 1 in each cell and the pair's 1 goes once, into the row of
    /// the lower cell at offset +x (stored index 14 − 13 = 1).
    #[test]
    fn a_particle_adds_each_corner_pair_once() {
        let cp = CoarseParams {
            dims: [4, 4, 4, 1],
            inv_cell: [1.0, 1.0, 1.0, 1.0],
            ..bytemuck::Zeroable::zeroed()
        };
        let mut u = [Vec3::ZERO; 8];
        u[0] = Vec3::X;
        u[1] = Vec3::X;
        let mut got = Vec::new();
        particle_entries(&u, [1, 1, 1], [true, false, false], &cp, |r, k, v| {
            got.push((r, k, v))
        });
        let one = 1i64 << 32;
        let (c0, c1) = (cell_index([1, 1, 1], [4; 3]), cell_index([2, 1, 1], [4; 3]));
        assert_eq!(got, vec![(c0, 0, one), (c0, 1, one), (c1, 0, one)]);
        // On the lower side the neighbour's row takes it, at the mirrored offset.
        got.clear();
        particle_entries(&u, [1, 1, 1], [false, false, false], &cp, |r, k, v| {
            got.push((r, k, v))
        });
        let c_1 = cell_index([0, 1, 1], [4; 3]);
        assert_eq!(got, vec![(c0, 0, one), (c_1, 1, one), (c_1, 0, one)]);
    }
}
