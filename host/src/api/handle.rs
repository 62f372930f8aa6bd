//! Open accelerators and what they hand out: MMIO regions and DMA buffers, which the
//! application uses directly (bounds-checked, no call into wasm).

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::inner::HostInner;
use super::token::Token;
use crate::devices::{
    CheckedMmio, Completion, DmaMemory, MmioFault, PollOutcome, poll_memory_until,
};
use crate::error::{Error, Result};
use crate::manager::PluginSlot;
use crate::manager::handles::HandleKey;
use crate::manager::lease::Lease;
use crate::runtime::plugin::{Answer, Calls};
use crate::state::Usage;

/// An open accelerator. Clones share the one open; it is closed by [`Handle::close`] or when
/// the last clone, and the last [`DmaBuffer`] prepared through it, is dropped.
#[derive(Clone)]
pub struct Handle {
    inner: Arc<HandleInner>,
}

struct HandleInner {
    host: Arc<HostInner>,
    key: HandleKey,
    token: Token,
    lease: Arc<Lease>,
    closed: AtomicBool,
    /// What the handle table holds for `key`, kept here too: a call on the handle needs no
    /// table lookup (and no lock), since the lease ends when the handle is closed or its
    /// instance ends.
    target: Target,
}

/// The plugin, instance and plugin-side handle number of an open.
#[derive(Clone)]
pub(crate) struct Target {
    pub slot: Arc<PluginSlot>,
    pub generation: u64,
    pub plugin_handle: u64,
}

impl Handle {
    pub(crate) fn new(
        host: Arc<HostInner>,
        key: HandleKey,
        token: Token,
        lease: Arc<Lease>,
        target: Target,
    ) -> Self {
        Handle {
            inner: Arc::new(HandleInner {
                host,
                key,
                token,
                lease,
                closed: AtomicBool::new(false),
                target,
            }),
        }
    }

    /// The token the handle was opened from.
    pub fn token(&self) -> &Token {
        &self.inner.token
    }

    /// False once the handle was closed or its plugin instance ended.
    pub fn is_open(&self) -> bool {
        !self.inner.closed.load(Ordering::Acquire) && self.inner.lease.is_live()
    }

    /// The plugin, instance and plugin-side handle number to call. The lease ends when the
    /// handle is closed (or its instance ends), so no table lookup is needed.
    #[inline]
    fn target(&self) -> Result<(&Arc<PluginSlot>, u64, u64)> {
        self.inner.lease.check("handle")?;
        if self.inner.closed.load(Ordering::Acquire) {
            return Err(Error::Stale {
                what: "handle",
                why: "it was closed".into(),
            });
        }
        let t = &self.inner.target;
        Ok((&t.slot, t.generation, t.plugin_handle))
    }

    /// Holds `completion`, an event the plugin handed out through this handle, to the
    /// plugin's `load_policy.event_deadline_ms`.
    pub(crate) fn watch(&self, completion: &Arc<Completion>) {
        let target = &self.inner.target;
        target.slot.watch_event(completion, target.generation);
    }

    /// `Ok` while the handle is open.
    pub(crate) fn check_open(&self) -> Result<()> {
        self.target().map(drop)
    }

