//! The DFSPH solver on the CPU: the mirror of the `dfsph_*` WGSL stages, one function per
//! pass, with the same loops, the same pair order and the same `f32` operations, so the two
//! paths agree bit for bit on lavapipe.
//!
//! Divergence-free SPH (Bender & Koschier, "Divergence-Free Smoothed Particle Hydrodynamics",
//! SCA 2015; "Divergence-Free SPH for Incompressible and Viscous Fluids", IEEE TVCG 2017),
//! arranged as SPlisHSPlasH's `TimeStepDFSPH` arranges it. One step:
//! 1. neighbour grid and reorder (as for WCSPH), then [`dfsph_density`]: the density
//!    ρ_i = m Σ_j W_ij and the factor α_i = ρ_i / (|Σ_j m∇W_ij|² + Σ_j |m∇W_ij|²) (BK17 eq. 9);
//! 2. the divergence-free solve ([`Solve::Divergence`]): κ^v_i = (Dρ_i/Dt)/dt · α_i from the
//!    density change rate Dρ_i/Dt = Σ_j m (v_i − v_j)·∇W_ij ([`dfsph_rate`]), only where it is
//!    positive (compression), then v_i −= dt Σ_j m (κ_i/ρ_i + κ_j/ρ_j) ∇W_ij
//!    ([`dfsph_pressure`]), until the mean of max(Dρ/Dt, 0)·dt/ρ0 ≤ η_v; warm-started with
//!    half of last step's stiffness where the fluid compresses now ([`dfsph_warm`]);
//! 3. [`dfsph_accel`]: gravity and viscosity (WCSPH's artificial viscosity Π term for term,
//!    on approaching pairs); [`dfsph_timestep`]: dt = λ s / max|v + a dt_prev|, at most K
//!    times the explicit viscosity's stability limit (K = `--viscous-substeps`, default 1),
//!    clamped to [dt_min, dt_max]; [`dfsph_predict`]: v += a dt/n, n ≤ K substeps each within
//!    the limit, [`dfsph_accel`] again before each later one; the last leaves v*;
//! 4. the constant-density solve ([`Solve::Density`]): predicted densities
//!    ρ*_i = max(ρ_i + dt Dρ_i/Dt, ρ0), κ_i = (ρ*_i − ρ0)/dt² · α_i, the same velocity update,
//!    until the mean of ρ*_i/ρ0 − 1 ≤ η (at least two iterations);
//! 5. [`dfsph_integrate`]: x += v dt, and the stiffness of both solves is kept (per particle
//!    id, dt removed) to warm-start the next step's solves ([`dfsph_warm`]);
//! 6. the grid and [`dfsph_density`] again at the new positions, which gives this step's
//!    density error (mean and maximum of max(ρ/ρ0 − 1, 0)) and is the next step's step 1.
//!
//! One kernel throughout the solver: the cubic spline of support h (Monaghan 1992, the kernel
//! SPlisHSPlasH uses), [`cubic_w`] and its own gradient [`cubic_grad`], for the density, α,
//! the density change rate and the pressure accelerations, so the solve's linearisation is
//! the derivative of the density it corrects. (WCSPH and density-only runs keep poly6.)
//!
//! Walls: the tank's mirror particles (Colagrossi & Landrini 2003, see [`super::walls`]) take
//! part in every sum ([`group_pairs`]): an image of j carries j's density and stiffness, and j's
//! velocity with the normal components reflected in the density change rate (free slip,
//! [`image_velocity`]) and reversed in the viscosity (no slip), the wall model of both
//! solvers. Images add
//! to the gradient sum of α_i but not to its Σ|m∇W_ij|² term, since an image is not an
//! unknown of its own, as SPlisHSPlasH treats boundary neighbours.
//!
//! Particle deficiency: with fewer than [`DFSPH_MIN_NEIGHBOURS`](crate::params::DFSPH_MIN_NEIGHBOURS)
//! neighbours (images included) α_i is stored negated: the divergence-free solve skips the
//! particle and its divergence does not count towards the residual (SPlisHSPlasH's guard,
//! which only that solve has), while the constant-density solve uses |α_i|. Zeroing α for
//! both solves let the sparse toe of a dam break pass through itself (density errors of
//! 70–160%, measured) and the front run 30% ahead of Martin & Moyce.
//!
//! The implied pressure: the stiffness a solve applies is κ_i = p_i/ρ_i (the update is the
//! symmetric pressure gradient −dt Σ m (p_i/ρ_i² + p_j/ρ_j²)∇W_ij), so the pressure the
//! constant-density solve implies is p_i = ρ_i Σ_iterations κ_i, [`implied_pressure`].
//!
//! Pair lists: positions stay put through a step's two solves, so [`dfsph_density`]'s walk
//! records every pair it finds ([`PairList`], in walk order, 8 bytes a pair: the candidate,
//! its image's walls and the kernel gradient's factor) and the solves' [`dfsph_rate`] and
//! [`dfsph_pressure`] passes and [`dfsph_accel`] replay the list instead of walking again,
//! recomputing each pair's d from the group's [`Frame`] with the walk's operations: the same
//! terms in the same order, so the same bits as a walk (and as the GPU, which walks each
//! time). Measured on the 20k dam break: 4.2× less time a step over the first 150 steps; the
//! 8-byte pairs took another 15–20% off a 100k step (docs/benchmarks.md).
//!
//! Residuals are reduced in a fixed tree (no float atomics): [`block_sums`] per block of 256
//! particles (pairwise halving), then [`reduce_total`]; the GPU's workgroups do exactly this.
//!
//! Worked example (h = 1, m = 1, ρ0 = 1, no walls in reach): two particles 0.5 apart have
//! W(0.5) = 8/π · 0.25 = 0.6366 and ρ = 8/π + 0.6366 = 3.1831 each; |m∇W| = 48/π · 0.25 = 3.8197,
//! so α = 3.1831 / (2 · 3.8197²) = 0.1091 (but 0 here in practice: two particles are far
//! below the neighbour threshold; the unit tests lower it).

use glam::{BVec3, Vec3};
use rayon::prelude::*;

use super::Grid;
use super::clock::{record_grid, timed};
use super::integrate::clamp_to_box;
use super::interact::{InteractParams, interact};
use super::reorder::{self, Particles};
use super::walk::{GROUP, groups_in_space_order, scatter_groups, walk_group};
use super::walls::{
    WallPlanes, image_axes, image_velocity, reflect_across, subsets, viscous_image_velocity,
    wall_planes,
};
use crate::boundary::Boundary;
pub use crate::core::DfsphStats;
use crate::core::Stage;
use crate::params::{DfsphParams, FluidParams, REDUCE_BLOCK, SimParams};

pub use crate::kernel::{cubic_grad, cubic_w};

/// Calls `pair(l, j, d, r², axes)` for every neighbour of member l (slot-order particle
/// first + l) of a group sharing a query range ([`groups`](super::walk::groups)), and every wall image within h:
/// per candidate j of the one walk, for each member with r² < h², j itself if j ≠ k (axes all
/// false), then its images across the member's near walls in decreasing subset mask (`axes`
/// the reflected ones; k's own images count). d = x_k − (image of) x_j. Each member sees its
/// pairs in the order of a walk of its own. The mirror of `visit` in dfsph_pairs.wgsl.
#[inline]
pub fn group_pairs(
    first: usize,
    len: usize,
    pos: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
    mut pair: impl FnMut(usize, usize, Vec3, f32, BVec3),
) {
    let mut walls = [WallPlanes::default(); GROUP];
    for (l, w) in walls.iter_mut().enumerate().take(len) {
        *w = wall_planes(pos[first + l], sp.h, fp);
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
                pair(l, j, x - xj, r2, BVec3::FALSE);
            }
            let walls = &walls[l];
            for m in subsets(walls.mask) {
                let axes = image_axes(m);
                let d = x - reflect_across(xj, walls.plane, axes);
                let r2i = d.x * d.x + d.y * d.y + d.z * d.z;
                if r2i < sp.h2 {
                    pair(l, j, d, r2i, axes);
                }
            }
        }
    });
}

