//! What each client holds of its DMA grant, across all its sessions and their mirrors.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes of buffers and memory one client holds across all its sessions, against its
/// grant: reserved before an allocation (so concurrent ones cannot pass the grant together)
/// and given back when the object goes.
#[derive(Clone, Default)]
pub struct DmaAccount(Arc<AtomicU64>);

impl DmaAccount {
    /// Reserves `bytes` if the total stays within `cap`; else says how much is held.
    pub fn reserve(&self, bytes: u64, cap: u64) -> Result<DmaCharge, u64> {
        self.0
            .try_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|total| *total <= cap)
            })
            .map(|_| DmaCharge {
                account: self.clone(),
                bytes,
            })
    }

    /// Bytes held now.
    pub fn held(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// Bytes reserved in a [`DmaAccount`], given back when dropped.
pub struct DmaCharge {
    account: DmaAccount,
    bytes: u64,
}

impl DmaCharge {
    /// Grows the charge to `bytes` (for memory that grows as data arrives) if the account's
    /// total stays within `cap`; else says how much the account holds.
    pub fn grow_to(&mut self, bytes: u64, cap: u64) -> Result<(), u64> {
        let more = bytes.saturating_sub(self.bytes);
        if more == 0 {
            return Ok(());
        }
        self.account
            .0
            .try_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(more).filter(|total| *total <= cap)
            })?;
        self.bytes = bytes;
        Ok(())
    }

    /// The bytes charged.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for DmaCharge {
    fn drop(&mut self) {
        self.account.0.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dma_account_holds_its_cap_and_gives_back_on_drop() {
        let account = DmaAccount::default();
        let first = account.reserve(600, 1000).unwrap();
        assert_eq!(account.reserve(500, 1000).err(), Some(600));
        let second = account.reserve(400, 1000).unwrap();
        assert_eq!(account.held(), 1000);
        drop(first);
        assert_eq!(account.held(), 400);
        drop(second);
        let mut growing = account.reserve(0, 1000).unwrap();
        growing.grow_to(700, 1000).unwrap();
        assert_eq!(account.held(), 700);
        let other = account.reserve(300, 1000).unwrap();
        assert_eq!(growing.grow_to(701, 1000), Err(1000));
        assert_eq!(growing.bytes(), 700);
        drop((growing, other));
        assert_eq!(account.held(), 0);
        assert_eq!(
            account.reserve(u64::MAX, u64::MAX).map(|c| c.bytes).ok(),
            Some(u64::MAX)
        );
    }
}
