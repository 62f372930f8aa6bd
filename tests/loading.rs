//! Loading plugins: what is refused, with which message, and what the load policy does.

mod support;

use accelhost::{ErrorCode, PluginStatus};
use support::{chaos_plugin, dfl_devices, dfl_plugin, guest, host, json_path, scratch_dir};

fn plugin_entry(name: &str, module: &str, on_error: &str) -> String {
    format!(
        r#"{{"name": "{name}", "module": "{module}", "load_policy": {{"on_error": "{on_error}"}}}}"#
    )
}

/// A config with the dfl plugin on one emulated card, plus `extra`.
fn with_dfl(extra: &str) -> String {
    format!(
        r#"{{"devices": {}, "plugins": [{}, {extra}]}}"#,
        dfl_devices(&["d0"]),
        dfl_plugin(&["d0"])
    )
}

fn failed_reason(host: &accelhost::Host, name: &str) -> String {
    let info = host.plugin(name).unwrap();
    match info.status {
        PluginStatus::LoadFailed { reason } => reason,
        other => panic!("{name} should have failed to load, is {other:?}"),
    }
}

#[test]
fn a_core_module_is_refused_with_a_clear_error() {
    let dir = scratch_dir("core");
    // The smallest valid core module: the header and no sections.
    std::fs::write(dir.join("core.wasm"), b"\0asm\x01\0\0\0").unwrap();
    let module = json_path(&dir.join("core.wasm"));
    let host = host(&with_dfl(&plugin_entry("core", &module, "skip"))).unwrap();
    let reason = failed_reason(&host, "core");
    assert!(
        reason.contains("core WebAssembly module, not a component"),
        "{reason}"
    );
    assert!(reason.contains("wasm32-wasip2"), "{reason}");
    // The other plugin is unaffected.
    assert_eq!(host.enumerate(&[]).tokens.len(), 1);
}

#[test]
fn a_file_that_is_not_wasm_is_refused() {
    let dir = scratch_dir("text");
    std::fs::write(dir.join("plugin.wasm"), b"#!/bin/sh\necho hi\n").unwrap();
    let module = json_path(&dir.join("plugin.wasm"));
    let err = host(&with_dfl(&plugin_entry("text", &module, "fail")))
        .err()
        .expect("on_error fail fails the whole load");
    assert_eq!(err.code(), ErrorCode::LoadFailed);
    let text = err.to_string();
    assert!(text.contains("plugin 'text'"), "{text}");
    assert!(text.contains("not a WebAssembly file"), "{text}");
}

#[test]
fn a_plugin_for_another_wit_major_version_is_refused_naming_both() {
    let module = json_path(&guest("fixture_future_wit"));
    let err = host(&with_dfl(&plugin_entry("future", &module, "fail")))
        .err()
        .expect("refused");
    assert_eq!(err.code(), ErrorCode::IncompatibleInterface, "{err}");
    let text = err.to_string();
    assert!(text.contains("accel:plugin@1.0.0"), "{text}");
    assert!(text.contains("accel:plugin@0.1.0"), "{text}");
    assert!(text.contains(accelhost::WIT_VERSION), "{text}");
    assert!(text.contains("plugin 'future'"), "{text}");

    let host = host(&with_dfl(&plugin_entry("future", &module, "skip"))).unwrap();
    let info = host.plugin("future").unwrap();
    assert!(matches!(info.status, PluginStatus::LoadFailed { .. }));
    assert_eq!(host.enumerate(&[]).tokens.len(), 1, "dfl still serves");
}

#[test]
fn a_plugin_that_refuses_its_config_is_reported_not_half_loaded() {
    let host = host(&with_dfl(&chaos_plugin(
        "picky",
        r#"{"refuse_in": "configure"}"#,
    )))
    .unwrap();
    let reason = failed_reason(&host, "picky");
    assert!(
        reason.contains("configure refused (invalid-argument)"),
        "{reason}"
    );
    assert!(
        reason.contains("chaos plugin refuses configure"),
        "{reason}"
    );
    let found = host.enumerate(&[]);
    assert!(found.failures.is_empty());
    assert!(found.tokens.iter().all(|t| t.plugin() == "dfl"));
}

