//! A plugin's log volume budget (`load_policy.log_bytes_per_second`), shared by its log lines
//! and its stdout and stderr, and by its instances across restarts.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::devices::lock;

/// A plugin's log volume budget (`load_policy.log_bytes_per_second`), shared by its log lines
/// and its stdout and stderr, and by its instances across restarts. Lines over the budget are
/// dropped and counted.
#[derive(Clone)]
pub struct LogBudget {
    inner: Arc<Mutex<Window>>,
    dropped: Arc<AtomicU64>,
}

struct Window {
    bytes_per_second: u64,
    start: Option<Instant>,
    bytes: u64,
    suppressed: u64,
}

impl LogBudget {
    /// A budget of `bytes_per_second`.
    pub fn new(bytes_per_second: u64) -> Self {
        LogBudget {
            inner: Arc::new(Mutex::new(Window {
                bytes_per_second,
                start: None,
                bytes: 0,
                suppressed: 0,
            })),
            dropped: Arc::default(),
        }
    }

    /// Charges `len` bytes; returns whether the line may be written, and how many lines
    /// were dropped in the window that just ended (to report once).
    pub(crate) fn charge(&self, len: usize) -> (bool, u64) {
        let now = Instant::now();
        let mut window = lock(&self.inner);
        let mut dropped = 0;
        if window
            .start
            .is_none_or(|start| now.duration_since(start).as_secs() >= 1)
        {
            dropped = std::mem::take(&mut window.suppressed);
            window.start = Some(now);
            window.bytes = 0;
        }
        if window.bytes + len as u64 > window.bytes_per_second {
            window.suppressed += 1;
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return (false, dropped);
        }
        window.bytes += len as u64;
        (true, dropped)
    }

    /// Lines dropped so far, over all windows.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_drops_lines_over_the_limit_and_reports_them() {
        let budget = LogBudget::new(1000);
        assert_eq!(budget.charge(1000), (true, 0));
        assert_eq!(budget.charge(1), (false, 0));
        assert_eq!(
            budget.clone().charge(1),
            (false, 0),
            "clones share the budget"
        );
        budget.inner.lock().unwrap().start =
            Some(Instant::now() - std::time::Duration::from_secs(2));
        assert_eq!(budget.charge(10), (true, 2));
        assert_eq!(budget.dropped(), 2);
    }
}
