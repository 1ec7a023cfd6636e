//! The one error type of the core. Every message names the offending argument (or `file:line`)
//! and says what would be accepted, so the binding can pass it to Python unchanged.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FusionError {
    /// An argument has a value outside what is accepted.
    InvalidArgument(String),
    /// A malformed input file: `path:line: message` (line 0 when the problem is the file as a whole).
    Input { path: String, line: u64, message: String },
    /// The operating system refused to read or write a file.
    Io { path: String, message: String },
    /// The work was stopped from outside (a signal) before it finished; nothing was written.
    Interrupted,
}

impl FusionError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidArgument(message.into())
    }

    #[must_use]
    pub fn input(path: &str, line: u64, message: impl Into<String>) -> Self {
        Self::Input { path: path.to_owned(), line, message: message.into() }
    }

    #[must_use]
    pub fn io(path: &str, error: &std::io::Error) -> Self {
        Self::Io { path: path.to_owned(), message: error.to_string() }
    }
}

impl fmt::Display for FusionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArgument(message) => f.write_str(message),
            Self::Input { path, line, message } if *line > 0 => write!(f, "{path}:{line}: {message}"),
            Self::Input { path, message, .. } | Self::Io { path, message } => write!(f, "{path}: {message}"),
            Self::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for FusionError {}
