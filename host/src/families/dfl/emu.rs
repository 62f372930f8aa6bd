//! An emulated DFL port with the NLB0 native-loopback AFU, modelling the kernel driver's
//! open/close, reset and DMA-map semantics and the AFU's registers, with the copy itself
//! done asynchronously on a device thread, as OPAE's ASE does it in simulation.

mod attributes;

use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Instant;

use self::attributes::{
    AttributeState, CardFacts, PORT_ERROR_UNMAPPED_ADDRESS, PORT_ERROR_UNSUPPORTED_MODE,
    TrafficCounts,
};
use super::abi::{self, nlb0};
use super::card::DflCard;
use super::{DflDevice, DflPort, PortDesc, PortInfo, PortProbe, RegionInfo};
use crate::attributes::AttributeInfo;
use crate::devices::{AddressMap, DmaMemory, MmioWindow, Owner, OwnerId, check_owner, errno, lock};
use crate::family::DeviceDecl;

/// Size of the AFU MMIO region (index 0), as on OPAE's ASE.
pub const AFU_MMIO_SIZE: u64 = 256 * 1024;
/// Where emulated IO virtual addresses start.
const IOVA_BASE: u64 = 0x10_0000_0000;
/// The device thread copies in chunks of this size, checking for reset or stop in between.
const COPY_CHUNK: u64 = 1 << 20;
/// The card's nominal clock, used to turn elapsed time into the DSM's clock count and the
/// FME's `perf/clock`.
const AFU_CLOCK_MHZ: u64 = 400;

/// The emulated port's MMIO regions: the AFU's.
const REGIONS: u32 = 1;

/// An emulated port as the config declares it.
pub struct EmulatedPort {
    desc: PortDesc,
    shared: Arc<Shared>,
    jobs: Arc<DeviceThread>,
}

/// The device thread, started by the first test a port runs: a config of thousands of
/// emulated ports costs no thread for the ports that never run one. It ends once the port,
/// its openers and their windows are all gone.
struct DeviceThread {
    name: String,
    shared: Arc<Shared>,
    sender: OnceLock<mpsc::Sender<Job>>,
}

impl DeviceThread {
    fn send(&self, job: Job) -> io::Result<()> {
        let sender = self.sender.get_or_init(|| {
            let (jobs, queue) = mpsc::channel::<Job>();
            let worker = self.shared.clone();
            std::thread::Builder::new()
                .name(self.name.clone())
                .spawn(move || {
                    for job in queue {
                        worker.run(job);
                    }
                })
                .expect("spawning an emulator device thread");
            jobs
        });
        sender.send(job).map_err(|_| errno(libc::ENODEV))
    }
}

/// State reached from the port, its openers, its MMIO windows and the device thread.
struct Shared {
    port: Mutex<PortState>,
    afu: Mutex<Nlb0>,
    attributes: Mutex<AttributeState>,
    traffic: Traffic,
    built: Instant,
}

/// The FME's fabric counters, counted as the card serves.
#[derive(Default)]
struct Traffic {
    mmio_reads: AtomicU64,
    mmio_writes: AtomicU64,
    lines_read: AtomicU64,
    lines_written: AtomicU64,
}

impl Traffic {
    fn count_mmio_read(&self) {
        self.mmio_reads.fetch_add(1, Ordering::Relaxed);
    }

    fn count_mmio_write(&self) {
        self.mmio_writes.fetch_add(1, Ordering::Relaxed);
    }

    /// NLB0 read `lines` lines and wrote as many.
    fn count_copy(&self, lines: u64) {
        self.lines_read.fetch_add(lines, Ordering::Relaxed);
        self.lines_written.fetch_add(lines, Ordering::Relaxed);
    }

    fn counts(&self) -> TrafficCounts {
        TrafficCounts {
            mmio_reads: self.mmio_reads.load(Ordering::Relaxed),
            mmio_writes: self.mmio_writes.load(Ordering::Relaxed),
            lines_read: self.lines_read.load(Ordering::Relaxed),
            lines_written: self.lines_written.load(Ordering::Relaxed),
        }
    }
}

/// The driver's view: who holds the port and which buffers are mapped.
#[derive(Default)]
struct PortState {
    openers: u32,
    exclusive: bool,
    /// IO virtual address → the mapped memory.
    mappings: AddressMap<Arc<DmaMemory>>,
    next_iova: u64,
}

