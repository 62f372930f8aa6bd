//! `accelhost poke DEVICE STEP...`: single operations through the plugin path on one device,
//! in order, on one handle: MMIO reads, writes and polls, reset, a DMA buffer, reconfigure,
//! events.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use accelhost::text::inert;
use accelhost::{DmaBuffer, Event, EventKind, Handle, MmioRegion, OpenMode};
use anyhow::{Context, bail};

const STEPS_HELP: &str = "\
Steps (numbers are decimal or 0x-hex; each step prints one line, dump then its bytes):
  read32:OFF  read64:OFF        read the register at byte offset OFF
  write32:OFF=V  write64:OFF=V  write V to it
  poll64:OFF=WANT               read it until it equals WANT (--timeout-ms)
  poll64:OFF:MASK=WANT          ... until (value & MASK) == WANT
  reset                         reset the accelerator
  alloc:SIZE                    prepare a DMA buffer of SIZE bytes; prints its I/O address
  fill:BYTE                     set every byte of the last buffer to BYTE
  put:OFF=HEX                   write bytes (HEX digits, such as deadbeef) at OFF in it
  dump  dump:OFF:LEN            show the last buffer, or LEN bytes of it from OFF, as hex
  reconfigure:FILE              load an image file (an xclbin for XRT cards) into slot 0
  event:KIND                    register an event: interrupt, error or power (register-event)
  wait                          wait for the last event registered (--timeout-ms)
The MMIO steps take @N after their name for MMIO region N (default 0), reconfigure takes @N
for slot N, and event takes @N for interrupt vector N (default 0; 1-based on CAPI cards).

Examples:
  accelhost poke emu:dfl0 write64:0x108=0xdeadbeef read64:0x108
  accelhost poke emu:dfl0 read64@0:0x0 reset poll64:0x138:0x1=0
  accelhost poke emu:dfl0 alloc:4096 fill:0xaa put:0x10=deadbeef dump:0:32
  accelhost poke --exclusive xocl/emu:xocl0 reconfigure:vadd.xclbin
  accelhost poke my-plugin/dev0 event@1:interrupt write64:0x20=1 wait";

/// The arguments of `accelhost poke`.
#[derive(clap::Args)]
#[command(after_help = STEPS_HELP)]
pub struct Args {
    /// The device, as `list` names it (plugin/name, name, PCI address or position).
    device: String,
    /// What to do, in order (the steps below).
    #[arg(required = true, value_name = "STEP")]
    steps: Vec<String>,
    /// Open the device exclusively (default: shared).
    #[arg(long)]
    exclusive: bool,
    /// How long each poll64 and wait step waits, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    timeout_ms: u64,
}

/// One operation, as parsed from a step.
#[derive(Debug, PartialEq)]
enum Op {
    Read32 {
        region: u32,
        offset: u64,
    },
    Read64 {
        region: u32,
        offset: u64,
    },
    Write32 {
        region: u32,
        offset: u64,
        value: u32,
    },
    Write64 {
        region: u32,
        offset: u64,
        value: u64,
    },
    Poll64 {
        region: u32,
        offset: u64,
        mask: u64,
        want: u64,
    },
    Reset,
    Alloc {
        size: u64,
    },
    Fill {
        byte: u8,
    },
    Put {
        offset: u64,
        bytes: Vec<u8>,
    },
    Dump {
        range: Option<(u64, u64)>,
    },
    Reconfigure {
        slot: u32,
        file: PathBuf,
    },
    Event {
        kind: EventKind,
        vector: u32,
    },
    Wait,
}

impl Op {
    fn uses_buffer(&self) -> bool {
        matches!(self, Op::Fill { .. } | Op::Put { .. } | Op::Dump { .. })
    }
}

