//! The xclbin (axlf) container: a strict parser that validates everything the host relies on
//! (bounds, counts, cross-references, kernel argument layout) and a builder that writes images
//! for the emulator, the tests and the demo. Both go through one declaration of each byte
//! layout (`layout`) and of the metadata's XML shape (`metadata`).

mod build;
mod layout;
mod metadata;
mod parse;
#[cfg(test)]
mod tests;

pub use build::{
    KERNEL_ARGS_BASE, KERNEL_ARGS_END, VADD_BANK_BASE, VADD_BANK_SIZE, VADD_CU_BASE,
    VADD_CU_STRIDE, XclbinBuilder,
};
pub use parse::parse;

use std::mem::{offset_of, size_of};
use std::sync::Arc;

use crate::families::xocl::abi;
use crate::types::Guid;

/// `axlf.m_magic`.
pub const MAGIC: &[u8; 8] = b"xclbin2\0";
/// Offset of `axlf_header` in the file.
pub const AXLF_HEADER_OFFSET: usize = offset_of!(layout::Axlf, header);
/// Offset of the section header table (`m_sections`), right after the 152-byte `axlf_header`.
pub const SECTION_TABLE_OFFSET: usize = size_of::<layout::Axlf>();
/// Size of one `axlf_section_header`.
pub const SECTION_HEADER_SIZE: usize = size_of::<layout::SectionHeader>();

/// The first bytes of a WebAssembly module: a BITSTREAM section starting so holds kernels.
pub const WASM_MAGIC: &[u8; 4] = b"\0asm";

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

