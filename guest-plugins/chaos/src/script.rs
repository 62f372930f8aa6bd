//! Scripts of import calls: the fuzzer hands the plugin arbitrary bytes (in its config, run in
//! the export the config names, or as a `reconfigure` image), and the plugin turns them into a
//! sequence of calls with arbitrary arguments — of every accel:plugin import (of `remote`,
//! the connect a grant must refuse) and of WASI
//! (sleeps, polls, randomness, stdio, clocks, sockets, exit): lengths, offsets, masks, device
//! paths, messages, forged handles. Whatever the bytes, the host must answer every call with a
//! value, an error or a trap, within the call's deadline, and nothing else.

use accelhost_sdk::Result;
use accelhost_sdk::host::cxl::{self, ContextKind};
use accelhost_sdk::host::dfl::Port;
use accelhost_sdk::host::dma::Buffer;
use accelhost_sdk::host::events::Event;
use accelhost_sdk::host::mmio::{AccessWidth, Region, RegisterWrite};
use accelhost_sdk::host::{clock, log, remote, xocl};

/// The longest script read from an image.
pub const MAX_SCRIPT: u64 = 64 << 10;
/// Ops one script may run, repetitions included.
const MAX_OPS: usize = 1 << 16;
/// The most times one op repeats.
const MAX_REPEAT: u32 = 4096;

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

/// Bytes from hex text; anything that is not a hex digit pair ends it.
pub fn from_hex(text: &str) -> Vec<u8> {
    text.as_bytes()
        .as_chunks::<2>()
        .0
        .iter()
        .map_while(|pair| u8::from_str_radix(std::str::from_utf8(pair).ok()?, 16).ok())
        .collect()
}

/// What the script made so far; ops pick among them by index. The plugin keeps them for as
/// long as its instance lives, as a hostile plugin would.
#[derive(Default)]
pub struct Objects {
    buffers: Vec<Buffer>,
    events: Vec<Event>,
    ports: Vec<Port>,
    regions: Vec<Region>,
    devices: Vec<xocl::Device>,
    bos: Vec<xocl::Bo>,
    contexts: Vec<cxl::Context>,
    pollables: Vec<wasip2::io::poll::Pollable>,
    memory: Vec<Vec<u8>>,
    /// What the export that ran the script answers with, when it answers with strings
    /// (`enumerate`, `list-attributes`): `count` strings of `len` bytes over one buffer.
    pub aliased_answer: Option<(usize, usize)>,
}

fn pick<T>(items: &[T], index: u8) -> Option<&T> {
    (!items.is_empty()).then(|| &items[index as usize % items.len()])
}

/// Runs `script` with `target` as the granted device to aim at, and returns what it made.
/// Errors from the host are expected and skipped; only a trap stops the script early.
pub fn run(script: &[u8], target: &str) -> Objects {
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
        let op = r.u8();
        if op == REPEAT {
            // The next op, again and again, with the same arguments: floods of events,
            // watches, commands, log lines.
            let times = r.u32() % MAX_REPEAT + 1;
            let at = r.at;
            for _ in 0..times {
                r.at = at;
                ops += 1;
                let op = r.u8();
                let _ = step(op, &mut r, &mut o, &paths);
                if ops >= MAX_OPS {
                    break;
                }
            }
            continue;
        }
        ops += 1;
        let _ = step(op, &mut r, &mut o, &paths);
    }
    o
}

/// The op that repeats the op after it.
pub const REPEAT: u8 = 0xff;

/// Runs one op: `op % 48` picks it, the first table's 24 and then the second's.
fn step(op: u8, r: &mut Reader<'_>, o: &mut Objects, paths: &[&str]) -> Result<()> {
    match op % 48 {
        op @ 0..=5 => buffer_step(op, r, o),
        op @ 6..=14 => port_step(op, r, o, paths),
        op @ 15..=23 => device_step(op, r, o, paths),
        op @ 24..=36 => wasi_step(op - 24, r, o),
        op => import_step(op - 24, r, o),
    }
}

/// Buffers and their events (ops 0 to 5).
fn buffer_step(op: u8, r: &mut Reader<'_>, o: &mut Objects) -> Result<()> {
    match op {
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
        _ => unreachable!("buffer ops are 0 to 5"),
    }
    Ok(())
}

/// Ports, their regions and DMA mappings (ops 6 to 14).
fn port_step(op: u8, r: &mut Reader<'_>, o: &mut Objects, paths: &[&str]) -> Result<()> {
    match op {
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
        _ => unreachable!("port ops are 6 to 14"),
    }
    Ok(())
}

