//! The one driver loop every front end steps through: headless runs and their resume, the
//! viewer (both paths, fluid and spheres), `--verify`, `--bench`'s whole runs, the spheres'
//! headless runs. Each step it places what moves, steps, reads the step's report, checks the
//! guards, removes the particles that left through an open side and adds those the emitters
//! release; what a model reports and how it is judged is its [`Model`] (the fluid's two paths
//! through [`Backend`], the colliding spheres through `crate::grains::Spheres`); what differs
//! between front ends (the `--stats` rows, frames, checkpoints, the progress bar) is in their
//! [`Hooks`].
//!
//! The loop keeps the GPU busy: step k + 1 is submitted before step k's statistics are read,
//! unless the host must act between them (a frame or checkpoint of step k's state, a moving
//! obstacle placed at the time step k ends, emitters, an open side, an end time, a model that
//! steps one at a time).

use crate::Result;
use crate::core::{RunFrom, StatsBlock};
use crate::emitter::Emitters;
use crate::params::FluidParams;

use super::backend::Backend;
use super::guards::{Guards, StepStats, step_stats, total_energy};

/// When a run ends: after `steps` steps, or after the first step that reaches simulated time
/// `time` (s), whichever comes first.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Until {
    /// Steps to run (from the start or the resumed step).
    pub steps: u64,
    /// Simulated time to reach, s.
    pub time: Option<f64>,
}

impl Until {
    /// `steps` steps, whatever time they reach.
    pub fn steps(steps: u64) -> Self {
        Self { steps, time: None }
    }
}

/// What does not change while a fluid run is driven.
#[derive(Clone, Copy)]
pub struct Course<'a> {
    /// The fluid's parameters (the energies, the open sides).
    pub fp: &'a FluidParams,
    /// The checks that stop a diverged run.
    pub guards: &'a Guards,
    /// The nozzles that add particles.
    pub emitters: &'a Emitters,
}

/// Whether the run goes on after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// Step on.
    Go,
    /// End the run after this step.
    Stop,
}

/// What the driver loop steps: how a model's steps are started and reported, how they are
/// judged, and what it does between two of them. The fluid's two paths are models through
/// [`Backend`]; the colliding spheres are one too (`crate::grains::Spheres`).
pub trait Model {
    /// What a step reports once it ran (the fluid's statistics block).
    type Block: Copy;
    /// A step's statistics row (a `--stats` row), handed to the hooks before the guards judge
    /// it, so a file shows the step that diverged.
    type Row: Copy;
    /// The checks that stop a diverged run.
    type Guards: Copy;
    /// What does not change while a run is driven.
    type Course<'c>: Copy
    where
        Self: 'c;

