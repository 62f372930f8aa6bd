//! Why an instance ended: the sorting of a failed call into a [`FaultCause`] and a reason for
//! people, by the type of what ended it.

use wasmtime::Trap;
use wasmtime::component::ResourceTableError;

use crate::config::LoadPolicy;
use crate::error::{Falsehood, FaultCause, TrapKind};
use crate::state::{HostLimit, Interrupted};

/// How wasmtime says that lifting a call's data from the plugin took more bytes than the
/// store's hostcall fuel allows (its error type is private, so only its text tells it).
const HOSTCALL_FUEL_EXHAUSTED: &str = "fuel allocated for hostcalls has been exhausted";

/// How wasmtime says that a store holds as many component handles as it may (its limit is
/// set to `max_resources`; the error is a message only).
const HANDLE_LIMIT_EXCEEDED: &str = "store handle limit exceeded";

/// An answer the host refused because it was false about what the host hands on: ends the
/// instance as [`FaultCause::Lie`], before any caller sees the answer.
#[derive(Debug, thiserror::Error)]
#[error("{detail} (a lie about {})", about.name())]
pub(crate) struct FalseAnswer {
    /// What it was false about.
    pub about: Falsehood,
    /// What was asked and what came back, for people.
    pub detail: String,
}

/// The cause of a failed call, and what happened for people (naming the limit and the
/// `load_policy` field when one was hit).
pub(crate) fn classify(err: &wasmtime::Error, policy: &LoadPolicy) -> (FaultCause, String) {
    if let Some(interrupted) = err.downcast_ref::<Interrupted>() {
        return match interrupted {
            Interrupted::Deadline => (
                FaultCause::Deadline {
                    timeout_ms: policy.call_timeout_ms,
                },
                format!(
                    "it ran past its {} ms call deadline (load_policy.call_timeout_ms)",
                    policy.call_timeout_ms
                ),
            ),
            Interrupted::Cancelled => (
                FaultCause::Cancelled,
                "the call was cancelled from another thread".into(),
            ),
        };
    }
    if let Some(lie) = err.downcast_ref::<FalseAnswer>() {
        return (
            FaultCause::Lie { about: lie.about },
            format!("its answer was refused: {lie}"),
        );
    }
    if let Some(limit) = err.downcast_ref::<HostLimit>() {
        let cause = match limit {
            HostLimit::RandomBytes { limit, .. } => FaultCause::ResourceLimit {
                field: "wasi:random bytes per call",
                limit: *limit,
            },
            HostLimit::HostMemory(over) => FaultCause::ResourceLimit {
                field: over.kind.field(),
                limit: over.limit,
            },
            HostLimit::HostMemoryHeld(over) => FaultCause::ResourceLimit {
                field: over.kind.field(),
                limit: over.limit,
            },
            HostLimit::Memory { limit_mib, .. } => FaultCause::MemoryLimit {
                limit_mib: *limit_mib,
            },
            HostLimit::Table { limit, .. } => FaultCause::TableLimit { limit: *limit },
        };
        return (cause, limit.to_string());
    }
    if let Some(ResourceTableError::Full) = err.downcast_ref::<ResourceTableError>() {
        return (
            FaultCause::ResourceLimit {
                field: "load_policy.max_resources",
                limit: u64::from(policy.max_resources),
            },
            format!(
                "it holds more than {} host resources (load_policy.max_resources)",
                policy.max_resources
            ),
        );
    }
    if let Some(exit) = err.downcast_ref::<wasmtime_wasi::I32Exit>() {
        return (
            FaultCause::Exited { status: exit.0 },
            format!("it called exit({})", exit.0),
        );
    }
    let root = err.root_cause().to_string();
    if root.contains(HANDLE_LIMIT_EXCEEDED) {
        return (
            FaultCause::ResourceLimit {
                field: "load_policy.max_resources",
                limit: u64::from(policy.max_resources),
            },
            format!(
                "it holds more than {} resource handles (load_policy.max_resources)",
                policy.max_resources
            ),
        );
    }
    if root.contains(HOSTCALL_FUEL_EXHAUSTED) {
        return (
            FaultCause::ResourceLimit {
                field: "load_policy.host_memory_mib",
                limit: policy.host_memory_mib << 20,
            },
            format!(
                "it handed the host more data in one call than its host memory had room \
                 for (load_policy.host_memory_mib is {} MiB)",
                policy.host_memory_mib
            ),
        );
    }
    match err.downcast_ref::<Trap>() {
        Some(Trap::OutOfFuel) => (
            FaultCause::Fuel {
                fuel: policy.fuel.unwrap_or_default(),
            },
            format!(
                "it used up its fuel of {} per call (load_policy.fuel)",
                policy.fuel.unwrap_or_default()
            ),
        ),
        Some(Trap::StackOverflow) => trap(
            TrapKind::StackOverflow,
            "wasm trap: call stack exhausted (deep recursion)",
        ),
        Some(trapped) => trap(TrapKind::of(trapped), &trapped.to_string()),
        // wasmtime's own count limits (instances, tables, memories) say "count too high".
        None if root.contains("count too high") => (
            FaultCause::ResourceLimit {
                field: "load_policy.max_instances",
                limit: u64::from(policy.max_instances),
            },
            format!(
                "it hit a resource limit (load_policy.max_instances is {}): {root}",
                policy.max_instances
            ),
        ),
        None => trap(TrapKind::Host, &root),
    }
}

