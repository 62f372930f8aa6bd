//! Host bindings generated from `wit/` (the latest `accel:plugin` version). Nothing
//! hand-written lives here: the imports are implemented in `crate::imports` (and each device
//! family's in its folder) on the store's state (`crate::state`), every call into a plugin
//! goes through `crate::runtime::plugin`, and the host's own types convert to their WIT twins
//! in `crate::convert`.
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
        "accel:plugin/dfl.port": crate::families::dfl::resources::PortResource,
        "accel:plugin/xocl.device": crate::families::xocl::resources::XoclDeviceResource,
        "accel:plugin/xocl.bo": crate::families::xocl::resources::BoResource,
        "accel:plugin/cxl.context": crate::families::cxl::resources::CxlContextResource,
        "accel:plugin/remote.node": crate::remote::NodeResource,
    },
});
