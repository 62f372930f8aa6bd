//! The C types of the API: OPAE's result codes, enums and flags with OPAE's values, and the
//! accelhost extensions' plain structs. `include/opae/*.h` declares the same things for C.

#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int, c_void};

/// OPAE's `fpga_version`: a version triple.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct fpga_version {
    /// Major version.
    pub major: u8,
    /// Minor version.
    pub minor: u8,
    /// Patch level.
    pub patch: u16,
}

/// OPAE's `fpga_result`: every function returns one.
pub type fpga_result = c_int;
/// Success.
pub const FPGA_OK: fpga_result = 0;
/// A NULL, unknown, destroyed or wrong-type object, or a value out of range.
pub const FPGA_INVALID_PARAM: fpga_result = 1;
/// The resource is in use (an exclusive open, an event already registered).
pub const FPGA_BUSY: fpga_result = 2;
/// Something failed that the caller did not cause: a plugin fault, a device error, a panic.
pub const FPGA_EXCEPTION: fpga_result = 3;
/// The object or property asked for does not exist (or was never set).
pub const FPGA_NOT_FOUND: fpga_result = 4;
/// Not enough memory (or DMA grant) to complete the call.
pub const FPGA_NO_MEMORY: fpga_result = 5;
/// The plugin, the device or this library does not implement the call.
pub const FPGA_NOT_SUPPORTED: fpga_result = 6;
/// The plugin serving the device is not running, or the host could not be started.
pub const FPGA_NO_DRIVER: fpga_result = 7;
/// OPAE's daemon is not running (never returned by accelhost).
pub const FPGA_NO_DAEMON: fpga_result = 8;
/// The plugin's grants do not allow the access.
pub const FPGA_NO_ACCESS: fpga_result = 9;
/// Loading an image into a slot failed.
pub const FPGA_RECONF_ERROR: fpga_result = 10;

/// OPAE's `fpga_objtype`.
pub type fpga_objtype = c_int;
/// A whole card (OPAE's FME).
pub const FPGA_DEVICE: fpga_objtype = 0;
/// An accelerator (OPAE's port / AFU).
pub const FPGA_ACCELERATOR: fpga_objtype = 1;

/// OPAE's `fpga_accelerator_state`.
pub type fpga_accelerator_state = c_int;
/// Someone held the accelerator open at enumeration.
pub const FPGA_ACCELERATOR_ASSIGNED: fpga_accelerator_state = 0;
/// Nobody held it open.
pub const FPGA_ACCELERATOR_UNASSIGNED: fpga_accelerator_state = 1;

/// OPAE's `fpga_event_type`.
pub type fpga_event_type = c_int;
/// A device interrupt; `fpgaRegisterEvent`'s flags name the vector.
pub const FPGA_EVENT_INTERRUPT: fpga_event_type = 0;
/// A device error.
pub const FPGA_EVENT_ERROR: fpga_event_type = 1;
/// A power or thermal alarm.
pub const FPGA_EVENT_POWER_THERMAL: fpga_event_type = 2;

/// `fpgaOpen` flag: open shared rather than exclusive.
pub const FPGA_OPEN_SHARED: c_int = 1 << 0;
/// `fpgaOpen` flag: the resource is a child AFU whose parent is open in this process.
pub const FPGA_OPEN_HAS_PARENT_AFU: c_int = 1 << 1;
/// `fpgaPrepareBuffer` flag: the caller supplies the memory (not supported).
pub const FPGA_BUF_PREALLOCATED: c_int = 1 << 0;
/// `fpgaPrepareBuffer` flag: no error message on failure (accepted, no effect).
pub const FPGA_BUF_QUIET: c_int = 1 << 1;
/// `fpgaPrepareBuffer` flag: the device only reads the buffer.
pub const FPGA_BUF_READ_ONLY: c_int = 1 << 2;
/// `fpgaReconfigureSlot` flag: reconfigure even if the slot is in use (accepted).
pub const FPGA_RECONF_FORCE: c_int = 1 << 0;
/// `fpgaReconfigureSlot` flag: leave the user clock alone (accepted, no effect).
pub const FPGA_RECONF_SKIP_USRCLK: c_int = 1 << 1;

/// The device-type property of the OPAE plugin design (`fpgaPropertiesGetDeviceType`).
pub type fpga_device_type = c_int;
/// A device type other than those named here (the string accessor tells which).
pub const FPGA_DEVICE_TYPE_OTHER: fpga_device_type = 0;
/// `fpga`: FPGA cards and their accelerators (every shipped plugin).
pub const FPGA_DEVICE_TYPE_FPGA: fpga_device_type = 1;

/// OPAE's `fpga_guid`: 16 bytes in the order of the usual text form.
pub type fpga_guid = [u8; 16];
/// An opaque properties object.
pub type fpga_properties = *mut c_void;
/// An opaque token.
pub type fpga_token = *mut c_void;
/// An opaque open handle.
pub type fpga_handle = *mut c_void;
/// OPAE's `fpga_object`: a node of a device's sysobject tree (none is handed out yet).
pub type fpga_object = *mut c_void;
/// An opaque event handle.
pub type fpga_event_handle = *mut c_void;

