//! OPAE's UMsg calls (`umsg.h`): no accelhost device family has UMsgs (current DFL hardware
//! reports none either), so each checks its arguments as OPAE does (a NULL pointer, or a
//! handle that is not one, is `FPGA_INVALID_PARAM`), then answers `FPGA_NOT_SUPPORTED`,
//! logging why; `accelhostGetLastError` says it too.

use crate::ffi::{guard, non_null};
use crate::handle::handle_of;
use crate::result::{CapiResult, not_supported};
use crate::types::*;

const UMSG: &str = "UMsgs: no accelhost device family has them";

fn unsupported(call: &str) -> CapiResult {
    Err(not_supported(call, UMSG))
}

/// OPAE's `fpgaGetNumUmsg`: not supported.
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetNumUmsg(handle: fpga_handle, value: *mut u64) -> fpga_result {
    guard("fpgaGetNumUmsg", || {
        handle_of(handle)?;
        non_null(value, "value")?;
        unsupported("fpgaGetNumUmsg")
    })
}

/// OPAE's `fpgaSetUmsgAttributes`: not supported.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaSetUmsgAttributes(handle: fpga_handle, _value: u64) -> fpga_result {
    guard("fpgaSetUmsgAttributes", || {
        handle_of(handle)?;
        unsupported("fpgaSetUmsgAttributes")
    })
}

/// OPAE's `fpgaTriggerUmsg`: not supported.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaTriggerUmsg(handle: fpga_handle, _value: u64) -> fpga_result {
    guard("fpgaTriggerUmsg", || {
        handle_of(handle)?;
        unsupported("fpgaTriggerUmsg")
    })
}

/// OPAE's `fpgaGetUmsgPtr`: not supported.
///
/// # Safety
/// `umsg_ptr` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetUmsgPtr(
    handle: fpga_handle,
    umsg_ptr: *mut *mut u64,
) -> fpga_result {
    guard("fpgaGetUmsgPtr", || {
        handle_of(handle)?;
        non_null(umsg_ptr, "umsg_ptr")?;
        unsupported("fpgaGetUmsgPtr")
    })
}
