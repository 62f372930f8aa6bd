//! The xclbin (axlf) container: a strict parser that validates everything the host relies on
//! (bounds, counts, cross-references, kernel argument layout) and a builder that writes images
//! for the emulator, the tests and the demo. Every integer is little-endian.

use std::collections::HashSet;

use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, XmlVersion};

use crate::families::xocl::abi;
use crate::types::Guid;

/// `axlf.m_magic`.
pub const MAGIC: &[u8; 8] = b"xclbin2\0";
/// Offset of `axlf_header` in the file.
pub const AXLF_HEADER_OFFSET: usize = 304;
/// Offset of the section header table (`m_sections`), right after the 152-byte `axlf_header`.
pub const SECTION_TABLE_OFFSET: usize = 456;
/// Size of one `axlf_section_header`.
pub const SECTION_HEADER_SIZE: usize = 40;

const HDR_LENGTH: usize = AXLF_HEADER_OFFSET;
const HDR_VERSION_PATCH: usize = AXLF_HEADER_OFFSET + 24;
const HDR_VERSION_MAJOR: usize = AXLF_HEADER_OFFSET + 26;
const HDR_VERSION_MINOR: usize = AXLF_HEADER_OFFSET + 27;
const HDR_MODE: usize = AXLF_HEADER_OFFSET + 28;
const HDR_PLATFORM_VBNV: usize = AXLF_HEADER_OFFSET + 48;
const HDR_UUID: usize = AXLF_HEADER_OFFSET + 112;
const HDR_NUM_SECTIONS: usize = AXLF_HEADER_OFFSET + 144;

/// `m_mode`: flat bitstream.
pub const MODE_FLAT: u16 = 0;
/// `m_mode`: partial reconfiguration.
pub const MODE_PR: u16 = 1;
/// `m_mode`: tandem stage 2.
pub const MODE_TANDEM_STAGE2: u16 = 2;
/// `m_mode`: tandem stage 2 with PR.
pub const MODE_TANDEM_STAGE2_WITH_PR: u16 = 3;
/// `m_mode`: hardware emulation.
pub const MODE_HW_EMU: u16 = 4;
/// `m_mode`: software emulation (the builder's default).
pub const MODE_SW_EMU: u16 = 5;
/// `m_mode`: hardware emulation with PR.
pub const MODE_HW_EMU_PR: u16 = 6;

/// Section kind: FPGA bitstream (in sw_emu, a shared library of the kernels).
pub const SECTION_BITSTREAM: u32 = 0;
/// Section kind: clearing bitstream.
pub const SECTION_CLEARING_BITSTREAM: u32 = 1;
/// Section kind: XML metadata with kernels and their arguments.
pub const SECTION_EMBEDDED_METADATA: u32 = 2;
/// Section kind: firmware.
pub const SECTION_FIRMWARE: u32 = 3;
/// Section kind: debug data.
pub const SECTION_DEBUG_DATA: u32 = 4;
/// Section kind: scheduler firmware.
pub const SECTION_SCHED_FIRMWARE: u32 = 5;
/// Section kind: memory banks.
pub const SECTION_MEM_TOPOLOGY: u32 = 6;
/// Section kind: kernel argument to memory bank connections.
pub const SECTION_CONNECTIVITY: u32 = 7;
/// Section kind: IPs, compute units among them.
pub const SECTION_IP_LAYOUT: u32 = 8;
/// Section kind: debug IP layout.
pub const SECTION_DEBUG_IP_LAYOUT: u32 = 9;
/// Section kind: design checkpoint.
pub const SECTION_DESIGN_CHECK_POINT: u32 = 10;
/// Section kind: clock frequencies.
pub const SECTION_CLOCK_FREQ_TOPOLOGY: u32 = 11;
/// Section kind: MCS flash image.
pub const SECTION_MCS: u32 = 12;
/// Section kind: board management controller image.
pub const SECTION_BMC: u32 = 13;
/// Section kind: build metadata (JSON).
pub const SECTION_BUILD_METADATA: u32 = 14;
/// Section kind: key/value metadata.
pub const SECTION_KEYVALUE_METADATA: u32 = 15;
/// Section kind: user metadata.
pub const SECTION_USER_METADATA: u32 = 16;
/// Section kind: DNA certificate.
pub const SECTION_DNA_CERTIFICATE: u32 = 17;
/// Section kind: PDI.
pub const SECTION_PDI: u32 = 18;
/// Section kind: partial-bitstream PDI.
pub const SECTION_BITSTREAM_PARTIAL_PDI: u32 = 19;
/// Section kind: partition metadata.
pub const SECTION_PARTITION_METADATA: u32 = 20;
/// Section kind: emulation data.
pub const SECTION_EMULATION_DATA: u32 = 21;
/// Section kind: system metadata.
pub const SECTION_SYSTEM_METADATA: u32 = 22;
/// Section kind: soft kernel.
pub const SECTION_SOFT_KERNEL: u32 = 23;
/// Section kind: flash image.
pub const SECTION_ASK_FLASH: u32 = 24;
/// Section kind: AIE metadata.
pub const SECTION_AIE_METADATA: u32 = 25;
/// Section kind: memory group topology.
pub const SECTION_ASK_GROUP_TOPOLOGY: u32 = 26;
/// Section kind: memory group connectivity.
pub const SECTION_ASK_GROUP_CONNECTIVITY: u32 = 27;
/// Section kind: SmartNIC.
pub const SECTION_SMARTNIC: u32 = 28;
/// Section kind: AIE resources.
pub const SECTION_AIE_RESOURCES: u32 = 29;
/// Section kind: overlay.
pub const SECTION_OVERLAY: u32 = 30;
/// Section kind: vendor metadata.
pub const SECTION_VENDER_METADATA: u32 = 31;
/// Section kind: AIE partition.
pub const SECTION_AIE_PARTITION: u32 = 32;
/// Section kind: IP metadata.
pub const SECTION_IP_METADATA: u32 = 33;
/// Section kind: AIE resources, binary.
pub const SECTION_AIE_RESOURCES_BIN: u32 = 34;
/// Section kind: AIE trace metadata.
pub const SECTION_AIE_TRACE_METADATA: u32 = 35;
/// Section kind: device tree overlay.
pub const SECTION_DTBO: u32 = 36;

const SECTION_NAMES: [&str; 37] = [
    "BITSTREAM",
    "CLEARING_BITSTREAM",
    "EMBEDDED_METADATA",
    "FIRMWARE",
    "DEBUG_DATA",
    "SCHED_FIRMWARE",
    "MEM_TOPOLOGY",
    "CONNECTIVITY",
    "IP_LAYOUT",
    "DEBUG_IP_LAYOUT",
    "DESIGN_CHECK_POINT",
    "CLOCK_FREQ_TOPOLOGY",
    "MCS",
    "BMC",
    "BUILD_METADATA",
    "KEYVALUE_METADATA",
    "USER_METADATA",
    "DNA_CERTIFICATE",
    "PDI",
    "BITSTREAM_PARTIAL_PDI",
    "PARTITION_METADATA",
    "EMULATION_DATA",
    "SYSTEM_METADATA",
    "SOFT_KERNEL",
    "ASK_FLASH",
    "AIE_METADATA",
    "ASK_GROUP_TOPOLOGY",
    "ASK_GROUP_CONNECTIVITY",
    "SMARTNIC",
    "AIE_RESOURCES",
    "OVERLAY",
    "VENDER_METADATA",
    "AIE_PARTITION",
    "IP_METADATA",
    "AIE_RESOURCES_BIN",
    "AIE_TRACE_METADATA",
    "DTBO",
];

/// The name of a section kind (`"IP_LAYOUT"`), or `"UNKNOWN"`.
pub fn section_name(kind: u32) -> &'static str {
    SECTION_NAMES
        .get(kind as usize)
        .copied()
        .unwrap_or("UNKNOWN")
}

const MEM_TOPOLOGY_HEADER: usize = 8;
const MEM_DATA_SIZE: usize = 40;
const MEM_TAG_SIZE: usize = 16;
const CONNECTIVITY_HEADER: usize = 4;
const CONNECTION_SIZE: usize = 12;
const IP_LAYOUT_HEADER: usize = 8;
const IP_DATA_SIZE: usize = 80;
const IP_NAME_SIZE: usize = 64;
const SECTION_NAME_SIZE: usize = 16;

/// IP_KERNEL control protocol (`properties[15:8]`): `ap_ctrl_hs`.
pub const IP_CONTROL_AP_CTRL_HS: u8 = 0;
/// IP_KERNEL control protocol: `ap_ctrl_chain`.
pub const IP_CONTROL_AP_CTRL_CHAIN: u8 = 1;
/// IP_KERNEL control protocol: none (free-running).
pub const IP_CONTROL_AP_CTRL_NONE: u8 = 2;
/// IP_KERNEL control protocol: `ap_ctrl_me`.
pub const IP_CONTROL_AP_CTRL_ME: u8 = 3;
/// IP_KERNEL control protocol: accelerator adapter.
pub const IP_CONTROL_ACCEL_ADAPTER: u8 = 4;
/// IP_KERNEL control protocol: fast adapter.
pub const IP_CONTROL_FAST_ADAPTER: u8 = 5;

/// A parsed and validated xclbin image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Xclbin {
    /// `axlf_header.uuid`, the id `CTX` takes; bytes 0..8 big-endian are `high`.
    pub uuid: Guid,
    /// `m_mode` (`MODE_*`).
    pub mode: u16,
    /// `m_length`, equal to the file size.
    pub length: u64,
    /// MEM_TOPOLOGY, in index order.
    pub banks: Vec<MemBank>,
    /// IP_LAYOUT, in index order.
    pub ips: Vec<IpEntry>,
    /// CONNECTIVITY, in file order.
    pub connectivity: Vec<Connection>,
    /// The kernels of EMBEDDED_METADATA, in document order.
    pub kernels: Vec<KernelMeta>,
}

