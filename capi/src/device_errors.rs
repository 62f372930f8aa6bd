//! OPAE's error-register calls (`error.h`): the registers are the attributes in a device's
//! `errors/` directory (`errors/errors` of a port; `fme_errors`, `pcie0_errors`, ... of an
//! FME), numbered in the order the plugin lists them. A writable register is cleared by
//! writing back the value it shows, as the kernel's DFL driver clears it.

use accelhost::{AttributeInfo, Token};

use crate::attributes::{device_name, read_number};
use crate::ffi::{guard, non_null, write_out};
use crate::result::{CapiError, CapiResult};
use crate::token::token_of;
use crate::types::*;

/// Files of `errors/` that are controls, not registers.
const NOT_REGISTERS: &[&str] = &["clear", "revision", "inject_errors"];

/// One error register.
pub(crate) struct ErrorRegister {
    /// Its name, such as `first_error`.
    pub name: String,
    /// Its attribute, such as `errors/first_error`.
    pub attribute: String,
    /// Whether writing its value back clears it.
    pub can_clear: bool,
}

/// The error registers of `token`'s device.
pub(crate) fn registers(token: &Token) -> CapiResult<Vec<ErrorRegister>> {
    Ok(registers_in(token.attributes()?))
}

/// The error registers among a device's attributes.
pub(crate) fn registers_in(attributes: Vec<AttributeInfo>) -> Vec<ErrorRegister> {
    attributes
        .into_iter()
        .filter_map(|a| {
            let name = a.name.strip_prefix("errors/")?;
            if name.contains('/') || NOT_REGISTERS.contains(&name) {
                return None;
            }
            Some(ErrorRegister {
                name: name.to_string(),
                attribute: a.name.clone(),
                can_clear: a.writable,
            })
        })
        .collect()
}

fn register(token: &Token, error_num: u32) -> CapiResult<ErrorRegister> {
    let mut all = registers(token)?;
    let count = all.len();
    if (error_num as usize) < count {
        Ok(all.swap_remove(error_num as usize))
    } else {
        Err(CapiError::NotFound(format!(
            "{} has {count} error registers; there is no number {error_num}",
            device_name(token)
        )))
    }
}

/// Clears `register` if it shows an error.
fn clear(token: &Token, register: &ErrorRegister) -> CapiResult {
    if !register.can_clear {
        return Err(CapiError::NotSupported(format!(
            "the error register {} of {} cannot be cleared",
            register.name,
            device_name(token)
        )));
    }
    let value = read_number(token, &register.attribute)?;
    if value != 0 {
        token.write_attribute(&register.attribute, &format!("0x{value:x}"))?;
    }
    Ok(())
}

/// OPAE's `fpgaReadError`: the value of error register `error_num`.
///
/// # Safety
/// `value` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaReadError(
    token: fpga_token,
    error_num: u32,
    value: *mut u64,
) -> fpga_result {
    guard("fpgaReadError", || {
        let token = token_of(token)?;
        non_null(value, "value")?;
        let register = register(&token, error_num)?;
        let read = read_number(&token, &register.attribute)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(value, read, "value") }
    })
}

/// OPAE's `fpgaClearError`: clears error register `error_num`; `FPGA_NOT_SUPPORTED` for
/// one that cannot be cleared.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaClearError(token: fpga_token, error_num: u32) -> fpga_result {
    guard("fpgaClearError", || {
        let token = token_of(token)?;
        let register = register(&token, error_num)?;
        clear(&token, &register)
    })
}

/// OPAE's `fpgaClearAllErrors`: clears every error register that can be cleared.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaClearAllErrors(token: fpga_token) -> fpga_result {
    guard("fpgaClearAllErrors", || {
        let token = token_of(token)?;
        for register in registers(&token)?.iter().filter(|r| r.can_clear) {
            clear(&token, register)?;
        }
        Ok(())
    })
}

/// OPAE's `fpgaGetErrorInfo`: the name of error register `error_num` and whether it can be
/// cleared.
///
/// # Safety
/// `error_info` must be NULL or valid for one write of `struct fpga_error_info`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetErrorInfo(
    token: fpga_token,
    error_num: u32,
    error_info: *mut fpga_error_info,
) -> fpga_result {
    guard("fpgaGetErrorInfo", || {
        let token = token_of(token)?;
        non_null(error_info, "error_info")?;
        let register = register(&token, error_num)?;
        let mut info = fpga_error_info {
            name: [0; FPGA_ERROR_NAME_MAX],
            can_clear: register.can_clear,
        };
        crate::ffi::fill_field(&mut info.name, &register.name);
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(error_info, info, "error_info") }
    })
}
