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
    Ok(start_host_reaching(config, adjust)?.0)
}

/// [`start_host_with`], also returning what the host's connector sees of the nodes its
/// plugins reach (for `accelhost serve`'s metrics).
pub fn start_host_reaching(
    config: Option<PathBuf>,
    adjust: impl FnOnce(&mut Config) -> anyhow::Result<()>,
) -> anyhow::Result<(Host, Arc<accelhost_node::reach::Reach>)> {
    let (mut config, origin): (Config, ConfigOrigin) =
        accelhost::config::discover(config.as_deref())?;
    tracing::debug!(source = %config.source, "config: {origin}");
    adjust(&mut config)?;
    let connector = Arc::new(accelhost_node::NodeConnector::new());
    let reach = connector.reach();
    let host = Host::builder()
        .discovered_config(config, origin)
        .remote(connector)
        .build()?;
    Ok((host, reach))
}
