//! `events`: completion objects the host waits on.

use std::sync::Arc;

use wasmtime::component::Resource;

use crate::bindings::accel::plugin::events::{self, EventState};
use crate::bindings::accel::plugin::types::Error as GuestError;
use crate::devices::{Completion, CompletionState};
use crate::error::ErrorCode;
use crate::state::{EventResource, HostLimit, ImportError, MAX_MESSAGE, PluginState, guest_error};
use crate::text::cut_to;

impl PluginState {
    /// A new event for `completion`, charged to the plugin's host budget with its message.
    /// These imports have no error to return, so going over the budget ends the instance.
    fn push_event(
        &mut self,
        completion: Arc<Completion>,
        message_bytes: usize,
    ) -> wasmtime::Result<Resource<EventResource>> {
        let charge = self
            .charge_resource(message_bytes as u64)
            .map_err(HostLimit::HostMemory)?;
        Ok(self.table.push(EventResource {
            completion,
            _charge: charge,
        })?)
    }
}

impl events::HostEvent for PluginState {
    fn completed(&mut self) -> wasmtime::Result<Resource<EventResource>> {
        self.push_event(Completion::complete(), 0)
    }

    /// An event that failed with the plugin's message, interned: however many such events a
    /// program keeps, the plugin's messages are held once each (`state::messages`).
    fn failed(&mut self, error: GuestError) -> wasmtime::Result<Resource<EventResource>> {
        let message = self
            .ctx
            .messages
            .intern(&cut_to(error.message, MAX_MESSAGE));
        let completion = Arc::new(Completion::with_state(CompletionState::Failed(message)));
        self.push_event(completion, 0)
    }

    fn duplicate(
        &mut self,
        event: Resource<EventResource>,
    ) -> wasmtime::Result<Resource<EventResource>> {
        let completion = self.table.get(&event)?.completion.clone();
        self.push_event(completion, 0)
    }

    fn state(&mut self, event: Resource<EventResource>) -> wasmtime::Result<EventState> {
        Ok(match self.table.get(&event)?.completion.state() {
            CompletionState::Pending => EventState::Pending,
            CompletionState::Complete => EventState::Complete,
            CompletionState::Failed(_) => EventState::Failed,
        })
    }

    fn wait(&mut self, event: Resource<EventResource>, timeout_ns: u64) -> Result<(), ImportError> {
        let deadline = self.wait_deadline(timeout_ns);
        let completion = self.table.get(&event)?.completion.clone();
        let finished = self.wait_sliced(deadline, |slice| {
            Ok(match completion.wait(slice) {
                CompletionState::Pending => None,
                finished => Some(finished),
            })
        })?;
        match finished.unwrap_or(CompletionState::Pending) {
            CompletionState::Complete => Ok(()),
            CompletionState::Failed(why) => {
                Err(guest_error(ErrorCode::DeviceError, why.to_string()))
            }
            CompletionState::Pending => Err(guest_error(
                ErrorCode::Timeout,
                "event wait timed out (or reached the call's deadline)",
            )),
        }
    }

    fn drop(&mut self, event: Resource<EventResource>) -> wasmtime::Result<()> {
        self.table.delete(event)?;
        Ok(())
    }
}

impl events::Host for PluginState {}
