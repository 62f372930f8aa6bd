//! Facts of the Intel DFL userspace ABI (`uapi/linux/fpga-dfl.h`, `dfl.h`, `dfl.rst`) and of
//! the NLB0 loopback AFU, shared by the Linux backend, the emulator and the workloads.
//!
//! The ioctl codes at the top level use the generic encoding (x86_64, arm64) and are the
//! default; [`powerpc`] holds the powerpc twins and [`native`] the ones this build passes to
//! `ioctl(2)`.

use crate::devices::ioctl::Encoding;

/// The ioctl type byte of every DFL request.
pub const DFL_FPGA_MAGIC: u32 = 0xB6;
/// First `nr` of the requests both FME and port fds accept.
pub const DFL_FPGA_BASE: u32 = 0x00;
/// First `nr` of the port requests.
pub const DFL_PORT_BASE: u32 = 0x40;
/// First `nr` of the FME requests.
pub const DFL_FME_BASE: u32 = 0x80;
/// What `DFL_FPGA_GET_API_VERSION` returns as the ioctl result.
pub const DFL_FPGA_API_VERSION: i32 = 0;

macro_rules! ioctl_codes {
    ($enc:expr) => {
        /// `_IO(0xB6, 0x00)`: returns `DFL_FPGA_API_VERSION` (0). FME and port.
        pub const DFL_FPGA_GET_API_VERSION: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_FPGA_BASE);
        /// `_IO(0xB6, 0x01)`: extension id in `arg`; returns 0 (none). FME and port.
        pub const DFL_FPGA_CHECK_EXTENSION: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_FPGA_BASE + 1);
        /// `_IO(0xB6, 0x40)`: resets the AFU; `arg` must be 0.
        pub const DFL_FPGA_PORT_RESET: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_PORT_BASE);
        /// `_IO(0xB6, 0x41)`: fills a `PortInfoArg`.
        pub const DFL_FPGA_PORT_GET_INFO: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_PORT_BASE + 1);
        /// `_IO(0xB6, 0x42)`: fills a `PortRegionInfoArg`.
        pub const DFL_FPGA_PORT_GET_REGION_INFO: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_PORT_BASE + 2);
        /// `_IO(0xB6, 0x43)`: pins user memory for DMA through a `PortDmaMapArg`.
        pub const DFL_FPGA_PORT_DMA_MAP: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_PORT_BASE + 3);
        /// `_IO(0xB6, 0x44)`: unpins the mapping a `PortDmaUnmapArg` names.
        pub const DFL_FPGA_PORT_DMA_UNMAP: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_PORT_BASE + 4);
        /// `_IOR(0xB6, 0x45, u32)`: number of port error interrupts.
        pub const DFL_FPGA_PORT_ERR_GET_IRQ_NUM: u32 =
            $enc.ior::<u32>(DFL_FPGA_MAGIC, DFL_PORT_BASE + 5);
        /// `_IOW(0xB6, 0x46, IrqSetHeader)`: binds eventfds to port error interrupts.
        pub const DFL_FPGA_PORT_ERR_SET_IRQ: u32 =
            $enc.iow::<IrqSetHeader>(DFL_FPGA_MAGIC, DFL_PORT_BASE + 6);
        /// `_IOR(0xB6, 0x47, u32)`: number of user (AFU) interrupts.
        pub const DFL_FPGA_PORT_UINT_GET_IRQ_NUM: u32 =
            $enc.ior::<u32>(DFL_FPGA_MAGIC, DFL_PORT_BASE + 7);
        /// `_IOW(0xB6, 0x48, IrqSetHeader)`: binds eventfds to user interrupts.
        pub const DFL_FPGA_PORT_UINT_SET_IRQ: u32 =
            $enc.iow::<IrqSetHeader>(DFL_FPGA_MAGIC, DFL_PORT_BASE + 8);
        /// `_IO(0xB6, 0x80)`: partial reconfiguration through an `FmePortPrArg`. FME.
        pub const DFL_FPGA_FME_PORT_PR: u32 = $enc.io(DFL_FPGA_MAGIC, DFL_FME_BASE);
        /// `_IOW(0xB6, 0x81, int)`: releases a port (by id) from its PF. FME.
        pub const DFL_FPGA_FME_PORT_RELEASE: u32 =
            $enc.iow::<i32>(DFL_FPGA_MAGIC, DFL_FME_BASE + 1);
        /// `_IOW(0xB6, 0x82, int)`: assigns a port (by id) back to its PF. FME.
        pub const DFL_FPGA_FME_PORT_ASSIGN: u32 = $enc.iow::<i32>(DFL_FPGA_MAGIC, DFL_FME_BASE + 2);
        /// `_IOR(0xB6, 0x83, u32)`: number of FME error interrupts.
        pub const DFL_FPGA_FME_ERR_GET_IRQ_NUM: u32 =
            $enc.ior::<u32>(DFL_FPGA_MAGIC, DFL_FME_BASE + 3);
        /// `_IOW(0xB6, 0x84, IrqSetHeader)`: binds eventfds to FME error interrupts.
        pub const DFL_FPGA_FME_ERR_SET_IRQ: u32 =
            $enc.iow::<IrqSetHeader>(DFL_FPGA_MAGIC, DFL_FME_BASE + 4);
        /// OFS kernels only: `_IO(0xB6, 0xA0)`, CXL-cache region info (24-byte struct).
        pub const DFL_CXL_CACHE_GET_REGION_INFO: u32 = $enc.io(DFL_FPGA_MAGIC, 0xA0);
        /// OFS kernels only: `_IO(0xB6, 0xA1)`, CXL-cache NUMA buffer map (152-byte struct).
        pub const DFL_CXL_CACHE_NUMA_BUFFER_MAP: u32 = $enc.io(DFL_FPGA_MAGIC, 0xA1);
        /// OFS kernels only: `_IO(0xB6, 0xA2)`, CXL-cache NUMA buffer unmap (152-byte struct).
        pub const DFL_CXL_CACHE_NUMA_BUFFER_UNMAP: u32 = $enc.io(DFL_FPGA_MAGIC, 0xA2);
        /// OFS kernels only: `_IO(0xB6, 0xF8)`, binds the device for SVA; returns the PASID.
        pub const DFL_PCI_SVA_BIND_DEV: u32 = $enc.io(DFL_FPGA_MAGIC, 0xF8);
        /// OFS kernels only: `_IO(0xB6, 0xF9)`, undoes `DFL_PCI_SVA_BIND_DEV`.
        pub const DFL_PCI_SVA_UNBIND_DEV: u32 = $enc.io(DFL_FPGA_MAGIC, 0xF9);
    };
}

