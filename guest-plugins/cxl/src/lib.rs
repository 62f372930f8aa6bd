//! The cxl plugin: every granted CAPI AFU appears once per device node (master and slave for
//! an AFU-directed AFU, dedicated for a dedicated one), and opening a token opens a context on
//! that node. FPGA-style calls map the problem-state area (big-endian registers, swapped by the
//! host), attach buffers as the AFU's effective addresses and wait for interrupts; the
//! offload-style launch starts work. The plugin knows the two canonical AFUs: the memcpy AFU
//! (AFU-directed, a queue of work elements) and capi-vadd (dedicated, a WED control block).

use std::collections::BTreeMap;

use accelhost_sdk::host::cxl::{
    AfuDesc, AfuMode, CardDesc, Context, ContextKind, Work, list_afus, list_cards,
};
use accelhost_sdk::host::dma::Buffer;
use accelhost_sdk::host::events::Event;
use accelhost_sdk::host::image::Image;
use accelhost_sdk::host::mmio;
use accelhost_sdk::{
    Allocation, BufferFlags, Discovered, Error, ErrorCode, EventKind, Filter, Guid, KernelArgument,
    LaunchSize, MemoryKind, ObjectType, OpenMode, Plugin, PreparedBuffer, Properties, Result,
    filters_match, wants_device_objects,
};

/// The node code of a card's token key (AFU nodes use `m`, `s` and `d`).
const CARD_CODE: u8 = b'c';
/// The slice a card's GUID carries in place of an AFU's.
const CARD_SLICE: u64 = 0xffff;

/// The device type every CAPI AFU reports.
const DEVICE_TYPE: &str = "fpga";
/// The capi-vadd WED control block: 128 bytes, big-endian fields.
const VADD_BLOCK: u64 = 128;
const VADD_SIZE: u64 = 0x00;
const VADD_INPUT1: u64 = 0x08;
const VADD_INPUT2: u64 = 0x10;
const VADD_OUTPUT: u64 = 0x18;
const VADD_DONE: u64 = 0x20;

/// The functions the plugin drives.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Function {
    /// The memcpy AFU: launch(queue memory, queue depth in 128-byte lines, interrupt to wait for).
    Memcpy,
    /// capi-vadd: launch(in1, in2, out, elements).
    Vadd,
}

impl Function {
    fn of(afu: &AfuDesc) -> Function {
        match afu.mode {
            Some(AfuMode::Dedicated) => Function::Vadd,
            _ => Function::Memcpy,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Function::Memcpy => "memcpy",
            Function::Vadd => "vadd",
        }
    }
}

#[derive(Default)]
struct CxlPlugin {
    initialized: bool,
    /// Token → (AFU path, node kind); a node keeps the token it was first given.
    tokens: BTreeMap<(String, u8), u64>,
    next_id: u64,
    contexts: BTreeMap<u64, OpenContext>,
    programs: BTreeMap<u64, u64>,
    kernels: BTreeMap<u64, (u64, Function)>,
    queues: BTreeMap<u64, u64>,
}

struct OpenContext {
    context: Context,
    function: Function,
    /// Prepared buffers and allocations: id → (effective address, size).
    memory: BTreeMap<u64, (u64, u64)>,
    /// The vadd control block, kept while the AFU may read it.
    block: Option<Buffer>,
}

fn kind_code(kind: ContextKind) -> u8 {
    match kind {
        ContextKind::Master => b'm',
        ContextKind::Slave => b's',
        ContextKind::Dedicated => b'd',
    }
}

/// What a token stands for: a context node of an AFU, or a card (OPAE's device object).
enum Node {
    Afu(AfuDesc, ContextKind),
    Card(CardDesc),
}

/// The token key of a card: emulated and real adapters may share a number.
fn card_key(card: &CardDesc) -> String {
    format!("card {} {}", card.emulated, card.card)
}

/// A card's device name: `cxl/cardC` as sysfs names it, `emu:cardC` on the emulator.
fn card_name(card: &CardDesc) -> String {
    if card.emulated {
        format!("emu:card{}", card.card)
    } else {
        format!("cxl/card{}", card.card)
    }
}

/// The card an AFU is on, among `cards`.
fn card_of<'a>(cards: &'a [CardDesc], afu: &AfuDesc) -> Option<&'a CardDesc> {
    cards
        .iter()
        .find(|c| c.card == afu.card && c.emulated == afu.emulated)
}

