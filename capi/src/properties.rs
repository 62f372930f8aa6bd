//! `fpga_properties`: a device's properties, or a filter for `fpgaEnumerate`. Each field is
//! either set or not; a getter of an unset field returns `FPGA_NOT_FOUND`, as in OPAE.

use std::ffi::{c_char, c_void};
use std::sync::Mutex;

use accelhost::{AcceleratorState, Filter, Guid, ObjectType, Properties, Token};

use crate::attributes::optional_number;
use crate::ffi::{c_str, copy_str, guard, lock, non_null, write_out};
use crate::registry::{self, Object};
use crate::result::{CapiError, CapiResult, invalid};
use crate::token::{new_token, token_of};
use crate::types::*;

/// The fields of one properties object.
#[derive(Clone, Debug, Default)]
pub(crate) struct PropsData {
    /// `FPGA_DEVICE` or `FPGA_ACCELERATOR`.
    object_type: Option<fpga_objtype>,
    /// The GUID (AFU id for accelerators).
    guid: Option<Guid>,
    /// PCI vendor id.
    vendor_id: Option<u16>,
    /// PCI device id.
    device_id: Option<u16>,
    /// PCI segment.
    segment: Option<u16>,
    /// PCI bus.
    bus: Option<u8>,
    /// PCI device.
    device: Option<u8>,
    /// PCI function.
    function: Option<u8>,
    /// CPU socket.
    socket_id: Option<u8>,
    /// MMIO regions (accelerators).
    num_mmio: Option<u32>,
    /// Interrupt vectors (accelerators).
    num_interrupts: Option<u32>,
    /// Assigned or not (accelerators).
    accelerator_state: Option<fpga_accelerator_state>,
    /// A parent set by `fpgaPropertiesSetParent`.
    parent: Option<Token>,
    /// The device reports a parent (resolved into `parent` by [`PropsData::from_token`]).
    parent_reported: bool,
    /// The host: a name, `localhost`, `^localhost` or `*` (the OPAE plugin design's addition).
    host: Option<String>,
    /// The device type, such as `fpga` (the OPAE plugin design's addition).
    device_type: Option<String>,
    /// Reconfigurable slots (devices: the FME's `ports_num`).
    num_slots: Option<u32>,
    /// The FIM's bitstream id (devices: `bitstream_id`).
    bbs_id: Option<u64>,
    /// The FIM's version, from the bitstream id.
    bbs_version: Option<fpga_version>,
    /// A number naming the device across processes (a hash of its `<plugin>/<name>` id).
    object_id: Option<u64>,
    /// Error registers (the attributes in `errors/`).
    num_errors: Option<u32>,
    /// DFL, or simulated DFL for an emulated card.
    interface: Option<fpga_interface>,
    /// PCI subsystem vendor id of the card.
    subsystem_vendor_id: Option<u16>,
    /// PCI subsystem device id of the card.
    subsystem_device_id: Option<u16>,
}

impl PropsData {
    /// The properties of an enumerated device.
    pub(crate) fn from_device(p: &Properties) -> Self {
        PropsData {
            object_type: Some(match p.object_type {
                ObjectType::Device => FPGA_DEVICE,
                ObjectType::Accelerator => FPGA_ACCELERATOR,
            }),
            guid: Some(p.guid),
            vendor_id: Some(p.vendor_id),
            device_id: Some(p.device_id),
            segment: p.bus_address.map(|b| b.segment),
            bus: p.bus_address.map(|b| b.bus),
            device: p.bus_address.map(|b| b.device),
            function: p.bus_address.map(|b| b.function),
            socket_id: p.socket_id.and_then(|s| u8::try_from(s).ok()),
            num_mmio: Some(p.num_mmio),
            num_interrupts: Some(p.num_interrupts),
            accelerator_state: p.accelerator_state.map(|s| match s {
                AcceleratorState::Assigned => FPGA_ACCELERATOR_ASSIGNED,
                AcceleratorState::Unassigned => FPGA_ACCELERATOR_UNASSIGNED,
            }),
            parent: None,
            parent_reported: p.parent.is_some(),
            host: Some(p.host.to_string()),
            device_type: Some(p.device_type.to_string()),
            interface: interface_of(p),
            ..PropsData::default()
        }
    }

