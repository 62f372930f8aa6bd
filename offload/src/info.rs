//! The platform's and devices' info queries: what each answers, and how an answer is
//! written (the size query gives the bytes the value query needs; a smaller buffer is
//! `OL_ERRC_INVALID_SIZE` and nothing is written).

use std::ffi::c_void;

use crate::result::{OlRes, fail};
use crate::state::{self, DeviceRef, PLATFORM, handle_of};
use crate::types::*;

/// One answer.
pub enum Value {
    Text(String),
    U32(u32),
    Pointer(*mut c_void),
}

impl Value {
    fn bytes(&self) -> Vec<u8> {
        match self {
            Value::Text(text) => {
                let mut bytes = text.as_bytes().to_vec();
                bytes.push(0);
                bytes
            }
            Value::U32(value) => value.to_ne_bytes().to_vec(),
            Value::Pointer(pointer) => (*pointer as usize).to_ne_bytes().to_vec(),
        }
    }
}

/// The platform's answer to `property`.
pub fn platform(handle: *mut c_void, property: u32) -> OlRes<Value> {
    state::platform(handle)?;
    Ok(match property {
        OL_PLATFORM_INFO_NAME => Value::Text("accelhost".into()),
        OL_PLATFORM_INFO_VENDOR_NAME => Value::Text("accelhost".into()),
        OL_PLATFORM_INFO_VERSION => Value::Text(format!(
            "Offload 0.0.1 accelhost {}",
            env!("CARGO_PKG_VERSION")
        )),
        OL_PLATFORM_INFO_BACKEND => Value::U32(OL_PLATFORM_BACKEND_UNKNOWN),
        other => return Err(unsupported("platform", other)),
    })
}

/// A device's answer to `property`.
pub fn device(handle: *mut c_void, property: u32) -> OlRes<Value> {
    let device = state::device(handle)?;
    let platform = Value::Pointer(handle_of(&PLATFORM));
    Ok(match (device, property) {
        (_, OL_DEVICE_INFO_PLATFORM) => platform,
        (DeviceRef::Host, OL_DEVICE_INFO_TYPE) => Value::U32(OL_DEVICE_TYPE_CPU),
        (DeviceRef::Host, OL_DEVICE_INFO_NAME) => Value::Text("host".into()),
        (DeviceRef::Host, OL_DEVICE_INFO_VENDOR) => Value::Text("accelhost".into()),
        (DeviceRef::Host, OL_DEVICE_INFO_DRIVER_VERSION) => {
            Value::Text(format!("accelhost {}", env!("CARGO_PKG_VERSION")))
        }
        (DeviceRef::Accelerator(_), OL_DEVICE_INFO_TYPE) => Value::U32(OL_DEVICE_TYPE_DEFAULT),
        (DeviceRef::Accelerator(d), OL_DEVICE_INFO_NAME) => Value::Text(d.token.id()),
        (DeviceRef::Accelerator(d), OL_DEVICE_INFO_VENDOR) => Value::Text(
            accelhost::types::pci_vendor_name(d.token.properties().vendor_id),
        ),
        (DeviceRef::Accelerator(d), OL_DEVICE_INFO_DRIVER_VERSION) => Value::Text(format!(
            "accelhost {} ({} plugin, {})",
            env!("CARGO_PKG_VERSION"),
            d.token.plugin(),
            d.contract
        )),
        (_, other) => return Err(unsupported("device", other)),
    })
}

fn unsupported(what: &str, property: u32) -> crate::result::Failure {
    fail(
        OL_ERRC_UNSUPPORTED_ENUMERATION,
        format!("no {what} property {property}"),
    )
}

/// Writes `value` into the program's `size` bytes at `out`.
///
/// # Safety
/// `out` is NULL or points to `size` writable bytes.
pub unsafe fn write(value: OlRes<Value>, size: usize, out: *mut c_void) -> OlRes<()> {
    let bytes = value?.bytes();
    if size == 0 {
        return Err(fail(OL_ERRC_INVALID_SIZE, "PropSize is 0"));
    }
    if out.is_null() {
        return Err(fail(OL_ERRC_INVALID_NULL_POINTER, "PropValue is NULL"));
    }
    if size < bytes.len() {
        return Err(fail(
            OL_ERRC_INVALID_SIZE,
            format!("the value takes {} bytes, not {size}", bytes.len()),
        ));
    }
    // SAFETY: out holds size >= bytes.len() writable bytes.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len()) };
    Ok(())
}

/// Writes the size `value` needs to `out`.
///
/// # Safety
/// `out` is NULL or points to a writable `size_t`.
pub unsafe fn write_size(value: OlRes<Value>, out: *mut usize) -> OlRes<()> {
    let bytes = value?.bytes();
    if out.is_null() {
        return Err(fail(OL_ERRC_INVALID_NULL_POINTER, "PropSizeRet is NULL"));
    }
    // SAFETY: out is a writable size_t.
    unsafe { out.write(bytes.len()) };
    Ok(())
}
