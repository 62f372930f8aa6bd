//! The handles the C API gives out (`struct cxl_adapter_h *`, `struct cxl_afu_h *`): each
//! is the address of a live object in one table, looked up before anything is read through
//! it, so a freed, foreign or mistyped handle is an error (`EINVAL`), never a read of freed
//! memory. A call holds its own reference to the object while it runs.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

type Live = HashMap<usize, Arc<dyn Any + Send + Sync>>;

static LIVE: Mutex<Option<Live>> = Mutex::new(None);

fn live() -> MutexGuard<'static, Option<Live>> {
    lock(&LIVE)
}

/// Locks `mutex`, whatever a panicking holder left (each state it guards stays consistent).
pub fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A handle for `object`, live until [`remove`]d.
pub fn publish<T: Any + Send + Sync>(object: Arc<T>) -> *mut c_void {
    let handle = Arc::as_ptr(&object).cast::<c_void>().cast_mut();
    live()
        .get_or_insert_with(HashMap::new)
        .insert(handle as usize, object);
    handle
}

/// The object of a live handle of type `T`.
pub fn get<T: Any + Send + Sync>(handle: *mut c_void) -> Option<Arc<T>> {
    let object = live().as_ref()?.get(&(handle as usize))?.clone();
    object.downcast::<T>().ok()
}

/// Ends a live handle of type `T`, giving its object (which lives on while others hold it).
pub fn remove<T: Any + Send + Sync>(handle: *mut c_void) -> Option<Arc<T>> {
    let mut live = live();
    let table = live.as_mut()?;
    if !table.get(&(handle as usize))?.is::<T>() {
        return None;
    }
    table.remove(&(handle as usize))?.downcast::<T>().ok()
}