    /// Whether `other` is a clone of this handle (the same open).
    pub(crate) fn same_open(&self, other: &Handle) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    /// Calls the plugin about this handle; `f` gets the plugin-side handle number.
    pub(crate) fn call<R: fmt::Debug>(
        &self,
        call: &'static str,
        args: fmt::Arguments<'_>,
        f: impl FnOnce(&mut Calls<'_>, u64) -> wasmtime::Result<Answer<R>>,
    ) -> Result<R> {
        let (slot, generation, handle) = self.target()?;
        slot.call(
            call,
            Some(generation),
            format_args!("handle={handle} {args}"),
            |p| f(p, handle),
        )
    }

    /// Like [`call`](Self::call), for releases: nothing to do once the handle is closed or
    /// its plugin instance ended (everything it held went with it).
    pub(crate) fn call_if_open(
        &self,
        call: &'static str,
        args: fmt::Arguments<'_>,
        f: impl FnOnce(&mut Calls<'_>, u64) -> wasmtime::Result<Answer<()>>,
    ) -> Result<()> {
        if !self.is_open() {
            return Ok(());
        }
        match self.call(call, args, f) {
            Err(Error::Stale { .. }) | Err(Error::PluginUnavailable { .. }) => Ok(()),
            other => other,
        }
    }

    /// Maps MMIO region `index` (0 is the AFU's registers), one of the `num_mmio` regions the
    /// device declared.
    pub fn map_mmio(&self, index: u32) -> Result<MmioRegion> {
        let declared = self.inner.token.properties().num_mmio;
        if index >= declared {
            return Err(Error::InvalidArgument {
                call: "map-mmio",
                message: format!(
                    "{} has {declared} MMIO region(s) (num_mmio), so there is no region {index}",
                    self.inner.token.id()
                ),
            });
        }
        let region = self.call("map-mmio", format_args!("index={index}"), |p, handle| {
            p.map_mmio(handle, index)
        })?;
        Ok(MmioRegion {
            mmio: region.mmio,
            device: region.device.into(),
            index,
            lease: self.inner.lease.clone(),
            usage: self.inner.token.slot().usage().clone(),
        })
    }

    /// Prepares a buffer of at least `size` bytes that the device can reach by DMA.
    pub fn prepare_buffer(&self, size: u64) -> Result<DmaBuffer> {
        self.prepare(size, false)
    }

    /// Like [`prepare_buffer`](Self::prepare_buffer), for a buffer the device only reads.
    pub fn prepare_read_only_buffer(&self, size: u64) -> Result<DmaBuffer> {
        self.prepare(size, true)
    }

    fn prepare(&self, size: u64, read_only: bool) -> Result<DmaBuffer> {
        let prepared = self.call(
            "prepare-buffer",
            format_args!("size={size} read_only={read_only}"),
            |p, handle| p.prepare_buffer(handle, size, read_only),
        )?;
        let (plugin_id, memory, iova) = (prepared.id, prepared.memory, prepared.iova);
        Ok(DmaBuffer {
            device: self.device_name(),
            memory,
            iova,
            id: next_buffer_id(),
            plugin_id,
            handle: self.clone(),
            released: AtomicBool::new(false),
        })
    }

    /// Checks an image a family's driver would load, before any plugin sees it.
    pub(super) fn check_image(&self, image: &[u8]) -> std::result::Result<(), String> {
        self.inner.host.manager.catalog.check_image(image)
    }

    /// Resets the accelerator.
    pub fn reset(&self) -> Result<()> {
        self.call("reset", format_args!(""), |p, handle| p.reset(handle))
    }

    /// Loads `image` (a bitstream or device binary) into reconfigurable slot `slot`. An image
    /// the host recognizes (an xclbin) is validated first; the plugin sees the image through
    /// host reads, and the bytes are not copied into wasm.
    pub fn reconfigure(&self, slot_index: u32, image: &[u8]) -> Result<()> {
        self.check_image(image)
            .map_err(|message| Error::InvalidArgument {
                call: "reconfigure",
                message,
            })?;
        let bytes: Arc<[u8]> = image.into();
        self.call(
            "reconfigure",
            format_args!("slot={slot_index} image={} bytes", bytes.len()),
            |p, handle| p.reconfigure(handle, slot_index, bytes),
        )
    }

    /// Closes the accelerator for every clone of this handle. Buffers and MMIO regions
    /// obtained through it stop working. Closing twice, or after the plugin instance ended,
    /// does nothing.
    pub fn close(self) -> Result<()> {
        self.inner.close()
    }

    fn device_name(&self) -> Arc<str> {
        self.inner.token.id().into()
    }

    fn release_buffer(&self, id: u64) -> Result<()> {
        self.call("release-buffer", format_args!("id={id}"), |p, handle| {
            p.release_buffer(handle, id)
        })
    }
}

impl HandleInner {
    fn close(&self) -> Result<()> {
        if self.closed.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let Some(open) = self.host.manager.remove_handle(self.key) else {
            return Ok(());
        };
        let instance_alive = open.lease.is_live();
        open.lease.revoke("the handle was closed");
        if !instance_alive {
            return Ok(());
        }
        let handle = open.plugin_handle;
        let result = open.slot.call(
            "close",
            Some(open.generation),
            format_args!("handle={handle}"),
            |p| p.close(handle),
        );
        match result {
            Err(Error::PluginUnavailable { .. }) | Err(Error::Stale { .. }) => Ok(()),
            other => other,
        }
    }
}

impl Drop for HandleInner {
    fn drop(&mut self) {
        if let Err(err) = self.close() {
            tracing::warn!(device = %self.token.id(), "closing a dropped handle: {err}");
        }
    }
}

impl fmt::Debug for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Handle")
            .field("device", &self.inner.token.id())
            .field("open", &self.is_open())
            .finish()
    }
}

/// A mapped MMIO region. Every access is bounds- and alignment-checked on the host and goes
/// straight to the device (or emulator); none enters wasm. It stops working when its handle
/// is closed.
#[derive(Clone)]
pub struct MmioRegion {
    mmio: CheckedMmio,
    device: Arc<str>,
    index: u32,
    lease: Arc<Lease>,
    /// The serving plugin's counts: accesses through the regions it mapped are its MMIO use.
    usage: Arc<Usage>,
}

