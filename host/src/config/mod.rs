//! The plugin list: the OPAE-style JSON file that names the plugins to load, what each may
//! touch (`grants`), how a load failure is handled (`load_policy`), and the emulated cards to
//! create (`devices`). Every error names the file, the JSON path of the field and what was
//! expected; unknown fields are errors.

mod discover;
pub(crate) mod policy;
mod schema;
mod source;

use std::path::PathBuf;

pub use crate::family::{CardSettings, DeviceDecl};
pub use crate::types::DevicePattern;
pub use discover::ConfigOrigin;
pub(crate) use discover::candidates;
pub use policy::{Grants, LoadPolicy, OnFault, OnLoadError};
pub use schema::{LinuxSettings, ModuleSource, ModuleToPull, PluginEntry, PullList};
pub use source::{ConfigError, ConfigSource, PLUGIN_PATH_ENV};

use crate::devices::LinuxRoots;
use crate::family::Catalog;
use schema::RawConfig;
use source::base_dir;

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
    /// Parses and validates config text against what `catalog` serves. Relative paths in it
    /// are resolved against the directory of `source` (the working directory for the
    /// embedded default). [`Config::parse`] passes the host's own catalog.
    pub(crate) fn parse_with(
        text: &str,
        source: ConfigSource,
        catalog: &Catalog,
    ) -> Result<Config, ConfigError> {
        let raw = RawConfig::read(text, &source)?;
        let valid = raw.validate(&source, catalog)?;
        Ok(Config {
            source,
            devices: valid.devices,
            plugins: valid.plugins,
            linux: valid.linux,
        })
    }

    /// The `oci://` modules of the config text `text` and the signatures they must carry
    /// ([`Config::modules_to_pull`] reads them from a file).
    pub(crate) fn parse_modules_to_pull(
        text: &str,
        source: ConfigSource,
    ) -> Result<PullList, ConfigError> {
        RawConfig::read(text, &source)?.modules_to_pull(&source)
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

impl RawConfig {
    /// Config text, read against the schema; an error names the JSON path and line.
    fn read(text: &str, source: &ConfigSource) -> Result<RawConfig, ConfigError> {
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
        Ok(raw)
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
