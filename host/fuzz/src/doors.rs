//! `doors`: a sequence fuzzer of two doors' C APIs, XRT's and LLVM's Offload, called as a C
//! program calls them (their exported functions, through the door libraries linked in), with
//! handles that are live, released (stale), of another kind, or forged, and sizes of any
//! width, over plugins that lie underneath: the chaos plugin, dressed as an XRT card,
//! answering buffers shorter than asked and events that never complete, or ids given twice
//! and failures with messages of their own, beside an honest chaos device and the emulated
//! XRT card.
//!
//! An input is a sequence of ops, three bytes each: the call, then two argument bytes. The
//! doors' hosts are the process's (a door starts one per process), so the config is named
//! once, in [`warm_up`], and every input ends by releasing what it made.
//!
//! Oracles, for every input:
//! 1. no call crashes the process or panics in a door (a door turns its own panic into
//!    `EFAULT` or `OL_ERRC_UNKNOWN` "an internal error (a panic)": a finding);
//! 2. every call returns within the liar's event deadline plus twice its call deadline plus
//!    [`SLACK`];
//! 3. memory a door hands out by pointer holds the size the door states (the fuzzer writes
//!    every byte of it);
//! 4. the process's resident memory never peaks higher above where it was than the chaos
//!    plugins' worst cases plus [`PEAK_CONSTANT`].

