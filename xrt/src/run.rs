//! Runs (`xrtRunHandle`): one execution of a kernel, its arguments set one by one (C
//! varargs decoded by the kernel's metadata) or all at once, started into a queue of its own,
//! and waited on the host. A run added to a runlist (`runlist`) is started only by the list.
//! The states are XRT's `ert_cmd_state` values.

use std::ffi::{VaList, c_int, c_uint, c_void};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accelhost::xclbin::ArgKind;
use accelhost::{Arg, ErrorCode, Event, EventStatus, Queue};

use crate::bo::Bo;
use accelhost_door::handles::Object;

use crate::error::{XrtResult, answer, failed, handle, refuse, status};
use crate::handles::{close, of, publish};
use crate::kernel::Kernel;

/// `ERT_CMD_STATE_NEW`: not started.
pub const NEW: c_int = 1;
/// `ERT_CMD_STATE_RUNNING`.
const RUNNING: c_int = 3;
/// `ERT_CMD_STATE_COMPLETED`.
pub const COMPLETED: c_int = 4;
/// `ERT_CMD_STATE_ERROR`.
pub const ERROR: c_int = 5;
/// `ERT_CMD_STATE_TIMEOUT`: a timed wait ended first.
const TIMEOUT: c_int = 8;

/// What `xrtRunSetCallback` registers: called with the run, its state and the user's data.
type Callback = extern "C" fn(*mut c_void, c_int, *mut c_void);

/// An argument as set.
#[derive(Clone)]
pub enum RunArg {
    Buffer(Arc<Bo>),
    Bytes(Vec<u8>),
}

/// One execution of a kernel.
pub struct Run {
    pub kernel: Arc<Kernel>,
    /// By the kernel's argument order.
    args: Mutex<Vec<Option<RunArg>>>,
    /// Whether a runlist holds the run: then only the list starts it.
    pub listed: AtomicBool,
    queue: Queue,
    started: Mutex<Option<Event>>,
    /// Callbacks for completion, with their data (addresses, kept as numbers).
    callbacks: Mutex<Vec<(Callback, usize)>>,
    /// The handle C holds for the run, which its callbacks get.
    handle: AtomicUsize,
}

impl Object for Run {
    const KIND: &'static str = "run";
}

impl Run {
    pub fn of(call: &str, run: *mut c_void) -> XrtResult<Arc<Run>> {
        of::<Run>(call, run)
    }

    fn new(call: &str, kernel: Arc<Kernel>) -> XrtResult<Run> {
        let queue = kernel
            .device
            .handle
            .create_queue()
            .map_err(|err| failed(call, &err))?;
        Ok(Run {
            args: Mutex::new(vec![None; kernel.args.len()]),
            kernel,
            queue,
            started: Mutex::new(None),
            callbacks: Mutex::new(Vec::new()),
            handle: AtomicUsize::new(0),
            listed: AtomicBool::new(false),
        })
    }

    fn set(&self, call: &str, index: c_int, value: RunArg) -> XrtResult<()> {
        let slot = self.slot(call, index)?;
        let arg = &self.kernel.args[slot];
        match (&value, arg.kind) {
            (RunArg::Buffer(bo), ArgKind::Global) => {
                if !Arc::ptr_eq(bo.device(), &self.kernel.device) {
                    return Err(refuse(
                        call,
                        libc::EINVAL,
                        format!("argument {index}: the buffer is of another device handle"),
                    ));
                }
            }
            (RunArg::Bytes(bytes), ArgKind::Scalar | ArgKind::Local)
                if bytes.len() == arg.size as usize => {}
            (RunArg::Bytes(bytes), ArgKind::Scalar | ArgKind::Local) => {
                return Err(refuse(
                    call,
                    libc::EINVAL,
                    format!(
                        "argument {index} ({}) takes {} bytes, not {}",
                        arg.name,
                        arg.size,
                        bytes.len()
                    ),
                ));
            }
            (_, kind) => {
                let wanted = if kind == ArgKind::Global {
                    "a buffer"
                } else {
                    "a value"
                };
                return Err(refuse(
                    call,
                    libc::EINVAL,
                    format!("argument {index} ({}) takes {wanted}", arg.name),
                ));
            }
        }
        lock(&self.args)[slot] = Some(value);
        Ok(())
    }

