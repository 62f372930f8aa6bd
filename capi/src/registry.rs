//! The objects C holds. The value of a C handle (`fpga_token`, `fpga_handle`, ...) is a key
//! into this registry, looked up and type-checked on every call and never dereferenced, so a
//! NULL, forged, destroyed or wrong-kind value is `FPGA_INVALID_PARAM`, never a crash.
//!
//! The registry knows no object type: each kind implements [`Object`] in its own module, and
//! an entry keeps its kind as the [`Any`] type of the stored value.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex};

use crate::ffi::{lock, non_null};
use crate::result::{CapiResult, invalid};

/// A kind of object C can hold: what the registry needs to know of it.
pub(crate) trait Object: Any + Send + Sync {
    /// The kind's name in messages, such as "token" or "event handle".
    const KIND: &'static str;
    /// The low 4 bits of its values (1 to 15), so that values of different kinds look
    /// like distinct aligned pointers in a debugger.
    const TAG: usize;
    /// When [`drain`] hands it back for teardown: lower ranks first, so that an object
    /// goes before the objects it was made through.
    const TEARDOWN_RANK: u8 = u8::MAX;
}

/// One live object with what its type told at registration.
struct Entry {
    object: Arc<dyn Any + Send + Sync>,
    kind: &'static str,
    teardown_rank: u8,
}

/// Live objects by the value C holds. Values are never reused: a destroyed object's value
/// stays unknown for the life of the process, so a double destroy or a stale handle is
/// always caught, never aliased to a newer object.
static OBJECTS: LazyLock<Mutex<HashMap<usize, Entry>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Registers `object`; returns the opaque value C holds.
pub(crate) fn insert<T: Object>(object: T) -> *mut c_void {
    const { assert!(T::TAG > 0 && T::TAG < 16) };
    let id = (NEXT_ID.fetch_add(1, Ordering::Relaxed) << 4) | T::TAG;
    let entry = Entry {
        object: Arc::new(object),
        kind: T::KIND,
        teardown_rank: T::TEARDOWN_RANK,
    };
    lock(&OBJECTS).insert(id, entry);
    id as *mut c_void
}

/// The live `T` behind `ptr` in `objects`: NULL, an unknown value and a live object of
/// another kind (named in the message) are refused.
fn checked<T: Object>(objects: &HashMap<usize, Entry>, ptr: *const c_void) -> CapiResult<Arc<T>> {
    let what = T::KIND;
    if ptr.is_null() {
        return Err(invalid(format!("the {what} is NULL")));
    }
    let entry = objects.get(&(ptr as usize)).ok_or_else(|| {
        invalid(format!(
            "{ptr:p} is not a live {what} (destroyed, or never made)"
        ))
    })?;
    entry
        .object
        .clone()
        .downcast()
        .map_err(|_| invalid(format!("{ptr:p} is a {}, not a {what}", entry.kind)))
}

/// The `T` behind `ptr`.
pub(crate) fn get<T: Object>(ptr: *const c_void) -> CapiResult<Arc<T>> {
    checked(&lock(&OBJECTS), ptr)
}

/// Unregisters the `T` behind `ptr` and returns it, for the caller to drop outside the
/// registry lock (dropping may call into a plugin).
pub(crate) fn remove<T: Object>(ptr: *const c_void) -> CapiResult<Arc<T>> {
    remove_if(ptr, |_: &T| true).map(|removed| removed.expect("the predicate always removes"))
}

/// Runs `remove` on the `T` behind `ptr` with the registry locked, and unregisters the
/// object if it returns true; returns it then, for the caller to drop outside the lock.
/// What `remove` does is atomic with every other lookup, as reference counting needs.
pub(crate) fn remove_if<T: Object>(
    ptr: *const c_void,
    remove: impl FnOnce(&T) -> bool,
) -> CapiResult<Option<Arc<T>>> {
    let mut objects = lock(&OBJECTS);
    let object = checked::<T>(&objects, ptr)?;
    if !remove(&object) {
        return Ok(None);
    }
    objects.remove(&(ptr as usize));
    Ok(Some(object))
}

/// OPAE's destroy calls: unregisters and drops the `T` at `*ptr` (the parameter `param`),
/// then sets `*ptr` to NULL.
///
/// # Safety
/// `ptr` must be NULL or valid for a read and a write.
pub(crate) unsafe fn destroy<T: Object>(ptr: *mut *mut c_void, param: &str) -> CapiResult {
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
    let mut entries: Vec<Entry> = lock(&OBJECTS).drain().map(|(_, e)| e).collect();
    entries.sort_by_key(|e| e.teardown_rank);
    entries.into_iter().map(|e| e.object).collect()
}

/// How many objects are live (for the tests).
pub fn live_objects() -> usize {
    lock(&OBJECTS).len()
}
