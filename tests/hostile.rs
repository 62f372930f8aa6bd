//! The hostile-plugin suite. Each attack loads the chaos plugin (guest-plugins/chaos) set up to
//! misbehave one way, next to the well-behaved dfl plugin, and checks that:
//! - the attacking call fails with the specific error the attack deserves;
//! - the host stays up, and the chaos plugin is restarted by its load policy;
//! - the dfl plugin completes a full NLB0 loopback workload (open, map, buffers, copy, every
//!   byte compared) during the attack, on another thread, and again after it;
//! - the process's resident memory returns to its level from before the attack.
//!
//! The attacks run one after another (resident memory is measured per process, so the suite
//! has its own harness) and the run ends with a report of every attack and its outcome.
//! `cargo test --test hostile -- <words>` runs the attacks whose names contain a word.

mod support;

use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use accelhost::workloads::nlb0::loopback;
use accelhost::{Error, ErrorCode, EventKind, Filter, Handle, Host, MemoryKind, OpenMode};
use accelhost::{PluginStatus, Token};
use support::{chaos_plugin_with, dfl_devices, dfl_plugin, host};

/// What an attack does and what it must come to.
struct Attack {
    name: String,
    /// The chaos plugin's config.
    config: String,
    /// Devices granted to the chaos plugin.
    granted: Vec<&'static str>,
    /// Extra `load_policy` members.
    policy: &'static str,
    provoke: Provoke,
}

/// Makes an attack's calls: what to report, or why the attack was not contained.
type Provoke = Box<dyn Fn(&Host) -> Result<String, String>>;

/// The exports that take an open handle and can be reached through the API, and how.
const HANDLE_EXPORTS: &[&str] = &[
    "close",
    "map-mmio",
    "prepare-buffer",
    "release-buffer",
    "reset",
    "reconfigure",
    "register-event",
    "mem-alloc",
    "mem-free",
    "program-create",
    "program-release",
    "kernel-get",
    "queue-create",
    "queue-release",
    "enqueue-memcpy",
    "enqueue-launch",
];

fn chaos_token(host: &Host) -> Result<Token, String> {
    host.enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .into_iter()
        .next()
        .ok_or_else(|| "the chaos plugin lists no device".to_string())
}

fn open_chaos(host: &Host) -> Result<Handle, String> {
    host.open(&chaos_token(host)?, OpenMode::Shared)
        .map_err(|e| format!("open: {e}"))
}

/// `Ok` with the error's text if `result` failed with `code` and a message containing
/// `needle`; otherwise why not.
fn expect<T: std::fmt::Debug>(
    result: Result<T, Error>,
    code: ErrorCode,
    needle: &str,
) -> Result<String, String> {
    match result {
        Ok(value) => Err(format!("the call succeeded ({value:?}); expected {code}")),
        Err(err) if err.code() == code && err.to_string().contains(needle) => {
            Ok(format!("{code}: {}", short(&err.to_string())))
        }
        Err(err) => Err(format!(
            "expected {code} mentioning {needle:?}, got {}: {err}",
            err.code()
        )),
    }
}

/// The end of a long error message, where the reason is.
fn short(text: &str) -> String {
    let text = text.split("; its stderr").next().unwrap_or(text);
    let chars: Vec<char> = text.chars().collect();
    if chars.len() <= 110 {
        text.to_string()
    } else {
        format!("…{}", chars[chars.len() - 109..].iter().collect::<String>())
    }
}