ioctl_codes!(Encoding::Generic);

/// The same requests in the powerpc encoding.
pub mod powerpc {
    use super::{
        DFL_FME_BASE, DFL_FPGA_BASE, DFL_FPGA_MAGIC, DFL_PORT_BASE, Encoding, IrqSetHeader,
    };
    ioctl_codes!(Encoding::Powerpc);
}

/// The same requests in the encoding of the target this crate is built for.
pub mod native {
    use super::{
        DFL_FME_BASE, DFL_FPGA_BASE, DFL_FPGA_MAGIC, DFL_PORT_BASE, Encoding, IrqSetHeader,
    };
    ioctl_codes!(Encoding::NATIVE);
}

/// `struct dfl_fpga_port_info`, the argument of `DFL_FPGA_PORT_GET_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortInfoArg {
    /// In: the struct size, at least 16.
    pub argsz: u32,
    /// Out: 0.
    pub flags: u32,
    /// Out: MMIO regions (AFU, plus STP if present).
    pub num_regions: u32,
    /// Out: 0 on current hardware.
    pub num_umsgs: u32,
}

/// `struct dfl_fpga_port_region_info`, the argument of `DFL_FPGA_PORT_GET_REGION_INFO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortRegionInfoArg {
    /// In: the struct size, at least 32.
    pub argsz: u32,
    /// Out: `REGION_*` bits.
    pub flags: u32,
    /// In: `REGION_INDEX_*`.
    pub index: u32,
    /// In: must be 0.
    pub padding: u32,
    /// Out: region size in bytes.
    pub size: u64,
    /// Out: the `mmap` offset of the region on the port fd.
    pub offset: u64,
}

