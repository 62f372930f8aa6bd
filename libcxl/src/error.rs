//! How the C API fails, as libcxl's does: a call that returns a handle returns NULL, one
//! that returns a status returns -1, and either sets `errno`. The message goes to stderr, one
//! line naming the call, so a failure says why where libcxl's only sets `errno`.

use std::ffi::{c_int, c_void};
use std::fmt::Display;
use std::io;

pub use accelhost_door::boundary::set_errno;
use accelhost_door::boundary::{guard, say};

/// A failure already reported on stderr: the `errno` it sets.
#[derive(Debug, Clone, Copy)]
pub struct Failure(pub c_int);

/// The result of a call's body.
pub type CxlResult<T> = Result<T, Failure>;

/// Says `message` on stderr for `call` and fails with `errno`.
pub fn refuse(call: &str, errno: c_int, message: impl Display) -> Failure {
    say("accelhost libcxl", call, message);
    Failure(errno)
}

/// Reports a device's `err` for `call` (what it was doing in `doing`), failing with its
/// `errno`.
pub fn failed(call: &str, doing: &str, err: &io::Error) -> Failure {
    refuse(
        call,
        err.raw_os_error().unwrap_or(libc::EIO),
        format!("{doing}: {err}"),
    )
}

/// Runs `body` and answers as libcxl does, with `failure` for an error: `errno` set, and a
/// panic (a bug of ours) is an `EFAULT` with a message, never an abort of the program.
pub fn answer<T>(call: &str, failure: T, body: impl FnOnce() -> CxlResult<T>) -> T {
    match guard(call, |why| Err(refuse(call, libc::EFAULT, why)), body) {
        Ok(value) => value,
        Err(Failure(errno)) => {
            set_errno(errno);
            failure
        }
    }
}

/// [`answer`] for a step of an enumeration (`cxl_adapter_next`, `cxl_adapter_afu_next`,
/// `cxl_afu_next`): libcxl clears `errno` before each step, so one that succeeds leaves it 0,
/// the last (NULL) included, and a program tells the end of the list from a failure by it.
pub fn step(call: &str, body: impl FnOnce() -> CxlResult<*mut c_void>) -> *mut c_void {
    answer(call, std::ptr::null_mut(), || {
        body().inspect(|_| set_errno(0))
    })
}

/// [`answer`] for a call that returns 0 or -1.
pub fn status(call: &str, body: impl FnOnce() -> CxlResult<()>) -> c_int {
    answer(call, -1, || body().map(|()| 0))
}

/// Writes `value` through the caller's out-pointer, refusing NULL.
pub fn store<T>(call: &str, out: *mut T, value: T) -> CxlResult<()> {
    // SAFETY: the caller gives NULL or a pointer to a writable `T`.
    unsafe { accelhost_door::c::write_out(out, value, "the output pointer") }
        .map_err(|e| refuse(call, libc::EINVAL, e))
}
