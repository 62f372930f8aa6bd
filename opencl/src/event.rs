//! Events: the completion of one enqueued command, with its profiling times and callbacks,
//! and user events, which the application completes. An event starts when its command is
//! submitted (a command held back behind an unfinished event starts later, `command.rs`) or
//! when a user event's status is set. `clWaitForEvents` waits on the host, never in a plugin.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use accelhost::EventStatus;

use crate::cl::*;
use crate::context::{Context, context};
use crate::error::{ClResult, list, object, status};
use crate::info::{Value, give};
use crate::object::{Held, get, publish, references, release, retain};
use crate::queue::Queue;

/// Where a started command stands.
pub enum Progress {
    /// Queued on the device; the library's event says when it finished.
    Device(accelhost::Event),
    /// Carried out, with its outcome.
    Done(ClResult<()>),
}

/// What runs once an event reaches a point.
type Then = Box<dyn FnOnce() + Send>;

/// An event's progress once started, and what waits for it to start or finish.
#[derive(Default)]
struct Stage {
    progress: Option<Progress>,
    on_start: Vec<Then>,
    on_finish: Vec<Then>,
}

/// An OpenCL event.
pub struct Event {
    context: Held<Context>,
    /// The command's queue; none for a user event.
    queue: Option<Held<Queue>>,
    command: cl_uint,
    stage: Mutex<Stage>,
    started: Condvar,
    queued_ns: u64,
    /// When it started and finished, in nanoseconds since the process's epoch; 0 until then.
    started_ns: AtomicU64,
    finished_ns: Arc<AtomicU64>,
}

impl crate::object::Object for Event {
    const KIND: &'static str = "cl_event";
}

/// Nanoseconds since the first time the platform asked: the profiling clock.
fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    // Never 0, which stands for "not yet".
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

impl Event {
    fn new(context: Held<Context>, queue: Option<Held<Queue>>, command: cl_uint) -> Arc<Event> {
        Arc::new(Event {
            context,
            queue,
            command,
            stage: Mutex::new(Stage::default()),
            started: Condvar::new(),
            queued_ns: now_ns(),
            started_ns: AtomicU64::new(0),
            finished_ns: Arc::new(AtomicU64::new(0)),
        })
    }

    /// The event of a command of `queue`, not started yet.
    pub fn command(queue: &Held<Queue>, command: cl_uint) -> Arc<Event> {
        let queue_object = queue.object().clone();
        let context = Held::new(
            queue_object.context().handle(),
            queue_object.context().object().clone(),
        );
        Event::new(
            context,
            Some(Held::new(queue.handle(), queue_object)),
            command,
        )
    }

    /// Starts the event with `progress`; false if it had started already.
    pub fn start(&self, progress: Progress) -> bool {
        let (device, failed) = match &progress {
            Progress::Device(device) => (Some(device.clone()), None),
            Progress::Done(outcome) => (None, outcome.err()),
        };
        let (on_start, on_finish) = {
            let mut stage = self.lock();
            if stage.progress.is_some() {
                return false;
            }
            self.started_ns.store(now_ns(), Ordering::Release);
            if device.is_none() {
                self.finished_ns.store(now_ns(), Ordering::Release);
            }
            stage.progress = Some(progress);
            (
                std::mem::take(&mut stage.on_start),
                std::mem::take(&mut stage.on_finish),
            )
        };
        self.started.notify_all();
        // Callbacks run outside the lock: they may ask for the status.
        for then in on_start {
            then();
        }
        // A command that failed is its queue's failure too, for its next clFinish.
        if let (Some(code), Some(queue)) = (failed, self.queue()) {
            queue.record_failure(code);
        }
        let queue = self.queue().map(Arc::downgrade);
        match device {
            Some(device) => {
                let finished = self.finished_ns.clone();
                device.on_finish(move || finished.store(now_ns(), Ordering::Release));
                // So is one on the device, once it is known.
                if let Some(queue) = queue {
                    let watched = device.clone();
                    device.on_finish(move || {
                        if let (EventStatus::Failed(_), Some(queue)) =
                            (watched.status(), queue.upgrade())
                        {
                            queue.record_failure(CL_OUT_OF_RESOURCES);
                        }
                    });
                }
                for then in on_finish {
                    device.on_finish(then);
                }
            }
            None => on_finish.into_iter().for_each(|then| then()),
        }
        true
    }

