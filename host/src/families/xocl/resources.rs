//! The resources the `xocl` import hands plugins, and their release.

use std::sync::Arc;

use wasmtime::component::ResourceTable;

use super::{BoInfo, XoclClient};
use crate::devices::Charge;
use crate::family::ReleaseStage;
use crate::state::DeviceResource;

/// An open xocl device (a KDS client), shared with the BOs created through it.
pub type XoclDeviceResource = DeviceResource<Arc<dyn XoclClient>>;

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

/// What an ended instance holds of xocl devices: its queued commands are cancelled first,
/// its BOs freed once nothing runs on them, its devices closed last.
pub(crate) fn release(table: &mut ResourceTable, stage: ReleaseStage, why: &str) {
    for (_, entry) in table.iter_mut() {
        match stage {
            ReleaseStage::CancelWork => {
                if let Some(client) = entry
                    .downcast_mut::<XoclDeviceResource>()
                    .and_then(|d| d.held())
                {
                    client.cancel_pending(why);
                }
            }
            ReleaseStage::FreeMemory => {
                if let Some(bo) = entry.downcast_mut::<BoResource>() {
                    bo.free();
                }
            }
            ReleaseStage::Close => {
                if let Some(device) = entry.downcast_mut::<XoclDeviceResource>() {
                    device.release();
                }
            }
            ReleaseStage::Detach => {}
        }
    }
}
