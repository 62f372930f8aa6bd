//! The chaos plugin: one fake accelerator, `chaos0`, and misbehaviour wherever its config asks
//! for it. The hostile-plugin tests, the fuzzer and `accelhost demo --fault` use it to show
//! that the host contains a plugin that traps, hangs, hoards, lies or attacks its imports.
//!
//! Config keys (each names the export where it strikes, such as `"enumerate"` or `"open"`):
//! - `trap_in`: panic (a trap, with the panic message on stderr).
//! - `hang_in`: loop forever in wasm.
//! - `grow_in`: allocate without bound.
//! - `recurse_in`: recurse without bound.
//! - `block_in`: wait forever in host waits (an event that never fires, a word that never
//!   changes).
//! - `refuse_in`: return an error (with `huge`, a 4 MiB message).
//! - `huge_in` with `huge`: answer `enumerate` or `list-attributes` with `"list"` (10,000
//!   devices or attributes, over the host's bounds), `"string"` (an 8 MiB name) or
//!   `"aliased"` (strings that share one buffer: 4096 devices with 7 extras of 4 KiB each, or
//!   120 attribute names of 1 MiB) or `"table"` (an `inventory` table of a few KiB that
//!   writes out to a GiB), or `describe` or `read-attribute` with `"string"` (an 8 MiB host
//!   name or value).
//! - `attributes` (a list of names): what `list-attributes` answers (default
//!   `["errors/errors"]`); each reads `0x0` and takes any write.
//! - `attack_in` with `attack` (and `target`, a device path, or for `hoard-sessions` a node's
//!   endpoint): call the imports with bad arguments, or take all they give (see
//!   [`attacks`]); the host's refusal comes back as the export's error.
//! - `log_flood` (a line count): log that many 1 KiB lines, and print as many, at `enumerate`.
//! - `impersonate` (true): enumerate as many fake devices as `impersonate_count` (4), with
//!   tokens 0, 1, 2… and the properties of an NLB0 port, as another plugin's would look; the
//!   first is named `impersonate_name` if given (such as the real port's `emu:dfl0`).
//! - `hold` (a device path): `open` also opens that DFL port exclusively (or a dedicated cxl
//!   context on that AFU, or that xocl device) and keeps it.
//! - `pending_on` (an xocl device path): `register-event` queues a BO sync there behind an
//!   event that never fires, and returns the sync's event: queued device work that only
//!   the end of the instance can cancel.
//!
//! - `sleep_in`: sleep in WASI for `sleep_ms` (default an hour) with `std::thread::sleep`; with
//!   `sleep_after_unix_ms`, only once the wall clock passed that time (so a restarted
//!   instance sleeps where the first did not).
//! - `wasi_in` with `wasi`: wait or ask through raw WASI, as a plugin without the SDK would:
//!   `"block"` (a one-hour `subscribe-duration` pollable, blocked on), `"poll"` (the same in
//!   a `poll` list with stdin), `"random"` (64 MiB of `get-random-bytes` at once),
//!   `"random-loop"` (1 MiB at a time, forever).
//! - `slow_in` with `slow_ms`: compute for that long, just under the deadline, every call.
//! - `evil_text` (true): names, types, hosts, extras, log lines and output made of terminal
//!   control sequences (window title, clipboard write, clear screen, conceal, C1 CSI, CR, LF,
//!   SO, SI, fake log lines); `refuse_in` and `trap_in` messages carry them too.
//! - `duplicate` (`"token"` or `"name"`): enumerate two devices sharing one.
//! - `interface` (a family: `"xocl"`, `"cxl"`, `"dfl"`): the device says it has that
//!   interface (an `interface` extra), so the doors that list only that family's devices
//!   (XRT's) list it.
//! - `script_in` with `script` (hex): run the script (see [`script`]) in that export.
//! - `no_batch` (true): `enqueue-launches` answers `unsupported`, as a plugin without `batch`.
//! - `lie` (a list): answer falsely about what the host hands on to programs:
//!   `"short-buffer"` (`prepare-buffer` and `mem-alloc` answer a 4 KiB buffer whatever was
//!   asked), `"no-host-memory"` (`mem-alloc` answers host memory without a buffer),
//!   `"repeat-id"` (every buffer, allocation, program and queue is id 1, every open handle 1),
//!   `"pending-events"` (every enqueue returns an event that never completes),
//!   `"failed-events"` (every enqueue returns a failed event whose 1 KiB message is new each
//!   time), `"batch-count"` (`enqueue-launches` says it enqueued one launch more than it was
//!   given), `"batch-no-event"` (it enqueues all and gives no event), `"batch-silent"` (it
//!   enqueues the first launch alone and says nothing of the rest).
//!
//! `register-event` otherwise returns an event that never fires (a watch on a word nobody
//! writes), and `reconfigure` runs its image as a script of import calls (see [`script`]).
//! Otherwise the plugin behaves: memory, programs, kernels and queues are accepted (each with
//! an id of its own), and enqueued work completes at once (it does nothing).

