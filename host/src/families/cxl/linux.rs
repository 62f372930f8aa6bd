//! The cxl backend over the kernel driver: AFUs are found through sysfs (`class/cxl/afuC.S`,
//! with the master facts of `afuC.Sm` and the card facts of `cardC`), contexts are opened as
//! `/dev/cxl/afuC.S{m,s,d}` and driven with the ioctls, `mmap` and `read()` events of [`abi`].

use std::collections::VecDeque;
use std::fs;
use std::io::{self, PipeReader, PipeWriter};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

use super::abi::{self, StartWorkArg};
use super::{AddressSpace, AfuDesc, AfuEvent, AfuMode, ContextKind, CxlAfu, CxlContext, Work};
use crate::devices::ioctl::ioctl_ptr;
use crate::devices::mmio::MappedMmio;
use crate::devices::sysfs::{
    BadAttribute, open_node, parse_decimal, read_attr, read_decimal, read_dir_if_present,
    read_optional,
};
use crate::devices::{
    Completion, CompletionState, DmaMemory, LinuxRoots, MmioWindow, Owner, OwnerId, check_owner,
    errno, lock, wait_timeout,
};

/// Finds the AFUs under `<sysfs>/class/cxl` (the `afuC.S` entries, not their context nodes),
/// in card and slice order. No class directory means no AFUs; an AFU with unusable
/// attributes is skipped.
///
/// The kernel does not export how many contexts an AFU takes, so `max_contexts` comes from
/// the mode: 1 in dedicated mode; in AFU-directed mode the number of per-process areas the
/// master's problem-state area holds, `(mmio_size - pp_mmio_off) / pp_mmio_len` of `afuC.Sm`
/// (an upper bound: the kernel's limit is the AFU descriptor's process count), or 1 without
/// those facts; 0 while no mode is set.
pub fn discover_afus(roots: &LinuxRoots) -> io::Result<Vec<LinuxAfu>> {
    let class = roots.sysfs.join(abi::SYSFS_CXL_CLASS);
    let Some(entries) = read_dir_if_present(&class)? else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in entries {
        let name = entry?.file_name();
        let Some((card, slice, None)) = name.to_str().and_then(abi::parse_afu_name) else {
            continue;
        };
        let paths = AfuPaths::new(&class, &roots.dev, card, slice);
        match read_desc(&paths) {
            Ok(discovered) => found.push(LinuxAfu { paths, discovered }),
            Err(err) => tracing::warn!("skipping CAPI AFU {}: {err}", paths.afu.display()),
        }
    }
    found.sort_by_key(|afu| (afu.paths.card, afu.paths.slice));
    Ok(found)
}

/// Where one AFU's facts live in sysfs, and the node its contexts open.
#[derive(Clone, Debug)]
struct AfuPaths {
    card: u32,
    slice: u32,
    afu: PathBuf,
    master: PathBuf,
    card_dir: PathBuf,
    /// `<dev>/cxl/afuC.S`, without the node suffix.
    node: PathBuf,
}

impl AfuPaths {
    fn new(class: &Path, dev: &Path, card: u32, slice: u32) -> Self {
        let name = abi::afu_name(card, slice);
        AfuPaths {
            card,
            slice,
            afu: class.join(&name),
            master: class.join(format!("{name}{}", ContextKind::Master.suffix())),
            card_dir: class.join(format!("{}{card}", abi::CARD_PREFIX)),
            node: dev.join(abi::DEV_DIR).join(&name),
        }
    }

    /// The device node a context of `kind` opens.
    fn node_of(&self, kind: ContextKind) -> PathBuf {
        let mut node = self.node.clone().into_os_string();
        node.push(kind.suffix().to_string());
        node.into()
    }

    /// The attribute holding the bytes a context of `kind` maps.
    fn mmio_size_of(&self, kind: ContextKind) -> PathBuf {
        match kind {
            ContextKind::Master => self.master.join(abi::MASTER_ATTR_MMIO_SIZE),
            ContextKind::Slave | ContextKind::Dedicated => self.afu.join(abi::AFU_ATTR_MMIO_SIZE),
        }
    }
}

/// What the master node (`afuC.Sm`) says about the problem-state area.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct MasterFacts {
    mmio_size: u64,
    pp_mmio_off: u64,
    pp_mmio_len: u64,
}

impl MasterFacts {
    /// How many per-process areas follow the global area, if the facts describe any.
    fn per_process_areas(&self) -> Option<u32> {
        if self.pp_mmio_len == 0 {
            return None;
        }
        let areas = self.mmio_size.checked_sub(self.pp_mmio_off)? / self.pp_mmio_len;
        u32::try_from(areas).ok().filter(|&n| n > 0)
    }
}

/// How many contexts the AFU takes at once; see [`discover_afus`].
fn max_contexts(mode: Option<AfuMode>, master: Option<&MasterFacts>) -> u32 {
    match mode {
        None => 0,
        Some(AfuMode::Dedicated) => 1,
        Some(AfuMode::Directed) => master.and_then(MasterFacts::per_process_areas).unwrap_or(1),
    }
}

