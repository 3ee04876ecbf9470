//! The headless run: the driver loop ([`super::drive`]) with `--stats` rows, frames,
//! surfaces, checkpoints, a progress bar and the signals that stop a run with a checkpoint.

use std::path::PathBuf;

use crate::core::{Particles, RunFrom};
use crate::emitter::Emitters;
use crate::gpu::fluid::Snapshot;
use crate::params::FluidParams;
use crate::{Error, Result};

use super::backend::Backend;
use super::drive::{Course, Flow, Hooks, Until, drive};
use super::guards::{Guards, StepStats, check_start};
use super::output::{Checkpointing, Outputs, write_frame};
use super::signals::{self, signal_name};

/// A headless run's additions to the loop.
struct Headless<'a, 'p> {
    out: Outputs<'a>,
    /// The fluid's parameters (a frame's pressure is its density's).
    fp: FluidParams,
    progress: &'p super::progress::Progress,
    /// Whether the final state is wanted (`--output`).
    want_final: bool,
    /// The last state read, with its step.
    snap: Option<(u64, Snapshot)>,
    /// The last checkpoint written.
    latest: Option<PathBuf>,
    /// The signal seen before the step under way, if any: it ends the run after that step.
    stop: Option<usize>,
    /// Whether the step under way ends with a checkpoint (on schedule, or for `stop`).
    due: bool,
    /// DFSPH: the constant-density solve's cap and tolerance, and its steps that ended there.
    capped: Option<Capped>,
}

/// The steps whose solves stopped at their iteration cap with their mean residual above their
/// tolerance (the statistics' `stopped_v`, `stopped_d`): the run went on at a density error
/// the user did not ask for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Capped {
    /// Steps in the run.
    pub steps: u64,
    /// Of them, those whose divergence-free and constant-density solves stopped short at
    /// `--max-iterations`.
    pub capped: [u64; 2],
    /// Those that stopped short at the step's budget, below `--max-iterations`: the most
    /// iterations the steps before ran plus a margin
    /// ([`crate::solver::dfsph::IterationBudget`]), which trails a need that grows faster.
    pub trailed: [u64; 2],
    /// The largest mean residual each left.
    pub worst: [f64; 2],
    /// The most iterations of a solve (`--max-iterations`).
    pub cap: u32,
    /// The tolerances (η_v, η).
    pub eta: [f64; 2],
}

impl Capped {
    /// Counts a step's row.
    pub fn count(&mut self, st: &StepStats) {
        self.steps += 1;
        let solves = [
            (st.stopped_v, st.residual_v, st.iterations_v),
            (st.stopped_d, st.residual_d, st.iterations_d),
        ];
        for (k, (stopped, r, iterations)) in solves.into_iter().enumerate() {
            if stopped {
                if iterations >= self.cap {
                    self.capped[k] += 1;
                } else {
                    self.trailed[k] += 1;
                }
                self.worst[k] = self.worst[k].max(r);
            }
        }
    }

    /// One line naming the cause and the fix, where a step's solve stopped short.
    pub fn warning(&self) -> Option<String> {
        let names = ["divergence-free", "constant-density"];
        let mut parts = Vec::new();
        for k in (0..2).filter(|&k| self.capped[k] + self.trailed[k] > 0) {
            let mut how = Vec::new();
            if self.capped[k] > 0 {
                how.push(format!(
                    "at its iteration cap (--max-iterations {}) in {}",
                    self.cap, self.capped[k]
                ));
            }
            if self.trailed[k] > 0 {
                how.push(format!(
                    "at its step's budget (twice the most iterations of the steps before, at least {} more) while its need grew, in {}",
                    crate::solver::dfsph::ITERATION_MARGIN,
                    self.trailed[k]
                ));
            }
            parts.push(format!(
                "the {} solve stopped short of its tolerance ({:.3}%) {} of {} steps (mean residual up to {:.3}%)",
                names[k],
                100.0 * self.eta[k],
                how.join(" and "),
                self.steps,
                100.0 * self.worst[k]
            ));
        }
        let fix = if self.capped.iter().sum::<u64>() > 0 {
            format!(
                "raise --max-iterations (now {}), or shorten the step with --max-dt",
                self.cap
            )
        } else {
            "shorten the step with --max-dt so the need grows more slowly".to_string()
        };
        (!parts.is_empty()).then(|| format!("{}: {fix}", parts.join("; ")))
    }
}

impl<B: Backend + ?Sized> Hooks<B> for Headless<'_, '_> {
    fn wants_state(&mut self, k: u64, last: bool) -> bool {
        let ck = self.out.checkpoints.as_ref();
        self.stop = ck.and_then(Checkpointing::stop_signal);
        self.due = ck.is_some_and(|c| c.every > 0 && k % c.every == 0) || self.stop.is_some();
        self.out.wants_frame(k) || (last && self.want_final) || self.due
    }

    fn row(&mut self, st: &StepStats) -> Result<()> {
        if let Some(c) = &mut self.capped {
            c.count(st);
        }
        if let Some(o) = self.out.stats.as_deref_mut() {
            o.write_all(st.csv_line().as_bytes())
                .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
        }
        Ok(())
    }