mod attacks;
pub mod script;

use accelhost_sdk::host::cxl::{Context, ContextKind};
use accelhost_sdk::host::dfl::Port;
use accelhost_sdk::host::{dma, events, image, xocl};
use accelhost_sdk::{
    AttributeInfo, DeviceRow, DeviceTable, Discovered, Error, EventKind, Fact, Filter, Guid,
    NumberedText, ObjectType, OpenMode, Plugin, Properties, Result, TableBuilder, filters_match,
    log,
};

/// The fake accelerator's GUID.
pub const GUID: Guid = Guid {
    high: 0xFA01_7FA0_17FA_017F,
    low: 0x0000_0000_0000_0001,
};
/// The fake accelerator's token.
const TOKEN: u64 = 7;
/// NLB0's AFU id, for impersonation.
const NLB0: Guid = Guid {
    high: 0xD842_4DC4_A4A3_C413,
    low: 0xF89E_4336_83F9_040B,
};

#[derive(Default)]
struct Chaos {
    config: serde_json::Value,
    held: Vec<Held>,
    /// Buffers behind the events of `register-event`, kept so their watches stay pending.
    watched: Vec<dma::Buffer>,
    next_handle: u64,
    /// The script of `script_in`, from the config's `script` (hex).
    script: Vec<u8>,
    /// What scripts made, kept while the instance lives.
    kept: Vec<script::Objects>,
}

/// A device the plugin keeps open.
#[allow(dead_code)]
enum Held {
    Port(Port),
    Context(Context),
    Device(xocl::Device, Vec<xocl::Bo>, Vec<events::Event>),
}

/// Opens `path` as whichever family serves it.
fn hold(path: &str) -> Result<Held> {
    let port = Port::open(path, true);
    if let Ok(port) = port {
        return Ok(Held::Port(port));
    }
    if let Ok(context) = Context::open(path, ContextKind::Dedicated) {
        return Ok(Held::Context(context));
    }
    if let Ok(device) = xocl::Device::open(path) {
        return Ok(Held::Device(device, Vec::new(), Vec::new()));
    }
    port.map(Held::Port)
}

impl Chaos {
    fn setting(&self, key: &str) -> Option<&str> {
        self.config.get(key).and_then(|v| v.as_str())
    }

    fn number(&self, key: &str) -> Option<u64> {
        self.config.get(key).and_then(|v| v.as_u64())
    }

    /// The aliased answer the last script asked for, if any.
    fn aliased_answer(&self) -> Option<(usize, usize)> {
        self.kept.last().and_then(|made| made.aliased_answer)
    }

    /// Whether the config's `lie` list names `lie`.
    fn lies(&self, lie: &str) -> bool {
        self.config
            .get("lie")
            .and_then(|v| v.as_array())
            .is_some_and(|lies| lies.iter().any(|l| l.as_str() == Some(lie)))
    }

    /// A fresh id, or 1 when the plugin repeats its ids.
    fn next_id(&mut self) -> u64 {
        self.next_handle += 1;
        if self.lies("repeat-id") {
            1
        } else {
            self.next_handle
        }
    }

    /// A buffer for `size` bytes: 4 KiB when the plugin lies about memory.
    fn buffer_for(&self, size: u64) -> Result<dma::Buffer> {
        dma::Buffer::allocate(if self.lies("short-buffer") {
            4096
        } else {
            size
        })
    }

