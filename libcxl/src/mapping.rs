//! A context's problem-state mapping: the byte order every access swaps to (chosen at
//! `cxl_mmio_map`), libcxl's range and alignment checks, and its rule that a read of all ones
//! is a failed access (`EIO`, and `SIGBUS` unless the program installed libcxl's handler).

use std::sync::atomic::{AtomicBool, Ordering};

use accelhost::cxl::Mmio;

use crate::error::{CxlResult, Failure, refuse};

pub const BIG_ENDIAN: u32 = 0x1;
pub const LITTLE_ENDIAN: u32 = 0x2;
pub const HOST_ENDIAN: u32 = 0x3;

/// Set by `cxl_mmio_install_sigbus_handler`: failed accesses then answer `EIO` alone.
pub static SIGBUS_HANDLED: AtomicBool = AtomicBool::new(false);

/// A mapped problem-state area and the byte order of its accesses.
pub struct Mapping {
    pub mmio: Mmio,
    pub flags: u32,
}

impl Mapping {
    /// `raw` (as a plain load reads it) in the program's byte order.
    pub fn value64(&self, raw: u64) -> u64 {
        match self.flags {
            BIG_ENDIAN => u64::from_be(raw),
            LITTLE_ENDIAN => u64::from_le(raw),
            _ => raw,
        }
    }

    pub fn value32(&self, raw: u32) -> u32 {
        match self.flags {
            BIG_ENDIAN => u32::from_be(raw),
            LITTLE_ENDIAN => u32::from_le(raw),
            _ => raw,
        }
    }

    pub fn check(&self, call: &str, offset: u64, width: u64) -> CxlResult<()> {
        if offset >= self.mmio.size() {
            return Err(refuse(
                call,
                libc::EINVAL,
                format!(
                    "offset {offset:#x} is past the mapping ({:#x} bytes)",
                    self.mmio.size()
                ),
            ));
        }
        if !offset.is_multiple_of(width) {
            return Err(refuse(
                call,
                libc::EINVAL,
                format!("offset {offset:#x} is not {width}-byte aligned"),
            ));
        }
        Ok(())
    }
}

/// A failed access: `SIGBUS` as libcxl raises it when no handler is installed, then `EIO`.
pub fn access_failed(call: &str, why: &str) -> Failure {
    let failure = refuse(call, libc::EIO, why);
    if !SIGBUS_HANDLED.load(Ordering::Acquire) {
        // SAFETY: raising a signal at this thread; its default action ends the process.
        unsafe { libc::raise(libc::SIGBUS) };
    }
    failure
}
