//! Facts of the Xilinx XRT userspace ABI: the xocl DRM render-node driver (`xocl_ioctl.h`,
//! `xrt_mem.h`), the ERT command packets (`ert.h`), the HLS control register block and the
//! `vadd` kernel, plus the zocl values that differ from xocl.
//!
//! The ioctl codes at the top level are pinned to **XRT >= 2.15 (2023.1, HEAD)**, in the
//! generic encoding (x86_64, arm64). The DRM core dispatches on `_IOC_NR` alone (it indexes the
//! driver table with `nr - DRM_COMMAND_BASE` and pads the struct to the driver's size), so the
//! request *number* is what must agree with the driver, and 2.15 renumbered every request after
//! `CTX` when it inserted the hardware-context ioctls. [`xrt_2_14`] keeps the older numbering.

use crate::devices::ioctl::Encoding;

/// The DRM ioctl type byte, `'d'`.
pub const DRM_IOCTL_BASE: u32 = 0x64;
/// First `nr` of driver-private DRM requests.
pub const DRM_COMMAND_BASE: u32 = 0x40;

/// `_IOC_NR(code)`: the request number, the only part `drm_ioctl()` dispatches on.
pub const fn ioctl_nr(code: u32) -> u32 {
    code & 0xFF
}

/// `nr` of `DRM_IOCTL_XOCL_CREATE_BO`.
pub const XOCL_NR_CREATE_BO: u32 = DRM_COMMAND_BASE;
/// `nr` of `DRM_IOCTL_XOCL_USERPTR_BO`.
pub const XOCL_NR_USERPTR_BO: u32 = DRM_COMMAND_BASE + 0x01;
/// `nr` of `DRM_IOCTL_XOCL_MAP_BO`.
pub const XOCL_NR_MAP_BO: u32 = DRM_COMMAND_BASE + 0x02;
/// `nr` of `DRM_IOCTL_XOCL_SYNC_BO`.
pub const XOCL_NR_SYNC_BO: u32 = DRM_COMMAND_BASE + 0x03;
/// `nr` of `DRM_IOCTL_XOCL_INFO_BO`.
pub const XOCL_NR_INFO_BO: u32 = DRM_COMMAND_BASE + 0x04;
/// `nr` of `DRM_IOCTL_XOCL_PWRITE_BO`.
pub const XOCL_NR_PWRITE_BO: u32 = DRM_COMMAND_BASE + 0x05;
/// `nr` of `DRM_IOCTL_XOCL_PREAD_BO`.
pub const XOCL_NR_PREAD_BO: u32 = DRM_COMMAND_BASE + 0x06;
/// `nr` of the OCL_RESET slot, which has no request macro.
pub const XOCL_NR_OCL_RESET: u32 = DRM_COMMAND_BASE + 0x07;
/// `nr` of `DRM_IOCTL_XOCL_CTX`.
pub const XOCL_NR_CTX: u32 = DRM_COMMAND_BASE + 0x08;
/// `nr` of `DRM_IOCTL_XOCL_CREATE_HW_CTX` (from 2.15).
pub const XOCL_NR_CREATE_HW_CTX: u32 = DRM_COMMAND_BASE + 0x09;
/// `nr` of `DRM_IOCTL_XOCL_DESTROY_HW_CTX` (from 2.15).
pub const XOCL_NR_DESTROY_HW_CTX: u32 = DRM_COMMAND_BASE + 0x0A;
/// `nr` of `DRM_IOCTL_XOCL_OPEN_CU_CTX` (from 2.15).
pub const XOCL_NR_OPEN_CU_CTX: u32 = DRM_COMMAND_BASE + 0x0B;
/// `nr` of `DRM_IOCTL_XOCL_CLOSE_CU_CTX` (from 2.15).
pub const XOCL_NR_CLOSE_CU_CTX: u32 = DRM_COMMAND_BASE + 0x0C;
/// `nr` of `DRM_IOCTL_XOCL_INFO`.
pub const XOCL_NR_INFO: u32 = DRM_COMMAND_BASE + 0x0D;
/// `nr` of `DRM_IOCTL_XOCL_PREAD_UNMGD`.
pub const XOCL_NR_PREAD_UNMGD: u32 = DRM_COMMAND_BASE + 0x0E;
/// `nr` of `DRM_IOCTL_XOCL_PWRITE_UNMGD`.
pub const XOCL_NR_PWRITE_UNMGD: u32 = DRM_COMMAND_BASE + 0x0F;
/// `nr` of `DRM_IOCTL_XOCL_USAGE_STAT`.
pub const XOCL_NR_USAGE_STAT: u32 = DRM_COMMAND_BASE + 0x10;
/// `nr` of `DRM_IOCTL_XOCL_EXECBUF`.
pub const XOCL_NR_EXECBUF: u32 = DRM_COMMAND_BASE + 0x11;
/// `nr` of `DRM_IOCTL_XOCL_HW_CTX_EXECBUF` (from 2.15).
pub const XOCL_NR_HW_CTX_EXECBUF: u32 = DRM_COMMAND_BASE + 0x12;
/// `nr` of `DRM_IOCTL_XOCL_USER_INTR`.
pub const XOCL_NR_USER_INTR: u32 = DRM_COMMAND_BASE + 0x13;
/// `nr` of `DRM_IOCTL_XOCL_READ_AXLF`.
pub const XOCL_NR_READ_AXLF: u32 = DRM_COMMAND_BASE + 0x14;
/// `nr` of `DRM_IOCTL_XOCL_HOT_RESET`.
pub const XOCL_NR_HOT_RESET: u32 = DRM_COMMAND_BASE + 0x15;
/// `nr` of `DRM_IOCTL_XOCL_RECLOCK`.
pub const XOCL_NR_RECLOCK: u32 = DRM_COMMAND_BASE + 0x16;
/// `nr` of `DRM_IOCTL_XOCL_ALLOC_CMA`.
pub const XOCL_NR_ALLOC_CMA: u32 = DRM_COMMAND_BASE + 0x17;
/// `nr` of `DRM_IOCTL_XOCL_FREE_CMA`.
pub const XOCL_NR_FREE_CMA: u32 = DRM_COMMAND_BASE + 0x18;
/// `nr` of `DRM_IOCTL_XOCL_COPY_BO`.
pub const XOCL_NR_COPY_BO: u32 = DRM_COMMAND_BASE + 0x19;
/// `nr` of `DRM_IOCTL_XOCL_SET_CU_READONLY_RANGE`.
pub const XOCL_NR_SET_CU_READONLY_RANGE: u32 = DRM_COMMAND_BASE + 0x1A;

const G: Encoding = Encoding::Generic;

/// `DRM_IOWR(CREATE_BO, CreateBoArg)`: allocates a BO; returns its GEM handle.
pub const DRM_IOCTL_XOCL_CREATE_BO: u32 = G.iowr::<CreateBoArg>(DRM_IOCTL_BASE, XOCL_NR_CREATE_BO);
/// `DRM_IOWR(USERPTR_BO, UserptrBoArg)`: wraps pinned user memory as a BO.
pub const DRM_IOCTL_XOCL_USERPTR_BO: u32 =
    G.iowr::<UserptrBoArg>(DRM_IOCTL_BASE, XOCL_NR_USERPTR_BO);
/// `DRM_IOWR(MAP_BO, MapBoArg)`: returns the fake `mmap` offset of a BO.
pub const DRM_IOCTL_XOCL_MAP_BO: u32 = G.iowr::<MapBoArg>(DRM_IOCTL_BASE, XOCL_NR_MAP_BO);
/// `DRM_IOWR(SYNC_BO, SyncBoArg)`: copies host backing to device memory or back.
pub const DRM_IOCTL_XOCL_SYNC_BO: u32 = G.iowr::<SyncBoArg>(DRM_IOCTL_BASE, XOCL_NR_SYNC_BO);
/// `DRM_IOWR(INFO_BO, InfoBoArg)`: size, flags and device address of a BO.
pub const DRM_IOCTL_XOCL_INFO_BO: u32 = G.iowr::<InfoBoArg>(DRM_IOCTL_BASE, XOCL_NR_INFO_BO);
/// `DRM_IOWR(PWRITE_BO, PwriteBoArg)`: copies user memory into a BO's host backing.
pub const DRM_IOCTL_XOCL_PWRITE_BO: u32 = G.iowr::<PwriteBoArg>(DRM_IOCTL_BASE, XOCL_NR_PWRITE_BO);
/// `DRM_IOWR(PREAD_BO, PreadBoArg)`: copies a BO's host backing into user memory.
pub const DRM_IOCTL_XOCL_PREAD_BO: u32 = G.iowr::<PreadBoArg>(DRM_IOCTL_BASE, XOCL_NR_PREAD_BO);
/// `DRM_IOWR(CTX, CtxArg)`: opens or closes a context on a CU of the loaded xclbin.
pub const DRM_IOCTL_XOCL_CTX: u32 = G.iowr::<CtxArg>(DRM_IOCTL_BASE, XOCL_NR_CTX);
/// `DRM_IOWR(CREATE_HW_CTX, CreateHwCtxArg)`: loads an xclbin into a hardware context.
pub const DRM_IOCTL_XOCL_CREATE_HW_CTX: u32 =
    G.iowr::<CreateHwCtxArg>(DRM_IOCTL_BASE, XOCL_NR_CREATE_HW_CTX);
