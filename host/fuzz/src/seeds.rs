//! The seed corpus, built from the host library's own encoders so that it stays valid as the
//! formats evolve. `cargo run -p accelhost-fuzz --example write_seeds` writes it to
//! `host/fuzz/corpus/<target>/seed-*`; the smoke test also runs it straight from here.

use accelhost::builtin::embedded_default_text;
use accelhost::families::cxl::AfuEvent;
use accelhost::families::cxl::abi::{self as cxl_abi, StartWorkArg, encode_event, memcpy};
use accelhost::families::xocl::abi::{
    ERT_CUSTOM_EXTRA_CU_MASKS_SHIFT, ErtHeader, ErtOpcode, ErtState, ErtType, StartCu, vadd,
};
use accelhost::families::xocl::xclbin::{self, MemKind, XclbinBuilder};
use accelhost::types::Guid;

/// One seed input: a file name (without the `seed-` prefix) and its bytes.
pub type Seed = (&'static str, Vec<u8>);

/// The seeds of `target`; none for a name that is not a target.
pub fn seeds(target: &str) -> Vec<Seed> {
    match target {
        "config" => config(),
        "xclbin" => xclbin(),
        "ert" => ert(),
        "cxl" => cxl(),
        "imports" => imports(),
        "compile" => compile(),
        "serve_config" => serve_config(),
        "doors" => doors(),
        "authority" => authority(),
        _ => Vec::new(),
    }
}

const UUID: Guid = Guid {
    high: 0x0123_4567_89AB_CDEF,
    low: 0xFEDC_BA98_7654_3210,
};

/// Sequences of the doors' C calls (three bytes per op: the call, two argument bytes; see
/// `crate::doors`): the flows a program runs on the emulated card, on the lying device and on
/// handles it released.
fn doors() -> Vec<Seed> {
    let ops = |ops: &[[u8; 3]]| ops.concat();
    vec![
        (
            "xrt-vadd-on-the-card-then-stale-handles",
            ops(&[
                [0, 0, 0],
                [2, 0, 0],
                [3, 0, 0x10],
                [3, 0, 0x11],
                [3, 0, 0x12],
                [6, 0, 0],
                [7, 0, 0x20],
                [8, 0, 0x10],
                [9, 0, 0],
                [10, 0, 0x08],
                [11, 0, 0],
                [12, 0, 0],
                [13, 0, 0],
                [5, 0, 0],
                [5, 0x04, 0],
                [6, 0x04, 0],
                [7, 0x04, 0x20],
                [1, 0, 0],
                [2, 0x04, 0],
            ]),
        ),
        (
            "xrt-on-the-liar",
            ops(&[
                [0, 1, 0],
                [2, 0, 0],
                [9, 0, 0],
                [3, 0, 0x02],
                [6, 0, 0],
                [10, 0, 0x08],
                [11, 0, 0],
                [11, 0, 1],
                [12, 0, 0],
                [3, 0, 0x02],
                [3, 0, 0x10],
                [1, 0, 0],
            ]),
        ),
        (
            "xrt-ids-given-twice",
            ops(&[
                [0, 2, 0],
                [2, 0, 0],
                [3, 0, 0x02],
                [3, 0, 0x02],
                [6, 0, 0],
                [9, 0, 0],
                [10, 0, 0x08],
                [11, 0, 0],
                [1, 0, 0],
            ]),
        ),
        (
            "offload-copies-then-stale-handles",
            ops(&[
                [17, 2, 0],
                [14, 2, 0x12],
                [20, 0, 0x05],
                [21, 0, 0x05],
                [22, 0, 0],
                [23, 0, 0],
                [23, 0x04, 0],
                [16, 0, 0],
                [16, 0, 0],
                [18, 0, 1],
                [19, 0x04, 0],
                [18, 0x06, 0],
            ]),
        ),
        (
            "offload-on-the-liar",
            ops(&[
                [17, 3, 0],
                [14, 3, 0x00],
                [20, 0, 0x01],
                [22, 0, 0],
                [19, 0, 0],
                [14, 3, 0x04],
                [14, 3, 0x10],
                [18, 0, 1],
            ]),
        ),
        (
            "forged-and-null-handles-everywhere",
            (0u8..24)
                .flat_map(|call| [[call, 0x06, 0xC1], [call, 0x07, 0xC2]])
                .flatten()
                .collect(),
        ),
    ]
}

fn serve_config() -> Vec<Seed> {
    vec![
        (
            "example.json",
            include_str!("../../../examples/node/serve.json").into(),
        ),
        (
            "kubernetes.json",
            br#"{"node_name": "n", "listen": {"unix": {"path": "node.sock", "mode": "0600"},
                 "metrics": {"address": "127.0.0.1:0"}},
                 "health_interval_ms": 200,
                 "clients": [{"name": "ops", "unix_uid": 0, "grants": {"devices": ["*"]}}],
                 "kubernetes": {"device_plugin_dir": "plugins", "allocation_dir": "allocations",
                 "container_dir": "/run/accelhost", "resource_domain": "example.org",
                 "devices": ["dfl/*"], "dma_memory_mib": 64, "raw_device_nodes": true,
                 "cdi_spec_dir": "cdi"}}"#
                .to_vec(),
        ),
        (
            "tls-and-limits.json",
            br#"{"listen": {"tcp": {"address": "127.0.0.1:0", "certificate": "c.pem",
                 "key": "k.pem", "client_ca": "ca.pem"}},
                 "limits": {"max_message_kib": 4096, "max_sessions": 8},
                 "clients": [{"name": "a", "certificate_san": "a.example",
                 "grants": {"devices": ["xocl/emu:xocl0"], "dma_memory_mib": 64,
                 "reconfigure": true}}]}"#
                .to_vec(),
        ),
        (
            "multibyte-patterns.json",
            r#"{"listen": {"unix": {"path": "s"}},
                "clients": [{"name": "é", "unix_uid": 1, "grants": {"devices": ["dfl/é", "é*", "d*é"]}}],
                "kubernetes": {"devices": ["日本*"]}}"#
                .into(),
        ),
    ]
}