/// One MEM_TOPOLOGY entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemBank {
    /// Position in MEM_TOPOLOGY: the bank index of BO flags and CONNECTIVITY.
    pub index: u32,
    /// `m_type`.
    pub kind: MemKind,
    /// `m_used`: BOs may be allocated here.
    pub used: bool,
    /// `m_base_address`: first device address (flow id for streams).
    pub base: u64,
    /// Size in bytes (`m_size` is in KiB; route id for streams).
    pub size: u64,
    /// `m_tag`, such as `bank0` or `DDR[0]`.
    pub tag: String,
}

/// `mem_data.m_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// `MEM_DDR3` (0).
    Ddr3,
    /// `MEM_DDR4` (1).
    Ddr4,
    /// `MEM_DRAM` (2).
    Dram,
    /// `MEM_STREAMING` (3): not allocatable.
    Streaming,
    /// `MEM_PREALLOCATED_GLOB` (4).
    PreallocatedGlob,
    /// `MEM_ARE` (5).
    Are,
    /// `MEM_HBM` (6).
    Hbm,
    /// `MEM_BRAM` (7).
    Bram,
    /// `MEM_URAM` (8).
    Uram,
    /// `MEM_STREAMING_CONNECTION` (9): not allocatable.
    StreamingConnection,
    /// `MEM_HOST` (10).
    Host,
    /// `MEM_PS_KERNEL` (11).
    PsKernel,
    /// Any other value.
    Other(u8),
}

impl MemKind {
    /// The kind of an `m_type` byte.
    pub fn from_raw(raw: u8) -> Self {
        use MemKind::*;
        match raw {
            0 => Ddr3,
            1 => Ddr4,
            2 => Dram,
            3 => Streaming,
            4 => PreallocatedGlob,
            5 => Are,
            6 => Hbm,
            7 => Bram,
            8 => Uram,
            9 => StreamingConnection,
            10 => Host,
            11 => PsKernel,
            other => Other(other),
        }
    }

    /// The `m_type` byte.
    pub fn raw(self) -> u8 {
        use MemKind::*;
        match self {
            Ddr3 => 0,
            Ddr4 => 1,
            Dram => 2,
            Streaming => 3,
            PreallocatedGlob => 4,
            Are => 5,
            Hbm => 6,
            Bram => 7,
            Uram => 8,
            StreamingConnection => 9,
            Host => 10,
            PsKernel => 11,
            Other(raw) => raw,
        }
    }

    /// A stream, not memory: `CREATE_BO` refuses it, and size/base are route/flow ids.
    pub fn is_streaming(self) -> bool {
        matches!(self, MemKind::Streaming | MemKind::StreamingConnection)
    }
}

/// One IP_LAYOUT entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IpEntry {
    /// Position in IP_LAYOUT (the `m_ip_layout_index` of CONNECTIVITY).
    pub index: u32,
    /// `m_type`.
    pub kind: IpKind,
    /// `m_base_address`: the register space, relative to the user BAR.
    pub base: u64,
    /// `m_name`, `kernel:instance` for compute units (`vadd:vadd_1`).
    pub name: String,
    /// `properties` bit 0.
    pub interrupt_enabled: bool,
    /// `properties[7:1]`.
    pub interrupt_id: u8,
    /// `properties[15:8]`: `IP_CONTROL_*`.
    pub control: u8,
}

impl IpEntry {
    /// The kernel part of the name (before `:`).
    pub fn kernel_name(&self) -> &str {
        self.name
            .split_once(':')
            .map_or(&self.name, |(kernel, _)| kernel)
    }

    /// The instance part of the name (after `:`), or the whole name.
    pub fn instance_name(&self) -> &str {
        self.name
            .split_once(':')
            .map_or(&self.name, |(_, inst)| inst)
    }
}

/// `ip_data.m_type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IpKind {
    /// `IP_MB` (0).
    Mb,
    /// `IP_KERNEL` (1): a compute unit.
    Kernel,
    /// `IP_DNASC` (2).
    Dnasc,
    /// `IP_DDR4_CONTROLLER` (3).
    Ddr4Controller,
    /// `IP_MEM_DDR4` (4).
    MemDdr4,
    /// `IP_MEM_HBM` (5).
    MemHbm,
    /// `IP_MEM_HBM_ECC` (6).
    MemHbmEcc,
    /// `IP_PS_KERNEL` (7).
    PsKernel,
    /// Any other value.
    Other(u32),
}

impl IpKind {
    /// The kind of an `m_type` value.
    pub fn from_raw(raw: u32) -> Self {
        use IpKind::*;
        match raw {
            0 => Mb,
            1 => Kernel,
            2 => Dnasc,
            3 => Ddr4Controller,
            4 => MemDdr4,
            5 => MemHbm,
            6 => MemHbmEcc,
            7 => PsKernel,
            other => Other(other),
        }
    }

    /// The `m_type` value.
    pub fn raw(self) -> u32 {
        use IpKind::*;
        match self {
            Mb => 0,
            Kernel => 1,
            Dnasc => 2,
            Ddr4Controller => 3,
            MemDdr4 => 4,
            MemHbm => 5,
            MemHbmEcc => 6,
            PsKernel => 7,
            Other(raw) => raw,
        }
    }
}

/// One CONNECTIVITY entry: argument `arg_index` of IP `ip_index` uses bank `bank_index`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Connection {
    /// The kernel argument (its metadata `id`).
    pub arg_index: u32,
    /// The IP_LAYOUT index.
    pub ip_index: u32,
    /// The MEM_TOPOLOGY index.
    pub bank_index: u32,
}

/// A kernel of EMBEDDED_METADATA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMeta {
    /// The kernel name, the part before `:` of its IP names.
    pub name: String,
    /// Its arguments, in document order.
    pub args: Vec<KernelArg>,
}

/// A kernel argument of EMBEDDED_METADATA.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    /// `name`.
    pub name: String,
    /// `id`: the argument index CONNECTIVITY uses.
    pub index: u32,
    /// `offset`: byte offset in the CU's register space, at least `0x10`.
    pub offset: u32,
    /// `size` in bytes: 4 (scalar) or 8 (pointer or 64-bit scalar).
    pub size: u32,
    /// From `addressQualifier`.
    pub kind: ArgKind,
}

/// What an argument holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// `addressQualifier` 0: a value.
    Scalar,
    /// `addressQualifier` 1: a pointer into device memory.
    Global,
}

