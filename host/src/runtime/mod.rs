//! The WebAssembly runtime: process-wide engines (one plain, one that meters fuel, made on
//! first use), each with an epoch ticker thread and a `Linker` that carries WASI and the
//! `accel:plugin` imports; compilation through the on-disk cache, the WIT version check, and
//! plugin instances with their limits and deadlines.

mod busy;
mod cache;
mod compile;
mod engine;
mod fault;
mod instance;
mod load_error;
pub(crate) mod plugin;
mod refusals;
mod stdio;
mod versions;
pub mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};
use wasmtime::component::{InstancePre, Linker};
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub(crate) use cache::FileIdentity;
pub use cache::{CACHE_ENV, CACHE_MAX_ENV, ComponentCache, DEFAULT_CACHE_MAX_MIB};
pub use compile::PROGRESS_TARGET;
pub(crate) use engine::engine_config;
pub(crate) use instance::{CallFailure, PluginInstance};
pub(crate) use load_error::LoadError;
pub use versions::LATEST as WIT_VERSION;
pub(crate) use versions::served as served_versions;
pub(crate) use worker::CompileLimits;

use crate::devices::lock;
use crate::error::CompileFailure;
use crate::state::{EPOCH_TICK, PluginState};
use plugin::ExportIndex;

/// How wasmtime says a component's memories, tables or instance do not fit the pooling
/// allocator's slots: a refusal of the component (a compile in process gives the same), not a
/// fault of the worker that compiled it.
const POOL_REFUSAL: &str = "does not fit in pooling allocator requirements";

/// The WIT package plugins are built against; [`WIT_VERSION`] is its latest version.
pub const WIT_PACKAGE: &str = "accel:plugin";
/// Environment variable with the number of plugin instances the pooling allocator keeps
/// slots for (default [`DEFAULT_POOL_INSTANCES`]); `0` or `off` instantiates on demand.
pub const POOL_ENV: &str = "ACCELHOST_POOL_INSTANCES";
/// Plugin instances that can be live at once with the pooling allocator (per engine).
pub const DEFAULT_POOL_INSTANCES: u32 = 2048;
/// The largest table a pooled instance may have, in elements (a `load_policy` allowing more
/// is capped here while the pool is in use).
const POOL_TABLE_ELEMENTS: usize = 1 << 20;

/// What one WASI resource a plugin creates (a pollable, a stream handle) costs the host at
/// most: its table entry and the object behind it. WASI's own resources are not charged to
/// the host-memory budget, but count against `max_resources`.
pub const WASI_RESOURCE_BYTES: u64 = 256;
/// What an instance costs the host besides what it asks for: its store, its instance
/// records, its stdout and stderr line and tail buffers.
pub const INSTANCE_BYTES: u64 = 1 << 20;

/// [`worst_case_host_memory`] written out, for people.
pub const WORST_CASE_FORMULA: &str = "memory_mib + 8 B x max_table_elements \
    + 2 x host_memory_mib + 1 MiB + dma_memory_mib + 256 B x max_resources + 1 MiB";

/// The most host memory one instance of `entry` can make the host hold at once, in bytes:
///
/// `memory_mib + 8 B × max_table_elements + 2 × host_memory_mib + MAX_TRANSFER
///  + dma_memory_mib + WASI_RESOURCE_BYTES × max_resources + INSTANCE_BYTES`
///
/// Its linear memories and tables; what the host keeps for it (its host-memory budget), and as
/// much again between two safe points: the data the host lifts from it in one go is bounded
/// by what its budget has left (wasmtime's hostcall fuel), and an import's own copies by
/// [`MAX_TRANSFER`](crate::imports::MAX_TRANSFER); its DMA memory; WASI's own resources
/// (pollables, stream handles) on the threads that serve them; the instance's output
/// buffers. With the ledger installed (`crate::ledger`) the host-memory budget counts every
/// block the host allocates for the plugin, the store and instance included; without it, only
/// what the imports' call sites charge. Compiling is not counted: a component from a file
/// compiles in a worker process with limits of its own, and compiled code is shared by every
/// instance of a module.
pub fn worst_case_host_memory(entry: &crate::config::PluginEntry) -> u64 {
    let policy = &entry.load_policy;
    let mib = 1u64 << 20;
    policy.memory_mib * mib
        + 8 * u64::from(policy.max_table_elements)
        + 2 * policy.host_memory_mib * mib
        + crate::imports::MAX_TRANSFER
        + entry.grants.dma_memory_mib * mib
        + WASI_RESOURCE_BYTES * u64::from(policy.max_resources)
        + INSTANCE_BYTES
}

