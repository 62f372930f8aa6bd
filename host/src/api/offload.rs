//! The offload-style half of the API, as liboffload and Unified Runtime offer it: memory of
//! host, device and shared kinds, programs from device images, kernels by name, in-order
//! queues, memcpy and kernel launches, and the events every enqueue returns. Objects are
//! reference counted (clone to retain, drop to release); the device handle they came from
//! stays open while any of them lives. Waiting happens on the host, never in the plugin.

use std::collections::VecDeque;
use std::fmt;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::handle::Handle;
use super::staging::{Copying, KEPT, PIECE, Staged, StagingPool};
use super::token::Token;
use crate::devices::{Completion, CompletionState, DmaMemory, lock};
use crate::error::{Error, Result};
use crate::runtime::plugin::{LaunchArg, MemoryRange};
use crate::types::{EventKind, LAUNCHES_PER_BATCH, MemoryKind};

/// An allocation. Released (freed on the device) when the last clone is dropped and no
/// queued command uses it any more.
#[derive(Clone)]
pub struct Memory {
    inner: Arc<MemoryInner>,
}

struct MemoryInner {
    handle: Handle,
    id: u64,
    kind: MemoryKind,
    size: u64,
    device_address: u64,
    host: Option<Arc<DmaMemory>>,
}

impl Drop for MemoryInner {
    fn drop(&mut self) {
        let id = self.id;
        let result = self
            .handle
            .call_if_open("mem-free", format_args!("id={id}"), |p, h| {
                p.mem_free(h, id)
            });
        if let Err(err) = result {
            tracing::warn!(device = %self.handle.token().id(), id, "freeing memory: {err}");
        }
    }
}

impl Memory {
    /// The size in bytes (at least what was asked for).
    pub fn size(&self) -> u64 {
        self.inner.size
    }

    /// The kind it was allocated as.
    pub fn kind(&self) -> MemoryKind {
        self.inner.kind
    }

    /// The address kernels use.
    pub fn device_address(&self) -> u64 {
        self.inner.device_address
    }

    fn host(&self, call: &'static str) -> Result<&DmaMemory> {
        self.inner.handle.check_open()?;
        self.inner
            .host
            .as_deref()
            .ok_or_else(|| Error::InvalidArgument {
                call,
                message: "device memory is not host-visible: copy it with Queue::enqueue_memcpy"
                    .into(),
            })
    }

    fn range(&self, err: crate::devices::RangeError) -> Error {
        Error::Buffer {
            device: self.inner.handle.token().id(),
            id: self.inner.id,
            source: err,
        }
    }

    /// A descriptor of the host-visible memory for another process to map, as
    /// [`DmaBuffer::share`](crate::DmaBuffer::share) gives; `None` for device memory and
    /// memory that cannot be shared.
    pub fn share(&self) -> Result<Option<std::os::fd::OwnedFd>> {
        self.inner.handle.check_open()?;
        match &self.inner.host {
            Some(memory) => super::handle::shared_descriptor(memory),
            None => Ok(None),
        }
    }

    /// The address of the first byte in this process, for host and shared memory (`None`
    /// for device memory): for callers that hand the memory out by pointer, as OpenCL's
    /// unified shared memory does. It stays valid for [`size`](Self::size) bytes while this
    /// `Memory` lives; accesses through it are not checked, and the device may write the
    /// memory concurrently, as DMA does.
    pub fn host_ptr(&self) -> Option<*mut u8> {
        self.inner
            .host
            .as_deref()
            .map(|memory| memory.user_address() as usize as *mut u8)
    }

    /// Writes `data` at `offset` (host and shared memory only).
    pub fn write(&self, offset: u64, data: &[u8]) -> Result<()> {
        self.host("Memory::write")?
            .write(offset, data)
            .map_err(|e| self.range(e))
    }

    /// Reads `out.len()` bytes at `offset` (host and shared memory only).
    pub fn read(&self, offset: u64, out: &mut [u8]) -> Result<()> {
        self.host("Memory::read")?
            .read(offset, out)
            .map_err(|e| self.range(e))
    }

    fn same_device(&self, handle: &Handle, call: &'static str) -> Result<()> {
        if self.inner.handle.same_open(handle) {
            Ok(())
        } else {
            Err(Error::InvalidArgument {
                call,
                message: "the memory was allocated through another device handle".into(),
            })
        }
    }
}

