//! `log` and `clock`: a plugin's log lines go to `tracing`, within its volume budget.

use std::sync::OnceLock;
use std::time::Instant;

use crate::bindings::accel::plugin::{clock, log};
use crate::state::PluginState;
use crate::text::{cut_to, inert};

/// The longest log line kept; longer ones are cut.
const MAX_LINE: usize = 4096;

impl log::Host for PluginState {
    fn log(&mut self, level: log::Level, message: String) -> wasmtime::Result<()> {
        let message = cut_to(message, MAX_LINE);
        let (allowed, dropped) = self.ctx.log.charge(message.len());
        let plugin = self.ctx.name.as_str();
        let message = inert(&message);
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
