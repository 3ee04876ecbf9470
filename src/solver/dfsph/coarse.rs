//! Stage `dfsph_coarse`, the CPU mirror of `shaders/solver/dfsph/dfsph_coarse.wgsl` (its header gives
//! the inputs, the outputs and a worked example); [`super::cells`] describes the coarse levels.
//!
//! The GPU solves on the coarse levels in one workgroup of [`W`] invocations: invocation t
//! handles cells t, t + W, …, each phase ends at a barrier, and a dot product is each
//! invocation's partial sum over its cells in that order, then the workgroup's halving tree
//! ([`tree`]). This mirror runs the same phases in the same order, so the same `f32`
//! operations give the same bits.

use crate::params::CoarseParams;

use super::blocks::{add, tree};
use super::cells::*;
use super::levels::{coords, level, neighbour};

/// Invocations of the one workgroup (`WORKGROUP_SIZE`).
pub const W: usize = crate::core::limits::WORKGROUP_SIZE as usize;

/// The workgroup's dot product of `a` and `b`.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut part = [0f32; W];
    for (t, p) in part.iter_mut().enumerate() {
        let mut s = 0f32;
        let mut c = t;
        while c < a.len() {
            s += a[c] * b[c];
            c += W;
        }
        *p = s;
    }
    tree(&mut part, add)
}

/// Row `row` of a level (cell `c` of `dims`) times `x` (the level's vector): the 27 terms in
/// row order, a neighbour outside the grid skipped.
#[inline]
pub fn row_times(row: &[f32; 27], c: [u32; 3], dims: [u32; 3], x: &[f32]) -> f32 {
    let mut s = 0f32;
    for (o, &a) in row.iter().enumerate() {
        if let Some(n) = neighbour(c, o, dims) {
            s += a * x[cell_index(n, dims)];
        }
    }
    s
}

/// One level's rows and shape.
struct Level<'a> {
    rows: &'a [[f32; 27]],
    dims: [u32; 3],
}

impl Level<'_> {
    fn len(&self) -> usize {
        self.rows.len()
    }

    /// out = A x.
    fn apply(&self, x: &[f32], out: &mut [f32]) {
        for (k, o) in out.iter_mut().enumerate() {
            *o = row_times(&self.rows[k], coords(k, self.dims), self.dims, x);
        }
    }

    /// A damped Jacobi sweep: t = b − A x, then x += ω t / a_cc where a_cc > 0.
    fn smooth(&self, b: &[f32], x: &mut [f32], t: &mut [f32], omega: f32) {
        self.apply(x, t);
        for k in 0..self.len() {
            t[k] = b[k] - t[k];
        }
        for k in 0..self.len() {
            let diag = self.rows[k][13];
            if diag > 0.0 {
                x[k] += omega * t[k] / diag;
            }
        }
    }
}

/// The per-level vectors of a V-cycle: solution x, right-hand side b, scratch t.
struct Vectors {
    x: Vec<Vec<f32>>,
    b: Vec<Vec<f32>>,
    t: Vec<Vec<f32>>,
}

/// One V-cycle from level 0's right-hand side `r` (ν damped Jacobi sweeps down and up, ν_c
/// on the coarsest level, residuals summed onto the parents, corrections copied back to the
/// children): returns level 0's x, the preconditioned residual z ≈ Â⁻¹ r.
fn vcycle(levels: &[Level], v: &mut Vectors, r: &[f32], cp: &CoarseParams) -> Vec<f32> {
    let (omega, nu, nu_c) = (cp.solve[0], cp.counts[2], cp.counts[3]);
    let last = levels.len() - 1;
    v.b[0].copy_from_slice(r);
    for l in 0..last {
        let lv = &levels[l];
        v.x[l].iter_mut().for_each(|x| *x = 0.0);
        for _ in 0..nu {
            lv.smooth(&v.b[l], &mut v.x[l], &mut v.t[l], omega);
        }
        lv.apply(&v.x[l], &mut v.t[l]);
        for k in 0..lv.len() {
            v.t[l][k] = v.b[l][k] - v.t[l][k];
        }
        let (fine, coarse) = (lv.dims, levels[l + 1].dims);
        for kc in 0..levels[l + 1].len() {
            let cc = coords(kc, coarse);
            let mut s = 0f32;
            for dz in 0..2 {
                for dy in 0..2 {
                    for dx in 0..2 {
                        let c = [2 * cc[0] + dx, 2 * cc[1] + dy, 2 * cc[2] + dz];
                        if c[0] < fine[0] && c[1] < fine[1] && c[2] < fine[2] {
                            s += v.t[l][cell_index(c, fine)];
                        }
                    }
                }
            }
            v.b[l + 1][kc] = s;
        }
    }
    v.x[last].iter_mut().for_each(|x| *x = 0.0);
    for _ in 0..nu_c {
        levels[last].smooth(&v.b[last], &mut v.x[last], &mut v.t[last], omega);
    }
    for l in (0..last).rev() {
        let (fine, coarse) = (levels[l].dims, levels[l + 1].dims);
        for k in 0..levels[l].len() {
            let c = coords(k, fine);
            let parent = cell_index([c[0] / 2, c[1] / 2, c[2] / 2], coarse);
            v.x[l][k] += v.x[l + 1][parent];
        }
        for _ in 0..nu {
            levels[l].smooth(&v.b[l], &mut v.x[l], &mut v.t[l], omega);
        }
    }
    v.x[0].clone()
}

