//! Enqueueing one command: its wait list, and when it runs. A command runs in the call that
//! enqueues it, after the events of other queues it waits for have finished, unless one of
//! them has not started (a user event not yet set, or a command held back) or its queue holds
//! commands back already: then it is held back, in order, and the queue's thread runs it once
//! its events have finished. The checks that can refuse a command run in the call either way;
//! only the work is deferred.

use std::ffi::c_void;
use std::sync::Arc;

use crate::cl::*;
use crate::error::{ClResult, list, refuse, report};
use crate::event::{Event, Progress};
use crate::object::{Held, get, publish};
use crate::queue::{Queue, queue};

/// A command being enqueued: its queue, held for the call, and the events it waits for.
pub struct Enqueue {
    queue: Held<Queue>,
    waits: Vec<Arc<Event>>,
}

impl Enqueue {
    /// The queue behind `queue_handle` and the wait list (`CL_INVALID_EVENT_WAIT_LIST` for a
    /// handle that is not an event, `CL_INVALID_CONTEXT` for an event of another context).
    ///
    /// # Safety
    /// `wait` holds `count` handles, or is NULL with `count` 0.
    pub unsafe fn new(
        queue_handle: *mut c_void,
        count: cl_uint,
        wait: *const *mut c_void,
    ) -> ClResult<Enqueue> {
        let queue = queue(queue_handle)?;
        // SAFETY: per the contract above.
        let handles = unsafe { list(count, wait, CL_INVALID_EVENT_WAIT_LIST) }?;
        let waits = handles
            .iter()
            .map(|h| get::<Event>(*h).ok_or(CL_INVALID_EVENT_WAIT_LIST))
            .collect::<ClResult<Vec<_>>>()?;
        let context = queue.object().context().object();
        if waits.iter().any(|e| !Arc::ptr_eq(e.context(), context)) {
            return Err(CL_INVALID_CONTEXT);
        }
        Ok(Enqueue { queue, waits })
    }

    /// The queue.
    pub fn queue(&self) -> &Arc<Queue> {
        self.queue.object()
    }

    /// Whether the command would run in the call that enqueues it: its queue holds nothing
    /// back and it waits for no event.
    pub fn runs_now(&self) -> bool {
        self.waits.is_empty() && !self.queue().holds_back()
    }

    /// Runs the command (`run`) now or holds it back, and gives its event through `out`
    /// when that is not NULL. A blocking command returns once it finished. `run`'s error is
    /// the call's when it runs now, and the event's status when it was held back.
    ///
    /// # Safety
    /// `out` is NULL or valid for a write of a handle.
    pub unsafe fn submit(
        self,
        call: &'static str,
        command: cl_uint,
        blocking: bool,
        out: *mut *mut c_void,
        run: impl FnOnce(&Queue) -> ClResult<Progress> + Send + 'static,
    ) -> ClResult<()> {
        let queue = self.queue.object().clone();
        if queue.holds_back() || !self.waits.iter().all(|e| e.started()) {
            // SAFETY: `out` is as this function's caller promises.
            return unsafe { self.hold_back(call, command, blocking, out, run) };
        }
        // The queue's own events finish in order before this command anyway.
        let waited = self
            .waits
            .iter()
            .filter(|e| !e.queue().is_some_and(|q| Arc::ptr_eq(q, &queue)))
            .try_for_each(|e| e.wait());
        let progress = match waited {
            Ok(()) => run(&queue)?,
            Err(code) if blocking => return Err(code),
            Err(code) => Progress::Done(Err(code)),
        };
        if blocking && let Progress::Device(device) = &progress {
            device.wait().map_err(|err| report(call, &err))?;
        }
        if let Progress::Done(Err(code)) = progress
            && code != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST
        {
            return Err(code);
        }
        let event = Event::command(&self.queue, command);
        event.start(progress);
        // SAFETY: per the contract above.
        unsafe { give(out, event) }
    }

    /// Holds the command back behind its queue's backlog.
    ///
    /// # Safety
    /// As [`Enqueue::submit`].
    unsafe fn hold_back(
        self,
        call: &'static str,
        command: cl_uint,
        blocking: bool,
        out: *mut *mut c_void,
        run: impl FnOnce(&Queue) -> ClResult<Progress> + Send + 'static,
    ) -> ClResult<()> {
        let queue = self.queue.object().clone();
        let event = Event::command(&self.queue, command);
        let held = event.clone();
        let waits = self.waits;
        let job_queue = queue.clone();
        queue.hold_back(Box::new(move || {
            let mut waited = Ok(());
            for wait in &waits {
                waited = waited.and(wait.wait());
            }
            let progress = match waited {
                Err(code) => Progress::Done(Err(code)),
                Ok(()) => {
                    let ran =
                        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&job_queue)));
                    match ran {
                        Ok(Ok(progress)) => progress,
                        Ok(Err(code)) => Progress::Done(Err(code)),
                        Err(_) => Progress::Done(Err(refuse(
                            call,
                            CL_OUT_OF_RESOURCES,
                            "an internal error (a panic)",
                        ))),
                    }
                }
            };
            held.start(progress);
        }))?;
        // SAFETY: per the contract above.
        unsafe { give(out, event.clone()) }?;
        if blocking {
            event.wait()?;
        }
        Ok(())
    }
}

/// Publishes `event` through `out` when it is not NULL.
///
/// # Safety
/// `out` is NULL or valid for a write of a handle.
unsafe fn give(out: *mut *mut c_void, event: Arc<Event>) -> ClResult<()> {
    if !out.is_null() {
        let handle = publish(event)?;
        // SAFETY: per the contract above.
        unsafe { out.write(handle) };
    }
    Ok(())
}

/// An address in the application's memory, which a command held back reaches when it runs
/// (OpenCL says the memory stays the application's to keep valid until the command finished).
#[derive(Clone, Copy)]
pub struct HostAddress(usize);

impl HostAddress {
    /// The address of `ptr`.
    pub fn of<T>(ptr: *const T) -> HostAddress {
        HostAddress(ptr as usize)
    }

    /// The `size` bytes at the address.
    ///
    /// # Safety
    /// The application keeps `size` readable bytes there until the command finished.
    pub unsafe fn bytes<'a>(self, size: usize) -> &'a [u8] {
        // SAFETY: per the contract above.
        unsafe { std::slice::from_raw_parts(self.0 as *const u8, size) }
    }

    /// The `size` bytes at the address, to write.
    ///
    /// # Safety
    /// The application keeps `size` writable bytes there, which nothing else reads or writes
    /// until the command finished.
    pub unsafe fn bytes_mut<'a>(self, size: usize) -> &'a mut [u8] {
        // SAFETY: per the contract above.
        unsafe { std::slice::from_raw_parts_mut(self.0 as *mut u8, size) }
    }

    /// The address as a pointer.
    pub fn ptr(self) -> *mut u8 {
        self.0 as *mut u8
    }
}
