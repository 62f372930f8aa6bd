//! The handles of reference-counted objects (queues, events, programs, kernels): each is
//! the address of a live object in one table with its count, looked up before anything is
//! read through it, so a released, foreign or mistyped handle is an error, never a read of
//! freed memory. A call holds its own reference to the object while it runs.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

struct Entry {
    object: Arc<dyn Any + Send + Sync>,
    references: u32,
}

static LIVE: Mutex<Option<HashMap<usize, Entry>>> = Mutex::new(None);

fn live() -> MutexGuard<'static, Option<HashMap<usize, Entry>>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A handle for `object`, with a reference count of 1.
pub fn publish<T: Any + Send + Sync>(object: Arc<T>) -> *mut c_void {
    let handle = Arc::as_ptr(&object).cast::<c_void>().cast_mut();
    live().get_or_insert_with(HashMap::new).insert(
        handle as usize,
        Entry {
            object,
            references: 1,
        },
    );
    handle
}

/// The object of a live handle of type `T`.
pub fn get<T: Any + Send + Sync>(handle: *mut c_void) -> Option<Arc<T>> {
    let object = live().as_ref()?.get(&(handle as usize))?.object.clone();
    object.downcast::<T>().ok()
}

/// Adds a reference to a live handle of type `T`; false if it is none.
pub fn retain<T: Any + Send + Sync>(handle: *mut c_void) -> bool {
    let mut live = live();
    match live.as_mut().and_then(|t| t.get_mut(&(handle as usize))) {
        Some(entry) if entry.object.is::<T>() => {
            entry.references = entry.references.saturating_add(1);
            true
        }
        _ => false,
    }
}

/// Drops a reference to a live handle of type `T`, ending it at the last; false if it is
/// none. The object is dropped outside the table's lock.
pub fn release<T: Any + Send + Sync>(handle: *mut c_void) -> bool {
    let ended = {
        let mut live = live();
        let Some(table) = live.as_mut() else {
            return false;
        };
        match table.get_mut(&(handle as usize)) {
            Some(entry) if entry.object.is::<T>() => {
                entry.references -= 1;
                if entry.references > 0 {
                    return true;
                }
                table.remove(&(handle as usize))
            }
            _ => return false,
        }
    };
    drop(ended);
    true
}
