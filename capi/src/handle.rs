//! `fpga_handle`: open, close, reset, reconfigure. A handle keeps what was obtained through
//! it (mapped MMIO regions, prepared buffers), so `fpgaClose` releases them all.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use accelhost::{DmaBuffer, Handle, MmioRegion, OpenMode};

use crate::ffi::{guard, lock, non_null, write_out};
use crate::properties::{PropsData, new_properties};
use crate::registry::{self, Object};
use crate::result::{CapiError, CapiResult, invalid, not_supported};
use crate::state::host;
use crate::token::token_of;
use crate::types::*;

/// What C's `fpga_handle` stands for.
pub(crate) struct HandleObject {
    /// The open accelerator.
    pub(crate) handle: Handle,
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
    const TAG: usize = 3;
    /// After the events and offload objects made through handles, before the tokens.
    const TEARDOWN_RANK: u8 = 2;
}

/// The handle object behind `handle`.
pub(crate) fn handle_of(handle: fpga_handle) -> CapiResult<Arc<HandleObject>> {
    registry::get(handle)
}

impl HandleObject {
    /// The MMIO region `index`, mapped now if it was not yet (as OPAE maps on first access).
    pub(crate) fn region(&self, index: u32) -> CapiResult<Arc<MmioRegion>> {
        if let Some(region) = lock(&self.state).mmio.get(&index) {
            return Ok(region.clone());
        }
        let region = Arc::new(self.handle.map_mmio(index)?);
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
        self.handle.clone().close()?;
        Ok(())
    }
}

/// OPAE's `fpgaOpen`: opens the accelerator behind `token`, exclusively unless `flags` has
/// `FPGA_OPEN_SHARED`. `FPGA_OPEN_HAS_PARENT_AFU` (opening a child AFU) is not supported:
/// accelhost devices have no child AFUs.
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
        let opened = host()?.open(&token, mode)?;
        let object = registry::insert(HandleObject {
            handle: opened,
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
    guard("fpgaReset", || Ok(handle_of(handle)?.handle.reset()?))
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
        let data = PropsData::from_token(handle_of(handle)?.handle.token())?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(prop, new_properties(data), "prop") }
    })
}

/// OPAE's `fpgaReconfigureSlot`: loads `bitstream` (an image the plugin understands, such
/// as an xclbin for XRT cards) into `slot`. `FPGA_RECONF_FORCE` and
/// `FPGA_RECONF_SKIP_USRCLK` are accepted; the plugin decides about a slot in use.
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
        match handle_of(fpga)?.handle.reconfigure(slot, image) {
            Ok(()) => Ok(()),
            // The device refused or failed the image: a reconfiguration error in OPAE's terms.
            Err(err) if err.code() == accelhost::ErrorCode::DeviceError => {
                Err(CapiError::Reconfigure(err))
            }
            Err(err) => Err(err.into()),
        }
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
