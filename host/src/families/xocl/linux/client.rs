//! An open render node as a KDS client ([`LinuxXoclClient`]): buffer objects, xclbin loads,
//! contexts and reset through the driver's ioctls, commands checked and queued for the worker.

use std::collections::HashMap;
use std::io::{self, PipeWriter};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::PathBuf;
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use super::bo::{GemHandle, gem_close, map_bo};
use super::layout::{
    axlf_arg, bo_flags, check_exec, copy_bo_arg, create_bo_arg, ctx_arg, info_bo_arg, invalid,
    kernel_info_blob, read_loaded, sync_bo_arg,
};
use super::worker::{CLIENT_CLOSED, Job, Queue, Shared, Work, run_worker};
use crate::devices::ioctl::{ioctl_ptr, ioctl_val};
use crate::devices::{Completion, CompletionState, DmaMemory, Owner, errno, lock, page_size};
use crate::families::xocl::abi;
use crate::families::xocl::xclbin::Xclbin;
use crate::families::xocl::{BoInfo, Command, LoadedXclbin, XoclClient};
use crate::types::Guid;

/// An open render node: one KDS client. A worker thread runs its commands in submission
/// order; dropping the client fails what has not started, stops the worker and closes the
/// fd, on which the kernel frees the client's contexts and BOs. BO host mappings stay valid
/// until the last [`DmaMemory`] over them goes.
pub struct LinuxXoclClient {
    pub(super) shared: Arc<Shared>,
    /// The BOs' host mappings are charged to its DMA budget.
    pub(super) owner: Owner,
    /// The PCI function in sysfs, to check which xclbin the card holds.
    pub(super) function: Option<PathBuf>,
    pub(super) loaded: Mutex<Option<Arc<Xclbin>>>,
    /// The live BOs by GEM handle, each with its host mapping.
    pub(super) bos: Mutex<HashMap<u32, Arc<DmaMemory>>>,
    /// Dropping it wakes a worker waiting on a running exec buffer.
    pub(super) stop: Option<PipeWriter>,
    pub(super) worker: Option<JoinHandle<()>>,
}

impl LinuxXoclClient {
    pub(super) fn new(fd: OwnedFd, owner: &Owner, function: Option<PathBuf>) -> io::Result<Self> {
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

    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.shared.fd.as_fd()
    }

    /// Checks that `[offset, offset + size)` lies in the live BO `handle`.
    pub(super) fn check_range(
        &self,
        what: &str,
        handle: u32,
        offset: u64,
        size: u64,
    ) -> io::Result<()> {
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

    pub(super) fn ctx(&self, op: u32, uuid: Guid, cu: u32, exclusive: bool) -> io::Result<()> {
        let mut arg = ctx_arg(op, uuid, cu, exclusive);
        // SAFETY: CTX reads and writes one `CtxArg`, which `arg` is.
        unsafe { ioctl_ptr(self.fd(), abi::DRM_IOCTL_XOCL_CTX, &mut arg) }.map(drop)
    }
}

impl XoclClient for LinuxXoclClient {
    fn load_xclbin(&self, image: &[u8], parsed: &Xclbin) -> io::Result<u32> {
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
        Ok(0)
    }

    fn loaded_xclbin(&self) -> Option<LoadedXclbin> {
        let ours = lock(&self.loaded).clone()?;
        let replaced = self
            .function
            .as_deref()
            .and_then(|function| read_loaded(function).ok().flatten())
            .is_some_and(|on_card| on_card != ours.uuid);
        (!replaced).then_some(LoadedXclbin {
            xclbin: ours,
            first_cu: 0,
        })
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
        let charge = crate::families::xocl::charge_command(&self.owner.host, words)?;
        let wakeups = crate::families::xocl::charge_wakeups(&self.owner.host, after.len())?;
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
pub(super) fn reset_error(err: io::Error) -> io::Error {
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