/// Why an image was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum XclbinError {
    /// The file is shorter than the fixed header.
    #[error("truncated: the header needs {needed} bytes, the file has {len}")]
    Truncated {
        /// Bytes the header needs.
        needed: usize,
        /// Bytes in the file.
        len: usize,
    },
    /// `m_magic` is wrong.
    #[error("bad magic: expected \"xclbin2\\0\", found \"{found}\"")]
    BadMagic {
        /// The first 8 bytes, escaped.
        found: String,
    },
    /// `m_length` is not the file size.
    #[error("m_length says {declared} bytes but the file has {len}")]
    LengthMismatch {
        /// `m_length`.
        declared: u64,
        /// Bytes in the file.
        len: usize,
    },
    /// The uuid is all zero (the driver refuses a null uuid).
    #[error("the xclbin uuid (axlf_header.uuid) is all zero")]
    ZeroUuid,
    /// The section header table runs past the end of the file.
    #[error(
        "truncated: the table of {count} section headers ends at byte {end}, past the end of the {len}-byte file"
    )]
    SectionTable {
        /// `m_numSections`.
        count: u32,
        /// End offset of the table.
        end: u64,
        /// Bytes in the file.
        len: usize,
    },
    /// A section runs past the end of the file.
    #[error(
        "section {index} ({}) at offset {offset:#x} size {size} runs past the end of the {len}-byte file",
        section_name(*kind)
    )]
    SectionOutOfBounds {
        /// Position in the section table.
        index: usize,
        /// `m_sectionKind`.
        kind: u32,
        /// `m_sectionOffset`.
        offset: u64,
        /// `m_sectionSize`.
        size: u64,
        /// Bytes in the file.
        len: usize,
    },
    /// A section's offset plus size overflows.
    #[error(
        "section {index} ({}) at offset {offset:#x} size {size} overflows a 64-bit file offset",
        section_name(*kind)
    )]
    SectionOverflow {
        /// Position in the section table.
        index: usize,
        /// `m_sectionKind`.
        kind: u32,
        /// `m_sectionOffset`.
        offset: u64,
        /// `m_sectionSize`.
        size: u64,
    },
    /// A section the host needs is absent.
    #[error("no {name} section")]
    MissingSection {
        /// The section kind's name.
        name: &'static str,
    },
    /// A section the host reads appears twice.
    #[error("two {name} sections (table entries {first} and {second})")]
    DuplicateSection {
        /// The section kind's name.
        name: &'static str,
        /// Table position of the first.
        first: usize,
        /// Table position of the second.
        second: usize,
    },
    /// A section is smaller than its fixed header.
    #[error("section {section}: its {size} bytes cannot hold the {header}-byte header")]
    SectionTooSmall {
        /// The section kind's name.
        section: &'static str,
        /// The section size.
        size: usize,
        /// Bytes of the header before the entries.
        header: usize,
    },
    /// `m_count` is negative.
    #[error("section {section}: m_count is {count}, negative")]
    NegativeCount {
        /// The section kind's name.
        section: &'static str,
        /// `m_count`.
        count: i32,
    },
    /// `m_count` entries do not fit in the section.
    #[error("section {section}: {count} entries of {entry} bytes do not fit in its {size} bytes")]
    EntriesDontFit {
        /// The section kind's name.
        section: &'static str,
        /// `m_count`.
        count: usize,
        /// Bytes per entry.
        entry: usize,
        /// The section size.
        size: usize,
    },
    /// A fixed-size string field is not NUL-terminated or not UTF-8.
    #[error("{field} {problem}")]
    BadString {
        /// Which field, such as `MEM_TOPOLOGY entry 1 tag`.
        field: String,
        /// What is wrong with it.
        problem: String,
    },
    /// A bank's size in bytes, or its end address, does not fit in 64 bits.
    #[error("MEM_TOPOLOGY entry {index}: base {base:#x} and size {size_kib} KiB overflow 64 bits")]
    BankRange {
        /// The bank index.
        index: u32,
        /// `m_base_address`.
        base: u64,
        /// `m_size`.
        size_kib: u64,
    },
    /// More compute units than the driver can index.
    #[error(
        "IP_LAYOUT has {count} kernel IPs (compute units); the driver supports at most {}",
        abi::MAX_CUS
    )]
    TooManyCus {
        /// IP_KERNEL entries.
        count: usize,
    },
    /// Two compute units share a name.
    #[error("IP_LAYOUT names compute unit '{name}' twice")]
    DuplicateCu {
        /// The name.
        name: String,
    },
    /// A compute unit's kernel is not described in EMBEDDED_METADATA.
    #[error("IP_LAYOUT kernel '{ip}' has no kernel '{kernel}' in EMBEDDED_METADATA")]
    KernelWithoutMetadata {
        /// The IP name.
        ip: String,
        /// Its kernel part.
        kernel: String,
    },
    /// A connection names an IP that does not exist.
    #[error("CONNECTIVITY entry {entry} names IP {ip}, but IP_LAYOUT has {ips} entries")]
    ConnectivityIp {
        /// The connection's position.
        entry: usize,
        /// `m_ip_layout_index`.
        ip: i32,
        /// IP_LAYOUT entries.
        ips: usize,
    },
    /// A connection names a bank that does not exist.
    #[error("CONNECTIVITY entry {entry} names memory bank {bank}, but MEM_TOPOLOGY has {banks}")]
    ConnectivityBank {
        /// The connection's position.
        entry: usize,
        /// `mem_data_index`.
        bank: i32,
        /// MEM_TOPOLOGY entries.
        banks: usize,
    },
    /// A connection names an argument the kernel does not have.
    #[error(
        "CONNECTIVITY entry {entry} names argument {arg} of '{ip}', but kernel '{kernel}' has no argument with that id"
    )]
    ConnectivityArg {
        /// The connection's position.
        entry: usize,
        /// `arg_index`.
        arg: i32,
        /// The IP name.
        ip: String,
        /// Its kernel part.
        kernel: String,
    },
    /// EMBEDDED_METADATA is not the XML the host understands.
    #[error("EMBEDDED_METADATA: {0}")]
    Metadata(String),
    /// An argument sits in the control block.
    #[error(
        "kernel '{kernel}' argument '{arg}' has offset {offset:#x}, below the argument area at 0x10"
    )]
    ArgOffset {
        /// The kernel.
        kernel: String,
        /// The argument.
        arg: String,
        /// Its offset.
        offset: u32,
    },
    /// An argument is not word-aligned.
    #[error("kernel '{kernel}' argument '{arg}' has offset {offset:#x}, not a multiple of 4")]
    ArgMisaligned {
        /// The kernel.
        kernel: String,
        /// The argument.
        arg: String,
        /// Its offset.
        offset: u32,
    },
    /// An argument has a size the register map cannot hold.
    #[error(
        "kernel '{kernel}' argument '{arg}' has size {size}; expected 4 (scalar) or 8 (pointer or 64-bit scalar)"
    )]
    ArgSize {
        /// The kernel.
        kernel: String,
        /// The argument.
        arg: String,
        /// Its size.
        size: u32,
    },
}

fn array<const N: usize>(bytes: &[u8], at: usize) -> [u8; N] {
    let mut out = [0; N];
    out.copy_from_slice(&bytes[at..at + N]);
    out
}

fn u16_at(bytes: &[u8], at: usize) -> u16 {
    u16::from_le_bytes(array(bytes, at))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(array(bytes, at))
}

fn i32_at(bytes: &[u8], at: usize) -> i32 {
    i32::from_le_bytes(array(bytes, at))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(array(bytes, at))
}

/// A section whose bounds were checked against the file.
struct Section {
    index: usize,
    kind: u32,
    offset: usize,
    size: usize,
}

/// Parses and validates an xclbin image; never panics, and allocates in proportion to what
/// the file's size can hold.
pub fn parse(bytes: &[u8]) -> Result<Xclbin, XclbinError> {
    let len = bytes.len();
    if len < SECTION_TABLE_OFFSET {
        return Err(XclbinError::Truncated {
            needed: SECTION_TABLE_OFFSET,
            len,
        });
    }
    let magic: [u8; 8] = array(bytes, 0);
    if &magic != MAGIC {
        return Err(XclbinError::BadMagic {
            found: magic.escape_ascii().to_string(),
        });
    }
    let length = u64_at(bytes, HDR_LENGTH);
    if length != len as u64 {
        return Err(XclbinError::LengthMismatch {
            declared: length,
            len,
        });
    }
    let uuid_bytes: [u8; 16] = array(bytes, HDR_UUID);
    if uuid_bytes == [0; 16] {
        return Err(XclbinError::ZeroUuid);
    }
    let uuid = Guid::new(
        u64::from_be_bytes(array(&uuid_bytes, 0)),
        u64::from_be_bytes(array(&uuid_bytes, 8)),
    );

    let sections = section_table(bytes)?;
    let data = |kind| find_section(&sections, kind).map(|s| &bytes[s.offset..s.offset + s.size]);
    let banks = parse_mem_topology(data(SECTION_MEM_TOPOLOGY)?)?;
    let ips = parse_ip_layout(data(SECTION_IP_LAYOUT)?)?;
    let raw_connections = data(SECTION_CONNECTIVITY)?;
    let kernels = parse_metadata(data(SECTION_EMBEDDED_METADATA)?)?;
    check_compute_units(&ips, &kernels)?;
    let connectivity = parse_connectivity(raw_connections, &banks, &ips, &kernels)?;

    Ok(Xclbin {
        uuid,
        mode: u16_at(bytes, HDR_MODE),
        length,
        banks,
        ips,
        connectivity,
        kernels,
    })
}

fn section_table(bytes: &[u8]) -> Result<Vec<Section>, XclbinError> {
    let len = bytes.len();
    let count = u32_at(bytes, HDR_NUM_SECTIONS);
    let end = SECTION_TABLE_OFFSET as u64 + u64::from(count) * SECTION_HEADER_SIZE as u64;
    if end > len as u64 {
        return Err(XclbinError::SectionTable { count, end, len });
    }
    let table = &bytes[SECTION_TABLE_OFFSET..end as usize];
    table
        .as_chunks::<SECTION_HEADER_SIZE>()
        .0
        .iter()
        .enumerate()
        .map(|(index, header)| {
            let kind = u32_at(header, 0);
            let offset = u64_at(header, 24);
            let size = u64_at(header, 32);
            let Some(section_end) = offset.checked_add(size) else {
                return Err(XclbinError::SectionOverflow {
                    index,
                    kind,
                    offset,
                    size,
                });
            };
            if section_end > len as u64 {
                return Err(XclbinError::SectionOutOfBounds {
                    index,
                    kind,
                    offset,
                    size,
                    len,
                });
            }
            Ok(Section {
                index,
                kind,
                offset: offset as usize,
                size: size as usize,
            })
        })
        .collect()
}

fn find_section(sections: &[Section], kind: u32) -> Result<&Section, XclbinError> {
    let name = section_name(kind);
    let mut matching = sections.iter().filter(|s| s.kind == kind);
    let first = matching
        .next()
        .ok_or(XclbinError::MissingSection { name })?;
    if let Some(second) = matching.next() {
        return Err(XclbinError::DuplicateSection {
            name,
            first: first.index,
            second: second.index,
        });
    }
    Ok(first)
}

/// The entries of a `{ i32 m_count; ...; entry[m_count] @header }` section, checked to fit.
fn entries<'a>(
    section: &'static str,
    data: &'a [u8],
    header: usize,
    entry: usize,
) -> Result<std::slice::ChunksExact<'a, u8>, XclbinError> {
    if data.len() < header {
        return Err(XclbinError::SectionTooSmall {
            section,
            size: data.len(),
            header,
        });
    }
    let raw = i32_at(data, 0);
    let count = usize::try_from(raw).map_err(|_| XclbinError::NegativeCount {
        section,
        count: raw,
    })?;
    match count.checked_mul(entry).and_then(|n| n.checked_add(header)) {
        Some(end) if end <= data.len() => Ok(data[header..end].chunks_exact(entry)),
        _ => Err(XclbinError::EntriesDontFit {
            section,
            count,
            entry,
            size: data.len(),
        }),
    }
}

fn fixed_str(field: &[u8], name: impl Fn() -> String) -> Result<String, XclbinError> {
    let Some(nul) = field.iter().position(|&b| b == 0) else {
        return Err(XclbinError::BadString {
            field: name(),
            problem: format!("is not NUL-terminated within its {} bytes", field.len()),
        });
    };
    std::str::from_utf8(&field[..nul])
        .map(str::to_owned)
        .map_err(|_| XclbinError::BadString {
            field: name(),
            problem: "is not valid UTF-8".to_owned(),
        })
}

