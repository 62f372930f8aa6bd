//! The plugin manager: starts every listed plugin (reporting the ones that fail, by policy),
//! dispatches calls to them under their lock, ends an instance that faults (releasing all it
//! held and revoking its leases), restarts it by its load policy, and keeps the table of open
//! handles.

mod deadlines;
pub(crate) mod handles;
pub(crate) mod lease;
mod stats;

pub use stats::{CallFigures, DURATION_BUCKETS};
use stats::{CallStats, Ended};

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::config::{Config, Grants, LoadPolicy, ModuleSource, OnFault, OnLoadError, PluginEntry};
use crate::devices::{Completion, DeviceRegistry, Owner, lock};
use crate::error::{Error, ErrorCode, FaultCause, REMEMBERED, TrapKind};
use crate::family::Catalog;
use crate::files;
use crate::runtime::plugin::{Answer, Calls};
use crate::runtime::{
    CallFailure, CompileLimits, CompileWatch, ComponentCache, FileIdentity, LoadError,
    LoadedComponent, PluginInstance, Tier, runtime,
};
use crate::state::{CallControl, FailureMessages, LogBudget, PluginContext, Shared, Usage};
use crate::text::inert;
use crate::trace;
use accelhost_trust::{self as trust, Provenance, Signer, TrustError};
use deadlines::{EventDeadlines, Expired, Expiry};
use handles::{HandleKey, HandleTable};
use lease::Lease;

/// The longest wait between restarts, however many came before.
const MAX_BACKOFF: Duration = Duration::from_secs(60);

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
    /// It faulted (a trap, a deadline overrun, a limit hit, an out-of-bounds answer or a
    /// cancel); its instance was ended and a fresh one starts after the backoff.
    Restarting {
        /// Why it faulted, for programs.
        #[serde(flatten)]
        cause: FaultCause,
        /// The call it faulted in and why, as `in <call>: <what happened>`.
        reason: String,
        /// Which restart this is, counting from 1.
        attempt: u32,
        /// `load_policy.max_restarts`.
        max_restarts: u32,
        /// How long the restart waits, in milliseconds.
        backoff_ms: u64,
    },
    /// It faulted and stays stopped: its policy says `disable`, or it used up its restarts.
    Faulted {
        /// Why it faulted, for programs.
        #[serde(flatten)]
        cause: FaultCause,
        /// The call it faulted in and why, as `in <call>: <what happened>`, and why it was
        /// not restarted.
        reason: String,
    },
    /// Its component is still compiling, past the few seconds a start waits for it; the other
    /// plugins are served meanwhile, and it starts when the compile ends.
    Loading,
    /// The host shut it down.
    Stopped,
}

impl fmt::Display for PluginStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PluginStatus::Running => f.write_str("running"),
            PluginStatus::Disabled => f.write_str("disabled"),
            PluginStatus::LoadFailed { reason } => write!(f, "failed to load: {}", inert(reason)),
            PluginStatus::Restarting {
                reason,
                attempt,
                max_restarts,
                backoff_ms,
                ..
            } => write!(
                f,
                "restarting (attempt {attempt} of {max_restarts}, after {backoff_ms} ms) after a \
                 fault {}",
                inert(reason)
            ),
            PluginStatus::Faulted { reason, .. } => write!(f, "faulted: {}", inert(reason)),
            PluginStatus::Loading => {
                f.write_str("loading: its component is still compiling (it starts when done)")
            }
            PluginStatus::Stopped => f.write_str("stopped"),
        }
    }
}

/// A live instance and the lease everything handed out from it holds.
struct Live {
    instance: PluginInstance,
    generation: u64,
    lease: Arc<Lease>,
    /// `configure` and `initialize` succeeded; a fault before that is a failed start, not a
    /// fault to restart from.
    started: bool,
}

/// Identifies the instance a call ran in.
#[derive(Clone)]
pub(crate) struct Ticket {
    pub generation: u64,
    pub lease: Arc<Lease>,
}

struct SlotState {
    status: PluginStatus,
    wit_version: Option<String>,
    /// The compiler of the latest instance's code.
    code: Option<Tier>,
    /// The optional interfaces its module exports.
    capabilities: Vec<&'static str>,
    /// Who made the loaded component, as its signature tells.
    provenance: Provenance,
    restarts: u32,
    /// The budgets of the latest instance (what it still holds is charged to them).
    owner: Option<Owner>,
}

/// One entry of the plugin list and its instance, if it runs.
pub(crate) struct PluginSlot {
    pub entry: PluginEntry,
    devices: Arc<DeviceRegistry>,
    cache: ComponentCache,
    catalog: Catalog,
    me: Weak<PluginSlot>,
    control: Arc<CallControl>,
    usage: Arc<Usage>,
    log: LogBudget,
    live: Mutex<Option<Live>>,
    state: Mutex<SlotState>,
    shut_down: AtomicBool,
    /// The generation of the live instance (0 when none), and the handles open on it.
    generation: AtomicU64,
    open_handles: AtomicU32,
    /// What its calls did, over every instance.
    stats: CallStats,
    /// The events it handed out that are still pending, each until its deadline.
    deadlines: EventDeadlines,
    /// The failure messages its events carry, over every instance.
    messages: Arc<FailureMessages>,
    /// Set when the host shuts down: a compile of its module still running is given up.
    abandon_compile: Arc<AtomicBool>,
}