use std::ffi::{c_char, c_int, c_uint, c_void};
use std::path::PathBuf;
use std::sync::{Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

use accelhost::Config;
use accelhost::workloads::vadd::vadd_image;
// The doors whose exported C functions this target calls.
use {LLVMOffload as _, xrt_coreutil as _};

/// The liar's call deadline (`call_timeout_ms`).
const CALL_TIMEOUT_MS: u64 = 300;
/// The liar's event deadline (`event_deadline_ms`).
const EVENT_DEADLINE_MS: u64 = 300;
/// Scheduling delay allowed beyond the deadlines on a loaded 2-core machine.
const SLACK: Duration = Duration::from_secs(5);
/// What the process may peak at beyond the chaos plugins' worst cases: the buffers the
/// emulated card's plugin allocates for the input, its queues, allocator slack.
const PEAK_CONSTANT: u64 = 32 << 20;
/// The most ops one input runs.
const MAX_OPS: usize = 64;
/// `XCL_BO_FLAGS_DEV_ONLY` and `XCL_BO_FLAGS_HOST_ONLY` (`xrt/detail/xrt_mem.h`).
const XCL_BO_FLAGS_DEV_ONLY: u64 = 1 << 28;
/// See [`XCL_BO_FLAGS_DEV_ONLY`].
const XCL_BO_FLAGS_HOST_ONLY: u64 = 1 << 29;
/// `OL_ALLOC_TYPE_DEVICE`: memory the program must not touch.
const OL_ALLOC_TYPE_DEVICE: u32 = 1;
/// The largest size an op asks for when it does not ask for an absurd one.
const SMALL: usize = 64 << 10;

#[allow(non_camel_case_types)]
type ol_result_t = *const OlError;

/// `ol_error_struct_t`.
#[repr(C)]
struct OlError {
    code: c_int,
    details: *const c_char,
}

unsafe extern "C" {
    fn xrtDeviceOpen(index: c_uint) -> *mut c_void;
    fn xrtDeviceClose(device: *mut c_void) -> c_int;
    fn xrtDeviceLoadXclbin(device: *mut c_void, axlf: *const u8) -> c_int;
    fn xrtDeviceGetXclbinUUID(device: *mut c_void, out: *mut u8) -> c_int;
    fn xrtBOAlloc(device: *mut c_void, size: usize, flags: u64, group: u32) -> *mut c_void;
    fn xrtBOFree(bo: *mut c_void) -> c_int;
    fn xrtBOSize(bo: *mut c_void) -> usize;
    fn xrtBOMap(bo: *mut c_void) -> *mut c_void;
    fn xrtBOWrite(bo: *mut c_void, src: *const c_void, size: usize, seek: usize) -> c_int;
    fn xrtBORead(bo: *mut c_void, dst: *mut c_void, size: usize, skip: usize) -> c_int;
    fn xrtBOSync(bo: *mut c_void, direction: c_int, size: usize, offset: usize) -> c_int;
    fn xrtPLKernelOpen(device: *mut c_void, uuid: *const u8, name: *const c_char) -> *mut c_void;
    fn xrtKernelClose(kernel: *mut c_void) -> c_int;
    fn xrtKernelRun(kernel: *mut c_void, ...) -> *mut c_void;
    fn xrtRunWait(run: *mut c_void) -> c_int;
    fn xrtRunWaitFor(run: *mut c_void, timeout_ms: c_uint) -> c_int;
    fn xrtRunClose(run: *mut c_void) -> c_int;

    fn olInit() -> ol_result_t;
    fn olGetPlatform(entries: u32, out: *mut *mut c_void) -> ol_result_t;
    fn olGetDeviceCount(platform: *mut c_void, out: *mut u32) -> ol_result_t;
    fn olGetDevice(platform: *mut c_void, entries: u32, out: *mut *mut c_void) -> ol_result_t;
    fn olGetHostDevice(out: *mut *mut c_void) -> ol_result_t;
    fn olMemAlloc(
        device: *mut c_void,
        kind: u32,
        size: usize,
        out: *mut *mut c_void,
    ) -> ol_result_t;
    fn olMemFree(device: *mut c_void, kind: u32, address: *mut c_void) -> ol_result_t;
    fn olCreateQueue(device: *mut c_void, out: *mut *mut c_void) -> ol_result_t;
    fn olReleaseQueue(queue: *mut c_void) -> ol_result_t;
    fn olRetainQueue(queue: *mut c_void) -> ol_result_t;
    fn olWaitQueue(queue: *mut c_void) -> ol_result_t;
    fn olReleaseEvent(event: *mut c_void) -> ol_result_t;
    fn olWaitEvent(event: *mut c_void) -> ol_result_t;
    fn olEnqueueMemcpy(
        queue: *mut c_void,
        dst: *mut c_void,
        dst_device: *mut c_void,
        src: *mut c_void,
        src_device: *mut c_void,
        size: usize,
        event: *mut *mut c_void,
    ) -> ol_result_t;
}

/// The config of the process: the embedded default's XRT card, then chaos devices dressed as
/// XRT cards: one that answers short buffers and events that never complete, one that gives
/// ids twice and fails every command with a message of its own, and an honest one.
fn config() -> String {
    let mut config: serde_json::Value =
        serde_json::from_str(accelhost::builtin::embedded_default_text()).unwrap();
    let policy = serde_json::json!({
        "on_fault": "restart",
        "max_restarts": 1000,
        "restart_backoff_ms": 0,
        "call_timeout_ms": CALL_TIMEOUT_MS,
        "event_deadline_ms": EVENT_DEADLINE_MS,
        "memory_mib": 16,
        "max_table_elements": 4096,
        "host_memory_mib": 4,
        "max_resources": 4096
    });
    let plugins = config["plugins"].as_array_mut().unwrap();
    plugins.retain(|p| p["name"] == "xocl");
    for (name, lies) in [
        (
            "liar",
            serde_json::json!(["short-buffer", "pending-events"]),
        ),
        ("twice", serde_json::json!(["repeat-id", "failed-events"])),
        ("honest", serde_json::json!([])),
    ] {
        plugins.push(serde_json::json!({
            "name": name,
            "module": "builtin:chaos",
            "config": {"interface": "xocl", "lie": lies},
            "load_policy": policy,
            "grants": {"dma_memory_mib": 8}
        }));
    }
    config.to_string()
}

/// What every input starts from: the doors' hosts started on [`config`] (in the tests'
/// compile cache), the vadd image the emulated card runs, and the chaos plugins' worst case.
struct Process {
    image: Vec<u8>,
    worst_case: u64,
    platform: *mut c_void,
    host_device: *mut c_void,
}

// SAFETY: the raw pointers are door handles, plain values usable from any thread.
unsafe impl Send for Process {}

static PROCESS: Mutex<Option<Process>> = Mutex::new(None);

/// Names the config and starts both doors' hosts, once per process.
pub fn warm_up() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let dir = crate::process_dir::own("accelhost-fuzz-doors-");
        let path = dir.join("accelhost.json");
        std::fs::write(&path, config()).unwrap();
        let parsed = Config::load(&path).unwrap();
        let worst_case = parsed
            .plugins
            .iter()
            .filter(|p| p.module_text == "builtin:chaos")
            .map(accelhost::worst_case_host_memory)
            .sum();
        let cache: PathBuf = std::env::var_os(accelhost::CACHE_ENV)
            .map(PathBuf::from)
            .unwrap_or_else(|| dir.join("cache"));
        // SAFETY: set before the doors read them, on the first input's thread.
        unsafe {
            std::env::set_var("ACCELHOST_CONFIG", &path);
            std::env::set_var(accelhost::CACHE_ENV, cache);
            std::env::remove_var("ACCELHOST_ENDPOINT");
        }
        // SAFETY: the Offload API's calls with valid out-pointers.
        let (platform, host_device) = unsafe {
            assert!(olInit().is_null(), "the Offload door starts");
            let mut platform = std::ptr::null_mut();
            let mut host = std::ptr::null_mut();
            assert!(olGetPlatform(1, &mut platform).is_null());
            assert!(olGetHostDevice(&mut host).is_null());
            (platform, host)
        };
        *PROCESS.lock().unwrap_or_else(PoisonError::into_inner) = Some(Process {
            image: vadd_image(2),
            worst_case,
            platform,
            host_device,
        });
    });
}

