//! Compiling a plugin file in a worker process, so that a component built to make Cranelift
//! work for minutes or take gigabytes ends as a killed child, within
//! `load_policy.compile_timeout_ms` and `compile_memory_mib`, and never holds up the host.
//!
//! A binary becomes able to serve as a worker by calling [`serve_if_asked`] first thing in its
//! `main` (the `accelhost` command does). The host runs `<worker> __accelhost-compile-worker
//! <plain|metered>`, the worker being `ACCELHOST_COMPILE_WORKER` if set, else the
//! host's own executable if it serves, else none, and then the file compiles in the host's
//! process, unbounded, as built-in plugins always do.
//!
//! The exchange: the host writes the wasm on the worker's stdin as one frame (its length as
//! 8 little-endian bytes, then the bytes) and keeps stdin open; the worker compiles it with an
//! engine made by the host's own engine configuration and writes the compiled code on stdout
//! as one frame, or wasmtime's error on stderr with an exit status of its own. A worker
//! whose stdin ends (the host died or gave up) exits at once. The host reads at most
//! `compile_memory_mib` of output, kills and reaps the worker at the deadline (or when the
//! waiting thread unwinds), and tells a limit from a crash by how the worker ended.

use std::ffi::{OsStr, OsString};
use std::io::{Read, Write};
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};

use super::cache::ComponentCache;
use super::engine::EngineKind;
use super::functions::{self, FunctionCache};
use crate::config::LoadPolicy;
use crate::error::CompileFailure;

/// Environment variable naming an executable that serves as a compile worker (one whose
/// `main` calls [`serve_if_asked`], such as an installed `accelhost`). It takes precedence over
/// the host's own executable.
pub const WORKER_ENV: &str = "ACCELHOST_COMPILE_WORKER";

/// The first argument that makes a binary calling [`serve_if_asked`] a compile worker.
const WORKER_ARG: &str = "__accelhost-compile-worker";
/// The argument after the engine kind that makes a worker put its code into the compile cache
/// (followed by the cache's directory and its cap in bytes) instead of on stdout.
const INTO_CACHE_ARG: &str = "--into-cache";
/// The argument after the engine kind that makes a worker answering on stdout take function
/// code from beside the compile cache, and keep what it makes there (followed by the cache's
/// directory and its cap in bytes). A worker answering into the cache always does.
const FUNCTIONS_ARG: &str = "--functions-beside";
/// What the host writes on the stdin of a worker compiling into the cache to let it finish
/// if the host ends; without it, the end of its stdin ends the worker, as any worker's.
const LET_FINISH: u8 = b'f';
/// The niceness of a worker compiling in the background (`nice 10`).
const BACKGROUND_NICENESS: libc::c_int = 10;

/// The worker's exit status when wasmtime refused the component (its error is on stderr).
const EXIT_INVALID: i32 = 3;
/// The worker's exit status when its request was not one it takes (a bad flavor or frame).
const EXIT_BAD_REQUEST: i32 = 4;
/// The worker's exit status when its stdin ended before it was done: the host went away.
const EXIT_ORPHANED: i32 = 5;
/// The worker's exit status when it could not make its engine.
const EXIT_NO_ENGINE: i32 = 6;

/// The largest wasm a worker accepts: wasmparser refuses larger components anyway.
const MAX_WASM: u64 = 4 << 30;
/// How much of the worker's stderr the host keeps: its end, where the error is.
const STDERR_TAIL: usize = 2048;
/// How long the host waits for the end of an ended worker's stderr (it comes at once, unless
/// something else holds the pipe).
const STDERR_GRACE: Duration = Duration::from_secs(1);

/// This executable, once [`serve_if_asked`] found it was not asked to be a worker.
static THIS_EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// Serves as a compile worker and exits the process, if the first argument asks for one;
/// otherwise records that this executable can serve as one and returns. Call it first thing
/// in `main` (before anything reads the arguments or starts threads): then plugin files this
/// process loads compile in a child process, bounded by their `load_policy`.
pub fn serve_if_asked() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(OsStr::new(WORKER_ARG)) {
        std::process::exit(serve(args.collect()));
    }
    // The running executable's image, even if its file was replaced or removed since it
    // started: a worker is then the same build as the host, whose code the host can load.
    let this = Path::new("/proc/self/exe");
    let this = if this.exists() {
        Some(this.to_path_buf())
    } else {
        std::env::current_exe().ok()
    };
    if let Some(this) = this {
        let _ = THIS_EXECUTABLE.set(this);
    }
}

/// The executable plugin files compile in, as worker processes: `ACCELHOST_COMPILE_WORKER`,
/// else this executable if it called [`serve_if_asked`], else none (they compile in this
/// process, unbounded).
pub fn program() -> Option<PathBuf> {
    match std::env::var_os(WORKER_ENV) {
        Some(path) if !path.is_empty() => Some(PathBuf::from(path)),
        _ => THIS_EXECUTABLE.get().cloned(),
    }
}