fn next_generation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl PluginSlot {
    /// What the plugin's instances, and the regions it mapped, used.
    pub(crate) fn usage(&self) -> &Arc<Usage> {
        &self.usage
    }

    pub(crate) fn new(
        entry: PluginEntry,
        devices: Arc<DeviceRegistry>,
        cache: ComponentCache,
        catalog: Catalog,
        count_calls: bool,
    ) -> Arc<Self> {
        let status = if entry.enabled {
            PluginStatus::Stopped
        } else {
            PluginStatus::Disabled
        };
        let log = LogBudget::new(entry.load_policy.log_bytes_per_second);
        let messages = Arc::new(FailureMessages::new(&entry.name));
        Arc::new_cyclic(|me| PluginSlot {
            entry,
            devices,
            cache,
            catalog,
            me: me.clone(),
            control: Arc::default(),
            usage: Arc::default(),
            log,
            live: Mutex::new(None),
            state: Mutex::new(SlotState {
                status,
                wit_version: None,
                code: None,
                capabilities: Vec::new(),
                provenance: Provenance::Unknown,
                restarts: 0,
                owner: None,
            }),
            shut_down: AtomicBool::new(false),
            generation: AtomicU64::new(0),
            open_handles: AtomicU32::new(0),
            stats: CallStats::counting(count_calls),
            deadlines: EventDeadlines::default(),
            messages,
            abandon_compile: Arc::default(),
        })
    }

    pub fn name(&self) -> &str {
        &self.entry.name
    }

    pub fn policy(&self) -> &LoadPolicy {
        &self.entry.load_policy
    }

    pub fn status(&self) -> PluginStatus {
        lock(&self.state).status.clone()
    }

    fn set_status(&self, status: PluginStatus) {
        lock(&self.state).status = status;
    }

    fn load_error(&self, reason: impl Into<String>) -> Error {
        Error::Load {
            plugin: self.entry.name.clone(),
            module: self.entry.module_text.clone(),
            reason: reason.into(),
        }
    }

    /// [`start`](Self::start), calling `on_long` if a compile of the plugin's file takes long
    /// (a built-in plugin is always waited for). A plugin the host shut down meanwhile is not
    /// left running, and its compile is given up.
    fn start_telling(&self, on_long: Box<dyn Fn() + Send + Sync>) -> Result<(), Error> {
        let result = match self.entry.module {
            ModuleSource::Builtin(_) => self.start(),
            _ => {
                let watch = Arc::new(CompileWatch {
                    on_long,
                    abandoned: self.abandon_compile.clone(),
                });
                crate::runtime::watching_compiles(watch, || self.start())
            }
        };
        if result.is_ok() && self.shut_down.load(Ordering::Acquire) {
            self.discard_live("the host shut down while the plugin started");
            self.set_status(PluginStatus::Stopped);
        }
        result
    }

    /// Shows the plugin as loading while its start still runs; false if the start ended.
    fn mark_loading(&self) -> bool {
        let mut state = lock(&self.state);
        if state.status != PluginStatus::Stopped {
            return false;
        }
        state.status = PluginStatus::Loading;
        true
    }

    /// Loads, instantiates, configures and initializes the plugin. On failure nothing is
    /// left running and the status says why.
    pub(crate) fn start(&self) -> Result<(), Error> {
        let result = self.try_start();
        if let Err(err) = &result {
            self.discard_live("the plugin failed to start");
            self.set_status(PluginStatus::LoadFailed {
                reason: reason_of(err),
            });
        }
        result
    }

    fn try_start(&self) -> Result<(), Error> {
        let (loaded, provenance) = load_module(&self.entry, &self.cache, &self.catalog)?;
        {
            let mut state = lock(&self.state);
            state.provenance = provenance;
            state.wit_version = Some(loaded.wit_version.clone());
            state.code = Some(loaded.tier);
            state.capabilities = loaded.exports.optional_exports();
        }
        let ctx = PluginContext::new(
            &self.entry.name,
            &self.entry.grants,
            self.entry.load_policy,
            self.devices.clone(),
            Shared {
                log: self.log.clone(),
                control: self.control.clone(),
                usage: self.usage.clone(),
                messages: self.messages.clone(),
                catalog: self.catalog,
            },
        );
        lock(&self.state).owner = Some(ctx.owner.clone());
        let instance = PluginInstance::new(&loaded, ctx)
            .map_err(|f| self.load_error(format!("instantiating it failed: {}", f.reason)))?;
        let generation = next_generation();
        *lock(&self.live) = Some(Live {
            instance,
            generation,
            lease: Lease::new(),
            started: false,
        });
        let config = self.entry.config.to_string();
        let explain = |step: &str, err: Error| match err {
            Error::Plugin { code, message, .. } => {
                self.load_error(format!("{step} refused ({code}): {message}"))
            }
            Error::Faulted { reason, .. } => self.load_error(format!("{step} faulted: {reason}")),
            other => other,
        };
        self.call("configure", None, format_args!("{config}"), |p| {
            p.configure(&config)
        })
        .map_err(|e| explain("configure", e))?;
        self.call("initialize", None, format_args!(""), |p| p.initialize())
            .map_err(|e| explain("initialize", e))?;
        let mut live = lock(&self.live);
        let live = live
            .as_mut()
            .ok_or_else(|| self.load_error("it was stopped while starting"))?;
        live.started = true;
        self.open_handles.store(0, Ordering::Release);
        self.generation.store(generation, Ordering::Release);
        self.set_status(PluginStatus::Running);
        Ok(())
    }

    /// Ends the live instance, if any, releasing what it held.
    fn discard_live(&self, why: &str) {
        if let Some(live) = lock(&self.live).take() {
            self.generation.store(0, Ordering::Release);
            live.lease.revoke(why);
            live.instance.end(why);
        }
    }

    /// Calls `finalize` and ends the instance; no restart follows.
    pub(crate) fn stop(&self) {
        self.shut_down.store(true, Ordering::Release);
        self.abandon_compile.store(true, Ordering::Release);
        // A restart may be running `configure`: end it now rather than at its deadline.
        self.control.cancel();
        let running = lock(&self.live).as_ref().is_some_and(|l| l.started);
        let finalized =
            running.then(|| self.call("finalize", None, format_args!(""), |p| p.finalize()));
        if let Some(Err(err)) = finalized {
            tracing::warn!(plugin = self.name(), "finalize: {err}");
        }
        let why = format!("the host shut plugin '{}' down", self.name());
        if lock(&self.live).is_some() {
            self.discard_live(&why);
            self.set_status(PluginStatus::Stopped);
        }
    }

    /// Stops the call running in the plugin, if any, from another thread. The call fails
    /// with [`Error::Faulted`] and the instance ends (a call stopped half-way leaves it in
    /// an unknown state); the load policy decides about a restart.
    pub fn cancel(&self) -> bool {
        self.control.cancel()
    }

    /// Runs one call into the plugin. A plugin error becomes [`Error::Plugin`]; a trap,
    /// deadline overrun, limit hit or cancel ends the instance and becomes
    /// [`Error::Faulted`]. With `generation`, the call is refused unless that instance is
    /// still the one running.
    pub fn call<R: fmt::Debug>(
        &self,
        call: &'static str,
        generation: Option<u64>,
        args: fmt::Arguments<'_>,
        f: impl FnOnce(&mut Calls<'_>) -> wasmtime::Result<Answer<R>>,
    ) -> Result<R, Error> {
        self.dispatch(call, generation, args, f, Ok, |_| ())
            .map(|(value, ())| value)
    }

    /// Like [`call`](Self::call), also telling which instance answered; `accept` turns the
    /// answer into what the host keeps, and its refusal (an answer out of bounds) ends the
    /// instance like a fault.
    pub fn call_in<R: fmt::Debug, T>(
        &self,
        call: &'static str,
        generation: Option<u64>,
        args: fmt::Arguments<'_>,
        f: impl FnOnce(&mut Calls<'_>) -> wasmtime::Result<Answer<R>>,
        accept: impl FnOnce(R) -> Result<T, String>,
    ) -> Result<(T, Ticket), Error> {
        self.dispatch(call, generation, args, f, accept, |live| Ticket {
            generation: live.generation,
            lease: live.lease.clone(),
        })
    }

    /// The body of [`call`](Self::call) and [`call_in`](Self::call_in); `keep` takes what the
    /// caller needs of the instance that answered (a plain call needs nothing, and saves
    /// the lease's reference count traffic).
    fn dispatch<R: fmt::Debug, T, K>(
        &self,
        call: &'static str,
        generation: Option<u64>,
        args: fmt::Arguments<'_>,
        f: impl FnOnce(&mut Calls<'_>) -> wasmtime::Result<Answer<R>>,
        accept: impl FnOnce(R) -> Result<T, String>,
        keep: impl FnOnce(&Live) -> K,
    ) -> Result<(T, K), Error> {
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
        let outcome = trace::export(self.name(), call, args, || live.instance.call(f));
        let took = live.instance.last_call_duration();
        let failure = match outcome {
            Ok(Ok(value)) => match accept(value) {
                Ok(kept) => {
                    self.stats.record(call, took, Ended::Answered);
                    return Ok((kept, keep(live)));
                }
                Err(why) => CallFailure {
                    cause: FaultCause::RefusedAnswer,
                    reason: format!("its answer was refused: {why}"),
                },
            },
            Ok(Err(refusal)) => {
                self.stats.record(call, took, Ended::Refused(refusal.code));
                return Err(refusal.into_error(&self.entry.name, call));
            }
            Err(failure) => failure,
        };
        self.stats
            .record(call, took, Ended::Faulted(failure.cause.name()));
        let live = guard.take().expect("checked above");
        Err(self.fault(guard, live, call, failure))
    }

    /// Ends `live`, which faulted in `call` (its lock is `guard`, released here), and returns
    /// the error callers see.
    fn fault(
        &self,
        guard: std::sync::MutexGuard<'_, Option<Live>>,
        live: Live,
        call: &'static str,
        failure: CallFailure,
    ) -> Error {
        if live.started {
            // Callers that find no instance from now on see why, even before the release ends.
            self.set_status(PluginStatus::Faulted {
                cause: failure.cause.clone(),
                reason: format!("in {call}: {}", failure.reason),
            });
        }
        drop(guard);
        self.end_faulted(live, call, &failure);
        Error::Faulted {
            plugin: self.entry.name.clone(),
            call,
            cause: failure.cause,
            reason: failure.reason,
        }
    }

    /// Watches `completion`, an event instance `generation` handed out, failing it and
    /// faulting the instance if it is still pending after `load_policy.event_deadline_ms`.
    pub(crate) fn watch_event(self: &Arc<Self>, completion: &Arc<Completion>, generation: u64) {
        let due = Instant::now() + Duration::from_millis(self.policy().event_deadline_ms);
        EventDeadlines::watch(self, completion, generation, due);
    }

    /// Ends an instance that faulted: its leases are revoked first, so that applications
    /// stop using what it handed out, then everything it held is released, then the load
    /// policy decides about a restart.
    fn end_faulted(&self, live: Live, call: &str, failure: &CallFailure) {
        tracing::error!(
            plugin = self.name(),
            call,
            cause = failure.cause.name(),
            "plugin faulted: {}",
            inert(&failure.reason)
        );
        self.generation.store(0, Ordering::Release);
        let why = format!("plugin '{}' faulted in {call} and was stopped", self.name());
        live.lease.revoke(why.clone());
        live.instance.end(&why);
        if live.started {
            self.after_fault(
                failure.cause.clone(),
                format!("in {call}: {}", failure.reason),
            );
        }
    }

    /// Schedules a restart, or leaves the plugin stopped, as its policy says.
    fn after_fault(&self, cause: FaultCause, reason: String) {
        let policy = *self.policy();
        let mut state = lock(&self.state);
        if self.shut_down.load(Ordering::Acquire) {
            state.status = PluginStatus::Stopped;
            return;
        }
        if policy.on_fault == OnFault::Disable {
            state.status = PluginStatus::Faulted {
                cause,
                reason: format!("{reason}; not restarted (load_policy.on_fault is \"disable\")"),
            };
            return;
        }
        if state.restarts >= policy.max_restarts {
            state.status = PluginStatus::Faulted {
                cause,
                reason: format!(
                    "{reason}; not restarted: it already restarted {} times \
                     (load_policy.max_restarts)",
                    state.restarts
                ),
            };
            return;
        }
        state.restarts += 1;
        let attempt = state.restarts;
        let backoff = Duration::from_millis(policy.restart_backoff_ms)
            .saturating_mul(1 << (attempt - 1).min(16))
            .min(MAX_BACKOFF);
        state.status = PluginStatus::Restarting {
            cause,
            reason,
            attempt,
            max_restarts: policy.max_restarts,
            backoff_ms: backoff.as_millis() as u64,
        };
        drop(state);
        let me = self.me.clone();
        let spawned = std::thread::Builder::new()
            .name("accelhost-restart".into())
            .spawn(move || {
                std::thread::sleep(backoff);
                if let Some(slot) = me.upgrade() {
                    slot.restart();
                }
            });
        if let Err(err) = spawned {
            let mut state = lock(&self.state);
            if let PluginStatus::Restarting { cause, .. } = &state.status {
                state.status = PluginStatus::Faulted {
                    cause: cause.clone(),
                    reason: format!("cannot schedule its restart: {err}"),
                };
            }
        }
    }

    /// Starts a fresh instance after a fault; a restart that fails counts as another fault.
    fn restart(&self) {
        if self.shut_down.load(Ordering::Acquire)
            || !matches!(self.status(), PluginStatus::Restarting { .. })
        {
            return;
        }
        match self.try_start() {
            Ok(()) if self.shut_down.load(Ordering::Acquire) => {
                self.discard_live("the host shut down while the plugin restarted");
                self.set_status(PluginStatus::Stopped);
            }
            Ok(()) => tracing::info!(plugin = self.name(), "plugin restarted"),
            Err(err) => {
                self.discard_live("the plugin failed to restart");
                let cause = err.fault_cause().cloned().unwrap_or(FaultCause::Trap {
                    kind: TrapKind::Other,
                    trap: "its restart failed".into(),
                });
                self.after_fault(cause, format!("in its restart: {}", reason_of(&err)));
            }
        }
    }

    /// Counts a handle opened on instance `generation`, refusing it past
    /// `load_policy.max_handles`.
    fn count_handle(&self, generation: u64) -> Result<(), Error> {
        let max = self.policy().max_handles;
        let counted = self
            .open_handles
            .try_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            });
        match counted {
            Ok(_) if self.generation.load(Ordering::Acquire) == generation => Ok(()),
            Ok(_) => {
                self.uncount_handle(generation);
                Err(Error::Stale {
                    what: "token",
                    why: format!("plugin '{}' faulted while it was opened", self.name()),
                })
            }
            Err(_) => Err(Error::Plugin {
                plugin: self.name().to_string(),
                call: "open",
                code: ErrorCode::NoSpace,
                message: format!(
                    "{max} handles are already open on this plugin (load_policy.max_handles)"
                ),
            }),
        }
    }

    fn uncount_handle(&self, generation: u64) {
        if self.generation.load(Ordering::Acquire) == generation {
            let _ = self
                .open_handles
                .try_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1));
        }
    }
}