/// `DRM_IOWR(DESTROY_HW_CTX, DestroyHwCtxArg)`.
pub const DRM_IOCTL_XOCL_DESTROY_HW_CTX: u32 =
    G.iowr::<DestroyHwCtxArg>(DRM_IOCTL_BASE, XOCL_NR_DESTROY_HW_CTX);
/// `DRM_IOWR(OPEN_CU_CTX, OpenCuCtxArg)`: opens a CU by name inside a hardware context.
pub const DRM_IOCTL_XOCL_OPEN_CU_CTX: u32 =
    G.iowr::<OpenCuCtxArg>(DRM_IOCTL_BASE, XOCL_NR_OPEN_CU_CTX);
/// `DRM_IOWR(CLOSE_CU_CTX, CloseCuCtxArg)`.
pub const DRM_IOCTL_XOCL_CLOSE_CU_CTX: u32 =
    G.iowr::<CloseCuCtxArg>(DRM_IOCTL_BASE, XOCL_NR_CLOSE_CU_CTX);
/// `DRM_IOWR(INFO, struct drm_xocl_info)` (84 bytes): PCI ids and versions.
pub const DRM_IOCTL_XOCL_INFO: u32 = G.iowr::<[u8; 84]>(DRM_IOCTL_BASE, XOCL_NR_INFO);
/// `DRM_IOWR(PREAD_UNMGD, struct drm_xocl_pread_unmgd)` (32 bytes): DMA from a raw device address.
pub const DRM_IOCTL_XOCL_PREAD_UNMGD: u32 = G.iowr::<[u8; 32]>(DRM_IOCTL_BASE, XOCL_NR_PREAD_UNMGD);
/// `DRM_IOWR(PWRITE_UNMGD, struct drm_xocl_pwrite_unmgd)` (32 bytes): DMA to a raw device address.
pub const DRM_IOCTL_XOCL_PWRITE_UNMGD: u32 =
    G.iowr::<[u8; 32]>(DRM_IOCTL_BASE, XOCL_NR_PWRITE_UNMGD);
/// `DRM_IOWR(USAGE_STAT, struct drm_xocl_usage_stat)` (328 bytes on x86_64).
pub const DRM_IOCTL_XOCL_USAGE_STAT: u32 = G.iowr::<[u8; 328]>(DRM_IOCTL_BASE, XOCL_NR_USAGE_STAT);
/// `DRM_IOWR(EXECBUF, ExecbufArg)`: submits the command packet in an exec BO.
pub const DRM_IOCTL_XOCL_EXECBUF: u32 = G.iowr::<ExecbufArg>(DRM_IOCTL_BASE, XOCL_NR_EXECBUF);
/// `DRM_IOWR(HW_CTX_EXECBUF, struct drm_xocl_hw_ctx_execbuf)`: same layout as [`ExecbufArg`].
pub const DRM_IOCTL_XOCL_HW_CTX_EXECBUF: u32 =
    G.iowr::<ExecbufArg>(DRM_IOCTL_BASE, XOCL_NR_HW_CTX_EXECBUF);
/// `DRM_IOWR(USER_INTR, struct drm_xocl_user_intr)` (12 bytes): binds an eventfd to an MSI-X vector.
pub const DRM_IOCTL_XOCL_USER_INTR: u32 = G.iowr::<[u8; 12]>(DRM_IOCTL_BASE, XOCL_NR_USER_INTR);
/// `DRM_IOWR(READ_AXLF, AxlfArg)`: loads an xclbin.
pub const DRM_IOCTL_XOCL_READ_AXLF: u32 = G.iowr::<AxlfArg>(DRM_IOCTL_BASE, XOCL_NR_READ_AXLF);
/// `DRM_IO(HOT_RESET)`: no argument.
pub const DRM_IOCTL_XOCL_HOT_RESET: u32 = G.io(DRM_IOCTL_BASE, XOCL_NR_HOT_RESET);
/// `DRM_IOWR(RECLOCK, struct drm_xocl_reclock_info)` (12 bytes).
pub const DRM_IOCTL_XOCL_RECLOCK: u32 = G.iowr::<[u8; 12]>(DRM_IOCTL_BASE, XOCL_NR_RECLOCK);
/// `DRM_IOWR(ALLOC_CMA, struct drm_xocl_alloc_cma_info)` (24 bytes).
pub const DRM_IOCTL_XOCL_ALLOC_CMA: u32 = G.iowr::<[u8; 24]>(DRM_IOCTL_BASE, XOCL_NR_ALLOC_CMA);
/// `DRM_IO(FREE_CMA)`: no argument.
pub const DRM_IOCTL_XOCL_FREE_CMA: u32 = G.io(DRM_IOCTL_BASE, XOCL_NR_FREE_CMA);
/// `DRM_IOWR(COPY_BO, CopyBoArg)`: device-side copy between two BOs.
pub const DRM_IOCTL_XOCL_COPY_BO: u32 = G.iowr::<CopyBoArg>(DRM_IOCTL_BASE, XOCL_NR_COPY_BO);
/// `DRM_IOWR(SET_CU_READONLY_RANGE, struct drm_xocl_set_cu_range)` (12 bytes).
pub const DRM_IOCTL_XOCL_SET_CU_READONLY_RANGE: u32 =
    G.iowr::<[u8; 12]>(DRM_IOCTL_BASE, XOCL_NR_SET_CU_READONLY_RANGE);

/// Generic DRM `_IOW('d', 0x09, GemCloseArg)`: frees a BO handle (`xclFreeBO`).
pub const DRM_IOCTL_GEM_CLOSE: u32 = G.iow::<GemCloseArg>(DRM_IOCTL_BASE, 0x09);
/// Generic DRM `_IOWR('d', 0x2D, PrimeHandleArg)`: exports a BO as a dma-buf fd.
pub const DRM_IOCTL_PRIME_HANDLE_TO_FD: u32 = G.iowr::<PrimeHandleArg>(DRM_IOCTL_BASE, 0x2D);
/// Generic DRM `_IOWR('d', 0x2E, PrimeHandleArg)`: imports a dma-buf fd as a BO.
pub const DRM_IOCTL_PRIME_FD_TO_HANDLE: u32 = G.iowr::<PrimeHandleArg>(DRM_IOCTL_BASE, 0x2E);

/// The numbering of XRT <= 2.14 (2.8 layout): no hardware-context requests, so everything
/// after `CTX` sits four or five places lower. Requests up to `CTX` are the same as the
/// default ones and are re-exported.
pub mod xrt_2_14 {
    use super::{AxlfArg, CopyBoArg, DRM_COMMAND_BASE, DRM_IOCTL_BASE, ExecbufArg, G};

    pub use super::{
        DRM_IOCTL_XOCL_CREATE_BO, DRM_IOCTL_XOCL_CTX, DRM_IOCTL_XOCL_INFO_BO,
        DRM_IOCTL_XOCL_MAP_BO, DRM_IOCTL_XOCL_PREAD_BO, DRM_IOCTL_XOCL_PWRITE_BO,
        DRM_IOCTL_XOCL_SYNC_BO, DRM_IOCTL_XOCL_USERPTR_BO,
    };

    /// `nr` of `DRM_IOCTL_XOCL_INFO`.
    pub const XOCL_NR_INFO: u32 = DRM_COMMAND_BASE + 0x09;
    /// `nr` of `DRM_IOCTL_XOCL_PREAD_UNMGD`.
    pub const XOCL_NR_PREAD_UNMGD: u32 = DRM_COMMAND_BASE + 0x0A;
    /// `nr` of `DRM_IOCTL_XOCL_PWRITE_UNMGD`.
    pub const XOCL_NR_PWRITE_UNMGD: u32 = DRM_COMMAND_BASE + 0x0B;
    /// `nr` of `DRM_IOCTL_XOCL_USAGE_STAT`.
    pub const XOCL_NR_USAGE_STAT: u32 = DRM_COMMAND_BASE + 0x0C;
    /// `nr` of `DRM_IOCTL_XOCL_EXECBUF`.
    pub const XOCL_NR_EXECBUF: u32 = DRM_COMMAND_BASE + 0x0D;
    /// `nr` of `DRM_IOCTL_XOCL_USER_INTR`.
    pub const XOCL_NR_USER_INTR: u32 = DRM_COMMAND_BASE + 0x0E;
    /// `nr` of `DRM_IOCTL_XOCL_READ_AXLF`.
    pub const XOCL_NR_READ_AXLF: u32 = DRM_COMMAND_BASE + 0x0F;
    /// `nr` of `DRM_IOCTL_XOCL_HOT_RESET`.
    pub const XOCL_NR_HOT_RESET: u32 = DRM_COMMAND_BASE + 0x10;
    /// `nr` of `DRM_IOCTL_XOCL_RECLOCK`.
    pub const XOCL_NR_RECLOCK: u32 = DRM_COMMAND_BASE + 0x11;
    /// `nr` of `DRM_IOCTL_XOCL_ALLOC_CMA`.
    pub const XOCL_NR_ALLOC_CMA: u32 = DRM_COMMAND_BASE + 0x12;
    /// `nr` of `DRM_IOCTL_XOCL_FREE_CMA`.
    pub const XOCL_NR_FREE_CMA: u32 = DRM_COMMAND_BASE + 0x13;
    /// `nr` of `DRM_IOCTL_XOCL_COPY_BO`.
    pub const XOCL_NR_COPY_BO: u32 = DRM_COMMAND_BASE + 0x14;
    /// `nr` of `DRM_IOCTL_XOCL_SET_CU_READONLY_RANGE` (2.14 only).
    pub const XOCL_NR_SET_CU_READONLY_RANGE: u32 = DRM_COMMAND_BASE + 0x15;

