//! Host bindings generated from `wit/` (the latest `accel:plugin` version). Nothing
//! hand-written lives here: the imports are implemented in `crate::imports` (and each device
//! family's in its folder) on the store's state (`crate::state`), every call into a plugin
//! goes through `crate::runtime::plugin`, and the host's own types convert to their WIT twins
//! in `crate::convert`.
//! The resources of the device families and of `remote` keep the types generated here: their
//! host objects are defined above this module, in the folders that implement them, and
//! `crate::state::host_handle` turns a plugin's handle into the table's.
//! Every import is traced (`tracing`, level TRACE, with its arguments and result), so none
//! can be left out.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    imports: { default: trappable | tracing },
    trappable_error_type: {
        "accel:plugin/types.error" => crate::state::ImportError,
    },
    with: {
        "accel:plugin/mmio.region": crate::state::RegionResource,
        "accel:plugin/dma.buffer": crate::state::BufferResource,
        "accel:plugin/image.image": crate::state::ImageResource,
        "accel:plugin/events.event": crate::state::EventResource,
    },
});
