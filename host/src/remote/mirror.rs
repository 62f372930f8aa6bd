//! Buffers of a remote device that the node does not share (a node on TCP, or one whose
//! memory cannot be handed out), mirrored in host memory: applications and plugins use the
//! local copy as they would a local buffer (OPAE applications write and poll it through a
//! pointer), and the host keeps it in step with the node's.
//!
//! The rule: what the application wrote is pushed before every register write, enqueue, reset
//! and reconfigure (the doorbells that start device work), and what the device wrote is
//! pulled after every remote event (one pull serves every event that ended before it set
//! out: a batch of completions costs one round trip) and, for a minute after each doorbell,
//! every millisecond while anything changes (slowing to every 50 ms while nothing does). A pull is a state of the node's memory in which every
//! change the device made before a pulled page is pulled too; it is applied to the local
//! buffers newest buffer first, each from its first page to its last, so that a completion
//! word written last, in an earlier-prepared buffer (OPAE's status area) or later in the
//! same buffer, becomes visible after the data it announces. Both sides keep the last agreed
//! content (the shadow) to find what changed: a mirror costs twice its size here, charged to
//! the plugin's DMA grant, and its size again on the node. As with a local device, the
//! application does not write a buffer while the device works on it.

use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use super::{PAGE_BYTES, Page, RemoteFailure, RemoteNode, RemoteResult};
use crate::devices::{Charge, DmaMemory, lock, wait_timeout};
use crate::error::ErrorCode;

/// Why device work waiting for a pull fails when the session goes first.
const SESSION_ENDED: &str = "the session with the node ended";

/// How soon the mirrors are synced again after a change.
const FAST: Duration = Duration::from_millis(1);
/// How far apart syncs drift while nothing changes.
const SLOW: Duration = Duration::from_millis(50);
/// How long after a doorbell the device may still write without the application calling in:
/// the puller stops then, until the next doorbell.
const ACTIVE: Duration = Duration::from_secs(60);

/// One mirrored buffer or memory.
struct Mirror {
    /// The node's id for it.
    object: u64,
    /// The node's handle it came from: closing the handle ends the mirror.
    handle: u64,
    /// The local copy; the mirror goes when nothing else holds it.
    memory: Weak<DmaMemory>,
    /// The content both sides last agreed on.
    shadow: Vec<u8>,
    _charge: Charge,
}

#[derive(Default)]
struct MirrorSet {
    /// In the order they were prepared.
    mirrors: Vec<Mirror>,
    interval: Option<Duration>,
    /// Until when the puller runs.
    active_until: Option<Instant>,
    closed: bool,
    ticker: bool,
    /// Device work that ended, waiting for the pull that shows what it wrote.
    waiting: Vec<AfterPull>,
}

/// What hears that device work ended, once the mirrors hold what it wrote (or why they
/// could not be brought up to date).
pub(crate) type AfterPull = Box<dyn FnOnce(Result<(), String>) + Send>;

/// The mirrors of one node session, and the thread that pulls for them.
pub(crate) struct Mirrors {
    node: Weak<dyn RemoteNode>,
    /// What each sync may take.
    call_timeout: Duration,
    set: Mutex<MirrorSet>,
    /// One sync at a time.
    syncing: Mutex<()>,
    wake: Condvar,
}

impl Mirrors {
    pub(crate) fn new(node: Weak<dyn RemoteNode>, call_timeout: Duration) -> Arc<Self> {
        Arc::new(Mirrors {
            node,
            call_timeout,
            set: Mutex::new(MirrorSet::default()),
            syncing: Mutex::new(()),
            wake: Condvar::new(),
        })
    }

    /// Mirrors the node's `object` in `memory` (zeroed, as the node's is), with `charge`
    /// paying for the shadow; starts the puller with the first mirror.
    pub(crate) fn add(
        self: &Arc<Self>,
        object: u64,
        handle: u64,
        memory: &Arc<DmaMemory>,
        charge: Charge,
    ) {
        let start = {
            let mut set = lock(&self.set);
            set.mirrors.push(Mirror {
                object,
                handle,
                memory: Arc::downgrade(memory),
                // Paid by `charge` (the DMA grant), not by the host-memory budget.
                shadow: crate::ledger::uncharged(|| vec![0; memory.len() as usize]),
                _charge: charge,
            });
            set.interval = Some(FAST);
            set.active_until = Some(Instant::now() + ACTIVE);
            !std::mem::replace(&mut set.ticker, true)
        };
        if start {
            let me = Arc::downgrade(self);
            let spawned = std::thread::Builder::new()
                .name("accelhost-mirror".into())
                .spawn(move || pull_loop(me));
            if spawned.is_err() {
                lock(&self.set).ticker = false;
            }
        }
        self.wake.notify_all();
    }

