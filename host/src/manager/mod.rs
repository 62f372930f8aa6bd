//! The plugin manager: starts every listed plugin (reporting the ones that fail, by policy),
//! dispatches calls to them under their lock, ends an instance that faults (releasing all it
//! held and revoking its leases), and keeps the table of open handles.

pub(crate) mod handles;
pub(crate) mod lease;

use std::borrow::Cow;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use serde::Serialize;
use wasmtime::Store;

use crate::config::{Config, Grants, ModuleSource, OnLoadError, PluginEntry};
use crate::devices::{DeviceRegistry, DmaBudget, OwnerId};
use crate::error::{Error, ErrorCode};
use crate::imports::{PluginContext, PluginState};
use crate::runtime::bindings::Plugin;
use crate::runtime::bindings::accel::plugin::types as wit;
use crate::runtime::{ComponentCache, LoadError, LoadedComponent, PluginInstance, runtime};
use crate::trace::{self, Direction};
use handles::{HandleKey, HandleTable};
use lease::Lease;

/// How many handles may be open at once across all plugins.
const MAX_OPEN_HANDLES: usize = 1 << 16;

/// Where a plugin stands, as `accelhost plugins` shows it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PluginStatus {
    /// Loaded, configured and initialized.
    Running,
    /// `enabled: false` in the config.
    Disabled,
    /// It could not be loaded; the reason says why.
    LoadFailed {
        /// What went wrong, for people.
        reason: String,
    },
    /// It trapped or overran its deadline; its instance was ended.
    Faulted {
        /// The call it faulted in and why, as `in <call>: <trap or overrun>`.
        reason: String,
    },
    /// The host shut it down.
    Stopped,
}

impl fmt::Display for PluginStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginStatus::Running => f.write_str("running"),
            PluginStatus::Disabled => f.write_str("disabled"),
            PluginStatus::LoadFailed { reason } => write!(f, "failed to load: {reason}"),
            PluginStatus::Faulted { reason } => write!(f, "faulted: {reason}"),
            PluginStatus::Stopped => f.write_str("stopped"),
        }
    }
}

/// A live instance and the lease everything handed out from it holds.
struct Live {
    instance: PluginInstance,
    generation: u64,
    lease: Arc<Lease>,
}

/// Identifies the instance a call ran in.
#[derive(Clone)]
pub(crate) struct Ticket {
    pub generation: u64,
    pub lease: Arc<Lease>,
}

/// One entry of the plugin list and its instance, if it runs.
pub(crate) struct PluginSlot {
    pub entry: PluginEntry,
    trace: bool,
    live: Mutex<Option<Live>>,
    status: Mutex<(PluginStatus, Option<String>)>,
}

fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl PluginSlot {
    fn new(entry: PluginEntry, trace: bool) -> Self {
        let status = if entry.enabled {
            PluginStatus::Stopped
        } else {
            PluginStatus::Disabled
        };
        PluginSlot {
            entry,
            trace,
            live: Mutex::new(None),
            status: Mutex::new((status, None)),
        }
    }

    pub fn name(&self) -> &str {
        &self.entry.name
    }

    pub fn status(&self) -> PluginStatus {
        lock(&self.status).0.clone()
    }

    /// The `accel:plugin` version the module was built for, once it was read.
    pub fn wit_version(&self) -> Option<String> {
        lock(&self.status).1.clone()
    }

    fn set_status(&self, status: PluginStatus) {
        lock(&self.status).0 = status;
    }

    fn load_error(&self, reason: impl Into<String>) -> Error {
        Error::Load {
            plugin: self.entry.name.clone(),
            module: self.entry.module_text.clone(),
            reason: reason.into(),
        }
    }

    /// Loads, instantiates, configures and initializes the plugin. On failure nothing is
    /// left running and the status says why.
    fn start(&self, devices: &Arc<DeviceRegistry>, cache: &ComponentCache) -> Result<(), Error> {
        let result = self.try_start(devices, cache);
        if let Err(err) = &result {
            lock(&self.live).take();
            let reason = match err {
                Error::Load { reason, .. } => reason.clone(),
                other => other.to_string(),
            };
            self.set_status(PluginStatus::LoadFailed { reason });
        }
        result
    }

    fn try_start(
        &self,
        devices: &Arc<DeviceRegistry>,
        cache: &ComponentCache,
    ) -> Result<(), Error> {
        let loaded = load_module(&self.entry, cache)?;
        lock(&self.status).1 = Some(loaded.wit_version.clone());
        let grants = &self.entry.grants;
        let ctx = Arc::new(PluginContext {
            name: self.entry.name.clone(),
            grants: grants.clone(),
            devices: devices.clone(),
            owner: OwnerId::fresh(),
            dma_budget: DmaBudget::new(grants.dma_memory_mib << 20),
            trace: self.trace,
        });
        let instance = PluginInstance::new(&loaded, ctx)
            .map_err(|f| self.load_error(format!("instantiating it failed: {}", f.reason)))?;
        *lock(&self.live) = Some(Live {
            instance,
            generation: next_generation(),
            lease: Lease::new(),
        });
        let config = self.entry.config.to_string();
        let explain = |step: &str, err: Error| match err {
            Error::Plugin { code, message, .. } => {
                self.load_error(format!("{step} refused ({code}): {message}"))
            }
            Error::Faulted { reason, .. } => self.load_error(format!("{step} faulted: {reason}")),
            other => other,
        };
        self.call("configure", None, format_args!("{config}"), |p, s| {
            p.accel_plugin_lifecycle().call_configure(s, &config)
        })
        .map_err(|e| explain("configure", e))?;
        self.call("initialize", None, format_args!(""), |p, s| {
            p.accel_plugin_lifecycle().call_initialize(s)
        })
        .map_err(|e| explain("initialize", e))?;
        self.set_status(PluginStatus::Running);
        Ok(())
    }

    /// Calls `finalize` and drops the instance.
    fn stop(&self) {
        let running = lock(&self.live).is_some();
        let finalized = running.then(|| {
            self.call("finalize", None, format_args!(""), |p, s| {
                p.accel_plugin_lifecycle().call_finalize(s)
            })
        });
        if let Some(Err(err)) = finalized {
            tracing::warn!(plugin = self.name(), "finalize: {err}");
        }
        if let Some(live) = lock(&self.live).take() {
            live.lease
                .revoke(format!("the host shut plugin '{}' down", self.name()));
            self.set_status(PluginStatus::Stopped);
        }
    }

    /// Runs one call into the plugin. A plugin error becomes [`Error::Plugin`]; a trap or
    /// deadline overrun ends the instance and becomes [`Error::Faulted`]. With `generation`,
    /// the call is refused unless that instance is still the one running.
    pub fn call<R: fmt::Debug>(
        &self,
        call: &'static str,
        generation: Option<u64>,
        args: fmt::Arguments<'_>,
        f: impl FnOnce(&Plugin, &mut Store<PluginState>) -> wasmtime::Result<Result<R, wit::Error>>,
    ) -> Result<R, Error> {
        self.call_in(call, generation, args, f)
            .map(|(value, _)| value)
    }

    /// Like [`call`](Self::call), also telling which instance answered.
    pub fn call_in<R: fmt::Debug>(
        &self,
        call: &'static str,
        generation: Option<u64>,
        args: fmt::Arguments<'_>,
        f: impl FnOnce(&Plugin, &mut Store<PluginState>) -> wasmtime::Result<Result<R, wit::Error>>,
    ) -> Result<(R, Ticket), Error> {
        let mut guard = lock(&self.live);
        let Some(live) = guard.as_mut() else {
            return Err(Error::PluginUnavailable {
                plugin: self.entry.name.clone(),
                call,
                state: self.status().to_string(),
            });
        };
        if generation.is_some_and(|g| g != live.generation) {
            return Err(Error::Stale {
                what: "token or handle",
                why: format!(
                    "it belongs to an earlier instance of plugin '{}'",
                    self.name()
                ),
            });
        }
        let started = self.trace.then(Instant::now);
        let outcome = live.instance.call(f);
        if let Some(started) = started {
            trace::record(
                Direction::Export,
                self.name(),
                call,
                &args.to_string(),
                &outcome,
                started.elapsed(),
            );
        }
        let ticket = Ticket {
            generation: live.generation,
            lease: live.lease.clone(),
        };
        match outcome {
            Ok(Ok(value)) => Ok((value, ticket)),
            Ok(Err(err)) => Err(Error::Plugin {
                plugin: self.entry.name.clone(),
                call,
                code: code_from_wit(err.code),
                message: err.message,
            }),
            Err(failure) => {
                let live = guard.take().expect("checked above");
                self.mark_faulted(&live, call, &failure.reason);
                drop(guard);
                // Dropping the store closes the instance's devices and frees its buffers.
                drop(live);
                Err(Error::Faulted {
                    plugin: self.entry.name.clone(),
                    call,
                    reason: failure.reason,
                })
            }
        }
    }

    /// Revokes a faulted instance's leases, so applications stop using what it handed out
    /// before its store is dropped.
    fn mark_faulted(&self, live: &Live, call: &str, reason: &str) {
        tracing::error!(
            plugin = self.name(),
            call,
            "plugin faulted and was stopped: {reason}"
        );
        live.lease.revoke(format!(
            "plugin '{}' faulted in {call} and was stopped",
            self.name()
        ));
        self.set_status(PluginStatus::Faulted {
            reason: format!("in {call}: {reason}"),
        });
    }
}

