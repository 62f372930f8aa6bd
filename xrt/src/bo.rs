//! Buffer objects (`xrtBufferHandle`): device memory in a memory bank of the loaded xclbin,
//! and a host backing store in this process. Map, write and read touch only the backing
//! store; data crosses to and from the device only on sync, as with XRT.

use std::ffi::{c_int, c_void};
use std::sync::Arc;

use accelhost::{Memory, MemoryKind};

use crate::device::Device;
use accelhost_door::handles::Object;

use crate::error::{XrtResult, answer, failed, handle, refuse, status};
use crate::handles::{close, of, publish};

/// `XCL_BO_FLAGS_DEV_ONLY`: device memory with no backing store.
const DEV_ONLY: u64 = 1 << 28;
/// `XCL_BO_FLAGS_HOST_ONLY`: a backing store the device reaches, no device memory.
const HOST_ONLY: u64 = 1 << 29;
/// `XCL_BO_FLAGS_P2P` and `XCL_BO_FLAGS_SVM`, which the library has no memory for.
const UNSUPPORTED: &[(u64, &str)] = &[(1 << 30, "P2P"), (1 << 27, "SVM")];
/// The bits of a memory group that name the bank (`XRT_BO_FLAGS_MEMIDX_MASK`'s low half).
const BANK_MASK: u32 = 0xFFFF;
/// `XCL_BO_SYNC_BO_TO_DEVICE` and `XCL_BO_SYNC_BO_FROM_DEVICE`.
const TO_DEVICE: c_int = 0;
const FROM_DEVICE: c_int = 1;

/// The memory of a buffer and of the sub-buffers carved from it.
struct Backing {
    device: Option<Memory>,
    host: Option<Memory>,
}

/// A buffer object: `size` bytes at `offset` of its backing.
pub struct Bo {
    owner: Arc<Device>,
    backing: Arc<Backing>,
    offset: u64,
    size: u64,
}

impl Object for Bo {
    const KIND: &'static str = "buffer";
}

impl Bo {
    /// The buffer of a live handle.
    pub fn of(call: &str, bo: *mut c_void) -> XrtResult<Arc<Bo>> {
        of::<Bo>(call, bo)
    }

    /// What a kernel argument gets: the device memory (the backing store for a host-only
    /// buffer), and where in it the buffer starts.
    pub fn kernel_memory(&self) -> (&Memory, u64) {
        let memory = self.backing.device.as_ref().or(self.backing.host.as_ref());
        (memory.expect("a buffer has memory"), self.offset)
    }

    /// The device the buffer was allocated on.
    pub fn device(&self) -> &Arc<Device> {
        &self.owner
    }

    fn check_range(&self, call: &str, offset: u64, size: u64) -> XrtResult<()> {
        if offset.checked_add(size).is_none_or(|end| end > self.size) {
            return Err(refuse(
                call,
                libc::EINVAL,
                format!(
                    "{size} bytes at {offset} do not fit in the {}-byte buffer",
                    self.size
                ),
            ));
        }
        Ok(())
    }

    fn host(&self, call: &str) -> XrtResult<&Memory> {
        self.backing.host.as_ref().ok_or_else(|| {
            refuse(
                call,
                libc::EINVAL,
                "a device-only buffer has no host memory (it was allocated with DEV_ONLY)",
            )
        })
    }
}

