//! The one platform, "accelhost": what it reports about itself.

use std::sync::OnceLock;

use crate::cl::*;
use crate::info::Value;
use crate::object::{Dispatched, header};

/// An OpenCL platform object.
#[repr(C)]
pub struct Platform {
    header: Dispatched,
}

static PLATFORM: OnceLock<Platform> = OnceLock::new();

/// The platform's handle (once the dispatch table is installed).
pub fn handle() -> *mut Platform {
    std::ptr::from_ref(PLATFORM.get_or_init(|| Platform { header: header() })).cast_mut()
}

/// Whether `platform` names this platform (NULL does, as the loader resolves it to us).
pub fn is_ours(platform: *const Platform) -> bool {
    platform.is_null() || std::ptr::eq(platform, handle())
}

/// The OpenCL version the platform and its devices report, in the form the SYCL runtime's
/// loader parses (`OpenCL X.Y` and a space before the vendor text). 3.0 makes the features
/// an FPGA runtime lacks (images, SVM, device-side queues, pipes, a compiler) optional.
pub const VERSION: &str = "OpenCL 3.0 accelhost";

/// The extensions of the platform: `cl_khr_icd`, which both loaders require, and its
/// devices' unified shared memory.
const EXTENSIONS: [(&str, cl_version); 2] = [("cl_khr_icd", make_version(1, 0, 0)), USM_EXTENSION];

/// Unified shared memory, as the SYCL runtime's OpenCL path uses it (header version 1.1.0).
pub const USM_EXTENSION: (&str, cl_version) =
    ("cl_intel_unified_shared_memory", make_version(1, 1, 0));

/// The suffix the loaders match against a platform-less `clGetExtensionFunctionAddress`.
const ICD_SUFFIX: &str = "ACCELHOST";

/// The answer to `clGetPlatformInfo(param)`, if `param` is one.
pub fn value(param: cl_platform_info) -> Option<Value> {
    Some(match param {
        CL_PLATFORM_PROFILE => Value::text("FULL_PROFILE"),
        CL_PLATFORM_VERSION => Value::text(&format!("{VERSION} {}", env!("CARGO_PKG_VERSION"))),
        CL_PLATFORM_NAME => Value::text("accelhost"),
        CL_PLATFORM_VENDOR => Value::text("accelhost"),
        CL_PLATFORM_EXTENSIONS => Value::text(
            &EXTENSIONS
                .iter()
                .map(|(name, _)| *name)
                .collect::<Vec<_>>()
                .join(" "),
        ),
        // No clGetHostTimer: 0 says so.
        CL_PLATFORM_HOST_TIMER_RESOLUTION => Value::ulong(0),
        CL_PLATFORM_NUMERIC_VERSION => Value::uint(make_version(3, 0, 0)),
        CL_PLATFORM_EXTENSIONS_WITH_VERSION => Value::name_versions(&EXTENSIONS),
        CL_PLATFORM_ICD_SUFFIX_KHR => Value::text(ICD_SUFFIX),
        _ => return None,
    })
}
