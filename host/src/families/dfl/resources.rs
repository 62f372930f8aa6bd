//! The resources the `dfl` import hands plugins, and their release.

use wasmtime::component::ResourceTable;

use super::DflPort;
use crate::family::ReleaseStage;
use crate::state::DeviceResource;

/// An open DFL port; dropping it closes the port.
pub type PortResource = DeviceResource<Box<dyn DflPort>>;

/// Closes the ports an ended instance holds (which removes their DMA mappings).
pub(crate) fn release(table: &mut ResourceTable, stage: ReleaseStage, _why: &str) {
    if stage == ReleaseStage::Detach {
        for (_, entry) in table.iter_mut() {
            if let Some(port) = entry.downcast_mut::<PortResource>() {
                port.release();
            }
        }
    }
}
