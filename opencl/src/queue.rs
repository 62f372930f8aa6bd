//! Command queues, on one device of a context, over the library's queue; with profiling when
//! asked. Every queue runs its commands in order: a queue asked to be out of order (as SYCL's
//! are by default) gets that order too, which is one of the orders it allows. Commands held
//! back behind an unfinished event wait in the queue's backlog, which a thread of the queue's
//! own runs in order.

use std::collections::VecDeque;
use std::ffi::c_void;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use crate::cl::*;
use crate::context::{Context, context};
use crate::device::Device;
use crate::error::{ClResult, object, report, status};
use crate::info::{Value, give};
use crate::object::{Held, get, publish, references};

/// An OpenCL command queue.
pub struct Queue {
    context: Held<Context>,
    /// The device's place in the context.
    device: usize,
    queue: accelhost::Queue,
    properties: cl_bitfield,
    backlog: Mutex<Backlog>,
    drained: Condvar,
    /// The first failure of a command since the last `clFinish`, which that `clFinish`
    /// returns: a command that did not do its work is an error the program sees even when
    /// it never asks its event.
    failure: Mutex<Option<cl_int>>,
}

impl crate::object::Object for Queue {
    const KIND: &'static str = "cl_command_queue";
}

/// A command held back: it waits for its events, then runs.
pub type Job = Box<dyn FnOnce() + Send>;

/// The commands held back, and whether the queue's thread is running them.
#[derive(Default)]
struct Backlog {
    jobs: VecDeque<Job>,
    draining: bool,
}

impl Queue {
    /// The context (held: a queue retains it).
    pub fn context(&self) -> &Held<Context> {
        &self.context
    }

    /// The device's place in the context.
    pub fn device_index(&self) -> usize {
        self.device
    }

    /// The library's queue.
    pub fn commands(&self) -> &accelhost::Queue {
        &self.queue
    }

    /// Whether its events keep profiling times.
    pub fn profiling(&self) -> bool {
        self.properties & CL_QUEUE_PROFILING_ENABLE != 0
    }

    /// Waits until the commands submitted to the device so far finished (the commands held
    /// back call it too, so it does not wait for the backlog: [`Queue::wait_for_backlog`]).
    pub fn finish(&self, call: &str) -> ClResult<()> {
        self.queue.finish().map_err(|err| report(call, &err))
    }

    /// Notes that one of its commands failed with `code` (the first is kept until the next
    /// `clFinish`). A command that failed because an event it waited for had failed is not
    /// its own failure: that event's is.
    pub fn record_failure(&self, code: cl_int) {
        if code == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST {
            return;
        }
        let mut failure = self.failure.lock().unwrap_or_else(|e| e.into_inner());
        failure.get_or_insert(code);
    }

    /// The failure noted since the last call, which it clears.
    fn take_failure(&self) -> Option<cl_int> {
        self.failure
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
    }

    /// Waits until the commands held back so far have run.
    pub fn wait_for_backlog(&self) {
        let mut backlog = self.backlog();
        while backlog.draining {
            backlog = self
                .drained
                .wait(backlog)
                .unwrap_or_else(|e| e.into_inner());
        }
    }

    fn backlog(&self) -> MutexGuard<'_, Backlog> {
        self.backlog.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether commands are held back: a new one must wait behind them.
    pub fn holds_back(&self) -> bool {
        self.backlog().draining
    }

    /// Holds `job` back behind the others; the queue's thread runs them in order.
    pub fn hold_back(self: &Arc<Self>, job: Job) -> ClResult<()> {
        let mut backlog = self.backlog();
        backlog.jobs.push_back(job);
        if !backlog.draining {
            let queue = self.clone();
            let started = std::thread::Builder::new()
                .name("accelhost-cl-queue".into())
                .spawn(move || queue.drain());
            if started.is_err() {
                backlog.jobs.pop_back();
                return Err(CL_OUT_OF_HOST_MEMORY);
            }
            backlog.draining = true;
        }
        Ok(())
    }

    /// Runs the backlog until it is empty.
    fn drain(&self) {
        loop {
            let job = {
                let mut backlog = self.backlog();
                match backlog.jobs.pop_front() {
                    Some(job) => job,
                    None => {
                        backlog.draining = false;
                        self.drained.notify_all();
                        return;
                    }
                }
            };
            job();
        }
    }
}

