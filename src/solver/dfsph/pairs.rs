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
    pair: impl FnMut(usize, usize, Vec3, f32, Image),
) {
    #[cfg(target_arch = "x86_64")]
    if crate::cpu::simd::has_avx2() {
        // SAFETY: AVX2 is present, checked just above.
        return unsafe { avx2::group_pairs(first, len, pos, slot_start, sp, fp, pair) };
    }
    group_pairs_with(first, len, pos, slot_start, sp, fp, pair, members_within);
}

/// [`group_pairs`] with the members' distance test `within` ([`members_within`] or its AVX2
/// lane form), inlined into each.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn group_pairs_with(
    first: usize,
    len: usize,
    pos: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
    mut pair: impl FnMut(usize, usize, Vec3, f32, Image),
    within: impl Fn(&Members, Vec3, &mut [f32; GROUP]) -> u32,
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
    let members = Members {
        q: [qx, qy, qz],
        h2: sp.h2,
    };
    walk_group(first, pos, slot_start, sp, |j| {
        let xj = pos[j];
        let mut r2s = [0f32; GROUP];
        let mut inside = within(&members, xj, &mut r2s) & live;
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

/// Candidate `xj`'s r² to each member (into `r2s`) and the mask of members within h
/// (bit l: member l), with `distance2`'s operations, so r² is the same bits. A positive
/// test, so a NaN distance counts as no neighbour, as on the GPU.
#[inline(always)]
fn members_within(m: &Members, xj: Vec3, r2s: &mut [f32; GROUP]) -> u32 {
    let [qx, qy, qz] = &m.q;
    let mut inside = 0u32;
    for l in 0..GROUP {
        let (dx, dy, dz) = (qx[l] - xj.x, qy[l] - xj.y, qz[l] - xj.z);
        let r2 = dx * dx + dy * dy + dz * dz;
        r2s[l] = r2;
        inside |= ((r2 < m.h2) as u32) << l;
    }
    inside
}

/// A group's members one lane each (unused lanes repeat the first and are masked off), and h².
struct Members {
    q: [[f32; GROUP]; 3],
    h2: f32,
}

/// [`members_within`] in AVX2 intrinsics, the eight members one lane each: LLVM compiled the
/// portable loop to four-wide SSE with the members' coordinates spilled to the stack (perf,
/// the walk then 32% of a WCSPH step on the CPU path). The same operations in the same order
/// (an ordered less-than, false for NaN), so the same bits and the same mask.
#[cfg(target_arch = "x86_64")]
pub(super) mod avx2 {
    use super::*;
    use crate::cpu::simd::lanes::{left_pack, load3, mask_of, norm2};
    use std::arch::x86_64::*;

    const _: () = assert!(GROUP == 8, "one AVX2 lane per member");

    /// [`super::group_pairs`] compiled for AVX2, its distance test in lanes.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn group_pairs(
        first: usize,
        len: usize,
        pos: &[Vec3],
        slot_start: &[u32],
        sp: &SimParams,
        fp: &FluidParams,
        pair: impl FnMut(usize, usize, Vec3, f32, Image),
    ) {
        group_pairs_with(first, len, pos, slot_start, sp, fp, pair, |m, xj, r2s| {
            // SAFETY: this function runs only where AVX2 is present; each load and the store
            // cover exactly the eight lanes of an array.
            unsafe {
                let d = [0, 1, 2].map(|a| {
                    _mm256_sub_ps(_mm256_loadu_ps(m.q[a].as_ptr()), _mm256_set1_ps(xj[a]))
                });
                let r2 = norm2(d);
                _mm256_storeu_ps(r2s.as_mut_ptr(), r2);
                _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(r2, _mm256_set1_ps(m.h2))) as u32
            }
        })
    }

    /// What the members see of one candidate or of one of its images ([`group_pairs_lanes`]),
    /// member l in lane l.
    pub struct Seen {
        /// The image (0: the candidate itself).
        pub image: Image,
        /// d = x_l − x_j' per lane.
        pub d: [__m256; 3],
        /// |d|² per lane.
        pub r2: __m256,
        /// The lanes of the members that see it, all ones.
        pub mask: __m256,
        /// The same lanes as bits (never empty).
        pub bits: u32,
    }

    /// [`super::group_pairs`] with the pairs in lanes: calls `visit(j, seen)` for each
    /// candidate j of the walk, first with its direct pairs (image 0), then once per image of
    /// the members' walls ([`walls::images`] of their [`walls::shared`] surroundings, in that
    /// order), lane l holding member l's d and r² to j or to that image of j, with the
    /// operations of [`super::group_pairs`]. So each member sees its pairs in that walk's
    /// order with their bits; only the members' interleaving at one candidate differs.
    /// Returns false, having visited nothing, where the members disagree on a wall's plane (a
    /// tank under 2h wide).
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn group_pairs_lanes(
        first: usize,
        len: usize,
        pos: &[Vec3],
        slot_start: &[u32],
        sp: &SimParams,
        fp: &FluidParams,
        mut visit: impl FnMut(usize, &Seen),
    ) -> bool {
        let mut near = [Near::default(); GROUP];
        for (l, w) in near.iter_mut().enumerate().take(len) {
            *w = walls::near(pos[first + l], sp.h, fp);
        }
        let Some(shared) = walls::shared(&near[..len]) else {
            return false;
        };
        // Each image of the group's walls with the members that have it.
        let mut images = [(0 as Image, 0u32); 7];
        let mut count = 0;
        for m in walls::images(&shared) {
            let members = (0..len)
                .filter(|&l| walls::has_image(&near[l], m))
                .fold(0u32, |b, l| b | 1 << l);
            images[count] = (m, members);
            count += 1;
        }
        let mut lanes = [[0f32; GROUP]; 3];
        for l in 0..GROUP {
            let q = pos[first + if l < len { l } else { 0 }];
            (lanes[0][l], lanes[1][l], lanes[2][l]) = (q.x, q.y, q.z);
        }
        // SAFETY: AVX2 is present, as this function requires, for the lane helpers below;
        // each load covers exactly the eight lanes of an array.
        unsafe {
            let q = lanes.map(|a| _mm256_loadu_ps(a.as_ptr()));
            let live = mask_of((1u32 << len) - 1);
            let h2 = _mm256_set1_ps(sp.h2);
            let d_to = |x: Vec3| [0, 1, 2].map(|a| _mm256_sub_ps(q[a], _mm256_set1_ps(x[a])));
            walk_group(first, pos, slot_start, sp, |j| {
                let xj = pos[j];
                let d = d_to(xj);
                let r2 = norm2(d);
                let inside = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(r2, h2), live);
                let bits = _mm256_movemask_ps(inside) as u32;
                if bits == 0 {
                    return;
                }
                // A member is no neighbour of itself; its own images count.
                let own = j.wrapping_sub(first);
                let direct = match own < len {
                    true => bits & !(1 << own),
                    false => bits,
                };
                if direct != 0 {
                    let mask = mask_of(direct);
                    visit(
                        j,
                        &Seen {
                            image: 0,
                            d,
                            r2,
                            mask,
                            bits: direct,
                        },
                    );
                }
                for &(m, members) in &images[..count] {
                    if bits & members == 0 {
                        continue;
                    }
                    let d = d_to(walls::image_at(xj, &shared, m));
                    let r2 = norm2(d);
                    let mask =
                        _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(r2, h2), mask_of(bits & members));
                    let bits = _mm256_movemask_ps(mask) as u32;
                    if bits != 0 {
                        visit(
                            j,
                            &Seen {
                                image: m,
                                d,
                                r2,
                                mask,
                                bits,
                            },
                        );
                    }
                }
            });
        }
        true
    }

    /// Eight consecutive pairs of a group's list, pair i in lane i.
    pub struct PairLanes {
        /// Each pair's member.
        pub member: __m256i,
        /// Each pair's image id (0: the candidate itself).
        pub image: __m256i,
        /// Each pair's candidate.
        pub j: [u32; GROUP],
        /// Each pair's gradient factor g.
        pub g: __m256,
        /// Each pair's d = x_k − x_j' ([`Frame::d`], the same bits).
        pub d: [__m256; 3],
    }

    /// Calls `each(chunk, lanes)` for the pairs of `list` (a group's, `frame` its members) eight
    /// at a time, in order, with their d in lanes ([`Frame::d`]'s operations, the walls'
    /// images by [`walls::lanes::image_at`]); returns the tail of fewer than eight left over.
    /// One loop, so that the replay's closure is compiled into it.
    ///
    /// # Safety
    /// The CPU must support AVX2; every pair's candidate must index `pos`.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn replay<'a>(
        list: &'a [Pair],
        frame: &Frame,
        pos: &[Vec3],
        mut each: impl FnMut(&[Pair], &PairLanes),
    ) -> &'a [Pair] {
        let mut x = [[0f32; GROUP]; 3];
        for (l, p) in frame.x.iter().enumerate() {
            (x[0][l], x[1][l], x[2][l]) = (p.x, p.y, p.z);
        }
        // SAFETY: AVX2 is present, as this function requires. Each load and store covers
        // exactly the eight lanes of an array; a chunk is eight pairs, two 32-byte loads
        // (`Pair` is repr(C), two 4-byte fields); every candidate indexes `pos`.
        unsafe {
            let x = [
                _mm256_loadu_ps(x[0].as_ptr()),
                _mm256_loadu_ps(x[1].as_ptr()),
                _mm256_loadu_ps(x[2].as_ptr()),
            ];
            let planes = walls::lanes::planes(&frame.near);
            let split = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
            let seven = _mm256_set1_epi32(7);
            let mut chunks = list.chunks_exact(GROUP);
            for chunk in &mut chunks {
                let raw = chunk.as_ptr().cast::<__m256i>();
                let a = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(raw), split);
                let b = _mm256_permutevar8x32_epi32(_mm256_loadu_si256(raw.add(1)), split);
                let jt = _mm256_permute2x128_si256::<0x20>(a, b);
                let g = _mm256_castsi256_ps(_mm256_permute2x128_si256::<0x31>(a, b));
                let member = _mm256_and_si256(jt, seven);
                let image = _mm256_and_si256(_mm256_srli_epi32::<3>(jt), seven);
                let mut j = [0u32; GROUP];
                _mm256_storeu_si256(j.as_mut_ptr().cast(), _mm256_srli_epi32::<6>(jt));
                let xj = load3(pos, &j);
                let plane = [
                    _mm256_permutevar8x32_ps(planes[0], member),
                    _mm256_permutevar8x32_ps(planes[1], member),
                    _mm256_permutevar8x32_ps(planes[2], member),
                ];
                let at = walls::lanes::image_at(xj, plane, image);
                let d = [
                    _mm256_sub_ps(_mm256_permutevar8x32_ps(x[0], member), at[0]),
                    _mm256_sub_ps(_mm256_permutevar8x32_ps(x[1], member), at[1]),
                    _mm256_sub_ps(_mm256_permutevar8x32_ps(x[2], member), at[2]),
                ];
                each(
                    chunk,
                    &PairLanes {
                        member,
                        image,
                        j,
                        g,
                        d,
                    },
                );
            }
            chunks.remainder()
        }
    }

    /// Appends the pairs of candidate j's `image` for the members set in `bits` (ascending),
    /// lane l's gradient factor from `g`: eight pairs are written, `bits`' count kept.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[target_feature(enable = "avx2")]
    #[inline]
    pub unsafe fn push_pairs(pairs: &mut Vec<Pair>, j: usize, image: Image, g: __m256, bits: u32) {
        // SAFETY: AVX2 is present, as this function requires.
        let order = unsafe { left_pack(bits) };
        let tag = _mm256_set1_epi32(((j as u32) << 6 | image << 3) as i32);
        let jt = _mm256_or_si256(tag, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        let jt = _mm256_permutevar8x32_epi32(jt, order);
        let g = _mm256_castps_si256(_mm256_permutevar8x32_ps(g, order));
        // (jt, g) pairs: lanes 0, 1, 4, 5 and 2, 3, 6, 7, then in order.
        let (lo, hi) = (_mm256_unpacklo_epi32(jt, g), _mm256_unpackhi_epi32(jt, g));
        let head = _mm256_permute2x128_si256::<0x20>(lo, hi);
        let tail = _mm256_permute2x128_si256::<0x31>(lo, hi);
        pairs.reserve(GROUP);
        // SAFETY: `Pair` is two 4-byte fields in this order (repr(C)), so eight pairs are the
        // two 32-byte stores; the reserve above left room for eight past the length, and the
        // first `bits.count_ones()` of them are initialised pairs.
        unsafe {
            let end = pairs.as_mut_ptr().add(pairs.len()).cast::<__m256i>();
            _mm256_storeu_si256(end, head);
            _mm256_storeu_si256(end.add(1), tail);
            pairs.set_len(pairs.len() + bits.count_ones() as usize);
        }
    }
}

