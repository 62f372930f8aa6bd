//! The container's byte layouts, each declared once as the struct XRT's `xclbin.h` defines:
//! the reader views a file through them and the builder writes them. Every integer is
//! little-endian and every struct unaligned, so any byte offset in a file can be read; the
//! sizes and the offsets other code relies on are checked at compile time below.

use std::mem::{offset_of, size_of};

use zerocopy::little_endian::{I32, U16, U32, U64};
use zerocopy::{FromBytes, Immutable, IntoBytes, KnownLayout, Unaligned};

/// Bytes of `axlf_section_header.m_sectionName`.
pub(super) const SECTION_NAME_SIZE: usize = 16;
/// Bytes of `mem_data.m_tag`.
pub(super) const MEM_TAG_SIZE: usize = 16;
/// Bytes of `ip_data.m_name`.
pub(super) const IP_NAME_SIZE: usize = 64;

/// `struct axlf` up to its section table: the file's first bytes.
#[derive(Clone, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct Axlf {
    /// `m_magic`: `xclbin2\0`.
    pub magic: [u8; 8],
    /// `m_signature_length`: -1 when unsigned.
    pub signature_length: I32,
    /// `reserved`.
    pub reserved: [u8; 28],
    /// `m_keyBlock`: the signature.
    pub key_block: [u8; 256],
    /// `m_uniqueId`.
    pub unique_id: U64,
    /// `m_header`.
    pub header: AxlfHeader,
}

/// `struct axlf_header`.
#[derive(Clone, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct AxlfHeader {
    /// `m_length`: the file's size.
    pub length: U64,
    /// `m_timeStamp`.
    pub time_stamp: U64,
    /// `m_featureRomTimeStamp`.
    pub feature_rom_time_stamp: U64,
    /// `m_versionPatch`.
    pub version_patch: U16,
    /// `m_versionMajor`.
    pub version_major: u8,
    /// `m_versionMinor`.
    pub version_minor: u8,
    /// `m_mode` (`MODE_*`).
    pub mode: U16,
    /// `m_actionMask`.
    pub action_mask: U16,
    /// `m_interface_uuid`.
    pub interface_uuid: [u8; 16],
    /// `m_platformVBNV`, NUL-padded.
    pub platform_vbnv: [u8; 64],
    /// `uuid` (in a union with `m_next_axlf`).
    pub uuid: [u8; 16],
    /// `m_debug_bin`.
    pub debug_bin: [u8; 16],
    /// `m_numSections`.
    pub num_sections: U32,
    /// `padding`.
    pub padding: [u8; 4],
}

/// `struct axlf_section_header`: one entry of the table that follows [`Axlf`].
#[derive(Clone, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct SectionHeader {
    /// `m_sectionKind` (`SECTION_*`).
    pub kind: U32,
    /// `m_sectionName`, NUL-padded.
    pub name: [u8; SECTION_NAME_SIZE],
    /// `rsvd`.
    pub reserved: [u8; 4],
    /// `m_sectionOffset` from the start of the file.
    pub offset: U64,
    /// `m_sectionSize`.
    pub size: U64,
}

/// A section that is a counted table, `{ int32_t m_count; <padding>; Entry entries[m_count] }`:
/// MEM_TOPOLOGY, IP_LAYOUT and CONNECTIVITY.
pub(super) trait Table {
    /// The section's name in errors.
    const NAME: &'static str;
    /// Bytes before the first entry: `m_count` and the padding that aligns the entries.
    const HEADER: usize;
    /// One entry.
    type Entry: FromBytes + IntoBytes + KnownLayout + Immutable + Unaligned;
}

/// `struct mem_data`: one MEM_TOPOLOGY entry.
#[derive(Clone, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct MemData {
    /// `m_type` (`MemKind`).
    pub kind: u8,
    /// `m_used`.
    pub used: u8,
    /// `padding`.
    pub padding: [u8; 6],
    /// `m_size` in KiB (`route_id` for streams).
    pub size_kib: U64,
    /// `m_base_address` (`flow_id` for streams).
    pub base: U64,
    /// `m_tag`, NUL-padded.
    pub tag: [u8; MEM_TAG_SIZE],
}