/// The kind of memory `accelhostMemAlloc` allocates.
pub type accelhost_memory_kind = c_int;
/// Host memory the device reaches.
pub const ACCELHOST_MEMORY_HOST: accelhost_memory_kind = 0;
/// Device memory.
pub const ACCELHOST_MEMORY_DEVICE: accelhost_memory_kind = 1;
/// Memory both sides reach at the same address.
pub const ACCELHOST_MEMORY_SHARED: accelhost_memory_kind = 2;

/// What an `accelhost_kernel_arg` holds.
pub type accelhost_arg_kind = c_int;
/// `memory` at byte `value` of it (the kernel gets the device address).
pub const ACCELHOST_ARG_MEMORY: accelhost_arg_kind = 0;
/// `value` as a 32-bit unsigned scalar.
pub const ACCELHOST_ARG_U32: accelhost_arg_kind = 1;
/// `value` as a 32-bit signed scalar (its low 32 bits).
pub const ACCELHOST_ARG_I32: accelhost_arg_kind = 2;
/// `value` as a 64-bit scalar.
pub const ACCELHOST_ARG_U64: accelhost_arg_kind = 3;

/// One kernel argument of `accelhostEnqueueLaunch`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct accelhost_kernel_arg {
    /// One of `ACCELHOST_ARG_*`.
    pub kind: accelhost_arg_kind,
    /// Padding; set to 0.
    pub reserved: u32,
    /// The scalar, or the byte offset into `memory`.
    pub value: u64,
    /// The memory object, for `ACCELHOST_ARG_MEMORY`.
    pub memory: *mut c_void,
}

/// Where an offload event stands (`accelhostEventGetStatus`).
pub type accelhost_event_status = c_int;
/// Still queued or running.
pub const ACCELHOST_EVENT_PENDING: accelhost_event_status = 0;
/// Finished successfully.
pub const ACCELHOST_EVENT_COMPLETE: accelhost_event_status = 1;
/// Finished with an error.
pub const ACCELHOST_EVENT_FAILED: accelhost_event_status = 2;

/// A plugin's state in `accelhost_plugin_info`.
pub type accelhost_plugin_state = c_int;
/// Loaded, configured and initialized.
pub const ACCELHOST_PLUGIN_RUNNING: accelhost_plugin_state = 0;
/// `enabled: false` in the config.
pub const ACCELHOST_PLUGIN_DISABLED: accelhost_plugin_state = 1;
/// It could not be loaded (`reason` says why).
pub const ACCELHOST_PLUGIN_LOAD_FAILED: accelhost_plugin_state = 2;
/// It faulted and restarts after a backoff (`reason` says why).
pub const ACCELHOST_PLUGIN_RESTARTING: accelhost_plugin_state = 3;
/// It faulted and stays stopped (`reason` says why).
pub const ACCELHOST_PLUGIN_FAULTED: accelhost_plugin_state = 4;
/// The host shut it down.
pub const ACCELHOST_PLUGIN_STOPPED: accelhost_plugin_state = 5;

/// One plugin in `accelhostGetPlugins`; strings are NUL-terminated and cut to fit.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct accelhost_plugin_info {
    /// The plugin's name in the config.
    pub name: [c_char; 64],
    /// The `module` field as the config wrote it.
    pub module: [c_char; 256],
    /// One of `ACCELHOST_PLUGIN_*`.
    pub state: accelhost_plugin_state,
    /// Restarts after faults so far.
    pub restarts: u32,
    /// Log lines dropped over the plugin's log budget.
    pub log_lines_dropped: u64,
    /// Why it is not running (empty while it runs).
    pub reason: [c_char; 256],
}

/// OPAE's `fpga_interface`: the plugin interface behind a device.
pub type fpga_interface = c_int;
/// The kernel's DFL driver.
pub const FPGA_IFC_DFL: fpga_interface = 0;
/// VFIO.
pub const FPGA_IFC_VFIO: fpga_interface = 1;
/// A simulated (here: emulated) DFL device.
pub const FPGA_IFC_SIM_DFL: fpga_interface = 2;
/// A simulated VFIO device.
pub const FPGA_IFC_SIM_VFIO: fpga_interface = 3;
/// UIO.
pub const FPGA_IFC_UIO: fpga_interface = 4;
/// accelhost's: a CAPI AFU or adapter, reached through the cxl kernel interface.
pub const ACCELHOST_IFC_CXL: fpga_interface = 0x100;
/// accelhost's: an emulated CAPI AFU or adapter.
pub const ACCELHOST_IFC_SIM_CXL: fpga_interface = 0x101;
/// accelhost's: an XRT card, reached through the xocl kernel interface.
pub const ACCELHOST_IFC_XOCL: fpga_interface = 0x102;
/// accelhost's: an emulated XRT card.
pub const ACCELHOST_IFC_SIM_XOCL: fpga_interface = 0x103;
/// accelhost's: a device whose plugin names an interface neither OPAE nor accelhost has a
/// value for (or none).
pub const ACCELHOST_IFC_OTHER: fpga_interface = 0x1ff;

