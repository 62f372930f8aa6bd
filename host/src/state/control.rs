//! Stopping a call from outside: the per-call deadline and cancellation from another thread.
//! Both end the call the same way, through the epoch callback while the plugin runs wasm and
//! through the host-side waits while it sits in one.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How often the epoch advances; per-call deadlines are counted in these ticks, and host
/// waits are sliced by them so that a cancel reaches a wait within one.
pub(crate) const EPOCH_TICK: Duration = Duration::from_millis(10);

/// Why a call was stopped before it returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Interrupted {
    /// It ran past `load_policy.call_timeout_ms`.
    Deadline,
    /// Another thread cancelled it.
    Cancelled,
}

impl fmt::Display for Interrupted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Interrupted::Deadline => f.write_str("the call ran past its deadline"),
            Interrupted::Cancelled => f.write_str("the call was cancelled"),
        }
    }
}

impl std::error::Error for Interrupted {}

/// What ends the call running now: its deadline, or a cancel from another thread. Host code
/// that waits on the plugin's behalf waits in slices of at most one epoch tick and checks it
/// between them, so no wait outlives the call.
#[derive(Clone, Debug)]
pub(crate) struct StopCondition {
    pub control: Arc<CallControl>,
    pub call: u64,
    pub deadline: Instant,
}

impl StopCondition {
    /// `Err` once the call was cancelled or ran past its deadline: it ends the call (and the
    /// instance).
    pub fn check(&self) -> Result<(), Interrupted> {
        if self.control.is_cancelled(self.call) {
            Err(Interrupted::Cancelled)
        } else if Instant::now() >= self.deadline {
            Err(Interrupted::Deadline)
        } else {
            Ok(())
        }
    }

    /// When the current slice of a wait ends: one epoch tick from now, or the deadline.
    pub fn slice_end(&self) -> Instant {
        (Instant::now() + EPOCH_TICK).min(self.deadline)
    }

    /// Runs `wait` until it finishes or the call must stop, in slices of one epoch tick.
    pub async fn bound<T>(&self, wait: impl Future<Output = T>) -> Result<T, Interrupted> {
        let mut wait = std::pin::pin!(wait);
        loop {
            let slice = tokio::time::Instant::from_std(self.slice_end());
            if let Ok(done) = tokio::time::timeout_at(slice, wait.as_mut()).await {
                return Ok(done);
            }
            self.check()?;
        }
    }
}

/// Which call of a plugin is running, and which one was asked to stop. Calls are numbered,
/// so a cancel that arrives just after its call returned does not hit the next one.
#[derive(Debug, Default)]
pub(crate) struct CallControl {
    next: AtomicU64,
    running: AtomicU64,
    cancelled: AtomicU64,
}

impl CallControl {
    /// Marks the start of a call; returns its number.
    pub fn begin(&self) -> u64 {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.running.store(id, Ordering::Release);
        id
    }

    /// Marks the end of call `id`.
    pub fn end(&self, id: u64) {
        let _ = self
            .running
            .compare_exchange(id, 0, Ordering::AcqRel, Ordering::Relaxed);
    }

    /// Asks the running call, if any, to stop; returns whether one was running.
    pub fn cancel(&self) -> bool {
        let id = self.running.load(Ordering::Acquire);
        if id == 0 {
            return false;
        }
        self.cancelled.store(id, Ordering::Release);
        true
    }

    /// Whether call `id` was asked to stop.
    #[inline]
    pub fn is_cancelled(&self, id: u64) -> bool {
        self.cancelled.load(Ordering::Acquire) == id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cancel_hits_only_the_running_call() {
        let control = CallControl::default();
        assert!(!control.cancel(), "nothing runs");
        let first = control.begin();
        assert!(control.cancel());
        assert!(control.is_cancelled(first));
        control.end(first);
        let second = control.begin();
        assert!(!control.is_cancelled(second), "the next call is not hit");
        control.end(second);
        assert!(!control.cancel());
    }
}
