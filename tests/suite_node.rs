//! The node service's end-to-end tests, one binary: the node on loopback (`node`) and the
//! `builtin:remote` proxy through it (`builtin_remote`). The soak stays a binary of its own: it
//! watches the whole process's memory and descriptors.

#[path = "support/remote.rs"]
mod remote;
mod support;

#[path = "remote.rs"]
mod builtin_remote;
mod node;
mod node_shares;
