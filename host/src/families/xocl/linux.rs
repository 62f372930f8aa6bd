//! The xocl backend over XRT's kernel driver: user PFs are found through sysfs
//! (`bus/pci/devices/<BDF>` with a `drm/renderD<N>` child), opened as `/dev/dri/renderD<N>`
//! and driven with the ioctls and `mmap` of [`abi`] (the XRT >= 2.15 numbering).

use std::collections::{HashMap, VecDeque};
use std::io::{self, PipeReader, PipeWriter};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::abi::{
    self, AxlfArg, CopyBoArg, CreateBoArg, CtxArg, ErtHeader, ErtOpcode, ErtState, ExecbufArg,
    GemCloseArg, InfoBoArg, MapBoArg, StartCu, SyncBoArg,
};
use super::xclbin::{KernelMeta, Xclbin};
use super::{BoInfo, Command, DeviceDesc, SyncDirection, XoclClient, XoclDevice};
use crate::devices::ioctl::{ioctl_ptr, ioctl_val};
use crate::devices::sysfs::{
    BadAttribute, numbered, open_node, read_dir_if_present, read_hex_u16, read_optional, read_text,
};
use crate::devices::{
    Budget, Charge, Completion, CompletionState, DmaMemory, LinuxRoots, Owner, OwnerId, errno,
    lock, page_size, wait,
};
use crate::types::{BusAddress, Guid};

/// Finds the xocl user PFs under `<sysfs>/bus/pci/devices`, in bus-address order: Xilinx
/// functions with a `drm/renderD<N>` child whose `ready` attribute is not `0`. No PCI
/// directory means no devices; a function with unusable attributes is skipped.
pub fn discover_devices(roots: &LinuxRoots) -> io::Result<Vec<LinuxXoclDevice>> {
    let Some(functions) = read_dir_if_present(&roots.sysfs.join(abi::SYSFS_PCI_DEVICES))? else {
        return Ok(Vec::new());
    };
    let mut found = Vec::new();
    for entry in functions {
        let function = entry?.path();
        match probe_function(&function, &roots.dev) {
            Ok(Some(device)) => found.push(device),
            Ok(None) => {}
            Err(err) => tracing::warn!("skipping PCI function {}: {err}", function.display()),
        }
    }
    found.sort_by_key(|device| device.discovered.bus_address);
    Ok(found)
}

/// The device behind one PCI function directory, `None` if it is not a usable xocl user PF.
fn probe_function(function: &Path, dev: &Path) -> Result<Option<LinuxXoclDevice>, BadAttribute> {
    let vendor_id = read_hex_u16(&function.join("vendor"))?;
    if vendor_id != abi::PCI_VENDOR_XILINX {
        return Ok(None);
    }
    let Some(render) = render_node(function)? else {
        tracing::debug!(
            "Xilinx PCI function {} has no render node (a management PF?)",
            function.display()
        );
        return Ok(None);
    };
    let ready = read_text(&function.join(abi::USER_ATTR_READY));
    if ready.is_ok_and(|text| text == "0") {
        tracing::debug!(
            "skipping xocl device {}: its `ready` attribute is 0",
            function.display()
        );
        return Ok(None);
    }
    let device_id = read_hex_u16(&function.join("device"))?;
    let bus_address: BusAddress = function
        .file_name()
        .and_then(|name| name.to_str()?.parse().ok())
        .ok_or_else(|| BadAttribute::new(function, "the directory name is not a PCI address"))?;
    let board_name = read_text(&function.join(abi::USER_ATTR_BOARD_NAME))
        .ok()
        .filter(|name| !name.is_empty())
        .unwrap_or_else(|| "unknown".to_owned());
    let loaded = read_loaded(function).unwrap_or_else(|err| {
        tracing::warn!("xocl device {bus_address}: taking no xclbin as loaded: {err}");
        None
    });
    let node = dev.join(abi::DEV_DRI_DIR).join(&render);
    Ok(Some(LinuxXoclDevice {
        function: function.to_path_buf(),
        discovered: DeviceDesc {
            path: node.to_string_lossy().into_owned(),
            vendor_id,
            device_id,
            bus_address: Some(bus_address),
            board_name,
            loaded,
            emulated: false,
        },
        node,
    }))
}

/// The lowest-numbered `renderD<N>` entry of the function's `drm` directory, if any.
fn render_node(function: &Path) -> Result<Option<String>, BadAttribute> {
    let drm = function.join(abi::SYSFS_DRM_DIR);
    let Some(entries) = read_dir_if_present(&drm).map_err(|err| BadAttribute::new(&drm, err))?
    else {
        return Ok(None);
    };
    let mut lowest: Option<(u32, String)> = None;
    for entry in entries {
        let name = entry
            .map_err(|err| BadAttribute::new(&drm, err))?
            .file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(number) = render_number(name)
            && lowest.as_ref().is_none_or(|(n, _)| number < *n)
        {
            lowest = Some((number, name.to_owned()));
        }
    }
    Ok(lowest.map(|(_, name)| name))
}

/// `N` of `renderD<N>` when `N` is all decimal digits.
fn render_number(name: &str) -> Option<u32> {
    numbered(name, abi::RENDER_NODE_PREFIX)
}

/// The uuid the function's `xclbinuuid` attribute names; a missing attribute, empty text or
/// the null uuid mean none.
fn read_loaded(function: &Path) -> Result<Option<Guid>, BadAttribute> {
    let path = function.join(abi::USER_ATTR_XCLBINUUID);
    read_optional(&path, parse_xclbinuuid, "a uuid").map(Option::flatten)
}

/// `Some(None)` for no xclbin (empty, `0`, the null uuid), `Some(Some(uuid))` for a uuid with
/// or without dashes, `None` for anything else.
fn parse_xclbinuuid(text: &str) -> Option<Option<Guid>> {
    if text.bytes().all(|b| b == b'0' || b == b'-') {
        return Some(None);
    }
    text.parse().ok().map(Some)
}

/// An xocl user PF the kernel driver exposes, as [`discover_devices`] found it.
#[derive(Debug)]
pub struct LinuxXoclDevice {
    function: PathBuf,
    node: PathBuf,
    discovered: DeviceDesc,
}

impl XoclDevice for LinuxXoclDevice {
    fn desc(&self) -> DeviceDesc {
        let mut desc = self.discovered.clone();
        match read_loaded(&self.function) {
            Ok(loaded) => desc.loaded = loaded,
            Err(err) => tracing::debug!("xocl device: using the uuid found at discovery: {err}"),
        }
        desc
    }

    fn open(&self, owner: &Owner) -> io::Result<Box<dyn XoclClient>> {
        let fd = open_node(&self.node)?;
        let client = LinuxXoclClient::new(fd, owner, Some(self.function.clone()))?;
        Ok(Box::new(client))
    }
}

/// What a command's completion says when the client closed the device before it ran.
const CLIENT_CLOSED: &str = "the client closed the device";
/// Bytes of an exec BO and the most an exec buffer may hold (`CREATE_BO` rounds it to a page).
const EXEC_BO_BYTES: u64 = 4096;
/// How long one `poll` of the render node waits for a completion event.
const EXEC_POLL_MS: libc::c_int = 1000;
/// `sizeof(struct kernel_info)` without its arguments.
const KERNEL_INFO_SIZE: usize = 76;
/// `sizeof(struct argument_info)`.
const ARGUMENT_INFO_SIZE: usize = 76;
/// The `name` field of both structs.
const INFO_NAME_LEN: usize = 64;
/// The smallest register range a kernel claims in its `kernel_info`.
const MIN_KERNEL_RANGE: u32 = 0x1_0000;

