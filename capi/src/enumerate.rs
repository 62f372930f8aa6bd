//! `fpgaEnumerate`: the devices of the running host that match properties filters, each
//! handed to C as a new token.

use accelhost::{ObjectType, Token};
use accelhost_door::boundary::say;

use crate::families::Shown;
use crate::ffi::{array, guard, non_null, slice};
use crate::properties::{PropsData, props_of};
use crate::result::{CapiResult, invalid};
use crate::state::host;
use crate::token::new_token;
use crate::types::*;

/// OPAE's `fpgaEnumerate`: the devices shown to OPAE programs ([`Shown`]: the dfl family's
/// by default) that match any of `filters` (every one when `num_filters` is 0). `*num_matches` is the number of matches; the first `max_tokens` of
/// them are stored in `tokens`, each a new token for `fpgaDestroyToken`. A plugin that fails
/// to answer is left out and logged (a warning), as OPAE returns partial results.
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
        let shown =
            Shown::from_env().inspect_err(|err| say("accelhost OPAE", "fpgaEnumerate", err))?;
        let found = host()?.enumerate(&host_filters(&wanted));
        if let Some(err) = found.failures.first() {
            tracing::warn!("fpgaEnumerate: {err}");
        }
        let matching: Vec<Token> = found
            .tokens
            .into_iter()
            .filter(|t| shown.shows(t))
            .filter(|t| wanted.is_empty() || wanted.iter().any(|w| w.matches(t)))
            .collect();
        for (i, token) in matching.iter().take(max_tokens as usize).enumerate() {
            // SAFETY: `i < max_tokens`, valid for writes by the caller's contract.
            unsafe { tokens.add(i).write(new_token(token.clone())) };
        }
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { num_matches.write(u32::try_from(matching.len()).unwrap_or(u32::MAX)) };
        Ok(())
    })
}

/// The host filters for `wanted`: a filter without an object type asks for accelerators and
/// for device objects, as OPAE enumerates both (plugins list device objects such as an FME
/// only to a filter that names the type); no filter at all asks for both of everything.
fn host_filters(wanted: &[PropsData]) -> Vec<accelhost::Filter> {
    let both = |filter: accelhost::Filter| {
        [ObjectType::Accelerator, ObjectType::Device].map(|t| {
            let mut typed = filter.clone();
            typed.object_type = Some(t);
            typed
        })
    };
    if wanted.is_empty() {
        return both(accelhost::Filter::new()).to_vec();
    }
    wanted
        .iter()
        .map(PropsData::to_filter)
        .flat_map(|filter| match filter.object_type {
            Some(_) => vec![filter],
            None => both(filter).to_vec(),
        })
        .collect()
}
