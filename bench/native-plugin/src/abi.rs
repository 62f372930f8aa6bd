//! The C ABI of the native baseline plugin: one function-pointer table, found by one
//! exported symbol, the way OPAE's plugin manager and the OpenCL ICD loader dispatch. This
//! module is the "header": the cdylib implements it, and `accelhost bench` links this crate
//! as a library for it, so both sides share one definition.

use std::ffi::c_void;

/// Bumped whenever the table changes.
pub const ABI_VERSION: u32 = 1;
/// The exported symbol returning `*const NativePluginApi`.
pub const ENTRY_SYMBOL: &[u8] = b"accelhost_native_plugin_v1\0";
/// The library's file name (`lib<crate>.so`).
pub const LIBRARY_NAME: &str = "libaccelhost_native_plugin.so";

/// What `properties` reports about a device (the fields the benches read).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NativeProperties {
    /// High half of the AFU id.
    pub guid_hi: u64,
    /// Low half of the AFU id.
    pub guid_lo: u64,
    /// PCI vendor id.
    pub vendor_id: u16,
    /// PCI device id.
    pub device_id: u16,
    /// Port number.
    pub port_id: u32,
}

/// `ENTRY_SYMBOL` has this type.
pub type EntryFn = unsafe extern "C" fn() -> *const NativePluginApi;

/// The plugin's operations. Every call returns 0 or a positive errno.
#[repr(C)]
pub struct NativePluginApi {
    /// `ABI_VERSION` of the library.
    pub abi_version: u32,
    /// Starts a plugin instance on the devices of a JSON config (UTF-8, `len` bytes): every
    /// emulated DFL port of it. Null on failure.
    pub init: unsafe extern "C" fn(config: *const u8, len: usize) -> *mut c_void,
    /// Ends an instance; every handle and region of it must be gone.
    pub fini: unsafe extern "C" fn(ctx: *mut c_void),
    /// Enumerates: writes up to `capacity` tokens, returns how many devices there are.
    pub enumerate:
        unsafe extern "C" fn(ctx: *mut c_void, tokens: *mut u64, capacity: usize) -> usize,
    /// The properties kept at enumeration.
    pub properties:
        unsafe extern "C" fn(ctx: *mut c_void, token: u64, out: *mut NativeProperties) -> i32,
    /// Opens the device of `token` (exclusively unless `exclusive` is 0).
    pub open:
        unsafe extern "C" fn(ctx: *mut c_void, token: u64, exclusive: u32, handle: *mut u64) -> i32,
    /// Closes a handle.
    pub close: unsafe extern "C" fn(ctx: *mut c_void, handle: u64) -> i32,
    /// Resets the accelerator of a handle.
    pub reset: unsafe extern "C" fn(ctx: *mut c_void, handle: u64) -> i32,
    /// Maps MMIO region `index` of a handle; `unmap_mmio` frees it.
    pub map_mmio: unsafe extern "C" fn(
        ctx: *mut c_void,
        handle: u64,
        index: u32,
        region: *mut *mut c_void,
    ) -> i32,
    /// Frees a region from `map_mmio`.
    pub unmap_mmio: unsafe extern "C" fn(region: *mut c_void),
    /// Reads the 64-bit register at `offset` (bounds- and alignment-checked).
    pub mmio_read64: unsafe extern "C" fn(region: *mut c_void, offset: u64, value: *mut u64) -> i32,
    /// Writes the 64-bit register at `offset` (bounds- and alignment-checked).
    pub mmio_write64: unsafe extern "C" fn(region: *mut c_void, offset: u64, value: u64) -> i32,
}