/// The nodes an AFU offers.
fn nodes(afu: &AfuDesc) -> Vec<ContextKind> {
    match afu.mode {
        Some(AfuMode::Dedicated) => vec![ContextKind::Dedicated],
        Some(AfuMode::AfuDirected) => vec![ContextKind::Master, ContextKind::Slave],
        None => Vec::new(),
    }
}

impl CxlPlugin {
    fn fresh_id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    fn token_for(&mut self, path: &str, kind: ContextKind) -> u64 {
        let next = self.tokens.len() as u64;
        *self
            .tokens
            .entry((path.to_string(), kind_code(kind)))
            .or_insert(next)
    }

    /// The token of `afu`'s card, if the host knows the card.
    fn card_token(&mut self, cards: &[CardDesc], afu: &AfuDesc) -> Option<u64> {
        let card = card_of(cards, afu)?;
        let next = self.tokens.len() as u64;
        Some(
            *self
                .tokens
                .entry((card_key(card), CARD_CODE))
                .or_insert(next),
        )
    }

    fn node_for_token(&self, token: u64) -> Result<Node> {
        let (path, code) = self
            .tokens
            .iter()
            .find_map(|(key, t)| (*t == token).then_some(key))
            .ok_or_else(|| Error::not_found(format!("no cxl token {token}")))?;
        if *code == CARD_CODE {
            return list_cards()
                .into_iter()
                .find(|c| &card_key(c) == path)
                .map(Node::Card)
                .ok_or_else(|| Error::not_found(format!("no granted cxl AFU is on {path}")));
        }
        let afu = list_afus()
            .into_iter()
            .find(|a| &a.path == path)
            .ok_or_else(|| Error::not_found(format!("cxl AFU {path} is no longer granted")))?;
        let kind = nodes(&afu)
            .into_iter()
            .find(|k| kind_code(*k) == *code)
            .ok_or_else(|| Error::not_found(format!("cxl AFU {path} changed its mode")))?;
        Ok(Node::Afu(afu, kind))
    }

    /// The AFU context node `token` stands for; a card cannot be opened.
    fn afu_for_token(&self, token: u64) -> Result<(AfuDesc, ContextKind)> {
        match self.node_for_token(token)? {
            Node::Afu(afu, kind) => Ok((afu, kind)),
            Node::Card(card) => Err(Error::new(
                ErrorCode::Unsupported,
                format!(
                    "{} is a CAPI card (a device object), which has no context: open one of its AFUs",
                    card_name(&card)
                ),
            )),
        }
    }

    /// A card as OPAE describes a device object; vendor and device ids are its first AFU's
    /// (on the emulator, the card's PCI ids).
    fn card_properties(card: &CardDesc, first_afu: Option<&AfuDesc>) -> Properties {
        let (vendor_id, device_id) = first_afu.map_or((0, 0), |a| (a.vendor_id, a.device_id));
        Properties {
            guid: Guid {
                high: (u64::from(vendor_id) << 48)
                    | (u64::from(device_id) << 32)
                    | (u64::from(card.card) << 16)
                    | CARD_SLICE,
                low: 0,
            },
            vendor_id,
            device_id,
            bus_address: card.bus_address,
            ..Properties::device_object(
                card_name(card),
                DEVICE_TYPE,
                vec![
                    ("interface".into(), "cxl".into()),
                    ("card".into(), card.card.to_string()),
                    ("emulated".into(), card.emulated.to_string()),
                ],
            )
        }
    }

    fn properties(
        afu: &AfuDesc,
        kind: ContextKind,
        card: Option<&CardDesc>,
        parent: Option<u64>,
    ) -> Properties {
        let node = format!("{}{}", afu.path, kind_code(kind) as char);
        let mode: u64 = match afu.mode {
            Some(AfuMode::Dedicated) => 1,
            _ => 2,
        };
        Properties {
            object_type: ObjectType::Accelerator,
            name: node.trim_start_matches("/dev/").to_string(),
            // CAPI AFUs have no 128-bit id: the guid packs configuration record 0, the card
            // and the slice (high half) and the mode and node (low half).
            guid: Guid {
                high: (u64::from(afu.vendor_id) << 48)
                    | (u64::from(afu.device_id) << 32)
                    | (u64::from(afu.card) << 16)
                    | u64::from(afu.slice),
                low: (mode << 8) | u64::from(kind_code(kind)),
            },
            vendor_id: afu.vendor_id,
            device_id: afu.device_id,
            bus_address: card.and_then(|c| c.bus_address),
            socket_id: None,
            device_type: DEVICE_TYPE.to_string(),
            host: "localhost".to_string(),
            num_mmio: 1,
            num_interrupts: afu.irqs_max,
            accelerator_state: None,
            parent,
            extras: vec![
                ("interface".into(), "cxl".into()),
                ("path".into(), afu.path.clone()),
                ("node".into(), node),
                ("function".into(), Function::of(afu).name().into()),
                (
                    "mode".into(),
                    if mode == 1 {
                        "dedicated"
                    } else {
                        "afu-directed"
                    }
                    .into(),
                ),
                ("card".into(), afu.card.to_string()),
                ("slice".into(), afu.slice.to_string()),
                ("max-contexts".into(), afu.max_contexts.to_string()),
                (
                    "irqs".into(),
                    format!("{}..={}", afu.irqs_min, afu.irqs_max),
                ),
                (
                    "caia".into(),
                    format!("{}.{}", afu.caia_major, afu.caia_minor),
                ),
                ("emulated".into(), afu.emulated.to_string()),
            ],
        }
    }

