//! Every call the host makes into a plugin, whichever `accel:plugin` version it was built
//! for. [`ExportIndex`] finds a component's exports once, when it is loaded: the required core
//! (`lifecycle`, `discovery`) and whichever optional capability interfaces it has (`fpga`,
//! `offload`). [`Exports`] holds them, type-checked, for one instance, and [`Calls`] makes
//! them with host types in and out. Nothing else in the host names the generated export
//! bindings, so a new version changes this file and its version module, and nothing above.

use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Component, ComponentExportIndex, Func, Instance, Resource, TypedFunc};

use crate::attributes::AttributeInfo;
use crate::bindings::accel::plugin::types as wit;
use crate::bindings::exports::accel::plugin::{attributes, discovery, fpga, offload};
use crate::devices::{Completion, DmaMemory};
use crate::error::ErrorCode;
use crate::properties::{Filter, OpenMode, Properties};
use crate::state::{EventResource, ImageResource, PluginState, RegionResource};
use crate::types::{EventKind, MemoryKind};

/// A plugin's refusal: the code it gave and its message.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

/// What a plugin answers: a value, or its refusal. The outer `wasmtime::Result` of each call
/// is a fault (a trap, an interrupt) that ends the instance.
pub(crate) type Answer<T> = Result<T, Refusal>;

/// A place in an allocation, as kernel arguments and copies name it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct MemoryRange {
    pub allocation: u64,
    pub offset: u64,
}

/// One kernel argument.
#[derive(Clone, Debug)]
pub(crate) enum LaunchArg {
    Memory(MemoryRange),
    Scalar32(u32),
    Scalar64(u64),
    Bytes(Vec<u8>),
}

/// What `mem-alloc` gave: the plugin's id, the host-visible memory if any, the device address.
#[derive(Debug)]
pub(crate) struct Allocation {
    pub id: u64,
    pub host: Option<Arc<DmaMemory>>,
    pub device_address: u64,
}

/// What `prepare-buffer` gave: the plugin's id, the memory, the device's address for it.
#[derive(Debug)]
pub(crate) struct PreparedBuffer {
    pub id: u64,
    pub memory: Arc<DmaMemory>,
    pub iova: u64,
}