/// Calls export `export` of the chaos plugin through the API (setting up what it needs).
fn call_export(host: &Host, export: &str) -> Result<(), Error> {
    let token = chaos_token(host).map_err(|message| Error::InvalidArgument {
        call: "enumerate",
        message,
    })?;
    let handle = host.open(&token, OpenMode::Shared)?;
    match export {
        "close" => handle.close(),
        "map-mmio" => handle.map_mmio(0).map(drop),
        "prepare-buffer" => handle.prepare_buffer(4096).map(drop),
        "release-buffer" => handle.prepare_buffer(4096)?.release(),
        "reset" => handle.reset(),
        "reconfigure" => handle.reconfigure(0, b"image"),
        "register-event" => handle.register_event(EventKind::Interrupt, 0).map(drop),
        "mem-alloc" => handle.alloc(MemoryKind::Host, 4096).map(drop),
        "mem-free" => {
            drop(handle.alloc(MemoryKind::Host, 4096)?);
            handle.reset()
        }
        "program-create" => handle.create_program(b"program").map(drop),
        "program-release" => {
            drop(handle.create_program(b"program")?);
            handle.reset()
        }
        "kernel-get" => handle.create_program(b"program")?.kernel("k").map(drop),
        "queue-create" => handle.create_queue().map(drop),
        "queue-release" => {
            drop(handle.create_queue()?);
            handle.reset()
        }
        "enqueue-memcpy" => {
            let queue = handle.create_queue()?;
            let (a, b) = (
                handle.alloc(MemoryKind::Host, 64)?,
                handle.alloc(MemoryKind::Host, 64)?,
            );
            queue.enqueue_memcpy(&a, 0, &b, 0, 64).map(drop)
        }
        "enqueue-launch" => {
            let queue = handle.create_queue()?;
            let kernel = handle.create_program(b"program")?.kernel("k")?;
            queue.enqueue_launch(&kernel, &[]).map(drop)
        }
        other => panic!("no way to call {other}"),
    }
}

/// The status line of the chaos plugin.
fn chaos_status(host: &Host) -> PluginStatus {
    host.plugins()
        .into_iter()
        .find(|p| p.name == "chaos")
        .expect("chaos is listed")
        .status
}

/// A trap in an export that releases something happens in a drop: the call reports nothing,
/// the plugin's status carries the fault.
fn expect_fault_in(host: &Host, export: &str) -> Result<String, String> {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match chaos_status(host) {
            PluginStatus::Restarting { reason, .. } | PluginStatus::Faulted { reason }
                if reason.contains(&format!("in {export}:")) =>
            {
                return Ok(format!("plugin-faulted: {}", short(&reason)));
            }
            other if Instant::now() > deadline => {
                return Err(format!("no fault in {export}; status {other}"));
            }
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    }
}

