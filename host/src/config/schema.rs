//! The JSON schema of the plugin list and its validation.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use super::{Config, ConfigError, ConfigSource, PLUGIN_PATH_ENV, base_dir};
use crate::types::BusAddress;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    devices: Vec<DeviceDecl>,
    plugins: Vec<RawPlugin>,
    #[serde(default)]
    linux: LinuxSettings,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPlugin {
    name: String,
    module: String,
    #[serde(default = "empty_object")]
    config: serde_json::Value,
    #[serde(default)]
    load_policy: LoadPolicy,
    #[serde(default)]
    grants: Grants,
    #[serde(default = "yes")]
    enabled: bool,
    #[serde(default)]
    trusted_for: Vec<DeviceFamily>,
}

fn empty_object() -> serde_json::Value {
    serde_json::Value::Object(Default::default())
}

fn yes() -> bool {
    true
}

/// One entry of `plugins`.
#[derive(Clone, Debug)]
pub struct PluginEntry {
    /// Unique within the config; names the plugin in every message.
    pub name: String,
    /// Where the component comes from.
    pub module: ModuleSource,
    /// The `module` text as written, for messages.
    pub module_text: String,
    /// Passed to the plugin's `configure` as JSON text.
    pub config: serde_json::Value,
    /// How the plugin runs: its limits, and what happens when it fails to load or faults
    /// (`load_policy`).
    pub load_policy: LoadPolicy,
    /// What the plugin may touch: devices and DMA memory (`grants`).
    pub grants: Grants,
    /// A disabled plugin is listed but not loaded.
    pub enabled: bool,
    /// Families whose canonical workloads `accelhost demo` may run on this plugin's devices,
    /// besides the family's own shipped plugin (`trusted_for`). Any plugin can dress a device
    /// up as another's; only these are believed.
    pub trusted_for: Vec<DeviceFamily>,
}

impl PluginEntry {
    /// Whether devices this plugin reports as `family`'s are believed: it is the family's
    /// shipped plugin, or the config trusts it for the family.
    pub fn is_trusted_for(&self, family: DeviceFamily) -> bool {
        self.module == ModuleSource::Builtin(family.name().into())
            || self.trusted_for.contains(&family)
    }
}

/// Where a plugin's component comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleSource {
    /// A plugin shipped inside the host binary: `builtin:<name>`.
    Builtin(String),
    /// A `.wasm` file, resolved against the config's directory and `ACCELHOST_PLUGIN_PATH`.
    File(PathBuf),
}

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
}

fn default_dma_memory_mib() -> u64 {
    256
}

impl Default for Grants {
    fn default() -> Self {
        Grants {
            devices: Vec::new(),
            dma_memory_mib: default_dma_memory_mib(),
        }
    }
}

impl Grants {
    /// Does any grant cover the device `name`?
    pub fn allows_device(&self, name: &str) -> bool {
        self.devices
            .iter()
            .any(|grant| match grant.strip_suffix('*') {
                Some(prefix) => name.starts_with(prefix),
                None => grant == name,
            })
    }
}

/// Where the Linux backends look for sysfs and device nodes.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LinuxSettings {
    /// The sysfs mount to search for DFL ports, `/sys` by default.
    #[serde(default = "default_sysfs")]
    pub sysfs_root: PathBuf,
    /// The directory of device nodes, `/dev` by default.
    #[serde(default = "default_dev")]
    pub dev_root: PathBuf,
}

fn default_sysfs() -> PathBuf {
    PathBuf::from("/sys")
}
fn default_dev() -> PathBuf {
    PathBuf::from("/dev")
}

impl Default for LinuxSettings {
    fn default() -> Self {
        LinuxSettings {
            sysfs_root: default_sysfs(),
            dev_root: default_dev(),
        }
    }
}

