//! The CPU path's stage clock for `--bench --steps`: while [`time_stages`] runs a step on this
//! thread, every stage wrapped in [`timed`] records its wall time (a stage run several times, as
//! the DFSPH solve passes are, once per run). Outside it nothing is recorded and `timed` costs
//! one thread-local check.

use std::cell::RefCell;
use web_time::Instant;

use crate::core::Stage;
use crate::grid::GridTimings;

std::thread_local! {
    static CLOCK: RefCell<Option<Vec<(Stage, f64)>>> = const { RefCell::new(None) };
}

fn record(stage: Stage, ms: f64) {
    CLOCK.with(|c| {
        if let Some(v) = c.borrow_mut().as_mut() {
            v.push((stage, ms));
        }
    });
}

/// Runs `f` and records its wall time under `stage` when [`time_stages`] is collecting.
pub fn timed<T>(stage: Stage, f: impl FnOnce() -> T) -> T {
    if !CLOCK.with(|c| c.borrow().is_some()) {
        return f();
    }
    let t = Instant::now();
    let out = f();
    record(stage, t.elapsed().as_secs_f64() * 1e3);
    out
}

/// Records a grid build's stage times (from [`super::Grid::build_timed`]).
pub fn record_grid(gt: &GridTimings) {
    record(Stage::Hash, gt.hash.as_secs_f64() * 1e3);
    record(Stage::Scan, gt.scan.as_secs_f64() * 1e3);
    record(Stage::Scatter, gt.scatter.as_secs_f64() * 1e3);
}

/// Runs `f` (steps on this thread) and returns the wall time of every stage it ran, in order.
pub fn time_stages<T>(f: impl FnOnce() -> T) -> (T, Vec<(Stage, f64)>) {
    CLOCK.with(|c| *c.borrow_mut() = Some(Vec::new()));
    let out = f();
    let times = CLOCK.with(|c| c.borrow_mut().take()).unwrap_or_default();
    (out, times)
}
