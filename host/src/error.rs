//! The library's error type. Every error names the plugin and the call where it has one, and
//! maps to a stable [`ErrorCode`] that applications (and later the C API) can switch on.

use std::fmt;

use crate::config::ConfigError;
use crate::devices::{MmioFault, RangeError};
use crate::text::inert;

/// The result type of the embedding API.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Stable error codes. The numbers never change meaning; new codes are only added. Codes 1 to
/// 12 are the WIT `error-code`s a plugin returns; the others are raised by the host.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[repr(i32)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The plugin (or the device behind it) does not implement the call.
    Unsupported = 1,
    /// An argument is malformed, out of range or of the wrong kind.
    InvalidArgument = 2,
    /// The token, handle, id or name does not exist.
    NotFound = 3,
    /// The device or object is in use, for example opened exclusively elsewhere.
    Busy = 4,
    /// A fixed-size resource is exhausted (contexts, slots, IOVA space, open handles).
    NoSpace = 5,
    /// The plugin's grants do not cover this device, region or operation.
    PermissionDenied = 6,
    /// A wait or poll ran past its timeout.
    Timeout = 7,
    /// A memory allocation or grant limit was reached.
    OutOfMemory = 8,
    /// The device or driver reported a failure.
    DeviceError = 9,
    /// The plugin was called before its `initialize` succeeded.
    NotInitialized = 10,
    /// The object already exists, for example a range that is already mapped.
    AlreadyExists = 11,
    /// Anything else; the message says what.
    Internal = 12,
    /// The config file is malformed or inconsistent.
    Config = 100,
    /// A plugin's module could not be read, compiled or instantiated.
    LoadFailed = 101,
    /// A plugin was built for an incompatible version of the WIT interface.
    IncompatibleInterface = 102,
    /// A plugin trapped, overran its deadline, hit a limit or was cancelled; its instance
    /// was ended.
    PluginFaulted = 103,
    /// A token, handle, buffer or region outlived what it refers to.
    Stale = 104,
    /// A plugin is not running (it failed to load, faulted, or is disabled).
    PluginUnavailable = 105,
}

impl ErrorCode {
    /// The code's kebab-case name, as shown by the CLI.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::Unsupported => "unsupported",
            ErrorCode::InvalidArgument => "invalid-argument",
            ErrorCode::NotFound => "not-found",
            ErrorCode::Busy => "busy",
            ErrorCode::NoSpace => "no-space",
            ErrorCode::PermissionDenied => "permission-denied",
            ErrorCode::Timeout => "timeout",
            ErrorCode::OutOfMemory => "out-of-memory",
            ErrorCode::DeviceError => "device-error",
            ErrorCode::NotInitialized => "not-initialized",
            ErrorCode::AlreadyExists => "already-exists",
            ErrorCode::Internal => "internal",
            ErrorCode::Config => "config",
            ErrorCode::LoadFailed => "load-failed",
            ErrorCode::IncompatibleInterface => "incompatible-interface",
            ErrorCode::PluginFaulted => "plugin-faulted",
            ErrorCode::Stale => "stale",
            ErrorCode::PluginUnavailable => "plugin-unavailable",
        }
    }

    /// Every code, in number order.
    pub const ALL: [ErrorCode; 18] = [
        ErrorCode::Unsupported,
        ErrorCode::InvalidArgument,
        ErrorCode::NotFound,
        ErrorCode::Busy,
        ErrorCode::NoSpace,
        ErrorCode::PermissionDenied,
        ErrorCode::Timeout,
        ErrorCode::OutOfMemory,
        ErrorCode::DeviceError,
        ErrorCode::NotInitialized,
        ErrorCode::AlreadyExists,
        ErrorCode::Internal,
        ErrorCode::Config,
        ErrorCode::LoadFailed,
        ErrorCode::IncompatibleInterface,
        ErrorCode::PluginFaulted,
        ErrorCode::Stale,
        ErrorCode::PluginUnavailable,
    ];

    /// The code with the stable `number`, as it travels over the wire (the node service's
    /// `accelhost-code`, the C API's results).
    pub fn from_number(number: u32) -> Option<ErrorCode> {
        ErrorCode::ALL
            .into_iter()
            .find(|code| *code as u32 == number)
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a plugin instance was ended. Callers and the C API match on it; the fault's `reason`
/// says the same for people, with what the plugin printed last.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "cause", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum FaultCause {
    /// A WebAssembly trap (a Rust plugin's panic is an `unreachable`), or a host import
    /// refusing a forged or stale handle.
    Trap {
        /// What kind of trap, for matching.
        kind: TrapKind,
        /// What trapped, as wasmtime names it, such as `wasm trap: wasm \`unreachable\`
        /// instruction executed`.
        trap: String,
    },
    /// The call ran past `load_policy.call_timeout_ms`.
    Deadline {
        /// The deadline, in milliseconds.
        timeout_ms: u64,
    },
    /// [`Host::cancel`](crate::Host::cancel) stopped the call.
    Cancelled,
    /// Its linear memories grew past `load_policy.memory_mib`.
    MemoryLimit {
        /// The limit, in MiB.
        limit_mib: u64,
    },
    /// Its tables grew past `load_policy.max_table_elements`.
    TableLimit {
        /// The limit, in elements.
        limit: u64,
    },
    /// It used up `load_policy.fuel` in one call.
    Fuel {
        /// The fuel of one call.
        fuel: u64,
    },
    /// It hit another limit of its load policy or of the host; `field` names it, such as
    /// `load_policy.max_resources` or `load_policy.host_memory_mib`.
    ResourceLimit {
        /// The config field (or host constant) that sets the limit.
        field: &'static str,
        /// The limit.
        limit: u64,
    },
    /// It spent more than `load_policy.busy_percent` of its time in calls, starving its
    /// callers.
    TimeBudget {
        /// `load_policy.busy_percent`.
        percent: u32,
        /// `load_policy.busy_window_ms`.
        window_ms: u64,
    },
    /// It answered out of bounds: too many devices, strings too long, duplicate tokens or
    /// names.
    RefusedAnswer,
    /// It answered something false about what the host hands on to programs: a buffer
    /// shorter than asked or not its own, an id it already gave for a live object, a region
    /// the device does not have. The host refused the answer before any caller saw it.
    Lie {
        /// What the answer was false about.
        about: Falsehood,
    },
    /// An event it handed out did not complete within `load_policy.event_deadline_ms`; the
    /// host failed the event with a timeout and ended the instance.
    EventDeadline {
        /// The deadline, in milliseconds.
        deadline_ms: u64,
    },
    /// It called WASI's `exit`.
    Exited {
        /// The exit status it gave.
        status: i32,
    },
}

