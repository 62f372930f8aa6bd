//! An emulated CAPI AFU, in the spirit of PSLSE: a "PSL" part that owns contexts (process
//! elements, the context limit, interrupts, modes) and the AFU model behind it, running on a
//! device thread. The memcpy AFU (AFU-directed) walks each context's work-element queue; the
//! vadd AFU (dedicated) reads its WED control block. Both are big-endian, as on the card, and
//! reach memory only through the buffers a context attached (a plugin's contexts) or, for a
//! context of this process's own program, also its memory at the same addresses ([`span`]):
//! any other effective address raises a data-storage fault on that context alone.

mod span;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::time::{Duration, Instant};

use super::abi::{memcpy, vadd};
use super::card::{CxlAccelerator as Accelerator, CxlCard};
use super::{AddressSpace, AfuDesc, AfuEvent, AfuMode, ContextKind, CxlAfu, CxlContext, Work};
use crate::devices::{
    AddressMap, Budget, Charge, Completion, CompletionState, DmaMemory, MmioWindow, Owner, OwnerId,
    errno, lock, wait_timeout,
};
use crate::family::DeviceDecl;
use span::{Side, Span};

/// Bytes of one context's problem-state slice.
const PP_SIZE: u64 = 0x1000;
/// Bytes of a dedicated context's problem-state area.
const DEDICATED_PS_SIZE: u64 = 0x1000;
/// Elements one context may run before the device thread turns to the next context.
const BURST: usize = 64;
/// The device thread's first interval between two looks at a running queue that showed no
/// new element...
const FIRST_POLL: Duration = Duration::from_micros(20);
/// ...doubling up to this.
const MAX_POLL: Duration = Duration::from_millis(1);
/// The device thread's sleep while no queue runs: whatever gives it work wakes it
/// ([`Afu::kick`]), so this only bounds the wait.
const IDLE_TICK: Duration = Duration::from_secs(1);
/// The DSISR the emulator reports for an address outside the attached buffers (a page fault,
/// as the PSL reports it).
const DSISR_NOT_MAPPED: u64 = 0x4000_0000;
/// The vadd AFU's clock, for the control block's cycle count.
const VADD_CLOCK_MHZ: u64 = 250;

/// An AFU as the config declares it.
pub struct EmulatedAfu {
    desc: AfuDesc,
    afu: Arc<Afu>,
}

/// The AFU and the PSL in front of it.
struct Afu {
    model: Accelerator,
    max_contexts: u32,
    irqs_min: u32,
    irqs_max: u32,
    state: Mutex<AfuState>,
    /// Wakes the device thread: work started, a restart, shutdown ([`Afu::kick`]).
    wake: Condvar,
}

impl Afu {
    /// Wakes the device thread, counting the wake so that one made while the thread is
    /// between its scan and its wait is not lost (it would otherwise sleep its interval,
    /// up to a millisecond, with work waiting).
    fn kick(&self) {
        lock(&self.state).kicks += 1;
        self.wake.notify_all();
    }
}

#[derive(Default)]
struct AfuState {
    contexts: BTreeMap<u32, Arc<Ctx>>,
    /// The master's global registers (memcpy AFU).
    cfg: u64,
    trace_ctl: u64,
    shutdown: bool,
    /// Wakes made ([`Afu::kick`]): the device thread sleeps only while none came since its
    /// scan began.
    kicks: u64,
    /// The device thread's looks at its contexts (the tests count them: an idle AFU does
    /// not poll).
    scans: u64,
}