impl Expiry for PluginSlot {
    fn deadlines(&self) -> &EventDeadlines {
        &self.deadlines
    }

    fn expired_message(&self) -> Arc<str> {
        format!(
            "plugin '{}' did not complete the event within {} ms \
             (load_policy.event_deadline_ms); the host failed it and ended the instance",
            self.name(),
            self.policy().event_deadline_ms
        )
        .into()
    }

    /// Faults each instance whose events expired, if it still runs: on a thread of its own,
    /// since a call running in it holds its lock until that call's deadline.
    fn expired(self: Arc<Self>, expired: Vec<Expired>) {
        let mut generations: Vec<u64> = expired.iter().map(|e| e.generation).collect();
        generations.dedup();
        let spawned = std::thread::Builder::new()
            .name("accelhost-event-fault".into())
            .spawn(move || {
                for generation in generations {
                    self.fault_expired(generation);
                }
            });
        if let Err(err) = spawned {
            tracing::error!("cannot fault a plugin whose events expired: {err}");
        }
    }
}

impl PluginSlot {
    /// Ends instance `generation`, if it still runs, for an event it left pending past its
    /// deadline.
    fn fault_expired(&self, generation: u64) {
        let deadline_ms = self.policy().event_deadline_ms;
        let mut guard = lock(&self.live);
        let Some(live) = guard.take_if(|live| live.generation == generation) else {
            return;
        };
        const CALL: &str = "event-deadline";
        self.stats
            .record(CALL, Duration::ZERO, Ended::Faulted("event-deadline"));
        let failure = CallFailure {
            cause: FaultCause::EventDeadline { deadline_ms },
            reason: format!(
                "an event it handed out was still pending after {deadline_ms} ms \
                 (load_policy.event_deadline_ms)"
            ),
        };
        drop(self.fault(guard, live, CALL, failure));
    }
}

