//! The host imports every plugin may call: each file implements one WIT interface of the
//! generated bindings on the store's state (each device family's own import lives in its
//! folder, `crate::families::<name>::imports`, and uses the helpers here). Every import
//! checks the plugin's grants, bounds guest-supplied lengths before allocating, translates
//! resource handles to host objects, and then calls down into `crate::devices`. `wasi`
//! bounds what the plugin reaches of WASI.

mod dma;
mod events;
mod image;
mod log;
mod mmio;
mod wasi;

use std::io;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::bindings::accel::plugin::types::{self, Error as GuestError, ErrorCode as WitCode};
use crate::error::ErrorCode;
use crate::state::{ImportError, Interrupted, PluginState, guest_error};

pub(crate) use wasi::add_to_linker as add_wasi_to_linker;

/// The most bytes one `read`/`write` import moves; bulk data stays on the host side.
pub const MAX_TRANSFER: u64 = 1 << 20;
/// The most writes one `write-batch` takes.
pub const MAX_BATCH: usize = 4096;

/// What the imports share: bounded waits and refusals.
impl PluginState {
    /// The deadline for a host-side wait of `timeout_ns`, capped by the call's deadline.
    pub(crate) fn wait_deadline(&self, timeout_ns: u64) -> Instant {
        Instant::now()
            .checked_add(Duration::from_nanos(timeout_ns))
            .map_or(self.deadline(), |d| d.min(self.deadline()))
    }

    /// Runs `attempt` with deadlines at most one epoch tick apart until it gives an answer or
    /// `until` passes (then `None`), so that a cancel reaches a blocked wait quickly. `until`
    /// is capped by the call's deadline; a cancel ends the call.
    pub(crate) fn wait_sliced<T>(
        &self,
        until: Instant,
        mut attempt: impl FnMut(Instant) -> Result<Option<T>, ImportError>,
    ) -> Result<Option<T>, ImportError> {
        let stop = self.stop();
        let until = until.min(stop.deadline);
        loop {
            if stop.control.is_cancelled(stop.call) {
                return Err(ImportError::Trap(Interrupted::Cancelled.into()));
            }
            let slice = stop.slice_end().min(until);
            if let Some(answer) = attempt(slice)? {
                return Ok(Some(answer));
            }
            if Instant::now() >= until {
                return Ok(None);
            }
        }
    }

    /// A `permission-denied` refusal naming the plugin, the call and the missing grant.
    pub(crate) fn denied(&self, call: &str, missing: String) -> ImportError {
        guest_error(
            ErrorCode::PermissionDenied,
            format!("plugin '{}' may not {call}: {missing}", self.ctx.name),
        )
    }

    /// The device `name` of type `D` (a family's device trait object), for `call` (such as
    /// "open a dfl port"): refused unless a grant covers it, `not-found` unless it exists.
    pub(crate) fn granted_device<D: ?Sized + Send + Sync + 'static>(
        &self,
        call: &str,
        name: &str,
    ) -> Result<Arc<D>, ImportError> {
        if !self.ctx.grants.allows_device(name) {
            return Err(self.denied(call, format!("no grant covers the device '{name}'")));
        }
        self.ctx.devices.get::<D>(name).ok_or_else(|| {
            guest_error(
                ErrorCode::NotFound,
                format!("{call}: there is no such device '{name}'"),
            )
        })
    }

    /// Every device of type `D` a grant covers, in name order.
    pub(crate) fn granted_devices<D: ?Sized + Send + Sync + 'static>(&self) -> Vec<Arc<D>> {
        self.ctx.devices.granted::<D>(&self.ctx.grants.devices)
    }
}

impl types::Host for PluginState {
    fn convert_error(&mut self, err: ImportError) -> wasmtime::Result<GuestError> {
        match err {
            ImportError::Guest { code, message } => Ok(GuestError {
                code: wit_code(code),
                message,
            }),
            ImportError::Trap(trap) => Err(trap),
        }
    }
}

/// The WIT `error-code` of one of the twelve codes a plugin can see.
fn wit_code(code: ErrorCode) -> WitCode {
    match code {
        ErrorCode::Unsupported => WitCode::Unsupported,
        ErrorCode::InvalidArgument => WitCode::InvalidArgument,
        ErrorCode::NotFound => WitCode::NotFound,
        ErrorCode::Busy => WitCode::Busy,
        ErrorCode::NoSpace => WitCode::NoSpace,
        ErrorCode::PermissionDenied => WitCode::PermissionDenied,
        ErrorCode::Timeout => WitCode::Timeout,
        ErrorCode::OutOfMemory => WitCode::OutOfMemory,
        ErrorCode::DeviceError => WitCode::DeviceError,
        ErrorCode::NotInitialized => WitCode::NotInitialized,
        ErrorCode::AlreadyExists => WitCode::AlreadyExists,
        _ => WitCode::Internal,
    }
}

/// The WIT code for a kernel (or emulator) errno.
pub(crate) fn code_for_io(err: &io::Error) -> ErrorCode {
    match err.raw_os_error() {
        Some(libc::EBUSY) => ErrorCode::Busy,
        Some(libc::ENOSPC) => ErrorCode::NoSpace,
        Some(libc::EINVAL) | Some(libc::EFAULT) | Some(libc::ENOTTY) => ErrorCode::InvalidArgument,
        Some(libc::EEXIST) => ErrorCode::AlreadyExists,
        Some(libc::ENOMEM) => ErrorCode::OutOfMemory,
        Some(libc::EPERM) | Some(libc::EACCES) => ErrorCode::PermissionDenied,
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::ENXIO) => ErrorCode::NotFound,
        Some(libc::ETIMEDOUT) => ErrorCode::Timeout,
        Some(_) => ErrorCode::DeviceError,
        None => match err.kind() {
            io::ErrorKind::OutOfMemory => ErrorCode::OutOfMemory,
            io::ErrorKind::InvalidInput => ErrorCode::InvalidArgument,
            io::ErrorKind::NotFound => ErrorCode::NotFound,
            io::ErrorKind::ResourceBusy => ErrorCode::Busy,
            io::ErrorKind::PermissionDenied => ErrorCode::PermissionDenied,
            io::ErrorKind::TimedOut => ErrorCode::Timeout,
            io::ErrorKind::Unsupported => ErrorCode::Unsupported,
            _ => ErrorCode::DeviceError,
        },
    }
}

/// A device error as the plugin sees it: the call, the device and the errno text.
pub(crate) fn device_error(call: &str, device: &str, err: io::Error) -> ImportError {
    guest_error(code_for_io(&err), format!("{call} on {device}: {err}"))
}