    /// The properties of `token`'s device, with what its attributes say (error registers,
    /// and for a device object its slots, FIM id and version, and the card's subsystem ids)
    /// and its parent resolved. A plugin without attributes leaves those fields unset.
    pub(crate) fn from_token(token: &Token) -> CapiResult<Self> {
        let mut data = PropsData::from_device(token.properties());
        data.object_id = Some(object_id(token));
        data.parent = token.parent()?;
        let attributes = match token.attributes() {
            Ok(list) => list,
            Err(err) if err.code() == accelhost::ErrorCode::Unsupported => {
                // No attributes, so no error registers: OPAE programs read the count of
                // every device they list and take a missing one for a failure.
                data.num_errors = Some(0);
                return Ok(data);
            }
            Err(err) => return Err(err.into()),
        };
        data.num_errors = Some(crate::device_errors::registers_in(attributes).len() as u32);
        if token.properties().object_type == ObjectType::Device {
            data.num_slots = optional_number(token, "ports_num")?.map(|n| n as u32);
            data.bbs_id = optional_number(token, "bitstream_id")?;
            data.bbs_version = data.bbs_id.map(|v| fpga_version {
                major: ((v >> 56) & 0xF) as u8,
                minor: ((v >> 52) & 0xF) as u8,
                patch: ((v >> 48) & 0xF) as u16,
            });
        }
        let card = match token.properties().object_type {
            ObjectType::Device => Some(token),
            ObjectType::Accelerator => data.parent.as_ref(),
        };
        if let Some(card) = card {
            data.subsystem_vendor_id = optional_number(card, "subsystem_vendor")?.map(|v| v as u16);
            data.subsystem_device_id = optional_number(card, "subsystem_device")?.map(|v| v as u16);
        }
        Ok(data)
    }

    /// The part of the filter the host can apply (and pass to plugins' pre-filters).
    pub(crate) fn to_filter(&self) -> Filter {
        let mut filter = Filter::new();
        filter.object_type = self.object_type.map(|t| {
            if t == FPGA_DEVICE {
                ObjectType::Device
            } else {
                ObjectType::Accelerator
            }
        });
        filter.guid = self.guid;
        filter.vendor_id = self.vendor_id;
        filter.device_id = self.device_id;
        filter.device_type = self.device_type.clone();
        filter.host = self.host.clone();
        filter
    }

    /// Does `token`'s device match every field set here? Fields read from attributes are
    /// asked of the plugin only when the filter sets one of them.
    pub(crate) fn matches(&self, token: &Token) -> bool {
        fn eq<T: PartialEq>(want: Option<T>, have: Option<T>) -> bool {
            want.is_none_or(|w| Some(w) == have)
        }
        let p = token.properties();
        // The device's fields as C sees them (a socket id over 255 is unset, so no u8
        // filter matches it).
        let mut have = PropsData::from_device(p);
        have.object_id = self.object_id.map(|_| object_id(token));
        let from_attributes = self.num_slots.is_some()
            || self.bbs_id.is_some()
            || self.bbs_version.is_some()
            || self.num_errors.is_some()
            || self.subsystem_vendor_id.is_some()
            || self.subsystem_device_id.is_some();
        if from_attributes {
            match PropsData::from_token(token) {
                Ok(full) => have = full,
                Err(_) => return false,
            }
        }
        self.to_filter().matches(p)
            && eq(self.segment, have.segment)
            && eq(self.bus, have.bus)
            && eq(self.device, have.device)
            && eq(self.function, have.function)
            && eq(self.socket_id, have.socket_id)
            && eq(self.num_mmio, have.num_mmio)
            && eq(self.num_interrupts, have.num_interrupts)
            && eq(self.accelerator_state, have.accelerator_state)
            && eq(self.num_slots, have.num_slots)
            && eq(self.bbs_id, have.bbs_id)
            && eq(self.bbs_version, have.bbs_version)
            && eq(self.object_id, have.object_id)
            && eq(self.num_errors, have.num_errors)
            && eq(self.interface, have.interface)
            && eq(self.subsystem_vendor_id, have.subsystem_vendor_id)
            && eq(self.subsystem_device_id, have.subsystem_device_id)
            && self
                .parent
                .as_ref()
                .is_none_or(|parent| parent.is_parent_of(token))
    }
}

