//! The objects handed to the application. Each handle points at a header whose first field
//! is the ICD dispatch table (`struct _cl_icd_dispatch` of Khronos's `CL/cl_icd.h`), which the
//! loader calls through without looking further; behind it, the registry keeps each live
//! handle's object and OpenCL reference count. A handle is looked up before anything is read
//! through it, so a stale, foreign or mistyped handle is an OpenCL error, never a read of
//! freed memory; a call holds its own reference to the object while it runs.

use std::any::Any;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use crate::cl::{CL_SUCCESS, cl_int, cl_uint};

/// How many slots the table has: the OpenCL 3.1 headers' count. A loader built on older
/// headers reads only the slots it knows.
pub const SLOTS: usize = 150;

/// `struct _cl_icd_dispatch`: one function pointer per entry point, in the header's order.
#[repr(C)]
pub struct Dispatch(pub [*const c_void; SLOTS]);

// SAFETY: the table is immutable and holds only function pointers.
unsafe impl Sync for Dispatch {}

/// The first field of every object of this platform.
#[repr(C)]
pub struct Dispatched {
    dispatch: &'static Dispatch,
}

impl Dispatched {
    /// A header that dispatches through `table`.
    pub const fn new(table: &'static Dispatch) -> Dispatched {
        Dispatched { dispatch: table }
    }
}

/// The table the objects made at run time dispatch through, installed by the module that
/// defines it before the first object is made.
static TABLE: OnceLock<&'static Dispatch> = OnceLock::new();

/// Installs the dispatch table (the first call's table is kept).
pub fn install(table: &'static Dispatch) {
    let _ = TABLE.get_or_init(|| table);
}

/// A header dispatching through the installed table.
pub fn header() -> Dispatched {
    Dispatched::new(TABLE.get().expect("the dispatch table is installed first"))
}

struct Entry {
    /// Where the handle points; freed with the entry.
    _header: Box<Dispatched>,
    object: Arc<dyn Any + Send + Sync>,
    references: cl_uint,
}

static LIVE: Mutex<Option<HashMap<usize, Entry>>> = Mutex::new(None);

fn live() -> MutexGuard<'static, Option<HashMap<usize, Entry>>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A handle for `object`, with a reference count of 1.
pub fn publish<T: Any + Send + Sync>(object: Arc<T>) -> *mut c_void {
    let header = Box::new(header());
    let handle = std::ptr::from_ref(&*header).cast_mut().cast::<c_void>();
    live().get_or_insert_with(HashMap::new).insert(
        handle as usize,
        Entry {
            _header: header,
            object,
            references: 1,
        },
    );
    handle
}

/// The object behind `handle`, if it is a live handle of a `T`.
pub fn get<T: Any + Send + Sync>(handle: *const c_void) -> Option<Arc<T>> {
    let object = live().as_ref()?.get(&(handle as usize))?.object.clone();
    object.downcast::<T>().ok()
}

/// The OpenCL reference count of a live handle of a `T`.
pub fn references<T: Any + Send + Sync>(handle: *const c_void) -> Option<cl_uint> {
    let live = live();
    let entry = live.as_ref()?.get(&(handle as usize))?;
    entry.object.is::<T>().then_some(entry.references)
}

/// Adds a reference to a live handle of a `T`; false if it is none.
pub fn retain<T: Any + Send + Sync>(handle: *const c_void) -> bool {
    let mut live = live();
    match live.as_mut().and_then(|l| l.get_mut(&(handle as usize))) {
        Some(entry) if entry.object.is::<T>() => {
            entry.references = entry.references.saturating_add(1);
            true
        }
        _ => false,
    }
}

/// Drops a reference to a live handle of a `T`; the last one ends the handle (the object
/// itself goes when the last call or object using it lets go). False if it is none.
pub fn release<T: Any + Send + Sync>(handle: *const c_void) -> bool {
    let ended = {
        let mut live = live();
        let Some(map) = live.as_mut() else {
            return false;
        };
        match map.get_mut(&(handle as usize)) {
            Some(entry) if entry.object.is::<T>() => {
                entry.references -= 1;
                if entry.references > 0 {
                    return true;
                }
                map.remove(&(handle as usize))
            }
            _ => return false,
        }
    };
    // Dropped unlocked: an object's drop may release the handles it holds.
    drop(ended);
    true
}

/// `clRetain*` for objects of type `T`: `invalid` is the code for a handle that is not one
/// (`CL_INVALID_CONTEXT`, ...).
pub extern "C" fn retain_as<T: Any + Send + Sync, const INVALID: cl_int>(
    handle: *mut c_void,
) -> cl_int {
    if retain::<T>(handle) {
        CL_SUCCESS
    } else {
        INVALID
    }
}

/// `clRelease*` for objects of type `T`, as [`retain_as`].
pub extern "C" fn release_as<T: Any + Send + Sync, const INVALID: cl_int>(
    handle: *mut c_void,
) -> cl_int {
    if release::<T>(handle) {
        CL_SUCCESS
    } else {
        INVALID
    }
}

/// A reference to another object's handle, held by an object that OpenCL says retains it
/// (a queue its context, a kernel its program), and released when that object goes.
pub struct Held<T: Any + Send + Sync> {
    handle: usize,
    object: Arc<T>,
}

impl<T: Any + Send + Sync> Held<T> {
    /// Retains `handle`, whose object is `object`.
    pub fn new(handle: *const c_void, object: Arc<T>) -> Held<T> {
        retain::<T>(handle);
        Held {
            handle: handle as usize,
            object,
        }
    }

    /// The handle.
    pub fn handle(&self) -> *mut c_void {
        self.handle as *mut c_void
    }

    /// The object.
    pub fn object(&self) -> &Arc<T> {
        &self.object
    }
}

impl<T: Any + Send + Sync> Drop for Held<T> {
    fn drop(&mut self) {
        release::<T>(self.handle as *const c_void);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing;
    struct Other;

    static EMPTY: Dispatch = Dispatch([std::ptr::null(); SLOTS]);

    #[test]
    fn handles_are_counted_typed_and_gone_after_the_last_release() {
        install(&EMPTY);
        let thing = publish(Arc::new(Thing));
        assert!(get::<Other>(thing).is_none(), "a handle of another type");
        assert!(get::<Thing>(thing).is_some());
        assert!(retain::<Thing>(thing));
        assert!(!retain::<Other>(thing));
        assert_eq!(references::<Thing>(thing), Some(2));
        assert!(release::<Thing>(thing));
        assert!(release::<Thing>(thing));
        assert!(get::<Thing>(thing).is_none());
        assert!(
            !release::<Thing>(thing),
            "a released handle is no longer one"
        );
        assert!(!retain::<Thing>(std::ptr::null()));
    }

    #[test]
    fn a_held_handle_lives_until_its_holder_goes() {
        install(&EMPTY);
        let thing = Arc::new(Thing);
        let handle = publish(thing.clone());
        let held = Held::new(handle, thing);
        assert!(release::<Thing>(handle));
        assert!(get::<Thing>(handle).is_some(), "the holder keeps it");
        drop(held);
        assert!(get::<Thing>(handle).is_none());
    }
}