fn allocate(
    call: &str,
    device: &Device,
    kind: MemoryKind,
    size: u64,
    bank: u32,
) -> XrtResult<Memory> {
    match kind {
        MemoryKind::Device => device.handle.alloc_in_bank(kind, size, bank),
        _ => device.handle.alloc(kind, size),
    }
    .map_err(|err| failed(call, &err))
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtBOAlloc(
    device: *mut c_void,
    size: usize,
    flags: u64,
    group: u32,
) -> *mut c_void {
    const CALL: &str = "xrtBOAlloc";
    handle(CALL, || {
        let device = Device::of(CALL, device)?;
        if size == 0 {
            return Err(refuse(CALL, libc::EINVAL, "a buffer of 0 bytes"));
        }
        if let Some((_, name)) = UNSUPPORTED.iter().find(|(bit, _)| flags & bit != 0) {
            return Err(refuse(
                CALL,
                libc::EOPNOTSUPP,
                format!("{name} buffers are not supported"),
            ));
        }
        if flags & DEV_ONLY != 0 && flags & HOST_ONLY != 0 {
            return Err(refuse(
                CALL,
                libc::EINVAL,
                "DEV_ONLY and HOST_ONLY together leave the buffer no memory",
            ));
        }
        let size = size as u64;
        let bank = group & BANK_MASK;
        let backing = Backing {
            device: (flags & HOST_ONLY == 0)
                .then(|| allocate(CALL, &device, MemoryKind::Device, size, bank))
                .transpose()?,
            host: (flags & DEV_ONLY == 0)
                .then(|| allocate(CALL, &device, MemoryKind::Host, size, bank))
                .transpose()?,
        };
        publish(
            CALL,
            Arc::new(Bo {
                owner: device,
                backing: Arc::new(backing),
                offset: 0,
                size,
            }),
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtBOAllocUserPtr(
    _device: *mut c_void,
    _userptr: *mut c_void,
    _size: usize,
    _flags: u64,
    _group: u32,
) -> *mut c_void {
    const CALL: &str = "xrtBOAllocUserPtr";
    handle(CALL, || {
        Err(refuse(
            CALL,
            libc::EOPNOTSUPP,
            "buffers over the program's own memory are not supported: allocate with xrtBOAlloc \
             and map it",
        ))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtBOSubAlloc(parent: *mut c_void, size: usize, offset: usize) -> *mut c_void {
    const CALL: &str = "xrtBOSubAlloc";
    handle(CALL, || {
        let parent = Bo::of(CALL, parent)?;
        parent.check_range(CALL, offset as u64, size as u64)?;
        publish(
            CALL,
            Arc::new(Bo {
                owner: parent.owner.clone(),
                backing: parent.backing.clone(),
                offset: parent.offset + offset as u64,
                size: size as u64,
            }),
        )
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtBOFree(bo: *mut c_void) -> c_int {
    const CALL: &str = "xrtBOFree";
    status(CALL, || close::<Bo>(CALL, bo))
}

/// The size in bytes; 0 with `errno` set for a bad handle.
#[unsafe(no_mangle)]
pub extern "C" fn xrtBOSize(bo: *mut c_void) -> usize {
    const CALL: &str = "xrtBOSize";
    answer(CALL, 0, || Ok(Bo::of(CALL, bo)?.size as usize))
}

/// The device address; `u64::MAX` with `errno` set for a bad handle.
#[unsafe(no_mangle)]
pub extern "C" fn xrtBOAddress(bo: *mut c_void) -> u64 {
    const CALL: &str = "xrtBOAddress";
    answer(CALL, u64::MAX, || {
        let bo = Bo::of(CALL, bo)?;
        let (memory, offset) = bo.kernel_memory();
        Ok(memory.device_address() + offset)
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtBOSync(
    bo: *mut c_void,
    direction: c_int,
    size: usize,
    offset: usize,
) -> c_int {
    const CALL: &str = "xrtBOSync";
    status(CALL, || {
        let bo = Bo::of(CALL, bo)?;
        let (size, at) = (size as u64, offset as u64);
        bo.check_range(CALL, at, size)?;
        let (Some(device), Some(host)) = (&bo.backing.device, &bo.backing.host) else {
            // One side only: there is nothing to move.
            return Ok(());
        };
        let at = bo.offset + at;
        let queue = &bo.owner.transfers;
        match direction {
            TO_DEVICE => queue.enqueue_memcpy(device, at, host, at, size),
            FROM_DEVICE => queue.enqueue_memcpy(host, at, device, at, size),
            other => {
                return Err(refuse(
                    CALL,
                    libc::EINVAL,
                    format!("sync direction {other}: only TO_DEVICE (0) and FROM_DEVICE (1) are"),
                ));
            }
        }
        .and_then(|event| event.wait())
        .map_err(|err| failed(CALL, &err))
    })
}

/// The backing store's address in this process, valid until the buffer is freed.
#[unsafe(no_mangle)]
pub extern "C" fn xrtBOMap(bo: *mut c_void) -> *mut c_void {
    const CALL: &str = "xrtBOMap";
    handle(CALL, || {
        let bo = Bo::of(CALL, bo)?;
        let base = bo
            .host(CALL)?
            .host_ptr()
            .expect("host memory has an address");
        // SAFETY: the buffer lies within its backing store.
        Ok(unsafe { base.add(bo.offset as usize) }.cast())
    })
}

/// # Safety
/// `source` points to `size` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn xrtBOWrite(
    bo: *mut c_void,
    source: *const c_void,
    size: usize,
    seek: usize,
) -> c_int {
    const CALL: &str = "xrtBOWrite";
    status(CALL, || {
        let bo = Bo::of(CALL, bo)?;
        bo.check_range(CALL, seek as u64, size as u64)?;
        if size == 0 {
            return Ok(());
        }
        if source.is_null() {
            return Err(refuse(CALL, libc::EINVAL, "the source is NULL"));
        }
        // SAFETY: the caller passes size bytes at source.
        let data = unsafe { std::slice::from_raw_parts(source.cast::<u8>(), size) };
        bo.host(CALL)?
            .write(bo.offset + seek as u64, data)
            .map_err(|err| failed(CALL, &err))
    })
}

/// # Safety
/// `target` points to `size` writable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn xrtBORead(
    bo: *mut c_void,
    target: *mut c_void,
    size: usize,
    skip: usize,
) -> c_int {
    const CALL: &str = "xrtBORead";
    status(CALL, || {
        let bo = Bo::of(CALL, bo)?;
        bo.check_range(CALL, skip as u64, size as u64)?;
        if size == 0 {
            return Ok(());
        }
        if target.is_null() {
            return Err(refuse(CALL, libc::EINVAL, "the target is NULL"));
        }
        // SAFETY: the caller passes size writable bytes at target.
        let out = unsafe { std::slice::from_raw_parts_mut(target.cast::<u8>(), size) };
        bo.host(CALL)?
            .read(bo.offset + skip as u64, out)
            .map_err(|err| failed(CALL, &err))
    })
}

/// Copies between two buffers' device memory (their backing stores for host-only ones).
#[unsafe(no_mangle)]
pub extern "C" fn xrtBOCopy(
    target: *mut c_void,
    source: *mut c_void,
    size: usize,
    target_offset: usize,
    source_offset: usize,
) -> c_int {
    const CALL: &str = "xrtBOCopy";
    status(CALL, || {
        let (target, source) = (Bo::of(CALL, target)?, Bo::of(CALL, source)?);
        target.check_range(CALL, target_offset as u64, size as u64)?;
        source.check_range(CALL, source_offset as u64, size as u64)?;
        let (to, to_base) = target.kernel_memory();
        let (from, from_base) = source.kernel_memory();
        target
            .owner
            .transfers
            .enqueue_memcpy(
                to,
                to_base + target_offset as u64,
                from,
                from_base + source_offset as u64,
                size as u64,
            )
            .and_then(|event| event.wait())
            .map_err(|err| failed(CALL, &err))
    })
}
