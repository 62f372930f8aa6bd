//! Boundary tracing. Every call into a plugin runs in a span (target `accelhost::trace`, level
//! TRACE) with the plugin, the call and its arguments, and ends with an event carrying the
//! result and the duration; every import a plugin makes is traced by the generated bindings
//! (target `accelhost::bindings`, level TRACE), inside that span. A subscriber that enables
//! those targets sees the whole boundary; `ACCELHOST_TRACE` asks the CLI to enable them. When
//! nothing listens, the cost is one check per call.

use std::fmt::Debug;
use std::time::Instant;

use tracing::Level;

use crate::text::inert;

/// Environment variable that switches boundary tracing on (`1`, `true`, `on` or `yes`).
pub const TRACE_ENV: &str = "ACCELHOST_TRACE";

/// The `tracing` targets of the boundary trace, for a subscriber's filter.
pub const TRACE_TARGETS: [&str; 2] = ["accelhost::trace", "accelhost::bindings"];

/// Whether `ACCELHOST_TRACE` asks for tracing.
pub fn enabled_by_env() -> bool {
    std::env::var(TRACE_ENV).is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "on" | "yes"
        )
    })
}

/// Runs `f`, one call into `plugin`, inside its trace span when tracing is on.
pub(crate) fn export<R: Debug>(
    plugin: &str,
    call: &str,
    args: std::fmt::Arguments<'_>,
    f: impl FnOnce() -> R,
) -> R {
    if !tracing::enabled!(target: "accelhost::trace", Level::TRACE) {
        return f();
    }
    let span = tracing::span!(
        target: "accelhost::trace",
        Level::TRACE,
        "call",
        plugin,
        call,
        args = %inert(&args.to_string()),
    );
    let _entered = span.enter();
    let started = Instant::now();
    let result = f();
    tracing::event!(
        target: "accelhost::trace",
        Level::TRACE,
        result = %inert(&format!("{result:?}")),
        nanos = started.elapsed().as_nanos() as u64,
        "returned"
    );
    result
}