impl EmulatedAfu {
    /// Builds the AFU and starts its device thread, which ends with the AFU.
    pub fn new(decl: &DeviceDecl) -> Self {
        let defaults = CxlCard::default();
        let card = decl.settings.get::<CxlCard>().unwrap_or(&defaults);
        let model = card.accelerator;
        let dedicated = model == Accelerator::Vadd;
        let max_contexts = if dedicated {
            1
        } else {
            card.max_contexts.unwrap_or(512)
        };
        let (irqs_min, irqs_max) = card.irqs();
        let afu = Arc::new(Afu {
            model,
            max_contexts,
            irqs_min,
            irqs_max,
            state: Mutex::new(AfuState::default()),
            wake: Condvar::new(),
        });
        let worker = Arc::downgrade(&afu);
        std::thread::Builder::new()
            .name(format!("emu-{}-afu", decl.id))
            .spawn(move || device_thread(worker))
            .expect("spawning an emulator device thread");
        let mode = if dedicated {
            AfuMode::Dedicated
        } else {
            AfuMode::Directed
        };
        EmulatedAfu {
            desc: AfuDesc {
                path: format!("emu:{}", decl.id),
                card: card.card,
                slice: card.slice.unwrap_or_default(),
                mode: Some(mode),
                modes_supported: vec![mode],
                mmio_size: if dedicated {
                    DEDICATED_PS_SIZE
                } else {
                    PP_SIZE
                },
                pp_mmio_offset: if dedicated {
                    0
                } else {
                    memcpy::GLOBAL_AREA_SIZE
                },
                pp_mmio_len: if dedicated { 0 } else { PP_SIZE },
                irqs_min,
                irqs_max,
                max_contexts,
                caia_version: (1, 2),
                vendor_id: decl.vendor_id,
                device_id: decl.device_id,
                bus_address: decl.bus_address,
                emulated: true,
            },
            afu,
        }
    }
}

impl Drop for EmulatedAfu {
    fn drop(&mut self) {
        lock(&self.afu.state).shutdown = true;
        self.afu.kick();
    }
}

impl CxlAfu for EmulatedAfu {
    fn desc(&self) -> AfuDesc {
        self.desc.clone()
    }

    fn open(
        &self,
        kind: ContextKind,
        owner: &Owner,
        space: AddressSpace,
    ) -> io::Result<Box<dyn CxlContext>> {
        let dedicated = self.afu.model == Accelerator::Vadd;
        if dedicated != (kind == ContextKind::Dedicated) {
            return Err(errno(libc::ENODEV));
        }
        let mut state = lock(&self.afu.state);
        let pe = (0..self.afu.max_contexts)
            .find(|pe| !state.contexts.contains_key(pe))
            .ok_or_else(|| errno(libc::ENOSPC))?;
        let ctx = Arc::new(Ctx {
            pe,
            kind,
            owner: owner.id,
            host: owner.host.clone(),
            inner: Mutex::new(CtxState {
                space,
                ..CtxState::default()
            }),
            changed: Condvar::new(),
            closed: AtomicBool::new(false),
        });
        state.contexts.insert(pe, ctx.clone());
        Ok(Box::new(EmulatedContext {
            afu: self.afu.clone(),
            ctx,
            desc: self.desc.clone(),
        }))
    }
}

/// One context as the PSL and the AFU see it.
struct Ctx {
    pe: u32,
    kind: ContextKind,
    owner: OwnerId,
    /// What the waits registered on the context are charged to.
    host: Arc<Budget>,
    inner: Mutex<CtxState>,
    /// Wakes readers of events and interrupt waits.
    changed: Condvar,
    closed: AtomicBool,
}

impl Ctx {
    /// Whether the context's memcpy queue runs: started, not stopped by an interrupt or a
    /// fault, not closed. The program may write its next element at any time, unannounced.
    fn runs_a_queue(&self) -> bool {
        let inner = lock(&self.inner);
        inner.queue.is_some() && !inner.stopped && !self.closed.load(Ordering::Acquire)
    }
}

#[derive(Default)]
struct CtxState {
    /// What effective addresses outside the attached buffers reach.
    space: AddressSpace,
    started: bool,
    wed: u64,
    num_irqs: u16,
    /// Attached buffers by effective address.
    buffers: AddressMap<Arc<DmaMemory>>,
    /// The memcpy AFU's position in the work-element queue.
    queue: Option<QueueCursor>,
    /// The vadd AFU has a control block to process.
    vadd_pending: bool,
    /// Stopped by an IRQ element or a fault, until PCTRL.Restart.
    stopped: bool,
    pending_irqs: BTreeSet<u16>,
    faults: VecDeque<(u64, u64)>,
    errors: VecDeque<u64>,
    waiters: Vec<Waiter>,
    timebase_requested: bool,
}

/// A wait for an interrupt, charged to the context's owner until it finishes or nobody
/// waits on it any more.
struct Waiter {
    irq: u16,
    done: Arc<Completion>,
    _charge: Charge,
}

/// The most storage faults and AFU errors kept for `read_event`; beyond it the oldest go.
const MAX_QUEUED: usize = 1024;
/// What one registered wait costs the host, as charged.
const WAITER_BYTES: u64 = (size_of::<Waiter>() + size_of::<Completion>() + 16) as u64;

