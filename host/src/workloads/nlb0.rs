//! OPAE's hello_fpga flow on an NLB0 (native loopback) accelerator: prepare a DSM, a source
//! and a destination buffer, program the CSRs, start, poll the DSM on the host, stop, and
//! check every byte.

use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::families::dfl::abi::nlb0;
use crate::text::inert;
use crate::workloads::{Canonical, DemoSettings, Outcome, Progress, size};
use crate::{DmaBuffer, Handle, Host, MmioRegion, OpenMode, Token};

/// Lines per run: `NUM_LINES` is 20 bits wide, so longer copies take several runs.
const LINES_PER_RUN: u64 = 1 << 19;
/// How long one run may take before the flow gives up.
const RUN_TIMEOUT: Duration = Duration::from_secs(30);
/// Bytes compared per step of the verification.
const VERIFY_CHUNK: u64 = 1 << 20;

/// What one loopback did.
#[derive(Clone, Debug, PartialEq)]
pub struct LoopbackReport {
    /// Bytes copied from source to destination, a multiple of 64.
    pub bytes: u64,
    /// Time from each start to its completion, summed over the runs.
    pub device_time: Duration,
    /// How many runs the copy took.
    pub runs: u32,
    /// Bytes of the destination that differ from the source (0 when verified).
    pub mismatched_bytes: u64,
    /// The first differing offset, if any.
    pub first_mismatch: Option<u64>,
}

impl LoopbackReport {
    /// Whether the destination matched the source byte for byte.
    pub fn verified(&self) -> bool {
        self.mismatched_bytes == 0
    }

    /// Copy bandwidth in GB/s (10^9 bytes per second).
    pub fn gigabytes_per_second(&self) -> f64 {
        self.bytes as f64 / self.device_time.as_secs_f64().max(1e-9) / 1e9
    }
}

/// Whether the token is an NLB0 accelerator.
pub fn is_nlb0(token: &Token) -> bool {
    token.properties().guid == nlb0::AFU_ID
}

/// The source pattern of hello_fpga: 0xAF bytes, with the last 32-bit word of line `i` set
/// to `i + 1`, so a misplaced line is caught.
pub fn fill_source(buffer: &DmaBuffer, bytes: u64) -> Result<()> {
    let mut chunk = vec![0xAFu8; VERIFY_CHUNK.min(bytes) as usize];
    let mut offset = 0;
    while offset < bytes {
        let len = VERIFY_CHUNK.min(bytes - offset) as usize;
        for (i, line) in chunk[..len]
            .as_chunks_mut::<{ nlb0::CACHE_LINE as usize }>()
            .0
            .iter_mut()
            .enumerate()
        {
            let index = (offset / nlb0::CACHE_LINE) as u32 + i as u32;
            line[60..64].copy_from_slice(&(index + 1).to_le_bytes());
        }
        buffer.write(offset, &chunk[..len])?;
        offset += len as u64;
    }
    Ok(())
}

/// Runs the hello_fpga loopback of `bytes` (a positive multiple of 64) on an open NLB0 port.
pub fn loopback(handle: &Handle, bytes: u64) -> Result<LoopbackReport> {
    if bytes == 0 || !bytes.is_multiple_of(nlb0::CACHE_LINE) {
        return Err(Error::InvalidArgument {
            call: "nlb0 loopback",
            message: format!("{bytes} is not a positive multiple of 64 bytes"),
        });
    }
    let device = handle.token().id();
    let mmio = handle.map_mmio(0)?;
    let dsm = handle.prepare_buffer(4096)?;
    let src = handle.prepare_buffer(bytes)?;
    let dst = handle.prepare_buffer(bytes)?;
    fill_source(&src, bytes)?;
    dst.fill(0, bytes, 0xBE)?;
    handle.reset()?;

    let mut report = LoopbackReport {
        bytes,
        device_time: Duration::ZERO,
        runs: 0,
        mismatched_bytes: 0,
        first_mismatch: None,
    };
    let total_lines = bytes / nlb0::CACHE_LINE;
    let mut line = 0;
    while line < total_lines {
        let lines = LINES_PER_RUN.min(total_lines - line);
        let offset = line * nlb0::CACHE_LINE;
        report.device_time += run(&mmio, &dsm, src.iova() + offset, dst.iova() + offset, lines)
            .map_err(|e| match e {
                Error::Device { message, .. } => Error::Device {
                    device: device.clone(),
                    message,
                },
                other => other,
            })?;
        report.runs += 1;
        line += lines;
    }
    verify(&src, &dst, bytes, &mut report)?;
    Ok(report)
}

