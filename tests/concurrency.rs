//! Many application threads on many devices and plugins at once — NLB0 loopbacks on two DFL
//! ports, CAPI memcpy on shared contexts, XRT vadd on one card, enumeration and property
//! refreshes across every plugin, calls into the chaos plugin — while the chaos plugin crashes
//! in the middle and is restarted. Every result is checked, every completion ends (the chaos
//! plugin's pending events fail with the fault, none is lost), and nothing deadlocks: a
//! watchdog fails the test if any thread is still running after two minutes.

use crate::support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use accelhost::workloads::{capi, nlb0, vadd};
use accelhost::{ErrorCode, EventKind, EventStatus, Filter, Host, OpenMode, PluginStatus, Token};
use support::{chaos_plugin_with, host};

/// One round of a worker's job; it gets the round's number.
type Round = Box<dyn Fn(&Host, u32) + Send>;

/// Iterations each worker must complete before it stops.
const ROUNDS: u32 = 12;

fn config() -> String {
    format!(
        r#"{{"devices": [
              {{"id": "d0", "family": "dfl"}}, {{"id": "d1", "family": "dfl"}},
              {{"id": "m0", "family": "cxl", "accelerator": "memcpy"}},
              {{"id": "x0", "family": "xocl"}}],
            "plugins": [
              {{"name": "dfl", "module": "builtin:dfl", "grants": {{"devices": ["emu:d0", "emu:d1"]}}}},
              {{"name": "cxl", "module": "builtin:cxl", "grants": {{"devices": ["emu:m0"]}}}},
              {{"name": "xocl", "module": "builtin:xocl", "grants": {{"devices": ["emu:x0"]}}}},
              {}]}}"#,
        chaos_plugin_with(
            "chaos",
            r#"{"trap_in": "reset"}"#,
            &[],
            r#""on_fault": "restart", "restart_backoff_ms": 20, "call_timeout_ms": 5000"#
        )
    )
}

fn find(host: &Host, pick: impl Fn(&Token) -> bool) -> Token {
    host.enumerate(&[])
        .tokens
        .into_iter()
        .find(pick)
        .expect("the device is listed")
}

/// The errors a caller of the chaos plugin may see while it crashes and restarts.
fn restart_error(code: ErrorCode) -> bool {
    matches!(
        code,
        ErrorCode::PluginFaulted | ErrorCode::Stale | ErrorCode::PluginUnavailable
    )
}

