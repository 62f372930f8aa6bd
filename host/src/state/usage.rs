//! What a plugin's instances used, over all of them: MMIO operations through its regions and
//! the fuel its calls burned (metered plugins only). Counted with relaxed atomics: a scrape
//! reads them without holding a call up.

use std::sync::atomic::{AtomicU64, Ordering};

/// A plugin's usage counts, shared by its instances.
#[derive(Debug, Default)]
pub struct Usage {
    mmio_reads: AtomicU64,
    mmio_writes: AtomicU64,
    fuel: AtomicU64,
}

impl Usage {
    /// `n` register reads (a poll counts as one).
    pub fn mmio_read(&self, n: u64) {
        self.mmio_reads.fetch_add(n, Ordering::Relaxed);
    }

    /// `n` register writes.
    pub fn mmio_written(&self, n: u64) {
        self.mmio_writes.fetch_add(n, Ordering::Relaxed);
    }

    /// A call burned `fuel`.
    pub fn fuel_burned(&self, fuel: u64) {
        self.fuel.fetch_add(fuel, Ordering::Relaxed);
    }

    /// (reads, writes) so far.
    pub fn mmio(&self) -> (u64, u64) {
        (
            self.mmio_reads.load(Ordering::Relaxed),
            self.mmio_writes.load(Ordering::Relaxed),
        )
    }

    /// Fuel burned so far.
    pub fn fuel(&self) -> u64 {
        self.fuel.load(Ordering::Relaxed)
    }
}
