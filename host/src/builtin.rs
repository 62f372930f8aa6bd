//! The catalog: what ships inside the host. The device families (`FAMILIES`: the one list
//! that names them, handed down to config validation and to the devices, release and image
//! checks that serve every family), the plugins configs name `builtin:<name>` (each family's
//! own, `remote`, the proxy to nodes running `accelhost serve`, and with the `chaos` feature
//! the fault-injection plugin that the tests and `accelhost demo --fault` load; production
//! builds leave `chaos` out), the embedded default config, and the ways to find and read a
//! config with all of it. A new family touches its folder and this list.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use crate::config::{
    CONFIG_ENV, Config, ConfigError, ConfigOrigin, ConfigSource, DeviceDecl, ENDPOINT_ENV,
    PullList, candidates,
};
use crate::devices::{DeviceRegistry, LinuxRoots};
use crate::families::{cxl, dfl, xocl};
use crate::family::{self, Catalog, Family};

/// Every family the host serves, in the order their devices are listed.
pub(crate) const FAMILIES: &[&Family] = &[&dfl::FAMILY, &cxl::FAMILY, &xocl::FAMILY];

/// What the host builder hands down: [`FAMILIES`] and the built-in plugins.
pub(crate) const CATALOG: Catalog = Catalog {
    families: FAMILIES,
    builtins: names,
    module,
    digest,
};

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
    family::find(FAMILIES, name).map(|family| family.builtin)
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

/// The devices a config makes available: the emulated cards it declares, then the real
/// devices every family finds under `roots`. A family that finds no sysfs tree finds no
/// devices.
pub fn registry(cards: &[DeviceDecl], roots: &LinuxRoots) -> DeviceRegistry {
    CATALOG.registry(cards, roots)
}

/// A registry of the one emulated card `card` (for `accelhost bench`'s direct baselines).
#[cfg(feature = "internals")]
pub fn emulated(card: &DeviceDecl) -> DeviceRegistry {
    let mut registry = DeviceRegistry::default();
    if let Some(family) = family::find(FAMILIES, &card.family) {
        (family.emulate)(card, &mut registry);
    }
    registry
}

/// Checks an image a family's driver would load (an xclbin, by its magic) before any plugin
/// sees it; images in no family's format are the plugin's to judge.
pub fn check_image(image: &[u8]) -> Result<(), String> {
    CATALOG.check_image(image)
}

/// The text of the embedded default config: each device family's shipped plugin, granted
/// the family's real device nodes, and emulated cards of every family.
pub fn embedded_default_text() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(default_config);
    &TEXT
}

