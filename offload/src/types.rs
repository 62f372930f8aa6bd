//! The C types and values of `OffloadAPI.h` 0.0.1 that the library reads or writes.

use std::ffi::c_char;

/// `ol_errc_t`.
pub type Errc = u32;
pub const OL_ERRC_INVALID_VALUE: Errc = 1;
pub const OL_ERRC_INVALID_PLATFORM: Errc = 2;
pub const OL_ERRC_INVALID_DEVICE: Errc = 3;
pub const OL_ERRC_INVALID_QUEUE: Errc = 4;
pub const OL_ERRC_INVALID_EVENT: Errc = 5;
pub const OL_ERRC_INVALID_KERNEL_NAME: Errc = 6;
pub const OL_ERRC_OUT_OF_RESOURCES: Errc = 7;
pub const OL_ERRC_UNSUPPORTED_FEATURE: Errc = 8;
pub const OL_ERRC_INVALID_ARGUMENT: Errc = 9;
pub const OL_ERRC_INVALID_NULL_HANDLE: Errc = 10;
pub const OL_ERRC_INVALID_NULL_POINTER: Errc = 11;
pub const OL_ERRC_INVALID_SIZE: Errc = 12;
pub const OL_ERRC_INVALID_ENUMERATION: Errc = 13;
pub const OL_ERRC_UNSUPPORTED_ENUMERATION: Errc = 14;
pub const OL_ERRC_UNKNOWN: Errc = 15;

/// `ol_error_struct_t`: what a failed call's result points to.
#[repr(C)]
pub struct ErrorStruct {
    pub code: Errc,
    pub details: *const c_char,
}

// SAFETY: an error is written once and never changed; its text lives as long as it does.
unsafe impl Sync for ErrorStruct {}
// SAFETY: as for Sync; the error holds no thread-bound state.
unsafe impl Send for ErrorStruct {}

/// `ol_result_t`: NULL for success.
pub type OlResult = *const ErrorStruct;

/// `ol_platform_info_t`.
pub const OL_PLATFORM_INFO_NAME: u32 = 0;
pub const OL_PLATFORM_INFO_VENDOR_NAME: u32 = 1;
pub const OL_PLATFORM_INFO_VERSION: u32 = 2;
pub const OL_PLATFORM_INFO_BACKEND: u32 = 3;
/// `OL_PLATFORM_BACKEND_UNKNOWN`: neither CUDA nor AMDGPU.
pub const OL_PLATFORM_BACKEND_UNKNOWN: u32 = 0;

/// `ol_device_info_t`.
pub const OL_DEVICE_INFO_TYPE: u32 = 0;
pub const OL_DEVICE_INFO_PLATFORM: u32 = 1;
pub const OL_DEVICE_INFO_NAME: u32 = 2;
pub const OL_DEVICE_INFO_VENDOR: u32 = 3;
pub const OL_DEVICE_INFO_DRIVER_VERSION: u32 = 4;
/// `ol_device_type_t`: accelerators are neither GPUs nor CPUs, so they report the default
/// type; the host device is a CPU.
pub const OL_DEVICE_TYPE_DEFAULT: u32 = 0;
pub const OL_DEVICE_TYPE_CPU: u32 = 3;

/// `ol_alloc_type_t`.
pub const OL_ALLOC_TYPE_HOST: u32 = 0;
pub const OL_ALLOC_TYPE_DEVICE: u32 = 1;
pub const OL_ALLOC_TYPE_SHARED: u32 = 2;

/// `ol_kernel_launch_size_args_t`.
#[repr(C)]
pub struct LaunchSizeArgs {
    pub dimensions: usize,
    pub num_groups: [usize; 3],
    pub group_size: [usize; 3],
}

/// `ol_code_location_t`.
#[repr(C)]
pub struct CodeLocation {
    pub function_name: *const c_char,
    pub source_file: *const c_char,
    pub line_number: u32,
    pub column_number: u32,
}
