//! The settings of an emulated CAPI AFU.

use serde::Deserialize;

use crate::family::{CardError, CardsError, parse_fields};
use crate::family::{CardSettings, DeviceDecl};
use crate::types::BusAddress;

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
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CxlCard {
    /// The AFU (default memcpy).
    #[serde(default)]
    pub accelerator: CxlAccelerator,
    /// The adapter number (default 0).
    #[serde(default)]
    pub card: u32,
    /// The slice on the adapter; an AFU without one takes the lowest slice of its card that
    /// no other AFU has ([`resolve`] settles it when the config is read).
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

/// The most interrupts a context can be given: start-work's count is 16 bits wide.
const MAX_IRQS: u32 = u16::MAX as u32;

impl CxlCard {
    /// The interrupts a context gets by default and the most it may ask for: the config's,
    /// or the AFU's own (memcpy 2 and 2037; vadd raises none).
    pub fn irqs(&self) -> (u32, u32) {
        let (min, max) = match self.accelerator {
            CxlAccelerator::Memcpy => (2, 2037),
            CxlAccelerator::Vadd => (0, 0),
        };
        (self.irqs_min.unwrap_or(min), self.irqs_max.unwrap_or(max))
    }
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
    if card.accelerator == CxlAccelerator::Vadd {
        for (field, value) in [("irqs_min", card.irqs_min), ("irqs_max", card.irqs_max)] {
            if value.is_some_and(|n| n != 0) {
                return Err(CardError::new(
                    field,
                    "the vadd AFU raises no interrupts: its contexts take 0",
                ));
            }
        }
    }
    let (min, max) = card.irqs();
    if max > MAX_IRQS {
        return Err(CardError::new(
            "irqs_max",
            format!("{max} is out of range: a context takes at most {MAX_IRQS} interrupts"),
        ));
    }
    if min > max {
        let (field, bound) = if card.irqs_max.is_some() {
            ("irqs_max", "")
        } else {
            ("irqs_min", " (irqs_max's default)")
        };
        return Err(CardError::new(
            field,
            format!("irqs_min {min} is above irqs_max {max}{bound}"),
        ));
    }
    Ok(CardSettings::new(card, fields.clone()))
}

/// Gives each AFU without a `slice` the lowest slice of its card that no other AFU takes,
/// and refuses two AFUs on one slice (they would share a name and an AFU id). The AFUs of a
/// card are functions of one adapter: they share its bus address, so two different ones on
/// one card are refused.
pub(crate) fn resolve(cards: &mut [&mut DeviceDecl]) -> Result<(), CardsError> {
    let mut taken: std::collections::BTreeMap<(u32, u32), &str> = Default::default();
    let ids: Vec<String> = cards.iter().map(|d| d.id.clone()).collect();
    for (i, decl) in cards.iter().enumerate() {
        let Some(card) = decl.settings.get::<CxlCard>() else {
            continue;
        };
        if let Some(slice) = card.slice
            && let Some(other) = taken.insert((card.card, slice), &ids[i])
        {
            return Err((
                i,
                CardError::new(
                    "slice",
                    format!(
                        "card {} slice {slice} is already '{other}'s: each AFU needs a slice of \
                         its own",
                        card.card
                    ),
                ),
            ));
        }
    }
    for (i, decl) in cards.iter_mut().enumerate() {
        let Some(card) = decl.settings.get::<CxlCard>() else {
            continue;
        };
        if card.slice.is_some() {
            continue;
        }
        let slice = (0..)
            .find(|s| !taken.contains_key(&(card.card, *s)))
            .expect("a card has fewer AFUs than slices");
        taken.insert((card.card, slice), &ids[i]);
        let resolved = CxlCard {
            slice: Some(slice),
            ..card.clone()
        };
        decl.settings = CardSettings::new(resolved, decl.settings.json().clone());
    }
    let mut addresses: std::collections::BTreeMap<u32, (BusAddress, &str)> = Default::default();
    for (i, decl) in cards.iter_mut().enumerate() {
        let Some(card) = decl.settings.get::<CxlCard>().map(|c| c.card) else {
            continue;
        };
        decl.card_group = Some(format!("cxl card {card}"));
        let Some(address) = decl.bus_address else {
            continue;
        };
        match addresses.get(&card) {
            Some((other, id)) if *other != address => {
                return Err((
                    i,
                    CardError::new(
                        "bus_address",
                        format!(
                            "card {card} is at {other} ('{id}' says so): the AFUs of one card \
                             share its bus address"
                        ),
                    ),
                ));
            }
            _ => {
                addresses.insert(card, (address, &ids[i]));
            }
        }
    }
    Ok(())
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
        card_group: None,
        settings: CardSettings::new(card, Default::default()),
    }
}
