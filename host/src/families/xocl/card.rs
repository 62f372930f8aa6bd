//! The settings of an emulated XRT card: only how long a launch of the xclbin's own kernels
//! may run, since its compute units come from the xclbin loaded on it.

use std::time::Duration;

use serde::Deserialize;

use crate::family::CardSettings;
#[cfg(test)]
use crate::family::DeviceDecl;
use crate::family::{CardError, parse_fields};

/// The deadline of one launch of the xclbin's own kernels when the card's config sets none.
pub const DEFAULT_KERNEL_DEADLINE: Duration = Duration::from_secs(10);

/// What a `"family": "xocl"` card takes besides the shared fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XoclCard {
    /// How long one launch of a kernel from the xclbin's module may run before it ends in
    /// an error (default 10 s).
    pub kernel_deadline_ms: Option<u64>,
}

impl XoclCard {
    /// The deadline of one launch of the xclbin's own kernels.
    pub fn kernel_deadline(&self) -> Duration {
        self.kernel_deadline_ms
            .map_or(DEFAULT_KERNEL_DEADLINE, Duration::from_millis)
    }
}

/// The card fields, for messages.
/// (`accelerator` is parsed only to be refused with a message saying why.)
pub(crate) const FIELDS: &[&str] = &["accelerator", "kernel_deadline_ms"];

pub(crate) fn parse(
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<CardSettings, CardError> {
    if fields.contains_key("accelerator") {
        return Err(CardError::new(
            "accelerator",
            "an xocl card takes no accelerator: its compute units come from the xclbin loaded on it",
        ));
    }
    let card: XoclCard = parse_fields(fields)?;
    if card.kernel_deadline_ms == Some(0) {
        return Err(CardError::new(
            "kernel_deadline_ms",
            "a kernel deadline of 0 ms would fail every launch; leave it out for the default (10 s)",
        ));
    }
    Ok(CardSettings::new(card, fields.clone()))
}

/// A card with every default, for the emulator's tests.
#[cfg(test)]
pub(crate) fn decl(id: &str) -> DeviceDecl {
    DeviceDecl {
        id: id.into(),
        family: "xocl".into(),
        vendor_id: super::abi::PCI_VENDOR_XILINX,
        device_id: super::abi::PCI_DEVICE_U200_USER,
        bus_address: None,
        socket_id: None,
        card_group: None,
        settings: CardSettings::new(XoclCard::default(), Default::default()),
    }
}