/// What `dfsph_coarse` found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CoarseSolution {
    /// ŷ on the level-0 cells: Â_c ŷ ≈ the restricted residual.
    pub y: Vec<f32>,
    /// Conjugate-gradient iterations run.
    pub iterations: u32,
}

/// Stage `dfsph_coarse`: Â_c ŷ = Pᵀ e on the level-0 cells (`rhs`, `dfsph_restrict`'s fixed
/// point, as [`from_fixed`]), by conjugate gradients preconditioned with one V-cycle over the
/// levels (`rows`, `dfsph_levels`), until ‖r‖² ≤ tol ‖r₀‖² or `cp.counts[1]` iterations; a
/// non-positive curvature or r·z stops it where it is. Without `anchors` (water enclosed on
/// every side, `dfsph_galerkin`'s [`Operator`](super::galerkin::Operator)) Â_c is singular with
/// the constant over the cells that have a diagonal in its null space, and the right-hand
/// side's mean over those cells is taken out first: a uniform pressure moves no particle, and
/// the walls hold a uniform compression.
pub fn dfsph_coarse(
    rows: &[[f32; 27]],
    anchors: u32,
    rhs: &[i64],
    cp: &CoarseParams,
) -> CoarseSolution {
    let levels: Vec<Level> = (0..cp.level_count())
        .map(|l| {
            let (dims, at) = level(cp, l);
            let n = (dims[0] * dims[1] * dims[2]) as usize;
            Level {
                rows: &rows[at..at + n],
                dims,
            }
        })
        .collect();
    let mut v = Vectors {
        x: levels.iter().map(|l| vec![0.0; l.len()]).collect(),
        b: levels.iter().map(|l| vec![0.0; l.len()]).collect(),
        t: levels.iter().map(|l| vec![0.0; l.len()]).collect(),
    };
    let n = levels[0].len();
    let mut y = vec![0f32; n];
    let mut r: Vec<f32> = rhs.iter().map(|&x| from_fixed(x)).collect();
    if anchors == 0 {
        let active: Vec<f32> = (0..n)
            .map(|k| if rows[k][13] > 0.0 { 1.0 } else { 0.0 })
            .collect();
        let count = dot(&active, &active);
        if count > 0.0 {
            let mean = dot(&r, &active) / count;
            for k in 0..n {
                r[k] -= mean * active[k];
            }
        }
    }
    let mut q = vec![0f32; n];
    let rr0 = dot(&r, &r);
    let mut iterations = 0;
    if rr0 > 0.0 {
        let mut z = vcycle(&levels, &mut v, &r, cp);
        let mut d = z.clone();
        let mut rz = dot(&r, &z);
        while iterations < cp.counts[1] && rz > 0.0 {
            levels[0].apply(&d, &mut q);
            let dq = dot(&d, &q);
            if dq <= 0.0 || dq.is_nan() {
                break;
            }
            let a = rz / dq;
            for k in 0..n {
                y[k] += a * d[k];
                r[k] -= a * q[k];
            }
            iterations += 1;
            let rr = dot(&r, &r);
            if rr <= cp.solve[1] * rr0 {
                break;
            }
            z = vcycle(&levels, &mut v, &r, cp);
            let rz1 = dot(&r, &z);
            let beta = rz1 / rz;
            rz = rz1;
            for k in 0..n {
                d[k] = z[k] + beta * d[k];
            }
        }
    }
    CoarseSolution { y, iterations }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1D chain of 8 cells with a Laplacian's rows (2 on the diagonal, −1 to each neighbour,
    /// Dirichlet past the ends): the conjugate gradients solve it to the tolerance.
    #[test]
    fn solves_a_chain_laplacian() {
        let fp = crate::params::FluidParams {
            tank_max: [8.0, 1.0, 1.0, 0.0],
            rest_density: 1.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let cp = CoarseParams::new(&fp, crate::kernel::Kernel::WendlandC2, 0.45, 0.2, 1.0, 3);
        assert_eq!(&cp.dims[..3], &[8, 1, 1]);
        let mut op = vec![0i64; cp.cells() * STORED];
        for k in 0..8 {
            op[k * STORED] = to_fixed(2.0);
            if k + 1 < 8 {
                op[k * STORED + 1] = to_fixed(-1.0);
            }
        }
        let rows = super::super::levels::dfsph_levels(&op, &cp);
        let rhs: Vec<i64> = (0..8)
            .map(|k| to_fixed(if k == 3 { 1.0 } else { 0.0 }))
            .collect();
        let s = dfsph_coarse(&rows, 1, &rhs, &cp);
        let n = rows.len().min(8);
        let mut ay = [0f32; 8];
        for k in 0..n {
            ay[k] = row_times(&rows[k], [k as u32, 0, 0], [8, 1, 1], &s.y);
        }
        let res: f32 = (0..8)
            .map(|k| (ay[k] - if k == 3 { 1.0 } else { 0.0 }).powi(2))
            .sum();
        assert!(
            res <= 1e-4 * 1.0001,
            "‖r‖² {res} after {} iterations",
            s.iterations
        );
        assert!(s.iterations >= 1 && s.iterations <= cp.counts[1]);
        // The exact solution is a tent peaking at the source's cell.
        assert!(s.y[3] > s.y[2] && s.y[3] > s.y[4]);
    }
}
