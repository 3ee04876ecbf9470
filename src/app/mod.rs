//! The application layer: the command line and the front ends it dispatches to. `main.rs`
//! parses ([`parse`]), runs ([`run`]) and maps the [`Outcome`] to an exit code; everything a
//! front end does between the two lives here.

mod cli;
mod environment;
mod fluid;
mod grains;
pub mod session;
mod shared;

use clap::{CommandFactory, FromArgMatches};

pub use cli::Cli;

use crate::Error;

/// How a run ended, short of an error.
pub enum Outcome {
    /// It did what was asked.
    Done,
    /// `--verify` found a stage outside the tolerance.
    VerifyFailed,
    /// A signal stopped the run after a checkpoint: exit 128 + the signal's number.
    Interrupted(i32),
}

/// What the command line asks for.
pub enum Parsed {
    /// A run, with a scene file's settings merged under the flags.
    Run(Box<Cli>),
    /// `--help` or `--version`: the text to print.
    Help(String),
    /// A usage error or a bad scene file, in one line.
    Usage(String),
}

/// Parses the process's command line (and the scene file `--scene` names).
pub fn parse() -> Parsed {
    parse_from(std::env::args_os().collect(), None)
}

/// Parses `args` (the program's name first) as the command line, with `preloaded` standing for
/// the scene file (a scene given as data, as the Python package's dicts are, named by its
/// `SceneArg::File` path in messages).
pub(crate) fn parse_from(
    args: Vec<std::ffi::OsString>,
    preloaded: Option<(std::path::PathBuf, crate::scene_file::SceneFile)>,
) -> Parsed {
    let parsed = Cli::command()
        .try_get_matches_from(&args)
        .and_then(|m| Cli::from_arg_matches(&m).map(|cli| (cli, m)));
    let cli = match parsed {
        Ok((mut cli, m)) => {
            // Arguments only: the derive also registers the struct as a group.
            cli.given = Cli::command()
                .get_arguments()
                .map(|a| a.get_id().as_str())
                .filter(|id| m.value_source(id) == Some(clap::parser::ValueSource::CommandLine))
                .map(String::from)
                .collect();
            cli
        }
        Err(e) => {
            use clap::error::ErrorKind::*;
            if matches!(
                e.kind(),
                DisplayHelp | DisplayVersion | DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                return Parsed::Help(e.render().to_string());
            }
            return Parsed::Usage(cli::one_line_clap_error(&e));
        }
    };
    let mut cli = match cli::with_scene_file(cli, &args, preloaded) {
        Ok(cli) => cli,
        Err(e) => return Parsed::Usage(one_line(&e.to_string())),
    };
    // An end time alone runs until it: the step count is then only a cap.
    if cli.end_time.is_some() && cli.steps == 0 {
        cli.steps = u64::MAX;
    }
    Parsed::Run(Box::new(cli))
}

/// Runs what the flags ask for: the viewer, a headless run, `--verify`, `--bench`, grains.
pub fn run(cli: &Cli) -> Result<Outcome, Error> {
    run_flags(cli).map_err(|e| cli::attribute_to_scene_file(cli, e))
}

fn run_flags(cli: &Cli) -> Result<Outcome, Error> {
    environment::check()?;
    cli::check_stats_path(cli)?;
    // `--print-scene` prints a fluid scene whatever the model.
    let outcome = if cli.model == cli::Model::Grains && cli.print_scene.is_none() {
        grains::grains(cli)
    } else {
        fluid::run(cli)
    }?;
    // A signal after the last step: the run and its outputs are complete, and the exit status
    // still says that a signal came.
    match (outcome, crate::run::signals::interrupted_after_run()) {
        (Outcome::Done, Some(signal)) => {
            eprintln!(
                "gpu-sph: {} came after the last step: the run and its outputs are complete",
                crate::run::signals::signal_name(signal)
            );
            Ok(Outcome::Interrupted(signal as i32))
        }
        (outcome, _) => Ok(outcome),
    }
}

/// Starts handling SIGINT and SIGTERM ([`crate::run::signals`]): the first call of `main`.
pub fn install_signals() -> std::io::Result<()> {
    crate::run::signals::install()
}

/// Whether a run's failure is said as a JSON object on stdout as well (`--json`, beside the
/// line on stderr): the parsed flags where there are some, else the command line's words.
pub fn wants_json(cli: Option<&Cli>) -> bool {
    cli.map_or_else(|| std::env::args().any(|a| a == "--json"), |c| c.json)
}

/// A failure as `--json` prints it: `{"error": kind, "message": the one-line message, "exit":
/// the exit status}`, so a caller reading stdout learns why as well as that. Kinds: `usage`
/// (exit 2: bad flags, input or environment) and `diverged` (exit 1: a check stopped the run).
pub fn error_json(kind: &str, message: &str, exit: u8) -> String {
    serde_json::json!({ "error": kind, "message": one_line(message), "exit": exit }).to_string()
}

/// Says a diverged run's line on stderr, and with `--json` its JSON object on stdout (exit 1).
pub(crate) fn say_diverged(cli: &Cli, msg: &str) {
    eprintln!("gpu-sph: {msg}");
    if cli.json {
        println!("{}", error_json("diverged", msg, 1));
    }
}

/// `msg` on one line: its whitespace runs joined by single spaces.
pub fn one_line(msg: &str) -> String {
    msg.split_whitespace().collect::<Vec<_>>().join(" ")
}