/// Reads the AFU's facts.
fn read_desc(paths: &AfuPaths) -> Result<AfuDesc, BadAttribute> {
    let afu = &paths.afu;
    let compatible = afu.join(abi::AFU_ATTR_API_VERSION_COMPATIBLE);
    if let Some(oldest) = read_optional(&compatible, parse_decimal::<u32>, "a decimal number")?
        && oldest > abi::CXL_API_VERSION
    {
        return Err(BadAttribute::new(
            &compatible,
            format!(
                "the kernel serves API versions {oldest} and up; this host speaks {}",
                abi::CXL_API_VERSION
            ),
        ));
    }
    let mode = read_attr(
        &afu.join(abi::AFU_ATTR_MODE),
        abi::parse_mode,
        "a mode name",
    )?;
    let master = read_master(&paths.master)?;
    Ok(AfuDesc {
        path: paths.node.to_string_lossy().into_owned(),
        card: paths.card,
        slice: paths.slice,
        mode,
        modes_supported: read_attr(
            &afu.join(abi::AFU_ATTR_MODES_SUPPORTED),
            abi::parse_modes_supported,
            "mode names, one a line",
        )?,
        mmio_size: read_decimal(&afu.join(abi::AFU_ATTR_MMIO_SIZE))?,
        pp_mmio_offset: master.map_or(0, |m| m.pp_mmio_off),
        pp_mmio_len: master.map_or(0, |m| m.pp_mmio_len),
        irqs_min: read_decimal(&afu.join(abi::AFU_ATTR_IRQS_MIN))?,
        irqs_max: read_decimal(&afu.join(abi::AFU_ATTR_IRQS_MAX))?,
        max_contexts: max_contexts(mode, master.as_ref()),
        caia_version: read_attr(
            &paths.card_dir.join(abi::CARD_ATTR_CAIA_VERSION),
            abi::parse_caia_version,
            "major.minor",
        )?,
        vendor_id: read_optional(
            &afu.join(abi::AFU_ATTR_CR0_VENDOR),
            abi::parse_cr_id,
            "a 0x-prefixed u16",
        )?
        .unwrap_or(0),
        device_id: read_optional(
            &afu.join(abi::AFU_ATTR_CR0_DEVICE),
            abi::parse_cr_id,
            "a 0x-prefixed u16",
        )?
        .unwrap_or(0),
        bus_address: fs::read_link(paths.card_dir.join(abi::CARD_DEVICE_LINK))
            .ok()
            .and_then(|target| target.file_name()?.to_str()?.parse().ok()),
        emulated: false,
    })
}

/// The master's facts; `None` if the AFU has no master entry.
fn read_master(master: &Path) -> Result<Option<MasterFacts>, BadAttribute> {
    match fs::metadata(master) {
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(BadAttribute::new(master, err)),
        Ok(_) => {}
    }
    let number = |name: &str| read_decimal(&master.join(name));
    Ok(Some(MasterFacts {
        mmio_size: number(abi::MASTER_ATTR_MMIO_SIZE)?,
        pp_mmio_off: number(abi::MASTER_ATTR_PP_MMIO_OFF)?,
        pp_mmio_len: number(abi::MASTER_ATTR_PP_MMIO_LEN)?,
    }))
}

/// An AFU the kernel's cxl driver exposes, as [`discover_afus`] found it.
#[derive(Debug)]
pub struct LinuxAfu {
    paths: AfuPaths,
    discovered: AfuDesc,
}

impl CxlAfu for LinuxAfu {
    fn desc(&self) -> AfuDesc {
        read_desc(&self.paths).unwrap_or_else(|err| {
            tracing::debug!("CAPI AFU: using the facts found at discovery: {err}");
            self.discovered.clone()
        })
    }

    /// The kernel binds the address space of the process that starts the work, whatever
    /// `_space` asks.
    fn open(
        &self,
        kind: ContextKind,
        owner: &Owner,
        _space: AddressSpace,
    ) -> io::Result<Box<dyn CxlContext>> {
        let fd = open_node(&self.paths.node_of(kind))?;
        let context = LinuxContext::open(fd, owner.id, self.paths.mmio_size_of(kind))?;
        Ok(Box::new(context))
    }
}

/// What a wait fails with when its context closes first.
const CONTEXT_CLOSED: &str = "the cxl context was closed";
/// The most events kept for `read_event`; beyond it the oldest go.
const MAX_QUEUED: usize = 1024;

/// An open context (`afuC.S{m,s,d}`).
///
/// Events come from `read()` on the fd. Until an interrupt is waited for, `read_event` polls
/// and reads the fd itself; the first `interrupt_completion` starts a reader thread that owns
/// the fd from then on, and `read_event` takes what it queued. Every event is queued for
/// `read_event`. An interrupt also finishes the oldest completion waiting for it; one that
/// arrives with none waiting is kept, and the next wait for it finishes at once. A
/// data-storage fault or AFU error fails every waiting completion, and, until `read_event`
/// returns it, every new one.
///
/// Memory passed to `attach_buffer` is kept alive until the fd is closed, so the AFU never
/// writes into memory that was freed and reused. Dropping the context unmaps its windows,
/// fails its waits, stops the reader and closes the fd, on which the kernel detaches it.
pub struct LinuxContext {
    shared: Arc<Shared>,
    pe: u32,
    owner: OwnerId,
    /// The sysfs attribute with the bytes `map_mmio` maps.
    mmio_size_attr: PathBuf,
    started: Mutex<bool>,
    windows: Mutex<Vec<Weak<MappedMmio>>>,
    reader: Mutex<Option<ReaderThread>>,
}

/// What the context and its reader thread share.
struct Shared {
    // Declared before `attached`: the fd closes (detaching the AFU) before that memory can
    // be freed.
    fd: OwnedFd,
    events: Mutex<Events>,
    /// Signalled when events are queued, the reader changes or the reader ends.
    changed: Condvar,
    attached: Mutex<Vec<Arc<DmaMemory>>>,
}

struct ReaderThread {
    /// Dropping it wakes the thread, which then ends.
    stop: PipeWriter,
    handle: JoinHandle<()>,
}

/// Who reads the fd.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Reader {
    /// Nobody: `read_event` may read it.
    #[default]
    Idle,
    /// A `read_event` call is polling and reading it.
    Direct,
    /// The reader thread.
    Thread,
}

#[derive(Default)]
struct Events {
    queue: VecDeque<Queued>,
    /// Waits for an interrupt, oldest first.
    waiters: Vec<(u16, Arc<Completion>)>,
    reader: Reader,
    /// An interrupt wait arrived while `read_event` read the fd: start the thread after it.
    thread_wanted: bool,
    /// The errno that ended the reader thread; the fd gives nothing more.
    ended: Option<i32>,
}

struct Queued {
    event: AfuEvent,
    /// An interrupt that finished a wait.
    claimed: bool,
}

