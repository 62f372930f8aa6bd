//! Facts of the IBM CAPI userspace ABI (`uapi/misc/cxl.h`, the cxl driver's sysfs and
//! `read()` events) and of the two AFUs the emulator carries: the memcpy test AFU of
//! cxl-tests ([`memcpy`]) and capi-vadd ([`vadd`]).
//!
//! The ioctl codes at the top level use the generic encoding (x86_64, arm64): the codes libcxl
//! gets when it is compiled on such a host, which is where the emulator runs, and the
//! default here. [`powerpc`] holds the codes the real platform (ppc64 POWER8/9) uses, and
//! [`native`] the ones this build passes to `ioctl(2)`. The structs and `read()` events are
//! in the host's byte order, as the kernel writes them.

use super::{AfuEvent, AfuMode, ContextKind};
use crate::devices::ioctl::Encoding;
use crate::devices::sysfs::{numbered, parse_decimal, parse_hex_u16};

/// The ioctl type byte of every cxl request.
pub const CXL_MAGIC: u32 = 0xCA;
/// The kernel's `CXL_API_VERSION` (sysfs `api_version`).
pub const CXL_API_VERSION: u32 = 3;
/// The oldest API version the kernel still serves (sysfs `api_version_compatible`).
pub const CXL_API_VERSION_COMPATIBLE: u32 = 1;
/// `CXL_READ_MIN_SIZE`: a `read()` of fewer bytes fails with `EINVAL`.
pub const READ_MIN_SIZE: usize = 0x1000;

macro_rules! ioctl_codes {
    ($enc:expr) => {
        /// `_IOW(0xCA, 0x00, StartWorkArg)`: attaches the context with a WED. AFU fd.
        pub const CXL_IOCTL_START_WORK: u32 = $enc.iow::<StartWorkArg>(CXL_MAGIC, 0x00);
        /// `_IOR(0xCA, 0x01, u32)`: the context's process element. AFU fd.
        pub const CXL_IOCTL_GET_PROCESS_ELEMENT: u32 = $enc.ior::<u32>(CXL_MAGIC, 0x01);
        /// `_IOR(0xCA, 0x02, AfuIdArg)`: which card, slice and mode the fd is on. AFU fd.
        pub const CXL_IOCTL_GET_AFU_ID: u32 = $enc.ior::<AfuIdArg>(CXL_MAGIC, 0x02);
        /// `_IOW(0xCA, 0x0A, AdapterImageArg)`: one chunk of a new card image. Card fd
        /// (PowerVM guests only).
        pub const CXL_IOCTL_DOWNLOAD_IMAGE: u32 = $enc.iow::<AdapterImageArg>(CXL_MAGIC, 0x0A);
        /// `_IOW(0xCA, 0x0B, AdapterImageArg)`: validates a downloaded image. Card fd
        /// (PowerVM guests only).
        pub const CXL_IOCTL_VALIDATE_IMAGE: u32 = $enc.iow::<AdapterImageArg>(CXL_MAGIC, 0x0B);
    };
}

ioctl_codes!(Encoding::Generic);

/// The same requests in the powerpc encoding: the codes a real CAPI host (ppc64) uses.
pub mod powerpc {
    use super::{AdapterImageArg, AfuIdArg, CXL_MAGIC, Encoding, StartWorkArg};
    ioctl_codes!(Encoding::Powerpc);
}

/// The same requests in the encoding of the target this crate is built for.
pub mod native {
    use super::{AdapterImageArg, AfuIdArg, CXL_MAGIC, Encoding, StartWorkArg};
    ioctl_codes!(Encoding::NATIVE);
}

/// `struct cxl_ioctl_start_work`, the argument of `CXL_IOCTL_START_WORK`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct StartWorkArg {
    /// In: `START_WORK_*` bits saying which optional fields are used.
    pub flags: u64,
    /// In: the work element descriptor, AFU-defined.
    pub work_element_descriptor: u64,
    /// In: the AMR value, used with `START_WORK_AMR` (the kernel masks it with UAMOR).
    pub amr: u64,
    /// In: interrupts to allocate, used with `START_WORK_NUM_IRQS`.
    pub num_interrupts: i16,
    /// Out: the thread id, filled with `START_WORK_TID` (POWER9 `wait` support).
    pub tid: u16,
    /// Must be 0.
    pub reserved1: i32,
    /// Must be 0.
    pub reserved2: u64,
    /// Must be 0.
    pub reserved3: u64,
    /// Must be 0.
    pub reserved4: u64,
    /// Must be 0.
    pub reserved5: u64,
}

impl StartWorkArg {
    /// The kernel's `EINVAL` checks: no unknown flag bits and every reserved field 0.
    pub fn validate(&self) -> Result<(), &'static str> {
        if self.flags & !START_WORK_ALL != 0 {
            return Err("unknown START_WORK flag bits");
        }
        let reserved = [
            self.reserved2,
            self.reserved3,
            self.reserved4,
            self.reserved5,
        ];
        if self.reserved1 != 0 || reserved.iter().any(|&r| r != 0) {
            return Err("a reserved START_WORK field is not 0");
        }
        Ok(())
    }
}

/// `struct cxl_afu_id`, the argument of `CXL_IOCTL_GET_AFU_ID`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AfuIdArg {
    /// Out: `AFUID_FLAG_SLAVE` for a slave context of an AFU-directed AFU.
    pub flags: u64,
    /// Out: the adapter number.
    pub card_id: u32,
    /// Out: the AFU's slice.
    pub afu_offset: u32,
    /// Out: `MODE_DEDICATED` or `MODE_DIRECTED`.
    pub afu_mode: u32,
    /// Reserved.
    pub reserved1: u32,
    /// Reserved.
    pub reserved2: u64,
    /// Reserved.
    pub reserved3: u64,
    /// Reserved.
    pub reserved4: u64,
    /// Reserved.
    pub reserved5: u64,
    /// Reserved.
    pub reserved6: u64,
}

/// `struct cxl_adapter_image`, the argument of the image ioctls.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AdapterImageArg {
    /// In: `AI_NEED_HEADER` on the first chunk.
    pub flags: u64,
    /// In: user pointer to the chunk.
    pub data: u64,
    /// In: bytes in the chunk, at most `AI_MAX_CHUNK_SIZE`.
    pub len_data: u64,
    /// In: bytes in the whole image.
    pub len_image: u64,
    /// Reserved.
    pub reserved1: u64,
    /// Reserved.
    pub reserved2: u64,
    /// Reserved.
    pub reserved3: u64,
    /// Reserved.
    pub reserved4: u64,
}

