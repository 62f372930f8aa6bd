//! `fpga_token`: a device found by `fpgaEnumerate`; clone, destroy and the device's id.

use std::ffi::c_char;

use accelhost::Token;

use crate::ffi::{copy_str, guard, non_null};
use crate::registry::{self, Object};
use crate::result::CapiResult;
use crate::types::*;

/// What an `fpga_token` stands for.
struct TokenObject(Token);

impl Object for TokenObject {
    const KIND: &'static str = "token";
}

/// The token behind `token`.
pub(crate) fn token_of(token: fpga_token) -> CapiResult<Token> {
    Ok(registry::get::<TokenObject>(token)?.0.clone())
}

/// Registers `token`; returns the `fpga_token` C holds.
pub(crate) fn new_token(token: Token) -> fpga_token {
    registry::insert(TokenObject(token))
}

/// OPAE's `fpgaCloneToken`: a second token for the same device.
///
/// # Safety
/// `dst` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaCloneToken(src: fpga_token, dst: *mut fpga_token) -> fpga_result {
    guard("fpgaCloneToken", || {
        non_null(dst, "dst")?;
        let token = token_of(src)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { dst.write(new_token(token)) };
        Ok(())
    })
}

/// OPAE's `fpgaDestroyToken`: destroys `*token` and sets it to NULL.
///
/// # Safety
/// `token` must be NULL or valid for a read and a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaDestroyToken(token: *mut fpga_token) -> fpga_result {
    guard("fpgaDestroyToken", || {
        // SAFETY: NULL or valid for a read and a write by the caller's contract.
        unsafe { registry::destroy::<TokenObject>(token, "token") }
    })
}

/// accelhost extension: the device's id, `<plugin>/<name>` (as the CLI names it).
///
/// # Safety
/// `id` must be NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostTokenGetId(
    token: fpga_token,
    id: *mut c_char,
    len: usize,
) -> fpga_result {
    guard("accelhostTokenGetId", || {
        non_null(id, "id")?;
        let token = token_of(token)?;
        // SAFETY: valid for `len` bytes by the caller's contract.
        unsafe { copy_str(id, len, &token.id(), "id") }
    })
}