/// Every step's name and its forms, for the message that refuses a malformed one; a form
/// with `[@...]` takes an index.
const STEPS: &[(&str, &str)] = &[
    ("read32", "read32[@REGION]:OFFSET or read64[@REGION]:OFFSET"),
    ("read64", "read32[@REGION]:OFFSET or read64[@REGION]:OFFSET"),
    (
        "write32",
        "write32[@REGION]:OFFSET=VALUE or write64[@REGION]:OFFSET=VALUE",
    ),
    (
        "write64",
        "write32[@REGION]:OFFSET=VALUE or write64[@REGION]:OFFSET=VALUE",
    ),
    (
        "poll64",
        "poll64[@REGION]:OFFSET=WANT or poll64[@REGION]:OFFSET:MASK=WANT",
    ),
    ("reset", "reset"),
    ("alloc", "alloc:SIZE"),
    ("fill", "fill:BYTE"),
    ("put", "put:OFFSET=HEXBYTES"),
    ("dump", "dump or dump:OFFSET:LENGTH"),
    ("reconfigure", "reconfigure[@SLOT]:FILE"),
    (
        "event",
        "event[@VECTOR]:interrupt, event:error or event:power",
    ),
    ("wait", "wait"),
];

/// A decimal or `0x` hexadecimal number; `_` may separate digits.
fn number(text: &str, what: &str) -> Result<u64, String> {
    let digits = text.replace('_', "");
    let parsed = match digits
        .strip_prefix("0x")
        .or_else(|| digits.strip_prefix("0X"))
    {
        Some(hex) => u64::from_str_radix(hex, 16),
        None => digits.parse(),
    };
    parsed.map_err(|_| {
        format!("{what} '{text}' is not a number (decimal, or hexadecimal with 0x) of 64 bits")
    })
}

/// Hex digits, two per byte.
fn hex_bytes(text: &str) -> Result<Vec<u8>, String> {
    let digits = text.strip_prefix("0x").unwrap_or(text).as_bytes();
    if digits.is_empty()
        || !digits.len().is_multiple_of(2)
        || !digits.iter().all(u8::is_ascii_hexdigit)
    {
        return Err(format!(
            "'{text}' is not bytes in hex: expected an even number of hex digits, such as deadbeef"
        ));
    }
    let nibble = |d: u8| (d as char).to_digit(16).unwrap_or(0) as u8;
    Ok(digits
        .as_chunks::<2>()
        .0
        .iter()
        .map(|&[high, low]| nibble(high) << 4 | nibble(low))
        .collect())
}

