//! Allocations (`olMemAlloc`), found again by any address inside them. Host and shared
//! memory is memory the device reaches, at its own address in this process; a device
//! allocation's address is address space reserved and never backed, so it is unique and a
//! dereference by the program faults, as on a device.

use std::collections::BTreeMap;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, MutexGuard};

use accelhost::{Memory, MemoryKind};

use crate::result::{OlRes, fail, failed};
use crate::state::{Device, handle_of};
use crate::types::*;

/// One allocation.
pub struct Allocation {
    pub memory: Memory,
    /// The device it was made on (its handle's address).
    device: usize,
    kind: u32,
    base: usize,
    size: usize,
    reserved: bool,
}

impl Drop for Allocation {
    fn drop(&mut self) {
        if self.reserved {
            // SAFETY: base and size are the reservation's, made by mmap and unmapped once.
            unsafe { libc::munmap(self.base as *mut c_void, self.size) };
        }
    }
}

/// Live allocations by their first byte's address.
static LIVE: Mutex<BTreeMap<usize, Arc<Allocation>>> = Mutex::new(BTreeMap::new());

fn live() -> MutexGuard<'static, BTreeMap<usize, Arc<Allocation>>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// The allocation of `device` that holds `size` bytes at `address`, and where in it they
/// start.
pub fn find(device: &Device, address: usize, size: usize) -> Option<(Arc<Allocation>, u64)> {
    let live = live();
    let (_, allocation) = live.range(..=address).next_back()?;
    let offset = address - allocation.base;
    let fits = offset
        .checked_add(size)
        .is_some_and(|end| end <= allocation.size);
    (allocation.device == handle_of(device) as usize && fits)
        .then(|| (allocation.clone(), offset as u64))
}

/// Whether `address` lies in a device allocation of any device (address space the program
/// must not touch).
pub fn is_device_memory(address: usize) -> bool {
    let live = live();
    live.range(..=address)
        .next_back()
        .is_some_and(|(_, a)| a.reserved && address - a.base < a.size)
}

/// `size` bytes of `kind` (an `ol_alloc_type_t`) on `device`; their address.
pub fn allocate(device: &Device, kind: u32, size: usize) -> OlRes<usize> {
    let memory_kind = match kind {
        OL_ALLOC_TYPE_HOST => MemoryKind::Host,
        OL_ALLOC_TYPE_DEVICE => MemoryKind::Device,
        OL_ALLOC_TYPE_SHARED => MemoryKind::Shared,
        other => {
            return Err(fail(
                OL_ERRC_INVALID_ENUMERATION,
                format!("no allocation type {other}"),
            ));
        }
    };
    if size == 0 {
        return Err(fail(OL_ERRC_INVALID_SIZE, "Size is 0"));
    }
    let memory = device
        .handle
        .alloc(memory_kind, size as u64)
        .map_err(|err| failed(&err))?;
    let (base, reserved) = match memory.host_ptr() {
        Some(pointer) => (pointer as usize, false),
        None => (reserve(size)?, true),
    };
    live().insert(
        base,
        Arc::new(Allocation {
            memory,
            device: handle_of(device) as usize,
            kind,
            base,
            size,
            reserved,
        }),
    );
    Ok(base)
}

/// Frees the allocation of `kind` on `device` that starts at `address`. Its memory is
/// released once no queued command uses it any more.
pub fn free(device: &Device, kind: u32, address: usize) -> OlRes<()> {
    let mut live = live();
    match live.get(&address) {
        Some(a) if a.device == handle_of(device) as usize && a.kind == kind => {}
        Some(_) => {
            return Err(fail(
                OL_ERRC_INVALID_ARGUMENT,
                format!("{address:#x} was not allocated on this device with this type"),
            ));
        }
        None => {
            return Err(fail(
                OL_ERRC_INVALID_ARGUMENT,
                format!("{address:#x} is not the start of a live allocation"),
            ));
        }
    }
    let freed = live.remove(&address);
    drop(live);
    drop(freed);
    Ok(())
}

/// `size` bytes of address space that nothing backs.
fn reserve(size: usize) -> OlRes<usize> {
    // SAFETY: a fresh anonymous mapping with no access; nothing else refers to it.
    let base = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            size,
            libc::PROT_NONE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if base == libc::MAP_FAILED {
        return Err(fail(
            OL_ERRC_OUT_OF_RESOURCES,
            format!("no {size} bytes of address space for a device allocation"),
        ));
    }
    Ok(base as usize)
}
