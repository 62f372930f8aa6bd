//! The device families, each one folder: its ABI facts (`abi.rs`), Linux backend
//! (`linux.rs`), emulator (`emu.rs`), emulated-card settings (`card.rs`), host import
//! (`imports.rs`) and the resources it hands plugins (`resources.rs`), and its share of the
//! embedded default config (`default.json`). Its canonical workload drives the public API
//! and lives above, in `crate::workloads`.
//! [`FAMILIES`] registers them; nothing else in the host names a family.

pub mod cxl;
pub mod dfl;
mod family;
pub mod xocl;

use wasmtime::component::ResourceTable;

use crate::config::DeviceDecl;
use crate::devices::{DeviceRegistry, LinuxRoots};
use crate::state::ReleaseStage;

pub(crate) use family::{
    CardError, CardsError, Family, SHARED_CARD_FIELDS, independent_cards, no_image_format,
    parse_fields,
};

/// Every family the host serves, in the order their devices are listed.
pub(crate) const FAMILIES: &[&Family] = &[&dfl::FAMILY, &cxl::FAMILY, &xocl::FAMILY];

/// The family named `name`.
pub(crate) fn find(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().copied().find(|f| f.name == name)
}

/// The families' names, for messages: "`dfl`, `xocl`, `cxl`".
pub(crate) fn names() -> String {
    let names: Vec<String> = FAMILIES.iter().map(|f| format!("`{}`", f.name)).collect();
    names.join(", ")
}

/// The devices a config makes available: the emulated cards it declares, then the real
/// devices every family finds under `roots`. A family that finds no sysfs tree finds no
/// devices.
pub fn registry(cards: &[DeviceDecl], roots: &LinuxRoots) -> DeviceRegistry {
    let mut registry = DeviceRegistry::default();
    for card in cards {
        if let Some(family) = find(&card.family) {
            (family.emulate)(card, &mut registry);
        }
    }
    for family in FAMILIES {
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

/// A registry of the one emulated card `card` (for `accelhost bench`'s direct baselines).
#[cfg(feature = "internals")]
pub fn emulated(card: &DeviceDecl) -> DeviceRegistry {
    let mut registry = DeviceRegistry::default();
    if let Some(family) = find(&card.family) {
        (family.emulate)(card, &mut registry);
    }
    registry
}

/// Releases what an ended instance holds of every family's devices at `stage`.
pub(crate) fn release(table: &mut ResourceTable, stage: ReleaseStage, why: &str) {
    for family in FAMILIES {
        (family.release)(table, stage, why);
    }
}

/// Checks an image a family's driver would load (an xclbin, by its magic) before any plugin
/// sees it; images in no family's format are the plugin's to judge.
pub fn check_image(image: &[u8]) -> Result<(), String> {
    FAMILIES
        .iter()
        .find_map(|family| (family.check_image)(image))
        .unwrap_or(Ok(()))
}

/// The embedded default config: every family's share of it, in registration order.
pub(crate) fn default_config() -> String {
    let mut devices = Vec::new();
    let mut plugins = Vec::new();
    for family in FAMILIES {
        let share: serde_json::Value = serde_json::from_str(family.default_config)
            .unwrap_or_else(|e| panic!("{}/default.json is not JSON: {e}", family.name));
        for (key, into) in [("devices", &mut devices), ("plugins", &mut plugins)] {
            if let Some(items) = share.get(key).and_then(|v| v.as_array()) {
                into.extend(items.iter().cloned());
            }
        }
    }
    let config = serde_json::json!({ "devices": devices, "plugins": plugins });
    serde_json::to_string_pretty(&config).expect("JSON values serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_family_is_registered_once_with_its_parts() {
        for (i, family) in FAMILIES.iter().enumerate() {
            assert!(
                FAMILIES[..i].iter().all(|f| f.name != family.name),
                "{} is registered twice",
                family.name
            );
            assert!(find(family.name).is_some());
            assert!(
                !family.builtin.is_empty(),
                "{} ships no plugin",
                family.name
            );
            let share: serde_json::Value = serde_json::from_str(family.default_config).unwrap();
            let plugins = share["plugins"].as_array().unwrap();
            assert!(
                plugins
                    .iter()
                    .any(|p| p["module"] == format!("builtin:{}", family.name)),
                "{}'s default config share loads its shipped plugin",
                family.name
            );
            let devices = share["devices"].as_array().unwrap();
            assert!(
                devices.iter().all(|d| d["family"] == family.name),
                "{}'s default config share declares only its own cards",
                family.name
            );
            assert!(
                !devices.is_empty(),
                "{} declares an emulated card",
                family.name
            );
        }
    }

    #[test]
    fn each_card_field_a_family_declares_is_one_it_parses() {
        for family in FAMILIES {
            for field in family.card_fields {
                let mut fields = serde_json::Map::new();
                fields.insert(field.to_string(), serde_json::json!([[]]));
                let err = (family.parse_card)(&fields)
                    .expect_err("a list of lists is no card field's value");
                assert_eq!(
                    err.field, *field,
                    "{}: {field} is declared but not parsed: {}",
                    family.name, err.message
                );
            }
            let mut fields = serde_json::Map::new();
            fields.insert("no_such_field".into(), serde_json::json!(1));
            assert!((family.parse_card)(&fields).is_err(), "{}", family.name);
            (family.parse_card)(&serde_json::Map::new()).unwrap_or_else(|e| {
                panic!("{}: every card field has a default: {e:?}", family.name)
            });
        }
    }
}
