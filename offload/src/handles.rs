//! The handles of reference-counted objects (queues, events, programs, kernels): keys into
//! the door crate's table, whose values are never given twice, so a released, foreign or
//! mistyped handle is an error, never another object. A call holds its own reference to the
//! object while it runs.

use std::ffi::c_void;
use std::sync::Arc;

use accelhost_door::handles::{HandleError, Handles, Object};

use crate::result::{Failure, OlRes, fail};
use crate::types::*;

static HANDLES: Handles = Handles::opaque();

/// The Offload failure for a handle refused as `err`: `invalid` names the kind's code.
fn refused(err: HandleError, invalid: Errc) -> Failure {
    let code = match err {
        HandleError::Null { .. } => OL_ERRC_INVALID_NULL_HANDLE,
        _ => invalid,
    };
    fail(code, err.to_string())
}

/// The live `T` behind `handle`; `invalid` is the code for a handle that is not one.
pub fn of<T: Object>(handle: *const c_void, invalid: Errc) -> OlRes<Arc<T>> {
    HANDLES.get::<T>(handle).map_err(|e| refused(e, invalid))
}

/// A handle for `object`, with a reference count of 1.
pub fn publish<T: Object>(object: Arc<T>) -> OlRes<*mut c_void> {
    HANDLES.insert(object).ok_or_else(|| {
        fail(
            OL_ERRC_OUT_OF_RESOURCES,
            "the process has no handle values left",
        )
    })
}

/// Adds a reference to the live `T` behind `handle`.
pub fn retain<T: Object>(handle: *const c_void, invalid: Errc) -> OlRes<()> {
    HANDLES.retain::<T>(handle).map_err(|e| refused(e, invalid))
}

/// Drops a reference to the live `T` behind `handle`; the last one ends the handle, and the
/// object goes once no running call holds it (dropped here, outside the table's lock).
pub fn release<T: Object>(handle: *const c_void, invalid: Errc) -> OlRes<()> {
    HANDLES
        .release::<T>(handle)
        .map(drop)
        .map_err(|e| refused(e, invalid))
}
