//! accelhost's benchmark harness: every performance target of BENCHMARKS.md measured against
//! its baseline in the same run, printed as ratios. `accelhost bench` runs [`run`]; the
//! criterion benches (`cargo bench -p accelhost-bench`) measure the same code through
//! [`measure`], so that both report the same figures. The harness reaches into the library's
//! internals (instantiation alone, the emulator without a plugin), which is why it is a crate
//! of its own: the `accelhost` command itself uses the public API alone.

mod against;
mod figure;
mod first_load;
mod ledger;
pub mod measure;
mod metrics;
mod peers;
mod pod;
mod remote;
mod report;
mod suite;
mod tls;

pub use suite::{Args, run};
