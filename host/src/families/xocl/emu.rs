//! An emulated XRT card in the spirit of sw_emu: memory banks with an allocator, buffer objects
//! with a host backing store kept apart from device memory (so a missing sync shows up as
//! stale data, as on hardware), the KDS scheduler dispatching ERT commands to free compute
//! units (several CUs per kernel, `cu_mask` honoured), and compute units behind the HLS
//! control register block (ap_start, ap_done clear-on-read, ap_idle, arguments from 0x10)
//! that run the xclbin's own kernels, sandboxed (`kernels`), or the built-in vadd.
//!
//! Scheduling is event-driven: a command waits for a count of unfinished dependencies, each
//! finished dependency counts it down, and a command that becomes ready is dispatched by the
//! thread that made it ready. Small work (a short vadd, a short copy) runs right there, as
//! hardware would finish it before a thread could be woken; large work goes to the compute
//! unit's thread or the copy thread.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use super::abi::{self, ErtHeader, StartCu};
use super::card::{DEFAULT_KERNEL_DEADLINE, XoclCard};
use super::xclbin::{ArgKind, KERNEL_ARGS_BASE, KERNEL_ARGS_END, KernelMeta, MemKind, Xclbin};
use super::{BoInfo, Command, DeviceDesc, LoadedXclbin, SyncDirection, XoclClient, XoclDevice};
use crate::devices::{
    AddressMap, Budget, BudgetKind, Charge, Completion, CompletionState, DmaMemory, Owner, OwnerId,
    errno, lock,
};
use crate::family::DeviceDecl;
use crate::types::Guid;
use kernels::{KernelProgram, LaunchArg, MAP_AT_LEAST, Window};
pub(crate) use kernels::{MODULE_OWN_BYTES, SHARE_EXPORT};

/// Where host-only buffer objects appear in the device's address space.
const HOST_APERTURE: u64 = 0x4000_0000_0000;
/// Size of that aperture.
const HOST_APERTURE_SIZE: u64 = 1 << 40;
/// Buffer objects are page-aligned and sized, as CREATE_BO does.
const BO_ALIGN: u64 = 4096;
/// The emulator backs banks with lazily-touched host memory; beyond this total it refuses.
const MAX_BANK_BYTES: u64 = 64 << 30;

/// The largest freed buffer whose bank pages are zeroed in place rather than given back.
pub(super) const ZEROED_IN_PLACE: u64 = 256 << 20;
/// The most compute units the card runs at once, over all its images: as many as an ERT
/// packet's four cu_mask words name.
const MAX_CUS: usize = 128;
/// The most dependencies one command may name (`MAX_DEPENT_CMD_BO`).
pub const MAX_DEPS: usize = 8;
/// A launch of at most this many vadd elements runs on the thread that dispatches it.
const INLINE_ELEMENTS: u64 = 16 * 1024;
/// A copy of at most this many bytes runs on the thread that dispatches it.
const INLINE_COPY: u64 = 256 * 1024;

/// A card as the config declares it.
pub struct EmulatedCard {
    desc: DeviceDesc,
    card: Arc<Card>,
}

impl EmulatedCard {
    /// Builds the card and starts its copy thread; it ends with the card.
    pub fn new(decl: &DeviceDecl) -> Self {
        let card = Arc::new(Card {
            state: Mutex::new(CardState {
                host: RangeAllocator::new(HOST_APERTURE, HOST_APERTURE_SIZE),
                ..CardState::default()
            }),
            next_client: AtomicU64::new(1),
            kernel_deadline: decl
                .settings
                .get::<XoclCard>()
                .map_or(DEFAULT_KERNEL_DEADLINE, XoclCard::kernel_deadline),
        });
        let (copies, copy_queue) = mpsc::channel::<CopyJob>();
        lock(&card.state).copies = Some(copies);
        let weak = Arc::downgrade(&card);
        spawn(&format!("emu-{}-dma", decl.id), move || {
            for job in copy_queue {
                let Some(card) = weak.upgrade() else {
                    settle(&job.done, gone("the card"));
                    continue;
                };
                card.run_copy(job);
            }
        });
        EmulatedCard {
            desc: DeviceDesc {
                path: format!("emu:{}", decl.id),
                vendor_id: decl.vendor_id,
                device_id: decl.device_id,
                bus_address: decl.bus_address,
                board_name: "accelhost sw_emu card".into(),
                loaded: None,
                emulated: true,
            },
            card,
        }
    }
}

impl Drop for EmulatedCard {
    fn drop(&mut self) {
        let mut state = lock(&self.card.state);
        state.shutdown = true;
        state.copies = None;
        for cu in state.cus.iter().flatten() {
            cu.stop();
        }
    }
}

fn spawn(name: &str, body: impl FnOnce() + Send + 'static) {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(body)
        .expect("spawning an emulator thread");
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.into())
}

impl XoclDevice for EmulatedCard {
    fn desc(&self) -> DeviceDesc {
        let mut desc = self.desc.clone();
        desc.loaded = lock(&self.card.state).slots.last().map(|s| s.xclbin.uuid);
        desc
    }

    fn open(&self, owner: &Owner) -> io::Result<Box<dyn XoclClient>> {
        let id = self.card.next_client.fetch_add(1, Ordering::Relaxed);
        lock(&self.card.state).budgets.insert(id, owner.dma.clone());
        Ok(Box::new(EmulatedClient {
            card: self.card.clone(),
            id,
            owner: owner.clone(),
        }))
    }
}

/// The card: everything below is guarded by one lock, which no thread holds while it copies
/// or computes.
struct Card {
    state: Mutex<CardState>,
    next_client: AtomicU64,
    /// How long one launch of the xclbin's own kernels may run.
    kernel_deadline: Duration,
}

#[derive(Default)]
struct CardState {
    /// The loaded images, in the order they were loaded. They share one memory topology.
    slots: Vec<Slot>,
    /// Per client: the DMA budget its kernels' launch memory is charged to.
    budgets: HashMap<u64, Arc<Budget>>,
    banks: Vec<Option<Bank>>,
    host: RangeAllocator,
    bos: HashMap<(u64, u32), Bo>,
    /// Device address → the BO starting there, for translation.
    by_address: AddressMap<(u64, u32)>,
    /// Freed buffers' bank ranges that running launches still map.
    parked: Vec<Parked>,
    next_handle: u32,
    /// By the card's CU index: the units of the loaded images (`None` between images).
    cus: Vec<Option<Arc<ComputeUnit>>>,
    /// Per CU index: the clients holding a context, and whether one holds it exclusively.
    contexts: Vec<Vec<(u64, bool)>>,
    /// Commands waiting for dependencies, by sequence number.
    waiting: HashMap<u64, Waiting>,
    /// Commands whose dependencies completed, in the order they became ready.
    ready: VecDeque<Pending>,
    next_seq: u64,
    copies: Option<mpsc::Sender<CopyJob>>,
    /// Bumped by every reset; work started before it reports failure.
    epoch: u64,
    shutdown: bool,
}

/// An image loaded on the card: its compute units are the card's `first_cu..end_cu`.
struct Slot {
    xclbin: Arc<Xclbin>,
    first_cu: u32,
    end_cu: u32,
}

