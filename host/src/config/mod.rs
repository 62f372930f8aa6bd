//! The plugin list: the OPAE-style JSON file that names the plugins to load, what each may
//! touch (`grants`), how a load failure is handled (`load_policy`), and the emulated cards to
//! create (`devices`). Every error names the file, the JSON path of the field and what was
//! expected; unknown fields are errors.

mod discover;
mod schema;

use std::fmt;
use std::path::{Path, PathBuf};

pub use discover::{ConfigOrigin, discover};
pub use schema::{
    Accelerator, DeviceDecl, DeviceFamily, Grants, LinuxSettings, LoadPolicy, ModuleSource,
    OnFault, OnLoadError, PluginEntry,
};

use schema::RawConfig;

/// The embedded default: the shipped plugins and one emulated card of each family.
pub const EMBEDDED_DEFAULT: &str = include_str!("default.json");

/// Environment variable naming the config file (second in the lookup order).
pub const CONFIG_ENV: &str = "ACCELHOST_CONFIG";
/// Environment variable with extra directories (`:`-separated) to find plugin modules in.
pub const PLUGIN_PATH_ENV: &str = "ACCELHOST_PLUGIN_PATH";

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

/// The file a config was read from, or the embedded default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// A file, by the path it was read from.
    File(PathBuf),
    /// The config built into the binary ([`EMBEDDED_DEFAULT`]).
    Embedded,
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigSource::File(path) => write!(f, "{}", path.display()),
            ConfigSource::Embedded => f.write_str("<embedded default config>"),
        }
    }
}

/// A config that cannot be used: which file, which field, and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}{}: {message}", location(.line, .path))]
pub struct ConfigError {
    /// The file (or `<embedded default config>`).
    pub file: String,
    /// The JSON path of the field, such as `plugins[0].grants.devices[1]`; empty for the
    /// whole document.
    pub path: String,
    /// The line of a JSON syntax error, when there is one.
    pub line: Option<usize>,
    /// What was wrong and what was expected, for people.
    pub message: String,
}

fn location(line: &Option<usize>, path: &str) -> String {
    let mut out = String::new();
    if let Some(line) = line {
        out.push_str(&format!(":{line}"));
    }
    if !path.is_empty() {
        out.push_str(&format!(": {path}"));
    }
    out
}

impl ConfigError {
    pub(crate) fn new(
        source: &ConfigSource,
        path: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        ConfigError {
            file: source.to_string(),
            path: path.into(),
            line: None,
            message: message.into(),
        }
    }
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
        Self::parse(EMBEDDED_DEFAULT, ConfigSource::Embedded)
            .expect("the embedded default config is valid (checked by a unit test)")
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
        raw.validate(source)
    }

    /// The directory relative paths in this config are resolved against.
    pub fn base_dir(&self) -> PathBuf {
        base_dir(&self.source)
    }
}

pub(crate) fn base_dir(source: &ConfigSource) -> PathBuf {
    match source {
        ConfigSource::File(path) => path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
        ConfigSource::Embedded => PathBuf::from("."),
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