fn trap_attacks() -> Vec<Attack> {
    let mut attacks = Vec::new();
    for export in ["configure", "initialize"] {
        attacks.push(Attack {
            name: format!("trap in {export}"),
            config: format!(r#"{{"trap_in": "{export}"}}"#),
            granted: vec![],
            policy: "",
            provoke: Box::new(move |host| match chaos_status(host) {
                PluginStatus::LoadFailed { reason }
                    if reason.contains(&format!("{export} faulted"))
                        && reason.contains(&format!("asked to trap in {export}")) =>
                {
                    Ok(format!("load-failed: {}", short(&reason)))
                }
                other => Err(format!("expected a load failure, found {other}")),
            }),
        });
    }
    for export in ["supports-host", "supports-device"] {
        attacks.push(Attack {
            name: format!("trap in {export}"),
            config: format!(r#"{{"trap_in": "{export}"}}"#),
            granted: vec![],
            policy: "",
            provoke: Box::new(move |host| {
                let filter = Filter::new().device_type("fpga").host("localhost");
                let found = host.enumerate(&[filter]);
                match found.failures.as_slice() {
                    [err] => expect(
                        Err::<(), _>(clone_error(err)),
                        ErrorCode::PluginFaulted,
                        &format!("asked to trap in {export}"),
                    ),
                    other => Err(format!("expected one failure, got {other:?}")),
                }
            }),
        });
    }
    attacks.push(Attack {
        name: "trap in enumerate".into(),
        config: r#"{"trap_in": "enumerate"}"#.into(),
        granted: vec![],
        policy: "",
        provoke: Box::new(|host| {
            let found = host.enumerate(&[]);
            match found.failures.as_slice() {
                [err] => expect(
                    Err::<(), _>(clone_error(err)),
                    ErrorCode::PluginFaulted,
                    "asked to trap in enumerate",
                ),
                other => Err(format!("expected one failure, got {other:?}")),
            }
        }),
    });
    attacks.push(Attack {
        name: "trap in describe".into(),
        config: r#"{"trap_in": "describe"}"#.into(),
        granted: vec![],
        policy: "",
        provoke: Box::new(|host| {
            expect(
                chaos_token(host)?.refresh(),
                ErrorCode::PluginFaulted,
                "asked to trap in describe",
            )
        }),
    });
    attacks.push(Attack {
        name: "trap in open".into(),
        config: r#"{"trap_in": "open"}"#.into(),
        granted: vec![],
        policy: "",
        provoke: Box::new(|host| {
            expect(
                call_export(host, "open"),
                ErrorCode::PluginFaulted,
                "asked to trap in open",
            )
        }),
    });
    for &export in HANDLE_EXPORTS {
        attacks.push(Attack {
            name: format!("trap in {export}"),
            config: format!(r#"{{"trap_in": "{export}"}}"#),
            granted: vec![],
            policy: "",
            provoke: Box::new(move |host| {
                let result = call_export(host, export);
                match export {
                    // Releases run when the object is dropped (or closed, which cannot
                    // fail): the fault shows in the plugin's status.
                    "close" | "release-buffer" | "mem-free" | "program-release"
                    | "queue-release" => {
                        if let Err(err) = result
                            && err.code() != ErrorCode::PluginFaulted
                            && err.code() != ErrorCode::Stale
                        {
                            return Err(format!("unexpected error: {err}"));
                        }
                        expect_fault_in(host, export)
                    }
                    _ => expect(
                        result,
                        ErrorCode::PluginFaulted,
                        &format!("asked to trap in {export}"),
                    ),
                }
            }),
        });
    }
    attacks.push(Attack {
        name: "trap in finalize".into(),
        config: r#"{"trap_in": "finalize"}"#.into(),
        granted: vec![],
        policy: "",
        // Nothing to call: the trap comes when the host drops the plugin, right after.
        provoke: Box::new(|_| Ok("at shutdown, logged; the host drops cleanly".into())),
    });
    attacks
}

/// The first failure of a plain `enumerate`, as the result of the attack's call.
fn enumerate_error(host: &Host) -> Result<(), Error> {
    host.enumerate(&[])
        .failures
        .first()
        .map_or(Ok(()), |e| Err(clone_error(e)))
}

/// Errors are not `Clone`; the report needs the code and text only.
fn clone_error(err: &Error) -> Error {
    match err {
        Error::Faulted {
            plugin,
            call,
            reason,
        } => Error::Faulted {
            plugin: plugin.clone(),
            call,
            reason: reason.clone(),
        },
        other => Error::InvalidArgument {
            call: "enumerate",
            message: other.to_string(),
        },
    }
}

/// An attack on an import, made in `open`; the host's answer comes back as open's error.
fn import_attack(
    name: &str,
    attack: &str,
    target: &'static str,
    granted: Vec<&'static str>,
    code: ErrorCode,
    needle: &'static str,
) -> Attack {
    Attack {
        name: name.into(),
        config: format!(r#"{{"attack_in": "open", "attack": "{attack}", "target": "{target}"}}"#),
        granted,
        policy: r#""max_resources": 1024"#,
        provoke: Box::new(move |host| expect(call_export(host, "open"), code, needle)),
    }
}

fn other_attacks() -> Vec<Attack> {
    let deadline = |name: &str, config: &str, call: &'static str| Attack {
        name: name.into(),
        config: config.into(),
        granted: vec![],
        policy: "",
        provoke: Box::new(move |host| {
            let started = Instant::now();
            let result = match call {
                "enumerate" => enumerate_error(host),
                _ => call_export(host, call),
            };
            let outcome = expect(result, ErrorCode::PluginFaulted, "300 ms call deadline")?;
            let took = started.elapsed();
            if took < Duration::from_millis(300) || took > Duration::from_secs(5) {
                return Err(format!(
                    "stopped after {took:?}, not at the 300 ms deadline"
                ));
            }
            Ok(format!("{outcome} (after {} ms)", took.as_millis()))
        }),
    };
    let mut attacks = vec![
        deadline(
            "infinite loop in enumerate",
            r#"{"hang_in": "enumerate"}"#,
            "enumerate",
        ),
        deadline("infinite loop in open", r#"{"hang_in": "open"}"#, "open"),
        deadline(
            "blocks forever in a host wait",
            r#"{"block_in": "open"}"#,
            "open",
        ),
        Attack {
            name: "blocked host wait, cancelled from another thread".into(),
            config: r#"{"block_in": "open"}"#.into(),
            granted: vec![],
            policy: r#""call_timeout_ms": 60000"#,
            provoke: Box::new(|host| {
                std::thread::scope(|scope| {
                    let canceller = scope.spawn(|| {
                        std::thread::sleep(Duration::from_millis(100));
                        while !host.cancel("chaos").unwrap() {
                            std::thread::sleep(Duration::from_millis(2));
                        }
                        Instant::now()
                    });
                    let result = call_export(host, "open");
                    let latency = canceller.join().unwrap().elapsed();
                    let outcome = expect(result, ErrorCode::PluginFaulted, "cancelled")?;
                    if latency > Duration::from_millis(500) {
                        return Err(format!("the cancel took {latency:?}"));
                    }
                    Ok(format!("{outcome} ({} ms)", latency.as_millis()))
                })
            }),
        },
        Attack {
            name: "unbounded memory growth".into(),
            config: r#"{"grow_in": "enumerate"}"#.into(),
            granted: vec![],
            policy: "",
            provoke: Box::new(|host| {
                expect(
                    enumerate_error(host),
                    ErrorCode::PluginFaulted,
                    "memory limit of 32 MiB (load_policy.memory_mib)",
                )
            }),
        },
        Attack {
            name: "deep recursion".into(),
            config: r#"{"recurse_in": "describe"}"#.into(),
            granted: vec![],
            policy: "",
            provoke: Box::new(|host| {
                expect(
                    chaos_token(host)?.refresh(),
                    ErrorCode::PluginFaulted,
                    "call stack exhausted",
                )
            }),
        },
        Attack {
            name: "a loop under a fuel budget".into(),
            config: r#"{"hang_in": "describe"}"#.into(),
            granted: vec![],
            policy: r#""fuel": 20000000, "call_timeout_ms": 60000"#,
            provoke: Box::new(|host| {
                expect(
                    chaos_token(host)?.refresh(),
                    ErrorCode::PluginFaulted,
                    "fuel of 20000000 per call",
                )
            }),
        },
        Attack {
            name: "huge list from enumerate".into(),
            config: r#"{"huge_in": "enumerate", "huge": "list"}"#.into(),
            granted: vec![],
            policy: "",
            provoke: Box::new(|host| {
                expect(
                    enumerate_error(host),
                    ErrorCode::PluginFaulted,
                    "(at most 4096)",
                )
            }),
        },
        Attack {
            name: "huge string from enumerate".into(),
            config: r#"{"huge_in": "enumerate", "huge": "string"}"#.into(),
            granted: vec![],
            policy: "",
            provoke: Box::new(|host| {
                expect(
                    enumerate_error(host),
                    ErrorCode::PluginFaulted,
                    "the property name is 8388608 bytes long",
                )
            }),
        },
        Attack {
            name: "huge string from describe".into(),
            config: r#"{"huge_in": "describe", "huge": "string"}"#.into(),
            granted: vec![],
            policy: "",
            provoke: Box::new(|host| {
                expect(
                    chaos_token(host)?.refresh(),
                    ErrorCode::PluginFaulted,
                    "the property host is 8388608 bytes long",
                )
            }),
        },
        Attack {
            name: "huge error message".into(),
            config: r#"{"refuse_in": "reset", "huge": true}"#.into(),
            granted: vec![],
            policy: "",
            provoke: Box::new(|host| {
                let err = open_chaos(host)?.reset().unwrap_err();
                if err.code() != ErrorCode::InvalidArgument || err.to_string().len() > 1200 {
                    return Err(format!("not cut to 1 KiB: {} bytes", err.to_string().len()));
                }
                Ok(format!(
                    "invalid-argument, message cut to {} bytes",
                    err.to_string().len()
                ))
            }),
        },
        import_attack(
            "forged region handle",
            "forge-region",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::PluginFaulted,
            "unknown handle index",
        ),
        import_attack(
            "stale region handle",
            "stale-region",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::PluginFaulted,
            "unknown handle index",
        ),
        import_attack(
            "foreign handle (a buffer passed as a region)",
            "foreign-handle",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::PluginFaulted,
            "handle index",
        ),
        import_attack(
            "MMIO read outside the region",
            "mmio-out-of-range",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::InvalidArgument,
            "outside",
        ),
        import_attack(
            "MMIO write outside the region",
            "mmio-write-out-of-range",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::InvalidArgument,
            "outside",
        ),
        import_attack(
            "misaligned MMIO",
            "mmio-misaligned",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::InvalidArgument,
            "aligned",
        ),
        import_attack(
            "oversized MMIO write batch",
            "batch-huge",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::InvalidArgument,
            "4096",
        ),
        import_attack(
            "MMIO on a device not granted (the other plugin's card)",
            "mmio-out-of-range",
            "emu:w0",
            vec!["emu:v0"],
            ErrorCode::PermissionDenied,
            "no grant covers the device 'emu:w0'",
        ),
        import_attack(
            "opening device nodes not granted",
            "open-dev-nodes",
            "",
            vec!["emu:v0"],
            ErrorCode::PermissionDenied,
            "/dev/cxl/afu0.0",
        ),
        import_attack(
            "reaching files, the environment and the network",
            "escape-sandbox",
            "",
            vec![],
            ErrorCode::PermissionDenied,
            "connect:",
        ),
        import_attack(
            "DMA-mapping a forged buffer handle",
            "dma-map-forged",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::PluginFaulted,
            "unknown handle index",
        ),
        import_attack(
            "DMA-mapping a buffer it no longer owns",
            "dma-map-stale",
            "emu:v0",
            vec!["emu:v0"],
            ErrorCode::PluginFaulted,
            "unknown handle index",
        ),
        import_attack(
            "DMA allocation past its grant",
            "dma-over-budget",
            "",
            vec![],
            ErrorCode::OutOfMemory,
            "dma_memory_mib",
        ),
        import_attack(
            "oversized DMA read",
            "read-huge",
            "",
            vec![],
            ErrorCode::InvalidArgument,
            "1048576",
        ),
        import_attack(
            "host resource exhaustion",
            "exhaust-resources",
            "",
            vec![],
            ErrorCode::PluginFaulted,
            "more than 1024 host resources (load_policy.max_resources)",
        ),
        Attack {
            name: "a flood of log lines".into(),
            config: r#"{"log_flood": 20000}"#.into(),
            granted: vec![],
            policy: r#""log_bytes_per_second": 65536, "call_timeout_ms": 10000"#,
            provoke: Box::new(|host| {
                let dropped_so_far = || {
                    host.plugins()
                        .into_iter()
                        .find(|p| p.name == "chaos")
                        .unwrap()
                        .log_lines_dropped
                };
                let earlier = dropped_so_far();
                let started = Instant::now();
                let found = host.enumerate(&[]);
                if !found.failures.is_empty() {
                    return Err(format!("{:?}", found.failures));
                }
                let dropped = dropped_so_far() - earlier;
                if dropped < 30_000 {
                    return Err(format!("only {dropped} of 40000 lines dropped"));
                }
                Ok(format!(
                    "ok; {dropped} of 40000 lines dropped over the budget, in {} ms",
                    started.elapsed().as_millis()
                ))
            }),
        },
        Attack {
            name: "tokens dressed as another plugin's devices".into(),
            config: r#"{"impersonate": true}"#.into(),
            granted: vec![],
            policy: "",
            provoke: Box::new(|host| {
                let nlb0 = Filter::new().guid(accelhost::devices::dfl::abi::nlb0::AFU_ID);
                let impostors: Vec<Token> = host
                    .enumerate(&[nlb0])
                    .tokens
                    .into_iter()
                    .filter(|t| t.plugin() == "chaos")
                    .collect();
                if impostors.len() != 4 {
                    return Err(format!("{} impostors listed", impostors.len()));
                }
                let mut handles = Vec::new();
                for token in &impostors {
                    let handle = host
                        .open(token, OpenMode::Exclusive)
                        .map_err(|e| e.to_string())?;
                    if handle.token().plugin() != "chaos" {
                        return Err("an impostor token reached another plugin".into());
                    }
                    handles.push(handle);
                }
                // The impostors reach nothing: the card behind 'emu:w0' is still free.
                let outcome = expect(handles[0].map_mmio(0), ErrorCode::Unsupported, "map-mmio")?;
                let real = host
                    .enumerate(&[Filter::new().guid(accelhost::devices::dfl::abi::nlb0::AFU_ID)])
                    .tokens
                    .into_iter()
                    .find(|t| t.plugin() == "dfl" && t.properties().name == "emu:w1")
                    .ok_or("the real port is gone")?;
                host.open(&real, OpenMode::Exclusive)
                    .map_err(|e| format!("the real port: {e}"))?;
                Ok(format!("impostor tokens stay with chaos; {outcome}"))
            }),
        },
    ];
    attacks.extend(trap_attacks());
    attacks
}

/// The dfl plugin's NLB0 port named `emu:<id>`.
fn port(host: &Host, id: &str) -> Token {
    host.enumerate(&[Filter::new().guid(accelhost::devices::dfl::abi::nlb0::AFU_ID)])
        .tokens
        .into_iter()
        .find(|t| t.plugin() == "dfl" && t.properties().name == format!("emu:{id}"))
        .unwrap_or_else(|| panic!("port {id}"))
}

/// One full NLB0 loopback on the port of `token`, every byte compared.
fn workload(host: &Host, token: &Token, size: u64) -> Result<(), String> {
    let handle = host
        .open(token, OpenMode::Exclusive)
        .map_err(|e| e.to_string())?;
    let report = loopback(&handle, size).map_err(|e| e.to_string())?;
    if !report.verified() {
        return Err(format!("{report:?}"));
    }
    handle.close().map_err(|e| e.to_string())
}

/// Waits while the chaos plugin restarts (an enumeration before the attack may already have
/// set it off).
fn settle(host: &Host) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while matches!(chaos_status(host), PluginStatus::Restarting { .. }) && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Resident memory of this process, after handing freed memory back to the system.
fn resident_bytes() -> u64 {
    #[cfg(target_env = "gnu")]
    // SAFETY: malloc_trim only releases free memory held by the allocator.
    unsafe {
        libc::malloc_trim(0);
    }
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// What one attack came to.
struct Outcome {
    name: String,
    result: Result<String, String>,
    during: u32,
    rss_delta: i64,
}

/// The allowed growth of resident memory over one attack.
const RSS_SLACK: i64 = 16 << 20;

fn run(attack: &Attack) -> Outcome {
    let config = format!(
        r#"{{"devices": {}, "plugins": [{}, {}]}}"#,
        dfl_devices(&["w0", "w1", "v0"]),
        dfl_plugin(&["w0", "w1"]),
        chaos_plugin_with(
            "chaos",
            &attack.config,
            &attack.granted,
            &format!(
                r#""on_fault": "restart", "restart_backoff_ms": 10{}"#,
                if attack.policy.is_empty() {
                    String::new()
                } else {
                    format!(", {}", attack.policy)
                }
            )
        )
    );
    let host = host(&config).expect("the host starts whatever the chaos plugin does");
    let mut outcome = Outcome {
        name: attack.name.clone(),
        result: Ok(String::new()),
        during: 0,
        rss_delta: 0,
    };
    // The workload's tokens come from one enumeration before the attack; enumerating during
    // it would call into the attacker as well.
    let (w0, w1) = (port(&host, "w0"), port(&host, "w1"));
    settle(&host);
    if let Err(err) = workload(&host, &w0, 256 << 10) {
        outcome.result = Err(format!("the workload failed before the attack: {err}"));
        return outcome;
    }
    let before = resident_bytes();
    let done = AtomicBool::new(false);
    let runs = AtomicU32::new(0);
    let (result, during) = std::thread::scope(|scope| {
        let background = scope.spawn(|| {
            while !done.load(Ordering::Acquire) || runs.load(Ordering::Acquire) == 0 {
                workload(&host, &w0, 128 << 10)?;
                runs.fetch_add(1, Ordering::AcqRel);
            }
            Ok::<(), String>(())
        });
        let result = (attack.provoke)(&host);
        done.store(true, Ordering::Release);
        let during = background.join().expect("the workload thread");
        (result, during)
    });
    outcome.during = runs.load(Ordering::Acquire);
    outcome.result = match (result, during) {
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(format!("the workload failed during the attack: {e}")),
        (Ok(text), Ok(())) => match workload(&host, &w1, 1 << 20) {
            Ok(()) => Ok(text),
            Err(e) => Err(format!("the workload failed after the attack: {e}")),
        },
    };
    let after = resident_bytes();
    outcome.rss_delta = after as i64 - before as i64;
    if outcome.result.is_ok() && outcome.rss_delta > RSS_SLACK {
        outcome.result = Err(format!(
            "resident memory grew by {} MiB",
            outcome.rss_delta >> 20
        ));
    }
    drop(host);
    outcome
}

fn main() {
    let words: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let attacks: Vec<Attack> = other_attacks()
        .into_iter()
        .filter(|a| words.is_empty() || words.iter().any(|w| a.name.contains(w.as_str())))
        .collect();
    if std::env::args().any(|a| a == "--list") {
        for attack in &attacks {
            println!("{}: test", attack.name);
        }
        return;
    }
    if attacks.is_empty() {
        println!("no attack's name contains any of {words:?}");
        return;
    }
    let mut warm_rss = None;
    let mut outcomes = Vec::new();
    for attack in &attacks {
        let outcome = run(attack);
        warm_rss.get_or_insert_with(resident_bytes);
        let mark = if outcome.result.is_ok() {
            "ok"
        } else {
            "FAILED"
        };
        eprintln!("attack {} ... {mark}", attack.name);
        outcomes.push(outcome);
    }
    let growth = resident_bytes() as i64 - warm_rss.unwrap_or(0) as i64;
    let mut report = String::from("\nhostile-plugin suite\n");
    let _ = writeln!(
        report,
        "{:<52} {:<6} {:>6} {:>8}  OUTCOME",
        "ATTACK", "RESULT", "DURING", "RSS Δ"
    );
    for o in &outcomes {
        let (mark, text) = match &o.result {
            Ok(text) => ("ok", text.as_str()),
            Err(text) => ("FAILED", text.as_str()),
        };
        let _ = writeln!(
            report,
            "{:<52} {:<6} {:>6} {:>6}KiB  {text}",
            o.name,
            mark,
            o.during,
            o.rss_delta >> 10
        );
    }
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    let _ = writeln!(
        report,
        "{} attacks, {} contained, {failed} failed; DURING counts the dfl loopbacks that \
         completed, verified, during each attack; resident memory from the end of the first \
         attack to the end of the run: {:+} MiB",
        outcomes.len(),
        outcomes.len() - failed,
        growth >> 20
    );
    println!("{report}");
    if failed > 0 {
        std::process::exit(1);
    }
}
