//! The handles the C API gives out (`struct cxl_adapter_h *`, `struct cxl_afu_h *`): keys
//! into the door crate's table, whose values are never given twice, so a freed, foreign or
//! mistyped handle is an error (`EINVAL`), never another object. A call holds its own
//! reference to the object while it runs.

use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use accelhost_door::handles::{Handles, Object};

use crate::error::{CxlResult, refuse};

static HANDLES: Handles = Handles::opaque();

/// Locks `mutex`, whatever a panicking holder left (each state it guards stays consistent).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A handle for `object`.
pub fn publish<T: Object>(call: &str, object: Arc<T>) -> CxlResult<*mut c_void> {
    HANDLES
        .insert(object)
        .ok_or_else(|| refuse(call, libc::ENOMEM, "the process has no handle values left"))
}

/// The live `T` behind `handle`, or `EINVAL`.
pub fn get<T: Object>(call: &str, handle: *const c_void) -> CxlResult<Arc<T>> {
    HANDLES
        .get::<T>(handle)
        .map_err(|e| refuse(call, libc::EINVAL, e))
}

/// Ends the live `T` behind `handle`, or `EINVAL`; its object goes once no running call holds
/// it.
pub fn remove<T: Object>(call: &str, handle: *const c_void) -> CxlResult<()> {
    HANDLES
        .remove::<T>(handle)
        .map(drop)
        .map_err(|e| refuse(call, libc::EINVAL, e))
}