fn parse_mem_topology(data: &[u8]) -> Result<Vec<MemBank>, XclbinError> {
    let table = entries("MEM_TOPOLOGY", data, MEM_TOPOLOGY_HEADER, MEM_DATA_SIZE)?;
    (0u32..)
        .zip(table)
        .map(|(index, e)| {
            let kind = MemKind::from_raw(e[0]);
            let size_kib = u64_at(e, 8);
            let base = u64_at(e, 16);
            let size = size_kib
                .checked_mul(1024)
                .filter(|&size| kind.is_streaming() || base.checked_add(size).is_some())
                .ok_or(XclbinError::BankRange {
                    index,
                    base,
                    size_kib,
                })?;
            Ok(MemBank {
                index,
                kind,
                used: e[1] != 0,
                base,
                size,
                tag: fixed_str(&e[24..24 + MEM_TAG_SIZE], || {
                    format!("MEM_TOPOLOGY entry {index} tag")
                })?,
            })
        })
        .collect()
}

fn parse_ip_layout(data: &[u8]) -> Result<Vec<IpEntry>, XclbinError> {
    let table = entries("IP_LAYOUT", data, IP_LAYOUT_HEADER, IP_DATA_SIZE)?;
    (0u32..)
        .zip(table)
        .map(|(index, e)| {
            let properties = u32_at(e, 4);
            Ok(IpEntry {
                index,
                kind: IpKind::from_raw(u32_at(e, 0)),
                base: u64_at(e, 8),
                name: fixed_str(&e[16..16 + IP_NAME_SIZE], || {
                    format!("IP_LAYOUT entry {index} name")
                })?,
                interrupt_enabled: properties & 1 != 0,
                interrupt_id: ((properties >> 1) & 0x7F) as u8,
                control: (properties >> 8) as u8,
            })
        })
        .collect()
}

fn check_compute_units(ips: &[IpEntry], kernels: &[KernelMeta]) -> Result<(), XclbinError> {
    let cus: Vec<&IpEntry> = ips.iter().filter(|ip| ip.kind == IpKind::Kernel).collect();
    if cus.len() > abi::MAX_CUS as usize {
        return Err(XclbinError::TooManyCus { count: cus.len() });
    }
    let mut names = HashSet::new();
    for cu in cus {
        if !names.insert(cu.name.as_str()) {
            return Err(XclbinError::DuplicateCu {
                name: cu.name.clone(),
            });
        }
        if !kernels.iter().any(|k| k.name == cu.kernel_name()) {
            return Err(XclbinError::KernelWithoutMetadata {
                ip: cu.name.clone(),
                kernel: cu.kernel_name().to_owned(),
            });
        }
    }
    Ok(())
}

fn parse_connectivity(
    data: &[u8],
    banks: &[MemBank],
    ips: &[IpEntry],
    kernels: &[KernelMeta],
) -> Result<Vec<Connection>, XclbinError> {
    let table = entries("CONNECTIVITY", data, CONNECTIVITY_HEADER, CONNECTION_SIZE)?;
    table
        .enumerate()
        .map(|(entry, e)| {
            let (arg, ip, bank) = (i32_at(e, 0), i32_at(e, 4), i32_at(e, 8));
            let ip_entry = usize::try_from(ip).ok().and_then(|i| ips.get(i)).ok_or(
                XclbinError::ConnectivityIp {
                    entry,
                    ip,
                    ips: ips.len(),
                },
            )?;
            let bank_index = u32::try_from(bank)
                .ok()
                .filter(|&b| (b as usize) < banks.len())
                .ok_or(XclbinError::ConnectivityBank {
                    entry,
                    bank,
                    banks: banks.len(),
                })?;
            let kernel = kernels.iter().find(|k| k.name == ip_entry.kernel_name());
            let arg_index = u32::try_from(arg)
                .ok()
                .filter(|&a| {
                    ip_entry.kind != IpKind::Kernel
                        || kernel.is_some_and(|k| k.args.iter().any(|x| x.index == a))
                })
                .ok_or_else(|| XclbinError::ConnectivityArg {
                    entry,
                    arg,
                    ip: ip_entry.name.clone(),
                    kernel: ip_entry.kernel_name().to_owned(),
                })?;
            Ok(Connection {
                arg_index,
                ip_index: ip_entry.index,
                bank_index,
            })
        })
        .collect()
}

/// Where `<kernel>` elements sit in XRT's metadata.
const KERNEL_PATH: [&str; 4] = ["project", "platform", "device", "core"];

fn meta_err(message: String) -> XclbinError {
    XclbinError::Metadata(message)
}

fn parse_metadata(payload: &[u8]) -> Result<Vec<KernelMeta>, XclbinError> {
    let end = payload.iter().rposition(|&b| b != 0).map_or(0, |i| i + 1);
    let text = std::str::from_utf8(&payload[..end]).map_err(|e| {
        meta_err(format!(
            "the XML is not valid UTF-8 (at byte {})",
            e.valid_up_to()
        ))
    })?;
    let mut reader = Reader::from_str(text);
    let mut stack: Vec<String> = Vec::new();
    let mut kernels: Vec<KernelMeta> = Vec::new();
    let mut root_seen = false;
    loop {
        let event = reader.read_event().map_err(|e| {
            meta_err(format!(
                "malformed XML at byte {}: {e}",
                reader.error_position()
            ))
        })?;
        match event {
            Event::Start(e) => {
                let name = open_element(&e, &stack, &mut root_seen, &mut kernels)?;
                stack.push(name);
            }
            Event::Empty(e) => {
                open_element(&e, &stack, &mut root_seen, &mut kernels)?;
            }
            Event::End(_) => {
                stack.pop();
            }
            Event::Text(t) if stack.is_empty() && !t.trim_ascii().is_empty() => {
                return Err(meta_err("text outside the <project> element".to_owned()));
            }
            Event::CData(_) | Event::GeneralRef(_) if stack.is_empty() => {
                return Err(meta_err("text outside the <project> element".to_owned()));
            }
            Event::DocType(_) => {
                return Err(meta_err("a DOCTYPE is not allowed".to_owned()));
            }
            Event::Eof => break,
            _ => {}
        }
    }
    if let Some(open) = stack.last() {
        return Err(meta_err(format!("element <{open}> is never closed")));
    }
    if !root_seen {
        return Err(meta_err("there is no <project> element".to_owned()));
    }
    Ok(kernels)
}

/// Checks an opening tag and records `<kernel>` / `<arg>`; returns the element name.
fn open_element(
    e: &BytesStart<'_>,
    stack: &[String],
    root_seen: &mut bool,
    kernels: &mut Vec<KernelMeta>,
) -> Result<String, XclbinError> {
    let name = e.name().as_ref().to_owned();
    if stack.is_empty() {
        if *root_seen {
            return Err(meta_err(format!(
                "a second root element <{name}> follows <project>"
            )));
        }
        if name != "project" {
            return Err(meta_err(format!(
                "the root element is <{name}>, expected <project>"
            )));
        }
        *root_seen = true;
    }
    let attrs = attributes(e, &name)?;
    let attr = |key: &str| {
        attrs
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    };
    if name == "kernel" && *stack == KERNEL_PATH {
        let kernel = attr("name")
            .filter(|n| !n.is_empty())
            .ok_or_else(|| meta_err("a <kernel> has no name".to_owned()))?;
        if kernels.iter().any(|k| k.name == kernel) {
            return Err(meta_err(format!("kernel '{kernel}' is described twice")));
        }
        kernels.push(KernelMeta {
            name: kernel.to_owned(),
            args: Vec::new(),
        });
    } else if name == "arg"
        && stack.len() == KERNEL_PATH.len() + 1
        && stack[..KERNEL_PATH.len()] == KERNEL_PATH
        && stack[KERNEL_PATH.len()] == "kernel"
    {
        let Some(kernel) = kernels.last_mut() else {
            return Err(meta_err("an <arg> outside a kernel".to_owned()));
        };
        let arg = parse_arg(&kernel.name, attr)?;
        if kernel.args.iter().any(|a| a.index == arg.index) {
            return Err(meta_err(format!(
                "kernel '{}' has two arguments with id {}",
                kernel.name, arg.index
            )));
        }
        kernel.args.push(arg);
    }
    Ok(name)
}

fn attributes(e: &BytesStart<'_>, element: &str) -> Result<Vec<(String, String)>, XclbinError> {
    e.attributes()
        .map(|a| {
            let a = a.map_err(|err| meta_err(format!("element <{element}>: {err}")))?;
            let value = a
                .normalized_value(XmlVersion::Implicit1_0)
                .map_err(|err| meta_err(format!("element <{element}>: {err}")))?;
            Ok((a.key.as_ref().to_owned(), value.into_owned()))
        })
        .collect()
}

fn parse_arg<'a>(
    kernel: &str,
    attr: impl Fn(&str) -> Option<&'a str>,
) -> Result<KernelArg, XclbinError> {
    let name = attr("name")
        .filter(|n| !n.is_empty())
        .ok_or_else(|| meta_err(format!("kernel '{kernel}' has an <arg> without a name")))?;
    let number = |key: &str| {
        let value = attr(key).ok_or_else(|| {
            meta_err(format!(
                "kernel '{kernel}' argument '{name}' has no {key} attribute"
            ))
        })?;
        parse_number(value).ok_or_else(|| {
            meta_err(format!(
                "kernel '{kernel}' argument '{name}': {key}=\"{value}\" is not a number"
            ))
        })
    };
    let index = number("id")?;
    let kind = match number("addressQualifier")? {
        0 => ArgKind::Scalar,
        1 => ArgKind::Global,
        other => {
            return Err(meta_err(format!(
                "kernel '{kernel}' argument '{name}' has addressQualifier {other}; \
                 only 0 (scalar) and 1 (global) are supported"
            )));
        }
    };
    let offset = number("offset")?;
    let size = number("size")?;
    let (kernel, arg) = (kernel.to_owned(), name.to_owned());
    if u64::from(offset) < abi::ARGS_BASE {
        return Err(XclbinError::ArgOffset {
            kernel,
            arg,
            offset,
        });
    }
    if offset % 4 != 0 {
        return Err(XclbinError::ArgMisaligned {
            kernel,
            arg,
            offset,
        });
    }
    if size != 4 && size != 8 {
        return Err(XclbinError::ArgSize { kernel, arg, size });
    }
    Ok(KernelArg {
        name: arg,
        index,
        offset,
        size,
        kind,
    })
}