impl Slot {
    fn cus(&self) -> std::ops::Range<usize> {
        self.first_cu as usize..self.end_cu as usize
    }
}

/// A memory bank of the loaded xclbin: its storage and its allocator.
struct Bank {
    base: u64,
    storage: Arc<DmaMemory>,
    free: RangeAllocator,
}

struct Bo {
    size: u64,
    device_address: u64,
    bank: Option<u32>,
    host: Arc<DmaMemory>,
    /// Cloned by each launch that maps the buffer's pages into its memory.
    launches: Arc<()>,
}

/// A freed buffer's bank range that a running launch still maps: it goes back to the bank
/// (its pages discarded) when the last such launch ends, so that no later buffer, of this
/// client or another, is written by a kernel that outlived the buffer it was given.
struct Parked {
    storage: Arc<DmaMemory>,
    bank: u32,
    address: u64,
    size: u64,
    launches: Arc<()>,
}

/// A submitted command not yet dispatched.
struct Pending {
    client: u64,
    command: Ready,
    done: Arc<Completion>,
    epoch: u64,
    /// Held against the client's host budget until the command finishes.
    charge: Charge,
}

/// A command and how many of its dependencies have not finished.
struct Waiting {
    pending: Pending,
    unfinished: usize,
}

enum Ready {
    Launch {
        candidates: Vec<u32>,
        regmap: Vec<u32>,
        /// Small enough to run on the dispatching thread.
        inline: bool,
    },
    Copy(CopyWork),
}

/// One copy, with the memory it touches resolved at submit time.
struct CopyJob {
    work: CopyWork,
    done: Arc<Completion>,
    epoch: u64,
    _charge: Charge,
}

enum CopyWork {
    /// Between a BO's host backing and its device memory (or, for COPY_BO, two device ranges).
    Move {
        from: (Arc<DmaMemory>, u64),
        to: (Arc<DmaMemory>, u64),
        size: u64,
    },
}

/// First-fit allocation of address ranges, coalescing on free.
#[derive(Default)]
struct RangeAllocator {
    /// Free ranges: start → length.
    free: BTreeMap<u64, u64>,
}

impl RangeAllocator {
    fn new(base: u64, size: u64) -> Self {
        let mut free = BTreeMap::new();
        if size > 0 {
            free.insert(base, size);
        }
        RangeAllocator { free }
    }

    fn allocate(&mut self, size: u64) -> Option<u64> {
        let (&start, &len) = self.free.iter().find(|&(_, &len)| len >= size)?;
        self.free.remove(&start);
        if len > size {
            self.free.insert(start + size, len - size);
        }
        Some(start)
    }

    fn release(&mut self, start: u64, size: u64) {
        let mut start = start;
        let mut size = size;
        if let Some((&prev, &len)) = self.free.range(..start).next_back()
            && prev + len == start
        {
            self.free.remove(&prev);
            start = prev;
            size += len;
        }
        if let Some(&next_len) = self.free.get(&(start + size)) {
            self.free.remove(&(start + size));
            size += next_len;
        }
        self.free.insert(start, size);
    }
}

impl CardState {
    /// The memory behind `[address, address + len)` of `client`'s buffer objects: the BO's
    /// bank storage, or its host backing for host-only memory.
    fn translate(&self, client: u64, address: u64, len: u64) -> Option<(Arc<DmaMemory>, u64)> {
        let (&key, offset, _) = self.by_address.find(address, len)?;
        let bo = self.bos.get(&key).filter(|_| key.0 == client)?;
        Some(self.device_view(bo, offset))
    }

    /// Where the device sees byte `offset` of `bo`.
    fn device_view(&self, bo: &Bo, offset: u64) -> (Arc<DmaMemory>, u64) {
        match bo
            .bank
            .and_then(|b| self.banks.get(b as usize))
            .and_then(Option::as_ref)
        {
            Some(bank) => (bank.storage.clone(), bo.device_address - bank.base + offset),
            None => (bo.host.clone(), offset),
        }
    }

    /// The memory topology every loaded image shares.
    fn topology(&self) -> Option<&Arc<Xclbin>> {
        self.slots.first().map(|s| &s.xclbin)
    }

    fn slot(&self, uuid: Guid) -> Option<&Slot> {
        self.slots.iter().find(|s| s.xclbin.uuid == uuid)
    }

    fn held(&self, cus: std::ops::Range<usize>) -> bool {
        self.contexts
            .get(cus)
            .is_some_and(|held| held.iter().any(|holders| !holders.is_empty()))
    }

    /// The first CU index of a free range of `count` units, unloading images no context
    /// holds (the oldest first) until one fits; the launches queued on their units go to
    /// `doomed`.
    fn make_room(&mut self, count: usize, doomed: &mut Vec<Arc<Completion>>) -> Option<u32> {
        loop {
            if let Some(first) = self.free_range(count) {
                return Some(first);
            }
            let unheld = self.slots.iter().position(|s| !self.held(s.cus()))?;
            doomed.extend(self.unload(unheld));
        }
    }

    /// Charges `program`'s compiled code to `budget`, unloading images no context holds whose
    /// code the same budget pays for (the oldest first) until it fits: a program that
    /// released what it built gets its room back. Those images are a cache, kept to half the
    /// budget: the other half is room for what loading itself holds, which the budget's
    /// ledger counts when the plugin's call ends (a cache filling it would fault the
    /// plugin). Their queued launches go to `doomed`.
    fn charge_code(
        &mut self,
        program: &mut KernelProgram,
        budget: &Arc<Budget>,
        doomed: &mut Vec<Arc<Completion>>,
    ) -> io::Result<()> {
        let code = program.code_bytes();
        loop {
            let crowded = budget.used().saturating_add(code) > budget.limit() / 2;
            let refused = if crowded {
                None
            } else {
                match program.charge_to(budget) {
                    Ok(()) => return Ok(()),
                    Err(err) => Some(err),
                }
            };
            let idle = self.slots.iter().position(|slot| {
                !self.held(slot.cus())
                    && self.cus.get(slot.first_cu as usize).is_some_and(|cu| {
                        cu.as_ref()
                            .and_then(|cu| cu.kernel.as_ref())
                            .is_some_and(|(code, _)| code.is_charged_to(budget))
                    })
            });
            match (idle, refused) {
                (Some(slot), _) => doomed.extend(self.unload(slot)),
                (None, Some(refused)) => return Err(refused),
                (None, None) => return program.charge_to(budget),
            }
        }
    }

    fn free_range(&self, count: usize) -> Option<u32> {
        let mut taken: Vec<_> = self.slots.iter().map(Slot::cus).collect();
        taken.sort_by_key(|r| r.start);
        let mut start = 0;
        for range in taken {
            if range.start - start >= count {
                break;
            }
            start = range.end;
        }
        (start + count <= MAX_CUS).then_some(start as u32)
    }

    /// Unloads image `slot`: stops its units and takes out the launches queued only on
    /// them, which the caller fails once the lock is released.
    fn unload(&mut self, slot: usize) -> Vec<Arc<Completion>> {
        let slot = self.slots.remove(slot);
        for index in slot.cus() {
            if let Some(cu) = self.cus.get_mut(index).and_then(Option::take) {
                cu.stop();
            }
        }
        self.take_pending(|p| match &p.command {
            Ready::Launch { candidates, .. } => candidates
                .iter()
                .all(|&cu| slot.cus().contains(&(cu as usize))),
            Ready::Copy(_) => false,
        })
    }

