//! The Intel DFL family (`/dev/dfl-port.N`, used by OPAE): ABI facts, the Linux backend and
//! an emulated port with the NLB0 loopback accelerator. Both backends implement the same two
//! traits, so the `dfl` host import cannot tell them apart.

// The ABI facts are kept whole, as the kernel's headers and sysfs state them, whether or
// not the host uses each one yet; without the `internals` feature nothing outside reads them.
#[cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]
pub mod abi;
mod card;
pub(crate) mod emu;
mod family;
mod imports;
pub(crate) mod linux;
pub(crate) mod resources;

use std::io;
use std::sync::Arc;

use crate::attributes::AttributeInfo;
use crate::devices::{DmaMemory, MmioWindow, Owner};
use crate::types::{BusAddress, Guid};

pub(crate) use family::FAMILY;

/// What sysfs (or the emulator) says about a port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PortDesc {
    /// The name grants use: `emu:<id>` or `/dev/dfl-port.N`.
    pub path: String,
    /// The port number (`id` in sysfs).
    pub port_id: u32,
    /// The AFU id from the AFU header (`afu_id` in sysfs).
    pub afu_id: Guid,
    /// PCI vendor id of the card (the region's `device/vendor` in sysfs).
    pub vendor_id: u16,
    /// PCI device id of the card (the region's `device/device` in sysfs).
    pub device_id: u16,
    /// PCI address of the card, if known (the target of the region's `device` link).
    pub bus_address: Option<BusAddress>,
    /// CPU socket of the card (the FME's `socket_id` in sysfs), if known.
    pub socket_id: Option<u32>,
    /// True for a port the emulator provides, false for a real one.
    pub emulated: bool,
}

/// `DFL_FPGA_PORT_GET_INFO`, decoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortInfo {
    /// Reserved; 0 from current drivers.
    pub flags: u32,
    /// Number of MMIO regions: the AFU, plus STP (SignalTap) if present.
    pub num_regions: u32,
    /// Number of UMsgs; 0 on current hardware.
    pub num_umsgs: u32,
}

/// `DFL_FPGA_PORT_GET_REGION_INFO`, decoded. `flags` uses the `abi::REGION_*` bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RegionInfo {
    /// The region asked about: `abi::REGION_INDEX_AFU` (0) or `abi::REGION_INDEX_STP` (1).
    pub index: u32,
    /// What the region allows: `abi::REGION_READ`, `REGION_WRITE` and `REGION_MMAP` bits.
    pub flags: u32,
    /// Size of the region in bytes.
    pub size: u64,
    /// The `mmap` offset of the region on the port fd (0 for the AFU).
    pub offset: u64,
}

/// A port that can be opened.
pub trait DflDevice: Send + Sync {
    /// Current facts about the port (read afresh: the AFU id changes with reconfiguration).
    fn desc(&self) -> PortDesc;
    /// Opens the port for `owner`. With `exclusive`, fails with `EBUSY` while anyone else
    /// holds it; any open fails with `EBUSY` while an exclusive opener holds it.
    fn open(&self, exclusive: bool, owner: &Owner) -> io::Result<Box<dyn DflPort>>;
    /// OPAE's probe, for `owner`: whether someone holds the port exclusively (a shared open
    /// fails), and how many MMIO regions it has. A port held by someone still has its
    /// regions: what the last probe that could ask counted (the emulator always knows), so
    /// that the count does not drop to zero while another client uses the port.
    fn probe(&self, owner: &Owner) -> PortProbe;
    /// The port's sysfs attributes, and its card's FME's named `fme/...`. Names are checked
    /// plain relative paths (`crate::attributes::check_name`) before any of the three is called.
    fn attributes(&self) -> io::Result<Vec<AttributeInfo>>;
    /// Reads attribute `name`, without its trailing newline; `ENOENT` for an unknown one.
    fn read_attribute(&self, name: &str) -> io::Result<String>;
    /// Writes attribute `name`; `EACCES` for one that is not writable, `EINVAL` for a value
    /// it refuses.
    fn write_attribute(&self, name: &str, value: &str) -> io::Result<()>;
}

/// What a probe found of a port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PortProbe {
    /// Someone holds the port exclusively.
    pub assigned: bool,
    /// Its MMIO regions.
    pub num_regions: u32,
}

/// An open port. Dropping it closes it: as in the kernel, the last close resets the AFU and
/// removes every DMA mapping, and windows mapped through it stop answering.
pub trait DflPort: Send + Sync {
    /// `DFL_FPGA_PORT_GET_INFO`: how many MMIO regions and UMsgs the port has.
    fn info(&self) -> io::Result<PortInfo>;
    /// `DFL_FPGA_PORT_GET_REGION_INFO` for region `index`; `EINVAL` for an unknown index.
    fn region_info(&self, index: u32) -> io::Result<RegionInfo>;
    /// Maps region `index` as a register window, as `mmap` of the region on the port fd does.
    fn map_region(&self, index: u32) -> io::Result<Arc<dyn MmioWindow>>;
    /// Maps `memory` for device access; returns the IOVA of its first byte.
    fn dma_map(&self, memory: &Arc<DmaMemory>) -> io::Result<u64>;
    /// Removes the mapping that starts at `iova`.
    fn dma_unmap(&self, iova: u64) -> io::Result<()>;
    /// `DFL_FPGA_PORT_RESET`: resets the AFU, whose registers return to their defaults.
    fn reset(&self) -> io::Result<()>;
}