/// Reads, compiles (or finds in the caches) and links the module of `entry`.
fn load_module(entry: &PluginEntry, cache: &ComponentCache) -> Result<Arc<LoadedComponent>, Error> {
    let load_error = |reason: String| Error::Load {
        plugin: entry.name.clone(),
        module: entry.module_text.clone(),
        reason,
    };
    let wasm: Cow<'static, [u8]> = match &entry.module {
        ModuleSource::Builtin(name) => Cow::Borrowed(
            crate::builtin::module(name)
                .ok_or_else(|| load_error(format!("no built-in plugin '{name}'")))?,
        ),
        ModuleSource::File(path) => Cow::Owned(
            std::fs::read(path)
                .map_err(|err| load_error(format!("cannot read {}: {err}", path.display())))?,
        ),
    };
    let runtime = runtime().map_err(Error::Internal)?;
    runtime.load(&wasm, cache).map_err(|err| match err {
        LoadError::Unusable(reason) => load_error(reason),
        LoadError::Incompatible { found } => Error::IncompatibleInterface {
            plugin: entry.name.clone(),
            module: entry.module_text.clone(),
            plugin_version: found,
            host_version: crate::runtime::WIT_VERSION.into(),
        },
    })
}

/// Checks that the module of `entry` is a plugin this host can load (a component, built for a
/// compatible `accel:plugin` version, needing only imports the host provides) without running
/// any of its code. Returns the `accel:plugin` version it was built for.
pub fn check_module(entry: &PluginEntry, cache: &ComponentCache) -> Result<String, Error> {
    load_module(entry, cache).map(|loaded| loaded.wit_version.clone())
}

