//! The library's one error type. Every variant's message is a single line that names the fix.

use thiserror::Error;

/// Everything that can go wrong in gpu-sph, from user input to the GPU device.
#[derive(Debug, Error)]
pub enum Error {
    /// A user-supplied value is out of range (bad flag value, bad particle data).
    #[error("{0}")]
    InvalidInput(String),
    /// A particle file could not be read or parsed.
    #[error("{path}: {message}")]
    File {
        /// The file that failed.
        path: String,
        /// What is wrong, including the line or element where known.
        message: String,
    },
    /// No GPU adapter could be found or the device request failed.
    #[error(
        "{0}; install a Vulkan driver (on Debian/Ubuntu without a GPU: apt-get install mesa-vulkan-drivers libvulkan1) or pass --cpu"
    )]
    NoAdapter(String),
    /// The device was created but refused the request.
    #[error("GPU device request failed: {0}")]
    Device(String),
    /// The requested particle count or table size does not fit the adapter's limits.
    #[error("{0}")]
    LimitExceeded(String),
    /// Mapping a readback buffer failed.
    #[error("GPU readback failed: {0}")]
    Map(String),
    /// The simulation produced a non-finite value or lost a particle (exit code 1).
    #[error("{0}")]
    Unstable(String),
    /// No display to open a window on (exit code 2).
    #[error("{0}")]
    NoDisplay(String),
    /// The GPU or the host ran out of memory.
    #[error(
        "out of memory: {0}; use fewer particles (-n), a smaller --table-size, or a machine with more memory"
    )]
    OutOfMemory(String),
    /// The GPU device was lost (driver reset, removal, or destroyed).
    #[error("the GPU device was lost ({0})")]
    DeviceLost(String),
    /// A run under way failed for a reason outside the simulation (device loss, out of
    /// memory); the message names the last checkpoint (exit code 1).
    #[error("{0}")]
    RunFailed(String),
    /// A signal ended the run after a checkpoint (exit code 128 + the signal's number).
    #[error("{message}")]
    Interrupted {
        /// The line to print, naming the checkpoint.
        message: String,
        /// The signal's number.
        signal: i32,
    },
    /// wgpu reported a validation or out-of-memory error inside an error scope.
    #[error("GPU validation error: {0}")]
    Validation(String),
}

/// Shorthand for results carrying [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// Builds an [`Error::InvalidInput`] from anything printable.
    pub fn input(message: impl Into<String>) -> Self {
        Self::InvalidInput(message.into())
    }

    /// Builds an [`Error::File`].
    pub fn file(path: impl AsRef<std::path::Path>, message: impl Into<String>) -> Self {
        Self::File {
            path: path.as_ref().display().to_string(),
            message: message.into(),
        }
    }
}
