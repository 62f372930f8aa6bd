//! Allocations (`olMemAlloc`), found again by any address inside them. Host and shared
//! memory is memory the device reaches, at its own address in this process; a device
//! allocation's address is address space reserved and never backed, so it is unique and a
//! dereference by the program faults, as on a device.

use std::sync::Arc;

use accelhost::{Memory, MemoryKind};
use accelhost_door::usm::{AddressMap, DeviceAddresses};

use crate::result::{OlRes, fail, failed};
use crate::state::{Device, handle_of};
use crate::types::*;

/// One allocation.
pub struct Allocation {
    pub memory: Memory,
    /// The device it was made on (its handle's address).
    device: usize,
    kind: u32,
    /// Whether its address is a device address (address space the program must not touch).
    device_memory: bool,
}

/// Live allocations by their first byte's address.
static LIVE: AddressMap<Allocation> = AddressMap::new();
/// The addresses of device allocations: reserved, never backed, never handed out twice.
static DEVICE_ADDRESSES: DeviceAddresses = DeviceAddresses::new();

/// The allocation of `device` that holds `size` bytes at `address`, and where in it they
/// start.
pub fn find(device: &Device, address: usize, size: usize) -> Option<(Arc<Allocation>, u64)> {
    let (allocation, offset) = LIVE.find(address, size)?;
    (allocation.device == handle_of(device) as usize).then_some((allocation, offset as u64))
}

/// Whether `address` lies in a device allocation of any device (address space the program
/// must not touch).
pub fn is_device_memory(address: usize) -> bool {
    LIVE.find(address, 1).is_some_and(|(a, _)| a.device_memory)
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
    let (base, device_memory) = match memory.host_ptr() {
        Some(pointer) => (pointer as usize, false),
        None => (
            DEVICE_ADDRESSES.take(size).ok_or_else(|| {
                fail(
                    OL_ERRC_OUT_OF_RESOURCES,
                    format!("no {size} bytes of address space for a device allocation"),
                )
            })?,
            true,
        ),
    };
    let allocation = Arc::new(Allocation {
        memory,
        device: handle_of(device) as usize,
        kind,
        device_memory,
    });
    LIVE.insert(base, size, allocation).map_err(|overlap| {
        fail(
            OL_ERRC_OUT_OF_RESOURCES,
            format!("the new allocation {overlap}"),
        )
    })?;
    Ok(base)
}

/// Frees the allocation of `kind` on `device` that starts at `address`. Its memory is
/// released once no queued command uses it any more.
pub fn free(device: &Device, kind: u32, address: usize) -> OlRes<()> {
    let Some(allocation) = LIVE.starting_at(address) else {
        return Err(fail(
            OL_ERRC_INVALID_ARGUMENT,
            format!("{address:#x} is not the start of a live allocation"),
        ));
    };
    if allocation.device != handle_of(device) as usize || allocation.kind != kind {
        return Err(fail(
            OL_ERRC_INVALID_ARGUMENT,
            format!("{address:#x} was not allocated on this device with this type"),
        ));
    }
    drop(LIVE.remove_if(address, |a| std::ptr::eq(a, &*allocation)));
    Ok(())
}
