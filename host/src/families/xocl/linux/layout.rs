//! What the driver reads and writes, in its formats: the ioctl arguments, the `kernel_info`
//! blob `READ_AXLF` takes, ERT exec packets and their states, and the `xclbinuuid` attribute.

use std::io;
use std::path::Path;

use crate::devices::CompletionState;
use crate::devices::sysfs::{BadAttribute, read_optional};
use crate::families::xocl::SyncDirection;
use crate::families::xocl::abi::{
    self, AxlfArg, CopyBoArg, CreateBoArg, CtxArg, ErtHeader, ErtOpcode, ErtState, ExecbufArg,
    GemCloseArg, InfoBoArg, MapBoArg, StartCu, SyncBoArg,
};
use crate::families::xocl::xclbin::KernelMeta;
use crate::types::Guid;

/// The uuid the function's `xclbinuuid` attribute names; a missing attribute, empty text or
/// the null uuid mean none.
pub(super) fn read_loaded(function: &Path) -> Result<Option<Guid>, BadAttribute> {
    let path = function.join(abi::USER_ATTR_XCLBINUUID);
    read_optional(&path, parse_xclbinuuid, "a uuid").map(Option::flatten)
}

/// `Some(None)` for no xclbin (empty, `0`, the null uuid), `Some(Some(uuid))` for a uuid with
/// or without dashes, `None` for anything else.
pub(super) fn parse_xclbinuuid(text: &str) -> Option<Option<Guid>> {
    if text.bytes().all(|b| b == b'0' || b == b'-') {
        return Some(None);
    }
    text.parse().ok().map(Some)
}

/// Bytes of an exec BO and the most an exec buffer may hold (`CREATE_BO` rounds it to a page).
pub(super) const EXEC_BO_BYTES: u64 = 4096;

/// `sizeof(struct kernel_info)` without its arguments.
pub(super) const KERNEL_INFO_SIZE: usize = 76;

/// `sizeof(struct argument_info)`.
pub(super) const ARGUMENT_INFO_SIZE: usize = 76;

/// The `name` field of both structs.
pub(super) const INFO_NAME_LEN: usize = 64;

/// The smallest register range a kernel claims in its `kernel_info`.
pub(super) const MIN_KERNEL_RANGE: u32 = 0x1_0000;

pub(super) fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.into())
}

pub(super) fn create_bo_arg(size: u64, flags: u32) -> CreateBoArg {
    CreateBoArg {
        size,
        flags,
        ..Default::default()
    }
}

pub(super) fn info_bo_arg(handle: u32) -> InfoBoArg {
    InfoBoArg {
        handle,
        ..Default::default()
    }
}

pub(super) fn map_bo_arg(handle: u32) -> MapBoArg {
    MapBoArg {
        handle,
        ..Default::default()
    }
}

pub(super) fn gem_close_arg(handle: u32) -> GemCloseArg {
    GemCloseArg { handle, pad: 0 }
}

pub(super) fn sync_bo_arg(
    handle: u32,
    direction: SyncDirection,
    offset: u64,
    size: u64,
) -> SyncBoArg {
    SyncBoArg {
        handle,
        flags: 0,
        size,
        offset,
        dir: match direction {
            SyncDirection::ToDevice => abi::SYNC_BO_TO_DEVICE,
            SyncDirection::FromDevice => abi::SYNC_BO_FROM_DEVICE,
        },
        pad: 0,
    }
}

pub(super) fn copy_bo_arg(
    dst: u32,
    dst_offset: u64,
    src: u32,
    src_offset: u64,
    size: u64,
) -> CopyBoArg {
    CopyBoArg {
        dst_handle: dst,
        src_handle: src,
        size,
        dst_offset,
        src_offset,
    }
}

pub(super) fn ctx_arg(op: u32, uuid: Guid, cu: u32, exclusive: bool) -> CtxArg {
    CtxArg {
        op,
        xclbin_id: uuid.to_bytes(),
        cu_index: cu,
        flags: if exclusive {
            abi::CTX_EXCLUSIVE
        } else {
            abi::CTX_SHARED
        },
        handle: 0,
    }
}

pub(super) fn execbuf_arg(exec_bo: u32) -> ExecbufArg {
    ExecbufArg {
        ctx_id: 0,
        exec_bo_handle: exec_bo,
        deps: [0; abi::MAX_DEPENT_CMD_BO],
    }
}

