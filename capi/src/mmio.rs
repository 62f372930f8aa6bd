//! MMIO: map, unmap, 32- and 64-bit reads and writes (512-bit writes are refused). Every access goes through the host's
//! bounds- and alignment-checked region (no call into wasm), so `fpgaMapMMIO` hands out no
//! pointer: pass NULL as `mmio_ptr` and use the read and write calls.

use std::ffi::c_void;

use crate::ffi::{guard, lock, non_null, write_out};
use crate::handle::handle_of;
use crate::result::{CapiError, invalid, not_supported};
use crate::types::*;

/// OPAE's `fpgaMapMMIO`: maps region `mmio_num`. The read and write calls also map on first
/// use. A non-NULL `mmio_ptr` gets NULL and `FPGA_NOT_SUPPORTED`, and nothing is mapped:
/// registers are reached only through the checked calls (the emulators give them side
/// effects, and the host checks every access).
///
/// # Safety
/// `mmio_ptr` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaMapMMIO(
    handle: fpga_handle,
    mmio_num: u32,
    mmio_ptr: *mut *mut u64,
) -> fpga_result {
    guard("fpgaMapMMIO", || {
        let h = handle_of(handle)?;
        if !mmio_ptr.is_null() {
            // SAFETY: non-NULL, valid for one write by the caller's contract.
            unsafe { write_out(mmio_ptr, std::ptr::null_mut(), "mmio_ptr") }?;
            return Err(CapiError::NotSupported(
                "MMIO is reached through fpgaReadMMIO*/fpgaWriteMMIO*, not by pointer: pass NULL as mmio_ptr".into(),
            ));
        }
        h.region(mmio_num).map(drop)
    })
}

/// OPAE's `fpgaUnmapMMIO`: unmaps region `mmio_num` (`FPGA_INVALID_PARAM` if not mapped).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaUnmapMMIO(handle: fpga_handle, mmio_num: u32) -> fpga_result {
    guard("fpgaUnmapMMIO", || {
        match lock(&handle_of(handle)?.state).mmio.remove(&mmio_num) {
            Some(_) => Ok(()),
            None => Err(invalid(format!("MMIO region {mmio_num} is not mapped"))),
        }
    })
}

/// OPAE's `fpgaReadMMIO32`: the 32-bit register at byte `offset` (4-byte aligned).
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaReadMMIO32(
    handle: fpga_handle,
    mmio_num: u32,
    offset: u64,
    value: *mut u32,
) -> fpga_result {
    guard("fpgaReadMMIO32", || {
        non_null(value, "value")?;
        let read = handle_of(handle)?.region(mmio_num)?.read32(offset)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(value, read, "value") }
    })
}

/// OPAE's `fpgaWriteMMIO32`: writes the 32-bit register at byte `offset` (4-byte aligned).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaWriteMMIO32(
    handle: fpga_handle,
    mmio_num: u32,
    offset: u64,
    value: u32,
) -> fpga_result {
    guard("fpgaWriteMMIO32", || {
        Ok(handle_of(handle)?
            .region(mmio_num)?
            .write32(offset, value)?)
    })
}

/// OPAE's `fpgaReadMMIO64`: the 64-bit register at byte `offset` (8-byte aligned).
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaReadMMIO64(
    handle: fpga_handle,
    mmio_num: u32,
    offset: u64,
    value: *mut u64,
) -> fpga_result {
    guard("fpgaReadMMIO64", || {
        non_null(value, "value")?;
        let read = handle_of(handle)?.region(mmio_num)?.read64(offset)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(value, read, "value") }
    })
}

/// OPAE's `fpgaWriteMMIO64`: writes the 64-bit register at byte `offset` (8-byte aligned).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaWriteMMIO64(
    handle: fpga_handle,
    mmio_num: u32,
    offset: u64,
    value: u64,
) -> fpga_result {
    guard("fpgaWriteMMIO64", || {
        Ok(handle_of(handle)?
            .region(mmio_num)?
            .write64(offset, value)?)
    })
}

/// Why `fpgaWriteMMIO512` is not supported.
const WIDE_WRITE: &str = "a 512-bit MMIO write is one 64-byte store (AVX-512 or MOVDIR64B), which accelhost's MMIO regions do not offer; OPAE documents that platforms may lack it. Write the eight 64-bit registers with fpgaWriteMMIO64";

/// OPAE's `fpgaWriteMMIO512`: checks its arguments (a mapped region, a 64-byte aligned
/// offset inside it, a value), then answers `FPGA_NOT_SUPPORTED`.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaWriteMMIO512(
    handle: fpga_handle,
    mmio_num: u32,
    offset: u64,
    value: *const c_void,
) -> fpga_result {
    guard("fpgaWriteMMIO512", || {
        let region = handle_of(handle)?.region(mmio_num)?;
        non_null(value, "value")?;
        if !offset.is_multiple_of(64)
            || offset.checked_add(64).is_none_or(|end| end > region.size())
        {
            return Err(invalid(format!(
                "offset {offset:#x} is not a 64-byte aligned offset inside MMIO region {mmio_num} ({} bytes)",
                region.size()
            )));
        }
        Err(not_supported("fpgaWriteMMIO512", WIDE_WRITE))
    })
}
