//! The WebAssembly runtime: process-wide engines (one plain, one that meters fuel, made on
//! first use), each with an epoch ticker thread and a `Linker` that carries WASI and the
//! `accel:plugin` imports; compilation through the on-disk cache, the WIT version check, and
//! plugin instances with their limits and deadlines.

mod busy;
mod cache;
mod compile;
mod engine;
mod fault;
mod functions;
mod instance;
mod kept;
mod load_error;
pub(crate) mod plugin;
mod refusals;
mod stdio;
mod tier_up;
mod versions;
pub mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use sha2::{Digest, Sha256};
use wasmtime::component::{Component, InstancePre, Linker};
use wasmtime::{Engine, InstanceAllocationStrategy, PoolingAllocationConfig};

pub(crate) use cache::FileIdentity;
pub use cache::{CACHE_ENV, CACHE_MAX_ENV, ComponentCache, DEFAULT_CACHE_MAX_MIB};
pub use compile::PROGRESS_TARGET;
pub(crate) use compile::{CompileWatch, watching_compiles};
pub(crate) use engine::EngineKind;
pub use engine::Tier;
pub(crate) use instance::{CallFailure, PluginInstance};
pub use kept::Shelf;
pub(crate) use load_error::LoadError;
pub use versions::LATEST as WIT_VERSION;
pub(crate) use versions::served as served_versions;
pub(crate) use worker::CompileLimits;

use crate::devices::lock;
use crate::error::CompileFailure;
use crate::state::{EPOCH_TICK, PluginState};
use crate::text::inert;
use functions::FunctionCache;
use plugin::ExportIndex;
use tier_up::TierUp;

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
/// How much of a freed table slot is zeroed in place rather than given back to the kernel:
/// a plugin's tables fit in a page or two, and zeroing them costs less than the `madvise`
/// and the page faults of the next instance in the slot.
const POOL_TABLE_KEEP_RESIDENT: usize = 16 << 10;

/// What one WASI resource a plugin creates (a pollable, a stream handle) costs the host at
/// most: its table entry and the object behind it. WASI's own resources are not charged to
/// the host-memory budget, but count against `max_resources`.
pub const WASI_RESOURCE_BYTES: u64 = 256;
/// What an instance costs the host besides what it asks for: its store, its instance
/// records, its stdout and stderr line and tail buffers.
pub const INSTANCE_BYTES: u64 = 1 << 20;

/// [`worst_case_host_memory`] written out, for people.
pub const WORST_CASE_FORMULA: &str = "memory_mib + 8 B x max_table_elements \
    + 2 x host_memory_mib + 1 MiB + dma_memory_mib + 256 B x max_resources + 1 MiB \
    + 272 KiB";

/// The most host memory one instance of `entry` can make the host hold at once, in bytes:
///
/// `memory_mib + 8 B × max_table_elements + 2 × host_memory_mib + MAX_TRANSFER
///  + dma_memory_mib + WASI_RESOURCE_BYTES × max_resources + INSTANCE_BYTES
///  + KEPT_MESSAGE_BYTES`
///
/// Its linear memories and tables; what the host keeps for it (its host-memory budget), and as
/// much again between two safe points: the data the host lifts from it in one go is bounded
/// by what its budget has left (wasmtime's hostcall fuel), and an import's own copies by
/// [`MAX_TRANSFER`](crate::imports::MAX_TRANSFER); its DMA memory; WASI's own resources
/// (pollables, stream handles) on the threads that serve them; the instance's output
/// buffers; the failure messages its events carry, which programs may keep (interned, at most
/// 256 of 1 KiB: `state::messages`). With the ledger installed (`crate::ledger`) the host-memory budget counts every
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
        + crate::state::KEPT_MESSAGE_BYTES
}

/// A compiled, linked plugin, ready to instantiate.
pub(crate) struct LoadedComponent {
    pub pre: InstancePre<PluginState>,
    /// Where its exports are.
    pub exports: ExportIndex,
    /// The `accel:plugin` version the component was built against.
    pub wit_version: String,
    /// The compiler its code came from. Baseline code serves until the optimized code is
    /// compiled; instances started after that get the optimized code.
    pub tier: Tier,
}

