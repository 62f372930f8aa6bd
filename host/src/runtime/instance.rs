//! One plugin instance: its `Store` (with the limits of its load policy), its WASI context (no
//! files, no network, no environment; output captured), and calls made under a deadline, an
//! optional fuel budget and cancellation. A call that traps, overruns, hits a limit or is
//! cancelled reports a [`CallFailure`]; the caller must then end the instance.

use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::{Store, UpdateDeadline};
use wasmtime_wasi::WasiCtx;

use super::LoadedComponent;
use super::busy::BusyBudget;
use super::fault::classify;
use super::plugin::{Calls, Exports};
use super::stdio::OutputCapture;
use crate::error::FaultCause;
use crate::state::{EPOCH_TICK, HostLimit, Interrupted, PluginContext, PluginLimits, PluginState};

/// The most of a plugin's last output a failure report quotes, in bytes.
const MAX_TAIL: usize = 600;

/// A trap, a deadline overrun, a limit hit or a cancel: the instance is no longer usable.
#[derive(Debug, Clone)]
pub(crate) struct CallFailure {
    /// What happened, for programs.
    pub cause: FaultCause,
    /// What happened, with what the plugin printed last, for people.
    pub reason: String,
}

pub(crate) struct PluginInstance {
    store: Store<PluginState>,
    exports: Exports,
    stderr: OutputCapture,
    stdout: OutputCapture,
    busy: BusyBudget,
    ended: bool,
    /// How long the last call took, from its start to its return.
    last_call: Duration,
}

impl PluginInstance {
    /// Instantiates `loaded` with the limits of `ctx`'s load policy.
    pub fn new(loaded: &LoadedComponent, ctx: Arc<PluginContext>) -> Result<Self, CallFailure> {
        let stdout = OutputCapture::new(&ctx.name, "stdout", ctx.log.clone());
        let stderr = OutputCapture::new(&ctx.name, "stderr", ctx.log.clone());
        // No files, no environment, no arguments, no sockets: a plugin reaches the machine
        // only through the accel:plugin imports (imports/wasi.rs bounds the rest of WASI).
        let wasi = WasiCtx::builder()
            .stdout(stdout.clone())
            .stderr(stderr.clone())
            .allow_tcp(false)
            .allow_udp(false)
            .allow_ip_name_lookup(false)
            .build();
        let limits = PluginLimits::new(&ctx.policy);
        let busy = BusyBudget::new(&ctx.policy, Instant::now());
        let budget = ctx.owner.host.clone();
        // The store, its instance and whatever the plugin's start code asks for are host
        // memory the plugin occupies.
        budget.charge_while(|| Self::instantiate(loaded, ctx, wasi, limits, busy, stdout, stderr))
    }

    fn instantiate(
        loaded: &LoadedComponent,
        ctx: Arc<PluginContext>,
        wasi: WasiCtx,
        limits: PluginLimits,
        busy: BusyBudget,
        stdout: OutputCapture,
        stderr: OutputCapture,
    ) -> Result<Self, CallFailure> {
        let mut store = Store::new(loaded.pre.engine(), PluginState::new(ctx, wasi, limits));
        store.limiter(|state| state.limiter());
        // wasmtime's own count of the handles the plugin holds matches the host's resource
        // table: the plugin meets `max_resources` whichever counts first.
        let max_resources = store.data().ctx.policy.max_resources as usize;
        store.set_max_component_handles(max_resources);
        // Every tick, while wasm runs: stop on a cancel, at the deadline, or when the host
        // holds more for the plugin than its host-memory budget allows (a safe point between
        // the imports that check what they take and the call's return), else go on.
        store.epoch_deadline_callback(|store| {
            let state = store.data();
            if state.ctx.control.is_cancelled(state.call) {
                Err(Interrupted::Cancelled.into())
            } else if Instant::now() >= state.deadline() {
                Err(Interrupted::Deadline.into())
            } else {
                state.ctx.owner.host.check_held().map_err(HostLimit::from)?;
                Ok(UpdateDeadline::Continue(1))
            }
        });
        arm(&mut store);
        let instantiated = loaded
            .pre
            .instantiate(&mut store)
            .and_then(|instance| Exports::new(&loaded.exports, &instance, &mut store))
            .and_then(|exports| {
                let host = &store.data().ctx.owner.host;
                host.check_held().map_err(HostLimit::from)?;
                Ok(exports)
            });
        match instantiated {
            Ok(exports) => Ok(PluginInstance {
                store,
                exports,
                stderr,
                stdout,
                busy,
                ended: false,
                last_call: Duration::ZERO,
            }),
            Err(err) => {
                let failure = describe(err, &store.data().ctx, &stderr, &stdout);
                store.data_mut().release_all("the plugin failed to start");
                Err(failure)
            }
        }
    }

