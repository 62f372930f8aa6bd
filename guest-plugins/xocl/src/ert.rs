//! Turns a launch into an ERT_START_CU exec buffer: the kernel's arguments checked against its
//! metadata, written into an image of the CU's register space, and the CUs that can reach
//! every buffer in the CU mask.

use accelhost_sdk::host::xocl::ArgKind;
use accelhost_sdk::{Error, KernelArgument, Result};

use crate::state::{KernelState, ProgramState};

/// ERT_CMD_STATE_NEW.
const STATE_NEW: u32 = 1;
/// ERT_START_CU.
const OPCODE_START_CU: u32 = 0;
/// ERT_CU.
const TYPE_CU: u32 = 3;
/// The control block (AP_CTRL, GIE, IER, ISR) the scheduler skips: arguments start at 0x10.
const CONTROL_WORDS: usize = 4;

/// The header word: state [3:0], extra CU masks [11:10], count [22:12], opcode [27:23],
/// type [31:28].
fn header(extra_masks: u32, count: u32) -> u32 {
    STATE_NEW | (extra_masks << 10) | (count << 12) | (OPCODE_START_CU << 23) | (TYPE_CU << 28)
}

fn describe(arg: &KernelArgument) -> &'static str {
    match arg {
        KernelArgument::Memory(_) => "memory",
        KernelArgument::Scalar32(_) => "a 32-bit scalar",
        KernelArgument::Scalar64(_) => "a 64-bit scalar",
        KernelArgument::Bytes(_) => "bytes",
    }
}

/// The exec buffer for launching `kernel` with `args`. `allocation` gives an allocation's
/// device address, size and bank (none for host memory).
pub fn launch_packet(
    kernel: &KernelState,
    program: &ProgramState,
    args: &[KernelArgument],
    allocation: impl Fn(u64) -> Result<(u64, u64, Option<u32>)>,
) -> Result<Vec<u32>> {
    let meta = &kernel.meta;
    if args.len() != meta.args.len() {
        let names: Vec<&str> = meta.args.iter().map(|a| a.name.as_str()).collect();
        return Err(Error::invalid_argument(format!(
            "kernel '{}' takes {} argument(s) ({}), got {}",
            meta.name,
            meta.args.len(),
            names.join(", "),
            args.len()
        )));
    }
    let words = meta
        .args
        .iter()
        .map(|a| (a.offset + a.size).div_ceil(4) as usize)
        .max()
        .unwrap_or(0)
        .max(CONTROL_WORDS);
    let mut regmap = vec![0u32; words];
    let mut cus = kernel.cus.clone();
    for (position, (arg, spec)) in args.iter().zip(&meta.args).enumerate() {
        let wrong = || {
            Error::invalid_argument(format!(
                "argument {position} ('{}') of kernel '{}' takes {}, got {}",
                spec.name,
                meta.name,
                match (spec.kind, spec.size) {
                    (ArgKind::Global, _) => "memory".to_owned(),
                    (ArgKind::Scalar, 4) => "a 32-bit scalar".to_owned(),
                    (ArgKind::Scalar, 8) => "a 64-bit scalar".to_owned(),
                    (ArgKind::Scalar, size) => format!("a {size}-byte value"),
                },
                describe(arg)
            ))
        };
        let value: u64 = match (spec.kind, arg) {
            (ArgKind::Global, KernelArgument::Memory(range)) => {
                let (address, size, bank) = allocation(range.allocation)?;
                if range.offset >= size {
                    return Err(Error::invalid_argument(format!(
                        "argument {position} ('{}'): offset {} is past the end of allocation {} ({size} bytes)",
                        spec.name, range.offset, range.allocation
                    )));
                }
                if let Some(bank) = bank {
                    cus.retain(|cu| {
                        connected_bank(program, *cu, spec.index).is_none_or(|b| b == bank)
                    });
                    if cus.is_empty() {
                        return Err(Error::invalid_argument(format!(
                            "argument {position} ('{}'): memory bank {bank} is not connected to any compute unit of kernel '{}' that can also reach the other arguments",
                            spec.name, meta.name
                        )));
                    }
                }
                address + range.offset
            }
            // A null pointer, as the contract spells it.
            (ArgKind::Global, KernelArgument::Scalar64(0)) => 0,
            (ArgKind::Scalar, KernelArgument::Scalar32(v)) if spec.size == 4 => u64::from(*v),
            (ArgKind::Scalar, KernelArgument::Scalar64(v)) if spec.size == 8 => *v,
            // A value larger than 8 bytes fills its words whole.
            (ArgKind::Scalar, KernelArgument::Bytes(bytes))
                if bytes.len() == spec.size as usize && bytes.len() > 8 =>
            {
                let first = (spec.offset / 4) as usize;
                for (word, chunk) in regmap[first..].iter_mut().zip(bytes.chunks(4)) {
                    let mut raw = [0u8; 4];
                    raw[..chunk.len()].copy_from_slice(chunk);
                    *word = u32::from_le_bytes(raw);
                }
                continue;
            }
            (ArgKind::Scalar, KernelArgument::Bytes(bytes))
                if bytes.len() == spec.size as usize =>
            {
                let mut raw = [0u8; 8];
                raw[..bytes.len()].copy_from_slice(bytes);
                u64::from_le_bytes(raw)
            }
            _ => return Err(wrong()),
        };
        let word = (spec.offset / 4) as usize;
        regmap[word] = value as u32;
        if spec.size == 8 {
            regmap[word + 1] = (value >> 32) as u32;
        }
    }
    let mut masks = vec![0u32; (cus.iter().max().copied().unwrap_or(0) / 32 + 1) as usize];
    if masks.len() > 4 {
        return Err(Error::invalid_argument(
            "an ERT packet addresses at most 128 compute units",
        ));
    }
    for cu in &cus {
        masks[(cu / 32) as usize] |= 1 << (cu % 32);
    }
    let count = (masks.len() + regmap.len()) as u32;
    let mut packet = Vec::with_capacity(1 + count as usize);
    packet.push(header(masks.len() as u32 - 1, count));
    packet.extend(masks);
    packet.extend(regmap);
    Ok(packet)
}

/// The bank CONNECTIVITY wires argument `arg` of compute unit `cu` to, if any.
fn connected_bank(program: &ProgramState, cu: u32, arg: u32) -> Option<u32> {
    program
        .info
        .connections
        .iter()
        .find(|c| c.cu == cu && c.arg_index == arg)
        .map(|c| c.bank)
}
