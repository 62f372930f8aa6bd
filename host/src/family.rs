//! What the host needs from a device family, described low so that config validation and
//! the manager receive the families as a parameter and never name one: the [`Family`]
//! description, an emulated card as the config declares it ([`DeviceDecl`]), the order an
//! instance's device resources are released in, and the helpers every family's registration
//! shares, and the [`Catalog`] that carries them from the builder down. The families themselves
//! are listed once, by the catalog (`crate::builtin`).

use std::any::Any;
use std::fmt;
use std::io;
use std::sync::Arc;

use serde::de::DeserializeOwned;
use wasmtime::component::ResourceTable;

use crate::devices::{DeviceRegistry, LinuxRoots};
use crate::types::BusAddress;

/// One device family: a kernel driver's ABI, its Linux backend and emulator, the host
/// import that shims it for plugins and the plugin shipped for it. Listed once, in the
/// catalog (`crate::builtin`); the host reaches the family only through this, inside the
/// [`Catalog`] it is handed.
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

/// What ships inside the host, handed down from the builder (`crate::builtin` makes it) to
/// config validation, the device registry, the manager and each instance: the families it
/// serves and the plugins it ships (`builtin:<name>`), each family's among them. Code below
/// the builder reaches the families only through this.
#[derive(Clone, Copy)]
pub(crate) struct Catalog {
    /// The families, in the order their devices are listed.
    pub families: &'static [&'static Family],
    /// Every built-in plugin's name.
    pub builtins: fn() -> Vec<&'static str>,
    /// The component bytes of the built-in plugin of that name.
    pub module: fn(&str) -> Option<&'static [u8]>,
    /// Their sha256, known since the build (the compile cache's key, not hashed per start).
    pub digest: fn(&str) -> Option<[u8; 32]>,
}

impl Catalog {
    /// The devices a config makes available: the emulated cards it declares, then the real
    /// devices every family finds under `roots`. A family that finds no sysfs tree finds no
    /// devices.
    pub fn registry(&self, cards: &[DeviceDecl], roots: &LinuxRoots) -> DeviceRegistry {
        let mut registry = DeviceRegistry::default();
        for card in cards {
            if let Some(family) = find(self.families, &card.family) {
                (family.emulate)(card, &mut registry);
            }
        }
        for family in self.families {
            if let Err(err) = (family.discover)(roots, &mut registry) {
                tracing::debug!(
                    sysfs = %roots.sysfs.display(),
                    "no {} devices found through sysfs: {err}",
                    family.name
                );
            }
        }
        registry
    }

    /// Releases what an ended instance holds of every family's devices at `stage`.
    pub fn release(&self, table: &mut ResourceTable, stage: ReleaseStage, why: &str) {
        for family in self.families {
            (family.release)(table, stage, why);
        }
    }

    /// Checks an image a family's driver would load (an xclbin, by its magic) before any
    /// plugin sees it; images in no family's format are the plugin's to judge.
    pub fn check_image(&self, image: &[u8]) -> Result<(), String> {
        self.families
            .iter()
            .find_map(|family| (family.check_image)(image))
            .unwrap_or(Ok(()))
    }
}

/// The family named `name` among `families`.
pub(crate) fn find(families: &[&'static Family], name: &str) -> Option<&'static Family> {
    families.iter().copied().find(|f| f.name == name)
}

/// The families' names, for messages: "`dfl`, `xocl`, `cxl`".
pub(crate) fn names(families: &[&Family]) -> String {
    let names: Vec<String> = families.iter().map(|f| format!("`{}`", f.name)).collect();
    names.join(", ")
}

/// The order an ended instance's device resources are released in, so that nothing is
/// released while something released later still uses it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReleaseStage {
    /// Device work still queued is cancelled, failing its completions.
    CancelWork,
    /// Contexts and ports are closed, which removes their DMA mappings.
    Detach,
    /// Device memory objects are freed.
    FreeMemory,
    /// Device handles are closed.
    Close,
}

impl ReleaseStage {
    /// Every stage, first to last.
    pub const IN_ORDER: [ReleaseStage; 4] = [
        ReleaseStage::CancelWork,
        ReleaseStage::Detach,
        ReleaseStage::FreeMemory,
        ReleaseStage::Close,
    ];
}

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