/// Parses one step (without checking its place among the others).
fn parse(step: &str) -> Result<Op, String> {
    let (head, arg) = match step.split_once(':') {
        Some((head, arg)) => (head, Some(arg)),
        None => (step, None),
    };
    let (name, index) = match head.split_once('@') {
        Some((name, index)) => (name, Some(index)),
        None => (head, None),
    };
    let Some(&(_, forms)) = STEPS.iter().find(|(step, _)| *step == name) else {
        let names: Vec<&str> = STEPS.iter().map(|(step, _)| *step).collect();
        return Err(format!(
            "unknown step '{name}'; expected one of {}",
            names.join(", ")
        ));
    };
    let expected = |why: &str| format!("{why}; expected {forms}");
    let takes_index = forms.contains("[@");
    let index = match index {
        Some(_) if !takes_index => return Err(expected(&format!("'{name}' takes no @INDEX"))),
        Some(index) => u32::try_from(number(index, "index").map_err(|e| expected(&e))?)
            .map_err(|_| expected(&format!("index '{index}' is larger than 32 bits")))?,
        None => 0,
    };
    let arg = match arg {
        None if !matches!(name, "reset" | "dump" | "wait") => {
            return Err(expected(&format!("'{name}' needs an argument")));
        }
        Some(_) if matches!(name, "reset" | "wait") => {
            return Err(expected(&format!("{name} takes no argument")));
        }
        arg => arg.unwrap_or(""),
    };
    let assignment = || {
        arg.split_once('=')
            .ok_or_else(|| expected(&format!("'{arg}' has no '='")))
    };
    let region = index;
    Ok(match name {
        "read32" | "read64" => {
            let offset = number(arg, "offset").map_err(|e| expected(&e))?;
            if name == "read32" {
                Op::Read32 { region, offset }
            } else {
                Op::Read64 { region, offset }
            }
        }
        "write32" | "write64" => {
            let (offset, value) = assignment()?;
            let offset = number(offset, "offset").map_err(|e| expected(&e))?;
            let value = number(value, "value").map_err(|e| expected(&e))?;
            if name == "write64" {
                Op::Write64 {
                    region,
                    offset,
                    value,
                }
            } else {
                let value = u32::try_from(value)
                    .map_err(|_| expected(&format!("value {value:#x} is wider than 32 bits")))?;
                Op::Write32 {
                    region,
                    offset,
                    value,
                }
            }
        }
        "poll64" => {
            let (place, want) = assignment()?;
            let (offset, mask) = match place.split_once(':') {
                Some((offset, mask)) => (offset, number(mask, "mask").map_err(|e| expected(&e))?),
                None => (place, u64::MAX),
            };
            Op::Poll64 {
                region,
                offset: number(offset, "offset").map_err(|e| expected(&e))?,
                mask,
                want: number(want, "value").map_err(|e| expected(&e))?,
            }
        }
        "reset" => Op::Reset,
        "alloc" => match number(arg, "size").map_err(|e| expected(&e))? {
            0 => return Err(expected("a buffer of 0 bytes")),
            size => Op::Alloc { size },
        },
        "fill" => {
            let byte = number(arg, "byte").map_err(|e| expected(&e))?;
            let byte = u8::try_from(byte)
                .map_err(|_| expected(&format!("{byte:#x} is not a byte (0 to 0xff)")))?;
            Op::Fill { byte }
        }
        "put" => {
            let (offset, bytes) = assignment()?;
            Op::Put {
                offset: number(offset, "offset").map_err(|e| expected(&e))?,
                bytes: hex_bytes(bytes).map_err(|e| expected(&e))?,
            }
        }
        "dump" if arg.is_empty() => Op::Dump { range: None },
        "dump" => {
            let (offset, len) = arg
                .split_once(':')
                .ok_or_else(|| expected(&format!("'{arg}' has no ':'")))?;
            Op::Dump {
                range: Some((
                    number(offset, "offset").map_err(|e| expected(&e))?,
                    number(len, "length").map_err(|e| expected(&e))?,
                )),
            }
        }
        "reconfigure" if arg.is_empty() => return Err(expected("no file named")),
        "reconfigure" => Op::Reconfigure {
            slot: index,
            file: PathBuf::from(arg),
        },
        "event" => Op::Event {
            kind: match arg {
                "interrupt" => EventKind::Interrupt,
                "error" => EventKind::Error,
                "power" => EventKind::PowerThermal,
                other => return Err(expected(&format!("'{other}' is not an event kind"))),
            },
            vector: index,
        },
        "wait" => Op::Wait,
        _ => unreachable!("every name of STEPS is parsed above"),
    })
}

/// Parses every step, and checks that each buffer step comes after an `alloc` and each
/// `wait` after an `event`.
fn parse_all(steps: &[String]) -> anyhow::Result<Vec<Op>> {
    let mut allocated = false;
    let mut registered = false;
    let mut ops = Vec::with_capacity(steps.len());
    for (i, step) in steps.iter().enumerate() {
        let op = parse(step).map_err(|why| {
            anyhow::anyhow!("step {} '{}' is malformed: {why}", i + 1, inert(step))
        })?;
        if op.uses_buffer() && !allocated {
            bail!(
                "step {} '{}' works on a DMA buffer, and no alloc:SIZE step comes before it",
                i + 1,
                inert(step)
            );
        }
        if op == Op::Wait && !registered {
            bail!(
                "step {} '{}' waits for an event, and no event:KIND step comes before it",
                i + 1,
                inert(step)
            );
        }
        allocated |= matches!(op, Op::Alloc { .. });
        registered |= matches!(op, Op::Event { .. });
        ops.push(op);
    }
    Ok(ops)
}

