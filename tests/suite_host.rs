//! The library's end-to-end tests, one binary (linking wasmtime once, not once per file):
//! hosts over the real compiled plugins. `tests/host_memory.rs` and the suites with their own
//! runner (`hostile`, `compile_worker`, `sdk_languages`) stay binaries of their own.

mod support;

mod concurrency;
mod cxl_flow;
mod dfl_flow;
mod faults;
mod layout;
mod ledger;
mod loading;
mod plugin_files;
mod versions;
mod xocl_flow;
