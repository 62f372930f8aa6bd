//! `fpga_event_handle`: an eventfd the application polls, signalled by the host when the
//! registered device event completes. An accelhost event fires once per registration (the
//! plugin hands out a one-shot completion), so register again to wait for the next one.
//! Error events of a device object (an FME) are the host's own: it reads the device's error
//! registers every [`ERROR_POLL`] and signals each time one shows a bit it did not show
//! before, since the DFL shim has no interrupt binding.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use accelhost::{EventKind, Token};

use crate::attributes::read_number;
use crate::device_errors::registers;
use crate::ffi::{guard, lock, non_null, write_out};
use crate::handle::handle_of;
use crate::registry::{self, Object};
use crate::result::{CapiError, CapiResult, invalid};
use crate::types::*;

/// What C's `fpga_event_handle` stands for.
struct EventObject {
    /// The eventfd; the registration's signaller holds only a weak reference, so destroying
    /// the event handle closes it at once.
    fd: Arc<OwnedFd>,
    /// The current registration, if any.
    registration: Mutex<Option<Registration>>,
}

struct Registration {
    /// The handle it was registered on, by the value C holds.
    handle: usize,
    kind: fpga_event_type,
    /// Cleared when the registration ends; the signaller checks it.
    live: Arc<AtomicBool>,
    /// The device event it waits for; none for a device object's error registers, which a
    /// thread of its own reads until `live` is cleared.
    _event: Option<accelhost::Event>,
}

/// How often a device object's error registers are read for its error events.
pub const ERROR_POLL: Duration = Duration::from_millis(10);

/// Adds one to the eventfd, if the event handle still has it.
fn signal(fd: &Weak<OwnedFd>) {
    if let Some(fd) = fd.upgrade() {
        let one = 1u64;
        // SAFETY: writes 8 bytes from a live u64 to an eventfd we still own.
        let _ = unsafe { libc::write(fd.as_raw_fd(), (&raw const one).cast(), 8) };
    }
}

/// Signals `fd` each time one of `device`'s error registers shows a bit it did not show at
/// the read before, until `live` is cleared. A register that cannot be read (its plugin is
/// restarting, say) keeps its last value, so its recovery is not taken for new errors.
fn watch_errors(device: Token, fd: Weak<OwnedFd>, live: Arc<AtomicBool>) -> CapiResult {
    let registers = registers(&device)?;
    if registers.is_empty() {
        return Err(CapiError::NotSupported(format!(
            "fpgaRegisterEvent: {} has no error registers to raise FPGA_EVENT_ERROR",
            device.id()
        )));
    }
    let mut shown: Vec<u64> = registers
        .iter()
        .map(|r| read_number(&device, &r.attribute).unwrap_or(0))
        .collect();
    std::thread::Builder::new()
        .name("accelhost-opae-errors".into())
        .spawn(move || {
            while live.load(Ordering::Acquire) && fd.strong_count() > 0 {
                std::thread::sleep(ERROR_POLL);
                let mut raised = false;
                for (register, was) in registers.iter().zip(&mut shown) {
                    if let Ok(now) = read_number(&device, &register.attribute) {
                        raised |= now & !*was != 0;
                        *was = now;
                    }
                }
                if raised && live.load(Ordering::Acquire) {
                    signal(&fd);
                }
            }
        })
        .map_err(|err| {
            CapiError::Host(accelhost::Error::Internal(format!(
                "starting the error watch: {err}"
            )))
        })?;
    Ok(())
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.live.store(false, Ordering::Release);
    }
}

impl Object for EventObject {
    const KIND: &'static str = "event handle";
    /// First: a registration holds a device event of the handle it was made on.
    const TEARDOWN_RANK: u8 = 0;
}

fn kind_of(event_type: fpga_event_type) -> CapiResult<EventKind> {
    match event_type {
        FPGA_EVENT_INTERRUPT => Ok(EventKind::Interrupt),
        FPGA_EVENT_ERROR => Ok(EventKind::Error),
        FPGA_EVENT_POWER_THERMAL => Ok(EventKind::PowerThermal),
        other => Err(invalid(format!("{other} is not an fpga_event_type"))),
    }
}