/// The embedded default config: every family's share of it, in registration order.
fn default_config() -> String {
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

/// The largest config file read, in MiB: thousands of plugins and cards.
pub const MAX_CONFIG_MIB: u64 = 16;

impl Config {
    /// Reads and validates the config file at `path`: a regular file of at most
    /// [`MAX_CONFIG_MIB`] MiB, read without waiting on a FIFO or a device.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = Self::read_file(path)?;
        Self::parse(&text, ConfigSource::File(path.to_path_buf()))
    }

    /// The `oci://` modules of the config file at `path` and the signatures they must carry,
    /// and its store: what `accelhost pull` fetches for it. The file must follow the schema;
    /// its modules need not be pulled yet.
    pub fn modules_to_pull(path: &Path) -> Result<PullList, ConfigError> {
        let text = Self::read_file(path)?;
        Self::parse_modules_to_pull(&text, ConfigSource::File(path.to_path_buf()))
    }

    /// The text of the config file at `path`, read as [`Config::load`] says.
    fn read_file(path: &Path) -> Result<String, ConfigError> {
        let source = ConfigSource::File(path.to_path_buf());
        let limit = crate::files::Limit {
            what: "a config file",
            max_mib: MAX_CONFIG_MIB,
            set_by: "the largest config accelhost reads",
        };
        let unreadable = |reason: String| {
            ConfigError::new(
                &source,
                "",
                format!("cannot read the config file: {reason}"),
            )
        };
        let bytes = crate::files::read_regular(path, &limit).map_err(|err| match err {
            crate::files::FileError::Io { source, .. } => unreadable(source.to_string()),
            other => unreadable(other.to_string()),
        })?;
        String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8 text".into()))
    }

    /// The embedded default config.
    pub fn embedded_default() -> Config {
        Self::parse(embedded_default_text(), ConfigSource::Embedded)
            .expect("the embedded default config is valid (checked by a unit test)")
    }

    /// The config [`ENDPOINT_ENV`] stands for: `builtin:remote` alone, granted and configured
    /// to reach the node at `endpoint` (a Unix socket: a node elsewhere needs TLS files, which
    /// a config file names in the plugin's `grants.remote`).
    pub fn for_endpoint(endpoint: &str) -> Result<Config, ConfigError> {
        let source = ConfigSource::Endpoint(endpoint.to_string());
        if !endpoint.starts_with("unix://") {
            return Err(ConfigError::new(
                &source,
                "",
                format!(
                    "{ENDPOINT_ENV} takes a node's Unix socket (unix:///run/accelhost/serve.sock); \
                     for a node reached over TCP, use a config whose builtin:remote plugin has a \
                     remote grant with the TLS files"
                ),
            ));
        }
        let text = serde_json::json!({
            "plugins": [{
                "name": "remote",
                "module": "builtin:remote",
                "config": {"hosts": [endpoint]},
                "grants": {"remote": [{"endpoint": endpoint}], "dma_memory_mib": 4096},
                // Its calls wait on the node: time a proxy spends in calls is not time it
                // takes from its callers.
                "load_policy": {"busy_percent": 100},
            }]
        });
        Self::parse(&text.to_string(), source)
    }

    /// Parses and validates config text against the families and plugins this host ships.
    /// Relative paths in it are resolved against the directory of `source` (the working
    /// directory for the embedded default).
    pub fn parse(text: &str, source: ConfigSource) -> Result<Config, ConfigError> {
        Config::parse_with(text, source, &CATALOG)
    }
}

/// Finds and loads the config in the lookup order. An explicit path or `ACCELHOST_CONFIG`
/// that names a missing file is an error, not a fall-through.
pub fn discover(explicit: Option<&Path>) -> Result<(Config, ConfigOrigin), ConfigError> {
    if let Some(path) = explicit {
        return Ok((Config::load(path)?, ConfigOrigin::Explicit));
    }
    if let Some(endpoint) = std::env::var_os(ENDPOINT_ENV).filter(|e| !e.is_empty()) {
        let endpoint = endpoint.to_string_lossy().into_owned();
        return Ok((Config::for_endpoint(&endpoint)?, ConfigOrigin::Endpoint));
    }
    if let Some(path) = std::env::var_os(CONFIG_ENV).filter(|p| !p.is_empty()) {
        let path = PathBuf::from(path);
        let config = Config::load(&path).map_err(|mut err| {
            err.message = format!("{} (the file named by {CONFIG_ENV})", err.message);
            err
        })?;
        return Ok((config, ConfigOrigin::Environment));
    }
    for (path, origin) in candidates() {
        if path.is_file() {
            return Ok((Config::load(&path)?, origin));
        }
    }
    Ok((Config::embedded_default(), ConfigOrigin::Embedded))
}

#[cfg(test)]
mod tests {
    use sha2::{Digest, Sha256};

    use super::*;

    #[test]
    fn an_explicit_missing_file_is_an_error() {
        let err = discover(Some(Path::new("/nonexistent/accelhost.json"))).unwrap_err();
        assert_eq!(err.file, "/nonexistent/accelhost.json");
        assert!(err.message.contains("cannot read"), "{err}");
    }

    #[test]
    fn every_builtin_has_the_digest_of_its_bytes() {
        for name in names() {
            let bytes = module(name).unwrap();
            let digest: [u8; 32] = Sha256::digest(bytes).into();
            assert_eq!(super::digest(name), Some(digest), "{name}");
        }
        assert_eq!(super::digest("nothing"), None);
    }

    #[test]
    fn every_family_is_registered_once_with_its_parts() {
        for (i, family) in FAMILIES.iter().enumerate() {
            assert!(
                FAMILIES[..i].iter().all(|f| f.name != family.name),
                "{} is registered twice",
                family.name
            );
            assert!(family::find(FAMILIES, family.name).is_some());
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
