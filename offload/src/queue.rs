//! Queues (in order, one per `olCreateQueue`) and the events enqueues record, waited on the
//! host.

use std::ffi::c_void;
use std::sync::Arc;

use accelhost_door::handles::Object;

use crate::handles::{of, publish};
use crate::result::{OlRes, fail, failed};
use crate::state::Device;
use crate::types::*;

/// A queue of a device.
pub struct Queue {
    pub device: &'static Device,
    pub commands: accelhost::Queue,
}

impl Object for Queue {
    const KIND: &'static str = "ol_queue";
}

/// A recorded command's completion.
pub struct Event(pub accelhost::Event);

impl Object for Event {
    const KIND: &'static str = "ol_event";
}

impl Queue {
    /// The queue of a live handle.
    pub fn of(handle: *mut c_void) -> OlRes<Arc<Queue>> {
        if handle.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_HANDLE, "the queue is NULL"));
        }
        of::<Queue>(handle, OL_ERRC_INVALID_QUEUE)
    }

    /// A new queue on `device`.
    pub fn create(device: &'static Device) -> OlRes<Queue> {
        let commands = device.handle.create_queue().map_err(|err| failed(&err))?;
        Ok(Queue { device, commands })
    }

    /// Waits for every command enqueued so far; the first failure is the answer.
    pub fn wait(&self) -> OlRes<()> {
        self.commands.finish().map_err(|err| failed(&err))
    }
}

impl Event {
    /// The event of a live handle.
    pub fn of(handle: *mut c_void) -> OlRes<Arc<Event>> {
        if handle.is_null() {
            return Err(fail(OL_ERRC_INVALID_NULL_HANDLE, "the event is NULL"));
        }
        of::<Event>(handle, OL_ERRC_INVALID_EVENT)
    }

    /// Waits for the command; its failure is the answer.
    pub fn wait(&self) -> OlRes<()> {
        self.0.wait().map_err(|err| failed(&err))
    }
}

/// Gives the program a handle for `event` when it asked for one (`out` not NULL).
///
/// # Safety
/// `out` is NULL or points to a writable handle.
pub unsafe fn record(event: accelhost::Event, out: *mut *mut c_void) -> OlRes<()> {
    if !out.is_null() {
        let handle = publish(Arc::new(Event(event)))?;
        // SAFETY: out is a writable ol_event_handle_t.
        unsafe { out.write(handle) };
    }
    Ok(())
}
