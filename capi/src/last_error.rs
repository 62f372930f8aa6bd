//! The last failure on each thread, kept for `accelhostGetLastError`: an `fpga_result`
//! alone cannot say which plugin failed, or why.

use std::cell::RefCell;

use crate::result::CapiError;

/// The last failure on this thread: its message and accelhost code (0 if none).
#[derive(Default)]
pub(crate) struct LastError {
    /// The message, for people.
    pub(crate) message: String,
    /// The accelhost `ErrorCode`, or 0 when the error did not come from the library.
    pub(crate) host_code: i32,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

/// Calls `f` with this thread's last error.
pub(crate) fn with_last_error<R>(f: impl FnOnce(&LastError) -> R) -> R {
    LAST_ERROR.with(|e| f(&e.borrow()))
}

/// Keeps `err` as this thread's last error.
pub(crate) fn record(err: &CapiError) {
    LAST_ERROR.with(|e| {
        *e.borrow_mut() = LastError {
            message: err.to_string(),
            host_code: err.host_code().map_or(0, |c| c as i32),
        }
    });
}
