//! MMIO windows: what a backend maps, and the one place where every access (from a plugin or
//! from an application) is bounds- and alignment-checked before it reaches the backend.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Instant;

use super::errno;
use super::poll::{PollOutcome, poll_until};

/// A mapped register window. Offsets reaching an implementation are in bounds and aligned to
/// the access width: [`CheckedMmio`] guarantees it.
pub trait MmioWindow: Send + Sync {
    /// The window's size in bytes.
    fn size(&self) -> u64;
    /// Reads the 32-bit register at byte `offset`.
    fn read32(&self, offset: u64) -> io::Result<u32>;
    /// Reads the 64-bit register at byte `offset`.
    fn read64(&self, offset: u64) -> io::Result<u64>;
    /// Writes the 32-bit register at byte `offset`.
    fn write32(&self, offset: u64, value: u32) -> io::Result<()>;
    /// Writes the 64-bit register at byte `offset`.
    fn write64(&self, offset: u64, value: u64) -> io::Result<()>;
}

/// A window whose registers are big-endian: every access is byte-swapped, so callers read
/// and write native values (libcxl's `CXL_MMIO_BIG_ENDIAN` mapping).
pub struct ByteSwapped(pub Arc<dyn MmioWindow>);

impl MmioWindow for ByteSwapped {
    fn size(&self) -> u64 {
        self.0.size()
    }

    fn read32(&self, offset: u64) -> io::Result<u32> {
        self.0.read32(offset).map(u32::swap_bytes)
    }

    fn read64(&self, offset: u64) -> io::Result<u64> {
        self.0.read64(offset).map(u64::swap_bytes)
    }

    fn write32(&self, offset: u64, value: u32) -> io::Result<()> {
        self.0.write32(offset, value.swap_bytes())
    }

    fn write64(&self, offset: u64, value: u64) -> io::Result<()> {
        self.0.write64(offset, value.swap_bytes())
    }
}

/// The width of one register access.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AccessWidth {
    /// A 32-bit access, 4-byte aligned.
    Bits32,
    /// A 64-bit access, 8-byte aligned.
    Bits64,
}

impl AccessWidth {
    /// The access size in bytes, which is also the alignment it needs.
    pub fn bytes(self) -> u64 {
        match self {
            AccessWidth::Bits32 => 4,
            AccessWidth::Bits64 => 8,
        }
    }
}

/// Why an MMIO access was refused or failed.
#[derive(Debug, thiserror::Error)]
pub enum MmioFault {
    /// The access does not lie wholly inside the window.
    #[error("{}-bit access at offset {offset:#x} is outside the {size:#x}-byte MMIO region", .width.bytes() * 8)]
    OutOfRange {
        /// Byte offset of the access in the window.
        offset: u64,
        /// Width of the access.
        width: AccessWidth,
        /// Size of the window in bytes.
        size: u64,
    },
    /// The offset is not a multiple of the access width.
    #[error("{}-bit access at offset {offset:#x} is not {}-byte aligned", .width.bytes() * 8, .width.bytes())]
    Misaligned {
        /// Byte offset of the access in the window.
        offset: u64,
        /// Width of the access.
        width: AccessWidth,
    },
    /// A poll did not see the expected value before its deadline.
    #[error("polling offset {offset:#x} timed out; the last value read was {last:#x}")]
    PollTimeout {
        /// Byte offset of the polled 64-bit register.
        offset: u64,
        /// The last value read from it.
        last: u64,
    },
    /// The backend (kernel driver or emulator) failed the access.
    #[error("the device refused the access: {0}")]
    Device(#[from] io::Error),
}

/// A window plus the checks every access goes through.
#[derive(Clone)]
pub struct CheckedMmio {
    window: Arc<dyn MmioWindow>,
    size: u64,
}

impl CheckedMmio {
    /// Wraps `window`; its size is read once, here.
    pub fn new(window: Arc<dyn MmioWindow>) -> Self {
        let size = window.size();
        CheckedMmio { window, size }
    }

