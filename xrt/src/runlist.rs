//! Run lists (`xrt::runlist`, XRT's experimental API): runs of one device's loaded xclbin,
//! executed in the order they were added. An execute hands the runs to the plugin on a queue
//! of the list's own in calls of up to `LAUNCHES_PER_BATCH` (the library's batched launches),
//! so a list of many small runs costs one call into the plugin per batch, not one each. Each
//! run waits for the one before it, and a failed run fails the runs after it, so the last
//! run's event says whether the whole list completed.
//!
//! A run belongs to at most one list, and a listed run is started only by its list; a list
//! takes no runs, and cannot be reset or executed again, while it executes: from its execute
//! until a wait or a state query sees it end (XRT's header tells programs to wait() first), so
//! that what a program may call does not depend on how fast the card was. Dropping a list
//! (its last handle closed) frees its runs for other lists without waiting for them, as XRT's
//! destructor does.

use std::ffi::{c_int, c_uint, c_void};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use accelhost::{Arg, Event, EventStatus, Guid, Queue};
use accelhost_door::handles::Object;

use crate::device::{Device, read_uuid};
use crate::error::{XrtResult, answer, failed, handle, refuse, status};
use crate::handles::{close, of, publish};
use crate::run::{COMPLETED, ERROR, NEW, Run, lock, state_of, wait_for};

/// Runs of one xclbin on one device, executed together.
pub struct Runlist {
    device: Arc<Device>,
    /// The xclbin of the hardware context the list was made in.
    uuid: Guid,
    /// Where every execute goes: one queue, so the runs keep their order.
    queue: Queue,
    state: Mutex<Listed>,
}

/// A list's runs and its latest execute.
#[derive(Default)]
struct Listed {
    runs: Vec<Arc<Run>>,
    /// The last run's event of the latest execute; `None` before the first, after a reset,
    /// and after an execute of no runs.
    last: Option<Event>,
    /// How many executes there were: a wait marks the end of its own execute only.
    executes: u64,
    /// Whether a wait or a state query saw the latest execute end.
    end_seen: bool,
}

impl Listed {
    fn executing(&self) -> bool {
        self.last.is_some() && !self.end_seen
    }

    fn refuse_while_executing(&self, call: &str) -> XrtResult<()> {
        if self.executing() {
            return Err(refuse(
                call,
                libc::EBUSY,
                "the runlist is executing: wait for it first",
            ));
        }
        Ok(())
    }

    /// Gives the runs back to their programs, for other lists or starts of their own.
    fn release_runs(&mut self) {
        for run in self.runs.drain(..) {
            run.listed.store(false, Ordering::Release);
        }
    }
}

impl Object for Runlist {
    const KIND: &'static str = "runlist";
}

impl Drop for Runlist {
    fn drop(&mut self) {
        lock(&self.state).release_runs();
    }
}

impl Runlist {
    fn of(call: &str, list: *mut c_void) -> XrtResult<Arc<Runlist>> {
        of::<Runlist>(call, list)
    }

    fn add(&self, call: &str, run: Arc<Run>) -> XrtResult<()> {
        let mut state = lock(&self.state);
        state.refuse_while_executing(call)?;
        if !Arc::ptr_eq(&run.kernel.device, &self.device) {
            return Err(refuse(
                call,
                libc::EINVAL,
                "the run's kernel is of another device than the runlist's hw_context",
            ));
        }
        let uuid = run.kernel.xclbin_uuid();
        if uuid != self.uuid {
            return Err(refuse(
                call,
                libc::EINVAL,
                format!(
                    "the run's kernel is of xclbin {uuid}, the runlist's hw_context of {}",
                    self.uuid
                ),
            ));
        }
        if run.listed.swap(true, Ordering::AcqRel) {
            return Err(refuse(call, libc::EBUSY, "the run is already in a runlist"));
        }
        state.runs.push(run);
        Ok(())
    }