/// The NLB0 register file and test state.
#[derive(Default)]
struct Nlb0 {
    scratch: [u64; 2],
    dsm_base: u64,
    src_addr: u64,
    dst_addr: u64,
    num_lines: u32,
    ctl: u32,
    cfg: u64,
    inact_thresh: u32,
    swtest_msg: u32,
    status0: u64,
    status1: u64,
    error: u64,
    stride: u32,
    dsm_number: u16,
    /// Bumped by every reset, so a run started before a reset never reports.
    epoch: u64,
    running: bool,
    stop: Arc<AtomicBool>,
    /// The mappings the running test reads and writes (DMA_UNMAP of them is `EBUSY`).
    busy_iovas: Vec<u64>,
}

/// One started test, handed to the device thread.
struct Job {
    epoch: u64,
    dsm_base: u64,
    src_line: u64,
    dst_line: u64,
    num_lines: u64,
    cfg: u64,
    stop: Arc<AtomicBool>,
}

impl EmulatedPort {
    /// Builds the port; its device thread starts with the first test it runs.
    pub fn new(decl: &DeviceDecl) -> Self {
        let shared = Arc::new(Shared {
            port: Mutex::new(PortState {
                next_iova: IOVA_BASE,
                ..PortState::default()
            }),
            afu: Mutex::new(Nlb0::default()),
            attributes: Mutex::new(AttributeState::default()),
            traffic: Traffic::default(),
            built: Instant::now(),
        });
        let jobs = Arc::new(DeviceThread {
            name: format!("emu-{}", decl.id),
            shared: shared.clone(),
            sender: OnceLock::new(),
        });
        EmulatedPort {
            desc: PortDesc {
                path: format!("emu:{}", decl.id),
                port_id: decl
                    .settings
                    .get::<DflCard>()
                    .map_or(0, |card| card.port_id),
                afu_id: nlb0::AFU_ID,
                vendor_id: decl.vendor_id,
                device_id: decl.device_id,
                bus_address: decl.bus_address,
                socket_id: decl.socket_id,
                emulated: true,
            },
            shared,
            jobs,
        }
    }
}

impl DflDevice for EmulatedPort {
    fn desc(&self) -> PortDesc {
        self.desc.clone()
    }

    fn open(&self, exclusive: bool, owner: &Owner) -> io::Result<Box<dyn DflPort>> {
        let mut port = self.shared.lock_port();
        if port.exclusive || (exclusive && port.openers > 0) {
            return Err(errno(libc::EBUSY));
        }
        port.openers += 1;
        port.exclusive = exclusive;
        Ok(Box::new(EmulatedOpener {
            shared: self.shared.clone(),
            jobs: self.jobs.clone(),
            owner: owner.id,
            closed: Arc::new(AtomicBool::new(false)),
        }))
    }

    fn probe(&self, _owner: &Owner) -> PortProbe {
        let port = self.shared.lock_port();
        PortProbe {
            assigned: port.exclusive,
            num_regions: REGIONS,
        }
    }

    fn attributes(&self) -> io::Result<Vec<AttributeInfo>> {
        Ok(attributes::list())
    }

    fn read_attribute(&self, name: &str) -> io::Result<String> {
        let facts = CardFacts {
            port_id: self.desc.port_id,
            afu_id: self.desc.afu_id,
            socket_id: self.desc.socket_id.unwrap_or(0),
            busy: self.shared.lock_afu().running,
            clock: self.shared.built.elapsed().as_nanos() as u64 * AFU_CLOCK_MHZ / 1000,
            traffic: self.shared.traffic.counts(),
        };
        lock(&self.shared.attributes).read(name, &facts)
    }

    fn write_attribute(&self, name: &str, value: &str) -> io::Result<()> {
        lock(&self.shared.attributes).write(name, value)
    }
}

/// One open of the port.
struct EmulatedOpener {
    shared: Arc<Shared>,
    jobs: Arc<DeviceThread>,
    owner: OwnerId,
    /// Set at close; windows mapped through this opener check it.
    closed: Arc<AtomicBool>,
}

impl DflPort for EmulatedOpener {
    fn info(&self) -> io::Result<PortInfo> {
        Ok(PortInfo {
            flags: 0,
            num_regions: REGIONS,
            num_umsgs: 0,
        })
    }

