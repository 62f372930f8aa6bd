//! `remote`: a plugin's sessions with nodes. Every connect is checked against the plugin's
//! `remote` grants; every call ends by the plugin's call deadline; what the node hands out is
//! wrapped as the plugin's ordinary region, buffer and event resources.

use std::os::fd::OwnedFd;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use wasmtime::component::{Resource, ResourceTableError};

use super::mirror::Mirrors;
use super::session::NodeResource;
use super::window::RemoteMmio;
use super::{Connector, Done, RemoteArg, RemoteFailure, RemoteLaunch, RemoteNode};
use crate::bindings::accel::plugin::remote::{
    self, RemoteArgument, RemoteBuffer, RemoteDevice, RemoteEventKind, RemoteMemory,
    RemoteMemoryKind,
};
use crate::bindings::accel::plugin::types as wit;
use crate::devices::{CheckedMmio, Completion, CompletionState, DmaMemory};
use crate::error::ErrorCode;
use crate::state::{
    BufferResource, EventResource, ImageResource, ImportError, PluginState, RegionResource,
    guest_error, guest_handle, host_handle,
};
use crate::types::{EventKind, LAUNCHES_PER_BATCH, MemoryKind};

/// What a session with a node holds on the host besides its buffers (the connection, its
/// transport buffers and tasks), charged to the plugin's host budget: with the default
/// `host_memory_mib`, a plugin holds at most a few dozen sessions at once.
const NODE_SESSION_BYTES: u64 = 256 << 10;

fn failed(call: &str, failure: RemoteFailure) -> ImportError {
    guest_error(failure.code, format!("{call}: {}", failure.message))
}

impl PluginState {
    fn node(
        &self,
        node: &Resource<remote::Node>,
    ) -> Result<(Arc<dyn RemoteNode>, Arc<Mirrors>), ImportError> {
        let held = self.node_resource(node)?;
        Ok((held.node.clone(), held.mirrors.clone()))
    }

    fn node_resource(
        &self,
        node: &Resource<remote::Node>,
    ) -> Result<&NodeResource, ResourceTableError> {
        self.table.get(&host_handle::<NodeResource, _>(node))
    }

    fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.ctx.policy.call_timeout_ms)
    }

    /// When a remote call must be answered: a tenth of the call timeout (at most half a
    /// second) before the plugin's own deadline, so that a node that does not answer costs
    /// the plugin a failed call, never a deadline fault.
    fn remote_deadline(&self) -> Instant {
        let margin = (self.call_timeout() / 10).min(Duration::from_millis(500));
        self.deadline()
            .checked_sub(margin)
            .unwrap_or_else(Instant::now)
    }

    /// The node's `object` as a buffer resource: its memory mapped here when the node shared
    /// it, else a local mirror of it (`size` bytes) that the mirrors keep in step.
    fn mirror(
        &mut self,
        mirrors: &Arc<Mirrors>,
        (object, handle): (u64, u64),
        size: u64,
        shared: Option<OwnedFd>,
        io_address: Option<u64>,
    ) -> Result<Resource<BufferResource>, ImportError> {
        let owner = &self.ctx.owner;
        let memory = match shared {
            Some(fd) => DmaMemory::map_shared(fd, owner.id, &owner.dma).map_err(|err| {
                guest_error(
                    crate::imports::code_for_io(&err),
                    format!("mapping the node's shared memory of {size} bytes: {err}"),
                )
            })?,
            None => {
                let memory =
                    DmaMemory::allocate(size, owner.id, &owner.dma, false).map_err(|err| {
                        guest_error(
                            crate::imports::code_for_io(&err),
                            format!("remote buffer mirror of {size} bytes: {err}"),
                        )
                    })?;
                let shadow = owner.dma.charge(memory.len())?;
                mirrors.add(object, handle, &memory, shadow);
                memory
            }
        };
        memory.set_io_address(io_address);
        let charge = self.charge_resource(0)?;
        Ok(self.table.push(BufferResource {
            memory,
            _charge: charge,
        })?)
    }

    /// A completion, and what finishes it when the node says how its command or event ended:
    /// after the mirrors pulled what the device wrote.
    fn remote_completion(&self, mirrors: &Arc<Mirrors>) -> (Arc<Completion>, Done) {
        let completion = Arc::new(Completion::default());
        let (done, mirrors) = (completion.clone(), mirrors.clone());
        let call_timeout = self.call_timeout();
        let finish: Done =
            Box::new(move |outcome| match outcome {
                Err(message) => done.finish(CompletionState::Failed(message.into())),
                Ok(()) => mirrors.after_pull(
                    Box::new(move |pulled| {
                        done.finish(match pulled {
                        Err(err) => CompletionState::Failed(format!(
                            "the device finished, but reading back its buffers failed: {err}"
                        ).into()),
                        Ok(()) => CompletionState::Complete,
                    })
                    }),
                    Instant::now() + call_timeout,
                ),
            });
        (completion, finish)
    }

    /// Hands `launches` on `queue` to the node in one message, after pushing what changed in
    /// the mirrors; one event for them all.
    fn launch_remotely(
        &mut self,
        node: Resource<remote::Node>,
        queue: u64,
        launches: Vec<remote::RemoteLaunch>,
        call: &str,
    ) -> Result<Resource<EventResource>, ImportError> {
        let (node, mirrors) = self.node(&node)?;
        let launches: Vec<RemoteLaunch> = launches
            .into_iter()
            .map(|launch| RemoteLaunch {
                kernel: launch.kernel,
                args: launch.args.into_iter().map(remote_arg).collect(),
            })
            .collect();
        let (completion, finish) = self.remote_completion(&mirrors);
        mirrors
            .doorbell(self.remote_deadline())
            .and_then(|()| node.enqueue_launches(queue, &launches, finish))
            .map_err(|f| failed(call, f))?;
        self.adopt_completion(completion)
    }
}