/// `struct cxl_event_header`: the start of every event `read()` returns.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventHeader {
    /// One of the `EVENT_*` types.
    pub event_type: u16,
    /// Bytes of the event, header included.
    pub size: u16,
    /// The process element of the context.
    pub process_element: u16,
    /// Reserved.
    pub reserved1: u16,
}

/// `struct cxl_event_afu_interrupt`: the payload of `EVENT_AFU_INTERRUPT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventAfuInterrupt {
    /// Unused, 0.
    pub flags: u16,
    /// The AFU interrupt, 1-based.
    pub irq: u16,
    /// Reserved.
    pub reserved1: u32,
}

/// `struct cxl_event_data_storage`: the payload of `EVENT_DATA_STORAGE`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventDataStorage {
    /// Unused, 0.
    pub flags: u16,
    /// Reserved.
    pub reserved1: u16,
    /// Reserved.
    pub reserved2: u32,
    /// The faulting effective address.
    pub addr: u64,
    /// The DSISR describing the fault.
    pub dsisr: u64,
    /// Reserved.
    pub reserved3: u64,
}

/// `struct cxl_event_afu_error`: the payload of `EVENT_AFU_ERROR`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EventAfuError {
    /// Unused, 0.
    pub flags: u16,
    /// Reserved.
    pub reserved1: u16,
    /// Reserved.
    pub reserved2: u32,
    /// The AFU's error value.
    pub error: u64,
}

const _: () = assert!(size_of::<StartWorkArg>() == 64);
const _: () = assert!(size_of::<AfuIdArg>() == 64);
const _: () = assert!(size_of::<AdapterImageArg>() == 64);
const _: () = assert!(size_of::<EventHeader>() == 8);
const _: () = assert!(size_of::<EventAfuInterrupt>() == 8);
const _: () = assert!(size_of::<EventDataStorage>() == 32);
const _: () = assert!(size_of::<EventAfuError>() == 16);

/// START_WORK flag: `amr` is set.
pub const START_WORK_AMR: u64 = 0x1;
/// START_WORK flag: `num_interrupts` is set.
pub const START_WORK_NUM_IRQS: u64 = 0x2;
/// START_WORK flag: after a detach, MMIO reads give all-ones instead of `SIGBUS`.
pub const START_WORK_ERR_FF: u64 = 0x4;
/// START_WORK flag: return the thread id in `tid`.
pub const START_WORK_TID: u64 = 0x8;
/// Every START_WORK flag the kernel knows.
pub const START_WORK_ALL: u64 = 0xF;

/// GET_AFU_ID flag: the fd is a slave context of an AFU-directed AFU.
pub const AFUID_FLAG_SLAVE: u64 = 0x1;

/// AFU mode bit: dedicated process.
pub const MODE_DEDICATED: u32 = 0x1;
/// AFU mode bit: AFU-directed.
pub const MODE_DIRECTED: u32 = 0x2;
/// AFU mode bit: time-sliced (libcxl only; the kernel never sets it).
pub const MODE_TIME_SLICED: u32 = 0x4;

/// The `MODE_*` bit of `mode`.
pub const fn mode_bits(mode: AfuMode) -> u32 {
    match mode {
        AfuMode::Dedicated => MODE_DEDICATED,
        AfuMode::Directed => MODE_DIRECTED,
    }
}

/// Image flag: this chunk starts the image, whose header the kernel checks.
pub const AI_NEED_HEADER: u64 = 0x1;
/// Every image flag.
pub const AI_ALL: u64 = AI_NEED_HEADER;
/// The largest chunk one image ioctl takes.
pub const AI_MAX_CHUNK_SIZE: u64 = 4096 * 256;
/// Bytes of the image header.
pub const AI_HEADER_SIZE: u64 = 128;

/// Event type 0, never sent.
pub const EVENT_RESERVED: u16 = 0;
/// Event type: an AFU interrupt.
pub const EVENT_AFU_INTERRUPT: u16 = 1;
/// Event type: a data-storage fault.
pub const EVENT_DATA_STORAGE: u16 = 2;
/// Event type: an AFU error.
pub const EVENT_AFU_ERROR: u16 = 3;
/// Event type: an event of a kernel AFU driver (never seen by userspace contexts).
pub const EVENT_AFU_DRIVER: u16 = 4;

const HEADER_SIZE: usize = size_of::<EventHeader>();

/// The payload, if the event's size leaves room for a `T`.
fn payload_of<T>(payload: &[u8]) -> Result<&[u8], &'static str> {
    if payload.len() < size_of::<T>() {
        return Err("the event's size is too small for its type");
    }
    Ok(payload)
}

fn u16_at(buf: &[u8], at: usize) -> u16 {
    u16::from_ne_bytes([buf[at], buf[at + 1]])
}

fn u64_at(buf: &[u8], at: usize) -> u64 {
    let mut bytes = [0; 8];
    bytes.copy_from_slice(&buf[at..at + 8]);
    u64::from_ne_bytes(bytes)
}

/// Decodes the event at the start of `buf` (as `read()` returns it, in host byte order):
/// its process element and the event. `header.size` gives its length; short buffers,
/// sizes too small for the type and types other than interrupt, data storage and AFU error
/// are refused.
pub fn parse_event(buf: &[u8]) -> Result<(u32, AfuEvent), &'static str> {
    if buf.len() < HEADER_SIZE {
        return Err("the buffer is shorter than an event header");
    }
    let event_type = u16_at(buf, 0);
    let size = usize::from(u16_at(buf, 2));
    let pe = u32::from(u16_at(buf, 4));
    if size < HEADER_SIZE {
        return Err("the event's size is smaller than its header");
    }
    if size > buf.len() {
        return Err("the buffer ends inside the event");
    }
    let payload = &buf[HEADER_SIZE..size];
    let event = match event_type {
        EVENT_AFU_INTERRUPT => {
            let payload = payload_of::<EventAfuInterrupt>(payload)?;
            AfuEvent::Interrupt(u16_at(payload, 2))
        }
        EVENT_DATA_STORAGE => {
            let payload = payload_of::<EventDataStorage>(payload)?;
            AfuEvent::DataStorage {
                address: u64_at(payload, 8),
                dsisr: u64_at(payload, 16),
            }
        }
        EVENT_AFU_ERROR => AfuEvent::AfuError(u64_at(payload_of::<EventAfuError>(payload)?, 8)),
        EVENT_AFU_DRIVER => return Err("AFU driver events are for kernel AFU drivers"),
        _ => return Err("unknown event type"),
    };
    Ok((pe, event))
}

