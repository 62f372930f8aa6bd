//! The Vitis "hello world" on an XRT card through the offload API: an xclbin with vadd
//! compute units, inputs copied host→device, the kernel launched, the output copied back and
//! checked element by element; and a run of tiny launches for the launch rate.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::families::xocl::xclbin::XclbinBuilder;
use crate::text::inert;
use crate::types::Guid;
use crate::workloads::{Canonical, DemoSettings, Outcome, Progress, count};
use crate::{Arg, Event, Handle, Host, Kernel, Memory, MemoryKind, OpenMode, Queue, Token};

/// The uuid of the demo's vadd xclbin.
pub const VADD_UUID: Guid = Guid::new(0x7661_6464_2d64_656d, 0x6f2d_7863_6c62_696e);

/// Whether the token is an XRT (xocl) device.
pub fn is_xocl(token: &Token) -> bool {
    token
        .properties()
        .extras
        .iter()
        .any(|(k, v)| k == "interface" && v == "xocl")
}

/// The vadd xclbin with `cus` compute units sharing one DDR bank.
pub fn vadd_image(cus: u32) -> Vec<u8> {
    XclbinBuilder::vadd(VADD_UUID, cus, 1).build()
}

/// Loads the vadd xclbin (`cus` compute units) and looks the kernel up.
pub fn load(handle: &Handle, cus: u32) -> Result<Kernel> {
    handle.create_program(&vadd_image(cus))?.kernel("vadd")
}

/// What one vadd did.
#[derive(Clone, Debug, PartialEq)]
pub struct VaddReport {
    /// Elements per vector.
    pub elements: u32,
    /// From the first copy to the device to the last copy back.
    pub elapsed: Duration,
    /// Output elements that differ from `in1 + in2`.
    pub mismatches: u64,
    /// The first differing element, if any.
    pub first_mismatch: Option<u64>,
}

impl VaddReport {
    /// Whether every element checked.
    pub fn verified(&self) -> bool {
        self.mismatches == 0
    }

    /// Bytes moved (two inputs in, one output out) per second, in GB/s.
    pub fn gigabytes_per_second(&self) -> f64 {
        3.0 * 4.0 * f64::from(self.elements) / self.elapsed.as_secs_f64().max(1e-9) / 1e9
    }
}

/// Input `in1[i]` of the canonical run.
pub fn in1(i: u32) -> u32 {
    i.wrapping_mul(2_654_435_761)
}

/// Input `in2[i]` of the canonical run.
pub fn in2(i: u32) -> u32 {
    i ^ 0xA5A5_A5A5
}

fn words(values: impl Iterator<Item = u32>) -> Vec<u8> {
    values.flat_map(u32::to_le_bytes).collect()
}

/// Runs vadd on `elements` elements: host inputs copied to device memory, one launch, the
/// output copied back and every element checked.
pub fn run(handle: &Handle, kernel: &Kernel, elements: u32) -> Result<VaddReport> {
    if elements == 0 {
        return Err(Error::InvalidArgument {
            call: "vadd",
            message: "vadd needs at least one element".into(),
        });
    }
    let bytes = u64::from(elements) * 4;
    let host_in1 = handle.alloc(MemoryKind::Host, bytes)?;
    let host_in2 = handle.alloc(MemoryKind::Host, bytes)?;
    let host_out = handle.alloc(MemoryKind::Host, bytes)?;
    let dev_in1 = handle.alloc(MemoryKind::Device, bytes)?;
    let dev_in2 = handle.alloc(MemoryKind::Device, bytes)?;
    let dev_out = handle.alloc(MemoryKind::Device, bytes)?;
    const CHUNK: u32 = 1 << 18;
    let mut start = 0;
    while start < elements {
        let end = start.saturating_add(CHUNK).min(elements);
        let at = u64::from(start) * 4;
        host_in1.write(at, &words((start..end).map(in1)))?;
        host_in2.write(at, &words((start..end).map(in2)))?;
        start = end;
    }
    let queue = handle.create_queue()?;
    let started = Instant::now();
    queue.enqueue_memcpy(&dev_in1, 0, &host_in1, 0, bytes)?;
    queue.enqueue_memcpy(&dev_in2, 0, &host_in2, 0, bytes)?;
    queue.enqueue_launch(
        kernel,
        &[
            Arg::Memory(&dev_in1),
            Arg::Memory(&dev_in2),
            Arg::Memory(&dev_out),
            Arg::U32(elements),
        ],
    )?;
    queue.enqueue_memcpy(&host_out, 0, &dev_out, 0, bytes)?;
    queue.finish()?;
    let elapsed = started.elapsed();
    let mut report = VaddReport {
        elements,
        elapsed,
        mismatches: 0,
        first_mismatch: None,
    };
    let mut out = vec![0u8; (CHUNK as usize) * 4];
    let mut start = 0;
    while start < elements {
        let end = start.saturating_add(CHUNK).min(elements);
        let len = (end - start) as usize * 4;
        host_out.read(u64::from(start) * 4, &mut out[..len])?;
        for (k, got) in out[..len].as_chunks::<4>().0.iter().enumerate() {
            let i = start + k as u32;
            let got = u32::from_le_bytes([got[0], got[1], got[2], got[3]]);
            if got != in1(i).wrapping_add(in2(i)) {
                report.mismatches += 1;
                report.first_mismatch.get_or_insert(u64::from(i));
            }
        }
        start = end;
    }
    Ok(report)
}

