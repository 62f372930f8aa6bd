//! The C boundary itself: the panic guard every exported function runs in, and checked
//! helpers for the pointers, arrays and strings C passes. Nothing here knows an object type.

use std::ffi::{CStr, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Mutex, MutexGuard};

use crate::last_error;
use crate::result::{CapiError, CapiResult, invalid};
use crate::types::*;

/// Runs a call body: a panic becomes `FPGA_EXCEPTION`, an error its OPAE code; either is
/// kept as this thread's last error. Every exported function goes through here.
pub fn guard(name: &'static str, f: impl FnOnce() -> CapiResult) -> fpga_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => FPGA_OK,
        Ok(Err(err)) => {
            // OPAE logs what it does not do; other failures are the caller's to report.
            if matches!(err, CapiError::NotSupported(_)) {
                tracing::info!(call = name, "{err}");
            } else {
                tracing::debug!("{name}: {err}");
            }
            last_error::record(&err);
            err.code()
        }
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let err = CapiError::Panic(format!("{name}: {text}"));
            tracing::error!("{err}");
            last_error::record(&err);
            FPGA_EXCEPTION
        }
    }
}

/// Locks `m`, ignoring poisoning (a panic caught at the boundary must not wedge the API).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Refuses a NULL pointer (the parameter `what`), before any work is done.
pub(crate) fn non_null<T>(ptr: *const T, what: &str) -> CapiResult {
    if ptr.is_null() {
        Err(invalid(format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// Writes `value` through the out-pointer `out`, refusing NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub(crate) unsafe fn write_out<T>(out: *mut T, value: T, what: &str) -> CapiResult {
    non_null(out, what)?;
    // SAFETY: non-NULL, and valid for writes by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Refuses a NULL array `ptr` (the parameter `what`) whose length `len` (the parameter
/// `count`) is not 0.
pub(crate) fn array<T>(ptr: *const T, len: u32, what: &str, count: &str) -> CapiResult {
    if ptr.is_null() && len > 0 {
        Err(invalid(format!("{what} is NULL but {count} is not 0")))
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
    what: &str,
    count: &str,
) -> CapiResult<&'a [T]> {
    array(ptr, len, what, count)?;
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: non-NULL, valid for `len` reads by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len as usize) })
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `s` must be NULL or a NUL-terminated string that stays valid for the call.
pub(crate) unsafe fn c_str<'a>(s: *const c_char, what: &str) -> CapiResult<&'a str> {
    non_null(s, what)?;
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// Copies `text` into the C buffer `buf` of `len` bytes, cut to fit, NUL-terminated.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes (checked non-NULL here).
pub(crate) unsafe fn copy_str(buf: *mut c_char, len: usize, text: &str, what: &str) -> CapiResult {
    if buf.is_null() || len == 0 {
        return Err(invalid(format!("{what} is NULL or has no room")));
    }
    let n = text.len().min(len - 1);
    // SAFETY: `n + 1 <= len` bytes are written, inside the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
        buf.add(n).write(0);
    }
    Ok(())
}

/// Fills a fixed-size C string field, cut to fit, NUL-terminated.
pub(crate) fn fill_field(field: &mut [c_char], text: &str) {
    let n = text.len().min(field.len().saturating_sub(1));
    for (dst, src) in field.iter_mut().zip(text.as_bytes()[..n].iter()) {
        *dst = *src as c_char;
    }
    if let Some(end) = field.get_mut(n) {
        *end = 0;
    }
}
