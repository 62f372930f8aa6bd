//! Which config file is used: `--config`, then `ACCELHOST_ENDPOINT` (a running node's
//! devices instead of plugins of this process), then `ACCELHOST_CONFIG`, then
//! `./accelhost.json`, then `$XDG_CONFIG_HOME/accelhost/config.json`, then
//! `/etc/accelhost/config.json`, then the embedded default.

use std::fmt;
use std::path::{Path, PathBuf};

use super::ConfigSource;

/// Which step of the lookup order chose the config.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ConfigOrigin {
    /// The `--config` flag (or an explicit path from an embedding application).
    Explicit,
    /// The `ACCELHOST_ENDPOINT` environment variable: the devices of a running node.
    Endpoint,
    /// The `ACCELHOST_CONFIG` environment variable.
    Environment,
    /// `./accelhost.json`.
    WorkingDirectory,
    /// `$XDG_CONFIG_HOME/accelhost/config.json`.
    User,
    /// `/etc/accelhost/config.json`.
    System,
    /// No file was found.
    Embedded,
}

impl fmt::Display for ConfigOrigin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ConfigOrigin::Explicit => "given with --config",
            ConfigOrigin::Endpoint => {
                "ACCELHOST_ENDPOINT: the devices of a running accelhost serve"
            }
            ConfigOrigin::Environment => "from ACCELHOST_CONFIG",
            ConfigOrigin::WorkingDirectory => "./accelhost.json",
            ConfigOrigin::User => "the user config ($XDG_CONFIG_HOME/accelhost/config.json)",
            ConfigOrigin::System => "the system config (/etc/accelhost/config.json)",
            ConfigOrigin::Embedded => "no config file found: the embedded default",
        })
    }
}

/// The files of the lookup order after the environment variables, first to last.
pub(crate) fn candidates() -> Vec<(PathBuf, ConfigOrigin)> {
    let mut list = vec![(
        PathBuf::from("accelhost.json"),
        ConfigOrigin::WorkingDirectory,
    )];
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(dir) = xdg {
        list.push((dir.join("accelhost/config.json"), ConfigOrigin::User));
    }
    list.push((
        PathBuf::from("/etc/accelhost/config.json"),
        ConfigOrigin::System,
    ));
    list
}

impl ConfigSource {
    /// The file, if the config came from one.
    pub fn path(&self) -> Option<&Path> {
        match self {
            ConfigSource::File(path) => Some(path),
            ConfigSource::Embedded | ConfigSource::Endpoint(_) => None,
        }
    }
}
