//! What a plugin instance's `Store` holds, below both the runtime (which makes the store and
//! the calls) and the imports (which implement the WIT interfaces on it): the instance's
//! context and grants, its WASI context and resource table, the current call's deadline, its
//! limits, and the host resources it holds, with the order they are released in.

mod control;
mod error;
mod limits;
mod live_ids;
mod log_budget;
mod messages;
mod resources;
mod usage;

use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use wasmtime::ResourceLimiter;
use wasmtime::component::{Resource, ResourceTable};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};

use crate::config::policy::{Grants, LoadPolicy};
use crate::devices::{Charge, Completion, CompletionState, DeviceRegistry, OverBudget, Owner};
use crate::family::{Catalog, ReleaseStage};

pub(crate) use control::{CallControl, EPOCH_TICK, Interrupted, StopCondition};
pub(crate) use error::{ImportError, guest_error};
pub(crate) use limits::{HostLimit, PluginLimits};
pub(crate) use live_ids::{IdKind, LiveIds};
pub use log_budget::LogBudget;
pub(crate) use messages::MAX_MESSAGE;
pub use messages::{FailureMessages, KEPT_BYTES as KEPT_MESSAGE_BYTES};
pub use resources::{BufferResource, DeviceResource, EventResource, ImageResource, RegionResource};
pub(crate) use resources::{guest_handle, host_handle};
pub use usage::Usage;

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
    /// The log volume budget, shared with the plugin's other instances.
    pub log: LogBudget,
    /// Which call runs, and whether it was cancelled.
    pub(crate) control: Arc<CallControl>,
    /// What the plugin's instances used, shared by them.
    pub usage: Arc<Usage>,
    /// The failure messages its events carry, shared by its instances.
    pub messages: Arc<FailureMessages>,
    /// What ships in the host: each family releases its part of an ended instance.
    pub(crate) catalog: Catalog,
}

/// What one plugin's instances share, made once for the plugin.
#[derive(Clone)]
pub(crate) struct Shared {
    /// The log volume budget.
    pub log: LogBudget,
    /// Which call runs, and whether it was cancelled.
    pub control: Arc<CallControl>,
    /// What the instances used.
    pub usage: Arc<Usage>,
    /// The failure messages their events carry.
    pub messages: Arc<FailureMessages>,
    /// What ships in the host.
    pub catalog: Catalog,
}

impl PluginContext {
    /// The context of a fresh instance of plugin `name`: a new owner, with the budgets its
    /// grants and load policy set.
    pub(crate) fn new(
        name: &str,
        grants: &Grants,
        policy: LoadPolicy,
        devices: Arc<DeviceRegistry>,
        shared: Shared,
    ) -> Arc<Self> {
        let Shared {
            log,
            control,
            usage,
            messages,
            catalog,
        } = shared;
        let mut owner = Owner::new(grants.dma_memory_mib << 20, policy.host_memory_mib << 20);
        owner.shares_memory = devices.shares_memory();
        Arc::new(PluginContext {
            name: name.to_string(),
            grants: grants.clone(),
            policy,
            devices,
            owner,
            log,
            control,
            usage,
            messages,
            catalog,
        })
    }
}

/// The data of one plugin instance's `Store`.
pub struct PluginState {
    pub(crate) ctx: Arc<PluginContext>,
    wasi: WasiCtx,
    pub(crate) table: ResourceTable,
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
    /// The ids it gave for objects the host keeps, so that it cannot give one twice.
    pub(crate) live_ids: LiveIds,
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
            live_ids: LiveIds::default(),
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

    /// Charges a new host resource with `payload` bytes of its own to the plugin's host
    /// budget, for as long as the resource lives.
    pub(crate) fn charge_resource(&self, payload: u64) -> Result<Charge, OverBudget> {
        self.ctx.owner.host.charge(RESOURCE_BYTES + payload)
    }

    /// Hands `completion` to the plugin as an event, and remembers it so that it fails,
    /// waking its waiters, if the instance ends before the device finishes it.
    pub(crate) fn adopt_completion(
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

    /// Releases everything the instance holds: the device resources stage by stage (each
    /// family of the catalog does its part of a stage), then every completion still pending
    /// fails with `why`, waking its waiters. DMA memory, regions and images go with the table.
    pub(crate) fn release_all(&mut self, why: &str) {
        let catalog = self.ctx.catalog;
        for stage in ReleaseStage::IN_ORDER {
            catalog.release(&mut self.table, stage, why);
        }
        for completion in self.completions.drain(..) {
            if let Some(completion) = completion.upgrade() {
                completion.finish(CompletionState::Failed((why.to_string()).into()));
            }
        }
    }

    /// The store's resource limiter (memory, tables, instances).
    pub(crate) fn limiter(&mut self) -> &mut dyn ResourceLimiter {
        &mut self.limits
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