fn config() -> Vec<Seed> {
    vec![
        ("default.json", embedded_default_text().into()),
        (
            "two-cards.json",
            include_str!("../../../examples/configs/two-cards.json").into(),
        ),
        (
            "linux-dfl.json",
            include_str!("../../../examples/configs/linux-dfl.json").into(),
        ),
        (
            "imports.json",
            crate::imports::config("enumerate", "emu:d0", &[0, 1, 2]).into(),
        ),
        ("minimal.json", br#"{"plugins": []}"#.to_vec()),
        (
            "file-module.json",
            br#"{"plugins": [{"name": "p", "module": "plugins/p.wasm", "enabled": false,
                 "load_policy": {"on_error": "fail", "on_fault": "restart", "max_restarts": 2,
                 "restart_backoff_ms": 5, "memory_mib": 8, "call_timeout_ms": 10},
                 "grants": {"devices": ["/dev/dfl-port.*"], "dma_memory_mib": 1}}],
                 "devices": [{"id": "c", "family": "cxl", "accelerator": "vadd", "card": 1,
                 "slice": 2, "max_contexts": 4, "irqs_min": 1, "irqs_max": 4,
                 "vendor_id": "0x1014", "device_id": 1122, "bus_address": "0001:02:03.4",
                 "socket_id": 1}]}"#
                .to_vec(),
        ),
    ]
}

fn xclbin() -> Vec<Seed> {
    vec![
        ("vadd-1cu.xclbin", XclbinBuilder::vadd(UUID, 1, 1).build()),
        (
            "vadd-4cu-2bank.xclbin",
            XclbinBuilder::vadd(UUID, 4, 2).build(),
        ),
        (
            "hbm-extra-section.xclbin",
            XclbinBuilder::vadd(UUID, 2, 1)
                .mode(xclbin::MODE_HW_EMU)
                .bank(MemKind::Hbm, "HBM[0]", 0x1_0000_0000, 1 << 20)
                .section(
                    xclbin::SECTION_KEYVALUE_METADATA,
                    "kv",
                    b"key=value".to_vec(),
                )
                .build(),
        ),
    ]
}

fn words_le(words: &[u32]) -> Vec<u8> {
    words.iter().flat_map(|w| w.to_le_bytes()).collect()
}

