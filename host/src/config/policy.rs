//! What a plugin may touch and how it runs: the `grants` and `load_policy` of a plugin
//! entry. Below the rest of the config, since the store state of every instance holds them.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::types::DevicePattern;

/// How a plugin runs: its limits, and what happens when it fails to load or faults. Every
/// field has a safe default.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LoadPolicy {
    /// Skip the plugin (the default) or fail the whole load.
    #[serde(default)]
    pub on_error: OnLoadError,
    /// After a trap, a deadline overrun, a limit hit or a cancel: restart the plugin (the
    /// default) or disable it.
    #[serde(default)]
    pub on_fault: OnFault,
    /// The most restarts before the plugin is disabled.
    #[serde(default = "default_max_restarts")]
    pub max_restarts: u32,
    /// The wait before the first restart, in milliseconds; it doubles with each restart.
    #[serde(default = "default_restart_backoff_ms")]
    pub restart_backoff_ms: u64,
    /// Cap on the plugin's linear memory, in MiB.
    #[serde(default = "default_memory_mib")]
    pub memory_mib: u64,
    /// How long one call into the plugin may run before it is stopped, in milliseconds.
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    /// Instructions one call may execute (deterministic metering); none by default. Metered
    /// plugins run on a second engine, at about half speed.
    #[serde(default)]
    pub fuel: Option<u64>,
    /// Cap on wasm tables, memories and instances each (a component has a few of each).
    #[serde(default = "default_max_instances")]
    pub max_instances: u32,
    /// Cap on the elements of one wasm table.
    #[serde(default = "default_max_table_elements")]
    pub max_table_elements: u32,
    /// Cap on the host resources (regions, buffers, events, device handles) the plugin holds.
    #[serde(default = "default_max_resources")]
    pub max_resources: u32,
    /// Cap on the devices applications hold open through this plugin.
    #[serde(default = "default_max_handles")]
    pub max_handles: u32,
    /// Log bytes (lines and stdout/stderr) per second; the rest is dropped and counted.
    #[serde(default = "default_log_bytes_per_second")]
    pub log_bytes_per_second: u64,
    /// Cap on the host memory the plugin's requests occupy, in MiB: queued device commands,
    /// waits, memory watches, kept messages and the host objects behind its resources.
    #[serde(default = "default_host_memory_mib")]
    pub host_memory_mib: u64,
    /// The share of time the plugin may spend in calls, in percent of `busy_window_ms`; a
    /// plugin that takes more starves its callers and is faulted.
    #[serde(default = "default_busy_percent")]
    pub busy_percent: u32,
    /// The window `busy_percent` is measured over, in milliseconds. A burst of
    /// `busy_window_ms × busy_percent / 100` (at least one whole `call_timeout_ms`) is allowed.
    #[serde(default = "default_busy_window_ms")]
    pub busy_window_ms: u64,
    /// How long compiling the plugin's component may take, in milliseconds; past it the
    /// compile worker is killed and the plugin fails to load. A plugin file compiles in a
    /// worker process only where the host has one (see `accelhost::compile_worker`). The
    /// default, 120 s, is several times the 13-34 s the JavaScript and Python SDK plugins
    /// took here.
    #[serde(default = "default_compile_timeout_ms")]
    pub compile_timeout_ms: u64,
    /// The memory compiling the plugin's component may take, in MiB (the compile worker's
    /// data limit); past it the compile fails and the plugin fails to load. The default,
    /// 1536 MiB, is three times the most an SDK plugin's compile needed here (under 512 MiB).
    #[serde(default = "default_compile_memory_mib")]
    pub compile_memory_mib: u64,
    /// A plugin file's component of at least this many MiB starts on baseline code (Winch,
    /// about five times as fast to compile) while its optimized code compiles in the
    /// background into the compile cache; `0`: every plugin file. The default, 4 MiB, takes
    /// the JavaScript and Python SDK plugins (14-18 MiB) and leaves Rust and C ones (under
    /// 1 MiB) to compile optimized at once.
    #[serde(default = "default_baseline_first_mib")]
    pub baseline_first_mib: u64,
    /// Cap on the size of the plugin's module file, in MiB, checked before any of it is read:
    /// a plugin path naming a huge file must not fill the host's memory.
    #[serde(default = "default_max_module_mib")]
    pub max_module_mib: u64,
    /// How long an event the plugin hands out (a launch's, a copy's, an interrupt's) may stay
    /// pending, in milliseconds. Past it the host fails the event with a timeout, waking every
    /// waiter, and counts it as a fault of the plugin (`on_fault` decides what follows). The
    /// default, ten minutes, is far above any workload of the emulated cards (milliseconds).
    #[serde(default = "default_event_deadline_ms")]
    pub event_deadline_ms: u64,
}

