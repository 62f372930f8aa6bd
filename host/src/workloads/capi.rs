//! The CAPI canonical workloads through the public API: the memcpy AFU copying a queue of
//! work elements that ends in an interrupt element, waited on as an event; and capi-vadd on a
//! dedicated AFU, waited on through its done flag.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::families::cxl::abi::memcpy::{self, WorkElement};
use crate::text::inert;
use crate::workloads::{Canonical, DemoSettings, Outcome, Progress};
use crate::{Arg, Handle, Host, Memory, MemoryKind, OpenMode, Token};

/// The interrupt the memcpy workload's last element raises.
pub const DONE_IRQ: u16 = 1;

/// Whether the token is a CAPI AFU node.
pub fn is_cxl(token: &Token) -> bool {
    extra(token, "interface") == Some("cxl")
}

/// The AFU function a CAPI token drives (`memcpy` or `vadd`).
pub fn function(token: &Token) -> Option<&str> {
    extra(token, "function")
}

/// The device-node kind of a CAPI token: `m`, `s` or `d`.
pub fn node_kind(token: &Token) -> Option<char> {
    extra(token, "node").and_then(|n| n.chars().last())
}

fn extra<'a>(token: &'a Token, key: &str) -> Option<&'a str> {
    token
        .properties()
        .extras
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// What one memcpy run did.
#[derive(Clone, Debug, PartialEq)]
pub struct MemcpyReport {
    /// Bytes copied.
    pub bytes: u64,
    /// From the launch to the interrupt.
    pub elapsed: Duration,
    /// Work elements whose status byte is not plain COMPLETE.
    pub bad_status: u64,
    /// Destination bytes that differ from the source.
    pub mismatched_bytes: u64,
}

impl MemcpyReport {
    /// Whether every element completed and every byte arrived.
    pub fn verified(&self) -> bool {
        self.bad_status == 0 && self.mismatched_bytes == 0
    }

    /// Bytes copied per second, in GB/s.
    pub fn gigabytes_per_second(&self) -> f64 {
        self.bytes as f64 / self.elapsed.as_secs_f64().max(1e-9) / 1e9
    }
}

/// A work-element queue in host memory, filled on the host.
pub struct WorkQueue {
    /// The queue's memory (the AFU reads it at its effective address).
    pub memory: Memory,
    /// Depth in 128-byte lines.
    pub lines: u16,
    next: u64,
}

impl WorkQueue {
    /// A queue with room for `elements` work elements.
    pub fn new(handle: &Handle, elements: u64) -> Result<Self> {
        let lines = elements.div_ceil(memcpy::ELEMENTS_PER_LINE).max(1);
        if lines > u64::from(memcpy::MAX_DEPTH_LINES) {
            return Err(Error::InvalidArgument {
                call: "memcpy work queue",
                message: format!("{elements} elements need more than 4095 queue lines"),
            });
        }
        let memory = handle.alloc(MemoryKind::Host, lines * memcpy::LINE_SIZE)?;
        Ok(WorkQueue {
            memory,
            lines: lines as u16,
            next: 0,
        })
    }

    /// Appends an element (first lap: WRAP clear); the command byte, with VALID, goes last.
    pub fn push(&mut self, mut element: WorkElement) -> Result<()> {
        let at = self.next * memcpy::WE_SIZE;
        if at + memcpy::WE_SIZE > self.memory.size() {
            return Err(Error::InvalidArgument {
                call: "memcpy work queue",
                message: "the queue is full".into(),
            });
        }
        let command = element.cmd | memcpy::CMD_VALID;
        element.cmd = 0;
        element.status = 0;
        self.memory.write(at, &element.encode())?;
        self.memory.write(at, &[command])?;
        self.next += 1;
        Ok(())
    }

    /// The status byte of element `index`.
    pub fn status(&self, index: u64) -> Result<u8> {
        let mut status = [0u8];
        self.memory.read(
            index * memcpy::WE_SIZE + memcpy::WE_STATUS as u64,
            &mut status,
        )?;
        Ok(status[0])
    }

