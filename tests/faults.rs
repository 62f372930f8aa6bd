//! A plugin that traps, hangs, runs out of memory or fuel, or is cancelled ends its own
//! instance only: its callers get a clear error, its tokens, handles and pending events stop
//! working, what it held is released, the other plugins go on, and its load policy decides
//! whether a fresh instance starts.

use crate::support;

use std::time::{Duration, Instant};

use accelhost::workloads::nlb0::{is_nlb0, loopback};
use accelhost::{ErrorCode, FaultCause, Filter, Host, OpenMode, PluginStatus, TrapKind};
use support::{
    chaos_plugin, chaos_plugin_granted, chaos_plugin_with, dfl_devices, dfl_plugin, host,
};

fn with_faulty(config: &str) -> Host {
    host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["d0"]),
        dfl_plugin(&["d0"]),
        chaos_plugin("faulty", config)
    ))
    .unwrap()
}

/// The dfl plugin still runs the hello_fpga flow byte-exactly.
fn dfl_still_works(host: &Host) {
    let tokens = host.enumerate(&[Filter::new().guid(accelhost::families::dfl::abi::nlb0::AFU_ID)]);
    let token = tokens
        .tokens
        .into_iter()
        .find(is_nlb0)
        .expect("the NLB0 port");
    let handle = host.open(&token, OpenMode::Exclusive).unwrap();
    assert!(loopback(&handle, 256 << 10).unwrap().verified());
    handle.close().unwrap();
}

/// Why plugin `faulty` faulted, as `accelhost plugins` shows it.
fn faulted(host: &Host) -> (FaultCause, String) {
    let info = host.plugin("faulty").unwrap();
    match info.status {
        PluginStatus::Faulted { cause, reason } => (cause, reason),
        other => panic!("expected a fault, found {other:?}"),
    }
}

/// The chaos plugin's traps are Rust panics, which reach the host as `unreachable`.
fn is_panic(cause: Option<&FaultCause>) -> bool {
    matches!(
        cause,
        Some(FaultCause::Trap {
            kind: TrapKind::Unreachable,
            ..
        })
    )
}

#[test]
fn a_trap_in_enumerate_ends_that_plugin_only() {
    let host = with_faulty(r#"{"trap_in": "enumerate"}"#);
    let found = host.enumerate(&[]);
    assert_eq!(found.failures.len(), 1);
    let err = &found.failures[0];
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    assert!(is_panic(err.fault_cause()), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("plugin 'faulty' faulted in enumerate"),
        "{text}"
    );
    assert!(
        text.contains("chaos plugin asked to trap in enumerate"),
        "the panic message: {text}"
    );
    assert_eq!(found.tokens.len(), 1, "the dfl port is still listed");
    let (cause, reason) = faulted(&host);
    assert!(is_panic(Some(&cause)), "{cause:?}");
    assert!(reason.starts_with("in enumerate: "), "{reason}");
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
    assert!(is_panic(err.fault_cause()), "{err}");
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
    assert_eq!(
        err.fault_cause(),
        Some(&FaultCause::Deadline { timeout_ms: 300 }),
        "{err}"
    );
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
    assert_eq!(
        err.fault_cause(),
        Some(&FaultCause::MemoryLimit { limit_mib: 32 }),
        "{err}"
    );
    assert!(err.to_string().contains("load_policy.memory_mib"), "{err}");
    let (cause, reason) = faulted(&host);
    assert_eq!(cause, FaultCause::MemoryLimit { limit_mib: 32 });
    assert!(reason.starts_with("in enumerate: "), "{reason}");
    dfl_still_works(&host);
}

#[test]
fn a_trapping_plugin_does_not_disturb_concurrent_work() {
    let host = host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["c0", "c1", "c2", "c3"]),
        dfl_plugin(&["c0", "c1", "c2", "c3"]),
        chaos_plugin("faulty", r#"{"trap_in": "describe"}"#)
    ))
    .unwrap();
    let ports: Vec<_> = host
        .enumerate(&[Filter::new().guid(accelhost::families::dfl::abi::nlb0::AFU_ID)])
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
    let (cause, reason) = faulted(&host);
    assert!(is_panic(Some(&cause)), "{cause:?}");
    assert!(reason.starts_with("in describe: "), "{reason}");
    dfl_still_works(&host);
}