    /// The window's size in bytes.
    pub fn size(&self) -> u64 {
        self.size
    }

    #[inline]
    fn check(&self, offset: u64, width: AccessWidth) -> Result<(), MmioFault> {
        let bytes = width.bytes();
        if !offset.is_multiple_of(bytes) {
            return Err(MmioFault::Misaligned { offset, width });
        }
        if offset.checked_add(bytes).is_none_or(|end| end > self.size) {
            return Err(MmioFault::OutOfRange {
                offset,
                width,
                size: self.size,
            });
        }
        Ok(())
    }

    /// Reads the 32-bit register at byte `offset` (4-byte aligned, inside the window).
    #[inline]
    pub fn read32(&self, offset: u64) -> Result<u32, MmioFault> {
        self.check(offset, AccessWidth::Bits32)?;
        Ok(self.window.read32(offset)?)
    }

    /// Reads the 64-bit register at byte `offset` (8-byte aligned, inside the window).
    #[inline]
    pub fn read64(&self, offset: u64) -> Result<u64, MmioFault> {
        self.check(offset, AccessWidth::Bits64)?;
        Ok(self.window.read64(offset)?)
    }

    /// Writes the 32-bit register at byte `offset` (4-byte aligned, inside the window).
    #[inline]
    pub fn write32(&self, offset: u64, value: u32) -> Result<(), MmioFault> {
        self.check(offset, AccessWidth::Bits32)?;
        Ok(self.window.write32(offset, value)?)
    }

    /// Writes the 64-bit register at byte `offset` (8-byte aligned, inside the window).
    #[inline]
    pub fn write64(&self, offset: u64, value: u64) -> Result<(), MmioFault> {
        self.check(offset, AccessWidth::Bits64)?;
        Ok(self.window.write64(offset, value)?)
    }

    /// Writes `value` with the given width (the upper half is ignored for 32-bit writes).
    pub fn write(&self, offset: u64, value: u64, width: AccessWidth) -> Result<(), MmioFault> {
        match width {
            AccessWidth::Bits32 => self.write32(offset, value as u32),
            AccessWidth::Bits64 => self.write64(offset, value),
        }
    }

    /// Reads the 64-bit register at `offset` until `value & mask == expected` or `deadline`.
    pub fn poll64(
        &self,
        offset: u64,
        mask: u64,
        expected: u64,
        deadline: Instant,
    ) -> Result<u64, MmioFault> {
        self.check(offset, AccessWidth::Bits64)?;
        match poll_until(deadline, mask, expected, || self.window.read64(offset))? {
            PollOutcome::Matched(value) => Ok(value),
            PollOutcome::TimedOut(last) => Err(MmioFault::PollTimeout { offset, last }),
        }
    }
}

/// A register window `mmap`ed from a device fd (the Linux backends' windows). Accesses are
/// single volatile loads and stores, little-endian: on any host a value shows the register's
/// bytes in the order the device holds them, as a little-endian reader sees them. Once
/// revoked (the device fd is closing), accesses fail with `ENODEV`.
pub(crate) struct MappedMmio {
    size: u64,
    mapping: RwLock<Option<Mapping>>,
}

impl MappedMmio {
    /// Maps `size` bytes of `fd` at `offset`, shared and read-write.
    pub(crate) fn map(fd: BorrowedFd<'_>, size: u64, offset: u64) -> io::Result<Self> {
        Ok(MappedMmio {
            size,
            mapping: RwLock::new(Some(Mapping::new(fd, size, offset)?)),
        })
    }

    /// Unmaps the window; later accesses fail.
    pub(crate) fn revoke(&self) {
        *self.mapping.write().unwrap_or_else(PoisonError::into_inner) = None;
    }

