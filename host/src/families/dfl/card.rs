//! The settings of an emulated DFL port.

use serde::Deserialize;

use crate::family::CardSettings;
#[cfg(test)]
use crate::family::DeviceDecl;
use crate::family::{CardError, parse_fields};

/// What a `"family": "dfl"` card takes besides the shared fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DflCard {
    /// The accelerator: only `nlb0`, the default (the field exists for symmetry with cxl).
    #[serde(default)]
    accelerator: Option<String>,
    /// The port number reported (default 0).
    #[serde(default)]
    pub port_id: u32,
}

/// The card fields, for messages.
pub(crate) const FIELDS: &[&str] = &["accelerator", "port_id"];

pub(crate) fn parse(
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<CardSettings, CardError> {
    let card: DflCard = parse_fields(fields)?;
    match card.accelerator.as_deref() {
        None | Some("nlb0") => Ok(CardSettings::new(card, fields.clone())),
        Some(other) => Err(CardError::new(
            "accelerator",
            format!("a dfl card carries nlb0, not {other}"),
        )),
    }
}

/// A card with every default, for the emulator's tests.
#[cfg(test)]
pub(crate) fn decl(id: &str) -> DeviceDecl {
    DeviceDecl {
        id: id.into(),
        family: "dfl".into(),
        vendor_id: super::abi::PCI_VENDOR_INTEL,
        device_id: super::abi::ASE_DEVICE_ID,
        bus_address: None,
        socket_id: None,
        card_group: None,
        settings: CardSettings::new(DflCard::default(), Default::default()),
    }
}