    /// Loads `parsed` (its kernel module compiled as `kernels`) on units `first_cu..`, which
    /// [`CardState::make_room`] found free.
    fn start_units(
        &mut self,
        card: &Arc<Card>,
        parsed: &Xclbin,
        kernels: Option<&Arc<KernelProgram>>,
        first_cu: u32,
    ) {
        let units = parsed.compute_units();
        let end_cu = first_cu + units.len() as u32;
        if self.cus.len() < end_cu as usize {
            self.cus.resize(end_cu as usize, None);
            self.contexts.resize(end_cu as usize, Vec::new());
        }
        let xclbin = Arc::new(parsed.clone());
        let weak = Arc::downgrade(card);
        for (offset, ip) in units.iter().enumerate() {
            let index = first_cu + offset as u32;
            let kernel =
                kernels.map(|program| (program.clone(), xclbin.kernel(ip.kernel_name()).cloned()));
            self.cus[index as usize] = Some(ComputeUnit::start(
                index,
                ip.name.clone(),
                kernel,
                weak.clone(),
            ));
            self.contexts[index as usize].clear();
        }
        self.slots.push(Slot {
            xclbin,
            first_cu,
            end_cu,
        });
    }

    fn has_context(&self, client: u64, cu: u32) -> bool {
        self.contexts
            .get(cu as usize)
            .is_some_and(|holders| holders.iter().any(|(c, _)| *c == client))
    }

    /// Takes out every command not yet dispatched that matches `doomed`; the caller fails
    /// them once the lock is released.
    fn take_pending(&mut self, doomed: impl Fn(&Pending) -> bool) -> Vec<Arc<Completion>> {
        let (failed, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.ready)
            .into_iter()
            .partition(&doomed);
        self.ready = kept.into();
        let waiting = self.waiting.extract_if(|_, w| doomed(&w.pending));
        failed
            .into_iter()
            .map(|p| p.done)
            .chain(waiting.map(|(_, w)| w.pending.done))
            .collect()
    }
}

/// A client: one open of the card.
struct EmulatedClient {
    card: Arc<Card>,
    id: u64,
    /// BO backing is charged to its DMA budget, queued commands to its host budget.
    owner: Owner,
}