/// A decimal or `0x` hexadecimal u32.
fn parse_number(text: &str) -> Option<u32> {
    let (digits, radix) = match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => (hex, 16),
        None => (text, 10),
    };
    if digits.is_empty() || !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u32::from_str_radix(digits, radix).ok()
}

impl Xclbin {
    /// The IP_KERNEL entries in CU-index order: by interrupt id, then base address.
    pub fn compute_units(&self) -> Vec<&IpEntry> {
        let mut cus: Vec<&IpEntry> = self
            .ips
            .iter()
            .filter(|ip| ip.kind == IpKind::Kernel)
            .collect();
        cus.sort_by_key(|ip| (ip.interrupt_id, ip.base));
        cus
    }

    /// The metadata of kernel `name`.
    pub fn kernel(&self, name: &str) -> Option<&KernelMeta> {
        self.kernels.iter().find(|k| k.name == name)
    }

    /// The CU indices whose IP is an instance of `kernel`, in increasing order.
    pub fn cus_of(&self, kernel: &str) -> Vec<u32> {
        (0u32..)
            .zip(self.compute_units())
            .filter(|(_, ip)| ip.kernel_name() == kernel)
            .map(|(index, _)| index)
            .collect()
    }

    /// The bank CONNECTIVITY assigns to argument `arg_index` of CU `cu_index` (the first, if
    /// several).
    pub fn arg_bank(&self, cu_index: u32, arg_index: u32) -> Option<u32> {
        let cu = *self.compute_units().get(cu_index as usize)?;
        self.connectivity
            .iter()
            .find(|c| c.ip_index == cu.index && c.arg_index == arg_index)
            .map(|c| c.bank_index)
    }

    /// The MEM_TOPOLOGY entry at `index`.
    pub fn bank(&self, index: u32) -> Option<&MemBank> {
        self.banks.get(index as usize)
    }
}

/// Writes xclbin images: header, MEM_TOPOLOGY, IP_LAYOUT, CONNECTIVITY, EMBEDDED_METADATA and
/// any extra raw sections.
#[derive(Clone, Debug)]
pub struct XclbinBuilder {
    uuid: Guid,
    mode: u16,
    banks: Vec<MemBank>,
    kernels: Vec<KernelMeta>,
    ips: Vec<IpEntry>,
    connections: Vec<Connection>,
    extra: Vec<(u32, String, Vec<u8>)>,
}

/// Base address of the first bank of [`XclbinBuilder::vadd`]: non-zero, so that device address
/// 0 is never a valid buffer.
pub const VADD_BANK_BASE: u64 = 0x40_0000_0000;
/// Size of each bank of [`XclbinBuilder::vadd`].
pub const VADD_BANK_SIZE: u64 = 1 << 30;
/// Base address of CU `vadd_1` in [`XclbinBuilder::vadd`]; CU `i` sits `i * VADD_CU_STRIDE` above.
pub const VADD_CU_BASE: u64 = 0x180_0000;
/// Distance between the CUs of [`XclbinBuilder::vadd`].
pub const VADD_CU_STRIDE: u64 = 0x1_0000;

const PLATFORM_VBNV: &[u8] = b"xilinx_accelhost_emu_1_0";

impl XclbinBuilder {
    /// An empty image with this uuid, in `MODE_SW_EMU`.
    pub fn new(uuid: Guid) -> Self {
        XclbinBuilder {
            uuid,
            mode: MODE_SW_EMU,
            banks: Vec::new(),
            kernels: Vec::new(),
            ips: Vec::new(),
            connections: Vec::new(),
            extra: Vec::new(),
        }
    }

    /// Sets `m_mode`.
    pub fn mode(mut self, mode: u16) -> Self {
        self.mode = mode;
        self
    }

    /// Adds a used bank of `size` bytes at device address `base`.
    ///
    /// # Panics
    /// If `size` is not a multiple of 1 KiB or `tag` does not fit its 16-byte field.
    pub fn bank(mut self, kind: MemKind, tag: &str, base: u64, size: u64) -> Self {
        assert!(
            size.is_multiple_of(1024),
            "bank size {size} is not a whole number of KiB"
        );
        assert!(
            tag.len() < MEM_TAG_SIZE,
            "bank tag '{tag}' is longer than 15 bytes"
        );
        self.banks.push(MemBank {
            index: self.banks.len() as u32,
            kind,
            used: true,
            base,
            size,
            tag: tag.to_owned(),
        });
        self
    }

    /// Adds a kernel to EMBEDDED_METADATA.
    pub fn kernel(mut self, meta: KernelMeta) -> Self {
        self.kernels.push(meta);
        self
    }

    /// Adds an IP_KERNEL `kernel:instance` at `base`, with interrupts on, interrupt id = its
    /// position, and `ap_ctrl_hs`.
    ///
    /// # Panics
    /// Past 128 compute units, or if the name does not fit its 64-byte field.
    pub fn compute_unit(mut self, kernel: &str, instance: &str, base: u64) -> Self {
        let name = format!("{kernel}:{instance}");
        assert!(
            name.len() < IP_NAME_SIZE,
            "IP name '{name}' is longer than 63 bytes"
        );
        let position = self.ips.len();
        assert!(
            position < abi::MAX_CUS as usize,
            "more than 128 compute units"
        );
        self.ips.push(IpEntry {
            index: position as u32,
            kind: IpKind::Kernel,
            base,
            name,
            interrupt_enabled: true,
            interrupt_id: position as u8,
            control: IP_CONTROL_AP_CTRL_HS,
        });
        self
    }

    /// Connects argument `arg_index` of the CU named `instance` to bank `bank_index` (written
    /// as given, so tests can make bad images).
    ///
    /// # Panics
    /// If no compute unit named `instance` was added before.
    pub fn connect(mut self, instance: &str, arg_index: u32, bank_index: u32) -> Self {
        let Some(ip) = self.ips.iter().find(|ip| ip.instance_name() == instance) else {
            panic!("connect: no compute unit named '{instance}' was added before");
        };
        self.connections.push(Connection {
            arg_index,
            ip_index: ip.index,
            bank_index,
        });
        self
    }

    /// Adds a raw section. One of the four kinds the builder writes itself replaces the
    /// builder's own.
    ///
    /// # Panics
    /// If `name` does not fit its 16-byte field.
    pub fn section(mut self, kind: u32, name: &str, payload: Vec<u8>) -> Self {
        assert!(
            name.len() < SECTION_NAME_SIZE,
            "section name '{name}' is longer than 15 bytes"
        );
        self.extra.push((kind, name.to_owned(), payload));
        self
    }

    /// The image.
    pub fn build(&self) -> Vec<u8> {
        let standard = [
            (
                SECTION_MEM_TOPOLOGY,
                "mem_topology",
                mem_topology_bytes(&self.banks),
            ),
            (SECTION_IP_LAYOUT, "ip_layout", ip_layout_bytes(&self.ips)),
            (
                SECTION_CONNECTIVITY,
                "connectivity",
                connectivity_bytes(&self.connections),
            ),
            (
                SECTION_EMBEDDED_METADATA,
                "metadata",
                metadata_xml(&self.kernels, self.mode).into_bytes(),
            ),
        ];
        let sections: Vec<(u32, &str, &[u8])> = standard
            .iter()
            .filter(|(kind, _, _)| !self.extra.iter().any(|(k, _, _)| k == kind))
            .map(|(kind, name, payload)| (*kind, *name, payload.as_slice()))
            .chain(
                self.extra
                    .iter()
                    .map(|(kind, name, payload)| (*kind, name.as_str(), payload.as_slice())),
            )
            .collect();

        let mut out = vec![0u8; SECTION_TABLE_OFFSET + sections.len() * SECTION_HEADER_SIZE];
        for (i, (kind, name, payload)) in sections.iter().enumerate() {
            out.resize(out.len().next_multiple_of(8), 0);
            let offset = out.len() as u64;
            let header = SECTION_TABLE_OFFSET + i * SECTION_HEADER_SIZE;
            put(&mut out, header, &kind.to_le_bytes());
            put(&mut out, header + 4, name.as_bytes());
            put(&mut out, header + 24, &offset.to_le_bytes());
            put(&mut out, header + 32, &(payload.len() as u64).to_le_bytes());
            out.extend_from_slice(payload);
        }

        put(&mut out, 0, MAGIC);
        put(&mut out, 8, &(-1i32).to_le_bytes());
        out[12..AXLF_HEADER_OFFSET - 8].fill(0xFF);
        let length = out.len() as u64;
        put(&mut out, HDR_LENGTH, &length.to_le_bytes());
        put(&mut out, HDR_VERSION_PATCH, &0u16.to_le_bytes());
        out[HDR_VERSION_MAJOR] = 2;
        out[HDR_VERSION_MINOR] = 15;
        put(&mut out, HDR_MODE, &self.mode.to_le_bytes());
        put(&mut out, HDR_PLATFORM_VBNV, PLATFORM_VBNV);
        put(&mut out, HDR_UUID, &self.uuid.high.to_be_bytes());
        put(&mut out, HDR_UUID + 8, &self.uuid.low.to_be_bytes());
        put(
            &mut out,
            HDR_NUM_SECTIONS,
            &(sections.len() as u32).to_le_bytes(),
        );
        out
    }