/// What a run of tiny launches did.
#[derive(Clone, Debug, PartialEq)]
pub struct LaunchReport {
    /// Launches made.
    pub launches: u32,
    /// From the first enqueue to the last completion.
    pub elapsed: Duration,
    /// Whether the last launch's output checked.
    pub verified: bool,
}

impl LaunchReport {
    /// Launches (with their completions) per second.
    pub fn per_second(&self) -> f64 {
        f64::from(self.launches) / self.elapsed.as_secs_f64().max(1e-9)
    }
}

/// One-element vadd launches on one in-order queue, each adding 1 to the previous output:
/// after `n` launches the output of the last one holds `n`.
pub struct TinyLaunchChain {
    one: Memory,
    a: Memory,
    b: Memory,
    queue: Queue,
}

impl TinyLaunchChain {
    /// The buffers (the constant 1, and two outputs the launches alternate between, the first
    /// at 0) and the queue.
    pub fn new(handle: &Handle) -> Result<Self> {
        let one = handle.alloc(MemoryKind::Host, 4)?;
        let a = handle.alloc(MemoryKind::Host, 4)?;
        let b = handle.alloc(MemoryKind::Host, 4)?;
        one.write(0, &1u32.to_le_bytes())?;
        a.write(0, &0u32.to_le_bytes())?;
        Ok(TinyLaunchChain {
            one,
            a,
            b,
            queue: handle.create_queue()?,
        })
    }

    /// Enqueues launch number `i` (counting from 0).
    pub fn launch(&self, kernel: &Kernel, i: u64) -> Result<Event> {
        self.queue.enqueue_launch(kernel, &self.args(i))
    }

    /// Enqueues launch number `i` without an event: held back, and handed on in a batch.
    pub fn defer(&self, kernel: &Kernel, i: u64) -> Result<()> {
        self.queue.defer_launch(kernel, &self.args(i))
    }

    /// The arguments of launch number `i`: the previous output plus one.
    fn args(&self, i: u64) -> [Arg<'_>; 4] {
        let (from, to) = self.buffers(i);
        [
            Arg::Memory(from),
            Arg::Memory(&self.one),
            Arg::Memory(to),
            Arg::U32(1),
        ]
    }

    /// Waits for every launch enqueued.
    pub fn finish(&self) -> Result<()> {
        self.queue.finish()
    }

    /// Whether the output after `launches` launches holds `launches`.
    pub fn verify(&self, launches: u64) -> Result<bool> {
        let last = if launches.is_multiple_of(2) {
            &self.a
        } else {
            &self.b
        };
        let mut value = [0u8; 4];
        last.read(0, &mut value)?;
        Ok(u64::from(u32::from_le_bytes(value)) == launches)
    }