fn default_max_restarts() -> u32 {
    3
}
fn default_restart_backoff_ms() -> u64 {
    100
}
fn default_memory_mib() -> u64 {
    64
}
fn default_call_timeout_ms() -> u64 {
    5_000
}
fn default_max_instances() -> u32 {
    32
}
fn default_max_table_elements() -> u32 {
    65_536
}
fn default_max_resources() -> u32 {
    65_536
}
fn default_max_handles() -> u32 {
    4096
}
fn default_log_bytes_per_second() -> u64 {
    256 * 1024
}
fn default_host_memory_mib() -> u64 {
    16
}
fn default_busy_percent() -> u32 {
    50
}
fn default_busy_window_ms() -> u64 {
    10_000
}
fn default_compile_timeout_ms() -> u64 {
    120_000
}
fn default_compile_memory_mib() -> u64 {
    1536
}
fn default_baseline_first_mib() -> u64 {
    4
}
/// Seven times the largest SDK plugin measured (the Python SDK's NLB0 plugin, 17.9 MiB; the
/// JavaScript one is 14 MiB), for larger plugins in those languages.
fn default_max_module_mib() -> u64 {
    128
}
fn default_event_deadline_ms() -> u64 {
    600_000
}

impl Default for LoadPolicy {
    fn default() -> Self {
        LoadPolicy {
            on_error: OnLoadError::default(),
            on_fault: OnFault::default(),
            max_restarts: default_max_restarts(),
            restart_backoff_ms: default_restart_backoff_ms(),
            memory_mib: default_memory_mib(),
            call_timeout_ms: default_call_timeout_ms(),
            fuel: None,
            max_instances: default_max_instances(),
            max_table_elements: default_max_table_elements(),
            max_resources: default_max_resources(),
            max_handles: default_max_handles(),
            log_bytes_per_second: default_log_bytes_per_second(),
            host_memory_mib: default_host_memory_mib(),
            busy_percent: default_busy_percent(),
            busy_window_ms: default_busy_window_ms(),
            compile_timeout_ms: default_compile_timeout_ms(),
            compile_memory_mib: default_compile_memory_mib(),
            baseline_first_mib: default_baseline_first_mib(),
            max_module_mib: default_max_module_mib(),
            event_deadline_ms: default_event_deadline_ms(),
        }
    }
}

/// The choices of `load_policy.on_fault`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnFault {
    /// Start a fresh instance after the backoff, up to `max_restarts` times.
    #[default]
    Restart,
    /// Leave the plugin stopped.
    Disable,
}

/// The choices of `load_policy.on_error`.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum OnLoadError {
    /// Report the plugin as failed (with the reason) and load the others.
    #[default]
    Skip,
    /// Fail the whole load.
    Fail,
}

/// What a plugin may touch: devices, and host memory for DMA.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Grants {
    /// Device names: `emu:<id>` for a declared emulated card, a `/dev` path for a real one;
    /// a trailing `*` matches any suffix (`emu:*`, `/dev/dfl-port.*`).
    #[serde(default)]
    pub devices: Vec<String>,
    /// Cap on the DMA buffers the plugin may hold at once, in MiB.
    #[serde(default = "default_dma_memory_mib")]
    pub dma_memory_mib: u64,
    /// The nodes (`accelhost serve`) the plugin may connect to through the `remote` import,
    /// each with the identity it presents there.
    #[serde(default)]
    pub remote: Vec<RemoteGrant>,
}

/// How to reach a node and who to be there, as a plugin's `remote` grant says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteEndpoint {
    /// The node's Unix socket; the node knows the caller by its uid and gid.
    Unix(PathBuf),
    /// The node's TCP address, with mutual TLS.
    Tls {
        /// `host:port`.
        address: String,
        /// The name the node's certificate must carry.
        server_name: String,
        /// The CA (PEM) the node's certificate must chain to.
        ca: PathBuf,
        /// This client's certificate chain (PEM).
        certificate: PathBuf,
        /// This client's private key (PEM).
        key: PathBuf,
    },
}

