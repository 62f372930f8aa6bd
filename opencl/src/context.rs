//! Contexts: the devices a program works with, each opened (shared) through the library
//! when the context is made, one open per device for all the process's contexts, closed
//! when the last of them goes.

use std::ffi::c_void;
use std::sync::Arc;

use accelhost::Handle;

use crate::cl::*;
use crate::device::Device;
use crate::error::{ClResult, list, object, refuse, report, status};
use crate::info::{Value, give};
use crate::object::{get, publish, references};
use crate::platform::{self, Family, Platform};
use crate::state::state;

/// An OpenCL context.
pub struct Context {
    devices: Vec<&'static Device>,
    /// The devices' opens, in the same order (each shared with the process's other
    /// contexts on that device).
    handles: Vec<Arc<Handle>>,
    /// The properties it was made with, 0-terminated (empty if none were given).
    properties: Vec<isize>,
}

impl crate::object::Object for Context {
    const KIND: &'static str = "cl_context";
}

impl Context {
    /// Where `device` is in the context, if it is.
    pub fn index_of(&self, device: *const Device) -> Option<usize> {
        self.devices.iter().position(|d| std::ptr::eq(*d, device))
    }

    /// The open handle of the context's device at `index`.
    pub fn handle(&self, index: usize) -> &Handle {
        &self.handles[index]
    }

    /// How many devices it has.
    pub fn len(&self) -> usize {
        self.devices.len()
    }

    /// The device at `index`.
    pub fn device(&self, index: usize) -> &'static Device {
        self.devices[index]
    }
}

/// The context behind `handle`, or `CL_INVALID_CONTEXT`.
pub fn context(handle: *const c_void) -> ClResult<Arc<Context>> {
    get::<Context>(handle).ok_or(CL_INVALID_CONTEXT)
}

/// Checks the property list: only `CL_CONTEXT_PLATFORM`, naming one of the listed
/// platforms. The properties kept (empty if none were given), and the platform they name.
///
/// # Safety
/// A non-NULL `properties` is 0-terminated.
unsafe fn properties(properties: *const isize) -> ClResult<(Vec<isize>, Option<Family>)> {
    let mut kept = Vec::new();
    let mut named = None;
    if properties.is_null() {
        return Ok((kept, named));
    }
    let mut at = properties;
    loop {
        // SAFETY: the list is 0-terminated, and read pairwise up to the terminator.
        let key = unsafe { at.read() };
        if key == 0 {
            break;
        }
        // SAFETY: a key is followed by its value.
        let value = unsafe { at.add(1).read() };
        if key != CL_CONTEXT_PLATFORM || kept.contains(&key) {
            return Err(CL_INVALID_PROPERTY);
        }
        // NULL leaves the choice to the platform: the first listed.
        let platform = if value == 0 {
            platform::of(platform::handle(state().first_listed()))
        } else {
            platform::of(value as *const Platform)
        };
        let platform = platform
            .filter(|p| state().lists(p.family()))
            .ok_or(CL_INVALID_PLATFORM)?;
        named = Some(platform.family());
        kept.extend([key, value]);
        // SAFETY: past the pair, still within the list.
        at = unsafe { at.add(2) };
    }
    kept.push(0);
    Ok((kept, named))
}

fn make(
    call: &str,
    devices: Vec<&'static Device>,
    properties: Vec<isize>,
) -> ClResult<*mut c_void> {
    let host = state().host.as_ref().ok_or(CL_DEVICE_NOT_AVAILABLE)?;
    let mut handles = Vec::with_capacity(devices.len());
    for device in &devices {
        let handle = device.open(host).map_err(|err| report(call, &err))?;
        handles.push(handle);
    }
    publish(Arc::new(Context {
        devices,
        handles,
        properties,
    }))
}

pub(crate) extern "C" fn create_context(
    props: *const isize,
    num_devices: cl_uint,
    devices: *const *mut Device,
    _notify: *const c_void,
    _user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    object("clCreateContext", errcode_ret, || {
        // SAFETY: the caller passes a 0-terminated list, or NULL.
        let (properties, named) = unsafe { properties(props) }?;
        // SAFETY: devices holds num_devices handles.
        let asked = unsafe { list(num_devices, devices, CL_INVALID_VALUE) }?;
        if asked.is_empty() {
            return Err(CL_INVALID_VALUE);
        }
        let ours = &state().devices;
        let mut chosen = Vec::with_capacity(asked.len());
        for device in asked {
            let device = ours
                .iter()
                .find(|d| std::ptr::eq(*d, *device))
                .ok_or(CL_INVALID_DEVICE)?;
            // A context is one platform's: the one its properties name, or its first
            // device's.
            let platform = named.or(chosen.first().map(|first: &&Device| first.family()));
            if platform.is_some_and(|platform| platform != device.family()) {
                return Err(refuse(
                    "clCreateContext",
                    CL_INVALID_DEVICE,
                    "the devices are not all of one platform (the properties' \
                     CL_CONTEXT_PLATFORM, or the first device's)",
                ));
            }
            chosen.push(device);
        }
        make("clCreateContext", chosen, properties)
    })
}

pub(crate) extern "C" fn create_context_from_type(
    props: *const isize,
    device_type: cl_device_type,
    _notify: *const c_void,
    _user_data: *mut c_void,
    errcode_ret: *mut cl_int,
) -> *mut c_void {
    object("clCreateContextFromType", errcode_ret, || {
        // SAFETY: the caller passes a 0-terminated list, or NULL.
        let (properties, named) = unsafe { properties(props) }?;
        // No platform named: the first listed (the loaders pass the one they chose).
        let platform = named.unwrap_or_else(|| state().first_listed());
        let chosen = crate::device::of_type(&state().devices, platform, device_type)?;
        if chosen.is_empty() {
            return Err(CL_DEVICE_NOT_FOUND);
        }
        make("clCreateContextFromType", chosen, properties)
    })
}

pub(crate) extern "C" fn get_context_info(
    handle: *mut c_void,
    param: cl_uint,
    size: usize,
    out: *mut c_void,
    size_ret: *mut usize,
) -> cl_int {
    status("clGetContextInfo", || {
        let context = context(handle)?;
        let value = Some(match param {
            CL_CONTEXT_REFERENCE_COUNT => {
                Value::uint(references::<Context>(handle).ok_or(CL_INVALID_CONTEXT)?)
            }
            CL_CONTEXT_NUM_DEVICES => Value::uint(context.devices.len() as cl_uint),
            CL_CONTEXT_DEVICES => Value::sizes(
                &context
                    .devices
                    .iter()
                    .map(|d| std::ptr::from_ref(*d) as usize)
                    .collect::<Vec<_>>(),
            ),
            CL_CONTEXT_PROPERTIES => Value::sizes(
                &context
                    .properties
                    .iter()
                    .map(|p| *p as usize)
                    .collect::<Vec<_>>(),
            ),
            _ => return Err(CL_INVALID_VALUE),
        });
        // SAFETY: out and size_ret follow clGetContextInfo's contract.
        unsafe { give(value, size, out, size_ret) }
    })
}