/// The handles an input made, released and forged, by kind.
#[derive(Default)]
struct Pools {
    devices: Vec<usize>,
    bos: Vec<usize>,
    kernels: Vec<usize>,
    runs: Vec<usize>,
    queues: Vec<usize>,
    events: Vec<usize>,
    /// Offload allocations: address, device, kind.
    memory: Vec<(usize, usize, u32)>,
    /// Every handle released in this input, of any kind.
    released: Vec<usize>,
}

/// Picks a handle for an argument byte: a live one of `live`, a released one, one of another
/// kind, a forged value or NULL.
fn pick(byte: u8, live: &[usize], pools: &Pools) -> *mut c_void {
    let n = usize::from(byte >> 3);
    let value = match byte & 7 {
        0..=3 => live.get(n % live.len().max(1)).copied().unwrap_or(0),
        4 => pools
            .released
            .get(n % pools.released.len().max(1))
            .copied()
            .unwrap_or(0),
        5 => pools
            .bos
            .iter()
            .chain(&pools.queues)
            .chain(&pools.events)
            .nth(n)
            .copied()
            .unwrap_or(0),
        6 => 0x1000 * (n + 1),
        _ => 0,
    };
    value as *mut c_void
}

/// A size from an argument byte: small mostly, sometimes absurd.
fn size(byte: u8) -> usize {
    match byte >> 6 {
        0..=2 => (usize::from(byte) * 997) % SMALL + 1,
        _ => [0, usize::MAX, 1 << 40, 3 << 20][usize::from(byte & 3)],
    }
}

/// Checks what a door's call answered: a door that panicked says so.
fn xrt_ok(call: &str, failed: bool) {
    if failed {
        let errno = std::io::Error::last_os_error().raw_os_error();
        assert_ne!(errno, Some(libc::EFAULT), "{call}: the XRT door panicked");
    }
}

/// Checks an Offload answer; true if it succeeded.
fn ol_ok(call: &str, result: ol_result_t) -> bool {
    if result.is_null() {
        return true;
    }
    // SAFETY: an error the door returned stays valid for the process's life.
    let details = unsafe { std::ffi::CStr::from_ptr((*result).details) }.to_string_lossy();
    assert!(
        !details.contains("an internal error (a panic)"),
        "{call}: the Offload door panicked: {details}"
    );
    false
}

