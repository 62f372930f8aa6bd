//! The library's error type. Every error names the plugin and the call where it has one, and
//! maps to a stable [`ErrorCode`] that applications (and later the C API) can switch on.

use std::fmt;

use crate::config::ConfigError;
use crate::devices::{MmioFault, RangeError};

/// The result type of the embedding API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Stable error codes. The numbers never change meaning; new codes are only added. Codes 1 to
/// 12 are the WIT `error-code`s a plugin returns; the others are raised by the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[repr(i32)]
#[non_exhaustive]
pub enum ErrorCode {
    Unsupported = 1,
    InvalidArgument = 2,
    NotFound = 3,
    Busy = 4,
    NoSpace = 5,
    PermissionDenied = 6,
    Timeout = 7,
    OutOfMemory = 8,
    DeviceError = 9,
    NotInitialized = 10,
    AlreadyExists = 11,
    Internal = 12,
    /// The config file is malformed or inconsistent.
    Config = 100,
    /// A plugin's module could not be read, compiled or instantiated.
    LoadFailed = 101,
    /// A plugin was built for an incompatible version of the WIT interface.
    IncompatibleInterface = 102,
    /// A plugin trapped or overran its deadline; its instance was ended.
    PluginFaulted = 103,
    /// A token, handle, buffer or region outlived what it refers to.
    Stale = 104,
    /// A plugin is not running (it failed to load, faulted, or is disabled).
    PluginUnavailable = 105,
}

impl ErrorCode {
    /// The code's kebab-case name, as shown by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::InvalidArgument => "invalid-argument",
            ErrorCode::NotFound => "not-found",
            ErrorCode::Busy => "busy",
            ErrorCode::NoSpace => "no-space",
            ErrorCode::PermissionDenied => "permission-denied",
            ErrorCode::Timeout => "timeout",
            ErrorCode::OutOfMemory => "out-of-memory",
            ErrorCode::DeviceError => "device-error",
            ErrorCode::NotInitialized => "not-initialized",
            ErrorCode::AlreadyExists => "already-exists",
            ErrorCode::Internal => "internal",
            ErrorCode::Config => "config",
            ErrorCode::LoadFailed => "load-failed",
            ErrorCode::IncompatibleInterface => "incompatible-interface",
            ErrorCode::PluginFaulted => "plugin-faulted",
            ErrorCode::Stale => "stale",
            ErrorCode::PluginUnavailable => "plugin-unavailable",
        }
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that can go wrong in the embedding API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    Config(#[from] ConfigError),

    #[error("plugin '{plugin}' ({module}) cannot be loaded: {reason}")]
    Load {
        plugin: String,
        module: String,
        reason: String,
    },

    #[error(
        "plugin '{plugin}' ({module}) was built for accel:plugin@{plugin_version}, but this host \
         implements accel:plugin@{host_version}; rebuild the plugin against accel:plugin@{host_version}"
    )]
    IncompatibleInterface {
        plugin: String,
        module: String,
        plugin_version: String,
        host_version: String,
    },

    #[error("plugin '{plugin}': {call} failed ({code}): {message}")]
    Plugin {
        plugin: String,
        call: &'static str,
        code: ErrorCode,
        message: String,
    },

    #[error("plugin '{plugin}' faulted in {call} and was stopped: {reason}")]
    Faulted {
        plugin: String,
        call: &'static str,
        reason: String,
    },

    #[error("plugin '{plugin}' is not running ({state}); {call} cannot be served")]
    PluginUnavailable {
        plugin: String,
        call: &'static str,
        state: String,
    },

    #[error("{what} is no longer valid: {why}")]
    Stale { what: &'static str, why: String },

    #[error("MMIO on {device}: {fault}")]
    Mmio { device: String, fault: MmioFault },

    #[error("DMA buffer {id} on {device}: {source}")]
    Buffer {
        device: String,
        id: u64,
        source: RangeError,
    },

    #[error("waiting on {what} timed out after {waited_ms} ms (last value {last:#x})")]
    WaitTimeout {
        what: String,
        waited_ms: u64,
        last: u64,
    },

    #[error("invalid argument to {call}: {message}")]
    InvalidArgument { call: &'static str, message: String },

    #[error("{device}: {message}")]
    Device { device: String, message: String },

    #[error("internal error: {0}")]
    Internal(String),
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Config(_) => ErrorCode::Config,
            Error::Load { .. } => ErrorCode::LoadFailed,
            Error::IncompatibleInterface { .. } => ErrorCode::IncompatibleInterface,
            Error::Plugin { code, .. } => *code,
            Error::Faulted { .. } => ErrorCode::PluginFaulted,
            Error::PluginUnavailable { .. } => ErrorCode::PluginUnavailable,
            Error::Stale { .. } => ErrorCode::Stale,
            Error::Mmio { fault, .. } => match fault {
                MmioFault::OutOfRange { .. } | MmioFault::Misaligned { .. } => {
                    ErrorCode::InvalidArgument
                }
                MmioFault::PollTimeout { .. } => ErrorCode::Timeout,
                MmioFault::Device(_) => ErrorCode::DeviceError,
            },
            Error::Buffer { .. } | Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Error::WaitTimeout { .. } => ErrorCode::Timeout,
            Error::Device { .. } => ErrorCode::DeviceError,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }

    /// The plugin the error concerns, if it concerns one.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            Error::Load { plugin, .. }
            | Error::IncompatibleInterface { plugin, .. }
            | Error::Plugin { plugin, .. }
            | Error::Faulted { plugin, .. }
            | Error::PluginUnavailable { plugin, .. } => Some(plugin),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(ErrorCode::Unsupported as i32, 1);
        assert_eq!(ErrorCode::Internal as i32, 12);
        assert_eq!(ErrorCode::Config as i32, 100);
        assert_eq!(ErrorCode::PluginUnavailable as i32, 105);
        assert_eq!(ErrorCode::PluginFaulted.to_string(), "plugin-faulted");
    }

    #[test]
    fn messages_name_plugin_and_call() {
        let err = Error::Plugin {
            plugin: "dfl".into(),
            call: "open",
            code: ErrorCode::Busy,
            message: "port emu:dfl0 is held exclusively".into(),
        };
        assert_eq!(err.code(), ErrorCode::Busy);
        assert_eq!(err.plugin(), Some("dfl"));
        assert_eq!(
            err.to_string(),
            "plugin 'dfl': open failed (busy): port emu:dfl0 is held exclusively"
        );
    }
}