/// What C's `fpga_properties` stands for: the fields behind a lock (C may share the
/// object between threads).
struct PropertiesObject(Mutex<PropsData>);

impl Object for PropertiesObject {
    const KIND: &'static str = "properties object";
}

/// Registers a new properties object holding `data`.
pub(crate) fn new_properties(data: PropsData) -> fpga_properties {
    registry::insert(PropertiesObject(Mutex::new(data)))
}

/// A copy of the fields of the properties object `prop`.
pub(crate) fn props_of(prop: *const c_void) -> CapiResult<PropsData> {
    with_props(prop, |p| Ok(p.clone()))
}

/// Runs `f` on the fields of `prop` under its lock.
fn with_props<R>(
    prop: *const c_void,
    f: impl FnOnce(&mut PropsData) -> CapiResult<R>,
) -> CapiResult<R> {
    let object = registry::get::<PropertiesObject>(prop)?;
    f(&mut lock(&object.0))
}

fn unset(field: &str) -> CapiError {
    CapiError::NotFound(format!("the property {field} is not set"))
}

/// Refuses accelerator-only fields of a properties object whose type is set to `FPGA_DEVICE`.
fn accelerator_only(p: &PropsData, field: &str) -> CapiResult {
    if p.object_type == Some(FPGA_DEVICE) {
        Err(invalid(format!(
            "{field} is a property of accelerators, and the object type is FPGA_DEVICE"
        )))
    } else {
        Ok(())
    }
}

/// Defines a getter and a setter of one `Option<$ty>` field.
macro_rules! accessors {
    ($get:ident, $set:ident, $field:ident, $ty:ty, $name:literal, $accel_only:expr) => {
        #[doc = concat!("OPAE's `", stringify!($get), "`: the ", $name, " property.")]
        ///
        /// # Safety
        /// `out` must be NULL or valid for one write.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get(prop: fpga_properties, out: *mut $ty) -> fpga_result {
            guard(stringify!($get), || {
                non_null(out, "the output pointer")?;
                let value = with_props(prop, |p| {
                    if $accel_only {
                        accelerator_only(p, $name)?;
                    }
                    p.$field.ok_or_else(|| unset($name))
                })?;
                // SAFETY: non-NULL, valid for one write by the caller's contract.
                unsafe { write_out(out, value, "the output pointer") }
            })
        }

        #[doc = concat!("OPAE's `", stringify!($set), "`: sets the ", $name, " property.")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $set(prop: fpga_properties, value: $ty) -> fpga_result {
            guard(stringify!($set), || {
                with_props(prop, |p| {
                    if $accel_only {
                        accelerator_only(p, $name)?;
                    }
                    p.$field = Some(value);
                    Ok(())
                })
            })
        }
    };
}

accessors!(
    fpgaPropertiesGetVendorID,
    fpgaPropertiesSetVendorID,
    vendor_id,
    u16,
    "vendor id",
    false
);
accessors!(
    fpgaPropertiesGetDeviceID,
    fpgaPropertiesSetDeviceID,
    device_id,
    u16,
    "device id",
    false
);
accessors!(
    fpgaPropertiesGetSegment,
    fpgaPropertiesSetSegment,
    segment,
    u16,
    "segment",
    false
);
accessors!(
    fpgaPropertiesGetBus,
    fpgaPropertiesSetBus,
    bus,
    u8,
    "bus",
    false
);
accessors!(
    fpgaPropertiesGetDevice,
    fpgaPropertiesSetDevice,
    device,
    u8,
    "device",
    false
);
accessors!(
    fpgaPropertiesGetFunction,
    fpgaPropertiesSetFunction,
    function,
    u8,
    "function",
    false
);
accessors!(
    fpgaPropertiesGetSocketID,
    fpgaPropertiesSetSocketID,
    socket_id,
    u8,
    "socket id",
    false
);
accessors!(
    fpgaPropertiesGetNumMMIO,
    fpgaPropertiesSetNumMMIO,
    num_mmio,
    u32,
    "number of MMIO regions",
    true
);
accessors!(
    fpgaPropertiesGetNumInterrupts,
    fpgaPropertiesSetNumInterrupts,
    num_interrupts,
    u32,
    "number of interrupts",
    true
);