/// The reduction tree of one block with `op` (+ or max): s[l] = op(s[l], s[l + half]) for
/// half = 128, 64, …, 1.
fn tree(s: &mut [f32; REDUCE_BLOCK as usize], op: fn(f32, f32) -> f32) -> f32 {
    let mut half = REDUCE_BLOCK as usize / 2;
    while half > 0 {
        for l in 0..half {
            s[l] = op(s[l], s[l + half]);
        }
        half >>= 1;
    }
    s[0]
}

fn add(a: f32, b: f32) -> f32 {
    a + b
}

/// First level of the fixed reduction with `op`: one value per block of 256 (the last block
/// padded with zeros), as one GPU workgroup reduces its invocations' values.
fn blocks(v: &[f32], op: fn(f32, f32) -> f32) -> Vec<f32> {
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
fn second_level(partials: &[f32], op: fn(f32, f32) -> f32) -> f32 {
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

/// Particles a DFSPH run may hold: a [`Pair`] packs the candidate's index into 26 bits.
pub use crate::core::limits::DFSPH_MAX_PARTICLES as MAX_PARTICLES;

/// One pair of a group's walk, as the solve's passes read it: member `l` (bits 0..3 of `jt`)
/// sees candidate `j` (bits 6..32), or its image across the walls of bits 3..6 (x, y, z),
/// with ∇W_kj = g d, g = [`cubic_grad`](r²), d = x_k − x_j' ([`Frame::d`] recomputes d with
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

    /// The walls the candidate is reflected across (all false for the candidate itself).
    #[inline]
    pub fn axes(&self) -> BVec3 {
        BVec3::new(self.jt & 8 != 0, self.jt & 16 != 0, self.jt & 32 != 0)
    }
}

/// A group's members as the replays need them: their positions and the planes of their near
/// walls, from which each pair's d = x_k − x_j' follows.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Frame {
    /// The members' positions.
    pub x: [Vec3; GROUP],
    /// The members' near walls' planes ([`WallPlanes::plane`]).
    pub plane: [Vec3; GROUP],
}

impl Frame {
    /// The frame of the group `first..first + len`.
    fn of(first: usize, len: usize, pos: &[Vec3], sp: &SimParams, fp: &FluidParams) -> Self {
        let mut f = Frame::default();
        for l in 0..len {
            f.x[l] = pos[first + l];
            f.plane[l] = wall_planes(f.x[l], sp.h, fp).plane;
        }
        f
    }

