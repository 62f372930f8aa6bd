//! `events`: completion objects the host waits on.

use std::sync::Arc;

use wasmtime::component::Resource;

use super::{EventResource, ImportError, PluginState, guest_error, traced};
use crate::devices::{Completion, CompletionState};
use crate::runtime::bindings::accel::plugin::events::{self, EventState};
use crate::runtime::bindings::accel::plugin::types::{Error as GuestError, ErrorCode};

impl PluginState {
    fn push_event(&mut self, state: CompletionState) -> wasmtime::Result<Resource<EventResource>> {
        let completion = Arc::new(Completion::with_state(state));
        Ok(self.table.push(EventResource { completion })?)
    }
}

impl events::HostEvent for PluginState {
    fn completed(&mut self) -> wasmtime::Result<Resource<EventResource>> {
        self.push_event(CompletionState::Complete)
    }

    fn failed(&mut self, error: GuestError) -> wasmtime::Result<Resource<EventResource>> {
        self.push_event(CompletionState::Failed(error.message))
    }

    fn duplicate(
        &mut self,
        event: Resource<EventResource>,
    ) -> wasmtime::Result<Resource<EventResource>> {
        let completion = self.table.get(&event)?.completion.clone();
        Ok(self.table.push(EventResource { completion })?)
    }

    fn state(&mut self, event: Resource<EventResource>) -> wasmtime::Result<EventState> {
        Ok(match self.table.get(&event)?.completion.state() {
            CompletionState::Pending => EventState::Pending,
            CompletionState::Complete => EventState::Complete,
            CompletionState::Failed(_) => EventState::Failed,
        })
    }

    fn wait(&mut self, event: Resource<EventResource>, timeout_ns: u64) -> Result<(), ImportError> {
        traced!(self, "events.event.wait", [timeout_ns], {
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
                CompletionState::Failed(why) => Err(guest_error(ErrorCode::DeviceError, why)),
                CompletionState::Pending => Err(guest_error(
                    ErrorCode::Timeout,
                    "event wait timed out (or reached the call's deadline)",
                )),
            }
        })
    }

    fn drop(&mut self, event: Resource<EventResource>) -> wasmtime::Result<()> {
        self.table.delete(event)?;
        Ok(())
    }
}

impl events::Host for PluginState {}