/// OPAE's `fpgaGetProperties`: a new properties object with the token's properties, or an
/// empty one (a filter to fill in) when `token` is NULL.
///
/// # Safety
/// `prop` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetProperties(
    token: fpga_token,
    prop: *mut fpga_properties,
) -> fpga_result {
    guard("fpgaGetProperties", || {
        non_null(prop, "prop")?;
        let data = if token.is_null() {
            PropsData::default()
        } else {
            PropsData::from_token(&token_of(token)?)?
        };
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(prop, new_properties(data), "prop") }
    })
}

/// OPAE's `fpgaUpdateProperties`: overwrites `prop` with the token's current properties
/// (this asks the plugin again).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaUpdateProperties(token: fpga_token, prop: fpga_properties) -> fpga_result {
    guard("fpgaUpdateProperties", || {
        let token = token_of(token)?;
        with_props(prop, |_| Ok(()))?;
        token.refresh()?;
        let fresh = PropsData::from_token(&token)?;
        with_props(prop, |p| {
            *p = fresh;
            Ok(())
        })
    })
}

/// OPAE's `fpgaClearProperties`: unsets every field.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaClearProperties(prop: fpga_properties) -> fpga_result {
    guard("fpgaClearProperties", || {
        with_props(prop, |p| {
            *p = PropsData::default();
            Ok(())
        })
    })
}

/// OPAE's `fpgaCloneProperties`: a new object with the same fields.
///
/// # Safety
/// `dst` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaCloneProperties(
    src: fpga_properties,
    dst: *mut fpga_properties,
) -> fpga_result {
    guard("fpgaCloneProperties", || {
        non_null(dst, "dst")?;
        let data = props_of(src)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(dst, new_properties(data), "dst") }
    })
}

/// OPAE's `fpgaDestroyProperties`: destroys `*prop` and sets it to NULL.
///
/// # Safety
/// `prop` must be NULL or valid for a read and a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaDestroyProperties(prop: *mut fpga_properties) -> fpga_result {
    guard("fpgaDestroyProperties", || {
        // SAFETY: NULL or valid for a read and a write by the caller's contract.
        unsafe { registry::destroy::<PropertiesObject>(prop, "prop") }
    })
}

/// OPAE's `fpgaPropertiesGetObjectType`.
///
/// # Safety
/// `objtype` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesGetObjectType(
    prop: fpga_properties,
    objtype: *mut fpga_objtype,
) -> fpga_result {
    guard("fpgaPropertiesGetObjectType", || {
        non_null(objtype, "objtype")?;
        let value = with_props(prop, |p| p.object_type.ok_or_else(|| unset("object type")))?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(objtype, value, "objtype") }
    })
}

/// OPAE's `fpgaPropertiesSetObjectType`: `FPGA_DEVICE` or `FPGA_ACCELERATOR`.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaPropertiesSetObjectType(
    prop: fpga_properties,
    objtype: fpga_objtype,
) -> fpga_result {
    guard("fpgaPropertiesSetObjectType", || {
        if objtype != FPGA_DEVICE && objtype != FPGA_ACCELERATOR {
            return Err(invalid(format!("{objtype} is not an fpga_objtype")));
        }
        with_props(prop, |p| {
            p.object_type = Some(objtype);
            Ok(())
        })
    })
}

/// OPAE's `fpgaPropertiesGetGUID`.
///
/// # Safety
/// `guid` must be NULL or valid for a write of 16 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesGetGUID(
    prop: fpga_properties,
    guid: *mut fpga_guid,
) -> fpga_result {
    guard("fpgaPropertiesGetGUID", || {
        non_null(guid, "guid")?;
        let value = with_props(prop, |p| p.guid.ok_or_else(|| unset("GUID")))?;
        // SAFETY: non-NULL, valid for 16 bytes by the caller's contract.
        unsafe { write_out(guid, value.to_bytes(), "guid") }
    })
}

/// OPAE's `fpgaPropertiesSetGUID` (`fpga_guid` decays to a pointer to its 16 bytes).
///
/// # Safety
/// `guid` must be NULL or valid for a read of 16 bytes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesSetGUID(
    prop: fpga_properties,
    guid: *const u8,
) -> fpga_result {
    guard("fpgaPropertiesSetGUID", || {
        non_null(guid, "guid")?;
        // SAFETY: non-NULL, valid for 16 bytes by the caller's contract.
        let bytes = unsafe { guid.cast::<[u8; 16]>().read_unaligned() };
        with_props(prop, |p| {
            p.guid = Some(Guid::from_bytes(bytes));
            Ok(())
        })
    })
}