impl XoclClient for EmulatedClient {
    fn load_xclbin(&self, _image: &[u8], parsed: &Xclbin) -> io::Result<u32> {
        if let Some(slot) = lock(&self.card.state).slot(parsed.uuid) {
            return Ok(slot.first_cu);
        }
        // Compiled before the card is locked: other clients go on meanwhile.
        let kernels = match &parsed.kernel_module {
            Some(module) => {
                Some(KernelProgram::compile(module, &run_kernels(parsed)?).map_err(invalid)?)
            }
            None => None,
        };
        let mut state = lock(&self.card.state);
        if let Some(slot) = state.slot(parsed.uuid) {
            return Ok(slot.first_cu);
        }
        // An image of the same memory topology loads beside the others (each program built
        // from source is one), and the buffers in the banks stay.
        let same_banks = state.topology().is_some_and(|x| x.banks == parsed.banks);
        if !same_banks {
            if state.held(0..state.contexts.len()) {
                return Err(io::Error::new(
                    io::ErrorKind::ResourceBusy,
                    "an xclbin of other memory banks is loaded and contexts hold it",
                ));
            }
            if state.bos.values().any(|bo| bo.bank.is_some()) {
                return Err(io::Error::new(
                    io::ErrorKind::ResourceBusy,
                    "buffer objects still live in the banks of the loaded xclbin",
                ));
            }
        }
        for cu in parsed.compute_units() {
            if kernels.is_none() && !BUILTIN_KERNELS.contains(&cu.kernel_name()) {
                return Err(invalid(format!(
                    "unknown kernel '{}' (compute unit {}): the xclbin carries no kernel module, \
                     and the emulator's built-in kernels are {}",
                    cu.kernel_name(),
                    cu.name,
                    BUILTIN_KERNELS.join(", ")
                )));
            }
        }
        let units = parsed.compute_units();
        if units.len() > MAX_CUS {
            return Err(invalid(format!(
                "the xclbin has {} compute units; the card runs at most {MAX_CUS}",
                units.len()
            )));
        }
        let total: u64 = parsed
            .banks
            .iter()
            .filter(|b| b.used && bank_has_storage(b.kind))
            .map(|b| b.size)
            .sum();
        if total > MAX_BANK_BYTES {
            return Err(invalid(format!(
                "the xclbin's banks hold {total} bytes; the emulator backs at most {MAX_BANK_BYTES}"
            )));
        }
        let mut banks = Vec::new();
        for bank in parsed.banks.iter().filter(|_| !same_banks) {
            banks.push(if bank.used && bank_has_storage(bank.kind) {
                // Device memory is the card's, not the plugin's: it has no grant to charge.
                // Shareable, so that kernels' launches map buffers rather than copy them.
                let storage = DmaMemory::allocate_shareable(
                    bank.size.max(1),
                    OwnerId::fresh(),
                    &Budget::unlimited(BudgetKind::Dma),
                    false,
                )?;
                Some(Bank {
                    base: bank.base,
                    storage,
                    free: RangeAllocator::new(bank.base, bank.size),
                })
            } else {
                None
            });
        }
        let mut unloaded = Vec::new();
        // Charged before an image of other banks replaces everything: a refusal leaves the
        // card as it was.
        let kernels = match kernels {
            Some(mut program) => {
                let charged = state.charge_code(&mut program, &self.owner.host, &mut unloaded);
                if let Err(err) = charged {
                    drop(state);
                    fail_all(unloaded, "the xclbin of its compute units was unloaded");
                    return Err(err);
                }
                Some(Arc::new(program))
            }
            None => None,
        };
        if !same_banks {
            while !state.slots.is_empty() {
                unloaded.extend(state.unload(0));
            }
            state.banks = banks;
        }
        let room = state.make_room(units.len(), &mut unloaded);
        let loaded = match room {
            Some(first_cu) => {
                state.start_units(&self.card, parsed, kernels.as_ref(), first_cu);
                Ok(first_cu)
            }
            None => Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!(
                    "the card runs at most {MAX_CUS} compute units, and contexts hold the \
                     units of its {} loaded xclbins: release a program first",
                    state.slots.len()
                ),
            )),
        };
        drop(state);
        fail_all(unloaded, "the xclbin of its compute units was unloaded");
        loaded
    }

    fn loaded_xclbin(&self) -> Option<LoadedXclbin> {
        lock(&self.card.state)
            .slots
            .last()
            .map(|slot| LoadedXclbin {
                xclbin: slot.xclbin.clone(),
                first_cu: slot.first_cu,
            })
    }

    fn open_context(&self, uuid: Guid, cu: u32, exclusive: bool) -> io::Result<()> {
        let mut state = lock(&self.card.state);
        if uuid == Guid::default() {
            return Err(invalid(
                "a context needs the xclbin's uuid, not the null uuid",
            ));
        }
        if state.slot(uuid).is_none() {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!("xclbin {uuid} is not loaded on the card"),
            ));
        }
        let holders = slot_unit(&mut state, uuid, cu)?;
        let client = self.id;
        if holders.iter().any(|(c, _)| *c == client) {
            return Ok(());
        }
        if holders.iter().any(|(_, ex)| *ex) || (exclusive && !holders.is_empty()) {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                format!("compute unit {cu} is held exclusively or in use"),
            ));
        }
        holders.push((client, exclusive));
        Ok(())
    }

    fn close_context(&self, uuid: Guid, cu: u32) -> io::Result<()> {
        let mut state = lock(&self.card.state);
        if state.slot(uuid).is_none() {
            return Err(invalid(format!("xclbin {uuid} is not loaded")));
        }
        let holders = slot_unit(&mut state, uuid, cu)?;
        let client = self.id;
        let before = holders.len();
        holders.retain(|(c, _)| *c != client);
        if holders.len() == before {
            return Err(invalid(format!("no context is open on compute unit {cu}")));
        }
        Ok(())
    }

    fn create_bo(&self, size: u64, bank: Option<u32>) -> io::Result<BoInfo> {
        if size == 0 {
            return Err(invalid("a buffer object needs a size above 0"));
        }
        let size = size
            .checked_next_multiple_of(BO_ALIGN)
            .ok_or_else(|| errno(libc::ENOMEM))?;
        // A host-only buffer large enough to be mapped into a launch's memory rather than
        // copied is a memfd, as a bank is; in a process out of descriptors, plain memory
        // (copied, then).
        let out_of_descriptors =
            |err: &io::Error| matches!(err.raw_os_error(), Some(libc::EMFILE | libc::ENFILE));
        let allocate = || match bank {
            None if size >= MAP_AT_LEAST => match self.owner.allocate_mappable_dma(size) {
                Err(err) if out_of_descriptors(&err) => self.owner.allocate_dma(size, false),
                made => made,
            },
            _ => self.owner.allocate_dma(size, false),
        };
        // Kept kernel instances hold the client's budget only while nothing else needs it.
        let host = match allocate() {
            Err(_) if self.forget_kept() => allocate()?,
            allocated => allocated?,
        };
        if bank.is_none() {
            // A host-memory BO is pinned by XRT when it is created: fault it in now, not
            // during the first copy into it.
            host.populate();
        }
        let mut state = lock(&self.card.state);
        let device_address = match bank {
            None => state
                .host
                .allocate(size)
                .ok_or_else(|| errno(libc::ENOMEM))?,
            Some(index) => {
                let xclbin = state
                    .topology()
                    .cloned()
                    .ok_or_else(|| invalid("no xclbin is loaded, so there are no memory banks"))?;
                let described = xclbin.bank(index).ok_or_else(|| {
                    invalid(format!(
                        "there is no memory bank {index} (the xclbin has {})",
                        xclbin.banks.len()
                    ))
                })?;
                if !described.used {
                    return Err(invalid(format!(
                        "memory bank {index} ({}) is marked unused in the xclbin",
                        described.tag
                    )));
                }
                if !bank_has_storage(described.kind) {
                    return Err(invalid(format!(
                        "memory bank {index} ({}) is a {:?} bank, which holds no device buffers \
                         (host memory is a host-only buffer object)",
                        described.tag, described.kind
                    )));
                }
                let slot = state
                    .banks
                    .get_mut(index as usize)
                    .and_then(Option::as_mut)
                    .ok_or_else(|| invalid(format!("memory bank {index} has no storage")))?;
                slot.free.allocate(size).ok_or_else(|| {
                    io::Error::new(
                        io::ErrorKind::OutOfMemory,
                        format!("memory bank {index} has no free range of {size} bytes"),
                    )
                })?
            }
        };
        state.next_handle += 1;
        let handle = state.next_handle;
        state
            .by_address
            .insert(device_address, size, (self.id, handle));
        state.bos.insert(
            (self.id, handle),
            Bo {
                size,
                device_address,
                bank,
                host: host.clone(),
                launches: Arc::new(()),
            },
        );
        Ok(BoInfo {
            handle,
            size,
            device_address,
            bank,
            host,
        })
    }

    fn free_bo(&self, handle: u32) -> io::Result<()> {
        let mut state = lock(&self.card.state);
        free_bo(&mut state, self.id, handle)
    }

    fn submit(&self, command: Command, after: Vec<Arc<Completion>>) -> io::Result<Arc<Completion>> {
        if after.len() > MAX_DEPS {
            return Err(invalid(format!(
                "a command may wait on at most {MAX_DEPS} others, not {}",
                after.len()
            )));
        }
        let words = match &command {
            Command::Exec(words) => words.len(),
            Command::Sync { .. } | Command::Copy { .. } => 0,
        };
        let charge = super::charge_command(&self.owner.host, words)?;
        let mut state = lock(&self.card.state);
        let ready = match command {
            Command::Exec(words) => match decode_exec(&state, self.id, &words)? {
                Some(ready) => ready,
                None => return Ok(Arc::new(Completion::with_state(CompletionState::Complete))),
            },
            Command::Sync {
                bo,
                direction,
                offset,
                size,
            } => {
                let found = state
                    .bos
                    .get(&(self.id, bo))
                    .ok_or_else(|| errno(libc::ENOENT))?;
                if offset.checked_add(size).is_none_or(|end| end > found.size) {
                    return Err(invalid(format!(
                        "sync of {size} bytes at offset {offset} runs past the {}-byte buffer object",
                        found.size
                    )));
                }
                let host = (found.host.clone(), offset);
                let device = state.device_view(found, offset);
                let (from, to) = match direction {
                    SyncDirection::ToDevice => (host, device),
                    SyncDirection::FromDevice => (device, host),
                };
                Ready::Copy(CopyWork::Move { from, to, size })
            }
            Command::Copy {
                dst,
                dst_offset,
                src,
                src_offset,
                size,
            } => {
                let range = |handle: u32, offset: u64| -> io::Result<(Arc<DmaMemory>, u64)> {
                    let bo = state
                        .bos
                        .get(&(self.id, handle))
                        .ok_or_else(|| errno(libc::ENOENT))?;
                    if offset.checked_add(size).is_none_or(|end| end > bo.size) {
                        return Err(invalid(format!(
                            "copy of {size} bytes at offset {offset} runs past the {}-byte buffer object {handle}",
                            bo.size
                        )));
                    }
                    Ok(state.device_view(bo, offset))
                };
                let from = range(src, src_offset)?;
                let to = range(dst, dst_offset)?;
                Ready::Copy(CopyWork::Move { from, to, size })
            }
        };
        let done = Arc::new(Completion::default());
        let pending = Pending {
            client: self.id,
            command: ready,
            done: done.clone(),
            epoch: state.epoch,
            charge,
        };
        let mut unfinished = Vec::new();
        for dependency in &after {
            match dependency.state() {
                CompletionState::Complete => {}
                CompletionState::Pending => unfinished.push(dependency),
                CompletionState::Failed(why) => {
                    drop(state);
                    settle(&done, CompletionState::after_failed_dependency(&why));
                    return Ok(done);
                }
            }
        }
        if unfinished.is_empty() {
            state.ready.push_back(pending);
            drop(state);
            self.card.dispatch();
            return Ok(done);
        }
        let wakeups = super::charge_wakeups(&self.owner.host, unfinished.len())?;
        let seq = state.next_seq;
        state.next_seq += 1;
        state.waiting.insert(
            seq,
            Waiting {
                pending,
                unfinished: unfinished.len(),
            },
        );
        drop(state);
        for (dependency, charge) in unfinished.into_iter().zip(wakeups) {
            let card = Arc::downgrade(&self.card);
            let finished = Arc::downgrade(dependency);
            dependency.on_finish(move || {
                drop(charge);
                if let Some(card) = card.upgrade() {
                    card.dependency_finished(seq, &finished);
                }
            });
        }
        Ok(done)
    }

    fn reset(&self) -> io::Result<()> {
        let doomed = {
            let mut state = lock(&self.card.state);
            state.epoch += 1;
            state.take_pending(|_| true)
        };
        fail_all(doomed, "the device was reset");
        Ok(())
    }

    fn cancel_pending(&self, reason: &str) {
        let client = self.id;
        let doomed = lock(&self.card.state).take_pending(|p| p.client == client);
        fail_all(doomed, reason);
    }
}

