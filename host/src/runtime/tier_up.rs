//! An optimized compile running in the background for a plugin started on baseline code:
//! its worker while it runs, and its outcome once it ended, for who waits for it.

use std::os::unix::net::UnixStream;
use std::sync::{Condvar, Mutex};

use super::LoadError;
use super::compile::PROGRESS_TARGET;
use super::worker::{self, IntoCache};
use crate::devices::lock;
use crate::text::inert;

/// One plugin's optimized compile in the background.
#[derive(Default)]
pub(super) struct TierUp {
    outcome: Mutex<Option<Result<(), LoadError>>>,
    ended: Condvar,
    /// The worker's stdin while it runs, to let it finish if this process ends.
    worker_stdin: Mutex<Option<UnixStream>>,
}

impl TierUp {
    /// Keeps a way to reach `worker` while it runs.
    pub fn running(&self, worker: &IntoCache) {
        *lock(&self.worker_stdin) = worker.stdin().ok();
    }

    /// Lets the worker finish into the compile cache if this process ends before it.
    pub fn let_finish(&self) {
        if let Some(stdin) = lock(&self.worker_stdin).as_ref() {
            worker::let_finish(stdin);
        }
    }

    /// Records the compile's outcome, says it, and wakes who waits for it.
    pub fn end(&self, plugin: &str, outcome: Result<(), LoadError>) {
        match &outcome {
            Ok(()) => tracing::info!(
                target: PROGRESS_TARGET,
                "plugin '{}': its optimized code is compiled and cached; instances started \
                 from now on run it",
                inert(plugin)
            ),
            Err(err) => tracing::warn!(
                "plugin '{}' keeps running on baseline code: its optimized compile failed: {err}",
                inert(plugin)
            ),
        }
        *lock(&self.outcome) = Some(outcome);
        lock(&self.worker_stdin).take();
        self.ended.notify_all();
    }

    /// Waits for the compile to end and gives its outcome.
    #[cfg(feature = "internals")]
    pub fn wait(&self) -> Result<(), LoadError> {
        let mut outcome = lock(&self.outcome);
        loop {
            if let Some(outcome) = outcome.as_ref() {
                return outcome.clone();
            }
            outcome = self
                .ended
                .wait(outcome)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}