/// `struct mem_topology`.
pub(super) struct MemTopology;

impl Table for MemTopology {
    const NAME: &'static str = "MEM_TOPOLOGY";
    const HEADER: usize = 8;
    type Entry = MemData;
}

/// `struct ip_data`: one IP_LAYOUT entry.
#[derive(Clone, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct IpData {
    /// `m_type` (`IpKind`).
    pub kind: U32,
    /// `properties`: bit 0 interrupt enabled, bits 7:1 interrupt id, bits 15:8 control.
    pub properties: U32,
    /// `m_base_address`.
    pub base: U64,
    /// `m_name`, NUL-padded.
    pub name: [u8; IP_NAME_SIZE],
}

/// `ip_data.properties` of an IP_KERNEL, its bit fields in one place for both directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct IpProperties {
    /// Bit 0.
    pub interrupt_enabled: bool,
    /// Bits 7:1.
    pub interrupt_id: u8,
    /// Bits 15:8 (`IP_CONTROL_*`).
    pub control: u8,
}

impl IpProperties {
    /// The fields of a raw `properties` word.
    pub fn from_raw(raw: u32) -> Self {
        IpProperties {
            interrupt_enabled: raw & 1 != 0,
            interrupt_id: ((raw >> 1) & 0x7F) as u8,
            control: (raw >> 8) as u8,
        }
    }

    /// The raw `properties` word (an interrupt id keeps its low 7 bits).
    pub fn raw(self) -> u32 {
        u32::from(self.interrupt_enabled)
            | u32::from(self.interrupt_id & 0x7F) << 1
            | u32::from(self.control) << 8
    }
}

/// `struct ip_layout`.
pub(super) struct IpLayout;

impl Table for IpLayout {
    const NAME: &'static str = "IP_LAYOUT";
    const HEADER: usize = 8;
    type Entry = IpData;
}

/// `struct connection`: one CONNECTIVITY entry.
#[derive(Clone, Debug, FromBytes, IntoBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(super) struct ConnectionData {
    /// `arg_index`.
    pub arg_index: I32,
    /// `m_ip_layout_index`.
    pub ip_index: I32,
    /// `mem_data_index`.
    pub bank_index: I32,
}

/// `struct connectivity`.
pub(super) struct Connectivity;

impl Table for Connectivity {
    const NAME: &'static str = "CONNECTIVITY";
    const HEADER: usize = 4;
    type Entry = ConnectionData;
}

/// The `m_count` field every [`Table`] starts with.
pub(super) type Count = I32;

// XRT's sizes and offsets (xclbin.h), which images in the field are written with.
const _: () = {
    assert!(offset_of!(Axlf, unique_id) == 296);
    assert!(offset_of!(Axlf, header) == 304);
    assert!(size_of::<Axlf>() == 456);
    assert!(offset_of!(AxlfHeader, version_patch) == 24);
    assert!(offset_of!(AxlfHeader, mode) == 28);
    assert!(offset_of!(AxlfHeader, platform_vbnv) == 48);
    assert!(offset_of!(AxlfHeader, uuid) == 112);
    assert!(offset_of!(AxlfHeader, num_sections) == 144);
    assert!(size_of::<AxlfHeader>() == 152);
    assert!(offset_of!(SectionHeader, offset) == 24);
    assert!(size_of::<SectionHeader>() == 40);
    assert!(offset_of!(MemData, size_kib) == 8);
    assert!(offset_of!(MemData, tag) == 24);
    assert!(size_of::<MemData>() == 40);
    assert!(offset_of!(IpData, name) == 16);
    assert!(size_of::<IpData>() == 80);
    assert!(size_of::<ConnectionData>() == 12);
    assert!(size_of::<Count>() <= Connectivity::HEADER);
};
