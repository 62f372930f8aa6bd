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
    /// The plugin (or the device behind it) does not implement the call.
    Unsupported = 1,
    /// An argument is malformed, out of range or of the wrong kind.
    InvalidArgument = 2,
    /// The token, handle, id or name does not exist.
    NotFound = 3,
    /// The device or object is in use, for example opened exclusively elsewhere.
    Busy = 4,
    /// A fixed-size resource is exhausted (contexts, slots, IOVA space, open handles).
    NoSpace = 5,
    /// The plugin's grants do not cover this device, region or operation.
    PermissionDenied = 6,
    /// A wait or poll ran past its timeout.
    Timeout = 7,
    /// A memory allocation or grant limit was reached.
    OutOfMemory = 8,
    /// The device or driver reported a failure.
    DeviceError = 9,
    /// The plugin was called before its `initialize` succeeded.
    NotInitialized = 10,
    /// The object already exists, for example a range that is already mapped.
    AlreadyExists = 11,
    /// Anything else; the message says what.
    Internal = 12,
    /// The config file is malformed or inconsistent.
    Config = 100,
    /// A plugin's module could not be read, compiled or instantiated.
    LoadFailed = 101,
    /// A plugin was built for an incompatible version of the WIT interface.
    IncompatibleInterface = 102,
    /// A plugin trapped, overran its deadline, hit a limit or was cancelled; its instance
    /// was ended.
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
    /// The config file is malformed or inconsistent.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// A plugin could not be started: its module could not be read, compiled or instantiated,
    /// or its `configure` or `initialize` failed.
    #[error("plugin '{plugin}' ({module}) cannot be loaded: {reason}")]
    Load {
        /// The plugin's name in the config.
        plugin: String,
        /// The `module` field as the config wrote it.
        module: String,
        /// What went wrong, for people.
        reason: String,
    },

    /// A plugin was built for a version of the WIT interface this host does not implement.
    #[error(
        "plugin '{plugin}' ({module}) was built for accel:plugin@{plugin_version}, but this host \
         implements accel:plugin@{host_version}; rebuild the plugin against accel:plugin@{host_version}"
    )]
    IncompatibleInterface {
        /// The plugin's name in the config.
        plugin: String,
        /// The `module` field as the config wrote it.
        module: String,
        /// The `accel:plugin` version the module was built for.
        plugin_version: String,
        /// The `accel:plugin` version this host implements.
        host_version: String,
    },

    /// A call into a plugin returned an error (the host also raises it, with `no-space`, when
    /// it cannot track another open handle).
    #[error("plugin '{plugin}': {call} failed ({code}): {message}")]
    Plugin {
        /// The plugin's name in the config.
        plugin: String,
        /// The plugin export that failed, such as `open` or `map-mmio`.
        call: &'static str,
        /// The code the plugin returned.
        code: ErrorCode,
        /// The plugin's explanation, for people.
        message: String,
    },

    /// A plugin trapped, overran its deadline, hit a limit, answered out of bounds or was
    /// cancelled; its instance was ended, everything it handed out was revoked, and its load
    /// policy decides whether a fresh instance starts.
    #[error("plugin '{plugin}' faulted in {call} and was stopped: {reason}")]
    Faulted {
        /// The plugin's name in the config.
        plugin: String,
        /// The plugin export it faulted in.
        call: &'static str,
        /// The trap or deadline overrun, with its root cause.
        reason: String,
    },

    /// A plugin is not running (it failed to load, faulted, was stopped or is disabled), so
    /// the call was not made.
    #[error("plugin '{plugin}' is not running ({state}); {call} cannot be served")]
    PluginUnavailable {
        /// The plugin's name in the config.
        plugin: String,
        /// The plugin export that could not be called.
        call: &'static str,
        /// The plugin's status as `accelhost plugins` shows it, such as `disabled`.
        state: String,
    },

    /// A token, handle, buffer or region outlived what it refers to.
    #[error("{what} is no longer valid: {why}")]
    Stale {
        /// What was used, such as `handle` or `DMA buffer`.
        what: &'static str,
        /// Why it is no longer valid, such as `it was closed`.
        why: String,
    },

    /// An application's access to an MMIO region was refused or failed.
    #[error("MMIO on {device}: {fault}")]
    Mmio {
        /// The device the region belongs to, by the name grants use (`emu:dfl0`, a `/dev` path).
        device: String,
        /// What was wrong with the access.
        fault: MmioFault,
    },

    /// An application's access to a DMA buffer was out of range or misaligned.
    #[error("DMA buffer {id} on {device}: {source}")]
    Buffer {
        /// The device the buffer was prepared for, by its id (`plugin/name`).
        device: String,
        /// The plugin's id for the buffer (OPAE's workspace id).
        id: u64,
        /// The range that was refused.
        source: RangeError,
    },

    /// A wait on the host (such as a poll of a DMA buffer word) ran past its timeout.
    #[error("waiting on {what} timed out after {waited_ms} ms (last value {last:#x})")]
    WaitTimeout {
        /// What was waited on, for people.
        what: String,
        /// The timeout that ran out, in milliseconds.
        waited_ms: u64,
        /// The last value read before giving up.
        last: u64,
    },

    /// The application passed an argument the host refuses without asking a plugin.
    #[error("invalid argument to {call}: {message}")]
    InvalidArgument {
        /// The API call or workload that refused it, such as `open`.
        call: &'static str,
        /// What was wrong, for people.
        message: String,
    },

    /// A device reported a failure outside any plugin call (such as an NLB0 test error).
    #[error("{device}: {message}")]
    Device {
        /// The device's id (`plugin/name`).
        device: String,
        /// What the device reported, for people.
        message: String,
    },

    /// A failure that is not the caller's, such as the wasm runtime failing to start.
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