    fn read<T: Copy>(&self, offset: u64) -> io::Result<T> {
        let guard = self.mapping.read().unwrap_or_else(PoisonError::into_inner);
        let ptr = guard
            .as_ref()
            .ok_or_else(|| errno(libc::ENODEV))?
            .word::<T>(offset)?;
        // SAFETY: `word` checked that `ptr` is aligned and inside the mapping, and the read
        // lock keeps the mapping in place until the load is done.
        Ok(unsafe { ptr.read_volatile() })
    }

    fn write<T: Copy>(&self, offset: u64, value: T) -> io::Result<()> {
        let guard = self.mapping.read().unwrap_or_else(PoisonError::into_inner);
        let ptr = guard
            .as_ref()
            .ok_or_else(|| errno(libc::ENODEV))?
            .word::<T>(offset)?;
        // SAFETY: as in `read`; the mapping is writable (PROT_WRITE).
        unsafe { ptr.write_volatile(value) };
        Ok(())
    }
}

impl MmioWindow for MappedMmio {
    fn size(&self) -> u64 {
        self.size
    }

    fn read32(&self, offset: u64) -> io::Result<u32> {
        self.read::<u32>(offset).map(u32::from_le)
    }

    fn read64(&self, offset: u64) -> io::Result<u64> {
        self.read::<u64>(offset).map(u64::from_le)
    }

    fn write32(&self, offset: u64, value: u32) -> io::Result<()> {
        self.write(offset, value.to_le())
    }

    fn write64(&self, offset: u64, value: u64) -> io::Result<()> {
        self.write(offset, value.to_le())
    }
}

/// A shared read-write mapping of part of a file, unmapped on drop.
struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is device (or file) memory owned by this value; all access is through
// single volatile loads and stores of aligned words, which any thread may issue concurrently,
// as with any memory-mapped registers.
unsafe impl Send for Mapping {}
// SAFETY: see `Send`.
unsafe impl Sync for Mapping {}

impl Mapping {
    fn new(fd: BorrowedFd<'_>, size: u64, offset: u64) -> io::Result<Self> {
        let len = usize::try_from(size).map_err(|_| errno(libc::EINVAL))?;
        let offset = libc::off_t::try_from(offset).map_err(|_| errno(libc::EINVAL))?;
        // SAFETY: a new shared mapping with no address hint replaces nothing; the kernel
        // checks the fd, length and offset.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast()).ok_or_else(|| errno(libc::ENOMEM))?;
        Ok(Mapping { ptr, len })
    }