impl fmt::Debug for Memory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Memory")
            .field("id", &self.inner.id)
            .field("kind", &self.inner.kind)
            .field("size", &self.inner.size)
            .field(
                "device_address",
                &format_args!("{:#x}", self.inner.device_address),
            )
            .finish()
    }
}

/// A program created from a device image (for XRT: an xclbin).
#[derive(Clone)]
pub struct Program {
    inner: Arc<ProgramInner>,
}

struct ProgramInner {
    handle: Handle,
    id: u64,
}

impl Drop for ProgramInner {
    fn drop(&mut self) {
        let id = self.id;
        let result =
            self.handle
                .call_if_open("program-release", format_args!("program={id}"), |p, _| {
                    p.program_release(id)
                });
        if let Err(err) = result {
            tracing::warn!(device = %self.handle.token().id(), id, "releasing a program: {err}");
        }
    }
}

impl Program {
    /// Looks up the kernel `name`.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let program = self.inner.id;
        let id = self.inner.handle.call(
            "kernel-get",
            format_args!("program={program} name={name}"),
            |p, _| p.kernel_get(program, name),
        )?;
        Ok(Kernel {
            inner: Arc::new(KernelInner {
                program: self.clone(),
                id,
                name: name.to_string(),
            }),
        })
    }
}

impl fmt::Debug for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Program")
            .field("id", &self.inner.id)
            .finish()
    }
}

/// A kernel of a program; it keeps the program alive.
#[derive(Clone)]
pub struct Kernel {
    inner: Arc<KernelInner>,
}

struct KernelInner {
    program: Program,
    id: u64,
    name: String,
}

impl Kernel {
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Kernel")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl fmt::Debug for Queue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Queue").field("id", &self.inner.id).finish()
    }
}

/// One kernel argument.
#[derive(Clone, Copy, Debug)]
pub enum Arg<'a> {
    /// A buffer: the kernel gets its device address.
    Memory(&'a Memory),
    /// A buffer at a byte offset.
    MemoryAt(&'a Memory, u64),
    /// A 32-bit scalar.
    U32(u32),
    /// A signed 32-bit scalar.
    I32(i32),
    /// A 64-bit scalar.
    U64(u64),
    /// Raw bytes for a scalar of that size.
    Bytes(&'a [u8]),
}

/// How a completed, failed or pending command stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventStatus {
    /// Still queued or running.
    Pending,
    /// Finished successfully.
    Complete,
    /// Finished with an error; the message says why.
    Failed(String),
}

/// The completion of one enqueued command, waited on the host.
#[derive(Clone)]
pub struct Event {
    inner: Arc<EventInner>,
}

struct EventInner {
    completion: Arc<Completion>,
    what: What,
}

/// What an event is about, for its errors and `Debug`: kept as the parts and written out only
/// when shown, so that enqueueing formats no text.
enum What {
    Text(String),
    /// `<command> on <device>`, such as `launch of vadd on xocl/emu:xocl0`.
    Command {
        command: &'static str,
        /// Weak: an event must not keep the kernel, its program or the device open.
        kernel: Option<std::sync::Weak<KernelInner>>,
        device: Token,
    },
}

impl What {
    fn text(&self) -> String {
        match self {
            What::Text(text) => text.clone(),
            What::Command {
                command,
                kernel,
                device,
            } => match kernel {
                Some(kernel) => {
                    let name = kernel
                        .upgrade()
                        .map_or_else(|| "a released kernel".to_string(), |k| k.name.clone());
                    format!("{command} {name} on {}", device.id())
                }
                None => format!("{command} on {}", device.id()),
            },
        }
    }
}

impl Event {
    pub(crate) fn new(completion: Arc<Completion>, what: String) -> Self {
        Event {
            inner: Arc::new(EventInner {
                completion,
                what: What::Text(what),
            }),
        }
    }

    /// An event of a command that needed the device for nothing, finished at once.
    fn finished(what: &str) -> Self {
        let completion = Arc::new(Completion::default());
        completion.finish(CompletionState::Complete);
        Event::new(completion, what.into())
    }

    /// Where the command stands, without waiting.
    pub fn status(&self) -> EventStatus {
        match self.inner.completion.state() {
            CompletionState::Pending => EventStatus::Pending,
            CompletionState::Complete => EventStatus::Complete,
            CompletionState::Failed(why) => EventStatus::Failed(why.to_string()),
        }
    }

    /// Runs `f` once the command finished, successfully or not (at once if it already has),
    /// on the thread that finishes it; for callers that signal completion themselves, such as
    /// the C API's event file descriptors. `f` must not block.
    pub fn on_finish(&self, f: impl FnOnce() + Send + 'static) {
        self.inner.completion.on_finish(f);
    }

    /// Waits until the command finished: at the latest by the plugin's
    /// `load_policy.event_deadline_ms` after it was handed out, when the host fails an event
    /// still pending ([`Error::EventExpired`]).
    pub fn wait(&self) -> Result<()> {
        self.wait_until(None)
    }

    /// Waits up to `timeout` for the command to finish.
    pub fn wait_timeout(&self, timeout: Duration) -> Result<()> {
        self.wait_until(Some(timeout))
    }

    fn wait_until(&self, timeout: Option<Duration>) -> Result<()> {
        let deadline = timeout
            .and_then(|t| Instant::now().checked_add(t))
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(365 * 24 * 3600));
        match self.inner.completion.wait(deadline) {
            CompletionState::Complete => Ok(()),
            CompletionState::Failed(why) if self.inner.completion.expired() => {
                Err(Error::EventExpired {
                    what: self.inner.what.text(),
                    message: why.to_string(),
                })
            }
            CompletionState::Failed(why) => Err(Error::Device {
                device: self.inner.what.text(),
                message: why.to_string(),
            }),
            CompletionState::Pending => Err(Error::WaitTimeout {
                what: self.inner.what.text(),
                waited_ms: timeout.map_or(0, |t| t.as_millis() as u64),
                last: 0,
            }),
        }
    }
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Event")
            .field("what", &self.inner.what.text())
            .field("status", &self.status())
            .finish()
    }
}

