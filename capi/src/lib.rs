#![warn(missing_docs)]
//! The OPAE-compatible C API of accelhost: `libopae_c.so`, with `include/opae/*.h`. An
//! application written for OPAE compiles against these headers, links against this library,
//! and its calls reach the sandboxed wasm plugins of an accelhost [`Host`](accelhost::Host).
//!
//! Every exported function returns an OPAE `fpga_result` and never unwinds into C: a panic
//! is caught and returned as `FPGA_EXCEPTION`. The objects C holds (properties, tokens,
//! handles, event handles, offload objects) are opaque values looked up in a registry on
//! every call, never dereferenced, so a NULL, destroyed, forged or wrong-kind value is
//! `FPGA_INVALID_PARAM`. `capi/README.md` has the details. What every door shares (the
//! handle table, the panic guard, the C helpers, the process's host, the host-memory ledger
//! as the allocator) comes from `accelhost-door`.

mod attributes;
pub mod buffer;
pub mod device_errors;
pub mod enumerate;
pub mod errors;
pub mod event;
pub mod families;
pub mod ffi;
pub mod handle;
pub mod hash_map;
mod last_error;
pub mod log;
pub mod metrics;
pub mod mmio;
pub mod offload;
pub mod plugins;
pub mod properties;
mod registry;
mod result;
pub mod state;
pub mod sysobject;
pub mod token;
pub mod types;
pub mod umsg;
pub mod userclk;
pub mod version;

pub use registry::live_objects;
pub use result::{CapiError, CapiResult, result_of};
pub use types::*;
