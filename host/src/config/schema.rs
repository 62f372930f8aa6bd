//! The JSON schema of the plugin list and its validation.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Deserializer, Serialize};

use super::policy::{Grants, LoadPolicy};
use super::source::{ConfigError, ConfigSource, PLUGIN_PATH_ENV, base_dir};
use crate::family::{self, Catalog, DeviceDecl, SHARED_CARD_FIELDS};
use crate::types::BusAddress;
use accelhost_trust::store::{OCI_SCHEME, OciReference, Store};
use accelhost_trust::{PublicKey, SignaturePolicy, TrustedKeys};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawConfig {
    #[serde(default)]
    devices: Vec<RawDevice>,
    plugins: Vec<RawPlugin>,
    #[serde(default)]
    linux: LinuxSettings,
    #[serde(default)]
    trust: RawTrust,
    #[serde(default)]
    store: Option<PathBuf>,
}

/// `trust`: the keys plugins may be signed by, and whether every plugin must be.
#[derive(Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTrust {
    #[serde(default)]
    keys: BTreeMap<String, PathBuf>,
    #[serde(default)]
    require_signatures: bool,
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
    trusted_for: Vec<String>,
    #[serde(default)]
    signed_by: Vec<String>,
}

/// An entry of `devices`: the fields every card takes, and the rest for its family.
#[derive(Deserialize)]
struct RawDevice {
    id: String,
    family: String,
    #[serde(default, deserialize_with = "optional_number_or_hex")]
    vendor_id: Option<u16>,
    #[serde(default, deserialize_with = "optional_number_or_hex")]
    device_id: Option<u16>,
    #[serde(default)]
    bus_address: Option<BusAddress>,
    #[serde(default)]
    socket_id: Option<u32>,
    #[serde(flatten)]
    settings: serde_json::Map<String, serde_json::Value>,
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
    pub trusted_for: Vec<String>,
    /// What its component's signature must be: the keys of its `signed_by` (else the
    /// config's `trust.keys`), and whether a signature is required.
    pub signature: SignaturePolicy,
}

impl PluginEntry {
    /// Whether devices this plugin reports as `family`'s are believed: it is the family's
    /// shipped plugin, or `builtin:remote` (whose devices are an authenticated node's, whose
    /// operator answers for the plugins there), or the config trusts it for the family.
    pub fn is_trusted_for(&self, family: &str) -> bool {
        self.module == ModuleSource::Builtin(family.into())
            || self.module == ModuleSource::Builtin("remote".into())
            || self.trusted_for.iter().any(|f| f == family)
    }
}

/// Where a plugin's component comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ModuleSource {
    /// A plugin shipped inside the host binary: `builtin:<name>`.
    Builtin(String),
    /// A `.wasm` file, resolved against the config's directory and `ACCELHOST_PLUGIN_PATH`.
    File(PathBuf),
    /// A component pulled from an OCI registry into the store: `oci://REGISTRY/REPO:TAG`,
    /// pinned to the manifest its tag named when it was pulled.
    Oci {
        /// The reference as the config gives it.
        reference: OciReference,
        /// The manifest it resolved to in the store when the config was read.
        manifest_digest: String,
        /// The store it was pulled into.
        store: Store,
    },
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

/// A config's parts, each checked.
pub(super) struct Validated {
    pub devices: Vec<DeviceDecl>,
    pub plugins: Vec<PluginEntry>,
    pub linux: LinuxSettings,
}