    fn slot(&self, call: &str, index: c_int) -> XrtResult<usize> {
        let arg = self.kernel.arg(call, index)?;
        Ok(self
            .kernel
            .args
            .iter()
            .position(|a| a.index == arg.index)
            .expect("the argument is the kernel's"))
    }

    /// Takes argument `index` from C varargs, as its metadata says it was passed: a buffer
    /// handle for a buffer, an `int` for a 4-byte value, a 64-bit one for 8 bytes, and a
    /// `size_t` otherwise.
    ///
    /// # Safety
    /// The next vararg is of that type.
    unsafe fn set_from(&self, call: &str, index: c_int, args: &mut VaList<'_>) -> XrtResult<()> {
        let arg = self.kernel.arg(call, index)?;
        let value = match (arg.kind, arg.size) {
            (ArgKind::Global, _) => {
                // SAFETY: the caller passes the type the kernel's metadata names.
                let handle = unsafe { args.next_arg::<*mut c_void>() };
                RunArg::Buffer(Bo::of(call, handle)?)
            }
            (ArgKind::Scalar | ArgKind::Local, 4) => {
                // SAFETY: the caller passes the type the kernel's metadata names.
                RunArg::Bytes(unsafe { args.next_arg::<c_int>() }.to_ne_bytes().to_vec())
            }
            (ArgKind::Scalar | ArgKind::Local, 8) => {
                // SAFETY: the caller passes the type the kernel's metadata names.
                RunArg::Bytes(unsafe { args.next_arg::<u64>() }.to_ne_bytes().to_vec())
            }
            (ArgKind::Scalar | ArgKind::Local, size) => {
                // SAFETY: the caller passes the type the kernel's metadata names.
                let value = unsafe { args.next_arg::<usize>() } as u64;
                let bytes = value.to_ne_bytes();
                if size as usize > bytes.len() {
                    return Err(refuse(
                        call,
                        libc::EOPNOTSUPP,
                        format!("argument {index} is a {size}-byte value: set it with its bytes"),
                    ));
                }
                RunArg::Bytes(bytes[..size as usize].to_vec())
            }
        };
        self.set(call, index, value)
    }

    /// The arguments as set now, which `launch_args` reads.
    pub fn args_set(&self) -> Vec<Option<RunArg>> {
        lock(&self.args).clone()
    }

    /// The launch's arguments from `set` (the run's, taken by [`Run::args_set`]); an
    /// argument not set is refused.
    pub fn launch_args<'a>(
        &self,
        call: &str,
        set: &'a [Option<RunArg>],
    ) -> XrtResult<Vec<Arg<'a>>> {
        let mut args = Vec::with_capacity(set.len());
        for (arg, meta) in set.iter().zip(&self.kernel.args) {
            args.push(match arg {
                Some(RunArg::Buffer(bo)) => {
                    let (memory, offset) = bo.kernel_memory();
                    Arg::MemoryAt(memory, offset)
                }
                Some(RunArg::Bytes(bytes)) => match bytes.len() {
                    4 => Arg::U32(u32::from_ne_bytes(bytes[..].try_into().unwrap())),
                    8 => Arg::U64(u64::from_ne_bytes(bytes[..].try_into().unwrap())),
                    _ => Arg::Bytes(bytes),
                },
                None => {
                    return Err(refuse(
                        call,
                        libc::EINVAL,
                        format!("argument {} ({}) is not set", meta.index, meta.name),
                    ));
                }
            });
        }
        Ok(args)
    }

    fn start(self: &Arc<Run>, call: &str) -> XrtResult<()> {
        if self.listed.load(Ordering::Acquire) {
            return Err(refuse(
                call,
                libc::EBUSY,
                "the run is in a runlist: the list starts it (xrt::runlist::execute)",
            ));
        }
        let mut started = lock(&self.started);
        if started
            .as_ref()
            .is_some_and(|e| e.status() == EventStatus::Pending)
        {
            return Err(refuse(call, libc::EBUSY, "the run has not finished"));
        }
        let set = self.args_set();
        let args = self.launch_args(call, &set)?;
        let event = self
            .queue
            .enqueue_launch(&self.kernel.kernel, &args)
            .map_err(|err| failed(call, &err))?;
        let callbacks = lock(&self.callbacks).clone();
        if !callbacks.is_empty() {
            let (run, watched) = (self.handle.load(Ordering::Acquire), event.clone());
            event.on_finish(move || {
                let state = state_of(Some(&watched));
                for (callback, data) in callbacks {
                    callback(run as *mut c_void, state, data as *mut c_void);
                }
            });
        }
        *started = Some(event);
        Ok(())
    }

    /// The handle C holds for the run (null before it has one).
    pub fn handle(&self) -> *mut c_void {
        self.handle.load(Ordering::Acquire) as *mut c_void
    }

    /// Gives C a handle for the run.
    fn publish(self: Arc<Self>, call: &str) -> XrtResult<*mut c_void> {
        let handle = publish(call, self.clone())?;
        self.handle.store(handle as usize, Ordering::Release);
        Ok(handle)
    }

    fn event(&self, call: &str) -> XrtResult<Event> {
        lock(&self.started)
            .clone()
            .ok_or_else(|| refuse(call, libc::EINVAL, "the run was not started"))
    }

    fn wait(&self, call: &str, timeout: Option<Duration>) -> XrtResult<c_int> {
        wait_for(call, &self.event(call)?, timeout)
    }
}