type Finished = Vec<(Arc<Completion>, CompletionState)>;

/// Finishes completions; called with no lock held, since their watchers may call back.
fn finish(finished: Finished) {
    for (done, state) in finished {
        done.finish(state);
    }
}

fn describe(event: &AfuEvent) -> String {
    match *event {
        AfuEvent::Interrupt(irq) => format!("AFU interrupt {irq}"),
        AfuEvent::DataStorage { address, dsisr } => format!(
            "the AFU took a data-storage fault at effective address {address:#x} (DSISR {dsisr:#x})"
        ),
        AfuEvent::AfuError(error) => format!("the AFU reported error {error:#x}"),
    }
}

fn reader_failed(code: i32) -> String {
    format!("reading the cxl context's events failed: {}", errno(code))
}

impl Events {
    /// Queues a batch of events read from the fd and settles the waits they decide.
    fn deliver(&mut self, batch: Vec<AfuEvent>) -> Finished {
        let mut finished = Vec::new();
        self.prune();
        for event in batch {
            let mut claimed = false;
            match event {
                AfuEvent::Interrupt(irq) => {
                    if let Some(at) = self.waiters.iter().position(|(want, _)| *want == irq) {
                        let (_, done) = self.waiters.remove(at);
                        finished.push((done, CompletionState::Complete));
                        claimed = true;
                    }
                }
                AfuEvent::DataStorage { .. } | AfuEvent::AfuError(_) => {
                    let why = describe(&event);
                    for (_, done) in self.waiters.drain(..) {
                        finished.push((done, CompletionState::Failed((why.clone()).into())));
                    }
                }
            }
            if self.queue.len() == MAX_QUEUED {
                self.queue.pop_front();
                tracing::warn!("cxl context: {MAX_QUEUED} events unread, dropping the oldest");
            }
            self.queue.push_back(Queued { event, claimed });
        }
        finished
    }

    /// How a new wait for `irq` ends at once, if an unread event decides it: an unclaimed
    /// interrupt `irq` (which it claims), or a fault or error before one.
    fn settled(&mut self, irq: u16) -> Option<CompletionState> {
        for queued in &mut self.queue {
            match queued.event {
                AfuEvent::Interrupt(n) if n == irq && !queued.claimed => {
                    queued.claimed = true;
                    return Some(CompletionState::Complete);
                }
                AfuEvent::Interrupt(_) => {}
                AfuEvent::DataStorage { .. } | AfuEvent::AfuError(_) => {
                    return Some(CompletionState::Failed((describe(&queued.event)).into()));
                }
            }
        }
        self.ended
            .map(|code| CompletionState::Failed(reader_failed(code).into()))
    }

    /// Forgets waits nobody holds any more.
    fn prune(&mut self) {
        self.waiters
            .retain(|(_, done)| Arc::strong_count(done) > 1 && !done.is_finished());
    }

    /// Fails every wait with `why`.
    fn fail_all(&mut self, why: &str) -> Finished {
        self.waiters
            .drain(..)
            .map(|(_, done)| (done, CompletionState::Failed((why.to_owned()).into())))
            .collect()
    }
}

/// START_WORK's argument for `work`: the AMR and interrupt count only when given.
fn start_work_arg(work: &Work) -> io::Result<StartWorkArg> {
    let mut arg = StartWorkArg {
        work_element_descriptor: work.wed,
        ..Default::default()
    };
    if let Some(amr) = work.amr {
        arg.flags |= abi::START_WORK_AMR;
        arg.amr = amr;
    }
    if let Some(count) = work.num_interrupts {
        arg.flags |= abi::START_WORK_NUM_IRQS;
        arg.num_interrupts = i16::try_from(count).map_err(|_| errno(libc::EINVAL))?;
    }
    arg.validate().map_err(|_| errno(libc::EINVAL))?;
    Ok(arg)
}

fn get_process_element(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut pe: u32 = 0;
    // SAFETY: GET_PROCESS_ELEMENT writes one u32, which `pe` is.
    unsafe { ioctl_ptr(fd, abi::native::CXL_IOCTL_GET_PROCESS_ELEMENT, &mut pe) }?;
    Ok(pe)
}

/// Waits until `fd` is readable (or in error) or `deadline` passes; `false` on timeout.
fn wait_readable(fd: BorrowedFd<'_>, deadline: Instant) -> io::Result<bool> {
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let timeout =
            libc::c_int::try_from(left.as_micros().div_ceil(1000)).unwrap_or(libc::c_int::MAX);
        let mut fds = [libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        }];
        // SAFETY: `fds` is an array of one initialised pollfd that outlives the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 1, timeout) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(err);
        }
        return Ok(rc > 0);
    }
}

/// One `read()` of the fd, decoded. A context never reads as end of file, so that is `EIO`;
/// events that do not decode are skipped with a warning.
fn read_events(fd: BorrowedFd<'_>) -> io::Result<Vec<AfuEvent>> {
    let mut buf = [0u8; abi::READ_MIN_SIZE];
    // SAFETY: `buf` is writable for its whole length, which is the count passed.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    let len = match usize::try_from(n) {
        Ok(0) => return Err(errno(libc::EIO)),
        Ok(len) => len.min(buf.len()),
        Err(_) => {
            let err = io::Error::last_os_error();
            return match err.kind() {
                io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock => Ok(Vec::new()),
                _ => Err(err),
            };
        }
    };
    let mut events = Vec::new();
    for parsed in abi::parse_events(&buf[..len]) {
        match parsed {
            Ok((_, event)) => events.push(event),
            Err(why) => tracing::warn!("cxl context: skipping an event: {why}"),
        }
    }
    Ok(events)
}

