//! The Rust SDK for accelhost device plugins.
//!
//! A plugin is a WebAssembly component that exports the `accel:plugin` interfaces. With this
//! crate a plugin author implements the [`Plugin`] trait, overriding only the calls the device
//! supports (every other call answers [`ErrorCode::Unsupported`]), and exports it:
//!
//! ```ignore
//! use accelhost_sdk::{Plugin, Result, Filter, Discovered};
//!
//! #[derive(Default)]
//! struct Mine;
//!
//! impl Plugin for Mine {
//!     fn enumerate(&mut self, _filters: Vec<Filter>) -> Result<Vec<Discovered>> {
//!         Ok(Vec::new())
//!     }
//! }
//!
//! accelhost_sdk::export_plugin!(Mine);
//! ```
//!
//! Build it with `cargo build --target wasm32-wasip2`; the result is a component the host loads.
//! Host services (MMIO regions, DMA buffers, the DFL shim, logging) are in [`host`].

extern crate self as accelhost_sdk;

mod adapter;
mod error;
mod filter;

/// The bindings generated from the `wit/` directory of the repository.
pub mod bindings {
    wit_bindgen::generate!({
        world: "plugin",
        path: "../../wit",
        pub_export_macro: true,
        export_macro_name: "__export_plugin_world",
        default_bindings_module: "accelhost_sdk::bindings",
        runtime_path: "accelhost_sdk::__private::wit_bindgen::rt",
        generate_all,
    });
}

#[doc(hidden)]
pub mod __private {
    pub use wit_bindgen;
}

pub use adapter::Exports;
pub use bindings::accel::plugin::types::{
    AcceleratorState, BusAddress, Error, ErrorCode, Guid, ObjectType, OpenMode,
};
pub use bindings::exports::accel::plugin::discovery::{Discovered, Filter, Properties};
pub use bindings::exports::accel::plugin::fpga::{BufferFlags, EventKind, PreparedBuffer};
pub use bindings::exports::accel::plugin::offload::{
    Allocation, KernelArgument, LaunchSize, MemoryKind, MemoryRange,
};
pub use filter::{filter_matches, host_matches};

/// The services the host offers a plugin: each one checks the plugin's grants.
pub mod host {
    pub use crate::bindings::accel::plugin::{
        clock, cxl, dfl, dma, events, image, log, mmio, xocl,
    };
}

