//! What makes the boundary safe: the object registry (a C handle is a key, looked up before
//! use, never dereferenced), the panic guard, the error type and its OPAE codes, the
//! per-thread last error, and helpers for C pointers.

use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{CStr, c_char, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};

use accelhost::ErrorCode;

use crate::event::EventObject;
use crate::handle::HandleObject;
use crate::offload::OffloadObject;
use crate::properties::PropertiesObject;
use crate::types::*;

/// Why a call failed; [`code`](CapiError::code) is its OPAE result code.
#[derive(Debug, thiserror::Error)]
pub enum CapiError {
    /// A NULL or unknown pointer, a destroyed object, an object of the wrong type, or a
    /// value out of range.
    #[error("invalid parameter: {0}")]
    InvalidParam(String),
    /// A property that was never set, or an object that does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// Something this library does not implement.
    #[error("not supported: {0}")]
    NotSupported(String),
    /// The resource is in use.
    #[error("busy: {0}")]
    Busy(String),
    /// A Rust panic was caught at the boundary.
    #[error("internal error (caught panic): {0}")]
    Panic(String),
    /// The device failed to load an image (`fpgaReconfigureSlot`).
    #[error("reconfiguration failed: {0}")]
    Reconfigure(accelhost::Error),
    /// An error of the accelhost library (a plugin's, a device's, the host's).
    #[error(transparent)]
    Host(#[from] accelhost::Error),
}

impl CapiError {
    /// The OPAE result code of the error.
    pub fn code(&self) -> fpga_result {
        match self {
            CapiError::InvalidParam(_) => FPGA_INVALID_PARAM,
            CapiError::NotFound(_) => FPGA_NOT_FOUND,
            CapiError::NotSupported(_) => FPGA_NOT_SUPPORTED,
            CapiError::Busy(_) => FPGA_BUSY,
            CapiError::Panic(_) => FPGA_EXCEPTION,
            CapiError::Reconfigure(_) => FPGA_RECONF_ERROR,
            CapiError::Host(err) => result_of(err.code()),
        }
    }

    /// The accelhost error code, for errors that have one.
    pub fn host_code(&self) -> Option<ErrorCode> {
        match self {
            CapiError::Host(err) | CapiError::Reconfigure(err) => Some(err.code()),
            _ => None,
        }
    }
}

/// The OPAE result code of an accelhost [`ErrorCode`] (the table in capi/README.md).
pub fn result_of(code: ErrorCode) -> fpga_result {
    match code {
        ErrorCode::Unsupported => FPGA_NOT_SUPPORTED,
        ErrorCode::InvalidArgument | ErrorCode::Stale | ErrorCode::Config => FPGA_INVALID_PARAM,
        ErrorCode::NotFound => FPGA_NOT_FOUND,
        ErrorCode::Busy | ErrorCode::AlreadyExists => FPGA_BUSY,
        ErrorCode::NoSpace | ErrorCode::OutOfMemory => FPGA_NO_MEMORY,
        ErrorCode::PermissionDenied => FPGA_NO_ACCESS,
        ErrorCode::NotInitialized
        | ErrorCode::LoadFailed
        | ErrorCode::IncompatibleInterface
        | ErrorCode::PluginUnavailable => FPGA_NO_DRIVER,
        ErrorCode::Timeout
        | ErrorCode::DeviceError
        | ErrorCode::Internal
        | ErrorCode::PluginFaulted => FPGA_EXCEPTION,
        _ => FPGA_EXCEPTION,
    }
}

/// The result of a call body.
pub type CapiResult<T = ()> = Result<T, CapiError>;

/// Shorthand for an invalid-parameter error.
pub fn invalid(message: impl Into<String>) -> CapiError {
    CapiError::InvalidParam(message.into())
}

/// The last failure on this thread: its message and accelhost code (0 if none).
#[derive(Default)]
pub struct LastError {
    /// The message, for people.
    pub message: String,
    /// The accelhost `ErrorCode`, or 0 when the error did not come from the library.
    pub host_code: i32,
}

thread_local! {
    static LAST_ERROR: RefCell<LastError> = RefCell::new(LastError::default());
}

/// Calls `f` with this thread's last error.
pub fn with_last_error<R>(f: impl FnOnce(&LastError) -> R) -> R {
    LAST_ERROR.with(|e| f(&e.borrow()))
}

fn set_last_error(err: &CapiError) {
    LAST_ERROR.with(|e| {
        *e.borrow_mut() = LastError {
            message: err.to_string(),
            host_code: err.host_code().map_or(0, |c| c as i32),
        }
    });
}

/// Runs a call body: a panic becomes `FPGA_EXCEPTION`, an error its OPAE code; either is
/// kept as this thread's last error. Every exported function goes through here.
pub fn guard(name: &'static str, f: impl FnOnce() -> CapiResult) -> fpga_result {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => FPGA_OK,
        Ok(Err(err)) => {
            tracing::debug!("{name}: {err}");
            set_last_error(&err);
            err.code()
        }
        Err(panic) => {
            let text = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic".into());
            let err = CapiError::Panic(format!("{name}: {text}"));
            tracing::error!("{err}");
            set_last_error(&err);
            FPGA_EXCEPTION
        }
    }
}