/// The reason inside a load error, or the whole error.
fn reason_of(err: &Error) -> String {
    match err {
        Error::Load { reason, .. } => reason.clone(),
        Error::Compile {
            cause, remembered, ..
        } => format!("{cause}{}", cause.remembered_note(*remembered)),
        other => other.to_string(),
    }
}

/// Reads, checks the signature of, compiles (or finds in the caches) and links the module of
/// `entry`; returns it with who is known to have made it. The signature is checked here, the
/// one path every component takes, and before any of it is compiled.
pub(crate) fn load_module(
    entry: &PluginEntry,
    cache: &ComponentCache,
    catalog: &Catalog,
) -> Result<(Arc<LoadedComponent>, Provenance), Error> {
    let load_error = |reason: String| Error::Load {
        plugin: entry.name.clone(),
        module: entry.module_text.clone(),
        reason,
    };
    let untrusted = |err: TrustError| load_error(format!("refused before compiling: {err}"));
    let runtime = runtime().map_err(Error::Internal)?;
    let metered = entry.load_policy.fuel.is_some();
    let refused = |err| refusal_error(entry, err, false);
    let policy = &entry.signature;
    // Built-in plugins ship inside the host and compile in its process; files are bounded.
    let limits = match &entry.module {
        ModuleSource::Builtin(_) => None,
        ModuleSource::File(_) | ModuleSource::Oci { .. } => {
            Some(CompileLimits::of(&entry.load_policy))
        }
    };
    let (path, expected, signature) = match &entry.module {
        ModuleSource::Builtin(name) => {
            let wasm = (catalog.module)(name)
                .ok_or_else(|| load_error(format!("no built-in plugin '{name}'")))?;
            let sha = (catalog.digest)(name).unwrap_or_else(|| Sha256::digest(wasm).into());
            let loaded = runtime.load(wasm, Some(sha), &entry.name, cache, metered, limits);
            return Ok((loaded.map_err(refused)?, Provenance::BuiltIn));
        }
        ModuleSource::File(path) => {
            let detached = detached_signature(path);
            let signature = if policy.checks() {
                read_detached(&detached).map_err(untrusted)?
            } else {
                None
            };
            if signature.is_none() && policy.required {
                return Err(untrusted(TrustError::Unsigned {
                    looked_for: format!("no {}", detached.display()),
                    keys: policy.keys.describe(),
                }));
            }
            let signature = signature.map(|text| Signed::Blob(text, detached));
            (path.clone(), None, signature)
        }
        ModuleSource::Oci {
            manifest_digest,
            store,
            ..
        } => {
            let artifact = store
                .artifact(manifest_digest)
                .map_err(|err| load_error(err.to_string()))?;
            let signer = if policy.required || policy.checks() && !artifact.signatures.is_empty() {
                Some(policy.keys.verify_artifact(&artifact).map_err(untrusted)?)
            } else {
                None
            };
            let expected = (
                artifact.layer_digest.clone(),
                unhex_digest(&artifact.layer_digest),
            );
            (
                artifact.layer_path,
                Some(expected),
                signer.map(Signed::Artifact),
            )
        }
    };
    let limit = files::Limit {
        what: "a plugin file",
        max_mib: entry.load_policy.max_module_mib,
        set_by: "load_policy.max_module_mib",
    };
    let unreadable = |err: files::FileError| load_error(err.to_string());
    // What the file is and how large come from the one look at the opened file that the
    // remembered digest is checked against, so the digest cannot skip them.
    let (file, meta) = files::open(&path, &limit).map_err(unreadable)?;
    let identity = FileIdentity::of(&path, &meta);
    // A signature over the file's bytes needs them read; a manifest's signature covers the
    // digest the store's file is checked against, which a remembered digest stands for.
    let known = match (&signature, &expected) {
        (Some(Signed::Blob(..)), _) => None,
        (_, Some((_, want))) => cache
            .known_digest(&identity)
            .filter(|sha| Some(*sha) == *want),
        (_, None) => cache.known_digest(&identity),
    };
    let provenance_of = |signature: &Option<Signed>, wasm: &[u8]| match signature {
        None => Ok(Provenance::Unsigned),
        Some(Signed::Artifact(signer)) => Ok(Provenance::Signed(signer.clone())),
        Some(Signed::Blob(text, detached)) => policy
            .keys
            .verify_blob(wasm, text, &detached.display().to_string())
            .map(Provenance::Signed)
            .map_err(untrusted),
    };
    if let Some(sha) = known {
        let provenance = provenance_of(&signature, &[])?;
        let key = verified_cache_key(sha, &provenance);
        match runtime.load_compiled(&key, cache, metered, limits) {
            Ok(Some(loaded)) => return Ok((loaded, provenance)),
            Ok(None) => {}
            // Baseline code is compiled from the bytes, read below.
            Err(refusal) if refusal.spares_baseline_code() => {}
            Err(refusal) => return Err(refused(refusal)),
        }
    }
    let wasm = files::read(&path, &file, meta.len(), &limit).map_err(unreadable)?;
    // Remembered only if nothing wrote the file while it was read.
    let unchanged = file
        .metadata()
        .is_ok_and(|meta| FileIdentity::of(&path, &meta) == identity);
    let sha: [u8; 32] = Sha256::digest(&wasm).into();
    if let Some((listed, _)) = &expected
        && accelhost_trust::store::digest_of(&wasm) != *listed
    {
        return Err(load_error(format!(
            "{} has the digest {}, not the {listed} its manifest lists: the store was changed \
             after the pull",
            path.display(),
            accelhost_trust::store::digest_of(&wasm)
        )));
    }
    let provenance = provenance_of(&signature, &wasm)?;
    let loaded = runtime.load(
        &wasm,
        Some(verified_cache_key(sha, &provenance)),
        &entry.name,
        cache,
        metered,
        limits,
    );
    // A refused file is remembered by its digest too, so that its next load need not read it.
    if unchanged && loaded.as_ref().err().is_none_or(LoadError::is_remembered) {
        cache.remember_digest(&identity, &sha);
    }
    Ok((loaded.map_err(refused)?, provenance))
}