/// `struct dfl_fpga_port_dma_map`, the argument of `DFL_FPGA_PORT_DMA_MAP`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortDmaMapArg {
    /// In: the struct size, at least 32.
    pub argsz: u32,
    /// In: 0 on mainline; OFS also takes `DMA_MAP_FLAG_*`.
    pub flags: u32,
    /// In: page-aligned start of the user buffer.
    pub user_addr: u64,
    /// In: page-aligned, non-zero length.
    pub length: u64,
    /// Out: the device address of `user_addr`.
    pub iova: u64,
}

/// `struct dfl_fpga_port_dma_unmap`, the argument of `DFL_FPGA_PORT_DMA_UNMAP`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PortDmaUnmapArg {
    /// In: the struct size, at least 16.
    pub argsz: u32,
    /// In: 0.
    pub flags: u32,
    /// In: the start of a mapping, as DMA_MAP returned it.
    pub iova: u64,
}

/// `struct dfl_fpga_irq_set` without its trailing `s32 evtfds[count]` (negative = unbind).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqSetHeader {
    /// First interrupt index.
    pub start: u32,
    /// Number of eventfds that follow.
    pub count: u32,
}

/// `struct dfl_fpga_fme_port_pr`, the argument of `DFL_FPGA_FME_PORT_PR`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FmePortPrArg {
    /// In: the struct size, at least 24.
    pub argsz: u32,
    /// In: 0.
    pub flags: u32,
    /// In: the number (sysfs `id`) of the port to reprogram.
    pub port_id: u32,
    /// In: size of the bitstream in bytes.
    pub buffer_size: u32,
    /// In: user pointer to the bitstream.
    pub buffer_address: u64,
}

const _: () = assert!(size_of::<PortInfoArg>() == 16);
const _: () = assert!(size_of::<PortRegionInfoArg>() == 32);
const _: () = assert!(size_of::<PortDmaMapArg>() == 32);
const _: () = assert!(size_of::<PortDmaUnmapArg>() == 16);
const _: () = assert!(size_of::<IrqSetHeader>() == 8);
const _: () = assert!(size_of::<FmePortPrArg>() == 24);

/// Region flag: readable through `mmap`.
pub const REGION_READ: u32 = 1 << 0;
/// Region flag: writable through `mmap`.
pub const REGION_WRITE: u32 = 1 << 1;
/// Region flag: may be `mmap`ed at all.
pub const REGION_MMAP: u32 = 1 << 2;
/// Region index of the AFU's MMIO space (mmap offset 0).
pub const REGION_INDEX_AFU: u32 = 0;
/// Region index of SignalTap, if present.
pub const REGION_INDEX_STP: u32 = 1;

/// OFS `DMA_MAP` flag: the device may read the buffer (0 means read and write).
pub const DMA_MAP_FLAG_READ: u32 = 1 << 0;
/// OFS `DMA_MAP` flag: the device may write the buffer.
pub const DMA_MAP_FLAG_WRITE: u32 = 1 << 1;

/// Under the sysfs root: one `regionX` directory per FPGA region; a card's base region holds
/// its `dfl-fme.N` and `dfl-port.M` devices.
pub const SYSFS_FPGA_REGION_CLASS: &str = "class/fpga_region";
/// Prefix of the region directories (`region0`, ...).
pub const REGION_DIR_PREFIX: &str = "region";
/// Prefix of port devices, in sysfs and under `/dev` (`dfl-port.0`).
pub const PORT_DEV_PREFIX: &str = "dfl-port.";
/// Prefix of FME devices, in sysfs and under `/dev` (`dfl-fme.0`).
pub const FME_DEV_PREFIX: &str = "dfl-fme.";
/// Port attribute: the port number, decimal.
pub const PORT_ATTR_ID: &str = "id";
/// Port attribute: the AFU id as `%016llx%016llx` (high, low); `EBUSY` while in reset.
pub const PORT_ATTR_AFU_ID: &str = "afu_id";
/// FME attribute: the CPU socket the card hangs off, decimal.
pub const FME_ATTR_SOCKET_ID: &str = "socket_id";
/// Region entry: symlink to the PCI function, whose name is the bus address.
pub const REGION_DEVICE_LINK: &str = "device";
/// Region attribute: PCI vendor id, `0x%04x`.
pub const REGION_ATTR_VENDOR: &str = "device/vendor";
/// Region attribute: PCI device id, `0x%04x`.
pub const REGION_ATTR_DEVICE: &str = "device/device";

