//! The host object behind a plugin's `remote.node` resource: its session with one node and
//! the mirrors of that session's buffers. The bindings keep their own type for the resource;
//! the import finds this object through `state::host_handle`.

use std::sync::Arc;

use super::RemoteNode;
use super::mirror::Mirrors;

/// A plugin's session with one node.
pub struct NodeResource {
    pub(crate) node: Arc<dyn RemoteNode>,
    pub(crate) mirrors: Arc<Mirrors>,
    /// As the plugin's grant names it.
    pub(crate) endpoint: String,
    pub(crate) _charge: crate::devices::Charge,
    /// Its place in the plugin's part of its host's sessions on the node.
    pub(crate) _slot: super::share::SessionSlot,
}

impl Drop for NodeResource {
    fn drop(&mut self) {
        self.mirrors.close();
    }
}
