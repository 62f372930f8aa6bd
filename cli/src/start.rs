//! Starting a host on the config the lookup order finds, as every subcommand but
//! `check-config` and `xclbin` does.

use std::path::PathBuf;
use std::sync::Arc;

use accelhost::{Config, ConfigOrigin, Host};

/// Finds the config and starts a host on it.
pub fn start_host(config: Option<PathBuf>) -> anyhow::Result<Host> {
    start_host_with(config, |_| Ok(()))
}

/// Finds the config, lets `adjust` change it, and starts a host on it.
pub fn start_host_with(
    config: Option<PathBuf>,
    adjust: impl FnOnce(&mut Config) -> anyhow::Result<()>,
) -> anyhow::Result<Host> {
    Ok(start(config, adjust, false)?.0)
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