    fn lock(&self) -> MutexGuard<'_, Stage> {
        self.stage.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether it started (its command was submitted, or its user status set).
    pub fn started(&self) -> bool {
        self.lock().progress.is_some()
    }

    /// Runs `then` once it started (at once if it has).
    fn on_start(&self, then: Then) {
        {
            let mut stage = self.lock();
            if stage.progress.is_none() {
                stage.on_start.push(then);
                return;
            }
        }
        then();
    }

    /// Runs `then` once it finished (at once if it has).
    fn on_finish(&self, then: Then) {
        let device = {
            let mut stage = self.lock();
            match &stage.progress {
                None => {
                    stage.on_finish.push(then);
                    return;
                }
                Some(Progress::Device(device)) => Some(device.clone()),
                Some(Progress::Done(_)) => None,
            }
        };
        match device {
            Some(device) => device.on_finish(then),
            None => then(),
        }
    }

    /// The OpenCL execution status: complete, submitted, queued (held back), or a negative
    /// error code.
    fn execution_status(&self) -> cl_int {
        match &self.lock().progress {
            None if self.queue.is_none() => CL_SUBMITTED,
            None => CL_QUEUED,
            Some(Progress::Done(Ok(()))) => CL_COMPLETE,
            Some(Progress::Done(Err(code))) => *code,
            Some(Progress::Device(event)) => match event.status() {
                EventStatus::Pending => CL_SUBMITTED,
                EventStatus::Complete => CL_COMPLETE,
                EventStatus::Failed(_) => CL_OUT_OF_RESOURCES,
            },
        }
    }

    /// Waits until it started and finished; a failed one is
    /// `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
    pub fn wait(&self) -> ClResult<()> {
        let device = {
            let mut stage = self.lock();
            while stage.progress.is_none() {
                stage = self.started.wait(stage).unwrap_or_else(|e| e.into_inner());
            }
            match &stage.progress {
                Some(Progress::Device(device)) => Ok(device.clone()),
                Some(Progress::Done(outcome)) => Err(outcome.is_err()),
                None => unreachable!("waited until it started"),
            }
        };
        let failed = match device {
            Ok(device) => match device.wait() {
                Ok(()) => false,
                Err(err) => {
                    crate::error::report("waiting for an event", &err);
                    true
                }
            },
            Err(failed) => failed,
        };
        if failed {
            Err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        } else {
            Ok(())
        }
    }

    /// The command's queue; none for a user event.
    pub fn queue(&self) -> Option<&Arc<Queue>> {
        self.queue.as_ref().map(Held::object)
    }

    /// The context.
    pub fn context(&self) -> &Arc<Context> {
        self.context.object()
    }
}

pub(crate) extern "C" fn create_user_event(
    context_handle: *mut c_void,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    object("clCreateUserEvent", errcode_ret, || {
        let context = context(context_handle)?;
        publish(Event::new(
            Held::new(context_handle, context),
            None,
            CL_COMMAND_USER,
        ))
    })
}

pub(crate) extern "C" fn set_user_event_status(handle: *mut c_void, execution: cl_int) -> cl_int {
    status("clSetUserEventStatus", || {
        let event = get::<Event>(handle).ok_or(CL_INVALID_EVENT)?;
        if event.queue.is_some() {
            return Err(CL_INVALID_EVENT);
        }
        let outcome = match execution {
            CL_COMPLETE => Ok(()),
            failed if failed < 0 => Err(failed),
            _ => return Err(CL_INVALID_VALUE),
        };
        if event.start(Progress::Done(outcome)) {
            Ok(())
        } else {
            Err(CL_INVALID_OPERATION)
        }
    })
}

