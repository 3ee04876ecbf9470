//! The fixed-tree reductions of the solves' residuals and the density error, the CPU mirror
//! of `shaders/solver/dfsph/dfsph_blocks.wgsl` (stage `dfsph_blocks`) and of the tree every DFSPH reduction
//! shares with the GPU's workgroups: blocks of 256 halved pairwise, then the blocks folded.

use crate::params::REDUCE_BLOCK;

/// The reduction tree of one block with `op` (+ or max): s[l] = op(s[l], s[l + half]) for
/// half = 128, 64, …, 1.
pub(super) fn tree(s: &mut [f32; REDUCE_BLOCK as usize], op: fn(f32, f32) -> f32) -> f32 {
    let mut half = REDUCE_BLOCK as usize / 2;
    while half > 0 {
        for l in 0..half {
            s[l] = op(s[l], s[l + half]);
        }
        half >>= 1;
    }
    s[0]
}

pub(super) fn add(a: f32, b: f32) -> f32 {
    a + b
}

/// First level of the fixed reduction with `op`: one value per block of 256 (the last block
/// padded with zeros), as one GPU workgroup reduces its invocations' values.
pub(super) fn blocks(v: &[f32], op: fn(f32, f32) -> f32) -> Vec<f32> {
    v.chunks(REDUCE_BLOCK as usize)
        .map(|c| {
            let mut s = [0f32; REDUCE_BLOCK as usize];
            s[..c.len()].copy_from_slice(c);
            tree(&mut s, op)
        })
        .collect()
}

/// Second level with `op`, one workgroup: lane l folds partials l, l + 256, … in order, then
/// the tree.
pub(super) fn second_level(partials: &[f32], op: fn(f32, f32) -> f32) -> f32 {
    let mut s = [0f32; REDUCE_BLOCK as usize];
    for (j, &p) in partials.iter().enumerate() {
        let l = j % REDUCE_BLOCK as usize;
        s[l] = op(s[l], p);
    }
    tree(&mut s, op)
}

/// The block sums of `v` (first level of the fixed reduction tree).
pub fn block_sums(v: &[f32]) -> Vec<f32> {
    blocks(v, add)
}

/// The block maxima of `v` (values ≥ 0).
pub fn block_maxima(v: &[f32]) -> Vec<f32> {
    blocks(v, f32::max)
}

/// The total of block sums (second level).
pub fn reduce_total(partials: &[f32]) -> f32 {
    second_level(partials, add)
}

/// The maximum of block maxima.
pub fn reduce_max(partials: &[f32]) -> f32 {
    second_level(partials, f32::max)
}

/// One unit of a residual in the solves' fixed-point totals: 2⁻²⁴.
pub const FIXED_ONE: f32 = 16_777_216.0;

/// A residual as a fixed-point count of 2⁻²⁴, truncated; values ≥ 256 saturate and NaN counts
/// 0 (the total's `nan` flag carries it). The GPU's `fixed_residual` (`dfsph_rate.wgsl`).
pub fn fixed_residual(r: f32) -> u32 {
    if r >= 256.0 {
        u32::MAX
    } else if r >= 0.0 {
        (r * FIXED_ONE) as u32
    } else {
        0
    }
}

/// A solve iteration's residual total: the exact sum of [`fixed_residual`] over the particles
/// (the GPU adds them with 32-bit integer atomics and a carry word, so the order does not
/// change the bits), and whether a residual was NaN.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Total {
    /// Σ fixed_residual(r_i).
    pub sum: u64,
    /// Some r_i was NaN.
    pub nan: bool,
}

impl Total {
    /// The total of `residual`.
    pub fn of(residual: &[f32]) -> Self {
        Total {
            sum: residual.iter().map(|&r| u64::from(fixed_residual(r))).sum(),
            nan: residual.iter().any(|r| r.is_nan()),
        }
    }

    /// Its four words as the GPU stores them: (low, high, NaN flag, 0).
    pub fn to_words(self) -> [u32; 4] {
        [self.sum as u32, (self.sum >> 32) as u32, self.nan as u32, 0]
    }

    /// The inverse of [`Total::to_words`].
    pub fn from_words(w: [u32; 4]) -> Self {
        Total {
            sum: u64::from(w[0]) | (u64::from(w[1]) << 32),
            nan: w[2] != 0,
        }
    }

    /// The mean residual over `n` particles in `f32` (the host computes it for both paths);
    /// NaN where a residual was.
    pub fn mean(self, n: u32) -> f32 {
        if self.nan {
            return f32::NAN;
        }
        let hi = (self.sum >> 32) as u32 as f32;
        let lo = self.sum as u32 as f32;
        (hi * 4_294_967_296.0 + lo) / FIXED_ONE / n as f32
    }
}
