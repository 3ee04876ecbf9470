//! Stage `dfsph_density`, the CPU mirror of `shaders/solver/dfsph/dfsph_density.wgsl` (its header gives
//! the inputs, the outputs and a worked example); [`super`] describes the method (Bender &
//! Koschier 2015, 2017) and how the stages chain into a step.

use glam::Vec3;
use rayon::prelude::*;

use crate::boundary::Boundary;
use crate::boundary::walls::{self, Image};
use crate::grid::walk::{GROUP, groups_in_space_order, scatter_groups};
use crate::kernel;
use crate::params::{DfsphParams, FluidParams, SimParams};

use super::blocks::*;
use super::pairs::*;

/// Output of [`dfsph_density`] (slot order).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DensityAlpha {
    /// ρ_i = m Σ_j W_ij, walls' images included, kg/m³.
    pub density: Vec<f32>,
    /// The DFSPH factor α_i (negated below the neighbour threshold, see the module doc).
    pub alpha: Vec<f32>,
    /// Per block of 256: Σ max(ρ_i/ρ0 − 1, 0).
    pub error_sums: Vec<f32>,
    /// Per block of 256: max of max(ρ_i/ρ0 − 1, 0).
    pub error_maxima: Vec<f32>,
    /// Every particle's pairs as the walk found them, for the solves ([`PairList`]).
    pub pairs: PairList,
}

/// The sums one walk gathers for ρ_k and α_k.
///
/// α's denominator is the linearisation of ρ_k in its own stiffness (Bender & Koschier 2017,
/// eq. 9) with the walls' images acting as they do in the solve: an image carries its
/// original's stiffness and moves as the reflected original (R_m v). A stiffness κ_k moves k
/// by Δv_k = −c G' (c = dt κ_k/ρ_k), where G = Σ m∇W over neighbours and images and G' = G +
/// Σ_m m∇W_kk' (k's own images carry κ_k, so k pushes against each with twice it). It moves
/// each neighbour j by c H_j, with H_j = Σ_m R_m m∇W(x_k − R_m x_j) over j and its images
/// within h of k (m = ∅ is j itself): j reacts to k and to k's images, which it sees across
/// the same walls at the same distances. So
/// −Δ(Dρ_k/Dt)/c = G'·G + Σ_j |H_j|² − Σ_m (R_m G')·m∇W_kk'
/// (the last term: k's own images move with k). Away from walls H_j = m∇W_kj, the bulk
/// formula. The walk gives a neighbour first and its images right after it, so H_j is summed
/// as they come. Checked by a test: κ_k = 1 applied by [`dfsph_pressure`] changes k's rate
/// by −dt/α_k within 1e-4 (5e-7 measured) at walls, edges and corners. Counting only j's
/// reaction to k (first built) left α near walls up to 42% too large; the Jacobi solve then
/// overshot at the tank's edges, and a resting column's edge particles flipped their
/// velocity every step at about g dt (measured, docs/validation.md in the git history). With G
/// alone (the bulk formula) α is far too large on a wall's first layer, whose own image is one
/// spacing away: a hydrostatic column blew up (measured).
#[derive(Clone, Copy, Debug)]
pub(super) struct DensitySums {
    sum: f32,
    grad: Vec3,
    /// Σ |H_j|² of the neighbours before the current one.
    grad2: f32,
    /// The current neighbour's H_j so far.
    hj: Vec3,
    nb: u32,
}

impl DensitySums {
    fn new(sp: &SimParams) -> Self {
        Self {
            sum: kernel::w(0.0, sp),
            grad: Vec3::ZERO,
            grad2: 0.0,
            hj: Vec3::ZERO,
            nb: 0,
        }
    }

    /// The pair (j, d, r², axes) of particle k; returns its kernel gradient's factor.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn add(
        &mut self,
        k: usize,
        j: usize,
        d: Vec3,
        r2: f32,
        image: Image,
        sp: &SimParams,
        fp: &FluidParams,
    ) -> f32 {
        self.sum += kernel::w(r2, sp);
        let g = kernel::grad(r2, sp);
        let gv = d * (fp.mass * g);
        self.grad += gv;
        // A neighbour comes first, then its images (group_pairs): its H_j is complete when
        // the next neighbour starts, and the last one's is added in finish_alpha.
        if image == 0 {
            let h = self.hj;
            self.grad2 += h.x * h.x + h.y * h.y + h.z * h.z;
            self.hj = gv;
        } else if j != k {
            self.hj += walls::image_vector(gv, image);
        }
        self.nb += 1;
        g
    }
}