    fn context(&mut self, handle: u64) -> Result<&mut OpenContext> {
        self.contexts
            .get_mut(&handle)
            .ok_or_else(|| Error::not_found(format!("no open cxl context has handle {handle}")))
    }

    /// Allocates and attaches host memory; returns (id, buffer, effective address).
    fn attach(&mut self, handle: u64, size: u64) -> Result<(u64, Buffer, u64)> {
        if size == 0 {
            return Err(Error::invalid_argument("a buffer needs a size above 0"));
        }
        let id = self.fresh_id();
        let open = self.context(handle)?;
        let buffer = Buffer::allocate(size)?;
        let ea = open.context.attach_buffer(&buffer)?;
        open.memory.insert(id, (ea, buffer.size()));
        Ok((id, buffer, ea))
    }
}

/// The effective address a memory argument names, checked against the allocation.
/// The effective address of a memory argument, and how many bytes of its allocation follow.
fn memory_argument(
    open: &OpenContext,
    position: usize,
    name: &str,
    arg: &KernelArgument,
) -> Result<(u64, u64)> {
    match arg {
        KernelArgument::Memory(range) => {
            let (ea, size) = open.memory.get(&range.allocation).ok_or_else(|| {
                Error::not_found(format!(
                    "argument {position} ('{name}'): no allocation {} on this context",
                    range.allocation
                ))
            })?;
            if range.offset >= *size {
                return Err(Error::invalid_argument(format!(
                    "argument {position} ('{name}'): offset {} is past the allocation's {size} bytes",
                    range.offset
                )));
            }
            Ok((ea + range.offset, size - range.offset))
        }
        _ => Err(Error::invalid_argument(format!(
            "argument {position} ('{name}') takes memory"
        ))),
    }
}

fn scalar_argument(position: usize, name: &str, arg: &KernelArgument) -> Result<u64> {
    match arg {
        KernelArgument::Scalar32(v) => Ok(u64::from(*v)),
        KernelArgument::Scalar64(v) => Ok(*v),
        _ => Err(Error::invalid_argument(format!(
            "argument {position} ('{name}') takes a scalar"
        ))),
    }
}

impl Plugin for CxlPlugin {
    fn initialize(&mut self) -> Result<()> {
        self.initialized = true;
        Ok(())
    }

    fn finalize(&mut self) -> Result<()> {
        self.contexts.clear();
        Ok(())
    }