/// Decodes every event in a `read()` buffer, in order, each with its process element. An
/// event that cannot be decoded gives an `Err` in its place; a header that cannot be framed
/// (too short, or running past the buffer) ends the list with an `Err`.
pub fn parse_events(buf: &[u8]) -> Vec<Result<(u32, AfuEvent), &'static str>> {
    let mut events = Vec::new();
    let mut rest = buf;
    while !rest.is_empty() {
        let size = if rest.len() < HEADER_SIZE {
            0
        } else {
            usize::from(u16_at(rest, 2))
        };
        if size < HEADER_SIZE || size > rest.len() {
            events.push(Err(parse_event(rest)
                .err()
                .unwrap_or("the event's framing is broken")));
            break;
        }
        events.push(parse_event(&rest[..size]));
        rest = &rest[size..];
    }
    events
}

/// Encodes `event` as the kernel writes it into a `read()` buffer (host byte order, with
/// `header.size` = 8 + the payload).
pub fn encode_event(pe: u16, event: &AfuEvent) -> Vec<u8> {
    let (event_type, payload): (u16, Vec<u8>) = match *event {
        AfuEvent::Interrupt(irq) => {
            let mut payload = vec![0; size_of::<EventAfuInterrupt>()];
            payload[2..4].copy_from_slice(&irq.to_ne_bytes());
            (EVENT_AFU_INTERRUPT, payload)
        }
        AfuEvent::DataStorage { address, dsisr } => {
            let mut payload = vec![0; size_of::<EventDataStorage>()];
            payload[8..16].copy_from_slice(&address.to_ne_bytes());
            payload[16..24].copy_from_slice(&dsisr.to_ne_bytes());
            (EVENT_DATA_STORAGE, payload)
        }
        AfuEvent::AfuError(error) => {
            let mut payload = vec![0; size_of::<EventAfuError>()];
            payload[8..16].copy_from_slice(&error.to_ne_bytes());
            (EVENT_AFU_ERROR, payload)
        }
    };
    let size = (HEADER_SIZE + payload.len()) as u16;
    let mut bytes = Vec::with_capacity(usize::from(size));
    bytes.extend_from_slice(&event_type.to_ne_bytes());
    bytes.extend_from_slice(&size.to_ne_bytes());
    bytes.extend_from_slice(&pe.to_ne_bytes());
    bytes.extend_from_slice(&0u16.to_ne_bytes());
    bytes.extend_from_slice(&payload);
    bytes
}

/// Under the sysfs root: the cxl class, with `cardC`, `afuC.S` and the `afuC.S{d,m,s}`
/// context nodes.
pub const SYSFS_CXL_CLASS: &str = "class/cxl";
/// Under the device root: the directory of the cxl nodes (`/dev/cxl/afu0.0s`).
pub const DEV_DIR: &str = "cxl";
/// Prefix of the AFU entries (`afu0.0`, `afu0.0m`, ...).
pub const AFU_PREFIX: &str = "afu";
/// Prefix of the card entries (`card0`).
pub const CARD_PREFIX: &str = "card";

/// AFU attribute: bytes a slave or dedicated context maps, decimal.
pub const AFU_ATTR_MMIO_SIZE: &str = "mmio_size";
/// AFU attribute: interrupts a context gets by default, decimal.
pub const AFU_ATTR_IRQS_MIN: &str = "irqs_min";
/// AFU attribute: the most interrupts a context may ask for, decimal.
pub const AFU_ATTR_IRQS_MAX: &str = "irqs_max";
/// AFU attribute: the supported modes, one mode name a line.
pub const AFU_ATTR_MODES_SUPPORTED: &str = "modes_supported";
/// AFU attribute: the current mode name (writable).
pub const AFU_ATTR_MODE: &str = "mode";
/// AFU attribute: `none`, `work_element_descriptor` or `all`.
pub const AFU_ATTR_PREFAULT_MODE: &str = "prefault_mode";
/// AFU attribute: the kernel's API version, decimal.
pub const AFU_ATTR_API_VERSION: &str = "api_version";
/// AFU attribute: the oldest API version the kernel serves, decimal.
pub const AFU_ATTR_API_VERSION_COMPATIBLE: &str = "api_version_compatible";
/// AFU attribute: configuration record 0's vendor id, `0x%.4x`: the AFU's identity.
pub const AFU_ATTR_CR0_VENDOR: &str = "cr0/vendor";
/// AFU attribute: configuration record 0's device id, `0x%.4x`.
pub const AFU_ATTR_CR0_DEVICE: &str = "cr0/device";
/// IBM's PCI vendor id, which the emulated AFUs' configuration records report.
pub const PCI_VENDOR_IBM: u16 = 0x1014;
/// The device id the emulated AFUs' configuration records report (the CAPI PSL's).
pub const CAPI_DEVICE_ID: u16 = 0x0477;
/// Master attribute (`afuC.Sm`): bytes of the whole problem-state area, decimal.
pub const MASTER_ATTR_MMIO_SIZE: &str = "mmio_size";
/// Master attribute: where the per-process areas start, decimal.
pub const MASTER_ATTR_PP_MMIO_OFF: &str = "pp_mmio_off";
/// Master attribute: bytes of one per-process area, decimal.
pub const MASTER_ATTR_PP_MMIO_LEN: &str = "pp_mmio_len";
/// Card attribute: the CAIA version, `major.minor` (1.x = POWER8, 2.x = POWER9).
pub const CARD_ATTR_CAIA_VERSION: &str = "caia_version";
/// The link from a card's directory to its PCI function, named by its address.
pub const CARD_DEVICE_LINK: &str = "device";

/// Mode name of [`AfuMode::Dedicated`].
pub const MODE_NAME_DEDICATED: &str = "dedicated_process";
/// Mode name of [`AfuMode::Directed`].
pub const MODE_NAME_DIRECTED: &str = "afu_directed";
/// Mode name of an AFU with no mode set.
pub const MODE_NAME_NONE: &str = "none";

/// The mode a sysfs `mode` text names (`Some(None)` for `none`); `None` for anything else.
pub fn parse_mode(text: &str) -> Option<Option<AfuMode>> {
    match text.trim() {
        MODE_NAME_DEDICATED => Some(Some(AfuMode::Dedicated)),
        MODE_NAME_DIRECTED => Some(Some(AfuMode::Directed)),
        MODE_NAME_NONE => Some(None),
        _ => None,
    }
}

/// The sysfs name of `mode`.
pub const fn mode_name(mode: Option<AfuMode>) -> &'static str {
    match mode {
        Some(AfuMode::Dedicated) => MODE_NAME_DEDICATED,
        Some(AfuMode::Directed) => MODE_NAME_DIRECTED,
        None => MODE_NAME_NONE,
    }
}

/// The modes `modes_supported` lists, one a line; `None` if a line names no mode.
pub fn parse_modes_supported(text: &str) -> Option<Vec<AfuMode>> {
    let mut modes = Vec::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let mode = parse_mode(line)??;
        if !modes.contains(&mode) {
            modes.push(mode);
        }
    }
    Some(modes)
}

