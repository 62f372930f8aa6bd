//! The settings of an emulated XRT card: none beyond the shared fields, since its compute
//! units come from the xclbin loaded on it.

use serde::Deserialize;

use crate::family::CardSettings;
#[cfg(test)]
use crate::family::DeviceDecl;
use crate::family::{CardError, parse_fields};

/// What a `"family": "xocl"` card takes besides the shared fields: nothing.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct XoclCard {}

/// The card fields, for messages.
/// (`accelerator` is parsed only to be refused with a message saying why.)
pub(crate) const FIELDS: &[&str] = &["accelerator"];

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
