//! The plugin list: the OPAE-style JSON file that names the plugins to load, what each may
//! touch (`grants`), how a load failure is handled (`load_policy`), and the emulated cards to
//! create (`devices`). Every error names the file, the JSON path of the field and what was
//! expected; unknown fields are errors.

mod device;
mod discover;
pub(crate) mod policy;
mod schema;
mod source;

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

pub use device::{CardSettings, DeviceDecl};
pub use discover::{ConfigOrigin, discover};
pub use policy::{DevicePattern, Grants, LoadPolicy, OnFault, OnLoadError};
pub use schema::{LinuxSettings, ModuleSource, PluginEntry};
pub use source::{ConfigError, ConfigSource, PLUGIN_PATH_ENV};

use crate::devices::LinuxRoots;
use schema::RawConfig;
use source::base_dir;

/// The text of the embedded default config: each device family's shipped plugin, granted
/// the family's real device nodes, and emulated cards of every family.
pub fn embedded_default_text() -> &'static str {
    static TEXT: LazyLock<String> = LazyLock::new(crate::families::default_config);
    &TEXT
}

/// Environment variable naming the config file (second in the lookup order).
pub const CONFIG_ENV: &str = "ACCELHOST_CONFIG";

/// Environment variable naming a running node (`unix:///run/accelhost/serve.sock`) whose
/// devices a host uses instead of loading plugins itself (first in the lookup order after an
/// explicit config), so that several processes share one node's devices, sandboxed once.
pub const ENDPOINT_ENV: &str = "ACCELHOST_ENDPOINT";

/// A validated plugin list.
#[derive(Clone, Debug)]
pub struct Config {
    /// Where it came from.
    pub source: ConfigSource,
    /// The emulated cards to create (`devices`).
    pub devices: Vec<DeviceDecl>,
    /// The plugins to load, in the order they are started and enumerated (`plugins`).
    pub plugins: Vec<PluginEntry>,
    /// Where the Linux backends look for real devices (`linux`).
    pub linux: LinuxSettings,
}

impl Config {
    /// Reads and validates the config file at `path`.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = ConfigSource::File(path.to_path_buf());
        let text = std::fs::read_to_string(path).map_err(|err| {
            ConfigError::new(&source, "", format!("cannot read the config file: {err}"))
        })?;
        Self::parse(&text, source)
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

    /// Parses and validates config text. Relative paths in it are resolved against the
    /// directory of `source` (the working directory for the embedded default).
    pub fn parse(text: &str, source: ConfigSource) -> Result<Config, ConfigError> {
        let mut json = serde_json::Deserializer::from_str(text);
        let raw: RawConfig = serde_path_to_error::deserialize(&mut json).map_err(|err| {
            let path = err.path().to_string();
            let inner = err.into_inner();
            let line =
                (inner.line() > 0 && inner.is_syntax() || inner.is_eof()).then(|| inner.line());
            ConfigError {
                file: source.to_string(),
                path: if path == "." { String::new() } else { path },
                line,
                message: describe_serde_error(&inner),
            }
        })?;
        json.end().map_err(|err| ConfigError {
            file: source.to_string(),
            path: String::new(),
            line: Some(err.line()),
            message: "unexpected text after the JSON document".into(),
        })?;
        let valid = raw.validate(&source)?;
        Ok(Config {
            source,
            devices: valid.devices,
            plugins: valid.plugins,
            linux: valid.linux,
        })
    }

    /// The directory relative paths in this config are resolved against.
    pub fn base_dir(&self) -> PathBuf {
        base_dir(&self.source)
    }

    /// Where the Linux backends look for real devices.
    pub(crate) fn linux_roots(&self) -> LinuxRoots {
        LinuxRoots {
            sysfs: self.linux.sysfs_root.clone(),
            dev: self.linux.dev_root.clone(),
        }
    }
}

/// serde's messages without the " at line N column M" suffix, which `ConfigError` shows in
/// its own place.
fn describe_serde_error(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rfind(" at line ") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

#[cfg(test)]
mod tests;