/// What a [`FaultCause::Lie`] was about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Falsehood {
    /// Memory: a buffer or allocation shorter than asked, missing, or not the plugin's own.
    Memory,
    /// An id (buffer, allocation, program, queue, handle) it already gave for an object that
    /// is still live.
    Id,
    /// A count that does not match what it answered with it, such as more launches of a batch
    /// enqueued than it was given, or some enqueued and no event for them.
    Count,
}

impl Falsehood {
    /// The short name, as `accelhost plugins` shows it.
    pub fn name(self) -> &'static str {
        match self {
            Falsehood::Memory => "memory",
            Falsehood::Id => "id",
            Falsehood::Count => "count",
        }
    }
}

/// The kind of a [`FaultCause::Trap`]: what the plugin did, as far as the trap tells.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum TrapKind {
    /// It executed `unreachable`: a Rust plugin's panic or abort.
    Unreachable,
    /// Its call stack ran out (deep recursion).
    StackOverflow,
    /// It accessed linear memory or a table out of bounds, or misaligned an atomic access.
    OutOfBounds,
    /// It divided an integer by zero, or converted a float that does not fit.
    Arithmetic,
    /// It called through a null or mistyped table entry.
    IndirectCall,
    /// A host import ended the call: a forged or stale handle, or a failure the instance
    /// cannot continue from.
    Host,
    /// Anything else wasmtime reports.
    Other,
}

impl TrapKind {
    /// The kind of a wasmtime trap.
    pub(crate) fn of(trap: &wasmtime::Trap) -> TrapKind {
        use wasmtime::Trap as T;
        match trap {
            T::UnreachableCodeReached => TrapKind::Unreachable,
            T::StackOverflow => TrapKind::StackOverflow,
            T::MemoryOutOfBounds | T::HeapMisaligned | T::TableOutOfBounds => TrapKind::OutOfBounds,
            T::IntegerOverflow | T::IntegerDivisionByZero | T::BadConversionToInteger => {
                TrapKind::Arithmetic
            }
            T::IndirectCallToNull | T::BadSignature => TrapKind::IndirectCall,
            _ => TrapKind::Other,
        }
    }
}