/// The compile cache's key for a component of digest `sha256` loaded under `provenance`: the
/// digest itself for an unsigned component, and a key of its own for each signer, so that
/// what was compiled for a verified load is never found by an unverified one, nor the reverse.
fn verified_cache_key(sha256: [u8; 32], provenance: &Provenance) -> [u8; 32] {
    match provenance {
        Provenance::Signed(signer) => Sha256::new()
            .chain_update(b"accelhost-verified-component\0")
            .chain_update(sha256)
            .chain_update(signer.fingerprint.as_bytes())
            .finalize()
            .into(),
        Provenance::Unknown | Provenance::BuiltIn | Provenance::Unsigned => sha256,
    }
}

/// A signature found for a component: over a plugin file's bytes (its text and file), or over
/// an OCI artifact's manifest, already verified.
enum Signed {
    Blob(Vec<u8>, PathBuf),
    Artifact(Signer),
}

/// Where a plugin file's detached signature is: `plugin.wasm.sig` beside `plugin.wasm`.
fn detached_signature(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".");
    name.push(trust::SIGNATURE_EXTENSION);
    PathBuf::from(name)
}

/// The detached signature at `path`, opened and read as a module file is (a regular file,
/// never waited on as a FIFO would be, a bounded read): `None` when there is none.
fn read_detached(path: &Path) -> Result<Option<Vec<u8>>, TrustError> {
    use files::FileError;
    let unreadable = |reason: String| TrustError::Malformed {
        signature: path.display().to_string(),
        reason,
    };
    let limit = files::Limit {
        what: "a signature file",
        max_mib: 1,
        set_by: "far more than a signature",
    };
    match files::read_regular(path, &limit) {
        Ok(text) => Ok(Some(text)),
        Err(err) if err.is_not_found() => Ok(None),
        Err(FileError::TooLarge { .. } | FileError::GrewTooLarge { .. }) => {
            Err(unreadable("over 1 MiB, far more than a signature".into()))
        }
        Err(err) => Err(unreadable(err.to_string())),
    }
}

