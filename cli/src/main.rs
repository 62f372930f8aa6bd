//! The `accelhost` command: list, inspect and exercise the devices that sandboxed plugins
//! serve. Each subcommand is a thin layer over the `accelhost` library.

mod check_config;
mod demo;
mod exit;
mod info;
mod list;
mod plugins;
mod poke;
mod program;
mod pull;
mod serve;
mod start;
mod top;
mod xclbin;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Host memory is charged to the plugin the host works for where it is allocated
/// (`accelhost::ledger`): the CLI and the node service run with the ledger.
#[global_allocator]
static LEDGER: accelhost::ledger::Ledger = accelhost::ledger::Ledger::system();

const AFTER_HELP: &str = "\
Config lookup order: --config, then $ACCELHOST_ENDPOINT, then $ACCELHOST_CONFIG, then
./accelhost.json, then $XDG_CONFIG_HOME/accelhost/config.json, then
/etc/accelhost/config.json, then the embedded default (the shipped plugins and one emulated
card of each family).

Environment:
  ACCELHOST_ENDPOINT     unix:///path/serve.sock: use that running `accelhost serve`'s
                         devices (through builtin:remote) instead of loading plugins here
  ACCELHOST_CONFIG       config file to use when --config is not given
  ACCELHOST_PLUGIN_PATH  extra directories (':'-separated) to find plugin modules in
  ACCELHOST_CACHE_DIR    where compiled plugins are cached ('off' disables the cache)
  ACCELHOST_STORE        the store `pull` writes and oci:// modules load from, when the
                         config names none (default $XDG_DATA_HOME/accelhost/store)
  ACCELHOST_REGISTRY_USER, ACCELHOST_REGISTRY_PASSWORD  basic auth for `pull`
  ACCELHOST_COMPILE_WORKER  the executable that compiles plugin files, bounded by their
                         load_policy (default: this accelhost itself)
  ACCELHOST_CACHE_MAX_MIB  the cache's cap; least recently used entries go first
                         (default 2048)
  ACCELHOST_POOL_INSTANCES  plugin instances the pooling allocator keeps slots for
                         (default 2048; 'off' instantiates on demand)
  ACCELHOST_LOG          log filter, such as 'accelhost=debug' (default: warnings, and a
                         line when a plugin's first compile takes more than 2 s)
  ACCELHOST_TRACE=1      trace every call between the host and the plugins (as --trace)

Exit status:
  0  success
  1  an error: a bad config, device or step, a failed call, a run that did not verify
  2  a command line that does not parse
  3  partial results: list, info, plugins or demo printed what it found, but a plugin
     failed to load, faulted or failed to enumerate (`accelhost plugins` says why)";

/// Sandboxed plugin manager for accelerator runtimes (FPGA cards and other offload devices).
///
/// Device plugins are WebAssembly components: each reaches only the devices its config entry
/// grants, and a plugin that crashes or hangs is stopped without taking accelhost down.
#[derive(Parser)]
#[command(name = "accelhost", version, after_help = AFTER_HELP)]
struct Cli {
    /// The plugin list to use (see the lookup order below).
    #[arg(long, short = 'c', global = true, value_name = "FILE")]
    config: Option<PathBuf>,

    /// Trace every call between the host and the plugins on stderr: plugin, call, arguments,
    /// result and duration, and each host import the plugin makes (as ACCELHOST_TRACE=1).
    #[arg(long, global = true)]
    trace: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// List every device of every plugin (like fpgainfo or sycl-ls).
    List(list::Args),
    /// Show everything known about one device.
    Info(info::Args),
    /// Show the plugins of the config: module, WIT version, state and grants.
    Plugins(plugins::Args),
    /// Check a config file, and that every plugin module in it can be loaded.
    CheckConfig(check_config::Args),
    /// Run the canonical workload on every device and verify it: OPAE's hello_fpga flow on
    /// every NLB0 port (1 MiB and 64 MiB), the memcpy queue and vadd on every CAPI AFU, and
    /// vadd on every XRT card (1 Ki and 16 Mi elements, plus the rate of tiny launches), with a
    /// table of throughput and results.
    Demo(demo::Args),
    /// Measure accelhost against native baselines in the same run (a native plugin, the
    /// emulator, memcpy, a raw wasmtime call, an ioctl) and print the ratios to the targets.
    Bench(accelhost_bench::Args),
    /// Load an image (an xclbin for XRT cards) onto a device.
    Program(program::Args),
    /// Run single operations on one device through its plugin, in order, on one handle: MMIO
    /// reads, writes and polls, reset, a DMA buffer, reconfigure.
    Poke(poke::Args),
    /// Serve this node's devices over gRPC (a Unix socket, and TCP with mutual TLS) to the
    /// clients the serve config names, each seeing only the devices its grants name.
    #[command(after_help = serve::AFTER_HELP)]
    Serve(serve::Args),
    /// Show a running node's plugins, devices, clients and remote nodes live (like top),
    /// from its Prometheus endpoint.
    #[command(after_help = top::AFTER_HELP)]
    Top(top::Args),
    /// Pull plugins from OCI registries into the local store, pinned by digest and, with
    /// --key, verified (cosign signatures) before they are pinned.
    #[command(after_help = pull::AFTER_HELP)]
    Pull(pull::Args),
    /// Write xclbin images for the emulated XRT card, or check one.
    #[command(subcommand)]
    Xclbin(xclbin::Command),
}

/// Sets up logging from `ACCELHOST_LOG` (default `warn`, and the progress of long plugin
/// compiles); `--trace` or `ACCELHOST_TRACE` adds the boundary trace.
fn init_logging(trace: bool) {
    use tracing_subscriber::EnvFilter;
    let mut filter = EnvFilter::try_from_env("ACCELHOST_LOG")
        .unwrap_or_else(|_| EnvFilter::new(format!("warn,{}=info", accelhost::PROGRESS_TARGET)));
    if trace || accelhost::trace_enabled_by_env() {
        for target in accelhost::TRACE_TARGETS {
            if let Ok(directive) = format!("{target}=trace").parse() {
                filter = filter.add_directive(directive);
            }
        }
    }
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .without_time()
        .with_target(false)
        .init();
}

fn main() -> ExitCode {
    // First of all: this very binary is the worker that compiles plugin files, bounded.
    accelhost::compile_worker::serve_if_asked();
    let cli = Cli::parse();
    init_logging(cli.trace);
    let result = match cli.command {
        Command::List(args) => list::run(cli.config, args),
        Command::Info(args) => info::run(cli.config, args),
        Command::Plugins(args) => plugins::run(cli.config, args),
        Command::CheckConfig(args) => check_config::run(args),
        Command::Demo(args) => demo::run(cli.config, args),
        Command::Program(args) => program::run(cli.config, args),
        Command::Poke(args) => poke::run(cli.config, args),
        Command::Serve(args) => serve::run(cli.config, args),
        Command::Top(args) => top::run(args),
        Command::Bench(args) => accelhost_bench::run(args),
        Command::Xclbin(command) => xclbin::run(command),
        Command::Pull(args) => pull::run(cli.config, args),
    };
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_help_names_the_partial_exit_status() {
        let line = format!("\n  {}  partial results", super::exit::PARTIAL);
        assert!(super::AFTER_HELP.contains(&line), "{}", super::AFTER_HELP);
    }
}