/// READ_AXLF's argument over `image` and a `kernel_info` blob; both must outlive the ioctl.
pub(super) fn axlf_arg(image: &[u8], kernels: &[u8]) -> io::Result<AxlfArg> {
    let ksize =
        i32::try_from(kernels.len()).map_err(|_| invalid("the kernel_info blob exceeds 2 GiB"))?;
    Ok(AxlfArg {
        xclbin: image.as_ptr() as u64,
        ksize,
        kernels: kernels.as_ptr() as u64,
        flags: abi::AXLF_BASE,
        ..Default::default()
    })
}

/// The `kernels` blob of READ_AXLF: one `kernel_info` per kernel (NUL-padded `name[64]`,
/// `range`, `anums`, `features`), each followed by its `argument_info` records (NUL-padded
/// `name[64]`, `offset`, `size`, `dir`), in native byte order, arguments in metadata order.
/// The metadata carries no register range, direction or features, so `range` is the
/// smallest power of two of at least 64 KiB covering the arguments, and `dir` and
/// `features` are 0. Names of 64 bytes or more, or holding a NUL, are refused.
pub fn kernel_info_blob(kernels: &[KernelMeta]) -> io::Result<Vec<u8>> {
    let mut blob = Vec::new();
    for kernel in kernels {
        let anums = i32::try_from(kernel.args.len())
            .map_err(|_| invalid(format!("kernel '{}' has too many arguments", kernel.name)))?;
        blob.reserve(KERNEL_INFO_SIZE + ARGUMENT_INFO_SIZE * kernel.args.len());
        put_name(&mut blob, &kernel.name)?;
        blob.extend_from_slice(&kernel_range(kernel).to_ne_bytes());
        blob.extend_from_slice(&anums.to_ne_bytes());
        blob.extend_from_slice(&0i32.to_ne_bytes());
        for arg in &kernel.args {
            put_name(&mut blob, &arg.name)?;
            blob.extend_from_slice(&arg.offset.to_ne_bytes());
            blob.extend_from_slice(&arg.size.to_ne_bytes());
            blob.extend_from_slice(&0u32.to_ne_bytes());
        }
    }
    Ok(blob)
}

pub(super) fn put_name(blob: &mut Vec<u8>, name: &str) -> io::Result<()> {
    if name.len() >= INFO_NAME_LEN || name.contains('\0') {
        return Err(invalid(format!(
            "the name '{name}' does not fit a NUL-terminated {INFO_NAME_LEN}-byte field"
        )));
    }
    let mut field = [0u8; INFO_NAME_LEN];
    field[..name.len()].copy_from_slice(name.as_bytes());
    blob.extend_from_slice(&field);
    Ok(())
}

pub(super) fn kernel_range(kernel: &KernelMeta) -> u32 {
    let end = kernel
        .args
        .iter()
        .map(|arg| u64::from(arg.offset) + u64::from(arg.size))
        .max()
        .unwrap_or(0);
    let range = end.max(u64::from(MIN_KERNEL_RANGE)).next_power_of_two();
    u32::try_from(range).unwrap_or(1 << 31)
}

/// Checks an exec buffer before it is queued: a valid START_CU packet, or a CONFIGURE /
/// SK_CONFIG packet whose count matches, that fits the exec BO.
pub(super) fn check_exec(words: &[u32]) -> io::Result<()> {
    let first = *words
        .first()
        .ok_or_else(|| invalid("an empty exec buffer"))?;
    if words.len() as u64 * 4 > EXEC_BO_BYTES {
        return Err(invalid(format!(
            "an exec buffer holds at most {} words, not {}",
            EXEC_BO_BYTES / 4,
            words.len()
        )));
    }
    let header = ErtHeader::decode(first);
    match ErtOpcode::from_raw(header.opcode) {
        Some(ErtOpcode::StartCu) => StartCu::decode(words)
            .map(drop)
            .map_err(|e| invalid(format!("bad ERT packet: {e}"))),
        Some(ErtOpcode::Configure | ErtOpcode::SkConfig) => {
            if usize::from(header.count) + 1 == words.len() {
                Ok(())
            } else {
                Err(invalid(format!(
                    "the header count is {} but {} words follow the header",
                    header.count,
                    words.len() - 1
                )))
            }
        }
        _ => Err(invalid(format!(
            "ERT opcode {} is not supported (START_CU, CONFIGURE and SK_CONFIG are)",
            header.opcode
        ))),
    }
}