    /// `DRM_IOWR(INFO)`, 84 bytes.
    pub const DRM_IOCTL_XOCL_INFO: u32 = G.iowr::<[u8; 84]>(DRM_IOCTL_BASE, XOCL_NR_INFO);
    /// `DRM_IOWR(PREAD_UNMGD)`, 32 bytes.
    pub const DRM_IOCTL_XOCL_PREAD_UNMGD: u32 =
        G.iowr::<[u8; 32]>(DRM_IOCTL_BASE, XOCL_NR_PREAD_UNMGD);
    /// `DRM_IOWR(PWRITE_UNMGD)`, 32 bytes.
    pub const DRM_IOCTL_XOCL_PWRITE_UNMGD: u32 =
        G.iowr::<[u8; 32]>(DRM_IOCTL_BASE, XOCL_NR_PWRITE_UNMGD);
    /// `DRM_IOWR(USAGE_STAT)`, 328 bytes on x86_64.
    pub const DRM_IOCTL_XOCL_USAGE_STAT: u32 =
        G.iowr::<[u8; 328]>(DRM_IOCTL_BASE, XOCL_NR_USAGE_STAT);
    /// `DRM_IOWR(EXECBUF, ExecbufArg)`.
    pub const DRM_IOCTL_XOCL_EXECBUF: u32 = G.iowr::<ExecbufArg>(DRM_IOCTL_BASE, XOCL_NR_EXECBUF);
    /// `DRM_IOWR(USER_INTR)`, 12 bytes.
    pub const DRM_IOCTL_XOCL_USER_INTR: u32 = G.iowr::<[u8; 12]>(DRM_IOCTL_BASE, XOCL_NR_USER_INTR);
    /// `DRM_IOWR(READ_AXLF)` with the 40-byte `drm_xocl_axlf` of 2.13 and 2.14.
    pub const DRM_IOCTL_XOCL_READ_AXLF: u32 = G.iowr::<AxlfArg>(DRM_IOCTL_BASE, XOCL_NR_READ_AXLF);
    /// `DRM_IOWR(READ_AXLF)` with the 32-byte `drm_xocl_axlf` of 2.11 (no `flags`).
    pub const DRM_IOCTL_XOCL_READ_AXLF_2_11: u32 =
        G.iowr::<[u8; 32]>(DRM_IOCTL_BASE, XOCL_NR_READ_AXLF);
    /// `DRM_IOWR(READ_AXLF)` with the 24-byte `drm_xocl_axlf` of 2.8 (no `kds_cfg`, no `flags`).
    pub const DRM_IOCTL_XOCL_READ_AXLF_2_8: u32 =
        G.iowr::<[u8; 24]>(DRM_IOCTL_BASE, XOCL_NR_READ_AXLF);
    /// `DRM_IO(HOT_RESET)`.
    pub const DRM_IOCTL_XOCL_HOT_RESET: u32 = G.io(DRM_IOCTL_BASE, XOCL_NR_HOT_RESET);
    /// `DRM_IOWR(RECLOCK)`, 12 bytes.
    pub const DRM_IOCTL_XOCL_RECLOCK: u32 = G.iowr::<[u8; 12]>(DRM_IOCTL_BASE, XOCL_NR_RECLOCK);
    /// `DRM_IOWR(ALLOC_CMA)`, 24 bytes.
    pub const DRM_IOCTL_XOCL_ALLOC_CMA: u32 = G.iowr::<[u8; 24]>(DRM_IOCTL_BASE, XOCL_NR_ALLOC_CMA);
    /// `DRM_IO(FREE_CMA)`.
    pub const DRM_IOCTL_XOCL_FREE_CMA: u32 = G.io(DRM_IOCTL_BASE, XOCL_NR_FREE_CMA);
    /// `DRM_IOWR(COPY_BO, CopyBoArg)`.
    pub const DRM_IOCTL_XOCL_COPY_BO: u32 = G.iowr::<CopyBoArg>(DRM_IOCTL_BASE, XOCL_NR_COPY_BO);
    /// `DRM_IOWR(SET_CU_READONLY_RANGE)`, 12 bytes (2.14 only).
    pub const DRM_IOCTL_XOCL_SET_CU_READONLY_RANGE: u32 =
        G.iowr::<[u8; 12]>(DRM_IOCTL_BASE, XOCL_NR_SET_CU_READONLY_RANGE);
}

/// `struct drm_xocl_create_bo`, the argument of `CREATE_BO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateBoArg {
    /// In: size in bytes (the driver page-aligns it).
    pub size: u64,
    /// Out: the GEM handle (> 0).
    pub handle: u32,
    /// In: `BO_FLAGS_*` type bits plus the bank index.
    pub flags: u32,
    /// In: legacy type, 0.
    pub kind: u32,
    /// Padding to 24 bytes.
    pub pad: u32,
}

/// `struct drm_xocl_userptr_bo`, the argument of `USERPTR_BO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UserptrBoArg {
    /// In: page-aligned user address.
    pub addr: u64,
    /// In: size in bytes.
    pub size: u64,
    /// Out: the GEM handle.
    pub handle: u32,
    /// In: `BO_FLAGS_*` plus the bank index.
    pub flags: u32,
    /// In: legacy type, 0.
    pub kind: u32,
    /// Padding to 32 bytes.
    pub pad: u32,
}

/// `struct drm_xocl_map_bo`, the argument of `MAP_BO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapBoArg {
    /// In: the BO.
    pub handle: u32,
    /// Padding, 0.
    pub pad: u32,
    /// Out: the fake `mmap` offset (at least [`BO_MMAP_OFFSET_BASE`]).
    pub offset: u64,
}

/// `struct drm_xocl_sync_bo`, the argument of `SYNC_BO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SyncBoArg {
    /// In: the BO.
    pub handle: u32,
    /// In: 0.
    pub flags: u32,
    /// In: bytes to sync.
    pub size: u64,
    /// In: offset into the BO.
    pub offset: u64,
    /// In: [`SYNC_BO_TO_DEVICE`] or [`SYNC_BO_FROM_DEVICE`].
    pub dir: u32,
    /// Padding to 32 bytes.
    pub pad: u32,
}

/// `struct drm_xocl_info_bo`, the argument of `INFO_BO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InfoBoArg {
    /// In: the BO.
    pub handle: u32,
    /// Out: the BO's flags.
    pub flags: u32,
    /// Out: size in bytes.
    pub size: u64,
    /// Out: the device address.
    pub paddr: u64,
}

/// `struct drm_xocl_pwrite_bo`, the argument of `PWRITE_BO` (and, as [`PreadBoArg`], `PREAD_BO`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PwriteBoArg {
    /// In: the BO.
    pub handle: u32,
    /// Padding, 0.
    pub pad: u32,
    /// In: offset into the BO.
    pub offset: u64,
    /// In: bytes to copy.
    pub size: u64,
    /// In: user pointer.
    pub data_ptr: u64,
}

/// `struct drm_xocl_pread_bo`: the same layout as [`PwriteBoArg`].
pub type PreadBoArg = PwriteBoArg;

/// `struct drm_xocl_copy_bo`, the argument of `COPY_BO`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CopyBoArg {
    /// In: destination BO.
    pub dst_handle: u32,
    /// In: source BO.
    pub src_handle: u32,
    /// In: bytes to copy.
    pub size: u64,
    /// In: offset into the destination.
    pub dst_offset: u64,
    /// In: offset into the source.
    pub src_offset: u64,
}

/// `struct drm_xocl_ctx`, the argument of `CTX`. 32 bytes on every ABI: the uuid has alignment 1.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CtxArg {
    /// In: `CTX_OP_*`.
    pub op: u32,
    /// In: the uuid of the loaded xclbin, raw bytes.
    pub xclbin_id: [u8; 16],
    /// In: CU index, or [`CTX_VIRT_CU_INDEX`].
    pub cu_index: u32,
    /// In: [`CTX_SHARED`] or [`CTX_EXCLUSIVE`].
    pub flags: u32,
    /// Unused.
    pub handle: u32,
}

/// `struct drm_xocl_kds`: the KDS configuration passed with `READ_AXLF`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KdsConfig {
    /// Command slot size in bytes.
    pub slot_size: u32,
    /// `KDS_*` feature bits.
    pub features: u32,
}

/// `KdsConfig::features`: use the embedded scheduler (ERT).
pub const KDS_ERT: u32 = 1 << 0;
/// `KdsConfig::features`: poll for completion instead of interrupts.
pub const KDS_POLLING: u32 = 1 << 1;
/// `KdsConfig::features`: CU DMA.
pub const KDS_CU_DMA: u32 = 1 << 2;
/// `KdsConfig::features`: CU interrupts.
pub const KDS_CU_ISR: u32 = 1 << 3;
/// `KdsConfig::features`: command-queue interrupts.
pub const KDS_CQ_INT: u32 = 1 << 4;
/// `KdsConfig::features`: dataflow kernels.
pub const KDS_DATAFLOW: u32 = 1 << 5;
/// `KdsConfig::features`: shared read/write CU access.
pub const KDS_RW_SHARED: u32 = 1 << 6;

