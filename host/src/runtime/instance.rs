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
    timeout: Duration,
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
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .build();
        let limits = StoreLimitsBuilder::new()
            .memory_size((ctx.grants.memory_mib << 20) as usize)
            .table_elements(1 << 16)
            .instances(64)
            .tables(64)
            .memories(16)
            .trap_on_grow_failure(true)
            .build();
        let timeout = Duration::from_millis(ctx.grants.call_timeout_ms);
        let mut store = Store::new(&engine, PluginState::new(ctx, wasi, limits));
        store.limiter(|state| state.limiter());
        let mut instance = None;
        let mut failure = None;
        arm(&mut store, timeout);
        match loaded.pre.instantiate(&mut store) {
            Ok(plugin) => instance = Some(plugin),
            Err(err) => failure = Some(err),
        }
        match (instance, failure) {
            (Some(plugin), _) => Ok(PluginInstance {
                store,
                plugin,
                stderr,
                stdout,
                timeout,
            }),
            (None, Some(err)) => Err(describe(err, timeout, &stderr, &stdout)),
            (None, None) => unreachable!("instantiate returns a plugin or an error"),
        }
    }

    /// Runs one call into the plugin under the per-call deadline.
    pub fn call<R>(
        &mut self,
        f: impl FnOnce(&Plugin, &mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallFailure> {
        arm(&mut self.store, self.timeout);
        f(&self.plugin, &mut self.store)
            .map_err(|err| describe(err, self.timeout, &self.stderr, &self.stdout))
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
    timeout: Duration,
    stderr: &OutputCapture,
    stdout: &OutputCapture,
) -> CallFailure {
    let mut reason = match err.downcast_ref::<Trap>() {
        Some(Trap::Interrupt) => format!(
            "it ran past its {} ms call deadline (grants.call_timeout_ms)",
            timeout.as_millis()
        ),
        Some(trap) => format!("wasm trap: {trap}"),
        None => {
            let text = format!("{err:#}");
            if text.contains("exceeds limit") || text.contains("memory") && text.contains("limit") {
                format!("it hit its memory limit (grants.memory_mib): {text}")
            } else {
                text
            }
        }
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