    /// The buffers launch `i` reads and writes.
    fn buffers(&self, i: u64) -> (&Memory, &Memory) {
        if i.is_multiple_of(2) {
            (&self.a, &self.b)
        } else {
            (&self.b, &self.a)
        }
    }
}

/// Makes `launches` one-element launches on one in-order queue, each reading the previous
/// output, and checks the final value.
pub fn tiny_launches(handle: &Handle, kernel: &Kernel, launches: u32) -> Result<LaunchReport> {
    timed_chain(handle, launches, |chain, i| {
        chain.launch(kernel, i).map(drop)
    })
}

/// `launches` tiny launches held back and handed on in batches ([`Queue::defer_launch`]),
/// then the queue finished: the rate of launches nobody asks an event of.
pub fn tiny_launches_held_back(
    handle: &Handle,
    kernel: &Kernel,
    launches: u32,
) -> Result<LaunchReport> {
    timed_chain(handle, launches, |chain, i| chain.defer(kernel, i))
}

/// Times `launches` calls of `enqueue` (launch number `i` of a fresh chain) and the queue's
/// finish, then checks the final value.
fn timed_chain(
    handle: &Handle,
    launches: u32,
    mut enqueue: impl FnMut(&TinyLaunchChain, u64) -> Result<()>,
) -> Result<LaunchReport> {
    let chain = TinyLaunchChain::new(handle)?;
    let started = Instant::now();
    for i in 0..u64::from(launches) {
        enqueue(&chain, i)?;
    }
    chain.finish()?;
    let elapsed = started.elapsed();
    Ok(LaunchReport {
        launches,
        elapsed,
        verified: chain.verify(u64::from(launches))?,
    })
}

/// The family's canonical workload: vadd at each length, then the rate of tiny launches.
pub const CANONICAL: Canonical = Canonical {
    family: "xocl",
    recognizes: is_xocl,
    declines: |_| None,
    run: demo,
};

/// The compute units of the demo's xclbin.
const DEMO_CUS: u32 = 4;

fn demo(
    host: &Host,
    token: &Token,
    settings: &DemoSettings,
    progress: &mut Progress,
) -> Vec<Outcome> {
    let device = inert(&token.id()).into_owned();
    let handle = match host.open(token, OpenMode::Exclusive) {
        Ok(handle) => handle,
        Err(err) => return vec![Outcome::of("vadd", None).failed(err)],
    };
    progress(&format!(
        "loading the vadd xclbin ({DEMO_CUS} compute units) on {device} ..."
    ));
    let kernel = match load(&handle, DEMO_CUS) {
        Ok(kernel) => kernel,
        Err(err) => return vec![Outcome::of("vadd", None).failed(err)],
    };
    let mut outcomes = Vec::new();
    for &n in &settings.elements {
        progress(&format!(
            "running vadd on {} elements on {device} ...",
            count(n)
        ));
        let outcome = Outcome::of(
            format!("vadd {} elements", count(n)),
            Some(u64::from(n) * 4),
        );
        outcomes.push(match run(&handle, &kernel, n) {
            Ok(report) if report.verified() => outcome
                .rate(report.gigabytes_per_second())
                .verified(format!(
                    "verified ({:.1} ms)",
                    report.elapsed.as_secs_f64() * 1e3
                )),
            Ok(report) => outcome.failed(format!(
                "{} element(s) differ, first at {}",
                report.mismatches,
                report.first_mismatch.unwrap_or_default()
            )),
            Err(err) => outcome.failed(err),
        });
    }
    let launches = settings.launches;
    if launches > 0 {
        progress(&format!(
            "making {launches} tiny vadd launches on one queue on {device} ..."
        ));
        let outcome = Outcome::of(format!("vadd x{launches} tiny launches"), Some(4));
        outcomes.push(match tiny_launches(&handle, &kernel, launches) {
            Ok(report) if report.verified => {
                outcome.verified(format!("verified, {:.0} launches/s", report.per_second()))
            }
            Ok(_) => outcome.failed("the final value is wrong"),
            Err(err) => outcome.failed(err),
        });
    }
    outcomes
}