/// `struct drm_xocl_axlf` (XRT >= 2.13), the argument of `READ_AXLF`; pointers as `u64`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AxlfArg {
    /// In: user pointer to the xclbin image.
    pub xclbin: u64,
    /// In: size of the `kernels` blob in bytes.
    pub ksize: i32,
    /// Padding, 0.
    pub pad0: u32,
    /// In: user pointer to the `kernel_info` blob.
    pub kernels: u64,
    /// In: KDS configuration.
    pub kds_cfg: KdsConfig,
    /// In: `AXLF_*`.
    pub flags: u32,
    /// Padding to 40 bytes.
    pub pad1: u32,
}

/// `struct drm_xocl_create_hw_ctx`, the argument of `CREATE_HW_CTX`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CreateHwCtxArg {
    /// In: user pointer to an [`AxlfArg`].
    pub axlf_ptr: u64,
    /// In: quality of service.
    pub qos: u32,
    /// Out: the hardware context id.
    pub hw_context: u32,
}

/// `struct drm_xocl_destroy_hw_ctx`, the argument of `DESTROY_HW_CTX`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DestroyHwCtxArg {
    /// In: the hardware context id.
    pub hw_context: u32,
}

/// `struct drm_xocl_open_cu_ctx`, the argument of `OPEN_CU_CTX`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenCuCtxArg {
    /// In: the hardware context id.
    pub hw_context: u32,
    /// In: NUL-terminated `kernel:instance`.
    pub cu_name: [u8; 64],
    /// In: [`CTX_SHARED`] or [`CTX_EXCLUSIVE`].
    pub flags: u32,
    /// Out: the CU index.
    pub cu_index: u32,
}

impl Default for OpenCuCtxArg {
    fn default() -> Self {
        OpenCuCtxArg {
            hw_context: 0,
            cu_name: [0; 64],
            flags: 0,
            cu_index: 0,
        }
    }
}

/// `struct drm_xocl_close_cu_ctx`, the argument of `CLOSE_CU_CTX`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CloseCuCtxArg {
    /// In: the hardware context id.
    pub hw_context: u32,
    /// In: the CU index.
    pub cu_index: u32,
}

/// `struct drm_xocl_execbuf` (and `drm_xocl_hw_ctx_execbuf`, whose first field is the
/// hardware context id), the argument of `EXECBUF`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExecbufArg {
    /// In: 0 (or the hardware context id for `HW_CTX_EXECBUF`).
    pub ctx_id: u32,
    /// In: the exec BO holding the command packet.
    pub exec_bo_handle: u32,
    /// In: exec BOs that must complete first, 0-terminated.
    pub deps: [u32; MAX_DEPENT_CMD_BO],
}

/// `MAX_DEPENT_CMD_BO`: dependencies an `EXECBUF` can name.
pub const MAX_DEPENT_CMD_BO: usize = 8;

/// `struct drm_gem_close`, the argument of [`DRM_IOCTL_GEM_CLOSE`].
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GemCloseArg {
    /// In: the BO handle.
    pub handle: u32,
    /// Padding, 0.
    pub pad: u32,
}

/// `struct drm_prime_handle`, the argument of the two PRIME requests.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PrimeHandleArg {
    /// The BO handle (in for HANDLE_TO_FD, out for FD_TO_HANDLE).
    pub handle: u32,
    /// In: `O_CLOEXEC` / `O_RDWR` for HANDLE_TO_FD.
    pub flags: u32,
    /// The dma-buf fd (out for HANDLE_TO_FD, in for FD_TO_HANDLE).
    pub fd: i32,
}

const _: () = assert!(size_of::<CreateBoArg>() == 24);
const _: () = assert!(size_of::<UserptrBoArg>() == 32);
const _: () = assert!(size_of::<MapBoArg>() == 16);
const _: () = assert!(size_of::<SyncBoArg>() == 32);
const _: () = assert!(std::mem::offset_of!(SyncBoArg, dir) == 24);
const _: () = assert!(size_of::<InfoBoArg>() == 24);
const _: () = assert!(size_of::<PwriteBoArg>() == 32);
const _: () = assert!(size_of::<CopyBoArg>() == 32);
const _: () = assert!(size_of::<CtxArg>() == 32);
const _: () = assert!(std::mem::offset_of!(CtxArg, xclbin_id) == 4);
const _: () = assert!(std::mem::offset_of!(CtxArg, cu_index) == 20);
const _: () = assert!(size_of::<KdsConfig>() == 8);
const _: () = assert!(size_of::<AxlfArg>() == 40);
const _: () = assert!(std::mem::offset_of!(AxlfArg, ksize) == 8);
const _: () = assert!(std::mem::offset_of!(AxlfArg, kernels) == 16);
const _: () = assert!(std::mem::offset_of!(AxlfArg, kds_cfg) == 24);
const _: () = assert!(std::mem::offset_of!(AxlfArg, flags) == 32);
const _: () = assert!(size_of::<CreateHwCtxArg>() == 16);
const _: () = assert!(size_of::<DestroyHwCtxArg>() == 4);
const _: () = assert!(size_of::<OpenCuCtxArg>() == 76);
const _: () = assert!(size_of::<CloseCuCtxArg>() == 8);
const _: () = assert!(size_of::<ExecbufArg>() == 40);
const _: () = assert!(size_of::<GemCloseArg>() == 8);
const _: () = assert!(size_of::<PrimeHandleArg>() == 12);

/// `SyncBoArg::dir`: host backing to device memory.
pub const SYNC_BO_TO_DEVICE: u32 = 0;
/// `SyncBoArg::dir`: device memory to host backing.
pub const SYNC_BO_FROM_DEVICE: u32 = 1;

/// `CtxArg::op`: open a context (locks the bitstream).
pub const CTX_OP_ALLOC_CTX: u32 = 0;
/// `CtxArg::op`: close a context; the last one unlocks the bitstream.
pub const CTX_OP_FREE_CTX: u32 = 1;
/// `CtxArg::op`: open a user-managed CU fd (from 2.12).
pub const CTX_OP_OPEN_UCU_FD: u32 = 2;
/// `CtxArg::flags`: shared CU context.
pub const CTX_SHARED: u32 = 0;
/// `CtxArg::flags`: exclusive CU context (needed to `mmap` the CU).
pub const CTX_EXCLUSIVE: u32 = 1;
/// `CtxArg::cu_index` of a context without a CU.
pub const CTX_VIRT_CU_INDEX: u32 = 0xFFFF_FFFF;

/// `AxlfArg::flags`: plain load; the same uuid already loaded is a no-op.
pub const AXLF_BASE: u32 = 0;
/// `AxlfArg::flags`: reprogram even if the same uuid is loaded.
pub const AXLF_FORCE_PROGRAM: u32 = 1;

/// BO flags `[15:0]`: the memory bank (MEM_TOPOLOGY index).
pub const BO_FLAGS_MEMIDX_MASK: u32 = 0xFFFF;
/// BO flags `[23:16]`: the slot (the hardware context id in newer userspace).
pub const BO_FLAGS_SLOT_MASK: u32 = 0xFF << BO_FLAGS_SLOT_SHIFT;
/// Shift of the slot field.
pub const BO_FLAGS_SLOT_SHIFT: u32 = 16;
/// XRT's `XRT_BO_FLAGS_MEMIDX_MASK`: bank and slot together, everything below the type bits.
pub const XRT_BO_FLAGS_MEMIDX_MASK: u32 = 0xFF_FFFF;
/// BO type 0: a normal device BO.
pub const BO_FLAGS_NONE: u32 = 0;
/// BO type: cacheable (treated as normal).
pub const BO_FLAGS_CACHEABLE: u32 = 1 << 24;
/// BO type: kernel buffer.
pub const BO_FLAGS_KERNBUF: u32 = 1 << 25;
/// BO type: scatter-gather.
pub const BO_FLAGS_SGL: u32 = 1 << 26;
/// BO type: shared virtual memory.
pub const BO_FLAGS_SVM: u32 = 1 << 27;
/// BO type: device memory only, no host backing.
pub const BO_FLAGS_DEV_ONLY: u32 = 1 << 28;
/// BO type: host memory only (CMA).
pub const BO_FLAGS_HOST_ONLY: u32 = 1 << 29;
/// BO type: peer-to-peer (host-mapped device memory).
pub const BO_FLAGS_P2P: u32 = 1 << 30;
/// BO type: a command buffer for `EXECBUF` (host-only, no device address).
pub const BO_FLAGS_EXECBUF: u32 = 1 << 31;

/// `mmap` byte offsets of BOs start here (`XOCL_FILE_PAGE_OFFSET` pages, 4 GiB).
pub const BO_MMAP_OFFSET_BASE: u64 = 1 << 32;
/// `mmap` page offset of the whole user BAR.
pub const MMAP_PGOFF_USER_BAR: u64 = 0;
/// Compute units that have an `mmap` window: page offsets `1..=MAX_CUS`.
pub const MAX_CUS: u32 = 128;

/// What an `mmap` offset on the render fd maps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MmapTarget {
    /// The user BAR (page offset 0).
    UserBar,
    /// The register space of this CU index (page offset `index + 1`).
    Cu(u32),
    /// A BO, by its fake offset as `MAP_BO` returned it.
    Bo(u64),
    /// Nothing: the driver refuses the `mmap`.
    Invalid,
}

/// Classifies an `mmap` byte offset on the render fd, as the driver does.
pub const fn mmap_target(offset: u64, page_size: u64) -> MmapTarget {
    if offset >= BO_MMAP_OFFSET_BASE {
        return MmapTarget::Bo(offset);
    }
    if page_size == 0 || !offset.is_multiple_of(page_size) {
        return MmapTarget::Invalid;
    }
    match offset / page_size {
        MMAP_PGOFF_USER_BAR => MmapTarget::UserBar,
        pgoff if pgoff <= MAX_CUS as u64 => MmapTarget::Cu(pgoff as u32 - 1),
        _ => MmapTarget::Invalid,
    }
}

