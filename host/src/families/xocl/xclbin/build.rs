//! The writer: images for the emulator, the tests and the demo, through the same layouts the
//! reader uses.

use zerocopy::IntoBytes;

use super::layout::{
    Axlf, AxlfHeader, ConnectionData, Connectivity, Count, IP_NAME_SIZE, IpData, IpLayout,
    IpProperties, MEM_TAG_SIZE, MemData, MemTopology, SECTION_NAME_SIZE, SectionHeader, Table,
};
use super::metadata::metadata_xml;
use super::*;
use crate::families::xocl::abi;

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

const PLATFORM_VBNV: &str = "xilinx_accelhost_emu_1_0";

/// Where a compute unit's argument registers start (after the HLS control block).
pub const KERNEL_ARGS_BASE: u64 = abi::ARGS_BASE;
/// Where the argument registers of the emulated card's compute units end (3,840 bytes of
/// them, so that a START_CU packet with four CU masks fits a 4 KiB exec buffer): a kernel
/// whose arguments reach past it is refused by the builder and by the card.
pub const KERNEL_ARGS_END: u64 = 0xF10;
/// Base address of the first compute unit of [`XclbinBuilder::kernels`].
const KERNELS_CU_BASE: u64 = VADD_CU_BASE;

impl KernelMeta {
    /// A kernel whose arguments sit where Vitis HLS puts them: from [`KERNEL_ARGS_BASE`], each
    /// taking its size and a reserved word. `args` are (name, kind, size in bytes).
    pub fn with_hls_offsets(name: &str, args: &[(String, ArgKind, u32)]) -> Self {
        let mut offset = KERNEL_ARGS_BASE as u32;
        let args = (0u32..)
            .zip(args)
            .map(|(index, (arg, kind, size))| {
                let at = offset;
                offset += size + 4;
                KernelArg {
                    name: arg.clone(),
                    index,
                    offset: at,
                    size: *size,
                    kind: *kind,
                }
            })
            .collect();
        KernelMeta {
            name: name.to_owned(),
            args,
        }
    }

