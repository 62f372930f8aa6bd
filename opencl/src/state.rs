//! The process-wide host behind the platform and the devices it lists: started by the first
//! call that needs them, on the usual lookup (`ACCELHOST_ENDPOINT`, `ACCELHOST_CONFIG`,
//! `./accelhost.json`, ..., the embedded default), and kept for the process's life, as
//! OpenCL's platform and root devices are. The devices are the accelerators of plugins that
//! export the offload interface and answer its queues.

use std::sync::OnceLock;

use accelhost::{Host, ObjectType};

use crate::device::Device;
use crate::object::header;

/// The host and the devices it listed when the platform was first asked for them (never
/// changed after, so the devices keep their addresses: they are their handles).
pub struct State {
    pub host: Option<Host>,
    pub devices: Vec<Device>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The platform's state, started on first use (after the dispatch table is installed).
pub fn state() -> &'static State {
    STATE.get_or_init(start)
}

fn start() -> State {
    let host = match accelhost_door::process::start(None) {
        Ok(host) => host,
        Err(err) => {
            crate::log::no_devices(&format!("accelhost could not start: {err}"));
            return State {
                host: None,
                devices: Vec::new(),
            };
        }
    };
    let offload_plugins: Vec<_> = host
        .plugins()
        .into_iter()
        .filter(|plugin| plugin.capabilities.contains(&"offload"))
        .collect();
    let found = host.enumerate(&[]);
    for failure in &found.failures {
        crate::log::no_devices(&format!("(for one plugin) {failure}"));
    }
    let devices = found
        .tokens
        .into_iter()
        .filter(|token| token.properties().object_type == ObjectType::Accelerator)
        .filter(|token| makes_queues(&host, token))
        .filter_map(|token| {
            let plugin = offload_plugins.iter().find(|p| p.name == token.plugin())?;
            Some(Device::new(header(), token, plugin))
        })
        .collect();
    State {
        host: Some(host),
        devices,
    }
}

/// Whether the device can run OpenCL's commands: its plugin answers `queue-create` (a plugin
/// built with an SDK exports the offload interface whether or not it implements it). A device
/// that fails for another reason (busy, faulted) is kept: the failure is its state now.
fn makes_queues(host: &Host, token: &accelhost::Token) -> bool {
    let unsupported = |err: &accelhost::Error| err.code() == accelhost::ErrorCode::Unsupported;
    match host.open(token, accelhost::OpenMode::Shared) {
        Ok(handle) => !handle.create_queue().is_err_and(|err| unsupported(&err)),
        Err(err) => !unsupported(&err),
    }
}
