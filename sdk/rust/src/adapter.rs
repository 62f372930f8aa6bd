//! Connects a [`Plugin`] value to the generated export traits.

use core::any::Any;
use core::cell::RefCell;
use core::marker::PhantomData;

use crate::bindings::accel::plugin::{events::Event, image::Image, mmio::Region};
use crate::bindings::exports::accel::plugin::{
    attributes, batch, discovery, fpga, inventory, lifecycle, offload,
};
use crate::plugin::Plugin;
use crate::types::{
    Allocation, AttributeInfo, BufferFlags, Discovered, Enqueued, Error, EventKind, Filter,
    KernelArgument, Launch, LaunchSize, MemoryKind, MemoryRange, OpenMode, PreparedBuffer,
    Properties,
};

/// The type [`export_plugin!`](crate::export_plugin) exports: it forwards every export to the
/// one value of `P`.
pub struct Exports<P>(PhantomData<P>);

std::thread_local! {
    static INSTANCE: RefCell<Option<Box<dyn Any>>> = const { RefCell::new(None) };
}

/// Runs `f` on the plugin value, creating it on first use. Calls never nest: the host does
/// not call into a plugin while one of its calls is running.
fn with_plugin<P: Plugin, R>(f: impl FnOnce(&mut P) -> R) -> R {
    INSTANCE.with(|cell| {
        let mut slot = cell.borrow_mut();
        let value = slot.get_or_insert_with(|| Box::new(P::default()));
        let plugin = value
            .downcast_mut::<P>()
            .expect("one plugin type per component");
        f(plugin)
    })
}

impl<P: Plugin> lifecycle::Guest for Exports<P> {
    fn configure(config: String) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.configure(&config))
    }
    fn initialize() -> Result<(), Error> {
        with_plugin(|p: &mut P| p.initialize())
    }
    fn finalize() -> Result<(), Error> {
        with_plugin(|p: &mut P| p.finalize())
    }
    fn supports_device(device_type: String) -> bool {
        with_plugin(|p: &mut P| p.supports_device(&device_type))
    }
    fn supports_host(host: String) -> bool {
        with_plugin(|p: &mut P| p.supports_host(&host))
    }
}

impl<P: Plugin> discovery::Guest for Exports<P> {
    fn enumerate(filters: Vec<Filter>) -> Result<Vec<Discovered>, Error> {
        with_plugin(|p: &mut P| p.enumerate(filters))
    }
    fn describe(token: u64) -> Result<Properties, Error> {
        with_plugin(|p: &mut P| p.describe(token))
    }
}

impl<P: Plugin> inventory::Guest for Exports<P> {
    fn enumerate(filters: Vec<Filter>) -> Result<inventory::DeviceTable, Error> {
        with_plugin(|p: &mut P| p.inventory(filters))
    }
}

impl<P: Plugin> batch::Guest for Exports<P> {
    fn enqueue_launches(queue: u64, launches: Vec<Launch>) -> Enqueued {
        with_plugin(|p: &mut P| p.enqueue_launches(queue, launches))
    }
}

impl<P: Plugin> fpga::Guest for Exports<P> {
    fn open(token: u64, mode: OpenMode) -> Result<u64, Error> {
        with_plugin(|p: &mut P| p.open(token, mode))
    }
    fn close(handle: u64) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.close(handle))
    }
    fn map_mmio(handle: u64, index: u32) -> Result<Region, Error> {
        with_plugin(|p: &mut P| p.map_mmio(handle, index))
    }
    fn prepare_buffer(handle: u64, size: u64, flags: BufferFlags) -> Result<PreparedBuffer, Error> {
        with_plugin(|p: &mut P| p.prepare_buffer(handle, size, flags))
    }
    fn release_buffer(handle: u64, id: u64) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.release_buffer(handle, id))
    }
    fn io_address(handle: u64, id: u64) -> Result<u64, Error> {
        with_plugin(|p: &mut P| p.io_address(handle, id))
    }
    fn reset(handle: u64) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.reset(handle))
    }
    fn reconfigure(handle: u64, slot: u32, image: &Image) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.reconfigure(handle, slot, image))
    }
    fn register_event(handle: u64, kind: EventKind, vector: u32) -> Result<Event, Error> {
        with_plugin(|p: &mut P| p.register_event(handle, kind, vector))
    }
}

impl<P: Plugin> offload::Guest for Exports<P> {
    fn mem_alloc(
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> Result<Allocation, Error> {
        with_plugin(|p: &mut P| p.mem_alloc(handle, kind, size, bank))
    }
    fn mem_free(handle: u64, id: u64) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.mem_free(handle, id))
    }
    fn program_create(handle: u64, image: &Image) -> Result<u64, Error> {
        with_plugin(|p: &mut P| p.program_create(handle, image))
    }
    fn program_release(program: u64) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.program_release(program))
    }
    fn kernel_get(program: u64, name: String) -> Result<u64, Error> {
        with_plugin(|p: &mut P| p.kernel_get(program, &name))
    }
    fn queue_create(handle: u64) -> Result<u64, Error> {
        with_plugin(|p: &mut P| p.queue_create(handle))
    }
    fn queue_release(queue: u64) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.queue_release(queue))
    }
    fn enqueue_memcpy(
        queue: u64,
        dst: MemoryRange,
        src: MemoryRange,
        size: u64,
    ) -> Result<Event, Error> {
        with_plugin(|p: &mut P| p.enqueue_memcpy(queue, dst, src, size))
    }
    fn enqueue_launch(
        queue: u64,
        kernel: u64,
        args: Vec<KernelArgument>,
        size: LaunchSize,
    ) -> Result<Event, Error> {
        with_plugin(|p: &mut P| p.enqueue_launch(queue, kernel, args, size))
    }
}

impl<P: Plugin> attributes::Guest for Exports<P> {
    fn list_attributes(token: u64) -> Result<Vec<AttributeInfo>, Error> {
        with_plugin(|p: &mut P| p.list_attributes(token))
    }
    fn read_attribute(token: u64, name: String) -> Result<String, Error> {
        with_plugin(|p: &mut P| p.read_attribute(token, &name))
    }
    fn write_attribute(token: u64, name: String, value: String) -> Result<(), Error> {
        with_plugin(|p: &mut P| p.write_attribute(token, &name, &value))
    }
}
