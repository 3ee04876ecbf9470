//! The stage table: every pass of a step once, with its one name (WGSL file and entry point,
//! CPU mirror, timing row), its wgpu label, its shader and its CPU twin. The GPU timer,
//! `--bench`, `--verify`, the CPU stage clock and the shader tests all read this table; nothing
//! keeps a second list of stages.

use crate::shaders;

macro_rules! stage_table {
    ($( $(#[$doc:meta])* $variant:ident => $name:literal, $shader:expr, $cpu:literal; )*) => {
        /// The passes of a step, in pipeline order (the order of [`Stage::ALL`], of timing rows
        /// and of the `--bench` table).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum Stage {
            $( $(#[$doc])* $variant, )*
        }

        impl Stage {
            /// Every stage, in order.
            pub const ALL: [Stage; [$(stringify!($variant)),*].len()] = [$(Stage::$variant),*];

            /// The stage's one name (WGSL file or entry point, CPU mirror, timing row).
            pub fn name(self) -> &'static str {
                match self { $( Stage::$variant => $name, )* }
            }

            /// The wgpu label of the stage's pass: `sph.<name>`.
            pub fn label(self) -> &'static str {
                match self { $( Stage::$variant => concat!("sph.", $name), )* }
            }

            /// The stage's WGSL source (before [`shaders::source`] prepends the shared
            /// files), or `None` for a CPU-only stage fused into another on the GPU.
            pub fn shader(self) -> Option<&'static str> {
                match self { $( Stage::$variant => $shader, )* }
            }

            /// The CPU twin, as a path below the crate root (`cpu::density::density`);
            /// `tests/suite/shaders.rs` checks that it names a public function.
            pub fn cpu_mirror(self) -> &'static str {
                match self { $( Stage::$variant => $cpu, )* }
            }

            /// The stage's place in [`Stage::ALL`].
            pub fn index(self) -> usize {
                self as usize
            }
        }
    };
}

stage_table! {
    /// `hash`: slot and rank per particle, counts per slot.
    Hash => "hash", Some(shaders::HASH), "grid::hash::hash";
    /// `scan`: the counts' exclusive prefix sum, the slots' starts.
    Scan => "scan", Some(shaders::SCAN), "grid::scan::scan";
    /// `scatter`: each particle into its slot's range.
    Scatter => "scatter", Some(shaders::SCATTER), "grid::scatter::scatter";
    /// `order`: a slot's particles in a deterministic order.
    Order => "order", Some(shaders::ORDER), "grid::order::order";
    /// `reorder`: the state gathered into slot order.
    Reorder => "reorder", Some(shaders::REORDER), "grid::reorder::reorder";
    /// `density`: poly6 density of the fluid alone.
    Density => "density", Some(shaders::DENSITY), "cpu::density::density";
    /// `dfsph_density`: DFSPH's ρ and α, and its pair lists.
    DfsphDensity => "dfsph_density", Some(shaders::DFSPH_DENSITY), "solver::dfsph::density::dfsph_density";
    /// `dfsph_galerkin`: the coarse levels' operator, assembled from the step's pairs.
    DfsphGalerkin => "dfsph_galerkin", Some(shaders::DFSPH_GALERKIN), "solver::dfsph::galerkin::dfsph_galerkin";
    /// `dfsph_levels`: the coarse levels' rows, each level from the one below.
    DfsphLevels => "dfsph_levels", Some(shaders::DFSPH_LEVELS), "solver::dfsph::levels::dfsph_levels";
    /// `dfsph_eos`: WCSPH's stiffness p/ρ from the Tait equation of state.
    DfsphEos => "dfsph_eos", Some(shaders::DFSPH_EOS), "solver::dfsph::eos::dfsph_eos";
    /// `dfsph_pressure`: one Jacobi update of the velocities (WCSPH's pressure force, once).
    DfsphPressure => "dfsph_pressure", Some(shaders::DFSPH_PRESSURE), "solver::dfsph::pressure::dfsph_pressure";
    /// `dfsph_rate`: the density change rates and the residual blocks.
    DfsphRate => "dfsph_rate", Some(shaders::DFSPH_RATE), "solver::dfsph::rate::dfsph_rate";
    /// `dfsph_restrict`: a solve's residual summed onto the coarse cells.
    DfsphRestrict => "dfsph_restrict", Some(shaders::DFSPH_RESTRICT), "solver::dfsph::restrict::dfsph_restrict";
    /// `dfsph_coarse`: the coarse solve (conjugate gradients, a V-cycle as preconditioner).
    DfsphCoarse => "dfsph_coarse", Some(shaders::DFSPH_COARSE), "solver::dfsph::coarse::dfsph_coarse";
    /// `dfsph_prolong`: the coarse correction added to the next stiffness increments.
    DfsphProlong => "dfsph_prolong", Some(shaders::DFSPH_PROLONG), "solver::dfsph::prolong::dfsph_prolong";
    /// `dfsph_blocks`: the residual blocks folded in a fixed tree.
    DfsphBlocks => "dfsph_blocks", Some(shaders::DFSPH_BLOCKS), "solver::dfsph::blocks::block_sums";
    /// `dfsph_control`: the solve's convergence decision; on the GPU every invocation of the
    /// next iteration's `dfsph_pressure` and `dfsph_rate` takes it (`solve_again`).
    DfsphControl => "dfsph_control", None, "solver::dfsph::control::dfsph_control";
    /// `dfsph_accel`: DFSPH's non-pressure accelerations.
    DfsphAccel => "dfsph_accel", Some(shaders::DFSPH_ACCEL), "solver::dfsph::accel::dfsph_accel";
    /// `dfsph_timestep`: DFSPH's CFL and viscous step.
    DfsphTimestep => "dfsph_timestep", Some(shaders::DFSPH_TIMESTEP), "solver::dfsph::timestep::dfsph_timestep";
    /// `dfsph_predict`: the predicted velocities.
    DfsphPredict => "dfsph_predict", Some(shaders::DFSPH_PREDICT), "solver::dfsph::predict::dfsph_predict";
    /// `dfsph_integrate`: positions and the tank's clamp.
    DfsphIntegrate => "dfsph_integrate", Some(shaders::DFSPH_INTEGRATE), "solver::dfsph::integrate::dfsph_integrate";
    /// `dfsph_stats`: DFSPH's 8-word statistics block, folded on the host on both paths from
    /// the density error's blocks and the solves' residual totals.
    SolverStats => "dfsph_stats", None, "solver::dfsph::dfsph_stats";
    /// `stats`: the statistics block of either solver.
    Stats => "stats", Some(shaders::STATS), "cpu::stats::stats_block";
    /// `emitter_probe`: the fluid in the slabs emitters' layers would fill.
    EmitterProbe => "emitter_probe", Some(shaders::EMITTER_PROBE), "emitter::probe_hits";
    /// `grain_contacts`: the colliding spheres' contact forces.
    GrainContacts => "grain_contacts", Some(shaders::GRAIN_CONTACTS), "grains::contacts";
    /// `grain_integrate`: the colliding spheres' symplectic Euler step.
    GrainIntegrate => "grain_integrate", Some(shaders::GRAIN_INTEGRATE), "grains::integrate";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_order_and_names_are_unique() {
        for (k, s) in Stage::ALL.iter().enumerate() {
            assert_eq!(s.index(), k);
            assert_eq!(s.label(), format!("sph.{}", s.name()));
        }
        let mut names: Vec<_> = Stage::ALL.iter().map(|s| s.name()).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), Stage::ALL.len());
    }
}
