//! `fpga_token`: enumeration, clone and destroy.

use std::ffi::c_char;

use accelhost::Token;

use crate::ffi::{
    CapiResult, Object, array, copy_str, destroy, guard, invalid, lookup_kind, non_null, register,
    slice,
};
use crate::properties::{PropsData, props_of};
use crate::state::host;
use crate::types::*;

/// The token behind `token`.
pub fn token_of(token: fpga_token) -> CapiResult<Token> {
    let object = lookup_kind(token, "token", |o| matches!(o, Object::Token(_)))?;
    let Object::Token(token) = &*object else {
        unreachable!("lookup_kind checked the kind");
    };
    Ok(token.clone())
}

/// OPAE's `fpgaEnumerate`: the devices that match any of `filters` (every device when
/// `num_filters` is 0). `*num_matches` is the number of matches; the first `max_tokens` of
/// them are stored in `tokens`, each a new token for `fpgaDestroyToken`. A plugin that fails
/// to answer is left out (see `accelhostGetLastError`), as OPAE returns partial results.
///
/// # Safety
/// `filters` must be NULL or valid for `num_filters` reads; `tokens` NULL or valid for
/// `max_tokens` writes; `num_matches` NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaEnumerate(
    filters: *const fpga_properties,
    num_filters: u32,
    tokens: *mut fpga_token,
    max_tokens: u32,
    num_matches: *mut u32,
) -> fpga_result {
    guard("fpgaEnumerate", || {
        non_null(num_matches, "num_matches")?;
        if !filters.is_null() && num_filters == 0 {
            return Err(invalid("num_filters is 0 but filters is not NULL"));
        }
        // SAFETY: NULL or valid for `num_filters` reads by the caller's contract.
        let filters = unsafe { slice(filters, num_filters, "filters", "num_filters") }?;
        array(tokens, max_tokens, "tokens", "max_tokens")?;
        let wanted: Vec<PropsData> = filters
            .iter()
            .map(|&f| props_of(f))
            .collect::<CapiResult<_>>()?;
        let found = host()?.enumerate(&wanted.iter().map(PropsData::to_filter).collect::<Vec<_>>());
        if let Some(err) = found.failures.first() {
            tracing::warn!("fpgaEnumerate: {err}");
        }
        let matching: Vec<Token> = found
            .tokens
            .into_iter()
            .filter(|t| wanted.is_empty() || wanted.iter().any(|w| w.matches(t.properties())))
            .collect();
        for (i, token) in matching.iter().take(max_tokens as usize).enumerate() {
            // SAFETY: `i < max_tokens`, valid for writes by the caller's contract.
            unsafe { tokens.add(i).write(register(Object::Token(token.clone()))) };
        }
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { num_matches.write(u32::try_from(matching.len()).unwrap_or(u32::MAX)) };
        Ok(())
    })
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
        unsafe { dst.write(register(Object::Token(token))) };
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
        unsafe { destroy(token, "token", "token", |o| matches!(o, Object::Token(_))) }
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