/// `bytes` as `xxd` shows them, 16 to a line, offsets counted from `start`.
fn hex_dump(start: u64, bytes: &[u8]) -> String {
    let mut out = String::new();
    for (i, line) in bytes.chunks(16).enumerate() {
        let _ = write!(out, "{:08x}:", start + i as u64 * 16);
        for pair in 0..8 {
            out.push(' ');
            for byte in line.iter().skip(pair * 2).take(2) {
                let _ = write!(out, "{byte:02x}");
            }
            let shown = line.len().saturating_sub(pair * 2).min(2);
            out.push_str(&"  ".repeat(2 - shown));
        }
        out.push_str("  ");
        out.extend(line.iter().map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        }));
        out.push('\n');
    }
    out
}

/// The open device and what the steps made on it.
struct Session<'a> {
    handle: &'a Handle,
    regions: HashMap<u32, MmioRegion>,
    buffers: Vec<DmaBuffer>,
    images: HashMap<PathBuf, Vec<u8>>,
    events: Vec<Event>,
    timeout: Duration,
}

impl Session<'_> {
    fn region(&mut self, index: u32) -> accelhost::Result<&MmioRegion> {
        if !self.regions.contains_key(&index) {
            let region = self.handle.map_mmio(index)?;
            self.regions.insert(index, region);
        }
        Ok(&self.regions[&index])
    }

    fn buffer(&self) -> &DmaBuffer {
        self.buffers
            .last()
            .expect("parse_all puts an alloc before every buffer step")
    }

    /// Runs `op`; returns what it printed.
    fn run(&mut self, op: &Op) -> anyhow::Result<String> {
        Ok(match op {
            Op::Read32 { region, offset } => {
                format!("{:#010x}", self.region(*region)?.read32(*offset)?)
            }
            Op::Read64 { region, offset } => {
                format!("{:#018x}", self.region(*region)?.read64(*offset)?)
            }
            Op::Write32 {
                region,
                offset,
                value,
            } => {
                self.region(*region)?.write32(*offset, *value)?;
                "ok".into()
            }
            Op::Write64 {
                region,
                offset,
                value,
            } => {
                self.region(*region)?.write64(*offset, *value)?;
                "ok".into()
            }
            Op::Poll64 {
                region,
                offset,
                mask,
                want,
            } => {
                let timeout = self.timeout;
                let started = Instant::now();
                let value = self
                    .region(*region)?
                    .poll64(*offset, *mask, *want, timeout)?;
                format!("{value:#018x} after {} ms", started.elapsed().as_millis())
            }
            Op::Reset => {
                self.handle.reset()?;
                "ok".into()
            }
            Op::Alloc { size } => {
                let buffer = self.handle.prepare_buffer(*size)?;
                let line = format!(
                    "buffer {}: {:#x} bytes, I/O address {:#x}, id {:#x}",
                    self.buffers.len() + 1,
                    buffer.size(),
                    buffer.iova(),
                    buffer.id()
                );
                self.buffers.push(buffer);
                line
            }
            Op::Fill { byte } => {
                let buffer = self.buffer();
                buffer.fill(0, buffer.size(), *byte)?;
                format!("{:#x} bytes set to {byte:#04x}", buffer.size())
            }
            Op::Put { offset, bytes } => {
                self.buffer().write(*offset, bytes)?;
                format!("{:#x} bytes at {offset:#x}", bytes.len())
            }
            Op::Dump { range } => {
                let buffer = self.buffer();
                let (offset, len) = range.unwrap_or((0, buffer.size()));
                if offset
                    .checked_add(len)
                    .is_none_or(|end| end > buffer.size())
                {
                    bail!(
                        "{len:#x} bytes from {offset:#x} are not inside the {:#x}-byte buffer",
                        buffer.size()
                    );
                }
                let len = len as usize;
                let mut bytes = vec![0; len];
                buffer.read(offset, &mut bytes)?;
                format!(
                    "{len:#x} bytes from {offset:#x}\n{}",
                    hex_dump(offset, &bytes).trim_end()
                )
            }
            Op::Reconfigure { slot, file } => {
                let image = &self.images[file];
                self.handle.reconfigure(*slot, image)?;
                format!(
                    "loaded {} ({:#x} bytes) into slot {slot}",
                    inert(&file.display().to_string()),
                    image.len()
                )
            }
            Op::Event { kind, vector } => {
                self.events
                    .push(self.handle.register_event(*kind, *vector)?);
                format!("event {} registered", self.events.len())
            }
            Op::Wait => {
                let started = Instant::now();
                let event = self
                    .events
                    .last()
                    .expect("parse_all puts an event before every wait");
                event.wait_timeout(self.timeout)?;
                format!(
                    "event {} fired after {} ms",
                    self.events.len(),
                    started.elapsed().as_millis()
                )
            }
        })
    }
}

