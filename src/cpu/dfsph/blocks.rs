//! The fixed-tree reductions of the solves' residuals and the density error, the CPU mirror
//! of `shaders/dfsph/dfsph_blocks.wgsl` (stage `dfsph_blocks`) and of the tree every DFSPH reduction
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
