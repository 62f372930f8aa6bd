//! The IBM CAPI family (the cxl driver, `/dev/cxl/afuC.S{m,s,d}`, used by libcxl): ABI facts,
//! the Linux backend and an emulator with the memcpy AFU (AFU-directed) and the vadd AFU
//! (dedicated). Both backends implement the same traits, so the `cxl` host import cannot tell
//! them apart.

// The ABI facts are kept whole, as the kernel's headers and sysfs state them, whether or
// not the host uses each one yet; without the `internals` feature nothing outside reads them.
#[cfg_attr(not(feature = "internals"), allow(dead_code, unused_imports))]
pub mod abi;
pub(crate) mod card;
pub(crate) mod emu;
mod family;
mod imports;
pub(crate) mod linux;
pub(crate) mod resources;

use std::io;
use std::sync::Arc;
use std::time::Instant;

use crate::devices::{Completion, DmaMemory, MmioWindow, Owner};
use crate::types::BusAddress;
pub(crate) use family::FAMILY;

/// How an AFU shares itself between processes (sysfs `mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AfuMode {
    /// One context owns the whole AFU (`dedicated_process`).
    Dedicated,
    /// Many contexts, each with a process element and its own problem-state slice
    /// (`afu_directed`).
    Directed,
}

/// Which device node a context is opened on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ContextKind {
    /// `afuC.Sm`: AFU-directed master; maps the whole problem-state area.
    Master,
    /// `afuC.Ss`: AFU-directed slave; maps only its per-process slice.
    Slave,
    /// `afuC.Sd`: the one context of a dedicated-mode AFU.
    Dedicated,
}

impl ContextKind {
    /// The suffix of the device node (`m`, `s` or `d`).
    pub fn suffix(self) -> char {
        match self {
            ContextKind::Master => 'm',
            ContextKind::Slave => 's',
            ContextKind::Dedicated => 'd',
        }
    }
}

/// The effective addresses a context's AFU may reach.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum AddressSpace {
    /// Only the buffers the context attached: every context a plugin opens. (The Linux
    /// backend cannot narrow a real AFU this way: the kernel binds the whole address space of
    /// the process that starts the work, as the README's threat model says.)
    #[default]
    AttachedBuffers,
    /// Also this process's own memory at the same addresses (shared virtual addressing, as
    /// the cxl driver gives a libcxl program): only for the trusted program of this process,
    /// through `accelhost::cxl`, never for a plugin.
    ThisProcess,
}

/// What sysfs (or the emulator) says about an AFU.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfuDesc {
    /// The name grants use: `emu:<id>` or `/dev/cxl/afuC.S`; contexts open `<path>m`,
    /// `<path>s` or `<path>d`.
    pub path: String,
    /// The adapter number.
    pub card: u32,
    /// The AFU's slice on the adapter.
    pub slice: u32,
    /// The current mode, if one is set.
    pub mode: Option<AfuMode>,
    /// The modes the AFU supports (`modes_supported`).
    pub modes_supported: Vec<AfuMode>,
    /// `mmio_size`: the bytes a slave or dedicated context maps.
    pub mmio_size: u64,
    /// Master only: where the per-process areas start (`pp_mmio_off`).
    pub pp_mmio_offset: u64,
    /// Master only: bytes of one per-process area (`pp_mmio_len`).
    pub pp_mmio_len: u64,
    /// Interrupts a context gets by default (`irqs_min`).
    pub irqs_min: u32,
    /// The most interrupts a context may ask for (`irqs_max`).
    pub irqs_max: u32,
    /// How many contexts may be open at once.
    pub max_contexts: u32,
    /// The CAIA version of the card (`caia_version`): major, minor.
    pub caia_version: (u32, u32),
    /// Configuration record 0's vendor id: the AFU's identity.
    pub vendor_id: u16,
    /// Configuration record 0's device id.
    pub device_id: u16,
    /// The PCI function of the AFU's card, if known.
    pub bus_address: Option<BusAddress>,
    /// Whether the AFU is emulated.
    pub emulated: bool,
}

/// What `START_WORK` passes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Work {
    /// The work element descriptor: AFU-defined, usually the effective address of a control
    /// block or queue.
    pub wed: u64,
    /// The authority mask register value, if one is set.
    pub amr: Option<u64>,
    /// Interrupts to allocate (default `irqs_min`; must lie within `irqs_min..=irqs_max`).
    pub num_interrupts: Option<u16>,
}

/// An event `read()` returns on a context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfuEvent {
    /// AFU interrupt `irq` (1-based).
    Interrupt(u16),
    /// The AFU touched an effective address the context cannot reach.
    DataStorage {
        /// The faulting effective address.
        address: u64,
        /// The DSISR value describing the fault.
        dsisr: u64,
    },
    /// The AFU reported an error.
    AfuError(u64),
}

/// An AFU whose contexts can be opened.
pub trait CxlAfu: Send + Sync {
    /// Current facts about the AFU.
    fn desc(&self) -> AfuDesc;
    /// Opens a context on the `kind` node for `owner`, whose AFU reaches `space`. Fails with
    /// `ENOSPC` when every context is in use (a dedicated AFU has one).
    fn open(
        &self,
        kind: ContextKind,
        owner: &Owner,
        space: AddressSpace,
    ) -> io::Result<Box<dyn CxlContext>>;
}

/// An open context. Dropping it detaches it, frees its process element and fails its
/// pending interrupt waits.
pub trait CxlContext: Send + Sync {
    /// The process element (the context id).
    fn process_element(&self) -> u32;
    /// `START_WORK`; a second call fails with `EIO`.
    fn start_work(&self, work: &Work) -> io::Result<()>;
    /// Maps the problem-state area (after `start_work`, else `EIO`): the whole area for a master
    /// or dedicated context, the context's slice for a slave. Registers are as the AFU holds
    /// them (big-endian for the emulated AFUs).
    fn map_mmio(&self) -> io::Result<Arc<dyn MmioWindow>>;
    /// Lets the AFU reach `memory`; returns its effective address. Memory of another owner is
    /// refused with `EFAULT`.
    fn attach_buffer(&self, memory: &Arc<DmaMemory>) -> io::Result<u64>;
    /// The next event, waiting until `deadline`; `None` if none came.
    fn read_event(&self, deadline: Instant) -> io::Result<Option<AfuEvent>>;
    /// Whether an event waits, waiting until `deadline` for one; it stays for
    /// [`read_event`](Self::read_event).
    fn wait_event(&self, deadline: Instant) -> io::Result<bool>;
    /// A completion that finishes when AFU interrupt `irq` arrives, and fails when the context
    /// takes a data-storage fault or an AFU error first.
    fn interrupt_completion(&self, irq: u16) -> io::Result<Arc<Completion>>;
}