/// `(major, minor)` of a `caia_version` text such as `1.2`.
pub fn parse_caia_version(text: &str) -> Option<(u32, u32)> {
    let (major, minor) = text.trim().split_once('.')?;
    Some((parse_decimal(major)?, parse_decimal(minor)?))
}

/// A configuration record id as sysfs prints it (`0x%.4x`).
pub fn parse_cr_id(text: &str) -> Option<u16> {
    parse_hex_u16(text.trim())
}

/// The entry name of AFU `slice` on card `card`: `afuC.S`.
pub fn afu_name(card: u32, slice: u32) -> String {
    format!("{AFU_PREFIX}{card}.{slice}")
}

/// Card, slice and node kind of an entry name: `afuC.S` gives no kind, `afuC.S{m,s,d}` the
/// kind of context that node opens; `None` for any other name.
pub fn parse_afu_name(name: &str) -> Option<(u32, u32, Option<ContextKind>)> {
    let rest = name.strip_prefix(AFU_PREFIX)?;
    let (card, rest) = rest.split_once('.')?;
    let (slice, kind) = match rest.as_bytes().last() {
        Some(b'm') => (&rest[..rest.len() - 1], Some(ContextKind::Master)),
        Some(b's') => (&rest[..rest.len() - 1], Some(ContextKind::Slave)),
        Some(b'd') => (&rest[..rest.len() - 1], Some(ContextKind::Dedicated)),
        _ => (rest, None),
    };
    Some((parse_decimal(card)?, parse_decimal(slice)?, kind))
}

/// `C` of a `cardC` entry name.
pub fn parse_card_name(name: &str) -> Option<u32> {
    numbered(name, CARD_PREFIX)
}

/// PPC bit `n` of a 64-bit word: bit 0 is the most significant.
pub const fn ppc_bit(n: u32) -> u64 {
    1 << (63 - n)
}

/// AFU descriptor word 0 `[0:15]`: interrupts each process needs.
pub const AFUD_NUM_INTS_PER_PROCESS_SHIFT: u32 = 48;
/// AFU descriptor word 0 `[16:31]`: processes the AFU supports.
pub const AFUD_NUM_OF_PROCESSES_SHIFT: u32 = 32;
/// AFU descriptor word 0 `[32:47]`: configuration records.
pub const AFUD_NUM_OF_AFU_CRS_SHIFT: u32 = 16;
/// AFU descriptor word 0, PPC bit 48: the AFU supports more than one mode.
pub const AFUD_MULTIMODE: u64 = ppc_bit(48);
/// AFU descriptor word 0, PPC bit 59: dedicated-process mode.
pub const AFUD_DEDICATED_PROCESS: u64 = ppc_bit(59);
/// AFU descriptor word 0, PPC bit 61: AFU-directed mode.
pub const AFUD_AFU_DIRECTED: u64 = ppc_bit(61);
/// AFU descriptor word 0, PPC bit 63: time-sliced mode.
pub const AFUD_TIME_SLICED: u64 = ppc_bit(63);
/// Byte offset of AFU descriptor word 0 in the descriptor space.
pub const AFUD_WORD0: u64 = 0x00;
/// Byte offset of the configuration record length word (PPC bits 8:63).
pub const AFUD_CR_LEN: u64 = 0x20;
/// Byte offset of the configuration record offset word.
pub const AFUD_CR_OFFSET: u64 = 0x28;
/// Byte offset of the problem-state area word (PPPSA).
pub const AFUD_PPPSA: u64 = 0x30;
/// PPPSA, PPC bit 6: the AFU has a per-process problem-state area.
pub const AFUD_PPPSA_PP: u64 = ppc_bit(6);
/// PPPSA, PPC bit 7: the AFU has a problem-state area.
pub const AFUD_PPPSA_PSA: u64 = ppc_bit(7);

/// AFU descriptor word 0, decoded.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AfuDescriptor {
    /// `num_ints_per_process`.
    pub num_ints_per_process: u16,
    /// `num_of_processes`.
    pub num_of_processes: u16,
    /// `num_of_afu_CRs`.
    pub num_of_afu_crs: u16,
    /// `AFUD_MULTIMODE`.
    pub multimode: bool,
    /// `AFUD_DEDICATED_PROCESS`.
    pub dedicated_process: bool,
    /// `AFUD_AFU_DIRECTED`.
    pub afu_directed: bool,
    /// `AFUD_TIME_SLICED`.
    pub time_sliced: bool,
}

impl AfuDescriptor {
    /// Decodes descriptor word 0.
    pub const fn decode(word: u64) -> Self {
        AfuDescriptor {
            num_ints_per_process: (word >> AFUD_NUM_INTS_PER_PROCESS_SHIFT) as u16,
            num_of_processes: (word >> AFUD_NUM_OF_PROCESSES_SHIFT) as u16,
            num_of_afu_crs: (word >> AFUD_NUM_OF_AFU_CRS_SHIFT) as u16,
            multimode: word & AFUD_MULTIMODE != 0,
            dedicated_process: word & AFUD_DEDICATED_PROCESS != 0,
            afu_directed: word & AFUD_AFU_DIRECTED != 0,
            time_sliced: word & AFUD_TIME_SLICED != 0,
        }
    }

    /// Encodes descriptor word 0.
    pub const fn encode(&self) -> u64 {
        const fn flag(set: bool, bit: u64) -> u64 {
            if set { bit } else { 0 }
        }
        ((self.num_ints_per_process as u64) << AFUD_NUM_INTS_PER_PROCESS_SHIFT)
            | ((self.num_of_processes as u64) << AFUD_NUM_OF_PROCESSES_SHIFT)
            | ((self.num_of_afu_crs as u64) << AFUD_NUM_OF_AFU_CRS_SHIFT)
            | flag(self.multimode, AFUD_MULTIMODE)
            | flag(self.dedicated_process, AFUD_DEDICATED_PROCESS)
            | flag(self.afu_directed, AFUD_AFU_DIRECTED)
            | flag(self.time_sliced, AFUD_TIME_SLICED)
    }

    /// The modes the descriptor offers (time-sliced has no [`AfuMode`]).
    pub fn modes(&self) -> Vec<AfuMode> {
        let mut modes = Vec::new();
        if self.dedicated_process {
            modes.push(AfuMode::Dedicated);
        }
        if self.afu_directed {
            modes.push(AfuMode::Directed);
        }
        modes
    }
}

/// The memcpy test AFU of ibm-capi/cxl-tests (AFU-directed). Everything it touches is
/// big-endian: work elements in memory and its registers.
pub mod memcpy {
    /// Processes in the AFU descriptor (the kernel keeps one for the vPHB).
    pub const NUM_OF_PROCESSES: u16 = 0x1FF;