/// Waits for `event` (at most `timeout`): `ERT_CMD_STATE_COMPLETED`, or
/// `ERT_CMD_STATE_TIMEOUT` when the time ran out first; a failed run is the error.
pub fn wait_for(call: &str, event: &Event, timeout: Option<Duration>) -> XrtResult<c_int> {
    let waited = match timeout {
        Some(timeout) => event.wait_timeout(timeout),
        None => event.wait(),
    };
    match waited {
        Ok(()) => Ok(COMPLETED),
        // The plugin's event ran past its deadline: the run failed, and says why.
        Err(err @ accelhost::Error::EventExpired { .. }) => Err(failed(call, &err)),
        Err(err) if err.code() == ErrorCode::Timeout => Ok(TIMEOUT),
        Err(err) => Err(failed(call, &err)),
    }
}

pub fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

pub fn state_of(event: Option<&Event>) -> c_int {
    match event.map(Event::status) {
        None => NEW,
        Some(EventStatus::Pending) => RUNNING,
        Some(EventStatus::Complete) => COMPLETED,
        Some(EventStatus::Failed(_)) => ERROR,
    }
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtRunOpen(kernel: *mut c_void) -> *mut c_void {
    const CALL: &str = "xrtRunOpen";
    handle(CALL, || {
        let kernel = Kernel::of(CALL, kernel)?;
        Arc::new(Run::new(CALL, kernel)?).publish(CALL)
    })
}

/// Sets every argument from the varargs, in order, and starts the run.
///
/// # Safety
/// The varargs are the kernel's arguments, each of the type its metadata names.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn xrtKernelRun(kernel: *mut c_void, mut args: ...) -> *mut c_void {
    const CALL: &str = "xrtKernelRun";
    handle(CALL, || {
        let kernel = Kernel::of(CALL, kernel)?;
        let run = Arc::new(Run::new(CALL, kernel.clone())?);
        for arg in &kernel.args {
            // SAFETY: the caller passes the arguments in order, as their metadata says.
            unsafe { run.set_from(CALL, arg.index as c_int, &mut args)? };
        }
        run.start(CALL)?;
        // No callback can be set before C has the handle: the run's value is set in time.
        run.publish(CALL)
    })
}

/// # Safety
/// The vararg is of the type argument `index`'s metadata names.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn xrtRunSetArg(run: *mut c_void, index: c_int, mut args: ...) -> c_int {
    const CALL: &str = "xrtRunSetArg";
    status(CALL, || {
        // SAFETY: the caller passes the argument's type.
        unsafe { Run::of(CALL, run)?.set_from(CALL, index, &mut args) }
    })
}