#[derive(Clone, Copy)]
struct QueueCursor {
    ea: u64,
    elements: u64,
    index: u64,
    phase: bool,
}

impl CtxState {
    /// The memory behind `[ea, ea + len)`: the attached buffer that holds all of it, or this
    /// process's memory for a context that reaches it (whether it is mapped shows on access).
    fn translate(&self, ea: u64, len: u64) -> Option<Span> {
        if let Some((memory, offset, _)) = self.buffers.find(ea, len) {
            return Some(Span::Buffer(memory.clone(), offset));
        }
        match self.space {
            AddressSpace::ThisProcess if ea.checked_add(len).is_some() => Some(Span::Process(ea)),
            _ => None,
        }
    }

    fn raise_interrupt(&mut self, irq: u16) {
        self.pending_irqs.insert(irq);
        self.waiters.retain(|waiter| {
            if waiter.irq == irq {
                waiter.done.finish(CompletionState::Complete);
                false
            } else {
                true
            }
        });
    }

    fn fail_waiters(&mut self, why: &str) {
        for waiter in self.waiters.drain(..) {
            waiter
                .done
                .finish(CompletionState::Failed((why.to_string()).into()));
        }
    }

    /// The next event `read_event` answers: interrupts, then faults, then AFU errors.
    fn take_event(&mut self) -> Option<AfuEvent> {
        if let Some(irq) = self.pending_irqs.pop_first() {
            return Some(AfuEvent::Interrupt(irq));
        }
        if let Some((address, dsisr)) = self.faults.pop_front() {
            return Some(AfuEvent::DataStorage { address, dsisr });
        }
        self.errors.pop_front().map(AfuEvent::AfuError)
    }

    fn has_event(&self) -> bool {
        !self.pending_irqs.is_empty() || !self.faults.is_empty() || !self.errors.is_empty()
    }

    fn storage_fault(&mut self, pe: u32, ea: u64) {
        if self.faults.len() >= MAX_QUEUED {
            self.faults.pop_front();
        }
        self.faults.push_back((ea, DSISR_NOT_MAPPED));
        self.stopped = true;
        self.fail_waiters(&format!(
            "data storage fault on process element {pe} at effective address {ea:#x}"
        ));
    }
}

/// The handle a plugin's context resource holds.
struct EmulatedContext {
    afu: Arc<Afu>,
    ctx: Arc<Ctx>,
    desc: AfuDesc,
}

impl EmulatedContext {
    /// Waits until `ready` finds what it looks for in the context's state, or until
    /// `deadline` (`None`).
    fn when_event<R>(
        &self,
        deadline: Instant,
        mut ready: impl FnMut(&mut CtxState) -> Option<R>,
    ) -> Option<R> {
        let mut inner = lock(&self.ctx.inner);
        loop {
            if let Some(found) = ready(&mut inner) {
                return Some(found);
            }
            let now = Instant::now();
            if now >= deadline {
                return None;
            }
            inner = wait_timeout(&self.ctx.changed, inner, deadline - now);
        }
    }
}

impl Drop for EmulatedContext {
    fn drop(&mut self) {
        self.ctx.closed.store(true, Ordering::Release);
        {
            let mut inner = lock(&self.ctx.inner);
            inner.fail_waiters("the context was closed");
            inner.buffers.clear();
            inner.queue = None;
        }
        self.ctx.changed.notify_all();
        lock(&self.afu.state).contexts.remove(&self.ctx.pe);
    }
}

impl CxlContext for EmulatedContext {
    fn process_element(&self) -> u32 {
        self.ctx.pe
    }

    fn start_work(&self, work: &Work) -> io::Result<()> {
        let num_irqs = match work.num_interrupts {
            Some(n) if !(self.afu.irqs_min..=self.afu.irqs_max).contains(&u32::from(n)) => {
                return Err(errno(libc::EINVAL));
            }
            Some(n) => n,
            None => self.afu.irqs_min as u16,
        };
        let mut inner = lock(&self.ctx.inner);
        if inner.started {
            return Err(errno(libc::EIO));
        }
        inner.started = true;
        inner.wed = work.wed;
        inner.num_irqs = num_irqs;
        match self.afu.model {
            Accelerator::Vadd => inner.vadd_pending = true,
            // No queue at all (a master that only drives the global registers starts so).
            _ if work.wed == 0 => {}
            _ => {
                let (ea, depth) = memcpy::decode_wed(work.wed);
                inner.queue = Some(QueueCursor {
                    ea,
                    elements: u64::from(depth) * memcpy::ELEMENTS_PER_LINE,
                    index: 0,
                    phase: false,
                });
            }
        }
        drop(inner);
        self.afu.kick();
        Ok(())
    }

