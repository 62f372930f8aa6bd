//! Checked helpers for what C passes: pointers, arrays, strings and out-parameters. Each
//! refusal names the parameter, so every door's error says which argument was wrong.

use std::borrow::Cow;
use std::ffi::{CStr, c_char};

/// Why an argument from C was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CError {
    /// A pointer that must not be NULL is.
    #[error("{what} is NULL")]
    Null {
        /// The parameter.
        what: &'static str,
    },
    /// An array pointer is NULL but its count is not 0.
    #[error("{what} is NULL but {count} is not 0")]
    NullArray {
        /// The array parameter.
        what: &'static str,
        /// Its count parameter.
        count: &'static str,
    },
    /// An array pointer is given with a count of 0, which the API refuses.
    #[error("{what} is given but {count} is 0")]
    EmptyArray {
        /// The array parameter.
        what: &'static str,
        /// Its count parameter.
        count: &'static str,
    },
    /// A string is not UTF-8.
    #[error("{what} is not UTF-8")]
    NotUtf8 {
        /// The parameter.
        what: &'static str,
    },
    /// A buffer for a string is NULL or has no room for the terminating NUL.
    #[error("{what} is NULL or has no room")]
    NoRoom {
        /// The parameter.
        what: &'static str,
    },
}

/// Refuses a NULL `ptr`, the parameter `what`.
pub fn non_null<T>(ptr: *const T, what: &'static str) -> Result<(), CError> {
    if ptr.is_null() {
        Err(CError::Null { what })
    } else {
        Ok(())
    }
}

/// Writes `value` through the out-parameter `out`, refusing NULL.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub unsafe fn write_out<T>(out: *mut T, value: T, what: &'static str) -> Result<(), CError> {
    non_null(out, what)?;
    // SAFETY: non-NULL, and valid for writes by the caller's contract.
    unsafe { out.write(value) };
    Ok(())
}

/// Writes `value` through the optional out-parameter `out`; NULL means the caller does not
/// want it.
///
/// # Safety
/// `out` must be NULL or valid for a write of `T`.
pub unsafe fn write_if<T>(out: *mut T, value: T) {
    if !out.is_null() {
        // SAFETY: non-NULL, and valid for writes by the caller's contract.
        unsafe { out.write(value) };
    }
}

/// The C array `ptr` of `len` elements (the parameters `what` and `count`) as a slice. NULL
/// with a count is refused; a count of 0 is an empty slice whatever the pointer.
///
/// # Safety
/// `ptr` must be NULL or valid for `len` reads, for the life of the slice.
pub unsafe fn slice<'a, T>(
    ptr: *const T,
    len: usize,
    what: &'static str,
    count: &'static str,
) -> Result<&'a [T], CError> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(CError::NullArray { what, count });
    }
    // SAFETY: non-NULL, valid for `len` reads by the caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// Like [`slice`], for APIs (OpenCL's) that also refuse an array given with a count of 0:
/// both NULL and 0 is the empty list.
///
/// # Safety
/// As [`slice`].
pub unsafe fn list<'a, T>(
    ptr: *const T,
    len: usize,
    what: &'static str,
    count: &'static str,
) -> Result<&'a [T], CError> {
    if len == 0 && !ptr.is_null() {
        return Err(CError::EmptyArray { what, count });
    }
    // SAFETY: the caller's contract.
    unsafe { slice(ptr, len, what, count) }
}

/// A C string argument, which must be UTF-8.
///
/// # Safety
/// `s` must be NULL or a NUL-terminated string that stays valid for the call.
pub unsafe fn c_str<'a>(s: *const c_char, what: &'static str) -> Result<&'a str, CError> {
    non_null(s, what)?;
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    unsafe { CStr::from_ptr(s) }
        .to_str()
        .map_err(|_| CError::NotUtf8 { what })
}

/// A C string argument, any bytes (those that are not UTF-8 shown as U+FFFD).
///
/// # Safety
/// As [`c_str`].
pub unsafe fn c_str_lossy<'a>(
    s: *const c_char,
    what: &'static str,
) -> Result<Cow<'a, str>, CError> {
    non_null(s, what)?;
    // SAFETY: non-NULL and NUL-terminated by the caller's contract.
    Ok(unsafe { CStr::from_ptr(s) }.to_string_lossy())
}

/// Copies `text` into the C buffer `buf` of `len` bytes, cut to fit, NUL-terminated.
///
/// # Safety
/// `buf` must be NULL or valid for `len` bytes of writes.
pub unsafe fn copy_str(
    buf: *mut c_char,
    len: usize,
    text: &str,
    what: &'static str,
) -> Result<(), CError> {
    if buf.is_null() || len == 0 {
        return Err(CError::NoRoom { what });
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_follow_their_apis_rules() {
        let data = [1u32, 2, 3];
        // SAFETY: for all of them, pointers to `data` or NULL, lengths within it.
        unsafe {
            assert_eq!(slice(data.as_ptr(), 3, "a", "n").unwrap(), &data);
            assert!(
                slice::<u32>(std::ptr::null(), 0, "a", "n")
                    .unwrap()
                    .is_empty()
            );
            assert!(slice(data.as_ptr(), 0, "a", "n").unwrap().is_empty());
            assert_eq!(
                slice::<u32>(std::ptr::null(), 2, "a", "n")
                    .unwrap_err()
                    .to_string(),
                "a is NULL but n is not 0"
            );
            assert_eq!(
                list(data.as_ptr(), 0, "events", "num_events").unwrap_err(),
                CError::EmptyArray {
                    what: "events",
                    count: "num_events"
                }
            );
            assert!(
                list::<u32>(std::ptr::null(), 0, "a", "n")
                    .unwrap()
                    .is_empty()
            );
        }
    }

    #[test]
    fn strings_are_checked_and_copied_out_cut_to_fit() {
        // SAFETY: for all of them, NUL-terminated literals and buffers of the sizes given.
        unsafe {
            assert_eq!(c_str(c"vadd".as_ptr(), "name").unwrap(), "vadd");
            assert!(c_str(std::ptr::null(), "name").is_err());
            let bad = [0xffu8 as c_char, 0];
            assert_eq!(
                c_str(bad.as_ptr(), "name").unwrap_err(),
                CError::NotUtf8 { what: "name" }
            );
            assert_eq!(c_str_lossy(bad.as_ptr(), "path").unwrap(), "\u{fffd}");
            let mut buf = [1 as c_char; 4];
            copy_str(buf.as_mut_ptr(), buf.len(), "abcdef", "buf").unwrap();
            assert_eq!(CStr::from_ptr(buf.as_ptr()).to_str().unwrap(), "abc");
            assert!(copy_str(buf.as_mut_ptr(), 0, "x", "buf").is_err());
        }
        let mut field = [1 as c_char; 3];
        fill_field(&mut field, "xyz");
        assert_eq!(field, [b'x' as c_char, b'y' as c_char, 0]);
    }

    #[test]
    fn out_parameters_refuse_or_skip_null() {
        let mut value = 0u64;
        // SAFETY: a live local or NULL.
        unsafe {
            write_out(&mut value, 7, "out").unwrap();
            assert_eq!(value, 7);
            assert!(write_out::<u64>(std::ptr::null_mut(), 1, "out").is_err());
            write_if::<u64>(std::ptr::null_mut(), 1);
            write_if(&mut value, 9);
        }
        assert_eq!(value, 9);
    }
}