/// An open render node: one KDS client. A worker thread runs its commands in submission
/// order; dropping the client fails what has not started, stops the worker and closes the
/// fd, on which the kernel frees the client's contexts and BOs. BO host mappings stay valid
/// until the last [`DmaMemory`] over them goes.
pub struct LinuxXoclClient {
    shared: Arc<Shared>,
    /// The BOs' host mappings are charged to its DMA budget.
    owner: Owner,
    /// The PCI function in sysfs, to check which xclbin the card holds.
    function: Option<PathBuf>,
    loaded: Mutex<Option<Arc<Xclbin>>>,
    /// The live BOs by GEM handle, each with its host mapping.
    bos: Mutex<HashMap<u32, Arc<DmaMemory>>>,
    /// Dropping it wakes a worker waiting on a running exec buffer.
    stop: Option<PipeWriter>,
    worker: Option<JoinHandle<()>>,
}

/// What the client and its worker share.
struct Shared {
    fd: OwnedFd,
    /// Queued commands and their exec BOs are charged to its host budget.
    owner: Owner,
    queue: Mutex<Queue>,
    /// Wakes the worker: a submit, a finished dependency, the client closing.
    wake: Condvar,
    /// Readable (hung up) once the client closes.
    stopped: PipeReader,
}

#[derive(Default)]
struct Queue {
    jobs: VecDeque<Job>,
    closed: bool,
}

/// A submitted command, checked and turned into its ioctl argument.
struct Job {
    work: Work,
    after: Vec<Arc<Completion>>,
    done: Arc<Completion>,
    _charge: Charge,
}

enum Work {
    Sync(SyncBoArg),
    Copy(CopyBoArg),
    Exec(Vec<u32>),
}

fn invalid(message: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message.into())
}

impl LinuxXoclClient {
    fn new(fd: OwnedFd, owner: &Owner, function: Option<PathBuf>) -> io::Result<Self> {
        let (stopped, stop) = io::pipe()?;
        let shared = Arc::new(Shared {
            fd,
            owner: owner.clone(),
            queue: Mutex::new(Queue::default()),
            wake: Condvar::new(),
            stopped,
        });
        let for_worker = shared.clone();
        let worker = std::thread::Builder::new()
            .name("xocl-client".into())
            .spawn(move || run_worker(&for_worker))?;
        Ok(LinuxXoclClient {
            shared,
            owner: owner.clone(),
            function,
            loaded: Mutex::new(None),
            bos: Mutex::new(HashMap::new()),
            stop: Some(stop),
            worker: Some(worker),
        })
    }

    fn fd(&self) -> BorrowedFd<'_> {
        self.shared.fd.as_fd()
    }

    /// Checks that `[offset, offset + size)` lies in the live BO `handle`.
    fn check_range(&self, what: &str, handle: u32, offset: u64, size: u64) -> io::Result<()> {
        let bos = lock(&self.bos);
        let memory = bos.get(&handle).ok_or_else(|| errno(libc::ENOENT))?;
        if offset
            .checked_add(size)
            .is_none_or(|end| end > memory.len())
        {
            return Err(invalid(format!(
                "{what} of {size} bytes at offset {offset} runs past the {}-byte buffer object {handle}",
                memory.len()
            )));
        }
        Ok(())
    }

    fn ctx(&self, op: u32, uuid: Guid, cu: u32, exclusive: bool) -> io::Result<()> {
        let mut arg = ctx_arg(op, uuid, cu, exclusive);
        // SAFETY: CTX reads and writes one `CtxArg`, which `arg` is.
        unsafe { ioctl_ptr(self.fd(), abi::DRM_IOCTL_XOCL_CTX, &mut arg) }.map(drop)
    }
}

impl XoclClient for LinuxXoclClient {
    fn load_xclbin(&self, image: &[u8], parsed: &Xclbin) -> io::Result<()> {
        if parsed.length != image.len() as u64 {
            return Err(invalid(format!(
                "the xclbin header says {} bytes but the image has {}",
                parsed.length,
                image.len()
            )));
        }
        let blob = kernel_info_blob(&parsed.kernels)?;
        let mut arg = axlf_arg(image, &blob)?;
        // SAFETY: READ_AXLF reads and writes one `AxlfArg`. Through it the kernel reads the
        // image (`m_length` bytes, checked above to be `image.len()`) and `ksize` bytes of
        // `blob`; both outlive the call.
        unsafe { ioctl_ptr(self.fd(), abi::DRM_IOCTL_XOCL_READ_AXLF, &mut arg) }?;
        *lock(&self.loaded) = Some(Arc::new(parsed.clone()));
        Ok(())
    }

    fn loaded_xclbin(&self) -> Option<Arc<Xclbin>> {
        let ours = lock(&self.loaded).clone()?;
        let replaced = self
            .function
            .as_deref()
            .and_then(|function| read_loaded(function).ok().flatten())
            .is_some_and(|on_card| on_card != ours.uuid);
        (!replaced).then_some(ours)
    }

    fn open_context(&self, uuid: Guid, cu: u32, exclusive: bool) -> io::Result<()> {
        self.ctx(abi::CTX_OP_ALLOC_CTX, uuid, cu, exclusive)
    }

    fn close_context(&self, uuid: Guid, cu: u32) -> io::Result<()> {
        self.ctx(abi::CTX_OP_FREE_CTX, uuid, cu, false)
    }

    fn create_bo(&self, size: u64, bank: Option<u32>) -> io::Result<BoInfo> {
        if size == 0 {
            return Err(invalid("a buffer object needs a size above 0"));
        }
        let size = size
            .checked_next_multiple_of(page_size())
            .ok_or_else(|| errno(libc::ENOMEM))?;
        let mut arg = create_bo_arg(size, bo_flags(bank)?);
        let bo = GemHandle::create(self.fd(), &mut arg)?;
        let mut info = info_bo_arg(bo.handle);
        // SAFETY: INFO_BO reads and writes one `InfoBoArg`, which `info` is.
        unsafe { ioctl_ptr(self.fd(), abi::DRM_IOCTL_XOCL_INFO_BO, &mut info) }?;
        let host = map_bo(self.fd(), bo.handle, size, self.owner.id, &self.owner.dma)?;
        lock(&self.bos).insert(bo.handle, host.clone());
        Ok(BoInfo {
            handle: bo.keep(),
            size,
            device_address: info.paddr,
            bank,
            host,
        })
    }

    fn free_bo(&self, handle: u32) -> io::Result<()> {
        let mut bos = lock(&self.bos);
        if !bos.contains_key(&handle) {
            return Err(errno(libc::ENOENT));
        }
        gem_close(self.fd(), handle)?;
        bos.remove(&handle);
        Ok(())
    }