/// The limits of one compile, from a plugin's `load_policy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct CompileLimits {
    /// `load_policy.compile_timeout_ms`.
    pub timeout_ms: u64,
    /// `load_policy.compile_memory_mib`.
    pub memory_mib: u64,
    /// `load_policy.baseline_first_mib`, in bytes: a component at least this large starts on
    /// baseline code while its optimized code compiles in the background.
    pub baseline_first_bytes: u64,
}

impl CompileLimits {
    /// The limits `policy` sets.
    pub fn of(policy: &LoadPolicy) -> CompileLimits {
        CompileLimits {
            timeout_ms: policy.compile_timeout_ms,
            memory_mib: policy.compile_memory_mib,
            baseline_first_bytes: policy.baseline_first_mib.saturating_mul(1 << 20),
        }
    }

    fn memory_bytes(&self) -> u64 {
        self.memory_mib.saturating_mul(1 << 20)
    }
}

/// Why a frame could not be read.
#[derive(Debug, thiserror::Error)]
enum FrameError {
    #[error("a frame of {len} bytes is over the {cap}-byte limit")]
    TooLarge { len: u64, cap: u64 },
    #[error("the frame ended after {got} of its {expected} bytes")]
    Truncated { got: u64, expected: u64 },
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// The header of a frame of `len` bytes.
fn frame_header(len: usize) -> [u8; 8] {
    (len as u64).to_le_bytes()
}

/// Reads one frame from `reader`, refusing one longer than `cap` before reserving anything.
fn read_frame(reader: &mut impl Read, cap: u64) -> Result<Vec<u8>, FrameError> {
    let mut header = [0u8; 8];
    let mut got = 0;
    while got < header.len() {
        match reader.read(&mut header[got..]) {
            Ok(0) => {
                return Err(FrameError::Truncated {
                    got: got as u64,
                    expected: header.len() as u64,
                });
            }
            Ok(n) => got += n,
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err.into()),
        }
    }
    let len = u64::from_le_bytes(header);
    if len > cap {
        return Err(FrameError::TooLarge { len, cap });
    }
    let mut bytes = Vec::new();
    bytes
        .try_reserve_exact(len as usize)
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
    reader.take(len).read_to_end(&mut bytes)?;
    if (bytes.len() as u64) < len {
        return Err(FrameError::Truncated {
            got: bytes.len() as u64,
            expected: len,
        });
    }
    Ok(bytes)
}

/// Where a worker puts the code it compiled.
enum Answer {
    /// On stdout, as one frame, for the host that waits for it; taking function code from
    /// beside the cache named, if one is.
    Stdout(Option<ComponentCache>),
    /// Into the compile cache, by the wasm's digest: a worker started by
    /// [`compile_into_cache`], which goes on if its host ends.
    IntoCache(ComponentCache),
}

/// The engine kind and answer a worker's arguments (after [`WORKER_ARG`]) ask for:
/// `<kind>`, `<kind> --functions-beside <dir> <max bytes>` or
/// `<kind> --into-cache <dir> <max bytes>`.
fn request(args: Vec<OsString>) -> Option<(EngineKind, Answer)> {
    let mut args = args.into_iter();
    let kind = EngineKind::from_arg(args.next()?.to_str()?)?;
    let Some(flag) = args.next() else {
        return Some((kind, Answer::Stdout(None)));
    };
    let dir = PathBuf::from(args.next()?);
    let max_bytes = args.next()?.to_str()?.parse().ok()?;
    let cache = ComponentCache::at(Some(dir)).with_max_bytes(max_bytes);
    let answer = match flag {
        flag if flag == INTO_CACHE_ARG => Answer::IntoCache(cache),
        flag if flag == FUNCTIONS_ARG => Answer::Stdout(Some(cache)),
        _ => return None,
    };
    args.next().is_none().then_some((kind, answer))
}

/// The cache a worker's code or function code goes beside, and its cap, as arguments.
fn cache_args(flag: &'static str, cache: &ComponentCache) -> Option<[OsString; 3]> {
    Some([
        flag.into(),
        cache.dir()?.into(),
        cache.max_bytes().to_string().into(),
    ])
}

