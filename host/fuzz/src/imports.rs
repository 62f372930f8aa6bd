//! `imports`: the import-surface fuzzer. The shipped `chaos` plugin runs the input as a script
//! of calls (see `guest-plugins/chaos/src/script.rs`) — every `accel:plugin` import and every
//! part of WASI a plugin can reach (sleeps, pollables, `poll`, randomness, stdio, clocks,
//! sockets, `exit`), with arbitrary arguments, repeated at will — in the export the input
//! picks, next to the shipped dfl plugin on a port of its own.
//!
//! An input is `[export, target, script...]`: `export` indexes [`EXPORTS`], `target` the card
//! the script aims at ([`TARGETS`]); the script goes to the plugin's config, and for
//! `reconfigure` it is also the image. Each input gets a fresh host, and these oracles:
//!
//! 1. the host never panics or aborts (libFuzzer sees both);
//! 2. every API call that reaches the plugin returns within its deadline plus one epoch tick,
//!    plus the time to copy out an answer as large as the plugin's host-memory budget
//!    ([`COPY_OUT_ALLOWANCE`]: the host lifts an answer after the plugin returns, bounded by
//!    that budget and not by the deadline), plus [`SCHEDULING_SLACK`] for a loaded machine;
//! 3. the process's resident memory never peaks (`VmHWM`, reset before each input) higher
//!    above where it was than the chaos plugin's worst case
//!    (`accelhost::worst_case_host_memory`) plus [`PEAK_CONSTANT`];
//! 4. the neighbour's NLB0 loopback verifies byte for byte after the script;
//! 5. once the host is dropped, the process's file descriptors are what they were before the
//!    input, and its resident memory is back within [`RSS_CONSTANT`] of where it was;
//! 6. every outcome is a value, an error of the plugin's own or a fault with a typed cause;
//!    an error the host raises of its own (such as `internal`) is a finding.

use std::path::PathBuf;
use std::sync::{Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

use accelhost::config::ConfigSource;
use accelhost::families::dfl::abi::nlb0;
use accelhost::families::xocl::xclbin::MAGIC;
use accelhost::workloads::nlb0::loopback;
use accelhost::{
    CACHE_ENV, Config, Error, EventKind, Filter, Handle, Host, MemoryKind, OpenMode, Token,
};

/// The exports a script runs in, in the order an input's first byte picks them (`% len`).
pub const EXPORTS: [&str; 24] = [
    "configure",
    "initialize",
    "supports-host",
    "supports-device",
    "enumerate",
    "describe",
    "open",
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
    "finalize",
];

/// The chaos plugin's own cards, one per family, in the order an input's second byte picks
/// the one its script aims at first.
pub const TARGETS: [&str; 3] = ["emu:d0", "emu:m0", "emu:x0"];

/// The chaos plugin's call deadline (`call_timeout_ms`).
pub const CALL_TIMEOUT: Duration = Duration::from_millis(200);
/// How often the epoch advances (`runtime::EPOCH_TICK`).
pub const EPOCH_TICK: Duration = Duration::from_millis(10);
/// Scheduling delay allowed beyond the deadline and the tick on a loaded 2-core machine.
pub const SCHEDULING_SLACK: Duration = Duration::from_millis(150);
/// How long the host may take to copy out one answer of [`HOST_MEMORY_MIB`]: the answer's
/// size is bounded by the budget (its hostcall fuel), not by the deadline. The
/// coverage-instrumented debug build copies an answer of small strings, one allocation
/// each, at about 13 MiB/s; this allows 10 MiB/s.
pub const COPY_OUT_ALLOWANCE: Duration = Duration::from_millis(HOST_MEMORY_MIB * 100);

/// The chaos plugin's budgets, in MiB: linear memory, host memory and DMA memory.
pub const MEMORY_MIB: u64 = 16;
/// See [`MEMORY_MIB`].
pub const HOST_MEMORY_MIB: u64 = 4;
/// See [`MEMORY_MIB`].
pub const DMA_MEMORY_MIB: u64 = 16;
/// The chaos plugin's cap on host resources (`max_resources`): its WASI term in the worst case.
pub const MAX_RESOURCES: u32 = 16384;
/// What the process may peak at beyond the chaos plugin's worst case: the host and its two
/// instances, the neighbour's loopback buffers, allocator slack.
pub const PEAK_CONSTANT: u64 = 24 << 20;
/// What the process may still hold once the host is dropped.
pub const RSS_CONSTANT: u64 = 48 << 20;

/// Set to anything to have every outcome other than `Ok` printed to stderr.
pub const VERBOSE_ENV: &str = "ACCELHOST_FUZZ_VERBOSE";

/// The config of one input: the neighbour's port `w0`, the chaos plugin's cards, and the two
/// plugins.
pub fn config(export: &str, target: &str, script: &[u8]) -> String {
    let hex: String = script.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        r#"{{
  "devices": [
    {{"id": "w0", "family": "dfl"}},
    {{"id": "d0", "family": "dfl"}},
    {{"id": "m0", "family": "cxl", "accelerator": "memcpy"}},
    {{"id": "x0", "family": "xocl"}}
  ],
  "plugins": [
    {{"name": "dfl", "module": "builtin:dfl", "grants": {{"devices": ["emu:w0"]}}}},
    {{"name": "chaos", "module": "builtin:chaos",
     "config": {{"script_in": "{export}", "target": "{target}", "script": "{hex}"}},
     "grants": {{"devices": ["emu:d0", "emu:m0", "emu:x0"], "dma_memory_mib": {DMA_MEMORY_MIB}}},
     "load_policy": {{"call_timeout_ms": {}, "memory_mib": {MEMORY_MIB},
                      "host_memory_mib": {HOST_MEMORY_MIB}, "max_resources": {MAX_RESOURCES},
                      "on_fault": "disable"}}}}
  ]
}}"#,
        CALL_TIMEOUT.as_millis()
    )
}

