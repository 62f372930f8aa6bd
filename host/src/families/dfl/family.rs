//! The DFL family's registration.

use std::io;
use std::sync::Arc;

use super::{DflDevice, abi, card, emu, linux, resources};
use crate::devices::{DeviceRegistry, LinuxRoots};
use crate::family::DeviceDecl;
use crate::family::{Family, independent_cards, no_image_format};

/// The family's registration.
pub(crate) const FAMILY: Family = Family {
    name: "dfl",
    builtin: include_bytes!(concat!(
        env!("ACCELHOST_GUEST_DIR"),
        "/accelhost_plugin_dfl.wasm"
    )),
    default_config: include_str!("default.json"),
    default_ids: (abi::PCI_VENDOR_INTEL, abi::ASE_DEVICE_ID),
    card_fields: card::FIELDS,
    parse_card: card::parse,
    resolve_cards: independent_cards,
    emulate,
    discover,
    release: resources::release,
    check_image: no_image_format,
};

fn emulate(decl: &DeviceDecl, registry: &mut DeviceRegistry) {
    let port = emu::EmulatedPort::new(decl);
    registry.add::<dyn DflDevice>(port.desc().path.clone(), Arc::new(port), false);
}

fn discover(roots: &LinuxRoots, registry: &mut DeviceRegistry) -> io::Result<()> {
    for port in linux::discover_ports(roots)? {
        registry.add::<dyn DflDevice>(port.desc().path.clone(), Arc::new(port), true);
    }
    Ok(())
}