/// PCI vendor id of Intel's DFL cards.
pub const PCI_VENDOR_INTEL: u16 = 0x8086;
/// PF device id `INT_5_X`.
pub const PCI_DEVICE_PF_INT_5_X: u16 = 0xBCBD;
/// PF device id `INT_6_X`.
pub const PCI_DEVICE_PF_INT_6_X: u16 = 0xBCC0;
/// PF device id `DSC_1_X` (PAC Arria 10).
pub const PCI_DEVICE_PF_DSC_1_X: u16 = 0x09C4;
/// PF device id of the PAC N3000.
pub const PCI_DEVICE_PAC_N3000: u16 = 0x0B30;
/// PF device id of the PAC D5005.
pub const PCI_DEVICE_PAC_D5005: u16 = 0x0B2B;
/// PF device id of generic OFS cards (later kernels).
pub const PCI_DEVICE_PF_OFS: u16 = 0xBCCE;
/// VF device id `INT_5_X`.
pub const PCI_DEVICE_VF_INT_5_X: u16 = 0xBCBF;
/// VF device id `INT_6_X`.
pub const PCI_DEVICE_VF_INT_6_X: u16 = 0xBCC1;
/// VF device id `DSC_1_X`.
pub const PCI_DEVICE_VF_DSC_1_X: u16 = 0x09C5;
/// VF device id of the PAC D5005.
pub const PCI_DEVICE_VF_PAC_D5005: u16 = 0x0B2C;
/// VF device id of generic OFS cards (later kernels).
pub const PCI_DEVICE_VF_OFS: u16 = 0xBCCF;
/// Every PF device id above.
pub const PCI_DEVICE_PFS: [u16; 6] = [
    PCI_DEVICE_PF_INT_5_X,
    PCI_DEVICE_PF_INT_6_X,
    PCI_DEVICE_PF_DSC_1_X,
    PCI_DEVICE_PAC_N3000,
    PCI_DEVICE_PAC_D5005,
    PCI_DEVICE_PF_OFS,
];
/// Every VF device id above.
pub const PCI_DEVICE_VFS: [u16; 5] = [
    PCI_DEVICE_VF_INT_5_X,
    PCI_DEVICE_VF_INT_6_X,
    PCI_DEVICE_VF_DSC_1_X,
    PCI_DEVICE_VF_PAC_D5005,
    PCI_DEVICE_VF_OFS,
];
/// The FME device id OPAE's ASE simulator reports; software uses it to detect ASE.
pub const ASE_DEVICE_ID: u16 = 0x0A5E;

/// DFH type of an AFU header.
pub const DFH_TYPE_AFU: u8 = 1;
/// DFH type of a private feature.
pub const DFH_TYPE_PRIVATE: u8 = 3;
/// DFH type of an FPGA interface unit (FME, port).
pub const DFH_TYPE_FIU: u8 = 4;
/// Offset of `GUID_L` from an AFU or FIU DFH.
pub const DFH_GUID_L: u64 = 0x08;
/// Offset of `GUID_H` from an AFU or FIU DFH.
pub const DFH_GUID_H: u64 = 0x10;

/// DFH `[63:60]`: the node type (`DFH_TYPE_*`).
pub const fn dfh_type(dfh: u64) -> u8 {
    (dfh >> 60) as u8
}

/// DFH `[59:52]`: the DFH format version.
pub const fn dfh_version(dfh: u64) -> u8 {
    (dfh >> 52) as u8
}

/// DFH bit 40: this is the last node of the list.
pub const fn dfh_eol(dfh: u64) -> bool {
    dfh & (1 << 40) != 0
}

/// DFH `[39:16]`: byte offset from this node to the next.
pub const fn dfh_next(dfh: u64) -> u64 {
    (dfh >> 16) & 0xFF_FFFF
}

/// DFH `[15:12]`: the feature revision.
pub const fn dfh_revision(dfh: u64) -> u8 {
    ((dfh >> 12) & 0xF) as u8
}

