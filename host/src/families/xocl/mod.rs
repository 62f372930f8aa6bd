//! The Xilinx XRT family (the xocl DRM render-node driver): ABI facts, the xclbin (axlf)
//! container, the Linux backend and an emulator in the spirit of XRT's sw_emu. Both backends
//! implement the same traits, so the `xocl` host import cannot tell them apart.

// The ABI facts are kept whole, as the kernel's headers and sysfs state them, whether or
// not the host uses each one yet; without the `internals` feature nothing outside reads them.
#[cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]
pub mod abi;
mod card;
pub(crate) mod emu;
mod family;
mod imports;
pub mod kernel_source;
pub(crate) mod linux;
pub(crate) mod resources;
pub mod xclbin;

use std::io;
use std::sync::Arc;

use crate::devices::{Budget, Charge, Completion, DmaMemory, Owner};
use crate::types::{BusAddress, Guid};
pub(crate) use family::FAMILY;
pub use xclbin::Xclbin;

/// What sysfs (or the emulator) says about a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceDesc {
    /// The name grants use: `emu:<id>` or `/dev/dri/renderDN`.
    pub path: String,
    /// PCI vendor id of the user PF (0x10EE for Xilinx).
    pub vendor_id: u16,
    /// PCI device id of the user PF.
    pub device_id: u16,
    /// The PCI address, when known.
    pub bus_address: Option<BusAddress>,
    /// The board / shell name (`board_name` in sysfs).
    pub board_name: String,
    /// The uuid of the xclbin loaded on the card, if any.
    pub loaded: Option<Guid>,
    /// Whether the device is emulated.
    pub emulated: bool,
}

/// What a queued command costs the host beyond its ERT packet: the command, its completion
/// and its place in the queue.
const COMMAND_BYTES: u64 = 512;
/// What one wake-up registered on a dependency costs the host.
const WAKEUP_BYTES: u64 = 128;

/// Charges a command of `packet_words` ERT words to its owner's host budget, until it leaves
/// the queue.
pub(crate) fn charge_command(host: &Arc<Budget>, packet_words: usize) -> io::Result<Charge> {
    Ok(host.charge(COMMAND_BYTES + packet_words as u64 * 4)?)
}

/// Charges the wake-ups a command registers on its `dependencies`, one charge each: a
/// wake-up lives until its dependency finishes, which may be after the command is gone.
pub(crate) fn charge_wakeups(host: &Arc<Budget>, dependencies: usize) -> io::Result<Vec<Charge>> {
    (0..dependencies)
        .map(|_| host.charge(WAKEUP_BYTES).map_err(io::Error::from))
        .collect()
}

/// Which way `sync_bo` copies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncDirection {
    /// Host backing store to device memory.
    ToDevice,
    /// Device memory to host backing store.
    FromDevice,
}

/// A buffer object as a backend created it.
#[derive(Clone, Debug)]
pub struct BoInfo {
    /// The GEM handle, unique within the client.
    pub handle: u32,
    /// Size in bytes, a whole number of pages.
    pub size: u64,
    /// The address kernels use.
    pub device_address: u64,
    /// The MEM_TOPOLOGY bank, or `None` for host-only memory.
    pub bank: Option<u32>,
    /// The host backing store (for host-only memory: the memory the device reaches).
    pub host: Arc<DmaMemory>,
}

/// A command for the device's scheduler.
#[derive(Clone, Debug)]
pub enum Command {
    /// An exec buffer holding an ERT packet (`ERT_START_CU` and the other opcodes).
    Exec(Vec<u32>),
    /// SYNC_BO of `size` bytes at `offset`.
    Sync {
        /// The BO's handle.
        bo: u32,
        /// Which way.
        direction: SyncDirection,
        /// Byte offset in the BO.
        offset: u64,
        /// Bytes to copy.
        size: u64,
    },
    /// COPY_BO: device memory of `src` to device memory of `dst`.
    Copy {
        /// Destination BO handle.
        dst: u32,
        /// Byte offset in the destination.
        dst_offset: u64,
        /// Source BO handle.
        src: u32,
        /// Byte offset in the source.
        src_offset: u64,
        /// Bytes to copy.
        size: u64,
    },
}

/// An xclbin loaded on a card, and the card's index of its first compute unit.
pub struct LoadedXclbin {
    /// The image, parsed.
    pub xclbin: Arc<Xclbin>,
    /// Its compute units are `first_cu..first_cu + n` on the card.
    pub first_cu: u32,
}

/// A device that can be opened.
pub trait XoclDevice: Send + Sync {
    /// Current facts about the device.
    fn desc(&self) -> DeviceDesc;
    /// Opens a client (a render-node file description) for `owner`: the host backing of its
    /// buffer objects is charged to its DMA budget, the commands it queues to its host budget.
    fn open(&self, owner: &Owner) -> io::Result<Box<dyn XoclClient>>;
}

/// An open client. Dropping it frees its contexts and BOs and fails its pending commands,
/// as closing the render node does.
pub trait XoclClient: Send + Sync {
    /// READ_AXLF of an image the host already parsed and validated. Returns the card's index
    /// of the image's first compute unit: a card that holds several images numbers their
    /// units one after another (a real card holds one, from 0).
    fn load_xclbin(&self, image: &[u8], parsed: &Xclbin) -> io::Result<u32>;
    /// The xclbin loaded on the card last, if any, with its first compute unit's index.
    fn loaded_xclbin(&self) -> Option<LoadedXclbin>;
    /// CTX alloc on compute unit `cu` (the card's index) of the loaded xclbin `uuid`.
    fn open_context(&self, uuid: Guid, cu: u32, exclusive: bool) -> io::Result<()>;
    /// CTX free.
    fn close_context(&self, uuid: Guid, cu: u32) -> io::Result<()>;
    /// CREATE_BO in `bank`, or in host memory when `bank` is `None`.
    fn create_bo(&self, size: u64, bank: Option<u32>) -> io::Result<BoInfo>;
    /// GEM_CLOSE.
    fn free_bo(&self, handle: u32) -> io::Result<()>;
    /// Queues `command` to run once every completion in `after` has completed; the returned
    /// completion finishes when it ran (failed, if it or a dependency failed).
    fn submit(&self, command: Command, after: Vec<Arc<Completion>>) -> io::Result<Arc<Completion>>;
    /// Resets the device: pending commands of every client fail, compute units go idle.
    fn reset(&self) -> io::Result<()>;
    /// Fails this client's commands that have not started, with `reason`; commands already
    /// running finish. Used when the instance that submitted them ends.
    fn cancel_pending(&self, reason: &str);
}
