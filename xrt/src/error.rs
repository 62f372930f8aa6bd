//! How the C API fails, as XRT's does: a call that returns a handle returns NULL, one that
//! returns a status returns -1, and either sets `errno`; the message goes to stderr, one
//! line naming the call. The library's error codes map to `errno` values in one table.

use std::ffi::{c_int, c_void};
use std::fmt::Display;

use accelhost::ErrorCode;
use accelhost_door::boundary::{guard, say, set_errno};

/// A failure already reported on stderr: the `errno` it sets.
#[derive(Debug, Clone, Copy)]
pub struct Failure(pub c_int);

/// The result of a call's body.
pub type XrtResult<T> = Result<T, Failure>;

/// Says `message` on stderr for `call` (plugin text made inert) and fails with `errno`.
pub fn refuse(call: &str, errno: c_int, message: impl Display) -> Failure {
    say("accelhost XRT", call, message);
    Failure(errno)
}

/// Reports the library's `err` for `call`, failing with its `errno`.
pub fn failed(call: &str, err: &accelhost::Error) -> Failure {
    refuse(call, errno_for(err.code()), err)
}

/// The `errno` of each library error code.
fn errno_for(code: ErrorCode) -> c_int {
    match code {
        ErrorCode::Unsupported => libc::EOPNOTSUPP,
        ErrorCode::InvalidArgument | ErrorCode::Config => libc::EINVAL,
        ErrorCode::NotFound => libc::ENOENT,
        ErrorCode::Busy => libc::EBUSY,
        ErrorCode::NoSpace => libc::ENOSPC,
        ErrorCode::PermissionDenied => libc::EACCES,
        ErrorCode::Timeout => libc::ETIMEDOUT,
        ErrorCode::OutOfMemory => libc::ENOMEM,
        ErrorCode::DeviceError | ErrorCode::PluginFaulted | ErrorCode::Internal => libc::EIO,
        ErrorCode::NotInitialized
        | ErrorCode::LoadFailed
        | ErrorCode::Stale
        | ErrorCode::PluginUnavailable => libc::ENODEV,
        ErrorCode::AlreadyExists => libc::EEXIST,
        ErrorCode::IncompatibleInterface => libc::EPROTO,
        // A code newer than this table.
        _ => libc::EIO,
    }
}

/// Runs `body` and answers as XRT does, with `failure` for an error: `errno` set, and a
/// panic (a bug of ours) is an `EFAULT` with a message, never an abort of the program.
pub fn answer<T>(call: &str, failure: T, body: impl FnOnce() -> XrtResult<T>) -> T {
    let outcome = guard(call, |why| Err(refuse(call, libc::EFAULT, why)), body);
    match outcome {
        Ok(value) => value,
        Err(Failure(errno)) => {
            set_errno(errno);
            failure
        }
    }
}

/// [`answer`] for a call that returns a status: 0, or -1 with `errno` set.
pub fn status(call: &str, body: impl FnOnce() -> XrtResult<()>) -> c_int {
    answer(call, -1, || body().map(|()| 0))
}

/// [`answer`] for a call that returns a handle: the handle, or NULL with `errno` set.
pub fn handle(call: &str, body: impl FnOnce() -> XrtResult<*mut c_void>) -> *mut c_void {
    answer(call, std::ptr::null_mut(), body)
}

/// A NUL-terminated UTF-8 string argument (`what`), failing `call` with `EINVAL`.
///
/// # Safety
/// `text` must be NULL or a NUL-terminated string that stays valid for the call.
pub unsafe fn text<'a>(
    call: &str,
    what: &'static str,
    text: *const std::ffi::c_char,
) -> XrtResult<&'a str> {
    // SAFETY: the caller's contract.
    unsafe { accelhost_door::c::c_str(text, what) }.map_err(|e| refuse(call, libc::EINVAL, e))
}