    /// Work element offset: `cmd` (u8): `CMD_VALID | CMD_WRAP | command`.
    pub const WE_CMD: usize = 0;
    /// Work element offset: `status` (u8), written by the AFU.
    pub const WE_STATUS: usize = 1;
    /// Work element offset: `length` (be16); for `CMD_IRQ` the interrupt number.
    pub const WE_LENGTH: usize = 2;
    /// Work element offset: `cmd_extra` (u8), the atomic operation.
    pub const WE_CMD_EXTRA: usize = 4;
    /// Work element offset: `atomic_op1` (be64).
    pub const WE_ATOMIC_OP1: usize = 8;
    /// Work element offset: `src` (be64), also `atomic_op2`.
    pub const WE_SRC: usize = 16;
    /// Work element offset: `dst` (be64).
    pub const WE_DST: usize = 24;
    /// Bytes of a work element.
    pub const WE_SIZE: u64 = 32;
    /// Bytes of a queue line; the WED's depth counts these.
    pub const LINE_SIZE: u64 = 128;
    /// Work elements in a line.
    pub const ELEMENTS_PER_LINE: u64 = LINE_SIZE / WE_SIZE;
    /// The largest queue depth the WED holds, in lines.
    pub const MAX_DEPTH_LINES: u16 = 0xFFF;

    /// `cmd` bit: the element is ready; the host sets it last.
    pub const CMD_VALID: u8 = 0x80;
    /// `cmd` bit: the producer's wrap phase, flipped each time it wraps to the queue start.
    pub const CMD_WRAP: u8 = 0x40;
    /// `cmd` bits holding the command.
    pub const CMD_MASK: u8 = 0x3F;
    /// Command: copy `length` bytes from `src` to `dst`.
    pub const CMD_COPY: u8 = 0;
    /// Command: raise AFU interrupt `length`, then stop the process until restarted.
    pub const CMD_IRQ: u8 = 1;
    /// Command: `*dst = *src + 1` (be32, `length` 4).
    pub const CMD_INCR: u8 = 4;
    /// Command: the atomic operation `cmd_extra` at `dst`.
    pub const CMD_ATOMIC: u8 = 5;
    /// `cmd_extra`: 8-byte compare-and-swap if not equal.
    pub const CAS_NOT_EQUAL_8: u8 = 0x10;
    /// `cmd_extra`: 8-byte compare-and-swap if equal.
    pub const CAS_EQUAL_8: u8 = 0x11;

    /// `status` bit: the element is done.
    pub const STATUS_COMPLETE: u8 = 0x80;
    /// `status` bit: a translation fault.
    pub const TRANS_FAULT: u8 = 0x40;
    /// `status` bit: an address error.
    pub const AERROR: u8 = 0x20;
    /// `status` bit: a data error.
    pub const DERROR: u8 = 0x10;
    /// `status` bit: a PSL fault.
    pub const PSL_FAULT: u8 = 0x08;
    /// `status` bit: a bad interrupt source.
    pub const INV_SRC: u8 = 0x04;
    /// `status` bit: the process was terminated.
    pub const PROC_TERM: u8 = 0x02;
    /// `status` bit: an undefined command.
    pub const UNDEF_CMD: u8 = 0x01;

    /// The WED of a page-aligned queue at `queue_ea` that is `depth_lines` lines deep (at most
    /// [`MAX_DEPTH_LINES`]).
    pub const fn wed(queue_ea: u64, depth_lines: u16) -> u64 {
        (queue_ea & !0xFFF) | (depth_lines as u64 & 0xFFF)
    }

    /// The queue address and depth in lines a WED holds.
    pub const fn decode_wed(wed: u64) -> (u64, u16) {
        (wed & !0xFFF, (wed & 0xFFF) as u16)
    }

    /// Per-process area: the WED, read back.
    pub const PSA_WED: u64 = 0x00;
    /// Per-process area: the process handle in `[63:48]`, equal to the PE.
    pub const PSA_PH: u64 = 0x08;
    /// Shift of the process handle in `PSA_PH`.
    pub const PH_SHIFT: u32 = 48;
    /// Per-process area: the process status.
    pub const PSA_STATUS: u64 = 0x10;
    /// `PSA_STATUS` bit: the process is stopped (after `CMD_IRQ`).
    pub const STATUS_STOPPED: u64 = 0x0800_0000_0000_0000;
    /// Per-process area: process control.
    pub const PSA_PCTRL: u64 = 0x18;
    /// `PSA_PCTRL` value: restart a stopped process.
    pub const PCTRL_RESTART: u64 = 0x8000_0000_0000_0000;
    /// Per-process area: timebase; write 0 to request a sample, read until non-zero.
    pub const PSA_TB: u64 = 0x40;

    /// The process handle a `PSA_PH` value holds.
    pub const fn process_handle(ph: u64) -> u16 {
        (ph >> PH_SHIFT) as u16
    }

    /// Bytes of the master's global register area.
    pub const GLOBAL_AREA_SIZE: u64 = 16 * 1024;
    /// Global register: configuration.
    pub const CFG: u64 = 0x00;
    /// `CFG` bit: stop the process on an invalid command.
    pub const CFG_STOP_ON_INVALID_CMD: u64 = 0x2000_0000_0000_0000;
    /// Global register: error.
    pub const ERR: u64 = 0x10;
    /// Global register: error information.
    pub const ERR_INFO: u64 = 0x18;
    /// Global register: trace control.
    pub const TRACE_CTL: u64 = 0x20;

    /// One work element, with its fields as values (the wire form is big-endian).
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
    pub struct WorkElement {
        /// `CMD_VALID | CMD_WRAP | command`.
        pub cmd: u8,
        /// `STATUS_*` bits, written by the AFU.
        pub status: u8,
        /// Bytes to copy; for `CMD_IRQ` the interrupt number.
        pub length: u16,
        /// The atomic operation of `CMD_ATOMIC`.
        pub cmd_extra: u8,
        /// The first atomic operand.
        pub atomic_op1: u64,
        /// Source address (the second atomic operand).
        pub src: u64,
        /// Destination address.
        pub dst: u64,
    }

    impl WorkElement {
        /// A `CMD_COPY` element: `length` bytes from `src` to `dst`.
        pub fn copy(src: u64, dst: u64, length: u16) -> Self {
            WorkElement {
                cmd: CMD_COPY,
                length,
                src,
                dst,
                ..WorkElement::default()
            }
        }

        /// A `CMD_IRQ` element raising interrupt `irq`.
        pub fn interrupt(irq: u16) -> Self {
            WorkElement {
                cmd: CMD_IRQ,
                length: irq,
                ..WorkElement::default()
            }
        }