impl RawConfig {
    pub(super) fn validate(
        self,
        source: &ConfigSource,
        catalog: &Catalog,
    ) -> Result<Validated, ConfigError> {
        let err = |path: String, message: String| ConfigError::new(source, path, message);
        let base = base_dir(source);

        let mut device_ids = BTreeSet::new();
        let mut devices = Vec::with_capacity(self.devices.len());
        for (i, raw) in self.devices.into_iter().enumerate() {
            if !valid_name(&raw.id) {
                return Err(err(
                    format!("devices[{i}].id"),
                    format!(
                        "'{}' is not a valid id: use 1 to 64 letters, digits, '-', '_' or '.'",
                        raw.id
                    ),
                ));
            }
            if !device_ids.insert(raw.id.clone()) {
                return Err(err(
                    format!("devices[{i}].id"),
                    format!("the id '{}' is declared twice", raw.id),
                ));
            }
            devices.push(
                raw.validate(catalog.families)
                    .map_err(|(field, message)| err(format!("devices[{i}]{field}"), message))?,
            );
        }
        for family in catalog.families {
            let (indices, mut cards): (Vec<usize>, Vec<&mut DeviceDecl>) = devices
                .iter_mut()
                .enumerate()
                .filter(|(_, d)| d.family == family.name)
                .unzip();
            (family.resolve_cards)(&mut cards).map_err(|(k, e)| {
                let field = if e.field.is_empty() {
                    String::new()
                } else {
                    format!(".{}", e.field)
                };
                err(format!("devices[{}]{field}", indices[k]), e.message)
            })?;
        }
        give_bus_addresses(&mut devices);
        let device_ids: BTreeSet<&str> = device_ids.iter().map(String::as_str).collect();

        let trusted = trusted_keys(&self.trust.keys, &base)
            .map_err(|(name, msg)| err(format!("trust.keys.{name}"), msg))?;
        let store = self.store.as_ref().map(|root| Store::at(base.join(root)));
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
            let module = resolve_module(&raw.module, &base, catalog, store.as_ref())
                .map_err(|msg| err(at("module"), msg))?;
            let signature =
                signature_policy(&raw.signed_by, &trusted, self.trust.require_signatures)
                    .map_err(|(j, msg)| err(format!("plugins[{i}].signed_by[{j}]"), msg))?;
            if matches!(module, ModuleSource::Builtin(_)) && !raw.signed_by.is_empty() {
                return Err(err(
                    at("signed_by"),
                    "a built-in plugin ships inside the host binary and is trusted as the host                      is: it carries no signature to check"
                        .into(),
                ));
            }
            let mut grants = raw.grants;
            validate_grants(&mut grants, &device_ids, &base)
                .map_err(|(field, msg)| err(format!("plugins[{i}].grants.{field}"), msg))?;
            validate_policy(&raw.load_policy)
                .map_err(|(field, msg)| err(format!("plugins[{i}].load_policy.{field}"), msg))?;
            for (j, family) in raw.trusted_for.iter().enumerate() {
                if family::find(catalog.families, family).is_none() {
                    return Err(err(
                        format!("plugins[{i}].trusted_for[{j}]"),
                        format!(
                            "unknown family `{family}`: expected one of {}",
                            family::names(catalog.families)
                        ),
                    ));
                }
            }
            plugins.push(PluginEntry {
                name: raw.name,
                module,
                module_text: raw.module,
                config: raw.config,
                load_policy: raw.load_policy,
                grants,
                enabled: raw.enabled,
                trusted_for: raw.trusted_for,
                signature,
            });
        }

        let linux = LinuxSettings {
            sysfs_root: base.join(&self.linux.sysfs_root),
            dev_root: base.join(&self.linux.dev_root),
        };
        Ok(Validated {
            devices,
            plugins,
            linux,
        })
    }
}

impl RawConfig {
    /// The `oci://` modules of the config and the signature each must carry, and its store:
    /// what `accelhost pull` fetches for it. Nothing else is validated, and nothing is looked
    /// up in the store (the modules are not pulled yet).
    pub(super) fn modules_to_pull(self, source: &ConfigSource) -> Result<PullList, ConfigError> {
        let err = |path: String, message: String| ConfigError::new(source, path, message);
        let base = base_dir(source);
        let trusted = trusted_keys(&self.trust.keys, &base)
            .map_err(|(name, msg)| err(format!("trust.keys.{name}"), msg))?;
        let mut modules: Vec<ModuleToPull> = Vec::new();
        for (i, raw) in self.plugins.into_iter().enumerate() {
            if !raw.module.starts_with(OCI_SCHEME) {
                continue;
            }
            let reference: OciReference = raw
                .module
                .parse()
                .map_err(|msg| err(format!("plugins[{i}].module"), msg))?;
            let signature =
                signature_policy(&raw.signed_by, &trusted, self.trust.require_signatures)
                    .map_err(|(j, msg)| err(format!("plugins[{i}].signed_by[{j}]"), msg))?;
            let module = ModuleToPull {
                reference,
                signature,
            };
            if !modules.contains(&module) {
                modules.push(module);
            }
        }
        Ok(PullList {
            store: self.store.map(|root| Store::at(base.join(root))),
            modules,
        })
    }
}

