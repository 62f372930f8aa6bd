//! The config's CAPI AFUs (the cxl family), emulated or real, for the trusted program of this
//! process: what libcxl's door serves. A libcxl program is its AFU's driver (it builds the
//! work queues and writes the registers itself), so no plugin stands between; and its AFU
//! reaches the program's own memory at the addresses the program uses, as the cxl driver
//! gives it (shared virtual addressing). Plugins never get such a context: theirs reach only
//! the buffers they attach.
//!
//! ```no_run
//! use accelhost::cxl::{self, ContextKind, Work};
//!
//! # fn main() -> std::io::Result<()> {
//! let config = accelhost::Config::embedded_default();
//! let afus = cxl::afus(&config);
//! let vadd = afus.iter().find(|afu| afu.desc().slice == 1).expect("the vadd AFU");
//! let context = vadd.open(ContextKind::Dedicated)?;
//! let control_block = [0u64; 16];
//! let wed = control_block.as_ptr() as u64;
//! context.start_work(&Work { wed, amr: None, num_interrupts: None })?;
//! # Ok(())
//! # }
//! ```

use std::io;
use std::sync::Arc;
use std::time::Instant;

use crate::config::Config;
use crate::devices::{DeviceRegistry, MmioWindow, Owner};
use crate::families::cxl::{AddressSpace, CxlAfu, CxlContext, FAMILY};
pub use crate::families::cxl::{AfuDesc, AfuEvent, AfuMode, ContextKind, Work};

/// Host memory a program's contexts may hold in waits (interrupt waits are charged to it).
const HOST_BYTES: u64 = 64 << 20;

/// Every CAPI AFU of `config`: the real ones found under its sysfs root first, then the
/// emulated ones it declares, in (card, slice) order within each. An emulated AFU whose
/// adapter and slice a real one holds is left out, so that a `/dev/cxl/afuC.S` name means
/// one AFU.
pub fn afus(config: &Config) -> Vec<Afu> {
    let mut registry = DeviceRegistry::default();
    if let Err(err) = (FAMILY.discover)(&config.linux_roots(), &mut registry) {
        tracing::debug!("no CAPI AFUs found through sysfs: {err}");
    }
    let real = registry.granted::<dyn CxlAfu>(&["/dev/cxl/*".to_string()]);
    let mut emulated = DeviceRegistry::default();
    for card in config
        .devices
        .iter()
        .filter(|card| card.family == FAMILY.name)
    {
        (FAMILY.emulate)(card, &mut emulated);
    }
    let mut found: Vec<Afu> = real.into_iter().map(Afu::new).collect();
    found.sort_by_key(|afu| (afu.desc.card, afu.desc.slice));
    let mut fakes: Vec<Afu> = emulated
        .granted::<dyn CxlAfu>(&["emu:*".to_string()])
        .into_iter()
        .map(Afu::new)
        .filter(|fake| {
            !found
                .iter()
                .any(|afu| (afu.desc.card, afu.desc.slice) == (fake.desc.card, fake.desc.slice))
        })
        .collect();
    fakes.sort_by_key(|afu| (afu.desc.card, afu.desc.slice));
    found.extend(fakes);
    found
}

/// One AFU: its facts, and contexts opened on it.
#[derive(Clone)]
pub struct Afu {
    desc: AfuDesc,
    inner: Arc<dyn CxlAfu>,
}

impl Afu {
    fn new(inner: Arc<dyn CxlAfu>) -> Self {
        Afu {
            desc: inner.desc(),
            inner,
        }
    }

    /// What sysfs (or the emulator) says about the AFU, as found when it was listed.
    pub fn desc(&self) -> &AfuDesc {
        &self.desc
    }

    /// Opens a context on the `kind` node whose AFU reaches this process's memory. Fails
    /// with `ENODEV` for a kind the AFU's mode has no node for, `ENOSPC` when every context
    /// is in use.
    pub fn open(&self, kind: ContextKind) -> io::Result<Context> {
        let owner = Owner::new(0, HOST_BYTES);
        let inner = self.inner.open(kind, &owner, AddressSpace::ThisProcess)?;
        Ok(Context { inner })
    }
}

/// An open context; dropping it detaches it and frees its process element.
pub struct Context {
    inner: Box<dyn CxlContext>,
}

impl Context {
    /// The process element (the context id).
    pub fn process_element(&self) -> u32 {
        self.inner.process_element()
    }

    /// `START_WORK`: the WED and every address the AFU finds through it are this process's
    /// virtual addresses. A second call fails with `EIO`; an interrupt count outside the
    /// AFU's `irqs_min..=irqs_max` with `EINVAL`.
    pub fn start_work(&self, work: &Work) -> io::Result<()> {
        self.inner.start_work(work)
    }

    /// Maps the problem-state area (after `start_work`, else `EIO`): the whole area for a
    /// master or dedicated context, the context's slice for a slave.
    pub fn map_mmio(&self) -> io::Result<Mmio> {
        Ok(Mmio {
            window: self.inner.map_mmio()?,
        })
    }

    /// The next event, waiting until `deadline`; `None` if none came.
    pub fn read_event(&self, deadline: Instant) -> io::Result<Option<AfuEvent>> {
        self.inner.read_event(deadline)
    }

    /// Whether an event waits, waiting until `deadline` for one; it stays for
    /// [`read_event`](Self::read_event), so that a reader can take it and pass it on under a
    /// lock of its own.
    pub fn wait_event(&self, deadline: Instant) -> io::Result<bool> {
        self.inner.wait_event(deadline)
    }
}

/// `event` as the cxl driver's `read()` writes it for process element `process_element`
/// (`struct cxl_event`: an 8-byte header whose `size` counts it, then the payload).
pub fn event_record(process_element: u32, event: &AfuEvent) -> Vec<u8> {
    crate::families::cxl::abi::encode_event(process_element as u16, event)
}

/// A mapped problem-state area. Values are as the AFU holds them, unswapped: a big-endian
/// AFU's registers read byte-swapped on this host, as a plain load from the real mapping
/// would.
#[derive(Clone)]
pub struct Mmio {
    window: Arc<dyn MmioWindow>,
}

impl Mmio {
    /// The mapping's size in bytes.
    pub fn size(&self) -> u64 {
        self.window.size()
    }

    /// Loads the 32-bit word at byte `offset` (4-aligned, inside the mapping).
    pub fn read32(&self, offset: u64) -> io::Result<u32> {
        self.window.read32(offset)
    }

    /// Loads the 64-bit word at byte `offset` (8-aligned, inside the mapping).
    pub fn read64(&self, offset: u64) -> io::Result<u64> {
        self.window.read64(offset)
    }

    /// Stores the 32-bit word at byte `offset`.
    pub fn write32(&self, offset: u64, value: u32) -> io::Result<()> {
        self.window.write32(offset, value)
    }

    /// Stores the 64-bit word at byte `offset`.
    pub fn write64(&self, offset: u64, value: u64) -> io::Result<()> {
        self.window.write64(offset, value)
    }
}