/// The exec BO contents: the packet with its header state set to NEW, in native byte order.
pub(super) fn exec_packet(words: &[u32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(words.len() * 4);
    for (i, &word) in words.iter().enumerate() {
        let word = if i == 0 {
            let mut header = ErtHeader::decode(word);
            header.state = ErtState::New as u8;
            header.encode()
        } else {
            word
        };
        bytes.extend_from_slice(&word.to_ne_bytes());
    }
    bytes
}

/// The outcome an exec BO's header word shows: `None` while the state is below COMPLETED,
/// then Complete for COMPLETED and Failed naming the state otherwise.
pub(super) fn exec_outcome(header: u32) -> Option<CompletionState> {
    let raw = ErtHeader::decode(header).state;
    if raw < ErtState::Completed as u8 {
        return None;
    }
    Some(match ErtState::from_raw(raw) {
        Some(ErtState::Completed) => CompletionState::Complete,
        Some(state) => CompletionState::Failed(
            format!("the device ended the command in state {state:?} ({raw})").into(),
        ),
        None => CompletionState::Failed(
            format!("the device ended the command in unknown state {raw}").into(),
        ),
    })
}

/// The BO flags of a BO in `bank`, or in host memory for `None`.
pub(super) fn bo_flags(bank: Option<u32>) -> io::Result<u32> {
    match bank {
        None => Ok(abi::BO_FLAGS_HOST_ONLY),
        Some(index) if index <= abi::BO_FLAGS_MEMIDX_MASK => Ok(index),
        Some(index) => Err(invalid(format!(
            "memory bank {index} does not fit the 16-bit bank field of the BO flags"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::xocl::xclbin::{
        AXLF_HEADER_OFFSET, ArgKind, KernelArg, XclbinBuilder, parse,
    };

    const UUID: Guid = Guid::new(0xBD3A_1BD2_4C6E_4F0E, 0x9A0C_1E25_7F2D_0A11);

    use std::io;

    use crate::families::xocl::SyncDirection;
    use crate::families::xocl::abi::{
        self, AxlfArg, CopyBoArg, CreateBoArg, CtxArg, ExecbufArg, GemCloseArg, MapBoArg, SyncBoArg,
    };
    use crate::families::xocl::xclbin::KernelMeta;

    use crate::types::Guid;

    fn field(blob: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(blob[at..at + 4].try_into().unwrap())
    }

    fn name(blob: &[u8], at: usize) -> &[u8] {
        let field = &blob[at..at + INFO_NAME_LEN];
        let end = field.iter().position(|&b| b == 0).unwrap();
        assert!(field[end..].iter().all(|&b| b == 0), "NUL-padded");
        &field[..end]
    }

    #[test]
    fn kernel_info_blob_of_vadd_has_the_driver_layout() {
        let image = XclbinBuilder::vadd(UUID, 2, 1).build();
        let parsed = parse(&image).unwrap();
        let blob = kernel_info_blob(&parsed.kernels).unwrap();
        assert_eq!(blob.len(), 76 + 4 * 76);
        assert_eq!(name(&blob, 0), b"vadd");
        assert_eq!(field(&blob, 64), 0x1_0000, "range");
        assert_eq!(field(&blob, 68), 4, "anums");
        assert_eq!(field(&blob, 72), 0, "features");
        let expected: [(&[u8], u32, u32); 4] = [
            (b"in1", 0x10, 8),
            (b"in2", 0x1C, 8),
            (b"out_r", 0x28, 8),
            (b"size", 0x34, 4),
        ];
        for (i, (arg, offset, size)) in expected.into_iter().enumerate() {
            let at = 76 + 76 * i;
            assert_eq!(name(&blob, at), arg);
            assert_eq!(field(&blob, at + 64), offset, "{i}: offset");
            assert_eq!(field(&blob, at + 68), size, "{i}: size");
            assert_eq!(field(&blob, at + 72), 0, "{i}: dir");
        }
        assert!(kernel_info_blob(&[]).unwrap().is_empty());
    }

    #[test]
    fn kernel_info_blob_checks_names_and_sizes_the_range() {
        let kernel = |name: &str, arg: &str, offset: u32| KernelMeta {
            name: name.into(),
            args: vec![KernelArg {
                name: arg.into(),
                index: 0,
                offset,
                size: 8,
                kind: ArgKind::Global,
            }],
        };
        let longest = "k".repeat(63);
        let blob =
            kernel_info_blob(&[kernel(&longest, "a", 0x10), kernel("b", "x", 0x1_0000)]).unwrap();
        assert_eq!(blob.len(), 2 * (76 + 76));
        assert_eq!(name(&blob, 0), longest.as_bytes());
        assert_eq!(
            field(&blob, 152 + 64),
            0x2_0000,
            "range covers the argument"
        );
        for (k, a) in [("k".repeat(64), "a".to_owned()), ("k".into(), "a\0".into())] {
            let err = kernel_info_blob(&[kernel(&k, &a, 0x10)]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn argument_structs_are_built_from_the_inputs() {
        assert_eq!(
            create_bo_arg(8192, bo_flags(Some(3)).unwrap()),
            CreateBoArg {
                size: 8192,
                handle: 0,
                flags: 3,
                kind: 0,
                pad: 0
            }
        );
        assert_eq!(bo_flags(None).unwrap(), abi::BO_FLAGS_HOST_ONLY);
        assert_eq!(bo_flags(Some(0xFFFF)).unwrap(), 0xFFFF);
        assert!(bo_flags(Some(0x1_0000)).is_err());
        assert_eq!(create_bo_arg(4096, abi::BO_FLAGS_EXECBUF).flags, 1 << 31);
        assert_eq!(info_bo_arg(5).handle, 5);
        assert_eq!(
            map_bo_arg(5),
            MapBoArg {
                handle: 5,
                pad: 0,
                offset: 0
            }
        );
        assert_eq!(gem_close_arg(5), GemCloseArg { handle: 5, pad: 0 });

        let image = XclbinBuilder::vadd(UUID, 1, 1).build();
        let at = AXLF_HEADER_OFFSET + 112;
        assert_eq!(
            UUID.to_bytes(),
            image[at..at + 16],
            "as the xclbin stores it"
        );
        assert_eq!(parse(&image).unwrap().uuid, UUID);
        assert_eq!(
            ctx_arg(abi::CTX_OP_ALLOC_CTX, UUID, 2, true),
            CtxArg {
                op: 0,
                xclbin_id: [
                    0xBD, 0x3A, 0x1B, 0xD2, 0x4C, 0x6E, 0x4F, 0x0E, 0x9A, 0x0C, 0x1E, 0x25, 0x7F,
                    0x2D, 0x0A, 0x11
                ],
                cu_index: 2,
                flags: 1,
                handle: 0
            }
        );
        let free = ctx_arg(abi::CTX_OP_FREE_CTX, UUID, abi::CTX_VIRT_CU_INDEX, false);
        assert_eq!((free.op, free.cu_index, free.flags), (1, u32::MAX, 0));

        assert_eq!(
            sync_bo_arg(5, SyncDirection::FromDevice, 64, 128),
            SyncBoArg {
                handle: 5,
                flags: 0,
                size: 128,
                offset: 64,
                dir: 1,
                pad: 0
            }
        );
        assert_eq!(sync_bo_arg(5, SyncDirection::ToDevice, 0, 1).dir, 0);
        assert_eq!(
            copy_bo_arg(1, 16, 2, 32, 64),
            CopyBoArg {
                dst_handle: 1,
                src_handle: 2,
                size: 64,
                dst_offset: 16,
                src_offset: 32
            }
        );
        assert_eq!(
            execbuf_arg(9),
            ExecbufArg {
                ctx_id: 0,
                exec_bo_handle: 9,
                deps: [0; 8]
            }
        );

        let blob = [1u8, 2, 3];
        let axlf = axlf_arg(&image, &blob).unwrap();
        assert_eq!(
            axlf,
            AxlfArg {
                xclbin: image.as_ptr() as u64,
                ksize: 3,
                pad0: 0,
                kernels: blob.as_ptr() as u64,
                kds_cfg: abi::KdsConfig::default(),
                flags: 0,
                pad1: 0
            }
        );
    }
}