/// The `mmap` byte offset of a CU's register space.
pub const fn cu_mmap_offset(cu_index: u32, page_size: u64) -> u64 {
    (cu_index as u64 + 1) * page_size
}

/// PCI vendor id of Xilinx (AMD) cards.
pub const PCI_VENDOR_XILINX: u16 = 0x10EE;
/// User PF device id of the Alveo U200 (the management PF is one less).
pub const PCI_DEVICE_U200_USER: u16 = 0x5001;
/// User PF device id of the Alveo U250.
pub const PCI_DEVICE_U250_USER: u16 = 0x5005;
/// User PF device id of the Alveo U50.
pub const PCI_DEVICE_U50_USER: u16 = 0x5021;
/// Every user PF device id above.
pub const PCI_DEVICE_USER_PFS: [u16; 3] = [
    PCI_DEVICE_U200_USER,
    PCI_DEVICE_U250_USER,
    PCI_DEVICE_U50_USER,
];

/// Under the sysfs root: the PCI functions, by bus address.
pub const SYSFS_PCI_DEVICES: &str = "bus/pci/devices";
/// Directory of a user PF holding its DRM node (`renderD<N>`).
pub const SYSFS_DRM_DIR: &str = "drm";
/// Name prefix of render nodes, in sysfs and under `/dev/dri`.
pub const RENDER_NODE_PREFIX: &str = "renderD";
/// Directory of DRM device nodes under `/dev`.
pub const DEV_DRI_DIR: &str = "dri";
/// User PF attribute: `1` when the device is usable.
pub const USER_ATTR_READY: &str = "ready";
/// User PF attribute: the BAR index for register access.
pub const USER_ATTR_USERBAR: &str = "userbar";
/// User PF attribute: the uuid of the loaded xclbin.
pub const USER_ATTR_XCLBINUUID: &str = "xclbinuuid";
/// User PF attribute: KDS scheduler statistics.
pub const USER_ATTR_KDSSTAT: &str = "kdsstat";
/// User PF attribute: the board name.
pub const USER_ATTR_BOARD_NAME: &str = "board_name";
/// Name prefix of the icap subdevice directory (`icap.u.<id>`), which holds the binaries below.
pub const ICAP_DIR_PREFIX: &str = "icap.u.";
/// icap attribute: the MEM_TOPOLOGY section of the loaded xclbin.
pub const ICAP_ATTR_MEM_TOPOLOGY: &str = "mem_topology";
/// icap attribute: the IP_LAYOUT section of the loaded xclbin.
pub const ICAP_ATTR_IP_LAYOUT: &str = "ip_layout";
/// icap attribute: the CONNECTIVITY section of the loaded xclbin.
pub const ICAP_ATTR_CONNECTIVITY: &str = "connectivity";

/// zocl (Zynq/Versal edge) values that differ from xocl.
pub mod zocl {
    /// Context flag: shared (xocl uses 0).
    pub const CTX_SHARED: u32 = 1 << 0;
    /// Context flag: exclusive (xocl uses 1).
    pub const CTX_EXCLUSIVE: u32 = 1 << 1;
    /// Context flag: verbose.
    pub const CTX_VERBOSE: u32 = 1 << 2;
    /// Context flag: primary.
    pub const CTX_PRIMARY: u32 = 1 << 3;
    /// Context op: allocate a CU context.
    pub const CTX_OP_ALLOC_CTX: u32 = 0;
    /// Context op: free a CU context.
    pub const CTX_OP_FREE_CTX: u32 = 1;
    /// Context op: open a graph CU fd.
    pub const CTX_OP_OPEN_GCU_FD: u32 = 2;
    /// Context op: allocate a graph context.
    pub const CTX_OP_ALLOC_GRAPH_CTX: u32 = 3;
    /// Context op: free a graph context.
    pub const CTX_OP_FREE_GRAPH_CTX: u32 = 4;
    /// Context op: allocate an AIE context.
    pub const CTX_OP_ALLOC_AIE_CTX: u32 = 5;
    /// Context op: free an AIE context.
    pub const CTX_OP_FREE_AIE_CTX: u32 = 6;
    /// BO flag: host memory.
    pub const BO_FLAGS_HOST_BO: u32 = 1 << 26;
    /// BO flag: cache-coherent.
    pub const BO_FLAGS_COHERENT: u32 = 1 << 27;
    /// BO flag: CMA memory.
    pub const BO_FLAGS_CMA: u32 = 1 << 28;
    /// BO flag: shared virtual memory.
    pub const BO_FLAGS_SVM: u32 = 1 << 29;
    /// BO flag: wraps user memory.
    pub const BO_FLAGS_USERPTR: u32 = 1 << 30;
    /// BO flag: command buffer.
    pub const BO_FLAGS_EXECBUF: u32 = 1 << 31;
    /// READ_AXLF flag: PR platform.
    pub const AXLF_PLATFORM_PR: u32 = 1;
    /// READ_AXLF flag: flat platform.
    pub const AXLF_PLATFORM_FLAT: u32 = 2;
    /// READ_AXLF flag: reprogram even if loaded.
    pub const AXLF_FORCE_PROGRAM: u32 = 4;
}

/// State of an ERT command packet (header bits `[3:0]`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErtState {
    /// Written by the host; the driver also sets it on submit.
    New = 1,
    /// Queued by the scheduler.
    Queued = 2,
    /// Running on a CU.
    Running = 3,
    /// Finished successfully.
    Completed = 4,
    /// Failed.
    Error = 5,
    /// Aborted.
    Abort = 6,
    /// Submitted to the device.
    Submitted = 7,
    /// Timed out.
    Timeout = 8,
    /// The device did not respond.
    NoResponse = 9,
    /// Soft kernel error.
    SkError = 10,
    /// Soft kernel crashed.
    SkCrashed = 11,
}

impl ErtState {
    const ALL: [ErtState; 11] = [
        ErtState::New,
        ErtState::Queued,
        ErtState::Running,
        ErtState::Completed,
        ErtState::Error,
        ErtState::Abort,
        ErtState::Submitted,
        ErtState::Timeout,
        ErtState::NoResponse,
        ErtState::SkError,
        ErtState::SkCrashed,
    ];

    /// The state with this header value, if any.
    pub fn from_raw(raw: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|s| *s as u8 == raw)
    }
}

/// Opcode of an ERT command packet (header bits `[27:23]`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErtOpcode {
    /// `ERT_START_CU` / `ERT_START_KERNEL`: masks, then a register map image.
    StartCu = 0,
    /// Scheduler configuration (accepted and completed at once).
    Configure = 2,
    /// Stop the scheduler.
    Exit = 3,
    /// Abort a command.
    Abort = 4,
    /// Obsolete offset/value form of START_CU.
    ExecWrite = 5,
    /// CU statistics.
    CuStat = 6,
    /// Copy between two BOs.
    StartCopybo = 7,
    /// Soft kernel configuration.
    SkConfig = 8,
    /// Soft kernel start.
    SkStart = 9,
    /// Soft kernel unconfiguration.
    SkUnconfig = 10,
    /// Initialise a CU.
    InitCu = 11,
    /// Start a fast-adapter CU.
    StartFa = 12,
    /// Clock calibration.
    ClkCalib = 13,
    /// Embedded scheduler validation.
    MbValidate = 14,
    /// `{offset, value}` pairs, then AP_START.
    StartKeyVal = 15,
    /// Access test (C).
    AccessTestC = 16,
    /// Access test.
    AccessTest = 17,
    /// Start a DPU.
    StartDpu = 18,
    /// Command chain.
    CmdChain = 19,
    /// Start an NPU.
    StartNpu = 20,
    /// Start an NPU, preemptible.
    StartNpuPreempt = 21,
    /// Start an NPU, preemptible, from an ELF.
    StartNpuPreemptElf = 22,
}

impl ErtOpcode {
    const ALL: [ErtOpcode; 22] = [
        ErtOpcode::StartCu,
        ErtOpcode::Configure,
        ErtOpcode::Exit,
        ErtOpcode::Abort,
        ErtOpcode::ExecWrite,
        ErtOpcode::CuStat,
        ErtOpcode::StartCopybo,
        ErtOpcode::SkConfig,
        ErtOpcode::SkStart,
        ErtOpcode::SkUnconfig,
        ErtOpcode::InitCu,
        ErtOpcode::StartFa,
        ErtOpcode::ClkCalib,
        ErtOpcode::MbValidate,
        ErtOpcode::StartKeyVal,
        ErtOpcode::AccessTestC,
        ErtOpcode::AccessTest,
        ErtOpcode::StartDpu,
        ErtOpcode::CmdChain,
        ErtOpcode::StartNpu,
        ErtOpcode::StartNpuPreempt,
        ErtOpcode::StartNpuPreemptElf,
    ];

    /// The opcode with this header value, if any.
    pub fn from_raw(raw: u8) -> Option<Self> {
        Self::ALL.into_iter().find(|o| *o as u8 == raw)
    }
}

/// Type of an ERT command packet (header bits `[31:28]`).
#[repr(u8)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ErtType {
    /// Default (what XRT's own tests leave in START_CU packets).
    Default = 0,
    /// Handled by KDS locally.
    KdsLocal = 1,
    /// Control command.
    Ctrl = 2,
    /// CU command.
    Cu = 3,
    /// Soft CU command.
    Scu = 4,
}

