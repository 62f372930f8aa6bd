//! One plugin instance: its `Store` (with the limits of its load policy), its WASI context (no
//! files, no network, no environment; output captured), and calls made under a deadline, an
//! optional fuel budget and cancellation. A call that traps, overruns, hits a limit or is
//! cancelled reports a [`CallFailure`]; the caller must then end the instance.

use std::sync::Arc;
use std::time::Instant;

use wasmtime::component::ResourceTableError;
use wasmtime::{Store, StoreLimitsBuilder, Trap, UpdateDeadline};
use wasmtime_wasi::WasiCtx;

use super::control::Interrupted;
use super::stdio::OutputCapture;
use super::{LoadedComponent, bindings::Plugin};
use crate::config::LoadPolicy;
use crate::imports::{PluginContext, PluginState};

/// The most of a plugin's last output a failure report quotes, in bytes.
const MAX_TAIL: usize = 600;

/// A trap, a deadline overrun, a limit hit or a cancel: the instance is no longer usable.
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
    ended: bool,
}

impl PluginInstance {
    /// Instantiates `loaded` with the limits of `ctx`'s load policy.
    pub fn new(loaded: &LoadedComponent, ctx: Arc<PluginContext>) -> Result<Self, CallFailure> {
        let stdout = OutputCapture::new(&ctx.name, "stdout", ctx.log.clone());
        let stderr = OutputCapture::new(&ctx.name, "stderr", ctx.log.clone());
        // No files, no environment, no arguments, no sockets: a plugin reaches the machine
        // only through the accel:plugin imports.
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let policy = &ctx.policy;
        let store_limits = StoreLimitsBuilder::new()
            .memory_size((policy.memory_mib << 20) as usize)
            .table_elements(policy.max_table_elements as usize)
            .instances(policy.max_instances as usize)
            .tables(policy.max_instances as usize)
            .memories(policy.max_instances as usize)
            .trap_on_grow_failure(true)
            .build();
        let mut store = Store::new(
            loaded.pre.engine(),
            PluginState::new(ctx, wasi, store_limits),
        );
        store.limiter(|state| state.limiter());
        // Every tick, while wasm runs: stop on a cancel or at the deadline, else go on.
        store.epoch_deadline_callback(|store| {
            let state = store.data();
            if state.ctx.control.is_cancelled(state.call) {
                Err(Interrupted::Cancelled.into())
            } else if Instant::now() >= state.deadline() {
                Err(Interrupted::Deadline.into())
            } else {
                Ok(UpdateDeadline::Continue(1))
            }
        });
        arm(&mut store);
        match loaded.pre.instantiate(&mut store) {
            Ok(plugin) => Ok(PluginInstance {
                store,
                plugin,
                stderr,
                stdout,
                ended: false,
            }),
            Err(err) => {
                let failure = describe(err, &store.data().ctx.policy, &stderr, &stdout);
                store.data_mut().release_all("the plugin failed to start");
                Err(failure)
            }
        }
    }

    /// Runs one call into the plugin under the per-call deadline, fuel budget and cancel.
    pub fn call<R>(
        &mut self,
        f: impl FnOnce(&Plugin, &mut Store<PluginState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallFailure> {
        arm(&mut self.store);
        let id = self.store.data().call;
        let outcome = f(&self.plugin, &mut self.store);
        self.store.data().ctx.control.end(id);
        outcome.map_err(|err| {
            describe(
                err,
                &self.store.data().ctx.policy,
                &self.stderr,
                &self.stdout,
            )
        })
    }

    /// The bindings and the store, for calls made without [`call`](Self::call)'s deadline,
    /// fuel and cancel (the raw baseline of the benchmarks).
    pub fn raw(&mut self) -> (&Plugin, &mut Store<PluginState>) {
        (&self.plugin, &mut self.store)
    }

    /// Releases everything the instance holds, failing its pending work with `why`.
    pub fn end(mut self, why: &str) {
        self.release(why);
    }

    fn release(&mut self, why: &str) {
        if !std::mem::replace(&mut self.ended, true) {
            self.store.data_mut().release_all(why);
        }
    }
}

/// Starts a call: numbers it, and sets its fuel; its deadline is fixed at its first epoch
/// tick (so a call overruns `call_timeout_ms` by at most two ticks), which spares every call
/// a clock read.
fn arm(store: &mut Store<PluginState>) {
    if let Some(fuel) = store.data().ctx.policy.fuel {
        // Only a metered engine counts fuel; `load` made this instance's engine so.
        let _ = store.set_fuel(fuel);
    }
    store.set_epoch_deadline(1);
    let state = store.data_mut();
    let call = state.ctx.control.begin();
    state.begin_call(call);
}

fn describe(
    err: wasmtime::Error,
    policy: &LoadPolicy,
    stderr: &OutputCapture,
    stdout: &OutputCapture,
) -> CallFailure {
    let mut reason = explain(&err, policy);
    for (name, capture) in [("stderr", stderr), ("stdout", stdout)] {
        let tail = capture.tail();
        if !tail.is_empty() {
            let last: Vec<&str> = tail.lines().rev().take(6).collect();
            let last: Vec<&str> = last.into_iter().rev().collect();
            let last = last.join(" | ");
            let start = last.ceil_char_boundary(last.len().saturating_sub(MAX_TAIL));
            reason.push_str(&format!("; its {name} ends with: {}", &last[start..]));
            break;
        }
    }
    CallFailure { reason }
}

impl Drop for PluginInstance {
    fn drop(&mut self) {
        self.release("the plugin instance ended");
    }
}

/// What went wrong, naming the limit and the `load_policy` field when one was hit.
fn explain(err: &wasmtime::Error, policy: &LoadPolicy) -> String {
    let root = err.root_cause().to_string();
    if let Some(interrupted) = err.downcast_ref::<Interrupted>() {
        return match interrupted {
            Interrupted::Deadline => format!(
                "it ran past its {} ms call deadline (load_policy.call_timeout_ms)",
                policy.call_timeout_ms
            ),
            Interrupted::Cancelled => "the call was cancelled from another thread".into(),
        };
    }
    if let Some(ResourceTableError::Full) = err.downcast_ref::<ResourceTableError>() {
        return format!(
            "it holds more than {} host resources (load_policy.max_resources)",
            policy.max_resources
        );
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => format!(
            "it used up its fuel of {} per call (load_policy.fuel)",
            policy.fuel.unwrap_or_default()
        ),
        Some(Trap::StackOverflow) => "wasm trap: call stack exhausted (deep recursion)".into(),
        Some(trap) => trap.to_string(),
        None if root.contains("memory") && root.contains("grow") => format!(
            "it hit its memory limit of {} MiB (load_policy.memory_mib): {root}",
            policy.memory_mib
        ),
        None if root.contains("table") && root.contains("grow") => format!(
            "it hit its table limit of {} elements (load_policy.max_table_elements): {root}",
            policy.max_table_elements
        ),
        None if root.contains("count too high") || root.contains("exceeds limit") => format!(
            "it hit a resource limit (load_policy.max_instances is {}): {root}",
            policy.max_instances
        ),
        None => root,
    }
}