    /// The canonical vadd image: `cus` compute units `vadd_1..` at [`VADD_CU_BASE`] +
    /// i * [`VADD_CU_STRIDE`], `banks` DDR4 banks `bank0..` of 1 GiB each, consecutive from
    /// [`VADD_BANK_BASE`], and the three pointer arguments of CU i connected to bank i % banks.
    ///
    /// # Panics
    /// If `banks` is 0 or `cus` is over 128.
    pub fn vadd(uuid: Guid, cus: u32, banks: u32) -> Self {
        assert!(banks > 0, "the vadd image needs at least one bank");
        let arg = |name: &str, index, offset: u64, size, kind| KernelArg {
            name: name.to_owned(),
            index,
            offset: offset as u32,
            size,
            kind,
        };
        let mut builder = XclbinBuilder::new(uuid).kernel(KernelMeta {
            name: abi::vadd::KERNEL.to_owned(),
            args: vec![
                arg(
                    "in1",
                    abi::vadd::ARG_IN1,
                    abi::vadd::IN1,
                    8,
                    ArgKind::Global,
                ),
                arg(
                    "in2",
                    abi::vadd::ARG_IN2,
                    abi::vadd::IN2,
                    8,
                    ArgKind::Global,
                ),
                arg(
                    "out_r",
                    abi::vadd::ARG_OUT,
                    abi::vadd::OUT,
                    8,
                    ArgKind::Global,
                ),
                arg(
                    "size",
                    abi::vadd::ARG_SIZE,
                    abi::vadd::SIZE,
                    4,
                    ArgKind::Scalar,
                ),
            ],
        });
        for i in 0..banks {
            let base = VADD_BANK_BASE + u64::from(i) * VADD_BANK_SIZE;
            builder = builder.bank(MemKind::Ddr4, &format!("bank{i}"), base, VADD_BANK_SIZE);
        }
        for i in 0..cus {
            let instance = format!("vadd_{}", i + 1);
            let base = VADD_CU_BASE + u64::from(i) * VADD_CU_STRIDE;
            builder = builder.compute_unit(abi::vadd::KERNEL, &instance, base);
            for arg in [abi::vadd::ARG_IN1, abi::vadd::ARG_IN2, abi::vadd::ARG_OUT] {
                builder = builder.connect(&instance, arg, i % banks);
            }
        }
        builder
    }
}

fn put(out: &mut [u8], at: usize, bytes: &[u8]) {
    out[at..at + bytes.len()].copy_from_slice(bytes);
}

fn mem_topology_bytes(banks: &[MemBank]) -> Vec<u8> {
    let mut out = vec![0; MEM_TOPOLOGY_HEADER + banks.len() * MEM_DATA_SIZE];
    put(&mut out, 0, &(banks.len() as i32).to_le_bytes());
    for (i, bank) in banks.iter().enumerate() {
        let at = MEM_TOPOLOGY_HEADER + i * MEM_DATA_SIZE;
        out[at] = bank.kind.raw();
        out[at + 1] = u8::from(bank.used);
        put(&mut out, at + 8, &(bank.size / 1024).to_le_bytes());
        put(&mut out, at + 16, &bank.base.to_le_bytes());
        put(&mut out, at + 24, bank.tag.as_bytes());
    }
    out
}

fn ip_layout_bytes(ips: &[IpEntry]) -> Vec<u8> {
    let mut out = vec![0; IP_LAYOUT_HEADER + ips.len() * IP_DATA_SIZE];
    put(&mut out, 0, &(ips.len() as i32).to_le_bytes());
    for (i, ip) in ips.iter().enumerate() {
        let at = IP_LAYOUT_HEADER + i * IP_DATA_SIZE;
        let properties = u32::from(ip.interrupt_enabled)
            | u32::from(ip.interrupt_id & 0x7F) << 1
            | u32::from(ip.control) << 8;
        put(&mut out, at, &ip.kind.raw().to_le_bytes());
        put(&mut out, at + 4, &properties.to_le_bytes());
        put(&mut out, at + 8, &ip.base.to_le_bytes());
        put(&mut out, at + 16, ip.name.as_bytes());
    }
    out
}

fn connectivity_bytes(connections: &[Connection]) -> Vec<u8> {
    let mut out = Vec::with_capacity(CONNECTIVITY_HEADER + connections.len() * CONNECTION_SIZE);
    out.extend_from_slice(&(connections.len() as i32).to_le_bytes());
    for c in connections {
        out.extend_from_slice(&c.arg_index.to_le_bytes());
        out.extend_from_slice(&c.ip_index.to_le_bytes());
        out.extend_from_slice(&c.bank_index.to_le_bytes());
    }
    out
}

fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// EMBEDDED_METADATA in XRT's shape, with the attributes XRT's userspace reads.
fn metadata_xml(kernels: &[KernelMeta], mode: u16) -> String {
    let target = match mode {
        MODE_SW_EMU => "sw_emu",
        MODE_HW_EMU | MODE_HW_EMU_PR => "hw_emu",
        _ => "hw",
    };
    let project = kernels.first().map_or("accelhost", |k| k.name.as_str());
    let mut xml = format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<project name=\"{}\">\n  <platform>\n    \
         <device name=\"fpga0\">\n      <core name=\"OCL_REGION_0\" target=\"{target}\">\n",
        xml_escape(project)
    );
    for kernel in kernels {
        xml.push_str(&format!(
            "        <kernel name=\"{}\" language=\"c\" hwControlProtocol=\"ap_ctrl_hs\">\n",
            xml_escape(&kernel.name)
        ));
        for arg in &kernel.args {
            let (qualifier, port, ty) = match (arg.kind, arg.size) {
                (ArgKind::Global, _) => (1, "M_AXI_GMEM", "void*"),
                (ArgKind::Scalar, 8) => (0, "S_AXI_CONTROL", "unsigned long"),
                (ArgKind::Scalar, _) => (0, "S_AXI_CONTROL", "unsigned int"),
            };
            xml.push_str(&format!(
                "          <arg name=\"{}\" addressQualifier=\"{qualifier}\" id=\"{}\" \
                 port=\"{port}\" size=\"{:#x}\" offset=\"{:#x}\" hostOffset=\"0x0\" \
                 hostSize=\"{:#x}\" type=\"{ty}\"/>\n",
                xml_escape(&arg.name),
                arg.index,
                arg.size,
                arg.offset,
                arg.size
            ));
        }
        xml.push_str("        </kernel>\n");
    }
    xml.push_str("      </core>\n    </device>\n  </platform>\n</project>\n");
    xml
}

#[cfg(test)]
mod tests {
    use super::*;

    const UUID: Guid = Guid::new(0x0123_4567_89AB_CDEF, 0xFEDC_BA98_7654_3210);

    fn vadd_image() -> Vec<u8> {
        XclbinBuilder::vadd(UUID, 3, 2).build()
    }

    fn err(bytes: &[u8]) -> String {
        parse(bytes).unwrap_err().to_string()
    }

    /// The table position and file offset of the first section of `kind`.
    fn section_at(bytes: &[u8], kind: u32) -> (usize, usize) {
        let count = u32_at(bytes, HDR_NUM_SECTIONS) as usize;
        (0..count)
            .map(|i| (i, SECTION_TABLE_OFFSET + i * SECTION_HEADER_SIZE))
            .find(|&(_, h)| u32_at(bytes, h) == kind)
            .map(|(i, h)| (i, u64_at(bytes, h + 24) as usize))
            .unwrap()
    }

    fn with_length(mut bytes: Vec<u8>) -> Vec<u8> {
        let len = bytes.len() as u64;
        put(&mut bytes, HDR_LENGTH, &len.to_le_bytes());
        bytes
    }

    fn vadd_meta() -> KernelMeta {
        parse(&vadd_image()).unwrap().kernels.remove(0)
    }

    #[test]
    fn vadd_image_round_trips() {
        let bytes = vadd_image();
        let x = parse(&bytes).unwrap();
        assert_eq!(x.uuid, UUID);
        assert_eq!(x.uuid.to_string(), "01234567-89AB-CDEF-FEDC-BA9876543210");
        assert_eq!(bytes[HDR_UUID..HDR_UUID + 4], [0x01, 0x23, 0x45, 0x67]);
        assert_eq!(x.mode, MODE_SW_EMU);
        assert_eq!(x.length, bytes.len() as u64);

        assert_eq!(
            x.banks,
            [
                MemBank {
                    index: 0,
                    kind: MemKind::Ddr4,
                    used: true,
                    base: 0x40_0000_0000,
                    size: 1 << 30,
                    tag: "bank0".into(),
                },
                MemBank {
                    index: 1,
                    kind: MemKind::Ddr4,
                    used: true,
                    base: 0x40_4000_0000,
                    size: 1 << 30,
                    tag: "bank1".into(),
                },
            ]
        );
        assert_eq!(x.bank(1).map(|b| b.tag.as_str()), Some("bank1"));
        assert_eq!(x.bank(2), None);

        let cus = x.compute_units();
        let names: Vec<_> = cus.iter().map(|ip| ip.name.as_str()).collect();
        assert_eq!(names, ["vadd:vadd_1", "vadd:vadd_2", "vadd:vadd_3"]);
        assert_eq!(
            *cus[1],
            IpEntry {
                index: 1,
                kind: IpKind::Kernel,
                base: 0x181_0000,
                name: "vadd:vadd_2".into(),
                interrupt_enabled: true,
                interrupt_id: 1,
                control: IP_CONTROL_AP_CTRL_HS,
            }
        );
        assert_eq!(
            (cus[2].kernel_name(), cus[2].instance_name()),
            ("vadd", "vadd_3")
        );
        assert_eq!(x.cus_of("vadd"), [0, 1, 2]);
        assert!(x.cus_of("foo").is_empty());

        let kernel = x.kernel("vadd").unwrap();
        let args: Vec<_> = kernel
            .args
            .iter()
            .map(|a| (a.name.as_str(), a.index, a.offset, a.size, a.kind))
            .collect();
        assert_eq!(
            args,
            [
                ("in1", 0, 0x10, 8, ArgKind::Global),
                ("in2", 1, 0x1C, 8, ArgKind::Global),
                ("out_r", 2, 0x28, 8, ArgKind::Global),
                ("size", 3, 0x34, 4, ArgKind::Scalar),
            ]
        );
        assert!(x.kernel("foo").is_none());

        assert_eq!(x.connectivity.len(), 9);
        assert_eq!(
            x.connectivity[3],
            Connection {
                arg_index: 0,
                ip_index: 1,
                bank_index: 1
            }
        );
        assert_eq!(x.arg_bank(0, 0), Some(0));
        assert_eq!(x.arg_bank(1, 2), Some(1));
        assert_eq!(x.arg_bank(2, 1), Some(0));
        assert_eq!(x.arg_bank(0, 3), None);
        assert_eq!(x.arg_bank(3, 0), None);

        // Rebuilding from the parsed values gives the same bytes.
        let mut again = XclbinBuilder::new(x.uuid).mode(x.mode);
        for bank in &x.banks {
            again = again.bank(bank.kind, &bank.tag, bank.base, bank.size);
        }
        again = again.kernel(kernel.clone());
        for cu in &cus {
            again = again.compute_unit(cu.kernel_name(), cu.instance_name(), cu.base);
        }
        for c in &x.connectivity {
            let instance = x.ips[c.ip_index as usize].instance_name();
            again = again.connect(instance, c.arg_index, c.bank_index);
        }
        assert_eq!(again.build(), bytes);
    }

