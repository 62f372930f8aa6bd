//! The handles the C API gives out (`xrtDeviceHandle` and the others are `void*`): keys into
//! the door crate's table, whose values are never given twice, so a closed, foreign or
//! mistyped handle is an error (`EINVAL`), never another object. A call holds its own
//! reference to the object while it runs.

use std::ffi::c_void;
use std::sync::Arc;

use accelhost_door::handles::{Handles, Object};

use crate::error::{Failure, XrtResult, refuse};

static HANDLES: Handles = Handles::opaque();

/// The live `T` behind `handle`.
pub fn of<T: Object>(call: &str, handle: *const c_void) -> XrtResult<Arc<T>> {
    HANDLES
        .get::<T>(handle)
        .map_err(|e| refuse(call, libc::EINVAL, e))
}

/// A handle for `object`.
pub fn publish<T: Object>(call: &str, object: Arc<T>) -> XrtResult<*mut c_void> {
    HANDLES.insert(object).ok_or_else(|| no_handles(call))
}

/// Ends the live `T` behind `handle`; its object lives on while a running call holds it.
pub fn close<T: Object>(call: &str, handle: *const c_void) -> XrtResult<()> {
    HANDLES
        .remove::<T>(handle)
        .map(drop)
        .map_err(|e| refuse(call, libc::EINVAL, e))
}

fn no_handles(call: &str) -> Failure {
    refuse(call, libc::ENOMEM, "the process has no handle values left")
}
