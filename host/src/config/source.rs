//! Where a config comes from, and the error that names it.

use std::fmt;
use std::path::{Path, PathBuf};

/// Environment variable with extra directories (`:`-separated) to find plugin modules in.
pub const PLUGIN_PATH_ENV: &str = "ACCELHOST_PLUGIN_PATH";

/// The file a config was read from, or the embedded default.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigSource {
    /// A file, by the path it was read from.
    File(PathBuf),
    /// The config built into the binary ([`embedded_default_text`](crate::builtin::embedded_default_text)).
    Embedded,
    /// The config that `ACCELHOST_ENDPOINT` stands for: `builtin:remote` on that node alone.
    Endpoint(String),
}

impl fmt::Display for ConfigSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConfigSource::File(path) => write!(f, "{}", path.display()),
            ConfigSource::Embedded => f.write_str("<embedded default config>"),
            ConfigSource::Endpoint(endpoint) => write!(f, "<ACCELHOST_ENDPOINT={endpoint}>"),
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

/// The directory relative paths in a config from `source` resolve against: the file's own,
/// or the working directory for the embedded default.
pub(crate) fn base_dir(source: &ConfigSource) -> PathBuf {
    match source {
        ConfigSource::File(path) => path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| PathBuf::from(".")),
        ConfigSource::Embedded | ConfigSource::Endpoint(_) => PathBuf::from("."),
    }
}