    /// The event of an enqueued command, as the config's lies make it.
    fn enqueued(&mut self) -> Result<events::Event> {
        if self.lies("pending-events") {
            let buffer = dma::Buffer::allocate(4096)?;
            let never = buffer.watch64(0, 1, 1)?;
            self.watched.push(buffer);
            return Ok(never);
        }
        if self.lies("failed-events") {
            self.next_handle += 1;
            let message = format!(
                "chaos command {} failed: {}",
                self.next_handle,
                "x".repeat(1000)
            );
            return Ok(events::Event::failed(&Error::new(
                accelhost_sdk::ErrorCode::DeviceError,
                message,
            )));
        }
        Ok(events::Event::completed())
    }

    fn evil(&self) -> bool {
        self.config.get("evil_text").and_then(|v| v.as_bool()) == Some(true)
    }

    /// Does whatever the config asks for in export `call`.
    fn misbehave(&mut self, call: &str) -> Result<()> {
        let wants = |key: &str| self.setting(key) == Some(call);
        if wants("trap_in") {
            if self.evil() {
                panic!("chaos plugin asked to trap in {call}{EVIL}");
            }
            panic!("chaos plugin asked to trap in {call}");
        }
        let after = self.number("sleep_after_unix_ms").unwrap_or(0);
        if wants("sleep_in") && unix_ms() >= after {
            let ms = self.number("sleep_ms").unwrap_or(3_600_000);
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
        if wants("wasi_in") {
            raw_wasi(self.setting("wasi").unwrap_or(""));
        }
        if wants("slow_in") {
            let until = accelhost_sdk::host::clock::now_ns()
                + self.number("slow_ms").unwrap_or(0) * 1_000_000;
            while accelhost_sdk::host::clock::now_ns() < until {
                std::hint::spin_loop();
            }
        }
        if wants("hang_in") {
            let mut n: u64 = 0;
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        if wants("grow_in") {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1u8; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        if wants("recurse_in") {
            std::hint::black_box(recurse(std::hint::black_box(1)));
        }
        if wants("block_in") {
            block_forever()?;
        }
        if wants("refuse_in") {
            let message = if self.setting("huge").is_some() {
                "x".repeat(4 << 20)
            } else if self.evil() {
                format!("chaos plugin refuses {call}{EVIL}")
            } else {
                format!("chaos plugin refuses {call}")
            };
            return Err(Error::invalid_argument(message));
        }
        if wants("script_in") {
            let made = script::run(&self.script, self.setting("target").unwrap_or("emu:d0"));
            self.kept.push(made);
            return Ok(());
        }
        if wants("attack_in") {
            let attack = self.setting("attack").unwrap_or("");
            let target = self.setting("target").unwrap_or("");
            return attacks::run(attack, target);
        }
        Ok(())
    }

    fn properties(&self) -> Properties {
        Properties {
            object_type: ObjectType::Accelerator,
            name: "chaos0".into(),
            guid: GUID,
            vendor_id: 0x1234,
            device_id: 0x5678,
            bus_address: None,
            socket_id: None,
            device_type: "fpga".into(),
            host: "localhost".into(),
            num_mmio: 1,
            num_interrupts: 0,
            accelerator_state: None,
            parent: None,
            extras: self
                .setting("interface")
                .map(|family| vec![("interface".to_string(), family.to_string())])
                .unwrap_or_default(),
        }
    }

    /// Properties whose every string is a terminal attack.
    fn evil_properties(&self) -> Properties {
        let mut extras = self.properties().extras;
        extras.push((format!("key{EVIL}"), format!("value{EVIL}")));
        Properties {
            name: format!("chaos0{EVIL}"),
            device_type: format!("fpga{EVIL}"),
            host: format!("localhost{EVIL}"),
            extras,
            ..self.properties()
        }
    }

    /// Devices dressed as another plugin's NLB0 ports.
    fn impostors(&self, count: u64, first_name: Option<&str>) -> Vec<Discovered> {
        (0..count)
            .map(|token| Discovered {
                token,
                properties: Properties {
                    name: match (token, first_name) {
                        (0, Some(name)) => name.to_string(),
                        _ => format!("emu:d{token}"),
                    },
                    guid: NLB0,
                    vendor_id: 0x8086,
                    device_id: 0xbcc0,
                    ..self.properties()
                },
            })
            .collect()
    }
}

/// Terminal control sequences a plugin might hide in any text it chooses: a window title
/// (OSC 0), a clipboard write (OSC 52), clear screen, conceal, a C1 CSI, CR over the line,
/// shift out / in, and a line that looks like the host's own error log.
pub const EVIL: &str = "\u{1b}]0;pwned\u{7}\u{1b}]52;c;ZXZpbA==\u{7}\u{1b}[2J\u{1b}[8m\u{9b}31m\rOK\u{e}\u{f}\nERROR accelhost: forged line";

/// `count` strings of `len` bytes that all share one buffer, each with capacity = length so
/// that nothing on the way out reallocates it: the plugin pays for one, the host for every
/// one it lifts. (After the call the plugin frees the buffer once per string; a hostile
/// plugin does not care what that does to its own heap.)
fn aliased(count: usize, len: usize, byte: u8) -> Vec<String> {
    let mut one = std::mem::ManuallyDrop::new(vec![byte; len]);
    one.shrink_to_fit();
    let (ptr, len) = (one.as_mut_ptr(), one.len());
    (0..count)
        .map(|_| {
            // SAFETY: unsound on purpose, in the plugin (not the host): deliberately
            // aliased; the bytes are ASCII.
            unsafe { String::from_raw_parts(ptr, len, len) }
        })
        .collect()
}

/// Milliseconds since the Unix epoch, from WASI's wall clock.
fn unix_ms() -> u64 {
    let now = wasip2::clocks::wall_clock::now();
    now.seconds * 1000 + u64::from(now.nanoseconds / 1_000_000)
}

/// Waits or asks through WASI itself, below any SDK.
fn raw_wasi(how: &str) {
    use wasip2::clocks::monotonic_clock::subscribe_duration;
    const HOUR_NS: u64 = 3_600_000_000_000;
    match how {
        "block" => subscribe_duration(HOUR_NS).block(),
        "poll" => {
            let timer = subscribe_duration(HOUR_NS);
            let stdin = wasip2::cli::stdin::get_stdin();
            let readable = stdin.subscribe();
            // Stdin is empty and closed: its pollable is ready, so drain it, then wait on the
            // timer alone.
            let _ = wasip2::io::poll::poll(&[&timer, &readable]);
            let _ = wasip2::io::poll::poll(&[&timer]);
        }
        "random" => {
            std::hint::black_box(wasip2::random::random::get_random_bytes(64 << 20));
        }
        "random-loop" => loop {
            std::hint::black_box(wasip2::random::random::get_random_bytes(1 << 20));
        },
        _ => {}
    }
}

/// Recursion the optimizer cannot turn into a loop (the call goes through a pointer it cannot
/// see through), with frames on the wasm stack rather than in linear memory.
#[inline(never)]
fn recurse(depth: u64) -> u64 {
    if depth == u64::MAX {
        return 0;
    }
    let next: fn(u64) -> u64 = std::hint::black_box(recurse);
    next(depth + 1).wrapping_mul(3).wrapping_add(depth)
}

/// Waits on the host for what never comes, for as long as the host lets it.
fn block_forever() -> Result<()> {
    let buffer = dma::Buffer::allocate(4096)?;
    let never = buffer.watch64(0, 1, 1)?;
    loop {
        let _ = never.wait(u64::MAX);
        let _ = buffer.poll64(8, 1, 1, u64::MAX);
    }
}

impl Plugin for Chaos {
    fn configure(&mut self, config: &str) -> Result<()> {
        self.config = serde_json::from_str(config)
            .map_err(|e| Error::invalid_argument(format!("bad chaos config: {e}")))?;
        self.script = script::from_hex(self.setting("script").unwrap_or(""));
        self.misbehave("configure")
    }

    fn initialize(&mut self) -> Result<()> {
        self.misbehave("initialize")
    }

    fn finalize(&mut self) -> Result<()> {
        self.misbehave("finalize")
    }

    fn supports_device(&mut self, _device_type: &str) -> bool {
        let _ = self.misbehave("supports-device");
        true
    }

    fn supports_host(&mut self, host: &str) -> bool {
        let _ = self.misbehave("supports-host");
        accelhost_sdk::host_matches(host, "localhost")
    }

    /// With `huge` `"table"`: a table of a few KiB whose write-out is a GiB (4096 devices
    /// sharing 64 facts, each a 4000-byte text with a number); else the host asks `enumerate`.
    fn inventory(&mut self, _filters: Vec<Filter>) -> Result<DeviceTable> {
        if self.setting("huge_in") != Some("enumerate") || self.setting("huge") != Some("table") {
            return Err(Error::unsupported("inventory"));
        }
        let mut table = TableBuilder::default();
        let (fpga, localhost, key) = (table.text("fpga"), table.text("localhost"), table.text("k"));
        let long = table.text(&"v".repeat(4000));
        let (extras_first, extras_count) = table.facts((0..64).map(|n| Fact {
            key,
            value: NumberedText {
                text: long,
                number: Some(n),
            },
        }));
        let name = table.text("chaos");
        for token in 0..4096 {
            let properties = self.properties();
            table.row(DeviceRow {
                token,
                object_type: properties.object_type,
                name: NumberedText {
                    text: name,
                    number: Some(token as u32),
                },
                guid: properties.guid,
                vendor_id: properties.vendor_id,
                device_id: properties.device_id,
                bus_address: None,
                socket_id: None,
                device_type: fpga,
                host: localhost,
                num_mmio: 0,
                num_interrupts: 0,
                accelerator_state: None,
                parent: None,
                extras_first,
                extras_count,
            });
        }
        Ok(table.finish())
    }

    fn enumerate(&mut self, filters: Vec<Filter>) -> Result<Vec<Discovered>> {
        self.misbehave("enumerate")?;
        if let Some((count, len)) = self.aliased_answer() {
            // Devices whose extras all share one string (and whose names share another).
            let mut extras = aliased(count, len.min(256), b'k')
                .into_iter()
                .zip(aliased(count, len, b'v'));
            let names = aliased(count.div_ceil(64).max(1), len.clamp(1, 256), b'n');
            return Ok(names
                .into_iter()
                .enumerate()
                .map(|(token, name)| Discovered {
                    token: token as u64,
                    properties: Properties {
                        name,
                        extras: extras.by_ref().take(64).collect(),
                        ..self.properties()
                    },
                })
                .collect());
        }
        if self.evil() {
            log!(Error, "log line{EVIL}");
            println!("stdout line{EVIL}");
            eprintln!("stderr line{EVIL}");
            return Ok(vec![Discovered {
                token: TOKEN,
                properties: self.evil_properties(),
            }]);
        }
        match self.setting("duplicate") {
            Some("token") => {
                return Ok(vec![
                    Discovered {
                        token: TOKEN,
                        properties: self.properties(),
                    },
                    Discovered {
                        token: TOKEN,
                        properties: Properties {
                            name: "chaos1".into(),
                            ..self.properties()
                        },
                    },
                ]);
            }
            Some("name") => {
                return Ok(vec![
                    Discovered {
                        token: TOKEN,
                        properties: self.properties(),
                    },
                    Discovered {
                        token: TOKEN + 1,
                        properties: self.properties(),
                    },
                ]);
            }
            _ => {}
        }
        if let Some(lines) = self.config.get("log_flood").and_then(|v| v.as_u64()) {
            let line = "chaos ".repeat(170);
            for n in 0..lines {
                log!(Info, "{n}: {line}");
                println!("{n}: {line}");
            }
        }
        if self.setting("huge_in") == Some("enumerate") {
            return Ok(match self.setting("huge") {
                // 4096 devices (the most the host takes), each with 7 extras whose keys and
                // values all share one string of each: a few KiB of the plugin's memory, and
                // within every bound the host sets on one answer.
                Some("aliased") => {
                    let keys = aliased(4096 * 7, 200, b'k');
                    let mut values = aliased(4096 * 7, 4000, b'v').into_iter();
                    let mut keys = keys.into_iter();
                    (0..4096)
                        .map(|token| Discovered {
                            token,
                            properties: Properties {
                                name: format!("chaos{token}"),
                                extras: (0..7)
                                    .filter_map(|_| Some((keys.next()?, values.next()?)))
                                    .collect(),
                                ..self.properties()
                            },
                        })
                        .collect()
                }
                Some("string") => vec![Discovered {
                    token: TOKEN,
                    properties: Properties {
                        name: "n".repeat(8 << 20),
                        ..self.properties()
                    },
                }],
                _ => (0..10_000)
                    .map(|token| Discovered {
                        token,
                        properties: self.properties(),
                    })
                    .collect(),
            });
        }
        if self.config.get("impersonate").and_then(|v| v.as_bool()) == Some(true) {
            let count = self
                .config
                .get("impersonate_count")
                .and_then(|v| v.as_u64())
                .unwrap_or(4);
            return Ok(self.impostors(count, self.setting("impersonate_name")));
        }
        let properties = self.properties();
        let matched = filters_match(&filters, &properties);
        Ok(matched
            .then_some(Discovered {
                token: TOKEN,
                properties,
            })
            .into_iter()
            .collect())
    }

    fn list_attributes(&mut self, _token: u64) -> Result<Vec<AttributeInfo>> {
        self.misbehave("list-attributes")?;
        let info = |name: String| AttributeInfo {
            name,
            writable: true,
        };
        if let Some((count, len)) = self.aliased_answer() {
            return Ok(aliased(count, len, b'a').into_iter().map(info).collect());
        }
        if self.setting("huge_in") == Some("list-attributes") {
            return Ok(match self.setting("huge") {
                Some("string") => vec![info("n".repeat(8 << 20))],
                // 120 names of 1 MiB over one buffer of 1 MiB.
                Some("aliased") => aliased(120, 1 << 20, b'n').into_iter().map(info).collect(),
                _ => (0..10_000).map(|i| info(format!("a{i}"))).collect(),
            });
        }
        let names: Vec<String> = match self.config.get("attributes") {
            Some(list) => serde_json::from_value(list.clone())
                .map_err(|e| Error::invalid_argument(format!("bad chaos attributes: {e}")))?,
            None => vec!["errors/errors".into()],
        };
        Ok(names.into_iter().map(info).collect())
    }

    fn read_attribute(&mut self, _token: u64, _name: &str) -> Result<String> {
        self.misbehave("read-attribute")?;
        if self.setting("huge_in") == Some("read-attribute") {
            return Ok("v".repeat(8 << 20));
        }
        Ok(if self.evil() {
            format!("0x0{EVIL}")
        } else {
            "0x0".into()
        })
    }

    fn write_attribute(&mut self, _token: u64, _name: &str, _value: &str) -> Result<()> {
        self.misbehave("write-attribute")
    }

    fn describe(&mut self, token: u64) -> Result<Properties> {
        self.misbehave("describe")?;
        if self.setting("huge_in") == Some("describe") {
            return Ok(Properties {
                host: "h".repeat(8 << 20),
                ..self.properties()
            });
        }
        match token {
            TOKEN if self.evil() => Ok(self.evil_properties()),
            TOKEN => Ok(self.properties()),
            _ => Err(Error::not_found(format!("no token {token}"))),
        }
    }

    fn open(&mut self, token: u64, _mode: OpenMode) -> Result<u64> {
        self.misbehave("open")?;
        if let Some(path) = self.setting("hold") {
            let held = hold(path).map_err(|e| e.context("hold open"))?;
            self.held.push(held);
        }
        let impersonating = self.config.get("impersonate").is_some();
        if token == TOKEN || impersonating {
            Ok(self.next_id())
        } else {
            Err(Error::not_found(format!("no token {token}")))
        }
    }

    fn close(&mut self, _handle: u64) -> Result<()> {
        self.misbehave("close")
    }

    fn map_mmio(&mut self, _handle: u64, _index: u32) -> Result<accelhost_sdk::host::mmio::Region> {
        self.misbehave("map-mmio")?;
        Err(Error::unsupported("map-mmio"))
    }

    fn prepare_buffer(
        &mut self,
        _handle: u64,
        size: u64,
        _flags: accelhost_sdk::BufferFlags,
    ) -> Result<accelhost_sdk::PreparedBuffer> {
        self.misbehave("prepare-buffer")?;
        let buffer = self.buffer_for(size)?;
        Ok(accelhost_sdk::PreparedBuffer {
            id: self.next_id(),
            iova: 0,
            buffer,
        })
    }

    fn release_buffer(&mut self, _handle: u64, _id: u64) -> Result<()> {
        self.misbehave("release-buffer")
    }

    fn io_address(&mut self, _handle: u64, _id: u64) -> Result<u64> {
        self.misbehave("io-address")?;
        Ok(0)
    }

    fn reset(&mut self, _handle: u64) -> Result<()> {
        self.misbehave("reset")
    }

    fn reconfigure(&mut self, _handle: u64, _slot: u32, image: &image::Image) -> Result<()> {
        self.misbehave("reconfigure")?;
        let size = image.size();
        let bytes = image.read(0, size.min(script::MAX_SCRIPT) as u32)?;
        let made = script::run(&bytes, self.setting("target").unwrap_or("emu:d0"));
        self.kept.push(made);
        Ok(())
    }

    fn register_event(
        &mut self,
        _handle: u64,
        _kind: EventKind,
        _vector: u32,
    ) -> Result<events::Event> {
        self.misbehave("register-event")?;
        let buffer = dma::Buffer::allocate(4096)?;
        let never = buffer.watch64(0, 1, 1)?;
        self.watched.push(buffer);
        let Some(path) = self.setting("pending_on") else {
            return Ok(never);
        };
        let device = xocl::Device::open(path)?;
        let bo = device.create_bo(4096, None)?;
        let sync = device.sync_bo(&bo, xocl::SyncDirection::ToDevice, 0, 4096, &[&never])?;
        let event = sync.duplicate();
        self.held
            .push(Held::Device(device, vec![bo], vec![never, sync]));
        Ok(event)
    }

    fn mem_alloc(
        &mut self,
        _handle: u64,
        kind: accelhost_sdk::MemoryKind,
        size: u64,
        _bank: Option<u32>,
    ) -> Result<accelhost_sdk::Allocation> {
        self.misbehave("mem-alloc")?;
        let buffer = match kind {
            accelhost_sdk::MemoryKind::Device => None,
            _ if self.lies("no-host-memory") => None,
            _ => Some(self.buffer_for(size)?),
        };
        let id = self.next_id();
        Ok(accelhost_sdk::Allocation {
            id,
            buffer,
            device_address: 0x1000 * self.next_handle,
        })
    }

    fn mem_free(&mut self, _handle: u64, _id: u64) -> Result<()> {
        self.misbehave("mem-free")
    }

    fn program_create(&mut self, _handle: u64, _image: &image::Image) -> Result<u64> {
        self.misbehave("program-create")?;
        Ok(self.next_id())
    }

    fn program_release(&mut self, _program: u64) -> Result<()> {
        self.misbehave("program-release")
    }

    fn kernel_get(&mut self, _program: u64, _name: &str) -> Result<u64> {
        self.misbehave("kernel-get")?;
        Ok(1)
    }

    fn queue_create(&mut self, _handle: u64) -> Result<u64> {
        self.misbehave("queue-create")?;
        Ok(self.next_id())
    }

    fn queue_release(&mut self, _queue: u64) -> Result<()> {
        self.misbehave("queue-release")
    }

    fn enqueue_memcpy(
        &mut self,
        _queue: u64,
        _dst: accelhost_sdk::MemoryRange,
        _src: accelhost_sdk::MemoryRange,
        _size: u64,
    ) -> Result<events::Event> {
        self.misbehave("enqueue-memcpy")?;
        self.enqueued()
    }

    fn enqueue_launch(
        &mut self,
        _queue: u64,
        _kernel: u64,
        _args: Vec<accelhost_sdk::KernelArgument>,
        _size: accelhost_sdk::LaunchSize,
    ) -> Result<events::Event> {
        self.misbehave("enqueue-launch")?;
        self.enqueued()
    }

    fn enqueue_launches(
        &mut self,
        _queue: u64,
        launches: Vec<accelhost_sdk::Launch>,
    ) -> accelhost_sdk::Enqueued {
        let given = launches.len() as u32;
        let mut enqueued = accelhost_sdk::Enqueued {
            count: given,
            last: None,
            refused: None,
        };
        if self.config.get("no_batch") == Some(&serde_json::Value::Bool(true)) {
            enqueued.count = 0;
            enqueued.refused = Some(Error::unsupported("enqueue-launches"));
            return enqueued;
        }
        if let Err(err) = self.misbehave("enqueue-launches") {
            enqueued.count = 0;
            enqueued.refused = Some(err);
            return enqueued;
        }
        if self.lies("batch-count") {
            enqueued.count = given + 1;
        }
        if self.lies("batch-silent") {
            enqueued.count = 1;
        }
        if !self.lies("batch-no-event") {
            match self.enqueued() {
                Ok(event) => enqueued.last = Some(event),
                Err(err) => {
                    enqueued.count = 0;
                    enqueued.refused = Some(err);
                }
            }
        }
        enqueued
    }
}

accelhost_sdk::export_plugin!(Chaos);
