//! The node service's end-to-end tests, one binary: the node on loopback (`node`), the
//! `builtin:remote` proxy through it (`builtin_remote`), and a fake node that lies about its
//! answers' size (`lying_node`). The soak stays a binary of its own: it watches the whole
//! process's memory and descriptors.

#[path = "support/remote.rs"]
mod remote;
mod support;

#[path = "remote.rs"]
mod builtin_remote;
mod lying_node;
mod node;
mod node_shares;
