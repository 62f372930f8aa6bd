//! [`Host`]: the entry point of the embedding API.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Arc;

use super::handle::{Handle, Target};
use super::inner::HostInner;
use super::token::Token;
use super::workers::Workers;
use crate::config::{Config, ConfigOrigin, PluginEntry};
use crate::error::{Error, Result};
use crate::family::Catalog;
use crate::manager::lease::Lease;
use crate::manager::{CheckedModule, Manager, OpenHandle, PluginInfo, PluginSlot};
use crate::properties::{Filter, MAX_DEVICES, OpenMode, Properties};
use crate::runtime::ComponentCache;
use crate::text::inert;

/// A loaded plugin list. Cheap to clone and shareable between threads; the plugins are
/// finalized and their instances dropped when the last clone (and the last handle opened
/// through it) goes away.
#[derive(Clone)]
pub struct Host {
    pub(crate) inner: Arc<HostInner>,
}

/// The result of [`Host::enumerate`]: the devices found, and the plugins that failed to answer
/// (OPAE returns partial results the same way).
#[derive(Debug, Default)]
pub struct Enumeration {
    /// The matching devices, in plugin order, then in the order each plugin reported them.
    pub tokens: Vec<Token>,
    /// One error for each plugin whose pre-filter or `enumerate` call failed.
    pub failures: Vec<Error>,
}

impl IntoIterator for Enumeration {
    type Item = Token;
    type IntoIter = std::vec::IntoIter<Token>;

    fn into_iter(self) -> Self::IntoIter {
        self.tokens.into_iter()
    }
}

/// Options for starting a [`Host`].
pub struct HostBuilder {
    /// What ships in the host, handed down to everything below that serves every family.
    catalog: Catalog,
    config: Option<(Config, ConfigOrigin)>,
    cache: Option<ComponentCache>,
    remote: Option<Arc<dyn crate::remote::Connector>>,
    count_calls: bool,
    shareable_memory: bool,
}

impl Default for HostBuilder {
    fn default() -> Self {
        HostBuilder {
            catalog: crate::builtin::CATALOG,
            config: None,
            cache: None,
            remote: None,
            count_calls: true,
            shareable_memory: false,
        }
    }
}

impl HostBuilder {
    /// Use this config instead of looking one up.
    pub fn config(mut self, config: Config) -> Self {
        self.config = Some((config, ConfigOrigin::Explicit));
        self
    }

    /// Use this config, found by [`builtin::discover`](crate::builtin::discover) as `origin`
    /// says (so that [`Host::config_origin`] reports it).
    pub fn discovered_config(mut self, config: Config, origin: ConfigOrigin) -> Self {
        self.config = Some((config, origin));
        self
    }

    /// Keep compiled plugins in `dir` (default: `ACCELHOST_CACHE_DIR` or the user cache).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache = Some(ComponentCache::at(Some(dir.into())));
        self
    }

    /// Keep compiled plugins in `cache`, for a cap of its own
    /// ([`ComponentCache::with_max_bytes`]) rather than `ACCELHOST_CACHE_MAX_MIB`'s.
    pub fn compile_cache(mut self, cache: ComponentCache) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Compile every plugin afresh and keep nothing on disk.
    pub fn no_cache(mut self) -> Self {
        self.cache = Some(ComponentCache::at(None));
        self
    }

    /// Lets plugins with `remote` grants (such as `builtin:remote`) reach nodes running
    /// `accelhost serve` through `connector` (the `accelhost-node` crate provides one).
    pub fn remote(mut self, connector: Arc<dyn crate::remote::Connector>) -> Self {
        self.remote = Some(connector);
        self
    }

    /// Whether every call into a plugin is counted (calls, errors by code, durations) for
    /// [`PluginInfo::calls`] and the node's metrics; on by default. Off, only faults are
    /// counted: for embedders that want no accounting on the call path.
    pub fn count_calls(mut self, count: bool) -> Self {
        self.count_calls = count;
        self
    }

    /// Whether the DMA memory plugins allocate (buffers, host-visible offload memory) can be
    /// handed to other processes ([`DmaBuffer::share`](crate::DmaBuffer::share)); off by
    /// default. A node turns it on so that its local clients map their buffers instead of
    /// mirroring them; it costs more per allocation (measured in BENCHMARKS.md), and memory
    /// that a driver maps stays unshareable.
    pub fn shareable_memory(mut self, shareable: bool) -> Self {
        self.shareable_memory = shareable;
        self
    }

    /// Loads every plugin of the config. Fails on a config error, or when a plugin whose
    /// `load_policy.on_error` is `fail` cannot be loaded; other failed plugins are reported
    /// by [`Host::plugins`].
    pub fn build(self) -> Result<Host> {
        let (config, origin) = match self.config {
            Some(found) => found,
            None => crate::builtin::discover(None)?,
        };
        let cache = self.cache.unwrap_or_else(ComponentCache::from_env);
        let mut devices = self
            .catalog
            .registry(&config.devices, &config.linux_roots());
        if let Some(connector) = self.remote {
            devices.set_service(connector);
        }
        devices.set_shares_memory(self.shareable_memory);
        let manager = Manager::start(&config, &cache, devices, self.catalog, self.count_calls)?;
        Ok(Host {
            inner: Arc::new(HostInner {
                manager,
                config,
                origin,
                workers: Workers::default(),
            }),
        })
    }
}