impl ErtType {
    /// The type with this header value, if any.
    pub fn from_raw(raw: u8) -> Option<Self> {
        [
            ErtType::Default,
            ErtType::KdsLocal,
            ErtType::Ctrl,
            ErtType::Cu,
            ErtType::Scu,
        ]
        .into_iter()
        .find(|t| *t as u8 == raw)
    }
}

/// `custom` bit 0 (header bit 4): statistics enabled.
pub const ERT_CUSTOM_STAT_ENABLED: u8 = 1 << 0;
/// Shift of `extra_cu_masks` within `custom` (header bits `[11:10]`).
pub const ERT_CUSTOM_EXTRA_CU_MASKS_SHIFT: u32 = 6;
/// Largest `count` the 11-bit header field holds.
pub const ERT_MAX_COUNT: u16 = 0x7FF;
/// Most CU masks a START_CU packet carries (CUs 0..127).
pub const ERT_MAX_CU_MASKS: usize = 4;
/// Register map words the driver skips (AP_CTRL, GIE, IER, ISR) before the arguments.
pub const ERT_REGMAP_SKIPPED_WORDS: usize = 4;

/// The header word of an ERT command packet, field by field (raw values, not checked).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErtHeader {
    /// Bits `[3:0]`: an [`ErtState`].
    pub state: u8,
    /// Bits `[11:4]`: opcode-specific (START_CU: stat_enabled bit 4, extra_cu_masks `[11:10]`).
    pub custom: u8,
    /// Bits `[22:12]`: 32-bit words after the header.
    pub count: u16,
    /// Bits `[27:23]`: an [`ErtOpcode`].
    pub opcode: u8,
    /// Bits `[31:28]`: an [`ErtType`].
    pub kind: u8,
}

impl ErtHeader {
    /// The header word; bits beyond each field's width are dropped.
    pub fn encode(&self) -> u32 {
        u32::from(self.state & 0xF)
            | u32::from(self.custom) << 4
            | u32::from(self.count & ERT_MAX_COUNT) << 12
            | u32::from(self.opcode & 0x1F) << 23
            | u32::from(self.kind & 0xF) << 28
    }

    /// Splits a header word into its fields.
    pub fn decode(word: u32) -> Self {
        ErtHeader {
            state: (word & 0xF) as u8,
            custom: (word >> 4) as u8,
            count: ((word >> 12) as u16) & ERT_MAX_COUNT,
            opcode: ((word >> 23) & 0x1F) as u8,
            kind: (word >> 28) as u8,
        }
    }

    /// START_CU: CU masks after the first one (0 to 3).
    pub fn extra_cu_masks(&self) -> u8 {
        self.custom >> ERT_CUSTOM_EXTRA_CU_MASKS_SHIFT
    }

    /// START_CU: whether the stat_enabled bit is set.
    pub fn stat_enabled(&self) -> bool {
        self.custom & ERT_CUSTOM_STAT_ENABLED != 0
    }
}

/// What is wrong with a START_CU packet.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PacketError {
    /// Fewer than a header and one CU mask.
    #[error("a START_CU packet needs at least 2 words (header and CU mask), this one has {words}")]
    TooShort {
        /// Words in the packet.
        words: usize,
    },
    /// The opcode is not START_CU.
    #[error("opcode {opcode} is not START_CU (0)")]
    NotStartCu {
        /// The header's opcode.
        opcode: u8,
    },
    /// The header count disagrees with the packet length.
    #[error("the header count is {count} but {words} words follow the header")]
    CountMismatch {
        /// The header's count.
        count: u16,
        /// Words after the header.
        words: usize,
    },
    /// The CU masks the header announces do not fit in the packet.
    #[error("the header announces {masks} CU masks but only {count} words follow the header")]
    MasksDontFit {
        /// 1 + extra_cu_masks.
        masks: usize,
        /// The header's count.
        count: u16,
    },
    /// No CU may run the command.
    #[error("no CU bit is set in the CU masks")]
    NoComputeUnit,
    /// The register map stops before the argument area.
    #[error(
        "the register map has {words} words; it needs at least 4 (AP_CTRL, GIE, IER, ISR) before the arguments"
    )]
    RegmapTooShort {
        /// Register map words in the packet.
        words: usize,
    },
}

/// An `ERT_START_CU` packet: which CUs may run it and the image of the CU register space.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StartCu {
    /// 1 to 4 masks; mask `k` bit `b` allows CU `32k + b`.
    pub cu_masks: Vec<u32>,
    /// `regmap[k]` = the register at byte offset `4k`; words 0..4 are skipped by the driver.
    pub regmap: Vec<u32>,
}

impl StartCu {
    /// The packet words: header (state NEW, type CU, opcode START_CU), masks, register map.
    ///
    /// # Panics
    /// If there are not 1 to 4 masks, or masks and register map exceed the 11-bit count.
    pub fn encode(&self) -> Vec<u32> {
        let masks = self.cu_masks.len();
        assert!(
            (1..=ERT_MAX_CU_MASKS).contains(&masks),
            "a START_CU packet has 1 to 4 CU masks, not {masks}"
        );
        let count = masks + self.regmap.len();
        assert!(
            count <= usize::from(ERT_MAX_COUNT),
            "{count} words after the header exceed the 11-bit count"
        );
        let header = ErtHeader {
            state: ErtState::New as u8,
            custom: ((masks - 1) as u8) << ERT_CUSTOM_EXTRA_CU_MASKS_SHIFT,
            count: count as u16,
            opcode: ErtOpcode::StartCu as u8,
            kind: ErtType::Cu as u8,
        };
        let mut words = Vec::with_capacity(1 + count);
        words.push(header.encode());
        words.extend_from_slice(&self.cu_masks);
        words.extend_from_slice(&self.regmap);
        words
    }

    /// Parses and checks a packet that is exactly `words` long (`count == words.len() - 1`).
    pub fn decode(words: &[u32]) -> Result<StartCu, PacketError> {
        let [header, body @ ..] = words else {
            return Err(PacketError::TooShort { words: 0 });
        };
        if body.is_empty() {
            return Err(PacketError::TooShort { words: 1 });
        }
        let header = ErtHeader::decode(*header);
        if header.opcode != ErtOpcode::StartCu as u8 {
            return Err(PacketError::NotStartCu {
                opcode: header.opcode,
            });
        }
        if usize::from(header.count) != body.len() {
            return Err(PacketError::CountMismatch {
                count: header.count,
                words: body.len(),
            });
        }
        let masks = usize::from(header.extra_cu_masks()) + 1;
        if masks > body.len() {
            return Err(PacketError::MasksDontFit {
                masks,
                count: header.count,
            });
        }
        let (cu_masks, regmap) = body.split_at(masks);
        if cu_masks.iter().all(|&m| m == 0) {
            return Err(PacketError::NoComputeUnit);
        }
        if regmap.len() < ERT_REGMAP_SKIPPED_WORDS {
            return Err(PacketError::RegmapTooShort {
                words: regmap.len(),
            });
        }
        Ok(StartCu {
            cu_masks: cu_masks.to_vec(),
            regmap: regmap.to_vec(),
        })
    }

    /// The CU indices the masks allow, in increasing order.
    pub fn cu_indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.cu_masks.iter().enumerate().flat_map(|(k, &mask)| {
            (0..32u32)
                .filter(move |bit| mask & (1 << bit) != 0)
                .map(move |bit| 32 * k as u32 + bit)
        })
    }

    /// The register map words the driver writes, from [`ARGS_BASE`] on.
    pub fn arg_words(&self) -> &[u32] {
        self.regmap.get(ERT_REGMAP_SKIPPED_WORDS..).unwrap_or(&[])
    }
}

/// HLS control block: `AP_CTRL` register offset.
pub const AP_CTRL: u64 = 0x00;
/// HLS control block: global interrupt enable (bit 0).
pub const GIE: u64 = 0x04;
/// HLS control block: interrupt enable (`IER_*`).
pub const IER: u64 = 0x08;
/// HLS control block: interrupt status (`ISR_*`), toggle-on-write or clear-on-read.
pub const ISR: u64 = 0x0C;
/// First argument register.
pub const ARGS_BASE: u64 = 0x10;
/// AP_CTRL: start (set by software, cleared by the CU on handshake).
pub const AP_START: u32 = 1 << 0;
/// AP_CTRL: done, clear on read.
pub const AP_DONE: u32 = 1 << 1;
/// AP_CTRL: idle.
pub const AP_IDLE: u32 = 1 << 2;
/// AP_CTRL: ready for new inputs (clear on read in newer Vitis HLS).
pub const AP_READY: u32 = 1 << 3;
/// AP_CTRL: continue, self-clearing (`ap_ctrl_chain` only).
pub const AP_CONTINUE: u32 = 1 << 4;
/// AP_CTRL: CU reset.
pub const AP_RESET: u32 = 1 << 5;
/// AP_CTRL: auto-restart.
pub const AUTO_RESTART: u32 = 1 << 7;
/// AP_CTRL: software reset, self-clearing when done.
pub const AP_SW_RESET: u32 = 1 << 8;
/// AP_CTRL: interrupt pending (newer HLS).
pub const AP_INTERRUPT: u32 = 1 << 9;
/// What AP_CTRL reads on a crashed CU.
pub const AP_CRASHED: u32 = 0xFFFF_FFFF;
/// GIE: global interrupt enable.
pub const GIE_ENABLE: u32 = 1 << 0;
/// IER / ISR: ap_done interrupt.
pub const IRQ_DONE: u32 = 1 << 0;
/// IER / ISR: ap_ready interrupt.
pub const IRQ_READY: u32 = 1 << 1;
/// AP_CTRL of an idle CU.
pub const AP_CTRL_IDLE_VALUE: u32 = AP_IDLE;
/// AP_CTRL after completion, before the clear-on-read: done and idle.
pub const AP_CTRL_DONE_VALUE: u32 = AP_DONE | AP_IDLE;

