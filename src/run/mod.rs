//! Runs: the two paths behind one [`Backend`] trait (`backend.rs`), what each step's statistics
//! block says and when it stops a run (`guards.rs`), the one driver loop every fluid front end
//! steps through (`drive.rs`), the headless run on it (`headless.rs`) and what that writes
//! (`output.rs`), and the signals that stop it (`signals.rs`). Children import their siblings, never this file.

mod backend;
mod drive;
mod guards;
mod headless;
mod output;
mod progress;
pub mod signals;

pub use crate::core::RunFrom;
pub use backend::*;
pub use drive::*;
pub use guards::*;
pub use headless::*;
pub use output::*;
pub use progress::*;
