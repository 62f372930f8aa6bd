//! The answer of every `clGet*Info` call: a value's bytes, written by one rule (the size
//! alone when `param_value` is NULL; `CL_INVALID_VALUE` when the caller's buffer is smaller).

use std::ffi::c_void;

use crate::cl::*;

/// A value to answer with, as the bytes OpenCL lays it out in.
pub struct Value(Vec<u8>);

impl Value {
    /// A NUL-terminated string.
    pub fn text(text: &str) -> Value {
        let mut bytes = text.as_bytes().to_vec();
        bytes.push(0);
        Value(bytes)
    }

    /// A `cl_uint`.
    pub fn uint(value: cl_uint) -> Value {
        Value(value.to_ne_bytes().to_vec())
    }

    /// A `cl_bool`.
    pub fn bool(value: bool) -> Value {
        Value::uint(if value { CL_TRUE } else { CL_FALSE })
    }

    /// A `cl_ulong` or a `cl_bitfield`.
    pub fn ulong(value: cl_ulong) -> Value {
        Value(value.to_ne_bytes().to_vec())
    }

    /// `size_t` values.
    pub fn sizes(values: &[usize]) -> Value {
        Value(values.iter().flat_map(|v| v.to_ne_bytes()).collect())
    }

    /// A handle.
    pub fn pointer<T>(value: *const T) -> Value {
        Value((value as usize).to_ne_bytes().to_vec())
    }

    /// An array of `cl_name_version`: each name cut to 63 bytes and NUL-padded.
    pub fn name_versions(entries: &[(&str, cl_version)]) -> Value {
        let mut bytes = Vec::with_capacity(entries.len() * size_of::<cl_name_version>());
        for (name, version) in entries {
            let mut padded = [0u8; 64];
            let name = &name.as_bytes()[..name.len().min(63)];
            padded[..name.len()].copy_from_slice(name);
            bytes.extend_from_slice(&version.to_ne_bytes());
            bytes.extend_from_slice(&padded);
        }
        Value(bytes)
    }

    /// Bytes as they are (a program's IL).
    pub fn bytes(bytes: Vec<u8>) -> Value {
        Value(bytes)
    }

    /// An empty array.
    pub fn none() -> Value {
        Value(Vec::new())
    }

    /// Writes the value as OpenCL says.
    ///
    /// # Safety
    /// `out` must be NULL or valid for `size` bytes; `size_ret` NULL or valid for a `usize`.
    pub unsafe fn answer(&self, size: usize, out: *mut c_void, size_ret: *mut usize) -> cl_int {
        if !out.is_null() {
            if size < self.0.len() {
                return CL_INVALID_VALUE;
            }
            // SAFETY: the caller's buffer holds `size` bytes, at least the value's length.
            unsafe { std::ptr::copy_nonoverlapping(self.0.as_ptr(), out.cast(), self.0.len()) };
        }
        if !size_ret.is_null() {
            // SAFETY: per the contract above.
            unsafe { size_ret.write(self.0.len()) };
        }
        CL_SUCCESS
    }
}

/// Answers an info query with `value`, or `CL_INVALID_VALUE` when `param` named none.
///
/// # Safety
/// As [`Value::answer`].
pub unsafe fn give(
    value: Option<Value>,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> crate::error::ClResult<()> {
    let value = value.ok_or(CL_INVALID_VALUE)?;
    // SAFETY: per the contract above.
    match unsafe { value.answer(size, out, size_ret) } {
        CL_SUCCESS => Ok(()),
        code => Err(code),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_size_query_writes_only_the_size_and_a_short_buffer_is_refused() {
        let value = Value::text("accelhost");
        let mut size = 0usize;
        // SAFETY: NULL value, a valid size_ret.
        let code = unsafe { value.answer(0, std::ptr::null_mut(), &mut size) };
        assert_eq!((code, size), (CL_SUCCESS, 10));
        let mut short = [0u8; 9];
        // SAFETY: the buffer holds 9 bytes, as passed.
        let code = unsafe { value.answer(9, short.as_mut_ptr().cast(), std::ptr::null_mut()) };
        assert_eq!(code, CL_INVALID_VALUE);
        assert_eq!(short, [0; 9], "nothing is written on a refusal");
        let mut whole = [0xffu8; 12];
        // SAFETY: the buffer holds 12 bytes.
        let code = unsafe { value.answer(12, whole.as_mut_ptr().cast(), &mut size) };
        assert_eq!((code, size), (CL_SUCCESS, 10));
        assert_eq!(&whole[..10], b"accelhost\0");
    }

    #[test]
    fn name_versions_are_cut_to_63_bytes_and_padded() {
        let long = "x".repeat(70);
        let value = Value::name_versions(&[("cl_khr_icd", make_version(1, 0, 0)), (&long, 7)]);
        assert_eq!(value.0.len(), 2 * 68);
        assert_eq!(&value.0[..4], &make_version(1, 0, 0).to_ne_bytes());
        assert_eq!(&value.0[4..15], b"cl_khr_icd\0");
        assert_eq!(
            value.0[68 + 4 + 63],
            0,
            "the long name keeps its terminating NUL"
        );
        assert_eq!(value.0[68 + 4 + 62], b'x');
    }
}
