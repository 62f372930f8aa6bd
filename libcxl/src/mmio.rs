//! The MMIO calls: map with a byte order, unmap, and 32- and 64-bit reads and writes through
//! the context's mapping ([`crate::mapping`]). The registers are reached through the context,
//! not a pointer: an emulated AFU has no memory to map.

use std::ffi::{c_int, c_void};
use std::sync::atomic::Ordering;

use crate::context::afu_handle;
use crate::error::{CxlResult, failed, refuse, status, store};
use crate::handles::lock;
use crate::mapping::{
    BIG_ENDIAN, HOST_ENDIAN, LITTLE_ENDIAN, Mapping, SIGBUS_HANDLED, access_failed,
};

/// Runs `access` on the handle's mapping, or fails with `EINVAL` when it has none.
fn with_mapping<T>(
    call: &str,
    afu: *mut c_void,
    access: impl FnOnce(&Mapping) -> CxlResult<T>,
) -> CxlResult<T> {
    let handle = afu_handle(call, afu)?;
    let opened = handle.opened(call)?;
    let mapping = lock(&opened.mapping);
    let mapping = mapping
        .as_ref()
        .ok_or_else(|| refuse(call, libc::EINVAL, "the problem-state area is not mapped"))?;
    access(mapping)
}

pub extern "C" fn cxl_mmio_map(afu: *mut c_void, flags: u32) -> c_int {
    let call = "cxl_mmio_map";
    status(call, || {
        let handle = afu_handle(call, afu)?;
        if flags & !HOST_ENDIAN != 0 {
            return Err(refuse(
                call,
                libc::ENODEV,
                format!(
                    "flags {flags:#x} are not CXL_MMIO_BIG_ENDIAN, _LITTLE_ENDIAN or _HOST_ENDIAN"
                ),
            ));
        }
        let opened = handle
            .opened
            .as_ref()
            .ok_or_else(|| refuse(call, libc::ENODEV, "the AFU handle is not open"))?;
        let mmio = opened.context.map_mmio().map_err(|err| {
            if err.raw_os_error() == Some(libc::EIO) {
                refuse(
                    call,
                    libc::EIO,
                    "no work was started on this context: attach first",
                )
            } else {
                failed(call, "mapping the problem-state area", &err)
            }
        })?;
        *lock(&opened.mapping) = Some(Mapping { mmio, flags });
        Ok(())
    })
}

pub extern "C" fn cxl_mmio_unmap(afu: *mut c_void) -> c_int {
    let call = "cxl_mmio_unmap";
    status(call, || {
        let handle = afu_handle(call, afu)?;
        let opened = handle.opened(call)?;
        match lock(&opened.mapping).take() {
            Some(_) => Ok(()),
            None => Err(refuse(
                call,
                libc::EINVAL,
                "the problem-state area is not mapped",
            )),
        }
    })
}

pub extern "C" fn cxl_mmio_ptr(afu: *mut c_void, _mmio_ptrp: *mut *mut c_void) -> c_int {
    let call = "cxl_mmio_ptr";
    status(call, || {
        with_mapping(call, afu, |_| {
            Err(refuse(
                call,
                libc::EOPNOTSUPP,
                "accelhost's problem-state areas have no address to load from; use cxl_mmio_read*/write*",
            ))
        })
    })
}

pub extern "C" fn cxl_mmio_read64(afu: *mut c_void, offset: u64, data: *mut u64) -> c_int {
    let call = "cxl_mmio_read64";
    status(call, || {
        with_mapping(call, afu, |mapping| {
            mapping.check(call, offset, 8)?;
            let raw = mapping.mmio.read64(offset).unwrap_or(u64::MAX);
            if raw == u64::MAX {
                store(call, data, u64::MAX)?;
                return Err(access_failed(
                    call,
                    &format!("the read at {offset:#x} gave all ones (a failed access)"),
                ));
            }
            store(call, data, mapping.value64(raw))
        })
    })
}

pub extern "C" fn cxl_mmio_read32(afu: *mut c_void, offset: u64, data: *mut u32) -> c_int {
    let call = "cxl_mmio_read32";
    status(call, || {
        with_mapping(call, afu, |mapping| {
            mapping.check(call, offset, 4)?;
            let raw = mapping.mmio.read32(offset).unwrap_or(u32::MAX);
            if raw == u32::MAX {
                store(call, data, u32::MAX)?;
                return Err(access_failed(
                    call,
                    &format!("the read at {offset:#x} gave all ones (a failed access)"),
                ));
            }
            store(call, data, mapping.value32(raw))
        })
    })
}

pub extern "C" fn cxl_mmio_write64(afu: *mut c_void, offset: u64, data: u64) -> c_int {
    let call = "cxl_mmio_write64";
    status(call, || {
        with_mapping(call, afu, |mapping| {
            mapping.check(call, offset, 8)?;
            let raw = match mapping.flags {
                BIG_ENDIAN => data.to_be(),
                LITTLE_ENDIAN => data.to_le(),
                _ => data,
            };
            mapping
                .mmio
                .write64(offset, raw)
                .map_err(|err| access_failed(call, &format!("the write at {offset:#x}: {err}")))
        })
    })
}

pub extern "C" fn cxl_mmio_write32(afu: *mut c_void, offset: u64, data: u32) -> c_int {
    let call = "cxl_mmio_write32";
    status(call, || {
        with_mapping(call, afu, |mapping| {
            mapping.check(call, offset, 4)?;
            let raw = match mapping.flags {
                BIG_ENDIAN => data.to_be(),
                LITTLE_ENDIAN => data.to_le(),
                _ => data,
            };
            mapping
                .mmio
                .write32(offset, raw)
                .map_err(|err| access_failed(call, &format!("the write at {offset:#x}: {err}")))
        })
    })
}

/// libcxl installs a SIGBUS handler that turns a faulting load into `EIO`; accelhost's
/// accesses never fault, so what remains is the answer: failed accesses give `EIO` without
/// raising `SIGBUS`.
pub extern "C" fn cxl_mmio_install_sigbus_handler() -> c_int {
    SIGBUS_HANDLED.store(true, Ordering::Release);
    0
}
