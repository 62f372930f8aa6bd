//! Why an instance ended: the limits host code enforces by ending the call (each a typed
//! error, so nothing is told apart by its message), the store's resource limiter, and the
//! sorting of a failed call into a [`FaultCause`] and a reason for people.

use wasmtime::component::ResourceTableError;
use wasmtime::{ResourceLimiter, Trap};

use super::control::Interrupted;
use crate::config::LoadPolicy;
use crate::devices::OverBudget;
use crate::error::FaultCause;

/// A limit host code enforced by ending the call: the import it hit has no way to return an
/// error to the plugin, or the store itself hit it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HostLimit {
    /// `wasi:random` was asked for more than the host hands out in one call.
    #[error("it asked for {asked} random bytes in one call (at most {limit})")]
    RandomBytes {
        /// The bytes asked for.
        asked: u64,
        /// The most one call returns.
        limit: u64,
    },
    /// What it asked the host to keep would exceed its host-memory budget.
    #[error("{0}")]
    HostMemory(#[from] OverBudget),
    /// Its linear memories would grow past `load_policy.memory_mib` in all.
    #[error(
        "its linear memories would hold {wanted} bytes, over its limit of {limit_mib} MiB \
         (load_policy.memory_mib)"
    )]
    Memory {
        /// The bytes all its memories would hold after the growth.
        wanted: u64,
        /// `load_policy.memory_mib`.
        limit_mib: u64,
    },
    /// Its tables would grow past `load_policy.max_table_elements` in all.
    #[error(
        "its tables would hold {wanted} elements, over its limit of {limit} \
         (load_policy.max_table_elements)"
    )]
    Table {
        /// The elements all its tables would hold after the growth.
        wanted: u64,
        /// `load_policy.max_table_elements`.
        limit: u64,
    },
}

/// The store's resource limiter: every linear memory of the instance together stays within
/// `memory_mib`, every table together within `max_table_elements`, and instances, tables and
/// memories each within `max_instances`. Growing past a limit traps.
pub(crate) struct PluginLimits {
    memory_limit: u64,
    memory_mib: u64,
    memory_total: u64,
    table_limit: u64,
    table_total: u64,
    count_limit: usize,
}

impl PluginLimits {
    pub fn new(policy: &LoadPolicy) -> Self {
        PluginLimits {
            memory_limit: policy.memory_mib << 20,
            memory_mib: policy.memory_mib,
            memory_total: 0,
            table_limit: u64::from(policy.max_table_elements),
            table_total: 0,
            count_limit: policy.max_instances as usize,
        }
    }
}

impl ResourceLimiter for PluginLimits {
    fn memory_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let wanted = self.memory_total - current as u64 + desired as u64;
        if wanted > self.memory_limit {
            return Err(HostLimit::Memory {
                wanted,
                limit_mib: self.memory_mib,
            }
            .into());
        }
        self.memory_total = wanted;
        Ok(true)
    }

    fn table_growing(
        &mut self,
        current: usize,
        desired: usize,
        _maximum: Option<usize>,
    ) -> wasmtime::Result<bool> {
        let wanted = self.table_total - current as u64 + desired as u64;
        if wanted > self.table_limit {
            return Err(HostLimit::Table {
                wanted,
                limit: self.table_limit,
            }
            .into());
        }
        self.table_total = wanted;
        Ok(true)
    }

    fn instances(&self) -> usize {
        self.count_limit
    }

    fn tables(&self) -> usize {
        self.count_limit
    }

    fn memories(&self) -> usize {
        self.count_limit
    }
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
        Some(Trap::StackOverflow) => trap("wasm trap: call stack exhausted (deep recursion)"),
        Some(trapped) => trap(&trapped.to_string()),
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
        None => trap(&root),
    }
}

fn trap(what: &str) -> (FaultCause, String) {
    (
        FaultCause::Trap {
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
            FaultCause::Trap { .. }
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

    #[test]
    fn memory_and_tables_are_limited_in_total() {
        let policy = LoadPolicy {
            memory_mib: 1,
            max_table_elements: 100,
            ..LoadPolicy::default()
        };
        let mut limits = PluginLimits::new(&policy);
        assert!(limits.memory_growing(0, 600 << 10, None).unwrap());
        let err = limits.memory_growing(0, 600 << 10, None).unwrap_err();
        assert!(matches!(
            classify(&err, &policy).0,
            FaultCause::MemoryLimit { limit_mib: 1 }
        ));
        assert!(limits.memory_growing(600 << 10, 1 << 20, None).unwrap());
        assert_eq!(limits.memory_total, 1 << 20);
        assert!(limits.table_growing(0, 60, None).unwrap());
        let err = limits.table_growing(0, 41, None).unwrap_err();
        assert!(matches!(
            classify(&err, &policy).0,
            FaultCause::TableLimit { limit: 100 }
        ));
    }
}
