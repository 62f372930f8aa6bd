//! The event calls: `cxl_read_event` and `cxl_read_expected_event` take a context's queued
//! records (blocking until one comes), `cxl_event_pending` says whether one waits, and the
//! print functions describe one.

use std::ffi::{c_char, c_int, c_void};

use crate::context::afu_handle;
use crate::error::{CxlResult, answer, refuse, status};
use crate::handles::lock;

/// `struct cxl_event`'s size: the header and the largest payload.
const EVENT_SIZE: usize = 40;
/// The type libcxl gives an event whose read failed.
const EVENT_READ_FAIL: u16 = 0xffff;
/// `CXL_EVENT_AFU_INTERRUPT`.
const EVENT_AFU_INTERRUPT: u32 = 1;

/// Fills `event` with a failed read's record (libcxl's poison and `CXL_EVENT_READ_FAIL`).
fn read_failed(event: *mut c_void) {
    // SAFETY: the caller gives a `struct cxl_event` (40 bytes), checked non-NULL.
    unsafe {
        let bytes = event.cast::<u8>();
        for i in 0..EVENT_SIZE {
            bytes.add(i).write([0xde, 0xad, 0xbe, 0xef][i % 4]);
        }
        bytes.cast::<u16>().write_unaligned(EVENT_READ_FAIL);
        bytes.add(2).cast::<u16>().write_unaligned(0);
    }
}

fn read_event(call: &str, afu: *mut c_void, event: *mut c_void) -> CxlResult<()> {
    if event.is_null() {
        return Err(refuse(call, libc::EINVAL, "the event is NULL"));
    }
    let handle = afu_handle(call, afu)?;
    let opened = handle.opened(call)?;
    if !opened.events.started() {
        read_failed(event);
        return Err(refuse(
            call,
            libc::EIO,
            "no work was started on this context, so it has no events",
        ));
    }
    let record = loop {
        opened.events.catch_up(&opened.context);
        if let Some(record) = opened.events.queue.pop() {
            break record;
        }
        opened.events.queue.wait();
    };
    // SAFETY: the record is at most the 40 bytes of `struct cxl_event`, which `event` holds.
    unsafe { std::ptr::copy_nonoverlapping(record.as_ptr(), event.cast(), record.len()) };
    Ok(())
}

pub extern "C" fn cxl_read_event(afu: *mut c_void, event: *mut c_void) -> c_int {
    status("cxl_read_event", || {
        read_event("cxl_read_event", afu, event)
    })
}

/// Reads the next event; 0 when it is of `kind` (and, for an AFU interrupt, `irq` or any
/// when `irq` is 0), -1 when it is another (the event is still filled in).
pub extern "C" fn cxl_read_expected_event(
    afu: *mut c_void,
    event: *mut c_void,
    kind: u32,
    irq: u16,
) -> c_int {
    let call = "cxl_read_expected_event";
    answer(call, -1, || {
        read_event(call, afu, event)?;
        // SAFETY: `event` was just filled with a record of at least its header.
        let (got, got_irq) = unsafe {
            let bytes = event.cast::<u8>();
            (
                bytes.cast::<u16>().read_unaligned(),
                bytes.add(10).cast::<u16>().read_unaligned(),
            )
        };
        let matches =
            u32::from(got) == kind && (kind != EVENT_AFU_INTERRUPT || irq == 0 || got_irq == irq);
        Ok(if matches { 0 } else { -1 })
    })
}

pub extern "C" fn cxl_event_pending(afu: *mut c_void) -> c_int {
    let call = "cxl_event_pending";
    answer(call, -1, || {
        let handle = afu_handle(call, afu)?;
        let opened = handle.opened(call)?;
        if opened.events.started() {
            opened.events.catch_up(&opened.context);
        }
        Ok(c_int::from(!lock(&opened.events.queue.records).is_empty()))
    })
}

unsafe extern "C" {
    fn fprintf(stream: *mut c_void, format: *const c_char, ...) -> c_int;
}

/// The event's type, size and payload words, read from its record.
struct Fields {
    kind: u16,
    size: usize,
    bytes: [u8; EVENT_SIZE],
}

fn fields(event: *const c_void) -> Fields {
    let mut bytes = [0u8; EVENT_SIZE];
    // SAFETY: the caller gives a `struct cxl_event`, checked non-NULL.
    unsafe { std::ptr::copy_nonoverlapping(event.cast::<u8>(), bytes.as_mut_ptr(), EVENT_SIZE) };
    Fields {
        kind: u16::from_ne_bytes([bytes[0], bytes[1]]),
        size: usize::from(u16::from_ne_bytes([bytes[2], bytes[3]])).min(EVENT_SIZE),
        bytes,
    }
}

impl Fields {
    fn u16_at(&self, at: usize) -> u16 {
        u16::from_ne_bytes([self.bytes[at], self.bytes[at + 1]])
    }

    fn u64_at(&self, at: usize) -> u64 {
        u64::from_ne_bytes(self.bytes[at..at + 8].try_into().unwrap())
    }
}

fn print_unknown(stream: *mut c_void, event: &Fields) -> c_int {
    let mut hex = String::new();
    for (i, byte) in event.bytes[..event.size].iter().enumerate() {
        if i > 0 && i % 4 == 0 {
            hex.push(' ');
        }
        hex.push_str(&format!("{byte:02x}"));
    }
    let line =
        std::ffi::CString::new(format!("CXL unknown event {}: {hex}\n", event.kind)).unwrap();
    // SAFETY: a "%s" format with one NUL-terminated string, to the caller's stream.
    unsafe { fprintf(stream, c"%s".as_ptr(), line.as_ptr()) }
}

pub extern "C" fn cxl_fprint_unknown_event(stream: *mut c_void, event: *const c_void) -> c_int {
    let call = "cxl_fprint_unknown_event";
    answer(call, -1, || {
        if event.is_null() || stream.is_null() {
            return Err(refuse(call, libc::EINVAL, "the stream or event is NULL"));
        }
        Ok(print_unknown(stream, &fields(event)))
    })
}

pub extern "C" fn cxl_fprint_event(stream: *mut c_void, event: *const c_void) -> c_int {
    let call = "cxl_fprint_event";
    answer(call, -1, || {
        if event.is_null() || stream.is_null() {
            return Err(refuse(call, libc::EINVAL, "the stream or event is NULL"));
        }
        let event = fields(event);
        // SAFETY: each format's conversions match the arguments given.
        let printed = unsafe {
            match event.kind {
                EVENT_READ_FAIL => {
                    return Err(refuse(call, libc::ENODATA, "the event's read failed"));
                }
                1 => fprintf(
                    stream,
                    c"AFU interrupt %u\n".as_ptr(),
                    c_int::from(event.u16_at(10)),
                ),
                2 => fprintf(
                    stream,
                    c"AFU data storage fault at 0x%llx (DSISR 0x%llx)\n".as_ptr(),
                    event.u64_at(16),
                    event.u64_at(24),
                ),
                3 => fprintf(stream, c"AFU error 0x%llx\n".as_ptr(), event.u64_at(16)),
                _ => print_unknown(stream, &event),
            }
        };
        Ok(printed)
    })
}