/// One pair of a group's walk, as the solve's passes read it: member `l` (bits 0..3 of `jt`)
/// sees candidate `j` (bits 6..32), or its image of bits 3..6 (the walls model's id, 0 for
/// the candidate itself),
/// with ∇W_kj = g d, g = [`crate::kernel::grad`](r²), d = x_k − x_j' ([`Frame::d`] recomputes d with
/// the walk's operations, so the same bits). Eight bytes: the passes that replay the list
/// are bound by reading it (16-byte pairs holding m∇W, with a 20-byte geometry record
/// beside them for the viscosity, measured slower a step: docs/benchmarks.md).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[repr(C)]
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
/// order (candidate by candidate, members interleaved, as [`group_pairs`] calls them; WCSPH's
/// eight-lane walk lists a candidate's direct pairs for all members before their images,
/// [`avx2::group_pairs_lanes`]), so every member's sums add the same terms in the same order
/// as a walk of its own: the same bits as the walk and as the GPU, which walks each time.
/// The replays read each member's pairs in that order and nothing else of the interleaving.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grid::walk::groups;
    use crate::grid::{Grid, reorder};

    /// Where the CPU has AVX2, the walk's lane test gives the portable test's pairs bit for
    /// bit and in the same order: a cloud filling a small tank (images at its walls), every
    /// cell aliased into one slot (T = 1), and a particle at NaN, which no member sees.
    #[test]
    fn the_avx2_walk_finds_the_portable_walks_pairs() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        // A small tank of unit side: a third of the cloud lies within h of a wall.
        let (sp, fp, _) = crate::solver::dfsph::tests::setup(0.2, 1.0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut pos: Vec<Vec3> = (0..500)
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()) * 0.98 + 0.01)
            .collect();
        pos[17] = Vec3::splat(f32::NAN);
        let g = Grid::build(&pos, &sp);
        let sorted = reorder::gather(&pos, &g.sorted_ids);
        type Seen = Vec<(usize, usize, [u32; 3], u32, Image)>;
        fn record(p: &mut Seen) -> impl FnMut(usize, usize, Vec3, f32, Image) + '_ {
            move |l, j, d, r2, image| {
                p.push((l, j, d.to_array().map(f32::to_bits), r2.to_bits(), image))
            }
        }
        let (mut total, mut images) = (0, 0);
        for (first, len) in groups(&sorted[..], &sp) {
            let (first, len) = (first as usize, len as usize);
            let (mut best, mut portable) = (Seen::new(), Seen::new());
            group_pairs(
                first,
                len,
                &sorted,
                &g.slot_start,
                &sp,
                &fp,
                record(&mut best),
            );
            group_pairs_with(
                first,
                len,
                &sorted,
                &g.slot_start,
                &sp,
                &fp,
                record(&mut portable),
                members_within,
            );
            assert_eq!(best, portable, "group at {first}");
            total += best.len();
            images += best.iter().filter(|p| p.4 != 0).count();
        }
        assert!(
            total > 5_000 && images > 0,
            "{total} pairs, {images} images"
        );
    }

    /// In a 2D run (`SimParams::planar`) the walk of the plane's 3 × 3 cells finds exactly
    /// the pairs of a brute-force search, dx² + dy² < h² between distinct points, at T = 1
    /// (every cell aliased) and at T = 256; the tank's z walls h off the plane give no image.
    #[test]
    fn the_planar_walk_finds_every_pair_of_the_plane_and_no_other() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        use std::collections::BTreeSet;
        let (mut sp, mut fp, _) = crate::solver::dfsph::tests::setup(0.2, 1.0);
        sp.planar = 1;
        (fp.tank_min[2], fp.tank_max[2]) = (-sp.h, sp.h);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(5);
        let pos: Vec<Vec3> = (0..600)
            .map(|_| Vec3::new(rng.random(), rng.random(), 0.0) * 0.98 + Vec3::new(0.01, 0.01, 0.0))
            .collect();
        let mut brute = BTreeSet::new();
        for (k, a) in pos.iter().enumerate() {
            for (j, b) in pos.iter().enumerate() {
                let (dx, dy) = (a.x - b.x, a.y - b.y);
                if k != j && dx * dx + dy * dy < sp.h2 {
                    brute.insert((k, j));
                }
            }
        }
        for table in [1u32, 256] {
            (sp.table_size, sp.table_mask) = (table, table - 1);
            let g = Grid::build(&pos, &sp);
            let sorted = reorder::gather(&pos, &g.sorted_ids);
            let id = |slot: usize| g.sorted_ids[slot] as usize;
            let mut found = BTreeSet::new();
            for (first, len) in groups(&sorted[..], &sp) {
                let first = first as usize;
                let walk = |l: usize, j: usize, d: Vec3, _r2: f32, image: Image| {
                    assert_eq!(d.z, 0.0);
                    if image == 0 {
                        assert!(found.insert((id(first + l), id(j))), "a pair twice");
                    } else {
                        assert!(walls::image_vector(Vec3::Z, image).z > 0.0, "a z image");
                    }
                };
                group_pairs(first, len as usize, &sorted, &g.slot_start, &sp, &fp, walk);
            }
            assert_eq!(found, brute, "T = {table}");
            assert!(brute.len() > 10_000, "{} pairs", brute.len());
        }
    }
}
