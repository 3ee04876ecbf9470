//! The headless run's progress: a bar with the time left on a terminal, a line every few
//! seconds where stderr is not one (a log, CI, `nohup`), so a long run never runs silent.

use std::sync::Mutex;
use web_time::{Duration, Instant};

/// Where a run stands, out of where it stops: `--steps K`, `--end-time T`, or both (the first
/// reached ends it).
pub struct Progress {
    bar: indicatif::ProgressBar,
    /// When stderr is not a terminal: when the last line was printed, and how often one is.
    lines: Option<(Mutex<Instant>, Duration)>,
    /// Steps to run (`u64::MAX`: only the end time stops the run).
    steps: u64,
    end: Option<f64>,
    /// The step and time the run started from (a resumed run's checkpoint).
    from: (u64, f64),
    start: Instant,
}

/// How often a line is printed where there is no terminal: every 5 s, or every
/// `GPU_SPH_PROGRESS_SECONDS` (a log that wants fewer lines, a test that wants one soon).
fn line_every() -> Duration {
    std::env::var("GPU_SPH_PROGRESS_SECONDS")
        .ok()
        .and_then(|v| v.parse::<f64>().ok())
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(Duration::from_secs(5))
}

/// Ticks of the bar: it shows a fraction, of steps or of simulated time.
const TICKS: u64 = 1000;

impl Progress {
    /// A progress for a run of `steps` steps and/or until `end` s, from step `from.0` at time
    /// `from.1`; drawn in `multi` on a terminal, as lines otherwise.
    pub fn new(
        multi: &indicatif::MultiProgress,
        steps: u64,
        end: Option<f64>,
        from: (u64, f64),
    ) -> Self {
        let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
        let bar = multi.add(indicatif::ProgressBar::new(TICKS));
        if let Ok(style) = indicatif::ProgressStyle::with_template("steps    {bar:40} {msg}") {
            bar.set_style(style);
        }
        Self {
            bar,
            lines: (!terminal).then(|| (Mutex::new(Instant::now()), line_every())),
            steps,
            end,
            from,
            start: Instant::now(),
        }
    }

    /// A progress that shows nothing (for callers of the library that draw their own).
    pub fn hidden() -> Self {
        Self {
            bar: indicatif::ProgressBar::hidden(),
            lines: None,
            steps: 0,
            end: None,
            from: (0, 0.0),
            start: Instant::now(),
        }
    }

    /// The fraction done after step `k` at time `t`: of the steps or of the simulated time,
    /// whichever is nearer its end.
    pub fn fraction(&self, k: u64, t: f64) -> f64 {
        let by_steps = if self.steps == u64::MAX || self.steps == 0 {
            0.0
        } else {
            k.saturating_sub(self.from.0) as f64 / self.steps as f64
        };
        let by_time = match self.end {
            Some(end) if end > self.from.1 => (t - self.from.1) / (end - self.from.1),
            _ => 0.0,
        };
        by_steps.max(by_time).clamp(0.0, 1.0)
    }

    /// The text of the run's state after step `k` at time `t`: the step, the time, the share
    /// done and an estimate of the wall time left (from the rate so far).
    pub fn describe(&self, k: u64, t: f64, elapsed: Duration) -> String {
        let f = self.fraction(k, t);
        let of_steps = if self.steps == u64::MAX {
            String::new()
        } else {
            format!(" of {}", self.from.0 + self.steps)
        };
        let of_time = self.end.map(|e| format!(" of {e}")).unwrap_or_default();
        let left = if f > 0.0 {
            format!(
                ", about {} left",
                human(elapsed.as_secs_f64() * (1.0 - f) / f)
            )
        } else {
            String::new()
        };
        format!(
            "step {k}{of_steps}, t = {t:.4}{of_time} s, {:.0}%{left}",
            100.0 * f
        )
    }

    /// Step `k` is done at time `t`.
    pub fn advance(&self, k: u64, t: f64) {
        let elapsed = self.start.elapsed();
        self.bar
            .set_position((self.fraction(k, t) * TICKS as f64) as u64);
        if let Some((last, every)) = &self.lines {
            let mut last = last.lock().unwrap_or_else(|e| e.into_inner());
            if last.elapsed() >= *every {
                *last = Instant::now();
                eprintln!("gpu-sph: {}", self.describe(k, t, elapsed));
            }
        } else if !self.bar.is_hidden() {
            self.bar.set_message(self.describe(k, t, elapsed));
        }
    }

    /// Clears the bar at the end of the run.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Where the bars are drawn: stderr on a terminal, nowhere otherwise (lines take their place).
pub fn bars() -> indicatif::MultiProgress {
    if std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        indicatif::MultiProgress::new()
    } else {
        indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden())
    }
}

/// A duration in seconds as people say it: `42 s`, `3 min 5 s`, `2 h 10 min`.
pub fn human(seconds: f64) -> String {
    let s = seconds.max(0.0).round() as u64;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_done_is_of_whichever_end_comes_first_and_the_estimate_follows_the_rate() {
        let multi =
            indicatif::MultiProgress::with_draw_target(indicatif::ProgressDrawTarget::hidden());
        // 400 steps or 0.5 s: after 100 steps at t = 0.25 s half the time is done.
        let p = Progress::new(&multi, 400, Some(0.5), (0, 0.0));
        assert_eq!(p.fraction(100, 0.25), 0.5);
        assert_eq!(
            p.describe(100, 0.25, Duration::from_secs(30)),
            "step 100 of 400, t = 0.2500 of 0.5 s, 50%, about 30 s left"
        );
        // Only an end time, resumed at step 50, t = 0.1 s.
        let p = Progress::new(&multi, u64::MAX, Some(1.1), (50, 0.1));
        assert_eq!(
            p.describe(150, 0.35, Duration::from_secs(200)),
            "step 150, t = 0.3500 of 1.1 s, 25%, about 10 min 0 s left"
        );
        assert_eq!(human(7300.0), "2 h 1 min");
    }
}
