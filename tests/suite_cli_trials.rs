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
    // The longest first (the quickstarts build plugins, Prometheus scrapes for seconds), so
    // that the lanes end together.
    let mut trials = sdk_quickstart::trials();
    trials.extend(prometheus::trials());
    trials.extend(registry_attacks::trials());
    trials.extend(node_netns::trials());
    trials.extend(grpc_python::trials());
    trials.extend(oci_registry::trials());
    trials.extend(xclbin_kernels::trials());
    support::harness::run(&trials, support::harness::Overlap::AsLibtest)
}