/// OPAE's `fpgaCreateEventHandle`: a new event handle with its own eventfd.
///
/// # Safety
/// `event_handle` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaCreateEventHandle(
    event_handle: *mut fpga_event_handle,
) -> fpga_result {
    guard("fpgaCreateEventHandle", || {
        non_null(event_handle, "event_handle")?;
        // SAFETY: eventfd has no memory preconditions.
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(CapiError::Host(accelhost::Error::Internal(format!(
                "eventfd: {}",
                std::io::Error::last_os_error()
            ))));
        }
        // SAFETY: `fd` is a new descriptor that nothing else owns.
        let fd = Arc::new(unsafe { OwnedFd::from_raw_fd(fd) });
        let object = registry::insert(EventObject {
            fd,
            registration: Mutex::new(None),
        });
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(event_handle, object, "event_handle") }
    })
}

/// OPAE's `fpgaDestroyEventHandle`: drops any registration, closes the eventfd, and sets
/// `*event_handle` to NULL.
///
/// # Safety
/// `event_handle` must be NULL or valid for a read and a write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaDestroyEventHandle(
    event_handle: *mut fpga_event_handle,
) -> fpga_result {
    guard("fpgaDestroyEventHandle", || {
        // SAFETY: NULL or valid for a read and a write by the caller's contract.
        unsafe { registry::destroy::<EventObject>(event_handle, "event_handle") }
    })
}

/// OPAE's `fpgaGetOSObjectFromEventHandle`: the eventfd to poll; it becomes readable when
/// the registered event completes (or fails, for example when the plugin faulted).
///
/// # Safety
/// `fd` must be NULL or valid for one write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn fpgaGetOSObjectFromEventHandle(
    eh: fpga_event_handle,
    fd: *mut i32,
) -> fpga_result {
    guard("fpgaGetOSObjectFromEventHandle", || {
        non_null(fd, "fd")?;
        let event = registry::get::<EventObject>(eh)?;
        // SAFETY: non-NULL, valid for one write by the caller's contract.
        unsafe { write_out(fd, event.fd.as_raw_fd(), "fd") }
    })
}

/// OPAE's `fpgaRegisterEvent`: asks the device's plugin for an event of `event_type`
/// (for interrupts, `flags` is the vector) and signals `event_handle`'s eventfd when it
/// completes. An event handle holds one registration at a time (`FPGA_BUSY` otherwise).
#[unsafe(no_mangle)]
pub extern "C" fn fpgaRegisterEvent(
    handle: fpga_handle,
    event_type: fpga_event_type,
    event_handle: fpga_event_handle,
    flags: u32,
) -> fpga_result {
    guard("fpgaRegisterEvent", || {
        let kind = kind_of(event_type)?;
        let event = registry::get::<EventObject>(event_handle)?;
        let mut registration = lock(&event.registration);
        if registration.is_some() {
            return Err(CapiError::Busy(
                "the event handle is already registered".into(),
            ));
        }
        let h = handle_of(handle)?;
        let weak = Arc::downgrade(&event.fd);
        let live = Arc::new(AtomicBool::new(true));
        let device_event = if h.is_device_object() {
            if kind != EventKind::Error {
                return Err(CapiError::NotSupported(format!(
                    "fpgaRegisterEvent: a device object's handle raises FPGA_EVENT_ERROR only \
                     (event type {event_type})"
                )));
            }
            watch_errors(h.token.clone(), weak, live.clone())?;
            None
        } else {
            let device_event = h
                .accelerator("fpgaRegisterEvent")?
                .register_event(kind, flags)?;
            let still_live = live.clone();
            device_event.on_finish(move || {
                if still_live.load(Ordering::Acquire) {
                    signal(&weak);
                }
            });
            Some(device_event)
        };
        *registration = Some(Registration {
            handle: handle as usize,
            kind: event_type,
            live,
            _event: device_event,
        });
        Ok(())
    })
}

/// OPAE's `fpgaUnregisterEvent`: drops the registration of `event_type` on `handle`; the
/// eventfd is no longer signalled. `FPGA_INVALID_PARAM` if they do not match it.
#[unsafe(no_mangle)]
pub extern "C" fn fpgaUnregisterEvent(
    handle: fpga_handle,
    event_type: fpga_event_type,
    event_handle: fpga_event_handle,
) -> fpga_result {
    guard("fpgaUnregisterEvent", || {
        kind_of(event_type)?;
        handle_of(handle)?;
        let event = registry::get::<EventObject>(event_handle)?;
        let mut registration = lock(&event.registration);
        match &*registration {
            Some(r) if r.handle == handle as usize && r.kind == event_type => {
                *registration = None;
                Ok(())
            }
            Some(_) => Err(invalid(
                "the event handle is registered for another handle or event type",
            )),
            None => Err(invalid("the event handle is not registered")),
        }
    })
}
