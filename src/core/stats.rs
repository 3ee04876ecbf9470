//! The statistics blocks a step hands its driver: the general block (`stats.wgsl`'s per-block
//! reductions folded on the host, `cpu::stats`) and, behind it, the solver's (its solves and its
//! step, [`SolverStats`]; DFSPH's and WCSPH's come from `solver::dfsph::dfsph_stats`).

/// Bit 0 of [`StatsBlock::non_finite`]: a position.
pub const BAD_POSITION: u32 = 1;
/// Bit 1: a velocity.
pub const BAD_VELOCITY: u32 = 2;
/// Bit 2: a density.
pub const BAD_DENSITY: u32 = 4;

/// The step's statistics, as the host folds them from the GPU's blocks of 256 particles
/// (`cpu::stats::fold_blocks`) or the CPU path computes them, with the solver's block behind:
/// 26 words, 104 bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
pub struct StatsBlock {
    /// Σ|v|², Σ(y − y_floor), Σρ, Σ max(ρ − ρ0, 0).
    pub sums: [f32; 4],
    /// max |v|², max ρ, max x (the front), max of max(ρ − ρ0, 0).
    pub maxima: [f32; 4],
    /// min ρ.
    pub density_min: f32,
    /// Particles outside the tank.
    pub outside: u32,
    /// OR of [`BAD_POSITION`], [`BAD_VELOCITY`], [`BAD_DENSITY`] over the particles.
    pub non_finite: u32,
    /// The smallest id among particles with a non-finite value (u32::MAX when none).
    pub first_bad_id: u32,
    /// dt of the step, s.
    pub dt: f32,
    /// N.
    pub n: u32,
    /// The id of the particle with the largest density (the smaller id on a tie).
    pub density_max_id: u32,
    /// The id of the fastest particle (the smaller id on a tie).
    pub speed_max_id: u32,
    /// Σ [`eos_energy`](ρ): times m B / ρ0, the energy the Tait equation of state stores, J.
    pub eos: f32,
    /// Σ m Σ_b a_ib · v_b: the power moving obstacles put into the fluid this step, W (the
    /// obstacles' push on each particle times their own surface velocity; 0 when still).
    pub power: f32,
    /// The solver's statistics block ([`SolverStats::to_words`]; DFSPH's and WCSPH's built on
    /// the host from the GPU's block sums and solve totals, stage `dfsph_stats`).
    pub solver: [u32; 8],
}

/// A solver's statistics block of one step, 8 words, in the terms every solver of the
/// incompressibility family shares: a velocity (divergence-free) solve and a density solve, each
/// with its iterations and final mean residual (zeros for a solver without it: WCSPH has
/// neither), the density error at the new positions, the step's dt and the speed it came from.
/// DFSPH's and WCSPH's are built on the host on both paths (`solver::dfsph::dfsph_stats`); the
/// `--stats` row prints them whatever the solver.
#[repr(C)]
#[derive(
    Clone, Copy, Debug, Default, PartialEq, serde::Serialize, bytemuck::Pod, bytemuck::Zeroable,
)]
pub struct SolverStats {
    /// Iterations of the velocity (divergence-free) solve.
    pub iterations_v: u32,
    /// Its final mean residual.
    pub residual_v: f32,
    /// Iterations of the density (constant-density) solve.
    pub iterations_d: u32,
    /// Its final mean residual.
    pub residual_d: f32,
    /// Mean over particles of max(ρ/ρ0 − 1, 0) at the new positions.
    pub error_mean: f32,
    /// Its maximum.
    pub error_max: f32,
    /// dt of the step, s.
    pub dt: f32,
    /// The largest |v + a dt_prev| the step's dt came from.
    pub v_max: f32,
}

impl SolverStats {
    /// The block as [`StatsBlock::solver`] holds it: (iterations_v, residual_v, iterations_d,
    /// residual_d, error_mean, error_max, dt, v_max), floats as bits.
    pub fn to_words(&self) -> [u32; 8] {
        bytemuck::cast(*self)
    }

    /// The inverse of [`SolverStats::to_words`].
    pub fn from_words(r: &[u32; 8]) -> Self {
        bytemuck::cast(*r)
    }
}
