//! The reader: views a file through the layouts and checks every bound, count and
//! cross-reference before anything relies on it.

use std::collections::HashSet;

use zerocopy::{FromBytes, Immutable, KnownLayout};

use super::layout::{
    Axlf, Connectivity, Count, IpLayout, IpProperties, MemTopology, SectionHeader, Table,
};
use super::metadata::parse_metadata;
use super::*;
use crate::families::xocl::abi;

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
    let Ok((head, table)) = Axlf::ref_from_prefix(bytes) else {
        return Err(XclbinError::Truncated {
            needed: SECTION_TABLE_OFFSET,
            len,
        });
    };
    if &head.magic != MAGIC {
        return Err(XclbinError::BadMagic {
            found: head.magic.escape_ascii().to_string(),
        });
    }
    let header = &head.header;
    let length = header.length.get();
    if length != len as u64 {
        return Err(XclbinError::LengthMismatch {
            declared: length,
            len,
        });
    }
    if header.uuid == [0; 16] {
        return Err(XclbinError::ZeroUuid);
    }
    let uuid = Guid::from_bytes(header.uuid);

    let sections = section_table(table, header.num_sections.get(), len)?;
    let data = |kind| find_section(&sections, kind).map(|s| &bytes[s.offset..s.offset + s.size]);
    let banks = parse_mem_topology(data(SECTION_MEM_TOPOLOGY)?)?;
    let mut ips = parse_ip_layout(data(SECTION_IP_LAYOUT)?)?;
    let raw_connections = data(SECTION_CONNECTIVITY)?;
    let (kernels, instances) = parse_metadata(data(SECTION_EMBEDDED_METADATA)?)?;
    resolve_kernels(&mut ips, &kernels, &instances);
    check_compute_units(&ips, &kernels)?;
    let connectivity = parse_connectivity(raw_connections, &banks, &ips, &kernels)?;
    let kernel_module = optional_section(&sections, SECTION_BITSTREAM)?
        .map(|s| &bytes[s.offset..s.offset + s.size])
        .filter(|payload| payload.starts_with(WASM_MAGIC))
        .map(Arc::from);

    Ok(Xclbin {
        uuid,
        mode: header.mode.get(),
        length,
        banks,
        ips,
        connectivity,
        kernels,
        kernel_module,
    })
}

/// The `count` section headers at the start of `table` (the bytes after the fixed header of
/// a `len`-byte file), each checked to lie within the file.
fn section_table(table: &[u8], count: u32, len: usize) -> Result<Vec<Section>, XclbinError> {
    let end = SECTION_TABLE_OFFSET as u64 + u64::from(count) * SECTION_HEADER_SIZE as u64;
    let Ok((headers, _)) = <[SectionHeader]>::ref_from_prefix_with_elems(table, count as usize)
    else {
        return Err(XclbinError::SectionTable { count, end, len });
    };
    headers
        .iter()
        .enumerate()
        .map(|(index, header)| {
            let kind = header.kind.get();
            let (offset, size) = (header.offset.get(), header.size.get());
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
    optional_section(sections, kind)?.ok_or(XclbinError::MissingSection {
        name: section_name(kind),
    })
}

/// The one section of `kind`, if there is one; two are refused.
fn optional_section(sections: &[Section], kind: u32) -> Result<Option<&Section>, XclbinError> {
    let mut matching = sections.iter().filter(|s| s.kind == kind);
    let first = matching.next();
    if let (Some(first), Some(second)) = (first, matching.next()) {
        return Err(XclbinError::DuplicateSection {
            name: section_name(kind),
            first: first.index,
            second: second.index,
        });
    }
    Ok(first)
}

/// The entries of a counted-table section, checked to fit its bytes.
fn entries<T: Table>(data: &[u8]) -> Result<&[T::Entry], XclbinError>
where
    [T::Entry]: FromBytes + KnownLayout<PointerMetadata = usize> + Immutable,
{
    let (section, header, entry) = (T::NAME, T::HEADER, size_of::<T::Entry>());
    let (Ok((raw, _)), true) = (Count::read_from_prefix(data), data.len() >= header) else {
        return Err(XclbinError::SectionTooSmall {
            section,
            size: data.len(),
            header,
        });
    };
    let raw = raw.get();
    let count = usize::try_from(raw).map_err(|_| XclbinError::NegativeCount {
        section,
        count: raw,
    })?;
    <[T::Entry]>::ref_from_prefix_with_elems(&data[header..], count)
        .map(|(entries, _)| entries)
        .map_err(|_| XclbinError::EntriesDontFit {
            section,
            count,
            entry,
            size: data.len(),
        })
}

/// A NUL-terminated UTF-8 text in a fixed-size field.
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
    (0u32..)
        .zip(entries::<MemTopology>(data)?)
        .map(|(index, e)| {
            let kind = MemKind::from_raw(e.kind);
            let (size_kib, base) = (e.size_kib.get(), e.base.get());
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
                used: e.used != 0,
                base,
                size,
                tag: fixed_str(&e.tag, || format!("MEM_TOPOLOGY entry {index} tag"))?,
            })
        })
        .collect()
}

fn parse_ip_layout(data: &[u8]) -> Result<Vec<IpEntry>, XclbinError> {
    (0u32..)
        .zip(entries::<IpLayout>(data)?)
        .map(|(index, e)| {
            let properties = IpProperties::from_raw(e.properties.get());
            Ok(IpEntry {
                index,
                kind: IpKind::from_raw(e.kind.get()),
                base: e.base.get(),
                name: fixed_str(&e.name, || format!("IP_LAYOUT entry {index} name"))?,
                kernel: String::new(),
                interrupt_enabled: properties.interrupt_enabled,
                interrupt_id: properties.interrupt_id,
                control: properties.control,
            })
        })
        .collect()
}

/// Sets each IP's kernel: the one its name names before `:`, else the one whose `<instance>`
/// its name names after `:` (a compute unit of a kernel whose name is too long for the field).
fn resolve_kernels(ips: &mut [IpEntry], kernels: &[KernelMeta], instances: &[(String, String)]) {
    for ip in ips {
        let named = ip.named_kernel();
        ip.kernel = if kernels.iter().any(|k| k.name == named) {
            named.to_owned()
        } else {
            instances
                .iter()
                .find(|(instance, _)| instance == ip.instance_name())
                .map_or(named, |(_, kernel)| kernel)
                .to_owned()
        };
    }
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
    entries::<Connectivity>(data)?
        .iter()
        .enumerate()
        .map(|(entry, e)| {
            let (arg, ip, bank) = (e.arg_index.get(), e.ip_index.get(), e.bank_index.get());
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