/// OPAE's `fpgaPropertiesGetAcceleratorState` (accelerators only).
///
/// # Safety
/// `state` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesGetAcceleratorState(
    prop: fpga_properties,
    state: *mut fpga_accelerator_state,
) -> fpga_result {
    guard("fpgaPropertiesGetAcceleratorState", || {
        non_null(state, "state")?;
        let value = with_props(prop, |p| {
            accelerator_only(p, "accelerator state")?;
            p.accelerator_state
                .ok_or_else(|| unset("accelerator state"))
        })?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(state, value, "state") }
    })
}

/// OPAE's `fpgaPropertiesSetAcceleratorState` (accelerators only).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaPropertiesSetAcceleratorState(
    prop: fpga_properties,
    state: fpga_accelerator_state,
) -> fpga_result {
    guard("fpgaPropertiesSetAcceleratorState", || {
        if state != FPGA_ACCELERATOR_ASSIGNED && state != FPGA_ACCELERATOR_UNASSIGNED {
            return Err(invalid(format!("{state} is not an fpga_accelerator_state")));
        }
        with_props(prop, |p| {
            accelerator_only(p, "accelerator state")?;
            p.accelerator_state = Some(state);
            Ok(())
        })
    })
}

/// OPAE's `fpgaPropertiesGetParent`: a new token for the parent set by
/// `fpgaPropertiesSetParent` (destroy it with `fpgaDestroyToken`). `FPGA_NOT_FOUND` when no
/// parent is set; `FPGA_NOT_SUPPORTED` for a parent reported by a plugin.
///
/// # Safety
/// `parent` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesGetParent(
    prop: fpga_properties,
    parent: *mut fpga_token,
) -> fpga_result {
    guard("fpgaPropertiesGetParent", || {
        non_null(parent, "parent")?;
        let token = with_props(prop, |p| match (&p.parent, p.parent_reported) {
            (Some(token), _) => Ok(token.clone()),
            (None, true) => Err(CapiError::NotFound(
                "the parent could not be resolved (its plugin no longer describes it)".into(),
            )),
            (None, false) => Err(unset("parent")),
        })?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(parent, new_token(token), "parent") }
    })
}

/// OPAE's `fpgaPropertiesSetParent`.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaPropertiesSetParent(
    prop: fpga_properties,
    parent: fpga_token,
) -> fpga_result {
    guard("fpgaPropertiesSetParent", || {
        let token = token_of(parent)?;
        with_props(prop, |p| {
            p.parent = Some(token);
            Ok(())
        })
    })
}

/// OPAE's `fpgaPropertiesGetHostname` (the `host` property of the OPAE plugin design):
/// `localhost` for devices of this machine.
///
/// # Safety
/// `hostname` must be NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesGetHostname(
    prop: fpga_properties,
    hostname: *mut c_char,
    len: usize,
) -> fpga_result {
    guard("fpgaPropertiesGetHostname", || {
        non_null(hostname, "hostname")?;
        let value = with_props(prop, |p| p.host.clone().ok_or_else(|| unset("host")))?;
        // SAFETY: valid for `len` bytes by the caller's contract.
        unsafe { copy_str(hostname, len, &value, "hostname") }
    })
}

/// OPAE's `fpgaPropertiesSetHostname`: a host name, or `localhost`, `^localhost` or `*`.
///
/// # Safety
/// `hostname` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesSetHostname(
    prop: fpga_properties,
    hostname: *const c_char,
) -> fpga_result {
    guard("fpgaPropertiesSetHostname", || {
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let value = unsafe { c_str(hostname, "hostname") }?.to_string();
        with_props(prop, |p| {
            p.host = Some(value);
            Ok(())
        })
    })
}

/// The `device type` property of the OPAE plugin design, as an enum:
/// `FPGA_DEVICE_TYPE_FPGA` for `fpga`, `FPGA_DEVICE_TYPE_OTHER` otherwise.
///
/// # Safety
/// `device_type` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaPropertiesGetDeviceType(
    prop: fpga_properties,
    device_type: *mut fpga_device_type,
) -> fpga_result {
    guard("fpgaPropertiesGetDeviceType", || {
        non_null(device_type, "device_type")?;
        let kind = with_props(prop, |p| match p.device_type.as_deref() {
            Some("fpga") => Ok(FPGA_DEVICE_TYPE_FPGA),
            Some(_) => Ok(FPGA_DEVICE_TYPE_OTHER),
            None => Err(unset("device type")),
        })?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(device_type, kind, "device_type") }
    })
}