/// The context holders of compute unit `cu`, which must be one of loaded image `uuid`'s.
fn slot_unit(state: &mut CardState, uuid: Guid, cu: u32) -> io::Result<&mut Vec<(u64, bool)>> {
    let range = state.slot(uuid).map_or(0..0, Slot::cus);
    if !range.contains(&(cu as usize)) {
        return Err(invalid(format!(
            "there is no compute unit {cu} in xclbin {uuid} (its units are {}..{})",
            range.start, range.end
        )));
    }
    Ok(&mut state.contexts[cu as usize])
}

impl EmulatedClient {
    /// Drops the kernel instances the card keeps for this client, giving their memory back
    /// to its budget; whether there were any.
    fn forget_kept(&self) -> bool {
        let programs = lock(&self.card.state).kernel_programs();
        programs
            .iter()
            .fold(false, |any, program| program.forget(self.id) | any)
    }
}

impl Drop for EmulatedClient {
    fn drop(&mut self) {
        let mut state = lock(&self.card.state);
        let client = self.id;
        state.budgets.remove(&client);
        let doomed = state.take_pending(|p| p.client == client);
        for holders in &mut state.contexts {
            holders.retain(|(c, _)| *c != client);
        }
        let handles: Vec<u32> = state
            .bos
            .keys()
            .filter(|(c, _)| *c == client)
            .map(|(_, h)| *h)
            .collect();
        for handle in handles {
            let _ = free_bo(&mut state, client, handle);
        }
        let programs = state.kernel_programs();
        drop(state);
        for program in programs {
            program.forget(client);
        }
        fail_all(doomed, "the client closed the device");
    }
}

/// Fails each of `doomed` with `reason`.
fn fail_all(doomed: Vec<Arc<Completion>>, reason: &str) {
    for done in doomed {
        settle(&done, CompletionState::Failed(reason.into()));
    }
}

fn free_bo(state: &mut CardState, client: u64, handle: u32) -> io::Result<()> {
    let bo = state
        .bos
        .remove(&(client, handle))
        .ok_or_else(|| errno(libc::ENOENT))?;
    state.by_address.remove(bo.device_address);
    let in_bank = bo.bank.and_then(|index| {
        let bank = state.banks.get_mut(index as usize)?.as_mut()?;
        Some((index, bank))
    });
    match in_bank {
        Some((index, bank)) if Arc::strong_count(&bo.launches) > 1 => {
            let parked = Parked {
                storage: bank.storage.clone(),
                bank: index,
                address: bo.device_address,
                size: bo.size,
                launches: bo.launches,
            };
            state.parked.push(parked);
        }
        Some((_, bank)) => bank.release(bo.device_address, bo.size),
        None => state.host.release(bo.device_address, bo.size),
    }
    Ok(())
}

impl Bank {
    /// Gives a freed buffer's range back cleared: the next buffer there reads zeros, never
    /// what the last owner left. Ranges up to [`ZEROED_IN_PLACE`] are zeroed and stay
    /// resident, as a card's memory does, so the next buffer there takes no page faults;
    /// larger ones are discarded, so a bank keeps no more than that resident per freed buffer.
    fn release(&mut self, address: u64, size: u64) {
        // The range is inside the bank: it was allocated from it.
        let offset = address - self.base;
        let _ = if size <= ZEROED_IN_PLACE {
            self.storage.fill(offset, size, 0)
        } else {
            self.storage.discard(offset, size)
        };
        self.free.release(address, size);
    }
}

impl CardState {
    /// The kernel modules of the loaded images, each once.
    fn kernel_programs(&self) -> Vec<Arc<KernelProgram>> {
        let mut programs: Vec<Arc<KernelProgram>> = Vec::new();
        for cu in self.cus.iter().flatten() {
            if let Some((program, _)) = &cu.kernel
                && !programs.iter().any(|p| Arc::ptr_eq(p, program))
            {
                programs.push(program.clone());
            }
        }
        programs
    }

    /// Returns to their banks the parked ranges no launch maps any more (a range of banks an
    /// image of other banks replaced meanwhile went with them).
    fn release_parked(&mut self) {
        for parked in std::mem::take(&mut self.parked) {
            if Arc::strong_count(&parked.launches) > 1 {
                self.parked.push(parked);
                continue;
            }
            let bank = self
                .banks
                .get_mut(parked.bank as usize)
                .and_then(Option::as_mut)
                .filter(|bank| Arc::ptr_eq(&bank.storage, &parked.storage));
            if let Some(bank) = bank {
                bank.release(parked.address, parked.size);
            }
        }
    }
}

/// The kernels the compute units of `xclbin` run.
fn run_kernels(xclbin: &Xclbin) -> io::Result<Vec<KernelMeta>> {
    let mut kernels: Vec<KernelMeta> = Vec::new();
    for ip in xclbin.compute_units() {
        let name = ip.kernel_name();
        let kernel = xclbin.kernel(name).ok_or_else(|| {
            invalid(format!(
                "compute unit {} runs kernel '{name}', which the metadata lacks",
                ip.name
            ))
        })?;
        if !kernels.iter().any(|k| k.name == name) {
            kernels.push(kernel.clone());
        }
    }
    Ok(kernels)
}

/// Checks that the card would run `kernels` from `module`, as loading an image of them does.
pub(crate) fn check_kernel_module(module: &[u8], kernels: &[KernelMeta]) -> Result<(), String> {
    KernelProgram::compile(module, kernels).map(drop)
}

/// Whether the emulator backs a bank of `kind` with memory (streams and PS kernels have none;
/// host banks are host memory reached through host-only BOs).
fn bank_has_storage(kind: MemKind) -> bool {
    !matches!(
        kind,
        MemKind::Streaming | MemKind::StreamingConnection | MemKind::PsKernel | MemKind::Host
    )
}