/// An emulated card in `devices`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DeviceDecl {
    /// Grants name the card `emu:<id>`.
    pub id: String,
    /// The driver family whose ABI the emulator speaks.
    pub family: DeviceFamily,
    /// The accelerator the card carries (dfl: `nlb0`, the default). An xocl card's compute
    /// units come from the xclbin loaded on it, so it takes none.
    #[serde(default)]
    pub accelerator: Option<Accelerator>,
    /// The port number reported for a dfl card (default 0).
    #[serde(default)]
    pub port_id: Option<u32>,
    /// The adapter number of a cxl AFU (default 0).
    #[serde(default)]
    pub card: Option<u32>,
    /// The slice of a cxl AFU on its adapter (default 0).
    #[serde(default)]
    pub slice: Option<u32>,
    /// How many contexts an AFU-directed cxl AFU takes at once (default 512, at most 16384).
    #[serde(default)]
    pub max_contexts: Option<u32>,
    /// Interrupts a cxl context gets by default (`irqs_min`).
    #[serde(default)]
    pub irqs_min: Option<u32>,
    /// The most interrupts a cxl context may ask for (`irqs_max`).
    #[serde(default)]
    pub irqs_max: Option<u32>,
    /// PCI vendor id (a number or a `0x` hex string); the family's default when absent.
    #[serde(default, deserialize_with = "optional_number_or_hex")]
    pub vendor_id: Option<u16>,
    /// PCI device id; the family's default when absent (dfl: 0x0A5E, the id OPAE's simulator
    /// reports; xocl: 0x5001, an Alveo U200 user function).
    #[serde(default, deserialize_with = "optional_number_or_hex")]
    pub device_id: Option<u16>,
    /// The PCI address reported for the card, if any (`ssss:bb:dd.f`).
    #[serde(default)]
    pub bus_address: Option<BusAddress>,
    /// The CPU socket reported for the card, if any.
    #[serde(default)]
    pub socket_id: Option<u32>,
}

impl DeviceDecl {
    /// An emulated card of `family` with every default.
    pub fn emulated(id: &str, family: DeviceFamily) -> Self {
        DeviceDecl {
            id: id.to_string(),
            family,
            accelerator: None,
            port_id: None,
            card: None,
            slice: None,
            max_contexts: None,
            irqs_min: None,
            irqs_max: None,
            vendor_id: None,
            device_id: None,
            bus_address: None,
            socket_id: None,
        }
    }

    /// The PCI vendor id, the family's default when the config gives none.
    pub fn vendor_id(&self) -> u16 {
        self.vendor_id.unwrap_or(match self.family {
            DeviceFamily::Dfl => 0x8086,
            DeviceFamily::Xocl => 0x10EE,
            DeviceFamily::Cxl => 0x1014,
        })
    }

    /// The PCI device id, the family's default when the config gives none.
    pub fn device_id(&self) -> u16 {
        self.device_id.unwrap_or(match self.family {
            DeviceFamily::Dfl => 0x0A5E,
            DeviceFamily::Xocl => 0x5001,
            DeviceFamily::Cxl => 0x0477,
        })
    }

    /// The port number of a dfl card.
    pub fn port_id(&self) -> u32 {
        self.port_id.unwrap_or(0)
    }

    /// The accelerator the card carries, the family's default when the config gives none.
    pub fn accelerator(&self) -> Accelerator {
        self.accelerator.unwrap_or(match self.family {
            DeviceFamily::Cxl => Accelerator::Memcpy,
            _ => Accelerator::Nlb0,
        })
    }

    /// Checks the fields that only some families take; returns the field and the problem.
    fn check_family(&self) -> Result<(), (&'static str, String)> {
        let family = self.family;
        let only = |field: &'static str, set: bool, families: &[DeviceFamily], what: &str| {
            if set && !families.contains(&family) {
                Err((field, format!("{field} applies to {what} devices only")))
            } else {
                Ok(())
            }
        };
        only(
            "port_id",
            self.port_id.is_some(),
            &[DeviceFamily::Dfl],
            "dfl",
        )?;
        for (field, set) in [
            ("card", self.card.is_some()),
            ("slice", self.slice.is_some()),
            ("max_contexts", self.max_contexts.is_some()),
            ("irqs_min", self.irqs_min.is_some()),
            ("irqs_max", self.irqs_max.is_some()),
        ] {
            only(field, set, &[DeviceFamily::Cxl], "cxl")?;
        }
        match (family, self.accelerator) {
            (DeviceFamily::Xocl, Some(_)) => Err((
                "accelerator",
                "an xocl card takes no accelerator: its compute units come from the xclbin loaded on it"
                    .into(),
            )),
            (DeviceFamily::Dfl, Some(a)) if a != Accelerator::Nlb0 => Err((
                "accelerator",
                format!("a dfl card carries nlb0, not {}", a.name()),
            )),
            (DeviceFamily::Cxl, Some(Accelerator::Nlb0)) => Err((
                "accelerator",
                "a cxl AFU is memcpy (AFU-directed) or vadd (dedicated), not nlb0".into(),
            )),
            _ => Ok(()),
        }?;
        if let Some(max) = self.max_contexts {
            if !(1..=16384).contains(&max) {
                return Err((
                    "max_contexts",
                    format!("{max} is out of range: expected 1 to 16384"),
                ));
            }
            if self.accelerator() == Accelerator::Vadd && max != 1 {
                return Err((
                    "max_contexts",
                    "a dedicated-mode AFU (vadd) has one context".into(),
                ));
            }
        }
        if let (Some(min), Some(max)) = (self.irqs_min, self.irqs_max)
            && min > max
        {
            return Err((
                "irqs_max",
                format!("irqs_max {max} is below irqs_min {min}"),
            ));
        }
        Ok(())
    }
}