/// DFH `[11:0]`: the feature id.
pub const fn dfh_feature_id(dfh: u64) -> u16 {
    (dfh & 0xFFF) as u16
}

/// NLB0, the native loopback AFU (mode LPBK1) that OPAE's `hello_fpga` drives: its id, CSR
/// map (byte offsets in the AFU MMIO window, 64-bit slots) and Device Status Memory layout.
pub mod nlb0 {
    use crate::types::Guid;

    /// `D8424DC4-A4A3-C413-F89E-433683F9040B` (`NLB400_MODE_0`).
    pub const AFU_ID: Guid = Guid::new(0xD842_4DC4_A4A3_C413, 0xF89E_4336_83F9_040B);
    /// The AFU DFH: type AFU, not EOL, next 0x1000, revision 1.
    pub const AFU_DFH: u64 = 0x1000_0000_1000_1000;
    /// Bytes per cache line; SRC/DST addresses and NUM_LINES count in these.
    pub const CACHE_LINE: u64 = 64;
    /// `SRC_ADDR`/`DST_ADDR` hold `iova >> CACHE_LINE_SHIFT`.
    pub const CACHE_LINE_SHIFT: u32 = 6;

    /// RO: [`AFU_DFH`].
    pub const CSR_AFU_DFH: u64 = 0x000;
    /// RO: `AFU_ID.low`.
    pub const CSR_AFU_ID_L: u64 = 0x008;
    /// RO: `AFU_ID.high`.
    pub const CSR_AFU_ID_H: u64 = 0x010;
    /// Reserved (next AFU), reads 0.
    pub const CSR_DFH_RSVD0: u64 = 0x018;
    /// Reserved, reads 0.
    pub const CSR_DFH_RSVD1: u64 = 0x020;
    /// RW scratch, 32 bits.
    pub const CSR_SCRATCHPAD0: u64 = 0x100;
    /// RW scratch, 32 bits (upper half of the SCRATCHPAD0 slot).
    pub const CSR_SCRATCHPAD1: u64 = 0x104;
    /// RW scratch, 64 bits.
    pub const CSR_SCRATCHPAD2: u64 = 0x108;
    /// RW: byte IOVA of the DSM (cache-line aligned), low half; 64-bit access covers both.
    pub const CSR_DSM_BASEL: u64 = 0x110;
    /// RW: high half of the DSM IOVA.
    pub const CSR_DSM_BASEH: u64 = 0x114;
    /// RW while stopped: source cache-line address (IOVA >> 6).
    pub const CSR_SRC_ADDR: u64 = 0x120;
    /// RW while stopped: destination cache-line address (IOVA >> 6).
    pub const CSR_DST_ADDR: u64 = 0x128;
    /// RW: number of cache lines to copy, [`NUM_LINES_MASK`] bits.
    pub const CSR_NUM_LINES: u64 = 0x130;
    /// RW: `CTL_*` bits.
    pub const CSR_CTL: u64 = 0x138;
    /// RW while stopped: `CFG_*` fields.
    pub const CSR_CFG: u64 = 0x140;
    /// RW while stopped: inactivity threshold.
    pub const CSR_INACT_THRESH: u64 = 0x148;
    /// RW: SW-test notification (mode 7).
    pub const CSR_SWTEST_MSG: u64 = 0x158;
    /// RO: `num_reads << 32 | num_writes`.
    pub const CSR_STATUS0: u64 = 0x160;
    /// RO: `reads_pending << 32 | writes_pending`; 0 once traffic has drained.
    pub const CSR_STATUS1: u64 = 0x168;
    /// RO: error vector.
    pub const CSR_ERROR: u64 = 0x170;
    /// RW while stopped: stride, [`STRIDE_MASK`] bits.
    pub const CSR_STRIDE: u64 = 0x178;
    /// Mode 7 arguments (nlb.h; NLB3/NLB7 builds).
    pub const CSR_MODE7_ARGS: u64 = 0x180;
    /// Software command queue (nlb.h; NLB3/NLB7 builds).
    pub const CSR_CMDQ_SW: u64 = 0x190;
    /// Hardware command queue (nlb.h; NLB3/NLB7 builds).
    pub const CSR_CMDQ_HW: u64 = 0x198;

