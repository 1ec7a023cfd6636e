//! The one error type of the core. Every message names the offending argument (or `file:line`)
//! and says what would be accepted, so the binding can pass it to Python unchanged.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FusionError {
    /// Fusion input (a ranked list, a run, qrels, a sample of a test, a model) or a fusion option has
    /// a value outside what is accepted.
    InvalidArgument(String),
    /// A fusion option's value refused where the fusion meets its lists (weights that do not fit
    /// them, a tie break a run fusion does not take): `InvalidArgument` that names its option.
    InvalidOption { option: &'static str, message: String },
    /// A setting of the call, neither fusion input nor a fusion option (a metric, a run file's
    /// format or tag, where ranks come from, a method to train), is not one accepted, or does not
    /// go with another given.
    InvalidSetting(String),
    /// A number setting of that kind (threads, a test's iterations or seed, a trained method's
    /// sizes, a distributed reader's sizes) is outside its range.
    OutOfRange(String),
    /// An argument is of a kind the call does not take (a str where numbers are expected, a set
    /// where order matters): Python's `TypeError`.
    WrongType(String),
    /// A malformed input file: `path:line: message` (line 0 when the problem is the file as a whole).
    Input { path: String, line: u64, message: String },
    /// The operating system refused to read a file.
    Io { path: String, message: String },
    /// An output the guard (`crate::output`) refuses or fails to write: a path that cannot be
    /// created or written, a folder, a read-only file, one of the inputs, a full disk. `path` is the
    /// output as given, or `None` when the message names the paths itself (two paths that collide).
    Output { path: Option<String>, message: String },
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

    /// A refusal of the fusion option `option` (see [`Self::InvalidOption`]).
    pub fn of_option(option: &'static str, message: impl Into<String>) -> Self {
        Self::InvalidOption { option, message: message.into() }
    }

    pub fn wrong_type(message: impl Into<String>) -> Self {
        Self::WrongType(message.into())
    }

    pub fn setting(message: impl Into<String>) -> Self {
        Self::InvalidSetting(message.into())
    }

    pub fn out_of_range(message: impl Into<String>) -> Self {
        Self::OutOfRange(message.into())
    }

    /// This refusal of a value, made by a check shared with fusion options (a name, an int's
    /// range), as the refusal of a setting; other errors unchanged.
    #[must_use]
    pub fn of_setting(self) -> Self {
        match self {
            Self::InvalidArgument(message) => Self::InvalidSetting(message),
            other => other,
        }
    }

    /// [`Self::of_setting`] for a number out of range.
    #[must_use]
    pub fn of_number_setting(self) -> Self {
        match self {
            Self::InvalidArgument(message) => Self::OutOfRange(message),
            other => other,
        }
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
        Self::Io { path: path.to_owned(), message: io_reason(error) }
    }

    /// The output `path` could not be written because of `error` (a closed pipe is no failure of
    /// the writer: `ClosedPipe`).
    #[must_use]
    pub fn output(path: &str, error: &std::io::Error) -> Self {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            return Self::ClosedPipe { path: path.to_owned() };
        }
        Self::refused_output(path, io_reason(error))
    }

    /// The output `path` is refused: `message` says why and what to give instead.
    #[must_use]
    pub fn refused_output(path: &str, message: impl Into<String>) -> Self {
        Self::Output { path: Some(path.to_owned()), message: message.into() }
    }

    /// Outputs refused together with other paths of the command (an output that is an input):
    /// `message` names them all.
    #[must_use]
    pub fn colliding_outputs(message: impl Into<String>) -> Self {
        Self::Output { path: None, message: message.into() }
    }
}

/// What an I/O error says, in the system's words (`Is a directory`), without the `(os error 21)` that
/// Rust's own text of it adds and that tells a reader nothing more.
#[must_use]
pub fn io_reason(error: &std::io::Error) -> String {
    let text = error.to_string();
    match error.raw_os_error() {
        Some(code) => text.strip_suffix(&format!(" (os error {code})")).unwrap_or(&text).to_owned(),
        None => text,
    }
}

impl fmt::Display for FusionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Input { path, line, message } if *line > 0 => write!(f, "{path}:{line}: {message}"),
            Self::Input { path, message, .. }
            | Self::Io { path, message }
            | Self::Output { path: Some(path), message } => write!(f, "{path}: {message}"),
            Self::InvalidArgument(message)
            | Self::InvalidOption { message, .. }
            | Self::InvalidSetting(message)
            | Self::OutOfRange(message)
            | Self::WrongType(message)
            | Self::Output { path: None, message } => f.write_str(message),
            Self::ClosedPipe { path } => write!(f, "{path}: the reader closed the pipe"),
            Self::Interrupted => f.write_str("interrupted"),
        }
    }
}

impl std::error::Error for FusionError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shared_check_refuses_a_setting_as_a_setting_with_the_same_words() {
        let refused = FusionError::invalid("format must be 'trec' or 'mtrag' (got 'x')");
        assert_eq!(refused.clone().of_setting(), FusionError::setting(refused.to_string()));
        assert_eq!(refused.clone().of_number_setting(), FusionError::out_of_range(refused.to_string()));
        // Any other error is left as it is: a file's line stays the file's.
        let input = FusionError::input("run.trec", 3, "bad");
        assert_eq!(input.clone().of_setting(), input);
        assert_eq!(input.to_string(), "run.trec:3: bad");
    }

    #[test]
    fn an_io_error_reads_in_the_system_words_alone() {
        let directory = std::io::Error::from_raw_os_error(libc::EISDIR);
        assert_eq!(io_reason(&directory), "Is a directory");
        assert_eq!(FusionError::io("/tmp", &directory).to_string(), "/tmp: Is a directory");
        assert_eq!(FusionError::output("o.trec", &directory).to_string(), "o.trec: Is a directory");
        // An error of Rust's own (no system code) keeps its whole text.
        let other = std::io::Error::other("the stream ended (os error 5)");
        assert_eq!(io_reason(&other), "the stream ended (os error 5)");
    }
}