/// The result type of every plugin call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// A device plugin. Each method is one export of the `accel:plugin` world; the defaults answer
/// `unsupported` (or accept, for the lifecycle calls that need no work), so a plugin overrides
/// only what its devices do.
///
/// One value of the type lives for the life of the plugin instance; it is created with
/// [`Default`] before the first call.
#[allow(unused_variables)]
pub trait Plugin: Default + 'static {
    /// Receives the plugin's `config` object from the plugin list, as JSON text (`{}` when
    /// the list gives none). The default accepts only an empty object.
    fn configure(&mut self, config: &str) -> Result<()> {
        match config.trim() {
            "" | "{}" | "null" => Ok(()),
            other => Err(Error::invalid_argument(format!(
                "this plugin takes no configuration, got {other}"
            ))),
        }
    }

    /// Called once after `configure`, before any other call.
    fn initialize(&mut self) -> Result<()> {
        Ok(())
    }

    /// Called once at shutdown; release what the plugin holds.
    fn finalize(&mut self) -> Result<()> {
        Ok(())
    }

    /// Can this plugin serve devices of `device_type`? Defaults to yes.
    fn supports_device(&mut self, device_type: &str) -> bool {
        true
    }

    /// Can this plugin serve devices on `host` (a host name or `localhost`, `^localhost`,
    /// `*`)? Defaults to [`host_matches`] against `localhost`: a local-only plugin.
    fn supports_host(&mut self, host: &str) -> bool {
        host_matches(host, "localhost")
    }

    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        Err(Error::unsupported("enumerate"))
    }

    /// Fresh properties of `token` (the host normally answers from what `enumerate` gave).
    fn describe(&mut self, token: u64) -> Result<Properties> {
        Err(Error::unsupported("describe"))
    }

    fn open(&mut self, token: u64, mode: OpenMode) -> Result<u64> {
        Err(Error::unsupported("open"))
    }

    fn close(&mut self, handle: u64) -> Result<()> {
        Err(Error::unsupported("close"))
    }

    fn map_mmio(&mut self, handle: u64, index: u32) -> Result<host::mmio::Region> {
        Err(Error::unsupported("map-mmio"))
    }

    fn prepare_buffer(
        &mut self,
        handle: u64,
        size: u64,
        flags: BufferFlags,
    ) -> Result<PreparedBuffer> {
        Err(Error::unsupported("prepare-buffer"))
    }

    fn release_buffer(&mut self, handle: u64, id: u64) -> Result<()> {
        Err(Error::unsupported("release-buffer"))
    }

    fn io_address(&mut self, handle: u64, id: u64) -> Result<u64> {
        Err(Error::unsupported("io-address"))
    }

    fn reset(&mut self, handle: u64) -> Result<()> {
        Err(Error::unsupported("reset"))
    }

    fn reconfigure(&mut self, handle: u64, slot: u32, image: &host::image::Image) -> Result<()> {
        Err(Error::unsupported("reconfigure"))
    }

    fn register_event(
        &mut self,
        handle: u64,
        kind: EventKind,
        vector: u32,
    ) -> Result<host::events::Event> {
        Err(Error::unsupported("register-event"))
    }

    fn mem_alloc(
        &mut self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> Result<Allocation> {
        Err(Error::unsupported("mem-alloc"))
    }

    fn mem_free(&mut self, handle: u64, id: u64) -> Result<()> {
        Err(Error::unsupported("mem-free"))
    }

    fn program_create(&mut self, handle: u64, image: &host::image::Image) -> Result<u64> {
        Err(Error::unsupported("program-create"))
    }

    fn program_release(&mut self, program: u64) -> Result<()> {
        Err(Error::unsupported("program-release"))
    }

    fn kernel_get(&mut self, program: u64, name: &str) -> Result<u64> {
        Err(Error::unsupported("kernel-get"))
    }

    fn queue_create(&mut self, handle: u64) -> Result<u64> {
        Err(Error::unsupported("queue-create"))
    }

    fn queue_release(&mut self, queue: u64) -> Result<()> {
        Err(Error::unsupported("queue-release"))
    }

    fn enqueue_memcpy(
        &mut self,
        queue: u64,
        dst: MemoryRange,
        src: MemoryRange,
        size: u64,
    ) -> Result<host::events::Event> {
        Err(Error::unsupported("enqueue-memcpy"))
    }

    fn enqueue_launch(
        &mut self,
        queue: u64,
        kernel: u64,
        args: Vec<KernelArgument>,
        size: LaunchSize,
    ) -> Result<host::events::Event> {
        Err(Error::unsupported("enqueue-launch"))
    }
}

/// Exports a [`Plugin`] type as the component's `accel:plugin` exports.
///
/// The exports exist only in wasm builds; a native build of a plugin crate (for `cargo check`,
/// clippy or unit tests) type-checks the plugin without exporting anything.
#[macro_export]
macro_rules! export_plugin {
    ($plugin:ty) => {
        #[cfg(target_arch = "wasm32")]
        type __AccelhostPluginExports = $crate::Exports<$plugin>;
        #[cfg(target_arch = "wasm32")]
        $crate::bindings::__export_plugin_world!(
            __AccelhostPluginExports with_types_in $crate::bindings
        );
        #[cfg(not(target_arch = "wasm32"))]
        const _: fn() = || {
            fn is_plugin<P: $crate::Plugin>() {}
            is_plugin::<$plugin>();
        };
    };
}

/// Writes a log line through the host, tagged with the plugin's name:
/// `log!(Info, "opened {}", name)`.
#[macro_export]
macro_rules! log {
    ($level:ident, $($arg:tt)+) => {
        $crate::host::log::log($crate::host::log::Level::$level, &::std::format!($($arg)+))
    };
}