/// Sets the `device type` property from the enum (only `FPGA_DEVICE_TYPE_FPGA` names a
/// type; use `accelhostPropertiesSetDeviceTypeName` for others).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaPropertiesSetDeviceType(
    prop: fpga_properties,
    device_type: fpga_device_type,
) -> fpga_result {
    guard("fpgaPropertiesSetDeviceType", || {
        if device_type != FPGA_DEVICE_TYPE_FPGA {
            return Err(invalid(format!(
                "{device_type} names no device type: use accelhostPropertiesSetDeviceTypeName"
            )));
        }
        with_props(prop, |p| {
            p.device_type = Some("fpga".into());
            Ok(())
        })
    })
}

/// accelhost extension: the `device type` property as the plugin names it (`fpga`, ...).
///
/// # Safety
/// `name` must be NULL or valid for `len` bytes of writes.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostPropertiesGetDeviceTypeName(
    prop: fpga_properties,
    name: *mut c_char,
    len: usize,
) -> fpga_result {
    guard("accelhostPropertiesGetDeviceTypeName", || {
        non_null(name, "name")?;
        let value = with_props(prop, |p| {
            p.device_type.clone().ok_or_else(|| unset("device type"))
        })?;
        // SAFETY: valid for `len` bytes by the caller's contract.
        unsafe { copy_str(name, len, &value, "name") }
    })
}

/// accelhost extension: sets the `device type` property by name.
///
/// # Safety
/// `name` must be NULL or a NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn accelhostPropertiesSetDeviceTypeName(
    prop: fpga_properties,
    name: *const c_char,
) -> fpga_result {
    guard("accelhostPropertiesSetDeviceTypeName", || {
        // SAFETY: NULL or NUL-terminated by the caller's contract.
        let value = unsafe { c_str(name, "name") }?.to_string();
        with_props(prop, |p| {
            p.device_type = Some(value);
            Ok(())
        })
    })
}

/// OPAE's interface of a device: DFL for a real DFL port or FME, simulated DFL for an
/// emulated one; accelhost's values for the interfaces OPAE has none for, since OPAE
/// programs read every device's interface and take a missing one for a failure.
fn interface_of(p: &Properties) -> Option<fpga_interface> {
    let extra = |key: &str| {
        p.extras
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    let emulated = extra("emulated") == Some("true");
    Some(match (extra("interface"), emulated) {
        (Some("dfl"), true) => FPGA_IFC_SIM_DFL,
        (Some("dfl"), false) => FPGA_IFC_DFL,
        (Some("cxl"), true) => ACCELHOST_IFC_SIM_CXL,
        (Some("cxl"), false) => ACCELHOST_IFC_CXL,
        (Some("xocl"), true) => ACCELHOST_IFC_SIM_XOCL,
        (Some("xocl"), false) => ACCELHOST_IFC_XOCL,
        _ => ACCELHOST_IFC_OTHER,
    })
}

/// A device's object id: the 64-bit FNV-1a hash of its `<plugin>/<name>` id, the same in
/// every process that loads the same plugin list.
pub(crate) fn object_id(token: &Token) -> u64 {
    token
        .id()
        .bytes()
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
        })
}

/// Refuses device-only fields of a properties object whose type is set to `FPGA_ACCELERATOR`.
fn device_only(p: &PropsData, field: &str) -> CapiResult {
    if p.object_type == Some(FPGA_ACCELERATOR) {
        Err(invalid(format!(
            "{field} is a property of devices, and the object type is FPGA_ACCELERATOR"
        )))
    } else {
        Ok(())
    }
}