/// Writes every byte of the `len` bytes a door handed out at `pointer`, and reads them back.
fn touch(call: &str, pointer: *mut c_void, len: usize) {
    if pointer.is_null() || len == 0 {
        return;
    }
    // SAFETY: the door says `len` bytes live at `pointer`: what the oracle holds it to.
    unsafe {
        std::ptr::write_bytes(pointer.cast::<u8>(), 0xa5, len);
        assert_eq!(
            pointer.cast::<u8>().add(len - 1).read_volatile(),
            0xa5,
            "{call}"
        );
    }
}

/// Runs one op (`call`, `a`, `b`); returns how long the call took.
fn op(process: &Process, pools: &mut Pools, call: u8, a: u8, b: u8) -> Duration {
    let started = Instant::now();
    let mut scratch = vec![0u8; SMALL];
    // SAFETY: for every call below, the doors' C API with pointers the fuzzer owns or handles it
    // was given, as a C program calls it; the handles may be anything, which is the point.
    unsafe {
        match call % 24 {
            0 => {
                let device = xrtDeviceOpen(c_uint::from(a % 6));
                xrt_ok("xrtDeviceOpen", device.is_null());
                if !device.is_null() {
                    pools.devices.push(device as usize);
                }
            }
            1 => {
                let device = pick(a, &pools.devices, pools);
                if xrtDeviceClose(device) == 0 {
                    pools.devices.retain(|d| *d != device as usize);
                    pools.released.push(device as usize);
                } else {
                    xrt_ok("xrtDeviceClose", true);
                }
            }
            2 => {
                let device = pick(a, &pools.devices, pools);
                xrt_ok(
                    "xrtDeviceLoadXclbin",
                    xrtDeviceLoadXclbin(device, process.image.as_ptr()) != 0,
                );
            }
            3 | 4 => {
                let device = pick(a, &pools.devices, pools);
                let flags = [0u64, XCL_BO_FLAGS_DEV_ONLY, XCL_BO_FLAGS_HOST_ONLY, 1 << 63]
                    [usize::from(b & 3)];
                let bo = xrtBOAlloc(device, size(b), flags, 0);
                xrt_ok("xrtBOAlloc", bo.is_null());
                if !bo.is_null() {
                    pools.bos.push(bo as usize);
                }
            }
            5 => {
                let bo = pick(a, &pools.bos, pools);
                if xrtBOFree(bo) == 0 {
                    pools.bos.retain(|x| *x != bo as usize);
                    pools.released.push(bo as usize);
                } else {
                    xrt_ok("xrtBOFree", true);
                }
            }
            6 => {
                let bo = pick(a, &pools.bos, pools);
                let mapped = xrtBOMap(bo);
                xrt_ok("xrtBOMap", mapped.is_null());
                if !mapped.is_null() {
                    touch("xrtBOMap", mapped, xrtBOSize(bo));
                }
            }
            7 => {
                let bo = pick(a, &pools.bos, pools);
                let len = size(b).min(SMALL);
                let seek = usize::from(b) * 64;
                xrt_ok(
                    "xrtBOWrite",
                    xrtBOWrite(bo, scratch.as_ptr().cast(), len, seek) != 0,
                );
                xrt_ok(
                    "xrtBORead",
                    xrtBORead(bo, scratch.as_mut_ptr().cast(), len, seek) != 0,
                );
            }
            8 => {
                let bo = pick(a, &pools.bos, pools);
                let direction = c_int::from(b & 1);
                xrt_ok("xrtBOSync", xrtBOSync(bo, direction, size(b), 0) != 0);
            }
            9 => {
                let device = pick(a, &pools.devices, pools);
                let mut uuid = [0u8; 16];
                if xrtDeviceGetXclbinUUID(device, uuid.as_mut_ptr()) == 0 {
                    let kernel = xrtPLKernelOpen(device, uuid.as_ptr(), c"vadd".as_ptr());
                    xrt_ok("xrtPLKernelOpen", kernel.is_null());
                    if !kernel.is_null() {
                        pools.kernels.push(kernel as usize);
                    }
                }
            }
            10 => {
                let kernel = pick(a, &pools.kernels, pools);
                let (x, y, z) = (
                    pick(b, &pools.bos, pools),
                    pick(b.rotate_left(3), &pools.bos, pools),
                    pick(b.rotate_left(5), &pools.bos, pools),
                );
                let run = xrtKernelRun(kernel, x, y, z, c_int::from(a) * 16);
                xrt_ok("xrtKernelRun", run.is_null());
                if !run.is_null() {
                    pools.runs.push(run as usize);
                }
            }
            11 => {
                let run = pick(a, &pools.runs, pools);
                let state = if b & 1 == 0 {
                    xrtRunWait(run)
                } else {
                    xrtRunWaitFor(run, c_uint::from(b))
                };
                xrt_ok("xrtRunWait", state < 0);
            }
            12 => {
                let run = pick(a, &pools.runs, pools);
                if xrtRunClose(run) == 0 {
                    pools.runs.retain(|x| *x != run as usize);
                    pools.released.push(run as usize);
                } else {
                    xrt_ok("xrtRunClose", true);
                }
            }
            13 => {
                let kernel = pick(a, &pools.kernels, pools);
                if xrtKernelClose(kernel) == 0 {
                    pools.kernels.retain(|x| *x != kernel as usize);
                    pools.released.push(kernel as usize);
                } else {
                    xrt_ok("xrtKernelClose", true);
                }
            }
            14 | 15 => {
                let device = offload_device(process, a);
                let kind = u32::from(b % 4);
                let mut out = std::ptr::null_mut();
                let len = size(b);
                if ol_ok("olMemAlloc", olMemAlloc(device, kind, len, &mut out)) {
                    if kind != OL_ALLOC_TYPE_DEVICE {
                        touch("olMemAlloc", out, len);
                    }
                    pools.memory.push((out as usize, device as usize, kind));
                }
            }
            16 => {
                let (address, device, kind) = pools
                    .memory
                    .get(usize::from(a) % pools.memory.len().max(1))
                    .copied()
                    .unwrap_or((usize::from(a) << 12, 0, 0));
                let kind = if b & 1 == 0 { kind } else { u32::from(b % 4) };
                if ol_ok(
                    "olMemFree",
                    olMemFree(device as *mut c_void, kind, address as *mut c_void),
                ) {
                    pools.memory.retain(|m| m.0 != address);
                    pools.released.push(address);
                }
            }
            17 => {
                let device = offload_device(process, a);
                let mut queue = std::ptr::null_mut();
                if ol_ok("olCreateQueue", olCreateQueue(device, &mut queue)) {
                    pools.queues.push(queue as usize);
                }
            }
            18 => {
                let queue = pick(a, &pools.queues, pools);
                if b & 1 == 0 {
                    ol_ok("olRetainQueue", olRetainQueue(queue));
                } else if ol_ok("olReleaseQueue", olReleaseQueue(queue)) {
                    pools.released.push(queue as usize);
                }
            }
            19 => {
                ol_ok("olWaitQueue", olWaitQueue(pick(a, &pools.queues, pools)));
            }
            20 | 21 => {
                let queue = pick(a, &pools.queues, pools);
                let memory = pools.memory.get(usize::from(b) % pools.memory.len().max(1));
                let (device_memory, device) = memory
                    .map_or((std::ptr::null_mut(), std::ptr::null_mut()), |m| {
                        (m.0 as *mut c_void, m.1 as *mut c_void)
                    });
                let len = (usize::from(b) * 61) % SMALL;
                let mut event = std::ptr::null_mut();
                let (dst, dst_device, src, src_device) = if call & 1 == 0 {
                    (
                        device_memory,
                        device,
                        scratch.as_mut_ptr().cast(),
                        process.host_device,
                    )
                } else {
                    (
                        scratch.as_mut_ptr().cast(),
                        process.host_device,
                        device_memory,
                        device,
                    )
                };
                let queued =
                    olEnqueueMemcpy(queue, dst, dst_device, src, src_device, len, &mut event);
                if ol_ok("olEnqueueMemcpy", queued) && !event.is_null() {
                    pools.events.push(event as usize);
                }
                // The copy reads and writes `scratch` as it runs: it must be done before the
                // scratch goes.
                ol_ok("olWaitQueue", olWaitQueue(queue));
            }
            22 => {
                ol_ok("olWaitEvent", olWaitEvent(pick(a, &pools.events, pools)));
            }
            _ => {
                let event = pick(a, &pools.events, pools);
                if ol_ok("olReleaseEvent", olReleaseEvent(event)) {
                    pools.events.retain(|x| *x != event as usize);
                    pools.released.push(event as usize);
                }
            }
        }
    }
    started.elapsed()
}

