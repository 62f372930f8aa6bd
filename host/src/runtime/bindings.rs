//! Host bindings generated from `wit/`. Nothing hand-written lives here: the imports are
//! implemented in `crate::imports`, and the calls into plugins are made by
//! `crate::runtime::instance`.

wasmtime::component::bindgen!({
    path: "../wit",
    world: "plugin",
    imports: { default: trappable },
    trappable_error_type: {
        "accel:plugin/types.error" => crate::imports::ImportError,
    },
    with: {
        "accel:plugin/mmio.region": crate::imports::RegionResource,
        "accel:plugin/dma.buffer": crate::imports::BufferResource,
        "accel:plugin/image.image": crate::imports::ImageResource,
        "accel:plugin/events.event": crate::imports::EventResource,
        "accel:plugin/dfl.port": crate::imports::PortResource,
        "accel:plugin/xocl.device": crate::imports::XoclDeviceResource,
        "accel:plugin/xocl.bo": crate::imports::BoResource,
        "accel:plugin/cxl.context": crate::imports::CxlContextResource,
    },
});
