//! Host memory that devices reach by DMA: page-aligned, zeroed, counted against the owning
//! plugin's DMA grant, and readable by the host without entering wasm.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::budget::{Budget, Charge, Owner, OwnerId};
use super::errno;
use super::sync::{lock, wait_timeout};

/// A range that does not fit in a buffer or is misaligned for the access.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "{len} byte(s) at offset {offset:#x} do not fit in the {size:#x}-byte buffer or are misaligned"
)]
pub struct RangeError {
    /// Byte offset of the access in the buffer.
    pub offset: u64,
    /// Length of the access in bytes.
    pub len: u64,
    /// Size of the buffer in bytes.
    pub size: u64,
}

const NO_IO_ADDRESS: u64 = u64::MAX;

/// A page-aligned mapping: anonymous memory of its own, or a driver's mapping of a buffer
/// object that it took over. Devices write it concurrently with host reads, as real
/// DMA does; word-sized status fields are accessed atomically so that a completion flag
/// written last orders the data written before it.
#[derive(Debug)]
pub struct DmaMemory {
    ptr: NonNull<u8>,
    len: u64,
    owner: OwnerId,
    /// The bytes held against the owner's budget, given back when the memory is unmapped.
    _charge: Charge,
    io_address: AtomicU64,
    stores: Stores,
    /// The sealed memfd behind a [shareable](Self::allocate_shareable) or
    /// [mapped](Self::map_shared) memory.
    memfd: Option<OwnedFd>,
    /// Whether dropping it frees the pages for every process that maps it: true for the
    /// memory this process made, never for memory another process shared with it.
    frees_shared: bool,
}

/// The seals a shared memory carries before it leaves the process: its size is fixed (a
/// process that could shrink it would make every other mapping of it fault) and the seals
/// themselves are final.
const SHARE_SEALS: libc::c_int = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;

/// Word stores into a memory, counted, with a way to sleep until the next one: a poller of a
/// completion word an emulated device writes wakes when it is written, not at the end of its
/// sleep. Memory a real device writes is never counted; its pollers sleep their time out.
#[derive(Debug, Default)]
struct Stores {
    count: AtomicU64,
    sleepers: AtomicU32,
    lock: Mutex<()>,
    stored: Condvar,
}

impl Stores {
    fn note(&self) {
        self.count.fetch_add(1, Ordering::SeqCst);
        // Paired with `wait`: a sleeper counted itself before it read the count, so either it
        // saw this store or it is seen here and woken under the lock.
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _held = lock(&self.lock);
            self.stored.notify_all();
        }
    }

    fn wait(&self, seen: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        self.sleepers.fetch_add(1, Ordering::SeqCst);
        let mut held = lock(&self.lock);
        let stored = loop {
            if self.count.load(Ordering::SeqCst) != seen {
                break true;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break false;
            }
            held = wait_timeout(&self.stored, held, left);
        };
        drop(held);
        self.sleepers.fetch_sub(1, Ordering::SeqCst);
        stored
    }
}

// SAFETY: the mapping is plain memory owned by this value; all access goes through methods
// that bounds-check and copy, so sharing it between threads is as safe as sharing DMA memory
// with a device.
unsafe impl Send for DmaMemory {}
// SAFETY: see `Send`.
unsafe impl Sync for DmaMemory {}

/// The system page size.
pub fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 { size as u64 } else { 4096 }
}

const HUGE_PAGE: u64 = 2 << 20;

impl DmaMemory {
    /// Maps at least `len` zeroed bytes (rounded up to whole pages) for `owner`, charging
    /// `budget`. With `huge_pages`, sizes of 2 MiB and up try 2 MiB pages first (the real DFL
    /// driver needs physically contiguous buffers) and fall back to normal pages.
    pub fn allocate(
        len: u64,
        owner: OwnerId,
        budget: &Arc<Budget>,
        huge_pages: bool,
    ) -> io::Result<Arc<Self>> {
        let (len, huge) = rounded(len, huge_pages)?;
        let charge = budget.charge(len)?;
        let ptr = huge_first(huge, |huge| map_anonymous(len, huge))?;
        Ok(Self::wrap(ptr, len, owner, charge, None))
    }

    /// Takes over `len` bytes at `ptr`, a mapping someone else made (a driver's `mmap` of a
    /// buffer object, say), for `owner`, charging `budget` as [`allocate`](Self::allocate)
    /// does; the value `munmap`s it on drop. `ptr` must be page-aligned and `len` a non-zero
    /// whole number of pages (`EINVAL` otherwise).
    ///
    /// # Safety
    /// `ptr` must be the start of a live mapping of exactly `len` bytes, readable and
    /// writable, which nothing else unmaps, remaps or frees: on success its ownership passes to
    /// the returned value. On error the mapping is untouched and still the caller's to unmap.
    pub unsafe fn from_mapping(
        ptr: NonNull<u8>,
        len: u64,
        owner: OwnerId,
        budget: &Arc<Budget>,
    ) -> io::Result<Arc<Self>> {
        let page = page_size();
        let aligned = (ptr.as_ptr() as usize as u64).is_multiple_of(page);
        if len == 0 || !len.is_multiple_of(page) || len > isize::MAX as u64 || !aligned {
            return Err(errno(libc::EINVAL));
        }
        let charge = budget.charge(len)?;
        Ok(Self::wrap(ptr, len, owner, charge, None))
    }

