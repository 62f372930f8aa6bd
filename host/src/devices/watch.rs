//! Host-side watches on words in DMA memory, so work a device signals by writing memory (a
//! done flag, a status line) completes an event like any other. One thread polls every
//! watched word, quickly while something changes and more slowly while nothing does.

use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use super::{Completion, CompletionState, DmaMemory, RangeError};

/// The most words watched at once, across all plugins.
pub const MAX_WATCHES: usize = 1 << 16;

struct Watch {
    memory: Arc<DmaMemory>,
    offset: u64,
    mask: u64,
    expected: u64,
    done: Arc<Completion>,
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
                self.done.finish(CompletionState::Failed(err.to_string()));
                true
            }
        }
    }
}

#[derive(Default)]
struct Watcher {
    watches: Mutex<Vec<Watch>>,
    added: Condvar,
}

/// Why a watch could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The word is not inside the memory, or not 8-byte aligned.
    #[error(transparent)]
    Range(#[from] RangeError),
    /// [`MAX_WATCHES`] words are watched already.
    #[error("the host already watches {MAX_WATCHES} words")]
    TooMany,
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
    let mut pause = Duration::from_micros(20);
    loop {
        let mut watches = watcher.watches.lock().unwrap_or_else(|p| p.into_inner());
        while watches.is_empty() {
            watches = watcher
                .added
                .wait(watches)
                .unwrap_or_else(|p| p.into_inner());
        }
        let before = watches.len();
        watches.retain(|w| !w.settled());
        let progressed = watches.len() != before;
        drop(watches);
        pause = if progressed {
            Duration::from_micros(20)
        } else {
            (pause * 2).min(Duration::from_micros(500))
        };
        std::thread::sleep(pause);
    }
}

/// A completion that finishes when the little-endian word at `offset` of `memory` has
/// `value & mask == expected` (at once if it already has).
pub fn watch(
    memory: &Arc<DmaMemory>,
    offset: u64,
    mask: u64,
    expected: u64,
) -> Result<Arc<Completion>, WatchError> {
    let done = Arc::new(Completion::default());
    if memory.load_u64(offset)? & mask == expected {
        done.finish(CompletionState::Complete);
        return Ok(done);
    }
    let watcher = watcher();
    let mut watches = watcher.watches.lock().unwrap_or_else(|p| p.into_inner());
    if watches.len() >= MAX_WATCHES {
        return Err(WatchError::TooMany);
    }
    watches.push(Watch {
        memory: memory.clone(),
        offset,
        mask,
        expected,
        done: done.clone(),
    });
    watcher.added.notify_all();
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{DmaBudget, OwnerId};
    use std::time::Instant;

    #[test]
    fn a_watch_completes_when_the_word_changes() {
        let memory =
            DmaMemory::allocate(4096, OwnerId::fresh(), &DmaBudget::new(1 << 20), false).unwrap();
        let done = watch(&memory, 8, 0xFF, 0x42).unwrap();
        assert_eq!(done.state(), CompletionState::Pending);
        let writer = memory.clone();
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            writer.store_u64(8, 0x1142).unwrap();
        });
        let state = done.wait(Instant::now() + Duration::from_secs(5));
        assert_eq!(state, CompletionState::Complete);
        let already = watch(&memory, 8, 0xFF, 0x42).unwrap();
        assert_eq!(already.state(), CompletionState::Complete);
        assert!(matches!(watch(&memory, 4, 1, 1), Err(WatchError::Range(_))));
    }
}
