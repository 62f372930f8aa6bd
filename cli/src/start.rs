//! Starting a host on the config the lookup order finds, as every subcommand but
//! `check-config` and `xclbin` does.

use std::path::PathBuf;
use std::sync::Arc;

use accelhost::{Config, ConfigOrigin, Host};

/// Finds the config and starts a host on it, with every plugin loaded: a plugin file whose
/// compile takes long is waited for (each compile ends by its `load_policy.compile_timeout_ms`,
/// and one that takes long says so on the progress lines).
pub fn start_host(config: Option<PathBuf>) -> anyhow::Result<Host> {
    start_host_with(config, |_| Ok(()))
}

/// Finds the config and starts a host on it, serving the plugins that are ready at once: a
/// plugin file still compiling shows as loading ([`Host::wait_loaded`] waits for it).
pub fn start_host_at_once(config: Option<PathBuf>) -> anyhow::Result<Host> {
    Ok(start(config, |_| Ok(()), false)?.0)
}

/// Finds the config, lets `adjust` change it, and starts a host on it with every plugin
/// loaded, as [`start_host`] does.
pub fn start_host_with(
    config: Option<PathBuf>,
    adjust: impl FnOnce(&mut Config) -> anyhow::Result<()>,
) -> anyhow::Result<Host> {
    let host = start(config, adjust, false)?.0;
    host.wait_loaded(std::time::Duration::MAX);
    Ok(host)
}

/// The host of `accelhost serve`: its plugins' memory can be handed to local clients, and
/// what its connector sees of the nodes its plugins reach is returned for the metrics.
pub fn start_node_host(
    config: Option<PathBuf>,
) -> anyhow::Result<(Host, Arc<accelhost_node::reach::Reach>)> {
    start(config, |_| Ok(()), true)
}

fn start(
    config: Option<PathBuf>,
    adjust: impl FnOnce(&mut Config) -> anyhow::Result<()>,
    shareable_memory: bool,
) -> anyhow::Result<(Host, Arc<accelhost_node::reach::Reach>)> {
    let (mut config, origin): (Config, ConfigOrigin) =
        accelhost::builtin::discover(config.as_deref())?;
    tracing::debug!(source = %config.source, "config: {origin}");
    adjust(&mut config)?;
    let connector = Arc::new(accelhost_node::NodeConnector::new());
    let reach = connector.reach();
    let host = Host::builder()
        .discovered_config(config, origin)
        .remote(connector)
        .shareable_memory(shareable_memory)
        .build()?;
    Ok((host, reach))
}