    #[test]
    fn metadata_xml_has_xrt_shape() {
        let bytes = vadd_image();
        let (_, at) = section_at(&bytes, SECTION_EMBEDDED_METADATA);
        let xml = String::from_utf8_lossy(&bytes[at..]);
        assert!(xml.contains("<core name=\"OCL_REGION_0\" target=\"sw_emu\">"));
        assert!(xml.contains(
            "<arg name=\"in1\" addressQualifier=\"1\" id=\"0\" port=\"M_AXI_GMEM\" \
             size=\"0x8\" offset=\"0x10\" hostOffset=\"0x0\" hostSize=\"0x8\" type=\"void*\"/>"
        ));
    }

    #[test]
    fn compute_units_sort_by_interrupt_id_then_base() {
        let ip = |index, interrupt_id, base, name: &str| IpEntry {
            index,
            kind: IpKind::Kernel,
            base,
            name: name.into(),
            interrupt_enabled: true,
            interrupt_id,
            control: 0,
        };
        let mut x = parse(&vadd_image()).unwrap();
        x.ips = vec![
            ip(0, 2, 0x1000, "k:c"),
            IpEntry {
                kind: IpKind::Mb,
                ..ip(1, 0, 0, "mb")
            },
            ip(2, 0, 0x3000, "k:b"),
            ip(3, 0, 0x2000, "k:a"),
        ];
        let order: Vec<_> = x.compute_units().iter().map(|ip| ip.index).collect();
        assert_eq!(order, [3, 2, 0]);
        assert_eq!(x.cus_of("k"), [0, 1, 2]);
    }

    #[test]
    fn truncated_images_are_refused() {
        let bytes = vadd_image();
        assert_eq!(
            err(&bytes[..100]),
            "truncated: the header needs 456 bytes, the file has 100"
        );
        let len = bytes.len();
        for cut in [SECTION_TABLE_OFFSET + 20, len / 2, len - 1] {
            assert_eq!(
                err(&bytes[..cut]),
                format!("m_length says {len} bytes but the file has {cut}")
            );
        }
        // With m_length patched to the cut, the table and the sections are checked.
        let in_table = with_length(bytes[..SECTION_TABLE_OFFSET + 60].to_vec());
        assert_eq!(
            err(&in_table),
            "truncated: the table of 4 section headers ends at byte 616, past the end of the \
             516-byte file"
        );
        let (_, metadata) = section_at(&bytes, SECTION_EMBEDDED_METADATA);
        let in_section = with_length(bytes[..metadata + 10].to_vec());
        let message = err(&in_section);
        assert!(
            message.starts_with(&format!(
                "section 3 (EMBEDDED_METADATA) at offset {metadata:#x} size "
            )) && message.ends_with(&format!(
                "runs past the end of the {}-byte file",
                metadata + 10
            )),
            "{message}"
        );
    }

    #[test]
    fn bad_magic_is_refused() {
        let mut bytes = vadd_image();
        bytes[..8].copy_from_slice(b"xclbin1\0");
        assert_eq!(
            err(&bytes),
            "bad magic: expected \"xclbin2\\0\", found \"xclbin1\\x00\""
        );
    }

    #[test]
    fn wrong_m_length_is_refused() {
        let mut bytes = vadd_image();
        let len = bytes.len();
        bytes.extend_from_slice(&[0; 8]);
        assert_eq!(
            err(&bytes),
            format!("m_length says {len} bytes but the file has {}", len + 8)
        );
    }

    #[test]
    fn sections_out_of_bounds_are_refused() {
        let bytes = vadd_image();
        let len = bytes.len();
        let (index, _) = section_at(&bytes, SECTION_IP_LAYOUT);
        let header = SECTION_TABLE_OFFSET + index * SECTION_HEADER_SIZE;

        let mut past = bytes.clone();
        put(&mut past, header + 24, &(len as u64 - 8).to_le_bytes());
        let message = err(&past);
        assert!(
            message.starts_with(&format!(
                "section 1 (IP_LAYOUT) at offset {:#x} size ",
                len - 8
            )) && message.ends_with(&format!("runs past the end of the {len}-byte file")),
            "{message}"
        );

        let mut overflow = bytes.clone();
        put(&mut overflow, header + 24, &(u64::MAX - 2).to_le_bytes());
        put(&mut overflow, header + 32, &16u64.to_le_bytes());
        assert_eq!(
            err(&overflow),
            "section 1 (IP_LAYOUT) at offset 0xfffffffffffffffd size 16 overflows a 64-bit file \
             offset"
        );

        let mut table = bytes.clone();
        put(&mut table, HDR_NUM_SECTIONS, &u32::MAX.to_le_bytes());
        assert!(err(&table).contains("the table of 4294967295 section headers"));
    }

    #[test]
    fn missing_and_duplicate_sections_are_refused() {
        let bytes = vadd_image();
        for (kind, name) in [
            (SECTION_MEM_TOPOLOGY, "MEM_TOPOLOGY"),
            (SECTION_IP_LAYOUT, "IP_LAYOUT"),
            (SECTION_CONNECTIVITY, "CONNECTIVITY"),
            (SECTION_EMBEDDED_METADATA, "EMBEDDED_METADATA"),
        ] {
            let (index, _) = section_at(&bytes, kind);
            let mut missing = bytes.clone();
            let header = SECTION_TABLE_OFFSET + index * SECTION_HEADER_SIZE;
            put(&mut missing, header, &SECTION_USER_METADATA.to_le_bytes());
            assert_eq!(err(&missing), format!("no {name} section"));
        }
        let dup = XclbinBuilder::vadd(UUID, 1, 1)
            .section(SECTION_BITSTREAM, "bitstream", vec![1, 2, 3])
            .build();
        let mut dup = dup;
        let header = SECTION_TABLE_OFFSET + 4 * SECTION_HEADER_SIZE;
        put(&mut dup, header, &SECTION_IP_LAYOUT.to_le_bytes());
        assert_eq!(err(&dup), "two IP_LAYOUT sections (table entries 1 and 4)");
    }

    #[test]
    fn bad_counts_are_refused() {
        let bytes = vadd_image();
        let (_, mem) = section_at(&bytes, SECTION_MEM_TOPOLOGY);
        let mut negative = bytes.clone();
        put(&mut negative, mem, &(-1i32).to_le_bytes());
        assert_eq!(
            err(&negative),
            "section MEM_TOPOLOGY: m_count is -1, negative"
        );

        let mut oversized = bytes.clone();
        put(&mut oversized, mem, &3i32.to_le_bytes());
        assert_eq!(
            err(&oversized),
            "section MEM_TOPOLOGY: 3 entries of 40 bytes do not fit in its 88 bytes"
        );
        put(&mut oversized, mem, &i32::MAX.to_le_bytes());
        assert!(err(&oversized).contains("2147483647 entries of 40 bytes do not fit"));

        let (_, conn) = section_at(&bytes, SECTION_CONNECTIVITY);
        let mut conns = bytes.clone();
        put(&mut conns, conn, &10i32.to_le_bytes());
        assert_eq!(
            err(&conns),
            "section CONNECTIVITY: 10 entries of 12 bytes do not fit in its 112 bytes"
        );

        let tiny = XclbinBuilder::vadd(UUID, 1, 1)
            .section(SECTION_IP_LAYOUT, "ip_layout", vec![0; 4])
            .build();
        assert_eq!(
            err(&tiny),
            "section IP_LAYOUT: its 4 bytes cannot hold the 8-byte header"
        );
    }

    #[test]
    fn too_many_compute_units_are_refused() {
        let ips: Vec<IpEntry> = (0..129)
            .map(|i| IpEntry {
                index: i,
                kind: IpKind::Kernel,
                base: u64::from(i) << 16,
                name: format!("vadd:vadd_{i}"),
                interrupt_enabled: true,
                interrupt_id: (i % 128) as u8,
                control: 0,
            })
            .collect();
        let bytes = XclbinBuilder::vadd(UUID, 0, 1)
            .section(SECTION_IP_LAYOUT, "ip_layout", ip_layout_bytes(&ips))
            .build();
        assert_eq!(
            err(&bytes),
            "IP_LAYOUT has 129 kernel IPs (compute units); the driver supports at most 128"
        );
    }