    /// The guards `course` sets.
    fn guards(course: &Self::Course<'_>) -> Self::Guards;
    /// Whether every step must be read before the next is submitted (the host acts between
    /// them: moving obstacles are placed at the time a step ends, particles leave through open
    /// sides; the spheres read every step's contacts).
    fn serial(&self, course: &Self::Course<'_>) -> bool;
    /// Whether particles may be added after time `t` (s): a step's end is then waited for.
    fn may_add_after(_course: &Self::Course<'_>, _t: f64) -> bool {
        false
    }
    /// Before the first step of a stretch from `at` (awaited: the fluid's emitters probe the
    /// GPU).
    fn begin<'c>(
        &mut self,
        _course: &Self::Course<'c>,
        _at: &RunFrom,
    ) -> impl std::future::Future<Output = Result<()>>
    where
        Self: 'c,
    {
        async { Ok(()) }
    }
    /// Puts what moves where it is at time `t` (s), for the next step.
    fn place(&mut self, _t: f64) {}
    /// Starts one step, whose report [`Model::read`] returns.
    fn submit(&mut self) -> Result<()>;
    /// The report of the oldest submitted step not yet read, once it is there (a native run
    /// blocks for it; a web page awaits it while the browser maps it back).
    fn read(&mut self) -> impl std::future::Future<Output = Result<Self::Block>>;
    /// The step's time step, s.
    fn dt(block: &Self::Block) -> f32;
    /// Step `at.step`'s row: `at` stands past the step, which began at `t_before` (s).
    fn row(
        &self,
        course: &Self::Course<'_>,
        block: &Self::Block,
        at: &RunFrom,
        t_before: f64,
    ) -> Result<Self::Row>;
    /// The guards' verdict on step `at.step`, with the energy accounts of `at` advanced.
    fn check(
        &self,
        course: &Self::Course<'_>,
        block: &Self::Block,
        row: &Self::Row,
        at: &mut RunFrom,
        guards: Self::Guards,
    ) -> Result<()>;
    /// After a judged step: removes what left and, unless the next step already runs
    /// (`pipelined`), adds what the step's end releases (awaited, as [`Model::begin`]).
    /// Returns whether anything is left to step.
    fn settle<'c>(
        &mut self,
        _course: &Self::Course<'c>,
        _block: &Self::Block,
        _at: &mut RunFrom,
        _t_before: f64,
        _pipelined: bool,
    ) -> impl std::future::Future<Output = Result<bool>>
    where
        Self: 'c,
    {
        async { Ok(true) }
    }
}

/// What a front end does around the shared loop. Every method has a default that does
/// nothing, so a front end names only what it adds.
pub trait Hooks<M: Model + ?Sized> {
    /// Whether the state at the end of step `k` will be read ([`Hooks::stepped`] reads it):
    /// the step after it is then not submitted before. `last` is the run's last step by count.
    fn wants_state(&mut self, _k: u64, _last: bool) -> bool {
        false
    }
    /// A step's row, before the guards judge it (so a `--stats` file shows the step that
    /// diverged).
    fn row(&mut self, _row: &M::Row) -> Result<()> {
        Ok(())
    }
    /// The guards to judge step `at.step` with (a front end may relax them, e.g. the viewer's
    /// energy check while the mouse does untallied work).
    fn guards(&mut self, course: &M::Course<'_>, _at: &mut RunFrom) -> M::Guards {
        M::guards(course)
    }
    /// After step `at.step` passed the guards and its removals and emissions are done;
    /// `wants_state` is what [`Hooks::wants_state`] said of it.
    fn stepped(&mut self, _model: &mut M, _at: &RunFrom, _wants_state: bool) -> Result<Flow> {
        Ok(Flow::Go)
    }
}

/// A front end that adds nothing to the loop.
pub struct NoHooks;

impl<M: Model + ?Sized> Hooks<M> for NoHooks {}

/// How a driven stretch of steps ended.
#[derive(Clone, Copy, Debug)]
pub struct Driven<R, B> {
    /// The last step's row.
    pub last: Option<R>,
    /// The last step's report.
    pub block: Option<B>,
    /// Every particle left through the open sides (and no emitter added one): nothing is left
    /// to step.
    pub emptied: bool,
}

impl<R, B> Default for Driven<R, B> {
    fn default() -> Self {
        Self {
            last: None,
            block: None,
            emptied: false,
        }
    }
}

/// Adds the particles `emitters` release in (before, t] to `backend`; returns the energy
/// they bring in and how many: [`Emitters::between`], each probe's count awaited through
/// [`Backend::probe_async`].
async fn emit<B: Backend + ?Sized>(
    backend: &mut B,
    emitters: &Emitters,
    fp: &FluidParams,
    before: Option<f64>,
    t: f64,
) -> Result<(f64, u64)> {
    let mut batch = crate::emitter::Batch::default();
    for (layers, probes) in emitters.probes_due(before, t) {
        let hits = backend.probe_async(&probes).await?;
        emitters.land(&layers, &hits, t, &mut batch);
    }
    if batch.is_empty() {
        return Ok((0.0, 0));
    }
    backend.append(&batch)?;
    Ok((
        batch.energy(fp.mass, fp.gravity[1], fp.tank_min[1]),
        batch.pos.len() as u64,
    ))
}

