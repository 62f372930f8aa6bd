//! One plugin instance: its `Store` (with memory limits), its WASI context (no files, no
//! network, no environment; output captured), and calls made under a deadline. A call that
//! traps or overruns reports a [`CallFailure`]; the caller must then discard the instance.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::{Store, StoreLimitsBuilder, Trap};
use wasmtime_wasi::WasiCtx;

use super::stdio::OutputCapture;
use super::{EPOCH_TICK, LoadedComponent, bindings::Plugin, runtime};
use crate::imports::{PluginContext, PluginState};

/// A trap, a deadline overrun or a limit hit: the instance is no longer usable.
#[derive(Debug, Clone)]
pub(crate) struct CallFailure {
    /// What happened, with what the plugin printed last, for people.
    pub reason: String,
}

pub(crate) struct PluginInstance {
    store: Store<PluginState>,
    plugin: Plugin,
    stderr: OutputCapture,
    stdout: OutputCapture,
    limits: Limits,
}

/// The limits a failure report names.
#[derive(Clone, Copy)]
struct Limits {
    timeout: Duration,
    memory_mib: u64,
}

impl PluginInstance {
    /// Instantiates `loaded` with the limits of `ctx`'s grants.
    pub fn new(loaded: &LoadedComponent, ctx: Arc<PluginContext>) -> Result<Self, CallFailure> {
        let engine = runtime()
            .map_err(|reason| CallFailure { reason })?
            .engine()
            .clone();
        let stdout = OutputCapture::new(&ctx.name, "stdout");
        let stderr = OutputCapture::new(&ctx.name, "stderr");
        // No files, no environment, no arguments, no sockets: a plugin reaches the machine
        // only through the accel:plugin imports.
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let store_limits = StoreLimitsBuilder::new()
            .memory_size((ctx.grants.memory_mib << 20) as usize)
            .table_elements(1 << 16)
            .instances(64)
            .tables(64)
            .memories(16)
            .trap_on_grow_failure(true)
            .build();
        let limits = Limits {
            timeout: Duration::from_millis(ctx.grants.call_timeout_ms),
            memory_mib: ctx.grants.memory_mib,
        };
        let mut store = Store::new(&engine, PluginState::new(ctx, wasi, store_limits));
        store.limiter(|state| state.limiter());
        arm(&mut store, limits.timeout);
        match loaded.pre.instantiate(&mut store) {
            Ok(plugin) => Ok(PluginInstance {
                store,
                plugin,
                stderr,
                stdout,
                limits,
            }),
            Err(err) => Err(describe(err, limits, &stderr, &stdout)),
        }
    }

    /// Runs one call into the plugin under the per-call deadline.
    pub fn call<R>(
        &mut self,
        f: impl FnOnce(&Plugin, &mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallFailure> {
        arm(&mut self.store, self.limits.timeout);
        f(&self.plugin, &mut self.store)
            .map_err(|err| describe(err, self.limits, &self.stderr, &self.stdout))
    }
}

/// Sets the epoch deadline (rounded up to whole ticks, plus one for the tick in progress)
/// and the wall-clock deadline host-side waits respect.
fn arm(store: &mut Store<PluginState>, timeout: Duration) {
    let ticks = timeout.as_millis().div_ceil(EPOCH_TICK.as_millis()) as u64 + 1;
    store.set_epoch_deadline(ticks);
    store.data_mut().deadline = Instant::now() + timeout;
}

fn describe(
    err: wasmtime::Error,
    limits: Limits,
    stderr: &OutputCapture,
    stdout: &OutputCapture,
) -> CallFailure {
    let root = err.root_cause().to_string();
    let mut reason = match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => format!(
            "it ran past its {} ms call deadline (grants.call_timeout_ms)",
            limits.timeout.as_millis()
        ),
        Some(trap) => format!("wasm trap: {trap}"),
        None if root.contains("growing memory") || root.contains("exceeds limit") => format!(
            "it hit its memory limit of {} MiB (grants.memory_mib): {root}",
            limits.memory_mib
        ),
        None => root,
    };
    for (name, capture) in [("stderr", stderr), ("stdout", stdout)] {
        let tail = capture.tail();
        if !tail.is_empty() {
            let last: Vec<&str> = tail.lines().rev().take(6).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            reason.push_str(&format!("; its {name} ends with: {}", last.join(" | ")));
            break;
        }
    }
    CallFailure { reason }
}
