//! Error strings: OPAE's `fpgaErrStr`, and the accelhost extension's last error of the
//! calling thread (the full message, naming the plugin and the call).

use std::ffi::c_char;

use crate::ffi::copy_str;
use crate::last_error::with_last_error;
use crate::types::*;

/// OPAE's `fpgaErrStr`: a static description of a result code.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaErrStr(e: fpga_result) -> *const c_char {
    let text: &'static [u8] = match e {
        FPGA_OK => b"success\0",
        FPGA_INVALID_PARAM => b"invalid parameter\0",
        FPGA_BUSY => b"resource busy\0",
        FPGA_EXCEPTION => b"exception (plugin fault or device error)\0",
        FPGA_NOT_FOUND => b"not found\0",
        FPGA_NO_MEMORY => b"not enough memory\0",
        FPGA_NOT_SUPPORTED => b"not supported\0",
        FPGA_NO_DRIVER => b"no driver: the plugin is not running\0",
        FPGA_NO_DAEMON => b"no daemon\0",
        FPGA_NO_ACCESS => b"no access: not granted\0",
        FPGA_RECONF_ERROR => b"reconfiguration error\0",
        _ => b"unknown result code\0",
    };
    text.as_ptr().cast()
}

/// accelhost extension: copies the message of the last failed call on this thread into
/// `buf` (cut to `len` bytes, NUL-terminated) and returns the accelhost error code of that
/// failure (0 when it had none, or no call failed). Never fails itself: with a NULL `buf` it
/// only returns the code.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostGetLastError(buf: *mut c_char, len: usize) -> i32 {
    with_last_error(|last| {
        if !buf.is_null() && len > 0 {
            // SAFETY: valid for `len` bytes by the caller's contract.
            let _ = unsafe { copy_str(buf, len, &last.message, "buf") };
        }
        last.host_code
    })
}