    fn submit(&self, command: Command, after: Vec<Arc<Completion>>) -> io::Result<Arc<Completion>> {
        if after.len() > abi::MAX_DEPENT_CMD_BO {
            return Err(invalid(format!(
                "a command may wait on at most {} others, not {}",
                abi::MAX_DEPENT_CMD_BO,
                after.len()
            )));
        }
        let work = match command {
            Command::Exec(words) => {
                check_exec(&words)?;
                Work::Exec(words)
            }
            Command::Sync {
                bo,
                direction,
                offset,
                size,
            } => {
                self.check_range("sync", bo, offset, size)?;
                Work::Sync(sync_bo_arg(bo, direction, offset, size))
            }
            Command::Copy {
                dst,
                dst_offset,
                src,
                src_offset,
                size,
            } => {
                self.check_range("copy", src, src_offset, size)?;
                self.check_range("copy", dst, dst_offset, size)?;
                Work::Copy(copy_bo_arg(dst, dst_offset, src, src_offset, size))
            }
        };
        let words = match &work {
            Work::Exec(words) => words.len(),
            Work::Sync(_) | Work::Copy(_) => 0,
        };
        let charge = super::charge_command(&self.owner.host, words)?;
        let wakeups = super::charge_wakeups(&self.owner.host, after.len())?;
        let done = Arc::new(Completion::default());
        lock(&self.shared.queue).jobs.push_back(Job {
            work,
            after: after.clone(),
            done: done.clone(),
            _charge: charge,
        });
        self.shared.wake.notify_all();
        for (dependency, charge) in after.iter().zip(wakeups) {
            let shared = Arc::downgrade(&self.shared);
            dependency.on_finish(move || {
                drop(charge);
                if let Some(shared) = shared.upgrade() {
                    // Taken so the wake cannot fall between the worker's check and its wait.
                    let _queue = lock(&shared.queue);
                    shared.wake.notify_all();
                }
            });
        }
        Ok(done)
    }

    fn reset(&self) -> io::Result<()> {
        ioctl_val(self.fd(), abi::DRM_IOCTL_XOCL_HOT_RESET, 0)
            .map(drop)
            .map_err(reset_error)
    }

    fn cancel_pending(&self, reason: &str) {
        let unstarted = std::mem::take(&mut lock(&self.shared.queue).jobs);
        for job in unstarted {
            job.done.finish(CompletionState::Failed(reason.into()));
        }
    }
}

impl Drop for LinuxXoclClient {
    fn drop(&mut self) {
        let unstarted = {
            let mut queue = lock(&self.shared.queue);
            queue.closed = true;
            std::mem::take(&mut queue.jobs)
        };
        self.shared.wake.notify_all();
        drop(self.stop.take());
        for job in unstarted {
            job.done
                .finish(CompletionState::Failed(CLIENT_CLOSED.into()));
        }
        // A watcher run on the worker could drop the last reference to the client there.
        if let Some(worker) = self.worker.take()
            && worker.thread().id() != std::thread::current().id()
        {
            let _ = worker.join();
        }
    }
}

/// HOT_RESET's error, with a clear message when the caller is not root.
fn reset_error(err: io::Error) -> io::Error {
    match err.raw_os_error() {
        Some(libc::EPERM | libc::EACCES) => io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "DRM_IOCTL_XOCL_HOT_RESET resets the whole card and only root may issue it ({err})"
            ),
        ),
        _ => err,
    }
}

/// A GEM handle that is closed on drop unless kept.
struct GemHandle<'a> {
    fd: BorrowedFd<'a>,
    handle: u32,
    kept: bool,
}

impl<'a> GemHandle<'a> {
    /// CREATE_BO with `arg`.
    fn create(fd: BorrowedFd<'a>, arg: &mut CreateBoArg) -> io::Result<Self> {
        // SAFETY: CREATE_BO reads and writes one `CreateBoArg`, which `arg` is.
        unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_CREATE_BO, arg) }?;
        Ok(GemHandle {
            fd,
            handle: arg.handle,
            kept: false,
        })
    }

    /// Leaves the BO open; returns its handle.
    fn keep(mut self) -> u32 {
        self.kept = true;
        self.handle
    }
}

impl Drop for GemHandle<'_> {
    fn drop(&mut self) {
        if !self.kept {
            let _ = gem_close(self.fd, self.handle);
        }
    }
}

fn gem_close(fd: BorrowedFd<'_>, handle: u32) -> io::Result<()> {
    let mut arg = gem_close_arg(handle);
    // SAFETY: GEM_CLOSE reads one `GemCloseArg`, which `arg` is.
    unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_GEM_CLOSE, &mut arg) }.map(drop)
}

/// MAP_BO and `mmap` of `len` bytes of the BO's host backing, as `DmaMemory` charged to
/// `budget`.
fn map_bo(
    fd: BorrowedFd<'_>,
    handle: u32,
    len: u64,
    owner: OwnerId,
    budget: &Arc<Budget>,
) -> io::Result<Arc<DmaMemory>> {
    let mut arg = map_bo_arg(handle);
    // SAFETY: MAP_BO reads and writes one `MapBoArg`, which `arg` is.
    unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_MAP_BO, &mut arg) }?;
    let offset = libc::off_t::try_from(arg.offset).map_err(|_| errno(libc::EINVAL))?;
    let length = usize::try_from(len).map_err(|_| errno(libc::ENOMEM))?;
    // SAFETY: a new shared mapping with no address hint replaces nothing; the kernel checks
    // the fd, length and offset.
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            length,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            offset,
        )
    };
    if ptr == libc::MAP_FAILED {
        return Err(io::Error::last_os_error());
    }
    let ptr = NonNull::new(ptr.cast::<u8>()).ok_or_else(|| errno(libc::ENOMEM))?;
    // SAFETY: `ptr` is the start of the live, read-write mapping of exactly `len` bytes just
    // made, which nothing else knows of; on success it passes to the `DmaMemory`.
    let memory = unsafe { DmaMemory::from_mapping(ptr, len, owner, budget) };
    if memory.is_err() {
        // SAFETY: the mapping was not taken over, so it is still ours to unmap.
        unsafe { libc::munmap(ptr.as_ptr().cast(), length) };
    }
    memory
}

/// The BO flags of a BO in `bank`, or in host memory for `None`.
fn bo_flags(bank: Option<u32>) -> io::Result<u32> {
    match bank {
        None => Ok(abi::BO_FLAGS_HOST_ONLY),
        Some(index) if index <= abi::BO_FLAGS_MEMIDX_MASK => Ok(index),
        Some(index) => Err(invalid(format!(
            "memory bank {index} does not fit the 16-bit bank field of the BO flags"
        ))),
    }
}

fn create_bo_arg(size: u64, flags: u32) -> CreateBoArg {
    CreateBoArg {
        size,
        flags,
        ..Default::default()
    }
}

fn info_bo_arg(handle: u32) -> InfoBoArg {
    InfoBoArg {
        handle,
        ..Default::default()
    }
}

fn map_bo_arg(handle: u32) -> MapBoArg {
    MapBoArg {
        handle,
        ..Default::default()
    }
}

fn gem_close_arg(handle: u32) -> GemCloseArg {
    GemCloseArg { handle, pad: 0 }
}

fn sync_bo_arg(handle: u32, direction: SyncDirection, offset: u64, size: u64) -> SyncBoArg {
    SyncBoArg {
        handle,
        flags: 0,
        size,
        offset,
        dir: match direction {
            SyncDirection::ToDevice => abi::SYNC_BO_TO_DEVICE,
            SyncDirection::FromDevice => abi::SYNC_BO_FROM_DEVICE,
        },
        pad: 0,
    }
}

fn copy_bo_arg(dst: u32, dst_offset: u64, src: u32, src_offset: u64, size: u64) -> CopyBoArg {
    CopyBoArg {
        dst_handle: dst,
        src_handle: src,
        size,
        dst_offset,
        src_offset,
    }
}