/// Runs one input.
pub fn run(data: &[u8]) {
    let [export, target, script @ ..] = data else {
        return;
    };
    // One input at a time: the oracles read process-wide figures.
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(PoisonError::into_inner);
    warm_up();
    let export = EXPORTS[usize::from(*export) % EXPORTS.len()];
    let target = TARGETS[usize::from(*target) % TARGETS.len()];
    let before = Figures::now();
    let peak_from = accelhost::perf::restart_peak().expect("the kernel resets the peak");

    let started = Instant::now();
    let host = start(&config(export, target, script));
    let worst_case = host
        .config()
        .plugins
        .iter()
        .find(|p| p.name == "chaos")
        .map(accelhost::worst_case_host_memory)
        .expect("the chaos plugin is in the config");
    timed(export, "starting the host", started, 2);
    let started = Instant::now();
    let neighbour = port(&host);
    timed(export, "enumerating the neighbour's port", started, 1);
    let outcome = drive(&host, export, script);
    if std::env::var_os(VERBOSE_ENV).is_some()
        && let Err(err) = &outcome
    {
        eprintln!("{export}: {err}");
    }
    check(outcome, export, script);

    let peak = accelhost::perf::peak_resident_bytes().saturating_sub(peak_from);
    assert!(
        peak <= worst_case + PEAK_CONSTANT,
        "{export}: resident memory peaked {} MiB above where it was while the plugin ran, \
         past its worst case of {} MiB and {} MiB",
        peak >> 20,
        worst_case >> 20,
        PEAK_CONSTANT >> 20
    );
    let report = host
        .open(&neighbour, OpenMode::Exclusive)
        .and_then(|handle| {
            let report = loopback(&handle, 64 << 10);
            handle.close()?;
            report
        })
        .unwrap_or_else(|err| panic!("{export}: the neighbour's loopback failed: {err}"));
    assert!(
        report.verified(),
        "{export}: the neighbour's loopback differs"
    );

    let started = Instant::now();
    drop(host);
    timed(export, "dropping the host", started, 1);
    let after = Figures::settled(&before);
    assert_eq!(
        after.fds, before.fds,
        "{export}: file descriptors leaked: {:?} before, {:?} after",
        before.fds, after.fds
    );
    assert!(
        after.rss.saturating_sub(before.rss) <= RSS_CONSTANT,
        "{export}: resident memory stayed {} MiB above where it was",
        (after.rss - before.rss) >> 20
    );
}