/// Checks an exec buffer; `None` for a packet that completes at once (CONFIGURE).
fn decode_exec(state: &CardState, client: u64, words: &[u32]) -> io::Result<Option<Ready>> {
    let header = ErtHeader::decode(
        *words
            .first()
            .ok_or_else(|| invalid("an empty exec buffer"))?,
    );
    match abi::ErtOpcode::from_raw(header.opcode) {
        Some(abi::ErtOpcode::StartCu) => {}
        Some(abi::ErtOpcode::Configure | abi::ErtOpcode::SkConfig) => return Ok(None),
        _ => {
            let other = header.opcode;
            return Err(invalid(format!(
                "ERT opcode {other} is not supported by the emulator (START_CU, CONFIGURE and \
                 SK_CONFIG are)"
            )));
        }
    }
    let packet = StartCu::decode(words).map_err(|e| invalid(format!("bad ERT packet: {e}")))?;
    if state.slots.is_empty() {
        return Err(invalid("no xclbin is loaded"));
    }
    let mut candidates = Vec::new();
    let mut image = None;
    for cu in packet.cu_indices() {
        let Some(slot) = state
            .slots
            .iter()
            .position(|s| s.cus().contains(&(cu as usize)))
        else {
            return Err(invalid(format!(
                "cu_mask names compute unit {cu}, which no loaded xclbin has"
            )));
        };
        if *image.get_or_insert(slot) != slot {
            return Err(invalid(
                "cu_mask names compute units of two xclbins: a launch runs one kernel",
            ));
        }
        if state.has_context(client, cu) {
            candidates.push(cu);
        }
    }
    if candidates.is_empty() {
        return Err(invalid(
            "the client has no context open on any compute unit of the packet's cu_mask",
        ));
    }
    let elements = packet
        .regmap
        .get((abi::vadd::SIZE / 4) as usize)
        .map_or(0, |&n| u64::from(n));
    // The xclbin's own kernels always run on the unit's thread, under their deadline.
    let inline = elements <= INLINE_ELEMENTS
        && candidates.iter().all(|&cu| {
            state.cus[cu as usize]
                .as_ref()
                .is_some_and(|u| u.kernel.is_none())
        });
    Ok(Some(Ready::Launch {
        candidates,
        regmap: packet.regmap,
        inline,
    }))
}

/// Completions waiting to be finished, each with the state it finishes in.
type Settlements = Vec<(Arc<Completion>, CompletionState)>;

thread_local! {
    /// The cards this thread is dispatching for (outermost first): a dispatch that starts
    /// inside one, because inline work finished and readied more, leaves it to the loop below.
    static DISPATCHING: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
    /// Completions this thread is finishing: one finished inside another (a failure running
    /// down a chain of dependents) waits its turn instead of nesting a level deeper.
    static SETTLING: RefCell<Option<Settlements>> =
        const { RefCell::new(None) };
}

/// Finishes `done` with `state`, and every completion that finishing it finishes in turn,
/// without recursion however long the chain.
/// How a command ends whose engine stopped before it ran: failed, never left pending.
fn gone(engine: &str) -> CompletionState {
    CompletionState::Failed(format!("{engine} stopped before the command ran").into())
}

fn settle(done: &Arc<Completion>, state: CompletionState) {
    let nested = SETTLING.with(|s| match s.borrow_mut().as_mut() {
        Some(queue) => {
            queue.push((done.clone(), state.clone()));
            true
        }
        None => false,
    });
    if nested {
        return;
    }
    SETTLING.with(|s| *s.borrow_mut() = Some(Vec::new()));
    let _reset = ResetOnDrop(|| SETTLING.with(|s| *s.borrow_mut() = None));
    done.finish(state);
    while let Some((next, state)) = SETTLING.with(|s| s.borrow_mut().as_mut().and_then(Vec::pop)) {
        next.finish(state);
    }
}

/// Runs its closure when dropped, unwinding included.
struct ResetOnDrop<F: FnMut()>(F);

impl<F: FnMut()> Drop for ResetOnDrop<F> {
    fn drop(&mut self) {
        (self.0)()
    }
}

impl Card {
    /// Counts down a command's dependencies; the last one makes it ready. A failed dependency
    /// fails the command at once.
    fn dependency_finished(self: &Arc<Self>, seq: u64, dependency: &Weak<Completion>) {
        let failed = dependency.upgrade().and_then(|d| match d.state() {
            CompletionState::Failed(why) => Some(why),
            _ => None,
        });
        let mut state = lock(&self.state);
        let Some(waiting) = state.waiting.get_mut(&seq) else {
            return; // already failed, or cancelled
        };
        if let Some(why) = failed {
            let waiting = state.waiting.remove(&seq).expect("just found");
            drop(state);
            settle(
                &waiting.pending.done,
                CompletionState::after_failed_dependency(&why),
            );
            return;
        }
        waiting.unfinished -= 1;
        if waiting.unfinished == 0 {
            let waiting = state.waiting.remove(&seq).expect("just found");
            state.ready.push_back(waiting.pending);
            drop(state);
            self.dispatch();
        }
    }

    /// Starts every ready command it can, in order: launches on a free compute unit among
    /// their candidates, copies on the copy thread; small ones on this thread.
    fn dispatch(self: &Arc<Self>) {
        let me = Arc::as_ptr(self) as usize;
        if DISPATCHING.with(|d| d.borrow().contains(&me)) {
            return;
        }
        DISPATCHING.with(|d| d.borrow_mut().push(me));
        let _pop = ResetOnDrop(|| {
            DISPATCHING.with(|d| {
                d.borrow_mut().retain(|&c| c != me);
            })
        });
        loop {
            let mut state = lock(&self.state);
            if state.shutdown {
                return;
            }
            let free_cu = |state: &CardState, candidates: &[u32]| {
                candidates.iter().copied().find(|&cu| {
                    state
                        .cus
                        .get(cu as usize)
                        .and_then(Option::as_ref)
                        .is_some_and(|u| !u.is_busy())
                })
            };
            let Some(position) = state.ready.iter().position(|p| match &p.command {
                Ready::Launch { candidates, .. } => free_cu(&state, candidates).is_some(),
                Ready::Copy(_) => true,
            }) else {
                return;
            };
            let pending = state.ready.remove(position).expect("index is in range");
            match pending.command {
                Ready::Launch {
                    candidates,
                    regmap,
                    inline,
                } => {
                    let index = free_cu(&state, &candidates).expect("checked") as usize;
                    let cu = state.cus[index].clone().expect("checked");
                    cu.set_busy();
                    drop(state);
                    let job = CuJob {
                        client: pending.client,
                        regmap,
                        done: pending.done,
                        epoch: pending.epoch,
                        _charge: pending.charge,
                    };
                    if inline {
                        cu.run(self, job);
                    } else {
                        cu.launch(job);
                    }
                }
                Ready::Copy(work) => {
                    let CopyWork::Move { size, .. } = &work;
                    let inline = *size <= INLINE_COPY;
                    let job = CopyJob {
                        work,
                        done: pending.done,
                        epoch: pending.epoch,
                        _charge: pending.charge,
                    };
                    if inline {
                        drop(state);
                        self.run_copy(job);
                    } else {
                        let unsent = match &state.copies {
                            Some(copies) => copies.send(job).err().map(|unsent| unsent.0),
                            None => Some(job),
                        };
                        drop(state);
                        if let Some(job) = unsent {
                            settle(&job.done, gone("the card's copy engine"));
                        }
                    }
                }
            }
        }
    }

