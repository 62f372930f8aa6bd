//! Every call the host makes into a plugin, whichever `accel:plugin` version it was built
//! for. [`ExportIndex`] finds a component's exports once, when it is loaded: the required core
//! (`lifecycle`, `discovery`) and whichever optional capability interfaces it has (`fpga`,
//! `offload`). [`Exports`] holds them for one instance (type-checked by the component's first
//! instance, looked up by later ones at their first call), and [`Calls`] makes them with host
//! types in and out. Nothing else in the host names the generated export
//! bindings, so a new version changes this file and its version module, and nothing above.

use std::fmt::Write as _;
use std::ops::Range;
use std::sync::Arc;

use wasmtime::Store;
use wasmtime::component::{Component, ComponentExportIndex, Func, Instance, Resource, TypedFunc};

use crate::attributes::AttributeInfo;
use crate::bindings::accel::plugin::types as wit;
use crate::bindings::exports::accel::plugin::{
    attributes, batch, discovery, fpga, inventory, offload,
};
use crate::devices::{Budget, Completion, CompletionState, DmaMemory};
use crate::error::{ErrorCode, Falsehood};
use crate::properties::{Filter, OpenMode, Properties, SharedText};
use crate::runtime::fault::FalseAnswer;
use crate::state::{
    BufferResource, EventResource, HostLimit, IdKind, ImageResource, PluginState, RegionResource,
};
use crate::types::{EventKind, MemoryKind};

/// A plugin's refusal: the code it gave and its message.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub code: ErrorCode,
    pub message: String,
}

impl Refusal {
    /// The error a caller sees: plugin `plugin` refused `call`, its message cut to
    /// [`MAX_MESSAGE`](crate::state::MAX_MESSAGE).
    pub(crate) fn into_error(self, plugin: &str, call: &'static str) -> crate::error::Error {
        crate::error::Error::Plugin {
            plugin: plugin.to_string(),
            call,
            code: self.code,
            message: crate::text::cut_to(self.message, crate::state::MAX_MESSAGE),
        }
    }
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

/// What `enqueue-launches` gave, checked against the batch: the first `count` launches are
/// on the queue, `last` is the completion of the last of them (there exactly when `count` is
/// not 0), and `refused` says why the launch at `count` was refused (there exactly when
/// `count` is short of the batch).
#[derive(Debug)]
pub(crate) struct Batched {
    pub count: usize,
    pub last: Option<Arc<Completion>>,
    pub refused: Option<Refusal>,
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
            /// Set once an instance's exports were type-checked: every instance of the
            /// component has the same types, so later ones skip the check.
            typed: Arc<std::sync::atomic::AtomicBool>,
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
                )*
                    typed: Arc::default(),
                })
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
            /// The exports `index` found, in `instance`: all looked up and type-checked for
            /// the component's first instance; for the others each is looked up when it is
            /// first called, so that an instance pays only for the exports it uses.
            pub fn new(
                index: &ExportIndex,
                instance: &Instance,
                store: &mut Store<PluginState>,
            ) -> wasmtime::Result<Exports> {
                use std::sync::atomic::Ordering;
                let typed = index.typed.load(Ordering::Acquire);
                let exports = Exports {$(
                    $iface: match &index.$iface {
                        None => None,
                        Some(found) => Some($funcs::Funcs::new(found, instance, store, typed)?),
                    },
                )*};
                index.typed.store(true, Ordering::Release);
                Ok(exports)
            }
        }

        $(
            mod $funcs {
                use super::*;

                /// The functions of the interface, by position.
                pub(super) struct Funcs {
                    instance: Instance,
                    $( $func: LazyExport, )*
                }

                impl Funcs {
                    /// The functions at `found`: looked up and type-checked now unless
                    /// `typed` (another instance of the same component was), else looked up
                    /// at their first call.
                    pub fn new(
                        found: &[ComponentExportIndex],
                        instance: &Instance,
                        store: &mut Store<PluginState>,
                        typed: bool,
                    ) -> wasmtime::Result<Funcs> {
                        let mut at = found.iter().copied();
                        Ok(Funcs {
                            instance: *instance,
                            $($func: {
                                let index = at.next().expect("one index per function");
                                let export = LazyExport::at(index);
                                if !typed {
                                    let typed_func = instance
                                        .get_typed_func::<($($param,)*), ($result,)>(
                                            &mut *store,
                                            index,
                                        )
                                        .map_err(|e| e.context(concat!(
                                            "the export `", $wit_func, "` of ", $wit_iface,
                                            " has another type than the host calls it with"
                                        )))?;
                                    export.set(*typed_func.func());
                                }
                                export
                            },)*
                        })
                    }

                    $(
                        /// Calls the export.
                        pub fn $func(
                            &self,
                            store: &mut Store<PluginState>,
                            args: ($($param,)*),
                        ) -> wasmtime::Result<$result> {
                            let func = self.$func.func(&self.instance, store, || concat!(
                                "the export `", $wit_func, "` of ", $wit_iface,
                                " is not a function"
                            ))?;
                            // SAFETY: the component's first instance type-checked the
                            // function with these types (`Funcs::new`), and every instance
                            // of a component has the same.
                            let typed = unsafe {
                                TypedFunc::<($($param,)*), ($result,)>::new_unchecked(func)
                            };
                            Ok(typed.call(store, args)?.0)
                        }
                    )*
                }
            }
        )*
    };
}