/// Checks that the module of `entry` is a plugin this host can load (signed as its config
/// requires, a component, built for a compatible `accel:plugin` version, needing only imports
/// the host provides) without running any of its code.
pub fn check_module(entry: &PluginEntry, cache: &ComponentCache) -> Result<CheckedModule> {
    crate::manager::check_module(entry, cache, &crate::builtin::CATALOG)
}

impl Host {
    /// Options for starting a host; [`HostBuilder::build`] starts it.
    pub fn builder() -> HostBuilder {
        HostBuilder::default()
    }

    /// A host on the config found by the usual lookup order (ending in the embedded default).
    pub fn new() -> Result<Host> {
        Host::builder().build()
    }

    /// A host on `config`.
    pub fn with_config(config: Config) -> Result<Host> {
        Host::builder().config(config).build()
    }

    /// The config the host was started on.
    pub fn config(&self) -> &Config {
        &self.inner.config
    }

    /// How the config was found.
    pub fn config_origin(&self) -> &ConfigOrigin {
        &self.inner.origin
    }

    /// Every plugin of the config, with its state.
    pub fn plugins(&self) -> Vec<PluginInfo> {
        self.inner.manager.slots.iter().map(|s| s.info()).collect()
    }

    /// The plugin of the config named `name`, with its state; `None` when the config has no
    /// plugin of that name.
    pub fn plugin(&self, name: &str) -> Option<PluginInfo> {
        self.inner
            .manager
            .slots
            .iter()
            .find(|s| s.name() == name)
            .map(|s| s.info())
    }