/// A compiled, linked plugin, ready to instantiate.
pub(crate) struct LoadedComponent {
    pub pre: InstancePre<PluginState>,
    /// Where its exports are.
    pub exports: ExportIndex,
    /// The `accel:plugin` version the component was built against.
    pub wit_version: String,
}

pub(crate) struct Runtime {
    plain: Flavor,
    metered: OnceLock<Result<Flavor, String>>,
    loaded: Mutex<HashMap<LoadKey, Arc<LoadedComponent>>>,
    /// What was refused, by the same key (the cache's `refused/` keeps it across runs).
    refused: Mutex<HashMap<LoadKey, LoadError>>,
}

/// A compiled plugin is found again by the sha256 of its wasm and whether it meters fuel.
type LoadKey = ([u8; 32], bool);

/// An engine and its linker. Metering fuel changes the compiled code, so a metered plugin
/// needs an engine of its own.
struct Flavor {
    engine: Engine,
    linker: Linker<PluginState>,
    /// How instances get their memories and tables, for people.
    allocator: String,
}

/// How the plain engine allocates instances: `pooling (N instance slots)`, or `on-demand`
/// with the reason the pool was not used. Starts the runtime if it was not running.
pub fn instance_allocator() -> String {
    match runtime() {
        Ok(runtime) => runtime.plain.allocator.clone(),
        Err(err) => err,
    }
}

/// The pooling allocator's slots for `instances` plugin instances. Each component of a plugin
/// holds several core instances (the main module, the WASI adapter, shims), two memories and
/// a few tables; the `load_policy` limits (`memory_mib` up to 4 GiB, `max_instances`) are
/// enforced per store by the `StoreLimits` limiter, so the pool only has to be at least as
/// large: memories up to 4 GiB, no per-component caps.
fn pooling(instances: u32) -> PoolingAllocationConfig {
    let mut pool = PoolingAllocationConfig::new();
    pool.total_component_instances(instances)
        .total_core_instances(instances.saturating_mul(8))
        .total_memories(instances.saturating_mul(2))
        .total_tables(instances.saturating_mul(4))
        .max_memories_per_module(2)
        .max_tables_per_module(4)
        .table_elements(POOL_TABLE_ELEMENTS)
        .max_memory_size(4 << 30);
    pool
}

/// The pool size `ACCELHOST_POOL_INSTANCES` asks for; `None` turns the pool off.
fn pool_instances() -> Option<u32> {
    parse_pool_instances(std::env::var(POOL_ENV).ok().as_deref())
}

/// The pool size for a value of `ACCELHOST_POOL_INSTANCES` (unset: the default; `off` or `0`:
/// no pool). A value that is not a number is warned about and the default used.
fn parse_pool_instances(value: Option<&str>) -> Option<u32> {
    let Some(value) = value.map(str::trim) else {
        return Some(DEFAULT_POOL_INSTANCES);
    };
    match value {
        "off" | "0" => None,
        _ => Some(value.parse().unwrap_or_else(|_| {
            tracing::warn!(
                "{POOL_ENV}={value:?} is not a number or 'off'; using {DEFAULT_POOL_INSTANCES}"
            );
            DEFAULT_POOL_INSTANCES
        })),
    }
}

/// The process-wide runtime, created on first use.
pub(crate) fn runtime() -> Result<&'static Runtime, String> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(|| Runtime::new().map_err(|e| format!("cannot start the wasm runtime: {e:#}")))
        .as_ref()
        .map_err(Clone::clone)
}

