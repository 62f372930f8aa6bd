//! GEM buffer objects: handles closed unless kept, and their host mappings.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::Arc;

use super::layout::{gem_close_arg, map_bo_arg};
use crate::devices::ioctl::ioctl_ptr;
use crate::devices::{Budget, DmaMemory, OwnerId, errno};
use crate::families::xocl::abi::{self, CreateBoArg};

/// A GEM handle that is closed on drop unless kept.
pub(super) struct GemHandle<'a> {
    pub(super) fd: BorrowedFd<'a>,
    pub(super) handle: u32,
    pub(super) kept: bool,
}

impl<'a> GemHandle<'a> {
    /// CREATE_BO with `arg`.
    pub(super) fn create(fd: BorrowedFd<'a>, arg: &mut CreateBoArg) -> io::Result<Self> {
        // SAFETY: CREATE_BO reads and writes one `CreateBoArg`, which `arg` is.
        unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_CREATE_BO, arg) }?;
        Ok(GemHandle {
            fd,
            handle: arg.handle,
            kept: false,
        })
    }

    /// Leaves the BO open; returns its handle.
    pub(super) fn keep(mut self) -> u32 {
        self.kept = true;
        self.handle
    }
}

impl Drop for GemHandle<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = gem_close(self.fd, self.handle);
        }
    }
}

pub(super) fn gem_close(fd: BorrowedFd<'_>, handle: u32) -> io::Result<()> {
    let mut arg = gem_close_arg(handle);
    // SAFETY: GEM_CLOSE reads one `GemCloseArg`, which `arg` is.
    unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_GEM_CLOSE, &mut arg) }.map(drop)
}

/// MAP_BO and `mmap` of `len` bytes of the BO's host backing, as `DmaMemory` charged to
/// `budget`.
pub(super) fn map_bo(
    fd: BorrowedFd<'_>,
    handle: u32,
    len: u64,
    owner: OwnerId,
    budget: &Arc<Budget>,
) -> io::Result<Arc<DmaMemory>> {
    let mut arg = map_bo_arg(handle);
    // SAFETY: MAP_BO reads and writes one `MapBoArg`, which `arg` is.
    unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_MAP_BO, &mut arg) }?;
    let offset = libc::off_t::try_from(arg.offset).map_err(|_| errno(libc::EINVAL))?;
    let length = usize::try_from(len).map_err(|_| errno(libc::ENOMEM))?;
    // SAFETY: a new shared mapping with no address hint replaces nothing; the kernel checks
    // the fd, length and offset.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            length,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            offset,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| errno(libc::ENOMEM))?;
    // SAFETY: `ptr` is the start of the live, read-write mapping of exactly `len` bytes just
    // made, which nothing else knows of; on success it passes to the `DmaMemory`.
    let memory = unsafe { DmaMemory::from_mapping(ptr, len, owner, budget) };
    if memory.is_err() {
        // SAFETY: the mapping was not taken over, so it is still ours to unmap.
        unsafe { libc::munmap(ptr.as_ptr().cast(), length) };
    }
    memory
}
