//! The XRT family's registration.

use std::io;
use std::sync::Arc;

use super::{XoclDevice, abi, card, emu, linux, resources, xclbin};
use crate::devices::{DeviceRegistry, LinuxRoots};
use crate::family::DeviceDecl;
use crate::family::{Family, independent_cards};

/// The family's registration.
pub(crate) const FAMILY: Family = Family {
    name: "xocl",
    builtin: include_bytes!(concat!(
        env!("ACCELHOST_GUEST_DIR"),
        "/accelhost_plugin_xocl.wasm"
    )),
    default_config: include_str!("default.json"),
    default_ids: (abi::PCI_VENDOR_XILINX, abi::PCI_DEVICE_U200_USER),
    card_fields: card::FIELDS,
    parse_card: card::parse,
    resolve_cards: independent_cards,
    emulate,
    discover,
    release: resources::release,
    check_image,
};

fn emulate(decl: &DeviceDecl, registry: &mut DeviceRegistry) {
    let card = emu::EmulatedCard::new(decl);
    registry.add::<dyn XoclDevice>(card.desc().path, Arc::new(card), false);
}

fn discover(roots: &LinuxRoots, registry: &mut DeviceRegistry) -> io::Result<()> {
    for device in linux::discover_devices(roots)? {
        registry.add::<dyn XoclDevice>(device.desc().path, Arc::new(device), true);
    }
    Ok(())
}

/// An xclbin (by its magic) must parse and validate.
fn check_image(image: &[u8]) -> Option<Result<(), String>> {
    image.starts_with(xclbin::MAGIC.as_slice()).then(|| {
        xclbin::parse(image)
            .map(drop)
            .map_err(|e| format!("the xclbin is malformed: {e}"))
    })
}