/// The WIT error code as the host's stable code (the first twelve are the same).
fn code_from_wit(code: wit::ErrorCode) -> ErrorCode {
    match code {
        wit::ErrorCode::Unsupported => ErrorCode::Unsupported,
        wit::ErrorCode::InvalidArgument => ErrorCode::InvalidArgument,
        wit::ErrorCode::NotFound => ErrorCode::NotFound,
        wit::ErrorCode::Busy => ErrorCode::Busy,
        wit::ErrorCode::NoSpace => ErrorCode::NoSpace,
        wit::ErrorCode::PermissionDenied => ErrorCode::PermissionDenied,
        wit::ErrorCode::Timeout => ErrorCode::Timeout,
        wit::ErrorCode::OutOfMemory => ErrorCode::OutOfMemory,
        wit::ErrorCode::DeviceError => ErrorCode::DeviceError,
        wit::ErrorCode::NotInitialized => ErrorCode::NotInitialized,
        wit::ErrorCode::AlreadyExists => ErrorCode::AlreadyExists,
        wit::ErrorCode::Internal => ErrorCode::Internal,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// An open handle as the manager tracks it.
pub(crate) struct OpenHandle {
    pub slot: Arc<PluginSlot>,
    pub generation: u64,
    pub plugin_handle: u64,
    pub lease: Arc<Lease>,
}

/// Every plugin of one host, the devices they may reach, and the open handles.
pub(crate) struct Manager {
    pub slots: Vec<Arc<PluginSlot>>,
    handles: Mutex<HandleTable<OpenHandle>>,
}

impl Manager {
    /// Starts every enabled plugin of `config`. A plugin that fails is reported and skipped,
    /// unless its `load_policy.on_error` is `fail`, which fails the whole start.
    pub fn start(config: &Config, cache: &ComponentCache, trace: bool) -> Result<Manager, Error> {
        let devices = Arc::new(DeviceRegistry::from_config(config));
        let mut slots: Vec<Arc<PluginSlot>> = Vec::with_capacity(config.plugins.len());
        for entry in &config.plugins {
            let slot = Arc::new(PluginSlot::new(entry.clone(), trace));
            let started = if entry.enabled {
                slot.start(&devices, cache)
            } else {
                Ok(())
            };
            if let Err(err) = started {
                if entry.load_policy.on_error == OnLoadError::Fail {
                    for started in &slots {
                        PluginSlot::stop(Arc::as_ref(started));
                    }
                    return Err(err);
                }
                tracing::warn!(plugin = %entry.name, "skipping plugin: {err}");
            }
            slots.push(slot);
        }
        Ok(Manager {
            slots,
            handles: Mutex::new(HandleTable::with_capacity(MAX_OPEN_HANDLES)),
        })
    }

    /// Whether `slot` is one of this manager's plugins.
    pub fn owns(&self, slot: &Arc<PluginSlot>) -> bool {
        self.slots.iter().any(|s| Arc::ptr_eq(s, slot))
    }

    pub fn insert_handle(&self, handle: OpenHandle) -> Result<HandleKey, Error> {
        let plugin = handle.slot.name().to_string();
        lock(&self.handles)
            .insert(handle)
            .map_err(|full| Error::Plugin {
                plugin,
                call: "open",
                code: ErrorCode::NoSpace,
                message: format!("the host cannot track another open handle: {full}"),
            })
    }

    /// The plugin, instance and plugin-side number of an open handle.
    pub fn resolve(&self, key: HandleKey) -> Result<(Arc<PluginSlot>, u64, u64), Error> {
        lock(&self.handles)
            .get(key)
            .map(|h| (h.slot.clone(), h.generation, h.plugin_handle))
            .ok_or_else(|| Error::Stale {
                what: "handle",
                why: "it was closed".into(),
            })
    }

    pub fn remove_handle(&self, key: HandleKey) -> Option<OpenHandle> {
        lock(&self.handles).remove(key)
    }

    /// Stops every plugin: `finalize`, then the instance is dropped.
    pub fn shutdown(&self) {
        let stale = lock(&self.handles).drain_where(|_| true);
        for handle in stale {
            handle.lease.revoke("the host shut down");
        }
        for slot in &self.slots {
            slot.stop();
        }
    }
}

/// What `accelhost plugins` shows about one plugin.
#[derive(Clone, Debug, Serialize)]
pub struct PluginInfo {
    /// The plugin's name in the config.
    pub name: String,
    /// The `module` field as the config wrote it.
    pub module: String,
    /// The `accel:plugin` version the module was built for, if it could be read.
    pub wit_version: Option<String>,
    /// Where the plugin stands: running, disabled, failed to load, faulted or stopped.
    pub status: PluginStatus,
    /// The grants the config gives it.
    pub grants: Grants,
}

impl PluginSlot {
    pub fn info(&self) -> PluginInfo {
        PluginInfo {
            name: self.entry.name.clone(),
            module: self.entry.module_text.clone(),
            wit_version: self.wit_version(),
            status: self.status(),
            grants: self.entry.grants.clone(),
        }
    }
}