/// An Offload device for an argument byte: the host device or one of the platform's.
fn offload_device(process: &Process, byte: u8) -> *mut c_void {
    let mut devices = [std::ptr::null_mut(); 16];
    let mut count = 0;
    // SAFETY: the Offload API's calls with valid out-pointers.
    unsafe {
        if !olGetDeviceCount(process.platform, &mut count).is_null()
            || !olGetDevice(process.platform, count.min(16), devices.as_mut_ptr()).is_null()
        {
            return std::ptr::null_mut();
        }
    }
    match usize::from(byte) % (count.min(16) as usize + 2) {
        0 => process.host_device,
        1 => (usize::from(byte) << 8) as *mut c_void,
        n => devices[n - 2],
    }
}

/// Releases everything an input made, so that the next starts from the same process.
fn release(pools: Pools) {
    // SAFETY: handles the doors gave this input, released once each.
    unsafe {
        for run in pools.runs {
            xrtRunWaitFor(run as *mut c_void, 1);
            xrtRunClose(run as *mut c_void);
        }
        for kernel in pools.kernels {
            xrtKernelClose(kernel as *mut c_void);
        }
        for bo in pools.bos {
            xrtBOFree(bo as *mut c_void);
        }
        for device in pools.devices {
            xrtDeviceClose(device as *mut c_void);
        }
        for event in pools.events {
            olReleaseEvent(event as *mut c_void);
        }
        for queue in pools.queues {
            // Every reference the input may have added.
            while olReleaseQueue(queue as *mut c_void).is_null() {}
        }
        for (address, device, kind) in pools.memory {
            olMemFree(device as *mut c_void, kind, address as *mut c_void);
        }
    }
}