    fn run_copy(&self, job: CopyJob) {
        let CopyWork::Move { from, to, size } = job.work;
        let result = to.0.copy_from(to.1, &from.0, from.1, size);
        let current = lock(&self.state).epoch;
        settle(
            &job.done,
            match result {
                _ if current != job.epoch => CompletionState::Failed("the device was reset".into()),
                Ok(()) => CompletionState::Complete,
                Err(err) => CompletionState::Failed(format!("copy failed: {err}").into()),
            },
        );
    }
}

/// The kernels the emulator runs without a kernel module, by name.
const BUILTIN_KERNELS: &[&str] = &["vadd"];

/// A launch handed to a compute unit.
struct CuJob {
    client: u64,
    regmap: Vec<u32>,
    done: Arc<Completion>,
    epoch: u64,
    _charge: Charge,
}

/// A compute unit: the HLS control register block and a thread that runs the kernel.
struct ComputeUnit {
    index: u32,
    name: String,
    /// Its image's kernel module and this unit's kernel's metadata (when the image has
    /// it); `None` runs the built-in vadd.
    kernel: Option<(Arc<KernelProgram>, Option<KernelMeta>)>,
    regs: Mutex<CuRegisters>,
    jobs: Mutex<Option<mpsc::Sender<CuJob>>>,
}

/// The AXI-Lite register space of an `ap_ctrl_hs` CU.
struct CuRegisters {
    ap_ctrl: u32,
    gie: u32,
    ier: u32,
    isr: u32,
    /// Registers from 0x10 on, one per 4 bytes.
    args: Vec<u32>,
    busy: bool,
}

impl CuRegisters {
    /// Reads a register; reading AP_CTRL clears ap_done, as the HLS adapter does.
    fn read(&mut self, offset: u64) -> u32 {
        match offset {
            abi::AP_CTRL => {
                let value = self.ap_ctrl;
                self.ap_ctrl &= !abi::AP_DONE;
                value
            }
            abi::GIE => self.gie,
            abi::IER => self.ier,
            abi::ISR => self.isr,
            _ => {
                let slot = ((offset - abi::ARGS_BASE) / 4) as usize;
                self.args.get(slot).copied().unwrap_or(0)
            }
        }
    }

    fn read64(&mut self, offset: u64) -> u64 {
        u64::from(self.read(offset)) | (u64::from(self.read(offset + 4)) << 32)
    }

    fn write(&mut self, offset: u64, value: u32) {
        match offset {
            abi::AP_CTRL => {
                if value & abi::AP_START != 0 {
                    self.ap_ctrl = abi::AP_START;
                }
            }
            abi::GIE => self.gie = value & 1,
            abi::IER => self.ier = value & 3,
            // ISR bits toggle on write.
            abi::ISR => self.isr ^= value & 3,
            _ => {
                let slot = ((offset - abi::ARGS_BASE) / 4) as usize;
                if let Some(arg) = self.args.get_mut(slot) {
                    *arg = value;
                }
            }
        }
    }
}

impl ComputeUnit {
    fn start(
        index: u32,
        name: String,
        kernel: Option<(Arc<KernelProgram>, Option<KernelMeta>)>,
        card: Weak<Card>,
    ) -> Arc<Self> {
        let (jobs, queue) = mpsc::channel::<CuJob>();
        let cu = Arc::new(ComputeUnit {
            index,
            name,
            kernel,
            regs: Mutex::new(CuRegisters {
                ap_ctrl: abi::AP_IDLE,
                gie: 0,
                ier: 0,
                isr: 0,
                args: vec![0; ((KERNEL_ARGS_END - KERNEL_ARGS_BASE) / 4) as usize],
                busy: false,
            }),
            jobs: Mutex::new(Some(jobs)),
        });
        let unit = Arc::downgrade(&cu);
        spawn(&format!("emu-cu{index}"), move || {
            for job in queue {
                let (Some(unit), Some(card)) = (unit.upgrade(), card.upgrade()) else {
                    settle(&job.done, gone("the card"));
                    continue;
                };
                unit.run(&card, job);
            }
        });
        cu
    }

    fn is_busy(&self) -> bool {
        lock(&self.regs).busy
    }

    fn stop(&self) {
        lock(&self.jobs).take();
    }

    fn set_busy(&self) {
        lock(&self.regs).busy = true;
    }

    /// Hands `job` to the unit's thread; the unit was marked busy by the dispatcher.
    fn launch(&self, job: CuJob) {
        let unsent = match lock(&self.jobs).as_ref() {
            Some(jobs) => jobs.send(job).err().map(|unsent| unsent.0),
            None => Some(job),
        };
        if let Some(job) = unsent {
            lock(&self.regs).busy = false;
            settle(
                &job.done,
                gone(&format!("compute unit {} ({})", self.index, self.name)),
            );
        }
    }

    /// Reads a register; reading AP_CTRL clears ap_done, as the HLS adapter does.
    fn read(&self, offset: u64) -> u32 {
        lock(&self.regs).read(offset)
    }

    fn arg64(&self, offset: u64) -> u64 {
        lock(&self.regs).read64(offset)
    }

    /// What the KDS does for one START_CU: write the register map from 0x10 on (the first
    /// four words are the control block it skips), set ap_start, wait for ap_done.
    fn run(&self, card: &Arc<Card>, job: CuJob) {
        {
            let mut regs = lock(&self.regs);
            for (i, word) in job
                .regmap
                .iter()
                .enumerate()
                .skip(abi::ERT_REGMAP_SKIPPED_WORDS)
            {
                regs.write(i as u64 * 4, *word);
            }
            regs.write(abi::AP_CTRL, abi::AP_START);
        }
        let outcome = self.compute(card, job.client, job.epoch);
        {
            let mut regs = lock(&self.regs);
            regs.ap_ctrl = abi::AP_DONE | abi::AP_IDLE;
            if regs.gie & 1 != 0 && regs.ier & 1 != 0 {
                regs.isr |= 1;
            }
            // The scheduler's completion check: ap_done is clear-on-read.
            let status = regs.read(abi::AP_CTRL);
            debug_assert!(status & abi::AP_DONE != 0);
        }
        let current = lock(&card.state).epoch;
        lock(&self.regs).busy = false;
        settle(
            &job.done,
            match outcome {
                _ if current != job.epoch => CompletionState::Failed("the device was reset".into()),
                Ok(()) => CompletionState::Complete,
                Err(why) => CompletionState::Failed(
                    format!("compute unit {} ({}): {why}", self.index, self.name).into(),
                ),
            },
        );
        // The unit is free: a launch may have been waiting for it.
        card.dispatch();
    }

    /// Runs the unit's kernel: the xclbin's own, or the built-in vadd.
    fn compute(&self, card: &Card, client: u64, epoch: u64) -> Result<(), String> {
        match &self.kernel {
            Some((program, Some(meta))) => self.run_kernel(card, program, meta, client, epoch),
            Some((_, None)) => {
                Err("the loaded xclbin has no metadata for this unit's kernel".into())
            }
            None => self.vadd(card, client),
        }
    }