/// One run: the CSR sequence of hello_fpga, then the completion poll and the stop.
fn run(mmio: &MmioRegion, dsm: &DmaBuffer, src: u64, dst: u64, lines: u64) -> Result<Duration> {
    dsm.fill(0, dsm.size(), 0)?;
    mmio.write64(nlb0::CSR_DSM_BASEL, dsm.iova())?;
    mmio.write32(nlb0::CSR_CTL, 0)?;
    mmio.write32(nlb0::CSR_CTL, nlb0::CTL_RESET_N)?;
    mmio.write64(nlb0::CSR_SRC_ADDR, src / nlb0::CACHE_LINE)?;
    mmio.write64(nlb0::CSR_DST_ADDR, dst / nlb0::CACHE_LINE)?;
    mmio.write32(nlb0::CSR_NUM_LINES, lines as u32)?;
    mmio.write32(nlb0::CSR_CFG, nlb0::CFG_HELLO_FPGA as u32)?;
    let started = Instant::now();
    mmio.write32(nlb0::CSR_CTL, nlb0::CTL_RESET_N | nlb0::CTL_START)?;
    let status = dsm.poll_u64(
        nlb0::DSM_STATUS,
        u64::from(nlb0::DSM_TEST_COMPLETE),
        u64::from(nlb0::DSM_TEST_COMPLETE),
        RUN_TIMEOUT,
    )?;
    let elapsed = started.elapsed();
    mmio.write32(
        nlb0::CSR_CTL,
        nlb0::CTL_RESET_N | nlb0::CTL_START | nlb0::CTL_STOP,
    )?;
    mmio.poll64(nlb0::CSR_STATUS1, u64::MAX, 0, Duration::from_millis(100))?;
    let test_error = status >> 32;
    if test_error != 0 {
        return Err(Error::Device {
            device: String::new(),
            message: format!(
                "NLB0 reported test error {test_error:#x} (ERROR register {:#x})",
                mmio.read64(nlb0::CSR_ERROR)?
            ),
        });
    }
    Ok(elapsed)
}

fn verify(src: &DmaBuffer, dst: &DmaBuffer, bytes: u64, report: &mut LoopbackReport) -> Result<()> {
    let mut expected = vec![0u8; VERIFY_CHUNK.min(bytes) as usize];
    let mut actual = vec![0u8; expected.len()];
    let mut offset = 0;
    while offset < bytes {
        let len = VERIFY_CHUNK.min(bytes - offset) as usize;
        src.read(offset, &mut expected[..len])?;
        dst.read(offset, &mut actual[..len])?;
        if expected[..len] != actual[..len] {
            for (i, (a, b)) in expected[..len].iter().zip(&actual[..len]).enumerate() {
                if a != b {
                    report.mismatched_bytes += 1;
                    report.first_mismatch.get_or_insert(offset + i as u64);
                }
            }
        }
        offset += len as u64;
    }
    Ok(())
}

/// The family's canonical workload: the hello_fpga loopback at each size.
pub const CANONICAL: Canonical = Canonical {
    family: "dfl",
    recognizes: is_nlb0,
    declines: |_| None,
    run: demo,
};

fn demo(
    host: &Host,
    token: &Token,
    settings: &DemoSettings,
    progress: &mut Progress,
) -> Vec<Outcome> {
    let mut outcomes = Vec::new();
    for &bytes in &settings.sizes {
        progress(&format!(
            "running the hello_fpga loopback of {} on {} ...",
            size(bytes),
            inert(&token.id())
        ));
        let outcome = Outcome::of("nlb0 loopback (hello_fpga)", Some(bytes));
        let report = host.open(token, OpenMode::Exclusive).and_then(|handle| {
            let report = loopback(&handle, bytes);
            handle.close()?;
            report
        });
        outcomes.push(match report {
            Ok(report) if report.verified() => outcome
                .rate(report.gigabytes_per_second())
                .verified(format!("verified ({} run(s))", report.runs)),
            Ok(report) => outcome.rate(report.gigabytes_per_second()).failed(format!(
                "{} byte(s) differ, first at {:#x}",
                report.mismatched_bytes,
                report.first_mismatch.unwrap_or_default()
            )),
            Err(err) => outcome.failed(err),
        });
    }
    outcomes
}