/// The 32 bytes of a `sha256:<hex>` digest (checked when the store read it).
fn unhex_digest(digest: &str) -> Option<[u8; 32]> {
    let hex = digest.strip_prefix("sha256:")?;
    let mut out = [0u8; 32];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(out)
}

/// The error of `entry`'s refusal `err`; `remembered` when it comes from an earlier attempt.
fn refusal_error(entry: &PluginEntry, err: LoadError, remembered: bool) -> Error {
    let plugin = entry.name.clone();
    let module = entry.module_text.clone();
    match err {
        LoadError::Unusable(reason) | LoadError::Runtime(reason) => Error::Load {
            plugin,
            module,
            reason: if remembered {
                format!("{reason}{REMEMBERED}")
            } else {
                reason
            },
        },
        LoadError::Incompatible { found } => Error::IncompatibleInterface {
            plugin,
            module,
            plugin_version: found,
            host_versions: crate::runtime::served_versions(),
            remembered,
        },
        LoadError::Compile(cause) => Error::Compile {
            plugin,
            module,
            cause,
            remembered,
        },
        LoadError::Remembered(err) => refusal_error(entry, *err, true),
    }
}

/// What [`check_module`] found of a module.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckedModule {
    /// The `accel:plugin` version it was built for.
    pub wit_version: String,
    /// Who made it, as its signature tells (checked against the config's trust policy).
    pub provenance: Provenance,
}