pub(crate) struct Runtime {
    /// An engine per [`EngineKind`], in the order of [`EngineKind::ALL`], each made on first
    /// use (the plain optimizing one when the runtime starts).
    flavors: [OnceLock<Result<Flavor, String>>; 4],
    loaded: Mutex<HashMap<LoadKey, Arc<LoadedComponent>>>,
    /// What each engine refused (the cache's `refused/` keeps it across runs). A component
    /// the optimizing engine refused may still run on baseline code, if that compiled.
    refused: Mutex<HashMap<([u8; 32], EngineKind), LoadError>>,
    /// The optimized compiles started in the background for plugins started on baseline
    /// code, by the same key; an ended one keeps its outcome.
    tier_ups: Mutex<HashMap<LoadKey, Arc<TierUp>>>,
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
    match runtime().and_then(|r| {
        r.flavor(EngineKind::optimized(false))
            .map_err(|e| e.to_string())
    }) {
        Ok(flavor) => flavor.allocator.clone(),
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
        .max_memory_size(4 << 30)
        .table_keep_resident(POOL_TABLE_KEEP_RESIDENT);
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
    fn new(kind: EngineKind) -> wasmtime::Result<Flavor> {
        let config = kind.config();
        // The pooling allocator reserves address space for every slot up front (about 4 GiB
        // per memory); where that fails (a `ulimit -v`, a small address space), instances are
        // allocated on demand instead, which only costs instantiation time. Baseline code
        // serves a plugin only until its optimized code is compiled: its engines take no
        // address space for a pool of their own.
        let pool = match kind.tier {
            Tier::Optimized => pool_instances(),
            Tier::Baseline => None,
        };
        let (engine, allocator) = match pool {
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
            None if kind.tier == Tier::Baseline => {
                (Engine::new(&config)?, "on-demand (baseline code)".into())
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
        let runtime = Runtime {
            flavors: Default::default(),
            loaded: Mutex::default(),
            refused: Mutex::default(),
            tier_ups: Mutex::default(),
        };
        let plain = EngineKind::optimized(false);
        let _ = runtime.flavors[plain.index()].set(Ok(Flavor::new(plain)?));
        Ok(runtime)
    }

    fn flavor(&self, kind: EngineKind) -> Result<&Flavor, LoadError> {
        self.flavors[kind.index()]
            .get_or_init(|| {
                Flavor::new(kind)
                    .map_err(|e| format!("cannot start the {} engine: {e:#}", kind.arg()))
            })
            .as_ref()
            .map_err(|e| LoadError::Runtime(e.clone()))
    }

    /// Forgets the compiled and refused plugins held in memory (for benchmarks of a cold
    /// start), once the optimized compiles running in the background ended: one that ended
    /// later would link its code for the next load again.
    #[cfg(feature = "internals")]
    pub fn forget_loaded(&self) {
        let tier_ups: Vec<Arc<TierUp>> = lock(&self.tier_ups).values().cloned().collect();
        for tier_up in tier_ups {
            let _ = tier_up.wait();
        }
        lock(&self.loaded).clear();
        lock(&self.refused).clear();
        lock(&self.tier_ups).clear();
    }

    /// Compiles (or finds in the caches) and links `wasm`, the module of `plugin`, checking
    /// that it is a component built for a compatible `accel:plugin` version. `metered`
    /// compiles it to count fuel. `sha256` is the bytes' digest where it is known already
    /// (an embedded plugin's, from its build), else it is computed. A plugin file has its
    /// compile `limits` and compiles in a worker process if there is one; a built-in plugin
    /// (`None`) compiles in this process. A large plugin file may start on baseline code
    /// (`limits.baseline_first_bytes`). A refusal is remembered by the digest, and nothing
    /// refused is stored in the cache.
    pub fn load(
        &'static self,
        wasm: &[u8],
        sha256: Option<[u8; 32]>,
        plugin: &str,
        cache: &ComponentCache,
        metered: bool,
        limits: Option<CompileLimits>,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        classify(wasm)?;
        let sha: [u8; 32] = sha256.unwrap_or_else(|| Sha256::digest(wasm).into());
        // An optimized compile that failed leaves a large plugin its baseline code, and is
        // not tried again while its limits stand.
        let optimized_refusal = match self.load_compiled(&sha, cache, metered, limits) {
            Ok(Some(loaded)) => return Ok(loaded),
            Ok(None) => None,
            Err(refusal) if refusal.spares_baseline_code() => Some(refusal),
            Err(refusal) => return Err(refusal),
        };
        let tier_up = optimized_refusal.is_none();
        if let Some(loaded) =
            self.load_baseline_first(wasm, sha, plugin, cache, metered, limits, tier_up)
        {
            if let Some(refusal) = &optimized_refusal {
                tracing::warn!(
                    "plugin '{}' runs on baseline code: its optimized compile failed before: \
                     {refusal}",
                    inert(plugin)
                );
            }
            return Ok(loaded);
        }
        if let Some(refusal) = optimized_refusal {
            return Err(refusal);
        }
        let kind = EngineKind::optimized(metered);
        let flavor = self.flavor(kind)?;
        let loaded =
            self.compile(kind, wasm, plugin, limits, cache)
                .and_then(|(component, serialized)| {
                    let loaded = self.link(flavor, component, sha, kind)?;
                    match serialized {
                        Some(code) => cache.store_serialized(&flavor.engine, &sha, &code),
                        None => cache.store(&flavor.engine, &sha, loaded.pre.component()),
                    }
                    Ok(loaded)
                });
        self.remember_outcome(kind, &sha, cache, loaded.as_ref().map(drop));
        loaded
    }

    /// Starts a large plugin file on baseline code at once, and its optimized compile in the
    /// background, in a worker that puts the code into the compile cache (it outlives a
    /// short-lived command, so that the next start finds the optimized code). `None` where
    /// that does not apply (a component under `limits.baseline_first_bytes`, no worker, no
    /// cache directory) or the baseline compile failed (remembered as a refusal by the
    /// baseline engine): the optimized compile then runs at once, and its outcome is the
    /// load's. Without `tier_up`, no optimized compile is started.
    #[allow(clippy::too_many_arguments)]
    fn load_baseline_first(
        &'static self,
        wasm: &[u8],
        sha: [u8; 32],
        plugin: &str,
        cache: &ComponentCache,
        metered: bool,
        limits: Option<CompileLimits>,
        tier_up: bool,
    ) -> Option<Arc<LoadedComponent>> {
        let limits = limits.filter(|l| wasm.len() as u64 >= l.baseline_first_bytes)?;
        let program = worker::program()?;
        cache.dir()?;
        let kind = EngineKind::baseline(metered);
        if let Some(refusal) = self.remembered_refusal(kind, &sha, cache, Some(limits)) {
            tracing::debug!(
                "plugin '{}' is compiled optimized: the baseline compiler refused it: {refusal}",
                inert(plugin)
            );
            return None;
        }
        let loaded = self.flavor(kind).and_then(|flavor| {
            let (component, _) = self.compile(kind, wasm, plugin, Some(limits), cache)?;
            self.link(flavor, component, sha, kind)
        });
        self.remember_outcome(kind, &sha, cache, loaded.as_ref().map(drop));
        let loaded = match loaded {
            Ok(loaded) => loaded,
            Err(err) => {
                tracing::debug!(
                    "plugin '{}' did not compile on the baseline compiler, compiling it \
                     optimized: {err}",
                    inert(plugin)
                );
                return None;
            }
        };
        if tier_up {
            self.tier_up(sha, metered, plugin, &program, wasm, limits, cache);
        }
        Some(loaded)
    }

    /// Starts the optimized compile of a plugin that runs on baseline code, unless one was
    /// started already.
    #[allow(clippy::too_many_arguments)]
    fn tier_up(
        &'static self,
        sha: [u8; 32],
        metered: bool,
        plugin: &str,
        program: &std::path::Path,
        wasm: &[u8],
        limits: CompileLimits,
        cache: &ComponentCache,
    ) {
        let key = (sha, metered);
        let tier_up = Arc::new(TierUp::default());
        {
            let mut tier_ups = lock(&self.tier_ups);
            if tier_ups.contains_key(&key) {
                return;
            }
            tier_ups.insert(key, tier_up.clone());
        }
        let kind = EngineKind::optimized(metered);
        let plugin = plugin.to_string();
        let cache = cache.clone();
        let ending = tier_up.clone();
        let started = worker::compile_into_cache(program, wasm, kind, limits, &cache)
            .map_err(LoadError::Compile)
            .and_then(|worker| {
                tier_up.running(&worker);
                let plugin = plugin.clone();
                std::thread::Builder::new()
                    .name("accelhost-tier-up".into())
                    .spawn(move || {
                        let outcome = worker
                            .wait()
                            .map_err(LoadError::Compile)
                            .and_then(|()| self.take_optimized(&sha, &cache, kind).map(drop));
                        self.remember_outcome(kind, &sha, &cache, outcome.as_ref().map(drop));
                        ending.end(&plugin, outcome);
                    })
                    .map_err(|e| {
                        LoadError::Runtime(format!("cannot start the optimized compile: {e}"))
                    })
            });
        if let Err(err) = started {
            tier_up.end(&plugin, Err(err));
        }
    }

    /// Links the optimized code of `sha` that a worker put into the cache, for the instances
    /// started from now on.
    fn take_optimized(
        &self,
        sha: &[u8; 32],
        cache: &ComponentCache,
        kind: EngineKind,
    ) -> Result<Arc<LoadedComponent>, LoadError> {
        let flavor = self.flavor(kind)?;
        let component = cache.load(&flavor.engine, sha).ok_or_else(|| {
            LoadError::Runtime(
                "its optimized code did not reach the compile cache (see the cache's warnings)"
                    .into(),
            )
        })?;
        self.link(flavor, component, *sha, kind)
    }

    /// Lets the optimized compiles running in the background finish into the compile cache
    /// if this process ends before them: a host that shuts down does (a short-lived command
    /// then leaves the optimized code for its next start); one killed ends them.
    pub fn let_compiles_finish(&self) {
        let tier_ups: Vec<Arc<TierUp>> = lock(&self.tier_ups).values().cloned().collect();
        for tier_up in tier_ups {
            tier_up.let_finish();
        }
    }

    /// Compiles `wasm` for an engine of `kind`: in a worker within `limits` where there is a
    /// worker and limits, else in this process; either takes the code of functions that
    /// earlier compiles made from beside `cache` ([`functions`]). Gives the serialized code
    /// too where the compile made it, to be cached as it is.
    fn compile(
        &self,
        kind: EngineKind,
        wasm: &[u8],
        plugin: &str,
        limits: Option<CompileLimits>,
        cache: &ComponentCache,
    ) -> Result<(Component, Option<Vec<u8>>), LoadError> {
        let flavor = self.flavor(kind)?;
        let invalid = |e: wasmtime::Error| {
            LoadError::Compile(CompileFailure::Invalid {
                message: format!("{e:#}"),
            })
        };
        let (Some(limits), Some(program)) = (limits, worker::program()) else {
            let Some(functions) = FunctionCache::for_compile(cache, kind, wasm.len()) else {
                return compile::in_process(&flavor.engine, wasm, plugin, kind.tier)
                    .map(|component| (component, None))
                    .map_err(invalid);
            };
            let code = compile::announced(plugin, wasm.len(), kind.tier, || {
                functions::precompile(kind, wasm, &functions)
            })
            .map_err(invalid)?;
            // SAFETY: the code was just made in this process by `Engine::precompile_component`
            // with this engine's configuration (`EngineKind::config`, its function cache
            // aside, which changes no code); wasmtime refuses code of another configuration.
            let component =
                unsafe { Component::deserialize(&flavor.engine, &code) }.map_err(invalid)?;
            return Ok((component, Some(code)));
        };
        let functions_beside = FunctionCache::for_compile(cache, kind, wasm.len()).map(|_| cache);
        let code = compile::announced(plugin, wasm.len(), kind.tier, || {
            worker::compile(&program, wasm, kind, limits, functions_beside)
        })
        .map_err(LoadError::Compile)?;
        // SAFETY: the code was made by `Engine::precompile_component` in a compile worker:
        // the executable this host trusts to be its own build (this very executable, or the
        // one `ACCELHOST_COMPILE_WORKER` names, which whoever set the environment vouches
        // for), with this engine's configuration (`engine_config`); wasmtime refuses code of
        // another version or configuration. The worker bounds the compile's time and memory,
        // not the trust: the compiler's output is trusted as it is when it runs in process.
        let component = unsafe { Component::deserialize(&flavor.engine, &code) }.map_err(|e| {
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
        })?;
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
        let in_memory = lock(&self.loaded).get(&key).cloned();
        if let Some(loaded) = in_memory {
            // Baseline code gives way to optimized code in the cache, whoever put it there.
            if loaded.tier == Tier::Baseline
                && let Ok(optimized) =
                    self.take_optimized(sha, cache, EngineKind::optimized(metered))
            {
                return Ok(Some(optimized));
            }
            return Ok(Some(loaded));
        }
        let kind = EngineKind::optimized(metered);
        let refused = lock(&self.refused).get(&(*sha, kind)).cloned();
        if let Some(refusal) = refused.filter(|r| refusals::holds(r, limits)) {
            return Err(LoadError::Remembered(Box::new(refusal)));
        }
        let flavor = self.flavor(kind)?;
        if let Some(component) = cache.load(&flavor.engine, sha) {
            let loaded = self.link(flavor, component, *sha, kind);
            if loaded.is_err() {
                // Stored by a host that cached before linking: refused, and gone.
                cache.forget(&flavor.engine, sha);
            }
            self.remember_outcome(kind, sha, cache, loaded.as_ref().map(drop));
            return loaded.map(Some);
        }
        match self.remembered_refusal(kind, sha, cache, limits) {
            Some(refusal) => Err(refusal),
            None => Ok(None),
        }
    }

    /// The refusal by the engine of `kind` remembered for the wasm with digest `sha` (in
    /// memory, else in the cache's `refused/`), if it still holds for `limits`.
    fn remembered_refusal(
        &self,
        kind: EngineKind,
        sha: &[u8; 32],
        cache: &ComponentCache,
        limits: Option<CompileLimits>,
    ) -> Option<LoadError> {
        let mut refused = lock(&self.refused);
        let refusal = match refused.get(&(*sha, kind)) {
            Some(refusal) => refusal.clone(),
            None => {
                let refusal = refusals::read(cache, &self.flavor(kind).ok()?.engine, sha)?;
                refused.insert((*sha, kind), refusal.clone());
                refusal
            }
        };
        refusals::holds(&refusal, limits).then(|| LoadError::Remembered(Box::new(refusal)))
    }

    /// Remembers a refusal of the wasm with digest `sha` by the engine of `kind` (in memory
    /// and in the cache), or forgets one on success: a refusal the component caused (not one
    /// by the machine, such as a worker that cannot run) is not worth another attempt while
    /// the limits stand.
    fn remember_outcome(
        &self,
        kind: EngineKind,
        sha: &[u8; 32],
        cache: &ComponentCache,
        outcome: Result<(), &LoadError>,
    ) {
        let Ok(flavor) = self.flavor(kind) else {
            return;
        };
        match outcome {
            Ok(()) => {
                if lock(&self.refused).remove(&(*sha, kind)).is_some() {
                    refusals::remove(cache, &flavor.engine, sha);
                }
            }
            Err(refusal) if refusal.is_remembered() => {
                lock(&self.refused).insert((*sha, kind), refusal.clone());
                refusals::write(cache, &flavor.engine, sha, refusal);
            }
            Err(_) => {}
        }
    }

    /// Checks `component`'s interface and links it, and keeps it for the next load of `sha`
    /// (in place of baseline code, if the component ran on that).
    fn link(
        &self,
        flavor: &Flavor,
        component: Component,
        sha: [u8; 32],
        kind: EngineKind,
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
            tier: kind.tier,
        });
        lock(&self.loaded).insert((sha, kind.metered), loaded.clone());
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
fn wit_version(engine: &Engine, component: &Component) -> Result<String, LoadError> {
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
        let mut pooled = EngineKind::optimized(false).config();
        pooled.allocation_strategy(InstanceAllocationStrategy::Pooling(pooling(4)));
        let pooled = Engine::new(&pooled).unwrap();
        let worker = Engine::new(&EngineKind::optimized(false).config()).unwrap();
        assert_eq!(compatibility(&pooled), compatibility(&worker));
        let metered = Engine::new(&EngineKind::optimized(true).config()).unwrap();
        assert_ne!(compatibility(&metered), compatibility(&worker));
        // And the code itself: compiled by one, loaded by the other.
        let code = worker.precompile_component(b"\0asm\x0d\0\x01\0").unwrap();
        // SAFETY: the code was just compiled by this process, for this configuration.
        unsafe { wasmtime::component::Component::deserialize(&pooled, &code) }.unwrap();
    }

    #[test]
    fn baseline_code_does_not_load_into_an_optimizing_engine() {
        let optimized = Engine::new(&EngineKind::optimized(false).config()).unwrap();
        let baseline = Engine::new(&EngineKind::baseline(false).config()).unwrap();
        assert_ne!(compatibility(&optimized), compatibility(&baseline));
        let code = baseline.precompile_component(b"\0asm\x0d\0\x01\0").unwrap();
        // SAFETY: the code was just made by `precompile_component`, for the baseline engine.
        let loaded = unsafe { wasmtime::component::Component::deserialize(&optimized, &code) };
        assert!(
            loaded.is_err(),
            "baseline code loaded into the optimizing engine"
        );
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
        lock(&runtime.refused).remove(&(sha, EngineKind::optimized(false)));
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
        let plain = runtime.flavor(EngineKind::optimized(false)).unwrap();
        refusals::write(&cache, &plain.engine, &sha, &timed_out);
        let limits = |timeout_ms| {
            Some(CompileLimits {
                timeout_ms,
                memory_mib: 1024,
                baseline_first_bytes: u64::MAX,
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
