//! What the host needs from a device family, and the helpers every family's registration
//! shares.

use std::io;

use serde::de::DeserializeOwned;
use wasmtime::component::ResourceTable;

use crate::config::{CardSettings, DeviceDecl};
use crate::devices::{DeviceRegistry, LinuxRoots};
use crate::state::ReleaseStage;

/// One device family: a kernel driver's ABI, its Linux backend and emulator, the host
/// import that shims it for plugins and the plugin shipped for it. Registered once, in
/// [`FAMILIES`](super::FAMILIES); the host reaches the family only through this.
pub(crate) struct Family {
    /// Its name in configs (`"family"`, `trusted_for`) and its shipped plugin's
    /// (`builtin:<name>`).
    pub name: &'static str,
    /// The shipped plugin's component.
    pub builtin: &'static [u8],
    /// Its part of the embedded default config: `{"devices": [...], "plugins": [...]}`, the
    /// shipped plugin granted the family's real device nodes and one emulated card.
    pub default_config: &'static str,
    /// The PCI vendor and device ids of an emulated card whose config gives none.
    pub default_ids: (u16, u16),
    /// The fields an emulated card of the family takes besides the shared ones
    /// ([`SHARED_CARD_FIELDS`]).
    pub card_fields: &'static [&'static str],
    /// Parses and checks those fields.
    pub parse_card:
        fn(&serde_json::Map<String, serde_json::Value>) -> Result<CardSettings, CardError>,
    /// Checks the family's cards together, in config order, and settles what one card's
    /// settings leave to the others (such as a free slot); an error names the card's index
    /// in `cards`.
    pub resolve_cards: fn(&mut [&mut DeviceDecl]) -> Result<(), CardsError>,
    /// Adds an emulated card the config declares to the registry.
    pub emulate: fn(&DeviceDecl, &mut DeviceRegistry),
    /// Adds the family's devices of this machine, found under `roots`, to the registry.
    pub discover: fn(&LinuxRoots, &mut DeviceRegistry) -> io::Result<()>,
    /// Releases what an ended instance holds of the family's devices, stage by stage.
    pub release: fn(&mut ResourceTable, ReleaseStage, &str),
    /// Checks an image in a format the family's driver loads, before any plugin sees it:
    /// `None` when the image is not in that format.
    pub check_image: fn(&[u8]) -> Option<Result<(), String>>,
}

/// The fields every emulated card takes, whatever its family.
pub(crate) const SHARED_CARD_FIELDS: &[&str] = &[
    "id",
    "family",
    "vendor_id",
    "device_id",
    "bus_address",
    "socket_id",
];

/// A card field the family refuses: the field (empty for the whole card) and why.
#[derive(Debug)]
pub(crate) struct CardError {
    pub field: String,
    pub message: String,
}

impl CardError {
    pub(crate) fn new(field: &str, message: impl Into<String>) -> Self {
        CardError {
            field: field.into(),
            message: message.into(),
        }
    }
}

/// Parses a family's card fields into `T` (which refuses unknown fields), naming the field
/// a type error is in.
pub(crate) fn parse_fields<T: DeserializeOwned>(
    fields: &serde_json::Map<String, serde_json::Value>,
) -> Result<T, CardError> {
    let value = serde_json::Value::Object(fields.clone());
    serde_path_to_error::deserialize(value).map_err(|err| {
        let path = err.path().to_string();
        CardError::new(
            if path == "." { "" } else { &path },
            err.into_inner().to_string(),
        )
    })
}

/// A card field refused when the family's cards are checked together: the card's index among
/// them, and the error.
pub(crate) type CardsError = (usize, CardError);

/// For a family whose cards are independent of each other.
pub(crate) fn independent_cards(_: &mut [&mut DeviceDecl]) -> Result<(), CardsError> {
    Ok(())
}

/// A family without an image format of its own.
pub(crate) fn no_image_format(_: &[u8]) -> Option<Result<(), String>> {
    None
}
