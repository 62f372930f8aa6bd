//! Events: the completion of one enqueued command, with its profiling times and callbacks;
//! `clWaitForEvents` waits on the host, never in a plugin.

use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use accelhost::EventStatus;

use crate::cl::*;
use crate::context::Context;
use crate::error::{ClResult, list, status, write_if};
use crate::info::{Value, give};
use crate::object::{Held, get, publish, references, release, retain};
use crate::queue::{Queue, queue};

/// Where a command stands.
pub enum Progress {
    /// Queued on the device; the library's event says when it finished.
    Device(accelhost::Event),
    /// Carried out before the call returned, with its outcome.
    Done(ClResult<()>),
}

/// An OpenCL event.
pub struct Event {
    context: Held<Context>,
    queue: Held<Queue>,
    command: cl_uint,
    progress: Progress,
    queued_ns: u64,
    /// When it finished, in nanoseconds since the process's epoch; 0 until then.
    finished_ns: Arc<AtomicU64>,
}

/// Nanoseconds since the first time the platform asked: the profiling clock.
fn now_ns() -> u64 {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    // Never 0, which stands for "not yet".
    EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64 + 1
}

impl Event {
    /// Makes the event of a command of `queue`, and its handle if the caller asked for one
    /// (`out` not NULL).
    ///
    /// # Safety
    /// `out` is NULL or valid for a write of a handle.
    pub unsafe fn give(
        queue: &Held<Queue>,
        command: cl_uint,
        progress: Progress,
        out: *mut *mut c_void,
    ) -> ClResult<()> {
        // A command that failed before it was queued has no event.
        if let Progress::Done(Err(code)) = progress {
            return Err(code);
        }
        if !out.is_null() {
            let queued_ns = now_ns();
            let finished_ns = Arc::new(AtomicU64::new(0));
            match &progress {
                Progress::Device(event) => {
                    let finished = finished_ns.clone();
                    event.on_finish(move || finished.store(now_ns(), Ordering::Release));
                }
                Progress::Done(_) => finished_ns.store(queued_ns, Ordering::Release),
            }
            let queue_object = queue.object().clone();
            let event = Event {
                context: Held::new(
                    queue_object.context().handle(),
                    queue_object.context().object().clone(),
                ),
                queue: Held::new(queue.handle(), queue_object),
                command,
                progress,
                queued_ns,
                finished_ns,
            };
            // SAFETY: per the contract above.
            unsafe { write_if(out, publish(Arc::new(event))) };
        }
        Ok(())
    }

    /// The OpenCL execution status: complete, submitted, or a negative error code.
    fn execution_status(&self) -> cl_int {
        match &self.progress {
            Progress::Done(Ok(())) => CL_COMPLETE,
            Progress::Done(Err(code)) => *code,
            Progress::Device(event) => match event.status() {
                EventStatus::Pending => CL_SUBMITTED,
                EventStatus::Complete => CL_COMPLETE,
                EventStatus::Failed(_) => CL_OUT_OF_RESOURCES,
            },
        }
    }

    /// Waits for the command; a failed one is `CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST`.
    pub fn wait(&self) -> ClResult<()> {
        let failed = match &self.progress {
            Progress::Done(outcome) => outcome.is_err(),
            Progress::Device(event) => match event.wait() {
                Ok(()) => false,
                Err(err) => {
                    crate::error::report("waiting for an event", &err);
                    true
                }
            },
        };
        if failed {
            Err(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
        } else {
            Ok(())
        }
    }

    /// The queue of the command.
    pub fn queue(&self) -> &Arc<Queue> {
        self.queue.object()
    }
}

/// Waits for the events of `wait` that belong to other queues than `queue` (the queue's own
/// run in order anyway).
///
/// # Safety
/// `wait` holds `count` handles, or is NULL with `count` 0.
pub unsafe fn wait_for_others(
    queue: &Arc<Queue>,
    count: cl_uint,
    wait: *const *mut c_void,
) -> ClResult<()> {
    // SAFETY: per the contract above.
    let handles = unsafe { list(count, wait, CL_INVALID_EVENT_WAIT_LIST) }?;
    let events = handles
        .iter()
        .map(|h| get::<Event>(*h).ok_or(CL_INVALID_EVENT_WAIT_LIST))
        .collect::<ClResult<Vec<_>>>()?;
    for event in events {
        if !Arc::ptr_eq(event.queue(), queue) {
            event.wait()?;
        }
    }
    Ok(())
}

/// The queue, after the events of other queues in its wait list finished.
///
/// # Safety
/// `wait` holds `count` handles, or is NULL with `count` 0.
pub unsafe fn ready(
    handle: *mut c_void,
    count: cl_uint,
    wait: *const *mut c_void,
) -> ClResult<Held<Queue>> {
    let queue = queue(handle)?;
    // SAFETY: per the contract above.
    unsafe { wait_for_others(queue.object(), count, wait) }?;
    Ok(queue)
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
            CL_EVENT_COMMAND_QUEUE => Some(Value::pointer(event.queue.handle())),
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
        if !event.queue().profiling() {
            return Err(CL_PROFILING_INFO_NOT_AVAILABLE);
        }
        let finished = event.finished_ns.load(Ordering::Acquire);
        let value = match param {
            CL_PROFILING_COMMAND_QUEUED
            | CL_PROFILING_COMMAND_SUBMIT
            | CL_PROFILING_COMMAND_START => Value::ulong(event.queued_ns),
            CL_PROFILING_COMMAND_END | CL_PROFILING_COMMAND_COMPLETE if finished != 0 => {
                Value::ulong(finished)
            }
            CL_PROFILING_COMMAND_END | CL_PROFILING_COMMAND_COMPLETE => {
                return Err(CL_PROFILING_INFO_NOT_AVAILABLE);
            }
            _ => return Err(CL_INVALID_VALUE),
        };
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
        let (handle, user_data) = (handle as usize, user_data as usize);
        match &event.progress {
            // Commands are submitted when enqueued: only completion is waited for.
            Progress::Device(device) if callback_type == CL_COMPLETE => {
                retain::<Event>(handle as *const c_void);
                let event = event.clone();
                device.on_finish(move || {
                    let status = event.execution_status();
                    callback(handle as *mut c_void, status, user_data as *mut c_void);
                    release::<Event>(handle as *const c_void);
                });
            }
            _ => {
                let status = event.execution_status().min(callback_type);
                callback(handle as *mut c_void, status, user_data as *mut c_void);
            }
        }
        Ok(())
    })
}