    fn map_mmio(&self) -> io::Result<Arc<dyn MmioWindow>> {
        if !lock(&self.ctx.inner).started {
            return Err(errno(libc::EIO));
        }
        let size = match self.ctx.kind {
            ContextKind::Master => {
                self.desc.pp_mmio_offset + u64::from(self.afu.max_contexts) * PP_SIZE
            }
            ContextKind::Slave => PP_SIZE,
            ContextKind::Dedicated => DEDICATED_PS_SIZE,
        };
        Ok(Arc::new(ProblemState {
            afu: self.afu.clone(),
            ctx: self.ctx.clone(),
            size,
        }))
    }

    fn attach_buffer(&self, memory: &Arc<DmaMemory>) -> io::Result<u64> {
        if memory.owner() != self.ctx.owner {
            return Err(errno(libc::EFAULT));
        }
        let ea = memory.user_address();
        lock(&self.ctx.inner)
            .buffers
            .insert(ea, memory.len(), memory.clone());
        Ok(ea)
    }

    fn read_event(&self, deadline: Instant) -> io::Result<Option<AfuEvent>> {
        Ok(self.when_event(deadline, CtxState::take_event))
    }

    fn wait_event(&self, deadline: Instant) -> io::Result<bool> {
        let ready = |inner: &mut CtxState| inner.has_event().then_some(());
        Ok(self.when_event(deadline, ready).is_some())
    }

    fn interrupt_completion(&self, irq: u16) -> io::Result<Arc<Completion>> {
        let mut inner = lock(&self.ctx.inner);
        if irq == 0 || (inner.started && irq > inner.num_irqs) {
            return Err(errno(libc::EINVAL));
        }
        let done = Arc::new(Completion::default());
        if inner.pending_irqs.contains(&irq) {
            done.finish(CompletionState::Complete);
        } else {
            // A wait registered after a fault waits for a restart: only the waits the fault
            // interrupted fail.
            // Waits nobody holds any more go first, so dropped events cost nothing.
            inner.waiters.retain(|w| Arc::strong_count(&w.done) > 1);
            let charge = self.ctx.host.charge(WAITER_BYTES)?;
            inner.waiters.push(Waiter {
                irq,
                done: done.clone(),
                _charge: charge,
            });
        }
        Ok(done)
    }
}

/// A problem-state window: the master's whole area, a slave's slice, or a dedicated area.
/// Registers are big-endian: a 64-bit load on this (little-endian) host sees them byte-swapped.
struct ProblemState {
    afu: Arc<Afu>,
    ctx: Arc<Ctx>,
    size: u64,
}

impl ProblemState {
    fn live(&self) -> io::Result<()> {
        if self.ctx.closed.load(Ordering::Acquire) {
            Err(errno(libc::ENODEV))
        } else {
            Ok(())
        }
    }

    /// The context and the per-process offset `offset` falls in, or `None` for the master's
    /// global area.
    fn locate(&self, offset: u64) -> Option<(Arc<Ctx>, u64)> {
        match self.ctx.kind {
            ContextKind::Slave | ContextKind::Dedicated => Some((self.ctx.clone(), offset)),
            ContextKind::Master if offset < memcpy::GLOBAL_AREA_SIZE => None,
            ContextKind::Master => {
                let relative = offset - memcpy::GLOBAL_AREA_SIZE;
                let pe = (relative / PP_SIZE) as u32;
                let ctx = lock(&self.afu.state).contexts.get(&pe).cloned()?;
                Some((ctx, relative % PP_SIZE))
            }
        }
    }