/// Runs one input.
pub fn run(data: &[u8]) {
    // One input at a time: the oracles read process-wide figures, and the doors' hosts are
    // the process's.
    static ONE: Mutex<()> = Mutex::new(());
    let _one = ONE.lock().unwrap_or_else(PoisonError::into_inner);
    warm_up();
    let guard = PROCESS.lock().unwrap_or_else(PoisonError::into_inner);
    let process = guard.as_ref().expect("warmed up");
    let bound = Duration::from_millis(EVENT_DEADLINE_MS + 2 * CALL_TIMEOUT_MS) + SLACK;
    let peak_from = accelhost::perf::restart_peak().expect("the kernel resets the peak");
    let mut pools = Pools::default();
    for chunk in data.as_chunks::<3>().0.iter().take(MAX_OPS) {
        let [call, a, b] = *chunk;
        let took = op(process, &mut pools, call, a, b);
        assert!(
            took <= bound,
            "op {call} ({a}, {b}) took {took:?}, past the deadlines' {bound:?}"
        );
    }
    release(pools);
    let peak = accelhost::perf::peak_resident_bytes().saturating_sub(peak_from);
    assert!(
        peak <= process.worst_case + PEAK_CONSTANT,
        "resident memory peaked {} MiB above where it was, past the chaos plugins' worst \
         cases of {} MiB and {} MiB",
        peak >> 20,
        process.worst_case >> 20,
        PEAK_CONSTANT >> 20
    );
}