    /// Where the last argument register ends.
    pub fn args_end(&self) -> u64 {
        self.args
            .iter()
            .map(|a| u64::from(a.offset) + u64::from(a.size))
            .max()
            .unwrap_or(KERNEL_ARGS_BASE)
    }
}

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
    /// position, and `ap_ctrl_hs`; named `~:instance` where `kernel:instance` does not fit
    /// ([`ALIASED_KERNEL`]), the metadata's `<instance>` then naming the kernel.
    ///
    /// # Panics
    /// Past 128 compute units, or if `instance` alone does not fit the 64-byte field.
    pub fn compute_unit(mut self, kernel: &str, instance: &str, base: u64) -> Self {
        let mut name = format!("{kernel}:{instance}");
        if name.len() >= IP_NAME_SIZE {
            name = format!("{ALIASED_KERNEL}:{instance}");
        }
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
            kernel: kernel.to_owned(),
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

    /// Adds the kernels' code for the emulated card: a WebAssembly module that exports each
    /// kernel by name, in a BITSTREAM section.
    pub fn kernel_module(self, module: Vec<u8>) -> Self {
        self.section(SECTION_BITSTREAM, "kernels", module)
    }

    /// An image for the emulated card running `kernels` from `module`: one DDR4 bank of
    /// [`VADD_BANK_SIZE`] at [`VADD_BANK_BASE`], `cus` compute units of each kernel
    /// (`name_1..`; `~K_1..` for the K-th kernel where `name:name_N` would not fit the IP
    /// name's field), every pointer argument connected to the bank.
    pub fn kernels(uuid: Guid, kernels: &[KernelMeta], module: Vec<u8>, cus: u32) -> Self {
        let mut builder = XclbinBuilder::new(uuid)
            .bank(MemKind::Ddr4, "bank0", VADD_BANK_BASE, VADD_BANK_SIZE)
            .kernel_module(module);
        let mut base = KERNELS_CU_BASE;
        for (k, kernel) in kernels.iter().enumerate() {
            builder = builder.kernel(kernel.clone());
            let longest = format!("{0}:{0}_{cus}", kernel.name);
            let stem = if longest.len() < IP_NAME_SIZE {
                kernel.name.clone()
            } else {
                format!("{ALIASED_KERNEL}{k}")
            };
            for i in 1..=cus {
                let instance = format!("{stem}_{i}");
                builder = builder.compute_unit(&kernel.name, &instance, base);
                base += VADD_CU_STRIDE;
                for arg in kernel.args.iter().filter(|a| a.kind == ArgKind::Global) {
                    builder = builder.connect(&instance, arg.index, 0);
                }
            }
        }
        builder
    }

    /// The image.
    pub fn build(&self) -> Vec<u8> {
        let standard = [
            (
                SECTION_MEM_TOPOLOGY,
                "mem_topology",
                table_bytes::<MemTopology, _>(&self.banks, mem_data),
            ),
            (
                SECTION_IP_LAYOUT,
                "ip_layout",
                table_bytes::<IpLayout, _>(&self.ips, ip_data),
            ),
            (
                SECTION_CONNECTIVITY,
                "connectivity",
                table_bytes::<Connectivity, _>(&self.connections, connection_data),
            ),
            (
                SECTION_EMBEDDED_METADATA,
                "metadata",
                metadata_xml(&self.kernels, &self.ips, self.mode).into_bytes(),
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

        // The head and the section table are written over the zeros once the offsets are known.
        let mut out = vec![0u8; SECTION_TABLE_OFFSET + sections.len() * SECTION_HEADER_SIZE];
        let mut headers = Vec::with_capacity(sections.len());
        for (kind, name, payload) in &sections {
            out.resize(out.len().next_multiple_of(8), 0);
            headers.push(SectionHeader {
                kind: (*kind).into(),
                name: fixed(name),
                reserved: [0; 4],
                offset: (out.len() as u64).into(),
                size: (payload.len() as u64).into(),
            });
            out.extend_from_slice(payload);
        }

        let head = Axlf {
            magic: *MAGIC,
            signature_length: (-1).into(),
            reserved: [0xFF; 28],
            key_block: [0xFF; 256],
            unique_id: 0.into(),
            header: AxlfHeader {
                length: (out.len() as u64).into(),
                time_stamp: 0.into(),
                feature_rom_time_stamp: 0.into(),
                version_patch: 0.into(),
                version_major: 2,
                version_minor: 15,
                mode: self.mode.into(),
                action_mask: 0.into(),
                interface_uuid: [0; 16],
                platform_vbnv: fixed(PLATFORM_VBNV),
                uuid: self.uuid.to_bytes(),
                debug_bin: [0; 16],
                num_sections: (sections.len() as u32).into(),
                padding: [0; 4],
            },
        };
        out[..SECTION_TABLE_OFFSET].copy_from_slice(head.as_bytes());
        out[SECTION_TABLE_OFFSET..][..headers.as_bytes().len()].copy_from_slice(headers.as_bytes());
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

/// `text` in a NUL-padded field of `N` bytes (the builder checks the length first).
fn fixed<const N: usize>(text: &str) -> [u8; N] {
    let mut field = [0; N];
    field[..text.len()].copy_from_slice(text.as_bytes());
    field
}

/// A counted-table section of `values`: `m_count`, zeros up to the first entry, the entries.
pub(super) fn table_bytes<T: Table, V>(values: &[V], entry: impl Fn(&V) -> T::Entry) -> Vec<u8> {
    let mut out = vec![0; T::HEADER];
    out[..size_of::<Count>()].copy_from_slice(Count::new(values.len() as i32).as_bytes());
    for value in values {
        out.extend_from_slice(entry(value).as_bytes());
    }
    out
}

fn mem_data(bank: &MemBank) -> MemData {
    MemData {
        kind: bank.kind.raw(),
        used: u8::from(bank.used),
        padding: [0; 6],
        size_kib: (bank.size / 1024).into(),
        base: bank.base.into(),
        tag: fixed(&bank.tag),
    }
}

pub(super) fn ip_data(ip: &IpEntry) -> IpData {
    let properties = IpProperties {
        interrupt_enabled: ip.interrupt_enabled,
        interrupt_id: ip.interrupt_id,
        control: ip.control,
    };
    IpData {
        kind: ip.kind.raw().into(),
        properties: properties.raw().into(),
        base: ip.base.into(),
        name: fixed(&ip.name),
    }
}

fn connection_data(c: &Connection) -> ConnectionData {
    ConnectionData {
        arg_index: (c.arg_index as i32).into(),
        ip_index: (c.ip_index as i32).into(),
        bank_index: (c.bank_index as i32).into(),
    }
}
