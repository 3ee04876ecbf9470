//! The solvers, each in a home of its own: its CPU stages (the mirrors of its WGSL stages in
//! `shaders/solver/<name>/`), its GPU passes, the state it carries between steps and its
//! statistics, behind one interface on each path ([`CpuSolver`], [`GpuSolver`]) that the
//! driver's backends (`run::CpuSimulation`, `gpu::fluid::Simulation`), checkpoints, `--bench`
//! and `--verify` speak to. The shared layer names no solver: it holds a solver's carried state
//! as [`Carry`] and its statistics as [`SolverStats`], whatever the solver.
//!
//! [`dfsph`]: the solvers' stages, DFSPH's (Bender & Koschier 2015, 2017) with its two solves and
//! WCSPH's (Becker & Teschner 2007), the same stages with the Tait equation of state's pressure
//! in place of the solves.
//!
//! Registration: one entry of the `solvers!` list declares a built-in [`Solver`] (its variant,
//! its name, its folder's [`Builders`]); [`builders`] maps it to those, from which [`cpu`] and
//! [`gpu`] build the run's solver; a solver built elsewhere (a test's, a
//! program's) plugs in through `run::CpuSimulation::with_stepper` and
//! `gpu::fluid::Simulation::with_stages`.

use std::any::Any;

use crate::Result;
use crate::boundary::Boundary;
use crate::core::{Snapshot, SolverStats, StatsBlock};
use crate::cpu::interact::InteractParams;
use crate::gpu::buffers::GpuFluid;
use crate::gpu::context::Pending;
use crate::gpu::stats::{Read, SolveInputs};
use crate::grid::gpu::GpuNeighbours;
use crate::kernel::Kernel;
use crate::params::{
    ConfigOverrides, DfsphConfig, DfsphParams, FluidParams, PhysicsConfig, SimParams, SphConfig,
};

pub mod dfsph;

pub use crate::core::Carry;

/// A solver on the CPU reference path, as `run::CpuSimulation` steps it. The state it is
/// handed and returns is in the order the GPU holds it (the grid's slot order after a step).
pub trait CpuSolver: Send {
    /// Its name on the command line and in reports.
    fn name(&self) -> &'static str;
    /// One step from `snap`: the next snapshot (with the solver's statistics block) and the
    /// obstacles' power per particle (empty without obstacles), summed by index with the new
    /// state, as the GPU's statistics pass reads it.
    fn step(
        &mut self,
        snap: &Snapshot,
        obstacles: Option<&Boundary>,
        interaction: Option<&InteractParams>,
        sp: &SimParams,
        fp: &FluidParams,
    ) -> (Snapshot, Vec<f32>);
    /// The positions' surroundings or the velocities changed (obstacles moved, velocities
    /// replaced): whatever the solver kept of the step's start is computed anew.
    fn restart(&mut self);
    /// The particles changed between steps (removed or added; the carry stays): the solver
    /// computes its start at once and leaves `snap` as the GPU would hold it.
    fn settle(
        &mut self,
        snap: &mut Snapshot,
        obstacles: Option<&Boundary>,
        sp: &SimParams,
        fp: &FluidParams,
    );
    /// What it carries to the next step.
    fn carry(&self) -> Carry;
}

