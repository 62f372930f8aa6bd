//! Hooks for `accelhost bench` and `cargo bench`: the measurements that need the runtime's
//! internals (instantiation alone, starting a plugin from the on-disk cache, many live
//! instances). Not a stable API; hidden from the docs.

use std::sync::Arc;

use crate::config::{Config, PluginEntry};
use crate::devices::DeviceRegistry;
use crate::error::{Error, Result};
use crate::manager::PluginSlot;
use crate::runtime::plugin::Answer;
use crate::runtime::{ComponentCache, LoadedComponent, PluginInstance, runtime};
use crate::state::{FailureMessages, LogBudget, PluginContext, Shared};

/// Forgets every compiled plugin this process holds in memory, so that the next start of a
/// plugin reads the on-disk cache (or compiles) as a fresh process would; waits first for
/// the optimized compiles running in the background.
pub fn forget_loaded() {
    if let Ok(runtime) = runtime() {
        runtime.forget_loaded();
    }
}

/// Resident memory of this process, in bytes (`/proc/self/statm`; 0 where it cannot be read).
pub fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    pages * crate::devices::page_size()
}

/// [`resident_bytes`] after the allocator hands the memory it holds free back to the system,
/// so that what was freed does not count as held.
///
/// The first call also fixes glibc's thresholds at their defaults: left dynamic, freeing a
/// large block raises them, and the top of a thread's arena then keeps up to twice that block
/// (16 MiB after an 8 MiB one), which `malloc_trim` does not reach, so that a freed answer
/// would read as held.
pub fn trimmed_resident_bytes() -> u64 {
    #[cfg(target_env = "gnu")]
    {
        static FIXED: std::sync::Once = std::sync::Once::new();
        const DEFAULT_THRESHOLD: libc::c_int = 128 << 10;
        FIXED.call_once(|| {
            // SAFETY: mallopt only changes the allocator's policy for later allocations and
            // frees; it is thread-safe in glibc.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, DEFAULT_THRESHOLD);
                libc::mallopt(libc::M_TRIM_THRESHOLD, DEFAULT_THRESHOLD);
            }
        });
        // SAFETY: malloc_trim only releases free memory held by the allocator.
        unsafe {
            libc::malloc_trim(0);
        }
    }
    resident_bytes()
}

/// The most resident memory this process held since the last [`restart_peak`] (or its start),
/// in bytes (`VmHWM` of `/proc/self/status`; 0 where it cannot be read).
pub fn peak_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmHWM:"))
        .and_then(|kib| kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kib| kib << 10)
}

/// Hands free memory back to the system and starts [`peak_resident_bytes`] over from the
/// resident memory now (`5` into `/proc/self/clear_refs`). Returns the resident memory now,
/// or an error where the kernel refuses the reset.
pub fn restart_peak() -> std::io::Result<u64> {
    let now = trimmed_resident_bytes();
    std::fs::write("/proc/self/clear_refs", "5")?;
    Ok(now)
}

/// One plugin of a config, ready to be instantiated or started again and again.
pub struct PluginBench {
    entry: PluginEntry,
    devices: Arc<DeviceRegistry>,
    cache: ComponentCache,
    loaded: Arc<LoadedComponent>,
    ctx: Arc<PluginContext>,
}

impl PluginBench {
    /// Plugin `name` of `config`, with the devices `config` declares, compiled through `cache`.
    pub fn new(config: &Config, name: &str, cache: ComponentCache) -> Result<PluginBench> {
        let entry = config
            .plugins
            .iter()
            .find(|p| p.name == name)
            .cloned()
            .ok_or_else(|| Error::InvalidArgument {
                call: "bench",
                message: format!("the config has no plugin named '{name}'"),
            })?;
        let catalog = crate::builtin::CATALOG;
        let devices = Arc::new(catalog.registry(&config.devices, &config.linux_roots()));
        let (loaded, _) = crate::manager::load_module(&entry, &cache, &catalog)?;
        let ctx = PluginContext::new(
            &entry.name,
            &entry.grants,
            entry.load_policy,
            devices.clone(),
            Shared {
                log: LogBudget::new(entry.load_policy.log_bytes_per_second),
                control: Arc::default(),
                usage: Arc::default(),
                messages: Arc::new(FailureMessages::new(&entry.name)),
                catalog,
            },
        );
        Ok(PluginBench {
            entry,
            devices,
            cache,
            loaded,
            ctx,
        })
    }

