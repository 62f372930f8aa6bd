//! The process-wide host, its one platform and its devices: started by the first call that
//! needs them (`olInit` or any other), on the usual lookup (`ACCELHOST_ENDPOINT`,
//! `ACCELHOST_CONFIG`, `./accelhost.json`, ..., the embedded default), and kept for the
//! process's life, so handles stay valid and `olGetDevice` returns the same ones in the
//! same order. The devices are the accelerators of plugins that export the offload
//! interface and answer its queues; each is opened once, shared.

use std::ffi::c_void;
use std::sync::OnceLock;

use accelhost::{ErrorCode, Handle, Host, ObjectType, OpenMode, Token};

use crate::result::{OlRes, fail};
use crate::types::*;

/// A device of the platform.
pub struct Device {
    pub token: Token,
    pub handle: Handle,
    /// The plugin's contract version, for the driver version.
    pub contract: String,
}

/// The host and the devices it listed when first asked (never changed after, so each
/// device keeps its address: it is its handle).
pub struct State {
    pub devices: Vec<Device>,
    /// Why there are no devices, when the host could not start.
    pub why_none: Option<String>,
    _host: Option<Host>,
}

/// The platform handle: this static's address.
pub static PLATFORM: u8 = 0;
/// The host device's handle: this static's address.
pub static HOST_DEVICE: u8 = 0;

static STATE: OnceLock<State> = OnceLock::new();

/// The state, started on first use.
pub fn state() -> &'static State {
    STATE.get_or_init(start)
}

/// A device handle's device: the host device, or one of the platform's.
#[derive(Clone, Copy)]
pub enum DeviceRef {
    Host,
    Accelerator(&'static Device),
}

/// The address a handle of `x` is.
pub fn handle_of<T>(x: &T) -> *mut c_void {
    std::ptr::from_ref(x).cast::<c_void>().cast_mut()
}

/// The device of a device handle.
pub fn device(handle: *mut c_void) -> OlRes<DeviceRef> {
    if handle.is_null() {
        return Err(fail(OL_ERRC_INVALID_NULL_HANDLE, "the device is NULL"));
    }
    if handle == handle_of(&HOST_DEVICE) {
        return Ok(DeviceRef::Host);
    }
    state()
        .devices
        .iter()
        .find(|d| handle_of(*d) == handle)
        .map(DeviceRef::Accelerator)
        .ok_or_else(|| fail(OL_ERRC_INVALID_DEVICE, "not a device of this platform"))
}

/// A device handle that must not be the host device's.
pub fn accelerator(handle: *mut c_void, why: &str) -> OlRes<&'static Device> {
    match device(handle)? {
        DeviceRef::Accelerator(device) => Ok(device),
        DeviceRef::Host => Err(fail(
            OL_ERRC_INVALID_DEVICE,
            format!("the host device {why}"),
        )),
    }
}

/// Checks a platform handle.
pub fn platform(handle: *mut c_void) -> OlRes<()> {
    if handle.is_null() {
        Err(fail(OL_ERRC_INVALID_NULL_HANDLE, "the platform is NULL"))
    } else if handle != handle_of(&PLATFORM) {
        Err(fail(
            OL_ERRC_INVALID_PLATFORM,
            "not this library's platform",
        ))
    } else {
        Ok(())
    }
}

fn start() -> State {
    let host = match accelhost_door::process::start(None) {
        Ok(host) => host,
        Err(err) => {
            return State {
                devices: Vec::new(),
                why_none: Some(format!("accelhost could not start: {err}")),
                _host: None,
            };
        }
    };
    let plugins = host.plugins();
    let found = host.enumerate(&[]);
    let devices = found
        .tokens
        .into_iter()
        .filter(|token| token.properties().object_type == ObjectType::Accelerator)
        .filter_map(|token| {
            let plugin = plugins.iter().find(|p| p.name == token.plugin())?;
            if !plugin.capabilities.contains(&"offload") {
                return None;
            }
            let handle = host.open(&token, OpenMode::Shared).ok()?;
            // A plugin built with an SDK exports the interface whether or not it implements
            // it: the devices are those whose plugin answers queues.
            if handle
                .create_queue()
                .is_err_and(|err| err.code() == ErrorCode::Unsupported)
            {
                return None;
            }
            Some(Device {
                token,
                handle,
                contract: plugin.wit_version.clone().unwrap_or_default(),
            })
        })
        .collect();
    State {
        devices,
        why_none: None,
        _host: Some(host),
    }
}