/// Locks `m`, ignoring poisoning (a panic caught at the boundary must not wedge the API).
pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Everything a C handle can stand for; the variant is the type tag checked on each call.
pub enum Object {
    /// `fpga_properties`.
    Properties(PropertiesObject),
    /// `fpga_token`.
    Token(accelhost::Token),
    /// `fpga_handle`.
    Handle(HandleObject),
    /// `fpga_event_handle`.
    Event(EventObject),
    /// The reference-counted objects of the offload extension.
    Offload(OffloadObject),
}

impl Object {
    fn kind(&self) -> &'static str {
        match self {
            Object::Properties(_) => "properties object",
            Object::Token(_) => "token",
            Object::Handle(_) => "handle",
            Object::Event(_) => "event handle",
            Object::Offload(o) => o.kind_name(),
        }
    }

    fn tag(&self) -> usize {
        match self {
            Object::Properties(_) => 1,
            Object::Token(_) => 2,
            Object::Handle(_) => 3,
            Object::Event(_) => 4,
            Object::Offload(_) => 5,
        }
    }
}

/// Live objects by the value C holds. Values are never reused: a destroyed object's value
/// stays unknown for the life of the process, so a double destroy or a stale handle is
/// always caught, never aliased to a newer object.
static REGISTRY: LazyLock<Mutex<HashMap<usize, Arc<Object>>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));
static NEXT_ID: AtomicUsize = AtomicUsize::new(1);

/// Registers `object`; returns the opaque value C holds (the type tag in its low 4 bits,
/// so values look like aligned pointers of distinct kinds in a debugger).
pub fn register(object: Object) -> *mut c_void {
    let id = (NEXT_ID.fetch_add(1, Ordering::Relaxed) << 4) | object.tag();
    lock(&REGISTRY).insert(id, Arc::new(object));
    id as *mut c_void
}

/// The live object behind `ptr` in `map`, if `is` accepts its kind: NULL, an unknown value
/// and a live object of another kind (named in the message) are refused.
fn checked<'a>(
    map: &'a HashMap<usize, Arc<Object>>,
    ptr: *const c_void,
    what: &str,
    is: impl FnOnce(&Object) -> bool,
) -> CapiResult<&'a Arc<Object>> {
    if ptr.is_null() {
        return Err(invalid(format!("the {what} is NULL")));
    }
    let object = map.get(&(ptr as usize)).ok_or_else(|| {
        invalid(format!(
            "{ptr:p} is not a live {what} (destroyed, or never made)"
        ))
    })?;
    if !is(object) {
        let kind = object.kind();
        return Err(invalid(format!("{ptr:p} is a {kind}, not a {what}")));
    }
    Ok(object)
}

/// The object behind `ptr` if `is` accepts its kind; a live object of another kind is
/// refused with its kind named.
pub fn lookup_kind(
    ptr: *const c_void,
    what: &str,
    is: impl FnOnce(&Object) -> bool,
) -> CapiResult<Arc<Object>> {
    checked(&lock(&REGISTRY), ptr, what, is).cloned()
}

/// Removes the object behind `ptr` if `accept` takes it; returns it (dropped by the caller,
/// outside the registry lock, since dropping may call into a plugin).
pub fn unregister(
    ptr: *const c_void,
    what: &str,
    accept: impl FnOnce(&Object) -> bool,
) -> CapiResult<Arc<Object>> {
    let mut map = lock(&REGISTRY);
    checked(&map, ptr, what, accept)?;
    Ok(map.remove(&(ptr as usize)).expect("checked above"))
}