/// What `accelhost pull` fetches for a config: its `oci://` modules, and its `store`.
#[derive(Clone, Debug)]
pub struct PullList {
    /// The config's `store`, when it names one.
    pub store: Option<Store>,
    /// Each distinct module and signature policy, in the config's order.
    pub modules: Vec<ModuleToPull>,
}

/// One `oci://` module of a config, and the signature its entry asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleToPull {
    /// The module's reference.
    pub reference: OciReference,
    /// What its signature must be: the entry's `signed_by`, else the config's `trust`.
    pub signature: SignaturePolicy,
}

impl RawDevice {
    /// The card, checked by its family; an error names the field (`.slice`) and the problem.
    fn validate(
        self,
        families: &[&'static family::Family],
    ) -> Result<DeviceDecl, (String, String)> {
        let family = family::find(families, &self.family).ok_or_else(|| {
            (
                ".family".to_string(),
                format!(
                    "unknown family `{}`: expected one of {}",
                    self.family,
                    family::names(families)
                ),
            )
        })?;
        for field in self.settings.keys() {
            if family.card_fields.contains(&field.as_str()) {
                continue;
            }
            let others: Vec<&str> = families
                .iter()
                .filter(|f| f.card_fields.contains(&field.as_str()))
                .map(|f| f.name)
                .collect();
            let message = if others.is_empty() {
                let mut known: Vec<&str> = SHARED_CARD_FIELDS.to_vec();
                known.extend(family.card_fields);
                format!(
                    "unknown field `{field}`: a {} card takes {}",
                    family.name,
                    known.join(", ")
                )
            } else {
                format!("{field} applies to {} devices only", others.join(" and "))
            };
            return Err((format!(".{field}"), message));
        }
        let settings = (family.parse_card)(&self.settings).map_err(|e| {
            let field = if e.field.is_empty() {
                String::new()
            } else {
                format!(".{}", e.field)
            };
            (field, e.message)
        })?;
        Ok(DeviceDecl {
            id: self.id,
            family: family.name.to_string(),
            vendor_id: self.vendor_id.unwrap_or(family.default_ids.0),
            device_id: self.device_id.unwrap_or(family.default_ids.1),
            bus_address: self.bus_address,
            socket_id: self.socket_id,
            card_group: None,
            settings,
        })
    }
}

/// The first bus an emulated card without a `bus_address` is given.
pub const FIRST_EMULATED_BUS: u8 = 0x3b;

/// Gives every emulated card without a `bus_address` one, as a real card has: `0000:bb:00.0`
/// with `bb` counting up from [`FIRST_EMULATED_BUS`] in config order, skipping the buses of
/// the addresses the config gives. Past bus `ff` cards stay without one. Devices of one
/// [`card_group`](DeviceDecl::card_group) are one card: they take the address one of them
/// was given, or share the one the first is given.
fn give_bus_addresses(devices: &mut [DeviceDecl]) {
    let taken: BTreeSet<u8> = devices
        .iter()
        .filter_map(|d| d.bus_address)
        .filter(|a| a.segment == 0)
        .map(|a| a.bus)
        .collect();
    let mut cards: BTreeMap<String, BusAddress> = devices
        .iter()
        .filter_map(|d| Some((d.card_group.clone()?, d.bus_address?)))
        .collect();
    let mut free = (FIRST_EMULATED_BUS..=u8::MAX).filter(|bus| !taken.contains(bus));
    for device in devices.iter_mut().filter(|d| d.bus_address.is_none()) {
        if let Some(address) = device.card_group.as_ref().and_then(|g| cards.get(g)) {
            device.bus_address = Some(*address);
            continue;
        }
        device.bus_address = free.next().map(|bus| BusAddress {
            segment: 0,
            bus,
            device: 0,
            function: 0,
        });
        if let (Some(group), Some(address)) = (&device.card_group, device.bus_address) {
            cards.insert(group.clone(), address);
        }
    }
}

/// Checks the grants; the TLS paths of `remote` grants are made absolute against `base`.
fn validate_grants(
    grants: &mut Grants,
    device_ids: &BTreeSet<&str>,
    base: &Path,
) -> Result<(), (String, String)> {
    let mut endpoints = BTreeSet::new();
    for (j, remote) in grants.remote.iter_mut().enumerate() {
        let at = format!("remote[{j}].endpoint");
        remote.to_endpoint(base).map_err(|msg| (at.clone(), msg))?;
        if !endpoints.insert(remote.endpoint.clone()) {
            return Err((at, format!("'{}' is granted twice", remote.endpoint)));
        }
        if let Some(tls) = &mut remote.tls {
            for path in [&mut tls.ca, &mut tls.certificate, &mut tls.key] {
                *path = base.join(&*path);
            }
        }
    }
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
        (
            "compile_timeout_ms",
            policy.compile_timeout_ms,
            100,
            3_600_000,
        ),
        ("compile_memory_mib", policy.compile_memory_mib, 64, 65_536),
        ("baseline_first_mib", policy.baseline_first_mib, 0, 4096),
        ("max_module_mib", policy.max_module_mib, 1, 4096),
        (
            "event_deadline_ms",
            policy.event_deadline_ms,
            1,
            7 * 24 * 3_600_000,
        ),
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

/// The keys of `trust.keys`, read from their files (relative to `base`); an error names the
/// key and what is wrong.
fn trusted_keys(
    keys: &BTreeMap<String, PathBuf>,
    base: &Path,
) -> Result<Vec<(String, PublicKey)>, (String, String)> {
    keys.iter()
        .map(|(name, path)| {
            if !valid_name(name) {
                return Err((
                    name.clone(),
                    format!("'{name}' is not a valid key name: use 1 to 64 letters, digits, '-', '_' or '.'"),
                ));
            }
            let key = PublicKey::read(&base.join(path)).map_err(|e| (name.clone(), e.to_string()))?;
            Ok((name.clone(), key))
        })
        .collect()
}

/// A plugin's signature policy: the keys its `signed_by` names (each must be one of
/// `trusted`), else all of `trusted`; required when `signed_by` names any, or `required`.
fn signature_policy(
    signed_by: &[String],
    trusted: &[(String, PublicKey)],
    required: bool,
) -> Result<SignaturePolicy, (usize, String)> {
    if signed_by.is_empty() {
        if required && trusted.is_empty() {
            return Err((
                0,
                "trust.require_signatures is set but trust.keys names no key to verify with".into(),
            ));
        }
        return Ok(SignaturePolicy {
            keys: TrustedKeys::new(trusted.to_vec()),
            required,
        });
    }
    let mut keys = Vec::with_capacity(signed_by.len());
    for (j, name) in signed_by.iter().enumerate() {
        let key = trusted.iter().find(|(n, _)| n == name).ok_or_else(|| {
            let known: Vec<&str> = trusted.iter().map(|(n, _)| n.as_str()).collect();
            (
                j,
                format!(
                    "no key '{name}' in trust.keys (keys: {})",
                    if known.is_empty() {
                        "none".into()
                    } else {
                        known.join(", ")
                    }
                ),
            )
        })?;
        keys.push(key.clone());
    }
    Ok(SignaturePolicy {
        keys: TrustedKeys::new(keys),
        required: true,
    })
}

/// `builtin:<name>`, `oci://…` (resolved in `store`), an absolute path, or a path relative to
/// the config's directory or to one of the `ACCELHOST_PLUGIN_PATH` directories (in that order).
fn resolve_module(
    text: &str,
    base: &Path,
    catalog: &Catalog,
    store: Option<&Store>,
) -> Result<ModuleSource, String> {
    if text.starts_with(OCI_SCHEME) {
        let reference: OciReference = text.parse()?;
        let store = match store {
            Some(store) => store.clone(),
            None => Store::open_default().map_err(|e| e.to_string())?,
        };
        let manifest_digest = store.resolve(&reference).map_err(|e| e.to_string())?;
        return Ok(ModuleSource::Oci {
            reference,
            manifest_digest,
            store,
        });
    }
    if let Some(name) = text.strip_prefix("builtin:") {
        let builtins = (catalog.builtins)();
        return if builtins.contains(&name) {
            Ok(ModuleSource::Builtin(name.to_string()))
        } else {
            Err(format!(
                "there is no built-in plugin '{name}' (built in: {})",
                builtins.join(", ")
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
        // Whatever is there is found: loading refuses a directory, FIFO or device by what it
        // is, which says more than "not found" would.
        if candidate.exists() {
            return Ok(ModuleSource::File(candidate));
        }
        tried.push(candidate.display().to_string());
    }
    Err(format!(
        "module '{text}' not found (looked for {}; {PLUGIN_PATH_ENV} adds directories to search)",
        tried.join(", ")
    ))
}
