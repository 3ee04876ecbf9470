//! The DFSPH pair walk, the CPU mirror of `shaders/solver/dfsph/dfsph_pairs.wgsl`: each group's neighbours
//! and their wall images in the GPU's order, and the pair lists the solves replay.

use glam::Vec3;

use crate::boundary::walls::{self, Image, Near};
use crate::grid::walk::{GROUP, walk_group};
use crate::params::{FluidParams, SimParams};

/// Calls `pair(l, j, d, r², image)` for every neighbour of member l (slot-order particle
/// first + l) of a group sharing a query range ([`groups`](crate::grid::walk::groups)), and every wall image within h:
/// per candidate j of the one walk, for each member with r² < h², j itself if j ≠ k (image
/// 0), then the images the walls model gives it in the model's order ([`walls::images`]; k's
/// own images count). d = x_k − (image of) x_j. Each member sees its
/// pairs in the order of a walk of its own. The mirror of `visit` in dfsph_pairs.wgsl.
#[inline]
pub fn group_pairs(
    first: usize,
    len: usize,
    pos: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
    mut pair: impl FnMut(usize, usize, Vec3, f32, Image),
) {
    let mut near = [Near::default(); GROUP];
    for (l, w) in near.iter_mut().enumerate().take(len) {
        *w = walls::near(pos[first + l], sp.h, fp);
    }
    // The members' coordinates one lane each (unused lanes repeat the first and are masked
    // off), so each candidate's distance test runs for all members at once in vector lanes.
    let (mut qx, mut qy, mut qz) = ([0f32; GROUP], [0f32; GROUP], [0f32; GROUP]);
    for l in 0..GROUP {
        let q = pos[first + if l < len { l } else { 0 }];
        (qx[l], qy[l], qz[l]) = (q.x, q.y, q.z);
    }
    let live = (1u32 << len) - 1;
    walk_group(first, pos, slot_start, sp, |j| {
        let xj = pos[j];
        let mut r2s = [0f32; GROUP];
        let mut inside = 0u32;
        for l in 0..GROUP {
            // distance2's operations, so r² is the same bits.
            let (dx, dy, dz) = (qx[l] - xj.x, qy[l] - xj.y, qz[l] - xj.z);
            let r2 = dx * dx + dy * dy + dz * dz;
            r2s[l] = r2;
            // A positive test, so a NaN distance counts as no neighbour, as on the GPU.
            inside |= ((r2 < sp.h2) as u32) << l;
        }
        inside &= live;
        while inside != 0 {
            let l = inside.trailing_zeros() as usize;
            inside &= inside - 1;
            let k = first + l;
            let x = pos[k];
            let r2 = r2s[l];
            if j != k {
                pair(l, j, x - xj, r2, 0);
            }
            let near = &near[l];
            for image in walls::images(near) {
                let d = x - walls::image_at(xj, near, image);
                let r2i = d.x * d.x + d.y * d.y + d.z * d.z;
                if r2i < sp.h2 {
                    pair(l, j, d, r2i, image);
                }
            }
        }
    });
}

/// One pair of a group's walk, as the solve's passes read it: member `l` (bits 0..3 of `jt`)
/// sees candidate `j` (bits 6..32), or its image of bits 3..6 (the walls model's id, 0 for
/// the candidate itself),
/// with ∇W_kj = g d, g = [`crate::kernel::grad`](r²), d = x_k − x_j' ([`Frame::d`] recomputes d with
/// the walk's operations, so the same bits). Eight bytes: the passes that replay the list
/// are bound by reading it (16-byte pairs holding m∇W, with a 20-byte geometry record
/// beside them for the viscosity, measured slower a step: docs/benchmarks.md).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Pair {
    /// The candidate's slot-order index (bits 6..) and the tag.
    pub jt: u32,
    /// The kernel gradient's factor g, ∇W_kj = g d.
    pub g: f32,
}

impl Pair {
    /// The member of the group this pair belongs to.
    #[inline]
    pub fn member(&self) -> usize {
        (self.jt & 7) as usize
    }

    /// The candidate.
    #[inline]
    pub fn j(&self) -> usize {
        (self.jt >> 6) as usize
    }

    /// The candidate's image (0: the candidate itself).
    #[inline]
    pub fn image(&self) -> Image {
        (self.jt >> 3) & 7
    }
}

/// A group's members as the replays need them: their positions and what the walls model keeps
/// of their surroundings, from which each pair's d = x_k − x_j' follows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Frame {
    /// The members' positions.
    pub x: [Vec3; GROUP],
    /// The members' surroundings ([`walls::near`]).
    pub near: [Near; GROUP],
}

impl Frame {
    /// The frame of the group `first..first + len`.
    pub(super) fn of(
        first: usize,
        len: usize,
        pos: &[Vec3],
        sp: &SimParams,
        fp: &FluidParams,
    ) -> Self {
        let mut f = Frame::default();
        for l in 0..len {
            f.x[l] = pos[first + l];
            f.near[l] = walls::near(f.x[l], sp.h, fp);
        }
        f
    }

    /// Pair p's d = x_k − x_j' ([`group_pairs`]'s operations: image 0 lies at x_j itself, so
    /// the direct pair's d is x_k − x_j bit for bit).
    #[inline(always)]
    pub fn d(&self, p: &Pair, pos: &[Vec3]) -> Vec3 {
        let l = p.member();
        self.x[l] - walls::image_at(pos[p.j()], &self.near[l], p.image())
    }

    /// Pair p's m∇W = d · (m g), as the density walk computed it.
    #[inline(always)]
    pub fn grad(&self, p: &Pair, pos: &[Vec3], mass: f32) -> Vec3 {
        self.d(p, pos) * (mass * p.g)
    }
}

/// The pairs of every group of a step's grid, recorded by [`dfsph_density`]'s walk.
///
/// Why: positions do not move during a step's two solves, so every iteration's rate and
/// pressure passes walk exactly the pairs the density walk found, with the same kernel
/// gradient. Replaying them from this list skips the walk's cell loop, slot de-duplication
/// and the distance test of every candidate that is no neighbour (about six candidates per
/// pair), and the gradient's square root and divisions. Each group's pairs are kept in walk
/// order (candidate by candidate, members interleaved, as [`group_pairs`] calls them), so
/// every member's sums add the same terms in the same order as a walk of its own: the same
/// bits as the walk and as the GPU, which walks each time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PairList {
    /// Each group as `(first, len)` ([`groups`](crate::grid::walk::groups)), covering the slot order, in Morton order of
    /// their cells ([`groups_in_space_order`]: neighbouring groups follow each other, so the
    /// walk and every replay find their candidates in the cache).
    pub groups: Vec<(u32, u32)>,
    /// Each group's pairs in walk order.
    pub pairs: Vec<Vec<Pair>>,
    /// Each group's members, for the pairs' d.
    pub frames: Vec<Frame>,
}