    fn region_info(&self, index: u32) -> io::Result<RegionInfo> {
        if index != abi::REGION_INDEX_AFU {
            return Err(errno(libc::EINVAL));
        }
        Ok(RegionInfo {
            index,
            flags: abi::REGION_READ | abi::REGION_WRITE | abi::REGION_MMAP,
            size: AFU_MMIO_SIZE,
            offset: 0,
        })
    }

    fn map_region(&self, index: u32) -> io::Result<Arc<dyn MmioWindow>> {
        self.region_info(index)?;
        Ok(Arc::new(EmulatedMmio {
            shared: self.shared.clone(),
            jobs: self.jobs.clone(),
            closed: self.closed.clone(),
        }))
    }

    fn dma_map(&self, memory: &Arc<DmaMemory>) -> io::Result<u64> {
        check_owner(memory, self.owner)?;
        let mut port = self.shared.lock_port();
        if port
            .mappings
            .iter()
            .any(|(_, _, mapped)| Arc::ptr_eq(mapped, memory))
        {
            return Err(errno(libc::EEXIST));
        }
        let iova = port.next_iova;
        port.next_iova = iova
            .checked_add(memory.len().next_multiple_of(crate::devices::page_size()))
            .ok_or_else(|| errno(libc::ENOSPC))?;
        port.mappings.insert(iova, memory.len(), memory.clone());
        memory.set_io_address(Some(iova));
        Ok(iova)
    }

    fn dma_unmap(&self, iova: u64) -> io::Result<()> {
        let afu = self.shared.lock_afu();
        let mut port = self.shared.lock_port();
        if port.mappings.get(iova).is_none() {
            return Err(errno(libc::EINVAL));
        }
        if afu.running && afu.busy_iovas.contains(&iova) {
            return Err(errno(libc::EBUSY));
        }
        if let Some(memory) = port.mappings.remove(iova) {
            memory.set_io_address(None);
        }
        Ok(())
    }

    fn reset(&self) -> io::Result<()> {
        self.shared.lock_afu().reset();
        Ok(())
    }
}

impl Drop for EmulatedOpener {
    fn drop(&mut self) {
        self.closed.store(true, Ordering::Release);
        let mut afu = self.shared.lock_afu();
        let mut port = self.shared.lock_port();
        port.openers -= 1;
        port.exclusive = false;
        if port.openers == 0 {
            // The kernel's last close: reset the AFU and unpin every buffer.
            afu.reset();
            for (_, _, memory) in std::mem::take(&mut port.mappings).iter() {
                memory.set_io_address(None);
            }
        }
    }
}

