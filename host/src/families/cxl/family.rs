//! The CAPI family's registration.

use std::io;
use std::sync::Arc;

use super::{CxlAfu, abi, card, emu, linux, resources};
use crate::devices::{DeviceRegistry, LinuxRoots};
use crate::family::DeviceDecl;
use crate::family::{Family, no_image_format};

/// The family's registration.
pub(crate) const FAMILY: Family = Family {
    name: "cxl",
    builtin: include_bytes!(concat!(
        env!("ACCELHOST_GUEST_DIR"),
        "/accelhost_plugin_cxl.wasm"
    )),
    default_config: include_str!("default.json"),
    default_ids: (abi::PCI_VENDOR_IBM, abi::CAPI_DEVICE_ID),
    card_fields: card::FIELDS,
    parse_card: card::parse,
    resolve_cards: card::resolve,
    emulate,
    discover,
    release: resources::release,
    check_image: no_image_format,
};

fn emulate(decl: &DeviceDecl, registry: &mut DeviceRegistry) {
    let afu = emu::EmulatedAfu::new(decl);
    registry.add::<dyn CxlAfu>(afu.desc().path, Arc::new(afu), false);
}

fn discover(roots: &LinuxRoots, registry: &mut DeviceRegistry) -> io::Result<()> {
    for afu in linux::discover_afus(roots)? {
        registry.add::<dyn CxlAfu>(afu.desc().path, Arc::new(afu), true);
    }
    Ok(())
}
