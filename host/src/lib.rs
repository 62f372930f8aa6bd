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
pub mod builtin;
pub mod config;
pub mod devices;
mod error;
mod imports;
mod manager;
#[doc(hidden)]
pub mod perf;
mod runtime;
pub mod text;
mod trace;
pub mod types;
pub mod workloads;

pub use api::{
    AcceleratorState, Arg, DmaBuffer, Enumeration, Event, EventKind, EventStatus, Filter, Handle,
    Host, HostBuilder, Kernel, Memory, MemoryKind, MmioRegion, ObjectType, OpenMode, Program,
    Properties, Queue, Token, host_matches, local_hostname,
};
pub use config::{Config, ConfigError, ConfigOrigin};
pub use error::{Error, ErrorCode, FaultCause, Result};
pub use manager::{MemoryUse, PluginInfo, PluginStatus, check_module};
pub use runtime::{
    CACHE_ENV, ComponentCache, DEFAULT_POOL_INSTANCES, INSTANCE_BYTES, POOL_ENV,
    WASI_RESOURCE_BYTES, WIT_PACKAGE, WIT_VERSION, instance_allocator, worst_case_host_memory,
};
pub use trace::TRACE_ENV;
pub use types::{BusAddress, Guid};
