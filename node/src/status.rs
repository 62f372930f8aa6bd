//! How host errors and the node's own refusals travel: as gRPC statuses whose
//! `accelhost-code` metadata carries the stable accelhost error code.

use accelhost::ErrorCode;
use tonic::{Code, Status};

/// The metadata key of the accelhost error code (the numbers of [`ErrorCode`]).
pub const CODE_KEY: &str = "accelhost-code";

/// The gRPC code closest to an accelhost code.
pub fn grpc_code(code: ErrorCode) -> Code {
    match code {
        ErrorCode::Unsupported => Code::Unimplemented,
        ErrorCode::InvalidArgument => Code::InvalidArgument,
        ErrorCode::NotFound => Code::NotFound,
        ErrorCode::Busy | ErrorCode::PluginUnavailable => Code::Unavailable,
        ErrorCode::NoSpace | ErrorCode::OutOfMemory => Code::ResourceExhausted,
        ErrorCode::PermissionDenied => Code::PermissionDenied,
        ErrorCode::Timeout => Code::DeadlineExceeded,
        ErrorCode::AlreadyExists => Code::AlreadyExists,
        ErrorCode::NotInitialized
        | ErrorCode::Config
        | ErrorCode::LoadFailed
        | ErrorCode::IncompatibleInterface
        | ErrorCode::Stale => Code::FailedPrecondition,
        ErrorCode::PluginFaulted => Code::Aborted,
        ErrorCode::DeviceError | ErrorCode::Internal => Code::Internal,
        _ => Code::Unknown,
    }
}

/// A status with `code` and `message`, carrying the accelhost code.
pub fn status(code: ErrorCode, message: impl Into<String>) -> Status {
    let mut status = Status::new(grpc_code(code), message);
    if let Ok(value) = (code as i32).to_string().parse() {
        status.metadata_mut().insert(CODE_KEY, value);
    }
    status
}

/// A host error as a status.
pub fn from_host(err: accelhost::Error) -> Status {
    status(err.code(), err.to_string())
}

/// The accelhost code a status carries, if it carries one the client knows.
pub fn accelhost_code(status: &Status) -> Option<ErrorCode> {
    let number: u32 = status
        .metadata()
        .get(CODE_KEY)?
        .to_str()
        .ok()?
        .parse()
        .ok()?;
    ErrorCode::from_number(number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_code_survives_the_status() {
        for code in [
            ErrorCode::PermissionDenied,
            ErrorCode::Stale,
            ErrorCode::PluginFaulted,
            ErrorCode::Busy,
        ] {
            let s = status(code, "x");
            assert_eq!(accelhost_code(&s), Some(code));
        }
        assert_eq!(accelhost_code(&Status::internal("no code")), None);
    }
}