        /// The 32 bytes as the card reads them (reserved bytes 0).
        pub fn encode(&self) -> [u8; WE_SIZE as usize] {
            let mut bytes = [0; WE_SIZE as usize];
            bytes[WE_CMD] = self.cmd;
            bytes[WE_STATUS] = self.status;
            bytes[WE_LENGTH..WE_LENGTH + 2].copy_from_slice(&self.length.to_be_bytes());
            bytes[WE_CMD_EXTRA] = self.cmd_extra;
            bytes[WE_ATOMIC_OP1..WE_ATOMIC_OP1 + 8].copy_from_slice(&self.atomic_op1.to_be_bytes());
            bytes[WE_SRC..WE_SRC + 8].copy_from_slice(&self.src.to_be_bytes());
            bytes[WE_DST..WE_DST + 8].copy_from_slice(&self.dst.to_be_bytes());
            bytes
        }

        /// Reads a work element from its 32 bytes.
        pub fn decode(bytes: &[u8; WE_SIZE as usize]) -> Self {
            let be64 = |at: usize| {
                let mut word = [0; 8];
                word.copy_from_slice(&bytes[at..at + 8]);
                u64::from_be_bytes(word)
            };
            WorkElement {
                cmd: bytes[WE_CMD],
                status: bytes[WE_STATUS],
                length: u16::from_be_bytes([bytes[WE_LENGTH], bytes[WE_LENGTH + 1]]),
                cmd_extra: bytes[WE_CMD_EXTRA],
                atomic_op1: be64(WE_ATOMIC_OP1),
                src: be64(WE_SRC),
                dst: be64(WE_DST),
            }
        }

        /// The command without the VALID and WRAP bits.
        pub const fn command(&self) -> u8 {
            self.cmd & CMD_MASK
        }
    }
}

/// capi-vadd of ibm-capi/afu-walkthrough (dedicated mode): no registers, only the WED, which
/// points to a control block. The emulated AFUs are big-endian throughout, so every field of
/// the block is a big-endian u64.
pub mod vadd {
    pub use super::{
        AFUD_AFU_DIRECTED, AFUD_DEDICATED_PROCESS, AFUD_MULTIMODE, AFUD_NUM_INTS_PER_PROCESS_SHIFT,
        AFUD_NUM_OF_AFU_CRS_SHIFT, AFUD_NUM_OF_PROCESSES_SHIFT, AFUD_TIME_SLICED, AfuDescriptor,
    };

    /// Control block field: number of u32 elements.
    pub const SIZE: u64 = 0x00;
    /// Control block field: address of the first input vector.
    pub const INPUT1: u64 = 0x08;
    /// Control block field: address of the second input vector.
    pub const INPUT2: u64 = 0x10;
    /// Control block field: address of the output vector.
    pub const OUTPUT: u64 = 0x18;
    /// Control block field: the AFU writes non-zero here when it is done.
    pub const DONE: u64 = 0x20;
    /// Control block field: AFU cycles the job took (250 MHz).
    pub const CLOCK_COUNT: u64 = 0x28;
    /// Bytes of the control block, which is also its alignment.
    pub const BLOCK_SIZE: u64 = 128;
    /// AFU descriptor word 0: no interrupts, one process, no configuration records,
    /// multimode and dedicated process.
    pub const AFU_DESC: u64 = 0x0000_0001_0000_8010;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn struct_sizes_and_offsets_match_the_kernel() {
        assert_eq!(size_of::<StartWorkArg>(), 64);
        assert_eq!(offset_of!(StartWorkArg, amr), 16);
        assert_eq!(offset_of!(StartWorkArg, num_interrupts), 24);
        assert_eq!(offset_of!(StartWorkArg, tid), 26);
        assert_eq!(offset_of!(StartWorkArg, reserved1), 28);
        assert_eq!(offset_of!(StartWorkArg, reserved5), 56);
        assert_eq!(size_of::<AfuIdArg>(), 64);
        assert_eq!(offset_of!(AfuIdArg, afu_mode), 16);
        assert_eq!(offset_of!(AfuIdArg, reserved2), 24);
        assert_eq!(size_of::<AdapterImageArg>(), 64);
        assert_eq!(offset_of!(AdapterImageArg, len_image), 24);
        assert_eq!(size_of::<EventHeader>(), 8);
        assert_eq!(offset_of!(EventHeader, process_element), 4);
        assert_eq!(size_of::<EventAfuInterrupt>(), 8);
        assert_eq!(offset_of!(EventAfuInterrupt, irq), 2);
        assert_eq!(size_of::<EventDataStorage>(), 32);
        assert_eq!(offset_of!(EventDataStorage, addr), 8);
        assert_eq!(offset_of!(EventDataStorage, dsisr), 16);
        assert_eq!(size_of::<EventAfuError>(), 16);
        assert_eq!(offset_of!(EventAfuError, error), 8);
    }

    #[test]
    fn ioctl_codes_match_the_table() {
        macro_rules! table {
            ($($name:ident: $generic:literal $ppc:literal;)*) => {$(
                assert_eq!($name, $generic, stringify!($name));
                assert_eq!(powerpc::$name, $ppc, concat!("powerpc ", stringify!($name)));
            )*};
        }
        table! {
            CXL_IOCTL_START_WORK:          0x4040_CA00 0x8040_CA00;
            CXL_IOCTL_GET_PROCESS_ELEMENT: 0x8004_CA01 0x4004_CA01;
            CXL_IOCTL_GET_AFU_ID:          0x8040_CA02 0x4040_CA02;
            CXL_IOCTL_DOWNLOAD_IMAGE:      0x4040_CA0A 0x8040_CA0A;
            CXL_IOCTL_VALIDATE_IMAGE:      0x4040_CA0B 0x8040_CA0B;
        }
    }

    #[test]
    fn native_codes_are_the_build_targets() {
        let ppc = cfg!(any(target_arch = "powerpc", target_arch = "powerpc64"));
        let expected = if ppc {
            powerpc::CXL_IOCTL_START_WORK
        } else {
            CXL_IOCTL_START_WORK
        };
        assert_eq!(native::CXL_IOCTL_START_WORK, expected);
    }

    #[test]
    fn flag_and_type_values_match_the_header() {
        assert_eq!(
            START_WORK_AMR | START_WORK_NUM_IRQS | START_WORK_ERR_FF | START_WORK_TID,
            START_WORK_ALL
        );
        assert_eq!(mode_bits(AfuMode::Dedicated), 0x1);
        assert_eq!(mode_bits(AfuMode::Directed), 0x2);
        assert_eq!(MODE_TIME_SLICED, 0x4);
        assert_eq!(AFUID_FLAG_SLAVE, 0x1);
        assert_eq!(
            [
                EVENT_RESERVED,
                EVENT_AFU_INTERRUPT,
                EVENT_DATA_STORAGE,
                EVENT_AFU_ERROR,
                EVENT_AFU_DRIVER
            ],
            [0, 1, 2, 3, 4]
        );
        assert_eq!(READ_MIN_SIZE, 4096);
        assert_eq!((CXL_API_VERSION, CXL_API_VERSION_COMPATIBLE), (3, 1));
    }

