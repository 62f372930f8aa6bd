//! `fpga_handle`: open, close, reset, reconfigure. A handle keeps what was obtained through
//! it (mapped MMIO regions, prepared buffers), so `fpgaClose` releases them all. A device
//! object's handle (an FME's, as OPAE programs open it for sensors, error registers and
//! error events) opens nothing in its plugin: it reaches the device's attributes, and a
//! reconfiguration through it goes to the accelerator in the slot.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use accelhost::{DmaBuffer, Filter, Handle, MmioRegion, ObjectType, OpenMode, Token};

use crate::ffi::{guard, lock, non_null, write_out};
use crate::properties::{PropsData, new_properties};
use crate::registry::{self, Object};
use crate::result::{CapiError, CapiResult, invalid, not_supported};
use crate::state::host;
use crate::token::token_of;
use crate::types::*;

/// What C's `fpga_handle` stands for.
pub(crate) struct HandleObject {
    /// The device's token.
    pub(crate) token: Token,
    /// The open accelerator; none for a device object, whose plugin opens nothing.
    opened: Option<Handle>,
    /// Mapped regions by index, and prepared buffers by workspace id.
    pub(crate) state: Mutex<HandleState>,
}

/// The objects obtained through one handle.
#[derive(Default)]
pub(crate) struct HandleState {
    /// Mapped MMIO regions, by region index (shared, so an access clones one `Arc`).
    pub(crate) mmio: HashMap<u32, Arc<MmioRegion>>,
    /// Prepared buffers, by workspace id.
    pub(crate) buffers: HashMap<u64, DmaBuffer>,
}

impl Object for HandleObject {
    const KIND: &'static str = "handle";
    /// After the events and offload objects made through handles, before the tokens.
    const TEARDOWN_RANK: u8 = 2;
}

/// The handle object behind `handle`.
pub(crate) fn handle_of(handle: fpga_handle) -> CapiResult<Arc<HandleObject>> {
    registry::get(handle)
}

/// Why a device object's handle has no MMIO, buffers, reset or offload objects.
const DEVICE_OBJECT: &str = "the handle is a device object's (such as an FME's): it reaches the device's attributes (sensors, error registers, sysobjects), its error events and reconfiguration of its slots; MMIO, buffers, reset and offload objects are an accelerator's: open the accelerator's token";

impl HandleObject {
    /// The open accelerator, or `FPGA_NOT_SUPPORTED` for `call` on a device object's handle.
    pub(crate) fn accelerator(&self, call: &str) -> CapiResult<&Handle> {
        self.opened
            .as_ref()
            .ok_or_else(|| not_supported(call, DEVICE_OBJECT))
    }

    /// Whether the handle is a device object's.
    pub(crate) fn is_device_object(&self) -> bool {
        self.opened.is_none()
    }

    /// The MMIO region `index`, mapped now if it was not yet (as OPAE maps on first access).
    pub(crate) fn region(&self, index: u32) -> CapiResult<Arc<MmioRegion>> {
        if let Some(region) = lock(&self.state).mmio.get(&index) {
            return Ok(region.clone());
        }
        let region = Arc::new(self.accelerator("MMIO")?.map_mmio(index)?);
        Ok(lock(&self.state)
            .mmio
            .entry(index)
            .or_insert(region)
            .clone())
    }

    /// Releases everything obtained through the handle, then closes it.
    fn close(&self) -> CapiResult {
        let state = std::mem::take(&mut *lock(&self.state));
        for (_, buffer) in state.buffers {
            // Failing to release a buffer of a handle being closed is not the caller's
            // concern: closing releases it anyway.
            let _ = buffer.release();
        }
        drop(state.mmio);
        if let Some(opened) = &self.opened {
            opened.clone().close()?;
        }
        Ok(())
    }
}