/// The fluid on either path: a step reports its statistics block, the guards judge it with
/// the energy accounts, emitters add particles and open sides remove them between steps.
impl<T: Backend + ?Sized> Model for T {
    type Block = StatsBlock;
    type Row = StepStats;
    type Guards = Guards;
    type Course<'c>
        = Course<'c>
    where
        T: 'c;

    fn guards(course: &Course<'_>) -> Guards {
        *course.guards
    }

    fn serial(&self, course: &Course<'_>) -> bool {
        self.obstacles_move() || course.fp.open != 0
    }

    fn may_add_after(course: &Course<'_>, t: f64) -> bool {
        course.emitters.active_after(t)
    }

    /// A state at time t holds every layer that left by t (`crate::emitter`): a fresh run
    /// emits those of t = 0 first (their energy is in the first step's, the reference); a
    /// resumed one has them.
    async fn begin<'c>(&mut self, course: &Course<'c>, at: &RunFrom) -> Result<()>
    where
        Self: 'c,
    {
        if at.step == 0 {
            emit(self, course.emitters, course.fp, None, at.t).await?;
        }
        Ok(())
    }

    fn place(&mut self, t: f64) {
        self.place_obstacles(t);
    }

    fn submit(&mut self) -> Result<()> {
        Backend::submit(self)
    }

    fn read(&mut self) -> impl std::future::Future<Output = Result<StatsBlock>> {
        self.read_stats_async()
    }

    fn dt(block: &StatsBlock) -> f32 {
        block.dt
    }

    fn row(
        &self,
        course: &Course<'_>,
        block: &StatsBlock,
        at: &RunFrom,
        _t_before: f64,
    ) -> Result<StepStats> {
        let mut st = step_stats(block, course.fp, at.step, at.t)?;
        st.judge_solves(course.guards.tolerances);
        Ok(st)
    }

    fn check(
        &self,
        course: &Course<'_>,
        block: &StatsBlock,
        _row: &StepStats,
        at: &mut RunFrom,
        guards: Guards,
    ) -> Result<()> {
        let fp = course.fp;
        // The first step's work is in its own energy, which the check starts from.
        let first = at.start_energy.is_none();
        let e0 = *at
            .start_energy
            .get_or_insert_with(|| total_energy(block, fp, guards.wcsph));
        if !first {
            at.obstacle_work += block.power as f64 * block.dt as f64;
        }
        guards.check(
            block,
            e0 + at.emitted_energy - at.removed_energy,
            at.obstacle_work,
            fp,
            at.step,
            at.t,
        )
    }

    async fn settle<'c>(
        &mut self,
        course: &Course<'c>,
        block: &StatsBlock,
        at: &mut RunFrom,
        t_before: f64,
        pipelined: bool,
    ) -> Result<bool>
    where
        Self: 'c,
    {
        let fp = course.fp;
        let mut live = block.n as u64;
        if fp.open != 0 && block.outside > 0 {
            let (gone, energy) = self.remove_outside_async().await?;
            at.removed_energy += energy;
            live -= gone;
        }
        if !pipelined {
            let (energy, added) = emit(self, course.emitters, fp, Some(t_before), at.t).await?;
            at.emitted_energy += energy;
            live += added;
        }
        Ok(live > 0)
    }
}

/// Steps `model` from where `at` stands until `until` (its steps counted from `at.step`),
/// advancing `at` (step, time and the energy accounts the guards compare with) step by step.
/// Blocks until the stretch is driven: [`drive_async`] on a native target.
pub fn drive<M: Model + ?Sized>(
    model: &mut M,
    at: &mut RunFrom,
    until: Until,
    course: &M::Course<'_>,
    hooks: &mut dyn Hooks<M>,
) -> Result<Driven<M::Row, M::Block>> {
    crate::gpu::context::finish(drive_async(model, at, until, course, hooks), "drive_async")
}

