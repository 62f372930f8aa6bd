//! accelhost's OpenCL platform: `libaccelhost_opencl.so`, an installable client driver (ICD)
//! that the Khronos ICD loaders (Debian's `ocl-icd`, Khronos's own) load beside every other
//! OpenCL platform of the machine. It lists accelhost's offload devices (the accelerators of
//! plugins that export the `offload` interface) and reaches them only through the library's
//! public API, so every grant, limit and fault rule holds as for Rust callers.
//!
//! Implemented so far: the platform and its devices, with the information queries `clinfo`
//! and the SYCL runtime's loader ask. Contexts, queues, buffers, programs, kernels and events
//! are not implemented yet: those entry points answer `CL_INVALID_OPERATION` and say so on
//! stderr (README, "The OpenCL platform").

pub mod cl;
mod device;
mod dispatch;
mod info;
mod log;
mod object;
mod platform;
mod state;

pub use cl::CONSTANTS;
pub use device::Device;
pub use dispatch::{
    SLOT_NAMES, clGetExtensionFunctionAddress, clGetPlatformInfo, clIcdGetPlatformIDsKHR,
};
pub use object::SLOTS;
pub use platform::Platform;