/// OPAE's `fpgaOpen`: opens the accelerator behind `token`, exclusively unless `flags` has
/// `FPGA_OPEN_SHARED`; a device object's token gives a handle to its attributes, opening
/// nothing in the plugin (so never exclusively). `FPGA_OPEN_HAS_PARENT_AFU` (opening a child
/// AFU) is not supported: accelhost devices have no child AFUs.
///
/// # Safety
/// `handle` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaOpen(
    token: fpga_token,
    handle: *mut fpga_handle,
    flags: i32,
) -> fpga_result {
    guard("fpgaOpen", || {
        non_null(handle, "handle")?;
        if flags & !(FPGA_OPEN_SHARED | FPGA_OPEN_HAS_PARENT_AFU) != 0 {
            return Err(invalid(format!("unknown open flags {flags:#x}")));
        }
        let token = token_of(token)?;
        if flags & FPGA_OPEN_HAS_PARENT_AFU != 0 {
            return Err(not_supported("fpgaOpen", NO_CHILD_AFUS));
        }
        let mode = if flags & FPGA_OPEN_SHARED != 0 {
            OpenMode::Shared
        } else {
            OpenMode::Exclusive
        };
        let opened = match token.properties().object_type {
            ObjectType::Device => None,
            _ => Some(host()?.open(&token, mode)?),
        };
        let object = registry::insert(HandleObject {
            token,
            opened,
            state: Mutex::new(HandleState::default()),
        });
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(handle, object, "handle") }
    })
}

/// Why child-AFU calls have nothing to do.
const NO_CHILD_AFUS: &str = "FPGA_OPEN_HAS_PARENT_AFU: accelhost devices have no child AFUs (each accelerator is opened by its own token)";

/// OPAE's `fpgaGetChildren`: the child AFU handles of `handle`. accelhost accelerators have
/// none, so `*num_children` is always 0 and `children` is left untouched.
///
/// # Safety
/// `num_children` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetChildren(
    handle: fpga_handle,
    _max_children: u32,
    _children: *mut fpga_handle,
    num_children: *mut u32,
) -> fpga_result {
    guard("fpgaGetChildren", || {
        handle_of(handle)?;
        non_null(num_children, "num_children")?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(num_children, 0, "num_children") }
    })
}

/// OPAE's `fpgaClose`: releases the handle's buffers and MMIO mappings and closes it.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaClose(handle: fpga_handle) -> fpga_result {
    guard("fpgaClose", || {
        registry::remove::<HandleObject>(handle)?.close()
    })
}

/// OPAE's `fpgaReset`: resets the accelerator.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaReset(handle: fpga_handle) -> fpga_result {
    guard("fpgaReset", || {
        Ok(handle_of(handle)?.accelerator("fpgaReset")?.reset()?)
    })
}

/// OPAE's `fpgaGetPropertiesFromHandle`: a new properties object for the open device.
///
/// # Safety
/// `prop` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetPropertiesFromHandle(
    handle: fpga_handle,
    prop: *mut fpga_properties,
) -> fpga_result {
    guard("fpgaGetPropertiesFromHandle", || {
        non_null(prop, "prop")?;
        let data = PropsData::from_token(&handle_of(handle)?.token)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(prop, new_properties(data), "prop") }
    })
}

