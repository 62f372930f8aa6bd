//! The process-wide host behind the platforms and the devices they list: started by the
//! first call that needs them (listing the platforms does: a platform without devices is not
//! listed), on the usual lookup (`ACCELHOST_ENDPOINT`, `ACCELHOST_CONFIG`,
//! `./accelhost.json`, ..., the embedded default), and kept for the process's life, as
//! OpenCL's platforms and root devices are. The devices are the accelerators of plugins that
//! export the offload interface and answer its queues: all of them on the `accelhost`
//! platform, those that hold memory of their own first, and the XRT cards once more on the
//! `Xilinx` platform.

use std::sync::OnceLock;

use accelhost::{Host, ObjectType, Token};

use crate::cl::{CL_DEVICE_TYPE_ACCELERATOR, CL_DEVICE_TYPE_CPU};
use crate::device::{self, Device};
use crate::object::header;
use crate::platform::Family;

/// The host and the devices it listed when the platforms were first asked for them (never
/// changed after, so the devices keep their addresses: they are their handles). Each device
/// is listed on one platform; an XRT card has one `Device` on each.
pub struct State {
    pub host: Option<Host>,
    pub devices: Vec<Device>,
}

impl State {
    /// Whether `family`'s platform has devices: the platforms that have none are not listed,
    /// but for `accelhost`, which is always (its devices say why there are none).
    pub fn lists(&self, family: Family) -> bool {
        family == Family::Accelhost || self.devices.iter().any(|d| d.family() == family)
    }

    /// The first platform `clGetPlatformIDs` lists: the one a NULL platform stands for.
    pub fn first_listed(&self) -> Family {
        Family::ALL
            .into_iter()
            .find(|family| self.lists(*family))
            .unwrap_or(Family::Accelhost)
    }
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
    let accelhost_type = device::accelhost_type().unwrap_or_else(|why| {
        crate::log::setting_not_taken(&why);
        CL_DEVICE_TYPE_CPU
    });
    let mut listed: Vec<_> = found
        .tokens
        .into_iter()
        .filter(|token| token.properties().object_type == ObjectType::Accelerator)
        .filter(|token| makes_queues(&host, token))
        .filter_map(|token| {
            let plugin = offload_plugins.iter().find(|p| p.name == token.plugin())?;
            Some((token, plugin))
        })
        .collect();
    // Stable: within each rank, the library's order.
    listed.sort_by_key(|(token, _)| works_on_host_memory_only(token));
    let mut devices: Vec<Device> = listed
        .iter()
        .map(|(token, plugin)| {
            Device::new(
                header(),
                token.clone(),
                plugin,
                Family::Accelhost,
                accelhost_type,
            )
        })
        .collect();
    devices.extend(
        listed
            .iter()
            .filter(|(token, _)| interface(token) == Some("xocl"))
            .map(|(token, plugin)| {
                Device::new(
                    header(),
                    token.clone(),
                    plugin,
                    Family::Xilinx,
                    CL_DEVICE_TYPE_ACCELERATOR,
                )
            }),
    );
    State {
        host: Some(host),
        devices,
    }
}

/// The driver interface the device's plugin says it has (`xocl`, `cxl`, `dfl`), if any.
fn interface(token: &Token) -> Option<&str> {
    token
        .properties()
        .extras
        .iter()
        .find(|(key, _)| key == "interface")
        .map(|(_, value)| value.as_str())
}

/// Whether the device works on host memory only: a CAPI AFU (the `cxl` interface) reaches
/// host memory at its effective addresses and has none of its own, and its function is built
/// in, so it takes neither device allocations, nor copies between them, nor programs from
/// images. Programs that take the first device (SYCL's default among them) must not get one.
fn works_on_host_memory_only(token: &Token) -> bool {
    interface(token) == Some("cxl")
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
