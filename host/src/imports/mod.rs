//! The host imports a plugin calls: each file implements one WIT interface. Every import
//! checks the plugin's grants, bounds guest-supplied lengths before allocating, translates
//! resource handles to host objects, and then calls down into `crate::devices`.

mod cxl;
mod dfl;
mod dma;
mod events;
mod image;
mod log;
mod mmio;
mod wasi;
mod xocl;

use std::io;
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::{Resource, ResourceTable, ResourceTableError};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::config::{Grants, LoadPolicy, PluginEntry};
use crate::devices::dfl::DflPort;
use crate::devices::{
    Charge, CheckedMmio, Completion, CompletionState, DeviceRegistry, DmaMemory, OverBudget, Owner,
};
use crate::runtime::bindings::accel::plugin::types::{self, Error as GuestError, ErrorCode};
use crate::runtime::{CallControl, Interrupted, PluginLimits, StopCondition};

pub(crate) use log::{LogBudget, cut_to};
pub(crate) use wasi::add_to_linker as add_wasi_to_linker;

/// The most bytes one `read`/`write` import moves; bulk data stays on the host side.
pub const MAX_TRANSFER: u64 = 1 << 20;
/// The most writes one `write-batch` takes.
pub const MAX_BATCH: usize = 4096;

/// What an instance is allowed to reach, fixed for its life.
pub struct PluginContext {
    /// The plugin's name from the config; every refusal names it.
    pub name: String,
    pub grants: Grants,
    /// Its limits.
    pub policy: LoadPolicy,
    pub devices: Arc<DeviceRegistry>,
    /// Tags the DMA memory this instance allocates and the devices it opens, and holds the
    /// budgets (DMA and host memory) everything it asks for is charged to.
    pub owner: Owner,
    /// Trace every import (`ACCELHOST_TRACE`).
    pub trace: bool,
    /// The log volume budget, shared with the plugin's other instances.
    pub log: LogBudget,
    /// Which call runs, and whether it was cancelled.
    pub(crate) control: Arc<CallControl>,
}

impl PluginContext {
    /// The context of a fresh instance of `entry`: a new owner, with the budgets its grants
    /// and load policy set.
    pub(crate) fn new(
        entry: &PluginEntry,
        devices: Arc<DeviceRegistry>,
        trace: bool,
        log: LogBudget,
        control: Arc<CallControl>,
    ) -> Arc<Self> {
        Arc::new(PluginContext {
            name: entry.name.clone(),
            grants: entry.grants.clone(),
            policy: entry.load_policy,
            devices,
            owner: Owner::new(
                entry.grants.dma_memory_mib << 20,
                entry.load_policy.host_memory_mib << 20,
            ),
            trace,
            log,
            control,
        })
    }
}

/// The data of one plugin instance's `Store`.
pub struct PluginState {
    pub(crate) ctx: Arc<PluginContext>,
    wasi: WasiCtx,
    table: ResourceTable,
    limits: PluginLimits,
    /// When the current call must end: `call_timeout_ms` after the host made it. Host-side
    /// waits never run past it.
    deadline: Instant,
    /// The number of the current call, for cancellation.
    pub(crate) call: u64,
    /// The device completions handed to this instance, failed if it ends first.
    completions: Vec<Weak<Completion>>,
    /// Prune `completions` when it grows past this.
    prune_at: usize,
}

/// What one host resource costs beyond its own payload: its table entry, the object behind
/// it and its bookkeeping.
const RESOURCE_BYTES: u64 = 256;

/// The fewest tracked completions before dead ones are pruned.
const PRUNE_FLOOR: usize = 64;

impl PluginState {
    pub(crate) fn new(ctx: Arc<PluginContext>, wasi: WasiCtx, limits: PluginLimits) -> Self {
        let mut table = ResourceTable::new();
        table.set_max_capacity(ctx.policy.max_resources as usize);
        PluginState {
            ctx,
            wasi,
            table,
            limits,
            deadline: Instant::now(),
            call: 0,
            completions: Vec::new(),
            prune_at: PRUNE_FLOOR,
        }
    }

    pub(crate) fn table(&mut self) -> &mut ResourceTable {
        &mut self.table
    }

    /// Starts call number `call`, made at `now`: its deadline is `call_timeout_ms` later.
    pub(crate) fn begin_call(&mut self, call: u64, now: Instant) {
        self.call = call;
        self.deadline = now + Duration::from_millis(self.ctx.policy.call_timeout_ms);
    }