    fn supports_device(&mut self, device_type: &str) -> bool {
        device_type == DEVICE_TYPE
    }

    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        if !self.initialized {
            return Err(Error::not_initialized("the cxl plugin was not initialized"));
        }
        // Cards are listed only to a filter that asks for device objects (as the C API does,
        // and `accelhost info`): everything else lists what can be opened.
        let wants_devices = wants_device_objects(&filters);
        let matches = |p: &Properties| filters_match(&filters, p);
        let cards = list_cards();
        let mut cards_seen = Vec::new();
        let mut found = Vec::new();
        for afu in list_afus() {
            for kind in nodes(&afu) {
                // The node's token first: nodes keep the numbers they had before cards were
                // listed.
                let token = self.token_for(&afu.path, kind);
                let parent = self.card_token(&cards, &afu);
                let card = card_of(&cards, &afu);
                if let (true, Some(card), Some(card_token)) = (wants_devices, card, parent)
                    && !cards_seen.contains(&card_token)
                {
                    cards_seen.push(card_token);
                    let properties = Self::card_properties(card, Some(&afu));
                    if matches(&properties) {
                        found.push(Discovered {
                            token: card_token,
                            properties,
                        });
                    }
                }
                let properties = Self::properties(&afu, kind, card, parent);
                if matches(&properties) {
                    found.push(Discovered { token, properties });
                }
            }
        }
        Ok(found)
    }

    fn describe(&mut self, token: u64) -> Result<Properties> {
        match self.node_for_token(token)? {
            Node::Card(card) => {
                let afus = list_afus();
                let first = afus
                    .iter()
                    .find(|a| card_of(std::slice::from_ref(&card), a).is_some());
                Ok(Self::card_properties(&card, first))
            }
            Node::Afu(afu, kind) => {
                let cards = list_cards();
                let parent = self.card_token(&cards, &afu);
                Ok(Self::properties(&afu, kind, card_of(&cards, &afu), parent))
            }
        }
    }

    fn open(&mut self, token: u64, _mode: OpenMode) -> Result<u64> {
        let (afu, kind) = self.afu_for_token(token)?;
        let context = Context::open(&afu.path, kind)?;
        let handle = self.fresh_id();
        self.contexts.insert(
            handle,
            OpenContext {
                context,
                function: Function::of(&afu),
                memory: BTreeMap::new(),
                block: None,
            },
        );
        Ok(handle)
    }

    fn close(&mut self, handle: u64) -> Result<()> {
        self.context(handle)?;
        self.contexts.remove(&handle);
        self.queues.retain(|_, h| *h != handle);
        let programs: Vec<u64> = self
            .programs
            .iter()
            .filter(|(_, h)| **h == handle)
            .map(|(p, _)| *p)
            .collect();
        self.kernels.retain(|_, (p, _)| !programs.contains(p));
        self.programs.retain(|_, h| *h != handle);
        Ok(())
    }

    fn map_mmio(&mut self, handle: u64, index: u32) -> Result<mmio::Region> {
        let open = self.context(handle)?;
        if index != 0 {
            return Err(Error::invalid_argument(format!(
                "a cxl context has one MMIO region (0), not {index}"
            )));
        }
        open.context.map_mmio(true)
    }

    fn prepare_buffer(
        &mut self,
        handle: u64,
        size: u64,
        _flags: BufferFlags,
    ) -> Result<PreparedBuffer> {
        let (id, buffer, iova) = self.attach(handle, size)?;
        Ok(PreparedBuffer { id, buffer, iova })
    }

    fn release_buffer(&mut self, handle: u64, id: u64) -> Result<()> {
        self.context(handle)?
            .memory
            .remove(&id)
            .map(drop)
            .ok_or_else(|| Error::not_found(format!("no buffer {id} on handle {handle}")))
    }

    fn io_address(&mut self, handle: u64, id: u64) -> Result<u64> {
        self.context(handle)?
            .memory
            .get(&id)
            .map(|(ea, _)| *ea)
            .ok_or_else(|| Error::not_found(format!("no buffer {id} on handle {handle}")))
    }

    fn register_event(&mut self, handle: u64, kind: EventKind, vector: u32) -> Result<Event> {
        let open = self.context(handle)?;
        match kind {
            EventKind::Interrupt => {
                let irq = u16::try_from(vector).map_err(|_| {
                    Error::invalid_argument(format!("interrupt {vector} is out of range"))
                })?;
                open.context.interrupt_event(irq)
            }
            _ => Err(Error::unsupported(
                "register-event for errors and power events",
            )),
        }
    }

    fn mem_alloc(
        &mut self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> Result<Allocation> {
        if kind == MemoryKind::Device || bank.is_some() {
            return Err(Error::new(
                ErrorCode::Unsupported,
                "a CAPI AFU works on host memory at its effective addresses: allocate host or shared memory",
            ));
        }
        let (id, buffer, ea) = self.attach(handle, size)?;
        Ok(Allocation {
            id,
            buffer: Some(buffer),
            device_address: ea,
        })
    }

    fn mem_free(&mut self, handle: u64, id: u64) -> Result<()> {
        self.release_buffer(handle, id)
    }

    fn program_create(&mut self, handle: u64, image: &Image) -> Result<u64> {
        self.context(handle)?;
        if image.size() != 0 {
            return Err(Error::unsupported(
                "loading an image onto a CAPI AFU (its function is built in: create the program from an empty image)",
            ));
        }
        let id = self.fresh_id();
        self.programs.insert(id, handle);
        Ok(id)
    }

    fn program_release(&mut self, program: u64) -> Result<()> {
        self.kernels.retain(|_, (p, _)| *p != program);
        self.programs
            .remove(&program)
            .map(drop)
            .ok_or_else(|| Error::not_found(format!("no program {program}")))
    }

    fn kernel_get(&mut self, program: u64, name: &str) -> Result<u64> {
        let handle = *self
            .programs
            .get(&program)
            .ok_or_else(|| Error::not_found(format!("no program {program}")))?;
        let function = self.context(handle)?.function;
        if function.name() != name {
            return Err(Error::not_found(format!(
                "no kernel '{name}': this AFU's function is '{}'",
                function.name()
            )));
        }
        let id = self.fresh_id();
        self.kernels.insert(id, (program, function));
        Ok(id)
    }

    fn queue_create(&mut self, handle: u64) -> Result<u64> {
        self.context(handle)?;
        let id = self.fresh_id();
        self.queues.insert(id, handle);
        Ok(id)
    }

    fn queue_release(&mut self, queue: u64) -> Result<()> {
        self.queues
            .remove(&queue)
            .map(drop)
            .ok_or_else(|| Error::not_found(format!("no queue {queue}")))
    }

    fn enqueue_launch(
        &mut self,
        queue: u64,
        kernel: u64,
        args: Vec<KernelArgument>,
        _size: LaunchSize,
    ) -> Result<Event> {
        let handle = *self
            .queues
            .get(&queue)
            .ok_or_else(|| Error::not_found(format!("no queue {queue}")))?;
        let (_, function) = *self
            .kernels
            .get(&kernel)
            .ok_or_else(|| Error::not_found(format!("no kernel {kernel}")))?;
        let expected = match function {
            Function::Memcpy => &["queue", "depth", "irq"][..],
            Function::Vadd => &["in1", "in2", "out", "size"][..],
        };
        if args.len() != expected.len() {
            return Err(Error::invalid_argument(format!(
                "kernel '{}' takes {} argument(s) ({}), got {}",
                function.name(),
                expected.len(),
                expected.join(", "),
                args.len()
            )));
        }
        match function {
            Function::Memcpy => {
                let open = self.context(handle)?;
                let (queue_ea, _) = memory_argument(open, 0, "queue", &args[0])?;
                let depth = scalar_argument(1, "depth", &args[1])?;
                let irq = scalar_argument(2, "irq", &args[2])?;
                if queue_ea & 0xFFF != 0 || !(1..=0xFFF).contains(&depth) {
                    return Err(Error::invalid_argument(
                        "the queue must be page aligned and 1 to 4095 lines of 128 bytes deep",
                    ));
                }
                let irq = u16::try_from(irq).map_err(|_| {
                    Error::invalid_argument(format!("interrupt {irq} is out of range"))
                })?;
                let event = match irq {
                    0 => Event::completed(),
                    irq => open.context.interrupt_event(irq)?,
                };
                open.context.start_work(Work {
                    wed: queue_ea | depth,
                    amr: None,
                    num_interrupts: (irq > 0).then_some(irq.max(2)),
                })?;
                Ok(event)
            }
            Function::Vadd => {
                let (_, block, block_ea) = self.attach(handle, VADD_BLOCK)?;
                let open = self.context(handle)?;
                let size = scalar_argument(3, "size", &args[3])?;
                let mut vectors = [0; 3];
                for (position, name) in ["in1", "in2", "out"].into_iter().enumerate() {
                    let (ea, available) = memory_argument(open, position, name, &args[position])?;
                    // The AFU reads and writes 32-bit elements; a vector that ran past its
                    // allocation would fault on the AFU and never set the done flag.
                    if size.checked_mul(4).is_none_or(|bytes| bytes > available) {
                        return Err(Error::invalid_argument(format!(
                            "argument {position} ('{name}'): {size} elements of 4 bytes do not \
                             fit in the {available} bytes of the allocation from its offset"
                        )));
                    }
                    vectors[position] = ea;
                }
                let [in1, in2, out] = vectors;
                for (offset, value) in [
                    (VADD_SIZE, size),
                    (VADD_INPUT1, in1),
                    (VADD_INPUT2, in2),
                    (VADD_OUTPUT, out),
                    (VADD_DONE, 0),
                ] {
                    block.write(offset, &value.to_be_bytes())?;
                }
                let event = block.watch64(VADD_DONE, u64::MAX, 1u64.swap_bytes())?;
                open.context.start_work(Work {
                    wed: block_ea,
                    amr: None,
                    num_interrupts: None,
                })?;
                open.block = Some(block);
                Ok(event)
            }
        }
    }
}

accelhost_sdk::export_plugin!(CxlPlugin);