/// Defines a getter and a setter of one `Option<$ty>` field of devices (FPGA_DEVICE) only.
macro_rules! device_accessors {
    ($get:ident, $set:ident, $field:ident, $ty:ty, $name:literal) => {
        #[doc = concat!("OPAE's `", stringify!($get), "`: the ", $name, " property (devices only).")]
        ///
        /// # Safety
        /// `out` must be NULL or valid for one write.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get(prop: fpga_properties, out: *mut $ty) -> fpga_result {
            guard(stringify!($get), || {
                non_null(out, "the output pointer")?;
                let value = with_props(prop, |p| {
                    device_only(p, $name)?;
                    p.$field.ok_or_else(|| unset($name))
                })?;
                // SAFETY: non-NULL, valid for one write by the caller's contract.
                unsafe { write_out(out, value, "the output pointer") }
            })
        }

        #[doc = concat!("OPAE's `", stringify!($set), "`: sets the ", $name, " property (devices only).")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $set(prop: fpga_properties, value: $ty) -> fpga_result {
            guard(stringify!($set), || {
                with_props(prop, |p| {
                    device_only(p, $name)?;
                    p.$field = Some(value);
                    Ok(())
                })
            })
        }
    };
}

device_accessors!(
    fpgaPropertiesGetNumSlots,
    fpgaPropertiesSetNumSlots,
    num_slots,
    u32,
    "number of slots"
);
device_accessors!(
    fpgaPropertiesGetBBSID,
    fpgaPropertiesSetBBSID,
    bbs_id,
    u64,
    "BBS id"
);
device_accessors!(
    fpgaPropertiesGetBBSVersion,
    fpgaPropertiesSetBBSVersion,
    bbs_version,
    fpga_version,
    "BBS version"
);
accessors!(
    fpgaPropertiesGetObjectID,
    fpgaPropertiesSetObjectID,
    object_id,
    u64,
    "object id",
    false
);
accessors!(
    fpgaPropertiesGetNumErrors,
    fpgaPropertiesSetNumErrors,
    num_errors,
    u32,
    "number of errors",
    false
);
accessors!(
    fpgaPropertiesGetInterface,
    fpgaPropertiesSetInterface,
    interface,
    fpga_interface,
    "interface",
    false
);
accessors!(
    fpgaPropertiesGetSubsystemVendorID,
    fpgaPropertiesSetSubsystemVendorID,
    subsystem_vendor_id,
    u16,
    "subsystem vendor id",
    false
);
accessors!(
    fpgaPropertiesGetSubsystemDeviceID,
    fpgaPropertiesSetSubsystemDeviceID,
    subsystem_device_id,
    u16,
    "subsystem device id",
    false
);

/// Defines a getter and a setter that OPAE documents as "not currently supported" (its own
/// library answers them for no device): they check their arguments, then answer
/// `FPGA_NOT_SUPPORTED`.
macro_rules! unsupported_accessors {
    ($get:ident, $set:ident, $ty:ty, $set_ty:ty, $name:literal) => {
        #[doc = concat!("OPAE's `", stringify!($get), "`: not supported (OPAE documents the ", $name, " as unsupported).")]
        ///
        /// # Safety
        /// `out` must be NULL or valid for one write.
        #[unsafe(no_mangle)]
        pub unsafe extern "C" fn $get(prop: fpga_properties, out: *mut $ty) -> fpga_result {
            guard(stringify!($get), || {
                non_null(out, "the output pointer")?;
                with_props(prop, |_| Ok(()))?;
                Err(CapiError::NotSupported(concat!("the ", $name, " is not a property accelhost (or OPAE) reports").into()))
            })
        }

        #[doc = concat!("OPAE's `", stringify!($set), "`: not supported (OPAE documents the ", $name, " as unsupported).")]
        #[unsafe(no_mangle)]
        pub extern "C" fn $set(prop: fpga_properties, _value: $set_ty) -> fpga_result {
            guard(stringify!($set), || {
                with_props(prop, |_| Ok(()))?;
                Err(CapiError::NotSupported(concat!("the ", $name, " is not a property accelhost (or OPAE) reports").into()))
            })
        }
    };
}

unsupported_accessors!(
    fpgaPropertiesGetModel,
    fpgaPropertiesSetModel,
    c_char,
    *mut c_char,
    "model"
);
unsupported_accessors!(
    fpgaPropertiesGetLocalMemorySize,
    fpgaPropertiesSetLocalMemorySize,
    u64,
    u64,
    "local memory size"
);
unsupported_accessors!(
    fpgaPropertiesGetCapabilities,
    fpgaPropertiesSetCapabilities,
    u64,
    u64,
    "capabilities"
);