/// Checks that the module of `entry` is a plugin a host with `catalog` can load (signed as
/// its config requires, a component, built for a compatible `accel:plugin` version, needing
/// only imports the host provides) without running any of its code.
pub(crate) fn check_module(
    entry: &PluginEntry,
    cache: &ComponentCache,
    catalog: &Catalog,
) -> Result<CheckedModule, Error> {
    // A large plugin starts on baseline code, but it is checked on its optimized code: that is
    // the code it runs on, and the check leaves it in the compile cache. So the check compiles
    // the optimized code at once; baseline code first would be thrown away (an optimized
    // compile remembered as failed still fails the check).
    let mut optimized_at_once = entry.clone();
    optimized_at_once.load_policy.baseline_first_mib = u64::MAX;
    let (loaded, provenance) = load_module(&optimized_at_once, cache, catalog)?;
    Ok(CheckedModule {
        wit_version: loaded.wit_version.clone(),
        provenance,
    })
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
    /// What ships in the host, as the builder handed it down.
    pub catalog: Catalog,
}

impl Manager {
    /// Starts every enabled plugin of `config` on `devices`, the registry the embedding API
    /// made of the config's cards with the families it serves. A plugin that fails is
    /// reported and skipped, unless its `load_policy.on_error` is `fail`, which fails the
    /// whole start.
    pub fn start(
        config: &Config,
        cache: &ComponentCache,
        devices: crate::devices::DeviceRegistry,
        catalog: Catalog,
        count_calls: bool,
    ) -> Result<Manager, Error> {
        let devices = Arc::new(devices);
        let slots: Vec<Arc<PluginSlot>> = config
            .plugins
            .iter()
            .map(|entry| {
                PluginSlot::new(
                    entry.clone(),
                    devices.clone(),
                    cache.clone(),
                    catalog,
                    count_calls,
                )
            })
            .collect();
        if let Err(err) = start_all(&slots) {
            for slot in &slots {
                slot.stop();
            }
            return Err(err);
        }
        // Room for every plugin's `max_handles` at once, so no plugin can fill the table for
        // another.
        let capacity = config
            .plugins
            .iter()
            .map(|p| p.load_policy.max_handles as usize)
            .sum::<usize>()
            .max(1);
        Ok(Manager {
            slots,
            handles: Mutex::new(HandleTable::with_capacity(capacity)),
            catalog,
        })
    }

    /// Whether `slot` is one of this manager's plugins.
    pub fn owns(&self, slot: &Arc<PluginSlot>) -> bool {
        self.slots.iter().any(|s| Arc::ptr_eq(s, slot))
    }

    /// The plugin named `name`.
    pub fn slot(&self, name: &str) -> Option<&Arc<PluginSlot>> {
        self.slots.iter().find(|s| s.name() == name)
    }

    pub fn insert_handle(&self, handle: OpenHandle) -> Result<HandleKey, Error> {
        handle.slot.count_handle(handle.generation)?;
        let (slot, generation) = (handle.slot.clone(), handle.generation);
        lock(&self.handles).insert(handle).map_err(|full| {
            slot.uncount_handle(generation);
            Error::Plugin {
                plugin: slot.name().to_string(),
                call: "open",
                code: ErrorCode::NoSpace,
                message: format!("the host cannot track another open handle: {full}"),
            }
        })
    }

    pub fn remove_handle(&self, key: HandleKey) -> Option<OpenHandle> {
        let handle = lock(&self.handles).remove(key)?;
        handle.slot.uncount_handle(handle.generation);
        Some(handle)
    }

    /// Stops every plugin: `finalize`, then the instance is ended.
    pub fn shutdown(&self) {
        let stale = lock(&self.handles).drain_where(|_| true);
        for handle in stale {
            handle.lease.revoke("the host shut down");
        }
        for slot in &self.slots {
            slot.stop();
        }
        if let Ok(runtime) = runtime() {
            runtime.let_compiles_finish();
        }
    }
}

/// What a plugin's start told the host's start.
enum Started {
    /// It started, or failed to (and is reported as failed).
    Done(usize, Result<(), Error>),
    /// Its component's compile is taking long: the host's start need not wait for it.
    Compiling(usize),
}

