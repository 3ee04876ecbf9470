//! Stage `dfsph_levels`, the CPU mirror of `shaders/solver/dfsph/dfsph_levels.wgsl` (its header gives
//! the inputs, the outputs and a worked example); [`super::cells`] describes the coarse levels.

use crate::params::CoarseParams;

use super::cells::*;

/// Level `l`'s cells per axis and its first cell in the levels' arrays.
#[inline]
pub fn level(cp: &CoarseParams, l: usize) -> ([u32; 3], usize) {
    let v = cp.levels[l];
    ([v[0], v[1], v[2]], v[3] as usize)
}

/// The neighbour of cell `c` at row index `o` in a grid of `dims`, if inside.
#[inline]
pub fn neighbour(c: [u32; 3], o: usize, dims: [u32; 3]) -> Option<[u32; 3]> {
    let d = offset_of(o);
    let mut n = [0u32; 3];
    for a in 0..3 {
        let v = c[a] as i32 + d[a];
        if v < 0 || v >= dims[a] as i32 {
            return None;
        }
        n[a] = v as u32;
    }
    Some(n)
}

/// The coordinates of cell `k` of a grid of `dims` (x fastest).
#[inline]
pub fn coords(k: usize, dims: [u32; 3]) -> [u32; 3] {
    let k = k as u32;
    [
        k % dims[0],
        (k / dims[0]) % dims[1],
        k / (dims[0] * dims[1]),
    ]
}

/// Stage `dfsph_levels`: the 27-point rows of every coarse level, level after level in one
/// array (level l's cells from `cp.levels[l][3]`). Level 0's from the stored halves `op`
/// (`dfsph_galerkin`) in `f32` ([`from_fixed`]), the backward offsets read from the neighbour's
/// row; each coarser level's from its children (Galerkin aggregation: A_{l+1}[C][O] =
/// Σ_{c ∈ C} Σ_o A_l[c][o] over the o with c + o in C + O), summed children in (z, y, x) order
/// and each child's offsets in row order. Level 0's diagonal is shifted by
/// [`COARSE_SHIFT`](crate::params::COARSE_SHIFT) (× `cp.solve[2]`).
pub fn dfsph_levels(op: &[i64], cp: &CoarseParams) -> Vec<[f32; 27]> {
    let mut rows = vec![[0f32; 27]; cp.all_cells()];
    let (dims, _) = level(cp, 0);
    for k in 0..cp.cells() {
        let c = coords(k, dims);
        for o in 0..27 {
            rows[k][o] = if o >= 13 {
                from_fixed(op[k * STORED + o - 13])
            } else {
                match neighbour(c, o, dims) {
                    Some(n) => from_fixed(op[cell_index(n, dims) * STORED + 13 - o]),
                    None => 0.0,
                }
            };
        }
        rows[k][13] *= cp.solve[2];
    }
    for l in 1..cp.level_count() {
        let (fine, fine_at) = level(cp, l - 1);
        let (dims, at) = level(cp, l);
        for k in 0..(dims[0] * dims[1] * dims[2]) as usize {
            rows[at + k] = coarse_row(&rows[fine_at..], fine, coords(k, dims));
        }
    }
    rows
}

/// The row of coarse cell `cc` from the rows of its children on the level below (`fine`, of
/// `dims`).
#[inline]
pub fn coarse_row(fine: &[[f32; 27]], dims: [u32; 3], cc: [u32; 3]) -> [f32; 27] {
    let mut row = [0f32; 27];
    for dz in 0..2 {
        for dy in 0..2 {
            for dx in 0..2 {
                let c = [2 * cc[0] + dx, 2 * cc[1] + dy, 2 * cc[2] + dz];
                if c[0] >= dims[0] || c[1] >= dims[1] || c[2] >= dims[2] {
                    continue;
                }
                let r = &fine[cell_index(c, dims)];
                for (o, &v) in r.iter().enumerate() {
                    if v == 0.0 {
                        continue;
                    }
                    let d = offset_of(o);
                    let target =
                        [0, 1, 2].map(|a| (c[a] as i32 + d[a]).div_euclid(2) - cc[a] as i32);
                    let t = offset_index(target);
                    row[t] += v;
                }
            }
        }
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two level-1 cells along x with a 1D Laplacian's rows (2, −1): their parent's row is the
    /// sum of all four entries, 2 + 2 − 1 − 1 = 2 on its diagonal (a constant's energy).
    #[test]
    fn a_parent_sums_its_childrens_rows() {
        let mut rows = vec![[0f32; 27]; 2];
        rows[0][13] = 2.0;
        rows[0][14] = -1.0;
        rows[1][13] = 2.0;
        rows[1][12] = -1.0;
        let row = coarse_row(&rows, [2, 1, 1], [0, 0, 0]);
        assert_eq!(row[13], 2.0);
        assert_eq!(row.iter().filter(|&&v| v != 0.0).count(), 1);
    }

    #[test]
    fn level_zero_mirrors_the_stored_halves() {
        let fp = crate::params::FluidParams {
            tank_max: [1.0, 0.25, 0.25, 0.0],
            rest_density: 1000.0,
            ..bytemuck::Zeroable::zeroed()
        };
        let cp = CoarseParams::new(&fp, crate::kernel::Kernel::WendlandC2, 0.1, 0.05, 0.125, 3);
        assert_eq!(&cp.dims[..3], &[4, 1, 1]);
        let mut op = vec![0i64; cp.cells() * STORED];
        // Cell 1's +x entry: row 1 at 14, and row 2 at its mirror 12.
        op[STORED + 1] = to_fixed(-0.5);
        let rows = dfsph_levels(&op, &cp);
        assert_eq!(rows[1][14], -0.5);
        assert_eq!(rows[2][12], -0.5);
        assert_eq!(rows.len(), cp.all_cells());
        // Levels: 4 → 2 cells along x.
        assert_eq!(cp.level_count(), 2);
        let (_, at) = level(&cp, 1);
        assert_eq!(rows[at][14], -0.5, "the pair straddles the parents");
    }
}