    /// The 64-bit register (native value) at the 8-byte-aligned `offset`.
    fn read_register(&self, offset: u64) -> u64 {
        match self.locate(offset) {
            None => {
                let state = lock(&self.afu.state);
                match offset {
                    memcpy::CFG => state.cfg,
                    memcpy::TRACE_CTL => state.trace_ctl,
                    _ => 0,
                }
            }
            Some((ctx, offset)) => {
                if self.afu.model == Accelerator::Vadd {
                    return if offset == 0 { vadd::AFU_DESC } else { 0 };
                }
                let inner = lock(&ctx.inner);
                match offset {
                    memcpy::PSA_WED => inner.wed,
                    memcpy::PSA_PH => u64::from(ctx.pe) << 48,
                    memcpy::PSA_STATUS if inner.stopped => memcpy::STATUS_STOPPED,
                    memcpy::PSA_TB if inner.timebase_requested => timebase(),
                    _ => 0,
                }
            }
        }
    }

    fn write_register(&self, offset: u64, value: u64) {
        match self.locate(offset) {
            None => {
                let mut state = lock(&self.afu.state);
                match offset {
                    memcpy::CFG => state.cfg = value,
                    memcpy::TRACE_CTL => state.trace_ctl = value,
                    _ => {}
                }
            }
            Some((ctx, offset)) => {
                let mut inner = lock(&ctx.inner);
                match offset {
                    memcpy::PSA_PCTRL if value & memcpy::PCTRL_RESTART != 0 => {
                        inner.stopped = false;
                        drop(inner);
                        self.afu.kick();
                    }
                    memcpy::PSA_TB if value == 0 => inner.timebase_requested = true,
                    _ => {}
                }
            }
        }
    }
}

/// A non-zero timebase value: a counter at 500 MHz (nanoseconds since the first read, halved).
fn timebase() -> u64 {
    static START: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
    (START.get_or_init(Instant::now).elapsed().as_nanos() as u64 / 2) | 1
}

impl MmioWindow for ProblemState {
    fn size(&self) -> u64 {
        self.size
    }

    fn read32(&self, offset: u64) -> io::Result<u32> {
        self.live()?;
        let register = self.read_register(offset & !7);
        let word = if offset & 4 == 0 {
            (register >> 32) as u32
        } else {
            register as u32
        };
        Ok(word.swap_bytes())
    }

    fn read64(&self, offset: u64) -> io::Result<u64> {
        self.live()?;
        Ok(self.read_register(offset).swap_bytes())
    }

    fn write32(&self, offset: u64, value: u32) -> io::Result<()> {
        self.live()?;
        let register = self.read_register(offset & !7);
        let value = u64::from(value.swap_bytes());
        let merged = if offset & 4 == 0 {
            (register & 0xFFFF_FFFF) | (value << 32)
        } else {
            (register & !0xFFFF_FFFF) | value
        };
        self.write_register(offset & !7, merged);
        Ok(())
    }

    fn write64(&self, offset: u64, value: u64) -> io::Result<()> {
        self.live()?;
        self.write_register(offset, value.swap_bytes());
        Ok(())
    }
}

/// The device thread: round-robin over the contexts with work, a burst each. While a memcpy
/// queue runs it polls for the program's next elements, as the card does, sleeping with a
/// growing interval (up to [`MAX_POLL`]) while the queue shows none; with no queue running
/// it sleeps until [`Afu::kick`] gives it work.
fn device_thread(afu: Weak<Afu>) {
    let mut idle = FIRST_POLL;
    loop {
        let Some(afu) = afu.upgrade() else { return };
        let (contexts, kicks): (Vec<Arc<Ctx>>, u64) = {
            let mut state = lock(&afu.state);
            if state.shutdown {
                return;
            }
            state.scans += 1;
            (state.contexts.values().cloned().collect(), state.kicks)
        };
        let mut progressed = false;
        let mut watching = false;
        for ctx in contexts {
            progressed |= match afu.model {
                Accelerator::Vadd => run_vadd(&ctx),
                _ => run_memcpy(&afu, &ctx),
            };
            watching |= afu.model != Accelerator::Vadd && ctx.runs_a_queue();
        }
        let state = lock(&afu.state);
        if progressed || state.kicks != kicks {
            idle = FIRST_POLL;
            continue;
        }
        if watching {
            drop(wait_timeout(&afu.wake, state, idle));
            idle = (idle * 2).min(MAX_POLL);
        } else {
            drop(wait_timeout(&afu.wake, state, IDLE_TICK));
            idle = FIRST_POLL;
        }
    }
}

