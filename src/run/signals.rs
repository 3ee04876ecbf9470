//! SIGINT and SIGTERM, honoured from the process's first instruction to its last
//! (docs/usage.md, "Exit codes, signals and environment").
//!
//! One thread waits for the signals from the start of `main`, so a set-up that takes long (a
//! large scene, a file being read) stops on the first signal as well as a run does. What a
//! signal does depends on the phase the process is in:
//! - **before a run writes anything** (parsing, checks, set-up, `--verify`, `--bench`, the
//!   viewer): the process ends at once with one line, exit 128 + the signal;
//! - **while a run steps** ([`stepping`]): the first signal asks the run to stop at its next step
//!   boundary, where it writes the checkpoint it promises and ends with 128 + the signal (the
//!   drivers read [`stepping`]'s flag); a second signal ends the process at once, after waiting
//!   for a checkpoint under way to be complete ([`writing`]), with one line naming the last
//!   complete checkpoint, exit 128 + the signal;
//! - **after the last step** (final outputs being written): the outputs are completed and the
//!   process ends with 128 + the signal ([`interrupted_after_run`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Where the process stands, for the signal thread.
const SETTING_UP: u8 = 0;
const STEPPING: u8 = 1;
const FINISHING: u8 = 2;

struct Shared {
    phase: AtomicU8,
    /// The first signal's number once one came (0 before).
    stop: Arc<AtomicUsize>,
    /// The last complete checkpoint; held while one is written, so a second signal waits.
    last: Mutex<Option<PathBuf>>,
}

static SHARED: OnceLock<Shared> = OnceLock::new();

fn shared() -> &'static Shared {
    SHARED.get_or_init(|| Shared {
        phase: AtomicU8::new(SETTING_UP),
        stop: Arc::new(AtomicUsize::new(0)),
        last: Mutex::new(None),
    })
}

/// The signal's name in messages.
pub fn signal_name(signal: usize) -> String {
    #[cfg(unix)]
    match signal as i32 {
        signal_hook::consts::SIGINT => return "SIGINT".into(),
        signal_hook::consts::SIGTERM => return "SIGTERM".into(),
        _ => {}
    }
    format!("signal {signal}")
}

/// Where there are no signals (a web page): nothing to handle.
#[cfg(not(unix))]
pub fn install() -> std::io::Result<()> {
    Ok(())
}

/// Starts the thread that handles SIGINT and SIGTERM: the first call in `main`.
#[cfg(unix)]
pub fn install() -> std::io::Result<()> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])?;
    let state = shared();
    std::thread::Builder::new()
        .name("signals".into())
        // The thread only waits and prints: a small stack keeps the address space a run
        // under a memory limit needs (tests/suite/faults.rs).
        .stack_size(64 * 1024)
        .spawn(move || {
            for signal in signals.forever() {
                handle(state, signal as usize);
            }
        })?;
    Ok(())
}

#[cfg(unix)]
fn handle(state: &Shared, signal: usize) {
    let name = signal_name(signal);
    let first = state
        .stop
        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok();
    match state.phase.load(Ordering::SeqCst) {
        STEPPING | FINISHING if first => {
            eprintln!(
                "gpu-sph: {name}: stopping after the step under way (a second {name} stops at once, without a new checkpoint)"
            );
            return;
        }
        STEPPING | FINISHING => {
            // A checkpoint being written holds the lock: it is complete (renamed into place)
            // before the process ends, so the file named is whole.
            let last = state.last.lock().unwrap_or_else(|e| e.into_inner());
            match last.as_ref() {
                Some(p) => eprintln!(
                    "gpu-sph: second {name}: stopped at once; the last complete checkpoint is {}",
                    p.display()
                ),
                None => eprintln!(
                    "gpu-sph: second {name}: stopped at once; the run wrote no checkpoint"
                ),
            }
        }
        _ => eprintln!("gpu-sph: {name}: stopped before the run wrote anything"),
    }
    std::process::exit(128 + signal as i32);
}

/// Enters the stepping phase: from here a first signal stops the run at a step boundary.
/// Returns the flag the run's drivers read (the signal's number, 0 while none came); a
/// signal that came during set-up already ended the process.
pub fn stepping() -> Arc<AtomicUsize> {
    let state = shared();
    state.phase.store(STEPPING, Ordering::SeqCst);
    state.stop.clone()
}

/// Enters the finishing phase (the steps are over, the final outputs are being written).
pub fn finishing() {
    shared().phase.store(FINISHING, Ordering::SeqCst);
}

/// The signal that came while the run stepped or finished, if one did: the run is complete,
/// its outputs too, and the process ends with 128 + this.
pub fn interrupted_after_run() -> Option<usize> {
    Some(shared().stop.load(Ordering::SeqCst)).filter(|&s| s != 0)
}

/// Holds a second signal off while a checkpoint is written: call before writing one, then
/// [`written`] with the guard and the file.
pub fn writing() -> MutexGuard<'static, Option<PathBuf>> {
    shared().last.lock().unwrap_or_else(|e| e.into_inner())
}

/// Records `path` as the last complete checkpoint and lets a second signal through.
pub fn written(mut guard: MutexGuard<'static, Option<PathBuf>>, path: &Path) {
    *guard = Some(path.to_path_buf());
}