/// A solver's passes on the GPU, as `gpu::fluid::Simulation` drives them: it owns its
/// pipelines and buffers beside the grid's (`GpuNeighbours`) and the fluid's (`GpuFluid`), and
/// writes the accelerations, the step state (dt first) and the obstacles' power there.
pub trait GpuSolver: Send {
    /// Its name on the command line and in reports.
    fn name(&self) -> &'static str;
    /// Whether its fluid is weakly compressible ([`Solver::weakly_compressible`]: the energy
    /// check counts the equation of state's energy, the speed check applies).
    fn weakly_compressible(&self) -> bool;
    /// ρ per particle in slot order after a step (the statistics and the viewer read it).
    fn density(&self) -> &wgpu::Buffer;
    /// The buffers behind the solver's statistics block that the statistics pass reads back
    /// with the general block (`None`: the block is built from the step state alone).
    fn stats_inputs(&self) -> Option<SolveInputs<'_>>;
    /// The layout of bind group 1 of the solver's walks that see obstacles.
    fn boundary_layout(&self) -> &wgpu::BindGroupLayout;
    /// Makes the walks see the obstacles of `bg` (laid out by [`GpuSolver::boundary_layout`];
    /// `None`: none).
    fn set_boundary(&mut self, d: &wgpu::Device, bg: Option<wgpu::BindGroup>);
    /// Follows the run's fluid parameters `fp`, already on the GPU (changed live: a solver
    /// whose pipelines are built for some of them rebuilds those).
    fn set_fluid_params(&mut self, _d: &wgpu::Device, _fp: &FluidParams) {}
    /// Follows the live particle count `n`.
    fn set_live(&self, q: &wgpu::Queue, n: u32);
    /// The state changed (uploaded, obstacles moved): the step's start is recomputed before
    /// the next step.
    fn restart(&self);
    /// Whether the last step left the state in the grid's slot-order buffers with its
    /// density (a snapshot then reads those).
    fn primed(&self) -> bool;
    /// Replaces the carried state (a checkpoint's, or [`Carry::default`] for a fresh start);
    /// Err names what is not the solver's.
    fn set_carry(
        &self,
        q: &wgpu::Queue,
        fluid: &GpuFluid,
        carry: &Carry,
    ) -> std::result::Result<(), String>;
    /// Reads what the solver carries to the next step (no step may be in flight); a future,
    /// because a web page awaits the GPU's readback (a native caller blocks on it).
    fn read_carry<'a>(&'a self, g: &'a GpuNeighbours, fluid: &'a GpuFluid) -> Pending<'a, Carry>;
    /// Encodes what a step needs of its start (the grid, the density) unless the last step
    /// left it.
    fn encode_prime(&self, g: &GpuNeighbours, e: &mut wgpu::CommandEncoder);
    /// Encodes one step from the primed start to the next (its grid and density included);
    /// `forces` encodes the forces the driver adds (the mouse force) after each pass that
    /// writes the non-pressure accelerations.
    fn encode_step(
        &self,
        g: &GpuNeighbours,
        e: &mut wgpu::CommandEncoder,
        forces: &dyn Fn(&mut wgpu::CommandEncoder),
    );
    /// The statistics block of the oldest submitted step not yet read, from what came back.
    fn read_block(&self, r: Read) -> StatsBlock;
    /// The statistics block of the current state (no step in flight).
    fn block_now(&self, r: Read) -> StatsBlock;
    /// The solver's block of the last step read.
    fn last_stats(&self) -> SolverStats;
    /// Dispatches of the steps read so far that did no work (launched and exited at once),
    /// for `--bench`.
    fn idle_dispatches(&self) -> u64 {
        0
    }
    /// The solver itself, for its own `--verify` checker.
    fn as_any(&self) -> &dyn Any;
}

/// Builds a run's CPU solver ([`Builders::cpu`]).
pub type BuildCpu = fn(&SolverParams, &Carry) -> std::result::Result<Box<dyn CpuSolver>, String>;

/// Builds a run's GPU passes ([`Builders::gpu`]).
pub type BuildGpu = fn(
    &SolverParams,
    &GpuNeighbours,
    &GpuFluid,
    &SimParams,
    &FluidParams,
) -> Result<Box<dyn GpuSolver>>;

/// How a run builds a built-in solver: its CPU solver with a carried state, its GPU passes,
/// and the check of a checkpoint's carried state. A built-in solver's folder gives one; a
/// run's [`Solver`] picks it in [`builders`].
pub struct Builders {
    /// The run's solver on the CPU path, with the carried state `carry` (a checkpoint's, or
    /// [`Carry::default`]); Err names what of `carry` is not the solver's.
    pub cpu: BuildCpu,
    /// The run's solver on the GPU path, its passes built beside `grid`'s and `fluid`'s.
    pub gpu: BuildGpu,
    /// Whether the parameters and `carry` read as the solver's (a checkpoint's check); Err
    /// says what does not.
    pub check_carry: fn(&SolverParams, &Carry) -> std::result::Result<(), String>,
    /// The solver's own line of a run's summary from its last step's row (`None`: the general
    /// line says all).
    pub summary: fn(&crate::run::StepStats) -> Option<String>,
    /// Whether its fluid is weakly compressible ([`Solver::weakly_compressible`]).
    pub weakly_compressible: bool,
}

