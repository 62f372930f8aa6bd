//! A plugin that traps, hangs or runs out of memory ends its own instance only: its callers
//! get a clear error, its tokens and handles stop working, and the other plugins go on.

mod support;

use std::time::Instant;

use accelhost::workloads::nlb0::{is_nlb0, loopback};
use accelhost::{ErrorCode, Filter, Host, OpenMode, PluginStatus};
use support::{dfl_devices, dfl_plugin, faulty_plugin, faulty_plugin_granted, host};

fn with_faulty(config: &str) -> Host {
    host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["d0"]),
        dfl_plugin(&["d0"]),
        faulty_plugin("faulty", config)
    ))
    .unwrap()
}

/// The dfl plugin still runs the hello_fpga flow byte-exactly.
fn dfl_still_works(host: &Host) {
    let tokens = host.enumerate(&[Filter::new().guid(accelhost::devices::dfl::abi::nlb0::AFU_ID)]);
    let token = tokens
        .tokens
        .into_iter()
        .find(is_nlb0)
        .expect("the NLB0 port");
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    assert!(loopback(&handle, 256 << 10).unwrap().verified());
    handle.close().unwrap();
}

fn faulted_reason(host: &Host) -> String {
    let info = host
        .plugins()
        .into_iter()
        .find(|p| p.name == "faulty")
        .unwrap();
    match info.status {
        PluginStatus::Faulted { reason } => reason,
        other => panic!("expected a fault, found {other:?}"),
    }
}

#[test]
fn a_trap_in_enumerate_ends_that_plugin_only() {
    let host = with_faulty(r#"{"trap_in": "enumerate"}"#);
    let found = host.enumerate(&[]);
    assert_eq!(found.failures.len(), 1);
    let err = &found.failures[0];
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    let text = err.to_string();
    assert!(
        text.contains("plugin 'faulty' faulted in enumerate"),
        "{text}"
    );
    assert!(
        text.contains("fixture asked to trap in enumerate"),
        "the panic message: {text}"
    );
    assert_eq!(found.tokens.len(), 1, "the dfl port is still listed");
    assert!(faulted_reason(&host).contains("enumerate"));
    dfl_still_works(&host);
    // Later enumerations skip the stopped plugin without an error.
    let again = host.enumerate(&[]);
    assert!(again.failures.is_empty(), "{:?}", again.failures);
    assert_eq!(again.tokens.len(), 1);
}

#[test]
fn a_trap_in_open_invalidates_the_plugins_tokens_and_handles() {
    let host = with_faulty(r#"{"trap_in": "reset"}"#);
    let token = host
        .enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .remove(0);
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    let err = handle.reset().unwrap_err();
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    assert!(!token.is_valid());
    assert!(!handle.is_open());
    let err = handle.reset().unwrap_err();
    assert_eq!(err.code(), ErrorCode::Stale, "{err}");
    assert!(err.to_string().contains("faulted in reset"), "{err}");
    let err = host.open(&token, OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::Stale, "{err}");
    handle.close().unwrap();
    dfl_still_works(&host);
}

#[test]
fn an_infinite_loop_is_stopped_at_the_deadline() {
    let host = with_faulty(r#"{"hang_in": "open"}"#);
    let token = host
        .enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .remove(0);
    let started = Instant::now();
    let err = host.open(&token, OpenMode::Exclusive).unwrap_err();
    let waited = started.elapsed();
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    assert!(err.to_string().contains("300 ms call deadline"), "{err}");
    assert!(waited.as_millis() >= 300, "stopped too early: {waited:?}");
    assert!(waited.as_secs() < 10, "stopped too late: {waited:?}");
    dfl_still_works(&host);
}

#[test]
fn unbounded_memory_growth_hits_the_limit() {
    let host = with_faulty(r#"{"grow_in": "enumerate"}"#);
    let found = host.enumerate(&[]);
    assert_eq!(found.failures.len(), 1);
    let err = &found.failures[0];
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    assert!(err.to_string().contains("memory limit of 32 MiB"), "{err}");
    assert!(faulted_reason(&host).contains("enumerate"));
    dfl_still_works(&host);
}

#[test]
fn a_trapping_plugin_does_not_disturb_concurrent_work() {
    let host = host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["c0", "c1", "c2", "c3"]),
        dfl_plugin(&["c0", "c1", "c2", "c3"]),
        faulty_plugin("faulty", r#"{"trap_in": "describe"}"#)
    ))
    .unwrap();
    let ports: Vec<_> = host
        .enumerate(&[Filter::new().guid(accelhost::devices::dfl::abi::nlb0::AFU_ID)])
        .tokens;
    assert_eq!(ports.len(), 4);
    let faulty = host
        .enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .remove(0);
    std::thread::scope(|scope| {
        let mut workers = Vec::new();
        for thread in 0..8usize {
            let token = ports[thread % 4].clone();
            let host = &host;
            workers.push(scope.spawn(move || {
                let mut done = 0;
                while done < 4 {
                    match host.open(&token, OpenMode::Exclusive) {
                        Ok(handle) => {
                            let size = (64 << 10) * (1 + (thread as u64 + done) % 4);
                            let report = loopback(&handle, size).unwrap();
                            assert!(report.verified(), "thread {thread}: {report:?}");
                            handle.close().unwrap();
                            done += 1;
                        }
                        Err(err) if err.code() == ErrorCode::Busy => std::thread::yield_now(),
                        Err(err) => panic!("thread {thread}: {err}"),
                    }
                }
            }));
        }
        scope.spawn(|| {
            let err = faulty.refresh().unwrap_err();
            assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
        });
        for worker in workers {
            worker.join().unwrap();
        }
    });
    assert!(faulted_reason(&host).contains("describe"));
    dfl_still_works(&host);
}

#[test]
fn a_faulted_plugins_devices_are_released() {
    let host = host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["shared"]),
        dfl_plugin(&["shared"]),
        faulty_plugin_granted(
            "holder",
            r#"{"hold": "emu:shared", "trap_in": "reset"}"#,
            &["emu:shared"]
        )
    ))
    .unwrap();
    let holder = host
        .enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .remove(0);
    let port = host
        .enumerate(&[Filter::new().guid(accelhost::devices::dfl::abi::nlb0::AFU_ID)])
        .tokens
        .remove(0);
    let held = host.open(&holder, OpenMode::Exclusive).unwrap();
    let err = host.open(&port, OpenMode::Exclusive).unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::Busy,
        "the holder has the port: {err}"
    );
    assert_eq!(held.reset().unwrap_err().code(), ErrorCode::PluginFaulted);
    // The fault closed the holder's port: it can be opened and used again.
    let handle = host.open(&port, OpenMode::Exclusive).unwrap();
    assert!(loopback(&handle, 64 << 10).unwrap().verified());
}