fn ert() -> Vec<Seed> {
    let vadd_call = vadd::regmap(0x40_0000_0000, 0x40_0001_0000, 0x40_0002_0000, 1024);
    let one_mask = StartCu {
        cu_masks: vec![0b1],
        regmap: vadd_call.clone(),
    };
    let four_masks = StartCu {
        cu_masks: vec![0x8000_0001, 0, 0, 0x8000_0000],
        regmap: vadd_call,
    };
    let configure = ErtHeader {
        state: ErtState::New as u8,
        custom: 1 << ERT_CUSTOM_EXTRA_CU_MASKS_SHIFT,
        count: 2,
        opcode: ErtOpcode::Configure as u8,
        kind: ErtType::Ctrl as u8,
    };
    vec![
        ("start-cu-vadd", words_le(&one_mask.encode())),
        ("start-cu-4-masks", words_le(&four_masks.encode())),
        ("configure", words_le(&[configure.encode(), 0, 0])),
    ]
}

fn cxl() -> Vec<Seed> {
    let interrupt = encode_event(3, &AfuEvent::Interrupt(1));
    let storage = encode_event(
        3,
        &AfuEvent::DataStorage {
            address: 0x7FFF_0000_1000,
            dsisr: 0x4200_0000,
        },
    );
    let error = encode_event(4, &AfuEvent::AfuError(0xDEAD));
    let copy = memcpy::WorkElement {
        cmd: memcpy::CMD_VALID | memcpy::CMD_COPY,
        length: 4096,
        src: 0x10_0000,
        dst: 0x20_0000,
        ..Default::default()
    };
    let irq = memcpy::WorkElement {
        cmd: memcpy::CMD_VALID | memcpy::CMD_WRAP | memcpy::CMD_IRQ,
        length: 1,
        ..Default::default()
    };
    let mut queue = copy.encode().to_vec();
    queue.extend_from_slice(&irq.encode());
    let start_work = StartWorkArg {
        flags: cxl_abi::START_WORK_NUM_IRQS | cxl_abi::START_WORK_AMR,
        work_element_descriptor: memcpy::wed(0x10_0000, 4),
        amr: 0,
        num_interrupts: 2,
        ..Default::default()
    };
    let start_work: Vec<u8> = [
        start_work.flags,
        start_work.work_element_descriptor,
        start_work.amr,
    ]
    .iter()
    .flat_map(|w| w.to_le_bytes())
    .chain(start_work.num_interrupts.to_le_bytes())
    .chain([0; 38])
    .collect();
    vec![
        ("event-interrupt", interrupt.clone()),
        ("event-data-storage", storage.clone()),
        ("event-afu-error", error.clone()),
        ("events-all", [interrupt, storage, error].concat()),
        ("sysfs-mode", b"afu_directed\n".to_vec()),
        (
            "sysfs-modes-supported",
            b"dedicated_process\nafu_directed\n".to_vec(),
        ),
        ("sysfs-caia-version", b"1.2\n".to_vec()),
        ("sysfs-cr-id", b"0x1014\n".to_vec()),
        (
            "sysfs-names",
            b"afu0.0m\nafu12.3s\nafu1.0d\ncard7\n".to_vec(),
        ),
        ("memcpy-queue", queue),
        ("start-work", start_work),
    ]
}

/// Builds an `imports` input: the export and target it picks, then a chaos script (see
/// `guest-plugins/chaos/src/script.rs`): each op is its number and its arguments,
/// little-endian.
#[derive(Default)]
struct Script(Vec<u8>);

/// The WASI ops' numbers: 24 and up.
const WASI: u8 = 24;
/// An hour, in nanoseconds.
const HOUR_NS: u64 = 3_600_000_000_000;

impl Script {
    /// A script run in `export` (a name of [`crate::imports::EXPORTS`]) aimed first at
    /// `target` (an index of [`crate::imports::TARGETS`]).
    fn in_export(export: &str, target: u8) -> Self {
        let at = crate::imports::EXPORTS
            .iter()
            .position(|e| *e == export)
            .expect("a known export");
        Script(vec![at as u8, target])
    }

    fn op(mut self, op: u8) -> Self {
        self.0.push(op);
        self
    }

    fn u8(mut self, value: u8) -> Self {
        self.0.push(value);
        self
    }