/// The worker: reads the wasm from stdin, compiles it for the engine kind its arguments name,
/// and answers as they say (see [`request`]). Returns the exit status.
fn serve(args: Vec<OsString>) -> i32 {
    let Some((kind, answer)) = request(args.clone()) else {
        eprintln!(
            "accelhost compile worker: expected an engine kind (plain, metered, \
             plain-baseline, metered-baseline), optionally followed by {INTO_CACHE_ARG} <dir> \
             <max bytes>; got {args:?}"
        );
        return EXIT_BAD_REQUEST;
    };
    let wasm = match read_frame(&mut std::io::stdin().lock(), MAX_WASM) {
        Ok(wasm) => wasm,
        Err(err) => {
            eprintln!("accelhost compile worker: reading the component from stdin: {err}");
            return EXIT_BAD_REQUEST;
        }
    };
    // The host keeps stdin open while it wants the result; its end means nobody does (the
    // host died or gave up). A worker answering into the cache may be let finish on its own:
    // the host said so before it ended normally.
    let may_finish = matches!(answer, Answer::IntoCache(_));
    let watchdog = std::thread::Builder::new()
        .name("accelhost-worker-watchdog".into())
        .spawn(move || {
            let mut byte = [0u8; 1];
            loop {
                match std::io::stdin().read(&mut byte) {
                    Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                    Ok(1) if may_finish && byte[0] == LET_FINISH => return,
                    // SAFETY: _exit ends the process at once, which is all that is wanted
                    // here, whatever the compiling thread is doing.
                    _ => unsafe { libc::_exit(EXIT_ORPHANED) },
                }
            }
        });
    if let Err(err) = watchdog {
        eprintln!("accelhost compile worker: cannot start its watchdog: {err}");
        return EXIT_NO_ENGINE;
    }
    let engine = match wasmtime::Engine::new(&kind.config()) {
        Ok(engine) => engine,
        Err(err) => {
            eprintln!("accelhost compile worker: cannot make its engine: {err:#}");
            return EXIT_NO_ENGINE;
        }
    };
    let beside = match &answer {
        Answer::Stdout(beside) => beside.as_ref(),
        Answer::IntoCache(cache) => Some(cache),
    };
    let compiled = match beside.and_then(|c| FunctionCache::for_compile(c, kind, wasm.len())) {
        Some(functions) => functions::precompile(kind, &wasm, &functions),
        None => engine.precompile_component(&wasm),
    };
    let sha: [u8; 32] = Sha256::digest(&wasm).into();
    drop(wasm);
    match (compiled, answer) {
        (Ok(code), Answer::Stdout(_)) => {
            let mut stdout = std::io::stdout().lock();
            let written = stdout
                .write_all(&frame_header(code.len()))
                .and_then(|()| stdout.write_all(&code))
                .and_then(|()| stdout.flush());
            if written.is_err() {
                return EXIT_ORPHANED;
            }
            0
        }
        (Ok(code), Answer::IntoCache(cache)) => {
            cache.store_serialized(&engine, &sha, &code);
            0
        }
        (Err(err), _) => {
            eprint!("{err:#}");
            EXIT_INVALID
        }
    }
}

/// How often a compile the host waits on looks whether it is still wanted.
const ABANDON_CHECK: Duration = Duration::from_millis(50);

/// A worker process, killed and reaped when dropped unless it was reaped already: no way out
/// of a compile, an unwinding one included, leaves it running.
struct Running {
    child: Child,
    reaped: bool,
}

impl Running {
    fn kill_and_reap(&mut self) -> std::io::Result<ExitStatus> {
        let _ = self.child.kill();
        self.reap()
    }

    fn reap(&mut self) -> std::io::Result<ExitStatus> {
        let status = self.child.wait();
        self.reaped = status.is_ok();
        status
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if !self.reaped {
            let _ = self.kill_and_reap();
        }
    }
}

/// Compiles `wasm` for an engine of `kind` in a worker run from `program`, within `limits`.
/// Returns the compiled code, serialized as `Component::serialize` makes it.
pub(crate) fn compile(
    program: &Path,
    wasm: &[u8],
    kind: EngineKind,
    limits: CompileLimits,
    functions_beside: Option<&ComponentCache>,
) -> Result<Vec<u8>, CompileFailure> {
    let started = Instant::now();
    let deadline = started + Duration::from_millis(limits.timeout_ms);
    let mut args = vec![OsString::from(kind.arg())];
    args.extend(
        functions_beside
            .and_then(|cache| cache_args(FUNCTIONS_ARG, cache))
            .into_iter()
            .flatten(),
    );
    let Started {
        mut worker,
        stdin: ours,
        tail,
    } = start(program, &args, Stdio::piped(), limits, false)?;
    // The reader owns the pipe and is never waited for past the worker's end: whatever holds
    // the pipe open, the host goes on.
    let stdout = worker.child.stdout.take().expect("stdout is piped");
    let output_cap = limits.memory_bytes();
    let (frame_sender, frame) = mpsc::channel();
    std::thread::Builder::new()
        .name("accelhost-worker-stdout".into())
        .spawn(move || {
            let mut stdout = stdout;
            let _ = frame_sender.send(read_frame(&mut stdout, output_cap));
        })
        .map_err(|e| unavailable(program, "starting its reader", e))?;
    let timed_out = |mut worker: Running| {
        let _ = worker.kill_and_reap();
        Err(CompileFailure::TimedOut {
            limit_ms: limits.timeout_ms,
        })
    };
    // A worker reads all its input before it compiles; one that does not read it in time is
    // past its deadline. One that died has its exit status say why.
    if let Err(err) = send_frame(&ours, wasm, deadline)
        && err.kind() == std::io::ErrorKind::TimedOut
    {
        return timed_out(worker);
    }
    // The frame comes, or the reader gives up, when the worker closes its stdout: it is
    // ending then, normally at once.
    let frame = loop {
        if super::compile::abandoned() {
            let _ = worker.kill_and_reap();
            return Err(CompileFailure::Worker {
                reason: "the host shut down while the plugin compiled".into(),
            });
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return timed_out(worker);
        }
        match frame.recv_timeout(left.min(ABANDON_CHECK)) {
            Ok(frame) => break frame,
            Err(mpsc::RecvTimeoutError::Timeout) => continue,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                break Err(FrameError::Io(std::io::Error::other(
                    "its output reader stopped",
                )));
            }
        }
    };
    let Some(status) = wait_until(&mut worker, deadline) else {
        return timed_out(worker);
    };
    // An ended worker's stderr ends with it.
    let stderr = tail.recv_timeout(STDERR_GRACE).unwrap_or_default();
    outcome(program, status, frame, &stderr, limits)
}

