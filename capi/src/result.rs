//! Why a call failed, and the OPAE result code that tells C.

use accelhost::ErrorCode;

use crate::types::*;

/// Why a call failed; [`code`](CapiError::code) is its OPAE result code.
#[derive(Debug, thiserror::Error)]
pub enum CapiError {
    /// A NULL or unknown pointer, a destroyed object, an object of the wrong type, or a
    /// value out of range.
    #[error("invalid parameter: {0}")]
    InvalidParam(String),
    /// A property that was never set, or an object that does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Something this library does not implement.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// An allocation of this library failed.
    #[error("out of memory: {0}")]
    NoMemory(String),
    /// The resource is in use.
    #[error("busy: {0}")]
    Busy(String),
    /// A Rust panic was caught at the boundary.
    #[error("internal error (caught panic): {0}")]
    Panic(String),
    /// The device failed to load an image (`fpgaReconfigureSlot`).
    #[error("reconfiguration failed: {0}")]
    Reconfigure(accelhost::Error),
    /// An error of the accelhost library (a plugin's, a device's, the host's).
    #[error(transparent)]
    Host(#[from] accelhost::Error),
}

impl CapiError {
    /// The OPAE result code of the error.
    pub fn code(&self) -> fpga_result {
        match self {
            CapiError::InvalidParam(_) => FPGA_INVALID_PARAM,
            CapiError::NotFound(_) => FPGA_NOT_FOUND,
            CapiError::NotSupported(_) => FPGA_NOT_SUPPORTED,
            CapiError::NoMemory(_) => FPGA_NO_MEMORY,
            CapiError::Busy(_) => FPGA_BUSY,
            CapiError::Panic(_) => FPGA_EXCEPTION,
            CapiError::Reconfigure(_) => FPGA_RECONF_ERROR,
            CapiError::Host(err) => result_of(err.code()),
        }
    }

    /// The accelhost error code, for errors that have one.
    pub fn host_code(&self) -> Option<ErrorCode> {
        match self {
            CapiError::Host(err) | CapiError::Reconfigure(err) => Some(err.code()),
            _ => None,
        }
    }
}

/// The OPAE result code of an accelhost [`ErrorCode`] (the table in capi/README.md).
pub fn result_of(code: ErrorCode) -> fpga_result {
    match code {
        ErrorCode::Unsupported => FPGA_NOT_SUPPORTED,
        ErrorCode::InvalidArgument | ErrorCode::Stale | ErrorCode::Config => FPGA_INVALID_PARAM,
        ErrorCode::NotFound => FPGA_NOT_FOUND,
        ErrorCode::Busy | ErrorCode::AlreadyExists => FPGA_BUSY,
        ErrorCode::NoSpace | ErrorCode::OutOfMemory => FPGA_NO_MEMORY,
        ErrorCode::PermissionDenied => FPGA_NO_ACCESS,
        ErrorCode::NotInitialized
        | ErrorCode::LoadFailed
        | ErrorCode::IncompatibleInterface
        | ErrorCode::PluginUnavailable => FPGA_NO_DRIVER,
        ErrorCode::Timeout
        | ErrorCode::DeviceError
        | ErrorCode::Internal
        | ErrorCode::PluginFaulted => FPGA_EXCEPTION,
        _ => FPGA_EXCEPTION,
    }
}

/// The result of a call body.
pub type CapiResult<T = ()> = Result<T, CapiError>;

/// `call` is not supported, for `why` (the call's guard logs it at info level, as it logs
/// every `NotSupported`, and keeps it as the thread's last error).
pub(crate) fn not_supported(call: &str, why: &str) -> CapiError {
    CapiError::NotSupported(format!("{call}: {why}"))
}

/// Shorthand for an invalid-parameter error.
pub(crate) fn invalid(message: impl Into<String>) -> CapiError {
    CapiError::InvalidParam(message.into())
}