/// Declares the export interfaces once: which are required, their functions' WIT names and
/// signatures. From it come [`ExportIndex`] (found at load), [`Exports`] (type-checked at
/// instantiation) and the raw callers the [`Calls`] methods use.
macro_rules! exports {
    ($(
        $iface:ident in $funcs:ident ($wit_iface:literal, required: $required:literal) {
            $( $func:ident ($wit_func:literal): ($($param:ty),*) -> $result:ty; )*
        }
    )*) => {
        /// Where a component's exports are, found once when it is loaded.
        #[derive(Clone, Debug)]
        pub(crate) struct ExportIndex {
            $( $iface: Option<[ComponentExportIndex; [$($wit_func),*].len()]>, )*
        }

        impl ExportIndex {
            /// Finds the exports of `component`, built for `accel:plugin@version`. A required
            /// interface that is missing, or an interface that lacks one of its functions,
            /// is the reason the component is refused.
            pub fn find(component: &Component, version: &str) -> Result<ExportIndex, String> {
                Ok(ExportIndex {$(
                    $iface: {
                        let name = format!("accel:plugin/{}@{version}", $wit_iface);
                        match component.get_export_index(None, &name) {
                            None if $required => {
                                return Err(format!("it does not export {name}, which every plugin must"));
                            }
                            None => None,
                            Some(instance) => {
                                let find = |func: &str| {
                                    component.get_export_index(Some(&instance), func).ok_or_else(
                                        || format!("its export {name} lacks the function `{func}`"),
                                    )
                                };
                                Some([$(find($wit_func)?),*])
                            }
                        }
                    },
                )*})
            }

            /// Which optional interfaces the component exports.
            pub fn optional_exports(&self) -> Vec<&'static str> {
                let mut found = Vec::new();
                $( if !$required && self.$iface.is_some() { found.push($wit_iface); } )*
                found
            }
        }

        /// The exports of one instance, each checked against the type the host calls it with.
        pub(crate) struct Exports {
            $( $iface: Option<$funcs::Funcs>, )*
        }

        impl Exports {
            /// Type-checks every export `index` found in `instance`.
            pub fn new(
                index: &ExportIndex,
                instance: &Instance,
                store: &mut Store<PluginState>,
            ) -> wasmtime::Result<Exports> {
                Ok(Exports {$(
                    $iface: match &index.$iface {
                        None => None,
                        Some(found) => Some($funcs::Funcs::new(found, instance, store)?),
                    },
                )*})
            }
        }

        $(
            mod $funcs {
                use super::*;

                /// The functions of the interface, by position.
                pub(super) struct Funcs {
                    $( pub $func: Func, )*
                }

                impl Funcs {
                    pub fn new(
                        found: &[ComponentExportIndex],
                        instance: &Instance,
                        store: &mut Store<PluginState>,
                    ) -> wasmtime::Result<Funcs> {
                        let mut at = found.iter();
                        Ok(Funcs {$(
                            $func: *instance
                                .get_typed_func::<($($param,)*), ($result,)>(
                                    &mut *store,
                                    at.next().expect("one index per function"),
                                )
                                .map_err(|e| e.context(concat!(
                                    "the export `", $wit_func, "` of ", $wit_iface,
                                    " has another type than the host calls it with"
                                )))?
                                .func(),
                        )*})
                    }

                    $(
                        /// Calls the export.
                        pub fn $func(
                            &self,
                            store: &mut Store<PluginState>,
                            args: ($($param,)*),
                        ) -> wasmtime::Result<$result> {
                            // SAFETY: `new` type-checked the function with these types.
                            let typed = unsafe {
                                TypedFunc::<($($param,)*), ($result,)>::new_unchecked(self.$func)
                            };
                            Ok(typed.call(store, args)?.0)
                        }
                    )*
                }
            }
        )*
    };
}

exports! {
    lifecycle in lifecycle_funcs ("lifecycle", required: true) {
        configure ("configure"): (&str) -> Result<(), wit::Error>;
        initialize ("initialize"): () -> Result<(), wit::Error>;
        finalize ("finalize"): () -> Result<(), wit::Error>;
        supports_device ("supports-device"): (&str) -> bool;
        supports_host ("supports-host"): (&str) -> bool;
    }
    discovery in discovery_funcs ("discovery", required: true) {
        enumerate ("enumerate"): (&[discovery::Filter]) -> Result<Vec<discovery::Discovered>, wit::Error>;
        describe ("describe"): (u64) -> Result<discovery::Properties, wit::Error>;
    }
    fpga in fpga_funcs ("fpga", required: false) {
        open ("open"): (u64, wit::OpenMode) -> Result<u64, wit::Error>;
        close ("close"): (u64) -> Result<(), wit::Error>;
        map_mmio ("map-mmio"): (u64, u32) -> Result<Resource<RegionResource>, wit::Error>;
        prepare_buffer ("prepare-buffer"): (u64, u64, fpga::BufferFlags) -> Result<fpga::PreparedBuffer, wit::Error>;
        release_buffer ("release-buffer"): (u64, u64) -> Result<(), wit::Error>;
        reset ("reset"): (u64) -> Result<(), wit::Error>;
        reconfigure ("reconfigure"): (u64, u32, Resource<ImageResource>) -> Result<(), wit::Error>;
        register_event ("register-event"): (u64, fpga::EventKind, u32) -> Result<Resource<EventResource>, wit::Error>;
    }
    offload in offload_funcs ("offload", required: false) {
        mem_alloc ("mem-alloc"): (u64, offload::MemoryKind, u64, Option<u32>) -> Result<offload::Allocation, wit::Error>;
        mem_free ("mem-free"): (u64, u64) -> Result<(), wit::Error>;
        program_create ("program-create"): (u64, Resource<ImageResource>) -> Result<u64, wit::Error>;
        program_release ("program-release"): (u64) -> Result<(), wit::Error>;
        kernel_get ("kernel-get"): (u64, &str) -> Result<u64, wit::Error>;
        queue_create ("queue-create"): (u64) -> Result<u64, wit::Error>;
        queue_release ("queue-release"): (u64) -> Result<(), wit::Error>;
        enqueue_memcpy ("enqueue-memcpy"): (u64, offload::MemoryRange, offload::MemoryRange, u64) -> Result<Resource<EventResource>, wit::Error>;
        enqueue_launch ("enqueue-launch"): (u64, u64, &[offload::KernelArgument], offload::LaunchSize) -> Result<Resource<EventResource>, wit::Error>;
    }
    attributes in attributes_funcs ("attributes", required: false) {
        list_attributes ("list-attributes"): (u64) -> Result<Vec<attributes::AttributeInfo>, wit::Error>;
        read_attribute ("read-attribute"): (u64, &str) -> Result<String, wit::Error>;
        write_attribute ("write-attribute"): (u64, &str, &str) -> Result<(), wit::Error>;
    }
}