impl DensitySums {
    /// The density's part of [`DensitySums::add`] alone (WCSPH, which needs no α); returns
    /// the kernel gradient's factor for the pair list.
    #[inline]
    fn add_density(&mut self, r2: f32, sp: &SimParams) -> f32 {
        self.sum += kernel::w(r2, sp);
        self.nb += 1;
        kernel::grad(r2, sp)
    }
}

/// ρ of particle k at x from its walk's sums (WCSPH's part of [`finish_alpha`]): m Σ W, the
/// obstacles' Σ ψ_b W added.
fn finish_density(
    x: Vec3,
    s: &DensitySums,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
) -> f32 {
    let mut rho = fp.mass * s.sum;
    if let Some((bsum, _, _)) = boundary_density(b, x, sp) {
        rho += bsum;
    }
    rho
}

/// The obstacles' boundary particles within h of x (Akinci et al. 2012 with the solver's
/// Wendland C2 kernel): Σ_b ψ_b W_xb, Σ_b ψ_b ∇W_xb and their count, summed in walk order. `None`
/// where x is away from them (the sums then take no part, so a particle there keeps the
/// bits it has without obstacles).
#[inline]
pub fn boundary_density(b: Option<&Boundary>, x: Vec3, sp: &SimParams) -> Option<(f32, Vec3, u32)> {
    let b = b.filter(|b| b.near(x))?;
    let (mut sum, mut grad, mut nb) = (0.0f32, Vec3::ZERO, 0u32);
    b.walk(x, sp, |k, r2| {
        sum += b.weight(k, kernel::w(r2, sp));
        grad += b.grad(k, x - b.pos[k], kernel::grad(r2, sp));
        nb += 1;
    });
    Some((sum, grad, nb))
}

