//! Tokens: enumerated devices, with their properties kept on the host side.

use std::fmt;
use std::sync::Arc;

use crate::error::Result;
use crate::manager::{PluginSlot, Ticket};
use crate::properties::Properties;

/// A device found by [`Host::enumerate`](crate::Host::enumerate). Cheap to clone. Reading its
/// properties never calls into the plugin; a token from a plugin instance that has since
/// faulted is refused by every call that would use it.
#[derive(Clone)]
pub struct Token {
    inner: Arc<TokenInner>,
}

struct TokenInner {
    slot: Arc<PluginSlot>,
    ticket: Ticket,
    token: u64,
    properties: Properties,
}

impl Token {
    pub(crate) fn new(
        slot: Arc<PluginSlot>,
        ticket: Ticket,
        token: u64,
        properties: Properties,
    ) -> Self {
        Token {
            inner: Arc::new(TokenInner {
                slot,
                ticket,
                token,
                properties,
            }),
        }
    }

    /// The properties the plugin reported at enumeration.
    pub fn properties(&self) -> &Properties {
        &self.inner.properties
    }

    /// The name of the plugin that serves the device.
    pub fn plugin(&self) -> &str {
        self.inner.slot.name()
    }

    /// `<plugin>/<name>`: how the CLI names the device.
    pub fn id(&self) -> String {
        format!("{}/{}", self.plugin(), self.inner.properties.name)
    }

    /// False once the plugin instance that issued the token has ended.
    pub fn is_valid(&self) -> bool {
        self.inner.ticket.lease.is_live()
    }

    /// Fresh properties from the plugin (this one does call into wasm).
    pub fn refresh(&self) -> Result<Properties> {
        let token = self.inner.token;
        self.inner
            .slot
            .call_in(
                "describe",
                Some(self.inner.ticket.generation),
                format_args!("token={token}"),
                |p| p.describe(token),
                |properties: Properties| properties.check_bounds().map(|()| properties),
            )
            .map(|(properties, _)| properties)
    }

    pub(crate) fn slot(&self) -> &Arc<PluginSlot> {
        &self.inner.slot
    }

    pub(crate) fn ticket(&self) -> &Ticket {
        &self.inner.ticket
    }

    pub(crate) fn raw(&self) -> u64 {
        self.inner.token
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Token")
            .field("id", &self.id())
            .field("valid", &self.is_valid())
            .finish()
    }
}