/// The queue behind `handle`, held for an enqueue, or `CL_INVALID_COMMAND_QUEUE`.
pub fn queue(handle: *const c_void) -> ClResult<Held<Queue>> {
    let queue = get::<Queue>(handle).ok_or(CL_INVALID_COMMAND_QUEUE)?;
    Ok(Held::new(handle, queue))
}

fn make(
    call: &str,
    context_handle: *mut c_void,
    device: *mut Device,
    properties: cl_bitfield,
) -> ClResult<*mut c_void> {
    let context = context(context_handle)?;
    let index = context.index_of(device).ok_or(CL_INVALID_DEVICE)?;
    if properties & !(CL_QUEUE_PROFILING_ENABLE | CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) != 0 {
        return Err(CL_INVALID_VALUE);
    }
    let queue = context
        .handle(index)
        .create_queue()
        .map_err(|err| report(call, &err))?;
    publish(Arc::new(Queue {
        context: Held::new(context_handle, context),
        device: index,
        queue,
        properties,
        backlog: Mutex::default(),
        drained: Condvar::new(),
        failure: Mutex::new(None),
    }))
}

pub(crate) extern "C" fn create_command_queue(
    context: *mut c_void,
    device: *mut Device,
    properties: cl_bitfield,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    object("clCreateCommandQueue", errcode_ret, || {
        make("clCreateCommandQueue", context, device, properties)
    })
}

pub(crate) extern "C" fn create_command_queue_with_properties(
    context: *mut c_void,
    device: *mut Device,
    properties: *const cl_ulong,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    object("clCreateCommandQueueWithProperties", errcode_ret, || {
        let mut bits = 0;
        let mut at = properties;
        while !at.is_null() {
            // SAFETY: the list is 0-terminated and read pairwise up to the terminator.
            let key = unsafe { at.read() };
            if key == 0 {
                break;
            }
            // SAFETY: a key is followed by its value.
            let value = unsafe { at.add(1).read() };
            if key != u64::from(CL_QUEUE_PROPERTIES) {
                return Err(CL_INVALID_VALUE);
            }
            bits = value;
            // SAFETY: past the pair, still within the list.
            at = unsafe { at.add(2) };
        }
        make("clCreateCommandQueueWithProperties", context, device, bits)
    })
}

pub(crate) extern "C" fn get_command_queue_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetCommandQueueInfo", || {
        let queue = get::<Queue>(handle).ok_or(CL_INVALID_COMMAND_QUEUE)?;
        let value = match param {
            CL_QUEUE_CONTEXT => Some(Value::pointer(queue.context.handle())),
            CL_QUEUE_DEVICE => Some(Value::pointer(queue.context.object().device(queue.device))),
            CL_QUEUE_REFERENCE_COUNT => references::<Queue>(handle).map(Value::uint),
            CL_QUEUE_PROPERTIES => Some(Value::ulong(queue.properties)),
            _ => None,
        };
        // SAFETY: out and size_ret follow clGetCommandQueueInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}

/// `clFlush`: hands the launches held back (those enqueued without an event) to the device.
/// A refusal of one is the next `clFinish`'s error, as a failure on the device would be.
pub(crate) extern "C" fn flush(queue: *mut c_void) -> cl_int {
    status("clFlush", || {
        let queue = get::<Queue>(queue).ok_or(CL_INVALID_COMMAND_QUEUE)?;
        if let Err(err) = queue.queue.flush() {
            queue.record_failure(report("clFlush", &err));
        }
        Ok(())
    })
}

/// `clFinish`: waits for every command enqueued so far, held back or on the device; the
/// first failure of one since the last `clFinish` is its error (the device's failures are
/// said on stderr as they happen).
pub(crate) extern "C" fn finish(queue: *mut c_void) -> cl_int {
    status("clFinish", || {
        let queue = get::<Queue>(queue).ok_or(CL_INVALID_COMMAND_QUEUE)?;
        queue.wait_for_backlog();
        let finished = queue.finish("clFinish");
        match (finished, queue.take_failure()) {
            (Err(code), _) | (Ok(()), Some(code)) => Err(code),
            (Ok(()), None) => Ok(()),
        }
    })
}