impl Shared {
    fn lock_port(&self) -> MutexGuard<'_, PortState> {
        lock(&self.port)
    }

    fn lock_afu(&self) -> MutexGuard<'_, Nlb0> {
        lock(&self.afu)
    }

    /// Finds the mapping holding `[iova, iova + len)`; returns it with the offset into it.
    fn translate(&self, iova: u64, len: u64) -> Option<(Arc<DmaMemory>, u64, u64)> {
        let port = self.lock_port();
        let (memory, offset, start) = port.mappings.find(iova, len)?;
        Some((memory.clone(), offset, start))
    }

    /// The device thread's work for one test: the LPBK1 copy through the IOVA table, then the
    /// status line in the DSM.
    fn run(&self, job: Job) {
        let started = Instant::now();
        let mode = (job.cfg & nlb0::CFG_MODE_MASK) >> nlb0::CFG_MODE_SHIFT;
        let continuous = job.cfg & nlb0::CFG_CONT != 0;
        let bytes = job.num_lines * nlb0::CACHE_LINE;
        let mut error = 0u64;
        let mut bad_address = 0u64;
        let mut lines_done: u64 = 0;
        if mode != nlb0::MODE_LPBK1 {
            error |= ERROR_UNSUPPORTED_MODE;
        } else {
            let src = self.translate(job.src_line * nlb0::CACHE_LINE, bytes);
            let dst = self.translate(job.dst_line * nlb0::CACHE_LINE, bytes);
            match (src, dst) {
                (Some((src, src_off, _)), Some((dst, dst_off, _))) => loop {
                    let mut done = 0;
                    while done < bytes {
                        if self.cancelled(&job) {
                            return;
                        }
                        let chunk = COPY_CHUNK.min(bytes - done);
                        if dst
                            .copy_from(dst_off + done, &src, src_off + done, chunk)
                            .is_err()
                        {
                            error |= ERROR_ILLEGAL_ADDRESS;
                            bad_address = job.dst_line * nlb0::CACHE_LINE + done;
                            break;
                        }
                        done += chunk;
                    }
                    let lines = done / nlb0::CACHE_LINE;
                    lines_done += lines;
                    self.traffic.count_copy(lines);
                    self.update_counters(&job, lines_done);
                    if !continuous || error != 0 || job.stop.load(Ordering::Acquire) {
                        break;
                    }
                },
                (src, _) => {
                    error |= ERROR_ILLEGAL_ADDRESS;
                    let line = if src.is_none() {
                        job.src_line
                    } else {
                        job.dst_line
                    };
                    bad_address = line * nlb0::CACHE_LINE;
                }
            }
        }
        let mut afu = self.lock_afu();
        if afu.epoch != job.epoch {
            return;
        }
        afu.error |= error;
        afu.running = false;
        if error != 0 {
            // What the port's error register shows for it (the AFU's own ERROR register
            // keeps the NLB's vector).
            let mut attributes = lock(&self.attributes);
            if error & ERROR_ILLEGAL_ADDRESS != 0 {
                attributes.raise_port_error(PORT_ERROR_UNMAPPED_ADDRESS, bad_address);
            }
            if error & ERROR_UNSUPPORTED_MODE != 0 {
                attributes.raise_port_error(PORT_ERROR_UNSUPPORTED_MODE, 0);
            }
        }
        afu.busy_iovas.clear();
        afu.status1 = 0;
        afu.dsm_number = afu.dsm_number.wrapping_add(1) & 0x7FFF;
        let status = DsmStatus {
            number: afu.dsm_number,
            error: afu.error as u32,
            lines: lines_done,
            clocks: started.elapsed().as_nanos() as u64 * AFU_CLOCK_MHZ / 1000,
        };
        drop(afu);
        if let Some((dsm, offset, _)) = self.translate(job.dsm_base + nlb0::DSM_STATUS, 64) {
            status.write(&dsm, offset);
        }
    }

    fn cancelled(&self, job: &Job) -> bool {
        self.lock_afu().epoch != job.epoch
    }

    fn update_counters(&self, job: &Job, lines: u64) {
        let mut afu = self.lock_afu();
        if afu.epoch == job.epoch {
            let count = lines & 0xFFFF_FFFF;
            afu.status0 = (count << 32) | count;
        }
    }
}

/// Error vector bits the emulator reports in `ERROR` and the DSM's `test_error`.
const ERROR_ILLEGAL_ADDRESS: u64 = 1 << 0;
const ERROR_UNSUPPORTED_MODE: u64 = 1 << 1;

/// The status line the AFU writes at `DSM_BASE + 0x40` when a test ends.
struct DsmStatus {
    number: u16,
    error: u32,
    lines: u64,
    clocks: u64,
}

impl DsmStatus {
    fn write(&self, dsm: &DmaMemory, line: u64) {
        let count = (self.lines & 0xFFFF_FFFF) as u32;
        let mut tail = [0u8; 56];
        tail[0..8].copy_from_slice(&(self.clocks & 0xFF_FFFF_FFFF).to_le_bytes());
        tail[8..12].copy_from_slice(&count.to_le_bytes());
        tail[12..16].copy_from_slice(&count.to_le_bytes());
        // Start and end overheads, in clocks, as a real NLB reports them.
        tail[16..20].copy_from_slice(&4u32.to_le_bytes());
        tail[20..24].copy_from_slice(&4u32.to_le_bytes());
        let _ = dsm.write(line + 8, &tail);
        // The completion bit goes last, in one ordered store with the error word: whoever
        // sees it also sees the data and the counters.
        let complete = nlb0::DSM_TEST_COMPLETE | (u32::from(self.number) << 1);
        let word = u64::from(complete) | (u64::from(self.error) << 32);
        let _ = dsm.store_u64(line, word);
    }
}

impl Nlb0 {
    /// Port reset: back to the power-on state, abandoning any running test. (CTL[0] = 0 only
    /// clears the test state; the other registers keep their values.)
    fn reset(&mut self) {
        self.clear_test_state();
        self.scratch = [0; 2];
        self.dsm_base = 0;
        self.src_addr = 0;
        self.dst_addr = 0;
        self.num_lines = 0;
        self.ctl = 0;
        self.cfg = 0;
        self.inact_thresh = 0;
        self.swtest_msg = 0;
        self.stride = 0;
    }

