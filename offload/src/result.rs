//! How a call answers: `OL_SUCCESS` (NULL), or a pointer to an `ol_error_struct_t` with a
//! code and details that stay valid for the process's life, as liboffload's do. Identical
//! errors share one struct, and past [`MAX_KEPT`] distinct ones the details are a fixed text
//! per code (the full text then goes to stderr), so a plugin that fails with ever new
//! messages cannot grow the process without bound. The library's error codes map to
//! Offload's in one table.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, CString};
use std::sync::Mutex;

use accelhost::ErrorCode;

use crate::types::*;

/// A failed call: its code and what happened.
#[derive(Debug)]
pub struct Failure {
    pub code: Errc,
    pub details: String,
}

/// The result of a call's body.
pub type OlRes<T> = Result<T, Failure>;

/// A failure with `code` and `details`.
pub fn fail(code: Errc, details: impl Into<String>) -> Failure {
    Failure {
        code,
        details: details.into(),
    }
}

/// The library's `err`, with its message (which names the plugin and the call).
pub fn failed(err: &accelhost::Error) -> Failure {
    fail(code_for(err.code()), err.to_string())
}

/// The Offload code of each library error code.
fn code_for(code: ErrorCode) -> Errc {
    match code {
        ErrorCode::Unsupported => OL_ERRC_UNSUPPORTED_FEATURE,
        ErrorCode::InvalidArgument | ErrorCode::Config => OL_ERRC_INVALID_ARGUMENT,
        ErrorCode::NotFound => OL_ERRC_INVALID_VALUE,
        ErrorCode::OutOfMemory | ErrorCode::NoSpace | ErrorCode::Busy => OL_ERRC_OUT_OF_RESOURCES,
        ErrorCode::NotInitialized
        | ErrorCode::PermissionDenied
        | ErrorCode::LoadFailed
        | ErrorCode::IncompatibleInterface
        | ErrorCode::Stale
        | ErrorCode::PluginUnavailable => OL_ERRC_INVALID_DEVICE,
        // A device error, a plugin fault, a timeout, an internal error, and codes newer
        // than this table: Offload has no closer code than UNKNOWN, and the details say.
        _ => OL_ERRC_UNKNOWN,
    }
}

/// How many distinct errors are kept with their own details.
const MAX_KEPT: usize = 4096;

struct Kept {
    by_text: HashMap<(Errc, String), &'static ErrorStruct>,
    by_code: HashMap<Errc, &'static ErrorStruct>,
}

static KEPT: Mutex<Option<Kept>> = Mutex::new(None);

fn leak(code: Errc, details: &str) -> &'static ErrorStruct {
    let text = CString::new(details.replace('\0', "\\0")).expect("no NUL left");
    Box::leak(Box::new(ErrorStruct {
        code,
        details: text.into_raw(),
    }))
}

fn intern(failure: Failure) -> OlResult {
    let details = accelhost::text::inert(&failure.details).into_owned();
    let details = match LOCATION.with(|at| at.borrow().clone()) {
        Some(at) => format!("{at}: {details}"),
        None => details,
    };
    let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
    let kept = kept.get_or_insert_with(|| Kept {
        by_text: HashMap::new(),
        by_code: HashMap::new(),
    });
    let key = (failure.code, details);
    if let Some(error) = kept.by_text.get(&key) {
        return *error;
    }
    if kept.by_text.len() < MAX_KEPT {
        let error = leak(key.0, &key.1);
        kept.by_text.insert(key, error);
        return error;
    }
    eprintln!("accelhost Offload: error {}: {}", key.0, key.1);
    *kept.by_code.entry(key.0).or_insert_with(|| {
        leak(
            key.0,
            "(too many distinct errors to keep; this one is on stderr)",
        )
    })
}

thread_local! {
    /// Where the program called from, while a `...WithCodeLoc` call runs.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `body` and answers: NULL, or the interned error; a panic (a bug of ours) is
/// `OL_ERRC_UNKNOWN` with a message, never an abort of the program.
pub fn answer(call: &str, body: impl FnOnce() -> OlRes<()>) -> OlResult {
    let outcome = accelhost_door::boundary::guard(
        call,
        |why| Err(fail(OL_ERRC_UNKNOWN, why)),
        || {
            body().map_err(|failure| Failure {
                details: format!("{call}: {}", failure.details),
                ..failure
            })
        },
    );
    match outcome {
        Ok(()) => std::ptr::null(),
        Err(failure) => intern(failure),
    }
}

/// Runs a call with the program's code location in its error's details.
///
/// # Safety
/// `location` is NULL or points to an `ol_code_location_t` whose strings are NULL or
/// NUL-terminated.
pub unsafe fn at_location(
    location: *const CodeLocation,
    call: impl FnOnce() -> OlResult,
) -> OlResult {
    let text = |s: *const std::ffi::c_char| {
        // SAFETY: the caller passes NULL or a NUL-terminated string.
        (!s.is_null()).then(|| unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned())
    };
    // SAFETY: location is NULL or an ol_code_location_t.
    let at = unsafe { location.as_ref() }.map(|at| {
        format!(
            "{} ({}:{}:{})",
            text(at.function_name).unwrap_or_default(),
            text(at.source_file).unwrap_or_default(),
            at.line_number,
            at.column_number
        )
    });
    let before = LOCATION.with(|cell| cell.replace(at));
    let result = call();
    LOCATION.with(|cell| *cell.borrow_mut() = before);
    result
}
