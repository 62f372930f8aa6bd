//! The resources the `cxl` import hands plugins, and their release.

use wasmtime::component::ResourceTable;

use super::CxlContext;
use crate::family::ReleaseStage;
use crate::state::DeviceResource;

/// An open cxl context, named by its device node (such as `emu:capi0.0s` or
/// `/dev/cxl/afu0.0s`); dropping it detaches the context and frees its process element.
pub type CxlContextResource = DeviceResource<Box<dyn CxlContext>>;

/// Detaches the contexts an ended instance holds (which ends their DMA access).
pub(crate) fn release(table: &mut ResourceTable, stage: ReleaseStage, _why: &str) {
    if stage == ReleaseStage::Detach {
        for (_, entry) in table.iter_mut() {
            if let Some(context) = entry.downcast_mut::<CxlContextResource>() {
                context.release();
            }
        }
    }
}