fn trap(kind: TrapKind, what: &str) -> (FaultCause, String) {
    (
        FaultCause::Trap {
            kind,
            trap: what.to_string(),
        },
        what.to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cause_of(err: impl Into<wasmtime::Error>) -> FaultCause {
        classify(&err.into(), &LoadPolicy::default()).0
    }

    #[test]
    fn causes_are_told_apart_by_type_not_by_message() {
        assert_eq!(
            cause_of(Interrupted::Deadline),
            FaultCause::Deadline { timeout_ms: 5000 }
        );
        assert_eq!(cause_of(Interrupted::Cancelled), FaultCause::Cancelled);
        assert_eq!(
            cause_of(FalseAnswer {
                about: Falsehood::Memory,
                detail: "a 4096-byte buffer for 2097152 bytes".into()
            }),
            FaultCause::Lie {
                about: Falsehood::Memory
            }
        );
        assert_eq!(
            cause_of(HostLimit::RandomBytes {
                asked: 64 << 20,
                limit: 1 << 20
            }),
            FaultCause::ResourceLimit {
                field: "wasi:random bytes per call",
                limit: 1 << 20
            },
            "a random-bytes cap is not blamed on max_instances"
        );
        assert_eq!(
            cause_of(ResourceTableError::Full),
            FaultCause::ResourceLimit {
                field: "load_policy.max_resources",
                limit: 65536
            }
        );
        assert_eq!(cause_of(Trap::OutOfFuel), FaultCause::Fuel { fuel: 0 });
        assert!(matches!(
            cause_of(Trap::UnreachableCodeReached),
            FaultCause::Trap {
                kind: TrapKind::Unreachable,
                ..
            }
        ));
        assert!(matches!(
            cause_of(Trap::MemoryOutOfBounds),
            FaultCause::Trap {
                kind: TrapKind::OutOfBounds,
                ..
            }
        ));
        assert!(matches!(
            cause_of(wasmtime::Error::msg("unknown handle 7")),
            FaultCause::Trap {
                kind: TrapKind::Host,
                ..
            }
        ));
        assert_eq!(
            cause_of(wasmtime_wasi::I32Exit(3)),
            FaultCause::Exited { status: 3 }
        );
        assert_eq!(
            cause_of(HostLimit::HostMemoryHeld(crate::devices::OverLimit {
                kind: crate::devices::BudgetKind::Host,
                held: 5 << 20,
                limit: 4 << 20,
            })),
            FaultCause::ResourceLimit {
                field: "load_policy.host_memory_mib",
                limit: 4 << 20
            }
        );
        // wasmtime's own limits come as messages; the end-to-end tests meet the real ones
        // (hostile.rs: aliased strings, 2 x 70000 watches).
        assert_eq!(
            cause_of(wasmtime::Error::msg(format!(
                "too much data is being copied between the host and the guest: \
                 {HOSTCALL_FUEL_EXHAUSTED}"
            ))),
            FaultCause::ResourceLimit {
                field: "load_policy.host_memory_mib",
                limit: 16 << 20
            }
        );
        assert_eq!(
            cause_of(wasmtime::Error::msg(format!(
                "cannot lend resource: {HANDLE_LIMIT_EXCEEDED}"
            ))),
            FaultCause::ResourceLimit {
                field: "load_policy.max_resources",
                limit: 65536
            }
        );
        let (cause, reason) = classify(
            &wasmtime::Error::msg("exceeds limit, count too high"),
            &LoadPolicy::default(),
        );
        assert!(
            matches!(cause, FaultCause::ResourceLimit { .. }),
            "{reason}"
        );
    }
}
