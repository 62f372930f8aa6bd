//! Tokens: enumerated devices, with their properties kept on the host side.

use std::fmt;
use std::sync::Arc;

use crate::attributes::{self, AttributeInfo};
use crate::error::{Error, Result};
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

    /// The device this one belongs to (a DFL port's FME), as a token of the same plugin
    /// instance; `None` when the plugin reports no parent. Asks the plugin (`describe`).
    pub fn parent(&self) -> Result<Option<Token>> {
        let Some(parent) = self.inner.properties.parent else {
            return Ok(None);
        };
        let (properties, ticket) = self.inner.slot.call_in(
            "describe",
            Some(self.inner.ticket.generation),
            format_args!("token={parent}"),
            |p| p.describe(parent),
            |properties: Properties| properties.check_bounds().map(|()| properties),
        )?;
        Ok(Some(Token::new(
            self.inner.slot.clone(),
            ticket,
            parent,
            properties,
        )))
    }

    /// Whether this token's device is `child`'s parent: the same plugin instance issued both,
    /// and `child` names this device as its parent.
    pub fn is_parent_of(&self, child: &Token) -> bool {
        Arc::ptr_eq(&self.inner.slot, &child.inner.slot)
            && self.inner.ticket.generation == child.inner.ticket.generation
            && child.inner.properties.parent == Some(self.inner.token)
    }

    /// The device's attributes (`afu_id`, `errors/errors`, ...), as its plugin lists them;
    /// `unsupported` from a plugin without the `attributes` export.
    pub fn attributes(&self) -> Result<Vec<AttributeInfo>> {
        let token = self.inner.token;
        self.inner
            .slot
            .call_in(
                "list-attributes",
                Some(self.inner.ticket.generation),
                format_args!("token={token}"),
                |p| p.list_attributes(token),
                |list: Vec<AttributeInfo>| attributes::check_list(&list).map(|()| list),
            )
            .map(|(list, _)| list)
    }

    /// The current value of attribute `name` (text, as sysfs gives it).
    pub fn read_attribute(&self, name: &str) -> Result<String> {
        check_name("read-attribute", name)?;
        let token = self.inner.token;
        self.inner
            .slot
            .call_in(
                "read-attribute",
                Some(self.inner.ticket.generation),
                format_args!("token={token} name={name:?}"),
                |p| p.read_attribute(token, name),
                |value: String| attributes::check_value(&value).map(|()| value),
            )
            .map(|(value, _)| value)
    }

    /// Writes `value` to attribute `name` (for example an error register's value, to clear
    /// the errors it shows).
    pub fn write_attribute(&self, name: &str, value: &str) -> Result<()> {
        check_name("write-attribute", name)?;
        attributes::check_value(value).map_err(|message| Error::InvalidArgument {
            call: "write-attribute",
            message,
        })?;
        let token = self.inner.token;
        self.inner
            .slot
            .call_in(
                "write-attribute",
                Some(self.inner.ticket.generation),
                format_args!("token={token} name={name:?} value={value:?}"),
                |p| p.write_attribute(token, name, value),
                Ok,
            )
            .map(|((), _)| ())
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

fn check_name(call: &'static str, name: &str) -> Result<()> {
    attributes::check_name(name).map_err(|why| Error::InvalidArgument {
        call,
        message: why.to_string(),
    })
}