/// Panics if what started at `started` took longer than `calls` plugin calls may.
fn timed(export: &str, what: &str, started: Instant, calls: u32) {
    let took = started.elapsed();
    let limit = (CALL_TIMEOUT + COPY_OUT_ALLOWANCE) * calls + EPOCH_TICK + SCHEDULING_SLACK;
    assert!(
        took <= limit,
        "{export}: {what} took {took:?}, past {calls} deadline(s) of {CALL_TIMEOUT:?} and \
         copy-out(s) of {COPY_OUT_ALLOWANCE:?}, plus a tick ({limit:?} allowed)"
    );
}

/// Starts what the host starts once per process (the wasm runtime, WASI's timer thread, the
/// memory-watch thread) and compiles both plugins into the cache, so that an input's figures
/// and time do not count them. [`run`] calls it; the libFuzzer binary calls it first, at
/// initialization, since a clean checkout's first compile can outlast libFuzzer's per-input
/// timeout on a loaded machine.
pub fn warm_up() {
    static WARM: Once = Once::new();
    WARM.call_once(|| {
        // Sleep 16 ns in WASI (tokio's timer), and watch a word (the watch thread).
        let script = [
            24, 1, 16, 0, 0, 0, // subscribe-duration
            26, 0, // block on it
            0, 1, 0, 0x10, 0, 0, // a 4 KiB DMA buffer
            4, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, // watch64
        ];
        let host = start(&config("enumerate", TARGETS[0], &script));
        let _ = host.enumerate(&[]);
        drop(host);
        let _ = Figures::now();
    });
}

/// A host on `config`, with compiled plugins cached beside the fuzz binary.
fn start(config: &str) -> Host {
    let config = Config::parse(config, ConfigSource::Embedded).expect("the config is valid");
    let mut builder = Host::builder().config(config);
    if std::env::var_os(CACHE_ENV).is_none() {
        builder = builder.cache_dir(default_cache_dir());
    }
    builder
        .build()
        .unwrap_or_else(|err| panic!("the host must start whatever a plugin does: {err}"))
}

/// Compiled plugins are kept beside the running executable (in the cargo target directory),
/// so that only the first start of a fuzz or test binary compiles them.
pub(crate) fn default_cache_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("accelhost-fuzz-cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("accelhost-fuzz-cache"))
}

/// The neighbour's NLB0 port.
fn port(host: &Host) -> Token {
    host.enumerate(&[Filter::new().guid(nlb0::AFU_ID)])
        .tokens
        .into_iter()
        .find(|t| t.plugin() == "dfl")
        .expect("the dfl plugin lists its port whatever the chaos plugin does")
}

/// The chaos plugin's device, if it is running and lists one.
fn chaos_token(host: &Host) -> Option<Token> {
    host.enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .into_iter()
        .next()
}

/// Makes the API call that reaches `export` of the chaos plugin, timing each call that does.
fn drive(host: &Host, export: &str, script: &[u8]) -> accelhost::Result<()> {
    let started = Instant::now();
    match export {
        "configure" | "initialize" | "finalize" => return Ok(()),
        "supports-host" | "supports-device" => {
            let filter = Filter::new().host("localhost").device_type("fpga");
            let found = host.enumerate(&[filter]);
            timed(export, "enumerate", started, 2);
            return found.failures.into_iter().next().map_or(Ok(()), Err);
        }
        "enumerate" => {
            let found = host.enumerate(&[]);
            timed(export, "enumerate", started, 1);
            return found.failures.into_iter().next().map_or(Ok(()), Err);
        }
        _ => {}
    }
    let Some(token) = chaos_token(host) else {
        return Ok(());
    };
    if export == "describe" {
        let started = Instant::now();
        let result = token.refresh().map(drop);
        timed(export, "describe", started, 1);
        return result;
    }
    let started = Instant::now();
    let handle = host.open(&token, OpenMode::Shared);
    timed(export, "open", started, 1);
    let handle = handle?;
    if export == "open" {
        return handle.close();
    }
    // The export, with the calls that set it up and the release that follows it; only the
    // export itself runs the script.
    let started = Instant::now();
    let result = handle_export(&handle, export, script);
    timed(export, "the call", started, 1);
    result
}