/// Runs up to a burst of work elements of one context; returns whether any ran.
fn run_memcpy(afu: &Afu, ctx: &Ctx) -> bool {
    let mut ran = false;
    let mut faulted = false;
    for _ in 0..BURST {
        let mut inner = lock(&ctx.inner);
        if inner.stopped || ctx.closed.load(Ordering::Acquire) {
            break;
        }
        let Some(mut cursor) = inner.queue else {
            break;
        };
        if cursor.elements == 0 {
            inner.storage_fault(ctx.pe, cursor.ea);
            faulted = true;
            inner.queue = None;
            break;
        }
        let ea = cursor.ea + cursor.index * memcpy::WE_SIZE;
        let Some(queue) = inner.translate(ea, memcpy::WE_SIZE) else {
            inner.storage_fault(ctx.pe, ea);
            faulted = true;
            break;
        };
        // The producer writes `cmd` last: the rest is read only once it shows the element valid.
        let mut raw = [0u8; 32];
        if queue.read(0, &mut raw[..1]).is_err() {
            inner.storage_fault(ctx.pe, ea);
            faulted = true;
            break;
        }
        if raw[0] & memcpy::CMD_VALID == 0 {
            break;
        }
        std::sync::atomic::fence(Ordering::Acquire);
        if queue.read(0, &mut raw).is_err() {
            inner.storage_fault(ctx.pe, ea);
            faulted = true;
            break;
        }
        let element = memcpy::WorkElement::decode(&raw);
        let wrap = element.cmd & memcpy::CMD_WRAP != 0;
        if element.cmd & memcpy::CMD_VALID == 0 || wrap != cursor.phase || element.status != 0 {
            break;
        }
        let status = execute(afu, &mut inner, ctx.pe, &element);
        // The status byte is written after the operation's effects, and before an interrupt
        // is raised: whoever sees either sees the element done.
        std::sync::atomic::fence(Ordering::Release);
        let _ = queue.write(memcpy::WE_STATUS as u64, &[status]);
        std::sync::atomic::fence(Ordering::Release);
        if element.cmd & memcpy::CMD_MASK == memcpy::CMD_IRQ && status == memcpy::STATUS_COMPLETE {
            inner.raise_interrupt(element.length);
        }
        cursor.index += 1;
        if cursor.index == cursor.elements {
            cursor.index = 0;
            cursor.phase = !cursor.phase;
        }
        inner.queue = Some(cursor);
        ran = true;
        if status & memcpy::TRANS_FAULT != 0 || element.cmd & memcpy::CMD_MASK == memcpy::CMD_IRQ {
            drop(inner);
            ctx.changed.notify_all();
            break;
        }
    }
    if faulted {
        ctx.changed.notify_all();
    }
    ran
}

/// Does one element; returns its status byte.
fn execute(afu: &Afu, inner: &mut CtxState, pe: u32, element: &memcpy::WorkElement) -> u8 {
    let length = u64::from(element.length);
    match element.cmd & memcpy::CMD_MASK {
        memcpy::CMD_COPY => {
            let from = inner.translate(element.src, length);
            let to = inner.translate(element.dst, length);
            match (from, to) {
                (Some(src), Some(dst)) => match span::copy(&dst, &src, length) {
                    Ok(()) => memcpy::STATUS_COMPLETE,
                    Err(Side::Source) => fault(inner, pe, element.src),
                    Err(Side::Destination) => fault(inner, pe, element.dst),
                },
                (None, _) => fault(inner, pe, element.src),
                (_, None) => fault(inner, pe, element.dst),
            }
        }
        memcpy::CMD_IRQ => {
            let irq = element.length;
            if irq == 0 || irq > inner.num_irqs {
                memcpy::STATUS_COMPLETE | memcpy::INV_SRC
            } else {
                // The caller raises the interrupt once the status is written. The AFU stops the
                // process after an interrupt, until PCTRL.Restart.
                inner.stopped = true;
                memcpy::STATUS_COMPLETE
            }
        }
        memcpy::CMD_INCR => match (
            inner.translate(element.src, 4),
            inner.translate(element.dst, 4),
        ) {
            (Some(src), Some(dst)) => {
                let mut word = [0u8; 4];
                if src.read(0, &mut word).is_err() {
                    return fault(inner, pe, element.src);
                }
                let next = u32::from_be_bytes(word).wrapping_add(1);
                if dst.write(0, &next.to_be_bytes()).is_err() {
                    return fault(inner, pe, element.dst);
                }
                memcpy::STATUS_COMPLETE
            }
            (None, _) => fault(inner, pe, element.src),
            (_, None) => fault(inner, pe, element.dst),
        },
        // Atomic against the AFU's other work; a program writing the word meanwhile races it.
        memcpy::CMD_ATOMIC => match inner.translate(element.dst, 8) {
            Some(dst) => {
                let mut word = [0u8; 8];
                if dst.read(0, &mut word).is_err() {
                    return fault(inner, pe, element.dst);
                }
                let current = u64::from_be_bytes(word);
                let swap = match element.cmd_extra {
                    memcpy::CAS_EQUAL_8 => current == element.atomic_op1,
                    memcpy::CAS_NOT_EQUAL_8 => current != element.atomic_op1,
                    _ => return memcpy::STATUS_COMPLETE | memcpy::UNDEF_CMD,
                };
                if swap && dst.write(0, &element.src.to_be_bytes()).is_err() {
                    return fault(inner, pe, element.dst);
                }
                memcpy::STATUS_COMPLETE
            }
            None => fault(inner, pe, element.dst),
        },
        _ => {
            if lock_cfg(afu) & memcpy::CFG_STOP_ON_INVALID_CMD != 0 {
                inner.stopped = true;
            }
            memcpy::STATUS_COMPLETE | memcpy::UNDEF_CMD
        }
    }
}