/// ρ and α of particle k at x from its walk's sums, the obstacles' boundary particles added:
/// to ρ their Σ ψ_b W, to the gradient sum G their Σ ψ_b ∇W (not to Σ|m∇W|², since a
/// boundary particle is no unknown of the solve, as SPlisHSPlasH treats boundary
/// neighbours), to the neighbour count their number.
pub(super) fn finish_alpha(
    x: Vec3,
    s: &DensitySums,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> (f32, f32) {
    let (sum, mut grad, mut nb) = (s.sum, s.grad, s.nb);
    let grad2 = s.grad2 + (s.hj.x * s.hj.x + s.hj.y * s.hj.y + s.hj.z * s.hj.z);
    let obstacles = boundary_density(b, x, sp);
    if let Some((_, bgrad, bnb)) = obstacles {
        grad += bgrad;
        nb += bnb;
    }
    // k's own images carry k's stiffness and move with it (the tank's model says what they
    // add and take back).
    let own_images = walls::own_images(x, &walls::near(x, sp.h, fp), fp.mass, sp);
    let gp = grad + own_images.gradient();
    let own = own_images.alpha_term(gp);
    let mut rho = fp.mass * sum;
    if let Some((bsum, _, _)) = obstacles {
        rho += bsum;
    }
    let denom = gp.x * grad.x + gp.y * grad.y + gp.z * grad.z + grad2 - own;
    // Below the neighbour threshold α is stored negated: the constant-density solve uses |α|
    // (a sparse particle still must not be crushed), the divergence-free solve skips the
    // particle (SPlisHSPlasH's particle-deficiency guard, which only that solve has).
    let alpha = if denom > 0.0 { rho / denom } else { 0.0 };
    let alpha = if nb >= dp.min_neighbours {
        alpha
    } else {
        -alpha
    };
    (rho, alpha)
}

/// One group's (ρ, α) per member, its pairs and their geometry.
type GroupDensity = ([(f32, f32); GROUP], Vec<Pair>, Frame);

/// ρ and α of the group `first..first + len` ([`group_pairs`]), and its pairs in walk
/// order ([`PairList`]). With `lanes` (where the CPU has AVX2) the sums are gathered eight
/// members at a time ([`avx2::density_sums`]), the same bits.
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(super) fn group_density_alpha(
    first: usize,
    len: usize,
    pos: &[Vec3],
    slot_start: &[u32],
    b: Option<&Boundary>,
    lanes: bool,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> GroupDensity {
    let mut sums = [DensitySums::new(sp); GROUP];
    // About 113 neighbours a member at Wendland C2's 3 spacings, more at walls.
    let mut pairs = Vec::with_capacity(len * 128);
    // WCSPH applies no solve: α would go unused, so its sums are not gathered.
    let wcsph = dp.is_wcsph();
    #[cfg(not(target_arch = "x86_64"))]
    let _ = lanes;
    #[cfg(target_arch = "x86_64")]
    if lanes && crate::cpu::simd::has_avx2() {
        let alpha = !wcsph;
        // SAFETY: AVX2 is present, checked just above.
        let walked =
            unsafe { avx2::density_sums(first, len, pos, slot_start, alpha, sp, fp, &mut pairs) };
        if let Some(sums) = walked {
            let mut out = [(0.0, 0.0); GROUP];
            for (l, o) in out.iter_mut().enumerate().take(len) {
                *o = match wcsph {
                    true => (finish_density(pos[first + l], &sums[l], b, sp, fp), 0.0),
                    false => finish_alpha(pos[first + l], &sums[l], b, sp, fp, dp),
                };
            }
            return (out, pairs, Frame::of(first, len, pos, sp, fp));
        }
    }
    group_pairs(first, len, pos, slot_start, sp, fp, |l, j, d, r2, image| {
        let g = match wcsph {
            true => sums[l].add_density(r2, sp),
            false => sums[l].add(first + l, j, d, r2, image, sp, fp),
        };
        let tag = l as u32 | (image << 3);
        pairs.push(Pair {
            jt: (j as u32) << 6 | tag,
            g,
        });
    });
    let mut out = [(0.0, 0.0); GROUP];
    for (l, o) in out.iter_mut().enumerate().take(len) {
        *o = match wcsph {
            true => (finish_density(pos[first + l], &sums[l], b, sp, fp), 0.0),
            false => finish_alpha(pos[first + l], &sums[l], b, sp, fp, dp),
        };
    }
    (out, pairs, Frame::of(first, len, pos, sp, fp))
}

/// The density walk's sums of a group in eight AVX2 lanes, one member a lane: each
/// candidate's kernel value and gradient factor are evaluated for all members at once
/// ([`crate::kernel::lanes`]) and its pairs appended packed ([`avx2::push_pairs`]), where the
/// per-pair closure of [`group_pairs`] evaluated them one member at a time (perf: that closure,
/// not inlined into the walk, was a fifth of a WCSPH run on the CPU path). Each lane adds its
/// member's terms in its walk's order ([`avx2::group_pairs_lanes`]) with
/// [`DensitySums::add`]'s operations (a lane a pair does not reach keeps its value), so the
/// sums are the portable walk's bits.
#[cfg(target_arch = "x86_64")]
mod avx2 {
    use super::*;
    use crate::cpu::simd::lanes::{mask_of, norm2};
    use std::arch::x86_64::*;

    pub use super::super::pairs::avx2::push_pairs;

    /// The sums of ρ ([`DensitySums::add_density`] per pair), and with `alpha` those of α too
    /// ([`DensitySums::add`]), of the group `first..first + len`, its pairs appended to
    /// `pairs`; `None` (nothing appended) where
    /// [`group_pairs_lanes`](super::super::pairs::avx2::group_pairs_lanes) declines the group.
    ///
    /// # Safety
    /// The CPU must support AVX2.
    #[allow(clippy::too_many_arguments)]
    #[target_feature(enable = "avx2")]
    pub unsafe fn density_sums(
        first: usize,
        len: usize,
        pos: &[Vec3],
        slot_start: &[u32],
        alpha: bool,
        sp: &SimParams,
        fp: &FluidParams,
        pairs: &mut Vec<Pair>,
    ) -> Option<[DensitySums; GROUP]> {
        let zero = _mm256_setzero_ps();
        let mut sum = _mm256_set1_ps(kernel::w(0.0, sp));
        let mut nb = _mm256_setzero_si256();
        let (mut grad, mut hj, mut grad2) = ([zero; 3], [zero; 3], zero);
        let mass = _mm256_set1_ps(fp.mass);
        let blend3 = |old: [__m256; 3], new: [__m256; 3], m: __m256| {
            [0, 1, 2].map(|a| _mm256_blendv_ps(old[a], new[a], m))
        };
        let add3 = |x: [__m256; 3], y: [__m256; 3]| [0, 1, 2].map(|a| _mm256_add_ps(x[a], y[a]));
        // SAFETY: AVX2 is present, as this function requires, for the walk and the lane
        // functions its visits call.
        let walked = unsafe {
            super::super::pairs::avx2::group_pairs_lanes(
                first,
                len,
                pos,
                slot_start,
                sp,
                fp,
                |j, seen| {
                    let (w, g) = (
                        kernel::lanes::w(seen.r2, sp),
                        kernel::lanes::grad(seen.r2, sp),
                    );
                    let m = seen.mask;
                    // A member not in m adds +0 (its sum is positive from W(0) on): the same bits.
                    sum = _mm256_add_ps(sum, _mm256_and_ps(m, w));
                    nb = _mm256_sub_epi32(nb, _mm256_castps_si256(m));
                    push_pairs(pairs, j, seen.image, g, seen.bits);
                    if !alpha {
                        return;
                    }
                    // DensitySums::add's operations, each lane's where m has it.
                    let mg = _mm256_mul_ps(mass, g);
                    let gv = [0, 1, 2].map(|a| _mm256_mul_ps(seen.d[a], mg));
                    grad = blend3(grad, add3(grad, gv), m);
                    if seen.image == 0 {
                        grad2 = _mm256_blendv_ps(grad2, _mm256_add_ps(grad2, norm2(hj)), m);
                        hj = blend3(hj, gv, m);
                    } else {
                        let own = j.wrapping_sub(first);
                        let others = match own < len {
                            true => mask_of(seen.bits & !(1 << own)),
                            false => m,
                        };
                        let reflected =
                            walls::lanes::image_vector(gv, _mm256_set1_epi32(seen.image as i32));
                        hj = blend3(hj, add3(hj, reflected), others);
                    }
                },
            )
        };
        if !walked {
            return None;
        }
        let mut out = [DensitySums::new(sp); GROUP];
        let (mut sums, mut counts, mut sq) = ([0f32; GROUP], [0u32; GROUP], [0f32; GROUP]);
        let (mut g3, mut h3) = ([[0f32; GROUP]; 3], [[0f32; GROUP]; 3]);
        // SAFETY: each store covers exactly the eight lanes of an array.
        unsafe {
            _mm256_storeu_ps(sums.as_mut_ptr(), sum);
            _mm256_storeu_si256(counts.as_mut_ptr().cast(), nb);
            _mm256_storeu_ps(sq.as_mut_ptr(), grad2);
            for a in 0..3 {
                _mm256_storeu_ps(g3[a].as_mut_ptr(), grad[a]);
                _mm256_storeu_ps(h3[a].as_mut_ptr(), hj[a]);
            }
        }
        for (l, o) in out.iter_mut().enumerate() {
            (o.sum, o.nb, o.grad2) = (sums[l], counts[l], sq[l]);
            o.grad = Vec3::new(g3[0][l], g3[1][l], g3[2][l]);
            o.hj = Vec3::new(h3[0][l], h3[1][l], h3[2][l]);
        }
        Some(out)
    }
}

/// The density error of one particle, max(ρ/ρ0 − 1, 0).
#[inline]
pub fn density_error(rho: f32, fp: &FluidParams) -> f32 {
    (rho / fp.rest_density - 1.0).max(0.0)
}

/// Stage `dfsph_density`: ρ and α of every particle, obstacles included (`b`), and the
/// density error's block sums and maxima.
pub fn dfsph_density(
    pos: &[Vec3],
    slot_start: &[u32],
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> DensityAlpha {
    let groups = groups_in_space_order(pos, sp);
    let lanes = crate::cpu::simd::has_avx2();
    let per_group: Vec<_> = groups
        .par_iter()
        .with_min_len(32)
        .map(|&(first, len)| {
            // Compiled for AVX2 where present (the same operations, so the same bits): the
            // finishing sums inline here; the walk picks its AVX2 form itself (`group_pairs`).
            crate::cpu::simd::best(|| {
                let (first, len) = (first as usize, len as usize);
                group_density_alpha(first, len, pos, slot_start, b, lanes, sp, fp, dp)
            })
        })
        .collect();
    let mut values = Vec::with_capacity(groups.len());
    let mut pairs = Vec::with_capacity(groups.len());
    let mut frames = Vec::with_capacity(groups.len());
    for (v, p, f) in per_group {
        values.push(v);
        pairs.push(p);
        frames.push(f);
    }
    let (density, alpha): (Vec<f32>, Vec<f32>) = scatter_groups(pos.len(), &groups, &values)
        .into_iter()
        .unzip();
    let err: Vec<f32> = density.iter().map(|&r| density_error(r, fp)).collect();
    DensityAlpha {
        error_sums: block_sums(&err),
        error_maxima: block_maxima(&err),
        density,
        alpha,
        pairs: PairList {
            groups,
            pairs,
            frames,
        },
    }
}
