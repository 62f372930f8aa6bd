//! The platforms, one per family of devices as its ecosystem names it: `Xilinx`, where
//! Vitis hosts (`xcl2`) and XRT's OpenCL look for the XRT cards, and `accelhost`, with every
//! device of the library's offload plugins in the type the SYCL runtime can use. What each
//! reports about itself.

use std::sync::OnceLock;

use crate::cl::*;
use crate::info::Value;
use crate::object::{Dispatched, header};

/// Which platform: the order is the one `clGetPlatformIDs` gives. `accelhost` comes first:
/// a program that takes the first platform (clinfo's NULL platform, PyOpenCL's
/// `create_some_context`, the Khronos loader's default) gets every device, and Debian's
/// loader (ocl-icd) puts the platform with the most CPU devices first anyway, unless
/// `OCL_ICD_PLATFORM_SORT=none`. `xcl2` finds `Xilinx` by its name wherever it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `accelhost`: every device, those that hold memory of their own first, in the type
    /// `ACCELHOST_OPENCL_DEVICE_TYPE` says (README, "The OpenCL platform"). Always listed.
    Accelhost,
    /// `Xilinx`: the XRT cards, as `CL_DEVICE_TYPE_ACCELERATOR` devices (XRT's OpenCL
    /// platform is named so, and `xcl2` takes the platform of exactly that name). Listed
    /// when there is an XRT card.
    Xilinx,
}

impl Family {
    /// Every platform, in order.
    pub const ALL: [Family; 2] = [Family::Accelhost, Family::Xilinx];

    fn name(self) -> &'static str {
        match self {
            Family::Xilinx => "Xilinx",
            Family::Accelhost => "accelhost",
        }
    }
}

/// An OpenCL platform object.
#[repr(C)]
pub struct Platform {
    header: Dispatched,
    family: Family,
}

static PLATFORMS: OnceLock<[Platform; 2]> = OnceLock::new();

fn platforms() -> &'static [Platform; 2] {
    PLATFORMS.get_or_init(|| {
        Family::ALL.map(|family| Platform {
            header: header(),
            family,
        })
    })
}

/// The handle of `family`'s platform (once the dispatch table is installed).
pub fn handle(family: Family) -> *mut Platform {
    let at = Family::ALL.iter().position(|f| *f == family).unwrap_or(0);
    platforms()[at].id()
}

/// The platform `platform` names, if it is one of these (NULL is none: the callers that take
/// it as the first listed platform resolve it, `State::first_listed`).
pub fn of(platform: *const Platform) -> Option<&'static Platform> {
    platforms().iter().find(|p| std::ptr::eq(*p, platform))
}

/// The OpenCL version the platforms and their devices report, in the form the SYCL
/// runtime's loader parses (`OpenCL X.Y` and a space before the vendor text). 3.0 makes the
/// features an FPGA runtime lacks (images, SVM, device-side queues, pipes, a compiler)
/// optional.
pub const VERSION: &str = "OpenCL 3.0 accelhost";

/// The extensions of the platforms: `cl_khr_icd`, which both loaders require, and their
/// devices' unified shared memory.
const EXTENSIONS: [(&str, cl_version); 2] = [("cl_khr_icd", make_version(1, 0, 0)), USM_EXTENSION];

/// Unified shared memory, as the SYCL runtime's OpenCL path uses it (header version 1.1.0).
pub const USM_EXTENSION: (&str, cl_version) =
    ("cl_intel_unified_shared_memory", make_version(1, 1, 0));

/// The suffix the loaders match against a platform-less `clGetExtensionFunctionAddress`.
const ICD_SUFFIX: &str = "ACCELHOST";

impl Platform {
    /// Which platform it is.
    pub fn family(&self) -> Family {
        self.family
    }

    /// Its handle.
    pub fn id(&self) -> *mut Platform {
        std::ptr::from_ref(self).cast_mut()
    }

    /// The answer to `clGetPlatformInfo(param)`, if `param` is one.
    pub fn value(&self, param: cl_platform_info) -> Option<Value> {
        Some(match param {
            CL_PLATFORM_PROFILE => Value::text("FULL_PROFILE"),
            CL_PLATFORM_VERSION => Value::text(&format!("{VERSION} {}", env!("CARGO_PKG_VERSION"))),
            CL_PLATFORM_NAME | CL_PLATFORM_VENDOR => Value::text(self.family.name()),
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
}
