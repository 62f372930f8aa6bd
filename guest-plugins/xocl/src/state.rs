//! What the plugin keeps of the devices, programs, kernels, allocations and queues it hands
//! out.

use accelhost_sdk::host::events::Event;
use accelhost_sdk::host::xocl::{Bo, Device, KernelMeta, XclbinInfo};

/// A device an application opened.
pub(crate) struct OpenDevice {
    pub device: Device,
    pub path: String,
    pub exclusive: bool,
}

/// A loaded xclbin.
pub(crate) struct ProgramState {
    pub handle: u64,
    pub info: XclbinInfo,
    /// The compute units this program opened contexts on.
    pub contexts: Vec<u32>,
}

/// A kernel of a program: its metadata and the compute units that run it.
pub(crate) struct KernelState {
    pub program: u64,
    pub meta: KernelMeta,
    pub cus: Vec<u32>,
}

/// Memory allocated on a device, as a buffer object.
pub(crate) struct AllocationState {
    pub handle: u64,
    pub bo: Bo,
    pub size: u64,
    /// The BO's device address and memory bank, fixed for its life: read once at its
    /// creation, so that a launch (which names every buffer argument's) makes no host call
    /// for them.
    pub device_address: u64,
    pub bank: Option<u32>,
}

/// An in-order queue.
pub(crate) struct QueueState {
    pub handle: u64,
    /// The last command enqueued; the next one waits on it.
    pub last: Option<Event>,
}
