#![warn(missing_docs)]
//! What accelhost's doors share: the C libraries through which programs of other ecosystems
//! (OPAE, OpenCL, XRT, LLVM's Offload, libcxl) reach accelhost's devices. Each door keeps only
//! its API's semantics; everything below them is here, once:
//!
//! - [`handles`]: the objects behind the handles C holds. A handle value is never given
//!   twice in a process, so a freed handle is an error forever, whatever is made later.
//! - [`dispatch`]: handle addresses that a loader reads (OpenCL's ICD dispatch word), never
//!   reused either.
//! - [`boundary`]: the panic guard every exported function runs in, `errno`, and the one line
//!   a door may say on stderr (with plugin text made inert).
//! - [`c`]: checked helpers for the pointers, arrays and strings C passes.
//! - [`compute_units`]: Xilinx's `kernel:{unit,unit}` names, split and checked.
//! - [`process`]: the process-wide host a door starts on first use.
//! - [`usm`]: address ranges reserved for device memory a program holds by pointer, and the
//!   map from addresses to allocations.
//!
//! A door trusts nothing a plugin says beyond what the library vouches for (`accelhost`
//! checks every answer before a door sees it) and adds no trust of its own.
//!
//! Linking this crate makes the library's host-memory ledger the process's allocator, as the
//! `accelhost` binary has it: what a plugin makes the host hold, a door's objects included, is
//! charged to that plugin.

pub mod boundary;
pub mod c;
pub mod compute_units;
pub mod dispatch;
pub mod handles;
pub mod process;
pub mod usm;

/// The host-memory ledger as the allocator of every door's library (`accelhost::ledger`): a
/// program's own `malloc` is untouched; the library's Rust allocations are counted.
#[global_allocator]
static LEDGER: accelhost::ledger::Ledger = accelhost::ledger::Ledger::system();