/// Calls `export` on `handle` (setting up what it needs).
fn handle_export(handle: &Handle, export: &str, script: &[u8]) -> accelhost::Result<()> {
    match export {
        "close" => handle.clone().close(),
        "map-mmio" => handle.map_mmio(0).map(drop),
        "prepare-buffer" => handle.prepare_buffer(4096).map(drop),
        "release-buffer" => handle.prepare_buffer(4096)?.release(),
        "reset" => handle.reset(),
        "reconfigure" => handle.reconfigure(0, script),
        "register-event" => handle.register_event(EventKind::Interrupt, 0).map(drop),
        "mem-alloc" => handle.alloc(MemoryKind::Host, 4096).map(drop),
        "mem-free" => {
            drop(handle.alloc(MemoryKind::Host, 4096)?);
            Ok(())
        }
        "program-create" => handle.create_program(b"program").map(drop),
        "program-release" => {
            drop(handle.create_program(b"program")?);
            Ok(())
        }
        "kernel-get" => handle.create_program(b"program")?.kernel("k").map(drop),
        "queue-create" => handle.create_queue().map(drop),
        "queue-release" => {
            drop(handle.create_queue()?);
            Ok(())
        }
        "enqueue-memcpy" => {
            let queue = handle.create_queue()?;
            let a = handle.alloc(MemoryKind::Host, 64)?;
            let b = handle.alloc(MemoryKind::Host, 64)?;
            queue.enqueue_memcpy(&a, 0, &b, 0, 64).map(drop)
        }
        "enqueue-launch" => {
            let queue = handle.create_queue()?;
            let kernel = handle.create_program(b"program")?.kernel("k")?;
            queue.enqueue_launch(&kernel, &[]).map(drop)
        }
        other => unreachable!("{other} is not a handle export"),
    }
}

/// Panics unless `result` is an outcome a hostile script may cause.
fn check(result: accelhost::Result<()>, export: &str, script: &[u8]) {
    match result {
        Ok(()) | Err(Error::Plugin { .. } | Error::Faulted { .. } | Error::Stale { .. }) => {}
        Err(Error::PluginUnavailable { .. }) => {}
        Err(Error::InvalidArgument {
            call: "reconfigure",
            ..
        }) if script.starts_with(MAGIC) => {}
        Err(err) => panic!(
            "{export}: the call failed with a host error ({}): {err}",
            err.code()
        ),
    }
}

/// Process-wide figures the oracles compare.
#[derive(Debug)]
struct Figures {
    rss: u64,
    fds: Vec<String>,
}

impl Figures {
    fn now() -> Figures {
        let rss = accelhost::perf::trimmed_resident_bytes();
        let mut fds: Vec<String> = std::fs::read_dir("/proc/self/fd")
            .map(|dir| {
                dir.flatten()
                    .filter_map(|e| std::fs::read_link(e.path()).ok())
                    .map(|target| target.display().to_string())
                    // The C library and std read the CPU list to size thread pools, from
                    // any thread of the test process at any moment; no import opens it.
                    .filter(|target| {
                        !target.starts_with("/proc/")
                            && !target.starts_with("/sys/devices/system/cpu/")
                    })
                    .collect()
            })
            .unwrap_or_default();
        fds.sort();
        Figures { rss, fds }
    }

    /// The figures once threads the dropped host told to stop have stopped (a second at most).
    fn settled(before: &Figures) -> Figures {
        let deadline = Instant::now() + Duration::from_secs(1);
        loop {
            let now = Figures::now();
            if now.fds == before.fds || Instant::now() >= deadline {
                return now;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}