/// What a queued command keeps alive until it finished: its kernel and its memory, or a
/// batch's launches. Held only to be dropped then.
struct Kept {
    kernel: Option<Kernel>,
    _memory: Vec<Memory>,
    _launches: Vec<DeferredLaunch>,
}

/// A launch waiting in its queue to be handed to the plugin with others
/// ([`Queue::defer_launch`]), with what it uses.
struct DeferredLaunch {
    kernel: Kernel,
    args: Vec<LaunchArg>,
    _memory: Vec<Memory>,
}

/// The launches a queue holds back, oldest first, and the first failure met handing them on
/// that no caller was told of yet.
#[derive(Default)]
struct Deferred {
    launches: Vec<DeferredLaunch>,
    failure: Option<Error>,
}

impl Staged for Memory {
    fn size(&self) -> u64 {
        Memory::size(self)
    }
}

impl Copying for Event {
    fn finished(&self) -> bool {
        self.status() != EventStatus::Pending
    }

    fn wait_finished(&self) {
        // How the copy ended is its command's to report; the buffer serves again either way.
        let _ = self.wait();
    }
}

/// An in-order queue: each command starts after the previous one finished.
#[derive(Clone)]
pub struct Queue {
    inner: Arc<QueueInner>,
}

struct QueueInner {
    handle: Handle,
    id: u64,
    /// Commands not known to have finished, with what they use; oldest first.
    in_flight: Mutex<VecDeque<(Event, Kept)>>,
    /// Launches not yet handed to the plugin. Locked while they are handed on, so that a
    /// command after them, from any thread, reaches the plugin after them.
    deferred: Mutex<Deferred>,
    /// Set once the plugin answered that it has no `batch` export: launches go one by one.
    one_by_one: std::sync::atomic::AtomicBool,
    /// Host memory that transfers to and from device memory go through.
    staging: StagingPool<Memory, Event>,
}

impl Drop for QueueInner {
    fn drop(&mut self) {
        // The held-back launches run before the queue goes; their failures have nobody to
        // go to but the log.
        if let Err(err) = self.flush() {
            tracing::warn!(device = %self.handle.token().id(), id = self.id, "a launch held back in a released queue: {err}");
        }
        // Drain before release: a queue's commands finish before their memory is freed.
        let in_flight = std::mem::take(&mut *lock(&self.in_flight));
        if let Some((last, _)) = in_flight.back() {
            let _ = last.wait();
        }
        drop(in_flight);
        let id = self.id;
        let result =
            self.handle
                .call_if_open("queue-release", format_args!("queue={id}"), |p, _| {
                    p.queue_release(id)
                });
        if let Err(err) = result {
            tracing::warn!(device = %self.handle.token().id(), id, "releasing a queue: {err}");
        }
    }
}

