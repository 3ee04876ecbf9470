//! The one driver loop every fluid front end steps through: headless runs and their resume, the
//! viewer (both paths), `--bench`'s whole runs. Each step it places moving obstacles, steps,
//! reads the statistics block, checks the guards, removes the particles that left through an
//! open side and adds those the emitters release; what differs between front ends (the
//! `--stats` rows, frames, checkpoints, the progress bar) is in their [`Hooks`].
//!
//! The loop keeps the GPU busy: step k + 1 is submitted before step k's 104-byte block is read,
//! unless the host must act between them (a frame or checkpoint of step k's state, a moving
//! obstacle placed at the time step k ends, emitters, an open side, an end time).

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

/// What does not change while a run is driven.
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

/// What a front end does around the shared loop. Every method has a default that does
/// nothing, so a front end names only what it adds.
pub trait Hooks {
    /// Whether the state at the end of step `k` will be read ([`Hooks::stepped`] reads it):
    /// the step after it is then not submitted before. `last` is the run's last step by count.
    fn wants_state(&mut self, _k: u64, _last: bool) -> bool {
        false
    }
    /// A step's row, before the guards judge it (so a `--stats` file shows the step that
    /// diverged).
    fn row(&mut self, _st: &StepStats) -> Result<()> {
        Ok(())
    }
    /// The guards to judge step `at.step` with (a front end may relax them, e.g. the viewer's
    /// energy check while the mouse does untallied work).
    fn guards(&mut self, course: &Course<'_>, _at: &mut RunFrom) -> Guards {
        *course.guards
    }
    /// After step `at.step` passed the guards and its removals and emissions are done;
    /// `wants_state` is what [`Hooks::wants_state`] said of it.
    fn stepped(
        &mut self,
        _backend: &mut dyn Backend,
        _at: &RunFrom,
        _wants_state: bool,
    ) -> Result<Flow> {
        Ok(Flow::Go)
    }
}

/// A front end that adds nothing to the loop.
pub struct NoHooks;

impl Hooks for NoHooks {}

/// How a driven stretch of steps ended.
#[derive(Clone, Copy, Debug, Default)]
pub struct Driven {
    /// The last step's row.
    pub last: Option<StepStats>,
    /// The last step's block.
    pub block: Option<StatsBlock>,
    /// Every particle left through the open sides (and no emitter added one): nothing is left
    /// to step.
    pub emptied: bool,
}

/// Adds the particles `emitters` release in (before, t] to `backend`; returns the energy
/// they bring in and how many.
fn emit(
    backend: &mut dyn Backend,
    emitters: &Emitters,
    fp: &FluidParams,
    before: Option<f64>,
    t: f64,
) -> Result<(f64, u64)> {
    let batch = emitters.between(before, t, |p| backend.probe(p))?;
    if batch.is_empty() {
        return Ok((0.0, 0));
    }
    backend.append(&batch)?;
    Ok((
        batch.energy(fp.mass, fp.gravity[1], fp.tank_min[1]),
        batch.pos.len() as u64,
    ))
}

/// Step `at.step`'s row (handed to the hooks before the guards judge it) and the guards'
/// verdict, with the energy accounts advanced.
fn judge(
    block: &StatsBlock,
    at: &mut RunFrom,
    course: &Course<'_>,
    hooks: &mut dyn Hooks,
) -> Result<StepStats> {
    let fp = course.fp;
    let st = step_stats(block, fp, at.step, at.t)?;
    hooks.row(&st)?;
    let guards = hooks.guards(course, at);
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
    )?;
    Ok(st)
}

