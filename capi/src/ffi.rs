//! The C boundary of the OPAE API: every exported function runs in [`guard`], and the
//! door crate's checked helpers for pointers, arrays and strings answer in OPAE's terms.
//! Nothing here knows an object type.

use std::ffi::c_char;
use std::sync::{Mutex, MutexGuard};

pub(crate) use accelhost_door::c::fill_field;
use accelhost_door::c::{self, CError};

use crate::last_error;
use crate::result::{CapiError, CapiResult, invalid};
use crate::types::*;

/// Runs a call body: a panic becomes `FPGA_EXCEPTION`, an error its OPAE code; either is
/// kept as this thread's last error. Every exported function goes through here.
pub fn guard(name: &'static str, f: impl FnOnce() -> CapiResult) -> fpga_result {
    let outcome = accelhost_door::boundary::guard(name, |why| Err(CapiError::Panic(why)), f);
    match outcome {
        Ok(()) => FPGA_OK,
        Err(err) => {
            // OPAE logs what it does not do; other failures are the caller's to report.
            match &err {
                CapiError::NotSupported(_) => tracing::info!(call = name, "{err}"),
                CapiError::Panic(_) => tracing::error!("{err}"),
                _ => tracing::debug!("{name}: {err}"),
            }
            last_error::record(&err);
            err.code()
        }
    }
}

/// Locks `m`, ignoring poisoning (a panic caught at the boundary must not wedge the API).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn refused(err: CError) -> CapiError {
    invalid(err.to_string())
}

/// Refuses a NULL pointer (the parameter `what`), before any work is done.
pub(crate) fn non_null<T>(ptr: *const T, what: &'static str) -> CapiResult {
    c::non_null(ptr, what).map_err(refused)
}

/// Writes `value` through the out-pointer `out`, refusing NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T, what: &'static str) -> CapiResult {
    // SAFETY: the caller's contract.
    unsafe { c::write_out(out, value, what) }.map_err(refused)
}

/// Refuses a NULL array `ptr` (the parameter `what`) whose length `len` (the parameter
/// `count`) is not 0.
pub(crate) fn array<T>(
    ptr: *const T,
    len: u32,
    what: &'static str,
    count: &'static str,
) -> CapiResult {
    if ptr.is_null() && len > 0 {
        Err(refused(CError::NullArray { what, count }))
    } else {
        Ok(())
    }
}

/// The C array `ptr` of `len` elements as a slice, refused as [`array()`] says.
///
/// # Safety
/// `ptr` must be NULL or valid for `len` reads, for the life of the slice.
pub(crate) unsafe fn slice<'a, T>(
    ptr: *const T,
    len: u32,
    what: &'static str,
    count: &'static str,
) -> CapiResult<&'a [T]> {
    // SAFETY: the caller's contract.
    unsafe { c::slice(ptr, len as usize, what, count) }.map_err(refused)
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `s` must be NULL or a NUL-terminated string that stays valid for the call.
pub(crate) unsafe fn c_str<'a>(s: *const c_char, what: &'static str) -> CapiResult<&'a str> {
    // SAFETY: the caller's contract.
    unsafe { c::c_str(s, what) }.map_err(refused)
}

/// Copies `text` into the C buffer `buf` of `len` bytes, cut to fit, NUL-terminated.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes (checked non-NULL here).
pub(crate) unsafe fn copy_str(
    buf: *mut c_char,
    len: usize,
    text: &str,
    what: &'static str,
) -> CapiResult {
    // SAFETY: the caller's contract.
    unsafe { c::copy_str(buf, len, text, what) }.map_err(refused)
}
