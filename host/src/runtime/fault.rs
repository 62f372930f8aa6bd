//! Why an instance ended: the sorting of a failed call into a [`FaultCause`] and a reason for
//! people, by the type of what ended it.

use wasmtime::Trap;
use wasmtime::component::ResourceTableError;

use crate::config::LoadPolicy;
use crate::error::{FaultCause, TrapKind};
use crate::state::{HostLimit, Interrupted};

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