impl Flavor {
    fn new(metered: bool) -> wasmtime::Result<Flavor> {
        let config = engine_config(metered);
        // The pooling allocator reserves address space for every slot up front (about 4 GiB
        // per memory); where that fails (a `ulimit -v`, a small address space), instances are
        // allocated on demand instead, which only costs instantiation time.
        let (engine, allocator) = match pool_instances() {
            Some(instances) => {
                let mut pooled = config.clone();
                pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(instances)));
                match Engine::new(&pooled) {
                    Ok(engine) => (engine, format!("pooling ({instances} instance slots)")),
                    Err(err) => {
                        tracing::warn!(
                            "the pooling instance allocator is unavailable, instantiating on \
                             demand: {err:#}"
                        );
                        (
                            Engine::new(&config)?,
                            format!("on-demand (the pool could not be set up: {err})"),
                        )
                    }
                }
            }
            None => (Engine::new(&config)?, format!("on-demand ({POOL_ENV}=off)")),
        };
        let mut linker = Linker::new(&engine);
        crate::imports::add_wasi_to_linker(&mut linker)?;
        versions::add_imports(&mut linker)?;
        let ticker = engine.weak();
        std::thread::Builder::new()
            .name("accelhost-epoch".into())
            .spawn(move || {
                while let Some(engine) = ticker.upgrade() {
                    engine.increment_epoch();
                    drop(engine);
                    std::thread::sleep(EPOCH_TICK);
                }
            })?;
        Ok(Flavor {
            engine,
            linker,
            allocator,
        })
    }
}

impl Runtime {
    fn new() -> wasmtime::Result<Runtime> {
        Ok(Runtime {
            plain: Flavor::new(false)?,
            metered: OnceLock::new(),
            loaded: Mutex::default(),
            refused: Mutex::default(),
        })
    }

    fn flavor(&self, metered: bool) -> Result<&Flavor, LoadError> {
        if !metered {
            return Ok(&self.plain);
        }
        self.metered
            .get_or_init(|| {
                Flavor::new(true)
                    .map_err(|e| format!("cannot start the fuel-metering engine: {e:#}"))
            })
            .as_ref()
            .map_err(|e| LoadError::Runtime(e.clone()))
    }

    /// Forgets the compiled and refused plugins held in memory (for benchmarks of a cold
    /// start).
    #[cfg(feature = "internals")]
    pub fn forget_loaded(&self) {
        lock(&self.loaded).clear();
        lock(&self.refused).clear();
    }

    /// Compiles (or finds in the caches) and links `wasm`, the module of `plugin`, checking
    /// that it is a component built for a compatible `accel:plugin` version. `metered`
    /// compiles it to count fuel. `sha256` is the bytes' digest where it is known already
    /// (an embedded plugin's, from its build), else it is computed. A plugin file has its
    /// compile `limits` and compiles in a worker process if there is one; a built-in plugin
    /// (`None`) compiles in this process. A refusal is remembered by the digest, and nothing
    /// refused is stored in the cache.
    pub fn load(
        &self,
        wasm: &[u8],
        sha256: Option<[u8; 32]>,
        plugin: &str,
        cache: &ComponentCache,
        metered: bool,
        limits: Option<CompileLimits>,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        classify(wasm)?;
        let sha: [u8; 32] = sha256.unwrap_or_else(|| Sha256::digest(wasm).into());
        if let Some(loaded) = self.load_compiled(&sha, cache, metered, limits)? {
            return Ok(loaded);
        }
        let flavor = self.flavor(metered)?;
        let loaded = self
            .compile(flavor, wasm, plugin, metered, limits)
            .and_then(|(component, serialized)| {
                let loaded = self.link(flavor, component, sha, metered)?;
                match serialized {
                    Some(code) => cache.store_serialized(&flavor.engine, &sha, &code),
                    None => cache.store(&flavor.engine, &sha, loaded.pre.component()),
                }
                Ok(loaded)
            });
        match &loaded {
            Ok(_) => self.forget_refusal(flavor, &sha, metered, cache),
            Err(refusal) if refusal.is_remembered() => {
                self.remember_refusal(flavor, &sha, metered, cache, refusal);
            }
            Err(_) => {}
        }
        loaded
    }