    /// Like [`allocate`](Self::allocate), but backed by a sealed memfd that
    /// [`share`](Self::share) hands to another process (a node's local client maps its
    /// buffers this way). Shared memory costs more to fault in and gets transparent huge
    /// pages (asked for from 2 MiB) only where the system's `shmem_enabled` allows them,
    /// which most do not by default, so only hosts that hand memory out use it.
    pub fn allocate_shareable(
        len: u64,
        owner: OwnerId,
        budget: &Arc<Budget>,
        huge_pages: bool,
    ) -> io::Result<Arc<Self>> {
        let (len, huge) = rounded(len, huge_pages)?;
        let charge = budget.charge(len)?;
        let memfd = huge_first(huge, |huge| create_memfd(len, huge))?;
        let ptr = map_shared_fd(&memfd, len)?;
        Ok(Self::wrap(ptr, len, owner, charge, Some((memfd, true))))
    }

    /// A descriptor of this memory for another process to [map](Self::map_shared): a
    /// duplicate of its sealed memfd. `ENOTSUP` for memory that is not
    /// [shareable](Self::allocate_shareable).
    pub fn share(&self) -> io::Result<OwnedFd> {
        match &self.memfd {
            Some(memfd) => memfd.try_clone(),
            None => Err(errno(libc::ENOTSUP)),
        }
    }