    #[test]
    fn bad_connectivity_is_refused() {
        let bank = XclbinBuilder::vadd(UUID, 3, 2)
            .connect("vadd_1", 0, 9)
            .build();
        assert_eq!(
            err(&bank),
            "CONNECTIVITY entry 9 names memory bank 9, but MEM_TOPOLOGY has 2"
        );

        let arg = XclbinBuilder::vadd(UUID, 1, 1)
            .connect("vadd_1", 7, 0)
            .build();
        assert_eq!(
            err(&arg),
            "CONNECTIVITY entry 3 names argument 7 of 'vadd:vadd_1', but kernel 'vadd' has no \
             argument with that id"
        );

        let raw = |arg: i32, ip: i32, bank: i32| {
            let mut payload = 1i32.to_le_bytes().to_vec();
            for v in [arg, ip, bank] {
                payload.extend_from_slice(&v.to_le_bytes());
            }
            XclbinBuilder::vadd(UUID, 1, 1)
                .section(SECTION_CONNECTIVITY, "connectivity", payload)
                .build()
        };
        assert_eq!(
            err(&raw(0, 7, 0)),
            "CONNECTIVITY entry 0 names IP 7, but IP_LAYOUT has 1 entries"
        );
        assert_eq!(
            err(&raw(0, -1, 0)),
            "CONNECTIVITY entry 0 names IP -1, but IP_LAYOUT has 1 entries"
        );
        assert_eq!(
            err(&raw(0, 0, -2)),
            "CONNECTIVITY entry 0 names memory bank -2, but MEM_TOPOLOGY has 1"
        );
        assert!(err(&raw(-1, 0, 0)).contains("names argument -1 of 'vadd:vadd_1'"));
        assert!(parse(&raw(3, 0, 0)).is_ok());
    }

    #[test]
    fn compute_units_need_metadata_and_unique_names() {
        let foo = XclbinBuilder::vadd(UUID, 1, 1)
            .compute_unit("foo", "foo_1", 0x190_0000)
            .build();
        assert_eq!(
            err(&foo),
            "IP_LAYOUT kernel 'foo:foo_1' has no kernel 'foo' in EMBEDDED_METADATA"
        );
        let twice = XclbinBuilder::vadd(UUID, 1, 1)
            .compute_unit("vadd", "vadd_1", 0x190_0000)
            .build();
        assert_eq!(
            err(&twice),
            "IP_LAYOUT names compute unit 'vadd:vadd_1' twice"
        );
    }

    #[test]
    fn bad_kernel_arguments_are_refused() {
        let with_arg = |offset, size| {
            let mut meta = vadd_meta();
            meta.args.push(KernelArg {
                name: "x".into(),
                index: 4,
                offset,
                size,
                kind: ArgKind::Scalar,
            });
            XclbinBuilder::new(UUID)
                .bank(MemKind::Ddr4, "bank0", 0, 1 << 20)
                .kernel(meta)
                .build()
        };
        assert_eq!(
            err(&with_arg(4, 4)),
            "kernel 'vadd' argument 'x' has offset 0x4, below the argument area at 0x10"
        );
        assert_eq!(
            err(&with_arg(0x3A, 4)),
            "kernel 'vadd' argument 'x' has offset 0x3a, not a multiple of 4"
        );
        assert_eq!(
            err(&with_arg(0x40, 3)),
            "kernel 'vadd' argument 'x' has size 3; expected 4 (scalar) or 8 (pointer or 64-bit \
             scalar)"
        );
        assert!(parse(&with_arg(0x40, 8)).is_ok());
    }

    fn with_xml(xml: &str) -> Vec<u8> {
        XclbinBuilder::new(UUID)
            .section(
                SECTION_EMBEDDED_METADATA,
                "metadata",
                xml.as_bytes().to_vec(),
            )
            .build()
    }

    const ARG: &str = r#"<arg name="a" addressQualifier="1" id="0" size="0x8" offset="0x10"/>"#;

    fn doc(kernel_body: &str) -> String {
        format!(
            "<project name=\"p\"><platform><device name=\"fpga0\"><core name=\"c\">\
             <kernel name=\"k\">{kernel_body}</kernel></core></device></platform></project>"
        )
    }

    #[test]
    fn bad_metadata_xml_is_refused() {
        let k = parse(&with_xml(&doc(ARG))).unwrap().kernels;
        assert_eq!(k.len(), 1);
        assert_eq!(k[0].args[0].offset, 0x10);

        let cases: Vec<(String, &str)> = vec![
            (doc(ARG).replace("</core>", ""), "malformed XML"),
            (
                doc(ARG).replace("</project>", ""),
                "element <project> is never closed",
            ),
            (
                "not xml at all".into(),
                "text outside the <project> element",
            ),
            (String::new(), "there is no <project> element"),
            (
                doc(ARG).replace("project", "projet"),
                "root element is <projet>",
            ),
            (format!("{}<project/>", doc(ARG)), "a second root element"),
            (format!("<!DOCTYPE project>{}", doc(ARG)), "DOCTYPE"),
            (
                doc(&ARG.replace("id=\"0\" ", "")),
                "argument 'a' has no id attribute",
            ),
            (
                doc(&ARG.replace("0x10", "0xZZ")),
                "offset=\"0xZZ\" is not a number",
            ),
            (
                doc(&ARG.replace("\"1\"", "\"4\"")),
                "has addressQualifier 4",
            ),
            (
                doc(&ARG.replace("name=\"a\" ", "")),
                "has an <arg> without a name",
            ),
            (doc(&format!("{ARG}{ARG}")), "two arguments with id 0"),
            (
                doc(&ARG.replace("id=\"0\"", "id=\"0\" id=\"1\"")),
                "element <arg>",
            ),
            (doc(&ARG.replace("\"a\"", "\"&bogus;\"")), "element <arg>"),
            (
                doc("").replace("<kernel name=\"k\">", "<kernel>"),
                "a <kernel> has no name",
            ),
            (
                doc("").replace("</core>", "<kernel name=\"k\"/></core>"),
                "kernel 'k' is described twice",
            ),
        ];
        for (xml, expected) in cases {
            let message = err(&with_xml(&xml));
            assert!(
                message.starts_with("EMBEDDED_METADATA: ") && message.contains(expected),
                "{xml}: {message}"
            );
        }
        let mut bytes = with_xml(&doc(ARG));
        let (_, at) = section_at(&bytes, SECTION_EMBEDDED_METADATA);
        bytes[at + 20] = 0xFF;
        assert!(err(&bytes).contains("not valid UTF-8"));
    }

    #[test]
    fn metadata_accepts_decimal_nul_padding_and_other_elements() {
        let xml = doc(
            r#"<port name="M_AXI_GMEM"/><arg name="n" addressQualifier="0" id="2" size="4" offset="16"/>"#,
        )
        .replace("<platform>", "<platform><kernel name=\"ignored\"/>")
        + "\n\0\0";
        let k = parse(&with_xml(&xml)).unwrap().kernels;
        assert_eq!(
            k,
            [KernelMeta {
                name: "k".into(),
                args: vec![KernelArg {
                    name: "n".into(),
                    index: 2,
                    offset: 0x10,
                    size: 4,
                    kind: ArgKind::Scalar,
                }],
            }]
        );
    }

    #[test]
    fn zero_uuid_is_refused() {
        let bytes = XclbinBuilder::vadd(Guid::new(0, 0), 1, 1).build();
        assert_eq!(
            err(&bytes),
            "the xclbin uuid (axlf_header.uuid) is all zero"
        );
    }

    #[test]
    fn bad_strings_are_refused() {
        let bytes = vadd_image();
        let (_, mem) = section_at(&bytes, SECTION_MEM_TOPOLOGY);
        let mut tag = bytes.clone();
        let second_tag = mem + MEM_TOPOLOGY_HEADER + MEM_DATA_SIZE + 24;
        tag[second_tag..second_tag + MEM_TAG_SIZE].fill(b'x');
        assert_eq!(
            err(&tag),
            "MEM_TOPOLOGY entry 1 tag is not NUL-terminated within its 16 bytes"
        );

        let (_, ip) = section_at(&bytes, SECTION_IP_LAYOUT);
        let mut name = bytes.clone();
        name[ip + IP_LAYOUT_HEADER + 16] = 0xC3;
        name[ip + IP_LAYOUT_HEADER + 17] = b'(';
        assert_eq!(err(&name), "IP_LAYOUT entry 0 name is not valid UTF-8");
    }

    #[test]
    fn huge_banks_are_refused() {
        let bytes = vadd_image();
        let (_, mem) = section_at(&bytes, SECTION_MEM_TOPOLOGY);
        let mut huge = bytes.clone();
        put(
            &mut huge,
            mem + MEM_TOPOLOGY_HEADER + 8,
            &(u64::MAX / 1024).to_le_bytes(),
        );
        assert!(err(&huge).starts_with("MEM_TOPOLOGY entry 0: base 0x4000000000 and size"));
    }

    #[test]
    fn every_prefix_is_refused_without_panicking() {
        let bytes = XclbinBuilder::vadd(UUID, 1, 1).build();
        assert!(parse(&bytes).is_ok());
        for cut in 0..bytes.len() {
            assert!(parse(&bytes[..cut]).is_err(), "prefix {cut}");
            if cut >= SECTION_TABLE_OFFSET {
                assert!(
                    parse(&with_length(bytes[..cut].to_vec())).is_err(),
                    "prefix {cut}"
                );
            }
        }
    }

    #[test]
    fn random_byte_flips_never_panic() {
        let bytes = XclbinBuilder::vadd(UUID, 2, 2).build();
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut refused = 0;
        for _ in 0..500 {
            let mut mutated = bytes.clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() % bytes.len() as u64) as usize;
                mutated[at] ^= (next() % 255 + 1) as u8;
            }
            refused += usize::from(parse(&mutated).is_err());
        }
        assert!(refused > 0);
    }
}
