#![warn(missing_docs)]
//! The accelhost node service: `accelhost serve` puts one [`accelhost::Host`] on gRPC, for
//! clients the serve config names, each with grants in the shape of a plugin's; and
//! [`Client`] is the other end. The wire contract is `proto/accelhost/node/v1/node.proto`.
//!
//! A client is identified by its transport (a Unix peer's uid or gid, a TLS client
//! certificate's SAN), never by what it says; it sees only the devices its grants name; what
//! its session opened is released when it goes.

pub mod accept;
pub mod account;
pub mod authority;
pub mod authorize;
pub mod baseline;
pub mod client;
pub mod config;
pub mod data;
pub mod doorbell;
pub mod gate;
pub mod health;
pub mod identity;
pub mod kubelet;
pub mod listen;
pub mod metrics;
pub mod metrics_server;
pub mod offer;
pub mod pipeline;
pub mod proto;
pub mod reach;
pub mod remote;
pub mod ring;
pub mod server;
pub mod service;
pub mod session;
pub mod shared_memory;
pub mod status;
pub mod tls;

pub use client::{Client, ClientOptions, Endpoint, RemoteError, RemoteResult};
pub use config::{ClientEntry, ClientGrants, ClientIdentity, ServeConfig, ServeConfigError};
pub use listen::ServeError;
pub use remote::NodeConnector;
pub use server::BoundNode;