fn remote_arg(arg: RemoteArgument) -> RemoteArg {
    match arg {
        RemoteArgument::Memory((object, offset)) => RemoteArg::Memory { object, offset },
        RemoteArgument::Scalar32(v) => RemoteArg::Scalar32(v),
        RemoteArgument::Scalar64(v) => RemoteArg::Scalar64(v),
        RemoteArgument::Bytes(b) => RemoteArg::Bytes(b),
    }
}

impl remote::HostNode for PluginState {
    fn connect(&mut self, endpoint: String) -> Result<Resource<remote::Node>, ImportError> {
        let call = format!("connect to node '{endpoint}'");
        let grant = self
            .ctx
            .grants
            .remote
            .iter()
            .find(|g| g.endpoint == endpoint)
            .ok_or_else(|| self.denied(&call, "no remote grant names that endpoint".into()))?;
        let target = grant
            .to_endpoint(Path::new(""))
            .map_err(|msg| guest_error(ErrorCode::InvalidArgument, format!("{call}: {msg}")))?;
        let slot =
            super::share::take(self.ctx.owner.id, &endpoint, grant.sessions).map_err(|held| {
                guest_error(
                    ErrorCode::NoSpace,
                    format!(
                        "plugin '{}' may not {call}: it holds {held} sessions with that node, \
                         its part of its host's there (grants.remote[].sessions: {}); drop one \
                         first",
                        self.ctx.name, grant.sessions
                    ),
                )
            })?;
        let connector = self.ctx.devices.service::<Arc<dyn Connector>>().ok_or_else(|| {
            guest_error(
                ErrorCode::Unsupported,
                format!(
                    "{call}: this host cannot reach nodes (the application embedding it gave no remote connector)"
                ),
            )
        })?;
        let node = connector
            .connect(
                &target,
                &self.ctx.name,
                self.remote_deadline()
                    .min(Instant::now() + self.call_timeout() / 2),
            )
            .map_err(|f| failed(&call, f))?;
        let mirrors = Mirrors::new(Arc::downgrade(&node), self.call_timeout());
        let charge = self.charge_resource(NODE_SESSION_BYTES)?;
        let node = self.table.push(NodeResource {
            node,
            mirrors,
            endpoint,
            _charge: charge,
            _slot: slot,
        })?;
        Ok(guest_handle(node))
    }

    fn name(&mut self, node: Resource<remote::Node>) -> wasmtime::Result<String> {
        Ok(self.node_resource(&node)?.node.name())
    }

    fn is_attached(&mut self, node: Resource<remote::Node>) -> wasmtime::Result<bool> {
        Ok(self.node_resource(&node)?.node.is_attached())
    }