    fn execute(&self, call: &str) -> XrtResult<()> {
        let mut state = lock(&self.state);
        state.refuse_while_executing(call)?;
        state.last = None;
        state.executes += 1;
        state.end_seen = false;
        if state.runs.is_empty() {
            return Ok(());
        }
        let set: Vec<_> = state.runs.iter().map(|run| run.args_set()).collect();
        let mut args: Vec<Vec<Arg<'_>>> = Vec::with_capacity(set.len());
        for (index, (run, set)) in state.runs.iter().zip(&set).enumerate() {
            let checked = run.launch_args(call, set).map_err(|refused| {
                refuse(
                    call,
                    refused.0,
                    format!("run {index} of the list was refused"),
                )
            })?;
            args.push(checked);
        }
        let launches: Vec<(&accelhost::Kernel, &[Arg<'_>])> = state
            .runs
            .iter()
            .zip(&args)
            .map(|(run, args)| (&run.kernel.kernel, &args[..]))
            .collect();
        match self.queue.enqueue_launches(&launches) {
            Ok(last) => {
                state.last = Some(last);
                Ok(())
            }
            Err(err) => {
                // The runs after a refused one were handed on all the same: the list is not
                // executing once this returns.
                let _ = self.queue.finish();
                Err(failed(call, &err))
            }
        }
    }

    /// Waits for the latest execute: `ERT_CMD_STATE_COMPLETED` (also for a list never
    /// executed or of no runs), or `ERT_CMD_STATE_TIMEOUT`; a failed run is the error, with
    /// the list's last run in `failed` (the one whose event told).
    fn wait(
        &self,
        call: &str,
        timeout: Option<Duration>,
        failed: &mut *mut c_void,
    ) -> XrtResult<c_int> {
        let (last, run, execute) = {
            let state = lock(&self.state);
            (
                state.last.clone(),
                state.runs.last().map(|run| run.handle()),
                state.executes,
            )
        };
        let Some(last) = last else {
            return Ok(COMPLETED);
        };
        let waited = wait_for(call, &last, timeout);
        if waited.is_err() {
            *failed = run.unwrap_or(std::ptr::null_mut());
        }
        if last.status() != EventStatus::Pending {
            let mut state = lock(&self.state);
            if state.executes == execute {
                state.end_seen = true;
            }
        }
        waited
    }

    fn state(&self) -> c_int {
        let mut state = lock(&self.state);
        if let Some(last) = &state.last
            && last.status() != EventStatus::Pending
        {
            state.end_seen = true;
        }
        match (&state.last, state.runs.is_empty()) {
            (Some(last), _) => state_of(Some(last)),
            (None, true) => COMPLETED,
            (None, false) => NEW,
        }
    }

    fn reset(&self, call: &str) -> XrtResult<()> {
        let mut state = lock(&self.state);
        state.refuse_while_executing(call)?;
        state.release_runs();
        state.last = None;
        Ok(())
    }
}

/// A runlist for the hardware context of `device` running the xclbin `uuid` (`ENOENT` when
/// it runs another, or none).
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_runlist_open(device: *mut c_void, uuid: *const u8) -> *mut c_void {
    const CALL: &str = "xrt::runlist";
    handle(CALL, || {
        let device = Device::of(CALL, device)?;
        let uuid = read_uuid(CALL, uuid)?;
        device.running(CALL, uuid)?;
        let queue = device
            .handle
            .create_queue()
            .map_err(|err| failed(CALL, &err))?;
        publish(
            CALL,
            Arc::new(Runlist {
                device,
                uuid,
                queue,
                state: Mutex::default(),
            }),
        )
    })
}

/// Adds `run` at the end of the list: `EBUSY` while the list executes or when the run is in
/// a list already, `EINVAL` for a run of another device or xclbin.
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_runlist_add(list: *mut c_void, run: *mut c_void) -> c_int {
    const CALL: &str = "xrt::runlist::add";
    status(CALL, || {
        Runlist::of(CALL, list)?.add(CALL, Run::of(CALL, run)?)
    })
}

/// Hands every run of the list to the plugin, in order, 256 to a call; a list of no runs
/// does nothing. `EBUSY` while the last execute runs (until a wait or a state query saw it
/// end); a refused run is the error (the runs handed on before it have finished when this
/// returns).
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_runlist_execute(list: *mut c_void) -> c_int {
    const CALL: &str = "xrt::runlist::execute";
    status(CALL, || Runlist::of(CALL, list)?.execute(CALL))
}

/// Waits at most `timeout_ms` (0: no limit) for the latest execute:
/// `ERT_CMD_STATE_COMPLETED` or `ERT_CMD_STATE_TIMEOUT`, else `ERT_CMD_STATE_ERROR` with
/// `errno` set, the reason on stderr and the list's last run in `*failed` (when not NULL).
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_runlist_wait(
    list: *mut c_void,
    timeout_ms: c_uint,
    failed: *mut *mut c_void,
) -> c_int {
    const CALL: &str = "xrt::runlist::wait";
    let timeout = (timeout_ms > 0).then(|| Duration::from_millis(timeout_ms.into()));
    let mut failed_run = std::ptr::null_mut();
    let state = answer(CALL, ERROR, || {
        Runlist::of(CALL, list)?.wait(CALL, timeout, &mut failed_run)
    });
    if !failed.is_null() {
        // SAFETY: the caller passes NULL or a place for one handle.
        unsafe { failed.write(failed_run) };
    }
    state
}

/// The list's state without waiting: `ERT_CMD_STATE_COMPLETED` for a list of no runs,
/// `ERT_CMD_STATE_NEW` for one never executed, else its last run's.
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_runlist_state(list: *mut c_void) -> c_int {
    const CALL: &str = "xrt::runlist::state";
    answer(CALL, ERROR, || Ok(Runlist::of(CALL, list)?.state()))
}

/// Empties the list (its runs may join other lists, or be started on their own): `EBUSY`
/// while it executes (until a wait or a state query saw it end).
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_runlist_reset(list: *mut c_void) -> c_int {
    const CALL: &str = "xrt::runlist::reset";
    status(CALL, || Runlist::of(CALL, list)?.reset(CALL))
}

/// Ends the list's handle; its runs are freed for other lists without waiting for them.
#[unsafe(no_mangle)]
pub extern "C" fn accelhost_xrt_runlist_close(list: *mut c_void) -> c_int {
    const CALL: &str = "xrt::runlist";
    status(CALL, || close::<Runlist>(CALL, list))
}