/// One call's access to an instance: its exports and its store. A method per export, host
/// types in and out; an optional interface the plugin does not export answers `unsupported`.
pub(crate) struct Calls<'a> {
    pub(crate) exports: &'a Exports,
    pub(crate) store: &'a mut Store<PluginState>,
}

/// The refusal for a call into an optional interface the plugin does not export.
fn unsupported(interface: &str) -> Refusal {
    Refusal {
        code: ErrorCode::Unsupported,
        message: format!("the plugin does not export accel:plugin/{interface}"),
    }
}

/// A plugin's WIT error as a refusal.
fn refusal(err: wit::Error) -> Refusal {
    Refusal {
        code: match err.code {
            wit::ErrorCode::Unsupported => ErrorCode::Unsupported,
            wit::ErrorCode::InvalidArgument => ErrorCode::InvalidArgument,
            wit::ErrorCode::NotFound => ErrorCode::NotFound,
            wit::ErrorCode::Busy => ErrorCode::Busy,
            wit::ErrorCode::NoSpace => ErrorCode::NoSpace,
            wit::ErrorCode::PermissionDenied => ErrorCode::PermissionDenied,
            wit::ErrorCode::Timeout => ErrorCode::Timeout,
            wit::ErrorCode::OutOfMemory => ErrorCode::OutOfMemory,
            wit::ErrorCode::DeviceError => ErrorCode::DeviceError,
            wit::ErrorCode::NotInitialized => ErrorCode::NotInitialized,
            wit::ErrorCode::AlreadyExists => ErrorCode::AlreadyExists,
            wit::ErrorCode::Internal => ErrorCode::Internal,
        },
        message: err.message,
    }
}

/// Calls `$method` of optional interface `$iface`, or answers `unsupported`.
macro_rules! optional {
    ($self:ident, $iface:ident, $method:ident, $args:expr) => {
        match &$self.exports.$iface {
            None => return Ok(Err(unsupported(stringify!($iface)))),
            Some(funcs) => funcs.$method(&mut *$self.store, $args)?,
        }
    };
}

