//! The host objects behind a plugin's resource handles, each charged to its host budget.

use std::sync::Arc;

use wasmtime::component::Resource;

use super::{ImportError, guest_error};
use crate::devices::{Charge, CheckedMmio, Completion, DmaMemory};
use crate::error::ErrorCode;

/// A mapped MMIO region handed to a plugin.
pub struct RegionResource {
    pub(crate) mmio: CheckedMmio,
    pub(crate) device: String,
    pub(crate) _charge: Charge,
}

/// DMA memory handed to a plugin.
pub struct BufferResource {
    pub(crate) memory: Arc<DmaMemory>,
    pub(crate) _charge: Charge,
}

/// An image the host holds for the duration of a call.
pub struct ImageResource {
    pub(crate) bytes: Arc<[u8]>,
}

/// A completion object.
pub struct EventResource {
    pub(crate) completion: Arc<Completion>,
    pub(crate) _charge: Charge,
}

/// A device object a plugin holds through a resource (an open port, context or device), until
/// the resource is dropped or its instance ends; then the object is released and later uses
/// are refused.
pub struct DeviceResource<D> {
    device: Option<D>,
    /// The device's name, such as `emu:dfl0` or `/dev/dfl-port.0`.
    name: String,
    /// What it is, for messages: "port", "context", "device".
    what: &'static str,
    _charge: Charge,
}

impl<D> DeviceResource<D> {
    /// `device` held by a plugin, charged to it.
    pub(crate) fn new(device: D, name: String, what: &'static str, charge: Charge) -> Self {
        DeviceResource {
            device: Some(device),
            name,
            what,
            _charge: charge,
        }
    }

    /// The device object, refused once its instance released it.
    pub(crate) fn device(&self) -> Result<&D, ImportError> {
        self.device.as_ref().ok_or_else(|| {
            guest_error(
                ErrorCode::NotFound,
                format!("the {} of {} was released", self.what, self.name),
            )
        })
    }

    /// The device's name.
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The device object while its instance holds it.
    pub(crate) fn held(&self) -> Option<&D> {
        self.device.as_ref()
    }

    /// Releases the device object; later uses are refused.
    pub(crate) fn release(&mut self) -> Option<D> {
        self.device.take()
    }
}

/// The table's handle to the host object behind a plugin's handle `handle`, for the
/// resources the bindings name by a type of their own: the device families' and the remote
/// import's, whose host objects are defined above the bindings. The table checks the object's
/// type on every use, so a handle of another kind is refused, never mistaken.
pub(crate) fn host_handle<T: 'static, G: 'static>(handle: &Resource<G>) -> Resource<T> {
    if handle.owned() {
        Resource::new_own(handle.rep())
    } else {
        Resource::new_borrow(handle.rep())
    }
}

/// The plugin's handle to the host object the table handed back as `handle`: the reverse of
/// [`host_handle`].
pub(crate) fn guest_handle<G: 'static, T: 'static>(handle: Resource<T>) -> Resource<G> {
    host_handle(&handle)
}

impl std::fmt::Debug for RegionResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "region of {} ({:#x} bytes)",
            self.device,
            self.mmio.size()
        )
    }
}
