//! What each client holds of its DMA grant, across all its sessions and their mirrors, and
//! what all clients hold together against the node's limit.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

/// The bytes of buffers and memory one client holds across all its sessions, against its
/// grant, and the node's total across every client, against `limits.max_dma_mib`: reserved
/// before an allocation (so concurrent ones cannot pass a cap together) and given back when
/// the object goes.
#[derive(Clone, Default)]
pub struct DmaAccount {
    client: Arc<AtomicU64>,
    node: Arc<AtomicU64>,
}

/// The two caps a reservation must stay within, in bytes.
#[derive(Clone, Copy, Debug)]
pub struct DmaCaps {
    /// The client's grant (`grants.dma_memory_mib`).
    pub client: u64,
    /// Every client together (`limits.max_dma_mib`).
    pub node: u64,
}

/// Which cap a reservation would pass, with what was held under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverCap {
    /// The client's grant: the client holds this much.
    Client(u64),
    /// The node's limit: every client together holds this much.
    Node(u64),
}

fn add_within(counter: &AtomicU64, bytes: u64, cap: u64) -> Result<u64, u64> {
    counter.try_update(Ordering::AcqRel, Ordering::Acquire, |held| {
        held.checked_add(bytes).filter(|total| *total <= cap)
    })
}

impl DmaAccount {
    /// A client's account, counted also in the node's total `node`.
    pub fn of_client(node: &Arc<AtomicU64>) -> DmaAccount {
        DmaAccount {
            client: Arc::default(),
            node: node.clone(),
        }
    }

    /// Reserves `bytes` if both totals stay within their caps; else says which cap it passes.
    pub fn reserve(&self, bytes: u64, caps: DmaCaps) -> Result<DmaCharge, OverCap> {
        let mut charge = DmaCharge {
            account: self.clone(),
            bytes: 0,
        };
        charge.grow_to(bytes, caps)?;
        Ok(charge)
    }

    /// Bytes the client holds now.
    pub fn held(&self) -> u64 {
        self.client.load(Ordering::Acquire)
    }
}

/// Bytes reserved in a [`DmaAccount`], given back when dropped.
pub struct DmaCharge {
    account: DmaAccount,
    bytes: u64,
}

impl DmaCharge {
    /// Grows the charge to `bytes` (for memory that grows as data arrives) if both totals
    /// stay within their caps; else says which cap it passes.
    pub fn grow_to(&mut self, bytes: u64, caps: DmaCaps) -> Result<(), OverCap> {
        let more = bytes.saturating_sub(self.bytes);
        if more == 0 {
            return Ok(());
        }
        add_within(&self.account.node, more, caps.node).map_err(OverCap::Node)?;
        if let Err(held) = add_within(&self.account.client, more, caps.client) {
            self.account.node.fetch_sub(more, Ordering::AcqRel);
            return Err(OverCap::Client(held));
        }
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
        self.account.client.fetch_sub(self.bytes, Ordering::AcqRel);
        self.account.node.fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client_cap(client: u64) -> DmaCaps {
        DmaCaps {
            client,
            node: u64::MAX,
        }
    }

    #[test]
    fn a_dma_account_holds_its_cap_and_gives_back_on_drop() {
        let account = DmaAccount::default();
        let cap = client_cap(1000);
        let first = account.reserve(600, cap).unwrap();
        assert_eq!(account.reserve(500, cap).err(), Some(OverCap::Client(600)));
        let second = account.reserve(400, cap).unwrap();
        assert_eq!(account.held(), 1000);
        drop(first);
        assert_eq!(account.held(), 400);
        drop(second);
        let mut growing = account.reserve(0, cap).unwrap();
        growing.grow_to(700, cap).unwrap();
        assert_eq!(account.held(), 700);
        let other = account.reserve(300, cap).unwrap();
        assert_eq!(growing.grow_to(701, cap), Err(OverCap::Client(1000)));
        assert_eq!(growing.bytes(), 700);
        drop((growing, other));
        assert_eq!(account.held(), 0);
        assert_eq!(
            account
                .reserve(u64::MAX, client_cap(u64::MAX))
                .map(|c| c.bytes)
                .ok(),
            Some(u64::MAX)
        );
    }

    #[test]
    fn clients_together_stay_within_the_node_cap() {
        let node = Arc::new(AtomicU64::new(0));
        let (a, b) = (DmaAccount::of_client(&node), DmaAccount::of_client(&node));
        let caps = DmaCaps {
            client: 800,
            node: 1000,
        };
        let held_by_a = a.reserve(700, caps).unwrap();
        assert_eq!(b.reserve(400, caps).err(), Some(OverCap::Node(700)));
        // A refusal by the client's cap leaves the node's total as it was.
        assert_eq!(a.reserve(200, caps).err(), Some(OverCap::Client(700)));
        assert_eq!(node.load(Ordering::Acquire), 700);
        let held_by_b = b.reserve(300, caps).unwrap();
        drop(held_by_a);
        assert_eq!(node.load(Ordering::Acquire), 300);
        assert_eq!(b.held(), 300);
        drop(held_by_b);
        assert_eq!(node.load(Ordering::Acquire), 0);
    }
}
