//! The host's way to nodes: [`NodeConnector`] makes [`Client`] sessions for the `remote`
//! import of `accelhost` (what `builtin:remote` uses), on a small runtime of its own, and runs
//! every call to its deadline.

use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use accelhost::remote::{
    Connector, Done, Page, RemoteArg, RemoteEndpoint, RemoteFailure, RemoteLaunch, RemoteNode,
    RemoteObject, RemoteResult,
};
use accelhost::{
    AcceleratorState, BusAddress, ErrorCode, EventKind, Guid, MemoryKind, ObjectType, Properties,
};
use tonic::Code;

use crate::client::{Client, ClientOptions, Endpoint, RemoteError};
use crate::doorbell::RingSubmitter;
use crate::pipeline::{Done as PipelineDone, Submitter};
use crate::proto;
use crate::reach::Reach;
use crate::ring::{ClientEnd, RingMemory};

/// How long one wait on a node's event lasts before it is asked again.
const EVENT_WAIT: Duration = Duration::from_secs(1);

/// Connects a host's plugins to nodes. One per host; its runtime (two threads, started with
/// the first connection) carries every session's calls and event waits.
#[derive(Default)]
pub struct NodeConnector {
    runtime: OnceLock<tokio::runtime::Runtime>,
    reach: Arc<Reach>,
}

impl NodeConnector {
    /// A connector; nothing runs until a plugin connects.
    pub fn new() -> NodeConnector {
        NodeConnector::default()
    }

    /// What the connector saw of each node, for metrics.
    pub fn reach(&self) -> Arc<Reach> {
        self.reach.clone()
    }

