//! The Rust SDK for accelhost device plugins.
//!
//! A plugin is a WebAssembly component that exports the `accel:plugin` interfaces. With this
//! crate a plugin author implements the [`Plugin`] trait, overriding only the calls the device
//! supports (every other call answers [`ErrorCode::Unsupported`], but the lifecycle calls and
//! `close`, which succeed), and exports it:
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
pub mod bindings;
mod devices;
mod error;
mod filter;
mod plugin;
mod table;
mod types;

#[doc(hidden)]
pub mod __private {
    pub use wit_bindgen;
}

pub use adapter::Exports;
pub use devices::discover;
pub use filter::{filter_matches, filters_match, host_matches, wants_device_objects};
pub use plugin::{Plugin, Result, enqueue_in_turn};
pub use table::TableBuilder;
pub use types::*;

/// The services the host offers a plugin: each one checks the plugin's grants.
pub mod host {
    pub use crate::bindings::accel::plugin::{
        clock, cxl, dfl, dma, events, image, log, mmio, remote, xocl,
    };
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
