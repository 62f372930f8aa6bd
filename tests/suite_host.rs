//! The library's end-to-end tests, one binary (linking wasmtime once, not once per file):
//! hosts over the real compiled plugins. A file stays a binary of its own when its tests
//! reason about the whole process: its memory (`host_memory`, `hostile`), or which plugins it
//! holds compiled in memory (`loading` and `plugin_files` forget them all to see a fresh
//! process's compile, which another file's test loading a plugin meanwhile would spoil).

mod support;

mod concurrency;
mod cxl_flow;
mod dfl_flow;
mod faults;
mod layout;
mod ledger;
mod signatures;
mod versions;
mod vouching;
mod xocl_flow;
