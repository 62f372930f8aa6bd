//! Byte budgets: what one plugin instance may make the host hold. A [`Budget`] is charged where
//! the memory is taken, and each [`Charge`] gives its bytes back when it is dropped, so what a
//! faulted plugin held is freed with the objects that held it.
//!
//! A host-memory budget in a process whose allocator is the [`ledger`](crate::ledger) counts
//! what the allocator charged to its account instead: every block allocated while the host
//! works for the plugin, at its real size. Its call sites' charges then only check that the
//! bytes they are about to take fit, so that an import can refuse with `out-of-memory` before
//! it allocates; nothing is counted twice.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::ledger::{self, Account};

/// Which budget a charge counts against; refusals name it and the config field that sets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BudgetKind {
    /// Memory devices reach by DMA (`grants.dma_memory_mib`).
    Dma,
    /// Host memory the plugin's requests occupy: queued commands, watches, kept messages,
    /// resources (`load_policy.host_memory_mib`).
    Host,
}

impl BudgetKind {
    /// What the budget counts, for people.
    pub fn what(self) -> &'static str {
        match self {
            BudgetKind::Dma => "DMA memory",
            BudgetKind::Host => "host memory",
        }
    }

    /// The config field that sets the limit.
    pub fn field(self) -> &'static str {
        match self {
            BudgetKind::Dma => "grants.dma_memory_mib",
            BudgetKind::Host => "load_policy.host_memory_mib",
        }
    }
}

/// A limit on the bytes held at once, shared by every charge made against it. Charges may
/// outlive the plugin instance that made them (memory a device still uses, say); the budget
/// lives as long as its last charge.
#[derive(Debug)]
pub struct Budget {
    kind: BudgetKind,
    limit: u64,
    used: AtomicU64,
    /// The ledger account that counts a host-memory budget's bytes, where the ledger is
    /// installed.
    account: Option<Account>,
}

/// A plugin holds more host memory than its budget allows: found at a safe point (an epoch
/// tick while its wasm runs, a call's return), after the allocations that took it there.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "it made the host hold {held} bytes of {}, over its limit of {limit} bytes ({})",
    kind.what(),
    kind.field()
)]
pub struct OverLimit {
    /// The budget it is over.
    pub kind: BudgetKind,
    /// The bytes held when it was found.
    pub held: u64,
    /// The budget's limit.
    pub limit: u64,
}

/// A charge would take a budget past its limit.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "{bytes} more bytes of {} would exceed the {limit}-byte limit ({used} in use; {})",
    kind.what(),
    kind.field()
)]
pub struct OverBudget {
    /// The budget that refused.
    pub kind: BudgetKind,
    /// The bytes asked for.
    pub bytes: u64,
    /// The budget's limit.
    pub limit: u64,
    /// The bytes in use when it refused.
    pub used: u64,
}

impl From<OverBudget> for io::Error {
    fn from(err: OverBudget) -> Self {
        io::Error::new(io::ErrorKind::OutOfMemory, err)
    }
}

impl Budget {
    /// A budget of `limit` bytes of `kind` with nothing in use.
    pub fn new(kind: BudgetKind, limit: u64) -> Arc<Self> {
        Arc::new(Budget {
            kind,
            limit,
            used: AtomicU64::new(0),
            account: None,
        })
    }

    /// A host-memory budget of `limit` bytes, counted by the ledger where it is installed.
    pub fn host(limit: u64) -> Arc<Self> {
        Arc::new(Budget {
            kind: BudgetKind::Host,
            limit,
            used: AtomicU64::new(0),
            account: ledger::is_installed().then(Account::new),
        })
    }

    /// A budget that never refuses, for callers that are not plugins (tests, benchmarks).
    pub fn unlimited(kind: BudgetKind) -> Arc<Self> {
        Self::new(kind, u64::MAX)
    }

    /// The bytes held now.
    pub fn used(&self) -> u64 {
        match &self.account {
            Some(account) => account.held(),
            None => self.used.load(Ordering::Relaxed),
        }
    }

    /// The most bytes it lets be held.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// The bytes left before the limit.
    pub fn left(&self) -> u64 {
        self.limit.saturating_sub(self.used())
    }

    /// Whether the ledger counts this budget (else its call sites' charges do).
    pub fn is_ledgered(&self) -> bool {
        self.account.is_some()
    }

    /// Runs `f` with what this thread allocates meanwhile charged to this budget (where the
    /// ledger counts it).
    pub fn charge_while<R>(&self, f: impl FnOnce() -> R) -> R {
        match &self.account {
            Some(account) => account.charge_while(f),
            None => f(),
        }
    }

    /// Refuses when more is held than the limit allows: the check at a safe point.
    pub fn check_held(&self) -> Result<(), OverLimit> {
        let held = self.used();
        if held <= self.limit {
            return Ok(());
        }
        Err(OverLimit {
            kind: self.kind,
            held,
            limit: self.limit,
        })
    }