/// The uuid as the 16 raw bytes the driver compares, in the order the xclbin stores them.
fn uuid_bytes(uuid: Guid) -> [u8; 16] {
    let mut bytes = [0; 16];
    bytes[..8].copy_from_slice(&uuid.high.to_be_bytes());
    bytes[8..].copy_from_slice(&uuid.low.to_be_bytes());
    bytes
}

fn ctx_arg(op: u32, uuid: Guid, cu: u32, exclusive: bool) -> CtxArg {
    CtxArg {
        op,
        xclbin_id: uuid_bytes(uuid),
        cu_index: cu,
        flags: if exclusive {
            abi::CTX_EXCLUSIVE
        } else {
            abi::CTX_SHARED
        },
        handle: 0,
    }
}

fn execbuf_arg(exec_bo: u32) -> ExecbufArg {
    ExecbufArg {
        ctx_id: 0,
        exec_bo_handle: exec_bo,
        deps: [0; abi::MAX_DEPENT_CMD_BO],
    }
}

/// READ_AXLF's argument over `image` and a `kernel_info` blob; both must outlive the ioctl.
fn axlf_arg(image: &[u8], kernels: &[u8]) -> io::Result<AxlfArg> {
    let ksize =
        i32::try_from(kernels.len()).map_err(|_| invalid("the kernel_info blob exceeds 2 GiB"))?;
    Ok(AxlfArg {
        xclbin: image.as_ptr() as u64,
        ksize,
        kernels: kernels.as_ptr() as u64,
        flags: abi::AXLF_BASE,
        ..Default::default()
    })
}

/// The `kernels` blob of READ_AXLF: one `kernel_info` per kernel (NUL-padded `name[64]`,
/// `range`, `anums`, `features`), each followed by its `argument_info` records (NUL-padded
/// `name[64]`, `offset`, `size`, `dir`), in native byte order, arguments in metadata order.
/// The metadata carries no register range, direction or features, so `range` is the
/// smallest power of two of at least 64 KiB covering the arguments, and `dir` and
/// `features` are 0. Names of 64 bytes or more, or holding a NUL, are refused.
pub fn kernel_info_blob(kernels: &[KernelMeta]) -> io::Result<Vec<u8>> {
    let mut blob = Vec::new();
    for kernel in kernels {
        let anums = i32::try_from(kernel.args.len())
            .map_err(|_| invalid(format!("kernel '{}' has too many arguments", kernel.name)))?;
        blob.reserve(KERNEL_INFO_SIZE + ARGUMENT_INFO_SIZE * kernel.args.len());
        put_name(&mut blob, &kernel.name)?;
        blob.extend_from_slice(&kernel_range(kernel).to_ne_bytes());
        blob.extend_from_slice(&anums.to_ne_bytes());
        blob.extend_from_slice(&0i32.to_ne_bytes());
        for arg in &kernel.args {
            put_name(&mut blob, &arg.name)?;
            blob.extend_from_slice(&arg.offset.to_ne_bytes());
            blob.extend_from_slice(&arg.size.to_ne_bytes());
            blob.extend_from_slice(&0u32.to_ne_bytes());
        }
    }
    Ok(blob)
}

fn put_name(blob: &mut Vec<u8>, name: &str) -> io::Result<()> {
    if name.len() >= INFO_NAME_LEN || name.contains('\0') {
        return Err(invalid(format!(
            "the name '{name}' does not fit a NUL-terminated {INFO_NAME_LEN}-byte field"
        )));
    }
    let mut field = [0u8; INFO_NAME_LEN];
    field[..name.len()].copy_from_slice(name.as_bytes());
    blob.extend_from_slice(&field);
    Ok(())
}

fn kernel_range(kernel: &KernelMeta) -> u32 {
    let end = kernel
        .args
        .iter()
        .map(|arg| u64::from(arg.offset) + u64::from(arg.size))
        .max()
        .unwrap_or(0);
    let range = end.max(u64::from(MIN_KERNEL_RANGE)).next_power_of_two();
    u32::try_from(range).unwrap_or(1 << 31)
}

/// Checks an exec buffer before it is queued: a valid START_CU packet, or a CONFIGURE /
/// SK_CONFIG packet whose count matches, that fits the exec BO.
fn check_exec(words: &[u32]) -> io::Result<()> {
    let first = *words
        .first()
        .ok_or_else(|| invalid("an empty exec buffer"))?;
    if words.len() as u64 * 4 > EXEC_BO_BYTES {
        return Err(invalid(format!(
            "an exec buffer holds at most {} words, not {}",
            EXEC_BO_BYTES / 4,
            words.len()
        )));
    }
    let header = ErtHeader::decode(first);
    match ErtOpcode::from_raw(header.opcode) {
        Some(ErtOpcode::StartCu) => StartCu::decode(words)
            .map(drop)
            .map_err(|e| invalid(format!("bad ERT packet: {e}"))),
        Some(ErtOpcode::Configure | ErtOpcode::SkConfig) => {
            if usize::from(header.count) + 1 == words.len() {
                Ok(())
            } else {
                Err(invalid(format!(
                    "the header count is {} but {} words follow the header",
                    header.count,
                    words.len() - 1
                )))
            }
        }
        _ => Err(invalid(format!(
            "ERT opcode {} is not supported (START_CU, CONFIGURE and SK_CONFIG are)",
            header.opcode
        ))),
    }
}

/// The exec BO contents: the packet with its header state set to NEW, in native byte order.
fn exec_packet(words: &[u32]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(words.len() * 4);
    for (i, &word) in words.iter().enumerate() {
        let word = if i == 0 {
            let mut header = ErtHeader::decode(word);
            header.state = ErtState::New as u8;
            header.encode()
        } else {
            word
        };
        bytes.extend_from_slice(&word.to_ne_bytes());
    }
    bytes
}

/// The outcome an exec BO's header word shows: `None` while the state is below COMPLETED,
/// then Complete for COMPLETED and Failed naming the state otherwise.
fn exec_outcome(header: u32) -> Option<CompletionState> {
    let raw = ErtHeader::decode(header).state;
    if raw < ErtState::Completed as u8 {
        return None;
    }
    Some(match ErtState::from_raw(raw) {
        Some(ErtState::Completed) => CompletionState::Complete,
        Some(state) => CompletionState::Failed(format!(
            "the device ended the command in state {state:?} ({raw})"
        )),
        None => CompletionState::Failed(format!(
            "the device ended the command in unknown state {raw}"
        )),
    })
}

/// The worker: takes the jobs in order, each once its dependencies finished, until the client
/// closes.
fn run_worker(shared: &Shared) {
    while let Some(job) = next_job(shared) {
        let failed = job.after.iter().find_map(|d| match d.state() {
            CompletionState::Failed(why) => Some(why),
            _ => None,
        });
        let outcome = match failed {
            Some(why) => CompletionState::Failed(format!("a dependency failed: {why}")),
            None => run(shared, job.work),
        };
        job.done.finish(outcome);
    }
}

/// The first job, once every dependency finished or one failed; `None` once the client closed.
fn next_job(shared: &Shared) -> Option<Job> {
    let mut queue = lock(&shared.queue);
    loop {
        if queue.closed {
            return None;
        }
        let ready = queue.jobs.front().is_some_and(|job| {
            job.after.iter().all(|d| d.is_finished())
                || job
                    .after
                    .iter()
                    .any(|d| matches!(d.state(), CompletionState::Failed(_)))
        });
        if ready {
            return queue.jobs.pop_front();
        }
        queue = wait(&shared.wake, queue);
    }
}