impl<'a> Calls<'a> {
    fn lifecycle(&self) -> &'a lifecycle_funcs::Funcs {
        self.exports
            .lifecycle
            .as_ref()
            .expect("lifecycle is required at load")
    }

    fn discovery(&self) -> &'a discovery_funcs::Funcs {
        self.exports
            .discovery
            .as_ref()
            .expect("discovery is required at load")
    }

    pub fn configure(&mut self, config: &str) -> wasmtime::Result<Answer<()>> {
        Ok(self
            .lifecycle()
            .configure(self.store, (config,))?
            .map_err(refusal))
    }

    pub fn initialize(&mut self) -> wasmtime::Result<Answer<()>> {
        Ok(self
            .lifecycle()
            .initialize(self.store, ())?
            .map_err(refusal))
    }

    pub fn finalize(&mut self) -> wasmtime::Result<Answer<()>> {
        Ok(self.lifecycle().finalize(self.store, ())?.map_err(refusal))
    }

    pub fn supports_device(&mut self, device_type: &str) -> wasmtime::Result<bool> {
        self.lifecycle().supports_device(self.store, (device_type,))
    }

    pub fn supports_host(&mut self, host: &str) -> wasmtime::Result<bool> {
        self.lifecycle().supports_host(self.store, (host,))
    }

    /// The devices matching `filters`, with their properties as the plugin gave them (not
    /// yet checked against the host's bounds).
    pub fn enumerate(
        &mut self,
        filters: &[Filter],
    ) -> wasmtime::Result<Answer<Vec<(u64, Properties)>>> {
        let filters: Vec<discovery::Filter> = filters.iter().map(wit_filter).collect();
        Ok(self
            .discovery()
            .enumerate(self.store, (&filters,))?
            .map(|found| {
                found
                    .into_iter()
                    .map(|d| (d.token, properties(d.properties)))
                    .collect()
            })
            .map_err(refusal))
    }

    pub fn list_attributes(&mut self, token: u64) -> wasmtime::Result<Answer<Vec<AttributeInfo>>> {
        Ok(optional!(self, attributes, list_attributes, (token,))
            .map(|found| {
                found
                    .into_iter()
                    .map(|a| AttributeInfo {
                        name: a.name,
                        writable: a.writable,
                    })
                    .collect()
            })
            .map_err(refusal))
    }

    pub fn read_attribute(&mut self, token: u64, name: &str) -> wasmtime::Result<Answer<String>> {
        Ok(optional!(self, attributes, read_attribute, (token, name)).map_err(refusal))
    }

    pub fn write_attribute(
        &mut self,
        token: u64,
        name: &str,
        value: &str,
    ) -> wasmtime::Result<Answer<()>> {
        Ok(optional!(self, attributes, write_attribute, (token, name, value)).map_err(refusal))
    }

    pub fn describe(&mut self, token: u64) -> wasmtime::Result<Answer<Properties>> {
        Ok(self
            .discovery()
            .describe(self.store, (token,))?
            .map(properties)
            .map_err(refusal))
    }

    pub fn open(&mut self, token: u64, mode: OpenMode) -> wasmtime::Result<Answer<u64>> {
        let mode = match mode {
            OpenMode::Shared => wit::OpenMode::Shared,
            OpenMode::Exclusive => wit::OpenMode::Exclusive,
        };
        Ok(optional!(self, fpga, open, (token, mode)).map_err(refusal))
    }

    pub fn close(&mut self, handle: u64) -> wasmtime::Result<Answer<()>> {
        Ok(optional!(self, fpga, close, (handle,)).map_err(refusal))
    }

    /// Maps MMIO region `index`; the host takes the region out of the plugin's table.
    pub fn map_mmio(
        &mut self,
        handle: u64,
        index: u32,
    ) -> wasmtime::Result<Answer<RegionResource>> {
        match optional!(self, fpga, map_mmio, (handle, index)) {
            Ok(region) => Ok(Ok(self.store.data_mut().table().delete(region)?)),
            Err(err) => Ok(Err(refusal(err))),
        }
    }

    pub fn prepare_buffer(
        &mut self,
        handle: u64,
        size: u64,
        read_only: bool,
    ) -> wasmtime::Result<Answer<PreparedBuffer>> {
        let flags = if read_only {
            fpga::BufferFlags::READ_ONLY
        } else {
            fpga::BufferFlags::empty()
        };
        match optional!(self, fpga, prepare_buffer, (handle, size, flags)) {
            Ok(prepared) => {
                let buffer = self.store.data_mut().table().delete(prepared.buffer)?;
                Ok(Ok(PreparedBuffer {
                    id: prepared.id,
                    memory: buffer.memory,
                    iova: prepared.iova,
                }))
            }
            Err(err) => Ok(Err(refusal(err))),
        }
    }

    pub fn release_buffer(&mut self, handle: u64, id: u64) -> wasmtime::Result<Answer<()>> {
        Ok(optional!(self, fpga, release_buffer, (handle, id)).map_err(refusal))
    }

    pub fn reset(&mut self, handle: u64) -> wasmtime::Result<Answer<()>> {
        Ok(optional!(self, fpga, reset, (handle,)).map_err(refusal))
    }

    /// Loads `image` into slot `slot`; the host holds the image for the call.
    pub fn reconfigure(
        &mut self,
        handle: u64,
        slot: u32,
        image: Arc<[u8]>,
    ) -> wasmtime::Result<Answer<()>> {
        let Some(fpga) = &self.exports.fpga else {
            return Ok(Err(unsupported("fpga")));
        };
        let (owned, borrowed) = lend_image(self.store, image)?;
        let answer = fpga.reconfigure(&mut *self.store, (handle, slot, borrowed));
        self.store.data_mut().table().delete(owned)?;
        Ok(answer?.map_err(refusal))
    }

    /// An event for `kind` (interrupt `vector`); the host takes its completion.
    pub fn register_event(
        &mut self,
        handle: u64,
        kind: EventKind,
        vector: u32,
    ) -> wasmtime::Result<Answer<Arc<Completion>>> {
        let kind = match kind {
            EventKind::Interrupt => fpga::EventKind::Interrupt,
            EventKind::Error => fpga::EventKind::Error,
            EventKind::PowerThermal => fpga::EventKind::PowerThermal,
        };
        let answer = optional!(self, fpga, register_event, (handle, kind, vector));
        self.completion(answer)
    }

    pub fn mem_alloc(
        &mut self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> wasmtime::Result<Answer<Allocation>> {
        let kind = match kind {
            MemoryKind::Host => offload::MemoryKind::Host,
            MemoryKind::Device => offload::MemoryKind::Device,
            MemoryKind::Shared => offload::MemoryKind::Shared,
        };
        match optional!(self, offload, mem_alloc, (handle, kind, size, bank)) {
            Ok(allocation) => {
                let host = match allocation.buffer {
                    Some(buffer) => Some(self.store.data_mut().table().delete(buffer)?.memory),
                    None => None,
                };
                Ok(Ok(Allocation {
                    id: allocation.id,
                    host,
                    device_address: allocation.device_address,
                }))
            }
            Err(err) => Ok(Err(refusal(err))),
        }
    }

    pub fn mem_free(&mut self, handle: u64, id: u64) -> wasmtime::Result<Answer<()>> {
        Ok(optional!(self, offload, mem_free, (handle, id)).map_err(refusal))
    }

    /// A program from `image`; the host holds the image for the call.
    pub fn program_create(
        &mut self,
        handle: u64,
        image: Arc<[u8]>,
    ) -> wasmtime::Result<Answer<u64>> {
        let Some(offload) = &self.exports.offload else {
            return Ok(Err(unsupported("offload")));
        };
        let (owned, borrowed) = lend_image(self.store, image)?;
        let answer = offload.program_create(&mut *self.store, (handle, borrowed));
        self.store.data_mut().table().delete(owned)?;
        Ok(answer?.map_err(refusal))
    }

    pub fn program_release(&mut self, program: u64) -> wasmtime::Result<Answer<()>> {
        Ok(optional!(self, offload, program_release, (program,)).map_err(refusal))
    }

    pub fn kernel_get(&mut self, program: u64, name: &str) -> wasmtime::Result<Answer<u64>> {
        Ok(optional!(self, offload, kernel_get, (program, name)).map_err(refusal))
    }

    pub fn queue_create(&mut self, handle: u64) -> wasmtime::Result<Answer<u64>> {
        Ok(optional!(self, offload, queue_create, (handle,)).map_err(refusal))
    }

    pub fn queue_release(&mut self, queue: u64) -> wasmtime::Result<Answer<()>> {
        Ok(optional!(self, offload, queue_release, (queue,)).map_err(refusal))
    }

    pub fn enqueue_memcpy(
        &mut self,
        queue: u64,
        dst: MemoryRange,
        src: MemoryRange,
        size: u64,
    ) -> wasmtime::Result<Answer<Arc<Completion>>> {
        let answer = optional!(
            self,
            offload,
            enqueue_memcpy,
            (queue, wit_range(dst), wit_range(src), size)
        );
        self.completion(answer)
    }

    pub fn enqueue_launch(
        &mut self,
        queue: u64,
        kernel: u64,
        args: &[LaunchArg],
    ) -> wasmtime::Result<Answer<Arc<Completion>>> {
        let args: Vec<offload::KernelArgument> = args
            .iter()
            .map(|arg| match arg {
                LaunchArg::Memory(range) => offload::KernelArgument::Memory(wit_range(*range)),
                LaunchArg::Scalar32(v) => offload::KernelArgument::Scalar32(*v),
                LaunchArg::Scalar64(v) => offload::KernelArgument::Scalar64(*v),
                LaunchArg::Bytes(bytes) => offload::KernelArgument::Bytes(bytes.clone()),
            })
            .collect();
        let size = offload::LaunchSize {
            global: (1, 1, 1),
            local: (1, 1, 1),
        };
        let answer = optional!(self, offload, enqueue_launch, (queue, kernel, &args, size));
        self.completion(answer)
    }

    /// Takes the completion of an event the plugin returned out of its table.
    fn completion(
        &mut self,
        answer: Result<Resource<EventResource>, wit::Error>,
    ) -> wasmtime::Result<Answer<Arc<Completion>>> {
        match answer {
            Ok(event) => Ok(Ok(self.store.data_mut().table().delete(event)?.completion)),
            Err(err) => Ok(Err(refusal(err))),
        }
    }
}

