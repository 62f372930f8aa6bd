//! The trait a plugin implements: one method per export of the `accel:plugin` world.

use crate::bindings::accel::plugin as host;
use crate::filter::host_matches;
use crate::types::{
    Allocation, AttributeInfo, BufferFlags, Discovered, Enqueued, Error, EventKind, Filter,
    KernelArgument, Launch, LaunchSize, MemoryKind, MemoryRange, OpenMode, PreparedBuffer,
    Properties,
};

/// The result type of every plugin call.
pub type Result<T, E = Error> = core::result::Result<T, E>;

/// A device plugin. Each method is one export of the `accel:plugin` world; the defaults answer
/// `unsupported` (or succeed, for the lifecycle calls and `close`, which need no work), so a
/// plugin overrides only what its devices do.
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

    /// The devices matching `filters` as one table (`inventory`, accel:plugin 0.3.0), which
    /// the host asks for before `enumerate`: each text said once, each device a row of
    /// numbers ([`TableBuilder`](crate::table::TableBuilder)), for a plugin with many devices. The
    /// default answers `unsupported`, and the host then asks `enumerate`.
    fn inventory(&mut self, filters: Vec<Filter>) -> Result<crate::types::DeviceTable> {
        Err(Error::unsupported("inventory"))
    }

    /// Fresh properties of `token` (the host normally answers from what `enumerate` gave).
    fn describe(&mut self, token: u64) -> Result<Properties> {
        Err(Error::unsupported("describe"))
    }

    fn open(&mut self, token: u64, mode: OpenMode) -> Result<u64> {
        Err(Error::unsupported("open"))
    }

    /// Takes back a handle `open` gave; the default succeeds, for a plugin that keeps nothing
    /// per handle.
    fn close(&mut self, handle: u64) -> Result<()> {
        Ok(())
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

    /// Enqueues `launches` on `queue` in order, stopping at the first refused (`batch`,
    /// accel:plugin 0.3.0). The default calls [`enqueue_launch`](Self::enqueue_launch) for
    /// each and keeps the last event: one entry into the plugin for the batch. A plugin whose
    /// queue lets a command run after a failed one, and that should report the failure, keeps
    /// that in the event it returns last.
    fn enqueue_launches(&mut self, queue: u64, launches: Vec<Launch>) -> Enqueued {
        let mut last = None;
        let (count, refused) = enqueue_in_turn(launches, |launch| {
            last = Some(self.enqueue_launch(queue, launch.kernel, launch.args, launch.size)?);
            Ok(())
        });
        Enqueued {
            count,
            last,
            refused,
        }
    }

    /// The sysfs-style attributes of `token`'s device (`afu_id`, `errors/errors`), which
    /// OPAE's sysobject, error and metric calls read.
    fn list_attributes(&mut self, token: u64) -> Result<Vec<AttributeInfo>> {
        Err(Error::unsupported("list-attributes"))
    }

    fn read_attribute(&mut self, token: u64, name: &str) -> Result<String> {
        Err(Error::unsupported("read-attribute"))
    }

    fn write_attribute(&mut self, token: u64, name: &str, value: &str) -> Result<()> {
        Err(Error::unsupported("write-attribute"))
    }
}

/// Enqueues `launches` in order with `enqueue`, stopping at the first it refuses: how many it
/// enqueued, and that refusal. The loop of [`Plugin::enqueue_launches`], for a plugin that
/// overrides it and keeps its events its own way; the answer adds the last launch's event.
pub fn enqueue_in_turn(
    launches: Vec<Launch>,
    mut enqueue: impl FnMut(Launch) -> Result<()>,
) -> (u32, Option<Error>) {
    let mut count = 0;
    for launch in launches {
        if let Err(err) = enqueue(launch) {
            return (count, Some(err));
        }
        count += 1;
    }
    (count, None)
}