    /// Waits up to `timeout` for the plugins still loading ([`PluginStatus::Loading`]: a
    /// plugin file whose compile outlasted the start) to start or fail; true if none is
    /// loading any more. [`Host::enumerate`] reports each plugin still loading as a failure,
    /// so a program that needs its devices can wait here first. Each compile ends by its
    /// plugin's `load_policy.compile_timeout_ms`, so `Duration::MAX` waits no longer than the
    /// longest of those.
    ///
    /// [`PluginStatus::Loading`]: crate::PluginStatus::Loading
    pub fn wait_loaded(&self, timeout: std::time::Duration) -> bool {
        let deadline = std::time::Instant::now().checked_add(timeout);
        loop {
            let loading = self
                .inner
                .manager
                .slots
                .iter()
                .any(|s| s.status() == crate::manager::PluginStatus::Loading);
            if !loading {
                return true;
            }
            if deadline.is_some_and(|d| std::time::Instant::now() >= d) {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Stops the call running in plugin `plugin`, from any thread: a call stuck in wasm or in
    /// a host wait ends within about 10 ms, failing with [`ErrorCode::PluginFaulted`](crate::ErrorCode::PluginFaulted).
    /// A call stopped half-way leaves the instance in an unknown state, so the instance is
    /// ended and restarted (or not) as its `load_policy` says. Returns whether a call was
    /// running.
    pub fn cancel(&self, plugin: &str) -> Result<bool> {
        match self.inner.manager.slot(plugin) {
            Some(slot) => Ok(slot.cancel()),
            None => Err(Error::InvalidArgument {
                call: "cancel",
                message: format!("no plugin is named '{plugin}'"),
            }),
        }
    }

    /// Finds the devices that match any of `filters` (every device for an empty list),
    /// across all running plugins. A plugin whose `supports-host` / `supports-device` answer
    /// rules out every filter is not asked to enumerate.
    pub fn enumerate(&self, filters: &[Filter]) -> Enumeration {
        let running: Vec<&Arc<PluginSlot>> = self
            .inner
            .manager
            .slots
            .iter()
            .filter(|slot| matches!(slot.status(), crate::manager::PluginStatus::Running))
            .collect();
        // Each plugin answers on a thread of its own, within its own deadline, so a slow
        // plugin delays nobody else's devices.
        let answers: Vec<Result<Vec<Token>>> = match running.as_slice() {
            [] => Vec::new(),
            [only] => vec![enumerate_one(only, filters)],
            several => {
                let filters: Arc<[Filter]> = filters.into();
                let jobs = several.iter().map(|slot| {
                    let (slot, filters) = (Arc::clone(slot), filters.clone());
                    move || enumerate_one(&slot, &filters)
                });
                let answers = self.inner.workers.run_all(jobs);
                answers
                    .into_iter()
                    .zip(several)
                    .map(|(answer, slot)| {
                        answer.unwrap_or_else(|| {
                            Err(Error::Internal(format!(
                                "enumerating plugin '{}' panicked",
                                slot.name()
                            )))
                        })
                    })
                    .collect()
            }
        };
        let mut found = Enumeration::default();
        for slot in &self.inner.manager.slots {
            if slot.status() == crate::manager::PluginStatus::Loading {
                found.failures.push(Error::StillLoading {
                    plugin: slot.name().to_string(),
                });
            }
        }
        for answer in answers {
            match answer {
                Ok(tokens) => found.tokens.extend(tokens),
                Err(err) => found.failures.push(err),
            }
        }
        found
    }

    /// Opens the accelerator behind `token`.
    pub fn open(&self, token: &Token, mode: OpenMode) -> Result<Handle> {
        let manager = &self.inner.manager;
        if !manager.owns(token.slot()) {
            return Err(Error::InvalidArgument {
                call: "open",
                message: format!("token {} was enumerated by another Host", token.id()),
            });
        }
        token.ticket().lease.check("token")?;
        let slot = token.slot();
        let raw = token.raw();
        let (plugin_handle, ticket) = slot.call_in(
            "open",
            Some(token.ticket().generation),
            format_args!("token={raw} mode={mode:?}"),
            |p| p.open(raw, mode),
            Ok,
        )?;
        let lease = Lease::child(&ticket.lease);
        let key = manager.insert_handle(OpenHandle {
            slot: slot.clone(),
            generation: ticket.generation,
            plugin_handle,
            lease: lease.clone(),
        });
        match key {
            Ok(key) => Ok(Handle::new(
                self.inner.clone(),
                key,
                token.clone(),
                lease,
                Target {
                    slot: slot.clone(),
                    generation: ticket.generation,
                    plugin_handle,
                },
            )),
            Err(err) => {
                let _ = slot.call(
                    "close",
                    Some(ticket.generation),
                    format_args!("handle={plugin_handle}"),
                    |p| p.close(plugin_handle),
                );
                Err(err)
            }
        }
    }
}

/// The devices of one plugin that match `filters`.
fn enumerate_one(slot: &Arc<PluginSlot>, filters: &[Filter]) -> Result<Vec<Token>> {
    let Some(wanted) = prefilter(slot, filters)? else {
        return Ok(Vec::new());
    };
    let (devices, ticket) = slot.call_in(
        "enumerate",
        None,
        format_args!("filters={}", wanted.len()),
        |p| p.enumerate(&wanted),
        accept_devices,
    )?;
    Ok(devices
        .into_iter()
        .filter(|(_, properties)| {
            filters.is_empty() || filters.iter().any(|f| f.matches(properties))
        })
        .map(|(token, properties)| Token::new(slot.clone(), ticket.clone(), token, properties))
        .collect())
}

/// An `enumerate` answer as the host keeps it; refused when it lists more devices, or longer
/// properties, than the host accepts, or names two devices with one token or one name.
pub(crate) fn accept_devices(
    listed: crate::runtime::plugin::Listed,
) -> std::result::Result<Vec<(u64, Properties)>, String> {
    let devices = listed?;
    if devices.len() > MAX_DEVICES {
        return Err(format!(
            "it listed {} devices (at most {MAX_DEVICES})",
            devices.len()
        ));
    }
    let mut tokens = HashSet::with_capacity(devices.len());
    let mut names = HashSet::with_capacity(devices.len());
    for (token, properties) in &devices {
        properties.check_bounds()?;
        if !tokens.insert(*token) {
            return Err(format!("it listed token {token} twice"));
        }
        if !names.insert(properties.name.as_str()) {
            return Err(format!(
                "it listed two devices named '{}'",
                inert(&properties.name)
            ));
        }
    }
    Ok(devices)
}

/// The filters worth sending to `slot`: `None` when its `supports-host` / `supports-device`
/// answers rule all of them out. An empty list stays empty (enumerate everything).
fn prefilter(slot: &PluginSlot, filters: &[Filter]) -> Result<Option<Vec<Filter>>> {
    let mut kept = Vec::new();
    for filter in filters {
        let mut supported = true;
        if let Some(host) = &filter.for_plugin().host {
            supported &= slot.call("supports-host", None, format_args!("{host}"), |p| {
                p.supports_host(host).map(Ok)
            })?;
        }
        if let (true, Some(device_type)) = (supported, &filter.device_type) {
            supported &= slot.call(
                "supports-device",
                None,
                format_args!("{device_type}"),
                |p| p.supports_device(device_type).map(Ok),
            )?;
        }
        if supported {
            kept.push(filter.clone());
        }
    }
    Ok((filters.is_empty() || !kept.is_empty()).then_some(kept))
}