impl Queue {
    fn range(
        memory: &Memory,
        offset: u64,
        size: u64,
        what: &str,
        call: &'static str,
    ) -> Result<MemoryRange> {
        if offset
            .checked_add(size)
            .is_none_or(|end| end > memory.size())
        {
            return Err(Error::InvalidArgument {
                call,
                message: format!(
                    "the {what}: {size} bytes at offset {offset} run past the {}-byte allocation",
                    memory.size()
                ),
            });
        }
        Ok(MemoryRange {
            allocation: memory.inner.id,
            offset,
        })
    }

    /// Copies `size` bytes from `src` at `src_offset` to `dst` at `dst_offset`, in any
    /// direction (host↔device, device↔device), after the queue's previous command.
    pub fn enqueue_memcpy(
        &self,
        dst: &Memory,
        dst_offset: u64,
        src: &Memory,
        src_offset: u64,
        size: u64,
    ) -> Result<Event> {
        let handle = &self.inner.handle;
        dst.same_device(handle, "enqueue-memcpy")?;
        src.same_device(handle, "enqueue-memcpy")?;
        let to = Self::range(dst, dst_offset, size, "destination", "enqueue-memcpy")?;
        let from = Self::range(src, src_offset, size, "source", "enqueue-memcpy")?;
        let _after = self.inner.deferred_handed_on();
        let queue = self.inner.id;
        let event = handle.call(
            "enqueue-memcpy",
            format_args!("queue={queue} size={size}"),
            |p, _| p.enqueue_memcpy(queue, to, from, size),
        )?;
        Ok(self.inner.track(
            event,
            "memcpy",
            Kept {
                kernel: None,
                _memory: vec![dst.clone(), src.clone()],
                _launches: Vec::new(),
            },
        ))
    }

    /// Copies `data` into `memory` at `offset` after the queue's earlier commands; `data` may
    /// be reused once this returns. Device memory is reached through the queue's staging
    /// buffers, in pieces the device copies (the returned event is the last piece's, which
    /// the queue's order makes the whole write's); host-visible memory is written directly,
    /// once the earlier commands finished.
    pub fn write(&self, memory: &Memory, offset: u64, data: &[u8]) -> Result<Event> {
        const CALL: &str = "queue-write";
        memory.same_device(&self.inner.handle, CALL)?;
        Self::range(memory, offset, data.len() as u64, "destination", CALL)?;
        if memory.kind() != MemoryKind::Device {
            self.wait_idle();
            memory.write(offset, data)?;
            return Ok(Event::finished(CALL));
        }
        let mut last = Event::finished(CALL);
        for (at, piece) in (0u64..)
            .step_by(PIECE as usize)
            .zip(data.chunks(PIECE as usize))
        {
            let size = piece.len() as u64;
            let staging = self.staging_buffer(size)?;
            let copy = staging
                .write(0, piece)
                .and_then(|()| self.enqueue_memcpy(memory, offset + at, &staging, 0, size));
            match copy {
                Ok(copy) => {
                    last = copy.clone();
                    self.inner.staging.lend(copy, staging);
                }
                Err(err) => {
                    self.inner.staging.give_back(staging);
                    return Err(err);
                }
            }
        }
        Ok(last)
    }

    /// Reads `out.len()` bytes of `memory` at `offset` once the queue's earlier commands
    /// finished. Device memory comes through the queue's staging buffers, the device copying
    /// one piece while the host reads the one before. Returns with the bytes in `out`; the
    /// event, finished, is for callers that hand one on.
    pub fn read(&self, memory: &Memory, offset: u64, out: &mut [u8]) -> Result<Event> {
        const CALL: &str = "queue-read";
        memory.same_device(&self.inner.handle, CALL)?;
        Self::range(memory, offset, out.len() as u64, "source", CALL)?;
        if memory.kind() != MemoryKind::Device {
            self.wait_idle();
            memory.read(offset, out)?;
            return Ok(Event::finished(CALL));
        }
        let mut last = Event::finished(CALL);
        let mut copying = VecDeque::with_capacity(KEPT);
        let mut pieces = (0u64..)
            .step_by(PIECE as usize)
            .zip(out.chunks_mut(PIECE as usize))
            .peekable();
        loop {
            // The device copies the next pieces while the host reads the first; a piece
            // waits for a buffer only when the read holds none.
            while copying.len() < KEPT
                && let Some((_, piece)) = pieces.peek()
            {
                let size = piece.len() as u64;
                let staging = if copying.is_empty() {
                    self.staging_buffer(size)?
                } else {
                    match self.spare_staging_buffer(size)? {
                        Some(staging) => staging,
                        None => break,
                    }
                };
                let Some((at, piece)) = pieces.next() else {
                    break;
                };
                match self.enqueue_memcpy(&staging, 0, memory, offset + at, size) {
                    Ok(copy) => copying.push_back((copy, staging, piece)),
                    Err(err) => {
                        self.inner.staging.give_back(staging);
                        self.lend_until_copied(copying);
                        return Err(err);
                    }
                }
            }
            let Some((copy, staging, piece)) = copying.pop_front() else {
                return Ok(last);
            };
            let read = copy.wait().and_then(|()| staging.read(0, piece));
            self.inner.staging.give_back(staging);
            if let Err(err) = read {
                self.lend_until_copied(copying);
                return Err(err);
            }
            last = copy;
        }
    }