/// The reader thread: reads events until the context closes or the fd fails.
fn run_reader(shared: &Shared, stopped: PipeReader) {
    let failure = loop {
        let mut fds = [
            libc::pollfd {
                fd: shared.fd.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: stopped.as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: `fds` is an array of two initialised pollfd that outlives the call.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, -1) };
        if rc < 0 {
            let err = io::Error::last_os_error();
            if err.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            break err;
        }
        if fds[1].revents != 0 {
            return;
        }
        if fds[0].revents == 0 {
            continue;
        }
        match read_events(shared.fd.as_fd()) {
            Ok(batch) => {
                let finished = lock(&shared.events).deliver(batch);
                shared.changed.notify_all();
                finish(finished);
            }
            Err(err) => break err,
        }
    };
    let code = failure.raw_os_error().unwrap_or(libc::EIO);
    let finished = {
        let mut events = lock(&shared.events);
        events.ended = Some(code);
        events.fail_all(&reader_failed(code))
    };
    shared.changed.notify_all();
    finish(finished);
}

impl LinuxContext {
    /// A context on an opened node: asks the kernel for its process element.
    fn open(fd: OwnedFd, owner: OwnerId, mmio_size_attr: PathBuf) -> io::Result<Self> {
        let pe = get_process_element(fd.as_fd())?;
        Ok(LinuxContext::new(fd, pe, owner, mmio_size_attr))
    }

    fn new(fd: OwnedFd, pe: u32, owner: OwnerId, mmio_size_attr: PathBuf) -> Self {
        LinuxContext {
            shared: Arc::new(Shared {
                fd,
                events: Mutex::new(Events::default()),
                changed: Condvar::new(),
                attached: Mutex::new(Vec::new()),
            }),
            pe,
            owner,
            mmio_size_attr,
            started: Mutex::new(false),
            windows: Mutex::new(Vec::new()),
            reader: Mutex::new(None),
        }
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.shared.fd.as_fd()
    }

    /// Starts the reader thread, unless it runs or `read_event` is reading (then it starts
    /// once that read is done).
    fn start_reader(&self, events: &mut Events) -> io::Result<()> {
        match events.reader {
            Reader::Thread => return Ok(()),
            Reader::Direct => {
                events.thread_wanted = true;
                return Ok(());
            }
            Reader::Idle => {}
        }
        let (stopped, stop) = io::pipe()?;
        let shared = self.shared.clone();
        let handle = std::thread::Builder::new()
            .name("cxl-events".into())
            .spawn(move || run_reader(&shared, stopped))?;
        *lock(&self.reader) = Some(ReaderThread { stop, handle });
        events.reader = Reader::Thread;
        events.thread_wanted = false;
        Ok(())
    }

    /// Waits until `ready` finds what it looks for among the queued events (reading the fd
    /// itself while no reader thread does), or until `deadline` (`None`).
    fn when_event<R>(
        &self,
        deadline: Instant,
        mut ready: impl FnMut(&mut Events) -> Option<R>,
    ) -> io::Result<Option<R>> {
        let mut events = lock(&self.shared.events);
        loop {
            if let Some(found) = ready(&mut events) {
                return Ok(Some(found));
            }
            if let Some(code) = events.ended {
                return Err(errno(code));
            }
            let now = Instant::now();
            if events.reader != Reader::Idle {
                if now >= deadline {
                    return Ok(None);
                }
                events = wait_timeout(&self.shared.changed, events, deadline - now);
                continue;
            }
            let read;
            (events, read) = self.read_directly(events, deadline);
            read?;
            if events.queue.is_empty() && Instant::now() >= deadline {
                return Ok(None);
            }
        }
    }

    /// One poll-and-read of the fd by `read_event`, with `events` handed back afterwards.
    fn read_directly<'a>(
        &'a self,
        mut events: MutexGuard<'a, Events>,
        deadline: Instant,
    ) -> (MutexGuard<'a, Events>, io::Result<()>) {
        events.reader = Reader::Direct;
        drop(events);
        let read = match wait_readable(self.fd(), deadline) {
            Ok(true) => read_events(self.fd()),
            Ok(false) => Ok(Vec::new()),
            Err(err) => Err(err),
        };
        let mut events = lock(&self.shared.events);
        events.reader = Reader::Idle;
        let (mut finished, read) = match read {
            Ok(batch) => (events.deliver(batch), Ok(())),
            Err(err) => (Vec::new(), Err(err)),
        };
        if events.thread_wanted
            && let Err(err) = self.start_reader(&mut events)
        {
            events.thread_wanted = false;
            let why = format!("starting the cxl event reader failed: {err}");
            finished.extend(events.fail_all(&why));
        }
        self.shared.changed.notify_all();
        drop(events);
        finish(finished);
        (lock(&self.shared.events), read)
    }
}

impl CxlContext for LinuxContext {
    fn process_element(&self) -> u32 {
        self.pe
    }

    fn start_work(&self, work: &Work) -> io::Result<()> {
        let mut started = lock(&self.started);
        if *started {
            return Err(errno(libc::EIO));
        }
        let mut arg = start_work_arg(work)?;
        // SAFETY: START_WORK reads one `StartWorkArg`, which `arg` is (it writes `tid` back
        // only with the TID flag, which is not set).
        unsafe { ioctl_ptr(self.fd(), abi::native::CXL_IOCTL_START_WORK, &mut arg) }?;
        *started = true;
        Ok(())
    }

    fn map_mmio(&self) -> io::Result<Arc<dyn MmioWindow>> {
        if !*lock(&self.started) {
            return Err(errno(libc::EIO));
        }
        let size = read_decimal(&self.mmio_size_attr)?;
        let window = Arc::new(MappedMmio::map(self.fd(), size, 0)?);
        let mut windows = lock(&self.windows);
        windows.retain(|w| w.strong_count() > 0);
        windows.push(Arc::downgrade(&window));
        Ok(window)
    }

    fn attach_buffer(&self, memory: &Arc<DmaMemory>) -> io::Result<u64> {
        check_owner(memory, self.owner)?;
        let mut attached = lock(&self.shared.attached);
        if !attached.iter().any(|m| Arc::ptr_eq(m, memory)) {
            attached.push(memory.clone());
        }
        Ok(memory.user_address())
    }