/// The driver loop itself, awaiting each step's report: a native run blocks on it
/// ([`drive`]), a web page awaits it, so that the browser maps the GPU's reports back
/// between steps.
pub async fn drive_async<M: Model + ?Sized>(
    model: &mut M,
    at: &mut RunFrom,
    until: Until,
    course: &M::Course<'_>,
    hooks: &mut dyn Hooks<M>,
) -> Result<Driven<M::Row, M::Block>> {
    let steps = until.steps;
    let mut driven = Driven::default();
    // A moving obstacle's pose needs the time each step starts at, known only once the step
    // before has been read, and an end time is known to be reached only then; emitters add
    // particles at that time: then steps run one at a time.
    let one_at_a_time = model.serial(course) || until.time.is_some();
    if steps == 0 {
        return Ok(driven);
    }
    model.begin(course, at).await?;
    model.place(at.t);
    model.submit()?;
    for i in 1..=steps {
        let k = at.step + 1;
        let last = i == steps;
        let wants_state = hooks.wants_state(k, last);
        // Step k + 1 runs while step k's report is read, unless step k's state is wanted or
        // particles may be added at its end.
        let pipelined = !wants_state && !one_at_a_time && !M::may_add_after(course, at.t);
        let ahead = !last && pipelined;
        if ahead {
            model.submit()?;
        }
        let block = model.read().await?;
        let t_before = at.t;
        at.step = k;
        at.t += M::dt(&block) as f64;
        let judged = model.row(course, &block, at, t_before).and_then(|row| {
            hooks.row(&row)?;
            let guards = hooks.guards(course, at);
            model.check(course, &block, &row, at, guards)?;
            Ok(row)
        });
        let row = match judged {
            Ok(row) => row,
            Err(e) => {
                // A front end that goes on after a diverged step (the viewer) must not find the
                // next step's report still in flight: read it before returning.
                if ahead {
                    model.read().await?;
                }
                return Err(e);
            }
        };
        driven.last = Some(row);
        driven.block = Some(block);
        // Its last row shows them all outside.
        if !model
            .settle(course, &block, at, t_before, pipelined)
            .await?
        {
            driven.emptied = true;
            break;
        }
        let reached = until.time.is_some_and(|end| at.t >= end);
        if hooks.stepped(model, at, wants_state)? == Flow::Stop || reached {
            break;
        }
        if !last && !pipelined {
            model.place(at.t);
            model.submit()?;
        }
    }
    Ok(driven)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::StatsBlock;
    use crate::cpu::interact::InteractParams;
    use crate::gpu::fluid::Snapshot;

    /// Hands out a scripted block per submitted step, as a GPU with two steps in flight does.
    struct Scripted {
        blocks: Vec<StatsBlock>,
        submitted: usize,
        queued: std::collections::VecDeque<StatsBlock>,
        read: Option<StatsBlock>,
        removed: u64,
    }

    impl Scripted {
        fn new(blocks: Vec<StatsBlock>) -> Self {
            Self {
                blocks,
                submitted: 0,
                queued: Default::default(),
                read: None,
                removed: 0,
            }
        }
    }

    /// `steps` steps of `backend` from the start, unjudged, without emitters; the loop's
    /// result and where the run stands.
    fn drive_scripted(
        backend: &mut Scripted,
        fp: &FluidParams,
        steps: u64,
    ) -> (Result<Driven<StepStats, StatsBlock>>, RunFrom) {
        let guards = Guards::unjudged(true);
        let emitters = Emitters::default();
        let course = Course {
            fp,
            guards: &guards,
            emitters: &emitters,
        };
        let mut at = RunFrom::default();
        let driven = drive(backend, &mut at, Until::steps(steps), &course, &mut NoHooks);
        (driven, at)
    }

    fn fluid_params() -> FluidParams {
        let cfg = crate::params::SphConfig::new(2, Default::default()).unwrap();
        crate::params::PhysicsConfig::default()
            .fluid_params(&cfg, glam::Vec3::ZERO, glam::Vec3::ONE, 0.5)
            .unwrap()
    }

    impl Backend for Scripted {
        fn step(&mut self) -> Result<()> {
            Backend::submit(self)
        }
        fn submit(&mut self) -> Result<()> {
            self.queued.push_back(self.blocks[self.submitted]);
            self.submitted += 1;
            Ok(())
        }
        fn read_stats(&mut self) -> Result<StatsBlock> {
            let block = self.queued.pop_front().expect("a submitted step");
            self.read = Some(block);
            Ok(block)
        }
        fn snapshot(&self) -> Result<Snapshot> {
            Ok(Snapshot {
                state: Default::default(),
                density: Vec::new(),
                dt: 0.0,
                solver: None,
            })
        }
        fn carry(&self) -> Result<crate::solver::Carry> {
            Ok(Default::default())
        }
        fn append(&mut self, _batch: &crate::emitter::Batch) -> Result<()> {
            Ok(())
        }
        fn probe(&mut self, p: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
            Ok(vec![0; p.len()])
        }
        // As a web page's GPU: the state can only be awaited.
        fn remove_outside(&mut self) -> Result<(u64, f64)> {
            Err(crate::Error::Map("a blocking removal".into()))
        }
        fn remove_outside_async(&mut self) -> crate::run::Pending<'_, (u64, f64)> {
            let block = self.read.expect("a step was read");
            self.removed += block.outside as u64;
            Box::pin(std::future::ready(Ok((block.outside as u64, 0.25))))
        }
        fn set_velocities(&mut self, _vel: &[glam::Vec3]) -> Result<()> {
            Ok(())
        }
        fn set_interaction(&mut self, _ip: Option<InteractParams>) {}
        fn interaction(&self) -> Option<&InteractParams> {
            None
        }
    }

    /// A front end that goes on after a diverged step (the viewer) finds nothing in flight: the
    /// step submitted ahead of the diverged one is read before the error returns.
    #[test]
    fn a_diverged_step_leaves_no_step_in_flight() {
        let good = StatsBlock {
            n: 10,
            dt: 1e-3,
            first_bad_id: u32::MAX,
            ..Default::default()
        };
        let bad = StatsBlock {
            non_finite: crate::core::stats::BAD_POSITION,
            first_bad_id: 3,
            ..good
        };
        let mut backend = Scripted::new(vec![good, bad, good, good]);
        let (e, at) = drive_scripted(&mut backend, &fluid_params(), 4);
        assert!(matches!(e, Err(crate::Error::Unstable(_))), "{e:?}");
        assert_eq!(at.step, 2, "the second step diverged");
        assert_eq!(backend.submitted, 3, "the third step was submitted ahead");
        assert!(backend.queued.is_empty(), "a block is left in flight");
    }

    /// Particles leave through an open side by the backend's awaited removal, the one a web
    /// page can run (its blocking form fails here, as it must in a page), each step's leavers
    /// and the energy they took counted.
    #[test]
    fn the_loop_awaits_the_removal_through_open_sides() {
        let block = |outside| StatsBlock {
            n: 10,
            dt: 1e-3,
            outside,
            first_bad_id: u32::MAX,
            ..Default::default()
        };
        let mut backend = Scripted::new(vec![block(0), block(2), block(1)]);
        let mut fp = fluid_params();
        fp.open = 1 << 1;
        let (driven, at) = drive_scripted(&mut backend, &fp, 3);
        driven.unwrap();
        assert_eq!(at.step, 3);
        assert_eq!(backend.removed, 3, "the leavers of steps 2 and 3");
        assert_eq!(at.removed_energy, 0.5, "two removals of 0.25 J");
    }
}
