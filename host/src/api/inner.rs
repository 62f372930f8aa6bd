//! The state a host and its handles share.

use super::workers::Workers;
use crate::config::{Config, ConfigOrigin};
use crate::manager::Manager;

/// What a [`Host`](super::Host) and every handle opened through it share: the plugins stop
/// when the last of them goes.
pub(crate) struct HostInner {
    pub manager: Manager,
    pub config: Config,
    pub origin: ConfigOrigin,
    /// The threads that ask the plugins for their devices at once.
    pub workers: Workers,
}

impl Drop for HostInner {
    fn drop(&mut self) {
        self.manager.shutdown();
    }
}