/// One node a plugin may reach, and as whom.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteGrant {
    /// `unix:///path/to/serve.sock`, or `host:port` for TCP with mutual TLS: the plugin names
    /// the node exactly so.
    pub endpoint: String,
    /// For a TCP endpoint: the client certificate and key to present, and the CA that the
    /// node's certificate must chain to (paths relative to the config's directory).
    #[serde(default)]
    pub tls: Option<RemoteTls>,
    /// The most sessions the plugin may hold with this node at once, each its own
    /// connection: its part of what the node gives its host's identity there (every plugin of
    /// a host, and every program of the same user, is one client of the node, whose sessions
    /// count together against `limits.max_sessions_per_client`, 64 by default). 1 to
    /// [`MAX_REMOTE_SESSIONS`]; [`DEFAULT_REMOTE_SESSIONS`] when not given.
    #[serde(
        default = "default_remote_sessions",
        deserialize_with = "remote_sessions"
    )]
    pub sessions: u32,
}

/// The sessions a plugin may hold with one node when its grant does not say.
pub const DEFAULT_REMOTE_SESSIONS: u32 = 4;

/// The most sessions a `remote` grant may give a plugin with one node: a node's default
/// `limits.max_sessions_per_client`.
pub const MAX_REMOTE_SESSIONS: u32 = 64;

fn default_remote_sessions() -> u32 {
    DEFAULT_REMOTE_SESSIONS
}

fn remote_sessions<'de, D: serde::Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    let sessions = u32::deserialize(d)?;
    if (1..=MAX_REMOTE_SESSIONS).contains(&sessions) {
        Ok(sessions)
    } else {
        Err(serde::de::Error::custom(format!(
            "{sessions} is outside 1..={MAX_REMOTE_SESSIONS}: the plugin's part of its host's \
             sessions on the node"
        )))
    }
}

/// The mutual-TLS identity of a [`RemoteGrant`].
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RemoteTls {
    /// The CA certificate (PEM) the node's certificate must chain to.
    pub ca: PathBuf,
    /// The client certificate chain (PEM).
    pub certificate: PathBuf,
    /// The client's private key (PEM).
    pub key: PathBuf,
    /// The name the node's certificate must carry; the endpoint's host by default.
    #[serde(default)]
    pub server_name: Option<String>,
}

impl RemoteGrant {
    /// How to connect: the endpoint parsed, TLS paths resolved against `base`.
    pub fn to_endpoint(&self, base: &Path) -> Result<RemoteEndpoint, String> {
        if let Some(path) = self.endpoint.strip_prefix("unix://") {
            if !path.starts_with('/') {
                return Err(format!(
                    "'{}' needs an absolute socket path: unix:///run/accelhost/serve.sock",
                    self.endpoint
                ));
            }
            if self.tls.is_some() {
                return Err(
                    "a Unix socket endpoint takes no tls: the node knows the caller by its uid"
                        .into(),
                );
            }
            return Ok(RemoteEndpoint::Unix(PathBuf::from(path)));
        }
        let host = match self.endpoint.rsplit_once(':') {
            Some((host, port))
                if !host.is_empty() && !host.contains('/') && port.parse::<u16>().is_ok() =>
            {
                host.trim_start_matches('[').trim_end_matches(']')
            }
            _ => {
                return Err(format!(
                    "'{}' is not an endpoint: expected unix:///path.sock or host:port",
                    self.endpoint
                ));
            }
        };
        let tls = self.tls.as_ref().ok_or_else(|| {
            format!(
                "the TCP endpoint '{}' needs tls (ca, certificate, key): nodes speak only mutual TLS over TCP",
                self.endpoint
            )
        })?;
        Ok(RemoteEndpoint::Tls {
            address: self.endpoint.clone(),
            server_name: tls.server_name.clone().unwrap_or_else(|| host.to_string()),
            ca: base.join(&tls.ca),
            certificate: base.join(&tls.certificate),
            key: base.join(&tls.key),
        })
    }
}

fn default_dma_memory_mib() -> u64 {
    256
}

impl Default for Grants {
    fn default() -> Self {
        Grants {
            devices: Vec::new(),
            dma_memory_mib: default_dma_memory_mib(),
            remote: Vec::new(),
        }
    }
}

impl Grants {
    /// Does any grant cover the device `name`?
    pub fn allows_device(&self, name: &str) -> bool {
        self.devices
            .iter()
            .any(|grant| DevicePattern::of(grant).matches(name))
    }
}