/// OPAE's destroy calls: unregisters the object `*ptr` (the parameter `param`) if `accept`
/// takes it, drops it, and sets `*ptr` to NULL.
///
/// # Safety
/// `ptr` must be NULL or valid for a read and a write.
pub unsafe fn destroy(
    ptr: *mut *mut c_void,
    param: &str,
    what: &str,
    accept: impl FnOnce(&Object) -> bool,
) -> CapiResult {
    non_null(ptr, param)?;
    // SAFETY: non-NULL, valid for reads by the caller's contract.
    let value = unsafe { ptr.read() };
    drop(unregister(value, what, accept)?);
    // SAFETY: as above, valid for writes.
    unsafe { ptr.write(std::ptr::null_mut()) };
    Ok(())
}

/// Runs `f` on the object behind `ptr` in the registry, with its lock held, if `is` accepts
/// its kind (retain and release need the check atomic with the update). `f` must not drop
/// objects that call into plugins.
pub fn with_registered<R>(
    ptr: *const c_void,
    what: &str,
    is: impl FnOnce(&Object) -> bool,
    f: impl FnOnce(&mut HashMap<usize, Arc<Object>>, &Object) -> R,
) -> CapiResult<R> {
    let mut map = lock(&REGISTRY);
    let object = checked(&map, ptr, what, is)?.clone();
    Ok(f(&mut map, &object))
}

/// Empties the registry (fpgaFinalize); returns the objects so the caller drops them in order.
pub fn drain() -> Vec<Arc<Object>> {
    lock(&REGISTRY).drain().map(|(_, o)| o).collect()
}

/// How many objects are live (for the tests).
pub fn live_objects() -> usize {
    lock(&REGISTRY).len()
}

/// Writes `value` through the out-pointer `out`, refusing NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T, what: &str) -> CapiResult {
    if out.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL, and valid for writes by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Refuses a NULL out-pointer before any work is done.
pub fn non_null<T>(ptr: *const T, what: &str) -> CapiResult {
    if ptr.is_null() {
        Err(invalid(format!("{what} is NULL")))
    } else {
        Ok(())
    }
}

/// Refuses a NULL array `ptr` (the parameter `what`) whose length `len` (the parameter
/// `count`) is not 0.
pub fn array<T>(ptr: *const T, len: u32, what: &str, count: &str) -> CapiResult {
    if ptr.is_null() && len > 0 {
        Err(invalid(format!("{what} is NULL but {count} is not 0")))
    } else {
        Ok(())
    }
}

/// The C array `ptr` of `len` elements as a slice, refused as [`array`] says.
///
/// # Safety
/// `ptr` must be NULL or valid for `len` reads, for the life of the slice.
pub unsafe fn slice<'a, T>(
    ptr: *const T,
    len: u32,
    what: &str,
    count: &str,
) -> CapiResult<&'a [T]> {
    array(ptr, len, what, count)?;
    if len == 0 {
        return Ok(&[]);
    }
    // SAFETY: non-NULL, valid for `len` reads by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len as usize) })
}

/// A C string argument as UTF-8.
///
/// # Safety
/// `s` must be NULL or a NUL-terminated string that stays valid for the call.
pub unsafe fn c_str<'a>(s: *const c_char, what: &str) -> CapiResult<&'a str> {
    if s.is_null() {
        return Err(invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| invalid(format!("{what} is not UTF-8")))
}

/// Copies `text` into the C buffer `buf` of `len` bytes, cut to fit, NUL-terminated.
///
/// # Safety
/// `buf` must be valid for `len` bytes of writes (checked non-NULL here).
pub unsafe fn copy_str(buf: *mut c_char, len: usize, text: &str, what: &str) -> CapiResult {
    if buf.is_null() || len == 0 {
        return Err(invalid(format!("{what} is NULL or has no room")));
    }
    let n = text.len().min(len - 1);
    // SAFETY: `n + 1 <= len` bytes are written, inside the caller's buffer.
    unsafe {
        std::ptr::copy_nonoverlapping(text.as_ptr().cast::<c_char>(), buf, n);
        buf.add(n).write(0);
    }
    Ok(())
}

/// Fills a fixed-size C string field, cut to fit, NUL-terminated.
pub fn fill_field(field: &mut [c_char], text: &str) {
    let n = text.len().min(field.len().saturating_sub(1));
    for (dst, src) in field.iter_mut().zip(text.as_bytes()[..n].iter()) {
        *dst = *src as c_char;
    }
    if let Some(end) = field.get_mut(n) {
        *end = 0;
    }
}
