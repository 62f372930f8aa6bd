//! The settings of an emulated CAPI AFU.

use serde::Deserialize;

use crate::config::CardSettings;
#[cfg(test)]
use crate::config::DeviceDecl;
use crate::families::{CardError, parse_fields};

/// The AFUs the emulator carries.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum CxlAccelerator {
    /// The memcpy test AFU, AFU-directed, with a work-element queue per context.
    #[default]
    Memcpy,
    /// The capi-vadd AFU, dedicated mode.
    Vadd,
}

/// What a `"family": "cxl"` card takes besides the shared fields.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CxlCard {
    /// The AFU (default memcpy).
    #[serde(default)]
    pub accelerator: CxlAccelerator,
    /// The adapter number (default 0).
    #[serde(default)]
    pub card: u32,
    /// The slice on the adapter; AFUs without one take the next, in config order.
    #[serde(default)]
    pub slice: Option<u32>,
    /// How many contexts an AFU-directed AFU takes at once (default 512, at most 16384).
    #[serde(default)]
    pub max_contexts: Option<u32>,
    /// Interrupts a context gets by default (`irqs_min`).
    #[serde(default)]
    pub irqs_min: Option<u32>,
    /// The most interrupts a context may ask for (`irqs_max`).
    #[serde(default)]
    pub irqs_max: Option<u32>,
}

/// The card fields, for messages.
pub(crate) const FIELDS: &[&str] = &[
    "accelerator",
    "card",
    "slice",
    "max_contexts",
    "irqs_min",
    "irqs_max",
];

pub(crate) fn parse(
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<CardSettings, CardError> {
    let card: CxlCard = parse_fields(fields)?;
    if let Some(max) = card.max_contexts {
        if !(1..=16384).contains(&max) {
            return Err(CardError::new(
                "max_contexts",
                format!("{max} is out of range: expected 1 to 16384"),
            ));
        }
        if card.accelerator == CxlAccelerator::Vadd && max != 1 {
            return Err(CardError::new(
                "max_contexts",
                "a dedicated-mode AFU (vadd) has one context",
            ));
        }
    }
    if let (Some(min), Some(max)) = (card.irqs_min, card.irqs_max)
        && min > max
    {
        return Err(CardError::new(
            "irqs_max",
            format!("irqs_max {max} is below irqs_min {min}"),
        ));
    }
    Ok(CardSettings::new(card, fields.clone()))
}

/// An AFU with `card`'s settings, for the emulator's tests.
#[cfg(test)]
pub(crate) fn decl(id: &str, card: CxlCard) -> DeviceDecl {
    DeviceDecl {
        id: id.into(),
        family: "cxl".into(),
        vendor_id: super::abi::PCI_VENDOR_IBM,
        device_id: super::abi::CAPI_DEVICE_ID,
        bus_address: None,
        socket_id: None,
        settings: CardSettings::new(card, Default::default()),
    }
}