    /// A new instance of the already-compiled plugin: `Store`, WASI context and
    /// instantiation, no call. Dropping it ends the instance.
    pub fn instantiate(&self) -> Result<BenchInstance> {
        PluginInstance::new(&self.loaded, self.ctx.clone())
            .map(|instance| BenchInstance {
                _instance: instance,
            })
            .map_err(|f| Error::Internal(f.reason))
    }

    /// An instance of its own, configured, initialized, its first device enumerated and
    /// opened, for calls straight through its exports.
    pub fn raw(&self) -> Result<RawPlugin> {
        fn step<T>(what: &str, r: wasmtime::Result<Answer<T>>) -> Result<T> {
            let message = match r {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(e)) => e.message,
                Err(e) => e.to_string(),
            };
            Err(Error::Internal(format!("raw {what}: {message}")))
        }
        let mut instance = PluginInstance::new(&self.loaded, self.ctx.clone())
            .map_err(|f| Error::Internal(f.reason))?;
        let config = self.entry.config.to_string();
        let mut calls = instance.raw();
        // No deadline: the calls below run outside `PluginInstance::call`.
        calls.store.set_epoch_deadline(u64::MAX / 4);
        step("configure", calls.configure(&config))?;
        step("initialize", calls.initialize())?;
        let devices = step("enumerate", calls.enumerate(&[]))?
            .map_err(|why| Error::Internal(format!("raw enumerate: {why}")))?;
        let token = devices
            .first()
            .map(|(token, _)| *token)
            .ok_or_else(|| Error::Internal("raw enumerate: no device".into()))?;
        let mut raw = RawPlugin {
            instance,
            token,
            handle: 0,
        };
        raw.handle = raw.open();
        Ok(raw)
    }

    /// Starts the plugin as the manager does: load (from the in-process table of compiled
    /// plugins, else the on-disk cache, else a compile), instantiate, `configure` and
    /// `initialize`. Dropping the result calls `finalize` and ends the instance.
    pub fn start(&self) -> Result<StartedPlugin> {
        let slot = PluginSlot::new(
            self.entry.clone(),
            self.devices.clone(),
            self.cache.clone(),
            crate::builtin::CATALOG,
            true,
        );
        slot.start()?;
        Ok(StartedPlugin { slot })
    }
}

/// A live instance from [`PluginBench::instantiate`].
pub struct BenchInstance {
    _instance: PluginInstance,
}

/// A started plugin from [`PluginBench::start`].
pub struct StartedPlugin {
    slot: Arc<PluginSlot>,
}

impl Drop for StartedPlugin {
    fn drop(&mut self) {
        self.slot.stop();
    }
}

/// A plugin instance called straight through its exports: no manager, no lock, no deadline,
/// no lease; what a control call costs in wasmtime alone.
pub struct RawPlugin {
    instance: PluginInstance,
    token: u64,
    handle: u64,
}

impl RawPlugin {
    /// `open` of the first device, exclusive; the plugin's handle.
    pub fn open(&mut self) -> u64 {
        let token = self.token;
        self.instance
            .raw()
            .open(token, crate::OpenMode::Exclusive)
            .expect("raw open")
            .expect("raw open refused")
    }

    /// `close` of `handle`.
    pub fn close(&mut self, handle: u64) {
        self.instance
            .raw()
            .close(handle)
            .expect("raw close")
            .expect("raw close refused");
    }

    /// `reset` of the device opened by [`PluginBench::raw`].
    pub fn reset(&mut self) {
        let handle = self.handle;
        self.instance
            .raw()
            .reset(handle)
            .expect("raw reset")
            .expect("raw reset refused");
    }

    /// Closes the device opened by [`PluginBench::raw`], so that it can be opened again.
    pub fn close_first(&mut self) {
        let handle = self.handle;
        self.close(handle);
    }
}

/// Where the build script left the compiled wasm plugins and test fixtures
/// (`<package>.wasm`), for the end-to-end tests of every crate.
pub const GUEST_DIR: &str = env!("ACCELHOST_GUEST_DIR");