    /// Stops mirroring the node's `object`.
    pub(crate) fn remove(&self, object: u64) {
        lock(&self.set).mirrors.retain(|m| m.object != object);
    }

    /// Stops mirroring what came from the node's `handle` (closed: the node released it).
    pub(crate) fn remove_handle(&self, handle: u64) {
        lock(&self.set).mirrors.retain(|m| m.handle != handle);
    }

    /// Ends the puller; the session is gone.
    pub(crate) fn close(&self) {
        lock(&self.set).closed = true;
        self.wake.notify_all();
    }

    /// Before device work starts: pushes what the application wrote, and pulls faster for a
    /// while.
    pub(crate) fn doorbell(&self, deadline: Instant) -> RemoteResult<()> {
        self.sync(deadline, false)?;
        let mut set = lock(&self.set);
        set.interval = Some(FAST);
        set.active_until = Some(Instant::now() + ACTIVE);
        drop(set);
        self.wake.notify_all();
        Ok(())
    }

    /// Device work ended: `finish` runs once a pull that set out after now brought the
    /// mirrors up to date. The puller makes one pull for every `finish` waiting then; without
    /// a puller (no mirror), the pull is made here.
    pub(crate) fn after_pull(&self, finish: AfterPull, deadline: Instant) {
        let mut set = lock(&self.set);
        if set.ticker && !set.closed && !set.mirrors.is_empty() {
            set.waiting.push(finish);
            drop(set);
            self.wake.notify_all();
            return;
        }
        drop(set);
        finish(
            self.sync(deadline, true)
                .map(drop)
                .map_err(|e| e.to_string()),
        );
    }

    /// Pushes local changes and pulls the node's; `always` asks the node even when nothing
    /// changed here. Returns whether any page moved.
    pub(crate) fn sync(&self, deadline: Instant, always: bool) -> RemoteResult<bool> {
        // With nothing to push, a doorbell need not wait for a pull on its way.
        if !always && !self.changed_here() {
            return Ok(false);
        }
        let _one = lock(&self.syncing);
        let (watched, pushes) = {
            let mut set = lock(&self.set);
            set.mirrors.retain(|m| m.memory.strong_count() > 0);
            let watched: Vec<u64> = set.mirrors.iter().map(|m| m.object).collect();
            let mut pushes = Vec::new();
            for mirror in &set.mirrors {
                if let Some(memory) = mirror.memory.upgrade() {
                    changed_pages(mirror, &memory, &mut pushes);
                }
            }
            (watched, pushes)
        };
        if watched.is_empty() || (pushes.is_empty() && !always) {
            return Ok(false);
        }
        let node = self.node.upgrade().ok_or_else(|| RemoteFailure {
            code: ErrorCode::NotFound,
            message: SESSION_ENDED.into(),
        })?;
        let pushed = !pushes.is_empty();
        let pulls = node.sync(&watched, &pushes, deadline)?;
        let moved = pushed || !pulls.is_empty();
        let mut set = lock(&self.set);
        for page in pushes {
            if let Some(mirror) = set.mirrors.iter_mut().find(|m| m.object == page.object) {
                store(&mut mirror.shadow, &page);
            }
        }
        // Newest buffer first, each in page order: see the module's rule.
        for mirror in set.mirrors.iter_mut().rev() {
            let Some(memory) = mirror.memory.upgrade() else {
                continue;
            };
            let mut mine: Vec<&Page> = pulls.iter().filter(|p| p.object == mirror.object).collect();
            mine.sort_by_key(|p| p.offset);
            for page in mine {
                if memory.write(page.offset, &page.data).is_ok() {
                    store(&mut mirror.shadow, page);
                }
            }
        }
        Ok(moved)
    }

    /// Whether the application changed any mirror since the node last agreed with it.
    fn changed_here(&self) -> bool {
        let set = lock(&self.set);
        let mut pushes = Vec::new();
        set.mirrors.iter().any(|mirror| {
            mirror.memory.upgrade().is_some_and(|memory| {
                changed_pages(mirror, &memory, &mut pushes);
                !pushes.is_empty()
            })
        })
    }

