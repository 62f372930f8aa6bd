//! The client's worker: runs its queued commands in submission order, each once its
//! dependencies finished, and waits on the render node for exec buffers to complete.

use std::collections::VecDeque;
use std::io::{self, PipeReader};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::{Arc, Condvar, Mutex};

use super::bo::{GemHandle, map_bo};
use super::layout::{EXEC_BO_BYTES, create_bo_arg, exec_outcome, exec_packet, execbuf_arg};
use crate::devices::ioctl::ioctl_ptr;
use crate::devices::{Charge, Completion, CompletionState, Owner, errno, lock, page_size, wait};
use crate::families::xocl::abi::{self, CopyBoArg, SyncBoArg};

/// What a command's completion says when the client closed the device before it ran.
pub(super) const CLIENT_CLOSED: &str = "the client closed the device";

/// How long one `poll` of the render node waits for a completion event.
pub(super) const EXEC_POLL_MS: libc::c_int = 1000;

/// What the client and its worker share.
pub(super) struct Shared {
    pub(super) fd: OwnedFd,
    /// Queued commands and their exec BOs are charged to its host budget.
    pub(super) owner: Owner,
    pub(super) queue: Mutex<Queue>,
    /// Wakes the worker: a submit, a finished dependency, the client closing.
    pub(super) wake: Condvar,
    /// Readable (hung up) once the client closes.
    pub(super) stopped: PipeReader,
}

#[derive(Default)]
pub(super) struct Queue {
    pub(super) jobs: VecDeque<Job>,
    pub(super) closed: bool,
}

/// A submitted command, checked and turned into its ioctl argument.
pub(super) struct Job {
    pub(super) work: Work,
    pub(super) after: Vec<Arc<Completion>>,
    pub(super) done: Arc<Completion>,
    pub(super) _charge: Charge,
}

pub(super) enum Work {
    Sync(SyncBoArg),
    Copy(CopyBoArg),
    Exec(Vec<u32>),
}

/// The worker: takes the jobs in order, each once its dependencies finished, until the client
/// closes.
pub(super) fn run_worker(shared: &Shared) {
    while let Some(job) = next_job(shared) {
        let failed = job.after.iter().find_map(|d| match d.state() {
            CompletionState::Failed(why) => Some(why),
            _ => None,
        });
        let outcome = match failed {
            Some(why) => CompletionState::after_failed_dependency(&why),
            None => run(shared, job.work),
        };
        job.done.finish(outcome);
    }
}

/// The first job, once every dependency finished or one failed; `None` once the client closed.
pub(super) fn next_job(shared: &Shared) -> Option<Job> {
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

pub(super) fn run(shared: &Shared, work: Work) -> CompletionState {
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
        Err(why) => CompletionState::Failed(why.into()),
    }
}

/// Runs one exec buffer: a fresh exec BO holding the packet, EXECBUF, then `poll` until the
/// driver writes a final state into the header. The exec BO goes afterwards.
pub(super) fn run_exec(shared: &Shared, words: &[u32]) -> CompletionState {
    let fd = shared.fd.as_fd();
    let size = EXEC_BO_BYTES.max(page_size());
    let mut arg = create_bo_arg(size, abi::BO_FLAGS_EXECBUF);
    let bo = match GemHandle::create(fd, &mut arg) {
        Ok(bo) => bo,
        Err(e) => {
            return CompletionState::Failed(format!("creating the exec BO failed: {e}").into());
        }
    };
    // Declared after `bo`, so it is unmapped before the BO is closed.
    let memory = match map_bo(fd, bo.handle, size, shared.owner.id, &shared.owner.host) {
        Ok(memory) => memory,
        Err(e) => {
            return CompletionState::Failed(format!("mapping the exec BO failed: {e}").into());
        }
    };
    if let Err(e) = memory.write(0, &exec_packet(words)) {
        return CompletionState::Failed(format!("writing the exec BO failed: {e}").into());
    }
    let mut exec = execbuf_arg(bo.handle);
    // SAFETY: EXECBUF reads and writes one `ExecbufArg`, which `exec` is.
    if let Err(e) = unsafe { ioctl_ptr(fd, abi::DRM_IOCTL_XOCL_EXECBUF, &mut exec) } {
        return CompletionState::Failed(format!("EXECBUF failed: {e}").into());
    }
    loop {
        let header = match memory.load_u64(0) {
            Ok(word) => word as u32,
            Err(e) => {
                return CompletionState::Failed(format!("reading the exec BO failed: {e}").into());
            }
        };
        if let Some(outcome) = exec_outcome(header) {
            return outcome;
        }
        match wait_for_event(shared) {
            Ok(true) => {}
            Ok(false) => return CompletionState::Failed(CLIENT_CLOSED.into()),
            Err(e) => {
                return CompletionState::Failed(
                    format!("polling the render node failed: {e}").into(),
                );
            }
        }
    }
}

/// One `poll` of the render node for a completion event; `false` when the client closed.
pub(super) fn wait_for_event(shared: &Shared) -> io::Result<bool> {
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