    /// Elements pushed so far.
    pub fn len(&self) -> u64 {
        self.next
    }

    /// Whether nothing was pushed.
    pub fn is_empty(&self) -> bool {
        self.next == 0
    }
}

/// A COPY element (`WorkElement::copy`).
pub fn copy(src: u64, dst: u64, length: u16) -> WorkElement {
    WorkElement::copy(src, dst, length)
}

/// An IRQ element raising interrupt `irq` (`WorkElement::interrupt`).
pub fn interrupt(irq: u16) -> WorkElement {
    WorkElement::interrupt(irq)
}

/// The source pattern: byte `i` of copy `c`.
fn pattern(c: u64, i: u64) -> u8 {
    (c.wrapping_mul(131) ^ i.wrapping_mul(7)) as u8
}

/// Copies `copies` chunks of `size` bytes through the memcpy AFU, then an IRQ element; waits
/// for the interrupt as an event and checks every byte and every status.
pub fn memcpy_run(handle: &Handle, copies: u64, size: u16) -> Result<MemcpyReport> {
    let total = copies * u64::from(size);
    let src = handle.alloc(MemoryKind::Host, total.max(1))?;
    let dst = handle.alloc(MemoryKind::Host, total.max(1))?;
    let mut chunk = vec![0u8; usize::from(size)];
    for c in 0..copies {
        for (i, byte) in chunk.iter_mut().enumerate() {
            *byte = pattern(c, i as u64);
        }
        src.write(c * u64::from(size), &chunk)?;
    }
    let mut queue = WorkQueue::new(handle, copies + 1)?;
    for c in 0..copies {
        let at = c * u64::from(size);
        queue.push(copy(
            src.device_address() + at,
            dst.device_address() + at,
            size,
        ))?;
    }
    queue.push(interrupt(DONE_IRQ))?;
    let kernel = handle.builtin_program()?.kernel("memcpy")?;
    let work = handle.create_queue()?;
    let started = Instant::now();
    let done = work.enqueue_launch(
        &kernel,
        &[
            Arg::Memory(&queue.memory),
            Arg::U32(u32::from(queue.lines)),
            Arg::U32(u32::from(DONE_IRQ)),
        ],
    )?;
    done.wait()?;
    let elapsed = started.elapsed();
    let mut report = MemcpyReport {
        bytes: total,
        elapsed,
        bad_status: 0,
        mismatched_bytes: 0,
    };
    for index in 0..queue.len() {
        if queue.status(index)? != memcpy::STATUS_COMPLETE {
            report.bad_status += 1;
        }
    }
    for c in 0..copies {
        dst.read(c * u64::from(size), &mut chunk)?;
        for (i, byte) in chunk.iter().enumerate() {
            if *byte != pattern(c, i as u64) {
                report.mismatched_bytes += 1;
            }
        }
    }
    Ok(report)
}

/// What one capi-vadd run did.
#[derive(Clone, Debug, PartialEq)]
pub struct VaddReport {
    /// Elements per vector.
    pub elements: u32,
    /// From the launch to `done`.
    pub elapsed: Duration,
    /// Output elements that differ from `in1 + in2`.
    pub mismatches: u64,
}

impl VaddReport {
    /// Whether every element checked.
    pub fn verified(&self) -> bool {
        self.mismatches == 0
    }

    /// Bytes read and written per second, in GB/s.
    pub fn gigabytes_per_second(&self) -> f64 {
        12.0 * f64::from(self.elements) / self.elapsed.as_secs_f64().max(1e-9) / 1e9
    }
}

