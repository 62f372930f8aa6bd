//! `struct cxl_ioctl_start_work`, the kernel's START_WORK argument, which programs fill
//! through the `cxl_work_*` functions (or themselves), and the checks the cxl driver makes
//! of it.

use std::ffi::{c_int, c_void};

use accelhost::cxl::Work;

use crate::error::{CxlResult, refuse, status, store};

const AMR: u64 = 0x1;
const NUM_IRQS: u64 = 0x2;
const ERR_FF: u64 = 0x4;
const TID: u64 = 0x8;
const ALL_FLAGS: u64 = AMR | NUM_IRQS | ERR_FF | TID;

/// The kernel's layout of START_WORK's argument.
#[repr(C)]
#[derive(Default)]
pub struct StartWork {
    flags: u64,
    work_element_descriptor: u64,
    amr: u64,
    num_interrupts: i16,
    tid: u16,
    reserved1: i32,
    reserved: [u64; 4],
}

const _: () = assert!(
    size_of::<StartWork>() == 64,
    "the kernel's struct is 64 bytes"
);

impl StartWork {
    /// A work with only a WED, as `cxl_afu_attach` passes.
    pub fn with_wed(wed: u64) -> Self {
        StartWork {
            work_element_descriptor: wed,
            ..StartWork::default()
        }
    }

    /// Sets the interrupt count; a negative one clears it (the AFU's `irqs_min` applies).
    pub fn set_num_irqs(&mut self, irqs: i16) {
        self.num_interrupts = irqs;
        if irqs >= 0 {
            self.flags |= NUM_IRQS;
        } else {
            self.flags &= !NUM_IRQS;
        }
    }

    /// Sets the authority mask; zero clears it.
    pub fn set_amr(&mut self, amr: u64) {
        self.amr = amr;
        if amr != 0 {
            self.flags |= AMR;
        } else {
            self.flags &= !AMR;
        }
    }

    /// What START_WORK asks, checked as the cxl driver checks it: unknown flags or a set
    /// reserved field are `EINVAL`.
    pub fn request(&self, call: &str) -> CxlResult<Work> {
        if self.flags & !ALL_FLAGS != 0 {
            return Err(refuse(
                call,
                libc::EINVAL,
                format!("unknown START_WORK flags {:#x}", self.flags & !ALL_FLAGS),
            ));
        }
        if self.reserved1 != 0 || self.reserved.iter().any(|&word| word != 0) {
            return Err(refuse(
                call,
                libc::EINVAL,
                "a reserved field of the work is set",
            ));
        }
        let num_interrupts = if self.flags & NUM_IRQS != 0 {
            Some(u16::try_from(self.num_interrupts).map_err(|_| {
                refuse(
                    call,
                    libc::EINVAL,
                    format!("{} interrupts is not a count", self.num_interrupts),
                )
            })?)
        } else {
            None
        };
        Ok(Work {
            wed: self.work_element_descriptor,
            amr: (self.flags & AMR != 0).then_some(self.amr),
            num_interrupts,
        })
    }

    /// Writes back what START_WORK returns: the thread id, when the work asked for one.
    pub fn note_started(&mut self, tid: libc::pid_t) {
        if self.flags & TID != 0 {
            self.tid = tid as u16;
        }
    }
}

/// The work behind `work`, or `EINVAL`.
fn work_of<'a>(call: &str, work: *mut StartWork) -> CxlResult<&'a mut StartWork> {
    if work.is_null() {
        return Err(refuse(call, libc::EINVAL, "the work is NULL"));
    }
    // SAFETY: the caller gives a work struct of the kernel's layout, used by one call at a
    // time.
    Ok(unsafe { &mut *work })
}

pub extern "C" fn cxl_work_alloc() -> *mut StartWork {
    // SAFETY: zeroed memory of the struct's size, which `cxl_work_free` (or the program's
    // own free) gives back.
    unsafe { libc::calloc(1, size_of::<StartWork>()).cast() }
}

pub extern "C" fn cxl_work_free(work: *mut StartWork) -> c_int {
    let call = "cxl_work_free";
    status(call, || {
        work_of(call, work)?;
        // SAFETY: `work` came from `cxl_work_alloc` (calloc), as libcxl requires.
        unsafe { libc::free(work.cast::<c_void>()) };
        Ok(())
    })
}

pub extern "C" fn cxl_work_get_amr(work: *mut StartWork, value: *mut u64) -> c_int {
    let call = "cxl_work_get_amr";
    status(call, || store(call, value, work_of(call, work)?.amr))
}

pub extern "C" fn cxl_work_get_num_irqs(work: *mut StartWork, value: *mut i16) -> c_int {
    let call = "cxl_work_get_num_irqs";
    status(call, || {
        store(call, value, work_of(call, work)?.num_interrupts)
    })
}

pub extern "C" fn cxl_work_get_wed(work: *mut StartWork, value: *mut u64) -> c_int {
    let call = "cxl_work_get_wed";
    status(call, || {
        store(call, value, work_of(call, work)?.work_element_descriptor)
    })
}

pub extern "C" fn cxl_work_get_tid(work: *mut StartWork, value: *mut u16) -> c_int {
    let call = "cxl_work_get_tid";
    status(call, || {
        let work = work_of(call, work)?;
        if work.flags & TID == 0 || work.tid == 0 {
            return Err(refuse(
                call,
                libc::EINVAL,
                "the work has no thread id (enable waiting, then attach)",
            ));
        }
        store(call, value, work.tid)
    })
}

pub extern "C" fn cxl_work_set_amr(work: *mut StartWork, amr: u64) -> c_int {
    let call = "cxl_work_set_amr";
    status(call, || {
        work_of(call, work)?.set_amr(amr);
        Ok(())
    })
}

pub extern "C" fn cxl_work_set_num_irqs(work: *mut StartWork, irqs: i16) -> c_int {
    let call = "cxl_work_set_num_irqs";
    status(call, || {
        work_of(call, work)?.set_num_irqs(irqs);
        Ok(())
    })
}

pub extern "C" fn cxl_work_set_wed(work: *mut StartWork, wed: u64) -> c_int {
    let call = "cxl_work_set_wed";
    status(call, || {
        work_of(call, work)?.work_element_descriptor = wed;
        Ok(())
    })
}

pub extern "C" fn cxl_work_enable_wait(work: *mut StartWork) -> c_int {
    let call = "cxl_work_enable_wait";
    status(call, || {
        work_of(call, work)?.flags |= TID;
        Ok(())
    })
}

pub extern "C" fn cxl_work_disable_wait(work: *mut StartWork) -> c_int {
    let call = "cxl_work_disable_wait";
    status(call, || {
        work_of(call, work)?.flags &= !TID;
        Ok(())
    })
}