impl FaultCause {
    /// A short stable name for the cause, such as `deadline` (for metrics and scripts).
    pub fn name(&self) -> &'static str {
        match self {
            FaultCause::Trap { .. } => "trap",
            FaultCause::Deadline { .. } => "deadline",
            FaultCause::Cancelled => "cancelled",
            FaultCause::MemoryLimit { .. } => "memory-limit",
            FaultCause::TableLimit { .. } => "table-limit",
            FaultCause::Fuel { .. } => "fuel",
            FaultCause::ResourceLimit { .. } => "resource-limit",
            FaultCause::TimeBudget { .. } => "time-budget",
            FaultCause::RefusedAnswer => "refused-answer",
            FaultCause::Lie { .. } => "lie",
            FaultCause::EventDeadline { .. } => "event-deadline",
            FaultCause::Exited { .. } => "exited",
        }
    }
}

/// What ended the compile of a plugin's component. A compile of a plugin file runs in a
/// worker process bounded by `load_policy.compile_timeout_ms` and `compile_memory_mib`
/// (see [`compile_worker`](crate::compile_worker)); every message names the limit that ended
/// it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, thiserror::Error)]
#[serde(tag = "cause", rename_all = "kebab-case")]
#[non_exhaustive]
pub enum CompileFailure {
    /// The compile ran past `load_policy.compile_timeout_ms`; its worker was killed.
    #[error("compile ran past {limit_ms} ms (load_policy.compile_timeout_ms)")]
    TimedOut {
        /// The limit, in milliseconds.
        limit_ms: u64,
    },
    /// The compile needed more memory than `load_policy.compile_memory_mib`.
    #[error("compile needed more than {limit_mib} MiB (load_policy.compile_memory_mib)")]
    OutOfMemory {
        /// The limit, in MiB.
        limit_mib: u64,
    },
    /// wasmtime refused the component: it is not valid WebAssembly, or uses what the host's
    /// engine does not support.
    #[error("it does not compile: {}", inert(message))]
    Invalid {
        /// wasmtime's error, for people.
        message: String,
    },
    /// The compile worker was killed by a signal that no limit explains.
    #[error("compile worker crashed (signal {signal}): {}", inert(stderr))]
    Crashed {
        /// The signal that ended it.
        signal: i32,
        /// The end of what it printed on stderr.
        stderr: String,
    },
    /// The compile worker could not be started, or did not answer as a worker does: the
    /// reason says what happened and names the worker's path.
    #[error("{}", inert(reason))]
    Worker {
        /// What went wrong, naming the worker.
        reason: String,
    },
}

impl CompileFailure {
    /// Whether the same component fails the same way every time it is compiled under the
    /// same limits, so that the failure can be remembered by its digest: an invalid
    /// component or a limit does; a crash or a missing worker may be the machine's doing.
    pub(crate) fn is_the_components(&self) -> bool {
        matches!(
            self,
            CompileFailure::TimedOut { .. }
                | CompileFailure::OutOfMemory { .. }
                | CompileFailure::Invalid { .. }
        )
    }

    /// What a remembered failure adds to its message: when it is tried again.
    pub(crate) fn remembered_note(&self, remembered: bool) -> &'static str {
        match self {
            _ if !remembered => "",
            CompileFailure::TimedOut { .. } => {
                " (remembered from an earlier attempt; it is tried again when the file changes \
                 or load_policy.compile_timeout_ms is raised)"
            }
            CompileFailure::OutOfMemory { .. } => {
                " (remembered from an earlier attempt; it is tried again when the file changes \
                 or load_policy.compile_memory_mib is raised)"
            }
            _ => REMEMBERED,
        }
    }
}

/// What a refusal remembered from an earlier load adds to its message.
pub(crate) const REMEMBERED: &str =
    " (remembered from an earlier attempt; it is tried again when the file changes)";

fn remembered_note(remembered: bool) -> &'static str {
    if remembered { REMEMBERED } else { "" }
}

