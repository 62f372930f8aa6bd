//! The plugins shipped inside the host, which configs name `builtin:<name>`: each device
//! family's own, `remote` (the proxy to nodes running `accelhost serve`), and with the
//! `chaos` feature the fault-injection plugin that the tests and
//! `accelhost demo --fault` load. Production builds leave `chaos` out.

use crate::families::FAMILIES;

#[cfg(feature = "chaos")]
const CHAOS: &[u8] = include_bytes!(concat!(
    env!("ACCELHOST_GUEST_DIR"),
    "/accelhost_plugin_chaos.wasm"
));

const REMOTE: &[u8] = include_bytes!(concat!(
    env!("ACCELHOST_GUEST_DIR"),
    "/accelhost_plugin_remote.wasm"
));

/// The component bytes of the built-in plugin `name`.
pub fn module(name: &str) -> Option<&'static [u8]> {
    if name == "remote" {
        return Some(REMOTE);
    }
    #[cfg(feature = "chaos")]
    if name == "chaos" {
        return Some(CHAOS);
    }
    FAMILIES
        .iter()
        .find(|family| family.name == name)
        .map(|family| family.builtin)
}

/// The names of every built-in plugin.
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = FAMILIES.iter().map(|family| family.name).collect();
    names.push("remote");
    if cfg!(feature = "chaos") {
        names.push("chaos");
    }
    names
}