/// OPAE's `fpgaReconfigureSlot`: loads `bitstream` (an image the plugin understands, such
/// as an xclbin for XRT cards) into `slot`. `FPGA_RECONF_FORCE` and
/// `FPGA_RECONF_SKIP_USRCLK` are accepted; the plugin decides about a slot in use. Through a
/// device object's handle (an FME's, as OPAE's `fpgaconf` does it), slot `n` is the `n`th
/// accelerator the device is the parent of, opened exclusively for the load.
///
/// # Safety
/// `bitstream` must be NULL or valid for `bitstream_len` reads.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaReconfigureSlot(
    fpga: fpga_handle,
    slot: u32,
    bitstream: *const u8,
    bitstream_len: usize,
    flags: i32,
) -> fpga_result {
    guard("fpgaReconfigureSlot", || {
        non_null(bitstream, "bitstream")?;
        if bitstream_len == 0 {
            return Err(invalid("bitstream_len is 0"));
        }
        if flags & !(FPGA_RECONF_FORCE | FPGA_RECONF_SKIP_USRCLK) != 0 {
            return Err(invalid(format!("unknown reconfigure flags {flags:#x}")));
        }
        // SAFETY: non-NULL, valid for `bitstream_len` reads by the caller's contract.
        let image = unsafe { std::slice::from_raw_parts(bitstream, bitstream_len) };
        let h = handle_of(fpga)?;
        let loaded = match &h.opened {
            Some(opened) => opened.reconfigure(slot, image),
            None => {
                let accelerator = slot_accelerator(&h.token, slot)?;
                let opened = host()?.open(&accelerator, OpenMode::Exclusive)?;
                let loaded = opened.reconfigure(0, image);
                let closed = opened.close();
                loaded.and(closed)
            }
        };
        match loaded {
            Ok(()) => Ok(()),
            // The device refused or failed the image: a reconfiguration error in OPAE's terms.
            Err(err) if err.code() == accelhost::ErrorCode::DeviceError => {
                Err(CapiError::Reconfigure(err))
            }
            Err(err) => Err(err.into()),
        }
    })
}

/// The accelerator in `slot` of the device object `device`: the `slot`th child it lists.
fn slot_accelerator(device: &Token, slot: u32) -> CapiResult<Token> {
    let children: Vec<Token> = host()?
        .enumerate(&[Filter::new().object_type(ObjectType::Accelerator)])
        .tokens
        .into_iter()
        .filter(|child| device.is_parent_of(child))
        .collect();
    let count = children.len();
    children.into_iter().nth(slot as usize).ok_or_else(|| {
        invalid(format!(
            "{} has {count} slot(s); there is no slot {slot}",
            device.id()
        ))
    })
}

/// Why the SR-IOV port assignment calls are not supported.
const PORT_ASSIGNMENT: &str = "assigning a port to a host interface (a virtual function) is managed outside accelhost: the plugin interface has no call for it, and a plugin sees only the ports its grants name";

/// Checks the arguments of a port assignment call as OPAE does, then refuses it.
fn assignment_refused(
    call: &str,
    fpga: fpga_handle,
    accelerator: Option<fpga_token>,
) -> CapiResult {
    handle_of(fpga)?;
    if let Some(accelerator) = accelerator {
        token_of(accelerator)?;
    }
    Err(not_supported(call, PORT_ASSIGNMENT))
}

/// OPAE's `fpgaAssignPortToInterface`: not supported (see `PORT_ASSIGNMENT`).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaAssignPortToInterface(
    fpga: fpga_handle,
    _interface_num: u32,
    _slot_num: u32,
    _flags: i32,
) -> fpga_result {
    guard("fpgaAssignPortToInterface", || {
        assignment_refused("fpgaAssignPortToInterface", fpga, None)
    })
}

/// OPAE's `fpgaAssignToInterface`: not supported (see `PORT_ASSIGNMENT`).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaAssignToInterface(
    fpga: fpga_handle,
    accelerator: fpga_token,
    _host_interface: u32,
    _flags: i32,
) -> fpga_result {
    guard("fpgaAssignToInterface", || {
        assignment_refused("fpgaAssignToInterface", fpga, Some(accelerator))
    })
}

/// OPAE's `fpgaReleaseFromInterface`: not supported (see `PORT_ASSIGNMENT`).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaReleaseFromInterface(
    fpga: fpga_handle,
    accelerator: fpga_token,
) -> fpga_result {
    guard("fpgaReleaseFromInterface", || {
        assignment_refused("fpgaReleaseFromInterface", fpga, Some(accelerator))
    })
}