    fn u32(mut self, value: u32) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    fn u64(mut self, value: u64) -> Self {
        self.0.extend_from_slice(&value.to_le_bytes());
        self
    }

    /// A `size` argument below 0x10000.
    fn size(self, value: u16) -> Self {
        self.u8(1).u32(value.into())
    }

    /// A `size` argument of any value.
    fn size64(self, value: u64) -> Self {
        self.u8(3).u64(value)
    }

    /// Repeats the next op `times` times.
    fn repeat(self, times: u32) -> Self {
        self.op(0xff).u32(times - 1)
    }

    fn alloc(self, size: u16) -> Self {
        self.op(0).size(size)
    }

    fn open_port(self) -> Self {
        self.op(6).u8(0).u8(1)
    }

    fn map_region(self, index: u32) -> Self {
        self.op(7).u8(0).u32(index)
    }

    /// Watches word 0 of buffer `i` for a value nobody writes.
    fn watch_forever(self, i: u8) -> Self {
        self.op(4).u8(i).u8(0).u8(0).u64(1).u64(1)
    }

    /// A WASI op.
    fn wasi(self, op: u8) -> Self {
        self.op(WASI + op)
    }
}

fn imports() -> Vec<Seed> {
    let (dfl, cxl, xocl) = (0, 1, 2);
    let dfl_port = Script::in_export("reconfigure", dfl)
        .open_port()
        .map_region(0)
        .op(8) // read32 and read64 at 0x8 (the AFU id)
        .u8(0)
        .size(0x8)
        .op(9) // write64 and write32 to a scratch register
        .u8(0)
        .size(0x8)
        .u64(0x1234_5678)
        .op(10) // a batch of 16 scratch writes
        .u8(0)
        .u32(16)
        .op(11) // poll the scratch register just written
        .u8(0)
        .size(0x108)
        .u64(u64::MAX)
        .u64(0x1234_5678)
        .u32(1000)
        .op(14) // port and region info
        .u8(0)
        .u32(0)
        .wasi(21) // reset the port
        .u8(0);
    let dma = Script::in_export("open", dfl)
        .alloc(4096)
        .op(2) // write 64 bytes at 0
        .u8(0)
        .size(0)
        .u32(64)
        .op(1) // read them back
        .u8(0)
        .size(0)
        .u32(64)
        .op(3) // poll the first word for what was written
        .u8(0)
        .size(0)
        .u64(0xFF)
        .u64(0xA5)
        .u32(1000)
        .op(4) // watch a word nobody writes, then wait on it briefly
        .u8(0)
        .size(512)
        .u64(1)
        .u64(1)
        .op(5)
        .u8(0)
        .u32(1000)
        .open_port()
        .op(12) // map the buffer for the port's DMA, unmap a made-up IOVA
        .u8(0)
        .u8(0)
        .op(13)
        .u8(0)
        .u64(0x1000)
        .op(22) // drop the buffer
        .u8(0);
    let exec = StartCu {
        cu_masks: vec![1],
        regmap: vadd::regmap(0x40_0000_0000, 0x40_0000_1000, 0x40_0000_2000, 16),
    }
    .encode();
    let mut xocl_exec = Script::in_export("reconfigure", xocl)
        .op(15) // open the xocl card
        .u8(0)
        .op(16) // a 4 KiB BO in bank 0
        .u8(0)
        .size(4096)
        .u8(0x80)
        .op(17) // a vadd START_CU packet (no xclbin is loaded: refused)
        .u8(0)
        .u32(exec.len() as u32);
    for word in exec {
        xocl_exec = xocl_exec.u32(word);
    }
    let xocl_bos = Script::in_export("mem-alloc", xocl)
        .op(15)
        .u8(0)
        .op(16) // two host BOs
        .u8(0)
        .size(4096)
        .u8(0)
        .op(16)
        .u8(0)
        .size(4096)
        .u8(0)
        .wasi(17) // sync the first to the device
        .u8(0)
        .u8(0)
        .u8(0)
        .size(0)
        .size(4096)
        .u8(0)
        .wasi(18) // copy one BO to the other
        .u8(0)
        .u8(0)
        .u8(1)
        .size(4096)
        .size(0)
        .size(0)
        .wasi(19) // the host buffer of a BO
        .u8(1)
        .wasi(20) // contexts on an xclbin that is not loaded, then a reset
        .u8(0)
        .u64(7)
        .u32(1)
        .u8(1);
    let cxl_contexts = Script::in_export("reconfigure", cxl)
        .op(18) // a slave context on the memcpy AFU
        .u8(0)
        .u8(1)
        .alloc(4096)
        .op(19) // start it on a made-up queue address
        .u8(0)
        .u64(memcpy::wed(0x10_0000, 1))
        .op(20) // read an event, briefly
        .u8(0)
        .u32(1000)
        .wasi(15) // attach the buffer
        .u8(0)
        .u8(0)
        .wasi(16) // an interrupt event and the problem-state area
        .u8(0)
        .u32(1)
        .u8(1)
        .op(18) // a master context too
        .u8(0)
        .u8(0);
    let misc = Script::in_export("enumerate", dfl)
        .op(21) // log 16 bytes and read the clock
        .u32(16)
        .op(6) // open paths the plugin was not granted
        .u8(1)
        .u8(0)
        .op(15)
        .u8(3)
        .op(18)
        .u8(4)
        .u8(2)
        .wasi(9) // clocks, environment, arguments, preopens, terminals
        .wasi(10) // sockets and name lookup, all refused
        .wasi(22); // list each family's devices
    let forged = Script::in_export("describe", dfl)
        .alloc(64)
        .op(23)
        .u8(0xFF)
        .u32(1234);
    let mut xclbin_image = Script::in_export("reconfigure", xocl).0;
    xclbin_image.extend(XclbinBuilder::vadd(UUID, 1, 1).build());
    let mut bad_xclbin = Script::in_export("reconfigure", xocl).0;
    bad_xclbin.extend_from_slice(xclbin::MAGIC);
    bad_xclbin.extend_from_slice(&[0; 8]);

    // The attacks of the containment suite, as scripts.
    let sleep = Script::in_export("enumerate", dfl).wasi(12).size64(HOUR_NS);
    let block = Script::in_export("open", dfl)
        .wasi(0)
        .size64(HOUR_NS)
        .wasi(2)
        .u8(0);
    let poll = Script::in_export("reset", dfl)
        .wasi(0) // an hour's timer
        .size64(HOUR_NS)
        .wasi(8) // stdin, read and subscribed
        .size(16)
        .size(16)
        .wasi(3) // poll both, then the timer alone
        .u8(1)
        .u8(0)
        .u8(1)
        .wasi(3)
        .u8(0)
        .u8(0);
    let random_huge = Script::in_export("describe", dfl).wasi(5).size64(64 << 20);
    let random_loop = Script::in_export("open", dfl)
        .repeat(4096)
        .wasi(5)
        .size64(1 << 20);
    let sleep_configure = Script::in_export("configure", dfl).wasi(12).size64(HOUR_NS);
    let sleep_initialize = Script::in_export("initialize", dfl)
        .wasi(0)
        .size64(HOUR_NS)
        .wasi(2)
        .u8(0);
    let sleep_finalize = Script::in_export("finalize", dfl).wasi(12).size64(HOUR_NS);
    let messages = Script::in_export("register-event", dfl)
        .repeat(4096)
        .wasi(13)
        .u32(4096);
    let queued = Script::in_export("queue-create", xocl)
        .op(15) // the xocl card
        .u8(0)
        .op(16) // a host BO
        .u8(0)
        .size(4096)
        .u8(0)
        .alloc(4096)
        .watch_forever(0)
        .repeat(4096)
        .wasi(17) // sync the BO behind the watch, again and again
        .u8(0)
        .u8(0)
        .u8(0)
        .size(0)
        .size(64)
        .u8(1)
        .u8(0)
        .op(22) // drop each event as it comes
        .u8(1);
    let watches = Script::in_export("supports-host", dfl)
        .alloc(4096)
        .repeat(4096)
        .watch_forever(0);
    let stdio = Script::in_export("map-mmio", dfl)
        .wasi(7) // the script's own bytes (control characters) to stdout, then stderr
        .u32(4096)
        .u8(0)
        .u32(64)
        .wasi(7)
        .u32(100_000)
        .u8(1)
        .u32(64)
        .repeat(4000)
        .op(21)
        .u32(4096);
    let exit = Script::in_export("enqueue-launch", dfl).wasi(11).u8(0xee);
    let spin = Script::in_export("kernel-get", dfl)
        .repeat(4096)
        .wasi(4) // ready() on a pollable that does not exist yet, then on a timer
        .u8(0)
        .wasi(1)
        .size64(u64::MAX);
    // Large sizes: kept messages far over the 1 KiB cut, answers whose strings share one
    // buffer, one event lent a million times in one list.
    let big_messages = Script::in_export("register-event", dfl)
        .repeat(64)
        .wasi(23)
        .u8(5)
        .size64(3 << 20)
        .size64(3 << 20);
    let aliased_answer = Script::in_export("enumerate", dfl)
        .wasi(23)
        .u8(7)
        .size64(28_672)
        .size64(4000);
    // Many short strings: the answer whose copy-out costs the host most per byte (an
    // allocation per string), up to the plugin's whole host-memory budget.
    let aliased_small_strings = Script::in_export("enumerate", dfl)
        .wasi(23)
        .u8(7)
        .size64(177_152)
        .size(3);
    let lent_events = Script::in_export("queue-create", xocl)
        .op(15) // the xocl card
        .u8(0)
        .op(16) // a host BO
        .u8(0)
        .size(4096)
        .u8(0)
        .wasi(14) // an event
        .u8(0)
        .wasi(23) // a sync after that event, lent 1 Mi times
        .u8(6)
        .u8(0)
        .u8(0)
        .size64(1 << 20)
        .u8(0);
    vec![
        ("big-messages", big_messages.0),
        ("aliased-answer", aliased_answer.0),
        ("aliased-small-strings", aliased_small_strings.0),
        ("lent-events", lent_events.0),
        ("dfl-port-mmio", dfl_port.0),
        ("dma-buffer", dma.0),
        ("xocl-bo-exec", xocl_exec.0),
        ("xocl-bos", xocl_bos.0),
        ("cxl-contexts", cxl_contexts.0),
        ("ungranted-paths", misc.0),
        ("forged-handle", forged.0),
        ("xclbin-image", xclbin_image),
        ("xclbin-malformed", bad_xclbin),
        ("sleep-an-hour", sleep.0),
        ("block-on-a-timer", block.0),
        ("poll-timer-and-stdin", poll.0),
        ("random-64-mib", random_huge.0),
        ("random-forever", random_loop.0),
        ("sleep-in-configure", sleep_configure.0),
        ("block-in-initialize", sleep_initialize.0),
        ("sleep-in-finalize", sleep_finalize.0),
        ("failed-event-messages", messages.0),
        ("queued-commands", queued.0),
        ("watches", watches.0),
        ("stdio-control-characters", stdio.0),
        ("exit", exit.0),
        ("ready-spin", spin.0),
    ]
}