/// A worker just started: the process, its stdin, and the end of its stderr once it ends.
struct Started {
    worker: Running,
    stdin: UnixStream,
    tail: mpsc::Receiver<String>,
}

/// The failure of a worker at `program` that could not be run: `what` failed with `err`.
fn unavailable(program: &Path, what: &str, err: std::io::Error) -> CompileFailure {
    CompileFailure::Worker {
        reason: format!(
            "cannot run the compile worker {}: {what}: {err}",
            program.display()
        ),
    }
}

/// Starts a worker from `program` with `args` after [`WORKER_ARG`], `stdout`, and the
/// rlimits of `limits`; a `background` one also gets an alarm at the deadline and a lower
/// priority. Its stderr's end is read on a thread of its own, never waited for past the
/// worker's end.
fn start(
    program: &Path,
    args: &[OsString],
    stdout: Stdio,
    limits: CompileLimits,
    background: bool,
) -> Result<Started, CompileFailure> {
    // A socket rather than a pipe for stdin: writing to a worker that died is an error here
    // (MSG_NOSIGNAL), not a SIGPIPE, which a process embedding the library may not ignore.
    let (ours, theirs) =
        UnixStream::pair().map_err(|e| unavailable(program, "making its stdin", e))?;
    let mut command = Command::new(program);
    command
        .arg(WORKER_ARG)
        .args(args)
        // A backtrace after a failed allocation would push Rust's message out of the stderr
        // tail that tells it from a crash.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .stdin(Stdio::from(OwnedFd::from(theirs)))
        .stdout(stdout)
        .stderr(Stdio::piped());
    let rlimits = WorkerRlimits::for_limits(limits);
    let alarm_seconds = u32::try_from(limits.timeout_ms.div_ceil(1000)).unwrap_or(u32::MAX);
    // SAFETY: the closure runs between fork and exec and makes only async-signal-safe calls
    // (getrlimit, setrlimit, alarm, setpriority, prctl), on values computed before the fork. The
    // alarm and the priority are kept across exec. A background compile runs behind the
    // plugins it is for: those run on baseline code meanwhile and start at once.
    unsafe {
        command.pre_exec(move || {
            rlimits.apply()?;
            if background {
                libc::alarm(alarm_seconds);
                libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICENESS);
            } else {
                // A compile the host waits on dies with the thread that waits: a host that
                // exits (a short command, or one killed) leaves no compile running.
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            }
            Ok(())
        });
    }
    let child = command
        .spawn()
        .map_err(|e| unavailable(program, "starting it", e))?;
    // The command holds the worker's end of the socket: closed here, so that the only
    // holder is the worker, and a dead worker makes writing to it fail.
    drop(command);
    let mut worker = Running {
        child,
        reaped: false,
    };
    let stderr = worker.child.stderr.take().expect("stderr is piped");
    let (tail_sender, tail) = mpsc::channel();
    std::thread::Builder::new()
        .name("accelhost-worker-stderr".into())
        .spawn(move || {
            let _ = tail_sender.send(tail_of(stderr, STDERR_TAIL));
        })
        .map_err(|e| unavailable(program, "starting its reader", e))?;
    Ok(Started {
        worker,
        stdin: ours,
        tail,
    })
}

/// Starts compiling `wasm` for an engine of `kind` in a worker run from `program` that puts
/// the code into `cache` itself, within `limits`. Once [let finish](IntoCache::let_finish),
/// it goes on if this process ends (a short-lived command leaves the optimized code behind
/// for the next start), bounded by an alarm at the deadline and the CPU limit; a process
/// killed before that ends it as any worker. Returns once the worker has the whole
/// component. `cache` must have a directory.
pub(crate) fn compile_into_cache(
    program: &Path,
    wasm: &[u8],
    kind: EngineKind,
    limits: CompileLimits,
    cache: &ComponentCache,
) -> Result<IntoCache, CompileFailure> {
    let deadline = Instant::now() + Duration::from_millis(limits.timeout_ms);
    let Some(cache_args) = cache_args(INTO_CACHE_ARG, cache) else {
        return Err(unavailable(
            program,
            "the compile cache",
            std::io::Error::other("it has no directory"),
        ));
    };
    let mut args = vec![OsString::from(kind.arg())];
    args.extend(cache_args);
    let Started {
        worker,
        stdin: ours,
        tail,
    } = start(program, &args, Stdio::null(), limits, true)?;
    match send_frame(&ours, wasm, deadline) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::TimedOut => {
            return Err(CompileFailure::TimedOut {
                limit_ms: limits.timeout_ms,
            });
        }
        // A worker that died before it read the whole component says why when waited for.
        Err(_) => {}
    }
    Ok(IntoCache {
        worker,
        stdin: ours,
        program: program.to_path_buf(),
        deadline,
        limits,
        tail,
    })
}

