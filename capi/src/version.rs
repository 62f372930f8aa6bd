//! OPAE's `version.h`: the release of OPAE's public API the library follows, and a build
//! string naming the accelhost build behind it.

use std::ffi::c_char;

use crate::ffi::{copy_str, guard, write_out};
use crate::result::invalid;
use crate::types::*;

/// The OPAE release whose public API these headers and this library follow
/// (`capi/README.md` says which of its functions are implemented).
pub const OPAE_API_VERSION: fpga_version = fpga_version {
    major: 2,
    minor: 14,
    patch: 0,
};

/// What `fpgaGetOPAECBuildString` answers: accelhost's version (OPAE's own build string is a
/// git hash of at most 40 characters; this stays under `FPGA_BUILD_STR_MAX`).
const BUILD: &str = concat!("accelhost-", env!("CARGO_PKG_VERSION"));

fn version_text() -> String {
    let v = OPAE_API_VERSION;
    format!("{}.{}.{}", v.major, v.minor, v.patch)
}

/// OPAE's `fpgaGetOPAECVersion`: the OPAE API version the library follows.
///
/// # Safety
/// `version` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetOPAECVersion(version: *mut fpga_version) -> fpga_result {
    // SAFETY: NULL or valid for one write by the caller's contract.
    guard("fpgaGetOPAECVersion", || unsafe {
        write_out(version, OPAE_API_VERSION, "version")
    })
}

/// OPAE's `fpgaGetOPAECVersionString`: the same as `major.minor.patch` text. A buffer too
/// small for the whole text is refused (`FPGA_INVALID_PARAM`), as in OPAE.
///
/// # Safety
/// `version_str` must be NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetOPAECVersionString(
    version_str: *mut c_char,
    len: usize,
) -> fpga_result {
    guard("fpgaGetOPAECVersionString", || {
        let text = version_text();
        if !version_str.is_null() && len <= text.len() {
            return Err(invalid(format!(
                "len is {len}, but the version string needs {} bytes (FPGA_VERSION_STR_MAX is 10)",
                text.len() + 1
            )));
        }
        // SAFETY: NULL (refused inside) or valid for `len` bytes by the caller's contract.
        unsafe { copy_str(version_str, len, &text, "version_str") }
    })
}

/// OPAE's `fpgaGetOPAECBuildString`: which build of the library this is, cut to `len`
/// bytes (NUL included) as in OPAE.
///
/// # Safety
/// `build_str` must be NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetOPAECBuildString(
    build_str: *mut c_char,
    len: usize,
) -> fpga_result {
    // SAFETY: NULL or a zero `len` (refused inside), or valid for `len` bytes of writes.
    guard("fpgaGetOPAECBuildString", || unsafe {
        copy_str(build_str, len, BUILD, "build_str")
    })
}