    fn stepped(&mut self, backend: &mut B, at: &RunFrom, wants_state: bool) -> Result<Flow> {
        let (k, t) = (at.step, at.t);
        self.progress.advance(k, t);
        if !wants_state {
            return Ok(Flow::Go);
        }
        let s = backend.snapshot()?;
        write_frame(&mut self.out, k, t, &s, &self.fp)?;
        let (stop, due) = (self.stop, self.due);
        if let Some(c) = self.out.checkpoints.as_ref().filter(|_| due) {
            // The rows up to the checkpoint's step are on disk before it is: a resumed run
            // continues a stats file only from its checkpoint's own row.
            if let Some(o) = self.out.stats.as_deref_mut() {
                o.flush()
                    .map_err(|e| Error::input(format!("cannot write --stats: {e}")))?;
            }
            let guard = signals::writing();
            let path = c
                .template
                .at(s.clone(), backend.carry()?, at)
                .write(&c.dir)?;
            signals::written(guard, &path);
            self.latest = Some(path.clone());
            if let Some(signal) = stop {
                return Err(Error::Interrupted {
                    message: format!(
                        "{} after step {k} (t = {t:.6} s): wrote {}; continue with: gpu-sph --headless --resume {}{}",
                        signal_name(signal),
                        path.display(),
                        path.display(),
                        (c.resume_flags)(k)
                    ),
                    signal: signal as i32,
                });
            }
        }
        self.snap = Some((k, s));
        Ok(Flow::Go)
    }
}

/// Runs `steps` steps from `start` (the state the backend holds), checking every step from
/// its statistics block; writes stats rows, frames, surfaces and checkpoints if asked. The
/// state is read back only for a frame or a checkpoint, and at the end when `want_final` (for
/// `--output`); otherwise the next step runs while the host reads the last one's block. Step
/// numbers (rows, frames, checkpoints) continue from `from`. Returns the final snapshot (if
/// read) and the last statistics. A signal ends the run after the step under way, with a
/// checkpoint, as [`Error::Interrupted`]; an error after a checkpoint names it. With DFSPH's
/// `cap` (its most iterations and its tolerances η_v, η), also counts the steps whose solves
/// stopped short of them ([`Capped`]; `None` without one).
#[allow(clippy::too_many_arguments)]
pub fn run(
    backend: &mut dyn Backend,
    start: &Particles,
    fp: &FluidParams,
    guards: &Guards,
    from: &RunFrom,
    until: Until,
    want_final: bool,
    emitters: &Emitters,
    out: Outputs<'_>,
    progress: &super::progress::Progress,
    cap: Option<(u32, [f64; 2])>,
) -> Result<(Option<Snapshot>, Option<StepStats>, Option<Capped>)> {
    check_start(start, fp)?;
    let mut out = out;
    if from.step == 0 && out.wants_frame(0) {
        write_frame(&mut out, 0, from.t, &backend.snapshot()?, fp)?;
    }
    let mut hooks = Headless {
        out,
        fp: *fp,
        progress,
        want_final,
        snap: None,
        latest: None,
        stop: None,
        due: false,
        capped: cap.map(|(cap, eta)| Capped {
            cap,
            eta,
            ..Default::default()
        }),
    };
    let mut at = *from;
    let course = Course {
        fp,
        guards,
        emitters,
    };
    let result = drive(backend, &mut at, until, &course, &mut hooks).and_then(|driven| {
        let snap = match (want_final, driven.emptied, hooks.snap.take()) {
            (false, _, _) => None,
            (true, true, _) => Some(Snapshot {
                state: Particles::default(),
                density: Vec::new(),
                dt: driven.block.map_or(0.0, |b| b.dt),
                solver: None,
            }),
            // The state read after the last step taken.
            (true, false, Some((k, s))) if k == at.step => Some(s),
            (true, false, _) => Some(backend.snapshot()?),
        };
        Ok((snap, driven.last, hooks.capped))
    });
    let latest = hooks.latest;
    let resume = |p: &Option<PathBuf>| match p {
        Some(p) => format!(
            "continue from the last checkpoint with --resume {}",
            p.display()
        ),
        None => "no checkpoint was written yet (--checkpoint-every K writes them)".into(),
    };
    match result {
        Err(Error::Unstable(m)) => Err(Error::Unstable(match &latest {
            Some(p) => format!(
                "{m} (the last checkpoint, {}, holds the run before it diverged)",
                p.display()
            ),
            None => m,
        })),
        // Faults outside the simulation end a run under way with exit 1 and where to go on.
        Err(
            e @ (Error::DeviceLost(_)
            | Error::OutOfMemory(_)
            | Error::Validation(_)
            | Error::Map(_)
            | Error::Device(_)),
        ) => Err(Error::RunFailed(format!("{e}; {}", resume(&latest)))),
        r => r,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(iterations_d: u32, residual_d: f64) -> StepStats {
        let mut st = StepStats {
            iterations_d,
            residual_d,
            ..Default::default()
        };
        st.judge_solves([0.0, 1e-4]);
        st
    }

    /// A stop at `--max-iterations` asks for more iterations; a stop below it, at the step's
    /// budget, does not (more would not lift it) and names the step instead; none, no line.
    #[test]
    fn the_summary_tells_a_stop_at_the_cap_from_one_at_the_budget() {
        let fresh = || Capped {
            cap: 100,
            eta: [1e-3, 1e-4],
            ..Default::default()
        };
        let mut quiet = fresh();
        quiet.count(&row(30, 0.9e-4));
        assert_eq!(quiet.warning(), None);
        let mut budget = fresh();
        budget.count(&row(13, 1.01e-4));
        budget.count(&row(15, 0.99e-4));
        let line = budget.warning().unwrap();
        assert!(
            line.contains("at its step's budget") && line.contains("in 1 of 2 steps"),
            "{line}"
        );
        assert!(
            !line.contains("raise --max-iterations") && line.contains("--max-dt"),
            "{line}"
        );
        let mut cap = fresh();
        cap.count(&row(100, 4e-4));
        let line = cap.warning().unwrap();
        assert!(
            line.contains("(--max-iterations 100) in 1 of 1 steps"),
            "{line}"
        );
        assert!(
            line.contains("raise --max-iterations (now 100)") && line.contains("0.040%"),
            "{line}"
        );
    }
}
