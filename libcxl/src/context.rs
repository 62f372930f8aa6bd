//! `struct cxl_afu_h`: an AFU as enumeration finds it (a cursor over the AFUs, or over one
//! adapter's), or a context opened on one of its device nodes, with its work's thread, its
//! events and its problem-state mapping; and the lookup every call makes of it.

use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use accelhost::cxl::{Context, ContextKind};

use crate::error::{CxlResult, refuse};
use crate::event_queue::Events;
use crate::handles;
use crate::mapping::Mapping;
use crate::state::{self, Listed};

/// Which AFUs an enumeration handle steps through.
#[derive(Clone, Copy)]
pub enum Scope {
    /// Every AFU (`cxl_afu_next`).
    All,
    /// The AFUs of one adapter (`cxl_adapter_afu_next`).
    Card(u32),
}

/// What a `struct cxl_afu_h *` points to.
pub struct AfuHandle {
    /// The AFU in the list: where an enumeration stands, or the AFU a context is open on.
    pub position: AtomicUsize,
    /// Set for a handle enumeration gave.
    pub scope: Option<Scope>,
    /// Set for a handle a device node was opened with.
    pub opened: Option<Opened>,
}

impl accelhost_door::handles::Object for AfuHandle {
    const KIND: &'static str = "cxl_afu_h";
}

/// A context and what hangs off it.
pub struct Opened {
    pub kind: ContextKind,
    pub context: Arc<Context>,
    pub events: Events,
    pub mapping: Mutex<Option<Mapping>>,
    /// The thread that started the work (`cxl_afu_host_thread_wait` is for it alone).
    pub attached_by: Mutex<Option<libc::pid_t>>,
}

impl AfuHandle {
    /// The AFU the handle stands on.
    pub fn listed(&self, call: &str) -> CxlResult<&'static Listed> {
        let afus = state::afus(call)?;
        Ok(&afus[self.position.load(Ordering::Acquire)])
    }

    /// The opened context, or `EINVAL` naming `call` for an enumeration handle.
    pub fn opened(&self, call: &str) -> CxlResult<&Opened> {
        self.opened.as_ref().ok_or_else(|| {
            refuse(
                call,
                libc::EINVAL,
                "the AFU handle is not open (open a device node with cxl_afu_open_dev or cxl_afu_open_h)",
            )
        })
    }
}

/// The live AFU handle `afu`, or `EINVAL`.
pub fn afu_handle(call: &str, afu: *mut c_void) -> CxlResult<Arc<AfuHandle>> {
    handles::get::<AfuHandle>(call, afu)
}

/// The next AFU of `scope` after `afu` (NULL: the first), moving `afu` there; at the end the
/// handle is freed and NULL returned.
pub fn next_afu(call: &str, scope: Scope, afu: *mut c_void) -> CxlResult<*mut c_void> {
    let afus = state::afus(call)?;
    let in_scope = |index: usize| match scope {
        Scope::All => true,
        Scope::Card(card) => afus[index].afu.desc().card == card,
    };
    if afu.is_null() {
        let Some(first) = (0..afus.len()).find(|&index| in_scope(index)) else {
            return Ok(std::ptr::null_mut());
        };
        return handles::publish(
            call,
            Arc::new(AfuHandle {
                position: AtomicUsize::new(first),
                scope: Some(scope),
                opened: None,
            }),
        );
    }
    let handle = afu_handle(call, afu)?;
    if handle.scope.is_none() {
        return Err(refuse(
            call,
            libc::EINVAL,
            "the AFU handle was opened, not given by enumeration",
        ));
    }
    let from = handle.position.load(Ordering::Acquire) + 1;
    match (from..afus.len()).find(|&index| in_scope(index)) {
        Some(next) => {
            handle.position.store(next, Ordering::Release);
            Ok(afu)
        }
        None => {
            handles::remove::<AfuHandle>(call, afu)?;
            Ok(std::ptr::null_mut())
        }
    }
}
