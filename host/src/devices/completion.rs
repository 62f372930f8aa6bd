//! Completion objects: set by a device (or a plugin, for work it finished at once) and waited
//! on by the host, never inside a plugin.

use std::sync::{Condvar, Mutex};
use std::time::Instant;

/// Where a completion stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CompletionState {
    /// Not finished yet.
    Pending,
    /// Finished successfully.
    Complete,
    /// Finished with an error; the message says why.
    Failed(String),
}

/// A one-shot completion with a blocking wait.
#[derive(Debug)]
pub struct Completion {
    state: Mutex<CompletionState>,
    changed: Condvar,
}

impl Default for Completion {
    fn default() -> Self {
        Completion {
            state: Mutex::new(CompletionState::Pending),
            changed: Condvar::new(),
        }
    }
}

impl Completion {
    /// A completion that is already in `state`.
    pub fn with_state(state: CompletionState) -> Self {
        Completion {
            state: Mutex::new(state),
            changed: Condvar::new(),
        }
    }

    /// The current state, without waiting.
    pub fn state(&self) -> CompletionState {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Moves a pending completion to `state` and wakes the waiters; later calls do nothing.
    pub fn finish(&self, state: CompletionState) {
        let mut current = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if *current == CompletionState::Pending {
            *current = state;
            self.changed.notify_all();
        }
    }

    /// Waits until the completion is no longer pending or `deadline` passes; returns the
    /// state it ended in (`Pending` on timeout).
    pub fn wait(&self, deadline: Instant) -> CompletionState {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        while *state == CompletionState::Pending {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = self
                .changed
                .wait_timeout(state, deadline - now)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        state.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Duration;

    #[test]
    fn wait_wakes_on_finish_and_times_out_otherwise() {
        let done = Arc::new(Completion::default());
        let setter = done.clone();
        let t = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(10));
            setter.finish(CompletionState::Complete);
            setter.finish(CompletionState::Failed("ignored".into()));
        });
        let state = done.wait(Instant::now() + Duration::from_secs(5));
        assert_eq!(state, CompletionState::Complete);
        t.join().unwrap();
        let pending = Completion::default();
        let state = pending.wait(Instant::now() + Duration::from_millis(5));
        assert_eq!(state, CompletionState::Pending);
    }
}