/// The Vitis "hello world" kernel `vadd(in1, in2, out_r, size)`: `out_r[i] = in1[i] + in2[i]`
/// (u32, wrapping) on device addresses. Register offsets and START_CU regmap word indices.
pub mod vadd {
    /// Kernel name, as in IP_LAYOUT and EMBEDDED_METADATA.
    pub const KERNEL: &str = "vadd";
    /// `in1` (pointer): low word here, high word at +4.
    pub const IN1: u64 = 0x10;
    /// `in2` (pointer): low word here, high word at +4.
    pub const IN2: u64 = 0x1C;
    /// `out_r` (pointer): low word here, high word at +4.
    pub const OUT: u64 = 0x28;
    /// `size` (u32 element count).
    pub const SIZE: u64 = 0x34;
    /// Argument index (metadata `id`) of `in1`.
    pub const ARG_IN1: u32 = 0;
    /// Argument index of `in2`.
    pub const ARG_IN2: u32 = 1;
    /// Argument index of `out_r`.
    pub const ARG_OUT: u32 = 2;
    /// Argument index of `size`.
    pub const ARG_SIZE: u32 = 3;
    /// Regmap word of `in1[31:0]` (`data[4]`); `in1[63:32]` is the next word.
    pub const IN1_WORD: usize = (IN1 / 4) as usize;
    /// Regmap word of `in2[31:0]` (`data[7]`).
    pub const IN2_WORD: usize = (IN2 / 4) as usize;
    /// Regmap word of `out_r[31:0]` (`data[10]`).
    pub const OUT_WORD: usize = (OUT / 4) as usize;
    /// Regmap word of `size` (`data[13]`).
    pub const SIZE_WORD: usize = (SIZE / 4) as usize;
    /// Regmap words of a vadd START_CU packet (0x00..=0x34).
    pub const REGMAP_WORDS: usize = SIZE_WORD + 1;
    /// Header count of a vadd START_CU packet with one mask: `1 + 14`.
    pub const START_CU_COUNT: u16 = 1 + REGMAP_WORDS as u16;