    /// Compiles `wasm` for `flavor`: in a worker within `limits` where there is a worker and
    /// limits, else in this process. Gives the worker's serialized code too, to be cached as
    /// it is.
    fn compile(
        &self,
        flavor: &Flavor,
        wasm: &[u8],
        plugin: &str,
        metered: bool,
        limits: Option<CompileLimits>,
    ) -> Result<(wasmtime::component::Component, Option<Vec<u8>>), LoadError> {
        let (Some(limits), Some(program)) = (limits, worker::program()) else {
            return compile::in_process(&flavor.engine, wasm, plugin)
                .map(|component| (component, None))
                .map_err(|e| {
                    LoadError::Compile(CompileFailure::Invalid {
                        message: format!("{e:#}"),
                    })
                });
        };
        let code = compile::announced(plugin, wasm.len(), || {
            worker::compile(&program, wasm, metered, limits)
        })
        .map_err(LoadError::Compile)?;
        // SAFETY: the code was made by `Engine::precompile_component` in a compile worker:
        // the executable this host trusts to be its own build (this very executable, or the
        // one `ACCELHOST_COMPILE_WORKER` names, which whoever set the environment vouches
        // for), with this engine's configuration (`engine_config`); wasmtime refuses code of
        // another version or configuration. The worker bounds the compile's time and memory,
        // not the trust: the compiler's output is trusted as it is when it runs in process.
        let component =
            unsafe { wasmtime::component::Component::deserialize(&flavor.engine, &code) }.map_err(
                |e| {
                    let message = format!("{e:#}");
                    if message.contains(POOL_REFUSAL) {
                        // The component's own shape, as a compile in process would find it.
                        LoadError::Compile(CompileFailure::Invalid { message })
                    } else {
                        LoadError::Compile(CompileFailure::Worker {
                            reason: format!(
                                "the compile worker {} made code this host cannot load: \
                                 {message}",
                                program.display()
                            ),
                        })
                    }
                },
            )?;
        Ok((component, Some(code)))
    }

    /// The plugin whose wasm has the digest `sha`, if it is compiled already (in memory or in
    /// the on-disk cache), or its refusal if it was refused and that still holds for
    /// `limits`: what [`load`](Self::load) does without the wasm.
    pub fn load_compiled(
        &self,
        sha: &[u8; 32],
        cache: &ComponentCache,
        metered: bool,
        limits: Option<CompileLimits>,
    ) -> Result<Option<Arc<LoadedComponent>>, LoadError> {
        let key = (*sha, metered);
        if let Some(loaded) = lock(&self.loaded).get(&key) {
            return Ok(Some(loaded.clone()));
        }
        let remembered = |refusal: &LoadError| {
            refusals::holds(refusal, limits)
                .then(|| LoadError::Remembered(Box::new(refusal.clone())))
        };
        if let Some(refusal) = lock(&self.refused).get(&key).and_then(remembered) {
            return Err(refusal);
        }
        let flavor = self.flavor(metered)?;
        if let Some(component) = cache.load(&flavor.engine, sha) {
            return match self.link(flavor, component, *sha, metered) {
                Ok(loaded) => Ok(Some(loaded)),
                Err(refusal) => {
                    // Stored by a host that cached before linking: refused, and gone.
                    cache.forget(&flavor.engine, sha);
                    self.remember_refusal(flavor, sha, metered, cache, &refusal);
                    Err(refusal)
                }
            };
        }
        if let Some(refusal) = refusals::read(cache, &flavor.engine, sha) {
            let still = remembered(&refusal);
            lock(&self.refused).insert(key, refusal);
            if let Some(refusal) = still {
                return Err(refusal);
            }
        }
        Ok(None)
    }

    fn remember_refusal(
        &self,
        flavor: &Flavor,
        sha: &[u8; 32],
        metered: bool,
        cache: &ComponentCache,
        refusal: &LoadError,
    ) {
        lock(&self.refused).insert((*sha, metered), refusal.clone());
        refusals::write(cache, &flavor.engine, sha, refusal);
    }

    fn forget_refusal(
        &self,
        flavor: &Flavor,
        sha: &[u8; 32],
        metered: bool,
        cache: &ComponentCache,
    ) {
        if lock(&self.refused).remove(&(*sha, metered)).is_some() {
            refusals::remove(cache, &flavor.engine, sha);
        }
    }