impl MmioRegion {
    /// The region's size in bytes.
    pub fn size(&self) -> u64 {
        self.mmio.size()
    }

    /// The region index it was mapped from.
    pub fn index(&self) -> u32 {
        self.index
    }

    fn fault(&self, fault: MmioFault) -> Error {
        Error::Mmio {
            device: self.device.to_string(),
            fault,
        }
    }

    /// Reads the 32-bit register at byte `offset` (4-byte aligned, inside the region).
    #[inline]
    pub fn read32(&self, offset: u64) -> Result<u32> {
        self.lease.check("MMIO region")?;
        self.usage.mmio_read(1);
        self.mmio.read32(offset).map_err(|f| self.fault(f))
    }

    /// Reads the 64-bit register at byte `offset` (8-byte aligned, inside the region).
    #[inline]
    pub fn read64(&self, offset: u64) -> Result<u64> {
        self.lease.check("MMIO region")?;
        self.usage.mmio_read(1);
        self.mmio.read64(offset).map_err(|f| self.fault(f))
    }

    /// Writes the 32-bit register at byte `offset` (4-byte aligned, inside the region).
    #[inline]
    pub fn write32(&self, offset: u64, value: u32) -> Result<()> {
        self.lease.check("MMIO region")?;
        self.usage.mmio_written(1);
        self.mmio.write32(offset, value).map_err(|f| self.fault(f))
    }

    /// Writes the 64-bit register at byte `offset` (8-byte aligned, inside the region).
    #[inline]
    pub fn write64(&self, offset: u64, value: u64) -> Result<()> {
        self.lease.check("MMIO region")?;
        self.usage.mmio_written(1);
        self.mmio.write64(offset, value).map_err(|f| self.fault(f))
    }

    /// Reads the 64-bit register at `offset` until `value & mask == expected`, for up to
    /// `timeout`; returns the matching value.
    pub fn poll64(&self, offset: u64, mask: u64, expected: u64, timeout: Duration) -> Result<u64> {
        self.lease.check("MMIO region")?;
        self.usage.mmio_read(1);
        self.mmio
            .poll64(offset, mask, expected, Instant::now() + timeout)
            .map_err(|f| self.fault(f))
    }
}

impl fmt::Debug for MmioRegion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MmioRegion")
            .field("device", &self.device)
            .field("index", &self.index)
            .field("size", &self.size())
            .finish()
    }
}

/// `memory`'s memfd, duplicated, if it has one.
pub(crate) fn shared_descriptor(memory: &DmaMemory) -> Result<Option<std::os::fd::OwnedFd>> {
    match memory.share() {
        Ok(fd) => Ok(Some(fd)),
        Err(err) if err.raw_os_error() == Some(libc::ENOTSUP) => Ok(None),
        Err(err) => Err(Error::Internal(format!(
            "duplicating a shared memory's descriptor: {err}"
        ))),
    }
}

/// A buffer id never handed out before in this process.
fn next_buffer_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// Host memory shared with a device (OPAE's prepared buffer). The application reads and
/// writes it directly; the device reaches it at [`iova`](Self::iova). Released by
/// [`release`](Self::release) or on drop.
pub struct DmaBuffer {
    device: Arc<str>,
    memory: Arc<DmaMemory>,
    iova: u64,
    /// The host's id, which callers see.
    id: u64,
    /// The plugin's id, which only the plugin's calls see.
    plugin_id: u64,
    handle: Handle,
    released: AtomicBool,
}

impl DmaBuffer {
    /// The size in bytes (the requested size rounded up to whole pages).
    pub fn size(&self) -> u64 {
        self.memory.len()
    }

    /// The device's address of the first byte.
    pub fn iova(&self) -> u64 {
        self.iova
    }

    /// The buffer's id (OPAE's workspace id): assigned by the host, never given to two
    /// buffers of one process, whatever the plugin numbers its buffers.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// The address of the buffer's first byte in this process, for callers that share the
    /// memory by pointer as OPAE's `fpgaPrepareBuffer` does (the C API). The pointer stays
    /// valid, for [`size`](Self::size) bytes, as long as this `DmaBuffer` lives, even after
    /// its handle is closed; accesses through it are not checked, and the device may write
    /// the memory concurrently, as DMA does.
    pub fn host_ptr(&self) -> *mut u8 {
        self.memory.user_address() as usize as *mut u8
    }

    /// A descriptor of the buffer's memory for another process to map (a sealed memfd whose
    /// size cannot change), or `None` when the memory cannot be shared: the host was not
    /// built with [`shareable_memory`](crate::HostBuilder::shareable_memory), or a driver
    /// mapped it. The mapping stays valid in the other process after the buffer is released;
    /// the device no longer reaches it then.
    pub fn share(&self) -> Result<Option<std::os::fd::OwnedFd>> {
        self.live()?;
        shared_descriptor(&self.memory)
    }

