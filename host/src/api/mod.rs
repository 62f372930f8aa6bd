//! The embedding API: a [`Host`] loads the plugin list; applications enumerate [`Token`]s,
//! open [`Handle`]s, and reach registers ([`MmioRegion`]) and shared memory ([`DmaBuffer`])
//! directly, without calling into wasm. Everything here is `Send + Sync`.

mod handle;
mod host;
mod inner;
mod offload;
mod staging;
mod token;
mod workers;

pub use handle::{DmaBuffer, Handle, MmioRegion};
pub use host::{Enumeration, Host, HostBuilder, check_module};
pub use offload::{Arg, Event, EventStatus, Kernel, Memory, Program, Queue};
pub use token::Token;
