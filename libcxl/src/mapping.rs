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

/// A register width libcxl reads and writes: its byte swaps and its failed-access value.
pub trait Word: Copy + PartialEq + std::fmt::LowerHex {
    /// Its size in bytes, which an offset must be aligned to.
    const BYTES: u64;
    /// What a failed access reads.
    const ALL_ONES: Self;
    /// Big-endian to host order and back (the same swap both ways).
    fn be(self) -> Self;
    /// Little-endian to host order and back.
    fn le(self) -> Self;
}

impl Word for u32 {
    const BYTES: u64 = 4;
    const ALL_ONES: Self = u32::MAX;
    fn be(self) -> Self {
        u32::from_be(self)
    }
    fn le(self) -> Self {
        u32::from_le(self)
    }
}

impl Word for u64 {
    const BYTES: u64 = 8;
    const ALL_ONES: Self = u64::MAX;
    fn be(self) -> Self {
        u64::from_be(self)
    }
    fn le(self) -> Self {
        u64::from_le(self)
    }
}

/// A mapped problem-state area and the byte order of its accesses.
pub struct Mapping {
    pub mmio: Mmio,
    pub flags: u32,
}

impl Mapping {
    /// `word` between the AFU's order (as a plain load reads it) and the program's: the
    /// mapping's swap, which is its own inverse.
    pub fn order<W: Word>(&self, word: W) -> W {
        match self.flags {
            BIG_ENDIAN => word.be(),
            LITTLE_ENDIAN => word.le(),
            _ => word,
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