    fn live(&self) -> Result<()> {
        if self.released.load(Ordering::Acquire) {
            return Err(Error::Stale {
                what: "DMA buffer",
                why: "it was released".into(),
            });
        }
        self.handle.inner.lease.check("DMA buffer")
    }

    fn range(&self, source: crate::devices::RangeError) -> Error {
        Error::Buffer {
            device: self.device.to_string(),
            id: self.id,
            source,
        }
    }

    /// Copies `data` into the buffer at byte `offset`; the range must lie inside the buffer.
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.live()?;
        self.memory.write(offset, data).map_err(|e| self.range(e))
    }

    /// Fills `out` from the buffer, starting at byte `offset`; the range must lie inside it.
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        self.live()?;
        self.memory.read(offset, out).map_err(|e| self.range(e))
    }

    /// Sets `len` bytes starting at byte `offset` to `byte`.
    pub fn fill(&self, offset: u64, len: u64, byte: u8) -> Result<()> {
        self.live()?;
        self.memory
            .fill(offset, len, byte)
            .map_err(|e| self.range(e))
    }

    /// Reads the little-endian word at `offset` (8-byte aligned).
    pub fn read_u64(&self, offset: u64) -> Result<u64> {
        self.live()?;
        self.memory.load_u64(offset).map_err(|e| self.range(e))
    }

    /// Writes the little-endian word at `offset` (8-byte aligned).
    pub fn write_u64(&self, offset: u64, value: u64) -> Result<()> {
        self.live()?;
        self.memory
            .store_u64(offset, value)
            .map_err(|e| self.range(e))
    }

    /// Waits on the host until the word at `offset` has `value & mask == expected`, for up to
    /// `timeout`; returns the matching value.
    pub fn poll_u64(
        &self,
        offset: u64,
        mask: u64,
        expected: u64,
        timeout: Duration,
    ) -> Result<u64> {
        self.live()?;
        let deadline = Instant::now() + timeout;
        match poll_memory_until(&self.memory, deadline, mask, expected, || {
            self.live()?;
            self.memory.load_u64(offset).map_err(|e| self.range(e))
        })? {
            PollOutcome::Matched(value) => Ok(value),
            PollOutcome::TimedOut(last) => Err(Error::WaitTimeout {
                what: format!(
                    "word {offset:#x} of DMA buffer {} on {}",
                    self.id, self.device
                ),
                waited_ms: timeout.as_millis() as u64,
                last,
            }),
        }
    }

    /// Unmaps the buffer from the device; its memory is freed once nothing uses it.
    pub fn release(self) -> Result<()> {
        self.release_once()
    }

    fn release_once(&self) -> Result<()> {
        if self.released.swap(true, Ordering::AcqRel) || !self.handle.is_open() {
            return Ok(());
        }
        self.handle.release_buffer(self.plugin_id)
    }
}

impl Drop for DmaBuffer {
    fn drop(&mut self) {
        if let Err(err) = self.release_once() {
            tracing::warn!(device = %self.device, id = self.id, "releasing a dropped buffer: {err}");
        }
    }
}

impl fmt::Debug for DmaBuffer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DmaBuffer")
            .field("device", &self.device)
            .field("id", &self.id)
            .field("iova", &format_args!("{:#x}", self.iova))
            .field("size", &self.size())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use crate::families::dfl::abi::nlb0;
    use crate::{ComponentCache, Config, Filter, Host, OpenMode};

    #[test]
    fn host_ptr_is_the_buffer_memory() {
        // No compile cache: a unit test does not write the user's.
        let host = Host::builder()
            .config(Config::embedded_default())
            .compile_cache(ComponentCache::at(None))
            .build()
            .unwrap();
        let token = host
            .enumerate(&[Filter::new().guid(nlb0::AFU_ID)])
            .tokens
            .remove(0);
        let handle = host.open(&token, OpenMode::Exclusive).unwrap();
        let buffer = handle.prepare_buffer(4096).unwrap();
        let ptr = buffer.host_ptr();
        assert!(!ptr.is_null());
        // SAFETY: the buffer is at least 4096 bytes and lives until the end of the test.
        unsafe {
            ptr.add(100).write(0x5A);
            assert_eq!(ptr.add(200).read(), 0);
        }
        let mut byte = [0u8; 1];
        buffer.read(100, &mut byte).unwrap();
        assert_eq!(byte[0], 0x5A);
        buffer.write(200, &[0xC3]).unwrap();
        // SAFETY: as above.
        assert_eq!(unsafe { ptr.add(200).read() }, 0xC3);
        handle.close().unwrap();
    }
}