    /// Checks `component`'s interface and links it, and keeps it for the next load of `sha`.
    fn link(
        &self,
        flavor: &Flavor,
        component: wasmtime::component::Component,
        sha: [u8; 32],
        metered: bool,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let Flavor { engine, linker, .. } = flavor;
        let wit_version = wit_version(engine, &component)?;
        let exports = ExportIndex::find(&component, &wit_version).map_err(LoadError::Unusable)?;
        let pre = linker.instantiate_pre(&component).map_err(|e| {
            LoadError::Unusable(format!(
                "it needs an import this host does not provide: {e:#}"
            ))
        })?;
        let loaded = Arc::new(LoadedComponent {
            pre,
            exports,
            wit_version,
        });
        lock(&self.loaded).insert((sha, metered), loaded.clone());
        Ok(loaded)
    }
}

/// Tells a component from a core module or something that is not wasm at all.
fn classify(wasm: &[u8]) -> Result<(), LoadError> {
    const MAGIC: &[u8] = b"\0asm";
    if wasm.len() < 8 || &wasm[..4] != MAGIC {
        return Err(LoadError::Unusable(
            "it is not a WebAssembly file (no \\0asm header)".into(),
        ));
    }
    match &wasm[4..8] {
        [0x0d, 0x00, 0x01, 0x00] => Ok(()),
        [0x01, 0x00, 0x00, 0x00] => Err(LoadError::Unusable(
            "it is a core WebAssembly module, not a component: build plugins for \
             wasm32-wasip2 (or wrap a module with `wasm-tools component new`)"
                .into(),
        )),
        _ => Err(LoadError::Unusable(
            "it is a WebAssembly binary of an unknown version or layer".into(),
        )),
    }
}

/// The `accel:plugin` version a component names in its exports and imports.
fn wit_version(
    engine: &Engine,
    component: &wasmtime::component::Component,
) -> Result<String, LoadError> {
    let ty = component.component_type();
    let names: Vec<String> = ty
        .exports(engine)
        .map(|(name, _)| name.to_string())
        .chain(ty.imports(engine).map(|(name, _)| name.to_string()))
        .collect();
    let ours: Vec<&String> = names
        .iter()
        .filter(|n| n.starts_with(&format!("{WIT_PACKAGE}/")))
        .collect();
    if ours.is_empty() {
        let exports: Vec<String> = ty.exports(engine).map(|(n, _)| n.to_string()).collect();
        return Err(LoadError::Unusable(format!(
            "it is not an accelhost plugin: it exports no {WIT_PACKAGE} interface (exports: {})",
            if exports.is_empty() {
                "none".into()
            } else {
                exports.join(", ")
            }
        )));
    }
    let first = ours[0].split_once('@').map_or("(unversioned)", |(_, v)| v);
    for name in &ours {
        let found = name.split_once('@').map_or("(unversioned)", |(_, v)| v);
        if found != first || versions::serving(found).is_none() {
            return Err(LoadError::Incompatible {
                found: found.to_string(),
            });
        }
    }
    Ok(first.to_string())
}

#[cfg(test)]
mod tests {
    use std::hash::{Hash, Hasher};

    use super::*;

