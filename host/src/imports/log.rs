//! `log` and `clock`: a plugin's log lines go to `tracing`, within a volume budget.

use std::sync::OnceLock;
use std::time::Instant;

use super::{PluginState, traced};
use crate::runtime::bindings::accel::plugin::{clock, log};

/// The longest log line kept; longer ones are cut.
const MAX_LINE: usize = 4096;
/// Bytes of log a plugin may write per second; the rest is dropped and counted.
const BYTES_PER_SECOND: usize = 256 * 1024;

/// A per-instance log volume budget, reset every second.
#[derive(Default)]
pub struct LogBudget {
    window_start: Option<Instant>,
    bytes: usize,
    suppressed: u64,
}

impl LogBudget {
    /// Charges `len` bytes; returns whether the line may be written, and how many lines
    /// were dropped in the window that just ended (to report once).
    pub(crate) fn charge(&mut self, len: usize) -> (bool, u64) {
        let now = Instant::now();
        let mut dropped = 0;
        if self
            .window_start
            .is_none_or(|start| now.duration_since(start).as_secs() >= 1)
        {
            dropped = std::mem::take(&mut self.suppressed);
            self.window_start = Some(now);
            self.bytes = 0;
        }
        if self.bytes + len > BYTES_PER_SECOND {
            self.suppressed += 1;
            return (false, dropped);
        }
        self.bytes += len;
        (true, dropped)
    }
}

impl log::Host for PluginState {
    fn log(&mut self, level: log::Level, mut message: String) -> wasmtime::Result<()> {
        traced!(self, "log.log", [level], {
            if message.len() > MAX_LINE {
                let mut cut = MAX_LINE;
                while !message.is_char_boundary(cut) {
                    cut -= 1;
                }
                message.truncate(cut);
                message.push_str(" [cut]");
            }
            let (allowed, dropped) = self.log.charge(message.len());
            let plugin = self.ctx.name.as_str();
            if dropped > 0 {
                tracing::warn!(target: "accelhost::plugin", plugin, "{dropped} log line(s) dropped: over the log budget");
            }
            if allowed {
                match level {
                    log::Level::Error => {
                        tracing::error!(target: "accelhost::plugin", plugin, "{message}")
                    }
                    log::Level::Warn => {
                        tracing::warn!(target: "accelhost::plugin", plugin, "{message}")
                    }
                    log::Level::Info => {
                        tracing::info!(target: "accelhost::plugin", plugin, "{message}")
                    }
                    log::Level::Debug => {
                        tracing::debug!(target: "accelhost::plugin", plugin, "{message}")
                    }
                    log::Level::Trace => {
                        tracing::trace!(target: "accelhost::plugin", plugin, "{message}")
                    }
                }
            }
            Ok(())
        })
    }
}

/// A fixed point for the monotonic clock, shared by every plugin.
fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

impl clock::Host for PluginState {
    fn now_ns(&mut self) -> wasmtime::Result<u64> {
        Ok(epoch().elapsed().as_nanos() as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budget_drops_lines_over_the_limit_and_reports_them() {
        let mut budget = LogBudget::default();
        assert_eq!(budget.charge(BYTES_PER_SECOND), (true, 0));
        assert_eq!(budget.charge(1), (false, 0));
        assert_eq!(budget.charge(1), (false, 0));
        budget.window_start = Some(Instant::now() - std::time::Duration::from_secs(2));
        assert_eq!(budget.charge(10), (true, 2));
    }
}