    fn clear_test_state(&mut self) {
        self.epoch += 1;
        if Arc::strong_count(&self.stop) > 1 {
            // A test holds the flag: stop it, and give the next test a fresh one.
            self.stop.store(true, Ordering::Release);
            self.stop = Arc::new(AtomicBool::new(false));
        } else {
            // No test can see the flag: reuse it (a reset allocates nothing).
            self.stop.store(false, Ordering::Release);
        }
        self.running = false;
        self.busy_iovas.clear();
        self.status0 = 0;
        self.status1 = 0;
        self.error = 0;
        self.dsm_number = 0;
    }

    /// Writes to `RW*` registers take effect only while out of reset and not started.
    fn config_unlocked(&self) -> bool {
        self.ctl & nlb0::CTL_RESET_N != 0 && self.ctl & nlb0::CTL_START == 0
    }

    fn read_slot(&self, slot: u64) -> u64 {
        match slot {
            nlb0::CSR_AFU_DFH => nlb0::AFU_DFH,
            nlb0::CSR_AFU_ID_L => nlb0::AFU_ID.low,
            nlb0::CSR_AFU_ID_H => nlb0::AFU_ID.high,
            nlb0::CSR_SCRATCHPAD0 => self.scratch[0],
            nlb0::CSR_SCRATCHPAD2 => self.scratch[1],
            nlb0::CSR_DSM_BASEL => self.dsm_base,
            nlb0::CSR_SRC_ADDR => self.src_addr,
            nlb0::CSR_DST_ADDR => self.dst_addr,
            nlb0::CSR_NUM_LINES => u64::from(self.num_lines),
            nlb0::CSR_CTL => u64::from(self.ctl),
            nlb0::CSR_CFG => self.cfg,
            nlb0::CSR_INACT_THRESH => u64::from(self.inact_thresh),
            nlb0::CSR_SWTEST_MSG => u64::from(self.swtest_msg),
            nlb0::CSR_STATUS0 => self.status0,
            nlb0::CSR_STATUS1 => self.status1,
            nlb0::CSR_ERROR => self.error,
            nlb0::CSR_STRIDE => u64::from(self.stride),
            _ => 0,
        }
    }

    /// Applies a write of `value` to the bits `mask` of the 64-bit slot at `slot`. Returns the
    /// test to start, if this write started one.
    fn write_slot(&mut self, slot: u64, value: u64, mask: u64) -> Option<Job> {
        let merged = (self.read_slot(slot) & !mask) | (value & mask);
        let unlocked = self.config_unlocked();
        match slot {
            nlb0::CSR_SCRATCHPAD0 => self.scratch[0] = merged,
            nlb0::CSR_SCRATCHPAD2 => self.scratch[1] = merged,
            nlb0::CSR_DSM_BASEL => self.dsm_base = merged,
            nlb0::CSR_SRC_ADDR if unlocked => self.src_addr = merged,
            nlb0::CSR_DST_ADDR if unlocked => self.dst_addr = merged,
            nlb0::CSR_NUM_LINES => self.num_lines = merged as u32 & nlb0::NUM_LINES_MASK,
            nlb0::CSR_CFG if unlocked => self.cfg = merged,
            nlb0::CSR_INACT_THRESH if unlocked => self.inact_thresh = merged as u32,
            nlb0::CSR_SWTEST_MSG => self.swtest_msg = merged as u32,
            nlb0::CSR_STRIDE if unlocked => self.stride = merged as u32 & 0x3F,
            nlb0::CSR_CTL => return self.write_ctl(merged as u32),
            _ => {}
        }
        None
    }

    fn write_ctl(&mut self, ctl: u32) -> Option<Job> {
        let previous = self.ctl;
        self.ctl = ctl & (nlb0::CTL_RESET_N | nlb0::CTL_START | nlb0::CTL_STOP);
        if ctl & nlb0::CTL_RESET_N == 0 {
            self.clear_test_state();
            return None;
        }
        if ctl & nlb0::CTL_STOP != 0 {
            self.stop.store(true, Ordering::Release);
        }
        let starting = ctl & nlb0::CTL_START != 0 && previous & nlb0::CTL_START == 0;
        if !starting || self.running {
            return None;
        }
        self.running = true;
        self.status1 = u64::from(self.num_lines);
        let line = |addr: u64| addr * nlb0::CACHE_LINE;
        let (src, dst) = (line(self.src_addr), line(self.dst_addr));
        let dsm = self.dsm_base;
        self.busy_iovas = vec![src, dst, dsm];
        Some(Job {
            epoch: self.epoch,
            dsm_base: self.dsm_base,
            src_line: self.src_addr,
            dst_line: self.dst_addr,
            num_lines: u64::from(self.num_lines),
            cfg: self.cfg,
            stop: self.stop.clone(),
        })
    }
}