#[test]
fn many_threads_many_devices_and_a_plugin_that_crashes_and_restarts() {
    let host = Arc::new(host(&config()).unwrap());
    let done: Arc<Vec<AtomicU32>> = Arc::new((0..10).map(|_| AtomicU32::new(0)).collect());
    let crashed = Arc::new(AtomicBool::new(false));
    let mut workers: Vec<(&str, std::thread::JoinHandle<()>)> = Vec::new();
    let spawn = |name: &'static str,
                 index: usize,
                 body: Round|
     -> (&'static str, std::thread::JoinHandle<()>) {
        let (host, done) = (host.clone(), done.clone());
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                for round in 0..ROUNDS {
                    body(&host, round);
                    done[index].fetch_add(1, Ordering::Release);
                }
            })
            .unwrap();
        (name, thread)
    };

    for (index, port) in ["emu:d0", "emu:d1"].into_iter().enumerate() {
        workers.push(spawn(
            "nlb0",
            index,
            Box::new(move |host, round| {
                let token = find(host, |t| t.properties().name == port);
                let handle = host.open(&token, OpenMode::Exclusive).unwrap();
                let report =
                    nlb0::loopback(&handle, (64 << 10) * u64::from(1 + round % 4)).unwrap();
                assert!(report.verified(), "{port}: {report:?}");
                handle.close().unwrap();
            }),
        ));
    }
    for index in 2..4 {
        workers.push(spawn(
            "capi-memcpy",
            index,
            Box::new(|host, round| {
                let token = find(host, |t| capi::node_kind(t) == Some('s'));
                let handle = host.open(&token, OpenMode::Shared).unwrap();
                let report = capi::memcpy_run(&handle, 16, 512 + 64 * (round as u16 % 8)).unwrap();
                assert!(report.verified(), "{report:?}");
                handle.close().unwrap();
            }),
        ));
    }
    for index in 4..6 {
        workers.push(spawn(
            "xrt-vadd",
            index,
            Box::new(|host, round| {
                let token = find(host, vadd::is_xocl);
                let handle = host.open(&token, OpenMode::Shared).unwrap();
                let kernel = vadd::load(&handle, 2).unwrap();
                let report = vadd::run(&handle, &kernel, 4096 + 1000 * round).unwrap();
                assert!(report.verified(), "{report:?}");
            }),
        ));
    }
    workers.push(spawn(
        "enumerate",
        6,
        Box::new(|host, _| {
            let found = host.enumerate(&[]);
            for failure in &found.failures {
                assert!(restart_error(failure.code()), "{failure}");
            }
            for token in found.tokens {
                match token.refresh() {
                    Ok(properties) => assert_eq!(properties.name, token.properties().name),
                    Err(err) => assert!(restart_error(err.code()), "{err}"),
                }
            }
        }),
    ));
    for index in 7..9 {
        let crashed = crashed.clone();
        workers.push(spawn(
            "chaos-user",
            index,
            Box::new(move |host, round| {
                // Keep calling the chaos plugin until a call succeeds on a running instance;
                // its pending events must end, with the fault if it crashes meanwhile. The
                // last round waits for the crash, so that it runs on the restarted instance.
                let deadline = Instant::now() + Duration::from_secs(30);
                while round == ROUNDS - 1 && !crashed.load(Ordering::Acquire) {
                    assert!(Instant::now() < deadline, "the crash never came");
                    std::thread::sleep(Duration::from_millis(2));
                }
                loop {
                    assert!(Instant::now() < deadline, "chaos never came back");
                    let Some(token) = host
                        .enumerate(&[Filter::new().vendor_id(0x1234)])
                        .tokens
                        .into_iter()
                        .next()
                    else {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    };
                    let attempt = (|| {
                        let handle = host.open(&token, OpenMode::Shared)?;
                        let event = handle.register_event(EventKind::Interrupt, 0)?;
                        // The crash may come between the registration and this look.
                        match event.status() {
                            EventStatus::Pending => {}
                            EventStatus::Failed(why) => assert!(
                                why.contains("faulted in reset"),
                                "a pending event fails with the fault: {why}"
                            ),
                            EventStatus::Complete => panic!("an event that never fires completed"),
                        }
                        token.refresh()?;
                        let waited = event.wait_timeout(Duration::from_millis(20));
                        Ok::<_, accelhost::Error>((handle, event, waited))
                    })();
                    match attempt {
                        Ok((handle, event, waited)) => {
                            match waited {
                                Err(err) if err.code() == ErrorCode::Timeout => {}
                                Err(err) => assert!(
                                    err.to_string().contains("faulted in reset"),
                                    "a pending event fails with the fault: {err}"
                                ),
                                Ok(()) => panic!("an event that never fires completed"),
                            }
                            drop(handle);
                            drop(event);
                            return;
                        }
                        Err(err) => {
                            assert!(restart_error(err.code()), "{err}");
                            assert!(
                                crashed.load(Ordering::Acquire),
                                "failed before the crash: {err}"
                            );
                        }
                    }
                }
            }),
        ));
    }

    // The crash, in the middle: once every worker is under way and holds work in flight.
    let crasher = {
        let (host, done, crashed) = (host.clone(), done.clone(), crashed.clone());
        std::thread::spawn(move || {
            while done
                .iter()
                .take(9)
                .any(|d| d.load(Ordering::Acquire) < ROUNDS / 3)
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            let token = host
                .enumerate(&[Filter::new().vendor_id(0x1234)])
                .tokens
                .remove(0);
            let handle = host.open(&token, OpenMode::Shared).unwrap();
            let pending = handle.register_event(EventKind::Interrupt, 1).unwrap();
            crashed.store(true, Ordering::Release);
            let err = handle.reset().unwrap_err();
            assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
            let err = pending
                .wait_timeout(Duration::from_secs(10))
                .expect_err("a pending event of the crashed instance fails");
            assert!(err.to_string().contains("faulted in reset"), "{err}");
        })
    };

    let watchdog = Instant::now() + Duration::from_secs(120);
    for (name, worker) in workers {
        while !worker.is_finished() {
            assert!(
                Instant::now() < watchdog,
                "deadlock? '{name}' is still running; progress {:?}",
                done.iter()
                    .map(|d| d.load(Ordering::Relaxed))
                    .collect::<Vec<_>>()
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        if let Err(panic) = worker.join() {
            std::panic::resume_unwind(panic);
        }
    }
    crasher.join().unwrap();
    assert!(
        done.iter()
            .take(9)
            .all(|d| d.load(Ordering::Acquire) == ROUNDS)
    );

    // The crash was contained: chaos runs again, restarted once, and serves new tokens.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = host.plugin("chaos").unwrap();
        if info.status == PluginStatus::Running {
            assert_eq!(info.restarts, 1);
            break;
        }
        assert!(Instant::now() < deadline, "{}", info.status);
        std::thread::sleep(Duration::from_millis(5));
    }
    for plugin in ["dfl", "cxl", "xocl"] {
        let info = host.plugin(plugin).unwrap();
        assert_eq!(info.status, PluginStatus::Running, "{plugin}");
        assert_eq!(info.restarts, 0, "{plugin} was never touched");
    }
}