    fn reserve(&self, bytes: u64) -> Result<(), OverBudget> {
        if self.account.is_some() {
            // The ledger counts the allocation itself; this only checks that it fits.
            let used = self.used();
            return match used.checked_add(bytes) {
                Some(total) if total <= self.limit => Ok(()),
                _ => Err(OverBudget {
                    kind: self.kind,
                    bytes,
                    limit: self.limit,
                    used,
                }),
            };
        }
        self.used
            .try_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|&total| total <= self.limit)
            })
            .map(drop)
            .map_err(|used| OverBudget {
                kind: self.kind,
                bytes,
                limit: self.limit,
                used,
            })
    }

    /// Takes `bytes` from the budget until the returned charge is dropped.
    pub fn charge(self: &Arc<Self>, bytes: u64) -> Result<Charge, OverBudget> {
        self.reserve(bytes)?;
        Ok(Charge {
            budget: self.clone(),
            bytes: if self.account.is_some() { 0 } else { bytes },
            unseen: false,
        })
    }

    /// Takes `bytes` of memory the process's allocator never sees (mapped on its own, such
    /// as compiled code) from the budget until the returned charge is dropped: counted where
    /// the ledger counts the rest, which would otherwise miss them.
    pub fn charge_unseen(self: &Arc<Self>, bytes: u64) -> Result<Charge, OverBudget> {
        self.reserve(bytes)?;
        let unseen = match &self.account {
            Some(account) => {
                account.hold_unseen(bytes);
                true
            }
            None => false,
        };
        Ok(Charge {
            budget: self.clone(),
            bytes,
            unseen,
        })
    }
}

/// Bytes taken from a [`Budget`]; dropping the charge gives them back.
#[derive(Debug)]
pub struct Charge {
    budget: Arc<Budget>,
    bytes: u64,
    /// Held in the ledger's account rather than in `used`.
    unseen: bool,
}

impl Charge {
    /// Whether the charge is against `budget`.
    pub fn is_against(&self, budget: &Arc<Budget>) -> bool {
        Arc::ptr_eq(&self.budget, budget)
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        match &self.budget.account {
            Some(account) if self.unseen => account.release_unseen(self.bytes),
            _ => {
                self.budget.used.fetch_sub(self.bytes, Ordering::AcqRel);
            }
        }
    }
}

/// The plugin instance that allocated memory or opened a device. Backends use it to refuse a
/// buffer that belongs to someone else, as the kernel refuses another process's pages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct OwnerId(u64);

impl OwnerId {
    /// A fresh id, never handed out before in this process.
    pub fn fresh() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        OwnerId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// Who asks a device for something, and the budgets what it asks for is charged to.
#[derive(Clone, Debug)]
pub struct Owner {
    /// Tags the memory it allocates and the devices it opens.
    pub id: OwnerId,
    /// DMA memory: buffers and buffer objects.
    pub dma: Arc<Budget>,
    /// Host memory its requests occupy: queued commands, waiters, watches.
    pub host: Arc<Budget>,
    /// Whether the DMA memory it allocates can be handed to another process
    /// ([`DmaMemory::allocate_shareable`]): set on the hosts of nodes.
    pub shares_memory: bool,
}

impl Owner {
    /// A fresh owner with budgets of `dma` and `host` bytes.
    pub fn new(dma: u64, host: u64) -> Self {
        Owner {
            id: OwnerId::fresh(),
            dma: Budget::new(BudgetKind::Dma, dma),
            host: Budget::host(host),
            shares_memory: false,
        }
    }

    /// A fresh owner whose budgets never refuse, for callers that are not plugins.
    #[cfg(any(test, feature = "internals"))]
    pub fn unlimited() -> Self {
        Self::new(u64::MAX, u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_the_ledger_unseen_memory_is_charged_as_any_other() {
        let budget = Budget::new(BudgetKind::Host, 100);
        let code = budget.charge_unseen(70).unwrap();
        assert_eq!(budget.used(), 70);
        assert_eq!(budget.charge(31).unwrap_err().used, 70);
        drop(code);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn charges_are_refused_past_the_limit_and_given_back_on_drop() {
        let budget = Budget::new(BudgetKind::Host, 100);
        let a = budget.charge(60).unwrap();
        let err = budget.charge(41).unwrap_err();
        assert_eq!(
            err,
            OverBudget {
                kind: BudgetKind::Host,
                bytes: 41,
                limit: 100,
                used: 60
            }
        );
        assert!(
            err.to_string().contains("load_policy.host_memory_mib"),
            "{err}"
        );
        let b = budget.charge(40).unwrap();
        assert_eq!(budget.used(), 100);
        drop(a);
        assert_eq!(budget.used(), 40);
        drop(b);
        assert_eq!(budget.used(), 0);
        assert_eq!(
            io::Error::from(err).kind(),
            io::ErrorKind::OutOfMemory,
            "devices see ENOMEM-style errors"
        );
    }

    #[test]
    fn a_huge_charge_cannot_wrap_the_count() {
        let budget = Budget::new(BudgetKind::Dma, u64::MAX);
        let _a = budget.charge(u64::MAX - 1).unwrap();
        assert!(budget.charge(2).is_err());
    }
}