    /// Maps memory another process [shared](Self::share), for `owner`, charging `budget` its
    /// size. The memfd must carry the size seals (`EPERM` otherwise): a sender that could
    /// still shrink it could make this process fault.
    pub fn map_shared(fd: OwnedFd, owner: OwnerId, budget: &Arc<Budget>) -> io::Result<Arc<Self>> {
        // SAFETY: F_GET_SEALS on a descriptor we own has no other preconditions.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        if seals < 0 {
            return Err(io::Error::last_os_error());
        }
        if seals & (libc::F_SEAL_SHRINK | libc::F_SEAL_GROW)
            != libc::F_SEAL_SHRINK | libc::F_SEAL_GROW
        {
            return Err(errno(libc::EPERM));
        }
        // SAFETY: fstat writes into the zeroed struct we pass.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `fd` is open for this call and `stat` is a valid struct to write.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let len = stat.st_size as u64;
        if len == 0 || !len.is_multiple_of(page_size()) || len > isize::MAX as u64 {
            return Err(errno(libc::EINVAL));
        }
        let charge = budget.charge(len)?;
        let ptr = map_shared_fd(&fd, len)?;
        Ok(Self::wrap(ptr, len, owner, charge, Some((fd, false))))
    }

    /// The value over a mapping made for `owner`, paid for by `charge`; `memfd` is the
    /// descriptor behind a shared mapping, and whether dropping the value frees its pages.
    fn wrap(
        ptr: NonNull<u8>,
        len: u64,
        owner: OwnerId,
        charge: Charge,
        memfd: Option<(OwnedFd, bool)>,
    ) -> Arc<Self> {
        let (memfd, frees_shared) = match memfd {
            Some((fd, frees)) => (Some(fd), frees),
            None => (None, false),
        };
        Arc::new(DmaMemory {
            ptr,
            len,
            owner,
            _charge: charge,
            io_address: AtomicU64::new(NO_IO_ADDRESS),
            stores: Stores::default(),
            memfd,
            frees_shared,
        })
    }

    /// Faults every page in now, as pinning a buffer for DMA does (the kernel's DMA_MAP,
    /// XRT's host buffer objects), so that the device's first pass over it pays no page
    /// faults. Best effort: on kernels without `MADV_POPULATE_WRITE` pages fault on first use.
    pub fn populate(&self) {
        // SAFETY: the range is this value's own mapping.
        unsafe {
            libc::madvise(
                self.ptr.as_ptr().cast(),
                self.len as usize,
                libc::MADV_POPULATE_WRITE,
            )
        };
    }

    /// Maps `len` bytes from `offset` of this [shareable](Self::allocate_shareable) memory
    /// over the pages at `at`, shared, so that what is written there is written here.
    /// `EINVAL` when the range is not whole pages of this memory, `ENOTSUP` without a memfd.
    ///
    /// # Safety
    /// `at..at + len` must be a mapping the caller owns, that nothing else reads or writes
    /// as ordinary Rust memory; the caller unmaps it before this memory's pages are reused.
    pub unsafe fn map_pages_at(&self, offset: u64, len: u64, at: NonNull<u8>) -> io::Result<()> {
        let Some(memfd) = &self.memfd else {
            return Err(errno(libc::ENOTSUP));
        };
        let page = page_size();
        let whole_pages = len > 0
            && offset.is_multiple_of(page)
            && len.is_multiple_of(page)
            && (at.as_ptr() as u64).is_multiple_of(page)
            && offset.checked_add(len).is_some_and(|end| end <= self.len);
        if !whole_pages {
            return Err(errno(libc::EINVAL));
        }
        // SAFETY: a fixed shared mapping over a range the caller owns (the contract above),
        // of a descriptor this value holds, within its size.
        let mapped = unsafe {
            libc::mmap(
                at.as_ptr().cast(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_FIXED,
                memfd.as_raw_fd(),
                offset as libc::off_t,
            )
        };
        if mapped == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// Whether [`map_pages_at`](Self::map_pages_at) can map it: it has a memfd.
    pub fn is_mappable(&self) -> bool {
        self.memfd.is_some()
    }

    /// Gives the pages of `len` bytes from `offset` back to the system: they read as zeros
    /// afterwards, here and in every mapping of them. Whole pages inside the range only.
    pub fn discard(&self, offset: u64, len: u64) -> Result<(), RangeError> {
        self.check(offset, len, page_size())?;
        let len = len - len % page_size();
        if len == 0 {
            return Ok(());
        }
        // SAFETY: whole pages of this value's own mapping; MADV_REMOVE frees a memfd's
        // pages (every mapping of them reads zeros), MADV_DONTNEED an anonymous mapping's.
        unsafe {
            let start = self.ptr.as_ptr().add(offset as usize).cast();
            let advice = if self.memfd.is_some() {
                libc::MADV_REMOVE
            } else {
                libc::MADV_DONTNEED
            };
            if libc::madvise(start, len as usize, advice) != 0 {
                // Pages that cannot be given back are still cleared.
                std::ptr::write_bytes(start.cast::<u8>(), 0, len as usize);
            }
        }
        Ok(())
    }

    /// The size in bytes, a whole number of pages.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Whether the size is zero; never true, since an allocation is at least one page.
    #[cfg(feature = "internals")]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The plugin instance that allocated the memory.
    pub fn owner(&self) -> OwnerId {
        self.owner
    }

    /// The mapping's address in this process, for kernel interfaces that pin user pages
    /// (`DFL_FPGA_PORT_DMA_MAP`'s `user_addr`).
    pub fn user_address(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }

    /// The device address of the current mapping, if a backend mapped it.
    pub fn io_address(&self) -> Option<u64> {
        let iova = self.io_address.load(Ordering::Acquire);
        (iova != NO_IO_ADDRESS).then_some(iova)
    }

    /// Records (or clears) the device address; called by the backend that maps the memory.
    pub fn set_io_address(&self, iova: Option<u64>) {
        self.io_address
            .store(iova.unwrap_or(NO_IO_ADDRESS), Ordering::Release);
    }

    fn check(&self, offset: u64, len: u64, align: u64) -> Result<usize, RangeError> {
        let fits = offset
            .checked_add(len)
            .is_some_and(|end| end <= self.len && offset.is_multiple_of(align));
        if fits {
            Ok(offset as usize)
        } else {
            Err(RangeError {
                offset,
                len,
                size: self.len,
            })
        }
    }

    /// Copies `dst.len()` bytes out, starting at `offset`.
    pub fn read(&self, offset: u64, dst: &mut [u8]) -> Result<(), RangeError> {
        let start = self.check(offset, dst.len() as u64, 1)?;
        // SAFETY: `check` proved the range lies inside the mapping, and `dst` is a distinct
        // Rust allocation.
        unsafe { copy_in_steps(self.ptr.as_ptr().add(start), dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// Copies `src` in, starting at `offset`.
    pub fn write(&self, offset: u64, src: &[u8]) -> Result<(), RangeError> {
        let start = self.check(offset, src.len() as u64, 1)?;
        // SAFETY: as in `read`.
        unsafe { copy_in_steps(src.as_ptr(), self.ptr.as_ptr().add(start), src.len()) };
        Ok(())
    }

    /// Fills `len` bytes at `offset` with `byte`.
    pub fn fill(&self, offset: u64, len: u64, byte: u8) -> Result<(), RangeError> {
        let start = self.check(offset, len, 1)?;
        // SAFETY: as in `read`.
        unsafe { std::ptr::write_bytes(self.ptr.as_ptr().add(start), byte, len as usize) };
        Ok(())
    }

    /// Copies `len` bytes from `src_offset` in `src` to `dst_offset` here, as a device would.
    pub fn copy_from(
        &self,
        dst_offset: u64,
        src: &DmaMemory,
        src_offset: u64,
        len: u64,
    ) -> Result<(), RangeError> {
        let dst_start = self.check(dst_offset, len, 1)?;
        let src_start = src.check(src_offset, len, 1)?;
        let len = len as usize;
        // SAFETY: `check` proved both ranges lie inside their mappings.
        let (from, to) = unsafe {
            (
                src.ptr.as_ptr().add(src_start),
                self.ptr.as_ptr().add(dst_start),
            )
        };
        let (from_at, to_at) = (from as usize, to as usize);
        if from_at < to_at + len && to_at < from_at + len {
            // SAFETY: both ranges were checked; `copy` allows their overlap.
            unsafe { std::ptr::copy(from, to, len) };
        } else {
            // SAFETY: both ranges were checked, and their addresses do not overlap.
            unsafe { copy_in_steps(from, to, len) };
        }
        Ok(())
    }

    /// Sets `words` 4-byte words at `offset` here to `f(a, b)` of the words at `a_offset` in
    /// `a` and `b_offset` in `b` (as bytes: `f` reads them in the device's byte order), in
    /// order, working on the mappings themselves as a device's compute unit does (no staging
    /// copies). The ranges may be the same.
    pub fn zip_words_from(
        &self,
        offset: u64,
        (a, a_offset): (&DmaMemory, u64),
        (b, b_offset): (&DmaMemory, u64),
        words: u64,
        f: impl Fn([u8; 4], [u8; 4]) -> [u8; 4],
    ) -> Result<(), RangeError> {
        let len = words.checked_mul(4).ok_or(RangeError {
            offset,
            len: u64::MAX,
            size: self.len,
        })?;
        let out = self.check(offset, len, 1)?;
        let a_start = a.check(a_offset, len, 1)?;
        let b_start = b.check(b_offset, len, 1)?;
        // SAFETY: the three ranges were checked to lie inside their mappings; every access is
        // an unaligned read or write of one word through a raw pointer, so ranges that overlap
        // only change which values are read, as they would on a device.
        unsafe {
            let out = self.ptr.as_ptr().add(out).cast::<[u8; 4]>();
            let a = a.ptr.as_ptr().add(a_start).cast::<[u8; 4]>();
            let b = b.ptr.as_ptr().add(b_start).cast::<[u8; 4]>();
            for i in 0..words as usize {
                let (x, y) = (a.add(i).read_unaligned(), b.add(i).read_unaligned());
                out.add(i).write_unaligned(f(x, y));
            }
        }
        Ok(())
    }

    fn word(&self, offset: u64) -> Result<&AtomicU64, RangeError> {
        let start = self.check(offset, 8, 8)?;
        // SAFETY: the range is inside the mapping and 8-byte aligned (the mapping is page
        // aligned), which is what AtomicU64 requires.
        Ok(unsafe { &*(self.ptr.as_ptr().add(start) as *const AtomicU64) })
    }

    /// Reads the little-endian 64-bit word at `offset` (8-byte aligned), ordered after any
    /// device writes that preceded the write of this word.
    pub fn load_u64(&self, offset: u64) -> Result<u64, RangeError> {
        Ok(u64::from_le(self.word(offset)?.load(Ordering::Acquire)))
    }

    /// Writes the little-endian 64-bit word at `offset` (8-byte aligned), ordered after every
    /// earlier write: a device writes its completion word this way.
    /// Wakes whoever [waits](Self::wait_for_store) on the memory.
    pub fn store_u64(&self, offset: u64, value: u64) -> Result<(), RangeError> {
        self.word(offset)?.store(value.to_le(), Ordering::Release);
        self.stores.note();
        Ok(())
    }

    /// How many words [`store_u64`](Self::store_u64) has written: read before a poll's read,
    /// then passed to [`wait_for_store`](Self::wait_for_store).
    pub fn stores_seen(&self) -> u64 {
        self.stores.count.load(Ordering::SeqCst)
    }

    /// Sleeps up to `timeout`, or until a word is stored after `seen` was read; returns whether
    /// one was.
    pub fn wait_for_store(&self, seen: u64, timeout: Duration) -> bool {
        self.stores.wait(seen, timeout)
    }
}

impl Drop for DmaMemory {
    fn drop(&mut self) {
        if let Some(memfd) = self.memfd.as_ref().filter(|_| self.frees_shared) {
            // Whoever else still maps the memory keeps a mapping, not the pages: what they
            // touch afterwards is new memory of their own.
            // SAFETY: a punch over the whole of a memfd this value made.
            unsafe {
                libc::fallocate(
                    memfd.as_raw_fd(),
                    libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE,
                    0,
                    self.len as libc::off_t,
                )
            };
        }
        // SAFETY: `ptr`/`len` came from a successful mmap of exactly this size (ours in
        // `allocate`, or one whose ownership `from_mapping`'s caller handed over).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len as usize) };
    }
}

impl Owner {
    /// DMA memory of at least `len` bytes for this owner, charged to its grant: shareable
    /// when the owner's host hands memory out, with 2 MiB pages tried first when
    /// `huge_pages` (see [`DmaMemory::allocate`]).
    pub fn allocate_dma(&self, len: u64, huge_pages: bool) -> io::Result<Arc<DmaMemory>> {
        if self.shares_memory {
            DmaMemory::allocate_shareable(len, self.id, &self.dma, huge_pages)
        } else {
            DmaMemory::allocate(len, self.id, &self.dma, huge_pages)
        }
    }

    /// DMA memory of at least `len` bytes for this owner, charged to its grant and always
    /// [mappable](DmaMemory::map_pages_at) (a memfd), whether or not its host hands memory
    /// out: for memory an emulated device maps where its kernels run.
    pub fn allocate_mappable_dma(&self, len: u64) -> io::Result<Arc<DmaMemory>> {
        DmaMemory::allocate_shareable(len, self.id, &self.dma, false)
    }
}

/// Bytes a bulk copy in or out of DMA memory moves per `memcpy`. On the bench machine
/// (glibc 2.36, an EPYC with 1 MiB of L2), memcpy of 512 KiB-8 MiB ran 6-12 % below one
/// copy of 64 MiB, and copies of 32-128 KiB level with it or above (BENCHMARKS.md): the
/// emulated cards' copy engines and the staging of transfers move megabytes at a time.
const COPY_STEP: usize = 64 << 10;

/// Copies `len` bytes from `src` to `dst` in steps of [`COPY_STEP`].
///
/// # Safety
/// As `std::ptr::copy_nonoverlapping`: both ranges valid for `len` bytes, not overlapping.
unsafe fn copy_in_steps(src: *const u8, dst: *mut u8, len: usize) {
    let mut done = 0;
    while done < len {
        let step = COPY_STEP.min(len - done);
        // SAFETY: `done + step <= len`, within both ranges the caller vouches for.
        unsafe { std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), step) };
        done += step;
    }
}

/// `make` with 2 MiB pages when `huge`, falling back to normal pages when those fail.
fn huge_first<T>(huge: bool, make: impl Fn(bool) -> io::Result<T>) -> io::Result<T> {
    make(huge).or_else(|err| if huge { make(false) } else { Err(err) })
}

/// `len` rounded up to what an allocation maps: whole 2 MiB pages when `huge_pages` asks
/// for them and `len` is at least one (then `true`), else whole pages. `EINVAL` for 0.
fn rounded(len: u64, huge_pages: bool) -> io::Result<(u64, bool)> {
    if len == 0 {
        return Err(errno(libc::EINVAL));
    }
    let huge = huge_pages && len >= HUGE_PAGE;
    let granule = if huge { HUGE_PAGE } else { page_size() };
    let len = len
        .checked_next_multiple_of(granule)
        .filter(|&l| l <= isize::MAX as u64)
        .ok_or_else(|| errno(libc::ENOMEM))?;
    Ok((len, huge))
}

/// A memfd of `len` bytes, sealed against any change of size.
fn create_memfd(len: u64, huge: bool) -> io::Result<OwnedFd> {
    let mut flags = libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING;
    if huge {
        flags |= libc::MFD_HUGETLB;
    }
    // SAFETY: the name is a NUL-terminated literal.
    let raw = unsafe { libc::memfd_create(c"accelhost-dma".as_ptr(), flags) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `raw` is a descriptor just created and owned by no one else.
    let memfd = unsafe { OwnedFd::from_raw_fd(raw) };
    // SAFETY: both calls act on the descriptor we own.
    unsafe {
        if libc::ftruncate(raw, len as libc::off_t) != 0
            || libc::fcntl(raw, libc::F_ADD_SEALS, SHARE_SEALS) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(memfd)
}

/// Maps all `len` bytes of `fd`, shared, for reading and writing.
fn map_shared_fd(fd: &OwnedFd, len: u64) -> io::Result<NonNull<u8>> {
    // SAFETY: a shared mapping of a descriptor we hold, with no address hint.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    if len >= HUGE_PAGE {
        // Shared memory gets transparent huge pages only where the system's setting
        // (`shmem_enabled`) is `advise` and the mapping asks, or `always`: copies through the
        // card's banks and a node's buffers then fault and walk a 2 MiB page where they took
        // 512 small ones. Advice only.
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len as usize, libc::MADV_HUGEPAGE) };
    }
    NonNull::new(ptr.cast()).ok_or_else(|| errno(libc::ENOMEM))
}

fn map_anonymous(len: u64, huge: bool) -> io::Result<NonNull<u8>> {
    let mut flags = libc::MAP_PRIVATE | libc::MAP_ANONYMOUS;
    if huge {
        flags |= libc::MAP_HUGETLB;
    }
    // SAFETY: an anonymous mapping with no address hint has no preconditions.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            flags,
            -1,
            0,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    if !huge && len >= HUGE_PAGE {
        // Without reserved huge pages, ask for transparent ones: a 2 MiB buffer then costs one
        // page fault instead of 512, and copies through it fewer TLB misses. Advice only.
        // SAFETY: the range is the mapping just made.
        unsafe { libc::madvise(ptr, len as usize, libc::MADV_HUGEPAGE) };
    }
    NonNull::new(ptr.cast()).ok_or_else(|| errno(libc::ENOMEM))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::BudgetKind;

    fn memory(len: u64, budget: &Arc<Budget>) -> io::Result<Arc<DmaMemory>> {
        DmaMemory::allocate(len, OwnerId::fresh(), budget, false)
    }

    #[test]
    fn pages_map_elsewhere_only_whole_and_from_a_memfd_and_discarded_pages_read_zero() {
        let page = page_size();
        let budget = Budget::unlimited(BudgetKind::Dma);
        let shared =
            DmaMemory::allocate_shareable(3 * page, OwnerId::fresh(), &budget, false).unwrap();
        let private = memory(3 * page, &budget).unwrap();
        // A place to map into: an anonymous mapping of two pages of our own.
        let window = map_anonymous(2 * page, false).unwrap();
        let errno_of = |result: io::Result<()>| result.unwrap_err().raw_os_error();
        // SAFETY: `window` is our own mapping, used only through these calls and volatile
        // reads and writes of its first page, and unmapped at the end.
        unsafe {
            let misaligned = NonNull::new(window.as_ptr().add(1)).unwrap();
            assert_eq!(
                errno_of(shared.map_pages_at(0, page, misaligned)),
                Some(libc::EINVAL)
            );
            assert_eq!(
                errno_of(shared.map_pages_at(1, page, window)),
                Some(libc::EINVAL)
            );
            assert_eq!(
                errno_of(shared.map_pages_at(0, page + 1, window)),
                Some(libc::EINVAL)
            );
            assert_eq!(
                errno_of(shared.map_pages_at(2 * page, 2 * page, window)),
                Some(libc::EINVAL)
            );
            assert_eq!(
                errno_of(shared.map_pages_at(0, 0, window)),
                Some(libc::EINVAL)
            );
            assert_eq!(
                errno_of(private.map_pages_at(0, page, window)),
                Some(libc::ENOTSUP)
            );

            shared.write(page, &[7; 8]).unwrap();
            shared.map_pages_at(page, page, window).unwrap();
            assert_eq!(
                window.as_ptr().read_volatile(),
                7,
                "the memory's page, seen there"
            );
            window.as_ptr().add(1).write_volatile(9);
            let mut back = [0u8; 2];
            shared.read(page, &mut back).unwrap();
            assert_eq!(back, [7, 9], "written there, seen here");

            shared.discard(page, page).unwrap();
            shared.read(page, &mut back).unwrap();
            assert_eq!(back, [0, 0]);
            assert_eq!(window.as_ptr().read_volatile(), 0, "and in every mapping");
            libc::munmap(window.as_ptr().cast(), 2 * page as usize);
        }
        assert!(shared.discard(2 * page, 2 * page).is_err(), "past the end");
        private.write(0, &[5; 8]).unwrap();
        private.discard(0, page).unwrap();
        let mut back = [1u8; 8];
        private.read(0, &mut back).unwrap();
        assert_eq!(back, [0; 8], "anonymous memory too");
    }

    #[test]
    fn a_store_wakes_a_waiter_before_its_timeout() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let mem = memory(4096, &budget).unwrap();
        let seen = mem.stores_seen();
        assert!(!mem.wait_for_store(seen, Duration::from_millis(1)));
        let waiter = {
            let mem = mem.clone();
            // A lost wake would show as this wait running out its minute and returning false.
            std::thread::spawn(move || mem.wait_for_store(seen, Duration::from_secs(60)))
        };
        while mem.stores.sleepers.load(Ordering::SeqCst) == 0 {
            std::thread::yield_now();
        }
        mem.store_u64(8, 7).unwrap();
        assert!(waiter.join().unwrap());
        // A store already made ends a wait at once, whether or not anyone slept through it.
        assert!(mem.wait_for_store(seen, Duration::from_secs(60)));
        assert_eq!(mem.stores_seen(), seen + 1);
    }

    #[test]
    fn allocation_rounds_to_pages_and_is_zeroed() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let mem = memory(100, &budget).unwrap();
        assert_eq!(mem.len(), page_size());
        let mut bytes = vec![0xFF; mem.len() as usize];
        mem.read(0, &mut bytes).unwrap();
        assert!(bytes.iter().all(|&b| b == 0));
        assert_eq!(budget.used(), page_size());
        drop(mem);
        assert_eq!(budget.used(), 0);
    }

    fn add_le(a: [u8; 4], b: [u8; 4]) -> [u8; 4] {
        u32::from_le_bytes(a)
            .wrapping_add(u32::from_le_bytes(b))
            .to_le_bytes()
    }

    #[test]
    fn words_are_zipped_on_the_mappings_in_place_and_checked() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let (a, b) = (
            memory(4096, &budget).unwrap(),
            memory(4096, &budget).unwrap(),
        );
        let words: Vec<u8> = (0u32..8).flat_map(|i| (i * 3).to_le_bytes()).collect();
        a.write(4, &words).unwrap();
        b.write(8, &[1, 0, 0, 0].repeat(8)).unwrap();
        b.zip_words_from(100, (&a, 4), (&b, 8), 8, add_le).unwrap();
        let mut out = [0u8; 32];
        b.read(100, &mut out).unwrap();
        let sums: Vec<u32> = out
            .as_chunks::<4>()
            .0
            .iter()
            .map(|w| u32::from_le_bytes(*w))
            .collect();
        assert_eq!(sums, (0u32..8).map(|i| i * 3 + 1).collect::<Vec<_>>());
        // In place: the output is one of the inputs.
        a.zip_words_from(4, (&a, 4), (&a, 4), 8, add_le).unwrap();
        a.read(4, &mut out).unwrap();
        assert_eq!(u32::from_le_bytes(out[28..32].try_into().unwrap()), 42);
        assert!(a.zip_words_from(4092, (&a, 0), (&b, 0), 2, add_le).is_err());
        assert!(a.zip_words_from(0, (&a, 0), (&b, 4092), 2, add_le).is_err());
        assert!(
            a.zip_words_from(0, (&a, 0), (&b, 0), u64::MAX, add_le)
                .is_err()
        );
    }

    #[test]
    fn budget_is_enforced_and_released() {
        let budget = Budget::new(BudgetKind::Dma, 2 * page_size());
        let a = memory(page_size(), &budget).unwrap();
        let _b = memory(page_size(), &budget).unwrap();
        let err = memory(1, &budget).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
        assert!(err.to_string().contains("grants.dma_memory_mib"), "{err}");
        drop(a);
        memory(1, &budget).unwrap();
    }

    #[test]
    fn zero_length_is_invalid() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        assert_eq!(
            memory(0, &budget).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn ranges_are_checked() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let mem = memory(4096, &budget).unwrap();
        let size = mem.len();
        assert!(mem.write(size - 4, &[1, 2, 3, 4]).is_ok());
        assert!(mem.write(size - 3, &[1, 2, 3, 4]).is_err());
        assert!(mem.read(u64::MAX, &mut [0u8; 2]).is_err());
        assert!(mem.load_u64(4).is_err(), "misaligned word");
        assert!(mem.load_u64(size).is_err());
        mem.store_u64(8, 0x1122_3344_5566_7788).unwrap();
        let mut raw = [0u8; 8];
        mem.read(8, &mut raw).unwrap();
        assert_eq!(u64::from_le_bytes(raw), 0x1122_3344_5566_7788);
        assert_eq!(mem.load_u64(8).unwrap(), 0x1122_3344_5566_7788);
    }

    #[test]
    fn copy_between_buffers() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let src = memory(8192, &budget).unwrap();
        let dst = memory(8192, &budget).unwrap();
        src.fill(0, 8192, 0xAF).unwrap();
        dst.copy_from(64, &src, 128, 256).unwrap();
        let mut out = [0u8; 320];
        dst.read(0, &mut out).unwrap();
        assert!(out[..64].iter().all(|&b| b == 0));
        assert!(out[64..].iter().all(|&b| b == 0xAF));
        assert!(dst.copy_from(8000, &src, 0, 256).is_err());
    }

    /// Copies longer than one [`COPY_STEP`] go in steps: every byte lands where a single
    /// copy would put it, from any offset, to the last odd byte; within one buffer the
    /// ranges may overlap, either way, as with `memmove`.
    #[test]
    fn long_copies_in_steps_move_every_byte_and_overlap_as_memmove() {
        let len = 3 * COPY_STEP + 123;
        let budget = Budget::new(BudgetKind::Dma, 16 << 20);
        let pattern: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
        let mem = memory(4 << 20, &budget).unwrap();
        mem.write(7, &pattern).unwrap();
        let mut out = vec![0u8; len];
        mem.read(7, &mut out).unwrap();
        assert!(
            out == pattern,
            "a stepped write and read lose or move bytes"
        );

        let other = memory(4 << 20, &budget).unwrap();
        other.copy_from(1, &mem, 7, len as u64).unwrap();
        other.read(1, &mut out).unwrap();
        assert!(
            out == pattern,
            "a stepped copy between buffers loses or moves bytes"
        );

        for (from, to) in [(7u64, 7 + 1000), (7 + 1000, 7)] {
            mem.write(from, &pattern).unwrap();
            mem.copy_from(to, &mem, from, len as u64).unwrap();
            mem.read(to, &mut out).unwrap();
            assert!(
                out == pattern,
                "an overlapping copy from {from} to {to} is not memmove's"
            );
        }
    }

    /// Maps `pages` pages of a fresh file at `path` shared, as a driver's BO mapping would be.
    fn map_file(path: &std::path::Path, pages: u64) -> NonNull<u8> {
        let len = pages * page_size();
        let file = std::fs::File::create_new(path).unwrap();
        file.set_len(len).unwrap();
        // SAFETY: a new shared mapping with no address hint replaces nothing.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(ptr, libc::MAP_FAILED);
        NonNull::new(ptr.cast()).unwrap()
    }

    fn is_mapped(path: &std::path::Path) -> bool {
        let maps = std::fs::read_to_string("/proc/self/maps").unwrap();
        maps.contains(path.to_str().unwrap())
    }

    #[test]
    fn from_mapping_takes_over_an_existing_mapping() {
        let path = std::env::temp_dir().join(format!(
            "accelhost-memory-from-mapping-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_file(&path);
        let len = 2 * page_size();
        let budget = Budget::new(BudgetKind::Dma, len);
        let owner = OwnerId::fresh();

        let ptr = map_file(&path, 2);
        // SAFETY: `ptr` is a live, writable mapping of exactly `len` bytes nobody else owns.
        let mem = unsafe { DmaMemory::from_mapping(ptr, len, owner, &budget) }.unwrap();
        assert_eq!((mem.len(), mem.owner()), (len, owner));
        assert_eq!(mem.user_address(), ptr.as_ptr() as u64);
        assert_eq!(budget.used(), len);
        mem.store_u64(page_size(), 0xFEED_F00D).unwrap();
        mem.write(0, b"shared").unwrap();
        let on_disk = std::fs::read(&path).unwrap();
        assert_eq!(
            &on_disk[..6],
            b"shared",
            "the memory is the mapping, not a copy"
        );
        assert!(mem.load_u64(len).is_err());

        // Over budget, misaligned or mis-sized: refused, and the mapping stays the caller's.
        let other = Budget::new(BudgetKind::Dma, page_size());
        // SAFETY: as above; on error the mapping is not taken over.
        let err = unsafe { DmaMemory::from_mapping(ptr, len, owner, &other) }.unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(other.used(), 0);
        for (at, size) in [(1, page_size()), (0, page_size() + 1), (0, 0)] {
            let p = NonNull::new(ptr.as_ptr().wrapping_add(at)).unwrap();
            // SAFETY: the arguments are refused before anything is taken over.
            let err = unsafe { DmaMemory::from_mapping(p, size, owner, &other) }.unwrap_err();
            assert_eq!(err.raw_os_error(), Some(libc::EINVAL), "{at} {size}");
        }
        assert!(is_mapped(&path));

        drop(mem);
        assert_eq!(budget.used(), 0);
        assert!(!is_mapped(&path), "dropping the memory unmapped it");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn io_address_round_trips() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let mem = memory(1, &budget).unwrap();
        assert_eq!(mem.io_address(), None);
        mem.set_io_address(Some(0x1000));
        assert_eq!(mem.io_address(), Some(0x1000));
        mem.set_io_address(None);
        assert_eq!(mem.io_address(), None);
    }

    #[test]
    fn shared_memory_is_one_memory_in_both_mappings_and_keeps_its_size() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let theirs = Budget::new(BudgetKind::Dma, 1 << 20);
        let node = DmaMemory::allocate_shareable(5000, OwnerId::fresh(), &budget, false).unwrap();
        assert_eq!(node.len(), 8192);
        let fd = node.share().unwrap();
        let client = DmaMemory::map_shared(fd, OwnerId::fresh(), &theirs).unwrap();
        assert_eq!((client.len(), theirs.used()), (8192, 8192));
        client.write(4096, b"from the client").unwrap();
        let mut seen = [0u8; 15];
        node.read(4096, &mut seen).unwrap();
        assert_eq!(&seen, b"from the client");
        node.store_u64(8, 7).unwrap();
        assert_eq!(client.load_u64(8).unwrap(), 7);
        // The receiver cannot change the size under the sender's mapping, nor lift the seals.
        let fd = client.share().unwrap();
        // SAFETY: plain calls on a descriptor this test owns.
        unsafe {
            assert_ne!(libc::ftruncate(fd.as_raw_fd(), 0), 0);
            assert_ne!(libc::ftruncate(fd.as_raw_fd(), 1 << 20), 0);
            assert_ne!(
                libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, 0),
                0,
                "the seals are final"
            );
        }
        drop(node);
        assert_eq!(budget.used(), 0);
        // The maker's pages went with it; the receiver's mapping reads fresh zeroes.
        node_gone_reads_zero(&client);
        client.write(0, b"still mapped").unwrap();
        drop(client);
        assert_eq!(theirs.used(), 0);
    }

    fn node_gone_reads_zero(memory: &DmaMemory) {
        let mut seen = [0xffu8; 15];
        memory.read(4096, &mut seen).unwrap();
        assert_eq!(seen, [0; 15]);
        assert_eq!(memory.load_u64(8).unwrap(), 0);
    }

    #[test]
    fn a_receiver_dropping_its_mapping_frees_nothing_of_the_makers() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let node = DmaMemory::allocate_shareable(4096, OwnerId::fresh(), &budget, false).unwrap();
        node.write(0, b"kept").unwrap();
        let client =
            DmaMemory::map_shared(node.share().unwrap(), OwnerId::fresh(), &budget).unwrap();
        drop(client);
        let mut seen = [0u8; 4];
        node.read(0, &mut seen).unwrap();
        assert_eq!(&seen, b"kept");
    }

    #[test]
    fn private_memory_is_not_shared_and_unsealed_memory_is_not_mapped() {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let private = memory(4096, &budget).unwrap();
        assert_eq!(
            private.share().unwrap_err().raw_os_error(),
            Some(libc::ENOTSUP)
        );
        // SAFETY: creates and sizes a memfd this test owns.
        let fd = unsafe {
            let raw = libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC);
            assert!(raw >= 0);
            assert_eq!(libc::ftruncate(raw, 4096), 0);
            OwnedFd::from_raw_fd(raw)
        };
        let err = DmaMemory::map_shared(fd, OwnerId::fresh(), &budget).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EPERM));
        assert_eq!(budget.used(), 4096, "only the private memory is charged");
    }

    #[test]
    fn shared_memory_is_charged_before_it_is_made() {
        let budget = Budget::new(BudgetKind::Dma, 4096);
        let err =
            DmaMemory::allocate_shareable(8192, OwnerId::fresh(), &budget, false).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::OutOfMemory);
        assert_eq!(budget.used(), 0);
    }
}