/// Starts every enabled plugin of `slots`, each on a thread of its own: returns once each has
/// started or failed, or is still compiling past the few seconds a compile is given before it
/// is announced (it then shows as [`PluginStatus::Loading`] and starts when the compile ends).
/// A plugin whose `load_policy.on_error` is `fail` is waited for, and its failure is the
/// start's.
fn start_all(slots: &[Arc<PluginSlot>]) -> Result<(), Error> {
    let (tell, told) = std::sync::mpsc::channel();
    let mut waiting: Vec<usize> = Vec::new();
    for (index, slot) in slots.iter().enumerate() {
        if !slot.entry.enabled {
            continue;
        }
        waiting.push(index);
        let (slot, tell) = (slot.clone(), tell.clone());
        let compiling = tell.clone();
        let spawned = std::thread::Builder::new()
            .name("accelhost-start".into())
            .spawn(move || {
                let on_long = Box::new(move || {
                    let _ = compiling.send(Started::Compiling(index));
                });
                let started = slot.start_telling(on_long);
                let _ = tell.send(Started::Done(index, started));
            });
        if let Err(err) = spawned {
            return Err(Error::Internal(format!(
                "cannot start a plugin's thread: {err}"
            )));
        }
    }
    drop(tell);
    let mut loading = Vec::new();
    while waiting.iter().any(|i| !loading.contains(i)) {
        let Ok(told) = told.recv() else { break };
        match told {
            Started::Done(index, result) => {
                waiting.retain(|&i| i != index);
                loading.retain(|&i| i != index);
                let slot = &slots[index];
                if let Err(err) = result {
                    if slot.entry.load_policy.on_error == OnLoadError::Fail {
                        return Err(err);
                    }
                    tracing::warn!(plugin = %slot.entry.name, "skipping plugin: {err}");
                }
            }
            Started::Compiling(index) => {
                let slot = &slots[index];
                if slot.entry.load_policy.on_error != OnLoadError::Fail && slot.mark_loading() {
                    loading.push(index);
                }
            }
        }
    }
    Ok(())
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
    /// The compiler of the code its latest instance runs, once it loaded: a large plugin
    /// file starts on baseline code, and instances started after its optimized code is
    /// compiled (a restart, the next start of the host) run that.
    pub code: Option<Tier>,
    /// The optional interfaces its module exports (`fpga`, `offload`); calls into the
    /// others are answered `unsupported` by the host.
    pub capabilities: Vec<&'static str>,
    /// Who made its component, as far as signatures tell: built in, signed by a trusted key,
    /// or unsigned (`-` until it loaded).
    pub provenance: Provenance,
    /// Where the plugin stands: running, disabled, failed to load, faulted or stopped.
    pub status: PluginStatus,
    /// The grants the config gives it.
    pub grants: Grants,
    /// Its limits and restart policy.
    pub load_policy: LoadPolicy,
    /// How many times it was restarted after a fault.
    pub restarts: u32,
    /// Log lines (and stdout/stderr lines) dropped over its log budget.
    pub log_lines_dropped: u64,
    /// What its latest instance makes the host hold, against its budgets.
    pub memory: MemoryUse,
    /// What its calls did since the host started, by call.
    pub calls: Vec<CallFigures>,
    /// Its faults since the host started, by cause (`trap`, `deadline`, ...).
    pub faults: Vec<(&'static str, u64)>,
    /// Register reads and writes through its MMIO regions since the host started.
    pub mmio_reads: u64,
    /// See `mmio_reads`.
    pub mmio_writes: u64,
    /// Fuel its calls burned since the host started; `None` when it is not metered
    /// (`load_policy.fuel` unset).
    pub fuel_burned: Option<u64>,
}

/// The memory a plugin makes the host hold, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct MemoryUse {
    /// Host memory charged to it now (`load_policy.host_memory_mib` is the limit).
    pub host_bytes: u64,
    /// DMA memory it holds now (`grants.dma_memory_mib` is the limit).
    pub dma_bytes: u64,
    /// The most its instance can make the host hold at once, by
    /// [`worst_case_host_memory`](crate::worst_case_host_memory).
    pub worst_case_bytes: u64,
}

impl PluginSlot {
    pub fn info(&self) -> PluginInfo {
        let state = lock(&self.state);
        let (host_bytes, dma_bytes) = state
            .owner
            .as_ref()
            .map_or((0, 0), |o| (o.host.used(), o.dma.used()));
        PluginInfo {
            memory: MemoryUse {
                host_bytes,
                dma_bytes,
                worst_case_bytes: crate::runtime::worst_case_host_memory(&self.entry),
            },
            name: self.entry.name.clone(),
            module: self.entry.module_text.clone(),
            wit_version: state.wit_version.clone(),
            code: state.code,
            capabilities: state.capabilities.clone(),
            provenance: state.provenance.clone(),
            status: state.status.clone(),
            grants: self.entry.grants.clone(),
            load_policy: self.entry.load_policy,
            restarts: state.restarts,
            log_lines_dropped: self.log.dropped(),
            calls: self.stats.calls(),
            faults: self.stats.faults(),
            mmio_reads: self.usage.mmio().0,
            mmio_writes: self.usage.mmio().1,
            fuel_burned: self.entry.load_policy.fuel.map(|_| self.usage.fuel()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verified_and_unverified_loads_of_one_component_have_different_cache_keys() {
        let digest = [7u8; 32];
        let signer = |fingerprint: &str| {
            Provenance::Signed(Signer {
                key: "vendor".into(),
                fingerprint: fingerprint.into(),
            })
        };
        let unsigned = verified_cache_key(digest, &Provenance::Unsigned);
        assert_eq!(unsigned, digest);
        let verified = verified_cache_key(digest, &signer("sha256:0011223344556677"));
        assert_ne!(verified, unsigned);
        assert_ne!(
            verified,
            verified_cache_key(digest, &signer("sha256:8899aabbccddeeff"))
        );
        assert_eq!(
            verified,
            verified_cache_key(digest, &signer("sha256:0011223344556677"))
        );
    }
}