fn run(shared: &Shared, work: Work) -> CompletionState {
    let fd = shared.fd.as_fd();
    let result = match work {
        Work::Sync(mut arg) => {
            // SAFETY: SYNC_BO reads and writes one `SyncBoArg`, which `arg` is.
            unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_SYNC_BO, &mut arg) }
                .map_err(|e| format!("SYNC_BO failed: {e}"))
        }
        Work::Copy(mut arg) => {
            // SAFETY: COPY_BO reads and writes one `CopyBoArg`, which `arg` is.
            unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_COPY_BO, &mut arg) }
                .map_err(|e| format!("COPY_BO failed: {e}"))
        }
        Work::Exec(words) => return run_exec(shared, &words),
    };
    match result {
        Ok(_) => CompletionState::Complete,
        Err(why) => CompletionState::Failed(why),
    }
}

/// Runs one exec buffer: a fresh exec BO holding the packet, EXECBUF, then `poll` until the
/// driver writes a final state into the header. The exec BO goes afterwards.
fn run_exec(shared: &Shared, words: &[u32]) -> CompletionState {
    let fd = shared.fd.as_fd();
    let size = EXEC_BO_BYTES.max(page_size());
    let mut arg = create_bo_arg(size, abi::BO_FLAGS_EXECBUF);
    let bo = match GemHandle::create(fd, &mut arg) {
        Ok(bo) => bo,
        Err(e) => return CompletionState::Failed(format!("creating the exec BO failed: {e}")),
    };
    // Declared after `bo`, so it is unmapped before the BO is closed.
    let memory = match map_bo(fd, bo.handle, size, shared.owner.id, &shared.owner.host) {
        Ok(memory) => memory,
        Err(e) => return CompletionState::Failed(format!("mapping the exec BO failed: {e}")),
    };
    if let Err(e) = memory.write(0, &exec_packet(words)) {
        return CompletionState::Failed(format!("writing the exec BO failed: {e}"));
    }
    let mut exec = execbuf_arg(bo.handle);
    // SAFETY: EXECBUF reads and writes one `ExecbufArg`, which `exec` is.
    if let Err(e) = unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_EXECBUF, &mut exec) } {
        return CompletionState::Failed(format!("EXECBUF failed: {e}"));
    }
    loop {
        let header = match memory.load_u64(0) {
            Ok(word) => word as u32,
            Err(e) => return CompletionState::Failed(format!("reading the exec BO failed: {e}")),
        };
        if let Some(outcome) = exec_outcome(header) {
            return outcome;
        }
        match wait_for_event(shared) {
            Ok(true) => {}
            Ok(false) => return CompletionState::Failed(CLIENT_CLOSED.into()),
            Err(e) => {
                return CompletionState::Failed(format!("polling the render node failed: {e}"));
            }
        }
    }
}