#[test]
fn a_faulted_plugins_devices_are_released() {
    let host = host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["shared"]),
        dfl_plugin(&["shared"]),
        chaos_plugin_granted(
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
        .enumerate(&[Filter::new().guid(accelhost::families::dfl::abi::nlb0::AFU_ID)])
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

/// Polls `host` until plugin `name` reaches a state `want` accepts, for at most 10 s.
fn wait_for_status(host: &Host, name: &str, want: impl Fn(&PluginStatus) -> bool) -> PluginStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = host.plugin(name).unwrap().status;
        if want(&status) {
            return status;
        }
        assert!(Instant::now() < deadline, "still {status:?}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

fn chaos_token(host: &Host) -> accelhost::Token {
    host.enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .remove(0)
}

fn restarting_chaos(config: &str, policy: &str) -> Host {
    host(&format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["d0"]),
        dfl_plugin(&["d0"]),
        chaos_plugin_with("chaos", config, &[], policy)
    ))
    .unwrap()
}

#[test]
fn a_faulted_plugin_restarts_after_its_backoff_and_old_tokens_stay_dead() {
    let host = restarting_chaos(
        r#"{"trap_in": "reset"}"#,
        r#""on_fault": "restart", "restart_backoff_ms": 50"#,
    );
    let old_token = chaos_token(&host);
    let old_handle = host.open(&old_token, OpenMode::Shared).unwrap();
    let err = old_handle.reset().unwrap_err();
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    match wait_for_status(&host, "chaos", |_| true) {
        PluginStatus::Restarting {
            attempt,
            max_restarts,
            backoff_ms,
            cause,
            reason,
        } => {
            assert_eq!((attempt, max_restarts, backoff_ms), (1, 3, 50));
            assert!(is_panic(Some(&cause)), "{cause:?}");
            assert!(reason.starts_with("in reset: "), "{reason}");
        }
        PluginStatus::Running => {} // the restart already happened
        other => panic!("{other:?}"),
    }
    wait_for_status(&host, "chaos", |s| *s == PluginStatus::Running);
    let info = host.plugin("chaos").unwrap();
    assert_eq!(info.restarts, 1);
    // Everything from the old instance is refused, even though a new one runs.
    assert!(!old_token.is_valid());
    assert_eq!(
        host.open(&old_token, OpenMode::Shared).unwrap_err().code(),
        ErrorCode::Stale
    );
    assert_eq!(old_handle.reset().unwrap_err().code(), ErrorCode::Stale);
    // New tokens work.
    let token = chaos_token(&host);
    let handle = host.open(&token, OpenMode::Shared).unwrap();
    assert_eq!(
        token.refresh().unwrap().name,
        "chaos0",
        "the new instance answers"
    );
    handle.close().unwrap();
    dfl_still_works(&host);
}

#[test]
fn restarts_back_off_exponentially_and_stop_at_the_maximum() {
    let host = restarting_chaos(
        r#"{"trap_in": "describe"}"#,
        r#""on_fault": "restart", "restart_backoff_ms": 20, "max_restarts": 2"#,
    );
    let mut backoffs = Vec::new();
    for _ in 0..3 {
        wait_for_status(&host, "chaos", |s| *s == PluginStatus::Running);
        let err = chaos_token(&host).refresh().unwrap_err();
        assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
        if let PluginStatus::Restarting { backoff_ms, .. } =
            wait_for_status(&host, "chaos", |_| true)
        {
            backoffs.push(backoff_ms);
        }
    }
    assert_eq!(backoffs, [20, 40], "doubling, then no third restart");
    let PluginStatus::Faulted { reason, .. } = wait_for_status(&host, "chaos", |s| {
        matches!(s, PluginStatus::Faulted { .. })
    }) else {
        unreachable!()
    };
    assert!(
        reason.contains("already restarted 2 times (load_policy.max_restarts)"),
        "{reason}"
    );
    let err = chaos_token_err(&host);
    assert!(err.contains("faulted"), "{err}");
    dfl_still_works(&host);
}

/// What enumerate says about chaos when it does not run: it is skipped, without error.
fn chaos_token_err(host: &Host) -> String {
    let found = host.enumerate(&[Filter::new().vendor_id(0x1234)]);
    assert!(found.tokens.is_empty());
    assert!(found.failures.is_empty());
    host.plugin("chaos").unwrap().status.to_string()
}