fn lock_cfg(afu: &Afu) -> u64 {
    lock(&afu.state).cfg
}

/// A data-storage fault at `ea`: the event goes to this context, which stops.
fn fault(inner: &mut CtxState, pe: u32, ea: u64) -> u8 {
    inner.storage_fault(pe, ea);
    memcpy::STATUS_COMPLETE | memcpy::TRANS_FAULT
}

/// The vadd AFU: reads the control block at the WED, adds the vectors (big-endian u32,
/// wrapping), writes the cycle count and then `done`. Returns whether it ran.
fn run_vadd(ctx: &Ctx) -> bool {
    let mut inner = lock(&ctx.inner);
    if !inner.vadd_pending || inner.stopped || ctx.closed.load(Ordering::Acquire) {
        return false;
    }
    inner.vadd_pending = false;
    let started = Instant::now();
    let wed = inner.wed;
    let Some(block) = inner.translate(wed, vadd::BLOCK_SIZE) else {
        inner.storage_fault(ctx.pe, wed);
        drop(inner);
        ctx.changed.notify_all();
        return true;
    };
    let mut raw = [0u8; 0x20];
    if block.read(0, &mut raw).is_err() {
        inner.storage_fault(ctx.pe, wed);
        drop(inner);
        ctx.changed.notify_all();
        return true;
    }
    let field = |offset: u64| {
        let at = offset as usize;
        u64::from_be_bytes(raw[at..at + 8].try_into().expect("8 bytes"))
    };
    let (size, in1, in2, out) = (
        field(vadd::SIZE),
        field(vadd::INPUT1),
        field(vadd::INPUT2),
        field(vadd::OUTPUT),
    );
    let bytes = size.saturating_mul(4);
    let addresses = [in1, in2, out];
    let mut spans = Vec::new();
    for ea in addresses {
        match inner.translate(ea, bytes) {
            Some(span) => spans.push(span),
            None => {
                inner.storage_fault(ctx.pe, ea);
                drop(inner);
                ctx.changed.notify_all();
                return true;
            }
        }
    }
    drop(inner);
    // The AFU is big-endian; the ranges were translated for `bytes` above.
    let add = |x: [u8; 4], y: [u8; 4]| {
        u32::from_be_bytes(x)
            .wrapping_add(u32::from_be_bytes(y))
            .to_be_bytes()
    };
    let [a, b, c] = &spans[..] else {
        unreachable!("three ranges were translated")
    };
    if let Err(which) = span::zip_words(c, a, b, size, add) {
        lock(&ctx.inner).storage_fault(ctx.pe, addresses[which]);
        ctx.changed.notify_all();
        return true;
    }
    let clocks = started.elapsed().as_nanos() as u64 * VADD_CLOCK_MHZ / 1000;
    let _ = block.write(vadd::CLOCK_COUNT, &clocks.max(1).to_be_bytes());
    // `done` goes last, in one ordered store: whoever sees it sees the output.
    let _ = block.store_be_u64(vadd::DONE, 1);
    true
}

#[cfg(test)]
mod tests;
