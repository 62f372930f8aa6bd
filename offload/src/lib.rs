//! LLVM's Offload API over accelhost: `libLLVMOffload.so` with the `ol*` functions of
//! liboffload's initial full API (`OffloadAPI.h` of version 0.0.1: platforms and devices
//! with their info queries, memory of the three kinds, queues, memcpy in every direction,
//! programs from a device image, kernels by name, launches with packed arguments, events,
//! reference counts). Its devices are the accelerators of plugins that export the offload
//! interface and answer its queues, reached only through the public API, so every grant,
//! limit and fault rule holds as for Rust callers.
//!
//! The layers: `types` (the C types and codes) and `result` (errors as `ol_result_t`, one
//! table from the library's codes), `handles` (reference-counted handles) and `state` (the
//! host, its platform and devices); then `info` (platform and device queries), `memory`
//! (allocations by address), `queue` (queues and events), `program` (programs, kernels,
//! argument layouts) and on top `enqueue` (memcpy and launch) and `entry` (the exported
//! functions). README, "LLVM's Offload API", says what is implemented.
#![allow(non_snake_case)]

mod enqueue;
mod entry;
mod handles;
mod info;
mod memory;
mod program;
mod queue;
mod result;
mod state;
mod types;