    /// When the current call must end.
    pub(crate) fn deadline(&self) -> Instant {
        self.deadline
    }

    /// What ends the current call: its deadline, or a cancel.
    pub(crate) fn stop(&self) -> StopCondition {
        StopCondition {
            control: self.ctx.control.clone(),
            call: self.call,
            deadline: self.deadline,
        }
    }

    /// The deadline for a host-side wait of `timeout_ns`, capped by the call's deadline.
    fn wait_deadline(&self, timeout_ns: u64) -> Instant {
        Instant::now()
            .checked_add(Duration::from_nanos(timeout_ns))
            .map_or(self.deadline, |d| d.min(self.deadline))
    }

    /// Runs `attempt` with deadlines at most one epoch tick apart until it gives an answer or
    /// `until` passes (then `None`), so that a cancel reaches a blocked wait quickly. `until`
    /// is capped by the call's deadline; a cancel ends the call.
    fn wait_sliced<T>(
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

    /// Hands `completion` to the plugin as an event, and remembers it so that it fails,
    /// waking its waiters, if the instance ends before the device finishes it.
    fn adopt_completion(
        &mut self,
        completion: Arc<Completion>,
    ) -> Result<Resource<EventResource>, ImportError> {
        if self.completions.len() >= self.prune_at {
            self.completions
                .retain(|c| c.upgrade().is_some_and(|c| !c.is_finished()));
            self.prune_at = (self.completions.len() * 2).max(PRUNE_FLOOR);
        }
        let charge = self.charge_resource(0)?;
        self.completions.push(Arc::downgrade(&completion));
        Ok(self.table.push(EventResource {
            completion,
            _charge: charge,
        })?)
    }

    /// Releases everything the instance holds, in order: queued device work is cancelled,
    /// contexts and ports are closed (which removes their DMA mappings), buffer objects are
    /// freed and their devices closed, and every completion still pending fails with `why`,
    /// waking its waiters. DMA memory, regions and images go with the table.
    pub(crate) fn release_all(&mut self, why: &str) {
        for (_, entry) in self.table.iter_mut() {
            if let Some(device) = entry.downcast_mut::<XoclDeviceResource>() {
                device.cancel_pending(why);
            }
        }
        for (_, entry) in self.table.iter_mut() {
            if let Some(context) = entry.downcast_mut::<CxlContextResource>() {
                context.context.take();
            } else if let Some(port) = entry.downcast_mut::<PortResource>() {
                port.port.take();
            }
        }
        for (_, entry) in self.table.iter_mut() {
            if let Some(bo) = entry.downcast_mut::<BoResource>() {
                bo.free();
            }
        }
        for (_, entry) in self.table.iter_mut() {
            if let Some(device) = entry.downcast_mut::<XoclDeviceResource>() {
                device.client.take();
            }
        }
        for completion in self.completions.drain(..) {
            if let Some(completion) = completion.upgrade() {
                completion.finish(CompletionState::Failed(why.to_string()));
            }
        }
    }

    /// Charges a new host resource with `payload` bytes of its own to the plugin's host
    /// budget, for as long as the resource lives.
    fn charge_resource(&self, payload: u64) -> Result<Charge, OverBudget> {
        self.ctx.owner.host.charge(RESOURCE_BYTES + payload)
    }

    /// A `permission-denied` refusal naming the plugin, the call and the missing grant.
    fn denied(&self, call: &str, missing: String) -> ImportError {
        guest_error(
            ErrorCode::PermissionDenied,
            format!("plugin '{}' may not {call}: {missing}", self.ctx.name),
        )
    }
}

impl WasiView for PluginState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView {
            ctx: &mut self.wasi,
            table: &mut self.table,
        }
    }
}

impl PluginState {
    /// The store's resource limiter (memory, tables, instances).
    pub(crate) fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limits
    }
}

/// A failed import: either an error the plugin sees as a WIT `error`, or a trap that ends
/// the instance (used only for host-side invariants the guest cannot cause on purpose).
#[derive(Debug)]
pub enum ImportError {
    Guest(GuestError),
    Trap(wasmtime::Error),
}

impl From<OverBudget> for ImportError {
    fn from(err: OverBudget) -> Self {
        guest_error(ErrorCode::OutOfMemory, err.to_string())
    }
}

impl From<ResourceTableError> for ImportError {
    fn from(err: ResourceTableError) -> Self {
        ImportError::Trap(err.into())
    }
}