/// Puts `image` in the plugin's table for a call: the owned handle (to delete after) and the
/// borrow the plugin gets.
fn lend_image(
    store: &mut Store<PluginState>,
    image: Arc<[u8]>,
) -> wasmtime::Result<(Resource<ImageResource>, Resource<ImageResource>)> {
    let owned = store
        .data_mut()
        .table()
        .push(ImageResource { bytes: image })?;
    let borrowed = Resource::new_borrow(owned.rep());
    Ok((owned, borrowed))
}

fn wit_range(range: MemoryRange) -> offload::MemoryRange {
    offload::MemoryRange {
        allocation: range.allocation,
        offset: range.offset,
    }
}

fn wit_filter(filter: &Filter) -> discovery::Filter {
    let filter = filter.for_plugin();
    discovery::Filter {
        object_type: filter.object_type.map(Into::into),
        guid: filter.guid.map(Into::into),
        vendor_id: filter.vendor_id,
        device_id: filter.device_id,
        bus_address: filter.bus_address.map(Into::into),
        device_type: filter.device_type,
        host: filter.host,
    }
}

fn properties(p: discovery::Properties) -> Properties {
    Properties {
        object_type: p.object_type.into(),
        name: p.name,
        guid: p.guid.into(),
        vendor_id: p.vendor_id,
        device_id: p.device_id,
        bus_address: p.bus_address.map(Into::into),
        socket_id: p.socket_id,
        device_type: p.device_type,
        host: p.host,
        num_mmio: p.num_mmio,
        num_interrupts: p.num_interrupts,
        accelerator_state: p.accelerator_state.map(Into::into),
        parent: p.parent,
        extras: p.extras,
    }
}