/// The driver families accelhost emulates.
#[derive(Clone, Copy, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DeviceFamily {
    /// Intel DFL (`/dev/dfl-port.N`, used by OPAE).
    Dfl,
    /// Xilinx XRT (`/dev/dri/renderDN`, the xocl driver).
    Xocl,
    /// IBM CAPI (`/dev/cxl/afuC.S{m,s,d}`, the cxl driver).
    Cxl,
}

impl DeviceFamily {
    /// The family's name in configs, which is also its shipped plugin's (`builtin:<name>`).
    pub fn name(self) -> &'static str {
        match self {
            DeviceFamily::Dfl => "dfl",
            DeviceFamily::Xocl => "xocl",
            DeviceFamily::Cxl => "cxl",
        }
    }
}

/// The accelerators the emulators carry.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Accelerator {
    /// The NLB0 native loopback of OPAE's hello_fpga (dfl).
    #[default]
    Nlb0,
    /// The memcpy test AFU, AFU-directed, with a work-element queue per context (cxl).
    Memcpy,
    /// The capi-vadd AFU, dedicated mode (cxl).
    Vadd,
}

impl Accelerator {
    /// The name the config uses.
    pub fn name(self) -> &'static str {
        match self {
            Accelerator::Nlb0 => "nlb0",
            Accelerator::Memcpy => "memcpy",
            Accelerator::Vadd => "vadd",
        }
    }
}

fn optional_number_or_hex<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u16>, D::Error> {
    number_or_hex(d).map(Some)
}

fn number_or_hex<'de, D: Deserializer<'de>>(d: D) -> Result<u16, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Id {
        Number(u16),
        Text(String),
    }
    match Id::deserialize(d) {
        Ok(Id::Number(n)) => Ok(n),
        Ok(Id::Text(t)) => t
            .strip_prefix("0x")
            .or_else(|| t.strip_prefix("0X"))
            .and_then(|hex| u16::from_str_radix(hex, 16).ok())
            .ok_or_else(|| {
                serde::de::Error::custom(format!(
                    "invalid id '{t}': expected a number up to 65535 or a hex string such as \"0x8086\""
                ))
            }),
        Err(_) => Err(serde::de::Error::custom(
            "expected a number up to 65535 or a hex string such as \"0x8086\"",
        )),
    }
}

/// Characters allowed in plugin names and device ids: they appear in device names and
/// command lines.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl RawConfig {
    pub(super) fn validate(self, source: ConfigSource) -> Result<Config, ConfigError> {
        let err = |path: String, message: String| ConfigError::new(&source, path, message);
        let base = base_dir(&source);

        let mut device_ids = BTreeSet::new();
        for (i, device) in self.devices.iter().enumerate() {
            if !valid_name(&device.id) {
                return Err(err(
                    format!("devices[{i}].id"),
                    format!(
                        "'{}' is not a valid id: use 1 to 64 letters, digits, '-', '_' or '.'",
                        device.id
                    ),
                ));
            }
            if let Err((field, message)) = device.check_family() {
                return Err(err(format!("devices[{i}].{field}"), message));
            }
            if !device_ids.insert(device.id.as_str()) {
                return Err(err(
                    format!("devices[{i}].id"),
                    format!("the id '{}' is declared twice", device.id),
                ));
            }
        }

        let mut names = BTreeSet::new();
        let mut plugins = Vec::with_capacity(self.plugins.len());
        for (i, raw) in self.plugins.into_iter().enumerate() {
            let at = |field: &str| format!("plugins[{i}].{field}");
            if !valid_name(&raw.name) {
                return Err(err(
                    at("name"),
                    format!(
                        "'{}' is not a valid plugin name: use 1 to 64 letters, digits, '-', '_' or '.'",
                        raw.name
                    ),
                ));
            }
            if !names.insert(raw.name.clone()) {
                return Err(err(
                    at("name"),
                    format!("the plugin name '{}' is used twice", raw.name),
                ));
            }
            let module =
                resolve_module(&raw.module, &base).map_err(|msg| err(at("module"), msg))?;
            validate_grants(&raw.grants, &device_ids)
                .map_err(|(field, msg)| err(format!("plugins[{i}].grants.{field}"), msg))?;
            validate_policy(&raw.load_policy)
                .map_err(|(field, msg)| err(format!("plugins[{i}].load_policy.{field}"), msg))?;
            plugins.push(PluginEntry {
                name: raw.name,
                module,
                module_text: raw.module,
                config: raw.config,
                load_policy: raw.load_policy,
                grants: raw.grants,
                enabled: raw.enabled,
                trusted_for: raw.trusted_for,
            });
        }

        let linux = LinuxSettings {
            sysfs_root: base.join(&self.linux.sysfs_root),
            dev_root: base.join(&self.linux.dev_root),
        };
        Ok(Config {
            source,
            devices: self.devices,
            plugins,
            linux,
        })
    }
}

