//! Shared buffers: prepare, release, IO address (shared virtual addressing is refused). The application reads and writes a
//! prepared buffer through the pointer it gets, as in OPAE: the memory is the host memory
//! the device reaches by DMA, so data never passes through a plugin.

use std::ffi::c_void;

use crate::ffi::{guard, lock, non_null};
use crate::handle::handle_of;
use crate::result::{CapiError, invalid, not_supported};
use crate::types::*;

/// OPAE's `fpgaPrepareBuffer`: a buffer of at least `len` bytes the device reaches by DMA;
/// `*buf_addr` is its address in this process (valid until `fpgaReleaseBuffer` or
/// `fpgaClose`), `*wsid` its workspace id. `FPGA_BUF_READ_ONLY` makes it read-only for the
/// device; `FPGA_BUF_QUIET` is accepted; `FPGA_BUF_PREALLOCATED` (memory the caller
/// supplies) is not supported, and the `len == 0` query for it answers `FPGA_NOT_SUPPORTED`.
///
/// # Safety
/// `buf_addr` and `wsid` must be NULL or valid for one write each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPrepareBuffer(
    handle: fpga_handle,
    len: u64,
    buf_addr: *mut *mut c_void,
    wsid: *mut u64,
    flags: i32,
) -> fpga_result {
    guard("fpgaPrepareBuffer", || {
        let known = FPGA_BUF_PREALLOCATED | FPGA_BUF_QUIET | FPGA_BUF_READ_ONLY;
        if flags & !known != 0 {
            return Err(invalid(format!("unknown buffer flags {flags:#x}")));
        }
        let h = handle_of(handle)?;
        if flags & FPGA_BUF_PREALLOCATED != 0 {
            return Err(CapiError::NotSupported(
                "FPGA_BUF_PREALLOCATED: buffers are allocated by the host, not supplied by the caller".into(),
            ));
        }
        non_null(buf_addr, "buf_addr")?;
        non_null(wsid, "wsid")?;
        if len == 0 {
            return Err(invalid("len is 0"));
        }
        let buffer = if flags & FPGA_BUF_READ_ONLY != 0 {
            h.accelerator("fpgaPrepareBuffer")?
                .prepare_read_only_buffer(len)?
        } else {
            h.accelerator("fpgaPrepareBuffer")?.prepare_buffer(len)?
        };
        // The workspace id is the library's, never given to two buffers: the buffer at
        // `ptr` stays prepared until the program releases it.
        let (ptr, id) = (buffer.host_ptr(), buffer.id());
        lock(&h.state).buffers.insert(id, buffer);
        // SAFETY: both non-NULL, valid for one write each by the caller's contract.
        unsafe {
            buf_addr.write(ptr.cast());
            wsid.write(id);
        }
        Ok(())
    })
}

/// OPAE's `fpgaReleaseBuffer`: unmaps the buffer from the device and frees it; its pointer
/// is no longer valid. An unknown (or already released) `wsid` is `FPGA_INVALID_PARAM`.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaReleaseBuffer(handle: fpga_handle, wsid: u64) -> fpga_result {
    guard("fpgaReleaseBuffer", || {
        let h = handle_of(handle)?;
        let buffer = lock(&h.state)
            .buffers
            .remove(&wsid)
            .ok_or_else(|| invalid(format!("no buffer has workspace id {wsid} on this handle")))?;
        Ok(buffer.release()?)
    })
}

/// OPAE's `fpgaGetIOAddress`: the device's address of the buffer `wsid`
/// (`FPGA_NOT_FOUND` for an unknown id).
///
/// # Safety
/// `ioaddr` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetIOAddress(
    handle: fpga_handle,
    wsid: u64,
    ioaddr: *mut u64,
) -> fpga_result {
    guard("fpgaGetIOAddress", || {
        non_null(ioaddr, "ioaddr")?;
        let iova = lock(&handle_of(handle)?.state)
            .buffers
            .get(&wsid)
            .map(|b| b.iova())
            .ok_or_else(|| {
                CapiError::NotFound(format!("no buffer has workspace id {wsid} on this handle"))
            })?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { ioaddr.write(iova) };
        Ok(())
    })
}

/// OPAE's `fpgaBindSVA`: not supported. OPAE answers `FPGA_NOT_SUPPORTED` itself where the
/// platform lacks PASID, ATS and PRS; accelhost devices reach host memory only through the
/// DMA buffers their plugin prepares, never through the process's own addresses.
///
/// # Safety
/// `pasid` is never written.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaBindSVA(handle: fpga_handle, _pasid: *mut u32) -> fpga_result {
    guard("fpgaBindSVA", || {
        handle_of(handle)?;
        Err(not_supported(
            "fpgaBindSVA",
            "shared virtual addressing: devices reach host memory only through buffers prepared by their plugin",
        ))
    })
}