/// A worker compiling into the compile cache: [`compile_into_cache`].
pub(crate) struct IntoCache {
    worker: Running,
    stdin: UnixStream,
    program: PathBuf,
    deadline: Instant,
    limits: CompileLimits,
    tail: mpsc::Receiver<String>,
}

impl IntoCache {
    /// A way to [let the worker finish](let_finish) from another thread while this one waits.
    pub fn stdin(&self) -> std::io::Result<UnixStream> {
        self.stdin.try_clone()
    }

    /// Waits for the worker until its deadline (and kills it there): `Ok` once it stored
    /// the code, else why it did not.
    pub fn wait(mut self) -> Result<(), CompileFailure> {
        let Some(status) = wait_until(&mut self.worker, self.deadline) else {
            let _ = self.worker.kill_and_reap();
            return Err(CompileFailure::TimedOut {
                limit_ms: self.limits.timeout_ms,
            });
        };
        if status.success() {
            return Ok(());
        }
        let stderr = self.tail.recv_timeout(STDERR_GRACE).unwrap_or_default();
        Err(failure(&self.program, status, &stderr, self.limits))
    }
}

/// Lets the worker whose stdin is `stdin` (from [`IntoCache::stdin`]) finish its compile into
/// the cache if this process ends first.
pub(crate) fn let_finish(stdin: &UnixStream) {
    let deadline = Instant::now() + STDERR_GRACE;
    let _ = send_all(stdin, &[LET_FINISH], deadline);
}

/// Waits for `worker` to end until `deadline`; `None` when it is still running then.
fn wait_until(worker: &mut Running, deadline: Instant) -> Option<ExitStatus> {
    let mut pause = Duration::from_millis(1);
    loop {
        match worker.child.try_wait() {
            Ok(Some(status)) => {
                worker.reaped = true;
                return Some(status);
            }
            Ok(None) => {}
            Err(_) => return worker.reap().ok(),
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return None;
        }
        std::thread::sleep(pause.min(left));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// What a worker that ended with `status` did, from its stdout frame and the end of its
/// stderr.
fn outcome(
    program: &Path,
    status: ExitStatus,
    frame: Result<Vec<u8>, FrameError>,
    stderr: &str,
    limits: CompileLimits,
) -> Result<Vec<u8>, CompileFailure> {
    let out_of_memory = CompileFailure::OutOfMemory {
        limit_mib: limits.memory_mib,
    };
    match (status.code(), frame) {
        (Some(0), Ok(code)) => return Ok(code),
        (_, Err(FrameError::TooLarge { .. })) => return Err(out_of_memory),
        (Some(0), Err(err)) => {
            return Err(CompileFailure::Worker {
                reason: format!(
                    "the compile worker {} answered out of turn: {err}",
                    program.display()
                ),
            });
        }
        _ => {}
    }
    Err(failure(program, status, stderr, limits))
}

/// Why a worker that ended with `status`, not a success, and said `stderr`, failed.
fn failure(
    program: &Path,
    status: ExitStatus,
    stderr: &str,
    limits: CompileLimits,
) -> CompileFailure {
    let stderr = stderr.trim();
    if says_out_of_memory(stderr) {
        return CompileFailure::OutOfMemory {
            limit_mib: limits.memory_mib,
        };
    }
    match (status.code(), status.signal()) {
        (Some(EXIT_INVALID), _) => CompileFailure::Invalid {
            message: stderr.to_string(),
        },
        // RLIMIT_CPU's soft limit, the backstop of the wall-clock deadline, and the alarm
        // of a worker that answers into the cache.
        (_, Some(libc::SIGXCPU | libc::SIGALRM)) => CompileFailure::TimedOut {
            limit_ms: limits.timeout_ms,
        },
        (_, Some(signal)) => CompileFailure::Crashed {
            signal,
            stderr: stderr.to_string(),
        },
        (code, None) => CompileFailure::Worker {
            reason: format!(
                "the compile worker {} failed (exit status {}): {stderr}",
                program.display(),
                code.map_or("unknown".into(), |c| c.to_string())
            ),
        },
    }
}

/// Whether a worker's stderr says an allocation failed: Rust's message before it aborts,
/// an `ENOMEM` from a mapping wasmtime asked for, or no room for the wasm itself.
fn says_out_of_memory(stderr: &str) -> bool {
    [
        "memory allocation of",
        "Cannot allocate memory",
        "os error 12",
        "out of memory",
    ]
    .iter()
    .any(|sign| stderr.contains(sign))
}

/// Writes `wasm` as one frame to the worker's stdin by `deadline` (else a `TimedOut` error),
/// without SIGPIPE if the worker is gone.
fn send_frame(socket: &UnixStream, wasm: &[u8], deadline: Instant) -> std::io::Result<()> {
    send_all(socket, &frame_header(wasm.len()), deadline)?;
    send_all(socket, wasm, deadline)
}

fn send_all(socket: &UnixStream, mut bytes: &[u8], deadline: Instant) -> std::io::Result<()> {
    while !bytes.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::ErrorKind::TimedOut.into());
        }
        socket.set_write_timeout(Some(left))?;
        // SAFETY: `bytes` is a live slice of `bytes.len()` bytes and the descriptor is open.
        let sent = unsafe {
            libc::send(
                socket.as_raw_fd(),
                bytes.as_ptr().cast(),
                bytes.len(),
                libc::MSG_NOSIGNAL,
            )
        };
        if sent < 0 {
            let err = std::io::Error::last_os_error();
            match err.kind() {
                std::io::ErrorKind::Interrupted => continue,
                // The write timeout ran out: the deadline, checked above.
                std::io::ErrorKind::WouldBlock => continue,
                _ => return Err(err),
            }
        }
        bytes = &bytes[sent as usize..];
    }
    Ok(())
}