impl types::Host for PluginState {
    fn convert_error(&mut self, err: ImportError) -> wasmtime::Result<GuestError> {
        match err {
            ImportError::Guest(error) => Ok(error),
            ImportError::Trap(trap) => Err(trap),
        }
    }
}

pub(crate) fn guest_error(code: ErrorCode, message: impl Into<String>) -> ImportError {
    ImportError::Guest(GuestError {
        code,
        message: message.into(),
    })
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

/// A mapped MMIO region handed to a plugin.
pub struct RegionResource {
    pub(crate) mmio: CheckedMmio,
    pub(crate) device: String,
    pub(crate) _charge: Charge,
}

/// DMA memory handed to a plugin.
pub struct BufferResource {
    pub(crate) memory: Arc<DmaMemory>,
    pub(crate) _charge: Charge,
}

/// An image the host holds for the duration of a call.
pub struct ImageResource {
    pub(crate) bytes: Arc<[u8]>,
}

/// A completion object.
pub struct EventResource {
    pub(crate) completion: Arc<Completion>,
    pub(crate) _charge: Charge,
}

/// An open xocl device (a KDS client), shared with the BOs created through it. `None` once
/// the instance ended.
pub struct XoclDeviceResource {
    pub(crate) client: Option<Arc<dyn crate::devices::xocl::XoclClient>>,
    pub(crate) path: String,
    pub(crate) _charge: Charge,
}

/// A buffer object; dropping it frees the BO (GEM_CLOSE).
pub struct BoResource {
    pub(crate) client: Arc<dyn crate::devices::xocl::XoclClient>,
    pub(crate) info: crate::devices::xocl::BoInfo,
    pub(crate) freed: bool,
    pub(crate) _charge: Charge,
}

impl BoResource {
    fn free(&mut self) {
        if !std::mem::replace(&mut self.freed, true) {
            let _ = self.client.free_bo(self.info.handle);
        }
    }
}

impl Drop for BoResource {
    fn drop(&mut self) {
        self.free();
    }
}

/// An open cxl context; dropping it detaches the context and frees its process element.
/// `None` once the instance ended.
pub struct CxlContextResource {
    pub(crate) context: Option<Box<dyn crate::devices::cxl::CxlContext>>,
    /// The device node, such as `emu:capi0.0s` or `/dev/cxl/afu0.0s`.
    pub(crate) node: String,
    pub(crate) _charge: Charge,
}

/// An open DFL port; dropping it closes the port. `None` once the instance ended.
pub struct PortResource {
    pub(crate) port: Option<Box<dyn DflPort>>,
    pub(crate) path: String,
    pub(crate) _charge: Charge,
}

/// The refusal for a device resource used after its instance released it.
fn released(what: &str, device: &str) -> ImportError {
    guest_error(
        ErrorCode::NotFound,
        format!("the {what} of {device} was released"),
    )
}

impl PortResource {
    fn device(&self) -> Result<&dyn DflPort, ImportError> {
        self.port
            .as_deref()
            .ok_or_else(|| released("port", &self.path))
    }
}

impl CxlContextResource {
    fn device(&self) -> Result<&dyn crate::devices::cxl::CxlContext, ImportError> {
        self.context
            .as_deref()
            .ok_or_else(|| released("context", &self.node))
    }
}

impl XoclDeviceResource {
    fn device(&self) -> Result<&Arc<dyn crate::devices::xocl::XoclClient>, ImportError> {
        self.client
            .as_ref()
            .ok_or_else(|| released("device", &self.path))
    }

    fn cancel_pending(&self, why: &str) {
        if let Some(client) = &self.client {
            client.cancel_pending(why);
        }
    }
}

impl std::fmt::Debug for RegionResource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "region of {} ({:#x} bytes)",
            self.device,
            self.mmio.size()
        )
    }
}

/// Records an import call when tracing is on; runs `$body` either way.
macro_rules! traced {
    ($state:expr, $call:literal, [$($arg:expr),*], $body:expr) => {{
        if $state.ctx.trace {
            let args = format!(concat!($(stringify!($arg), "={:?} ",)*), $(&$arg),*);
            let start = std::time::Instant::now();
            let result = $body;
            $crate::trace::record(
                $crate::trace::Direction::Import,
                &$state.ctx.name,
                $call,
                &args,
                &result,
                start.elapsed(),
            );
            result
        } else {
            $body
        }
    }};
}
pub(crate) use traced;
