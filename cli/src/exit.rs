//! The exit status of the commands that report what the plugins found: `list`, `info`,
//! `plugins` and `demo` print what they found even when a plugin could not take part, and say
//! so with [`PARTIAL`].

use std::process::ExitCode;

use accelhost::text::inert;
use accelhost::{Error, Host, PluginStatus};

/// Exit status when a command printed what it found, but a plugin failed to load, faulted or
/// failed to enumerate, so devices may be missing from it.
pub const PARTIAL: u8 = 3;

/// What kept each plugin from taking part: failed enumerations (already warned about one by
/// one), then plugins that failed to load or faulted. A disabled plugin is the config's choice
/// and does not count.
pub fn missing(host: &Host, failures: &[Error]) -> Vec<String> {
    let mut missing: Vec<String> = failures
        .iter()
        .map(|failure| match failure.plugin() {
            Some(plugin) => format!("plugin '{plugin}' failed to enumerate"),
            None => "a plugin failed to enumerate".into(),
        })
        .collect();
    for plugin in host.plugins() {
        if failures
            .iter()
            .any(|f| f.plugin() == Some(plugin.name.as_str()))
        {
            continue;
        }
        let what = match plugin.status {
            PluginStatus::LoadFailed { .. } => "failed to load",
            PluginStatus::Restarting { .. } => "is restarting after a fault",
            PluginStatus::Faulted { .. } => "faulted",
            PluginStatus::Loading => "is still loading (its component is compiling)",
            _ => continue,
        };
        missing.push(format!("plugin '{}' {what}", plugin.name));
    }
    missing
}

/// Success, or [`PARTIAL`] with a warning naming what is `missing`.
pub fn found(missing: &[String]) -> ExitCode {
    if missing.is_empty() {
        return ExitCode::SUCCESS;
    }
    eprintln!(
        "warning: partial results (exit status {PARTIAL}): {}; `accelhost plugins` says why",
        inert(&missing.join(", "))
    );
    ExitCode::from(PARTIAL)
}
