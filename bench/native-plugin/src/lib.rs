//! The native baseline of accelhost's benchmarks: the plugin operations (enumerate,
//! properties, open, close, reset, MMIO) over the same emulators, as a Rust cdylib behind a
//! C function-pointer table ([`abi::NativePluginApi`]). It does what a native OPAE plugin
//! does, with no sandbox: a handle table under a lock, properties kept at enumeration, and
//! MMIO accesses checked for bounds and alignment.

#![allow(unsafe_op_in_unsafe_fn)]

pub mod abi;

use std::ffi::c_void;
use std::sync::{Arc, Mutex};

use accelhost::config::{Config, ConfigSource};
use accelhost::devices::{CheckedMmio, DeviceRegistry, LinuxRoots, Owner};
use accelhost::families::dfl::{DflDevice, DflPort};

use abi::{ABI_VERSION, NativePluginApi, NativeProperties};

// The few errno values used here (kept local: no libc dependency).
const EIO: i32 = 5;
const EBADF: i32 = 9;
const EINVAL: i32 = 22;

struct Device {
    port: Arc<dyn DflDevice>,
    properties: NativeProperties,
}

struct Ctx {
    /// Keeps the emulators alive.
    _registry: DeviceRegistry,
    devices: Vec<Device>,
    owner: Owner,
    handles: Mutex<Vec<Option<Box<dyn DflPort>>>>,
}

unsafe extern "C" fn init(config: *const u8, len: usize) -> *mut c_void {
    let bytes = std::slice::from_raw_parts(config, len);
    let Ok(text) = std::str::from_utf8(bytes) else {
        return std::ptr::null_mut();
    };
    let Ok(config) = Config::parse(text, ConfigSource::Embedded) else {
        return std::ptr::null_mut();
    };
    let roots = LinuxRoots {
        sysfs: config.linux.sysfs_root.clone(),
        dev: config.linux.dev_root.clone(),
    };
    let registry = accelhost::builtin::registry(&config.devices, &roots);
    let devices = registry
        .granted::<dyn DflDevice>(&["emu:*".to_string()])
        .into_iter()
        .map(|port| {
            let desc = port.desc();
            Device {
                properties: NativeProperties {
                    guid_hi: desc.afu_id.high,
                    guid_lo: desc.afu_id.low,
                    vendor_id: desc.vendor_id,
                    device_id: desc.device_id,
                    port_id: desc.port_id,
                },
                port,
            }
        })
        .collect();
    Box::into_raw(Box::new(Ctx {
        _registry: registry,
        devices,
        owner: Owner::unlimited(),
        handles: Mutex::new(Vec::new()),
    }))
    .cast()
}

unsafe extern "C" fn fini(ctx: *mut c_void) {
    if !ctx.is_null() {
        drop(Box::from_raw(ctx.cast::<Ctx>()));
    }
}

unsafe fn ctx<'a>(ctx: *mut c_void) -> &'a Ctx {
    &*ctx.cast::<Ctx>()
}

unsafe extern "C" fn enumerate(c: *mut c_void, tokens: *mut u64, capacity: usize) -> usize {
    let c = ctx(c);
    let n = c.devices.len();
    for i in 0..n.min(capacity) {
        *tokens.add(i) = i as u64;
    }
    n
}

unsafe extern "C" fn properties(c: *mut c_void, token: u64, out: *mut NativeProperties) -> i32 {
    match ctx(c).devices.get(token as usize) {
        Some(device) => {
            *out = device.properties;
            0
        }
        None => EINVAL,
    }
}

unsafe extern "C" fn open(c: *mut c_void, token: u64, exclusive: u32, handle: *mut u64) -> i32 {
    let c = ctx(c);
    let Some(device) = c.devices.get(token as usize) else {
        return EINVAL;
    };
    match device.port.open(exclusive != 0, &c.owner) {
        Ok(port) => {
            let mut handles = c.handles.lock().unwrap_or_else(|p| p.into_inner());
            let slot = match handles.iter().position(Option::is_none) {
                Some(free) => free,
                None => {
                    handles.push(None);
                    handles.len() - 1
                }
            };
            handles[slot] = Some(port);
            *handle = slot as u64;
            0
        }
        Err(err) => err.raw_os_error().unwrap_or(EIO),
    }
}

unsafe extern "C" fn close(c: *mut c_void, handle: u64) -> i32 {
    let port = {
        let mut handles = ctx(c).handles.lock().unwrap_or_else(|p| p.into_inner());
        handles.get_mut(handle as usize).and_then(Option::take)
    };
    match port {
        Some(port) => {
            drop(port);
            0
        }
        None => EBADF,
    }
}

fn with_port(c: &Ctx, handle: u64, f: impl FnOnce(&dyn DflPort) -> i32) -> i32 {
    let handles = c.handles.lock().unwrap_or_else(|p| p.into_inner());
    match handles.get(handle as usize) {
        Some(Some(port)) => f(port.as_ref()),
        _ => EBADF,
    }
}

unsafe extern "C" fn reset(c: *mut c_void, handle: u64) -> i32 {
    with_port(ctx(c), handle, |port| match port.reset() {
        Ok(()) => 0,
        Err(err) => err.raw_os_error().unwrap_or(EIO),
    })
}

unsafe extern "C" fn map_mmio(
    c: *mut c_void,
    handle: u64,
    index: u32,
    region: *mut *mut c_void,
) -> i32 {
    with_port(ctx(c), handle, |port| match port.map_region(index) {
        Ok(window) => {
            *region = Box::into_raw(Box::new(CheckedMmio::new(window))).cast();
            0
        }
        Err(err) => err.raw_os_error().unwrap_or(EIO),
    })
}

unsafe extern "C" fn unmap_mmio(region: *mut c_void) {
    if !region.is_null() {
        drop(Box::from_raw(region.cast::<CheckedMmio>()));
    }
}

unsafe extern "C" fn mmio_read64(region: *mut c_void, offset: u64, value: *mut u64) -> i32 {
    match (*region.cast::<CheckedMmio>()).read64(offset) {
        Ok(v) => {
            *value = v;
            0
        }
        Err(_) => EINVAL,
    }
}

unsafe extern "C" fn mmio_write64(region: *mut c_void, offset: u64, value: u64) -> i32 {
    match (*region.cast::<CheckedMmio>()).write64(offset, value) {
        Ok(()) => 0,
        Err(_) => EINVAL,
    }
}

static API: NativePluginApi = NativePluginApi {
    abi_version: ABI_VERSION,
    init,
    fini,
    enumerate,
    properties,
    open,
    close,
    reset,
    map_mmio,
    unmap_mmio,
    mmio_read64,
    mmio_write64,
};

/// The entry point: the function-pointer table.
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_native_plugin_v1() -> *const NativePluginApi {
    &API
}