macro_rules! solvers {
    (@one $variant:ident) => {
        1
    };
    ($(#[$first_doc:meta])* $first:ident => $first_name:literal, $first_builders:path,
     $($(#[$doc:meta])* $variant:ident => $name:literal, $builders:path),* $(,)?) => {
        /// The solvers a fluid run can choose (`--solver`, the scene file's `physics.solver`,
        /// the viewer's selector), each registered by one entry of the `solvers!` list below:
        /// its variant, its name and its folder's [`Builders`].
        #[derive(
            Clone,
            Copy,
            Debug,
            Default,
            PartialEq,
            Eq,
            serde::Serialize,
            serde::Deserialize,
            clap::ValueEnum,
        )]
        pub enum Solver {
            $(#[$first_doc])*
            #[default]
            #[serde(rename = $first_name)]
            #[value(name = $first_name)]
            $first,
            $($(#[$doc])*
            #[serde(rename = $name)]
            #[value(name = $name)]
            $variant,)*
        }

        impl Solver {
            /// Every built-in solver, in the list's order.
            pub const ALL: [Solver; 1 $(+ solvers!(@one $variant))*] =
                [Solver::$first, $(Solver::$variant),*];

            /// Its name on the command line and in reports.
            pub fn name(self) -> &'static str {
                match self {
                    Solver::$first => $first_name,
                    $(Solver::$variant => $name,)*
                }
            }
        }

        /// Each built-in [`Solver`]'s folder's [`Builders`].
        pub fn builders(solver: Solver) -> &'static Builders {
            match solver {
                Solver::$first => &$first_builders,
                $(Solver::$variant => &$builders,)*
            }
        }
    };
}

// The registration of the built-in solvers: a built-in solver is its folder and its entry
// here (variant, name on the command line, the folder's `Builders`).
solvers! {
    /// Weakly compressible SPH: Tait equation of state, explicit pressure forces, CFL step on
    /// the sound speed (Becker & Teschner 2007).
    Wcsph => "wcsph", dfsph::run::WCSPH,
    /// Divergence-free SPH: a divergence-free and a constant-density solve per step, CFL step
    /// on the flow speed (Bender & Koschier 2015, 2017).
    Dfsph => "dfsph", dfsph::run::DFSPH,
}

impl Solver {
    /// Whether the fluid is weakly compressible ([`Builders::weakly_compressible`]): its
    /// equation of state stores energy (the energy check counts it) and a speed near the sound
    /// speed leaves the model (the speed check applies).
    pub fn weakly_compressible(self) -> bool {
        builders(self).weakly_compressible
    }
}

impl SphConfig {
    /// The configuration of a fluid run with `solver`: as [`SphConfig::for_fluid`], with the
    /// lattice mass of the run's [`Kernel`] (both solvers sum the density with it) and, unless
    /// set, the kernel's [`Kernel::default_support`].
    pub fn for_solver(particles: u32, o: ConfigOverrides, solver: Solver) -> Result<Self> {
        Self::for_run(particles, o, solver.name())
    }
}

/// The solver of a run with its parameters, chosen once when the run is set up: which solver
/// it is, and the uniform block of the stages DFSPH and WCSPH share (whose
/// [`DfsphParams::state_equation`] says which pressure they apply; a solver of other stages
/// reads nothing of it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SolverParams {
    solver: Solver,
    stages: DfsphParams,
}