/// One `poll` of the render node for a completion event; `false` when the client closed.
fn wait_for_event(shared: &Shared) -> io::Result<bool> {
    let mut fds = [
        libc::pollfd {
            fd: shared.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
        libc::pollfd {
            fd: shared.stopped.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        },
    ];
    // SAFETY: `fds` is an array of two initialised pollfd that outlives the call.
    let rc = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, EXEC_POLL_MS) };
    if rc < 0 {
        let err = io::Error::last_os_error();
        return if err.kind() == io::ErrorKind::Interrupted {
            Ok(true)
        } else {
            Err(err)
        };
    }
    if fds[1].revents != 0 {
        return Ok(false);
    }
    if fds[0].revents & (libc::POLLERR | libc::POLLNVAL) != 0 {
        return Err(errno(libc::EIO));
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::families::xocl::xclbin::{
        AXLF_HEADER_OFFSET, ArgKind, KernelArg, XclbinBuilder, parse,
    };
    use std::fs;
    use std::os::unix::fs::symlink;

    use std::time::{Duration, Instant};

    const UUID: Guid = Guid::new(0xBD3A_1BD2_4C6E_4F0E, 0x9A0C_1E25_7F2D_0A11);
    const UUID_TEXT: &str = "bd3a1bd2-4c6e-4f0e-9a0c-1e257f2d0a11\n";
    const ENOTTY_TEXT: &str = "os error 25";

    use crate::devices::BudgetKind;
    use crate::devices::scratch::Scratch;

    const U200: &str = "sys/devices/pci0000:64/0000:65:00.1";
    const PCI: &str = "sys/bus/pci/devices";

    /// A U200 user PF (renderD128, as a symlink like real sysfs) and its management PF, a
    /// U250 user PF that is not ready, a non-Xilinx function with a render node, a function
    /// with a malformed vendor file, and a U50 user PF with the fewest attributes.
    fn fake_sysfs() -> Scratch {
        let s = Scratch::new("xocl-sysfs");
        s.write(&format!("{U200}/vendor"), "0x10ee\n");
        s.write(&format!("{U200}/device"), "0x5001\n");
        s.write(
            &format!("{U200}/board_name"),
            "xilinx_u200_gen3x16_xdma_base_2\n",
        );
        s.write(&format!("{U200}/xclbinuuid"), UUID_TEXT);
        s.write(&format!("{U200}/ready"), "1\n");
        s.mkdir(&format!("{U200}/drm/renderD128"));
        s.mkdir(&format!("{U200}/drm/card0"));
        s.mkdir(PCI);
        symlink(
            "../../../devices/pci0000:64/0000:65:00.1",
            s.0.join(PCI).join("0000:65:00.1"),
        )
        .unwrap();
        s.write(&format!("{PCI}/0000:65:00.0/vendor"), "0x10ee\n");
        s.write(&format!("{PCI}/0000:65:00.0/device"), "0x5000\n");

        s.write(&format!("{PCI}/0000:17:00.1/vendor"), "0x10ee\n");
        s.write(&format!("{PCI}/0000:17:00.1/device"), "0x5005\n");
        s.write(&format!("{PCI}/0000:17:00.1/ready"), "0\n");
        s.mkdir(&format!("{PCI}/0000:17:00.1/drm/renderD129"));

        s.write(&format!("{PCI}/0000:3b:00.0/vendor"), "0x1002\n");
        s.write(&format!("{PCI}/0000:3b:00.0/device"), "0x73bf\n");
        s.mkdir(&format!("{PCI}/0000:3b:00.0/drm/renderD130"));

        s.write(&format!("{PCI}/0000:af:00.1/vendor"), "10ee\n");
        s.write(&format!("{PCI}/0000:af:00.1/device"), "0x5001\n");
        s.mkdir(&format!("{PCI}/0000:af:00.1/drm/renderD131"));

        s.write(&format!("{PCI}/0000:d8:00.1/vendor"), "0x10EE\n");
        s.write(&format!("{PCI}/0000:d8:00.1/device"), "0x5021\n");
        s.write(
            &format!("{PCI}/0000:d8:00.1/xclbinuuid"),
            "00000000-0000-0000-0000-000000000000\n",
        );
        s.mkdir(&format!("{PCI}/0000:d8:00.1/drm/renderD132"));
        s
    }

    #[test]
    fn discovery_finds_the_ready_xilinx_user_pfs_in_order() {
        let s = fake_sysfs();
        let devices = discover_devices(&s.roots()).unwrap();
        let descs: Vec<DeviceDesc> = devices.iter().map(|d| d.desc()).collect();
        let dri = s.0.join("dev/dri");
        assert_eq!(
            descs,
            [
                DeviceDesc {
                    path: dri.join("renderD128").to_string_lossy().into_owned(),
                    vendor_id: 0x10EE,
                    device_id: 0x5001,
                    bus_address: Some("0000:65:00.1".parse().unwrap()),
                    board_name: "xilinx_u200_gen3x16_xdma_base_2".into(),
                    loaded: Some(UUID),
                    emulated: false,
                },
                DeviceDesc {
                    path: dri.join("renderD132").to_string_lossy().into_owned(),
                    vendor_id: 0x10EE,
                    device_id: 0x5021,
                    bus_address: Some("0000:d8:00.1".parse().unwrap()),
                    board_name: "unknown".into(),
                    loaded: None,
                    emulated: false,
                },
            ]
        );
    }

    #[test]
    fn default_roots_give_dev_dri_paths() {
        let s = fake_sysfs();
        let roots = LinuxRoots {
            sysfs: s.0.join("sys"),
            dev: LinuxRoots::default().dev,
        };
        let devices = discover_devices(&roots).unwrap();
        assert_eq!(devices[0].desc().path, "/dev/dri/renderD128");
    }

    #[test]
    fn desc_rereads_the_loaded_uuid() {
        let s = fake_sysfs();
        let devices = discover_devices(&s.roots()).unwrap();
        let attr = format!("{U200}/xclbinuuid");
        s.write(&attr, "0000000000000003000000000000000f\n");
        assert_eq!(devices[0].desc().loaded, Some(Guid::new(3, 15)));
        s.write(&attr, "\n");
        assert_eq!(devices[0].desc().loaded, None);
        s.write(&attr, "not a uuid\n");
        assert_eq!(
            devices[0].desc().loaded,
            Some(UUID),
            "falls back to discovery"
        );
        fs::remove_file(s.0.join(&attr)).unwrap();
        assert_eq!(devices[0].desc().loaded, None);
    }

    #[test]
    fn a_malformed_uuid_at_discovery_means_none_loaded() {
        let s = fake_sysfs();
        s.write(&format!("{U200}/xclbinuuid"), "xyz\n");
        let devices = discover_devices(&s.roots()).unwrap();
        assert_eq!(devices.len(), 2);
        assert_eq!(devices[0].desc().loaded, None);
    }

    #[test]
    fn missing_bus_dir_means_no_devices() {
        let s = Scratch::new("xocl-empty");
        assert!(discover_devices(&s.roots()).unwrap().is_empty());
    }

    #[test]
    fn attribute_parsers_are_strict() {
        assert_eq!(render_number("renderD128"), Some(128));
        for bad in ["renderD", "renderD+1", "renderDx", "card0", "controlD64"] {
            assert_eq!(render_number(bad), None, "{bad}");
        }
        for none in ["", "0", "00000000-0000-0000-0000-000000000000"] {
            assert_eq!(parse_xclbinuuid(none), Some(None), "{none:?}");
        }
        assert_eq!(parse_xclbinuuid(UUID_TEXT.trim()), Some(Some(UUID)));
        assert_eq!(
            parse_xclbinuuid("BD3A1BD24C6E4F0E9A0C1E257F2D0A11"),
            Some(Some(UUID))
        );
        for bad in ["bd3a1bd2", "zz3a1bd2-4c6e-4f0e-9a0c-1e257f2d0a11", "1"] {
            assert_eq!(parse_xclbinuuid(bad), None, "{bad}");
        }
    }

    #[test]
    fn opening_a_missing_node_returns_enoent() {
        let s = fake_sysfs();
        let devices = discover_devices(&s.roots()).unwrap();
        let err = devices[0].open(&Owner::unlimited()).err().unwrap();
        assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
    }

    /// The fake tree with a regular file as renderD128, and a client on it.
    fn client_on_a_file() -> (Scratch, LinuxXoclClient, Arc<Budget>) {
        let s = fake_sysfs();
        s.write("dev/dri/renderD128", "");
        let owner = Owner::new(1 << 20, 1 << 20);
        let fd = open_node(&s.0.join("dev/dri/renderD128")).unwrap();
        let client =
            LinuxXoclClient::new(fd, &owner, Some(s.0.join(PCI).join("0000:65:00.1"))).unwrap();
        (s, client, owner.dma)
    }

    /// Puts a BO with `bytes` of host memory in the client's table, as `create_bo` would.
    fn fake_bo(client: &LinuxXoclClient, handle: u32, bytes: u64) {
        let budget = Budget::new(BudgetKind::Dma, 1 << 20);
        let memory = DmaMemory::allocate(bytes, OwnerId::fresh(), &budget, false).unwrap();
        lock(&client.bos).insert(handle, memory);
    }

    fn vadd_packet() -> Vec<u32> {
        StartCu {
            cu_masks: vec![1],
            regmap: abi::vadd::regmap(0x1000, 0x2000, 0x3000, 16),
        }
        .encode()
    }

    fn sync(bo: u32, offset: u64, size: u64) -> Command {
        Command::Sync {
            bo,
            direction: SyncDirection::ToDevice,
            offset,
            size,
        }
    }

    fn wait(done: &Completion) -> CompletionState {
        done.wait(Instant::now() + Duration::from_secs(10))
    }

    fn failed_with(state: CompletionState, needles: &[&str]) {
        let CompletionState::Failed(why) = state else {
            panic!("expected a failure, got {state:?}");
        };
        for needle in needles {
            assert!(why.contains(needle), "{why:?} lacks {needle:?}");
        }
    }

    #[test]
    fn the_device_opens_its_node() {
        let s = fake_sysfs();
        s.write("dev/dri/renderD128", "");
        let devices = discover_devices(&s.roots()).unwrap();
        let client = devices[0].open(&Owner::new(1 << 20, 1 << 20)).unwrap();
        assert_eq!(
            client.reset().unwrap_err().raw_os_error(),
            Some(libc::ENOTTY)
        );
    }

    #[test]
    fn ioctls_on_a_regular_file_fail_with_enotty() {
        let (_s, client, budget) = client_on_a_file();
        let enotty = Some(libc::ENOTTY);
        let image = XclbinBuilder::vadd(UUID, 1, 1).build();
        let parsed = parse(&image).unwrap();
        let err = client.load_xclbin(&image, &parsed).unwrap_err();
        assert_eq!(err.raw_os_error(), enotty);
        assert!(client.loaded_xclbin().is_none());
        let err = client.open_context(UUID, 0, true).unwrap_err();
        assert_eq!(err.raw_os_error(), enotty);
        let err = client.close_context(UUID, 0).unwrap_err();
        assert_eq!(err.raw_os_error(), enotty);
        for bank in [Some(0), None] {
            let err = client.create_bo(4096, bank).unwrap_err();
            assert_eq!(err.raw_os_error(), enotty);
        }
        assert_eq!(budget.used(), 0);
        assert_eq!(client.reset().unwrap_err().raw_os_error(), enotty);

        fake_bo(&client, 7, 8192);
        assert_eq!(client.free_bo(7).unwrap_err().raw_os_error(), enotty);
        assert!(
            lock(&client.bos).contains_key(&7),
            "kept after a failed close"
        );

        let exec = client.submit(Command::Exec(vadd_packet()), vec![]).unwrap();
        failed_with(wait(&exec), &["creating the exec BO failed", ENOTTY_TEXT]);
        let synced = client.submit(sync(7, 0, 8192), vec![]).unwrap();
        failed_with(wait(&synced), &["SYNC_BO failed", ENOTTY_TEXT]);
        let copy = Command::Copy {
            dst: 7,
            dst_offset: 4096,
            src: 7,
            src_offset: 0,
            size: 4096,
        };
        let copied = client.submit(copy, vec![]).unwrap();
        failed_with(wait(&copied), &["COPY_BO failed", ENOTTY_TEXT]);
    }

    #[test]
    fn submit_checks_commands_before_queueing_them() {
        let (_s, client, _budget) = client_on_a_file();
        let kind = |command: Command| client.submit(command, vec![]).unwrap_err().kind();
        let errno_of =
            |command: Command| client.submit(command, vec![]).unwrap_err().raw_os_error();
        fake_bo(&client, 3, 4096);
        assert_eq!(errno_of(sync(4, 0, 1)), Some(libc::ENOENT));
        assert_eq!(kind(sync(3, 4000, 100)), io::ErrorKind::InvalidInput);
        assert_eq!(kind(sync(3, u64::MAX, 2)), io::ErrorKind::InvalidInput);
        let copy = |dst, src, size| Command::Copy {
            dst,
            dst_offset: 0,
            src,
            src_offset: 0,
            size,
        };
        assert_eq!(errno_of(copy(3, 4, 16)), Some(libc::ENOENT));
        assert_eq!(errno_of(copy(4, 3, 16)), Some(libc::ENOENT));
        assert_eq!(kind(copy(3, 3, 8192)), io::ErrorKind::InvalidInput);

        assert_eq!(kind(Command::Exec(vec![])), io::ErrorKind::InvalidInput);
        let mut no_cu = vadd_packet();
        no_cu[1] = 0;
        let err = client.submit(Command::Exec(no_cu), vec![]).unwrap_err();
        assert!(err.to_string().contains("bad ERT packet"), "{err}");
        let key_val = ErtHeader {
            state: 1,
            custom: 0,
            count: 2,
            opcode: ErtOpcode::StartKeyVal as u8,
            kind: 3,
        };
        let err = client
            .submit(Command::Exec(vec![key_val.encode(), 1, 0x10]), vec![])
            .unwrap_err();
        assert!(err.to_string().contains("opcode 15"), "{err}");
        let configure = ErtHeader {
            state: 1,
            custom: 0,
            count: 2,
            opcode: ErtOpcode::Configure as u8,
            kind: 2,
        }
        .encode();
        assert_eq!(
            kind(Command::Exec(vec![configure, 0])),
            io::ErrorKind::InvalidInput
        );
        let passed = client
            .submit(Command::Exec(vec![configure, 0, 0]), vec![])
            .unwrap();
        failed_with(wait(&passed), &["exec BO", ENOTTY_TEXT]);
        let huge = StartCu {
            cu_masks: vec![1],
            regmap: vec![0; 1024],
        }
        .encode();
        let err = client.submit(Command::Exec(huge), vec![]).unwrap_err();
        assert!(err.to_string().contains("at most 1024 words"), "{err}");

        let deps = (0..=abi::MAX_DEPENT_CMD_BO)
            .map(|_| Arc::new(Completion::default()))
            .collect();
        let err = client.submit(sync(3, 0, 1), deps).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
    }

    #[test]
    fn commands_run_in_order_once_their_dependencies_finish() {
        let (_s, client, _budget) = client_on_a_file();
        fake_bo(&client, 1, 4096);
        let gate = Arc::new(Completion::default());
        let first = client.submit(sync(1, 0, 4096), vec![gate.clone()]).unwrap();
        let second = client.submit(sync(1, 0, 4096), vec![]).unwrap();
        std::thread::sleep(Duration::from_millis(50));
        assert!(!first.is_finished(), "waits for its dependency");
        assert!(!second.is_finished(), "waits behind the first");
        gate.finish(CompletionState::Complete);
        failed_with(wait(&first), &["SYNC_BO failed"]);
        failed_with(wait(&second), &["SYNC_BO failed"]);

        let pending = Arc::new(Completion::default());
        let broken = Arc::new(Completion::with_state(CompletionState::Failed(
            "boom".into(),
        )));
        let doomed = client
            .submit(sync(1, 0, 4096), vec![pending.clone(), broken])
            .unwrap();
        failed_with(wait(&doomed), &["a dependency failed: boom"]);
        let late = Arc::new(Completion::default());
        let after_late = client.submit(sync(1, 0, 1), vec![late.clone()]).unwrap();
        late.finish(CompletionState::Failed("late".into()));
        failed_with(wait(&after_late), &["a dependency failed: late"]);
    }

    #[test]
    fn dropping_the_client_fails_what_has_not_started() {
        let (_s, client, _budget) = client_on_a_file();
        fake_bo(&client, 1, 4096);
        let gate = Arc::new(Completion::default());
        let blocked = client.submit(sync(1, 0, 4096), vec![gate.clone()]).unwrap();
        let behind = client.submit(sync(1, 0, 4096), vec![]).unwrap();
        let shared = Arc::downgrade(&client.shared);
        drop(client);
        assert_eq!(
            blocked.state(),
            CompletionState::Failed(CLIENT_CLOSED.into())
        );
        assert_eq!(
            behind.state(),
            CompletionState::Failed(CLIENT_CLOSED.into())
        );
        assert_eq!(
            shared.strong_count(),
            0,
            "the worker ended and the fd closed"
        );
        gate.finish(CompletionState::Complete);
    }

    #[test]
    fn closing_the_client_wakes_a_waiting_worker() {
        let (_s, client, _budget) = client_on_a_file();
        let shared = client.shared.clone();
        assert!(
            wait_for_event(&shared).unwrap(),
            "a regular file always reports an event"
        );
        drop(client);
        assert!(!wait_for_event(&shared).unwrap(), "the close is seen first");
    }

    #[test]
    fn loaded_xclbin_follows_the_card() {
        let (s, client, _budget) = client_on_a_file();
        let image = XclbinBuilder::vadd(UUID, 1, 1).build();
        *lock(&client.loaded) = Some(Arc::new(parse(&image).unwrap()));
        assert_eq!(client.loaded_xclbin().unwrap().uuid, UUID);
        let attr = format!("{U200}/xclbinuuid");
        s.write(&attr, "0000000000000003000000000000000f\n");
        assert!(
            client.loaded_xclbin().is_none(),
            "another xclbin replaced it"
        );
        fs::remove_file(s.0.join(&attr)).unwrap();
        assert_eq!(client.loaded_xclbin().unwrap().uuid, UUID, "unknown: ours");
    }

    #[test]
    fn hot_reset_without_root_says_so() {
        for code in [libc::EPERM, libc::EACCES] {
            let err = reset_error(io::Error::from_raw_os_error(code));
            assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
            assert!(err.to_string().contains("only root"), "{err}");
        }
        let err = reset_error(io::Error::from_raw_os_error(libc::ENOTTY));
        assert_eq!(err.raw_os_error(), Some(libc::ENOTTY));
    }

    fn field(blob: &[u8], at: usize) -> u32 {
        u32::from_ne_bytes(blob[at..at + 4].try_into().unwrap())
    }

    fn name(blob: &[u8], at: usize) -> &[u8] {
        let field = &blob[at..at + INFO_NAME_LEN];
        let end = field.iter().position(|&b| b == 0).unwrap();
        assert!(field[end..].iter().all(|&b| b == 0), "NUL-padded");
        &field[..end]
    }

    #[test]
    fn kernel_info_blob_of_vadd_has_the_driver_layout() {
        let image = XclbinBuilder::vadd(UUID, 2, 1).build();
        let parsed = parse(&image).unwrap();
        let blob = kernel_info_blob(&parsed.kernels).unwrap();
        assert_eq!(blob.len(), 76 + 4 * 76);
        assert_eq!(name(&blob, 0), b"vadd");
        assert_eq!(field(&blob, 64), 0x1_0000, "range");
        assert_eq!(field(&blob, 68), 4, "anums");
        assert_eq!(field(&blob, 72), 0, "features");
        let expected: [(&[u8], u32, u32); 4] = [
            (b"in1", 0x10, 8),
            (b"in2", 0x1C, 8),
            (b"out_r", 0x28, 8),
            (b"size", 0x34, 4),
        ];
        for (i, (arg, offset, size)) in expected.into_iter().enumerate() {
            let at = 76 + 76 * i;
            assert_eq!(name(&blob, at), arg);
            assert_eq!(field(&blob, at + 64), offset, "{i}: offset");
            assert_eq!(field(&blob, at + 68), size, "{i}: size");
            assert_eq!(field(&blob, at + 72), 0, "{i}: dir");
        }
        assert!(kernel_info_blob(&[]).unwrap().is_empty());
    }

    #[test]
    fn kernel_info_blob_checks_names_and_sizes_the_range() {
        let kernel = |name: &str, arg: &str, offset: u32| KernelMeta {
            name: name.into(),
            args: vec![KernelArg {
                name: arg.into(),
                index: 0,
                offset,
                size: 8,
                kind: ArgKind::Global,
            }],
        };
        let longest = "k".repeat(63);
        let blob =
            kernel_info_blob(&[kernel(&longest, "a", 0x10), kernel("b", "x", 0x1_0000)]).unwrap();
        assert_eq!(blob.len(), 2 * (76 + 76));
        assert_eq!(name(&blob, 0), longest.as_bytes());
        assert_eq!(
            field(&blob, 152 + 64),
            0x2_0000,
            "range covers the argument"
        );
        for (k, a) in [("k".repeat(64), "a".to_owned()), ("k".into(), "a\0".into())] {
            let err = kernel_info_blob(&[kernel(&k, &a, 0x10)]).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
        }
    }

    #[test]
    fn argument_structs_are_built_from_the_inputs() {
        assert_eq!(
            create_bo_arg(8192, bo_flags(Some(3)).unwrap()),
            CreateBoArg {
                size: 8192,
                handle: 0,
                flags: 3,
                kind: 0,
                pad: 0
            }
        );
        assert_eq!(bo_flags(None).unwrap(), abi::BO_FLAGS_HOST_ONLY);
        assert_eq!(bo_flags(Some(0xFFFF)).unwrap(), 0xFFFF);
        assert!(bo_flags(Some(0x1_0000)).is_err());
        assert_eq!(create_bo_arg(4096, abi::BO_FLAGS_EXECBUF).flags, 1 << 31);
        assert_eq!(info_bo_arg(5).handle, 5);
        assert_eq!(
            map_bo_arg(5),
            MapBoArg {
                handle: 5,
                pad: 0,
                offset: 0
            }
        );
        assert_eq!(gem_close_arg(5), GemCloseArg { handle: 5, pad: 0 });

        let image = XclbinBuilder::vadd(UUID, 1, 1).build();
        let at = AXLF_HEADER_OFFSET + 112;
        assert_eq!(
            uuid_bytes(UUID),
            image[at..at + 16],
            "as the xclbin stores it"
        );
        assert_eq!(parse(&image).unwrap().uuid, UUID);
        assert_eq!(
            ctx_arg(abi::CTX_OP_ALLOC_CTX, UUID, 2, true),
            CtxArg {
                op: 0,
                xclbin_id: [
                    0xBD, 0x3A, 0x1B, 0xD2, 0x4C, 0x6E, 0x4F, 0x0E, 0x9A, 0x0C, 0x1E, 0x25, 0x7F,
                    0x2D, 0x0A, 0x11
                ],
                cu_index: 2,
                flags: 1,
                handle: 0
            }
        );
        let free = ctx_arg(abi::CTX_OP_FREE_CTX, UUID, abi::CTX_VIRT_CU_INDEX, false);
        assert_eq!((free.op, free.cu_index, free.flags), (1, u32::MAX, 0));

        assert_eq!(
            sync_bo_arg(5, SyncDirection::FromDevice, 64, 128),
            SyncBoArg {
                handle: 5,
                flags: 0,
                size: 128,
                offset: 64,
                dir: 1,
                pad: 0
            }
        );
        assert_eq!(sync_bo_arg(5, SyncDirection::ToDevice, 0, 1).dir, 0);
        assert_eq!(
            copy_bo_arg(1, 16, 2, 32, 64),
            CopyBoArg {
                dst_handle: 1,
                src_handle: 2,
                size: 64,
                dst_offset: 16,
                src_offset: 32
            }
        );
        assert_eq!(
            execbuf_arg(9),
            ExecbufArg {
                ctx_id: 0,
                exec_bo_handle: 9,
                deps: [0; 8]
            }
        );

        let blob = [1u8, 2, 3];
        let axlf = axlf_arg(&image, &blob).unwrap();
        assert_eq!(
            axlf,
            AxlfArg {
                xclbin: image.as_ptr() as u64,
                ksize: 3,
                pad0: 0,
                kernels: blob.as_ptr() as u64,
                kds_cfg: abi::KdsConfig::default(),
                flags: 0,
                pad1: 0
            }
        );
    }

    #[test]
    fn exec_bo_headers_decode_to_outcomes() {
        let rest = 0x3000_F000;
        for pending in 0..4 {
            assert_eq!(exec_outcome(rest | pending), None, "{pending}");
        }
        assert_eq!(exec_outcome(rest | 4), Some(CompletionState::Complete));
        for (raw, state) in [
            (5, "Error"),
            (6, "Abort"),
            (7, "Submitted"),
            (8, "Timeout"),
            (9, "NoResponse"),
            (10, "SkError"),
            (11, "SkCrashed"),
        ] {
            failed_with(
                exec_outcome(rest | raw).unwrap(),
                &[&format!("state {state} ({raw})")],
            );
        }
        failed_with(exec_outcome(rest | 12).unwrap(), &["unknown state 12"]);
    }

    #[test]
    fn exec_packets_are_written_with_state_new() {
        let mut words = vadd_packet();
        words[0] = (words[0] & !0xF) | ErtState::Completed as u32;
        let bytes = exec_packet(&words);
        assert_eq!(bytes.len(), words.len() * 4);
        let back: Vec<u32> = bytes
            .as_chunks::<4>()
            .0
            .iter()
            .map(|c| u32::from_ne_bytes(*c))
            .collect();
        assert_eq!(back[0], 0x3000_F001);
        assert_eq!(back[1..], words[1..]);
        assert_eq!(exec_outcome(back[0]), None);
    }

    #[test]
    fn everything_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<LinuxXoclDevice>();
        check::<LinuxXoclClient>();
    }
}