    fn compatibility(engine: &Engine) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        engine.precompile_compatibility_hash().hash(&mut hasher);
        hasher.finish()
    }

    #[test]
    fn a_worker_engine_without_the_pool_makes_code_the_pooled_engine_loads() {
        let mut pooled = engine_config(false);
        pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(4)));
        let pooled = Engine::new(&pooled).unwrap();
        let worker = Engine::new(&engine_config(false)).unwrap();
        assert_eq!(compatibility(&pooled), compatibility(&worker));
        let metered = Engine::new(&engine_config(true)).unwrap();
        assert_ne!(compatibility(&metered), compatibility(&worker));
        // And the code itself: compiled by one, loaded by the other.
        let code = worker.precompile_component(b"\0asm\x0d\0\x01\0").unwrap();
        // SAFETY: the code was just compiled by this process, for this configuration.
        unsafe { wasmtime::component::Component::deserialize(&pooled, &code) }.unwrap();
    }

    /// A component that compiles but is no plugin (it exports nothing), made unique by a
    /// custom section named `tag`, so that no other test has its digest.
    fn no_plugin(tag: &str) -> Vec<u8> {
        let mut wasm = b"\0asm\x0d\0\x01\0".to_vec();
        let name = [&[tag.len() as u8][..], tag.as_bytes()].concat();
        wasm.push(0);
        wasm.push(name.len() as u8);
        wasm.extend_from_slice(&name);
        wasm
    }

    fn fresh_cache(name: &str) -> (ComponentCache, std::path::PathBuf) {
        let base =
            std::env::temp_dir().join(format!("accelhost-runtime-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        (ComponentCache::at(Some(base.join("cache"))), base)
    }

    fn files_in(dir: &std::path::Path) -> Vec<String> {
        std::fs::read_dir(dir)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    }

    #[test]
    fn a_refused_component_leaves_no_cache_entry_and_is_remembered() {
        let (cache, base) = fresh_cache("refused");
        let runtime = runtime().unwrap();
        let wasm = no_plugin("refused-once");
        let sha: [u8; 32] = Sha256::digest(&wasm).into();
        let Err(LoadError::Unusable(reason)) = runtime.load(&wasm, None, "p", &cache, false, None)
        else {
            panic!("a component without exports is no plugin")
        };
        assert!(
            reason.contains("exports no accel:plugin interface"),
            "{reason}"
        );
        let dir = cache.dir().unwrap();
        assert!(
            !files_in(dir).iter().any(|f| f.ends_with(".cwasm")),
            "compiled code of a refused component was cached: {:?}",
            files_in(dir)
        );
        assert_eq!(files_in(&dir.join("refused")).len(), 1);
        let remembered = LoadError::Remembered(Box::new(LoadError::Unusable(reason)));
        let again = runtime.load(&wasm, None, "p", &cache, false, None);
        assert_eq!(again.err(), Some(remembered.clone()));
        // A process that did not see it learns it from the cache.
        lock(&runtime.refused).remove(&(sha, false));
        let from_disk = runtime.load_compiled(&sha, &cache, false, None);
        assert_eq!(from_disk.err(), Some(remembered));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn a_refusal_by_a_limit_is_tried_again_under_a_larger_limit() {
        let (cache, base) = fresh_cache("limit");
        let runtime = runtime().unwrap();
        let sha = [0x5au8; 32];
        let timed_out = LoadError::Compile(CompileFailure::TimedOut { limit_ms: 1500 });
        refusals::write(&cache, &runtime.plain.engine, &sha, &timed_out);
        let limits = |timeout_ms| {
            Some(CompileLimits {
                timeout_ms,
                memory_mib: 1024,
            })
        };
        let same = runtime.load_compiled(&sha, &cache, false, limits(1500));
        assert_eq!(
            same.err(),
            Some(LoadError::Remembered(Box::new(timed_out.clone())))
        );
        let larger = runtime.load_compiled(&sha, &cache, false, limits(3000));
        assert!(matches!(larger, Ok(None)), "to be compiled again");
        let same = runtime.load_compiled(&sha, &cache, false, limits(1500));
        assert_eq!(same.err(), Some(LoadError::Remembered(Box::new(timed_out))));
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn the_pool_size_comes_from_the_environment_value() {
        assert_eq!(parse_pool_instances(None), Some(DEFAULT_POOL_INSTANCES));
        assert_eq!(parse_pool_instances(Some("64")), Some(64));
        assert_eq!(parse_pool_instances(Some(" 64 ")), Some(64));
        assert_eq!(parse_pool_instances(Some("off")), None);
        assert_eq!(parse_pool_instances(Some("0")), None);
        assert_eq!(
            parse_pool_instances(Some("lots")),
            Some(DEFAULT_POOL_INSTANCES),
            "not a number: the default, with a warning"
        );
    }

    #[test]
    fn headers_are_classified() {
        assert!(classify(b"\0asm\x0d\0\x01\0").is_ok());
        let LoadError::Unusable(msg) = classify(b"\0asm\x01\0\0\0").unwrap_err() else {
            panic!()
        };
        assert!(msg.contains("core WebAssembly module"), "{msg}");
        let LoadError::Unusable(msg) = classify(b"#!/bin/sh\n").unwrap_err() else {
            panic!()
        };
        assert!(msg.contains("not a WebAssembly file"), "{msg}");
    }
}
