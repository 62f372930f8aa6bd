//! An emulated card of `devices`: what every family's cards share, and the family's own
//! settings as the family parsed them.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use crate::types::BusAddress;

/// An emulated card in `devices`.
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceDecl {
    /// Grants name the card `emu:<id>`.
    pub id: String,
    /// The driver family whose ABI the emulator speaks (`dfl`, `xocl`, `cxl`).
    pub family: String,
    /// PCI vendor id: the config's, or the family's default.
    pub vendor_id: u16,
    /// PCI device id: the config's, or the family's default (dfl: 0x0A5E, the id OPAE's
    /// simulator reports; xocl: 0x5001, an Alveo U200 user function).
    pub device_id: u16,
    /// The PCI address reported for the card, if any (`ssss:bb:dd.f`).
    pub bus_address: Option<BusAddress>,
    /// The CPU socket reported for the card, if any.
    pub socket_id: Option<u32>,
    /// Set by the family when several devices are functions of one card (the AFUs of one
    /// CAPI adapter): devices of one group share the card's bus address.
    pub card_group: Option<String>,
    /// The fields only this family's cards take.
    pub settings: CardSettings,
}

/// The fields of a card that only its family takes (such as a cxl AFU's `slice`), parsed
/// and checked by the family when the config was read.
#[derive(Clone)]
pub struct CardSettings {
    parsed: Arc<dyn Any + Send + Sync>,
    json: serde_json::Map<String, serde_json::Value>,
}

impl CardSettings {
    /// Settings the family parsed from `json` into `parsed`.
    pub(crate) fn new<T: Any + Send + Sync>(
        parsed: T,
        json: serde_json::Map<String, serde_json::Value>,
    ) -> Self {
        CardSettings {
            parsed: Arc::new(parsed),
            json,
        }
    }

    /// The settings as the family's own type.
    pub(crate) fn get<T: Any>(&self) -> Option<&T> {
        self.parsed.downcast_ref()
    }

    /// The fields as the config wrote them.
    pub fn json(&self) -> &serde_json::Map<String, serde_json::Value> {
        &self.json
    }
}

impl PartialEq for CardSettings {
    fn eq(&self, other: &Self) -> bool {
        self.json == other.json
    }
}

impl fmt::Debug for CardSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&self.json, f)
    }
}