    fn handle(&self) -> RemoteResult<tokio::runtime::Handle> {
        if let Some(runtime) = self.runtime.get() {
            return Ok(runtime.handle().clone());
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("accelhost-remote")
            .enable_all()
            .build()
            .map_err(|err| RemoteFailure {
                code: ErrorCode::Internal,
                message: format!("starting the threads that reach nodes: {err}"),
            })?;
        Ok(self.runtime.get_or_init(|| runtime).handle().clone())
    }
}

impl Drop for NodeConnector {
    fn drop(&mut self) {
        // A host may be dropped on a runtime's thread, where waiting for this one is refused.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// A node call's failure as the host's.
fn failure(err: RemoteError) -> RemoteFailure {
    let code = err.code.unwrap_or(match err.grpc {
        Code::DeadlineExceeded => ErrorCode::Timeout,
        Code::PermissionDenied | Code::Unauthenticated => ErrorCode::PermissionDenied,
        Code::NotFound => ErrorCode::NotFound,
        Code::InvalidArgument | Code::OutOfRange => ErrorCode::InvalidArgument,
        Code::ResourceExhausted => ErrorCode::NoSpace,
        Code::Unimplemented => ErrorCode::Unsupported,
        _ => ErrorCode::DeviceError,
    });
    RemoteFailure {
        code,
        message: err.to_string(),
    }
}

/// The calls whose time is a round trip and little else.
const QUICK: [&str; 8] = [
    "connect",
    "enumerate",
    "open",
    "close",
    "map-mmio",
    "mmio read",
    "mmio write",
    "release",
];

/// Runs `call` on `handle` until `deadline`, and records in `reach` whether `node` answered.
fn run<T>(
    handle: &tokio::runtime::Handle,
    (reach, node): (&Reach, &str),
    call: &str,
    deadline: Instant,
    future: impl Future<Output = Result<T, RemoteError>>,
) -> RemoteResult<T> {
    let started = Instant::now();
    let until = tokio::time::Instant::from_std(deadline);
    let outcome = handle.block_on(async move { tokio::time::timeout_at(until, future).await });
    let answered = matches!(
        &outcome,
        Ok(Ok(_)) | Ok(Err(RemoteError { code: Some(_), .. }))
    );
    reach.record(node, answered, QUICK.contains(&call), started.elapsed());
    match outcome {
        Ok(answer) => answer.map_err(failure),
        Err(_) => Err(RemoteFailure {
            code: ErrorCode::Timeout,
            message: format!(
                "node {node}: {call}: no answer within {} ms (the call's deadline)",
                deadline.saturating_duration_since(started).as_millis()
            ),
        }),
    }
}

impl Connector for NodeConnector {
    fn connect(
        &self,
        endpoint: &RemoteEndpoint,
        _label: &str,
        deadline: Instant,
    ) -> RemoteResult<Arc<dyn RemoteNode>> {
        let endpoint = match endpoint {
            RemoteEndpoint::Unix(path) => Endpoint::Unix(path.clone()),
            RemoteEndpoint::Tls {
                address,
                server_name,
                ca,
                certificate,
                key,
            } => Endpoint::Tls {
                address: address.clone(),
                server_name: server_name.clone(),
                ca: ca.clone(),
                certificate: certificate.clone(),
                key: key.clone(),
            },
        };
        let left = deadline.saturating_duration_since(Instant::now());
        let options = ClientOptions {
            connect_timeout: left,
            call_timeout: left.max(Duration::from_secs(1)),
            share_memory: true,
            ..ClientOptions::default()
        };
        let name = endpoint.to_string();
        let runtime = self.handle()?;
        let client = run(
            &runtime,
            (&self.reach, &name),
            "connect",
            deadline,
            Client::connect(&endpoint, options),
        )?;
        Ok(Arc::new(Session {
            client: Arc::new(client),
            runtime,
            reach: self.reach.clone(),
            endpoint: name,
            submitter: std::sync::Mutex::new(None),
            ring: std::sync::Mutex::new(Ring::Untried),
        }))
    }
}

/// A session with one node, for the host.
struct Session {
    client: Arc<Client>,
    runtime: tokio::runtime::Handle,
    reach: Arc<Reach>,
    endpoint: String,
    /// The stream launches and copies go out on when there is no ring, opened with the first.
    submitter: std::sync::Mutex<Option<Arc<Submitter>>>,
    /// The doorbell ring launches and copies go out on, for a session on a Unix socket.
    ring: std::sync::Mutex<Ring>,
}

/// A session's doorbell ring, tried with its first command.
enum Ring {
    Untried,
    Open(Arc<RingSubmitter>),
    /// Not offered (a TCP session, an older node), or closed: commands go by the stream.
    Unavailable,
}

/// How long opening a ring may take before commands go by the stream instead.
const RING_SETUP: Duration = Duration::from_secs(5);

impl Session {
    /// Queues `work` on the session's doorbell ring, or when there is none (or the command
    /// does not fit a record) on its command stream (opening one if there is none or the
    /// last ended); `done` hears how it ended. Commands keep their order across the two: the
    /// ring settles before a command goes by the stream, and the stream before one goes back.
    fn submit(&self, work: proto::command::Work, done: Done) -> RemoteResult<()> {
        let endpoint = self.endpoint.clone();
        let mut heard: PipelineDone = Box::new(move |outcome| {
            done(outcome.map_err(|(_, why)| format!("node {endpoint}: {why}")))
        });
        let mut work = work;
        if let Some(ring) = self.ring() {
            let stream = self
                .submitter
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            if let Some(stream) = stream {
                // What went by the stream finishes first; the stream then ends.
                let until = tokio::time::Instant::from_std(Instant::now() + RING_SETUP);
                let _ = self
                    .runtime
                    .block_on(async { tokio::time::timeout_at(until, stream.settle()).await });
            }
            match ring.submit(work, heard) {
                Ok(()) => return Ok(()),
                Err(back) => (work, heard) = back,
            }
            ring.settle(Instant::now() + RING_SETUP);
            if ring.is_closed() {
                *self.ring.lock().unwrap_or_else(|p| p.into_inner()) = Ring::Unavailable;
            }
        }
        let mut submitter = self.submitter.lock().unwrap_or_else(|p| p.into_inner());
        // A stream that ended (the node restarted, the connection broke) is opened again once.
        for _ in 0..2 {
            let open = match submitter.as_ref() {
                Some(open) if !open.is_closed() => open,
                _ => {
                    let _entered = self.runtime.enter();
                    submitter.insert(Arc::new(Submitter::open(
                        self.client.rpc(),
                        self.client.session().to_string(),
                    )))
                }
            };
            match open.submit(work.clone(), heard) {
                Ok(()) => return Ok(()),
                Err(back) => heard = back,
            }
        }
        Err(RemoteFailure {
            code: ErrorCode::DeviceError,
            message: format!(
                "node {}: the command stream cannot be opened",
                self.endpoint
            ),
        })
    }

    /// The session's open ring, opening it with the first command (a session on a Unix
    /// socket only).
    fn ring(&self) -> Option<Arc<RingSubmitter>> {
        let mut ring = self.ring.lock().unwrap_or_else(|p| p.into_inner());
        if let Ring::Untried = *ring {
            *ring = match self.open_ring(Instant::now() + RING_SETUP) {
                Some(open) => Ring::Open(Arc::new(open)),
                None => Ring::Unavailable,
            };
        }
        match &*ring {
            Ring::Open(open) => Some(open.clone()),
            _ => None,
        }
    }

    fn open_ring(&self, deadline: Instant) -> Option<RingSubmitter> {
        let socket = self.client.socket()?;
        let (object, offer) = self
            .run("open-ring", deadline, self.client.open_ring())
            .inspect_err(|err| tracing::debug!(node = %self.endpoint, "no ring: {}", err.message))
            .ok()?;
        let opened = offer
            .ok_or_else(|| std::io::Error::other("the node offered no memory"))
            .and_then(|offer| {
                let (memory, node) =
                    crate::shared_memory::fetch_watching(socket, &offer.ticket, deadline)?;
                RingSubmitter::new(ClientEnd::new(RingMemory::adopt(memory)?).watching(node))
            });
        match opened {
            Ok(ring) => Some(ring),
            Err(why) => {
                tracing::debug!(node = %self.endpoint, "no ring: {why}");
                let _ = self.run("release", deadline, self.client.release(object));
                None
            }
        }
    }

    /// Waits (until `deadline`) for every command submitted on the stream to finish.
    fn settle_stream(&self, deadline: Instant) {
        let submitter = self
            .submitter
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        if let Some(open) = submitter {
            let until = tokio::time::Instant::from_std(deadline);
            let _ = self
                .runtime
                .block_on(async { tokio::time::timeout_at(until, open.settle()).await });
        }
    }

    /// Waits (until `deadline`) for every command submitted so far to finish: before a call
    /// that may take away what they use.
    fn settle(&self, deadline: Instant) {
        let ring = match &*self.ring.lock().unwrap_or_else(|p| p.into_inner()) {
            Ring::Open(open) => Some(open.clone()),
            _ => None,
        };
        if let Some(ring) = ring {
            ring.settle(deadline);
        }
        self.settle_stream(deadline);
    }

    /// The memory the node offered for `object`, fetched from its socket; when that fails the
    /// object is released (nothing of it is left on the node) and the call fails.
    fn redeem(
        &self,
        object: u64,
        offer: Option<proto::SharedMemory>,
        deadline: Instant,
    ) -> RemoteResult<Option<std::os::fd::OwnedFd>> {
        let (Some(offer), Some(socket)) = (offer, self.client.socket()) else {
            return Ok(None);
        };
        match crate::shared_memory::fetch(socket, &offer.ticket, deadline) {
            Ok(memory) => Ok(Some(memory)),
            Err(err) => {
                let _ = self.run("release", deadline, self.client.release(object));
                Err(RemoteFailure {
                    code: match err.kind() {
                        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock => {
                            ErrorCode::Timeout
                        }
                        _ => ErrorCode::DeviceError,
                    },
                    message: format!(
                        "node {}: fetching the shared memory of object {object}: {err}",
                        self.endpoint
                    ),
                })
            }
        }
    }

    fn run<T>(
        &self,
        call: &str,
        deadline: Instant,
        future: impl Future<Output = Result<T, RemoteError>>,
    ) -> RemoteResult<T> {
        run(
            &self.runtime,
            (&self.reach, &self.endpoint),
            call,
            deadline,
            future,
        )
    }
}

/// A device as the node described it, as the host's properties.
fn properties(device: proto::Device) -> Properties {
    Properties {
        object_type: match device.object_type() {
            proto::ObjectType::Device => ObjectType::Device,
            _ => ObjectType::Accelerator,
        },
        name: device.name.into(),
        guid: device.guid.parse().unwrap_or(Guid::new(0, 0)),
        vendor_id: device.vendor_id as u16,
        device_id: device.device_id as u16,
        bus_address: device
            .bus_address
            .and_then(|a| a.parse::<BusAddress>().ok()),
        socket_id: device.socket_id,
        device_type: device.device_type.into(),
        host: device.host.into(),
        num_mmio: device.num_mmio,
        num_interrupts: device.num_interrupts,
        accelerator_state: match device.accelerator_state {
            1 => Some(AcceleratorState::Unassigned),
            2 => Some(AcceleratorState::Assigned),
            _ => None,
        },
        parent: None,
        extras: device
            .extras
            .into_iter()
            .map(|e| (e.key.into(), e.value.into()))
            .collect(),
    }
}

fn width(width: accelhost::remote::AccessWidth) -> bool {
    width == accelhost::remote::AccessWidth::Bits64
}

impl RemoteNode for Session {
    fn name(&self) -> String {
        self.client.node_name().to_string()
    }

    fn is_attached(&self) -> bool {
        self.client.is_attached()
    }

    fn enumerate(&self, deadline: Instant) -> RemoteResult<Vec<(String, Properties)>> {
        let devices = self.run("enumerate", deadline, self.client.enumerate(Vec::new()))?;
        Ok(devices
            .into_iter()
            .map(|device| (device.id.clone(), properties(device)))
            .collect())
    }

    fn open(&self, id: &str, shared: bool, deadline: Instant) -> RemoteResult<u64> {
        self.run("open", deadline, self.client.open(id, shared))
    }

    fn close(&self, handle: u64, deadline: Instant) -> RemoteResult<()> {
        self.settle(deadline);
        self.run("close", deadline, self.client.close(handle))
    }

    fn reset(&self, handle: u64, deadline: Instant) -> RemoteResult<()> {
        self.run("reset", deadline, self.client.reset(handle))
    }

    fn reconfigure(
        &self,
        handle: u64,
        slot: u32,
        image: &[u8],
        deadline: Instant,
    ) -> RemoteResult<()> {
        let future = self
            .client
            .reconfigure(handle, slot, image.to_vec(), |_, _| {});
        self.run("reconfigure", deadline, future)
    }

    fn map_mmio(&self, handle: u64, index: u32, deadline: Instant) -> RemoteResult<(u64, u64)> {
        self.run("map-mmio", deadline, self.client.map_mmio(handle, index))
    }

    fn mmio_read(
        &self,
        region: u64,
        offset: u64,
        access: accelhost::remote::AccessWidth,
        deadline: Instant,
    ) -> RemoteResult<u64> {
        if width(access) {
            self.run("mmio read", deadline, self.client.read64(region, offset))
        } else {
            let read = async { self.client.read32(region, offset).await.map(u64::from) };
            self.run("mmio read", deadline, read)
        }
    }

    fn mmio_write(
        &self,
        region: u64,
        offset: u64,
        access: accelhost::remote::AccessWidth,
        value: u64,
        deadline: Instant,
    ) -> RemoteResult<()> {
        if width(access) {
            self.run(
                "mmio write",
                deadline,
                self.client.write64(region, offset, value),
            )
        } else {
            let write = self.client.write32(region, offset, value as u32);
            self.run("mmio write", deadline, write)
        }
    }

    fn prepare_buffer(
        &self,
        handle: u64,
        size: u64,
        read_only: bool,
        deadline: Instant,
    ) -> RemoteResult<RemoteObject> {
        let buffer = self.run(
            "prepare-buffer",
            deadline,
            self.client.prepare(handle, size, read_only),
        )?;
        let memory = self.redeem(buffer.buffer, buffer.shared, deadline)?;
        Ok(RemoteObject {
            id: buffer.buffer,
            size: buffer.size,
            address: buffer.iova,
            memory,
        })
    }

    fn alloc(
        &self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
        deadline: Instant,
    ) -> RemoteResult<RemoteObject> {
        let kind = match kind {
            MemoryKind::Host => proto::MemoryKind::Host,
            MemoryKind::Device => proto::MemoryKind::Device,
            MemoryKind::Shared => proto::MemoryKind::Shared,
        };
        let memory = self.run(
            "mem-alloc",
            deadline,
            self.client.alloc(handle, kind, size, bank),
        )?;
        let shared = self.redeem(memory.memory, memory.shared, deadline)?;
        Ok(RemoteObject {
            id: memory.memory,
            size: memory.size,
            address: memory.device_address,
            memory: shared,
        })
    }

    fn sync(&self, watched: &[u64], pushes: &[Page], deadline: Instant) -> RemoteResult<Vec<Page>> {
        let pushes = pushes
            .iter()
            .map(|p| proto::Page {
                object: p.object,
                offset: p.offset,
                data: bytes::Bytes::copy_from_slice(&p.data),
            })
            .collect();
        let pulled = self.run("buffer sync", deadline, self.client.sync(watched, pushes))?;
        Ok(pulled
            .into_iter()
            .map(|p| Page {
                object: p.object,
                offset: p.offset,
                data: p.data.to_vec(),
            })
            .collect())
    }

    fn create_program(&self, handle: u64, image: &[u8], deadline: Instant) -> RemoteResult<u64> {
        if image.is_empty() {
            self.run(
                "program-create",
                deadline,
                self.client.builtin_program(handle),
            )
        } else {
            self.run(
                "program-create",
                deadline,
                self.client.create_program(handle, image),
            )
        }
    }

    fn kernel(&self, program: u64, name: &str, deadline: Instant) -> RemoteResult<u64> {
        self.run("kernel-get", deadline, self.client.kernel(program, name))
    }

    fn create_queue(&self, handle: u64, deadline: Instant) -> RemoteResult<u64> {
        self.run("queue-create", deadline, self.client.create_queue(handle))
    }

    fn enqueue_memcpy(
        &self,
        queue: u64,
        (dst, dst_offset): (u64, u64),
        (src, src_offset): (u64, u64),
        size: u64,
        done: Done,
    ) -> RemoteResult<()> {
        // The stream names the session; the commands need not.
        let work = proto::command::Work::Memcpy(proto::MemcpyRequest {
            session: String::new(),
            queue,
            dst,
            dst_offset,
            src,
            src_offset,
            size,
        });
        self.submit(work, done)
    }

    fn enqueue_launches(
        &self,
        queue: u64,
        launches: &[RemoteLaunch],
        done: Done,
    ) -> RemoteResult<()> {
        let args = |args: &[RemoteArg]| args.iter().map(wire_arg).collect();
        let work = match launches {
            [launch] => proto::command::Work::Launch(proto::LaunchRequest {
                session: String::new(),
                queue,
                kernel: launch.kernel,
                args: args(&launch.args),
            }),
            _ => proto::command::Work::Launches(proto::LaunchBatch {
                queue,
                launches: launches
                    .iter()
                    .map(|launch| proto::BatchedLaunch {
                        kernel: launch.kernel,
                        args: args(&launch.args),
                    })
                    .collect(),
            }),
        };
        self.submit(work, done)
    }

    fn register_event(
        &self,
        handle: u64,
        kind: EventKind,
        vector: u32,
        deadline: Instant,
    ) -> RemoteResult<u64> {
        let kind = match kind {
            EventKind::Interrupt => proto::EventKind::Interrupt,
            EventKind::Error => proto::EventKind::Error,
            EventKind::PowerThermal => proto::EventKind::PowerThermal,
        };
        let future = self.client.register_event(handle, kind, vector);
        self.run("register-event", deadline, future)
    }

    fn watch_event(&self, event: u64, done: Done) {
        let client: Weak<Client> = Arc::downgrade(&self.client);
        self.runtime.spawn(async move {
            let outcome = loop {
                let Some(client) = client.upgrade() else {
                    break Err("the session with the node ended before the event finished".into());
                };
                match client.event_wait(event, EVENT_WAIT).await {
                    Ok(state) => match state.phase() {
                        proto::EventPhase::Complete => {
                            let _ = client.release(event).await;
                            break Ok(());
                        }
                        proto::EventPhase::Failed => {
                            let _ = client.release(event).await;
                            break Err(state.message);
                        }
                        _ => continue,
                    },
                    Err(err) => break Err(err.to_string()),
                }
            };
            // `done` reads the mirrors back: a blocking call, not for this runtime's workers.
            tokio::task::spawn_blocking(move || done(outcome));
        });
    }

    fn release(&self, object: u64, deadline: Instant) -> RemoteResult<()> {
        self.settle(deadline);
        self.run("release", deadline, self.client.release(object))
    }
}

/// A launch argument as the wire carries it.
fn wire_arg(arg: &RemoteArg) -> proto::Arg {
    use proto::arg::Value;
    proto::Arg {
        value: Some(match arg {
            RemoteArg::Memory { object, offset } => Value::Memory(proto::MemoryArg {
                memory: *object,
                offset: *offset,
            }),
            RemoteArg::Scalar32(v) => Value::U32(*v),
            RemoteArg::Scalar64(v) => Value::U64(*v),
            RemoteArg::Bytes(b) => Value::Bytes(bytes::Bytes::copy_from_slice(b)),
        }),
    }
}
