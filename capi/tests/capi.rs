//! The C API called from Rust as C calls it, in one process that shares the API's one host:
//! `api` covers every exported function, `lifecycle` faults, finalize, configs and threads.
//! The tests take turns (`support::serial`), since some of them replace the host.

#[path = "support/mod.rs"]
mod support;

#[path = "api.rs"]
mod api;

#[path = "lifecycle.rs"]
mod lifecycle;