fn validate_grants(grants: &Grants, device_ids: &BTreeSet<&str>) -> Result<(), (String, String)> {
    for (j, device) in grants.devices.iter().enumerate() {
        let at = format!("devices[{j}]");
        if device == "*" || device.is_empty() {
            return Err((
                at,
                "a bare '*' (or an empty name) would grant every device: name the devices, or \
                 use a prefix such as \"emu:*\" or \"/dev/dfl-port.*\""
                    .into(),
            ));
        }
        if let Some(id) = device.strip_prefix("emu:") {
            if !id.ends_with('*') && !device_ids.contains(id) {
                let known: Vec<&str> = device_ids.iter().copied().collect();
                return Err((
                    at,
                    format!(
                        "no emulated device '{id}' is declared in devices (declared: {})",
                        if known.is_empty() {
                            "none".into()
                        } else {
                            known.join(", ")
                        }
                    ),
                ));
            }
        } else if !device.starts_with("/dev/") {
            return Err((
                at,
                format!("'{device}' is not a device name: expected \"emu:<id>\" or a /dev path"),
            ));
        }
    }
    check_ranges(&[("dma_memory_mib", grants.dma_memory_mib, 0, 65536)])
}

fn validate_policy(policy: &LoadPolicy) -> Result<(), (String, String)> {
    check_ranges(&[
        ("memory_mib", policy.memory_mib, 1, 4096),
        ("call_timeout_ms", policy.call_timeout_ms, 1, 600_000),
        ("max_restarts", u64::from(policy.max_restarts), 0, 1000),
        ("restart_backoff_ms", policy.restart_backoff_ms, 0, 600_000),
        ("fuel", policy.fuel.unwrap_or(1), 1, u64::MAX),
        ("max_instances", u64::from(policy.max_instances), 4, 10_000),
        (
            "max_table_elements",
            u64::from(policy.max_table_elements),
            64,
            10_000_000,
        ),
        (
            "max_resources",
            u64::from(policy.max_resources),
            16,
            10_000_000,
        ),
        ("max_handles", u64::from(policy.max_handles), 1, 1_000_000),
        (
            "log_bytes_per_second",
            policy.log_bytes_per_second,
            0,
            1 << 30,
        ),
        ("host_memory_mib", policy.host_memory_mib, 1, 4096),
        ("busy_percent", u64::from(policy.busy_percent), 1, 100),
        ("busy_window_ms", policy.busy_window_ms, 100, 3_600_000),
    ])
}

/// Each (field, value, min, max) must lie in range.
fn check_ranges(limits: &[(&str, u64, u64, u64)]) -> Result<(), (String, String)> {
    for &(field, value, min, max) in limits {
        if !(min..=max).contains(&value) {
            return Err((
                field.into(),
                format!("{value} is out of range: expected {min} to {max}"),
            ));
        }
    }
    Ok(())
}

/// `builtin:<name>`, an absolute path, or a path relative to the config's directory or to
/// one of the `ACCELHOST_PLUGIN_PATH` directories (in that order).
fn resolve_module(text: &str, base: &Path) -> Result<ModuleSource, String> {
    if let Some(name) = text.strip_prefix("builtin:") {
        return if crate::builtin::module(name).is_some() {
            Ok(ModuleSource::Builtin(name.to_string()))
        } else {
            Err(format!(
                "there is no built-in plugin '{name}' (built in: {})",
                crate::builtin::names().join(", ")
            ))
        };
    }
    if text.is_empty() {
        return Err("expected the path of a .wasm component or builtin:<name>".into());
    }
    let path = Path::new(text);
    let mut tried = Vec::new();
    let mut candidates = vec![if path.is_absolute() {
        path.to_path_buf()
    } else {
        base.join(path)
    }];
    if let (true, Some(dirs)) = (path.is_relative(), std::env::var_os(PLUGIN_PATH_ENV)) {
        candidates.extend(std::env::split_paths(&dirs).map(|d| d.join(path)));
    }
    for candidate in candidates {
        if candidate.is_file() {
            return Ok(ModuleSource::File(candidate));
        }
        tried.push(candidate.display().to_string());
    }
    Err(format!(
        "module '{text}' not found (looked for {}; {PLUGIN_PATH_ENV} adds directories to search)",
        tried.join(", ")
    ))
}
