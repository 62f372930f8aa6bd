//! accelhost's OpenCL platform: `libaccelhost_opencl.so`, an installable client driver (ICD)
//! that the Khronos ICD loaders (Debian's `ocl-icd`, Khronos's own) load beside every other
//! OpenCL platform of the machine. It lists accelhost's offload devices (the accelerators of
//! plugins that export the `offload` interface) and reaches them only through the library's
//! public API, so every grant, limit and fault rule holds as for Rust callers.
//!
//! The layers: `cl` (types and constants), `info` and `error` (how answers and failures are
//! written), `object` (the dispatch header and the table of live handles); then one module
//! per OpenCL object (`platform`, `device`, `context`, `queue`, `memory` with `rect` for its
//! rectangular transfers, `program` with its
//! kernels and launches, `event`), `command` (enqueueing: wait lists, and commands held back
//! behind unfinished events), `state` (the host), and on top `dispatch`: the table the
//! loader calls through and the entry points the loader finds by name. Entry points not
//! implemented answer `CL_INVALID_OPERATION` and say so on stderr (README, "The OpenCL
//! platform", has what is and is not).

pub mod cl;
mod command;
mod context;
mod device;
mod dispatch;
mod error;
mod event;
mod info;
mod log;
mod memory;
mod object;
mod platform;
mod program;
mod queue;
mod rect;
mod state;
mod transfer;
mod usm;

pub use cl::CONSTANTS;
pub use device::Device;
pub use dispatch::{
    SLOT_NAMES, clGetExtensionFunctionAddress, clGetPlatformInfo, clIcdGetPlatformIDsKHR,
};
pub use object::SLOTS;
pub use platform::Platform;