    fn enumerate(
        &mut self,
        node: Resource<remote::Node>,
    ) -> Result<Vec<RemoteDevice>, ImportError> {
        let (node, _) = self.node(&node)?;
        let found = node
            .enumerate(self.remote_deadline())
            .map_err(|f| failed("remote enumerate", f))?;
        Ok(found
            .into_iter()
            .map(|(id, p)| RemoteDevice {
                id,
                object_type: p.object_type.into(),
                name: p.name.into(),
                guid: p.guid.into(),
                vendor_id: p.vendor_id,
                device_id: p.device_id,
                bus_address: p.bus_address.map(Into::into),
                socket_id: p.socket_id,
                device_type: p.device_type.into(),
                host: p.host.into(),
                num_mmio: p.num_mmio,
                num_interrupts: p.num_interrupts,
                accelerator_state: p.accelerator_state.map(Into::into),
                extras: p
                    .extras
                    .into_iter()
                    .map(|(key, value)| (key.into(), value.into()))
                    .collect(),
            })
            .collect())
    }

    fn open(
        &mut self,
        node: Resource<remote::Node>,
        id: String,
        mode: wit::OpenMode,
    ) -> Result<u64, ImportError> {
        let (node, _) = self.node(&node)?;
        node.open(&id, mode == wit::OpenMode::Shared, self.remote_deadline())
            .map_err(|f| failed("remote open", f))
    }

    fn close(&mut self, node: Resource<remote::Node>, handle: u64) -> Result<(), ImportError> {
        let (node, mirrors) = self.node(&node)?;
        // The node releases what came from the handle, whatever the answer says.
        mirrors.remove_handle(handle);
        node.close(handle, self.remote_deadline())
            .map_err(|f| failed("remote close", f))
    }

    fn reset(&mut self, node: Resource<remote::Node>, handle: u64) -> Result<(), ImportError> {
        let (node, mirrors) = self.node(&node)?;
        let deadline = self.remote_deadline();
        mirrors
            .doorbell(deadline)
            .and_then(|()| node.reset(handle, deadline))
            .map_err(|f| failed("remote reset", f))
    }

    fn reconfigure(
        &mut self,
        node: Resource<remote::Node>,
        handle: u64,
        slot: u32,
        image: Resource<ImageResource>,
    ) -> Result<(), ImportError> {
        let (node, mirrors) = self.node(&node)?;
        let bytes = self.table.get(&image)?.bytes.clone();
        let deadline = self.remote_deadline();
        mirrors
            .doorbell(deadline)
            .and_then(|()| node.reconfigure(handle, slot, &bytes, deadline))
            .map_err(|f| failed("remote reconfigure", f))
    }

    fn map_mmio(
        &mut self,
        node: Resource<remote::Node>,
        handle: u64,
        index: u32,
    ) -> Result<Resource<RegionResource>, ImportError> {
        let endpoint = self.node_resource(&node)?.endpoint.clone();
        let (node, mirrors) = self.node(&node)?;
        let (region, size) = node
            .map_mmio(handle, index, self.remote_deadline())
            .map_err(|f| failed("remote map-mmio", f))?;
        let window = RemoteMmio {
            node: Arc::downgrade(&node),
            mirrors,
            region,
            size,
            call_timeout: self.call_timeout(),
        };
        let charge = self.charge_resource(0)?;
        Ok(self.table.push(RegionResource {
            mmio: CheckedMmio::new(Arc::new(window)),
            device: format!("node {endpoint}, handle {handle}, region {index}"),
            _charge: charge,
        })?)
    }

    fn prepare_buffer(
        &mut self,
        node: Resource<remote::Node>,
        handle: u64,
        size: u64,
        read_only: bool,
    ) -> Result<RemoteBuffer, ImportError> {
        let (node, mirrors) = self.node(&node)?;
        let made = node
            .prepare_buffer(handle, size, read_only, self.remote_deadline())
            .map_err(|f| failed("remote prepare-buffer", f))?;
        let (id, iova) = (made.id, made.address);
        match self.mirror(&mirrors, (id, handle), made.size, made.memory, Some(iova)) {
            Ok(buffer) => Ok(RemoteBuffer { id, buffer, iova }),
            Err(err) => {
                let _ = node.release(id, self.remote_deadline());
                Err(err)
            }
        }
    }

    fn register_event(
        &mut self,
        node: Resource<remote::Node>,
        handle: u64,
        kind: RemoteEventKind,
        vector: u32,
    ) -> Result<Resource<EventResource>, ImportError> {
        let (node, mirrors) = self.node(&node)?;
        let kind = match kind {
            RemoteEventKind::Interrupt => EventKind::Interrupt,
            RemoteEventKind::Error => EventKind::Error,
            RemoteEventKind::PowerThermal => EventKind::PowerThermal,
        };
        let event = node
            .register_event(handle, kind, vector, self.remote_deadline())
            .map_err(|f| failed("remote register-event", f))?;
        let (completion, finish) = self.remote_completion(&mirrors);
        node.watch_event(event, finish);
        self.adopt_completion(completion)
    }

