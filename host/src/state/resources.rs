//! The host objects behind a plugin's resource handles, each charged to its host budget.

use std::sync::Arc;

use super::{ImportError, guest_error};
use crate::devices::cxl::CxlContext;
use crate::devices::dfl::DflPort;
use crate::devices::xocl::{BoInfo, XoclClient};
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

/// An open xocl device (a KDS client), shared with the BOs created through it. `None` once
/// the instance ended.
pub struct XoclDeviceResource {
    pub(crate) client: Option<Arc<dyn XoclClient>>,
    pub(crate) path: String,
    pub(crate) _charge: Charge,
}

/// A buffer object; dropping it frees the BO (GEM_CLOSE).
pub struct BoResource {
    pub(crate) client: Arc<dyn XoclClient>,
    pub(crate) info: BoInfo,
    pub(crate) freed: bool,
    pub(crate) _charge: Charge,
}

impl BoResource {
    pub(crate) fn free(&mut self) {
        if !std::mem::replace(&mut self.freed, true) {
            let _ = self.client.free_bo(self.info.handle);
        }
    }
}

impl Drop for BoResource {
    fn drop(&mut self) {
        self.free();
    }
}

/// An open cxl context; dropping it detaches the context and frees its process element.
/// `None` once the instance ended.
pub struct CxlContextResource {
    pub(crate) context: Option<Box<dyn CxlContext>>,
    /// The device node, such as `emu:capi0.0s` or `/dev/cxl/afu0.0s`.
    pub(crate) node: String,
    pub(crate) _charge: Charge,
}

/// An open DFL port; dropping it closes the port. `None` once the instance ended.
pub struct PortResource {
    pub(crate) port: Option<Box<dyn DflPort>>,
    pub(crate) path: String,
    pub(crate) _charge: Charge,
}

/// The refusal for a device resource used after its instance released it.
fn released(what: &str, device: &str) -> ImportError {
    guest_error(
        ErrorCode::NotFound,
        format!("the {what} of {device} was released"),
    )
}

impl PortResource {
    pub(crate) fn device(&self) -> Result<&dyn DflPort, ImportError> {
        self.port
            .as_deref()
            .ok_or_else(|| released("port", &self.path))
    }
}

impl CxlContextResource {
    pub(crate) fn device(&self) -> Result<&dyn CxlContext, ImportError> {
        self.context
            .as_deref()
            .ok_or_else(|| released("context", &self.node))
    }
}

impl XoclDeviceResource {
    pub(crate) fn device(&self) -> Result<&Arc<dyn XoclClient>, ImportError> {
        self.client
            .as_ref()
            .ok_or_else(|| released("device", &self.path))
    }

    pub(crate) fn cancel_pending(&self, why: &str) {
        if let Some(client) = &self.client {
            client.cancel_pending(why);
        }
    }
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