/// The AFU's MMIO window as one opener mapped it.
struct EmulatedMmio {
    shared: Arc<Shared>,
    jobs: Arc<DeviceThread>,
    closed: Arc<AtomicBool>,
}

impl EmulatedMmio {
    fn afu(&self) -> io::Result<MutexGuard<'_, Nlb0>> {
        if self.closed.load(Ordering::Acquire) {
            return Err(errno(libc::ENODEV));
        }
        Ok(self.shared.lock_afu())
    }

    fn write_bits(&self, offset: u64, value: u64, mask: u64) -> io::Result<()> {
        let mut afu = self.afu()?;
        let job = afu.write_slot(offset & !7, value, mask);
        if let Some(job) = job {
            // Mark the mappings the test uses; `translate` happens on the device thread.
            let busy = self.busy_starts(&afu.busy_iovas);
            afu.busy_iovas = busy;
            drop(afu);
            self.jobs.send(job)?;
        }
        Ok(())
    }

    /// The start addresses of the mappings holding `addresses`.
    fn busy_starts(&self, addresses: &[u64]) -> Vec<u64> {
        addresses
            .iter()
            .filter_map(|&a| self.shared.translate(a, 1).map(|(_, _, start)| start))
            .collect()
    }
}

impl MmioWindow for EmulatedMmio {
    fn size(&self) -> u64 {
        AFU_MMIO_SIZE
    }

    fn read32(&self, offset: u64) -> io::Result<u32> {
        let slot = self.afu()?.read_slot(offset & !7);
        self.shared.traffic.count_mmio_read();
        Ok((slot >> ((offset & 4) * 8)) as u32)
    }

    fn read64(&self, offset: u64) -> io::Result<u64> {
        let slot = self.afu()?.read_slot(offset);
        self.shared.traffic.count_mmio_read();
        Ok(slot)
    }

    fn write32(&self, offset: u64, value: u32) -> io::Result<()> {
        let shift = (offset & 4) * 8;
        self.write_bits(offset, u64::from(value) << shift, 0xFFFF_FFFF << shift)?;
        self.shared.traffic.count_mmio_write();
        Ok(())
    }

