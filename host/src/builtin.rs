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

/// The sha256 of each embedded plugin file, computed when it was built (host/build.rs).
const DIGESTS: &[(&str, [u8; 32])] = include!(concat!(env!("ACCELHOST_GUEST_DIR"), "/digests.rs"));

/// The sha256 of the built-in plugin `name`'s bytes, known since the build: what the compile
/// cache is keyed by, without hashing the bytes at every start.
pub(crate) fn digest(name: &str) -> Option<[u8; 32]> {
    let file = format!("accelhost_plugin_{name}.wasm");
    DIGESTS
        .iter()
        .find(|(f, _)| *f == file)
        .map(|(_, digest)| *digest)
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

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    #[test]
    fn every_builtin_has_the_digest_of_its_bytes() {
        for name in super::names() {
            let bytes = super::module(name).unwrap();
            let digest: [u8; 32] = Sha256::digest(bytes).into();
            assert_eq!(super::digest(name), Some(digest), "{name}");
        }
        assert_eq!(super::digest("nothing"), None);
    }
}