#[test]
fn a_call_stuck_in_wasm_or_in_a_host_wait_is_cancelled_from_another_thread() {
    for config in [r#"{"hang_in": "open"}"#, r#"{"block_in": "open"}"#] {
        let host = host(&format!(
            r#"{{"plugins": [{}]}}"#,
            chaos_plugin_with(
                "chaos",
                config,
                &[],
                r#""call_timeout_ms": 60000, "on_fault": "disable""#
            )
        ))
        .unwrap();
        let token = chaos_token(&host);
        assert!(!host.cancel("chaos").unwrap(), "nothing runs yet");
        let started = Instant::now();
        std::thread::scope(|scope| {
            let canceller = scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                while !host.cancel("chaos").unwrap() {
                    std::thread::sleep(Duration::from_millis(5));
                }
                Instant::now()
            });
            let err = host.open(&token, OpenMode::Shared).unwrap_err();
            let cancelled_at = canceller.join().unwrap();
            assert_eq!(err.code(), ErrorCode::PluginFaulted, "{config}: {err}");
            assert_eq!(err.fault_cause(), Some(&FaultCause::Cancelled), "{err}");
            let latency = cancelled_at.elapsed();
            assert!(
                latency < Duration::from_secs(2),
                "{config}: the cancel took {latency:?}"
            );
        });
        assert!(started.elapsed() < Duration::from_secs(10));
        let err = host.cancel("nobody").unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidArgument, "{err}");
    }
}

#[test]
fn waits_on_a_faulted_plugins_events_wake_with_an_error() {
    let host = host(&format!(
        r#"{{"devices": [{{"id": "x0", "family": "xocl"}}], "plugins": [{}]}}"#,
        chaos_plugin_granted(
            "chaos",
            r#"{"trap_in": "reset", "pending_on": "emu:x0"}"#,
            &["emu:x0"]
        )
    ))
    .unwrap();
    let handle = host.open(&chaos_token(&host), OpenMode::Shared).unwrap();
    // A BO sync queued behind an event that never fires: only the fault can end it.
    let queued = handle
        .register_event(accelhost::EventKind::Interrupt, 0)
        .unwrap();
    assert_eq!(queued.status(), accelhost::EventStatus::Pending);
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let started = Instant::now();
            (
                queued.wait_timeout(Duration::from_secs(30)),
                started.elapsed(),
            )
        });
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(handle.reset().unwrap_err().code(), ErrorCode::PluginFaulted);
        let (result, waited) = waiter.join().unwrap();
        let err = result.unwrap_err();
        assert!(
            err.to_string().contains("plugin 'chaos' faulted in reset"),
            "{err}"
        );
        assert!(waited < Duration::from_secs(10), "{waited:?}");
    });
}

#[test]
fn a_fuel_budget_stops_a_loop_by_instruction_count() {
    let host = host(&format!(
        r#"{{"plugins": [{}]}}"#,
        chaos_plugin_with(
            "chaos",
            r#"{"hang_in": "describe"}"#,
            &[],
            r#""fuel": 50000000, "call_timeout_ms": 60000, "on_fault": "disable""#
        )
    ))
    .unwrap();
    let token = chaos_token(&host);
    let started = Instant::now();
    let err = token.refresh().unwrap_err();
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    assert_eq!(
        err.fault_cause(),
        Some(&FaultCause::Fuel { fuel: 50_000_000 }),
        "{err}"
    );
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn open_handles_are_capped_per_plugin() {
    let host = restarting_chaos("{}", r#""max_handles": 2"#);
    let token = chaos_token(&host);
    let first = host.open(&token, OpenMode::Shared).unwrap();
    let _second = host.open(&token, OpenMode::Shared).unwrap();
    let err = host.open(&token, OpenMode::Shared).unwrap_err();
    assert_eq!(err.code(), ErrorCode::NoSpace, "{err}");
    assert!(err.to_string().contains("load_policy.max_handles"), "{err}");
    first.close().unwrap();
    host.open(&token, OpenMode::Shared).unwrap();
}

#[test]
fn a_faulted_plugins_cxl_context_is_released() {
    let host = host(
        r#"{"devices": [{"id": "v", "family": "cxl", "accelerator": "vadd"}],
            "plugins": [
              {"name": "cxl", "module": "builtin:cxl", "grants": {"devices": ["emu:v"]}},
              {"name": "chaos", "module": "builtin:chaos",
               "config": {"hold": "emu:v", "trap_in": "reset"},
               "grants": {"devices": ["emu:v"]}, "load_policy": {"on_fault": "disable"}}]}"#,
    )
    .unwrap();
    let held = host.open(&chaos_token(&host), OpenMode::Shared).unwrap();
    let vadd = host
        .enumerate(&[])
        .tokens
        .into_iter()
        .find(|t| accelhost::workloads::capi::node_kind(t) == Some('d'))
        .unwrap();
    let err = host.open(&vadd, OpenMode::Shared).unwrap_err();
    assert_eq!(
        err.code(),
        ErrorCode::NoSpace,
        "chaos holds the one context: {err}"
    );
    assert_eq!(held.reset().unwrap_err().code(), ErrorCode::PluginFaulted);
    let handle = host.open(&vadd, OpenMode::Shared).unwrap();
    let report = accelhost::workloads::capi::vadd_run(&handle, 10_000).unwrap();
    assert!(report.verified(), "{report:?}");
}
