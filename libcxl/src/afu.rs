//! The AFU calls: names, open (by device node or from an enumerated handle), free, the
//! context's fd and process element, and attach (START_WORK).

use std::ffi::{c_char, c_int, c_void};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use accelhost::cxl::ContextKind;

use crate::context::{AfuHandle, Opened, Scope, afu_handle, next_afu};
use crate::error::{CxlResult, answer, failed, refuse, status, step};
use crate::event_queue::Events;
use crate::handles::{self, lock};
use crate::state::{self, has_node, node_index};
use crate::work::StartWork;

/// Opens a context on the `kind` node of AFU `index`.
fn open(call: &str, index: usize, kind: ContextKind) -> CxlResult<*mut c_void> {
    let listed = &state::afus(call)?[index];
    let node = listed.nodes[node_index(kind)].to_string_lossy();
    let context = listed
        .afu
        .open(kind)
        .map_err(|err| failed(call, &format!("opening /dev/cxl/{node}"), &err))?;
    let events = Events::new().map_err(|err| failed(call, "creating the event fd", &err))?;
    handles::publish(
        call,
        Arc::new(AfuHandle {
            position: AtomicUsize::new(index),
            scope: None,
            opened: Some(Opened {
                kind,
                context: Arc::new(context),
                events,
                mapping: Mutex::new(None),
                attached_by: Mutex::new(None),
            }),
        }),
    )
}

pub extern "C" fn cxl_afu_next(afu: *mut c_void) -> *mut c_void {
    step("cxl_afu_next", || next_afu("cxl_afu_next", Scope::All, afu))
}

pub extern "C" fn cxl_afu_dev_name(afu: *mut c_void) -> *mut c_char {
    let call = "cxl_afu_dev_name";
    answer(call, std::ptr::null_mut(), || {
        let handle = afu_handle(call, afu)?;
        let listed = handle.listed(call)?;
        let name = match &handle.opened {
            Some(opened) => &listed.nodes[node_index(opened.kind)],
            None => &listed.name,
        };
        Ok(name.as_ptr().cast_mut())
    })
}

pub extern "C" fn cxl_afu_open_dev(path: *const c_char) -> *mut c_void {
    let call = "cxl_afu_open_dev";
    answer(call, std::ptr::null_mut(), || {
        // SAFETY: the caller gives NULL or a NUL-terminated path.
        let path = unsafe { accelhost_door::c::c_str_lossy(path, "the path") }
            .map_err(|e| refuse(call, libc::EINVAL, e))?;
        let (index, kind) = state::find_node(call, &path)?;
        open(call, index, kind)
    })
}

pub extern "C" fn cxl_afu_open_h(afu: *mut c_void, view: c_int) -> *mut c_void {
    let call = "cxl_afu_open_h";
    answer(call, std::ptr::null_mut(), || {
        let handle = afu_handle(call, afu)?;
        let kind = match view {
            0 => ContextKind::Dedicated,
            1 => ContextKind::Master,
            2 => ContextKind::Slave,
            _ => {
                return Err(refuse(
                    call,
                    libc::EINVAL,
                    format!("view {view} is none of CXL_VIEW_DEDICATED, _MASTER, _SLAVE"),
                ));
            }
        };
        let listed = handle.listed(call)?;
        if !has_node(listed.afu.desc().mode, kind) {
            return Err(refuse(
                call,
                libc::ENODEV,
                format!(
                    "{} has no /dev/cxl/{} node: its mode is {:?}",
                    listed.name.to_string_lossy(),
                    listed.nodes[node_index(kind)].to_string_lossy(),
                    listed.afu.desc().mode
                ),
            ));
        }
        open(call, handle.position.load(Ordering::Acquire), kind)
    })
}

pub extern "C" fn cxl_afu_fd_to_h(fd: c_int) -> *mut c_void {
    let call = "cxl_afu_fd_to_h";
    answer(call, std::ptr::null_mut(), || {
        Err(refuse(
            call,
            libc::ENODEV,
            format!(
                "fd {fd} is not a cxl device: accelhost's contexts are opened by path or handle"
            ),
        ))
    })
}

pub extern "C" fn cxl_afu_free(afu: *mut c_void) {
    let call = "cxl_afu_free";
    answer(call, (), || {
        if afu.is_null() {
            return Ok(());
        }
        handles::remove::<AfuHandle>(call, afu)
    })
}

pub extern "C" fn cxl_afu_opened(afu: *mut c_void) -> c_int {
    let call = "cxl_afu_opened";
    answer(call, -1, || {
        Ok(c_int::from(afu_handle(call, afu)?.opened.is_some()))
    })
}

pub extern "C" fn cxl_afu_fd(afu: *mut c_void) -> c_int {
    let call = "cxl_afu_fd";
    answer(call, -1, || {
        let handle = afu_handle(call, afu)?;
        Ok(handle
            .opened
            .as_ref()
            .map_or(-1, |opened| opened.events.fd().as_raw_fd()))
    })
}