    fn mem_alloc(
        &mut self,
        node: Resource<remote::Node>,
        handle: u64,
        kind: RemoteMemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> Result<RemoteMemory, ImportError> {
        let (node, mirrors) = self.node(&node)?;
        let kind = match kind {
            RemoteMemoryKind::Host => MemoryKind::Host,
            RemoteMemoryKind::Device => MemoryKind::Device,
            RemoteMemoryKind::Shared => MemoryKind::Shared,
        };
        let made = node
            .alloc(handle, kind, size, bank, self.remote_deadline())
            .map_err(|f| failed("remote mem-alloc", f))?;
        let (id, device_address) = (made.id, made.address);
        if kind == MemoryKind::Device {
            return Ok(RemoteMemory {
                id,
                buffer: None,
                device_address,
            });
        }
        match self.mirror(&mirrors, (id, handle), made.size, made.memory, None) {
            Ok(buffer) => Ok(RemoteMemory {
                id,
                buffer: Some(buffer),
                device_address,
            }),
            Err(err) => {
                let _ = node.release(id, self.remote_deadline());
                Err(err)
            }
        }
    }

    fn program_create(
        &mut self,
        node: Resource<remote::Node>,
        handle: u64,
        image: Resource<ImageResource>,
    ) -> Result<u64, ImportError> {
        let (node, _) = self.node(&node)?;
        let bytes = self.table.get(&image)?.bytes.clone();
        node.create_program(handle, &bytes, self.remote_deadline())
            .map_err(|f| failed("remote program-create", f))
    }

    fn kernel_get(
        &mut self,
        node: Resource<remote::Node>,
        program: u64,
        name: String,
    ) -> Result<u64, ImportError> {
        let (node, _) = self.node(&node)?;
        node.kernel(program, &name, self.remote_deadline())
            .map_err(|f| failed("remote kernel-get", f))
    }

    fn queue_create(
        &mut self,
        node: Resource<remote::Node>,
        handle: u64,
    ) -> Result<u64, ImportError> {
        let (node, _) = self.node(&node)?;
        node.create_queue(handle, self.remote_deadline())
            .map_err(|f| failed("remote queue-create", f))
    }

    fn enqueue_memcpy(
        &mut self,
        node: Resource<remote::Node>,
        queue: u64,
        dst: (u64, u64),
        src: (u64, u64),
        size: u64,
    ) -> Result<Resource<EventResource>, ImportError> {
        let (node, mirrors) = self.node(&node)?;
        let (completion, finish) = self.remote_completion(&mirrors);
        mirrors
            .doorbell(self.remote_deadline())
            .and_then(|()| node.enqueue_memcpy(queue, dst, src, size, finish))
            .map_err(|f| failed("remote enqueue-memcpy", f))?;
        self.adopt_completion(completion)
    }

    fn enqueue_launch(
        &mut self,
        node: Resource<remote::Node>,
        queue: u64,
        kernel: u64,
        args: Vec<RemoteArgument>,
    ) -> Result<Resource<EventResource>, ImportError> {
        let launch = remote::RemoteLaunch { kernel, args };
        self.launch_remotely(node, queue, vec![launch], "remote enqueue-launch")
    }

    fn enqueue_launches(
        &mut self,
        node: Resource<remote::Node>,
        queue: u64,
        launches: Vec<remote::RemoteLaunch>,
    ) -> Result<Resource<EventResource>, ImportError> {
        let count = launches.len();
        if count == 0 || count > LAUNCHES_PER_BATCH {
            return Err(guest_error(
                ErrorCode::InvalidArgument,
                format!(
                    "remote enqueue-launches: {count} launches; a batch holds 1 to \
                     {LAUNCHES_PER_BATCH}"
                ),
            ));
        }
        self.launch_remotely(node, queue, launches, "remote enqueue-launches")
    }

    fn release(&mut self, node: Resource<remote::Node>, object: u64) -> Result<(), ImportError> {
        let (node, mirrors) = self.node(&node)?;
        mirrors.remove(object);
        node.release(object, self.remote_deadline())
            .map_err(|f| failed("remote release", f))
    }

    fn drop(&mut self, node: Resource<remote::Node>) -> wasmtime::Result<()> {
        self.table.delete(host_handle::<NodeResource, _>(&node))?;
        Ok(())
    }
}

impl remote::Host for PluginState {}
