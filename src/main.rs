//! The `gpu-sph` command line: parse flags, pick a front end, map errors to exit codes
//! (0 success, 1 verification failure, 2 bad usage, bad input or missing environment). The
//! flags and the front ends live in `gpu_sph::app`.

use std::process::ExitCode;

use gpu_sph::app::{self, Outcome, Parsed};

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, so any print to a reader that has gone (`gpu-sph … | head -1`)
    // panicked with a backtrace. A command-line tool ends quietly there, as `cat` does: with
    // the default action the process ends at its next write (128 + 13 in a shell's status).
    #[cfg(unix)]
    // SAFETY: the first call in main, before any thread exists; SIG_DFL is a valid action.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    // SIGINT and SIGTERM from here to the end: set-up stops at once, a run at a step boundary.
    if let Err(e) = app::install_signals() {
        eprintln!("gpu-sph: cannot handle SIGINT and SIGTERM ({e}): rerun, or report this");
        return ExitCode::from(2);
    }
    // The GL backend's probe logs an ERROR on machines without a GL driver even when Vulkan
    // serves (lavapipe): noise for a user, so it is off unless RUST_LOG asks for it. An
    // unknown WGPU_BACKEND name is said in the no-adapter line itself, not in wgpu's warnings.
    // Where the adapter lacks view formats (GL) the viewer draws its panel into an sRGB target
    // on purpose (viewer::target_format), which egui_wgpu would warn of on every run.
    env_logger::Builder::from_env(
        env_logger::Env::default()
            .default_filter_or("warn,wgpu_hal=off,wgpu_types=error,egui_wgpu::renderer=error"),
    )
    .init();
    let cli = match app::parse() {
        Parsed::Run(cli) => cli,
        Parsed::Help(text) => {
            print!("{text}");
            return ExitCode::SUCCESS;
        }
        Parsed::Usage(line) => {
            eprintln!("gpu-sph: {line}");
            if app::wants_json(None) {
                println!("{}", app::error_json("usage", &line, 2));
            }
            return ExitCode::from(2);
        }
    };
    match app::run(&cli) {
        Ok(Outcome::Done) => ExitCode::SUCCESS,
        Ok(Outcome::VerifyFailed) => ExitCode::from(1),
        Ok(Outcome::Interrupted(signal)) => ExitCode::from((128 + signal).clamp(0, 255) as u8),
        Err(e) => {
            eprintln!("gpu-sph: {}", app::one_line(&e.to_string()));
            if app::wants_json(Some(&cli)) {
                println!("{}", app::error_json("usage", &e.to_string(), 2));
            }
            ExitCode::from(2)
        }
    }
}
