//! The embedding API: a [`Host`] loads the plugin list; applications enumerate [`Token`]s,
//! open [`Handle`]s, and reach registers ([`MmioRegion`]) and shared memory ([`DmaBuffer`])
//! directly, without calling into wasm. Everything here is `Send + Sync`.

mod handle;
mod host;
mod offload;
mod properties;
mod token;

pub use handle::{DmaBuffer, Handle, MmioRegion};
pub use host::{Enumeration, Host, HostBuilder};
pub use offload::{Arg, Event, EventKind, EventStatus, Kernel, Memory, MemoryKind, Program, Queue};
pub use properties::{
    AcceleratorState, Filter, ObjectType, OpenMode, Properties, host_matches, local_hostname,
};
pub use token::Token;