/// As [`xrtRunSetArg`]: the value takes effect at the next start.
///
/// # Safety
/// The vararg is of the type argument `index`'s metadata names.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn xrtRunUpdateArg(run: *mut c_void, index: c_int, mut args: ...) -> c_int {
    const CALL: &str = "xrtRunUpdateArg";
    status(CALL, || {
        // SAFETY: the caller passes the argument's type.
        unsafe { Run::of(CALL, run)?.set_from(CALL, index, &mut args) }
    })
}

/// Sets argument `index` to `size` bytes at `value`: how the C++ `xrt::run::set_arg` passes
/// a value (accelhost's, not XRT's: XRT does it through a private member).
///
/// # Safety
/// `value` points to `size` readable bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhost_xrt_run_set_arg_bytes(
    run: *mut c_void,
    index: c_int,
    value: *const c_void,
    size: usize,
) -> c_int {
    const CALL: &str = "xrt::run::set_arg";
    status(CALL, || {
        let run = Run::of(CALL, run)?;
        if value.is_null() {
            return Err(refuse(CALL, libc::EINVAL, "the value is NULL"));
        }
        // SAFETY: the caller passes size bytes at value.
        let bytes = unsafe { std::slice::from_raw_parts(value.cast::<u8>(), size) };
        run.set(CALL, index, RunArg::Bytes(bytes.to_vec()))
    })
}

/// Sets argument `index` to a buffer: how the C++ `xrt::run::set_arg` passes an `xrt::bo`.
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_run_set_arg_bo(
    run: *mut c_void,
    index: c_int,
    bo: *mut c_void,
) -> c_int {
    const CALL: &str = "xrt::run::set_arg";
    status(CALL, || {
        let run = Run::of(CALL, run)?;
        run.set(CALL, index, RunArg::Buffer(Bo::of(CALL, bo)?))
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtRunStart(run: *mut c_void) -> c_int {
    const CALL: &str = "xrtRunStart";
    status(CALL, || Run::of(CALL, run)?.start(CALL))
}

/// Waits for the run: `ERT_CMD_STATE_COMPLETED`, or `ERT_CMD_STATE_ERROR` with the reason
/// on stderr and `errno` set.
#[unsafe(no_mangle)]
pub extern "C" fn xrtRunWait(run: *mut c_void) -> c_int {
    const CALL: &str = "xrtRunWait";
    answer(CALL, ERROR, || Run::of(CALL, run)?.wait(CALL, None))
}

/// As [`xrtRunWait`], for at most `timeout_ms` (0: no limit); `ERT_CMD_STATE_TIMEOUT` if
/// the run is still going then.
#[unsafe(no_mangle)]
pub extern "C" fn xrtRunWaitFor(run: *mut c_void, timeout_ms: c_uint) -> c_int {
    const CALL: &str = "xrtRunWaitFor";
    let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms.into()));
    answer(CALL, ERROR, || Run::of(CALL, run)?.wait(CALL, timeout))
}

/// The run's state now, without waiting.
#[unsafe(no_mangle)]
pub extern "C" fn xrtRunState(run: *mut c_void) -> c_int {
    const CALL: &str = "xrtRunState";
    answer(CALL, ERROR, || {
        Ok(state_of(lock(&Run::of(CALL, run)?.started).as_ref()))
    })
}

/// Calls `callback` when a later start of the run finishes; XRT takes only
/// `ERT_CMD_STATE_COMPLETED` (which also reports a failed run).
#[unsafe(no_mangle)]
pub extern "C" fn xrtRunSetCallback(
    run: *mut c_void,
    state: c_int,
    callback: Option<Callback>,
    data: *mut c_void,
) -> c_int {
    const CALL: &str = "xrtRunSetCallback";
    status(CALL, || {
        let run = Run::of(CALL, run)?;
        if state != COMPLETED {
            return Err(refuse(
                CALL,
                libc::EINVAL,
                "callbacks are for ERT_CMD_STATE_COMPLETED only",
            ));
        }
        let callback =
            callback.ok_or_else(|| refuse(CALL, libc::EINVAL, "the callback is NULL"))?;
        lock(&run.callbacks).push((callback, data as usize));
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "C" fn xrtRunClose(run: *mut c_void) -> c_int {
    const CALL: &str = "xrtRunClose";
    status(CALL, || close::<Run>(CALL, run))
}
