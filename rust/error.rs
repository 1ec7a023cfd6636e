//! The one error type of the core. Every message names the offending argument (or `file:line`)
//! and says what would be accepted, so the binding can pass it to Python unchanged.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FusionError {
    /// An argument has a value outside what is accepted.
    InvalidArgument(String),
}

impl FusionError {
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::InvalidArgument(message.into())
    }
}

impl fmt::Display for FusionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::InvalidArgument(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for FusionError {}