/// Steps `backend` from where `at` stands until `until` (its steps counted from `at.step`),
/// advancing `at` (step, time and the energy accounts the guards compare with) step by step.
/// A fresh run (`at.step == 0`) first releases the emitters' layers of t = 0, whose energy is
/// in the first step's, the reference.
pub fn drive(
    backend: &mut dyn Backend,
    at: &mut RunFrom,
    until: Until,
    course: &Course<'_>,
    hooks: &mut dyn Hooks,
) -> Result<Driven> {
    let Course { fp, emitters, .. } = *course;
    let steps = until.steps;
    let mut driven = Driven::default();
    // A moving obstacle's pose needs the time each step starts at, known only once the step
    // before has been read, and an end time is known to be reached only then; emitters add
    // particles at that time: then steps run one at a time.
    // Particles leaving through an open side are removed before the next step.
    let one_at_a_time = backend.obstacles_move() || until.time.is_some() || fp.open != 0;
    if steps == 0 {
        return Ok(driven);
    }
    // A state at time t holds every layer that left by t (`crate::emitter`): a fresh run emits
    // those of t = 0 first; a resumed one has them.
    if at.step == 0 {
        emit(backend, emitters, fp, None, at.t)?;
    }
    backend.place_obstacles(at.t);
    backend.submit()?;
    for i in 1..=steps {
        let k = at.step + 1;
        let last = i == steps;
        let wants_state = hooks.wants_state(k, last);
        // Step k + 1 runs while step k's block is read, unless step k's state is wanted or
        // emitters may add particles at its end.
        let pipelined = !wants_state && !one_at_a_time && !emitters.active_after(at.t);
        let ahead = !last && pipelined;
        if ahead {
            backend.submit()?;
        }
        let block = backend.read_stats()?;
        let t_before = at.t;
        at.step = k;
        at.t += block.dt as f64;
        let judged = judge(&block, at, course, hooks);
        let st = match judged {
            Ok(st) => st,
            Err(e) => {
                // A front end that goes on after a diverged step (the viewer) must not find the
                // next step's block still in flight: read it before returning.
                if ahead {
                    backend.read_stats()?;
                }
                return Err(e);
            }
        };
        driven.last = Some(st);
        driven.block = Some(block);
        let mut live = block.n as u64;
        if fp.open != 0 && block.outside > 0 {
            let (gone, energy) = backend.remove_outside()?;
            at.removed_energy += energy;
            live -= gone;
        }
        if !pipelined {
            let (energy, added) = emit(backend, emitters, fp, Some(t_before), at.t)?;
            at.emitted_energy += energy;
            live += added;
        }
        // Its last row shows them all outside.
        if live == 0 {
            driven.emptied = true;
            break;
        }
        let reached = until.time.is_some_and(|end| at.t >= end);
        if hooks.stepped(backend, at, wants_state)? == Flow::Stop || reached {
            break;
        }
        if !last && !pipelined {
            backend.place_obstacles(at.t);
            backend.submit()?;
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
    }

    impl Backend for Scripted {
        fn step(&mut self) -> Result<()> {
            self.submit()
        }
        fn submit(&mut self) -> Result<()> {
            self.queued.push_back(self.blocks[self.submitted]);
            self.submitted += 1;
            Ok(())
        }
        fn read_stats(&mut self) -> Result<StatsBlock> {
            Ok(self.queued.pop_front().expect("a submitted step"))
        }
        fn snapshot(&self) -> Result<Snapshot> {
            Ok(Snapshot {
                state: Default::default(),
                density: Vec::new(),
                dt: 0.0,
                dfsph: None,
            })
        }
        fn carry(&self) -> Result<Option<crate::cpu::dfsph::DfsphCarry>> {
            Ok(None)
        }
        fn append(&mut self, _batch: &crate::emitter::Batch) -> Result<()> {
            Ok(())
        }
        fn probe(&mut self, p: &[crate::emitter::Probe]) -> Result<Vec<u32>> {
            Ok(vec![0; p.len()])
        }
        fn remove_outside(&mut self) -> Result<(u64, f64)> {
            Ok((0, 0.0))
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
        let mut backend = Scripted {
            blocks: vec![good, bad, good, good],
            submitted: 0,
            queued: Default::default(),
        };
        let cfg = crate::params::SphConfig::new(2, Default::default()).unwrap();
        let fp = crate::params::PhysicsConfig::default()
            .fluid_params(&cfg, glam::Vec3::ZERO, glam::Vec3::ONE, 0.5)
            .unwrap();
        let guards = Guards::unjudged(true);
        let emitters = Emitters::default();
        let course = Course {
            fp: &fp,
            guards: &guards,
            emitters: &emitters,
        };
        let mut at = RunFrom::default();
        let e = drive(
            &mut backend,
            &mut at,
            Until::steps(4),
            &course,
            &mut NoHooks,
        );
        assert!(matches!(e, Err(crate::Error::Unstable(_))), "{e:?}");
        assert_eq!(at.step, 2, "the second step diverged");
        assert_eq!(backend.submitted, 3, "the third step was submitted ahead");
        assert!(backend.queued.is_empty(), "a block is left in flight");
    }
}