    /// CTL bit 0: out of reset; writing 0 clears all test state.
    pub const CTL_RESET_N: u32 = 1 << 0;
    /// CTL bit 1: start the test.
    pub const CTL_START: u32 = 1 << 1;
    /// CTL bit 2: stop; forces completion (ends continuous mode).
    pub const CTL_STOP: u32 = 1 << 2;

    /// CFG bit 0: write-through (WrLine_I).
    pub const CFG_WRTHRU: u64 = 1 << 0;
    /// CFG bit 1: continuous mode, loops until `CTL_STOP`.
    pub const CFG_CONT: u64 = 1 << 1;
    /// CFG `[4:2]`: the test mode (`MODE_*`).
    pub const CFG_MODE_MASK: u64 = 0x7 << CFG_MODE_SHIFT;
    /// Shift of the CFG mode field.
    pub const CFG_MODE_SHIFT: u32 = 2;
    /// Mode: copy source lines to destination lines.
    pub const MODE_LPBK1: u64 = 0;
    /// Mode: read only.
    pub const MODE_READ: u64 = 1;
    /// Mode: write only.
    pub const MODE_WRITE: u64 = 2;
    /// Mode: read and write throughput.
    pub const MODE_TRPUT: u64 = 3;
    /// Mode: software test (uses `CSR_SWTEST_MSG`).
    pub const MODE_SW: u64 = 7;
    /// The CFG value `hello_fpga` writes: LPBK1 with read and write VC = VH0.
    pub const CFG_HELLO_FPGA: u64 = 0x42000;

    /// The writable bits of `CSR_NUM_LINES`.
    pub const NUM_LINES_MASK: u32 = 0xF_FFFF;
    /// The writable bits of `CSR_STRIDE`.
    pub const STRIDE_MASK: u32 = 0x3F;