    /// Pair p's d = x_k − x_j' ([`group_pairs`]'s operations: reflecting across no axis
    /// leaves x_j as it is, so the direct pair's d is x_k − x_j bit for bit).
    #[inline(always)]
    pub fn d(&self, p: &Pair, pos: &[Vec3]) -> Vec3 {
        let l = p.member();
        self.x[l] - reflect_across(pos[p.j()], self.plane[l], p.axes())
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
    /// Each group as `(first, len)` ([`groups`](super::walk::groups)), covering the slot order, in Morton order of
    /// their cells ([`groups_in_space_order`]: neighbouring groups follow each other, so the
    /// walk and every replay find their candidates in the cache).
    pub groups: Vec<(u32, u32)>,
    /// Each group's pairs in walk order.
    pub pairs: Vec<Vec<Pair>>,
    /// Each group's members, for the pairs' d.
    pub frames: Vec<Frame>,
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
/// velocity every step at about g dt (measured, docs/validation.md). With G alone (the bulk
/// formula) α is far too large on a wall's first layer, whose own image is one spacing away:
/// a hydrostatic column blew up (measured).
#[derive(Clone, Copy, Debug)]
struct DensitySums {
    sum: f32,
    grad: Vec3,
    /// Σ |H_j|² of the neighbours before the current one.
    grad2: f32,
    /// The current neighbour's H_j so far.
    hj: Vec3,
    nb: u32,
}

impl DensitySums {
    fn new(dp: &DfsphParams) -> Self {
        Self {
            sum: dp.kernel_w,
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
        axes: BVec3,
        sp: &SimParams,
        fp: &FluidParams,
        dp: &DfsphParams,
    ) -> f32 {
        self.sum += cubic_w(r2, sp, dp);
        let g = cubic_grad(r2, sp, dp);
        let gv = d * (fp.mass * g);
        self.grad += gv;
        // A neighbour comes first, then its images (group_pairs): its H_j is complete when
        // the next neighbour starts, and the last one's is added in finish_alpha.
        if !axes.any() {
            let h = self.hj;
            self.grad2 += h.x * h.x + h.y * h.y + h.z * h.z;
            self.hj = gv;
        } else if j != k {
            self.hj += reflect_vector(gv, axes);
        }
        self.nb += 1;
        g
    }
}

/// The obstacles' boundary particles within h of x (Akinci et al. 2012 with the solver's
/// cubic kernel): Σ_b ψ_b W_xb, Σ_b ψ_b ∇W_xb and their count, summed in walk order. `None`
/// where x is away from them (the sums then take no part, so a particle there keeps the
/// bits it has without obstacles).
#[inline]
pub fn boundary_density(
    b: Option<&Boundary>,
    x: Vec3,
    sp: &SimParams,
    dp: &DfsphParams,
) -> Option<(f32, Vec3, u32)> {
    let b = b.filter(|b| b.near(x))?;
    let (mut sum, mut grad, mut nb) = (0.0f32, Vec3::ZERO, 0u32);
    b.walk(x, sp, |k, r2| {
        let psi = b.psi[k];
        sum += psi * cubic_w(r2, sp, dp);
        grad += (x - b.pos[k]) * (psi * cubic_grad(r2, sp, dp));
        nb += 1;
    });
    Some((sum, grad, nb))
}

/// ρ and α of particle k at x from its walk's sums, the obstacles' boundary particles added:
/// to ρ their Σ ψ_b W, to the gradient sum G their Σ ψ_b ∇W (not to Σ|m∇W|², since a
/// boundary particle is no unknown of the solve, as SPlisHSPlasH treats boundary
/// neighbours), to the neighbour count their number.
fn finish_alpha(
    x: Vec3,
    s: &DensitySums,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> (f32, f32) {
    let (sum, mut grad, mut nb) = (s.sum, s.grad, s.nb);
    let grad2 = s.grad2 + (s.hj.x * s.hj.x + s.hj.y * s.hj.y + s.hj.z * s.hj.z);
    let obstacles = boundary_density(b, x, sp, dp);
    if let Some((_, bgrad, bnb)) = obstacles {
        grad += bgrad;
        nb += bnb;
    }
    // k's own images carry k's stiffness, so k's own update pushes against each of them with
    // twice its stiffness: Δv_k = −c G' with G' = G + Σ_m m∇W_kk'. They also move with k.
    let walls = wall_planes(x, sp.h, fp);
    let mut own_grad = Vec3::ZERO;
    let mut own_images = [(BVec3::FALSE, Vec3::ZERO); 7];
    let mut n_own = 0;
    for m in subsets(walls.mask) {
        let axes = image_axes(m);
        let d = x - reflect_across(x, walls.plane, axes);
        let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
        if r2 < sp.h2 {
            let gv = d * (fp.mass * cubic_grad(r2, sp, dp));
            own_grad += gv;
            own_images[n_own] = (axes, gv);
            n_own += 1;
        }
    }
    let gp = grad + own_grad;
    let mut own = 0.0f32;
    for &(axes, gv) in &own_images[..n_own] {
        let rg = reflect_vector(gp, axes);
        own += rg.x * gv.x + rg.y * gv.y + rg.z * gv.z;
    }
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
/// order ([`PairList`]).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn group_density_alpha(
    first: usize,
    len: usize,
    pos: &[Vec3],
    slot_start: &[u32],
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> GroupDensity {
    let mut sums = [DensitySums::new(dp); GROUP];
    let mut pairs = Vec::with_capacity(len * 48);
    group_pairs(first, len, pos, slot_start, sp, fp, |l, j, d, r2, axes| {
        let g = sums[l].add(first + l, j, d, r2, axes, sp, fp, dp);
        let tag = l as u32 | (axes.bitmask() << 3);
        pairs.push(Pair {
            jt: (j as u32) << 6 | tag,
            g,
        });
    });
    let mut out = [(0.0, 0.0); GROUP];
    for (l, o) in out.iter_mut().enumerate().take(len) {
        *o = finish_alpha(pos[first + l], &sums[l], b, sp, fp, dp);
    }
    (out, pairs, Frame::of(first, len, pos, sp, fp))
}

/// A vector reflected across the walls of `axes`: its components there negated.
#[inline]
pub fn reflect_vector(v: Vec3, axes: BVec3) -> Vec3 {
    Vec3::select(axes, -v, v)
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
    let per_group: Vec<_> = groups
        .par_iter()
        .with_min_len(32)
        .map(|&(first, len)| {
            // Compiled for AVX2 where present: the walk's floors inlined, the lane distance
            // tests eight wide; the same operations, so the same bits.
            super::simd::best(|| {
                group_density_alpha(first as usize, len as usize, pos, slot_start, b, sp, fp, dp)
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

/// Which solve a pass serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Solve {
    /// The divergence-free solve (before the non-pressure forces, with the previous dt).
    Divergence,
    /// The constant-density solve (after them, with this step's dt).
    Density,
}

impl Solve {
    /// Its name in reports.
    pub fn name(self) -> &'static str {
        match self {
            Solve::Divergence => "divergence",
            Solve::Density => "density",
        }
    }
}

/// Stage `dfsph_warm`: each particle's starting stiffness from the stiffness the same solve
/// applied to it last step (`warm`, by particle id, with dt removed), as SPlisHSPlasH's warm
/// start does it: only where the solve finds compression now (`kappa_now` > 0, from a rate
/// pass on the current velocities), and half of it: κ^v = ½ w_v / dt, κ = ½ w / dt².
/// Measured on a hydrostatic column (4 × 20 × 4 in its own tank): warm-starting every
/// particle, expanding ones too, blew up within 30 steps; the full stiffness where
/// compressed ratchets up (the iterations only add) and launched the column within 3 steps;
/// half of it is kept. None of these is stable yet near walls (see docs/validation.md). Warm-starting an expanding particle
/// would push its neighbours apart, which no later iteration corrects (both solves correct
/// compression only): measured, a hydrostatic column then rose and blew up within 30 steps.
pub fn dfsph_warm(
    solve: Solve,
    warm: &[[f32; 2]],
    ids: &[u32],
    kappa_now: &[f32],
    dt: f32,
) -> Vec<f32> {
    ids.iter()
        .zip(kappa_now)
        .map(|(&id, &k)| {
            let w = warm[id as usize];
            if k > 0.0 {
                match solve {
                    Solve::Divergence => 0.5 * w[0] / dt,
                    Solve::Density => 0.5 * w[1] / (dt * dt),
                }
            } else {
                0.0
            }
        })
        .collect()
}

/// Stage `dfsph_pressure`: v_i −= dt Σ_j m (κ_i/ρ_i + κ_j/ρ_j) ∇W_ij (images with the
/// original's κ and ρ), and κ_sum_i += κ_i. An obstacle's boundary particle b pushes with
/// i's stiffness alone, −dt ψ_b (κ_i/ρ_i) ∇W_ib (it has no stiffness of its own; Akinci et
/// al. 2012, as SPlisHSPlasH's DFSPH applies it), summed in walk order and added after the
/// fluid's sum; that push's power per unit mass against the surface's velocity,
/// −Σ_b (ψ_b (κ_i/ρ_i) ∇W_ib) · v_b, is added to `power` (empty without obstacles): summed
/// over a step's iterations it is what the energy check credits to moving obstacles.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_pressure(
    pos: &[Vec3],
    vel: &mut [Vec3],
    density: &[f32],
    kappa: &[f32],
    kappa_sum: &mut [f32],
    pairs: &PairList,
    b: Option<&Boundary>,
    power: &mut [f32],
    dt: f32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) {
    // κ/ρ of every particle, divided once rather than once per pair (the same bits).
    let kd: Vec<f32> = kappa.iter().zip(density).map(|(k, r)| k / r).collect();
    let per_group: Vec<[(Vec3, Option<f32>); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let mut acc = [Vec3::ZERO; GROUP];
            for p in list {
                let l = p.member();
                let grad = frame.grad(p, pos, fp.mass);
                acc[l] += grad * (kd[first + l] + kd[p.j()]);
            }
            let mut powers = [None; GROUP];
            for (l, a) in acc.iter_mut().enumerate().take(len) {
                let x = pos[first + l];
                let ki = kd[first + l];
                if let Some(b) = b.filter(|b| b.near(x)) {
                    let (mut push, mut pw) = (Vec3::ZERO, 0.0f32);
                    b.walk(x, sp, |k, r2| {
                        let c = (x - b.pos[k]) * (b.psi[k] * cubic_grad(r2, sp, dp)) * ki;
                        let vb = b.vel[k];
                        push += c;
                        pw += c.x * vb.x + c.y * vb.y + c.z * vb.z;
                    });
                    *a += push;
                    powers[l] = Some(pw);
                }
            }
            let mut out = [(Vec3::ZERO, None); GROUP];
            for (o, v) in out.iter_mut().zip(acc.into_iter().zip(powers)) {
                *o = v;
            }
            out
        })
        .collect();
    let (dv, dp_power): (Vec<Vec3>, Vec<Option<f32>>) =
        scatter_groups(pos.len(), &pairs.groups, &per_group)
            .into_iter()
            .unzip();
    for k in 0..pos.len() {
        vel[k] -= dv[k] * dt;
        kappa_sum[k] += kappa[k];
    }
    if !power.is_empty() {
        for (p, d) in power.iter_mut().zip(dp_power) {
            if let Some(d) = d {
                *p -= d;
            }
        }
    }
}

/// Output of [`dfsph_rate`].
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rate {
    /// The stiffness of the next velocity update, κ_i.
    pub kappa: Vec<f32>,
    /// Each particle's residual.
    pub residual: Vec<f32>,
    /// The residual's block sums.
    pub sums: Vec<f32>,
}

/// The density change rates Dρ_k/Dt = Σ_j m (v_k − v_j)·∇W_kj of the group
/// `first..first + len` ([`group_pairs`]).
#[allow(clippy::too_many_arguments)]
fn group_rates(
    first: usize,
    len: usize,
    pos: &[Vec3],
    vel: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> [f32; GROUP] {
    let mut rate = [0.0f32; GROUP];
    group_pairs(first, len, pos, slot_start, sp, fp, |l, j, d, r2, axes| {
        let vi = vel[first + l];
        let vj = image_velocity(vel[j], axes);
        let gv = d * (fp.mass * cubic_grad(r2, sp, dp));
        let dv = vi - vj;
        rate[l] += dv.x * gv.x + dv.y * gv.y + dv.z * gv.z;
    });
    rate
}

/// The density change rate of particle `k` alone.
#[inline]
pub fn density_rate(
    k: usize,
    pos: &[Vec3],
    vel: &[Vec3],
    slot_start: &[u32],
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> f32 {
    group_rates(k, 1, pos, vel, slot_start, sp, fp, dp)[0]
}

/// The obstacles' part of the density change rate of a particle at x moving at v,
/// Σ_b ψ_b (v − v_b)·∇W_xb over the boundary particles within h, in walk order (v_b the
/// obstacle surface's velocity); `None` away from them.
#[inline]
pub fn boundary_rate(
    b: Option<&Boundary>,
    x: Vec3,
    v: Vec3,
    sp: &SimParams,
    dp: &DfsphParams,
) -> Option<f32> {
    let b = b.filter(|b| b.near(x))?;
    let mut rate = 0.0f32;
    b.walk(x, sp, |k, r2| {
        let gv = (x - b.pos[k]) * (b.psi[k] * cubic_grad(r2, sp, dp));
        let dv = v - b.vel[k];
        rate += dv.x * gv.x + dv.y * gv.y + dv.z * gv.z;
    });
    Some(rate)
}

/// κ and the residual of one particle from its rate.
#[inline]
pub fn stiffness(
    solve: Solve,
    rate: f32,
    rho: f32,
    alpha: f32,
    dt: f32,
    fp: &FluidParams,
) -> (f32, f32) {
    match solve {
        Solve::Divergence => {
            let d = if alpha > 0.0 { rate.max(0.0) } else { 0.0 };
            (d / dt * alpha.max(0.0), d * dt / fp.rest_density)
        }
        Solve::Density => {
            let rho_star = (rho + dt * rate).max(fp.rest_density);
            (
                (rho_star - fp.rest_density) / (dt * dt) * alpha.abs(),
                rho_star / fp.rest_density - 1.0,
            )
        }
    }
}

/// Stage `dfsph_rate`: the density change rate from the current velocities, the stiffness it
/// asks for and the residual (divergence: max(Dρ/Dt, 0)·dt/ρ0; density: ρ*/ρ0 − 1 with
/// ρ* = max(ρ + dt Dρ/Dt, ρ0)), with the residual's block sums.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_rate(
    solve: Solve,
    pos: &[Vec3],
    vel: &[Vec3],
    density: &[f32],
    alpha: &[f32],
    pairs: &PairList,
    b: Option<&Boundary>,
    dt: f32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> Rate {
    let per_group: Vec<[(f32, f32); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let rate = listed_rates(first, list, frame, pos, vel, fp.mass);
            let mut out = [(0.0, 0.0); GROUP];
            for (l, o) in out.iter_mut().enumerate().take(len) {
                let k = first + l;
                let rate = match boundary_rate(b, pos[k], vel[k], sp, dp) {
                    Some(r) => rate[l] + r,
                    None => rate[l],
                };
                *o = stiffness(solve, rate, density[k], alpha[k], dt, fp);
            }
            out
        })
        .collect();
    let (kappa, residual): (Vec<f32>, Vec<f32>) =
        scatter_groups(pos.len(), &pairs.groups, &per_group)
            .into_iter()
            .unzip();
    Rate {
        sums: block_sums(&residual),
        kappa,
        residual,
    }
}

/// [`group_rates`] from the group's recorded pairs: the same terms in the same order.
#[inline]
fn listed_rates(
    first: usize,
    list: &[Pair],
    frame: &Frame,
    pos: &[Vec3],
    vel: &[Vec3],
    mass: f32,
) -> [f32; GROUP] {
    let mut rate = [0.0f32; GROUP];
    for p in list {
        let l = p.member();
        let vi = vel[first + l];
        let vj = image_velocity(vel[p.j()], p.axes());
        let dv = vi - vj;
        let g = frame.grad(p, pos, mass);
        rate[l] += dv.x * g.x + dv.y * g.y + dv.z * g.z;
    }
    rate
}

/// Where a solve stands: the GPU's `SolveState` block.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SolveState {
    /// Iterations run (pressure updates after the warm start).
    pub iterations: u32,
    /// No further iteration runs.
    pub done: bool,
    /// The mean residual of the last rate evaluation.
    pub residual: f32,
}

/// Stage `dfsph_control`: the mean residual from the block sums; decides whether another
/// iteration runs: while fewer than `min_iterations`, or the mean exceeds η, up to
/// `max_iterations`. Returns whether it does.
pub fn dfsph_control(
    state: &mut SolveState,
    sums: &[f32],
    n: u32,
    eta: f32,
    min_iterations: u32,
    max_iterations: u32,
) -> bool {
    if state.done {
        return false;
    }
    let mean = reduce_total(sums) / n as f32;
    state.residual = mean;
    let again =
        state.iterations < max_iterations && (state.iterations < min_iterations || mean > eta);
    if again {
        state.iterations += 1;
    } else {
        state.done = true;
    }
    again
}

/// Stage `dfsph_accel`: the non-pressure accelerations and the explicit viscous terms' rate.
///
/// a_i = g + Σ_j [(μ/ρ_i) m (v_j − v_i)/ρ_j ∇²W_visc(r)          (Müller et al. 2003; μ = 0 by default)
///              + m α c h (v_ij·x_ij)/((r² + 0.01h²) ρ̄_ij) ∇W_ij]  (artificial viscosity,
///                                                          approaching pairs: v_ij·x_ij < 0)
///
/// The second term is WCSPH's artificial viscosity Π term for term (Monaghan 1992, "Smoothed
/// particle hydrodynamics", ARA&A 30: −m Π_ij ∇W_ij with Π_ij = −α c h (v_ij·x_ij)/((r² +
/// 0.01h²) ρ̄_ij) where the pair approaches, 0 where it recedes), the same α, reference sound
/// speed c = 10 √(2 g H) and h, with DFSPH's cubic spline gradient: one dissipation for both
/// solvers. It acts as a kinematic viscosity ν = α c h / 10 in compression (Monaghan 2005,
/// Rep. Prog. Phys. 68, §6.1). Applied to receding pairs too (as first built), it doubled the
/// shear on the surge's thin toe and on the wall layer: the 20 000-particle dam break's front
/// lagged 10.2% at T = 2.98 and the column at the wall stood 62% too high at τ = 2.21, where
/// WCSPH, with Π on approaching pairs, reads −3.5% and +31% (docs/validation.md). Without it
/// nothing dissipates the particle-scale motion a settling lattice releases and a resting
/// column never rests (measured, docs/validation.md; SPlisHSPlasH's DFSPH behaves the same
/// without its viscosity).
/// Images move with −v_j here (the no-slip wall of the viscous terms).
///
/// Also returns, per particle, the row sum of the explicit viscous operator over every pair,
/// receding ones too (a bound for whichever pairs approach during the step),
/// S_i = Σ_j [m α c h |∇W_ij| r/((r² + 0.01h²) ρ̄_ij) + (μ/ρ_i)(m/ρ_j) ∇²W_visc]: by
/// Gershgorin's theorem every eigenvalue of the linear map v ↦ a_visc lies in [−2 max S, 0], so
/// an explicit step damps every mode without overshoot for dt ≤ 1/(2 max S), which
/// [`dfsph_timestep`] enforces for each viscous substep (`DfsphParams::viscous_limit`; this
/// stage runs once per substep, at the velocities the last one left). Measured on a 4 × 20 × 4 column
/// at α = 0.05 without this limit: growing motion at the 5 ms step, at rest at 2 ms.
/// With μ = 0 and α = 0 nothing is walked (S = 0).
///
/// Worked example (h = 1, m = 1, ρ = 1, α c = 1, μ = 0, gravity 0): particle i at the origin
/// moving at (1, 0, 0), j at (0.5, 0, 0) at rest: d = x_i − x_j = (−0.5, 0, 0), v_ij·x_ij =
/// −0.5, ∇W = g d with g = q(3q − 2)(48/π)/(h r) = −7.639, so the pair's factor is
/// 1/(0.26 · 1) · g = −29.38 and a_i = d · (−29.38 · −0.5) = (−7.35, 0, 0): i is slowed, pushed
/// back from j; S_i = 29.38 · 0.25 = 7.35 /s. Moving at (−1, 0, 0) instead, away from j:
/// a_i = 0, S_i the same 7.35 /s.
pub fn dfsph_accel(
    pos: &[Vec3],
    vel: &[Vec3],
    density: &[f32],
    pairs: &PairList,
    sp: &SimParams,
    fp: &FluidParams,
) -> (Vec<Vec3>, Vec<f32>) {
    let g = Vec3::from_slice(&fp.gravity[..3]);
    if fp.viscosity == 0.0 && fp.alpha == 0.0 {
        return (vec![g; vel.len()], vec![0.0; vel.len()]);
    }
    let ach = fp.alpha * fp.sound_speed * sp.h;
    let per_group: Vec<[(Vec3, f32); GROUP]> = pairs
        .groups
        .par_iter()
        .zip(pairs.pairs.par_iter().zip(&pairs.frames))
        .with_min_len(32)
        .map(|(&(first, len), (list, frame))| {
            let (first, len) = (first as usize, len as usize);
            let mut acc = [Vec3::ZERO; GROUP];
            let mut rate = [0.0f32; GROUP];
            for p in list {
                let (l, j, axes) = (p.member(), p.j(), p.axes());
                // The walk's d and r², recomputed with its operations (the same bits).
                let d = frame.d(p, pos);
                let r2 = d.x * d.x + d.y * d.y + d.z * d.z;
                let k = first + l;
                let vj = if axes.any() {
                    viscous_image_velocity(vel[j])
                } else {
                    vel[j]
                };
                if fp.viscosity != 0.0 {
                    let w = sp.h - r2.sqrt();
                    let c = fp.viscosity / density[k] * fp.mass / density[j] * fp.kernel_45 * w;
                    acc[l] += (vj - vel[k]) * c;
                    rate[l] += c;
                }
                if fp.alpha != 0.0 && r2 > 0.0 {
                    let dv = vel[k] - vj;
                    let vx = dv.x * d.x + dv.y * d.y + dv.z * d.z;
                    let c = fp.mass * ach
                        / ((r2 + 0.01 * sp.h2) * (0.5 * (density[k] + density[j])))
                        * p.g;
                    if vx < 0.0 {
                        acc[l] += d * (c * vx);
                    }
                    rate[l] -= c * r2;
                }
            }
            let mut out = [(Vec3::ZERO, 0.0); GROUP];
            for (l, o) in out.iter_mut().enumerate().take(len) {
                *o = (acc[l] + g, rate[l]);
            }
            out
        })
        .collect();
    scatter_groups(vel.len(), &pairs.groups, &per_group)
        .into_iter()
        .unzip()
}

/// Stage `dfsph_timestep`: dt = λ s / v_max, at most K · viscous_limit / S_max (K =
/// `viscous_substeps`; viscous_limit / S_max = ½ / S_max is the explicit viscous terms'
/// stability limit, see [`dfsph_accel`]), clamped to [dt_min, dt_max], v_max the largest
/// |v + a dt_prev| (the speed before the pressure solve); dt_max at rest without viscosity;
/// the forced dt if set. The non-pressure accelerations then advance the velocities in
/// n = ⌈dt / (viscous_limit / S_max)⌉ substeps (1 ≤ n ≤ K; 1 without viscosity) of dt / n
/// each, every one within the limit: explicit subcycling of the stiff viscous term, so the
/// viscosity's limit no longer sets the step where the flow's CFL step is longer. Returns
/// [`Timestep`].
///
/// Worked example: s = 0.01, λ = 0.4, v_max = 2 m/s, S_max = 400 /s, K = 2 → limit 1.25 ms,
/// dt = min(2 ms, 2.5 ms) = 2 ms in n = ⌈1.6⌉ = 2 substeps of 1 ms.
pub fn dfsph_timestep(
    vel: &[Vec3],
    acc: &[Vec3],
    rate: &[f32],
    dt_prev: f32,
    dp: &DfsphParams,
) -> Timestep {
    let v_max = vel
        .iter()
        .zip(acc)
        .map(|(v, a)| (*v + *a * dt_prev).length())
        .fold(0.0, f32::max);
    let s_max = rate.iter().copied().fold(0.0, f32::max);
    let limit = if s_max > 0.0 {
        dp.viscous_limit / s_max
    } else {
        0.0
    };
    let dt = if dp.dt_fixed > 0.0 {
        dp.dt_fixed
    } else {
        let mut dt = if v_max > 0.0 {
            dp.cfl * dp.spacing / v_max
        } else {
            dp.dt_max
        };
        if s_max > 0.0 {
            dt = dt.min(dp.viscous_substeps as f32 * limit);
        }
        dt.max(dp.dt_min).min(dp.dt_max)
    };
    let substeps = if s_max > 0.0 {
        (dt / limit).ceil().clamp(1.0, dp.viscous_substeps as f32)
    } else {
        1.0
    };
    Timestep {
        dt,
        v_max,
        substeps: substeps as u32,
        dt_sub: dt / substeps,
    }
}

/// What [`dfsph_timestep`] decides: the step, the speed it was taken for, and the viscous
/// substeps that make it up.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timestep {
    /// The step, s.
    pub dt: f32,
    /// The largest speed before the pressure solve, m/s.
    pub v_max: f32,
    /// Substeps of the non-pressure accelerations, 1..=K.
    pub substeps: u32,
    /// Each substep, dt / substeps, s.
    pub dt_sub: f32,
}

/// Stage `dfsph_predict`: v* = v + a dt.
pub fn dfsph_predict(vel: &mut [Vec3], acc: &[Vec3], dt: f32) {
    for (v, a) in vel.iter_mut().zip(acc) {
        *v += *a * dt;
    }
}

/// Stage `dfsph_integrate`: x' = x + v dt with the tank's hard clamp held `wall_inset` (half a
/// spacing) inside the walls, so a particle never meets its own mirror image (an outward
/// normal speed becomes −e times itself, as WCSPH's `integrate`), the next state in this
/// step's slot order; and the warm-start store by id: (κ^v_sum · dt_v, κ_sum · dt²).
/// Example, tank [0, 1]³, inset 0.005, e = 0, dt = 0.1: x = (0.5, 0.05, 0.5), v = (1, −1, 0)
/// → x' = (0.6, 0.005, 0.5), v' = (1, 0, 0).
#[allow(clippy::too_many_arguments)]
pub fn dfsph_integrate(
    sorted: &Particles,
    kappa_sum_v: &[f32],
    kappa_sum_d: &[f32],
    dt: f32,
    dt_v: f32,
    fp: &FluidParams,
    wall_inset: f32,
    warm: &mut [[f32; 2]],
) -> Particles {
    let inset = Vec3::splat(wall_inset);
    let lo = Vec3::from_slice(&fp.tank_min[..3]) + inset;
    let hi = Vec3::from_slice(&fp.tank_max[..3]) - inset;
    let (pos, vel) = (0..sorted.len())
        .map(|k| {
            let v = sorted.vel[k];
            clamp_to_box(sorted.pos[k] + v * dt, v, lo, hi, fp.restitution, fp.open)
        })
        .unzip();
    for (k, &id) in sorted.id.iter().enumerate() {
        warm[id as usize] = [kappa_sum_v[k] * dt_v, kappa_sum_d[k] * (dt * dt)];
    }
    Particles {
        pos,
        vel,
        id: sorted.id.clone(),
    }
}

/// The pressure the constant-density solve implied, p_i = ρ_i κ_sum_i (see the module doc).
pub fn implied_pressure(density: &[f32], kappa_sum: &[f32]) -> Vec<f32> {
    density.iter().zip(kappa_sum).map(|(r, k)| r * k).collect()
}

/// The state a DFSPH run carries from step to step besides the particles.
#[derive(Clone, Debug, PartialEq)]
pub struct DfsphCarry {
    /// Warm-start stiffness per particle id: (κ^v·dt, κ·dt²) of the last step.
    pub warm: Vec<[f32; 2]>,
    /// dt of the last step (the divergence solve's dt), s.
    pub dt_prev: f32,
}

impl DfsphCarry {
    /// A run's start: no stiffness yet, dt_prev = dt_max.
    pub fn new(n: usize, dp: &DfsphParams) -> Self {
        Self {
            warm: vec![[0.0; 2]; n],
            dt_prev: dp.dt_max,
        }
    }
}

/// Everything one solve computed, for verification.
#[derive(Clone, Debug, Default)]
pub struct SolveTrace {
    /// The rate pass on the velocities the solve starts from (where to warm-start).
    pub first_rate: Rate,
    /// The warm-start stiffness.
    pub warm_kappa: Vec<f32>,
    /// Velocities after each pressure update (the warm start's first).
    pub velocities: Vec<Vec<Vec3>>,
    /// Each rate evaluation.
    pub rates: Vec<Rate>,
    /// The control state after each decision.
    pub states: Vec<SolveState>,
    /// Σ κ applied per particle.
    pub kappa_sum: Vec<f32>,
}

/// Runs one solve from velocities `vel` (updated in place), the mirror of the GPU's sequence
/// rate → warm → pressure → rate → control → (pressure → rate → control)*. With `record`,
/// the trace keeps every iteration's velocities and rate pass (for verification); without,
/// only the control states, so a run does not copy N values per iteration.
#[allow(clippy::too_many_arguments)]
pub fn solve(
    record: bool,
    which: Solve,
    sorted: &Particles,
    vel: &mut [Vec3],
    da: &DensityAlpha,
    warm: &[[f32; 2]],
    b: Option<&Boundary>,
    power: &mut [f32],
    dt: f32,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> SolveTrace {
    let n = sorted.len();
    let (eta, min_it) = match which {
        Solve::Divergence => (dp.eta_v, 1),
        Solve::Density => (dp.eta_d, 2),
    };
    // The density change rate at the current velocities: once before the solve, then once per
    // iteration.
    let rate_at = |vel: &[Vec3]| {
        timed(Stage::DfsphRate, || {
            dfsph_rate(
                which,
                &sorted.pos,
                vel,
                &da.density,
                &da.alpha,
                &da.pairs,
                b,
                dt,
                sp,
                fp,
                dp,
            )
        })
    };
    let first_rate = rate_at(vel);
    let mut tr = SolveTrace {
        warm_kappa: timed(Stage::DfsphWarm, || {
            dfsph_warm(which, warm, &sorted.id, &first_rate.kappa, dt)
        }),
        first_rate,
        kappa_sum: vec![0.0; n],
        ..Default::default()
    };
    let mut kappa = tr.warm_kappa.clone();
    let mut state = SolveState::default();
    loop {
        timed(Stage::DfsphPressure, || {
            dfsph_pressure(
                &sorted.pos,
                vel,
                &da.density,
                &kappa,
                &mut tr.kappa_sum,
                &da.pairs,
                b,
                power,
                dt,
                sp,
                fp,
                dp,
            )
        });
        if record {
            tr.velocities.push(vel.to_vec());
        }
        let rate = rate_at(vel);
        let again = timed(Stage::DfsphControl, || {
            dfsph_control(
                &mut state,
                &rate.sums,
                n as u32,
                eta,
                min_it,
                dp.max_iterations,
            )
        });
        if record {
            kappa.clone_from(&rate.kappa);
            tr.rates.push(rate);
        } else {
            kappa = rate.kappa;
        }
        tr.states.push(state);
        if !again {
            break;
        }
    }
    tr
}

/// Everything one DFSPH step computed, in the step's slot order.
#[derive(Clone, Debug)]
pub struct DfsphTrace {
    /// The grid of the step's starting positions.
    pub grid: Grid,
    /// Per particle (this slot order): the power per unit mass the obstacles' pushes put in,
    /// summed over both solves' iterations (empty without obstacles).
    pub power: Vec<f32>,
    /// The state gathered into slot order.
    pub sorted: Particles,
    /// ρ and α at the start.
    pub start: DensityAlpha,
    /// The divergence-free solve.
    pub divergence: SolveTrace,
    /// Non-pressure accelerations (the first substep's).
    pub acc: Vec<Vec3>,
    /// The explicit viscous terms' row sums S_i (accel.w on the GPU).
    pub viscous_rate: Vec<f32>,
    /// The step and its substeps.
    pub timestep: Timestep,
    /// The velocities after the first substep (v* where there is one).
    pub predicted: Vec<Vec3>,
    /// Each later substep's accelerations and the velocities after it (recorded traces only);
    /// the last velocities are v*.
    pub substeps: Vec<(Vec<Vec3>, Vec<Vec3>)>,
    /// The constant-density solve.
    pub density: SolveTrace,
    /// The state after the step (this step's slot order).
    pub next: Particles,
    /// The carried state after the step.
    pub carry: DfsphCarry,
    /// The grid of the new positions.
    pub next_grid: Grid,
    /// The new state in the new grid's slot order.
    pub next_sorted: Particles,
    /// ρ and α at the new positions (the next step's start).
    pub end: DensityAlpha,
    /// The step's statistics block.
    pub stats: DfsphStats,
}

/// ρ, α and the grid of a state: what a DFSPH step starts from.
pub fn prepare(
    state: &Particles,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> (Grid, Particles, DensityAlpha) {
    let (grid, gt) = Grid::build_timed(&state.pos, sp);
    record_grid(&gt);
    let sorted = timed(Stage::Reorder, || reorder::reorder(state, &grid.sorted_ids));
    let da = timed(Stage::DfsphDensity, || {
        dfsph_density(&sorted.pos, &grid.slot_start, b, sp, fp, dp)
    });
    (grid, sorted, da)
}

/// Advances `state` by one DFSPH step. `start`, if given, is [`prepare`] of `state` (the last
/// step's end), so it is not computed twice. `record` keeps every iteration in the trace
/// (see [`solve`]).
#[allow(clippy::too_many_arguments)]
pub fn dfsph_step(
    record: bool,
    state: &Particles,
    carry: &DfsphCarry,
    start: Option<(Grid, Particles, DensityAlpha)>,
    b: Option<&Boundary>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> DfsphTrace {
    dfsph_step_with(record, state, carry, start, b, None, sp, fp, dp)
}

/// [`dfsph_step`] with the viewer's mouse force: stage `interact` adds it to the non-pressure
/// accelerations of every substep, before the time step reads them, as the GPU's step
/// dispatches it after each `dfsph_accel`.
#[allow(clippy::too_many_arguments)]
pub fn dfsph_step_with(
    record: bool,
    state: &Particles,
    carry: &DfsphCarry,
    start: Option<(Grid, Particles, DensityAlpha)>,
    b: Option<&Boundary>,
    interaction: Option<&InteractParams>,
    sp: &SimParams,
    fp: &FluidParams,
    dp: &DfsphParams,
) -> DfsphTrace {
    let (grid, sorted, da) = start.unwrap_or_else(|| prepare(state, b, sp, fp, dp));
    // The power the obstacles put in, per particle of this slot order, over both solves.
    let mut power = match b {
        Some(_) => vec![0.0f32; sorted.len()],
        None => Vec::new(),
    };
    let mut vel = sorted.vel.clone();
    let dt_v = carry.dt_prev;
    let divergence = solve(
        record,
        Solve::Divergence,
        &sorted,
        &mut vel,
        &da,
        &carry.warm,
        b,
        &mut power,
        dt_v,
        sp,
        fp,
        dp,
    );
    let (mut acc, viscous_rate) = timed(Stage::DfsphAccel, || {
        dfsph_accel(&sorted.pos, &vel, &da.density, &da.pairs, sp, fp)
    });
    if let Some(ip) = interaction {
        interact(&sorted.pos, &mut acc, ip);
    }
    let ts = timed(Stage::DfsphTimestep, || {
        dfsph_timestep(&vel, &acc, &viscous_rate, dt_v, dp)
    });
    let (dt, v_max) = (ts.dt, ts.v_max);
    timed(Stage::DfsphPredict, || {
        dfsph_predict(&mut vel, &acc, ts.dt_sub)
    });
    let predicted = vel.clone();
    // The later substeps: the non-pressure accelerations again at the velocities the last
    // substep left, at the same positions and densities (the first substep's S_i stands).
    let mut substeps = Vec::new();
    for _ in 1..ts.substeps {
        let (mut a, _) = timed(Stage::DfsphAccel, || {
            dfsph_accel(&sorted.pos, &vel, &da.density, &da.pairs, sp, fp)
        });
        if let Some(ip) = interaction {
            interact(&sorted.pos, &mut a, ip);
        }
        timed(Stage::DfsphPredict, || {
            dfsph_predict(&mut vel, &a, ts.dt_sub)
        });
        if record {
            substeps.push((a, vel.clone()));
        }
    }
    let density = solve(
        record,
        Solve::Density,
        &sorted,
        &mut vel,
        &da,
        &carry.warm,
        b,
        &mut power,
        dt,
        sp,
        fp,
        dp,
    );
    let mut warm = carry.warm.clone();
    let moved = Particles {
        pos: sorted.pos.clone(),
        vel,
        id: sorted.id.clone(),
    };
    let next = timed(Stage::DfsphIntegrate, || {
        dfsph_integrate(
            &moved,
            &divergence.kappa_sum,
            &density.kappa_sum,
            dt,
            dt_v,
            fp,
            dp.wall_inset,
            &mut warm,
        )
    });
    let (next_grid, next_sorted, end) = prepare(&next, b, sp, fp, dp);
    let n = next.len() as u32;
    let dv = divergence.states.last().copied().unwrap_or_default();
    let dd = density.states.last().copied().unwrap_or_default();
    let stats = timed(Stage::DfsphStats, || DfsphStats {
        iterations_v: dv.iterations,
        residual_v: dv.residual,
        iterations_d: dd.iterations,
        residual_d: dd.residual,
        error_mean: reduce_total(&end.error_sums) / n as f32,
        error_max: reduce_max(&end.error_maxima),
        dt,
        v_max,
    });
    DfsphTrace {
        grid,
        power,
        sorted,
        start: da,
        divergence,
        acc,
        viscous_rate,
        timestep: ts,
        predicted,
        substeps,
        density,
        next,
        carry: DfsphCarry { warm, dt_prev: dt },
        next_grid,
        next_sorted,
        end,
        stats,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::{ConfigOverrides, DfsphConfig, PhysicsConfig, SphConfig};

    fn setup(h: f32, tank: f32) -> (SimParams, FluidParams, DfsphParams) {
        let cfg = SphConfig::new(
            2,
            ConfigOverrides {
                smoothing_radius: Some(h),
                spacing: Some(h / 2.0),
                particle_mass: Some(1.0),
                rest_density: Some(1.0),
                table_size: Some(1),
                group_size: None,
            },
        )
        .unwrap();
        let sp = cfg.sim_params();
        let ph = PhysicsConfig {
            gravity: 0.0,
            ..Default::default()
        };
        let fp = ph
            .fluid_params(&cfg, Vec3::ZERO, Vec3::splat(tank), 1.0)
            .unwrap();
        let mut dp = DfsphConfig::default().params(&cfg, &ph).unwrap();
        dp.min_neighbours = 1;
        (sp, fp, dp)
    }

    /// The solve's passes replay the density walk's recorded pairs: each group's density
    /// change rates from the list are the walk's bit for bit, with particles at walls, edges
    /// and corners (images in the list) and every cell aliased into one slot (T = 1).
    #[test]
    fn pair_list_replays_the_walk_bit_for_bit() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        let (sp, fp, dp) = setup(0.2, 1.0);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(7);
        let n = 400;
        let pos: Vec<Vec3> = (0..n)
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()) * 0.98 + 0.01)
            .collect();
        let vel: Vec<Vec3> = (0..n)
            .map(|_| Vec3::new(rng.random(), rng.random(), rng.random()) - 0.5)
            .collect();
        let g = Grid::build(&pos, &sp);
        let sorted = reorder::gather(&pos, &g.sorted_ids);
        let v = reorder::gather(&vel, &g.sorted_ids);
        let da = dfsph_density(&sorted, &g.slot_start, None, &sp, &fp, &dp);
        let list = &da.pairs;
        assert_eq!(list.groups, groups_in_space_order(&sorted[..], &sp));
        let images = list
            .pairs
            .iter()
            .flatten()
            .filter(|p| p.axes().any())
            .count();
        assert!(images > 0, "the corners' images are in the list");
        for ((&(first, len), pairs), frame) in list.groups.iter().zip(&list.pairs).zip(&list.frames)
        {
            let (first, len) = (first as usize, len as usize);
            let walked = group_rates(first, len, &sorted, &v, &g.slot_start, &sp, &fp, &dp);
            let listed = listed_rates(first, pairs, frame, &sorted, &v, fp.mass);
            for l in 0..len {
                assert_eq!(
                    walked[l].to_bits(),
                    listed[l].to_bits(),
                    "particle {}",
                    first + l
                );
            }
        }
    }

    /// α is the exact Jacobi diagonal of the solve, walls' images included: a stiffness
    /// κ_k = 1 on particle k alone, applied by `dfsph_pressure`, changes k's density change
    /// rate (`density_rate`, images moving as reflected originals) by −dt/α_k, for every
    /// particle of a jittered lattice filling a small tank (a third of them within h of two or
    /// three walls). Before the neighbours' reaction to k's own images was counted
    /// (H_j in `DensitySums`), α near the walls was up to 42% too large here.
    #[test]
    fn alpha_is_the_exact_diagonal_of_the_solve_at_walls_edges_and_corners() {
        use rand::rngs::Xoshiro256PlusPlus;
        use rand::{RngExt, SeedableRng};
        let (sp, fp, dp) = setup(0.2, 0.6);
        let mut rng = Xoshiro256PlusPlus::seed_from_u64(11);
        let mut pos = Vec::new();
        for i in 0..6 {
            for j in 0..6 {
                for k in 0..6 {
                    let jitter = Vec3::new(rng.random(), rng.random(), rng.random()) - 0.5;
                    pos.push((Vec3::new(i as f32, j as f32, k as f32) + 0.5) * 0.1 + jitter * 0.04);
                }
            }
        }
        let state = Particles::new(pos.clone(), vec![Vec3::ZERO; pos.len()]);
        let (g, sorted, da) = prepare(&state, None, &sp, &fp, &dp);
        let dt = 1e-3;
        let (mut worst, mut edges) = (0.0f32, 0);
        for k in 0..pos.len() {
            let a = da.alpha[k];
            assert!(a > 0.0 && a.is_finite(), "particle {k}: alpha {a}");
            if wall_planes(sorted.pos[k], sp.h, &fp).mask.count_ones() >= 2 {
                edges += 1;
            }
            let mut kappa = vec![0.0; pos.len()];
            kappa[k] = 1.0;
            let mut vel = vec![Vec3::ZERO; pos.len()];
            let mut sum = vec![0.0; pos.len()];
            dfsph_pressure(
                &sorted.pos,
                &mut vel,
                &da.density,
                &kappa,
                &mut sum,
                &da.pairs,
                None,
                &mut [],
                dt,
                &sp,
                &fp,
                &dp,
            );
            let rate = density_rate(k, &sorted.pos, &vel, &g.slot_start, &sp, &fp, &dp);
            let err = (rate * a / dt + 1.0).abs();
            worst = worst.max(err);
        }
        eprintln!("worst relative error of the diagonal {worst}, {edges} particles at edges");
        assert!(edges >= 72, "{edges} particles at edges and corners");
        assert!(worst < 1e-4, "alpha is off the solve's diagonal by {worst}");
    }

    /// The doc's worked example: the floor holds a particle half a spacing above it.
    #[test]
    fn integrate_keeps_particles_half_a_spacing_inside_the_walls() {
        let (_, fp, dp) = setup(0.01, 1.0);
        assert_eq!(dp.wall_inset, 0.0025);
        let moved = Particles {
            pos: vec![Vec3::new(0.5, 0.05, 0.5)],
            vel: vec![Vec3::new(1.0, -1.0, 0.0)],
            id: vec![0],
        };
        let mut warm = vec![[0.0; 2]];
        let next = dfsph_integrate(&moved, &[0.0], &[0.0], 0.1, 0.1, &fp, 0.005, &mut warm);
        assert_eq!(next.pos[0], Vec3::new(0.6, 0.005, 0.5));
        assert_eq!(next.vel[0], Vec3::new(1.0, 0.0, 0.0));
    }

    #[test]
    fn cubic_kernel_worked_values() {
        let (sp, _, dp) = setup(1.0, 10.0);
        let k = 8.0 / std::f32::consts::PI;
        assert_eq!(cubic_w(0.0, &sp, &dp), dp.kernel_w);
        assert!((cubic_w(0.25, &sp, &dp) - k * 0.25).abs() < 1e-6);
        assert!((cubic_w(0.5625, &sp, &dp) - k * 2.0 * 0.015625).abs() < 1e-6);
        assert_eq!(cubic_w(1.0, &sp, &dp), 0.0);
        // |∇W| at r = 0.5: l · 0.5 · (1.5 − 2) = −l/4 → g · r = −l/4.
        let l = 48.0 / std::f32::consts::PI;
        assert!((cubic_grad(0.25, &sp, &dp) * 0.5 + l / 4.0).abs() < 1e-5);
        assert_eq!(cubic_grad(0.0, &sp, &dp), 0.0);
    }

    #[test]
    fn gradient_is_the_derivative_of_the_kernel() {
        let (sp, _, dp) = setup(1.0, 10.0);
        for &r in &[0.1f32, 0.3, 0.49, 0.51, 0.7, 0.95] {
            let e = 1e-3f32;
            let fd = (cubic_w((r + e) * (r + e), &sp, &dp) - cubic_w((r - e) * (r - e), &sp, &dp))
                / (2.0 * e);
            let g = cubic_grad(r * r, &sp, &dp) * r;
            assert!(
                (fd - g).abs() < 1e-2 * g.abs().max(1.0),
                "r {r}: {fd} vs {g}"
            );
        }
    }

    #[test]
    fn worked_example_two_particles() {
        let (sp, fp, dp) = setup(1.0, 10.0);
        let pos = vec![Vec3::new(5.0, 5.0, 5.0), Vec3::new(5.5, 5.0, 5.0)];
        let g = Grid::build(&pos, &sp);
        let sorted = reorder::gather(&pos, &g.sorted_ids);
        let da = dfsph_density(&sorted, &g.slot_start, None, &sp, &fp, &dp);
        let k = 8.0 / std::f32::consts::PI;
        let rho = k + k * 0.25;
        assert!((da.density[0] - rho).abs() < 1e-5);
        let l = 48.0 / std::f32::consts::PI * 0.25;
        assert!((da.alpha[0] - rho / (2.0 * l * l)).abs() < 1e-6);
    }

    /// `dfsph_accel`'s worked example: the viscous term slows the approaching particle, pushes
    /// the pair apart symmetrically (momentum kept), leaves a receding pair alone, and S is
    /// the pair's |coefficient| r² either way.
    #[test]
    fn accel_worked_example_and_viscous_rate() {
        let (sp, mut fp, dp) = setup(1.0, 10.0);
        fp.alpha = 1.0;
        fp.sound_speed = 1.0;
        let pos = vec![Vec3::new(5.0, 5.0, 5.0), Vec3::new(5.5, 5.0, 5.0)];
        let vel = vec![Vec3::new(1.0, 0.0, 0.0), Vec3::ZERO];
        let g = Grid::build(&pos, &sp);
        let sorted = reorder::gather(&pos, &g.sorted_ids);
        let v = reorder::gather(&vel, &g.sorted_ids);
        let pairs = dfsph_density(&sorted, &g.slot_start, None, &sp, &fp, &dp).pairs;
        let (acc, rate) = dfsph_accel(&sorted, &v, &[1.0, 1.0], &pairs, &sp, &fp);
        let i = g.sorted_ids.iter().position(|&k| k == 0).unwrap();
        let coef = 1.0 / 0.26 * (0.5 * (1.5 - 2.0) * 48.0 / std::f32::consts::PI / 0.5);
        let want = -0.5 * (coef * -0.5);
        assert!((acc[i].x - want).abs() < 1e-4, "{acc:?} want {want}");
        assert!((want + 7.345).abs() < 1e-3);
        assert!((acc[0] + acc[1]).length() < 1e-5, "momentum: {acc:?}");
        assert!(
            (rate[i] - 7.345).abs() < 1e-3 && rate[0] == rate[1],
            "{rate:?}"
        );
        // Receding, the pair feels no viscosity (WCSPH's Π), and S bounds it all the same.
        let away = vec![Vec3::new(-1.0, 0.0, 0.0), Vec3::ZERO];
        let va = reorder::gather(&away, &g.sorted_ids);
        let (acc, rate_away) = dfsph_accel(&sorted, &va, &[1.0, 1.0], &pairs, &sp, &fp);
        assert_eq!(acc, vec![Vec3::ZERO; 2]);
        assert_eq!(rate_away, rate);
        // Without viscosity nothing is walked and nothing limits the step.
        fp.alpha = 0.0;
        let (acc, rate) = dfsph_accel(&sorted, &v, &[1.0, 1.0], &pairs, &sp, &fp);
        assert_eq!(acc, vec![Vec3::ZERO; 2]);
        assert_eq!(rate, vec![0.0; 2]);
    }

    /// `dfsph_timestep`'s worked example and its limits.
    #[test]
    fn timestep_takes_the_cfl_and_the_viscous_limit_in_substeps() {
        let (_, _, mut dp) = setup(0.02, 1.0);
        assert_eq!((dp.spacing, dp.cfl, dp.dt_max), (0.01, 0.4, 5e-3));
        dp.viscous_substeps = 2;
        let v = [Vec3::new(2.0, 0.0, 0.0)];
        let a = [Vec3::ZERO];
        let ts = |v: &[Vec3], s: f32, dp: &DfsphParams| {
            let t = dfsph_timestep(v, &a, &[s], 1e-3, dp);
            (t.dt, t.v_max, t.substeps, t.dt_sub)
        };
        // The CFL step within the viscous limit (2.5 ms): one substep.
        assert_eq!(ts(&v, 200.0, &dp), (0.002, 2.0, 1, 0.002));
        // The worked example: the CFL step past the limit (1.25 ms), within twice it.
        assert_eq!(ts(&v, 400.0, &dp), (0.002, 2.0, 2, 0.001));
        // The CFL step past twice the limit: two substeps at the limit.
        assert_eq!(ts(&v, 1000.0, &dp), (0.001, 2.0, 2, 0.0005));
        // At rest without viscosity: dt_max in one.
        assert_eq!(ts(&[Vec3::ZERO], 0.0, &dp).0, dp.dt_max);
        assert_eq!(ts(&[Vec3::ZERO], 0.0, &dp).2, 1);
        // dt_min wins over the limit; the substeps stay at K.
        assert_eq!(
            ts(&[Vec3::ZERO], 1e9, &dp),
            (dp.dt_min, 0.0, 2, 0.5 * dp.dt_min)
        );
        // K = 1 (the default) is the explicit limit alone.
        dp.viscous_substeps = 1;
        assert_eq!(ts(&v, 1000.0, &dp), (0.0005, 2.0, 1, 0.0005));
    }

    #[test]
    fn approaching_pair_compresses_and_the_solve_stops_it() {
        let (sp, fp, dp) = setup(1.0, 10.0);
        let pos = vec![Vec3::new(5.0, 5.0, 5.0), Vec3::new(5.5, 5.0, 5.0)];
        let vel = vec![Vec3::new(1.0, 0.0, 0.0), Vec3::new(-1.0, 0.0, 0.0)];
        let state = Particles::new(pos, vel);
        let (g, sorted, da) = prepare(&state, None, &sp, &fp, &dp);
        let r0 = density_rate(0, &sorted.pos, &sorted.vel, &g.slot_start, &sp, &fp, &dp);
        assert!(r0 > 0.0, "approach is compression: {r0}");
        let mut vel = sorted.vel.clone();
        let warm = vec![[0.0; 2]; 2];
        let tr = solve(
            true,
            Solve::Divergence,
            &sorted,
            &mut vel,
            &da,
            &warm,
            None,
            &mut [],
            1e-3,
            &sp,
            &fp,
            &dp,
        );
        let last = tr.states.last().unwrap();
        assert!(last.residual <= dp.eta_v, "{last:?}");
        // Momentum is conserved by the symmetric update.
        assert!((vel[0] + vel[1]).length() < 1e-5);
        // The pair no longer approaches (a lone pair overshoots: each particle's κ is sized
        // for its own neighbourhood and both push, the Jacobi nature of the solve).
        assert!((vel[0] - vel[1]).x <= 1e-5, "{vel:?}");
    }

    #[test]
    fn reduction_tree_matches_the_plain_sum_closely() {
        let v: Vec<f32> = (0..1000).map(|i| (i % 7) as f32 * 0.25).collect();
        let total = reduce_total(&block_sums(&v));
        let plain: f32 = v.iter().sum();
        assert_eq!(total, plain, "exact for these dyadic values");
        assert_eq!(reduce_max(&block_maxima(&v)), 1.5);
        assert_eq!(block_sums(&v).len(), 4);
    }

    #[test]
    fn control_stops_at_tolerance_after_the_minimum() {
        let mut s = SolveState::default();
        assert!(dfsph_control(&mut s, &[0.0], 1, 0.1, 2, 100));
        assert!(dfsph_control(&mut s, &[0.0], 1, 0.1, 2, 100));
        assert!(!dfsph_control(&mut s, &[0.0], 1, 0.1, 2, 100));
        assert_eq!(s.iterations, 2);
        assert!(s.done);
        let mut s = SolveState::default();
        for _ in 0..3 {
            assert!(dfsph_control(&mut s, &[1.0], 1, 0.1, 1, 3));
        }
        assert!(!dfsph_control(&mut s, &[1.0], 1, 0.1, 1, 3));
        assert_eq!((s.iterations, s.residual), (3, 1.0));
    }
}
