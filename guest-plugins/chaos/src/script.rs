//! Scripts of import calls: the fuzzer hands the plugin arbitrary bytes (as a `reconfigure`
//! image), and the plugin turns them into a sequence of host imports with arbitrary
//! arguments — lengths, offsets, masks, device paths, forged handles. Whatever the bytes, the
//! host must answer every call with a value, an error or a trap, and nothing else.

use accelhost_sdk::Result;
use accelhost_sdk::host::cxl::{self, ContextKind};
use accelhost_sdk::host::dfl::Port;
use accelhost_sdk::host::dma::Buffer;
use accelhost_sdk::host::events::Event;
use accelhost_sdk::host::mmio::{AccessWidth, Region, RegisterWrite};
use accelhost_sdk::host::{clock, log, xocl};

/// The longest script read from an image.
pub const MAX_SCRIPT: u64 = 64 << 10;
/// Ops one script may run.
const MAX_OPS: usize = 512;

/// Reads arguments from the script; past its end every read is zero.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn u8(&mut self) -> u8 {
        let byte = self.bytes.get(self.at).copied().unwrap_or(0);
        self.at += 1;
        byte
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }

    fn u64(&mut self) -> u64 {
        u64::from(self.u32()) | (u64::from(self.u32()) << 32)
    }

    /// A value that is small most of the time and anything otherwise, as offsets and sizes
    /// worth trying are.
    fn size(&mut self) -> u64 {
        match self.u8() % 4 {
            0 => u64::from(self.u8()),
            1 => u64::from(self.u32() % 0x1_0000),
            2 => u64::from(self.u32()),
            _ => self.u64(),
        }
    }

    fn done(&self) -> bool {
        self.at >= self.bytes.len()
    }
}

/// What the script made so far; ops pick among them by index.
#[derive(Default)]
struct Objects {
    buffers: Vec<Buffer>,
    events: Vec<Event>,
    ports: Vec<Port>,
    regions: Vec<Region>,
    devices: Vec<xocl::Device>,
    bos: Vec<xocl::Bo>,
    contexts: Vec<cxl::Context>,
}

fn pick<T>(items: &[T], index: u8) -> Option<&T> {
    (!items.is_empty()).then(|| &items[index as usize % items.len()])
}

/// Runs `script` with `target` as the granted device to aim at. Errors from the host are
/// expected and skipped; only a trap stops the script early.
pub fn run(script: &[u8], target: &str) -> Result<()> {
    let mut r = Reader {
        bytes: script,
        at: 0,
    };
    let mut o = Objects::default();
    let paths = [
        target,
        "emu:ghost",
        "/dev/dfl-port.0",
        "/dev/dri/renderD128",
        "/dev/cxl/afu0.0",
        "",
    ];
    let mut ops = 0;
    while !r.done() && ops < MAX_OPS {
        ops += 1;
        let op = r.u8();
        let _ = step(op, &mut r, &mut o, &paths);
    }
    Ok(())
}

