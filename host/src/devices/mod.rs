//! What every device family's backends share: DMA memory, checked MMIO, completions, memory
//! watches, the budgets requests are charged to, the sysfs and ioctl plumbing of the Linux
//! backends, and the registry of devices by name. Nothing here knows about wasm or about any
//! one family (those live in `crate::families`).

mod address_map;
mod budget;
mod completion;
pub(crate) mod ioctl;
mod memory;
pub(crate) mod mmio;
mod poll;
mod registry;
#[cfg(test)]
pub(crate) mod scratch;
mod sync;
pub(crate) mod sysfs;
pub(crate) mod watch;

use std::io;
use std::path::PathBuf;

pub use address_map::AddressMap;
pub use budget::{Budget, BudgetKind, Charge, OverBudget, OverLimit, Owner, OwnerId};
pub use completion::{Completion, CompletionState};
pub use memory::{DmaMemory, RangeError, page_size};
pub use mmio::{AccessWidth, ByteSwapped, CheckedMmio, MmioFault, MmioWindow};
pub use poll::{PollOutcome, poll_memory_until};
pub use registry::DeviceRegistry;
pub use sync::{lock, wait, wait_timeout};

/// Where the Linux backends look for sysfs and device nodes; tests point these at fake trees.
#[derive(Clone, Debug)]
pub struct LinuxRoots {
    /// The sysfs mount, `/sys` by default.
    pub sysfs: PathBuf,
    /// The directory of device nodes, `/dev` by default.
    pub dev: PathBuf,
}

impl Default for LinuxRoots {
    fn default() -> Self {
        LinuxRoots {
            sysfs: PathBuf::from("/sys"),
            dev: PathBuf::from("/dev"),
        }
    }
}

/// An `io::Error` carrying a raw errno, as the kernel would return it.
pub(crate) fn errno(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// Refuses memory another plugin allocated (`EFAULT`), as the kernel refuses pages outside
/// the caller's address space.
pub(crate) fn check_owner(memory: &DmaMemory, owner: OwnerId) -> io::Result<()> {
    if memory.owner() == owner {
        Ok(())
    } else {
        Err(errno(libc::EFAULT))
    }
}