    #[test]
    fn start_work_validation_follows_the_kernel() {
        let mut arg = StartWorkArg {
            flags: START_WORK_ALL,
            ..Default::default()
        };
        assert!(arg.validate().is_ok());
        arg.flags = 0x10;
        assert!(arg.validate().is_err());
        arg.flags = 0;
        arg.reserved1 = -1;
        assert!(arg.validate().is_err());
        arg.reserved1 = 0;
        arg.reserved4 = 1;
        assert!(arg.validate().is_err());
    }

    fn header(event_type: u16, size: u16, pe: u16) -> Vec<u8> {
        [event_type, size, pe, 0]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect()
    }

    #[test]
    fn events_decode_by_type() {
        let mut irq = header(EVENT_AFU_INTERRUPT, 16, 7);
        irq.extend_from_slice(&[0, 0]);
        irq.extend_from_slice(&3u16.to_ne_bytes());
        irq.extend_from_slice(&[0; 4]);
        assert_eq!(parse_event(&irq), Ok((7, AfuEvent::Interrupt(3))));

        let mut dsi = header(EVENT_DATA_STORAGE, 40, 2);
        dsi.extend_from_slice(&[0; 8]);
        dsi.extend_from_slice(&0xDEAD_B000u64.to_ne_bytes());
        dsi.extend_from_slice(&0x4200_0000u64.to_ne_bytes());
        dsi.extend_from_slice(&[0; 8]);
        let fault = AfuEvent::DataStorage {
            address: 0xDEAD_B000,
            dsisr: 0x4200_0000,
        };
        assert_eq!(parse_event(&dsi), Ok((2, fault)));

        let mut error = header(EVENT_AFU_ERROR, 24, 1);
        error.extend_from_slice(&[0; 8]);
        error.extend_from_slice(&0x55u64.to_ne_bytes());
        assert_eq!(parse_event(&error), Ok((1, AfuEvent::AfuError(0x55))));

        for event in [AfuEvent::Interrupt(9), fault, AfuEvent::AfuError(1 << 63)] {
            let bytes = encode_event(511, &event);
            assert_eq!(parse_event(&bytes), Ok((511, event)));
        }
        assert_eq!(encode_event(7, &AfuEvent::Interrupt(3)), irq);
        assert_eq!(encode_event(2, &fault), dsi);
        assert_eq!(encode_event(1, &AfuEvent::AfuError(0x55)), error);
        let mut padded = irq.clone();
        padded.extend_from_slice(&[0xFF; 100]);
        assert_eq!(parse_event(&padded), Ok((7, AfuEvent::Interrupt(3))));
    }

    #[test]
    fn bad_events_are_refused() {
        let irq = encode_event(0, &AfuEvent::Interrupt(1));
        assert!(parse_event(&[]).is_err());
        assert!(parse_event(&irq[..7]).is_err());
        assert!(parse_event(&irq[..15]).is_err(), "header.size says 16");
        let mut short = irq.clone();
        short[2..4].copy_from_slice(&12u16.to_ne_bytes());
        assert!(parse_event(&short).is_err(), "too small for an interrupt");
        short[2..4].copy_from_slice(&4u16.to_ne_bytes());
        assert!(parse_event(&short).is_err(), "smaller than the header");
        for event_type in [EVENT_RESERVED, EVENT_AFU_DRIVER, 5, 0xFFFF] {
            let mut other = irq.clone();
            other[0..2].copy_from_slice(&event_type.to_ne_bytes());
            assert!(parse_event(&other).is_err(), "type {event_type}");
        }
        let mut dsi = encode_event(0, &AfuEvent::AfuError(1));
        dsi[0..2].copy_from_slice(&EVENT_DATA_STORAGE.to_ne_bytes());
        assert!(parse_event(&dsi).is_err(), "16 bytes cannot hold a fault");
    }

    #[test]
    fn a_buffer_of_events_splits_by_size() {
        let mut buf = encode_event(3, &AfuEvent::Interrupt(2));
        let mut unknown = encode_event(3, &AfuEvent::Interrupt(1));
        unknown[0..2].copy_from_slice(&EVENT_AFU_DRIVER.to_ne_bytes());
        buf.extend_from_slice(&unknown);
        buf.extend_from_slice(&encode_event(3, &AfuEvent::AfuError(4)));
        let events = parse_events(&buf);
        assert_eq!(events.len(), 3);
        assert_eq!(events[0], Ok((3, AfuEvent::Interrupt(2))));
        assert!(events[1].is_err());
        assert_eq!(events[2], Ok((3, AfuEvent::AfuError(4))));
        assert!(parse_events(&[]).is_empty());

        buf.extend_from_slice(&[1, 0, 0]);
        let events = parse_events(&buf);
        assert_eq!(events.len(), 4);
        assert!(events[3].is_err(), "a truncated header ends the walk");
        let mut zero = encode_event(3, &AfuEvent::Interrupt(2));
        zero[2..4].copy_from_slice(&0u16.to_ne_bytes());
        let events = parse_events(&zero);
        assert_eq!(events.len(), 1, "a zero size cannot loop");
        assert!(events[0].is_err());
    }