    /// One launch of the xclbin's kernel `meta`: the buffers its pointers fall in are mapped
    /// into the launch's memory (a bank's buffers and host-only ones of [`MAP_AT_LEAST`] bytes
    /// or more; a bank's buffer freed meanwhile is parked until the launch ends, a host-only
    /// one's memory is held by the launch) or copied in, and back when the kernel
    /// returned, both under the card's lock, so that a buffer freed meanwhile is neither read
    /// nor written.
    fn run_kernel(
        &self,
        card: &Card,
        program: &KernelProgram,
        meta: &KernelMeta,
        client: u64,
        epoch: u64,
    ) -> Result<(), String> {
        let values: Vec<u64> = meta
            .args
            .iter()
            .map(|arg| match arg.size {
                8 => self.arg64(u64::from(arg.offset)),
                _ => u64::from(self.read(u64::from(arg.offset))),
            })
            .collect();
        // Values of more than 8 bytes, whole.
        let mut large = meta
            .args
            .iter()
            .filter(|arg| arg.kind == ArgKind::Scalar && arg.size > 8)
            .map(|arg| {
                (0..arg.size / 4)
                    .flat_map(|word| self.read(u64::from(arg.offset + 4 * word)).to_le_bytes())
                    .collect::<Vec<u8>>()
            })
            .collect::<Vec<_>>()
            .into_iter();
        let state = lock(&card.state);
        let budget = state.budgets.get(&client).cloned();
        // Per window: the buffer object's key and where it was.
        let mut keys: Vec<((u64, u32), u64)> = Vec::new();
        let mut args = Vec::with_capacity(meta.args.len());
        for (arg, &value) in meta.args.iter().zip(&values) {
            args.push(match arg.kind {
                ArgKind::Scalar if arg.size > 8 => {
                    LaunchArg::Bytes(large.next().unwrap_or_default())
                }
                ArgKind::Scalar | ArgKind::Local => LaunchArg::Scalar(value),
                ArgKind::Global if value == 0 => LaunchArg::Pointer(None),
                ArgKind::Global => {
                    let found = state
                        .by_address
                        .find(value, 1)
                        .filter(|(key, _, _)| key.0 == client)
                        .and_then(|(&key, offset, _)| {
                            state
                                .bos
                                .get(&key)
                                .filter(|bo| offset < bo.size)
                                .map(|bo| (key, offset, bo))
                        });
                    let Some((key, offset, bo)) = found else {
                        return Err(format!(
                            "argument '{}' points at device address {value:#x}, outside this \
                             client's buffer objects",
                            arg.name
                        ));
                    };
                    let window = match keys.iter().position(|(k, _)| *k == key) {
                        Some(window) => window,
                        None => {
                            keys.push((key, bo.device_address));
                            keys.len() - 1
                        }
                    };
                    LaunchArg::Pointer(Some((window, offset)))
                }
            });
        }
        // A bank's buffers and mappable host-only ones are mapped when large, or all of them
        // when the launch's work-groups are to be shared; the rest are copied.
        let bos: Vec<&Bo> = keys.iter().map(|(key, _)| &state.bos[key]).collect();
        let mappable = |bo: &Bo| bo.bank.is_some() || bo.host.is_mappable();
        let mappable_bytes = bos.iter().filter(|bo| mappable(bo)).map(|bo| bo.size);
        let map_all = program.maps_all_of(mappable_bytes.sum());
        let mut windows = Vec::with_capacity(keys.len());
        let mut copied: Vec<((u64, u32), u64)> = Vec::new();
        let mut pins = Vec::new();
        for (&(key, address), bo) in keys.iter().zip(bos) {
            if mappable(bo) && (map_all || bo.size >= MAP_AT_LEAST) {
                let (memory, offset) = state.device_view(bo, 0);
                pins.push(bo.launches.clone());
                windows.push(Window::Mapped {
                    memory,
                    offset,
                    len: bo.size,
                });
            } else {
                copied.push((key, address));
                windows.push(Window::Copied { len: bo.size });
            }
        }
        let fill = |buffers: &mut [&mut [u8]]| {
            for ((key, _), buffer) in copied.iter().zip(buffers.iter_mut()) {
                let (memory, offset) = state.device_view(&state.bos[key], 0);
                memory.read(offset, buffer).map_err(|e| e.to_string())?;
            }
            drop(state);
            Ok(())
        };
        let write_back = |buffers: &[&[u8]]| {
            let state = lock(&card.state);
            if state.epoch != epoch {
                return Err("the device was reset".to_owned());
            }
            for ((key, address), buffer) in copied.iter().zip(buffers) {
                // A buffer freed during the launch keeps nothing of it.
                let Some(bo) = state
                    .bos
                    .get(key)
                    .filter(|bo| bo.device_address == *address)
                else {
                    continue;
                };
                let (memory, offset) = state.device_view(bo, 0);
                memory.write(offset, buffer).map_err(|e| e.to_string())?;
            }
            Ok(())
        };
        let outcome = program.launch(
            &meta.name,
            client,
            &windows,
            &args,
            budget.as_ref(),
            card.kernel_deadline,
            fill,
            write_back,
        );
        let mut state = lock(&card.state);
        if !pins.is_empty() {
            drop(pins);
            state.release_parked();
        }
        // A client that closed meanwhile left its kept instances to the launch.
        let closed = !state.budgets.contains_key(&client);
        drop(state);
        if closed {
            program.forget(client);
        }
        outcome
    }

    /// The vadd kernel: `out[i] = in1[i] + in2[i]` (u32, wrapping) on device memory.
    fn vadd(&self, card: &Card, client: u64) -> Result<(), String> {
        let (in1, in2, out, size) = {
            let mut regs = lock(&self.regs);
            (
                regs.read64(abi::vadd::IN1),
                regs.read64(abi::vadd::IN2),
                regs.read64(abi::vadd::OUT),
                u64::from(regs.read(abi::vadd::SIZE)),
            )
        };
        let bytes = size * 4;
        if bytes == 0 {
            return Ok(());
        }
        let ((a, a_off), (b, b_off), (c, c_off)) = {
            let state = lock(&card.state);
            let resolve = |name: &str, address: u64| {
                state.translate(client, address, bytes).ok_or_else(|| {
                    format!(
                        "argument {name} at device address {address:#x} ({bytes} bytes) is outside this client's buffer objects"
                    )
                })
            };
            (
                resolve("in1", in1)?,
                resolve("in2", in2)?,
                resolve("out_r", out)?,
            )
        };
        // Device memory is little-endian.
        let add = |x: [u8; 4], y: [u8; 4]| {
            u32::from_le_bytes(x)
                .wrapping_add(u32::from_le_bytes(y))
                .to_le_bytes()
        };
        c.zip_words_from(c_off, (&a, a_off), (&b, b_off), size, add)
            .map_err(|e| e.to_string())?;
        Ok(())
    }
}

mod kernels;
mod share_threads;
#[cfg(test)]
mod tests;