/// Everything that can go wrong in the embedding API.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The config file is malformed or inconsistent.
    #[error(transparent)]
    Config(#[from] ConfigError),

    /// A plugin could not be started: its module could not be read, compiled or instantiated,
    /// or its `configure` or `initialize` failed.
    #[error(
        "plugin '{plugin}' ({}) cannot be loaded: {}",
        inert(module),
        inert(reason)
    )]
    Load {
        /// The plugin's name in the config.
        plugin: String,
        /// The `module` field as the config wrote it.
        module: String,
        /// What went wrong, for people.
        reason: String,
    },

    /// A plugin was built for a version of the WIT interface this host does not serve.
    #[error(
        "plugin '{plugin}' ({}) was built for accel:plugin@{}, but this host serves \
         accel:plugin@{host_versions}; rebuild the plugin against one of them{}",
        inert(module),
        inert(plugin_version),
        remembered_note(*remembered)
    )]
    IncompatibleInterface {
        /// The plugin's name in the config.
        plugin: String,
        /// The `module` field as the config wrote it.
        module: String,
        /// The `accel:plugin` version the module was built for.
        plugin_version: String,
        /// The versions this host serves, for people, the latest last: `0.1.0 and 0.2.0`.
        host_versions: String,
        /// The refusal was remembered from an earlier load of the same file (by its
        /// digest), so the module was not compiled again.
        remembered: bool,
    },

    /// Compiling a plugin's component failed, or ran past a limit of its load policy (its
    /// compile worker was killed). Nothing of it was kept in the compile cache.
    #[error(
        "plugin '{plugin}' ({}) cannot be loaded: {cause}{}",
        inert(module),
        cause.remembered_note(*remembered)
    )]
    Compile {
        /// The plugin's name in the config.
        plugin: String,
        /// The `module` field as the config wrote it.
        module: String,
        /// What ended the compile.
        cause: CompileFailure,
        /// The failure was remembered from an earlier load of the same file (by its digest),
        /// so the module was not compiled again.
        remembered: bool,
    },

    /// A call into a plugin returned an error (the host also raises it, with `no-space`, when
    /// it cannot track another open handle).
    #[error("plugin '{plugin}': {call} failed ({code}): {}", inert(message))]
    Plugin {
        /// The plugin's name in the config.
        plugin: String,
        /// The plugin export that failed, such as `open` or `map-mmio`.
        call: &'static str,
        /// The code the plugin returned.
        code: ErrorCode,
        /// The plugin's explanation, for people.
        message: String,
    },

    /// A plugin trapped, overran its deadline, hit a limit, answered out of bounds or was
    /// cancelled; its instance was ended, everything it handed out was revoked, and its load
    /// policy decides whether a fresh instance starts.
    #[error(
        "plugin '{plugin}' faulted in {call} and was stopped: {}",
        inert(reason)
    )]
    Faulted {
        /// The plugin's name in the config.
        plugin: String,
        /// The plugin export it faulted in.
        call: &'static str,
        /// Why, for programs.
        cause: FaultCause,
        /// Why, for people: the cause with its details and what the plugin printed last.
        reason: String,
    },

    /// A plugin is not running (it failed to load, faulted, was stopped or is disabled), so
    /// the call was not made.
    #[error(
        "plugin '{plugin}' is not running ({}); {call} cannot be served",
        inert(state)
    )]
    PluginUnavailable {
        /// The plugin's name in the config.
        plugin: String,
        /// The plugin export that could not be called.
        call: &'static str,
        /// The plugin's status as `accelhost plugins` shows it, such as `disabled`.
        state: String,
    },

    /// The plugin's component is still compiling, past the few seconds a host's start waits
    /// for it; [`Host::wait_loaded`](crate::Host::wait_loaded) waits for it.
    #[error(
        "plugin '{plugin}' is still loading: its component is compiling; its devices come once \
         it is done"
    )]
    StillLoading {
        /// The plugin's name in the config.
        plugin: String,
    },

    /// A token, handle, buffer or region outlived what it refers to.
    #[error("{what} is no longer valid: {}", inert(why))]
    Stale {
        /// What was used, such as `handle` or `DMA buffer`.
        what: &'static str,
        /// Why it is no longer valid, such as `it was closed`.
        why: String,
    },

    /// An application's access to an MMIO region was refused or failed.
    #[error("MMIO on {}: {fault}", inert(device))]
    Mmio {
        /// The device the region belongs to, by the name grants use (`emu:dfl0`, a `/dev` path).
        device: String,
        /// What was wrong with the access.
        fault: MmioFault,
    },

    /// An application's access to a DMA buffer was out of range or misaligned.
    #[error("DMA buffer {id} on {}: {source}", inert(device))]
    Buffer {
        /// The device the buffer was prepared for, by its id (`plugin/name`).
        device: String,
        /// The buffer's id (OPAE's workspace id).
        id: u64,
        /// The range that was refused.
        source: RangeError,
    },

    /// A plugin's event stayed pending past its `load_policy.event_deadline_ms`: the host
    /// failed it (and ended the plugin instance that made it).
    #[error("{} did not complete: {}", inert(what), inert(message))]
    EventExpired {
        /// The command the event was for, such as `launch of vadd on xocl/emu:xocl0`.
        what: String,
        /// Which plugin and deadline, for people.
        message: String,
    },

    /// A wait on the host (such as a poll of a DMA buffer word) ran past its timeout.
    #[error(
        "waiting on {} timed out after {waited_ms} ms (last value {last:#x})",
        inert(what)
    )]
    WaitTimeout {
        /// What was waited on, for people.
        what: String,
        /// The timeout that ran out, in milliseconds.
        waited_ms: u64,
        /// The last value read before giving up.
        last: u64,
    },

    /// The application passed an argument the host refuses without asking a plugin.
    #[error("invalid argument to {call}: {}", inert(message))]
    InvalidArgument {
        /// The API call or workload that refused it, such as `open`.
        call: &'static str,
        /// What was wrong, for people.
        message: String,
    },

    /// A device reported a failure outside any plugin call (such as an NLB0 test error).
    #[error("{}: {}", inert(device), inert(message))]
    Device {
        /// The device's id (`plugin/name`).
        device: String,
        /// What the device reported, for people.
        message: String,
    },

    /// A failure that is not the caller's, such as the wasm runtime failing to start.
    #[error("internal error: {}", inert(.0))]
    Internal(String),
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Config(_) => ErrorCode::Config,
            Error::Load { .. } => ErrorCode::LoadFailed,
            Error::IncompatibleInterface { .. } => ErrorCode::IncompatibleInterface,
            Error::Compile { .. } => ErrorCode::LoadFailed,
            Error::Plugin { code, .. } => *code,
            Error::Faulted { .. } => ErrorCode::PluginFaulted,
            Error::PluginUnavailable { .. } | Error::StillLoading { .. } => {
                ErrorCode::PluginUnavailable
            }
            Error::Stale { .. } => ErrorCode::Stale,
            Error::Mmio { fault, .. } => match fault {
                MmioFault::OutOfRange { .. } | MmioFault::Misaligned { .. } => {
                    ErrorCode::InvalidArgument
                }
                MmioFault::PollTimeout { .. } => ErrorCode::Timeout,
                MmioFault::Device(_) => ErrorCode::DeviceError,
            },
            Error::Buffer { .. } | Error::InvalidArgument { .. } => ErrorCode::InvalidArgument,
            Error::WaitTimeout { .. } | Error::EventExpired { .. } => ErrorCode::Timeout,
            Error::Device { .. } => ErrorCode::DeviceError,
            Error::Internal(_) => ErrorCode::Internal,
        }
    }

    /// Why a plugin faulted, for [`Error::Faulted`].
    pub fn fault_cause(&self) -> Option<&FaultCause> {
        match self {
            Error::Faulted { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// What ended a plugin's compile, for [`Error::Compile`].
    pub fn compile_failure(&self) -> Option<&CompileFailure> {
        match self {
            Error::Compile { cause, .. } => Some(cause),
            _ => None,
        }
    }

    /// The plugin the error concerns, if it concerns one.
    pub fn plugin(&self) -> Option<&str> {
        match self {
            Error::Load { plugin, .. }
            | Error::IncompatibleInterface { plugin, .. }
            | Error::Compile { plugin, .. }
            | Error::Plugin { plugin, .. }
            | Error::Faulted { plugin, .. }
            | Error::PluginUnavailable { plugin, .. }
            | Error::StillLoading { plugin } => Some(plugin),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_stable() {
        assert_eq!(ErrorCode::Unsupported as i32, 1);
        assert_eq!(ErrorCode::Internal as i32, 12);
        assert_eq!(ErrorCode::Config as i32, 100);
        assert_eq!(ErrorCode::PluginUnavailable as i32, 105);
        assert_eq!(ErrorCode::PluginFaulted.to_string(), "plugin-faulted");
        for code in ErrorCode::ALL {
            assert_eq!(ErrorCode::from_number(code as u32), Some(code));
        }
        assert_eq!(ErrorCode::from_number(0), None);
        assert_eq!(ErrorCode::from_number(13), None);
    }

    #[test]
    fn messages_name_plugin_and_call() {
        let err = Error::Plugin {
            plugin: "dfl".into(),
            call: "open",
            code: ErrorCode::Busy,
            message: "port emu:dfl0 is held exclusively".into(),
        };
        assert_eq!(err.code(), ErrorCode::Busy);
        assert_eq!(err.plugin(), Some("dfl"));
        assert_eq!(
            err.to_string(),
            "plugin 'dfl': open failed (busy): port emu:dfl0 is held exclusively"
        );
    }
}