pub extern "C" fn cxl_afu_get_process_element(afu: *mut c_void) -> c_int {
    let call = "cxl_afu_get_process_element";
    answer(call, -1, || {
        let handle = afu_handle(call, afu)?;
        Ok(handle.opened(call)?.context.process_element() as c_int)
    })
}

/// START_WORK with `work`, as the cxl driver checks it; on success the context's events start
/// to reach its fd.
fn attach(call: &str, afu: *mut c_void, work: &mut StartWork) -> CxlResult<()> {
    let handle = afu_handle(call, afu)?;
    let opened = handle.opened(call)?;
    let request = work.request(call)?;
    opened.context.start_work(&request).map_err(|err| {
        let desc = handle.listed(call).map(|listed| listed.afu.desc().clone());
        match (err.raw_os_error(), desc) {
            (Some(libc::EIO), _) => {
                refuse(call, libc::EIO, "work was already started on this context")
            }
            (Some(libc::EINVAL), Ok(desc)) if request.num_interrupts.is_some() => refuse(
                call,
                libc::EINVAL,
                format!(
                    "{} interrupts is outside the AFU's irqs_min..irqs_max ({}..{})",
                    request.num_interrupts.unwrap_or_default(),
                    desc.irqs_min,
                    desc.irqs_max
                ),
            ),
            _ => failed(call, "starting work", &err),
        }
    })?;
    // SAFETY: gettid has no preconditions.
    let tid = unsafe { libc::gettid() };
    *lock(&opened.attached_by) = Some(tid);
    work.note_started(tid);
    opened
        .events
        .start(&opened.context)
        .map_err(|err| failed(call, "starting the event reader", &err))
}

pub extern "C" fn cxl_afu_attach(afu: *mut c_void, wed: u64) -> c_int {
    status("cxl_afu_attach", || {
        attach("cxl_afu_attach", afu, &mut StartWork::with_wed(wed))
    })
}

pub extern "C" fn cxl_afu_attach_full(
    afu: *mut c_void,
    wed: u64,
    num_interrupts: u16,
    amr: u64,
) -> c_int {
    status("cxl_afu_attach_full", || {
        let mut work = StartWork::with_wed(wed);
        work.set_num_irqs(num_interrupts as i16);
        work.set_amr(amr);
        attach("cxl_afu_attach_full", afu, &mut work)
    })
}

pub extern "C" fn cxl_afu_attach_work(afu: *mut c_void, work: *mut StartWork) -> c_int {
    let call = "cxl_afu_attach_work";
    status(call, || {
        if work.is_null() {
            return Err(refuse(call, libc::EINVAL, "the work is NULL"));
        }
        // SAFETY: the caller gives a work struct from cxl_work_alloc (or its own, of the
        // kernel's layout), not used elsewhere during the call.
        attach(call, afu, unsafe { &mut *work })
    })
}

/// `cxl_afu_host_thread_wait`: the attaching thread waits until `*uword` is non-zero (the
/// POWER9 `wait` instruction's loop, polled here).
pub extern "C" fn cxl_afu_host_thread_wait(afu: *mut c_void, uword: *const u64) -> c_int {
    let call = "cxl_afu_host_thread_wait";
    status(call, || {
        let handle = afu_handle(call, afu)?;
        let opened = handle.opened(call)?;
        // SAFETY: gettid has no preconditions.
        let me = unsafe { libc::gettid() };
        if *lock(&opened.attached_by) != Some(me) {
            return Err(refuse(
                call,
                libc::EPERM,
                "only the thread that attached the context may wait on it",
            ));
        }
        if uword.is_null() {
            return Err(refuse(call, libc::EINVAL, "the word is NULL"));
        }
        // SAFETY: the caller gives a readable word that the AFU (or another thread) sets.
        while unsafe { uword.read_volatile() } == 0 {
            std::thread::sleep(std::time::Duration::from_micros(50));
        }
        Ok(())
    })
}

pub extern "C" fn cxl_afu_sysfs_pci(afu: *mut c_void, path: *mut *mut c_char) -> c_int {
    let call = "cxl_afu_sysfs_pci";
    status(call, || {
        let handle = afu_handle(call, afu)?;
        let listed = handle.listed(call)?;
        let desc = listed.afu.desc();
        if desc.emulated {
            return Err(refuse(
                call,
                libc::ENODEV,
                format!(
                    "{} is emulated: it has no PCI device in sysfs",
                    listed.name.to_string_lossy()
                ),
            ));
        }
        let device = format!("/sys/class/cxl/card{}/device", desc.card);
        let resolved = std::fs::canonicalize(&device)
            .map_err(|err| failed(call, &format!("resolving {device}"), &err))?;
        let text = std::ffi::CString::new(resolved.to_string_lossy().into_owned())
            .map_err(|_| refuse(call, libc::EINVAL, "the sysfs path holds a NUL"))?;
        // SAFETY: strdup copies the NUL-terminated text into memory the caller frees.
        let copy = unsafe { libc::strdup(text.as_ptr()) };
        if copy.is_null() {
            return Err(refuse(call, libc::ENOMEM, "no memory for the path"));
        }
        crate::error::store(call, path, copy)
    })
}
