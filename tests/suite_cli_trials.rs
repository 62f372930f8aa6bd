//! The CLI's end-to-end tests that run under the suite's own runner
//! (`tests/support/harness.rs`), one binary: they need a tool from outside the build (network
//! namespaces and `ip`, Debian's `prometheus` and `docker-registry`, openssl, grpcio, the SDK's
//! toolchains, clang for kernels) and report the reason when it is missing instead of passing, or they measure a
//! command's peak memory, which takes this binary's own `main` (`support/peak_rss.rs`).

#[path = "support/peak_rss.rs"]
mod peak_rss;
#[path = "support/registry.rs"]
mod registry;
#[path = "support/remote.rs"]
mod remote;
#[path = "support/served.rs"]
mod served;
mod support;

mod grpc_python;
mod node_netns;
mod oci_registry;
mod prometheus;
mod registry_attacks;
mod sdk_quickstart;
mod xclbin_kernels;

fn main() -> std::process::ExitCode {
    if let Some(code) = peak_rss::launch_if_asked() {
        return code;
    }
    // The longest first (the quickstarts build plugins in one-core toolchains), so that the
    // lanes end together; Prometheus's scrapes and the registries that trickle or go silent
    // wait on clocks, on lanes of their own (one lane took 42 s of them, the busy ones 37).
    let mut busy = sdk_quickstart::trials();
    busy.extend(grpc_python::trials());
    busy.extend(oci_registry::trials());
    busy.extend(xclbin_kernels::trials());
    let mut waiting = prometheus::trials();
    waiting.extend(registry_attacks::trials());
    waiting.extend(node_netns::trials());
    support::harness::run_beside_waiting(&busy, &waiting)
}