/// One export of an instance: where the component has it, and the function once looked up.
struct LazyExport {
    at: ComponentExportIndex,
    func: std::cell::OnceCell<Func>,
}

impl LazyExport {
    fn at(at: ComponentExportIndex) -> Self {
        LazyExport {
            at,
            func: std::cell::OnceCell::new(),
        }
    }

    fn set(&self, func: Func) {
        let _ = self.func.set(func);
    }

    /// The function, looked up in `instance` on the first call; `what` names it if the
    /// component has something else there.
    fn func(
        &self,
        instance: &Instance,
        store: &mut Store<PluginState>,
        what: impl FnOnce() -> &'static str,
    ) -> wasmtime::Result<Func> {
        if let Some(func) = self.func.get() {
            return Ok(*func);
        }
        let func = instance
            .get_func(&mut *store, self.at)
            .ok_or_else(|| wasmtime::format_err!("{}", what()))?;
        Ok(*self.func.get_or_init(|| func))
    }
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
    batch in batch_funcs ("batch", required: false) {
        enqueue_launches ("enqueue-launches"): (u64, &[batch::Launch]) -> batch::Enqueued;
    }
    inventory in inventory_funcs ("inventory", required: false) {
        enumerate ("enumerate"): (&[discovery::Filter]) -> Result<inventory::DeviceTable, wit::Error>;
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
    /// yet checked against the host's bounds): from `inventory` where the plugin has it, else
    /// from `discovery`.
    pub fn enumerate(&mut self, filters: &[Filter]) -> wasmtime::Result<Answer<Listed>> {
        let filters: Vec<discovery::Filter> = filters.iter().map(wit_filter).collect();
        if let Some(inventory) = &self.exports.inventory {
            match inventory.enumerate(&mut *self.store, (&filters,))? {
                Ok(table) => {
                    let budget = self.store.data().ctx.owner.host.clone();
                    return Ok(Ok(from_table(table, &budget)?));
                }
                // The SDKs' default: this plugin lists its devices through `discovery`.
                Err(err) if err.code == wit::ErrorCode::Unsupported => {}
                Err(err) => return Ok(Err(refusal(err))),
            }
        }
        Ok(self
            .discovery()
            .enumerate(self.store, (&filters,))?
            .map(|found| {
                found
                    .into_iter()
                    .map(|d| (d.token, properties(d.properties)))
                    .collect::<Vec<_>>()
            })
            .map(Ok)
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
        match optional!(self, fpga, open, (token, mode)) {
            Ok(handle) => {
                self.claim(IdKind::Handle, 0, handle)?;
                Ok(Ok(handle))
            }
            Err(err) => Ok(Err(refusal(err))),
        }
    }

    pub fn close(&mut self, handle: u64) -> wasmtime::Result<Answer<()>> {
        self.store.data_mut().live_ids.release_handle(handle);
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

    /// A buffer of at least `size` bytes; an answer shorter than that, or memory that is not
    /// the instance's own, is a lie that ends the instance.
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
                self.check_memory("prepare-buffer", &buffer, size)?;
                self.claim(IdKind::Buffer, handle, prepared.id)?;
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
        self.store
            .data_mut()
            .live_ids
            .release(IdKind::Buffer, handle, id);
        Ok(optional!(self, fpga, release_buffer, (handle, id)).map_err(refusal))
    }

    /// Records the id of `kind` the plugin just gave (on `handle`, for the kinds numbered per
    /// handle); an id the host already keeps for a live object is a lie.
    fn claim(&mut self, kind: IdKind, handle: u64, id: u64) -> wasmtime::Result<()> {
        if self.store.data_mut().live_ids.claim(kind, handle, id) {
            return Ok(());
        }
        let what = kind.what();
        Err(FalseAnswer {
            about: Falsehood::Id,
            detail: format!(
                "it gave {what} id {id} again while the {what} it first named is still in use"
            ),
        }
        .into())
    }

    /// Refuses memory handed back for a request of `size` bytes (`call`) that is shorter, or
    /// that this instance did not allocate.
    fn check_memory(&self, call: &str, buffer: &BufferResource, size: u64) -> wasmtime::Result<()> {
        let memory = &buffer.memory;
        let detail = if memory.len() < size {
            format!(
                "it answered {call} of {size} bytes with a buffer of {} bytes",
                memory.len()
            )
        } else if memory.owner() != self.store.data().ctx.owner.id {
            format!("it answered {call} with memory that another instance allocated")
        } else {
            return Ok(());
        };
        Err(FalseAnswer {
            about: Falsehood::Memory,
            detail,
        }
        .into())
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

    /// An allocation of `size` bytes; host-visible kinds must come with host memory of at
    /// least that size (the instance's own), or the answer is a lie that ends the instance.
    pub fn mem_alloc(
        &mut self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> wasmtime::Result<Answer<Allocation>> {
        let wit_kind = match kind {
            MemoryKind::Host => offload::MemoryKind::Host,
            MemoryKind::Device => offload::MemoryKind::Device,
            MemoryKind::Shared => offload::MemoryKind::Shared,
        };
        match optional!(self, offload, mem_alloc, (handle, wit_kind, size, bank)) {
            Ok(allocation) => {
                let host = match allocation.buffer {
                    Some(buffer) => {
                        let buffer = self.store.data_mut().table().delete(buffer)?;
                        self.check_memory("mem-alloc", &buffer, size)?;
                        Some(buffer.memory)
                    }
                    None if kind != MemoryKind::Device => {
                        return Err(FalseAnswer {
                            about: Falsehood::Memory,
                            detail: format!(
                                "it answered mem-alloc of {size} bytes of {kind:?} memory \
                                 without host memory"
                            ),
                        }
                        .into());
                    }
                    None => None,
                };
                self.claim(IdKind::Allocation, handle, allocation.id)?;
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
        self.store
            .data_mut()
            .live_ids
            .release(IdKind::Allocation, handle, id);
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
        match answer? {
            Ok(program) => {
                self.claim(IdKind::Program, handle, program)?;
                Ok(Ok(program))
            }
            Err(err) => Ok(Err(refusal(err))),
        }
    }

    pub fn program_release(&mut self, program: u64) -> wasmtime::Result<Answer<()>> {
        self.store
            .data_mut()
            .live_ids
            .release(IdKind::Program, 0, program);
        Ok(optional!(self, offload, program_release, (program,)).map_err(refusal))
    }

    pub fn kernel_get(&mut self, program: u64, name: &str) -> wasmtime::Result<Answer<u64>> {
        Ok(optional!(self, offload, kernel_get, (program, name)).map_err(refusal))
    }

    pub fn queue_create(&mut self, handle: u64) -> wasmtime::Result<Answer<u64>> {
        match optional!(self, offload, queue_create, (handle,)) {
            Ok(queue) => {
                self.claim(IdKind::Queue, handle, queue)?;
                Ok(Ok(queue))
            }
            Err(err) => Ok(Err(refusal(err))),
        }
    }

    pub fn queue_release(&mut self, queue: u64) -> wasmtime::Result<Answer<()>> {
        self.store
            .data_mut()
            .live_ids
            .release(IdKind::Queue, 0, queue);
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
        let args = wit_args(args);
        let answer = optional!(
            self,
            offload,
            enqueue_launch,
            (queue, kernel, &args, ONE_ITEM)
        );
        self.completion(answer)
    }

    /// Enqueues `launches` (each a kernel and its arguments) on `queue` in one call. A
    /// refusal of the first launch is the call's refusal, as `enqueue-launch`'s would be; a
    /// plugin without `batch` answers `unsupported`, and the caller enqueues one by one.
    pub fn enqueue_launches(
        &mut self,
        queue: u64,
        launches: &[(u64, &[LaunchArg])],
    ) -> wasmtime::Result<Answer<Batched>> {
        let Some(batch) = &self.exports.batch else {
            return Ok(Err(unsupported("batch")));
        };
        let wit_launches: Vec<batch::Launch> = launches
            .iter()
            .map(|(kernel, args)| batch::Launch {
                kernel: *kernel,
                args: wit_args(args),
                size: ONE_ITEM,
            })
            .collect();
        let answer = batch.enqueue_launches(&mut *self.store, (queue, &wit_launches))?;
        let count = answer.count as usize;
        let last = match answer.last {
            Some(event) => Some(self.store.data_mut().table().delete(event)?.completion),
            None => None,
        };
        let asked = launches.len();
        let lie = if count > asked {
            Some(format!(
                "it answered enqueue-launches of {asked} launch(es) with {count} enqueued"
            ))
        } else if (count == 0) != last.is_none() {
            Some(format!(
                "it enqueued {count} of {asked} launch(es) and gave {} event",
                if last.is_some() { "an" } else { "no" }
            ))
        } else if (count < asked) != answer.refused.is_some() {
            Some(if count < asked {
                format!("it enqueued {count} of {asked} launch(es) and said nothing of the rest")
            } else {
                format!("it enqueued all {asked} launch(es) and refused one of them")
            })
        } else {
            None
        };
        if let Some(detail) = lie {
            return Err(FalseAnswer {
                about: Falsehood::Count,
                detail,
            }
            .into());
        }
        let refused = answer.refused.map(refusal);
        match (last, refused) {
            (None, Some(refused)) => Ok(Err(refused)),
            (last, refused) => Ok(Ok(Batched {
                count,
                last: last.map(Self::kept_completion),
                refused,
            })),
        }
    }

    /// Takes the completion of an event the plugin returned out of its table. One that
    /// finished already (work the plugin did at once, or refused) becomes the program's own,
    /// charged to nobody: however many such events a program keeps, the plugin cannot make
    /// them larger (a failure's message is interned, `state::messages`). One still pending is
    /// the device's, charged to the instance until it finishes and the program lets go.
    fn completion(
        &mut self,
        answer: Result<Resource<EventResource>, wit::Error>,
    ) -> wasmtime::Result<Answer<Arc<Completion>>> {
        let event = match answer {
            Ok(event) => self.store.data_mut().table().delete(event)?.completion,
            Err(err) => return Ok(Err(refusal(err))),
        };
        Ok(Ok(Self::kept_completion(event)))
    }

    /// An event's completion as the program keeps it: one that finished already (work the
    /// plugin did at once, or refused) becomes the program's own, charged to nobody.
    fn kept_completion(event: Arc<Completion>) -> Arc<Completion> {
        match event.state() {
            CompletionState::Pending => event,
            CompletionState::Complete => Completion::complete(),
            failed => crate::ledger::uncharged(|| Arc::new(Completion::with_state(failed))),
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

/// The launch size the host passes: the doors put an NDRange in the kernel's arguments.
const ONE_ITEM: offload::LaunchSize = offload::LaunchSize {
    global: (1, 1, 1),
    local: (1, 1, 1),
};

fn wit_args(args: &[LaunchArg]) -> Vec<offload::KernelArgument> {
    args.iter()
        .map(|arg| match arg {
            LaunchArg::Memory(range) => offload::KernelArgument::Memory(wit_range(*range)),
            LaunchArg::Scalar32(v) => offload::KernelArgument::Scalar32(*v),
            LaunchArg::Scalar64(v) => offload::KernelArgument::Scalar64(*v),
            LaunchArg::Bytes(bytes) => offload::KernelArgument::Bytes(bytes.clone()),
        })
        .collect()
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

/// What an enumerate answered: the devices with their properties, or why its table could not
/// be read (an index out of range), which refuses the whole answer.
pub(crate) type Listed = Result<Vec<(u64, Properties)>, String>;

/// How many bytes of a table are written out between two checks of the plugin's host-memory
/// budget: what it can overshoot by, besides one row.
const BYTES_PER_BUDGET_CHECK: u64 = 64 << 10;

/// The devices of an `inventory` table, each with its texts looked up. Every text of the
/// answer is written once into one shared text ([`SharedText`]): the table's texts, then
/// each numbered text (a name or fact value with its number) in the order the rows name them;
/// a device's texts are ranges of it, so that the write-out allocates per table and not per
/// device. A table is small and its write-out need not be (rows can share one range of
/// numbered facts), so what the write-out allocates is held against the plugin's host-memory
/// `budget` as it goes, as the lifting of an answer is: over it, the call fails with the
/// limit named.
fn from_table(table: inventory::DeviceTable, budget: &Arc<Budget>) -> wasmtime::Result<Listed> {
    let texts_bytes: usize = table.texts.iter().map(String::len).sum();
    let written = (texts_bytes + table.rows.len() * size_of::<(u64, Properties)>()) as u64;
    within_budget(budget, written)?;
    let mut writer = TableWriter {
        table: &table,
        budget,
        written,
        checked: written,
    };
    match writer.write_out() {
        Ok(found) => {
            within_budget(budget, writer.written)?;
            Ok(Ok(found))
        }
        Err(Refused::Table(why)) => Ok(Err(why)),
        Err(Refused::Limit(limit)) => Err(limit.into()),
    }
}

/// Fails when `written` more bytes do not fit in the plugin's host-memory budget: where the
/// ledger counts what this thread allocates, when the budget holds more than its limit.
fn within_budget(budget: &Arc<Budget>, written: u64) -> Result<(), HostLimit> {
    if budget.is_ledgered() {
        budget.check_held()?;
    } else {
        drop(budget.charge(written)?);
    }
    Ok(())
}

/// Writes out the rows of one table, counting the bytes it allocates and holding them
/// against the plugin's budget every [`BYTES_PER_BUDGET_CHECK`], wherever they are written
/// (one row's facts alone can be many times that).
struct TableWriter<'a> {
    table: &'a inventory::DeviceTable,
    budget: &'a Arc<Budget>,
    written: u64,
    /// `written` when the budget was last checked.
    checked: u64,
}

/// Where each text of a table's answer lies in the one text they share.
struct TextLayout {
    whole: String,
    /// The table's texts, by index.
    texts: Vec<Range<usize>>,
    /// The numbered texts, in the order the rows name them (each row's name, then its facts).
    numbered: Vec<Range<usize>>,
}

impl<'a> TableWriter<'a> {
    /// Every row as a device, or why the table is refused.
    fn write_out(&mut self) -> Result<Vec<(u64, Properties)>, Refused> {
        let layout = self.lay_out_texts()?;
        let whole: Arc<str> = layout.whole.into();
        let share = |range: &Range<usize>| {
            SharedText::slice(&whole, range.clone()).expect("a laid-out text is within the whole")
        };
        let texts: Vec<SharedText> = layout.texts.iter().map(share).collect();
        let mut numbered = layout.numbered.iter().map(share);
        let mut found = Vec::with_capacity(self.table.rows.len());
        for (at, row) in self.table.rows.iter().enumerate() {
            let mut text_of = |said: &inventory::NumberedText, what: &str| match said.number {
                None => text(&texts, said.text, what, at).cloned(),
                Some(_) => Ok(numbered.next().expect("a numbered text per one laid out")),
            };
            let name = text_of(&row.name, "name")?;
            let facts = self.facts(at, row)?;
            self.count(facts.len() * size_of::<(SharedText, SharedText)>())?;
            let mut shared_facts = Vec::with_capacity(facts.len());
            for fact in facts {
                let key = text(&texts, fact.key, "fact key", at)?.clone();
                shared_facts.push((key, text_of(&fact.value, "fact value")?));
            }
            found.push((
                row.token,
                Properties {
                    object_type: row.object_type.into(),
                    name,
                    guid: row.guid.into(),
                    vendor_id: row.vendor_id,
                    device_id: row.device_id,
                    bus_address: row.bus_address.map(Into::into),
                    socket_id: row.socket_id,
                    device_type: text(&texts, row.device_type, "device type", at)?.clone(),
                    host: text(&texts, row.host, "host", at)?.clone(),
                    num_mmio: row.num_mmio,
                    num_interrupts: row.num_interrupts,
                    accelerator_state: row.accelerator_state.map(Into::into),
                    parent: row.parent,
                    extras: shared_facts,
                },
            ));
        }
        Ok(found)
    }

    /// The table's texts, then every numbered text its rows name, written into one text.
    fn lay_out_texts(&mut self) -> Result<TextLayout, Refused> {
        let table = self.table;
        let mut whole = String::new();
        let mut texts = Vec::with_capacity(table.texts.len());
        for text in &table.texts {
            let start = whole.len();
            whole.push_str(text);
            texts.push(start..whole.len());
        }
        let mut numbered = Vec::new();
        for (at, row) in table.rows.iter().enumerate() {
            let named = std::iter::once((&row.name, "name")).chain(
                self.facts(at, row)?
                    .iter()
                    .map(|f| (&f.value, "fact value")),
            );
            for (said, what) in named {
                let Some(number) = said.number else { continue };
                let stem = &table.texts[text_index(table.texts.len(), said.text, what, at)?];
                let start = whole.len();
                whole.push_str(stem);
                // Writing to a String cannot fail.
                let _ = write!(whole, "{number}");
                numbered.push(start..whole.len());
                self.count(whole.len() - start + size_of::<Range<usize>>())?;
            }
        }
        Ok(TextLayout {
            whole,
            texts,
            numbered,
        })
    }

    /// Row `at`'s facts, or why the table is refused.
    fn facts(
        &self,
        at: usize,
        row: &inventory::DeviceRow,
    ) -> Result<&'a [inventory::Fact], String> {
        let extras = &self.table.extras;
        (row.extras_first as usize)
            .checked_add(row.extras_count as usize)
            .and_then(|end| extras.get(row.extras_first as usize..end))
            .ok_or_else(|| {
                format!(
                    "row {at}'s facts are {} from {}, and the table has {}",
                    row.extras_count,
                    row.extras_first,
                    extras.len()
                )
            })
    }

    /// Counts `bytes` more written, and checks the budget once enough have been.
    fn count(&mut self, bytes: usize) -> Result<(), HostLimit> {
        self.written += bytes as u64;
        if self.written - self.checked >= BYTES_PER_BUDGET_CHECK {
            within_budget(self.budget, self.written)?;
            self.checked = self.written;
        }
        Ok(())
    }
}

/// Text `index` of a table with `count` texts, or why row `at`'s `what` refuses the table.
fn text_index(count: usize, index: u32, what: &str, at: usize) -> Result<usize, String> {
    if (index as usize) < count {
        Ok(index as usize)
    } else {
        Err(format!(
            "row {at}'s {what} is text {index}, and the table has {count} texts"
        ))
    }
}

/// Text `index` of `texts`, or why row `at`'s `what` refuses the table.
fn text<'t>(
    texts: &'t [SharedText],
    index: u32,
    what: &str,
    at: usize,
) -> Result<&'t SharedText, String> {
    Ok(&texts[text_index(texts.len(), index, what, at)?])
}

/// Why a row was not written out: the table is wrong, or the budget is spent.
enum Refused {
    Table(String),
    Limit(HostLimit),
}

impl From<String> for Refused {
    fn from(why: String) -> Self {
        Refused::Table(why)
    }
}

impl From<HostLimit> for Refused {
    fn from(limit: HostLimit) -> Self {
        Refused::Limit(limit)
    }
}

fn properties(p: discovery::Properties) -> Properties {
    Properties {
        object_type: p.object_type.into(),
        name: p.name.into(),
        guid: p.guid.into(),
        vendor_id: p.vendor_id,
        device_id: p.device_id,
        bus_address: p.bus_address.map(Into::into),
        socket_id: p.socket_id,
        device_type: p.device_type.into(),
        host: p.host.into(),
        num_mmio: p.num_mmio,
        num_interrupts: p.num_interrupts,
        accelerator_state: p.accelerator_state.map(Into::into),
        parent: p.parent,
        extras: p
            .extras
            .into_iter()
            .map(|(key, value)| (key.into(), value.into()))
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::BudgetKind;
    use inventory::{DeviceRow, DeviceTable, Fact, NumberedText};

    /// A table read with a host-memory budget it cannot exhaust.
    fn read(table: DeviceTable) -> Listed {
        from_table(table, &Budget::new(BudgetKind::Host, 1 << 30)).unwrap()
    }

    fn said(text: u32, number: Option<u32>) -> NumberedText {
        NumberedText { text, number }
    }

    fn row(name: NumberedText, extras_first: u32, extras_count: u32) -> DeviceRow {
        DeviceRow {
            token: 7,
            object_type: wit::ObjectType::Accelerator,
            name,
            guid: wit::Guid { high: 1, low: 2 },
            vendor_id: 0x8086,
            device_id: 0xbcc0,
            bus_address: None,
            socket_id: Some(0),
            device_type: 1,
            host: 2,
            num_mmio: 1,
            num_interrupts: 0,
            accelerator_state: None,
            parent: Some(3),
            extras_first,
            extras_count,
        }
    }

    fn table(rows: Vec<DeviceRow>, extras: Vec<Fact>) -> DeviceTable {
        DeviceTable {
            texts: ["dfl-port.", "fpga", "localhost", "port-id", ""]
                .map(String::from)
                .to_vec(),
            rows,
            extras,
        }
    }

    #[test]
    fn a_table_is_read_with_its_numbers_written_after_their_texts() {
        let facts = vec![
            Fact {
                key: 3,
                value: said(4, Some(5)),
            },
            Fact {
                key: 1,
                value: said(2, None),
            },
        ];
        let found = read(table(vec![row(said(0, Some(12)), 0, 1)], facts)).unwrap();
        let (token, properties) = &found[0];
        assert_eq!(*token, 7);
        assert_eq!(properties.name, "dfl-port.12");
        assert_eq!(properties.device_type, "fpga");
        assert_eq!(properties.host, "localhost");
        assert_eq!(properties.parent, Some(3));
        assert_eq!(
            properties.extras,
            [("port-id".into(), "5".into())],
            "only the row's own facts"
        );
    }

    #[test]
    fn every_text_of_an_answer_is_a_range_of_one_allocation() {
        let facts = vec![Fact {
            key: 3,
            value: said(0, Some(9)),
        }];
        let rows = vec![row(said(0, Some(1)), 0, 1), row(said(0, Some(2)), 0, 1)];
        let found = read(table(rows, facts)).unwrap();
        let (first, second) = (&found[0].1, &found[1].1);
        assert_eq!(
            (first.name.as_str(), second.name.as_str()),
            ("dfl-port.1", "dfl-port.2")
        );
        assert_eq!(second.extras[0].1, "dfl-port.9");
        let texts = [
            &second.name,
            &first.device_type,
            &second.host,
            &first.extras[0].0,
            &second.extras[0].1,
        ];
        for text in texts {
            assert!(first.name.shares_allocation_with(text), "{text}");
        }
        let copied = first.clone();
        drop(found);
        assert_eq!(copied.name, "dfl-port.1", "a copy keeps its answer's texts");
    }

    #[test]
    fn an_index_out_of_the_table_refuses_the_whole_answer_naming_the_row() {
        let fine = || row(said(0, Some(1)), 0, 0);
        let far_name = table(vec![fine(), row(said(5, None), 0, 0)], vec![]);
        let why = read(far_name).unwrap_err();
        assert_eq!(why, "row 1's name is text 5, and the table has 5 texts");
        let mut far_type = fine();
        far_type.device_type = u32::MAX;
        let why = read(table(vec![far_type], vec![])).unwrap_err();
        assert!(
            why.contains("row 0's device type is text 4294967295"),
            "{why}"
        );
        let past_the_facts = table(vec![row(said(0, None), 1, 1)], vec![]);
        let why = read(past_the_facts).unwrap_err();
        assert_eq!(why, "row 0's facts are 1 from 1, and the table has 0");
        let overflowing = table(vec![row(said(0, None), u32::MAX, u32::MAX)], vec![]);
        assert!(read(overflowing).is_err());
        let far_fact = vec![Fact {
            key: 0,
            value: said(9, Some(1)),
        }];
        let why = read(table(vec![row(said(0, None), 0, 1)], far_fact)).unwrap_err();
        assert!(why.contains("row 0's fact value is text 9"), "{why}");
    }

    #[test]
    fn a_small_table_that_writes_out_more_than_the_budget_fails_naming_it() {
        // 4096 rows share one range of 64 facts whose values are a 4000-byte text with a
        // number: a few KiB of table, and a GiB written out.
        let mut big = table(vec![], vec![]);
        big.texts.push("x".repeat(4000));
        let long = big.texts.len() as u32 - 1;
        big.extras = (0..64)
            .map(|n| Fact {
                key: 3,
                value: said(long, Some(n)),
            })
            .collect();
        big.rows = (0..4096).map(|n| row(said(0, Some(n)), 0, 64)).collect();
        let budget = Budget::new(BudgetKind::Host, 4 << 20);
        let err = from_table(big, &budget).unwrap_err();
        assert!(
            matches!(
                err.downcast_ref::<HostLimit>(),
                Some(HostLimit::HostMemory(over)) if over.limit == 4 << 20
            ),
            "{err}"
        );
        assert!(
            err.to_string().contains("load_policy.host_memory_mib"),
            "{err}"
        );
        assert_eq!(budget.left(), 4 << 20, "nothing stays charged");
        // The texts are made shared before any row is read: they count too.
        let mut texts_only = table(vec![], vec![]);
        texts_only.texts = vec!["t".repeat(1000); 10_000];
        let err = from_table(texts_only, &budget).unwrap_err();
        assert!(
            err.to_string().contains("load_policy.host_memory_mib"),
            "{err}"
        );
    }

    #[test]
    fn one_row_whose_facts_write_out_more_than_the_budget_is_stopped_within_a_check() {
        // One row of 64 facts, each a 256 KiB text with a number: 16 MiB written out by a
        // single row, against a 4 MiB budget.
        let mut big = table(vec![], vec![]);
        big.texts.push("x".repeat(256 << 10));
        let long = big.texts.len() as u32 - 1;
        big.extras = (0..64)
            .map(|n| Fact {
                key: 3,
                value: said(long, Some(n)),
            })
            .collect();
        big.rows = vec![row(said(0, Some(0)), 0, 64)];
        let budget = Budget::new(BudgetKind::Host, 4 << 20);
        let err = from_table(big, &budget).unwrap_err();
        let Some(HostLimit::HostMemory(over)) = err.downcast_ref::<HostLimit>() else {
            panic!("not the host-memory limit: {err}");
        };
        // Stopped at the first check past the limit: one fact (and a check's worth) over it,
        // not after the row's 16 MiB.
        assert!(
            over.bytes < (4 << 20) + 2 * (256 << 10) + BYTES_PER_BUDGET_CHECK,
            "the write-out ran to {} bytes before it was checked",
            over.bytes
        );
        assert_eq!(budget.left(), 4 << 20, "nothing stays charged");
    }
}