impl SolverParams {
    /// The solver `solver` names, its stages' block from `dfsph`, validated.
    pub fn new(
        solver: Solver,
        dfsph: &DfsphConfig,
        cfg: &SphConfig,
        physics: &PhysicsConfig,
    ) -> Result<Self> {
        // WCSPH's step follows its sound speed wherever the compression takes it:
        // `--min-dt 0` (the divergence check off) leaves it no floor at all.
        let dfsph = match solver == Solver::Wcsph && dfsph.dt_min == 0.0 {
            true => DfsphConfig {
                dt_min: f32::MIN_POSITIVE,
                ..*dfsph
            },
            false => *dfsph,
        };
        let dp = dfsph.params(cfg, physics)?;
        Ok(Self::with_stages(
            solver,
            DfsphParams {
                state_equation: u32::from(solver == Solver::Wcsph),
                ..dp
            },
        ))
    }

    /// `solver` with the stages' block `stages` as it is (a checkpoint's, a test's).
    pub fn with_stages(solver: Solver, stages: DfsphParams) -> Self {
        Self { solver, stages }
    }

    /// DFSPH or WCSPH, as the block `stages` says ([`DfsphParams::state_equation`]).
    pub fn of_stages(stages: DfsphParams) -> Self {
        let solver = match stages.is_wcsph() {
            true => Solver::Wcsph,
            false => Solver::Dfsph,
        };
        Self { solver, stages }
    }

    /// Which solver this is.
    pub fn solver(&self) -> Solver {
        self.solver
    }

    /// The stages' uniform block.
    pub fn stages(&self) -> &DfsphParams {
        &self.stages
    }

    /// The stages' uniform block, to bound or flag (the obstacles' speed, friction).
    pub fn stages_mut(&mut self) -> &mut DfsphParams {
        &mut self.stages
    }

    /// The block of a run whose stages solve for the pressure (DFSPH's tolerances and
    /// iteration cap); `None` for WCSPH, which solves nothing.
    pub fn solves(&self) -> Option<&DfsphParams> {
        (!self.stages.is_wcsph()).then_some(&self.stages)
    }

    /// [`Solver::weakly_compressible`] of this solver.
    pub fn weakly_compressible(&self) -> bool {
        self.solver().weakly_compressible()
    }

    /// The run description's solver clause (`--stats` header, checkpoints), naming the run's
    /// `kernel`.
    pub fn describe(&self, kernel: Kernel) -> String {
        let dp = &self.stages;
        match dp.is_wcsph() {
            true => format!(
                "; solver WCSPH: {}, dt {}..{} s, λ {}",
                kernel.title(),
                dp.dt_min,
                dp.dt_max,
                dp.cfl
            ),
            false => format!(
                "; solver DFSPH: {}, η_v {}, η {}, ω {}, at most {} iterations, dt {}..{} s, λ {}",
                kernel.title(),
                dp.eta_v,
                dp.eta_d,
                dp.relaxation,
                dp.max_iterations,
                dp.dt_min,
                dp.dt_max,
                dp.cfl
            ),
        }
    }
}

/// The run's solver on the CPU path, with the carried state `carry` (a checkpoint's, or
/// [`Carry::default`]); Err names what of `carry` is not the solver's.
pub fn cpu(
    solver: &SolverParams,
    carry: &Carry,
) -> std::result::Result<Box<dyn CpuSolver>, String> {
    (builders(solver.solver()).cpu)(solver, carry)
}

/// The run's solver on the GPU path, its passes built beside `grid`'s and `fluid`'s.
pub fn gpu(
    solver: &SolverParams,
    grid: &GpuNeighbours,
    fluid: &GpuFluid,
    sp: &SimParams,
    fp: &FluidParams,
) -> Result<Box<dyn GpuSolver>> {
    (builders(solver.solver()).gpu)(solver, grid, fluid, sp, fp)
}

/// Whether `solver`'s parameters and `carry` read as the solver's (a checkpoint's check); Err
/// says what does not.
pub fn check_carry(solver: &SolverParams, carry: &Carry) -> std::result::Result<(), String> {
    (builders(solver.solver()).check_carry)(solver, carry)
}

/// The solver's own line of a run's summary from its last step's row `st` ([`Builders::summary`]).
pub fn summary(solver: Solver, st: &crate::run::StepStats) -> Option<String> {
    (builders(solver).summary)(st)
}
