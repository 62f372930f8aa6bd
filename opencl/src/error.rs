//! How the library's errors become OpenCL's: one table from `ErrorCode`, and the message
//! (which names the plugin and the call) on stderr, since OpenCL returns only a number.

use accelhost::{Error, ErrorCode};
use accelhost_door::boundary::{guard, say};

use crate::cl::*;

/// An entry point's failure: the OpenCL code it returns.
pub type ClResult<T> = Result<T, cl_int>;

/// The OpenCL code for `code`, as the calls that reach a device return it.
pub fn code_for(code: ErrorCode) -> cl_int {
    match code {
        ErrorCode::Unsupported | ErrorCode::PermissionDenied => CL_INVALID_OPERATION,
        ErrorCode::InvalidArgument => CL_INVALID_VALUE,
        ErrorCode::OutOfMemory => CL_MEM_OBJECT_ALLOCATION_FAILURE,
        ErrorCode::Busy | ErrorCode::PluginUnavailable | ErrorCode::NotInitialized => {
            CL_DEVICE_NOT_AVAILABLE
        }
        // A fault, a timeout, a device error, an exhausted table: the command could not be
        // carried out, and the program may go on.
        _ => CL_OUT_OF_RESOURCES,
    }
}

/// Says `err` on stderr for the entry point `call` (plugin text made inert), and gives its
/// OpenCL code.
pub fn report(call: &str, err: &Error) -> cl_int {
    say("accelhost OpenCL", call, err);
    code_for(err.code())
}

/// Says `message` on stderr for `call`, and gives `code`.
pub fn refuse(call: &str, code: cl_int, message: &str) -> cl_int {
    say("accelhost OpenCL", call, message);
    code
}

/// Runs the body of an entry point that returns a status: its error is the status, and a
/// panic (a bug of ours) is `CL_OUT_OF_RESOURCES` with a message, never an abort of the
/// program.
pub fn status(call: &str, body: impl FnOnce() -> ClResult<()>) -> cl_int {
    let outcome = guard(
        call,
        |why| Err(refuse(call, CL_OUT_OF_RESOURCES, &why)),
        body,
    );
    match outcome {
        Ok(()) => CL_SUCCESS,
        Err(code) => code,
    }
}

/// Runs the body of an entry point that returns an object (or a pointer) and writes its
/// status to `errcode_ret`, which may be NULL.
pub fn object(
    call: &str,
    errcode_ret: *mut cl_int,
    body: impl FnOnce() -> ClResult<*mut std::ffi::c_void>,
) -> *mut std::ffi::c_void {
    let outcome = guard(
        call,
        |why| Err(refuse(call, CL_OUT_OF_RESOURCES, &why)),
        body,
    );
    let (object, code) = match outcome {
        Ok(object) => (object, CL_SUCCESS),
        Err(code) => (std::ptr::null_mut(), code),
    };
    if !errcode_ret.is_null() {
        // SAFETY: a non-NULL errcode_ret points to a cl_int the caller owns.
        unsafe { errcode_ret.write(code) };
    }
    object
}

pub use accelhost_door::c::write_if;

/// The `count` elements at `list`, which must be NULL exactly when `count` is 0; `code` if not.
///
/// # Safety
/// A non-NULL `list` points to `count` elements.
pub unsafe fn list<'a, T>(count: cl_uint, list: *const T, code: cl_int) -> ClResult<&'a [T]> {
    // SAFETY: per the contract above.
    unsafe { accelhost_door::c::list(list, count as usize, "the list", "its count") }
        .map_err(|_| code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn faults_and_limits_are_errors_the_program_can_go_on_from() {
        assert_eq!(code_for(ErrorCode::PluginFaulted), CL_OUT_OF_RESOURCES);
        assert_eq!(code_for(ErrorCode::Timeout), CL_OUT_OF_RESOURCES);
        assert_eq!(
            code_for(ErrorCode::OutOfMemory),
            CL_MEM_OBJECT_ALLOCATION_FAILURE
        );
        assert_eq!(code_for(ErrorCode::Unsupported), CL_INVALID_OPERATION);
        assert_eq!(code_for(ErrorCode::Busy), CL_DEVICE_NOT_AVAILABLE);
    }
}
