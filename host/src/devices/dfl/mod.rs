//! The Intel DFL family (`/dev/dfl-port.N`, used by OPAE): ABI facts, the Linux backend and
//! an emulated port with the NLB0 loopback accelerator. Both backends implement the same two
//! traits, so the `dfl` host import cannot tell them apart.

pub mod abi;
pub mod emu;
pub mod linux;

use std::io;
use std::sync::Arc;

use super::{DmaMemory, MmioWindow, OwnerId, errno};
use crate::types::{BusAddress, Guid};

/// What sysfs (or the emulator) says about a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortDesc {
    /// The name grants use: `emu:<id>` or `/dev/dfl-port.N`.
    pub path: String,
    /// The port number (`id` in sysfs).
    pub port_id: u32,
    /// The AFU id from the AFU header (`afu_id` in sysfs).
    pub afu_id: Guid,
    pub vendor_id: u16,
    pub device_id: u16,
    pub bus_address: Option<BusAddress>,
    pub socket_id: Option<u32>,
    pub emulated: bool,
}

/// `DFL_FPGA_PORT_GET_INFO`, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo {
    pub flags: u32,
    pub num_regions: u32,
    pub num_umsgs: u32,
}

/// `DFL_FPGA_PORT_GET_REGION_INFO`, decoded. `flags` uses the `abi::REGION_*` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    pub index: u32,
    pub flags: u32,
    pub size: u64,
    pub offset: u64,
}

/// A port that can be opened.
pub trait DflDevice: Send + Sync {
    /// Current facts about the port (read afresh: the AFU id changes with reconfiguration).
    fn desc(&self) -> PortDesc;
    /// Opens the port for `owner`. With `exclusive`, fails with `EBUSY` while anyone else
    /// holds it; any open fails with `EBUSY` while an exclusive opener holds it.
    fn open(&self, exclusive: bool, owner: OwnerId) -> io::Result<Box<dyn DflPort>>;
}

/// An open port. Dropping it closes it: as in the kernel, the last close resets the AFU and
/// removes every DMA mapping, and windows mapped through it stop answering.
pub trait DflPort: Send + Sync {
    fn info(&self) -> io::Result<PortInfo>;
    fn region_info(&self, index: u32) -> io::Result<RegionInfo>;
    fn map_region(&self, index: u32) -> io::Result<Arc<dyn MmioWindow>>;
    /// Maps `memory` for device access; returns the IOVA of its first byte.
    fn dma_map(&self, memory: &Arc<DmaMemory>) -> io::Result<u64>;
    /// Removes the mapping that starts at `iova`.
    fn dma_unmap(&self, iova: u64) -> io::Result<()>;
    fn reset(&self) -> io::Result<()>;
}

/// Refuses memory another plugin allocated, as the kernel refuses pages outside the
/// caller's address space.
pub(crate) fn check_owner(memory: &DmaMemory, owner: OwnerId) -> io::Result<()> {
    if memory.owner() == owner {
        Ok(())
    } else {
        Err(errno(libc::EFAULT))
    }
}
