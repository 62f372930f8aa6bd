//! Constructors for the WIT `error` record, so plugin code reads `Error::busy(...)`.

use crate::types::{Error, ErrorCode};

impl Error {
    /// An error with `code` and a message for people.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Error {
            code,
            message: message.into(),
        }
    }

    /// The plugin does not implement `call`.
    pub fn unsupported(call: &str) -> Self {
        Self::new(
            ErrorCode::Unsupported,
            format!("{call} is not supported by this plugin"),
        )
    }

    pub fn invalid_argument(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidArgument, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::Busy, message)
    }

    pub fn not_initialized(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotInitialized, message)
    }

    /// Prefixes the message with what the plugin was doing, keeping the code.
    pub fn context(self, what: impl core::fmt::Display) -> Self {
        Error {
            code: self.code,
            message: format!("{what}: {}", self.message),
        }
    }
}
