//! Canonical workloads run through the public API, shared by `accelhost demo`, the end-to-end
//! tests and the benchmarks, so that all three measure the same thing.

pub mod capi;
pub mod nlb0;
pub mod vadd;