/// Reads `reader` to its end and keeps its last `keep` bytes, as text.
fn tail_of(mut reader: impl Read, keep: usize) -> String {
    let mut tail: Vec<u8> = Vec::with_capacity(2 * keep);
    let mut chunk = [0u8; 4096];
    loop {
        match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                tail.extend_from_slice(&chunk[..n]);
                if tail.len() > 2 * keep {
                    tail.drain(..tail.len() - keep);
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => break,
        }
    }
    if tail.len() > keep {
        tail.drain(..tail.len() - keep);
    }
    String::from_utf8_lossy(&tail).into_owned()
}

/// The resource limits of a worker, set between fork and exec.
#[derive(Clone, Copy)]
struct WorkerRlimits {
    /// RLIMIT_DATA: since Linux 4.7 it counts private writable mappings too, so it bounds
    /// what the compiler allocates, by brk or mmap.
    data_bytes: u64,
    /// RLIMIT_CPU, in seconds: a backstop past the wall-clock deadline, for all the worker's
    /// threads together.
    cpu_seconds: u64,
}

impl WorkerRlimits {
    fn for_limits(limits: CompileLimits) -> WorkerRlimits {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get() as u64);
        WorkerRlimits {
            data_bytes: limits.memory_bytes(),
            cpu_seconds: limits.timeout_ms.div_ceil(1000).saturating_mul(threads) + 1,
        }
    }

    /// Sets the limits on this process (a forked worker). No core file either: a worker that
    /// aborts in an allocation would write one of the compiler's heap.
    fn apply(self) -> std::io::Result<()> {
        lower_limit(libc::RLIMIT_DATA, self.data_bytes)?;
        lower_limit(libc::RLIMIT_CORE, 0)?;
        lower_limit(libc::RLIMIT_CPU, self.cpu_seconds)
    }
}

#[cfg(target_env = "gnu")]
type Resource = libc::__rlimit_resource_t;
#[cfg(not(target_env = "gnu"))]
type Resource = libc::c_int;

