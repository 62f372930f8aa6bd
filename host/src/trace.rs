//! Boundary tracing: with `ACCELHOST_TRACE=1`, every call into a plugin and every import a
//! plugin makes is recorded as a `tracing` event (target `accelhost::trace`) with the plugin,
//! the call, its arguments, its result and its duration. When off, the only cost is a bool test.

use std::fmt::Debug;
use std::time::Duration;

use crate::text::inert;

/// Environment variable that switches boundary tracing on (`1`, `true`, `on` or `yes`).
pub const TRACE_ENV: &str = "ACCELHOST_TRACE";

/// Whether `ACCELHOST_TRACE` asks for tracing.
pub fn enabled_by_env() -> bool {
    std::env::var(TRACE_ENV).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "on" | "yes"
        )
    })
}

/// Which way a traced call crossed the boundary.
#[derive(Clone, Copy, Debug)]
pub enum Direction {
    /// The host called a plugin export.
    Export,
    /// A plugin called a host import.
    Import,
}

/// Records one call across the boundary.
pub fn record(
    direction: Direction,
    plugin: &str,
    call: &str,
    args: &str,
    result: &dyn Debug,
    elapsed: Duration,
) {
    let direction = match direction {
        Direction::Export => "host->plugin",
        Direction::Import => "plugin->host",
    };
    tracing::info!(
        target: "accelhost::trace",
        plugin,
        call,
        args = %inert(args.trim_end()),
        result = %inert(&format!("{result:?}")),
        nanos = elapsed.as_nanos() as u64,
        "{direction}"
    );
}