/// XRT devices, CAPI contexts, logs, drops and forged handles (ops 15 to 23).
fn device_step(op: u8, r: &mut Reader<'_>, o: &mut Objects, paths: &[&str]) -> Result<()> {
    match op {
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
            if r.u8().is_multiple_of(4) {
                // A node the grants do not name (the fuzzer's plugin has no remote grant).
                let len = (r.u8() % 64) as usize;
                let endpoint: String = (0..len).map(|_| char::from(r.u8())).collect();
                let _ = remote::Node::connect(&endpoint);
            }
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
                // SAFETY: unsound on purpose, in the plugin (not the host): deliberately forged.
                let forged = unsafe { Buffer::from_handle(r.u32()) };
                forged.size();
            }
        }
    }
    Ok(())
}

/// The WASI ops (ops 0 to 12 of the second table).
fn wasi_step(op: u8, r: &mut Reader<'_>, o: &mut Objects) -> Result<()> {
    use wasip2::clocks::{monotonic_clock, wall_clock};
    use wasip2::io::poll;
    match op {
        0 => o
            .pollables
            .push(monotonic_clock::subscribe_duration(r.size())),
        1 => o
            .pollables
            .push(monotonic_clock::subscribe_instant(r.size())),
        2 => {
            if let Some(p) = pick(&o.pollables, r.u8()) {
                p.block();
            }
        }
        3 => {
            let count = r.u8() % 8 + 1;
            let chosen: Vec<&poll::Pollable> = (0..count)
                .filter_map(|_| pick(&o.pollables, r.u8()))
                .collect();
            if !chosen.is_empty() {
                poll::poll(&chosen);
            }
        }
        4 => {
            if let Some(p) = pick(&o.pollables, r.u8()) {
                p.ready();
            }
        }
        5 => {
            // Past 1 MiB the host ends the instance; up to 80 MiB can be asked for.
            let len = r.size() % (80 << 20);
            std::hint::black_box(wasip2::random::random::get_random_bytes(len));
        }
        6 => {
            let len = r.size() % (2 << 20);
            std::hint::black_box(wasip2::random::insecure::get_insecure_random_bytes(len));
            std::hint::black_box(wasip2::random::insecure_seed::insecure_seed());
            std::hint::black_box(wasip2::random::random::get_random_u64());
        }
        7 => {
            let len = r.u32() % (128 << 10);
            let bytes: Vec<u8> = (0..len)
                .map(|i| r.bytes.get(i as usize).copied().unwrap_or(b'\n'))
                .collect();
            let out = if r.u8() & 1 == 0 {
                wasip2::cli::stdout::get_stdout()
            } else {
                wasip2::cli::stderr::get_stderr()
            };
            for chunk in bytes.chunks(4096) {
                let _ = out.blocking_write_and_flush(chunk);
            }
            let _ = out.check_write();
            let _ = out.write_zeroes(u64::from(r.u32() % 8192));
            let _ = out.blocking_flush();
            o.pollables.push(out.subscribe());
        }
        8 => {
            let stdin = wasip2::cli::stdin::get_stdin();
            let _ = stdin.blocking_read(r.size());
            let _ = stdin.read(r.size());
            o.pollables.push(stdin.subscribe());
        }
        9 => {
            std::hint::black_box((
                monotonic_clock::now(),
                monotonic_clock::resolution(),
                wall_clock::now(),
                wall_clock::resolution(),
                wasip2::cli::environment::get_environment(),
                wasip2::cli::environment::get_arguments(),
                wasip2::cli::environment::initial_cwd(),
                wasip2::filesystem::preopens::get_directories(),
                wasip2::cli::terminal_stdout::get_terminal_stdout(),
            ));
        }
        10 => {
            use wasip2::sockets::network::IpAddressFamily;
            let network = wasip2::sockets::instance_network::instance_network();
            let _ = wasip2::sockets::tcp_create_socket::create_tcp_socket(IpAddressFamily::Ipv4);
            let _ = wasip2::sockets::udp_create_socket::create_udp_socket(IpAddressFamily::Ipv6);
            let _ = wasip2::sockets::ip_name_lookup::resolve_addresses(&network, "localhost");
        }
        11 => {
            // Ends the instance, as a trap does; rare, so that scripts get further.
            if r.u8() == 0xee {
                wasip2::cli::exit::exit(Err(()));
            }
        }
        12 => std::thread::sleep(std::time::Duration::from_nanos(r.size())),
        _ => unreachable!("WASI ops are 0 to 12"),
    }
    Ok(())
}

