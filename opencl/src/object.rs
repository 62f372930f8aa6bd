//! What every object handed to the application starts with: a pointer to the ICD dispatch
//! table (`struct _cl_icd_dispatch` of Khronos's `CL/cl_icd.h`), which the loader calls
//! through without looking further.

use std::ffi::c_void;

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