pub(crate) extern "C" fn wait_for_events(count: cl_uint, events: *const *mut c_void) -> cl_int {
    status("clWaitForEvents", || {
        if count == 0 {
            return Err(CL_INVALID_VALUE);
        }
        // SAFETY: events holds count handles.
        let handles = unsafe { list(count, events, CL_INVALID_VALUE) }?;
        let events = handles
            .iter()
            .map(|h| get::<Event>(*h).ok_or(CL_INVALID_EVENT))
            .collect::<ClResult<Vec<_>>>()?;
        let mut outcome = Ok(());
        for event in events {
            if let Err(code) = event.wait() {
                outcome = Err(code);
            }
        }
        outcome
    })
}

pub(crate) extern "C" fn get_event_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetEventInfo", || {
        let event = get::<Event>(handle).ok_or(CL_INVALID_EVENT)?;
        let value = match param {
            CL_EVENT_COMMAND_QUEUE => Some(Value::pointer(
                event
                    .queue
                    .as_ref()
                    .map_or(std::ptr::null(), |queue| queue.handle().cast_const()),
            )),
            CL_EVENT_CONTEXT => Some(Value::pointer(event.context.handle())),
            CL_EVENT_COMMAND_TYPE => Some(Value::uint(event.command)),
            CL_EVENT_COMMAND_EXECUTION_STATUS => {
                Some(Value::uint(event.execution_status() as cl_uint))
            }
            CL_EVENT_REFERENCE_COUNT => references::<Event>(handle).map(Value::uint),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetEventInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

pub(crate) extern "C" fn get_event_profiling_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetEventProfilingInfo", || {
        let event = get::<Event>(handle).ok_or(CL_INVALID_EVENT)?;
        // User events have no queue, and no profiling.
        if !event.queue().is_some_and(|queue| queue.profiling()) {
            return Err(CL_PROFILING_INFO_NOT_AVAILABLE);
        }
        let at = match param {
            CL_PROFILING_COMMAND_QUEUED => event.queued_ns,
            CL_PROFILING_COMMAND_SUBMIT | CL_PROFILING_COMMAND_START => {
                event.started_ns.load(Ordering::Acquire)
            }
            CL_PROFILING_COMMAND_END | CL_PROFILING_COMMAND_COMPLETE => {
                event.finished_ns.load(Ordering::Acquire)
            }
            _ => return Err(CL_INVALID_VALUE),
        };
        if at == 0 {
            return Err(CL_PROFILING_INFO_NOT_AVAILABLE);
        }
        let value = Value::ulong(at);
        // SAFETY: out and size_ret follow clGetEventProfilingInfo's contract.
        unsafe { give(Some(value), size, out, size_ret) }
    })
}

type Callback = extern "C" fn(*mut c_void, cl_int, *mut c_void);

pub(crate) extern "C" fn set_event_callback(
    handle: *mut c_void,
    callback_type: cl_int,
    callback: Option<Callback>,
    user_data: *mut c_void,
) -> cl_int {
    status("clSetEventCallback", || {
        let event = get::<Event>(handle).ok_or(CL_INVALID_EVENT)?;
        let callback = callback.ok_or(CL_INVALID_VALUE)?;
        if ![CL_COMPLETE, CL_RUNNING, CL_SUBMITTED].contains(&callback_type) {
            return Err(CL_INVALID_VALUE);
        }
        // The callback holds its own reference until it ran.
        retain::<Event>(handle);
        let (handle, user_data) = (handle as usize, user_data as usize);
        let target = event.clone();
        let call = move || {
            let status = target.execution_status().min(callback_type);
            callback(handle as *mut c_void, status, user_data as *mut c_void);
            release::<Event>(handle as *const c_void);
        };
        // A command runs as soon as it is submitted: submitted and running are one point.
        if callback_type == CL_COMPLETE {
            event.on_finish(Box::new(call));
        } else {
            event.on_start(Box::new(call));
        }
        Ok(())
    })
}
