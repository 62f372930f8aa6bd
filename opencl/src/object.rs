//! The objects handed to the application. Each handle is a word holding the ICD dispatch
//! table (`struct _cl_icd_dispatch` of Khronos's `CL/cl_icd.h`), which the loader calls
//! through without looking further; behind it, the door crate's table keeps each live
//! handle's object and OpenCL reference count. A handle is looked up before anything is read
//! through it, and its word is never handed out again (it keeps reading as the dispatch
//! table), so a released, foreign or mistyped handle is an OpenCL error forever, never a read
//! of freed memory nor another object; a call holds its own reference to the object while it
//! runs.

use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

use accelhost_door::dispatch::DispatchWords;
use accelhost_door::handles::Handles;
pub use accelhost_door::handles::Object;

use crate::cl::{CL_OUT_OF_HOST_MEMORY, CL_OUT_OF_RESOURCES, CL_SUCCESS, cl_int, cl_uint};
use crate::error::{ClResult, refuse};

/// How many slots the table has: the OpenCL 3.1 headers' count. A loader built on older
/// headers reads only the slots it knows.
pub const SLOTS: usize = 150;

/// `struct _cl_icd_dispatch`: one function pointer per entry point, in the header's order.
#[repr(C)]
pub struct Dispatch(pub [*const c_void; SLOTS]);

// SAFETY: the table is immutable and holds only function pointers.
unsafe impl Sync for Dispatch {}

/// The first field of the objects that live for the process (the platform, the devices).
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

/// The words the handles of objects made at run time are.
static WORDS: DispatchWords = DispatchWords::new();
/// The live objects by handle.
static HANDLES: Handles = Handles::dispatched(&WORDS);

/// The dispatch table, as installed.
static TABLE: OnceLock<&'static Dispatch> = OnceLock::new();

/// Installs the dispatch table the handles hold (the first call's table is kept), before the
/// first object is made.
pub fn install(table: &'static Dispatch) {
    let table = *TABLE.get_or_init(|| table);
    WORDS.install(std::ptr::from_ref(table).cast());
}

/// A header dispatching through the installed table, for an object that lives for the
/// process (a device).
pub fn header() -> Dispatched {
    Dispatched::new(TABLE.get().expect("the dispatch table is installed first"))
}

/// A handle for `object`, with a reference count of 1.
pub fn publish<T: Object>(object: Arc<T>) -> ClResult<*mut c_void> {
    HANDLES.insert(object).ok_or(CL_OUT_OF_HOST_MEMORY)
}

/// The object behind `handle`, if it is a live handle of a `T`.
pub fn get<T: Object>(handle: *const c_void) -> Option<Arc<T>> {
    HANDLES.get::<T>(handle).ok()
}

/// The OpenCL reference count of a live handle of a `T`.
pub fn references<T: Object>(handle: *const c_void) -> Option<cl_uint> {
    HANDLES.references::<T>(handle).ok()
}

/// Adds a reference to a live handle of a `T`; false if it is none.
pub fn retain<T: Object>(handle: *const c_void) -> bool {
    HANDLES.retain::<T>(handle).is_ok()
}

/// Drops a reference to a live handle of a `T`; the last one ends the handle (the object
/// itself goes when the last call or object using it lets go, dropped here outside the
/// table's lock). False if it is none.
pub fn release<T: Object>(handle: *const c_void) -> bool {
    match HANDLES.release::<T>(handle) {
        Ok(ended) => {
            drop(ended);
            true
        }
        Err(_) => false,
    }
}

/// `clRetain*` for objects of type `T`: `INVALID` is the code for a handle that is not one
/// (`CL_INVALID_CONTEXT`, ...).
pub extern "C" fn retain_as<T: Object, const INVALID: cl_int>(handle: *mut c_void) -> cl_int {
    guarded(T::KIND, || {
        if retain::<T>(handle) {
            CL_SUCCESS
        } else {
            INVALID
        }
    })
}

/// `clRelease*` for objects of type `T`, as [`retain_as`]: the last release may drop the
/// object, which may call into a plugin, so it runs inside the panic guard.
pub extern "C" fn release_as<T: Object, const INVALID: cl_int>(handle: *mut c_void) -> cl_int {
    guarded(T::KIND, || {
        if release::<T>(handle) {
            CL_SUCCESS
        } else {
            INVALID
        }
    })
}

fn guarded(kind: &str, body: impl FnOnce() -> cl_int) -> cl_int {
    accelhost_door::boundary::guard(kind, |why| refuse(kind, CL_OUT_OF_RESOURCES, &why), body)
}

/// A reference to another object's handle, held by an object that OpenCL says retains it
/// (a queue its context, a kernel its program), and released when that object goes. The
/// handle's value is never given to another object, so its release can only reach the object
/// it retained.
pub struct Held<T: Object> {
    handle: usize,
    object: Arc<T>,
    /// Whether the retain took (the handle was live): only then is it released.
    retained: bool,
}

impl<T: Object> Held<T> {
    /// Retains `handle`, whose object is `object`.
    pub fn new(handle: *const c_void, object: Arc<T>) -> Held<T> {
        Held {
            handle: handle as usize,
            object,
            retained: retain::<T>(handle),
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

impl<T: Object> Drop for Held<T> {
    fn drop(&mut self) {
        if self.retained {
            release::<T>(self.handle as *const c_void);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Thing;
    impl Object for Thing {
        const KIND: &'static str = "thing";
    }
    struct Other;
    impl Object for Other {
        const KIND: &'static str = "other";
    }

    static EMPTY: Dispatch = Dispatch([std::ptr::null(); SLOTS]);

    #[test]
    fn handles_are_counted_typed_and_gone_after_the_last_release() {
        install(&EMPTY);
        let thing = publish(Arc::new(Thing)).unwrap();
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
        // The released handle still reads the dispatch table (a loader calls through it), and
        // no later object gets it.
        // SAFETY: a handle word stays readable for the process's life.
        let word = unsafe { thing.cast::<usize>().read() };
        assert_eq!(word, std::ptr::from_ref(&EMPTY) as usize);
        for _ in 0..10_000 {
            let later = publish(Arc::new(Thing)).unwrap();
            assert_ne!(later, thing);
            assert!(release::<Thing>(later));
        }
        assert!(get::<Thing>(thing).is_none());
    }

    #[test]
    fn a_held_handle_lives_until_its_holder_goes() {
        install(&EMPTY);
        let thing = Arc::new(Thing);
        let handle = publish(thing.clone()).unwrap();
        let held = Held::new(handle, thing);
        assert!(release::<Thing>(handle));
        assert!(get::<Thing>(handle).is_some(), "the holder keeps it");
        drop(held);
        assert!(get::<Thing>(handle).is_none());
    }
}