/// capi-vadd on a dedicated AFU: `out[i] = in1[i] + in2[i]` (big-endian u32, as on the
/// card), checked element by element.
pub fn vadd_run(handle: &Handle, elements: u32) -> Result<VaddReport> {
    let bytes = u64::from(elements) * 4;
    let in1 = handle.alloc(MemoryKind::Host, bytes.max(1))?;
    let in2 = handle.alloc(MemoryKind::Host, bytes.max(1))?;
    let out = handle.alloc(MemoryKind::Host, bytes.max(1))?;
    let encode = |f: &dyn Fn(u32) -> u32| -> Vec<u8> {
        (0..elements).flat_map(|i| f(i).to_be_bytes()).collect()
    };
    in1.write(0, &encode(&|i| i << 8))?;
    in2.write(0, &encode(&|i| (i << 8) ^ 0x5A5A))?;
    let kernel = handle.builtin_program()?.kernel("vadd")?;
    let queue = handle.create_queue()?;
    let started = Instant::now();
    queue
        .enqueue_launch(
            &kernel,
            &[
                Arg::Memory(&in1),
                Arg::Memory(&in2),
                Arg::Memory(&out),
                Arg::U32(elements),
            ],
        )?
        .wait()?;
    let elapsed = started.elapsed();
    let mut result = vec![0u8; bytes as usize];
    out.read(0, &mut result)?;
    let mismatches = result
        .as_chunks::<4>()
        .0
        .iter()
        .enumerate()
        .filter(|(i, w)| {
            let i = *i as u32;
            u32::from_be_bytes([w[0], w[1], w[2], w[3]]) != (i << 8).wrapping_add((i << 8) ^ 0x5A5A)
        })
        .count() as u64;
    Ok(VaddReport {
        elements,
        elapsed,
        mismatches,
    })
}

/// The family's canonical workload: the memcpy queue ending in an interrupt on an
/// AFU-directed slave node, vadd on a dedicated node.
pub const CANONICAL: Canonical = Canonical {
    family: "cxl",
    recognizes: |token| is_cxl(token) && matches!(node_kind(token), Some('s' | 'd')),
    declines,
    run: demo,
};

/// Why a CAPI node that is not a slave or dedicated one gets no run.
fn declines(token: &Token) -> Option<String> {
    if !is_cxl(token) {
        return None;
    }
    let node = match node_kind(token) {
        Some('m') => "master node".to_string(),
        Some(kind) => format!("node of kind '{kind}'"),
        None => "device that reports no node kind".into(),
    };
    Some(format!(
        "a CAPI {node}; the CAPI workloads run on slave (s) and dedicated (d) nodes"
    ))
}

fn demo(
    host: &Host,
    token: &Token,
    _settings: &DemoSettings,
    progress: &mut Progress,
) -> Vec<Outcome> {
    let function = function(token).unwrap_or_default().to_string();
    progress(&format!(
        "running the {} AFU on {} ...",
        inert(&function),
        inert(&token.id())
    ));
    let run = |handle: &Handle| -> Result<(Outcome, f64, bool)> {
        Ok(match function.as_str() {
            "memcpy" => {
                let report = memcpy_run(handle, 128, 32 * 1024)?;
                (
                    Outcome::of("capi memcpy x128 + IRQ event", Some(report.bytes)),
                    report.gigabytes_per_second(),
                    report.verified(),
                )
            }
            _ => {
                let report = vadd_run(handle, 1 << 20)?;
                (
                    Outcome::of(
                        "capi vadd 1 Mi elements",
                        Some(u64::from(report.elements) * 4),
                    ),
                    report.gigabytes_per_second(),
                    report.verified(),
                )
            }
        })
    };
    let outcome = host.open(token, OpenMode::Exclusive).and_then(|handle| {
        let result = run(&handle);
        handle.close()?;
        result
    });
    vec![match outcome {
        Ok((outcome, rate, true)) => outcome.rate(rate).verified("verified"),
        Ok((outcome, _, false)) => outcome.failed("the output differs from the input"),
        Err(err) => Outcome::of(format!("capi {function}"), None).failed(err),
    }]
}