    /// The register map image of one vadd call (control words zero).
    pub fn regmap(in1: u64, in2: u64, out: u64, size: u32) -> Vec<u32> {
        let mut words = vec![0; REGMAP_WORDS];
        for (at, addr) in [(IN1_WORD, in1), (IN2_WORD, in2), (OUT_WORD, out)] {
            words[at] = addr as u32;
            words[at + 1] = (addr >> 32) as u32;
        }
        words[SIZE_WORD] = size;
        words
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::mem::offset_of;

    #[test]
    fn struct_sizes_and_offsets_match_the_reference() {
        assert_eq!(size_of::<CreateBoArg>(), 24);
        assert_eq!(offset_of!(CreateBoArg, handle), 8);
        assert_eq!(offset_of!(CreateBoArg, flags), 12);
        assert_eq!(offset_of!(CreateBoArg, kind), 16);
        assert_eq!(size_of::<UserptrBoArg>(), 32);
        assert_eq!(offset_of!(UserptrBoArg, handle), 16);
        assert_eq!(offset_of!(UserptrBoArg, kind), 24);
        assert_eq!(size_of::<MapBoArg>(), 16);
        assert_eq!(offset_of!(MapBoArg, offset), 8);
        assert_eq!(size_of::<SyncBoArg>(), 32);
        assert_eq!(offset_of!(SyncBoArg, size), 8);
        assert_eq!(offset_of!(SyncBoArg, offset), 16);
        assert_eq!(offset_of!(SyncBoArg, dir), 24);
        assert_eq!(size_of::<InfoBoArg>(), 24);
        assert_eq!(offset_of!(InfoBoArg, paddr), 16);
        assert_eq!(size_of::<PwriteBoArg>(), 32);
        assert_eq!(offset_of!(PwriteBoArg, data_ptr), 24);
        assert_eq!(size_of::<CopyBoArg>(), 32);
        assert_eq!(offset_of!(CopyBoArg, src_offset), 24);
        assert_eq!(size_of::<CtxArg>(), 32);
        assert_eq!(align_of::<CtxArg>(), 4);
        assert_eq!(offset_of!(CtxArg, xclbin_id), 4);
        assert_eq!(offset_of!(CtxArg, cu_index), 20);
        assert_eq!(offset_of!(CtxArg, flags), 24);
        assert_eq!(offset_of!(CtxArg, handle), 28);
        assert_eq!(size_of::<KdsConfig>(), 8);
        assert_eq!(size_of::<AxlfArg>(), 40);
        assert_eq!(offset_of!(AxlfArg, ksize), 8);
        assert_eq!(offset_of!(AxlfArg, kernels), 16);
        assert_eq!(offset_of!(AxlfArg, kds_cfg), 24);
        assert_eq!(offset_of!(AxlfArg, flags), 32);
        assert_eq!(size_of::<CreateHwCtxArg>(), 16);
        assert_eq!(offset_of!(CreateHwCtxArg, hw_context), 12);
        assert_eq!(size_of::<DestroyHwCtxArg>(), 4);
        assert_eq!(size_of::<OpenCuCtxArg>(), 76);
        assert_eq!(offset_of!(OpenCuCtxArg, cu_name), 4);
        assert_eq!(offset_of!(OpenCuCtxArg, flags), 68);
        assert_eq!(offset_of!(OpenCuCtxArg, cu_index), 72);
        assert_eq!(size_of::<CloseCuCtxArg>(), 8);
        assert_eq!(size_of::<ExecbufArg>(), 40);
        assert_eq!(offset_of!(ExecbufArg, deps), 8);
        assert_eq!(size_of::<GemCloseArg>(), 8);
        assert_eq!(size_of::<PrimeHandleArg>(), 12);
    }

    macro_rules! table {
        ($($name:ident: $code:literal;)*) => {$(
            assert_eq!($name, $code, stringify!($name));
        )*};
    }

    #[test]
    fn head_ioctl_codes_match_the_table() {
        table! {
            DRM_IOCTL_XOCL_CREATE_BO:             0xC018_6440;
            DRM_IOCTL_XOCL_USERPTR_BO:            0xC020_6441;
            DRM_IOCTL_XOCL_MAP_BO:                0xC010_6442;
            DRM_IOCTL_XOCL_SYNC_BO:               0xC020_6443;
            DRM_IOCTL_XOCL_INFO_BO:               0xC018_6444;
            DRM_IOCTL_XOCL_PWRITE_BO:             0xC020_6445;
            DRM_IOCTL_XOCL_PREAD_BO:              0xC020_6446;
            DRM_IOCTL_XOCL_CTX:                   0xC020_6448;
            DRM_IOCTL_XOCL_CREATE_HW_CTX:         0xC010_6449;
            DRM_IOCTL_XOCL_DESTROY_HW_CTX:        0xC004_644A;
            DRM_IOCTL_XOCL_OPEN_CU_CTX:           0xC04C_644B;
            DRM_IOCTL_XOCL_CLOSE_CU_CTX:          0xC008_644C;
            DRM_IOCTL_XOCL_INFO:                  0xC054_644D;
            DRM_IOCTL_XOCL_PREAD_UNMGD:           0xC020_644E;
            DRM_IOCTL_XOCL_PWRITE_UNMGD:          0xC020_644F;
            DRM_IOCTL_XOCL_USAGE_STAT:            0xC148_6450;
            DRM_IOCTL_XOCL_EXECBUF:               0xC028_6451;
            DRM_IOCTL_XOCL_HW_CTX_EXECBUF:        0xC028_6452;
            DRM_IOCTL_XOCL_USER_INTR:             0xC00C_6453;
            DRM_IOCTL_XOCL_READ_AXLF:             0xC028_6454;
            DRM_IOCTL_XOCL_HOT_RESET:             0x0000_6455;
            DRM_IOCTL_XOCL_RECLOCK:               0xC00C_6456;
            DRM_IOCTL_XOCL_ALLOC_CMA:             0xC018_6457;
            DRM_IOCTL_XOCL_FREE_CMA:              0x0000_6458;
            DRM_IOCTL_XOCL_COPY_BO:               0xC020_6459;
            DRM_IOCTL_XOCL_SET_CU_READONLY_RANGE: 0xC00C_645A;
            DRM_IOCTL_GEM_CLOSE:                  0x4008_6409;
            DRM_IOCTL_PRIME_HANDLE_TO_FD:         0xC00C_642D;
            DRM_IOCTL_PRIME_FD_TO_HANDLE:         0xC00C_642E;
        }
        assert_eq!(ioctl_nr(DRM_IOCTL_XOCL_EXECBUF), XOCL_NR_EXECBUF);
        assert_eq!(XOCL_NR_OCL_RESET, 0x47);
    }

    #[test]
    fn xrt_2_14_ioctl_codes_match_the_table() {
        use xrt_2_14::*;
        table! {
            DRM_IOCTL_XOCL_CREATE_BO:             0xC018_6440;
            DRM_IOCTL_XOCL_USERPTR_BO:            0xC020_6441;
            DRM_IOCTL_XOCL_MAP_BO:                0xC010_6442;
            DRM_IOCTL_XOCL_SYNC_BO:               0xC020_6443;
            DRM_IOCTL_XOCL_INFO_BO:               0xC018_6444;
            DRM_IOCTL_XOCL_PWRITE_BO:             0xC020_6445;
            DRM_IOCTL_XOCL_PREAD_BO:              0xC020_6446;
            DRM_IOCTL_XOCL_CTX:                   0xC020_6448;
            DRM_IOCTL_XOCL_INFO:                  0xC054_6449;
            DRM_IOCTL_XOCL_PREAD_UNMGD:           0xC020_644A;
            DRM_IOCTL_XOCL_PWRITE_UNMGD:          0xC020_644B;
            DRM_IOCTL_XOCL_USAGE_STAT:            0xC148_644C;
            DRM_IOCTL_XOCL_EXECBUF:               0xC028_644D;
            DRM_IOCTL_XOCL_USER_INTR:             0xC00C_644E;
            DRM_IOCTL_XOCL_READ_AXLF:             0xC028_644F;
            DRM_IOCTL_XOCL_READ_AXLF_2_11:        0xC020_644F;
            DRM_IOCTL_XOCL_READ_AXLF_2_8:         0xC018_644F;
            DRM_IOCTL_XOCL_HOT_RESET:             0x0000_6450;
            DRM_IOCTL_XOCL_RECLOCK:               0xC00C_6451;
            DRM_IOCTL_XOCL_ALLOC_CMA:             0xC018_6452;
            DRM_IOCTL_XOCL_FREE_CMA:              0x0000_6453;
            DRM_IOCTL_XOCL_COPY_BO:               0xC020_6454;
            DRM_IOCTL_XOCL_SET_CU_READONLY_RANGE: 0xC00C_6455;
        }
    }

    #[test]
    fn mmap_offsets_classify_as_the_driver_does() {
        let page = 4096;
        assert_eq!(mmap_target(0, page), MmapTarget::UserBar);
        assert_eq!(mmap_target(page, page), MmapTarget::Cu(0));
        assert_eq!(mmap_target(128 * page, page), MmapTarget::Cu(127));
        assert_eq!(mmap_target(129 * page, page), MmapTarget::Invalid);
        assert_eq!(mmap_target(page + 8, page), MmapTarget::Invalid);
        assert_eq!(
            mmap_target(BO_MMAP_OFFSET_BASE, page),
            MmapTarget::Bo(BO_MMAP_OFFSET_BASE)
        );
        assert_eq!(cu_mmap_offset(3, page), 4 * page);
        assert_eq!(BO_MMAP_OFFSET_BASE / page, 0x10_0000);
    }

    #[test]
    fn bo_flag_fields_do_not_overlap() {
        let types = [
            BO_FLAGS_CACHEABLE,
            BO_FLAGS_KERNBUF,
            BO_FLAGS_SGL,
            BO_FLAGS_SVM,
            BO_FLAGS_DEV_ONLY,
            BO_FLAGS_HOST_ONLY,
            BO_FLAGS_P2P,
            BO_FLAGS_EXECBUF,
        ];
        let all = types.iter().fold(0, |acc, t| acc | t);
        assert_eq!(all, 0xFF00_0000);
        assert_eq!(
            BO_FLAGS_MEMIDX_MASK | BO_FLAGS_SLOT_MASK,
            XRT_BO_FLAGS_MEMIDX_MASK
        );
        assert_eq!((3 | BO_FLAGS_EXECBUF) & BO_FLAGS_MEMIDX_MASK, 3);
    }

    #[test]
    fn ert_header_round_trips() {
        for header in [
            ErtHeader::default(),
            ErtHeader {
                state: 4,
                custom: 0xC1,
                count: 0x7FF,
                opcode: 15,
                kind: 3,
            },
            ErtHeader {
                state: 0xF,
                custom: 0xFF,
                count: 16,
                opcode: 0x1F,
                kind: 0xF,
            },
        ] {
            assert_eq!(ErtHeader::decode(header.encode()), header);
        }
        for word in [0, 0x3000_F001, 0xFFFF_FFFF, 0x1234_5678] {
            assert_eq!(ErtHeader::decode(word).encode(), word);
        }
        let h = ErtHeader::decode(0xC10 | 0x4);
        assert_eq!(h.extra_cu_masks(), 3);
        assert!(h.stat_enabled());
        assert_eq!(ErtState::from_raw(h.state), Some(ErtState::Completed));
        assert_eq!(ErtState::from_raw(0), None);
        assert_eq!(ErtState::from_raw(11), Some(ErtState::SkCrashed));
        assert_eq!(ErtOpcode::from_raw(15), Some(ErtOpcode::StartKeyVal));
        assert_eq!(ErtOpcode::from_raw(1), None);
        assert_eq!(ErtType::from_raw(3), Some(ErtType::Cu));
        assert_eq!(ErtType::from_raw(5), None);
    }

    #[test]
    fn vadd_start_cu_header_is_exact() {
        let packet = StartCu {
            cu_masks: vec![1 << 2],
            regmap: vadd::regmap(0x1_0000_1000, 0x2000, 0x3000, 256),
        };
        let words = packet.encode();
        assert_eq!(words.len(), 16);
        // count 15 << 12 | state NEW 1 | type ERT_CU 3 << 28; opcode START_CU 0, no extra masks.
        assert_eq!(words[0], 0x3000_F001);
        assert_eq!(ErtHeader::decode(words[0]).count, vadd::START_CU_COUNT);
        assert_eq!(words[1], 4);
        let data = &words[2..];
        assert_eq!((data[4], data[5]), (0x1000, 1));
        assert_eq!((data[7], data[8]), (0x2000, 0));
        assert_eq!((data[10], data[11]), (0x3000, 0));
        assert_eq!(data[13], 256);
        let back = StartCu::decode(&words).unwrap();
        assert_eq!(back, packet);
        assert_eq!(back.cu_indices().collect::<Vec<_>>(), [2]);
        assert_eq!(back.arg_words().len(), 10);

        // The reference's header, as XRT's own tests write it (type DEFAULT), decodes too.
        let mut legacy = words;
        legacy[0] = 0x0000_F001;
        assert_eq!(StartCu::decode(&legacy).unwrap(), packet);
    }

    #[test]
    fn malformed_start_cu_packets_are_refused() {
        let good = StartCu {
            cu_masks: vec![1],
            regmap: vec![0; 4],
        }
        .encode();
        let err = |words: &[u32]| StartCu::decode(words).unwrap_err();

        assert_eq!(err(&[]), PacketError::TooShort { words: 0 });
        assert_eq!(err(&good[..1]), PacketError::TooShort { words: 1 });
        assert!(err(&good[..1]).to_string().contains("at least 2 words"));

        let mut configure = good.clone();
        configure[0] |= (ErtOpcode::Configure as u32) << 23;
        assert_eq!(err(&configure), PacketError::NotStartCu { opcode: 2 });
        assert!(err(&configure).to_string().contains("not START_CU"));

        assert_eq!(
            err(&good[..4]),
            PacketError::CountMismatch { count: 5, words: 3 }
        );
        assert!(err(&good[..4]).to_string().contains("count is 5"));

        let masks_over = [
            ErtHeader {
                state: 1,
                custom: 3 << 6,
                count: 2,
                opcode: 0,
                kind: 3,
            }
            .encode(),
            1,
            0,
        ];
        assert_eq!(
            err(&masks_over),
            PacketError::MasksDontFit { masks: 4, count: 2 }
        );
        assert!(err(&masks_over).to_string().contains("4 CU masks"));

        let mut no_cu = good.clone();
        no_cu[1] = 0;
        assert_eq!(err(&no_cu), PacketError::NoComputeUnit);
        assert!(err(&no_cu).to_string().contains("no CU bit"));

        let short = StartCu {
            cu_masks: vec![1],
            regmap: vec![0; 3],
        }
        .encode();
        assert_eq!(err(&short), PacketError::RegmapTooShort { words: 3 });
        assert!(err(&short).to_string().contains("AP_CTRL, GIE, IER, ISR"));
    }

    #[test]
    fn cu_indices_cover_every_mask() {
        let packet = StartCu {
            cu_masks: vec![0b101, 0, 1 << 31, 0x8000_0001],
            regmap: vec![0; 4],
        };
        assert_eq!(packet.cu_indices().collect::<Vec<_>>(), [0, 2, 95, 96, 127]);
        let words = packet.encode();
        assert_eq!(ErtHeader::decode(words[0]).extra_cu_masks(), 3);
        assert_eq!(StartCu::decode(&words).unwrap(), packet);
    }

    #[test]
    fn hls_and_vadd_facts_are_consistent() {
        assert_eq!(AP_CTRL_DONE_VALUE, 0x6);
        assert_eq!(AP_CTRL_IDLE_VALUE, 0x4);
        assert_eq!(ARGS_BASE, 4 * ERT_REGMAP_SKIPPED_WORDS as u64);
        assert_eq!(
            (
                vadd::IN1_WORD,
                vadd::IN2_WORD,
                vadd::OUT_WORD,
                vadd::SIZE_WORD
            ),
            (4, 7, 10, 13)
        );
        assert_eq!(vadd::START_CU_COUNT, 15);
        assert_eq!(zocl::CTX_EXCLUSIVE, 2);
        assert_ne!(zocl::CTX_SHARED, CTX_SHARED);
    }
}