#[test]
fn the_dfl_plugin_rejects_unknown_config_through_the_sdk_default() {
    let config = format!(
        r#"{{"devices": {}, "plugins": [{{"name": "dfl", "module": "builtin:dfl", "config": {{"speed": 9}},
            "grants": {{"devices": ["emu:d0"]}}}}]}}"#,
        dfl_devices(&["d0"])
    );
    let host = host(&config).unwrap();
    let reason = failed_reason(&host, "dfl");
    assert!(reason.contains("takes no configuration"), "{reason}");
}

#[test]
fn a_trap_at_initialize_fails_the_load_with_the_panic_message() {
    let host = host(&with_dfl(&chaos_plugin(
        "crasher",
        r#"{"trap_in": "initialize"}"#,
    )))
    .unwrap();
    let reason = failed_reason(&host, "crasher");
    assert!(reason.contains("initialize faulted"), "{reason}");
    assert!(
        reason.contains("chaos plugin asked to trap in initialize"),
        "{reason}"
    );
}

#[test]
fn disabled_plugins_are_listed_but_not_loaded() {
    let config = with_dfl(&format!(
        r#"{{"name": "off", "module": "{}", "enabled": false}}"#,
        json_path(&guest("accelhost_plugin_chaos"))
    ));
    let host = host(&config).unwrap();
    let off = host.plugin("off").unwrap();
    assert_eq!(off.status, PluginStatus::Disabled);
    assert_eq!(off.wit_version, None);
    let dfl = host.plugin("dfl").unwrap();
    assert_eq!(dfl.status, PluginStatus::Running);
    assert_eq!(dfl.wit_version.as_deref(), Some(accelhost::WIT_VERSION));
}

#[test]
fn check_module_validates_without_running_plugin_code() {
    let config = accelhost::Config::load(&support::write_config(&with_dfl(&chaos_plugin(
        "crasher",
        r#"{"trap_in": "configure"}"#,
    ))))
    .unwrap();
    let cache = accelhost::ComponentCache::at(Some(support::cache_dir()));
    for entry in &config.plugins {
        assert_eq!(
            accelhost::check_module(entry, &cache).unwrap().wit_version,
            accelhost::WIT_VERSION
        );
    }
}

/// A plugin loaded from the on-disk compile cache does not depend on the cache file once it
/// runs: the entry is copied into a sealed memory file before wasmtime maps it, so an entry
/// truncated under a running host (by a cache cleaner, a full disk) cannot fault the host with
/// SIGBUS; the next start finds the damaged entry and compiles again.
#[test]
fn a_plugin_from_the_cache_outlives_its_cache_entry_being_truncated() {
    // Made by the host, private to this user, as the cache must be.
    let cache = scratch_dir("truncated-cache").join("cache");
    let start = || {
        accelhost::Host::builder()
            .config(accelhost::Config::embedded_default())
            .cache_dir(&cache)
            .build()
            .unwrap()
    };
    drop(start());
    accelhost::perf::forget_loaded();
    let host = start();
    let entries: Vec<_> = std::fs::read_dir(&cache)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert!(!entries.is_empty(), "the first host filled the cache");
    for entry in &entries {
        std::fs::OpenOptions::new()
            .write(true)
            .open(entry)
            .unwrap()
            .set_len(0)
            .unwrap();
    }
    let found = host.enumerate(&[]);
    assert!(found.failures.is_empty(), "{:?}", found.failures);
    let mut read = 0;
    for token in &found.tokens {
        let handle = host.open(token, accelhost::OpenMode::Shared).unwrap();
        if token.plugin() == "dfl" {
            handle.map_mmio(0).unwrap().read64(0).unwrap();
            read += 1;
        }
        handle.close().unwrap();
    }
    assert!(read > 0, "an NLB0 register was read");
    drop(host);
    accelhost::perf::forget_loaded();
    let again = start();
    assert!(again.enumerate(&[]).failures.is_empty());
    assert!(
        entries
            .iter()
            .all(|e| std::fs::metadata(e).unwrap().len() > 0),
        "the damaged entries were compiled and stored again"
    );
}
