//! The objects C holds. The value of a C handle (`fpga_token`, `fpga_handle`, ...) is a key
//! into the door crate's table, looked up and type-checked on every call and never
//! dereferenced, so a NULL, forged, destroyed or wrong-kind value is `FPGA_INVALID_PARAM`,
//! never a crash. Values are never reused: a destroyed object's value stays unknown for the
//! life of the process, so a double destroy or a stale handle is always caught, never
//! aliased to a newer object.

use std::any::Any;
use std::ffi::c_void;
use std::sync::Arc;

use accelhost_door::handles::Handles;
pub(crate) use accelhost_door::handles::Object;

use crate::ffi::non_null;
use crate::result::{CapiResult, invalid};

static OBJECTS: Handles = Handles::opaque();

/// Registers `object`; returns the opaque value C holds.
pub(crate) fn insert<T: Object>(object: T) -> *mut c_void {
    OBJECTS
        .insert(Arc::new(object))
        .expect("a process makes fewer than 2^59 handles")
}

/// The `T` behind `ptr`.
pub(crate) fn get<T: Object>(ptr: *const c_void) -> CapiResult<Arc<T>> {
    OBJECTS.get::<T>(ptr).map_err(|e| invalid(e.to_string()))
}

/// Unregisters the `T` behind `ptr` and returns it, for the caller to drop outside the
/// registry lock (dropping may call into a plugin).
pub(crate) fn remove<T: Object>(ptr: *const c_void) -> CapiResult<Arc<T>> {
    OBJECTS.remove::<T>(ptr).map_err(|e| invalid(e.to_string()))
}

/// Runs `remove` on the `T` behind `ptr` with the registry locked, and unregisters the
/// object if it returns true; returns it then, for the caller to drop outside the lock.
/// What `remove` does is atomic with every other lookup, as reference counting needs.
pub(crate) fn remove_if<T: Object>(
    ptr: *const c_void,
    remove: impl FnOnce(&T) -> bool,
) -> CapiResult<Option<Arc<T>>> {
    OBJECTS
        .remove_if::<T>(ptr, remove)
        .map_err(|e| invalid(e.to_string()))
}

/// OPAE's destroy calls: unregisters and drops the `T` at `*ptr` (the parameter `param`),
/// then sets `*ptr` to NULL.
///
/// # Safety
/// `ptr` must be NULL or valid for a read and a write.
pub(crate) unsafe fn destroy<T: Object>(ptr: *mut *mut c_void, param: &'static str) -> CapiResult {
    non_null(ptr, param)?;
    // SAFETY: non-NULL, valid for reads by the caller's contract.
    let value = unsafe { ptr.read() };
    drop(remove::<T>(value)?);
    // SAFETY: as above, valid for writes.
    unsafe { ptr.write(std::ptr::null_mut()) };
    Ok(())
}

/// Empties the registry (`fpgaFinalize`); returns the objects in teardown order, for the
/// caller to drop outside the lock.
pub(crate) fn drain() -> Vec<Arc<dyn Any + Send + Sync>> {
    OBJECTS.drain()
}

/// How many objects are live (for the tests).
pub fn live_objects() -> usize {
    OBJECTS.len()
}
