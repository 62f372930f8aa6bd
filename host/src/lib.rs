#![warn(missing_docs)]
//! accelhost: a plugin manager for accelerator runtimes (FPGA cards and other offload devices)
//! whose device plugins are WebAssembly components. A plugin runs under wasmtime and reaches
//! hardware only through capability-checked host imports; a plugin that traps, hangs or
//! misbehaves is stopped without taking the host, or the other plugins, down.
//!
//! ```no_run
//! use accelhost::{Filter, Host, OpenMode};
//!
//! # fn main() -> accelhost::Result<()> {
//! let host = Host::new()?; // the config lookup order, ending in the embedded default
//! for token in host.enumerate(&[Filter::new().device_type("fpga")]) {
//!     println!("{} {}", token.id(), token.properties().guid);
//!     let handle = host.open(&token, OpenMode::Exclusive)?;
//!     let mmio = handle.map_mmio(0)?;
//!     println!("AFU id low = {:#x}", mmio.read64(0x8)?);
//!     handle.close()?;
//! }
//! # Ok(())
//! # }
//! ```

mod api;
pub mod attributes;
mod bindings;
pub mod builtin;
pub mod config;
mod convert;
pub mod cxl;
mod error;
mod family;
pub mod files;
mod imports;
pub mod ledger;
mod manager;
mod properties;
pub mod remote;
mod runtime;
mod state;
pub mod text;
mod trace;
pub mod types;
pub mod workloads;
pub mod xclbin;

// The host's internals, for the fuzz targets and `accelhost bench` (the `internals`
// feature): not a stable API, and hidden from the docs.
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod devices;
#[cfg(not(feature = "internals"))]
mod devices;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod families;
#[cfg(not(feature = "internals"))]
mod families;
#[cfg(feature = "internals")]
#[doc(hidden)]
pub mod perf;

/// Signed plugins: trusted keys and signature checks ([`accelhost_trust`]).
pub use accelhost_trust as trust;
/// The store of plugins pulled from OCI registries.
pub use accelhost_trust::store;
pub use api::{
    Arg, DmaBuffer, Enumeration, Event, EventStatus, Handle, Host, HostBuilder, Kernel, Memory,
    MmioRegion, Program, Queue, Token, check_module,
};
pub use attributes::AttributeInfo;
pub use config::{Config, ConfigError, ConfigOrigin};
pub use error::{CompileFailure, Error, ErrorCode, Falsehood, FaultCause, Result, TrapKind};
pub use manager::{
    CallFigures, CheckedModule, DURATION_BUCKETS, MemoryUse, PluginInfo, PluginStatus,
};
pub use properties::{
    AcceleratorState, Filter, ObjectType, OpenMode, Properties, SharedText, host_matches,
    local_hostname,
};
pub use runtime::worker as compile_worker;
pub use runtime::{
    CACHE_ENV, CACHE_MAX_ENV, ComponentCache, DEFAULT_CACHE_MAX_MIB, DEFAULT_POOL_INSTANCES,
    INSTANCE_BYTES, POOL_ENV, PROGRESS_TARGET, Shelf, Tier, WASI_RESOURCE_BYTES, WIT_PACKAGE,
    WIT_VERSION, WORST_CASE_FORMULA, instance_allocator, worst_case_host_memory,
};
pub use trace::{TRACE_ENV, TRACE_TARGETS, enabled_by_env as trace_enabled_by_env};
pub use types::{BusAddress, EventKind, Guid, LAUNCHES_PER_BATCH, MemoryKind};