    /// How long the last call took, from its start to its return.
    pub fn last_call_duration(&self) -> Duration {
        self.last_call
    }

    /// Runs one call into the plugin under the per-call deadline, fuel budget and cancel,
    /// and charges its time to the plugin's busy budget. A call that returns later than its
    /// deadline (it sat in host code the epoch cannot interrupt) fails as if interrupted.
    pub fn call<R>(
        &mut self,
        f: impl FnOnce(&mut Calls<'_>) -> wasmtime::Result<R>,
    ) -> Result<R, CallFailure> {
        let started = arm(&mut self.store);
        let id = self.store.data().call;
        let budget = self.store.data().ctx.owner.host.clone();
        let outcome = budget.charge_while(|| {
            f(&mut Calls {
                exports: &self.exports,
                store: &mut self.store,
            })
            // The call's return is the last safe point: what it answered is lifted by now.
            .and_then(|value| {
                budget.check_held().map_err(HostLimit::from)?;
                Ok(value)
            })
        });
        self.store.data().ctx.control.end(id);
        let ended = Instant::now();
        self.last_call = ended.duration_since(started);
        let ctx = self.store.data().ctx.clone();
        // Asked only of a metered store: an unmetered one answers with a formatted error,
        // an allocation on every call.
        if let Some(budget) = ctx.policy.fuel
            && let Ok(left) = self.store.get_fuel()
        {
            ctx.usage.fuel_burned(budget.saturating_sub(left));
        }
        let outcome = outcome.and_then(|value| {
            if ended > self.store.data().deadline() + EPOCH_TICK {
                Err(Interrupted::Deadline.into())
            } else {
                Ok(value)
            }
        });
        let value = outcome.map_err(|err| describe(err, &ctx, &self.stderr, &self.stdout))?;
        if !self.busy.spend(started, ended) {
            let policy = &ctx.policy;
            return Err(CallFailure {
                cause: FaultCause::TimeBudget {
                    percent: policy.busy_percent,
                    window_ms: policy.busy_window_ms,
                },
                reason: format!(
                    "it spent more than {}% of its time in calls over {} ms, keeping its callers \
                     waiting (load_policy.busy_percent, busy_window_ms); this call took {} ms",
                    policy.busy_percent,
                    policy.busy_window_ms,
                    ended.duration_since(started).as_millis()
                ),
            });
        }
        Ok(value)
    }

    /// The calls, made without [`call`](Self::call)'s deadline, fuel, cancel and busy
    /// budget (the raw baseline of the benchmarks).
    #[cfg(feature = "internals")]
    pub fn raw(&mut self) -> Calls<'_> {
        Calls {
            exports: &self.exports,
            store: &mut self.store,
        }
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

/// Starts a call: numbers it, sets its fuel and its hostcall fuel, and fixes its deadline
/// `call_timeout_ms` from now. Returns when it started.
fn arm(store: &mut Store<PluginState>) -> Instant {
    if let Some(fuel) = store.data().ctx.policy.fuel {
        // Only a metered engine counts fuel; `load` made this instance's engine so.
        let _ = store.set_fuel(fuel);
    }
    store.set_epoch_deadline(1);
    // Data lifted from the plugin in one go (an import's arguments, the call's answer) fits
    // in what its host-memory budget has left.
    let left = store.data().ctx.owner.host.left();
    store.set_hostcall_fuel(usize::try_from(left).unwrap_or(usize::MAX));
    let now = Instant::now();
    let state = store.data_mut();
    let call = state.ctx.control.begin();
    state.begin_call(call, now);
    now
}

fn describe(
    err: wasmtime::Error,
    ctx: &PluginContext,
    stderr: &OutputCapture,
    stdout: &OutputCapture,
) -> CallFailure {
    let (cause, mut reason) = classify(&err, &ctx.policy);
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
    CallFailure { cause, reason }
}

impl Drop for PluginInstance {
    fn drop(&mut self) {
        self.release("the plugin instance ended");
    }
}