fn step(op: u8, r: &mut Reader<'_>, o: &mut Objects, paths: &[&str]) -> Result<()> {
    match op % 24 {
        0 => o.buffers.push(Buffer::allocate(r.size())?),
        1 => {
            let (i, offset, len) = (r.u8(), r.size(), r.u32());
            if let Some(b) = pick(&o.buffers, i) {
                b.read(offset, len % (2 << 20))?;
            }
        }
        2 => {
            let (i, offset, len) = (r.u8(), r.size(), r.u32() % (2 << 20));
            if let Some(b) = pick(&o.buffers, i) {
                b.write(offset, &vec![0xa5; len as usize])?;
            }
        }
        3 => {
            let (i, offset, mask, expected) = (r.u8(), r.size(), r.u64(), r.u64());
            if let Some(b) = pick(&o.buffers, i) {
                b.poll64(offset, mask, expected, u64::from(r.u32() % 2_000_000))?;
            }
        }
        4 => {
            let (i, offset, mask, expected) = (r.u8(), r.size(), r.u64(), r.u64());
            if let Some(b) = pick(&o.buffers, i) {
                o.events.push(b.watch64(offset, mask, expected)?);
            }
        }
        5 => {
            let (i, timeout) = (r.u8(), u64::from(r.u32() % 2_000_000));
            if let Some(e) = pick(&o.events, i) {
                e.wait(timeout)?;
            }
        }
        6 => {
            let (path, exclusive) = (paths[r.u8() as usize % paths.len()], r.u8() & 1 == 1);
            o.ports.push(Port::open(path, exclusive)?);
        }
        7 => {
            let (i, index) = (r.u8(), r.u32() % 4);
            if let Some(p) = pick(&o.ports, i) {
                o.regions.push(p.map_region(index)?);
            }
        }
        8 => {
            let (i, offset) = (r.u8(), r.size());
            if let Some(region) = pick(&o.regions, i) {
                region.read32(offset)?;
                region.read64(offset)?;
            }
        }
        9 => {
            let (i, offset, value) = (r.u8(), r.size(), r.u64());
            // Only the scratch registers: a write elsewhere could start the device.
            if let Some(region) = pick(&o.regions, i) {
                let offset = if offset < 0x1000 {
                    0x100 + (offset % 16) * 8
                } else {
                    offset
                };
                region.write64(offset, value)?;
                region.write32(offset, value as u32)?;
            }
        }
        10 => {
            let (i, count) = (r.u8(), r.u32() % 8192);
            if let Some(region) = pick(&o.regions, i) {
                let writes: Vec<RegisterWrite> = (0..count)
                    .map(|n| RegisterWrite {
                        offset: 0x100 + u64::from(n % 16) * 8,
                        value: u64::from(n),
                        width: if n & 1 == 0 {
                            AccessWidth::Bits64
                        } else {
                            AccessWidth::Bits32
                        },
                    })
                    .collect();
                region.write_batch(&writes)?;
            }
        }
        11 => {
            let (i, offset, mask, expected) = (r.u8(), r.size(), r.u64(), r.u64());
            if let Some(region) = pick(&o.regions, i) {
                region.poll64(offset, mask, expected, u64::from(r.u32() % 2_000_000))?;
            }
        }
        12 => {
            let (p, b) = (r.u8(), r.u8());
            if let (Some(port), Some(buffer)) = (pick(&o.ports, p), pick(&o.buffers, b)) {
                port.dma_map(buffer)?;
            }
        }
        13 => {
            let (p, iova) = (r.u8(), r.u64());
            if let Some(port) = pick(&o.ports, p) {
                port.dma_unmap(iova)?;
            }
        }
        14 => {
            let (p, index) = (r.u8(), r.u32());
            if let Some(port) = pick(&o.ports, p) {
                port.info()?;
                port.region_info(index)?;
            }
        }
        15 => {
            let path = paths[r.u8() as usize % paths.len()];
            o.devices.push(xocl::Device::open(path)?);
        }
        16 => {
            let (i, size, bank) = (r.u8(), r.size(), r.u8());
            if let Some(d) = pick(&o.devices, i) {
                let bank = (bank & 0x80 != 0).then_some(u32::from(bank & 3));
                o.bos.push(d.create_bo(size, bank)?);
            }
        }
        17 => {
            let (i, packet_len) = (r.u8(), r.u32() % 512);
            let packet: Vec<u32> = (0..packet_len).map(|_| r.u32()).collect();
            if let Some(d) = pick(&o.devices, i) {
                o.events.push(d.exec(&packet, &[])?);
            }
        }
        18 => {
            let (path, kind) = (paths[r.u8() as usize % paths.len()], r.u8() % 3);
            let kind = [
                ContextKind::Master,
                ContextKind::Slave,
                ContextKind::Dedicated,
            ][kind as usize];
            o.contexts.push(cxl::Context::open(path, kind)?);
        }
        19 => {
            let (i, wed) = (r.u8(), r.u64());
            if let Some(c) = pick(&o.contexts, i) {
                c.start_work(cxl::Work {
                    wed,
                    amr: None,
                    num_interrupts: None,
                })?;
            }
        }
        20 => {
            let (i, timeout) = (r.u8(), u64::from(r.u32() % 2_000_000));
            if let Some(c) = pick(&o.contexts, i) {
                c.read_event(timeout)?;
            }
        }
        21 => {
            let len = r.u32() % 8192;
            log::log(log::Level::Debug, &"z".repeat(len as usize));
            clock::now_ns();
        }
        22 => {
            // Drop something: handles must stay consistent as objects come and go.
            match r.u8() % 4 {
                0 => drop(o.buffers.pop()),
                1 => drop(o.events.pop()),
                2 => drop(o.regions.pop()),
                _ => drop(o.ports.pop()),
            }
        }
        _ => {
            // A forged handle: the host must trap rather than reach anything.
            if r.u8() == 0xff {
                let forged = unsafe { Buffer::from_handle(r.u32()) };
                forged.size();
            }
        }
    }
    Ok(())
}