/// OPAE's `fpga_sysobject_flags`: re-read the value.
pub const FPGA_OBJECT_SYNC: c_int = 1 << 0;
/// `fpga_sysobject_flags`: the name is a glob pattern.
pub const FPGA_OBJECT_GLOB: c_int = 1 << 1;
/// `fpga_sysobject_flags`: the value is binary, not text.
pub const FPGA_OBJECT_RAW: c_int = 1 << 2;
/// `fpga_sysobject_flags`: a container with its direct children.
pub const FPGA_OBJECT_RECURSE_ONE: c_int = 1 << 3;
/// `fpga_sysobject_flags`: a container with everything below it.
pub const FPGA_OBJECT_RECURSE_ALL: c_int = 1 << 4;
/// OPAE's `fpga_sysobject_type`: a group of objects.
pub const FPGA_OBJECT_CONTAINER: c_int = 1 << 0;
/// `fpga_sysobject_type`: an attribute with a value.
pub const FPGA_OBJECT_ATTRIBUTE: c_int = 1 << 1;

/// The length of an error register's name, with its NUL.
pub const FPGA_ERROR_NAME_MAX: usize = 64;

/// OPAE's `struct fpga_error_info`.
#[repr(C)]
pub struct fpga_error_info {
    /// The register's name, NUL-terminated.
    pub name: [c_char; FPGA_ERROR_NAME_MAX],
    /// Whether `fpgaClearError` clears it.
    pub can_clear: bool,
}

/// The length of the strings of the metric structs, with their NUL.
pub const FPGA_METRIC_STR_SIZE: usize = 256;

/// OPAE's `fpga_metric_type`: power.
pub const FPGA_METRIC_TYPE_POWER: c_int = 0;
/// `fpga_metric_type`: temperature.
pub const FPGA_METRIC_TYPE_THERMAL: c_int = 1;
/// OPAE's `fpga_metric_datatype`: a `double`.
pub const FPGA_METRIC_DATATYPE_DOUBLE: c_int = 2;

/// OPAE's `fpga_metric_info`.
#[repr(C)]
pub struct fpga_metric_info {
    /// Its number, for `fpgaGetMetricsByIndex`.
    pub metric_num: u64,
    /// Unused (zero).
    pub metric_guid: fpga_guid,
    /// `<group>:<name>`.
    pub qualifier_name: [c_char; FPGA_METRIC_STR_SIZE],
    /// Such as `thermal_mgmt`.
    pub group_name: [c_char; FPGA_METRIC_STR_SIZE],
    /// The sensor's label.
    pub metric_name: [c_char; FPGA_METRIC_STR_SIZE],
    /// Such as `Centigrade`.
    pub metric_units: [c_char; FPGA_METRIC_STR_SIZE],
    /// `fpga_metric_datatype`.
    pub metric_datatype: c_int,
    /// `fpga_metric_type`.
    pub metric_type: c_int,
}

/// OPAE's `metric_value`.
#[repr(C)]
#[derive(Clone, Copy)]
pub union metric_value {
    /// An integer value.
    pub ivalue: u64,
    /// A `double` value.
    pub dvalue: f64,
    /// A `float` value.
    pub fvalue: f32,
    /// A `bool` value.
    pub bvalue: bool,
}

/// OPAE's `fpga_metric`.
#[repr(C)]
pub struct fpga_metric {
    /// The metric's number.
    pub metric_num: u64,
    /// Its value.
    pub value: metric_value,
    /// Whether `value` was read.
    pub isvalid: bool,
}

/// OPAE's `threshold`.
#[repr(C)]
pub struct threshold {
    /// Such as `Upper Critical`.
    pub threshold_name: [c_char; FPGA_METRIC_STR_SIZE],
    /// 1 when the sensor has this threshold.
    pub is_valid: u32,
    /// The threshold, in the metric's units.
    pub value: f64,
}

/// OPAE's `metric_threshold`.
#[repr(C)]
pub struct metric_threshold {
    /// The metric's name.
    pub metric_name: [c_char; FPGA_METRIC_STR_SIZE],
    /// Upper non-recoverable.
    pub upper_nr_threshold: threshold,
    /// Upper critical.
    pub upper_c_threshold: threshold,
    /// Upper non-critical.
    pub upper_nc_threshold: threshold,
    /// Lower non-recoverable.
    pub lower_nr_threshold: threshold,
    /// Lower critical.
    pub lower_c_threshold: threshold,
    /// Lower non-critical.
    pub lower_nc_threshold: threshold,
    /// Hysteresis.
    pub hysteresis: threshold,
}