/// The imports the first table leaves out (ops 13 to 23 of the second).
fn import_step(op: u8, r: &mut Reader<'_>, o: &mut Objects) -> Result<()> {
    match op {
        13 => {
            let len = r.u32() % (64 << 10);
            let message: String = (0..len)
                .map(|i| char::from(r.bytes.get(i as usize).copied().unwrap_or(0x1b) & 0x7f))
                .collect();
            o.events.push(Event::failed(&accelhost_sdk::Error::new(
                accelhost_sdk::ErrorCode::Internal,
                message,
            )));
        }
        14 => {
            if let Some(e) = pick(&o.events, r.u8()) {
                let duplicate = e.duplicate();
                duplicate.state();
                o.events.push(duplicate);
            }
            o.events.push(Event::completed());
        }
        15 => {
            let (c, b) = (r.u8(), r.u8());
            if let (Some(context), Some(buffer)) = (pick(&o.contexts, c), pick(&o.buffers, b)) {
                context.attach_buffer(buffer)?;
            }
        }
        16 => {
            let (c, irq, big_endian) = (r.u8(), r.u32() as u16, r.u8() & 1 == 1);
            if let Some(context) = pick(&o.contexts, c) {
                o.events.push(context.interrupt_event(irq)?);
                o.regions.push(context.map_mmio(big_endian)?);
                context.process_element();
            }
        }
        17 => {
            let (d, b, direction, offset, size) = (r.u8(), r.u8(), r.u8(), r.size(), r.size());
            let after: Vec<&Event> = (0..r.u8() % 10)
                .filter_map(|_| pick(&o.events, r.u8()))
                .collect();
            if let (Some(device), Some(bo)) = (pick(&o.devices, d), pick(&o.bos, b)) {
                let direction = if direction & 1 == 0 {
                    xocl::SyncDirection::ToDevice
                } else {
                    xocl::SyncDirection::FromDevice
                };
                o.events
                    .push(device.sync_bo(bo, direction, offset, size, &after)?);
            }
        }
        18 => {
            let (d, x, y, size) = (r.u8(), r.u8(), r.u8(), r.size());
            let (xo, yo) = (r.size(), r.size());
            if let (Some(device), Some(dst), Some(src)) =
                (pick(&o.devices, d), pick(&o.bos, x), pick(&o.bos, y))
            {
                o.events.push(device.copy_bo(dst, xo, src, yo, size, &[])?);
            }
        }
        19 => {
            let b = r.u8();
            if let Some(bo) = pick(&o.bos, b) {
                bo.size();
                bo.device_address();
                bo.bank();
                o.buffers.push(bo.host_buffer()?);
            }
        }
        20 => {
            let (d, uuid, cu, exclusive) = (r.u8(), r.u64(), r.u32() % 8, r.u8() & 1 == 1);
            if let Some(device) = pick(&o.devices, d) {
                let uuid = accelhost_sdk::Guid {
                    high: uuid,
                    low: uuid.rotate_left(17),
                };
                let _ = device.open_context(uuid, cu, exclusive);
                let _ = device.close_context(uuid, cu);
                device.loaded_xclbin();
                device.reset()?;
            }
        }
        21 => {
            if let Some(port) = pick(&o.ports, r.u8()) {
                port.reset()?;
            }
        }
        22 => {
            let _ = accelhost_sdk::host::dfl::list_ports();
            let _ = accelhost_sdk::host::dfl::probe_ports();
            let _ = xocl::list_devices();
            let _ = cxl::list_afus();
        }
        _ => hoard_step(r, o)?,
    }
    Ok(())
}

/// Drops objects, or keeps memory, messages and lent events the host must bound.
fn hoard_step(r: &mut Reader<'_>, o: &mut Objects) -> Result<()> {
    match r.u8() % 8 {
        0 => drop(o.pollables.pop()),
        1 => drop(o.bos.pop()),
        2 => drop(o.contexts.pop()),
        3 => drop(o.devices.pop()),
        4 => {
            // Linear memory, touched and kept: past memory_mib the instance ends.
            let bytes = (r.size() % (128 << 20)) as usize;
            o.memory.push(vec![0x5a; bytes]);
        }
        5 => {
            // A failed event with a message of up to 12 MiB, kept: the host cuts it to
            // 1 KiB, and must not keep the rest.
            let len = (r.size() % (12 << 20)) as usize;
            o.events.push(Event::failed(&accelhost_sdk::Error::new(
                accelhost_sdk::ErrorCode::Internal,
                "e".repeat(len),
            )));
            let len = (r.size() % (12 << 20)) as usize;
            log::log(log::Level::Trace, &"l".repeat(len));
        }
        6 => {
            // One event lent again and again in one list: a few bytes of the plugin's
            // memory each, a host object each.
            let (d, b, times) = (r.u8(), r.u8(), (r.size() % (2 << 20)) as usize);
            if let (Some(device), Some(bo), Some(event)) = (
                pick(&o.devices, d),
                pick(&o.bos, b),
                pick(&o.events, r.u8()),
            ) {
                let after = vec![event; times];
                o.events
                    .push(device.sync_bo(bo, xocl::SyncDirection::ToDevice, 0, 64, &after)?);
            }
        }
        _ => {
            // The export answers with strings that share one buffer.
            let (count, len) = (r.size() % 200_000, r.size() % (4 << 20));
            o.aliased_answer = Some((count as usize, len as usize));
        }
    }
    Ok(())
}