/// The compile target's recipes (see `crate::compile::component`): each shape at a size that
/// takes a compile to a limit or close to it, and a small one of each kind.
fn compile() -> Vec<Seed> {
    let recipe = |shape: u8, scale: u16, rest: &[u8]| {
        let mut data = vec![shape];
        data.extend_from_slice(&scale.to_le_bytes());
        data.extend_from_slice(rest);
        data
    };
    vec![
        ("huge-function", recipe(0, 0xc000, &[3, 5, 7])),
        ("many-functions", recipe(1, 0xffff, &[1, 2, 3, 4])),
        ("big-data", recipe(2, 0xffff, &[0x5a])),
        ("big-table", recipe(3, 0xffff, &[])),
        ("raw-body", recipe(4, 0, &[0x41, 0x00, 0x1a, 0x0b])),
        ("small-function", recipe(1, 0, &[9])),
    ]
}

/// Clients' HTTP/2 streams for the `authority` target (`[mode, chunk, read, recipe...]`, see
/// `crate::authority`): gRPC calls over a Unix socket with the path as `:authority`, whole, a
/// byte at a time and split oddly; table size updates and evictions; every kind of
/// `:authority`; and raw streams the fix refuses or passes untouched.
fn authority() -> Vec<Seed> {
    fn bytes(s: &[u8]) -> Vec<u8> {
        let mut out = vec![u8::try_from(s.len()).expect("a short string")];
        out.extend_from_slice(s);
        out
    }
    // A request on stream 1 (:method, :scheme, :path and :authority Huffman-coded and indexed,
    // content-type indexed, te without indexing, x-secret never indexed) over HEADERS and
    // three CONTINUATIONs; DATA; a request on stream 3 of references to the first's entries,
    // PADDED and with priority, over two frames; SETTINGS.
    let mut grpc = vec![
        0x00, 0x00, 0x00, 0, 0, 0, 7, 0x01, 2, 0x01, 5, 0xc3, 0, 2, 8,
    ];
    grpc.extend(bytes(b"/accelhost.node.v1.Node/Enumerate"));
    grpc.extend([0xc3, 0, 0, 0, 0, 0x03, 0, 7, 8]);
    grpc.extend(bytes(b"application/grpc"));
    grpc.extend([0x04, 3, 1, 8]);
    grpc.extend(bytes(b"trailers"));
    grpc.extend([0x05, 3, 2, 8]);
    grpc.extend(bytes(b"sesame"));
    grpc.extend([3, 60, 128, 200]);
    grpc.extend([2, 0x01, 0]);
    grpc.extend(bytes(&[0, 0, 0, 0, 0]));
    grpc.extend([
        0, 0x29, 1, 4, 0x01, 2, 0x01, 5, 0x02, 0, 0x02, 1, 1, 100, 5, 0, 0, 0, 1, 15,
    ]);
    grpc.extend([3, 0, 0, 0, 6, 0, 3, 0, 0, 0, 100]);

    // A table of 170 bytes filled exactly, then overflowed (an eviction); then 4096 again and
    // a reference to what is left.
    let mut tables = vec![
        0x00, 0x00, 0x00, 0, 0, 0, 3, 0x00, 10, 0xc3, 0, 0, 15, b'z', 8,
    ];
    tables.extend([0x03, 2, 3, b'a', b'b', b'c', 0, 1, 0]);
    tables.extend([1, 0x01, 2, 2, 0x00, 255, 0x02, 0, 0]);

    // Every kind of :authority, with and without indexing, Huffman-coded or not.
    let mut authorities = vec![0x00, 0x00, 0x00, 0, 0x01, 0, 20];
    for value in 0..10u8 {
        authorities.extend([0xc3, 0, 0, 0, value, 0x04, 3, 0, 1, value]);
    }
    authorities.push(0);

    let frame = |kind: u8, flags: u8, stream: u8, payload: &[u8]| {
        let mut out = vec![
            0,
            0,
            u8::try_from(payload.len()).expect("a short frame"),
            kind,
        ];
        out.extend([flags, 0, 0, 0, stream]);
        out.extend_from_slice(payload);
        out
    };
    // :method GET, then :authority with a literal path: a block left open, interrupted.
    let block = [0x82, 0x01, 0x05, b'/', b't', b'm', b'p', b'/'];
    let mut interrupted = vec![0xc0, 0x00, 0x00];
    interrupted.extend(frame(0x1, 0x00, 1, &block));
    interrupted.extend(frame(0x0, 0x00, 1, b"data"));
    let mut continued = vec![0xc0, 0x05, 0x03];
    continued.extend(frame(0x1, 0x00, 1, &block[..3]));
    for &byte in &block[3..] {
        continued.extend(frame(0x9, 0x00, 1, &[byte]));
    }
    continued.extend(frame(0x9, 0x04, 1, &[]));
    continued.extend(frame(0x8, 0x00, 0, &[0, 0, 0x10, 0]));

    let with = |mode: u8, chunk: u8, read: u8, recipe: &[u8]| {
        let mut out = vec![mode, chunk, read];
        out.extend_from_slice(&recipe[3..]);
        out
    };
    vec![
        ("grpc-unix-path", grpc.clone()),
        ("grpc-a-byte-at-a-time", with(0x01, 1, 1, &grpc)),
        ("grpc-odd-splits", with(0x00, 7, 13, &grpc)),
        ("table-sizes", tables),
        ("authorities", authorities),
        ("raw-interrupted-block", interrupted),
        ("raw-continuations", continued),
        (
            "not-http2",
            [&[0x80, 3, 5], &b"GET / HTTP/1.1\r\n\r\n"[..]].concat(),
        ),
    ]
}