/// Declares the `SECTION_*` kinds once: each constant, and the name `section_name` gives it.
macro_rules! section_kinds {
    ($($(#[$doc:meta])* $kind:ident = $value:literal,)*) => {
        $($(#[$doc])* pub const $kind: u32 = $value;)*

        /// The name of a section kind (`"IP_LAYOUT"`), or `"UNKNOWN"`.
        pub fn section_name(kind: u32) -> &'static str {
            match kind {
                $($value => &stringify!($kind)["SECTION_".len()..],)*
                _ => "UNKNOWN",
            }
        }
    };
}

section_kinds! {
    /// Section kind: FPGA bitstream (in sw_emu, a shared library of the kernels).
    SECTION_BITSTREAM = 0,
    /// Section kind: clearing bitstream.
    SECTION_CLEARING_BITSTREAM = 1,
    /// Section kind: XML metadata with kernels and their arguments.
    SECTION_EMBEDDED_METADATA = 2,
    /// Section kind: firmware.
    SECTION_FIRMWARE = 3,
    /// Section kind: debug data.
    SECTION_DEBUG_DATA = 4,
    /// Section kind: scheduler firmware.
    SECTION_SCHED_FIRMWARE = 5,
    /// Section kind: memory banks.
    SECTION_MEM_TOPOLOGY = 6,
    /// Section kind: kernel argument to memory bank connections.
    SECTION_CONNECTIVITY = 7,
    /// Section kind: IPs, compute units among them.
    SECTION_IP_LAYOUT = 8,
    /// Section kind: debug IP layout.
    SECTION_DEBUG_IP_LAYOUT = 9,
    /// Section kind: design checkpoint.
    SECTION_DESIGN_CHECK_POINT = 10,
    /// Section kind: clock frequencies.
    SECTION_CLOCK_FREQ_TOPOLOGY = 11,
    /// Section kind: MCS flash image.
    SECTION_MCS = 12,
    /// Section kind: board management controller image.
    SECTION_BMC = 13,
    /// Section kind: build metadata (JSON).
    SECTION_BUILD_METADATA = 14,
    /// Section kind: key/value metadata.
    SECTION_KEYVALUE_METADATA = 15,
    /// Section kind: user metadata.
    SECTION_USER_METADATA = 16,
    /// Section kind: DNA certificate.
    SECTION_DNA_CERTIFICATE = 17,
    /// Section kind: PDI.
    SECTION_PDI = 18,
    /// Section kind: partial-bitstream PDI.
    SECTION_BITSTREAM_PARTIAL_PDI = 19,
    /// Section kind: partition metadata.
    SECTION_PARTITION_METADATA = 20,
    /// Section kind: emulation data.
    SECTION_EMULATION_DATA = 21,
    /// Section kind: system metadata.
    SECTION_SYSTEM_METADATA = 22,
    /// Section kind: soft kernel.
    SECTION_SOFT_KERNEL = 23,
    /// Section kind: flash image.
    SECTION_ASK_FLASH = 24,
    /// Section kind: AIE metadata.
    SECTION_AIE_METADATA = 25,
    /// Section kind: memory group topology.
    SECTION_ASK_GROUP_TOPOLOGY = 26,
    /// Section kind: memory group connectivity.
    SECTION_ASK_GROUP_CONNECTIVITY = 27,
    /// Section kind: SmartNIC.
    SECTION_SMARTNIC = 28,
    /// Section kind: AIE resources.
    SECTION_AIE_RESOURCES = 29,
    /// Section kind: overlay.
    SECTION_OVERLAY = 30,
    /// Section kind: vendor metadata.
    SECTION_VENDER_METADATA = 31,
    /// Section kind: AIE partition.
    SECTION_AIE_PARTITION = 32,
    /// Section kind: IP metadata.
    SECTION_IP_METADATA = 33,
    /// Section kind: AIE resources, binary.
    SECTION_AIE_RESOURCES_BIN = 34,
    /// Section kind: AIE trace metadata.
    SECTION_AIE_TRACE_METADATA = 35,
    /// Section kind: device tree overlay.
    SECTION_DTBO = 36,
}

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

/// Declares an enum of a raw field's named values once: the variants with their values, and
/// the conversions both ways (any other value is `Other`).
macro_rules! raw_enum {
    ($(#[$meta:meta])* $name:ident($raw:ty) { $($(#[$doc:meta])* $variant:ident = $value:literal,)* }) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$doc])* $variant,)*
            /// Any other value.
            Other($raw),
        }

        impl $name {
            /// The variant of a raw value.
            pub fn from_raw(raw: $raw) -> Self {
                match raw {
                    $($value => $name::$variant,)*
                    other => $name::Other(other),
                }
            }

            /// The raw value.
            pub fn raw(self) -> $raw {
                match self {
                    $($name::$variant => $value,)*
                    $name::Other(raw) => raw,
                }
            }
        }
    };
}

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
    /// The kernels' code for the emulated card: a BITSTREAM section holding one WebAssembly
    /// module that exports each kernel by name (where sw_emu's holds a native shared object).
    /// `None` when the image has no BITSTREAM or it is not wasm (a real card's bitstream).
    pub kernel_module: Option<Arc<[u8]>>,
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

raw_enum! {
    /// `mem_data.m_type`.
    MemKind(u8) {
        /// `MEM_DDR3`.
        Ddr3 = 0,
        /// `MEM_DDR4`.
        Ddr4 = 1,
        /// `MEM_DRAM`.
        Dram = 2,
        /// `MEM_STREAMING`: not allocatable.
        Streaming = 3,
        /// `MEM_PREALLOCATED_GLOB`.
        PreallocatedGlob = 4,
        /// `MEM_ARE`.
        Are = 5,
        /// `MEM_HBM`.
        Hbm = 6,
        /// `MEM_BRAM`.
        Bram = 7,
        /// `MEM_URAM`.
        Uram = 8,
        /// `MEM_STREAMING_CONNECTION`: not allocatable.
        StreamingConnection = 9,
        /// `MEM_HOST`.
        Host = 10,
        /// `MEM_PS_KERNEL`.
        PsKernel = 11,
    }
}

impl MemKind {
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
    /// `m_name`, `kernel:instance` for compute units (`vadd:vadd_1`); `~:instance` for one
    /// whose kernel's name does not fit the 64-byte field ([`ALIASED_KERNEL`]).
    pub name: String,
    /// The kernel a compute unit is an instance of: the part of `name` before `:` where that
    /// names a kernel of the metadata, else the kernel whose `<instance>` the part after it
    /// is. Any text for other IPs.
    pub kernel: String,
    /// `properties` bit 0.
    pub interrupt_enabled: bool,
    /// `properties[7:1]`.
    pub interrupt_id: u8,
    /// `properties[15:8]`: `IP_CONTROL_*`.
    pub control: u8,
}

/// What stands for the kernel in the IP name of a compute unit whose `kernel:instance` would
/// not fit the 64-byte field (kernels of SYCL programs are named by their mangled C++ type,
/// often hundreds of characters): never a kernel's name, which is a C identifier. The
/// metadata's `<instance>` elements say whose instance it is.
pub const ALIASED_KERNEL: &str = "~";

impl IpEntry {
    /// The kernel this compute unit is an instance of ([`IpEntry::kernel`]).
    pub fn kernel_name(&self) -> &str {
        &self.kernel
    }

    /// The kernel part of the name (before `:`), or the whole name.
    pub fn named_kernel(&self) -> &str {
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

raw_enum! {
    /// `ip_data.m_type`.
    IpKind(u32) {
        /// `IP_MB`.
        Mb = 0,
        /// `IP_KERNEL`: a compute unit.
        Kernel = 1,
        /// `IP_DNASC`.
        Dnasc = 2,
        /// `IP_DDR4_CONTROLLER`.
        Ddr4Controller = 3,
        /// `IP_MEM_DDR4`.
        MemDdr4 = 4,
        /// `IP_MEM_HBM`.
        MemHbm = 5,
        /// `IP_MEM_HBM_ECC`.
        MemHbmEcc = 6,
        /// `IP_PS_KERNEL`.
        PsKernel = 7,
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
    /// `addressQualifier` 3: an OpenCL C `__local` pointer. The compute unit's register holds
    /// the bytes of local memory the launch gives it (a 32-bit scalar to the plugin); the
    /// card passes the kernel a pointer to that much memory of the work-group's own.
    Local,
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
        "kernel '{kernel}' argument '{arg}' has size {size}; expected 4 (scalar) or 8 (pointer or 64-bit scalar), or whole words of a larger scalar value"
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