    /// A pointer to the `T` at `offset`, if it is aligned and inside the mapping. Callers go
    /// through `CheckedMmio`, but the trait methods are safe, so this is checked again.
    fn word<T>(&self, offset: u64) -> io::Result<*mut T> {
        let width = size_of::<T>() as u64;
        let fits = offset.is_multiple_of(width)
            && offset
                .checked_add(width)
                .is_some_and(|end| end <= self.len as u64);
        if !fits {
            return Err(errno(libc::EINVAL));
        }
        // SAFETY: `offset + width <= len`, so the result stays inside the mapping.
        Ok(unsafe { self.ptr.as_ptr().add(offset as usize) }.cast())
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` came from a successful mmap of exactly this size.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::scratch::Scratch;
    use std::fs::{self, OpenOptions};
    use std::os::fd::AsFd;
    use std::sync::Mutex;
    use std::time::Duration;

    /// A window of plain 64-bit cells.
    struct Cells(Mutex<Vec<u64>>);

    impl MmioWindow for Cells {
        fn size(&self) -> u64 {
            self.0.lock().unwrap().len() as u64 * 8
        }
        fn read32(&self, offset: u64) -> io::Result<u32> {
            let cell = self.0.lock().unwrap()[(offset / 8) as usize];
            Ok((cell >> ((offset % 8) * 8)) as u32)
        }
        fn read64(&self, offset: u64) -> io::Result<u64> {
            Ok(self.0.lock().unwrap()[(offset / 8) as usize])
        }
        fn write32(&self, offset: u64, value: u32) -> io::Result<()> {
            let mut cells = self.0.lock().unwrap();
            let shift = (offset % 8) * 8;
            let cell = &mut cells[(offset / 8) as usize];
            *cell = (*cell & !(0xFFFF_FFFF << shift)) | ((value as u64) << shift);
            Ok(())
        }
        fn write64(&self, offset: u64, value: u64) -> io::Result<()> {
            self.0.lock().unwrap()[(offset / 8) as usize] = value;
            Ok(())
        }
    }

    fn region(cells: usize) -> CheckedMmio {
        CheckedMmio::new(Arc::new(Cells(Mutex::new(vec![0; cells]))))
    }

    #[test]
    fn accesses_inside_the_region_work() {
        let mmio = region(4);
        mmio.write64(8, 0x1234_5678_9ABC_DEF0).unwrap();
        assert_eq!(mmio.read64(8).unwrap(), 0x1234_5678_9ABC_DEF0);
        assert_eq!(mmio.read32(12).unwrap(), 0x1234_5678);
        mmio.write32(28, 7).unwrap();
        assert_eq!(mmio.read32(28).unwrap(), 7);
    }

    #[test]
    fn out_of_range_and_misaligned_accesses_are_refused() {
        let mmio = region(4);
        assert!(matches!(mmio.read64(32), Err(MmioFault::OutOfRange { .. })));
        assert!(matches!(mmio.read32(32), Err(MmioFault::OutOfRange { .. })));
        assert!(matches!(
            mmio.write64(u64::MAX - 7, 0),
            Err(MmioFault::OutOfRange { .. })
        ));
        assert!(matches!(mmio.read64(4), Err(MmioFault::Misaligned { .. })));
        assert!(matches!(
            mmio.write32(2, 0),
            Err(MmioFault::Misaligned { .. })
        ));
        let msg = mmio.read64(32).unwrap_err().to_string();
        assert!(msg.contains("0x20") && msg.contains("outside"), "{msg}");
    }

    #[test]
    fn poll_sees_a_value_written_later_and_times_out_otherwise() {
        let mmio = region(2);
        let writer = mmio.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            writer.write64(8, 0x5).unwrap();
        });
        let value = mmio
            .poll64(8, 0x1, 0x1, Instant::now() + Duration::from_secs(5))
            .unwrap();
        assert_eq!(value, 0x5);
        t.join().unwrap();
        let err = mmio
            .poll64(0, 0x1, 0x1, Instant::now() + Duration::from_millis(5))
            .unwrap_err();
        assert!(matches!(err, MmioFault::PollTimeout { offset: 0, last: 0 }));
    }

    #[test]
    fn mmio_window_accesses_the_mapped_file_until_revoked() {
        let s = Scratch::new("mapped-mmio");
        let path = s.0.join("region");
        fs::write(&path, vec![0u8; 8192]).unwrap();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        let window = MappedMmio::map(file.as_fd(), 4096, 4096).unwrap();
        assert_eq!(window.size(), 4096);
        window.write64(0x138, 0x1122_3344_5566_7788).unwrap();
        assert_eq!(window.read32(0x13C).unwrap(), 0x1122_3344);
        window.write32(0x138, 3).unwrap();
        assert_eq!(window.read64(0x138).unwrap(), 0x1122_3344_0000_0003);
        assert_eq!(
            window.read32(4094).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        assert_eq!(
            window.read64(4).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        assert_eq!(
            window.write32(4096, 0).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        let bytes = fs::read(&path).unwrap();
        assert_eq!(
            bytes[4096 + 0x138..4096 + 0x140],
            [3, 0, 0, 0, 0x44, 0x33, 0x22, 0x11]
        );
        window.revoke();
        assert_eq!(
            window.read64(0).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        assert_eq!(
            window.write64(0, 1).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
    }
}
