//! OPAE's user-clock calls (`userclk.h`) over the port attribute `userclk/frequency`: the
//! AFU's high clock in kHz (the low clock is half of it), as the emulated DFL card and the
//! plugin interface express it. Frequencies cross the C API in MHz, as in OPAE.

use crate::attributes::{device_name, optional_number};
use crate::ffi::{guard, non_null, write_out};
use crate::handle::handle_of;
use crate::result::{CapiError, CapiResult, invalid};
use crate::types::*;

/// The attribute holding the user clock.
const USER_CLOCK: &str = "userclk/frequency";

/// The handle's device and its user clock in kHz; `FPGA_NOT_SUPPORTED` for a device
/// without one.
fn user_clock(handle: fpga_handle) -> CapiResult<(accelhost::Token, u64)> {
    let token = handle_of(handle)?.token.clone();
    match optional_number(&token, USER_CLOCK)? {
        Some(khz) => Ok((token, khz)),
        None => Err(CapiError::NotSupported(format!(
            "{} has no user clock (no attribute {USER_CLOCK})",
            device_name(&token)
        ))),
    }
}

/// OPAE's `fpgaGetUserClock`: the high and low user clocks, in MHz.
///
/// # Safety
/// `high_clk` and `low_clk` must be NULL or valid for one write each.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetUserClock(
    handle: fpga_handle,
    high_clk: *mut u64,
    low_clk: *mut u64,
    _flags: std::ffi::c_int,
) -> fpga_result {
    guard("fpgaGetUserClock", || {
        non_null(high_clk, "high_clk")?;
        non_null(low_clk, "low_clk")?;
        let (_, khz) = user_clock(handle)?;
        // SAFETY: non-NULL, valid for one write each by the caller's contract.
        unsafe {
            write_out(high_clk, khz / 1000, "high_clk")?;
            write_out(low_clk, khz / 2000, "low_clk")
        }
    })
}

/// OPAE's `fpgaSetUserClock`: sets the high clock to `high_clk` MHz; `low_clk` must be 0
/// or half of it (the card derives the low clock).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaSetUserClock(
    handle: fpga_handle,
    high_clk: u64,
    low_clk: u64,
    _flags: std::ffi::c_int,
) -> fpga_result {
    guard("fpgaSetUserClock", || {
        let (token, _) = user_clock(handle)?;
        if high_clk == 0 {
            return Err(invalid("high_clk is 0 MHz"));
        }
        if low_clk != 0 && low_clk != high_clk / 2 {
            return Err(invalid(format!(
                "low_clk is {low_clk} MHz: this card's low clock is half the high clock ({} MHz)",
                high_clk / 2
            )));
        }
        let khz = high_clk
            .checked_mul(1000)
            .ok_or_else(|| invalid(format!("high_clk {high_clk} MHz is out of range")))?;
        Ok(token.write_attribute(USER_CLOCK, &khz.to_string())?)
    })
}