    /// Tells the device work still waiting for a pull that none will come.
    fn end_waiting(&self) {
        let waiting = std::mem::take(&mut lock(&self.set).waiting);
        for finish in waiting {
            finish(Err(SESSION_ENDED.to_string()));
        }
    }

    /// The puller stops: a later mirror starts another, and later device work pulls in place.
    fn stop_pulling(&self, mut set: MutexGuard<'_, MirrorSet>) {
        set.ticker = false;
        drop(set);
        self.end_waiting();
    }
}

impl Drop for Mirrors {
    fn drop(&mut self) {
        self.end_waiting();
    }
}

/// Adds the pages of `mirror` whose local content differs from the shadow.
fn changed_pages(mirror: &Mirror, memory: &DmaMemory, out: &mut Vec<Page>) {
    let len = memory.len().min(mirror.shadow.len() as u64);
    let mut page = vec![0u8; PAGE_BYTES as usize];
    let mut offset = 0;
    while offset < len {
        let n = PAGE_BYTES.min(len - offset) as usize;
        if memory.read(offset, &mut page[..n]).is_ok()
            && page[..n] != mirror.shadow[offset as usize..offset as usize + n]
        {
            out.push(Page {
                object: mirror.object,
                offset,
                data: page[..n].to_vec(),
            });
        }
        offset += n as u64;
    }
}

fn store(shadow: &mut [u8], page: &Page) {
    let start = page.offset as usize;
    if let Some(slot) = shadow.get_mut(start..start + page.data.len()) {
        slot.copy_from_slice(&page.data);
    }
}

/// Pulls while the mirrors live: at once for device work that ended, soon after a change,
/// less often while nothing changes.
fn pull_loop(mirrors: Weak<Mirrors>) {
    loop {
        let Some(me) = mirrors.upgrade() else { return };
        let (interval, waiting) = {
            let mut set = lock(&me.set);
            if set.closed || me.node.strong_count() == 0 {
                me.stop_pulling(set);
                return;
            }
            if set.waiting.is_empty() {
                let active = set.active_until.is_some_and(|until| Instant::now() < until);
                let interval = if active {
                    set.interval.unwrap_or(SLOW)
                } else {
                    SLOW
                };
                set = wait_timeout(&me.wake, set, interval);
            }
            if set.closed {
                me.stop_pulling(set);
                return;
            }
            let waiting = std::mem::take(&mut set.waiting);
            if waiting.is_empty() && !set.active_until.is_some_and(|until| Instant::now() < until) {
                continue;
            }
            (set.interval.unwrap_or(SLOW), waiting)
        };
        let synced = me.sync(Instant::now() + me.call_timeout, true);
        let next = match &synced {
            Ok(true) => FAST,
            Ok(false) => (interval * 2).min(SLOW),
            Err(err) => {
                tracing::debug!("mirror sync: {err}");
                SLOW
            }
        };
        lock(&me.set).interval = Some(next);
        let outcome = synced.map(drop).map_err(|e| e.to_string());
        for finish in waiting {
            finish(outcome.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{Budget, BudgetKind, OwnerId};

    fn memory(pages: u64) -> (Arc<DmaMemory>, Charge) {
        let budget = Budget::new(BudgetKind::Dma, 1 << 30);
        let memory =
            DmaMemory::allocate(pages * PAGE_BYTES, OwnerId::fresh(), &budget, false).unwrap();
        let charge = budget.charge(memory.len()).unwrap();
        (memory, charge)
    }

    #[test]
    fn only_changed_pages_are_pushed() {
        let (local, charge) = memory(4);
        let mirror = Mirror {
            object: 7,
            handle: 1,
            memory: Arc::downgrade(&local),
            shadow: vec![0; local.len() as usize],
            _charge: charge,
        };
        let mut pushes = Vec::new();
        changed_pages(&mirror, &local, &mut pushes);
        assert!(pushes.is_empty(), "a fresh mirror agrees with the node");
        local.write(PAGE_BYTES + 5, b"abc").unwrap();
        local.write(3 * PAGE_BYTES, b"z").unwrap();
        changed_pages(&mirror, &local, &mut pushes);
        let offsets: Vec<u64> = pushes.iter().map(|p| p.offset).collect();
        assert_eq!(offsets, [PAGE_BYTES, 3 * PAGE_BYTES]);
        assert_eq!(&pushes[0].data[5..8], b"abc");
        assert!(pushes.iter().all(|p| p.object == 7 && p.data.len() == 4096));
    }
}