    #[test]
    fn sysfs_texts_parse() {
        assert_eq!(
            parse_mode("dedicated_process\n"),
            Some(Some(AfuMode::Dedicated))
        );
        assert_eq!(parse_mode("afu_directed"), Some(Some(AfuMode::Directed)));
        assert_eq!(parse_mode("none\n"), Some(None));
        assert_eq!(parse_mode("time_sliced"), None);
        for mode in [None, Some(AfuMode::Dedicated), Some(AfuMode::Directed)] {
            assert_eq!(parse_mode(mode_name(mode)), Some(mode));
        }
        assert_eq!(
            parse_modes_supported("dedicated_process\nafu_directed\n"),
            Some(vec![AfuMode::Dedicated, AfuMode::Directed])
        );
        assert_eq!(parse_modes_supported(""), Some(vec![]));
        assert_eq!(parse_modes_supported("afu_directed\nbogus\n"), None);
        assert_eq!(parse_caia_version("1.2\n"), Some((1, 2)));
        assert_eq!(parse_caia_version("2.0"), Some((2, 0)));
        for bad in ["1", "1.", ".2", "1.2.3", "-1.2", "a.b"] {
            assert_eq!(parse_caia_version(bad), None, "{bad}");
        }
        assert_eq!(parse_cr_id("0x1014\n"), Some(0x1014));
        for bad in ["1014", "0x", "0x10000", "0xg"] {
            assert_eq!(parse_cr_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn entry_names_parse() {
        assert_eq!(afu_name(0, 1), "afu0.1");
        assert_eq!(parse_afu_name("afu0.1"), Some((0, 1, None)));
        assert_eq!(
            parse_afu_name("afu12.3m"),
            Some((12, 3, Some(ContextKind::Master)))
        );
        assert_eq!(
            parse_afu_name("afu0.0s"),
            Some((0, 0, Some(ContextKind::Slave)))
        );
        assert_eq!(
            parse_afu_name("afu0.0d"),
            Some((0, 0, Some(ContextKind::Dedicated)))
        );
        for bad in [
            "afu0", "afu0.", "afu.0", "afu0.0x", "afu0.0mm", "afu+0.0", "card0",
        ] {
            assert_eq!(parse_afu_name(bad), None, "{bad}");
        }
        assert_eq!(parse_card_name("card3"), Some(3));
        assert_eq!(parse_card_name("card"), None);
        assert_eq!(parse_card_name("afu0.0"), None);
    }

    #[test]
    fn vadd_descriptor_decodes_as_documented() {
        let desc = AfuDescriptor::decode(vadd::AFU_DESC);
        assert_eq!(
            desc,
            AfuDescriptor {
                num_ints_per_process: 0,
                num_of_processes: 1,
                num_of_afu_crs: 0,
                multimode: true,
                dedicated_process: true,
                afu_directed: false,
                time_sliced: false,
            }
        );
        assert_eq!(desc.encode(), vadd::AFU_DESC);
        assert_eq!(desc.modes(), [AfuMode::Dedicated]);
        assert_eq!(vadd::AFUD_MULTIMODE, 0x8000);
        assert_eq!(vadd::AFUD_DEDICATED_PROCESS, 0x10);
        assert_eq!(vadd::AFUD_AFU_DIRECTED, 0x4);
        assert_eq!(vadd::AFUD_TIME_SLICED, 0x1);
        assert_eq!(AFUD_PPPSA_PP, 0x0200_0000_0000_0000);
        assert_eq!(AFUD_PPPSA_PSA, 0x0100_0000_0000_0000);
        let other = AfuDescriptor {
            num_ints_per_process: 0xABCD,
            num_of_processes: memcpy::NUM_OF_PROCESSES,
            num_of_afu_crs: 1,
            multimode: false,
            dedicated_process: false,
            afu_directed: true,
            time_sliced: true,
        };
        assert_eq!(other.encode(), 0xABCD_01FF_0001_0005);
        assert_eq!(AfuDescriptor::decode(other.encode()), other);
        assert_eq!(other.modes(), [AfuMode::Directed]);
    }

    #[test]
    fn vadd_block_layout() {
        assert_eq!(
            [
                vadd::SIZE,
                vadd::INPUT1,
                vadd::INPUT2,
                vadd::OUTPUT,
                vadd::DONE,
                vadd::CLOCK_COUNT
            ],
            [0, 8, 16, 24, 32, 40]
        );
        assert_eq!(vadd::BLOCK_SIZE, 128);
    }

    #[test]
    fn memcpy_wed_round_trips() {
        use memcpy::*;
        assert_eq!(wed(0x7FFF_0000_1000, 4095), 0x7FFF_0000_1FFF);
        assert_eq!(wed(0x7FFF_0000_1234, 1), 0x7FFF_0000_1001, "page aligned");
        assert_eq!(wed(0x1000, 0x1001), 0x1001, "depth is 12 bits");
        assert_eq!(decode_wed(0x7FFF_0000_1FFF), (0x7FFF_0000_1000, 4095));
        assert_eq!(decode_wed(wed(0xABC000, 7)), (0xABC000, 7));
        assert_eq!(ELEMENTS_PER_LINE, 4);
        assert_eq!(u64::from(MAX_DEPTH_LINES) * ELEMENTS_PER_LINE, 16380);
        assert_eq!(process_handle(0x0005_0000_0000_0000), 5);
        assert_eq!(GLOBAL_AREA_SIZE, 0x4000);
        assert_eq!(
            [PSA_WED, PSA_PH, PSA_STATUS, PSA_PCTRL, PSA_TB],
            [0, 8, 0x10, 0x18, 0x40]
        );
        assert_eq!([CFG, ERR, ERR_INFO, TRACE_CTL], [0, 0x10, 0x18, 0x20]);
    }

    #[test]
    fn memcpy_work_elements_are_big_endian() {
        use memcpy::*;
        let we = WorkElement {
            cmd: CMD_VALID | CMD_WRAP | CMD_COPY,
            status: 0,
            length: 0x1234,
            cmd_extra: 0,
            atomic_op1: 0,
            src: 0x0011_2233_4455_6677,
            dst: 0x8899_AABB_CCDD_EEFF,
        };
        let bytes = we.encode();
        assert_eq!(bytes[WE_CMD], 0xC0);
        assert_eq!(bytes[WE_LENGTH..WE_LENGTH + 2], [0x12, 0x34]);
        assert_eq!(
            bytes[WE_SRC..WE_SRC + 8],
            [0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77]
        );
        assert_eq!(bytes[WE_DST], 0x88);
        assert_eq!(bytes[5..8], [0, 0, 0], "reserved");
        assert_eq!(WorkElement::decode(&bytes), we);
        assert_eq!(we.command(), CMD_COPY);

        let atomic = WorkElement {
            cmd: CMD_VALID | CMD_ATOMIC,
            status: STATUS_COMPLETE | TRANS_FAULT,
            length: 8,
            cmd_extra: CAS_EQUAL_8,
            atomic_op1: 1,
            src: 2,
            dst: 0x1000,
        };
        let bytes = atomic.encode();
        assert_eq!(bytes[WE_STATUS], 0xC0);
        assert_eq!(bytes[WE_CMD_EXTRA], 0x11);
        assert_eq!(bytes[WE_ATOMIC_OP1 + 7], 1);
        assert_eq!(WorkElement::decode(&bytes), atomic);
        assert_eq!(atomic.command(), CMD_ATOMIC);
        assert_eq!(
            STATUS_COMPLETE
                | TRANS_FAULT
                | AERROR
                | DERROR
                | PSL_FAULT
                | INV_SRC
                | PROC_TERM
                | UNDEF_CMD,
            0xFF
        );
        assert_eq!([CMD_COPY, CMD_IRQ, CMD_INCR, CMD_ATOMIC], [0, 1, 4, 5]);
        assert_eq!(CAS_NOT_EQUAL_8, 0x10);
    }
}
