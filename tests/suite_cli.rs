//! The `accelhost` binary's end-to-end tests, one binary: the CLI, `accelhost serve`, the
//! kubelet device plugin and what plugins print. The tests that need a tool from outside
//! (network namespaces, Prometheus, grpcio, the SDK toolchains) have runners of their own.

#[path = "support/crafted.rs"]
mod crafted;
#[path = "support/served.rs"]
mod served;
mod support;

mod cli;
mod kubelet;
mod serve;
mod untrusted_output;