    /// The staging buffers of a read given up on: each serves again once the device's copy
    /// into it finished, never while the device may still write it.
    fn lend_until_copied(&self, copying: VecDeque<(Event, Memory, &mut [u8])>) {
        for (copy, staging, _) in copying {
            self.inner.staging.lend(copy, staging);
        }
    }

    /// Waits until every command enqueued so far finished, leaving how each ended to its
    /// event and to [`finish`](Self::finish).
    fn wait_idle(&self) {
        drop(self.inner.deferred_handed_on());
        let last = self.inner.lock().back().map(|(event, _)| event.clone());
        if let Some(last) = last {
            let _ = last.wait();
        }
    }

    /// A staging buffer for `size` bytes of a transfer that holds none.
    fn staging_buffer(&self, size: u64) -> Result<Memory> {
        let handle = &self.inner.handle;
        self.inner
            .staging
            .take(size, |size| handle.alloc(MemoryKind::Host, size))
    }

    /// Another staging buffer for a transfer that holds one, if one is to be had without
    /// waiting for other transfers.
    fn spare_staging_buffer(&self, size: u64) -> Result<Option<Memory>> {
        let handle = &self.inner.handle;
        self.inner
            .staging
            .try_take(size, |size| handle.alloc(MemoryKind::Host, size))
    }