    /// DSM offset of the status line the AFU writes when a test ends (u32 status word first).
    pub const DSM_STATUS: u64 = 0x40;
    /// Bit of the status word set when the test completed.
    pub const DSM_TEST_COMPLETE: u32 = 1 << 0;
    /// Status word `[15:1]`: `dsm_number`, incremented per status write.
    pub const DSM_NUMBER_MASK: u32 = 0x7FFF << DSM_NUMBER_SHIFT;
    /// Shift of `dsm_number` in the status word.
    pub const DSM_NUMBER_SHIFT: u32 = 1;
    /// DSM offset of `test_error` (u32).
    pub const DSM_TEST_ERROR: u64 = 0x44;
    /// DSM offset of `num_clocks` (u64, 40 bits used).
    pub const DSM_NUM_CLOCKS: u64 = 0x48;
    /// DSM offset of `num_reads` (u32).
    pub const DSM_NUM_READS: u64 = 0x50;
    /// DSM offset of `num_writes` (u32).
    pub const DSM_NUM_WRITES: u64 = 0x54;
    /// DSM offset of `start_overhead` in clocks (u32).
    pub const DSM_START_OVERHEAD: u64 = 0x58;
    /// DSM offset of `end_overhead` in clocks (u32).
    pub const DSM_END_OVERHEAD: u64 = 0x5C;
    /// DSM offset of the error info (upper half of the status line, to 0x7F).
    pub const DSM_ERROR_INFO: u64 = 0x60;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn struct_sizes_match_the_kernel() {
        assert_eq!(size_of::<PortInfoArg>(), 16);
        assert_eq!(size_of::<PortRegionInfoArg>(), 32);
        assert_eq!(size_of::<PortDmaMapArg>(), 32);
        assert_eq!(size_of::<PortDmaUnmapArg>(), 16);
        assert_eq!(size_of::<IrqSetHeader>(), 8);
        assert_eq!(size_of::<FmePortPrArg>(), 24);
        assert_eq!(std::mem::offset_of!(PortRegionInfoArg, size), 16);
        assert_eq!(std::mem::offset_of!(PortDmaMapArg, iova), 24);
        assert_eq!(std::mem::offset_of!(FmePortPrArg, buffer_address), 16);
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
            DFL_FPGA_GET_API_VERSION:        0x0000_B600 0x2000_B600;
            DFL_FPGA_CHECK_EXTENSION:        0x0000_B601 0x2000_B601;
            DFL_FPGA_PORT_RESET:             0x0000_B640 0x2000_B640;
            DFL_FPGA_PORT_GET_INFO:          0x0000_B641 0x2000_B641;
            DFL_FPGA_PORT_GET_REGION_INFO:   0x0000_B642 0x2000_B642;
            DFL_FPGA_PORT_DMA_MAP:           0x0000_B643 0x2000_B643;
            DFL_FPGA_PORT_DMA_UNMAP:         0x0000_B644 0x2000_B644;
            DFL_FPGA_PORT_ERR_GET_IRQ_NUM:   0x8004_B645 0x4004_B645;
            DFL_FPGA_PORT_ERR_SET_IRQ:       0x4008_B646 0x8008_B646;
            DFL_FPGA_PORT_UINT_GET_IRQ_NUM:  0x8004_B647 0x4004_B647;
            DFL_FPGA_PORT_UINT_SET_IRQ:      0x4008_B648 0x8008_B648;
            DFL_FPGA_FME_PORT_PR:            0x0000_B680 0x2000_B680;
            DFL_FPGA_FME_PORT_RELEASE:       0x4004_B681 0x8004_B681;
            DFL_FPGA_FME_PORT_ASSIGN:        0x4004_B682 0x8004_B682;
            DFL_FPGA_FME_ERR_GET_IRQ_NUM:    0x8004_B683 0x4004_B683;
            DFL_FPGA_FME_ERR_SET_IRQ:        0x4008_B684 0x8008_B684;
            DFL_CXL_CACHE_GET_REGION_INFO:   0x0000_B6A0 0x2000_B6A0;
            DFL_CXL_CACHE_NUMA_BUFFER_MAP:   0x0000_B6A1 0x2000_B6A1;
            DFL_CXL_CACHE_NUMA_BUFFER_UNMAP: 0x0000_B6A2 0x2000_B6A2;
            DFL_PCI_SVA_BIND_DEV:            0x0000_B6F8 0x2000_B6F8;
            DFL_PCI_SVA_UNBIND_DEV:          0x0000_B6F9 0x2000_B6F9;
        }
    }

    #[test]
    fn native_codes_are_the_build_targets() {
        let ppc = cfg!(any(target_arch = "powerpc", target_arch = "powerpc64"));
        let expected = if ppc {
            powerpc::DFL_FPGA_PORT_DMA_MAP
        } else {
            DFL_FPGA_PORT_DMA_MAP
        };
        assert_eq!(native::DFL_FPGA_PORT_DMA_MAP, expected);
    }

    #[test]
    fn nlb0_dfh_decodes_as_documented() {
        let dfh = nlb0::AFU_DFH;
        assert_eq!(dfh_type(dfh), DFH_TYPE_AFU);
        assert_eq!(dfh_version(dfh), 0);
        assert!(!dfh_eol(dfh));
        assert_eq!(dfh_next(dfh), 0x1000);
        assert_eq!(dfh_revision(dfh), 1);
        assert_eq!(dfh_feature_id(dfh), 0);
        assert!(dfh_eol(1 << 40));
    }

    #[test]
    fn nlb0_facts_are_consistent() {
        assert_eq!(
            nlb0::AFU_ID.to_string(),
            "D8424DC4-A4A3-C413-F89E-433683F9040B"
        );
        assert_eq!(nlb0::CFG_MODE_MASK, 0x1C);
        let hello = nlb0::CFG_HELLO_FPGA;
        assert_eq!(
            (hello & nlb0::CFG_MODE_MASK) >> nlb0::CFG_MODE_SHIFT,
            nlb0::MODE_LPBK1
        );
        assert_eq!(hello & (nlb0::CFG_CONT | nlb0::CFG_WRTHRU), 0);
        assert_eq!(nlb0::MODE_SW << nlb0::CFG_MODE_SHIFT, nlb0::CFG_MODE_MASK);
        assert_eq!(nlb0::DSM_NUMBER_MASK, 0xFFFE);
        assert_eq!(1 << nlb0::CACHE_LINE_SHIFT, nlb0::CACHE_LINE);
        assert_eq!(nlb0::CTL_RESET_N | nlb0::CTL_START | nlb0::CTL_STOP, 7);
    }
}
