//! What an instance may grow to: the store's resource limiter, and the limits host code
//! enforces by ending a call (each a typed error, so nothing is told apart by its message).

use wasmtime::ResourceLimiter;

use crate::config::LoadPolicy;
use crate::devices::{OverBudget, OverLimit};

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
    /// What the host holds for it is over its host-memory budget, as the ledger found at a
    /// safe point.
    #[error("{0}")]
    HostMemoryHeld(#[from] OverLimit),
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

#[cfg(test)]
mod tests {
    use super::*;

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
            err.downcast_ref::<HostLimit>(),
            Some(HostLimit::Memory { limit_mib: 1, .. })
        ));
        assert!(limits.memory_growing(600 << 10, 1 << 20, None).unwrap());
        assert_eq!(limits.memory_total, 1 << 20);
        assert!(limits.table_growing(0, 60, None).unwrap());
        let err = limits.table_growing(0, 41, None).unwrap_err();
        assert!(matches!(
            err.downcast_ref::<HostLimit>(),
            Some(HostLimit::Table { limit: 100, .. })
        ));
    }
}