    fn read_event(&self, deadline: Instant) -> io::Result<Option<AfuEvent>> {
        self.when_event(deadline, |events| events.queue.pop_front().map(|q| q.event))
    }

    fn wait_event(&self, deadline: Instant) -> io::Result<bool> {
        let ready = |events: &mut Events| (!events.queue.is_empty()).then_some(());
        Ok(self.when_event(deadline, ready)?.is_some())
    }

    fn interrupt_completion(&self, irq: u16) -> io::Result<Arc<Completion>> {
        if irq == 0 {
            return Err(errno(libc::EINVAL));
        }
        let mut events = lock(&self.shared.events);
        events.prune();
        if let Some(state) = events.settled(irq) {
            return Ok(Arc::new(Completion::with_state(state)));
        }
        self.start_reader(&mut events)?;
        let done = Arc::new(Completion::default());
        events.waiters.push((irq, done.clone()));
        Ok(done)
    }
}

impl Drop for LinuxContext {
    fn drop(&mut self) {
        // A live mapping would hold the file open past our close, so the windows go first.
        let windows = self
            .windows
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner);
        for window in windows.drain(..).filter_map(|w| w.upgrade()) {
            window.revoke();
        }
        let finished = lock(&self.shared.events).fail_all(CONTEXT_CLOSED);
        self.shared.changed.notify_all();
        finish(finished);
        let reader = self
            .reader
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(ReaderThread { stop, handle }) = reader {
            drop(stop);
            // A watcher run on the reader could drop the last reference to the context there.
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::scratch::Scratch;
    use crate::devices::{Budget, BudgetKind};
    use std::io::Write;
    use std::time::Duration;

    const CLASS: &str = "sys/class/cxl";

    /// Card 0 (CAIA 1.2) with afu0.0, AFU-directed with a master holding 511 per-process
    /// areas, and afu0.1 with no mode; card 1 (CAIA 2.0) with afu1.0, a dedicated vadd-like
    /// AFU without configuration records or a master, and afu1.1, whose `mmio_size` is
    /// malformed. Context nodes, cards and junk names sit beside them.
    fn fake_sysfs() -> Scratch {
        let s = Scratch::new("cxl-sysfs");
        let attrs = |afu: &str, mode: &str, modes: &str, mmio: &str| {
            s.write(&format!("{CLASS}/{afu}/mode"), mode);
            s.write(&format!("{CLASS}/{afu}/modes_supported"), modes);
            s.write(&format!("{CLASS}/{afu}/mmio_size"), mmio);
            s.write(&format!("{CLASS}/{afu}/irqs_min"), "1\n");
            s.write(&format!("{CLASS}/{afu}/irqs_max"), "2037\n");
            s.write(&format!("{CLASS}/{afu}/prefault_mode"), "none\n");
            s.write(&format!("{CLASS}/{afu}/api_version"), "3\n");
            s.write(&format!("{CLASS}/{afu}/api_version_compatible"), "1\n");
        };
        s.write(&format!("{CLASS}/card0/caia_version"), "1.2\n");
        s.write(&format!("{CLASS}/card1/caia_version"), "2.0\n");
        s.write(
            "sys/devices/pci0006:00/0006:00:00.0/0006:01:00.0/vendor",
            "0x1014\n",
        );
        std::os::unix::fs::symlink(
            "../../../devices/pci0006:00/0006:00:00.0/0006:01:00.0",
            s.0.join(format!("{CLASS}/card0/device")),
        )
        .unwrap();
        attrs(
            "afu0.0",
            "afu_directed\n",
            "dedicated_process\nafu_directed\n",
            "4096\n",
        );
        s.write(&format!("{CLASS}/afu0.0/irqs_min"), "3\n");
        s.write(&format!("{CLASS}/afu0.0/cr0/vendor"), "0x1014\n");
        s.write(&format!("{CLASS}/afu0.0/cr0/device"), "0x0601\n");
        s.write(&format!("{CLASS}/afu0.0m/mmio_size"), "2109440\n");
        s.write(&format!("{CLASS}/afu0.0m/pp_mmio_off"), "16384\n");
        s.write(&format!("{CLASS}/afu0.0m/pp_mmio_len"), "4096\n");
        s.write(&format!("{CLASS}/afu0.0s/dev"), "241:3\n");
        s.write(&format!("{CLASS}/afu0.0d/dev"), "241:1\n");
        attrs("afu0.1", "none\n", "afu_directed\n", "4096\n");
        attrs(
            "afu1.0",
            "dedicated_process\n",
            "dedicated_process\n",
            "8192\n",
        );
        attrs(
            "afu1.1",
            "dedicated_process\n",
            "dedicated_process\n",
            "lots\n",
        );
        s.write(&format!("{CLASS}/afu9.x/mode"), "afu_directed\n");
        s.mkdir("dev/cxl");
        s
    }

    fn afu(afus: &[LinuxAfu], card: u32, slice: u32) -> &LinuxAfu {
        afus.iter()
            .find(|a| (a.paths.card, a.paths.slice) == (card, slice))
            .unwrap()
    }

    #[test]
    fn discovery_reads_every_well_formed_afu_in_order() {
        let s = fake_sysfs();
        let afus = discover_afus(&s.roots()).unwrap();
        let names: Vec<(u32, u32)> = afus.iter().map(|a| (a.paths.card, a.paths.slice)).collect();
        assert_eq!(names, [(0, 0), (0, 1), (1, 0)], "afu1.1 is skipped");
        let dev = s.0.join("dev/cxl");
        assert_eq!(
            afus[0].desc(),
            AfuDesc {
                path: dev.join("afu0.0").to_string_lossy().into_owned(),
                card: 0,
                slice: 0,
                mode: Some(AfuMode::Directed),
                modes_supported: vec![AfuMode::Dedicated, AfuMode::Directed],
                mmio_size: 4096,
                pp_mmio_offset: 16384,
                pp_mmio_len: 4096,
                irqs_min: 3,
                irqs_max: 2037,
                max_contexts: 511,
                caia_version: (1, 2),
                vendor_id: 0x1014,
                device_id: 0x0601,
                bus_address: Some("0006:01:00.0".parse().unwrap()),
                emulated: false,
            }
        );
        assert_eq!(afus[2].desc().bus_address, None, "card1 has no device link");
        let none = afus[1].desc();
        assert_eq!((none.mode, none.max_contexts), (None, 0));
        let dedicated = afus[2].desc();
        assert_eq!(dedicated.mode, Some(AfuMode::Dedicated));
        assert_eq!(dedicated.modes_supported, [AfuMode::Dedicated]);
        assert_eq!(dedicated.max_contexts, 1);
        assert_eq!(dedicated.mmio_size, 8192);
        assert_eq!((dedicated.pp_mmio_offset, dedicated.pp_mmio_len), (0, 0));
        assert_eq!(dedicated.caia_version, (2, 0));
        assert_eq!((dedicated.vendor_id, dedicated.device_id), (0, 0));
    }

    #[test]
    fn default_roots_give_dev_paths() {
        let s = fake_sysfs();
        let roots = LinuxRoots {
            sysfs: s.0.join("sys"),
            dev: LinuxRoots::default().dev,
        };
        let afus = discover_afus(&roots).unwrap();
        assert_eq!(afus[0].desc().path, "/dev/cxl/afu0.0");
        assert_eq!(
            afus[0].paths.node_of(ContextKind::Slave),
            Path::new("/dev/cxl/afu0.0s")
        );
        assert_eq!(
            afus[2].paths.node_of(ContextKind::Dedicated),
            Path::new("/dev/cxl/afu1.0d")
        );
    }

    #[test]
    fn missing_class_dir_means_no_afus() {
        let s = Scratch::new("cxl-empty");
        assert!(discover_afus(&s.roots()).unwrap().is_empty());
    }

    #[test]
    fn bad_attributes_skip_the_afu() {
        let s = fake_sysfs();
        for (attr, text) in [
            ("afu0.0/mode", "time_sliced\n"),
            ("afu0.0/modes_supported", "afu_directed\nbogus\n"),
            ("afu0.0/irqs_max", "-1\n"),
            ("afu0.0/cr0/vendor", "4116\n"),
            ("afu0.0/api_version_compatible", "4\n"),
            ("afu0.0m/pp_mmio_len", "\n"),
            ("card0/caia_version", "1\n"),
        ] {
            let path = format!("{CLASS}/{attr}");
            let good = fs::read_to_string(s.0.join(&path)).unwrap();
            s.write(&path, text);
            let afus = discover_afus(&s.roots()).unwrap();
            assert!(
                afus.iter().all(|a| (a.paths.card, a.paths.slice) != (0, 0)),
                "{attr} = {text:?}"
            );
            s.write(&path, &good);
        }
        fs::remove_file(s.0.join(CLASS).join("afu0.0/irqs_min")).unwrap();
        assert_eq!(discover_afus(&s.roots()).unwrap().len(), 2);
    }

    #[test]
    fn desc_rereads_sysfs_and_falls_back_to_discovery() {
        let s = fake_sysfs();
        let afus = discover_afus(&s.roots()).unwrap();
        let afu00 = afu(&afus, 0, 0);
        s.write(&format!("{CLASS}/afu0.0/mode"), "dedicated_process\n");
        assert_eq!(afu00.desc().mode, Some(AfuMode::Dedicated));
        assert_eq!(afu00.desc().max_contexts, 1);
        fs::remove_dir_all(s.0.join(CLASS).join("afu0.0")).unwrap();
        assert_eq!(afu00.desc().mode, Some(AfuMode::Directed));
        assert_eq!(afu00.desc().max_contexts, 511);
    }

    #[test]
    fn max_contexts_follows_the_mode() {
        let master = MasterFacts {
            mmio_size: 0x4000 + 4 * 0x1000,
            pp_mmio_off: 0x4000,
            pp_mmio_len: 0x1000,
        };
        assert_eq!(max_contexts(None, Some(&master)), 0);
        assert_eq!(max_contexts(Some(AfuMode::Dedicated), Some(&master)), 1);
        assert_eq!(max_contexts(Some(AfuMode::Directed), Some(&master)), 4);
        assert_eq!(max_contexts(Some(AfuMode::Directed), None), 1);
        for broken in [
            MasterFacts {
                pp_mmio_len: 0,
                ..master
            },
            MasterFacts {
                pp_mmio_off: 0x10_0000,
                ..master
            },
            MasterFacts {
                mmio_size: 0x4800,
                ..master
            },
        ] {
            assert_eq!(
                max_contexts(Some(AfuMode::Directed), Some(&broken)),
                1,
                "{broken:?}"
            );
        }
    }

    #[test]
    fn opening_a_missing_node_returns_enoent() {
        let s = fake_sysfs();
        let afus = discover_afus(&s.roots()).unwrap();
        for kind in [
            ContextKind::Master,
            ContextKind::Slave,
            ContextKind::Dedicated,
        ] {
            let err = afus[0]
                .open(kind, &Owner::unlimited(), AddressSpace::AttachedBuffers)
                .err()
                .unwrap();
            assert_eq!(err.raw_os_error(), Some(libc::ENOENT), "{kind:?}");
        }
    }

    #[test]
    fn start_work_arg_is_built_from_the_work() {
        let plain = Work {
            wed: 0x7FFF_0000_1FFF,
            amr: None,
            num_interrupts: None,
        };
        assert_eq!(
            start_work_arg(&plain).unwrap(),
            StartWorkArg {
                work_element_descriptor: 0x7FFF_0000_1FFF,
                ..Default::default()
            }
        );
        let full = Work {
            wed: 0x1000,
            amr: Some(0xC000_0000_0000_0000),
            num_interrupts: Some(4),
        };
        let arg = start_work_arg(&full).unwrap();
        assert_eq!(arg.flags, abi::START_WORK_AMR | abi::START_WORK_NUM_IRQS);
        assert_eq!(arg.amr, 0xC000_0000_0000_0000);
        assert_eq!(arg.num_interrupts, 4);
        assert_eq!((arg.tid, arg.reserved1, arg.reserved5), (0, 0, 0));
        assert!(arg.validate().is_ok());
        let irqs_only = start_work_arg(&Work { amr: None, ..full }).unwrap();
        assert_eq!(irqs_only.flags, abi::START_WORK_NUM_IRQS);
        assert_eq!(irqs_only.amr, 0);
        let too_many = Work {
            num_interrupts: Some(0x8000),
            ..full
        };
        assert_eq!(
            start_work_arg(&too_many).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    /// A context on `fd`, whose `map_mmio` reads its size from `<dir>/mmio_size`.
    fn context_on(fd: OwnedFd, dir: &Path, owner: OwnerId) -> LinuxContext {
        LinuxContext::new(fd, 5, owner, dir.join("mmio_size"))
    }

    #[test]
    fn ioctls_on_a_non_cxl_node_fail_with_the_kernels_errno() {
        let s = fake_sysfs();
        s.write("dev/cxl/afu0.0s", "");
        let afus = discover_afus(&s.roots()).unwrap();
        let err = afus[0]
            .open(
                ContextKind::Slave,
                &Owner::unlimited(),
                AddressSpace::AttachedBuffers,
            )
            .err()
            .unwrap();
        assert_eq!(
            err.raw_os_error(),
            Some(libc::ENOTTY),
            "GET_PROCESS_ELEMENT"
        );

        let owner = OwnerId::fresh();
        let fd = open_node(&s.0.join("dev/cxl/afu0.0s")).unwrap();
        let context = context_on(fd, &s.0, owner);
        assert_eq!(context.process_element(), 5);
        let work = Work {
            wed: 0x1000,
            amr: Some(1),
            num_interrupts: Some(2),
        };
        let enotty = Some(libc::ENOTTY);
        assert_eq!(
            context.start_work(&work).unwrap_err().raw_os_error(),
            enotty
        );
        assert_eq!(
            context.map_mmio().err().unwrap().raw_os_error(),
            Some(libc::EIO),
            "not started"
        );
        let deadline = Instant::now() + Duration::from_secs(5);
        assert_eq!(
            context.read_event(deadline).unwrap_err().raw_os_error(),
            Some(libc::EIO),
            "an empty file reads as end of file"
        );
        let done = context.interrupt_completion(1).unwrap();
        match done.wait(deadline) {
            CompletionState::Failed(why) => assert!(why.contains("events failed"), "{why}"),
            other => panic!("{other:?}"),
        }
        assert_eq!(
            context.read_event(deadline).unwrap_err().raw_os_error(),
            Some(libc::EIO)
        );
        let later = context.interrupt_completion(2).unwrap();
        assert!(matches!(later.state(), CompletionState::Failed(_)));
        assert_eq!(
            context.interrupt_completion(0).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );

        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let theirs = DmaMemory::allocate(4096, OwnerId::fresh(), &budget, false).unwrap();
        assert_eq!(
            context.attach_buffer(&theirs).unwrap_err().raw_os_error(),
            Some(libc::EFAULT)
        );
        let ours = DmaMemory::allocate(4096, owner, &budget, false).unwrap();
        assert_eq!(context.attach_buffer(&ours).unwrap(), ours.user_address());
        assert_eq!(context.attach_buffer(&ours).unwrap(), ours.user_address());
        drop(context);
        assert_eq!(Arc::strong_count(&ours), 1, "released with the context");
    }

    #[test]
    fn read_event_returns_every_event_of_one_read() {
        let s = Scratch::new("cxl-events");
        let mut bytes = abi::encode_event(5, &AfuEvent::Interrupt(2));
        let fault = AfuEvent::DataStorage {
            address: 0xDEAD_0000,
            dsisr: 0x4000_0000,
        };
        bytes.extend_from_slice(&abi::encode_event(5, &fault));
        let node = s.0.join("afu0.0s");
        fs::write(&node, &bytes).unwrap();
        let context = context_on(open_node(&node).unwrap(), &s.0, OwnerId::fresh());
        let deadline = Instant::now() + Duration::from_secs(5);
        // Waiting for an event reads the fd but leaves what it read for read_event.
        assert!(context.wait_event(deadline).unwrap());
        assert!(context.wait_event(deadline).unwrap());
        assert_eq!(
            context.read_event(deadline).unwrap(),
            Some(AfuEvent::Interrupt(2))
        );
        assert_eq!(context.read_event(deadline).unwrap(), Some(fault));
        assert_eq!(
            context.wait_event(deadline).unwrap_err().raw_os_error(),
            Some(libc::EIO)
        );
        assert_eq!(
            context.read_event(deadline).unwrap_err().raw_os_error(),
            Some(libc::EIO)
        );
    }

    /// A context reading the read end of a pipe, and the write end to send it events.
    fn piped() -> (Scratch, LinuxContext, PipeWriter) {
        let s = Scratch::new("cxl-pipe");
        let (reader, writer) = io::pipe().unwrap();
        let context = context_on(reader.into(), &s.0, OwnerId::fresh());
        (s, context, writer)
    }

    fn send(writer: &mut PipeWriter, events: &[AfuEvent]) {
        let bytes: Vec<u8> = events
            .iter()
            .flat_map(|e| abi::encode_event(5, e))
            .collect();
        writer.write_all(&bytes).unwrap();
    }

    fn soon() -> Instant {
        Instant::now() + Duration::from_secs(5)
    }

    #[test]
    fn read_event_times_out_when_nothing_comes() {
        let (_s, context, mut writer) = piped();
        let start = Instant::now();
        let none = context
            .read_event(start + Duration::from_millis(30))
            .unwrap();
        assert_eq!(none, None);
        assert!(start.elapsed() >= Duration::from_millis(30));
        assert_eq!(context.read_event(start).unwrap(), None, "a past deadline");
        send(&mut writer, &[AfuEvent::AfuError(7)]);
        assert_eq!(
            context.read_event(soon()).unwrap(),
            Some(AfuEvent::AfuError(7))
        );
    }

    #[test]
    fn interrupts_finish_their_waits_and_stay_readable() {
        let (_s, context, mut writer) = piped();
        let first = context.interrupt_completion(1).unwrap();
        let second = context.interrupt_completion(2).unwrap();
        assert!(lock(&context.reader).is_some(), "the reader thread runs");
        send(&mut writer, &[AfuEvent::Interrupt(2)]);
        assert_eq!(second.wait(soon()), CompletionState::Complete);
        assert_eq!(first.state(), CompletionState::Pending);
        send(
            &mut writer,
            &[AfuEvent::Interrupt(3), AfuEvent::Interrupt(1)],
        );
        assert_eq!(first.wait(soon()), CompletionState::Complete);

        let early = context.interrupt_completion(3).unwrap();
        assert_eq!(early.state(), CompletionState::Complete, "it came already");
        let again = context.interrupt_completion(3).unwrap();
        assert_eq!(again.state(), CompletionState::Pending, "claimed once");

        let mut seen = Vec::new();
        while let Some(event) = context
            .read_event(Instant::now() + Duration::from_millis(20))
            .unwrap()
        {
            seen.push(event);
        }
        assert_eq!(
            seen,
            [
                AfuEvent::Interrupt(2),
                AfuEvent::Interrupt(3),
                AfuEvent::Interrupt(1)
            ]
        );
        send(&mut writer, &[AfuEvent::Interrupt(3)]);
        assert_eq!(again.wait(soon()), CompletionState::Complete);
    }

    #[test]
    fn faults_fail_every_wait_until_read() {
        let (_s, context, mut writer) = piped();
        let waits: Vec<_> = (1..=3)
            .map(|irq| context.interrupt_completion(irq).unwrap())
            .collect();
        let fault = AfuEvent::DataStorage {
            address: 0xBAD0,
            dsisr: 0x4000_0000,
        };
        send(&mut writer, &[fault]);
        for wait in &waits {
            match wait.wait(soon()) {
                CompletionState::Failed(why) => assert!(why.contains("0xbad0"), "{why}"),
                other => panic!("{other:?}"),
            }
        }
        let after = context.interrupt_completion(1).unwrap();
        assert!(matches!(after.state(), CompletionState::Failed(_)));
        assert_eq!(context.read_event(soon()).unwrap(), Some(fault));
        let cleared = context.interrupt_completion(1).unwrap();
        assert_eq!(cleared.state(), CompletionState::Pending);
        send(&mut writer, &[AfuEvent::AfuError(0x42)]);
        match cleared.wait(soon()) {
            CompletionState::Failed(why) => assert!(why.contains("error 0x42"), "{why}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_wait_during_a_direct_read_is_served() {
        let (_s, context, mut writer) = piped();
        let context = Arc::new(context);
        let reading = context.clone();
        let t =
            std::thread::spawn(move || reading.read_event(Instant::now() + Duration::from_secs(5)));
        std::thread::sleep(Duration::from_millis(50));
        let done = context.interrupt_completion(4).unwrap();
        send(&mut writer, &[AfuEvent::Interrupt(4)]);
        assert_eq!(done.wait(soon()), CompletionState::Complete);
        assert_eq!(t.join().unwrap().unwrap(), Some(AfuEvent::Interrupt(4)));
        assert!(lock(&context.reader).is_some(), "the thread took over");
        send(&mut writer, &[AfuEvent::Interrupt(5)]);
        assert_eq!(
            context.read_event(soon()).unwrap(),
            Some(AfuEvent::Interrupt(5))
        );
    }

    #[test]
    fn dropping_the_context_fails_waits_and_ends_the_reader() {
        let (_s, context, _writer) = piped();
        let pending = context.interrupt_completion(1).unwrap();
        let shared = Arc::downgrade(&context.shared);
        drop(context);
        assert_eq!(
            pending.state(),
            CompletionState::Failed(CONTEXT_CLOSED.into())
        );
        assert_eq!(
            shared.strong_count(),
            0,
            "the reader ended and the fd closed"
        );
    }

    #[test]
    fn mmio_is_mapped_after_start_and_revoked_at_close() {
        let s = Scratch::new("cxl-mmio");
        let node = s.0.join("afu0.0s");
        fs::write(&node, vec![0u8; 8192]).unwrap();
        s.write("mmio_size", "4096\n");
        let context = context_on(open_node(&node).unwrap(), &s.0, OwnerId::fresh());
        *lock(&context.started) = true;
        let window = context.map_mmio().unwrap();
        assert_eq!(window.size(), 4096);
        window
            .write64(0x18, 0x8000_0000_0000_0000u64.swap_bytes())
            .unwrap();
        assert_eq!(
            fs::read(&node).unwrap()[0x18],
            0x80,
            "bytes as the AFU holds them"
        );
        assert_eq!(
            window.read64(0x18).unwrap().swap_bytes(),
            0x8000_0000_0000_0000
        );
        s.write("mmio_size", "many\n");
        assert_eq!(
            context.map_mmio().err().unwrap().kind(),
            io::ErrorKind::InvalidData
        );
        drop(context);
        assert_eq!(
            window.read64(0).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
    }

    #[test]
    fn a_second_start_fails_with_eio() {
        let s = Scratch::new("cxl-restart");
        let node = s.0.join("afu0.0d");
        fs::write(&node, "").unwrap();
        let context = context_on(open_node(&node).unwrap(), &s.0, OwnerId::fresh());
        *lock(&context.started) = true;
        let work = Work {
            wed: 0,
            amr: None,
            num_interrupts: None,
        };
        assert_eq!(
            context.start_work(&work).unwrap_err().raw_os_error(),
            Some(libc::EIO)
        );
    }

    #[test]
    fn everything_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LinuxAfu>();
        check::<LinuxContext>();
    }
}
