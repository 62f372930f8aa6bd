//! XRT's native API over accelhost: `libxrt_coreutil.so`, the library that programs written
//! against XRT's `xrt/xrt_device.h`, `xrt_bo.h` and `xrt_kernel.h` link. Its devices are
//! the XRT cards of the library's plugins (the accelerators whose `interface` is `xocl`),
//! reached only through the public API, so every grant, limit and fault rule holds as for
//! Rust callers.
//!
//! The C functions are defined here; the C++ classes (`xrt::device`, `xrt::bo`,
//! `xrt::kernel`, `xrt::run`, `xrt::uuid`, `xrt::xclbin`) are inline in the headers
//! (`include/`) over the C functions. The layers: `handles` (the live handles) and `error`
//! (errno and messages, one table), `state` (the host and its cards), then one module per
//! object: `device` (with its loaded xclbin), `bo`, `kernel`, `run`, and `runlist` (runs
//! executed together, 256 to a call into the plugin). README, "XRT's native
//! API", says what is implemented and what answers unsupported.

mod bo;
mod device;
mod error;
mod handles;
mod kernel;
mod run;
mod runlist;
mod state;
