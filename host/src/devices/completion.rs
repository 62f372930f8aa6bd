//! Completion objects: set by a device (or a plugin, for work it finished at once) and waited
//! on by the host, never inside a plugin.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use crate::devices::{lock, wait_timeout};

/// Where a completion stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompletionState {
    /// Not finished yet.
    Pending,
    /// Finished successfully.
    Complete,
    /// Finished with an error; the message says why. Shared, so that the many events of one
    /// failure (and a plugin's repeated messages) keep one copy.
    Failed(Arc<str>),
}

/// How a command's failure begins when a command it waited for failed.
const DEPENDENCY_FAILED: &str = "a dependency failed: ";

impl CompletionState {
    /// The failure of a command because a command it waited for failed with `why`. Said
    /// once however long the chain behind the first failure: each command of the chain
    /// shares its message, rather than adding a prefix per link (10,000 queued commands
    /// behind a failed one would otherwise hold hundreds of MiB of prefixes).
    pub fn after_failed_dependency(why: &Arc<str>) -> Self {
        if why.starts_with(DEPENDENCY_FAILED) {
            CompletionState::Failed(why.clone())
        } else {
            CompletionState::Failed(format!("{DEPENDENCY_FAILED}{why}").into())
        }
    }
}

/// Called once when a completion finishes (a scheduler waiting on dependencies, say).
type Watcher = Box<dyn FnOnce() + Send>;

/// A completion's state, what runs when it finishes, and how many threads wait on it.
struct Inner {
    state: CompletionState,
    watchers: Vec<Watcher>,
    waiting: u32,
}

/// A one-shot completion with a blocking wait.
pub struct Completion {
    state: Mutex<Inner>,
    /// Signalled when the state changes and a thread waits on it: most completions are
    /// never waited on, and a signal is a system call.
    changed: Condvar,
    /// Failed by the host because it stayed pending past its deadline.
    expired: AtomicBool,
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Completion").field(&self.state()).finish()
    }
}

impl Default for Completion {
    fn default() -> Self {
        Self::with_state(CompletionState::Pending)
    }
}

impl Completion {
    /// A completion that finished successfully, shared by every caller that needs one: it
    /// never changes again, so one serves them all, and costs nothing per event.
    pub fn complete() -> Arc<Completion> {
        static COMPLETE: std::sync::LazyLock<Arc<Completion>> = std::sync::LazyLock::new(|| {
            crate::ledger::uncharged(|| Arc::new(Completion::with_state(CompletionState::Complete)))
        });
        COMPLETE.clone()
    }

    /// A completion that is already in `state`.
    pub fn with_state(state: CompletionState) -> Self {
        Completion {
            state: Mutex::new(Inner {
                state,
                watchers: Vec::new(),
                waiting: 0,
            }),
            changed: Condvar::new(),
            expired: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        lock(&self.state)
    }

    /// The current state, without waiting.
    pub fn state(&self) -> CompletionState {
        self.lock().state.clone()
    }

    /// Whether the completion finished (successfully or not).
    pub fn is_finished(&self) -> bool {
        self.lock().state != CompletionState::Pending
    }

    /// Moves a pending completion to `state`, wakes the waiters and runs the watchers; later
    /// calls do nothing.
    pub fn finish(&self, state: CompletionState) {
        self.finish_as(state, false);
    }

    /// Fails a pending completion that ran past its deadline with `why`, as
    /// [`finish`](Self::finish) does, marking it [`expired`](Self::expired); a completion that
    /// already finished is left as it is. True if it expired here.
    pub fn expire(&self, why: Arc<str>) -> bool {
        self.finish_as(CompletionState::Failed(why), true)
    }

    fn finish_as(&self, state: CompletionState, expired: bool) -> bool {
        let watchers = {
            let mut current = self.lock();
            if current.state != CompletionState::Pending {
                return false;
            }
            if expired {
                self.expired.store(true, Ordering::Release);
            }
            current.state = state;
            if current.waiting > 0 {
                self.changed.notify_all();
            }
            std::mem::take(&mut current.watchers)
        };
        for watcher in watchers {
            watcher();
        }
        true
    }

    /// Whether the host failed it for running past its deadline ([`expire`](Self::expire)).
    pub fn expired(&self) -> bool {
        self.expired.load(Ordering::Acquire)
    }

    /// Runs `watcher` once the completion finishes (at once if it already has).
    pub fn on_finish(&self, watcher: impl FnOnce() + Send + 'static) {
        let mut current = self.lock();
        if current.state == CompletionState::Pending {
            current.watchers.push(Box::new(watcher));
        } else {
            drop(current);
            watcher();
        }
    }

    /// Waits until the completion is no longer pending or `deadline` passes; returns the
    /// state it ended in (`Pending` on timeout).
    pub fn wait(&self, deadline: Instant) -> CompletionState {
        let mut inner = self.lock();
        inner.waiting += 1;
        while inner.state == CompletionState::Pending {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            inner = wait_timeout(&self.changed, inner, deadline - now);
        }
        inner.waiting -= 1;
        inner.state.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn a_chain_behind_a_failure_shares_one_message() {
        let first: Arc<str> = "the kernel trapped".into();
        let CompletionState::Failed(second) = CompletionState::after_failed_dependency(&first)
        else {
            panic!("a failure")
        };
        assert_eq!(&*second, "a dependency failed: the kernel trapped");
        let CompletionState::Failed(third) = CompletionState::after_failed_dependency(&second)
        else {
            panic!("a failure")
        };
        assert!(Arc::ptr_eq(&second, &third), "{third}");
    }

    #[test]
    fn wait_wakes_on_finish_and_times_out_otherwise() {
        let done = Arc::new(Completion::default());
        let setter = done.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            setter.finish(CompletionState::Complete);
            setter.finish(CompletionState::Failed("ignored".into()));
            assert!(!setter.expire("too late".into()), "finished already");
        });
        let state = done.wait(Instant::now() + Duration::from_secs(5));
        assert_eq!(state, CompletionState::Complete);
        t.join().unwrap();
        let watched = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let count = watched.clone();
        done.on_finish(move || {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        assert_eq!(
            watched.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "ran at once"
        );
        let later = Completion::default();
        let count = watched.clone();
        later.on_finish(move || {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        });
        later.finish(CompletionState::Complete);
        assert_eq!(
            watched.load(std::sync::atomic::Ordering::SeqCst),
            2,
            "ran on finish"
        );
        let pending = Completion::default();
        let state = pending.wait(Instant::now() + Duration::from_millis(5));
        assert_eq!(state, CompletionState::Pending);
    }
}
