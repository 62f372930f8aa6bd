//! The MMIO calls: map with a byte order, unmap, and 32- and 64-bit reads and writes through
//! the context's mapping ([`crate::mapping`]). The registers are reached through the context,
//! not a pointer: an emulated AFU has no memory to map.

use std::ffi::{c_int, c_void};
use std::io;
use std::sync::atomic::Ordering;

use accelhost::cxl::Mmio;

use crate::context::afu_handle;
use crate::error::{CxlResult, failed, refuse, status, store};
use crate::handles::lock;
use crate::mapping::{HOST_ENDIAN, Mapping, SIGBUS_HANDLED, Word, access_failed};

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

/// A read of a `W` at `offset` with `load`: checked, in the mapping's byte order, and a
/// read of all ones is a failed access (the output set to all ones, as libcxl sets it).
fn read<W: Word>(
    call: &str,
    afu: *mut c_void,
    offset: u64,
    data: *mut W,
    load: impl FnOnce(&Mmio, u64) -> io::Result<W>,
) -> c_int {
    status(call, || {
        with_mapping(call, afu, |mapping| {
            mapping.check(call, offset, W::BYTES)?;
            let raw = load(&mapping.mmio, offset).unwrap_or(W::ALL_ONES);
            if raw == W::ALL_ONES {
                store(call, data, W::ALL_ONES)?;
                return Err(access_failed(
                    call,
                    &format!("the read at {offset:#x} gave all ones (a failed access)"),
                ));
            }
            store(call, data, mapping.order(raw))
        })
    })
}

/// A write of `value` at `offset` with `put`: checked, in the mapping's byte order.
fn write<W: Word>(
    call: &str,
    afu: *mut c_void,
    offset: u64,
    value: W,
    put: impl FnOnce(&Mmio, u64, W) -> io::Result<()>,
) -> c_int {
    status(call, || {
        with_mapping(call, afu, |mapping| {
            mapping.check(call, offset, W::BYTES)?;
            put(&mapping.mmio, offset, mapping.order(value))
                .map_err(|err| access_failed(call, &format!("the write at {offset:#x}: {err}")))
        })
    })
}

pub extern "C" fn cxl_mmio_read64(afu: *mut c_void, offset: u64, data: *mut u64) -> c_int {
    read("cxl_mmio_read64", afu, offset, data, Mmio::read64)
}

pub extern "C" fn cxl_mmio_read32(afu: *mut c_void, offset: u64, data: *mut u32) -> c_int {
    read("cxl_mmio_read32", afu, offset, data, Mmio::read32)
}

pub extern "C" fn cxl_mmio_write64(afu: *mut c_void, offset: u64, data: u64) -> c_int {
    write("cxl_mmio_write64", afu, offset, data, Mmio::write64)
}

pub extern "C" fn cxl_mmio_write32(afu: *mut c_void, offset: u64, data: u32) -> c_int {
    write("cxl_mmio_write32", afu, offset, data, Mmio::write32)
}

/// libcxl installs a SIGBUS handler that turns a faulting load into `EIO`; accelhost's
/// accesses never fault, so what remains is the answer: failed accesses give `EIO` without
/// raising `SIGBUS`.
pub extern "C" fn cxl_mmio_install_sigbus_handler() -> c_int {
    SIGBUS_HANDLED.store(true, Ordering::Release);
    0
}
