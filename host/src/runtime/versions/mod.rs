//! The `accel:plugin` versions this host serves side by side, one module each. A plugin's
//! imports are linked under its version's names and served by the latest implementation
//! (adapted where its version differs); its exports are found under its version's names by
//! [`ExportIndex`](super::plugin::ExportIndex). The latest version is the one `wit/` declares,
//! written there once.

mod link;
mod v0_1;
mod v0_2;

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::Plugin;
use crate::state::PluginState;

/// The latest version: the one `wit/` declares (read by the build script).
pub const LATEST: &str = env!("ACCELHOST_WIT_VERSION");

/// One version the host serves.
pub(crate) struct Version {
    /// Such as `0.1.0`.
    pub version: &'static str,
    /// Links the imports of a plugin built for this version.
    pub add_imports: fn(&mut Linker<PluginState>) -> wasmtime::Result<()>,
}

/// Every version served, oldest first; the last is [`LATEST`].
pub(crate) const SUPPORTED: &[Version] = &[
    Version {
        version: v0_1::VERSION,
        add_imports: v0_1::add_imports,
    },
    Version {
        version: v0_2::VERSION,
        add_imports: v0_2::add_imports,
    },
    Version {
        version: LATEST,
        add_imports: add_latest_imports,
    },
];

/// The versions served, for messages: `0.1.0, 0.2.0 and 0.3.0`.
pub(crate) fn served() -> String {
    let versions: Vec<&str> = SUPPORTED.iter().map(|v| v.version).collect();
    match versions.split_last() {
        Some((last, [])) => last.to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
        None => String::new(),
    }
}

/// Links the imports of every version served.
pub(crate) fn add_imports(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    let mut seen = Vec::new();
    for version in SUPPORTED {
        if !seen.contains(&version.version) {
            (version.add_imports)(linker)?;
            seen.push(version.version);
        }
    }
    Ok(())
}

/// The version served that a plugin built for `found` links against: Cargo's caret rule,
/// so the same major version, and while the major version is 0, the same minor version (a
/// later patch only fixes).
pub(crate) fn serving(found: &str) -> Option<&'static Version> {
    let found = semver::Version::parse(found).ok()?;
    SUPPORTED.iter().rev().find(|v| {
        semver::VersionReq::parse(&format!("^{}", v.version))
            .is_ok_and(|served| served.matches(&found))
    })
}

/// Links every import of the latest version, as the generated bindings list them.
fn add_latest_imports(linker: &mut Linker<PluginState>) -> wasmtime::Result<()> {
    Plugin::add_to_linker::<PluginState, HasSelf<PluginState>>(linker, |state| state)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plugins_link_against_a_compatible_version() {
        assert_eq!(serving("0.1.0").map(|v| v.version), Some("0.1.0"));
        assert_eq!(serving("0.1.3").map(|v| v.version), Some("0.1.0"));
        assert_eq!(serving("0.2.1").map(|v| v.version), Some("0.2.0"));
        assert_eq!(serving(LATEST).map(|v| v.version), Some(LATEST));
        assert!(serving("1.0.0").is_none());
        assert!(serving("0.99.0").is_none());
        assert!(serving("(unversioned)").is_none());
        assert!(serving("0.2").is_none(), "a version has three parts");
        assert!(served().contains("0.1.0"), "{}", served());
    }
}