    fn write64(&self, offset: u64, value: u64) -> io::Result<()> {
        self.write_bits(offset, value, u64::MAX)?;
        self.shared.traffic.count_mmio_write();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::devices::{CheckedMmio, Owner, PollOutcome, poll_memory_until};
    use std::time::Duration;

    fn port() -> EmulatedPort {
        EmulatedPort::new(&crate::families::dfl::card::decl("t0"))
    }

    fn buffer(owner: &Owner, len: u64) -> Arc<DmaMemory> {
        DmaMemory::allocate(len, owner.id, &owner.dma, false).unwrap()
    }

    /// The hello_fpga sequence; returns the DSM status word.
    fn loopback(mmio: &CheckedMmio, dsm: &DmaMemory, src: u64, dst: u64, lines: u32) -> u64 {
        let dsm_iova = dsm.io_address().unwrap();
        mmio.write64(nlb0::CSR_DSM_BASEL, dsm_iova).unwrap();
        mmio.write32(nlb0::CSR_CTL, 0).unwrap();
        mmio.write32(nlb0::CSR_CTL, nlb0::CTL_RESET_N).unwrap();
        mmio.write64(nlb0::CSR_SRC_ADDR, src / nlb0::CACHE_LINE)
            .unwrap();
        mmio.write64(nlb0::CSR_DST_ADDR, dst / nlb0::CACHE_LINE)
            .unwrap();
        mmio.write32(nlb0::CSR_NUM_LINES, lines).unwrap();
        mmio.write32(nlb0::CSR_CFG, nlb0::CFG_HELLO_FPGA as u32)
            .unwrap();
        mmio.write32(nlb0::CSR_CTL, nlb0::CTL_RESET_N | nlb0::CTL_START)
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        let outcome =
            poll_memory_until(dsm, deadline, 1, 1, || dsm.load_u64(nlb0::DSM_STATUS)).unwrap();
        let PollOutcome::Matched(status) = outcome else {
            panic!("the test did not complete");
        };
        mmio.write32(
            nlb0::CSR_CTL,
            nlb0::CTL_RESET_N | nlb0::CTL_START | nlb0::CTL_STOP,
        )
        .unwrap();
        status
    }

    #[test]
    fn hello_fpga_flow_copies_every_line() {
        let port = port();
        let owner = Owner::unlimited();
        let opened = port.open(true, &owner).unwrap();
        assert_eq!(opened.info().unwrap().num_regions, 1);
        let mmio = CheckedMmio::new(opened.map_region(0).unwrap());
        assert_eq!(mmio.read64(nlb0::CSR_AFU_ID_L).unwrap(), nlb0::AFU_ID.low);
        assert_eq!(mmio.read64(nlb0::CSR_AFU_ID_H).unwrap(), nlb0::AFU_ID.high);
        let (dsm, src, dst) = (
            buffer(&owner, 4096),
            buffer(&owner, 1 << 20),
            buffer(&owner, 1 << 20),
        );
        for b in [&dsm, &src, &dst] {
            opened.dma_map(b).unwrap();
        }
        let pattern: Vec<u8> = (0..1u32 << 20).map(|i| (i * 7 + 3) as u8).collect();
        src.write(0, &pattern).unwrap();
        dst.fill(0, 1 << 20, 0xBE).unwrap();
        let status = loopback(
            &mmio,
            &dsm,
            src.io_address().unwrap(),
            dst.io_address().unwrap(),
            (1 << 20) / 64,
        );
        assert_eq!(status >> 32, 0, "no test error");
        let mut out = vec![0u8; 1 << 20];
        dst.read(0, &mut out).unwrap();
        assert!(out == pattern);
        let mut counts = [0u8; 8];
        dsm.read(nlb0::DSM_STATUS + 0x10, &mut counts).unwrap();
        assert_eq!(u32::from_le_bytes(counts[..4].try_into().unwrap()), 16384);
        assert_eq!(
            mmio.read64(nlb0::CSR_STATUS0).unwrap(),
            (16384 << 32) | 16384
        );
        assert_eq!(mmio.read64(nlb0::CSR_STATUS1).unwrap(), 0);
    }

    #[test]
    fn the_fme_perf_counters_count_what_the_card_served() {
        let port = port();
        let counter = |name: &str| -> u64 { port.read_attribute(name).unwrap().parse().unwrap() };
        let owner = Owner::unlimited();
        let opened = port.open(false, &owner).unwrap();
        let mmio = CheckedMmio::new(opened.map_region(0).unwrap());
        assert_eq!(counter("fme/perf/fabric/mmio_read"), 0);
        let clock = counter("fme/perf/clock");
        mmio.read64(nlb0::CSR_AFU_ID_L).unwrap();
        mmio.read32(nlb0::CSR_AFU_ID_H).unwrap();
        assert_eq!(counter("fme/perf/fabric/mmio_read"), 2);
        let (dsm, src, dst) = (
            buffer(&owner, 4096),
            buffer(&owner, 8192),
            buffer(&owner, 8192),
        );
        for b in [&dsm, &src, &dst] {
            opened.dma_map(b).unwrap();
        }
        let writes = counter("fme/perf/fabric/mmio_write");
        let status = loopback(
            &mmio,
            &dsm,
            src.io_address().unwrap(),
            dst.io_address().unwrap(),
            8192 / 64,
        );
        assert_eq!(status >> 32, 0, "no test error");
        assert!(counter("fme/perf/fabric/mmio_write") > writes);
        assert_eq!(counter("fme/perf/fabric/pcie0_read"), 128);
        assert_eq!(counter("fme/perf/fabric/pcie0_write"), 128);
        assert!(counter("fme/perf/clock") > clock, "the clock runs");
    }

    #[test]
    fn an_unmapped_source_sets_the_error_vector() {
        let port = port();
        let owner = Owner::unlimited();
        let opened = port.open(false, &owner).unwrap();
        let mmio = CheckedMmio::new(opened.map_region(0).unwrap());
        let dsm = buffer(&owner, 4096);
        let dst = buffer(&owner, 4096);
        opened.dma_map(&dsm).unwrap();
        opened.dma_map(&dst).unwrap();
        let status = loopback(&mmio, &dsm, 0x40, dst.io_address().unwrap(), 1);
        assert_eq!(status >> 32, ERROR_ILLEGAL_ADDRESS);
        assert_eq!(mmio.read64(nlb0::CSR_ERROR).unwrap(), ERROR_ILLEGAL_ADDRESS);
        // The port's error register shows it too, with the request that caused it, and is
        // cleared by writing its value back.
        assert_eq!(port.read_attribute("errors/errors").unwrap(), "0x1");
        assert_eq!(
            port.read_attribute("errors/first_malformed_req").unwrap(),
            "0x0000000000000001"
        );
        port.write_attribute("errors/errors", "0x1").unwrap();
        assert_eq!(port.read_attribute("errors/errors").unwrap(), "0x0");
    }

    #[test]
    fn config_registers_are_locked_while_in_reset_or_running() {
        let port = port();
        let opened = port.open(false, &Owner::unlimited()).unwrap();
        let mmio = CheckedMmio::new(opened.map_region(0).unwrap());
        mmio.write64(nlb0::CSR_SRC_ADDR, 5).unwrap();
        assert_eq!(
            mmio.read64(nlb0::CSR_SRC_ADDR).unwrap(),
            0,
            "CTL[0] = 0 locks SRC"
        );
        mmio.write32(nlb0::CSR_CTL, nlb0::CTL_RESET_N).unwrap();
        mmio.write64(nlb0::CSR_SRC_ADDR, 5).unwrap();
        assert_eq!(mmio.read64(nlb0::CSR_SRC_ADDR).unwrap(), 5);
        mmio.write32(nlb0::CSR_SCRATCHPAD0 + 4, 0xABCD).unwrap();
        assert_eq!(mmio.read64(nlb0::CSR_SCRATCHPAD0).unwrap(), 0xABCD << 32);
        opened.reset().unwrap();
        assert_eq!(mmio.read64(nlb0::CSR_SCRATCHPAD0).unwrap(), 0);
        assert_eq!(mmio.read32(nlb0::CSR_CTL).unwrap(), 0);
    }

    #[test]
    fn exclusive_open_semantics() {
        let port = port();
        let first = port.open(false, &Owner::unlimited()).unwrap();
        let second = port.open(false, &Owner::unlimited()).unwrap();
        let busy = port.open(true, &Owner::unlimited()).err().unwrap();
        assert_eq!(busy.raw_os_error(), Some(libc::EBUSY));
        drop((first, second));
        let exclusive = port.open(true, &Owner::unlimited()).unwrap();
        for mode in [true, false] {
            let err = port.open(mode, &Owner::unlimited()).err().unwrap();
            assert_eq!(err.raw_os_error(), Some(libc::EBUSY));
        }
        drop(exclusive);
        port.open(true, &Owner::unlimited()).unwrap();
    }

    #[test]
    fn dma_map_rules() {
        let port = port();
        let owner = Owner::unlimited();
        let opened = port.open(false, &owner).unwrap();
        let mine = buffer(&owner, 8192);
        let foreign = buffer(&Owner::unlimited(), 4096);
        let err = opened.dma_map(&foreign).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EFAULT));
        let iova = opened.dma_map(&mine).unwrap();
        assert_eq!(
            opened.dma_map(&mine).unwrap_err().raw_os_error(),
            Some(libc::EEXIST)
        );
        assert_eq!(
            opened.dma_unmap(iova + 4096).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
        opened.dma_unmap(iova).unwrap();
        assert_eq!(mine.io_address(), None);
        assert_eq!(
            opened.dma_unmap(iova).unwrap_err().raw_os_error(),
            Some(libc::EINVAL)
        );
    }

    #[test]
    fn last_close_resets_and_unmaps_and_kills_windows() {
        let port = port();
        let owner = Owner::unlimited();
        let opened = port.open(false, &owner).unwrap();
        let window = opened.map_region(0).unwrap();
        window.write64(nlb0::CSR_SCRATCHPAD2, 42).unwrap();
        let mem = buffer(&owner, 4096);
        opened.dma_map(&mem).unwrap();
        drop(opened);
        assert_eq!(mem.io_address(), None);
        assert_eq!(
            window.read64(0).unwrap_err().raw_os_error(),
            Some(libc::ENODEV)
        );
        let again = port.open(false, &owner).unwrap();
        let window = again.map_region(0).unwrap();
        assert_eq!(window.read64(nlb0::CSR_SCRATCHPAD2).unwrap(), 0);
        assert!(again.region_info(1).is_err());
    }
}