/// Runs the steps on the device; a step that fails ends the run with status 1, after the close.
pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let ops = parse_all(&args.steps)?;
    let mut images = HashMap::new();
    for (i, (op, step)) in ops.iter().zip(&args.steps).enumerate() {
        if let Op::Reconfigure { file, .. } = op
            && !images.contains_key(file)
        {
            let image = std::fs::read(file).with_context(|| {
                format!(
                    "step {} '{}': cannot read {}",
                    i + 1,
                    inert(step),
                    inert(&file.display().to_string())
                )
            })?;
            images.insert(file.clone(), image);
        }
    }

    let host = crate::start::start_host(config)?;
    let found = host.enumerate(&[]);
    for failure in &found.failures {
        eprintln!("warning: {failure}");
    }
    let token = super::info::select(&found.tokens, &args.device)?;
    let mode = if args.exclusive {
        OpenMode::Exclusive
    } else {
        OpenMode::Shared
    };
    let handle = host
        .open(token, mode)
        .with_context(|| format!("opening {}", inert(&token.id())))?;

    let width = args
        .steps
        .iter()
        .map(|s| s.chars().count())
        .max()
        .unwrap_or(0);
    let mut session = Session {
        handle: &handle,
        regions: HashMap::new(),
        buffers: Vec::new(),
        images,
        events: Vec::new(),
        timeout: Duration::from_millis(args.timeout_ms),
    };
    let mut failed = None;
    for (i, (op, step)) in ops.iter().zip(&args.steps).enumerate() {
        match session.run(op) {
            Ok(what) => println!("{:<width$}  {what}", inert(step)),
            Err(err) => {
                failed = Some(format!(
                    "step {} '{}' failed: {}",
                    i + 1,
                    inert(step),
                    inert(&err.to_string())
                ));
                break;
            }
        }
    }
    let mut released = Ok(());
    for buffer in session.buffers.drain(..) {
        released = released.and(buffer.release());
    }
    drop(session);
    let closed = handle.close();
    let device = inert(&token.id()).into_owned();
    let cleanup = released
        .with_context(|| format!("releasing the buffers of {device}"))
        .and(closed.with_context(|| format!("closing {device}")));
    match (failed, cleanup) {
        (None, cleanup) => cleanup.map(|()| ExitCode::SUCCESS),
        (Some(failed), cleanup) => {
            eprintln!("error: {failed}");
            if let Err(err) = cleanup {
                eprintln!("error: {err:#}");
            }
            Ok(ExitCode::FAILURE)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_parse() {
        assert_eq!(
            parse("read64:0x108"),
            Ok(Op::Read64 {
                region: 0,
                offset: 0x108
            })
        );
        assert_eq!(
            parse("write32@1:16=0xffff_ffff"),
            Ok(Op::Write32 {
                region: 1,
                offset: 16,
                value: u32::MAX
            })
        );
        assert_eq!(
            parse("poll64:0x138:0x1=1"),
            Ok(Op::Poll64 {
                region: 0,
                offset: 0x138,
                mask: 1,
                want: 1
            })
        );
        assert_eq!(
            parse("poll64:8=3"),
            Ok(Op::Poll64 {
                region: 0,
                offset: 8,
                mask: u64::MAX,
                want: 3
            })
        );
        assert_eq!(parse("reset"), Ok(Op::Reset));
        assert_eq!(
            parse("put:2=DEadbe"),
            Ok(Op::Put {
                offset: 2,
                bytes: vec![0xde, 0xad, 0xbe]
            })
        );
        assert_eq!(parse("dump"), Ok(Op::Dump { range: None }));
        assert_eq!(
            parse("event@3:interrupt"),
            Ok(Op::Event {
                kind: EventKind::Interrupt,
                vector: 3
            })
        );
        assert_eq!(
            parse("event:power"),
            Ok(Op::Event {
                kind: EventKind::PowerThermal,
                vector: 0
            })
        );
        assert_eq!(parse("wait"), Ok(Op::Wait));
        assert_eq!(
            parse("dump:0x10:32"),
            Ok(Op::Dump {
                range: Some((16, 32))
            })
        );
        assert_eq!(
            parse("reconfigure@2:dir/a:b.xclbin"),
            Ok(Op::Reconfigure {
                slot: 2,
                file: "dir/a:b.xclbin".into()
            })
        );
    }

    #[test]
    fn malformed_steps_say_what_was_expected() {
        for (step, says) in [
            (
                "reed64:0",
                "unknown step 'reed64'; expected one of read32, read64",
            ),
            (
                "read64",
                "needs an argument; expected read32[@REGION]:OFFSET",
            ),
            ("read64:zz", "offset 'zz' is not a number"),
            ("write32:0=0x1_0000_0000", "wider than 32 bits"),
            ("write64:0", "'0' has no '='"),
            ("reset:1", "reset takes no argument"),
            ("reset@1", "'reset' takes no @INDEX"),
            ("fill:256", "0x100 is not a byte"),
            ("put:0=abc", "even number of hex digits"),
            ("put:0=aé1", "even number of hex digits"),
            ("put:0=zz", "even number of hex digits"),
            ("alloc:0", "a buffer of 0 bytes"),
            ("dump:16", "'16' has no ':'"),
            ("reconfigure:", "no file named"),
            ("event:irq", "'irq' is not an event kind"),
            ("event", "needs an argument"),
            ("wait:5", "wait takes no argument"),
        ] {
            let why = parse(step).expect_err(step);
            assert!(why.contains(says), "{step}: {why}");
        }
        let err = parse_all(&["alloc:64".into(), "bogus".into()]).unwrap_err();
        assert!(
            err.to_string().starts_with("step 2 'bogus' is malformed"),
            "{err}"
        );
        let err = parse_all(&["fill:1".into()]).unwrap_err();
        assert!(err.to_string().contains("no alloc:SIZE step"), "{err}");
        let err = parse_all(&["wait".into()]).unwrap_err();
        assert!(err.to_string().contains("no event:KIND step"), "{err}");
    }

    #[test]
    fn dumps_read_like_xxd() {
        let dump = hex_dump(0x10, b"ABCDEFGHIJKLMNOP\x00\xff!");
        assert_eq!(
            dump,
            "00000010: 4142 4344 4546 4748 494a 4b4c 4d4e 4f50  ABCDEFGHIJKLMNOP\n\
             00000020: 00ff 21                                  ..!\n"
        );
    }
}
