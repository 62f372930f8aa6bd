//! Host-side watches on words in DMA memory, so work a device signals by writing memory (a
//! done flag, a status line) completes an event like any other. One thread polls every
//! watched word, quickly while something changes and more slowly while nothing does. Each
//! watch is charged to its owner's host budget, so one plugin's watches are bounded by its own
//! budget and the scan never holds the lock a new watch takes.

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use super::{Budget, Charge, Completion, CompletionState, DmaMemory, OverBudget, RangeError};

use crate::devices::{lock, wait};

/// What one watch is charged: the watch and its completion, and its share of the watch
/// thread's time (every watch is read on every pass).
pub const WATCH_BYTES: u64 = 1024;

struct Watch {
    memory: Arc<DmaMemory>,
    offset: u64,
    mask: u64,
    expected: u64,
    done: Arc<Completion>,
    _charge: Charge,
}

impl Watch {
    /// Whether the watch is over: matched (and completed), or nobody waits on it any more.
    fn settled(&self) -> bool {
        if Arc::strong_count(&self.done) == 1 || self.done.is_finished() {
            return true;
        }
        match self.memory.load_u64(self.offset) {
            Ok(value) if value & self.mask == self.expected => {
                self.done.finish(CompletionState::Complete);
                true
            }
            Ok(_) => false,
            Err(err) => {
                self.done
                    .finish(CompletionState::Failed((err.to_string()).into()));
                true
            }
        }
    }
}

/// Watches added since the watch thread last took them.
#[derive(Default)]
struct Watcher {
    added: Mutex<Vec<Watch>>,
    wake: Condvar,
}

/// Why a watch could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The word is not inside the memory, or not 8-byte aligned.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// The owner's host budget has no room for another watch.
    #[error(transparent)]
    OverBudget(#[from] OverBudget),
}

fn watcher() -> &'static Watcher {
    static WATCHER: OnceLock<&'static Watcher> = OnceLock::new();
    WATCHER.get_or_init(|| {
        let watcher: &'static Watcher = Box::leak(Box::default());
        std::thread::Builder::new()
            .name("accelhost-watch".into())
            .spawn(move || run(watcher))
            .expect("spawning the memory watch thread");
        watcher
    })
}

fn run(watcher: &Watcher) {
    let mut watching: Vec<Watch> = Vec::new();
    let mut pause = Duration::from_micros(20);
    loop {
        {
            let mut added = lock(&watcher.added);
            while added.is_empty() && watching.is_empty() {
                added = wait(&watcher.wake, added);
            }
            watching.append(&mut added);
        }
        let before = watching.len();
        watching.retain(|w| !w.settled());
        pause = if watching.len() != before {
            Duration::from_micros(20)
        } else {
            (pause * 2).min(Duration::from_micros(500))
        };
        std::thread::sleep(pause);
    }
}

/// A completion that finishes when the little-endian word at `offset` of `memory` has
/// `value & mask == expected` (at once if it already has). The watch is charged to `budget`
/// until it finishes or nobody holds the completion any more.
pub fn watch(
    memory: &Arc<DmaMemory>,
    offset: u64,
    mask: u64,
    expected: u64,
    budget: &Arc<Budget>,
) -> Result<Arc<Completion>, WatchError> {
    let done = Arc::new(Completion::default());
    if memory.load_u64(offset)? & mask == expected {
        done.finish(CompletionState::Complete);
        return Ok(done);
    }
    let charge = budget.charge(WATCH_BYTES)?;
    let watcher = watcher();
    lock(&watcher.added).push(Watch {
        memory: memory.clone(),
        offset,
        mask,
        expected,
        done: done.clone(),
        _charge: charge,
    });
    watcher.wake.notify_all();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{BudgetKind, OwnerId};
    use std::time::Instant;

    #[test]
    fn a_watch_completes_when_the_word_changes() {
        let host = Budget::new(BudgetKind::Host, 1 << 20);
        let memory = DmaMemory::allocate(
            4096,
            OwnerId::fresh(),
            &Budget::unlimited(BudgetKind::Dma),
            false,
        )
        .unwrap();
        let done = watch(&memory, 8, 0xFF, 0x42, &host).unwrap();
        assert_eq!(done.state(), CompletionState::Pending);
        assert_eq!(host.used(), WATCH_BYTES, "a pending watch is charged");
        let writer = memory.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            writer.store_u64(8, 0x1142).unwrap();
        });
        let state = done.wait(Instant::now() + Duration::from_secs(5));
        assert_eq!(state, CompletionState::Complete);
        let already = watch(&memory, 8, 0xFF, 0x42, &host).unwrap();
        assert_eq!(already.state(), CompletionState::Complete);
        assert!(matches!(
            watch(&memory, 4, 1, 1, &host),
            Err(WatchError::Range(_))
        ));
        let deadline = Instant::now() + Duration::from_secs(5);
        while host.used() != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(host.used(), 0, "a finished watch gives its charge back");
    }

    #[test]
    fn watches_stop_at_the_owners_budget_and_dropped_ones_are_freed() {
        let host = Budget::new(BudgetKind::Host, 4 * WATCH_BYTES);
        let memory = DmaMemory::allocate(
            4096,
            OwnerId::fresh(),
            &Budget::unlimited(BudgetKind::Dma),
            false,
        )
        .unwrap();
        let held: Vec<_> = (0..4)
            .map(|_| watch(&memory, 0, 1, 1, &host).unwrap())
            .collect();
        assert!(matches!(
            watch(&memory, 0, 1, 1, &host),
            Err(WatchError::OverBudget(_))
        ));
        let neighbour = Budget::new(BudgetKind::Host, WATCH_BYTES);
        let theirs = watch(&memory, 0, 1, 1, &neighbour).unwrap();
        assert_eq!(
            theirs.state(),
            CompletionState::Pending,
            "another owner still may"
        );
        drop(held);
        let deadline = Instant::now() + Duration::from_secs(5);
        while host.used() != 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(host.used(), 0, "watches nobody waits on are dropped");
    }
}