    /// The plugin's form of `kernel`'s arguments `args`, and the memory they name (which the
    /// launch keeps until it finished).
    fn launch_args(
        &self,
        kernel: &Kernel,
        args: &[Arg<'_>],
    ) -> Result<(Vec<LaunchArg>, Vec<Memory>)> {
        let handle = &self.inner.handle;
        if !kernel.inner.program.inner.handle.same_open(handle) {
            return Err(Error::InvalidArgument {
                call: "enqueue-launch",
                message: "the kernel's program was created through another device handle".into(),
            });
        }
        let mut held = Vec::with_capacity(args.len());
        let mut wit_args = Vec::with_capacity(args.len());
        for arg in args {
            wit_args.push(match *arg {
                Arg::Memory(memory) | Arg::MemoryAt(memory, _) => {
                    memory.same_device(handle, "enqueue-launch")?;
                    let offset = match *arg {
                        Arg::MemoryAt(_, offset) => offset,
                        _ => 0,
                    };
                    held.push(memory.clone());
                    LaunchArg::Memory(MemoryRange {
                        allocation: memory.inner.id,
                        offset,
                    })
                }
                Arg::U32(v) => LaunchArg::Scalar32(v),
                Arg::I32(v) => LaunchArg::Scalar32(v as u32),
                Arg::U64(v) => LaunchArg::Scalar64(v),
                Arg::Bytes(bytes) => LaunchArg::Bytes(bytes.to_vec()),
            });
        }
        Ok((wit_args, held))
    }

    /// Launches `kernel` with `args` after the queue's previous command.
    pub fn enqueue_launch(&self, kernel: &Kernel, args: &[Arg<'_>]) -> Result<Event> {
        let (wit_args, held) = self.launch_args(kernel, args)?;
        let _after = self.inner.deferred_handed_on();
        let event = self.inner.launch(kernel, &wit_args)?;
        let kept = Kept {
            kernel: Some(kernel.clone()),
            _memory: held,
            _launches: Vec::new(),
        };
        Ok(self.inner.track(event, "launch of", kept))
    }

    /// Launches `kernel` with `args` after the queue's previous command, for a caller that
    /// wants no event of it: the launch is held back and handed to the plugin with the ones
    /// after it, in one call, at the latest when the queue's next other command, [`flush`],
    /// [`finish`], [`pending_events`] or its release comes, or once [`LAUNCHES_PER_BATCH`]
    /// are held back. The arguments are checked here; a refusal of the plugin's, and a
    /// failure on the device, are the next [`flush`]'s or [`finish`]'s error.
    ///
    /// [`flush`]: Self::flush
    /// [`finish`]: Self::finish
    /// [`pending_events`]: Self::pending_events
    pub fn defer_launch(&self, kernel: &Kernel, args: &[Arg<'_>]) -> Result<()> {
        let (args, memory) = self.launch_args(kernel, args)?;
        let mut deferred = lock(&self.inner.deferred);
        deferred.launches.push(DeferredLaunch {
            kernel: kernel.clone(),
            args,
            _memory: memory,
        });
        if deferred.launches.len() >= LAUNCHES_PER_BATCH {
            self.inner.hand_on(&mut deferred, false);
        }
        Ok(())
    }

    /// Launches each of `launches` (a kernel and its arguments) in order after the queue's
    /// previous command, handed to the plugin in one call where it takes batches (one call
    /// per [`LAUNCHES_PER_BATCH`] launches), and returns one event: the last launch's, which
    /// finishes after all of them, and fails when one of them fails (the ones after a failed
    /// launch fail with it, or are not handed on once it failed). For a caller that
    /// forwards a batch and answers for it as a whole (the node). Launches held back before
    /// go first, their refusals left to [`flush`](Self::flush); a refusal of one of these
    /// is the error, and the ones after it are handed on all the same.
    pub fn enqueue_launches(&self, launches: &[(&Kernel, &[Arg<'_>])]) -> Result<Event> {
        if launches.is_empty() {
            return Err(Error::InvalidArgument {
                call: "enqueue-launches",
                message: "a batch of no launches".into(),
            });
        }
        let mut checked = Vec::with_capacity(launches.len());
        for (kernel, args) in launches {
            let (args, memory) = self.launch_args(kernel, args)?;
            checked.push(DeferredLaunch {
                kernel: (*kernel).clone(),
                args,
                _memory: memory,
            });
        }
        let mut deferred = self.inner.deferred_handed_on();
        let earlier = deferred.failure.take();
        deferred.launches = checked;
        let last = self.inner.hand_on(&mut deferred, true);
        match std::mem::replace(&mut deferred.failure, earlier) {
            Some(err) => Err(err),
            None => last.ok_or_else(|| Error::InvalidArgument {
                call: "enqueue-launches",
                message: "the plugin enqueued none of the batch and refused none".into(),
            }),
        }
    }

    /// Hands the launches held back ([`defer_launch`](Self::defer_launch)) to the plugin.
    /// The error is the first refusal of one of them not yet reported; the launches after a
    /// refused one are handed on all the same.
    pub fn flush(&self) -> Result<()> {
        self.inner.flush()
    }

    /// The events of the commands still in flight, oldest first: for a caller that waits
    /// without blocking a thread (with [`Event::on_finish`]) before calling
    /// [`finish`](Self::finish), which then returns at once. Launches held back are handed
    /// on first; a batch of them has one event, its last launch's.
    pub fn pending_events(&self) -> Vec<Event> {
        drop(self.inner.deferred_handed_on());
        self.inner
            .lock()
            .iter()
            .map(|(event, _)| event.clone())
            .filter(|event| event.status() == EventStatus::Pending)
            .collect()
    }

    /// Waits until every command enqueued so far finished; the first failure is returned,
    /// including a refusal of a launch held back.
    pub fn finish(&self) -> Result<()> {
        let mut result = self.inner.flush();
        let in_flight = std::mem::take(&mut *self.inner.lock());
        for (event, _) in &in_flight {
            let outcome = event.wait();
            if result.is_ok() {
                result = outcome;
            }
        }
        drop(in_flight);
        result
    }
}

impl QueueInner {
    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(Event, Kept)>> {
        lock(&self.in_flight)
    }

    fn track(&self, completion: Arc<Completion>, command: &'static str, kept: Kept) -> Event {
        self.handle.watch(&completion);
        let event = Event {
            inner: Arc::new(EventInner {
                completion,
                what: What::Command {
                    command,
                    kernel: kept.kernel.as_ref().map(|k| Arc::downgrade(&k.inner)),
                    device: self.handle.token().clone(),
                },
            }),
        };
        let finished = {
            let mut in_flight = self.lock();
            let done = in_flight
                .iter()
                .take_while(|(e, _)| e.inner.completion.is_finished())
                .count();
            let finished: Vec<_> = in_flight.drain(..done).collect();
            in_flight.push_back((event.clone(), kept));
            finished
        };
        // Freed outside the lock: releasing memory calls into the plugin.
        drop(finished);
        event
    }

    /// Hands one launch to the plugin.
    fn launch(&self, kernel: &Kernel, args: &[LaunchArg]) -> Result<Arc<Completion>> {
        let queue = self.id;
        let kernel_id = kernel.inner.id;
        self.handle.call(
            "enqueue-launch",
            format_args!("queue={queue} kernel={} args={}", kernel.name(), args.len()),
            |p, _| p.enqueue_launch(queue, kernel_id, args),
        )
    }

    /// Hands on the launches held back, and returns the lock that keeps the next ones back
    /// while the caller enqueues a command after them.
    fn deferred_handed_on(&self) -> std::sync::MutexGuard<'_, Deferred> {
        let mut deferred = lock(&self.deferred);
        if !deferred.launches.is_empty() {
            self.hand_on(&mut deferred, false);
        }
        deferred
    }

    fn flush(&self) -> Result<()> {
        match self.deferred_handed_on().failure.take() {
            Some(err) => Err(err),
            None => Ok(()),
        }
    }

    /// Hands `deferred`'s launches to the plugin: in batches (`batch.enqueue-launches`), or
    /// one by one where the plugin has no `batch`. A refused launch is left out and its error
    /// kept; the ones after it go on. A fault ends the plugin instance, and with it the
    /// launches not yet handed on: the error is kept, and they are dropped. With `as_one` (a
    /// batch answered by its last launch's event, which fails with any of them), a launch
    /// that already failed on the device ends the batch: the ones after it, which would fail
    /// with it, are not handed on. Returns the event of the last launch enqueued.
    fn hand_on(&self, deferred: &mut Deferred, as_one: bool) -> Option<Event> {
        let mut rest: VecDeque<DeferredLaunch> = std::mem::take(&mut deferred.launches).into();
        let queue = self.id;
        let mut last: Option<Event> = None;
        let mut fail = |err: Error| {
            deferred.failure.get_or_insert(err);
        };
        while !rest.is_empty() {
            if as_one
                && last
                    .as_ref()
                    .is_some_and(|event| matches!(event.status(), EventStatus::Failed(_)))
            {
                return last;
            }
            if self.one_by_one.load(Relaxed) {
                let launch = rest.pop_front().expect("not empty");
                match self.launch(&launch.kernel, &launch.args) {
                    Ok(event) => {
                        let kept = Kept {
                            kernel: Some(launch.kernel.clone()),
                            _memory: Vec::new(),
                            _launches: vec![launch],
                        };
                        last = Some(self.track(event, "launch of", kept));
                    }
                    Err(err) if ends_the_queue(&err) => {
                        fail(err);
                        return last;
                    }
                    Err(err) => fail(of_launch(err, &launch.kernel)),
                }
                continue;
            }
            // A call carries at most a batch's worth, so that no caller's list, however
            // long, makes one call run past the plugin's deadline.
            let launches: Vec<(u64, &[LaunchArg])> = rest
                .iter()
                .take(LAUNCHES_PER_BATCH)
                .map(|launch| (launch.kernel.inner.id, &launch.args[..]))
                .collect();
            let answer = self.handle.call(
                "enqueue-launches",
                format_args!("queue={queue} launches={}", launches.len()),
                |p, _| p.enqueue_launches(queue, &launches),
            );
            drop(launches);
            match answer {
                Ok(batched) => {
                    let enqueued: Vec<DeferredLaunch> = rest.drain(..batched.count).collect();
                    if let Some(event) = batched.last {
                        let kept = Kept {
                            kernel: enqueued.last().map(|l| l.kernel.clone()),
                            _memory: Vec::new(),
                            _launches: enqueued,
                        };
                        last = Some(self.track(event, "launch (the last of a batch) of", kept));
                    }
                    if let Some(refusal) = batched.refused {
                        let refused = rest.pop_front().expect("the refused launch");
                        let err =
                            refusal.into_error(self.handle.token().plugin(), "enqueue-launches");
                        fail(of_launch(err, &refused.kernel));
                    }
                }
                Err(err) if err.code() == crate::error::ErrorCode::Unsupported => {
                    // Without `batch`, or refusing the first launch as unsupported: one by one
                    // tells which.
                    self.one_by_one.store(true, Relaxed);
                }
                Err(err) if ends_the_queue(&err) => {
                    fail(err);
                    return last;
                }
                Err(err) => {
                    let refused = rest.pop_front().expect("the refused launch");
                    fail(of_launch(err, &refused.kernel));
                }
            }
        }
        last
    }
}

/// A plugin's refusal of a launch handed on later, naming the kernel: the caller no longer
/// knows which launch it was.
fn of_launch(err: Error, kernel: &Kernel) -> Error {
    match err {
        Error::Plugin {
            plugin,
            call,
            code,
            message,
        } => Error::Plugin {
            plugin,
            call,
            code,
            message: format!("launch of {}: {message}", kernel.name()),
        },
        other => other,
    }
}

/// Whether `err` leaves no plugin instance to hand further launches to.
fn ends_the_queue(err: &Error) -> bool {
    matches!(
        err,
        Error::Faulted { .. } | Error::PluginUnavailable { .. } | Error::Stale { .. }
    )
}

impl Handle {
    /// Allocates `size` bytes of `kind` memory on this device.
    pub fn alloc(&self, kind: MemoryKind, size: u64) -> Result<Memory> {
        self.alloc_inner(kind, size, None)
    }

    /// Allocates device memory in memory bank `bank` (for devices with several banks).
    pub fn alloc_in_bank(&self, kind: MemoryKind, size: u64, bank: u32) -> Result<Memory> {
        self.alloc_inner(kind, size, Some(bank))
    }

    fn alloc_inner(&self, kind: MemoryKind, size: u64, bank: Option<u32>) -> Result<Memory> {
        let allocation = self.call(
            "mem-alloc",
            format_args!("kind={kind:?} size={size} bank={bank:?}"),
            |p, h| p.mem_alloc(h, kind, size, bank),
        )?;
        let (id, host, device_address) =
            (allocation.id, allocation.host, allocation.device_address);
        let size = host.as_ref().map_or(size, |h| h.len().max(size));
        Ok(Memory {
            inner: Arc::new(MemoryInner {
                handle: self.clone(),
                id,
                kind,
                size,
                device_address,
                host,
            }),
        })
    }

    /// Creates a program from a device image (an xclbin for XRT cards). A malformed image is
    /// refused here, with what is wrong, before the plugin sees it.
    pub fn create_program(&self, image: &[u8]) -> Result<Program> {
        self.check_image(image)
            .map_err(|message| Error::InvalidArgument {
                call: "create-program",
                message,
            })?;
        let bytes: Arc<[u8]> = image.into();
        let id = self.call(
            "program-create",
            format_args!("image={} bytes", bytes.len()),
            |p, h| p.program_create(h, bytes),
        )?;
        Ok(Program {
            inner: Arc::new(ProgramInner {
                handle: self.clone(),
                id,
            }),
        })
    }

    /// The program of a device whose function is built in (a CAPI AFU): its kernels are the
    /// AFU's functions, by name (`memcpy`, `vadd`).
    pub fn builtin_program(&self) -> Result<Program> {
        self.create_program(&[])
    }

    /// An event that completes when the device raises `kind` (for interrupts: interrupt
    /// `vector`, 1-based on CAPI), waited on the host like any other event.
    pub fn register_event(&self, kind: EventKind, vector: u32) -> Result<Event> {
        let completion = self.call(
            "register-event",
            format_args!("kind={kind:?} vector={vector}"),
            |p, h| p.register_event(h, kind, vector),
        )?;
        self.watch(&completion);
        Ok(Event::new(
            completion,
            format!("{kind:?} {vector} on {}", self.token().id()),
        ))
    }

    /// Creates an in-order queue.
    pub fn create_queue(&self) -> Result<Queue> {
        let id = self.call("queue-create", format_args!(""), |p, h| p.queue_create(h))?;
        Ok(Queue {
            inner: Arc::new(QueueInner {
                handle: self.clone(),
                id,
                in_flight: Mutex::new(VecDeque::new()),
                deferred: Mutex::new(Deferred::default()),
                one_by_one: false.into(),
                staging: StagingPool::default(),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;

    #[test]
    fn on_finish_runs_once_when_the_event_completes() {
        let completion = Arc::new(Completion::default());
        let event = Event::new(completion.clone(), "test".into());
        let runs = Arc::new(AtomicU32::new(0));
        let counter = runs.clone();
        event.on_finish(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(runs.load(Ordering::SeqCst), 0);
        completion.finish(CompletionState::Complete);
        completion.finish(CompletionState::Complete);
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let counter = runs.clone();
        event.on_finish(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "runs at once when already finished"
        );
    }
}
