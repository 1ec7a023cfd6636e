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
    /// The reader of an output (a pipe, stdout) went away before everything was written: the
    /// end of the output was not wanted, so this is no failure of the writer (`cmd | head`).
    ClosedPipe { path: String },
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
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            return Self::ClosedPipe { path: path.to_owned() };
        }
        Self::Io { path: path.to_owned(), message: error.to_string() }
    }
}

impl fmt::Display for FusionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArgument(message) => f.write_str(message),
            Self::Input { path, line, message } if *line > 0 => write!(f, "{path}:{line}: {message}"),
            Self::Input { path, message, .. } | Self::Io { path, message } => write!(f, "{path}: {message}"),
            Self::ClosedPipe { path } => write!(f, "{path}: the reader closed the pipe"),
            Self::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for FusionError {}