/// Sets both limits of `resource` to `value`, or keeps them where they are lower already.
fn lower_limit(resource: Resource, value: u64) -> std::io::Result<()> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit are async-signal-safe and get a valid pointer.
    unsafe {
        if libc::getrlimit(resource, &mut limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let value = value.min(limit.rlim_max);
        limit.rlim_cur = value;
        limit.rlim_max = value;
        if libc::setrlimit(resource, &limit) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const LIMITS: CompileLimits = CompileLimits {
        timeout_ms: 60_000,
        memory_mib: 64,
        baseline_first_bytes: u64::MAX,
    };

    fn framed(bytes: &[u8]) -> Vec<u8> {
        let mut framed = frame_header(bytes.len()).to_vec();
        framed.extend_from_slice(bytes);
        framed
    }

    #[test]
    fn a_workers_arguments_name_its_engine_and_where_its_code_goes() {
        let ask = |args: &[&str]| request(args.iter().map(OsString::from).collect());
        assert!(matches!(
            ask(&["plain"]),
            Some((kind, Answer::Stdout(None))) if kind == EngineKind::optimized(false)
        ));
        let Some((_, Answer::Stdout(Some(beside)))) =
            ask(&["metered", FUNCTIONS_ARG, "/var/cache/y", "4096"])
        else {
            panic!("a worker answering on stdout with the function cache")
        };
        assert_eq!(beside.dir(), Some(Path::new("/var/cache/y")));
        assert_eq!(beside.max_bytes(), 4096);
        let Some((kind, Answer::IntoCache(cache))) = ask(&[
            "metered-baseline",
            INTO_CACHE_ARG,
            "/var/cache/x",
            "1048576",
        ]) else {
            panic!("a worker answering into the cache")
        };
        assert_eq!(kind, EngineKind::baseline(true));
        assert_eq!(cache.dir(), Some(Path::new("/var/cache/x")));
        assert_eq!(cache.max_bytes(), 1 << 20);
        for bad in [
            &[][..],
            &["fast"],
            &["plain", "extra"],
            &["plain", INTO_CACHE_ARG, "/var/cache/x"],
            &["plain", INTO_CACHE_ARG, "/var/cache/x", "lots"],
            &["plain", INTO_CACHE_ARG, "/var/cache/x", "1", "more"],
            &["plain", FUNCTIONS_ARG, "/var/cache/x"],
            &["plain", "--elsewhere", "/var/cache/x", "1"],
        ] {
            assert!(ask(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn a_frame_reads_back_as_written() {
        let bytes = b"\0asm\x0d\0\x01\0 and the rest";
        let stream = framed(bytes);
        assert_eq!(stream[..8], (bytes.len() as u64).to_le_bytes());
        assert_eq!(read_frame(&mut &stream[..], 1024).unwrap(), bytes);
        assert_eq!(read_frame(&mut &framed(b"")[..], 0).unwrap(), b"");
    }

    #[test]
    fn a_short_or_oversized_frame_is_refused() {
        let stream = framed(b"twelve bytes");
        let short = read_frame(&mut &stream[..15], 1024).unwrap_err();
        assert!(
            matches!(
                short,
                FrameError::Truncated {
                    got: 7,
                    expected: 12
                }
            ),
            "{short}"
        );
        let no_header = read_frame(&mut &stream[..5], 1024).unwrap_err();
        assert!(
            matches!(
                no_header,
                FrameError::Truncated {
                    got: 5,
                    expected: 8
                }
            ),
            "{no_header}"
        );
        assert!(matches!(
            read_frame(&mut &stream[..], 11).unwrap_err(),
            FrameError::TooLarge { len: 12, cap: 11 }
        ));
        // A header claiming 1 TiB is refused by the cap before anything is reserved.
        let huge = (1u64 << 40).to_le_bytes();
        assert!(matches!(
            read_frame(&mut &huge[..], 1 << 20).unwrap_err(),
            FrameError::TooLarge { .. }
        ));
    }

    #[test]
    fn the_limits_come_from_the_load_policy() {
        let policy = LoadPolicy {
            compile_timeout_ms: 1500,
            compile_memory_mib: 300,
            ..LoadPolicy::default()
        };
        let limits = CompileLimits::of(&policy);
        assert_eq!(
            limits,
            CompileLimits {
                timeout_ms: 1500,
                memory_mib: 300,
                baseline_first_bytes: 4 << 20,
            }
        );
        let rlimits = WorkerRlimits::for_limits(limits);
        assert_eq!(rlimits.data_bytes, 300 << 20);
        assert!(
            rlimits.cpu_seconds >= 3,
            "the CPU backstop lies past the deadline"
        );
    }

    /// An exit status as `wait` reports it: an exit code, or a signal.
    fn exited(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }
    fn killed(signal: i32) -> ExitStatus {
        ExitStatus::from_raw(signal)
    }

    fn no_frame() -> Result<Vec<u8>, FrameError> {
        Err(FrameError::Truncated {
            got: 0,
            expected: 8,
        })
    }

    #[test]
    fn how_a_worker_ended_tells_a_limit_from_a_crash() {
        let worker = Path::new("/opt/worker");
        let end = |status, frame, stderr: &str| outcome(worker, status, frame, stderr, LIMITS);
        assert_eq!(
            end(exited(0), Ok(b"code".to_vec()), ""),
            Ok(b"code".to_vec())
        );
        let oom = Err(CompileFailure::OutOfMemory { limit_mib: 64 });
        assert_eq!(
            end(
                killed(libc::SIGABRT),
                no_frame(),
                "memory allocation of 4096 bytes failed\n"
            ),
            oom
        );
        let over = Err(FrameError::TooLarge {
            len: 1 << 40,
            cap: 64 << 20,
        });
        assert_eq!(
            end(exited(EXIT_ORPHANED), over, ""),
            oom,
            "more output than the limit"
        );
        assert_eq!(
            end(
                exited(EXIT_INVALID),
                no_frame(),
                "failed to map: Cannot allocate memory (os error 12)"
            ),
            oom
        );
        let no_room = "reading the component from stdin: out of memory";
        assert_eq!(end(exited(EXIT_BAD_REQUEST), no_frame(), no_room), oom);
        assert_eq!(
            end(exited(EXIT_INVALID), no_frame(), "invalid function body\n"),
            Err(CompileFailure::Invalid {
                message: "invalid function body".into()
            })
        );
        assert_eq!(
            end(killed(libc::SIGXCPU), no_frame(), ""),
            Err(CompileFailure::TimedOut { limit_ms: 60_000 })
        );
        assert_eq!(
            end(killed(libc::SIGSEGV), no_frame(), "some words"),
            Err(CompileFailure::Crashed {
                signal: libc::SIGSEGV,
                stderr: "some words".into()
            })
        );
        let Err(CompileFailure::Worker { reason }) = end(exited(7), no_frame(), "odd") else {
            panic!("an unknown exit status is the worker's failure")
        };
        assert!(
            reason.contains("/opt/worker failed (exit status 7): odd"),
            "{reason}"
        );
        let Err(CompileFailure::Worker { reason }) = end(exited(0), no_frame(), "") else {
            panic!("a success without its frame is the worker's failure")
        };
        assert!(
            reason.contains("/opt/worker answered out of turn"),
            "{reason}"
        );
    }

    #[test]
    fn the_stderr_tail_keeps_the_end() {
        let text: String = (0..10_000)
            .map(|i| char::from(b'a' + (i % 26) as u8))
            .collect();
        let tail = tail_of(text.as_bytes(), 100);
        assert_eq!(tail, text[text.len() - 100..]);
        assert_eq!(tail_of(&b"short"[..], 100), "short");
    }

    /// A stand-in worker: a shell script, in a fresh directory, that does `body`.
    fn fake_worker(name: &str, body: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!(
            "accelhost-fake-worker-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("worker");
        std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        path
    }

    #[test]
    fn a_worker_past_its_deadline_is_killed_and_reaped() {
        let worker = fake_worker(
            "sleeper",
            "echo $$ > \"$(dirname \"$0\")/pid\"; exec sleep 600",
        );
        let limits = CompileLimits {
            timeout_ms: 300,
            memory_mib: 64,
            baseline_first_bytes: u64::MAX,
        };
        let started = Instant::now();
        let result = compile(
            &worker,
            b"\0asm\x0d\0\x01\0",
            EngineKind::optimized(false),
            limits,
            None,
        );
        let took = started.elapsed();
        assert_eq!(result, Err(CompileFailure::TimedOut { limit_ms: 300 }));
        assert!(took >= Duration::from_millis(300), "{took:?}");
        assert!(
            took < Duration::from_secs(30),
            "it did not wait past the limit: {took:?}"
        );
        let dir = worker.parent().unwrap();
        let pid = std::fs::read_to_string(dir.join("pid")).unwrap();
        let proc = PathBuf::from(format!("/proc/{}", pid.trim()));
        assert!(
            !proc.exists(),
            "worker {} was left, running or unreaped",
            pid.trim()
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_worker_that_never_reads_its_input_is_still_ended_at_the_deadline() {
        // 32 MiB is far more than the socket buffers: the writer blocks until the kill.
        let wasm = vec![0u8; 32 << 20];
        let worker = fake_worker("deaf", "exec sleep 600");
        let limits = CompileLimits {
            timeout_ms: 300,
            memory_mib: 64,
            baseline_first_bytes: u64::MAX,
        };
        let started = Instant::now();
        let result = compile(&worker, &wasm, EngineKind::optimized(false), limits, None);
        assert_eq!(result, Err(CompileFailure::TimedOut { limit_ms: 300 }));
        assert!(started.elapsed() < Duration::from_secs(30));
        std::fs::remove_dir_all(worker.parent().unwrap()).unwrap();
    }

    #[test]
    fn the_worker_gets_the_frame_its_flavor_and_its_limits() {
        let wasm = b"\0asm\x0d\0\x01\0 twelve";
        // Answers with the frame it was given, header and all: the answer is the wasm.
        let echo = fake_worker("echo", &format!("head -c {}", 8 + wasm.len()));
        assert_eq!(
            compile(&echo, wasm, EngineKind::optimized(false), LIMITS, None),
            Ok(wasm.to_vec())
        );
        // Says its arguments and limits, as a refusal on stderr.
        let says = fake_worker(
            "says",
            r#"echo "args: $1 $2; data: $(ulimit -d) KiB; core: $(ulimit -c)" >&2; exit 3"#,
        );
        let limits = CompileLimits {
            timeout_ms: 10_000,
            memory_mib: 100,
            baseline_first_bytes: u64::MAX,
        };
        let Err(CompileFailure::Invalid { message }) =
            compile(&says, wasm, EngineKind::optimized(true), limits, None)
        else {
            panic!("exit status 3 is a refusal")
        };
        let expected = format!(
            "args: {WORKER_ARG} metered; data: {} KiB; core: 0",
            100 << 10
        );
        assert_eq!(message, expected);
        for worker in [echo, says] {
            std::fs::remove_dir_all(worker.parent().unwrap()).unwrap();
        }
    }

    #[test]
    fn a_worker_that_cannot_start_is_named() {
        let missing = Path::new("/nonexistent/accelhost-worker");
        let Err(CompileFailure::Worker { reason }) =
            compile(missing, b"", EngineKind::optimized(false), LIMITS, None)
        else {
            panic!("a missing worker is the worker's failure")
        };
        assert!(
            reason.contains("cannot run the compile worker /nonexistent/accelhost-worker"),
            "{reason}"
        );
    }

    #[test]
    fn a_crashing_worker_says_its_signal_and_stderr() {
        let worker = fake_worker("crasher", "echo 'it went wrong' >&2; kill -SEGV $$");
        let result = compile(
            &worker,
            b"\0asm",
            EngineKind::optimized(false),
            LIMITS,
            None,
        );
        assert_eq!(
            result,
            Err(CompileFailure::Crashed {
                signal: libc::SIGSEGV,
                stderr: "it went wrong".into()
            })
        );
        std::fs::remove_dir_all(worker.parent().unwrap()).unwrap();
    }
}
