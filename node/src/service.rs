//! The `Node` gRPC service over one `Host`: every call identifies its caller, finds the
//! caller's session, checks the client's grants and then makes the host call.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, RwLock};
use std::task::{Context, Poll};
use std::time::Duration;

use accelhost::{
    DmaBuffer, ErrorCode, Event, EventKind, EventStatus, Filter, Guid, Handle, Host, MemoryKind,
    MmioRegion, ObjectType, OpenMode, Queue, Token,
};
use tokio::sync::mpsc;
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

use crate::account::{DmaCaps, OverCap};
use crate::config::{ClientEntry, ClientIdentity, ServeConfig};
use crate::data::{Data, Mirrored, Shadow};
use crate::gate::{Admitted, ConnectionCaps, Gate, PeerKey};
use crate::health::{DeviceBook, DeviceHealth};
use crate::identity::Peer;
use crate::metrics::NodeMetrics;
use crate::pipeline::Work;
use crate::proto::{self, node_server};
use crate::session::{DmaCharge, Object, Session, SessionCaps, Sessions, SessionsFull, no_object};
use crate::status::{from_host, status};

/// The node service: one host, its serve config and its clients' sessions.
pub struct NodeService {
    host: Arc<Host>,
    config: RwLock<Arc<ServeConfig>>,
    sessions: Arc<Sessions>,
    metrics: Arc<NodeMetrics>,
    enumeration: Enumerations,
    devices: Arc<DeviceBook>,
    /// The client entries of Kubernetes allocations, by allocation id.
    allocations: RwLock<HashMap<String, Arc<ClientEntry>>>,
    /// The connections open on every listener of the node's service, by peer.
    connections: Arc<Gate>,
}

/// How long the node answers enumerations from the last one of its host (every plugin asked):
/// many clients enumerating at once cost the plugins one call each. An open, close, reset or
/// reconfigure through the node ends it sooner; a change made outside the node shows within it.
const ENUMERATION_TTL: Duration = Duration::from_secs(1);

/// The host's last enumeration, and the one in progress.
#[derive(Default)]
struct Enumerations {
    last: std::sync::Mutex<Option<(std::time::Instant, u64, Vec<Token>)>>,
    /// Bumped by every call that changes what an enumeration says.
    changes: std::sync::atomic::AtomicU64,
    /// One host enumeration at a time; the callers that wait for it reuse it.
    asking: tokio::sync::Mutex<()>,
}

/// What a reload changed.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    /// Sessions ended because their client's entry was removed or changed, by client name.
    pub ended: Vec<String>,
    /// Sessions kept.
    pub kept: usize,
    /// Settings that changed but take effect only when the node restarts.
    pub need_restart: Vec<&'static str>,
}

impl NodeService {
    /// A service over `host`, serving the clients `config` names.
    pub fn new(host: Arc<Host>, config: Arc<ServeConfig>) -> NodeService {
        let sessions = Arc::new(Sessions::default());
        let devices = Arc::new(DeviceBook::default());
        let connections = Arc::new(Gate::default());
        NodeService {
            metrics: Arc::new(NodeMetrics::new(
                host.clone(),
                sessions.clone(),
                devices.clone(),
                connections.clone(),
            )),
            host,
            config: RwLock::new(config),
            sessions,
            enumeration: Enumerations::default(),
            devices,
            allocations: RwLock::default(),
            connections,
        }
    }

    /// `incoming`'s connections within the node's connection limits (read at each accept):
    /// every listener of the node's service takes its connections through this.
    pub fn admit_each<S, IO>(
        self: &Arc<Self>,
        incoming: S,
        listener: &'static str,
        peer_of: impl Fn(&IO) -> PeerKey + Send + 'static,
    ) -> impl tokio_stream::Stream<Item = std::io::Result<Admitted<IO>>> + Send + 'static
    where
        S: tokio_stream::Stream<Item = std::io::Result<IO>> + Send + 'static,
        IO: Send + 'static,
    {
        let service = Arc::downgrade(self);
        self.connections.admit_each(
            incoming,
            listener,
            move || match service.upgrade() {
                Some(service) => {
                    let limits = service.limits();
                    ConnectionCaps {
                        node: limits.max_connections,
                        peer: limits.max_connections_per_peer,
                    }
                }
                None => ConnectionCaps { node: 0, peer: 0 },
            },
            peer_of,
        )
    }

    /// Enqueues `work` for a unary call: the event becomes an object of the session.
    async fn enqueue(
        &self,
        session: &Session,
        owner: u64,
        work: Work,
        call: &str,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        self.room_for_object(session, call)?;
        let event = blocking(move || work.enqueue().map_err(from_host)).await?;
        let number = session.objects().insert(Object::Event(owner, event));
        Ok(Response::new(proto::ObjectReply { object: number }))
    }

    /// Offers the memory of the session's new object `number` to a client on a Unix socket
    /// that asked for it ([`crate::shared_memory`]): the ticket for the reply, or `None`
    /// (the client mirrors the object) when the caller is not local, the memory
    /// cannot be shared or the session has too many offers pending.
    fn offer_memory<T>(
        &self,
        request: &Request<T>,
        session: &Session,
        objects: &mut crate::session::Objects,
        number: u64,
        share: impl FnOnce() -> accelhost::Result<Option<std::os::fd::OwnedFd>>,
    ) -> Option<proto::SharedMemory> {
        if !crate::shared_memory::offered_to(&Peer::of(request)) {
            return None;
        }
        let memory = match share() {
            Ok(memory) => memory?,
            Err(err) => {
                tracing::debug!(session = %session.id, "sharing object {number}: {err}");
                return None;
            }
        };
        let ticket = objects.offer(&session.id, number, memory)?;
        Some(proto::SharedMemory {
            ticket: ticket.into(),
        })
    }

    /// The connections open on the node's listeners.
    pub fn connections(&self) -> &Arc<Gate> {
        &self.connections
    }

    /// The host the node serves.
    pub fn host(&self) -> &Arc<Host> {
        &self.host
    }

    /// The health of the node's devices, as last judged.
    pub fn device_book(&self) -> &Arc<DeviceBook> {
        &self.devices
    }

    /// Enumerates (from the node's cache when it is fresh) and judges every device's health.
    pub async fn check_health(&self) -> Arc<Vec<DeviceHealth>> {
        if let Err(status) = self.devices().await {
            tracing::warn!(error = %status.message(), "the health check could not enumerate");
        }
        let host = self.host.clone();
        let plugins = tokio::task::spawn_blocking(move || host.plugins())
            .await
            .unwrap_or_default();
        self.devices.judge(&plugins)
    }

    /// Checks the devices' health every `health_interval_ms` until `stopped` says stop.
    pub async fn watch_health(&self, mut stopped: tokio::sync::watch::Receiver<bool>) {
        loop {
            self.check_health().await;
            let interval = self.config().health_interval;
            tokio::select! {
                _ = tokio::time::sleep(interval) => {}
                _ = stopped.wait_for(|stop| *stop) => return,
            }
        }
    }

    /// Serves the client of Kubernetes allocation `entry` (its identity names the allocation).
    pub fn grant_allocation(&self, entry: Arc<ClientEntry>) {
        if let ClientIdentity::Allocation(id) = &entry.identity {
            self.allocations
                .write()
                .unwrap_or_else(|p| p.into_inner())
                .insert(id.clone(), entry);
        }
    }

    /// Stops serving allocation `id`, ending its sessions (releasing what they held).
    pub fn revoke_allocation(&self, id: &str) {
        let removed = self
            .allocations
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(entry) = removed {
            self.sessions.end_where(|client| *client == *entry);
            self.sessions.forget_attached(&entry.name);
        }
    }

    /// Whether the client named `client` has attached since the node started.
    pub fn ever_attached(&self, client: &str) -> bool {
        self.sessions.ever_attached(client)
    }

    /// How many sessions the client named `client` has open.
    pub fn sessions_of(&self, client: &str) -> usize {
        self.sessions.per_client().get(client).copied().unwrap_or(0)
    }

    /// Every device of the host, from an enumeration at most [`ENUMERATION_TTL`] old.
    async fn devices(&self) -> Result<Vec<Token>, Status> {
        let fresh = |e: &Enumerations| {
            let changes = e.changes.load(std::sync::atomic::Ordering::Acquire);
            e.last
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .as_ref()
                .filter(|(at, seen, _)| *seen == changes && at.elapsed() < ENUMERATION_TTL)
                .map(|(_, _, tokens)| tokens.clone())
        };
        if let Some(tokens) = fresh(&self.enumeration) {
            return Ok(tokens);
        }
        let _asking = self.enumeration.asking.lock().await;
        if let Some(tokens) = fresh(&self.enumeration) {
            return Ok(tokens);
        }
        let changes = self
            .enumeration
            .changes
            .load(std::sync::atomic::Ordering::Acquire);
        let host = self.host.clone();
        let tokens = blocking(move || Ok(host.enumerate(&[]).tokens)).await?;
        self.devices.record(&tokens);
        *self
            .enumeration
            .last
            .lock()
            .unwrap_or_else(|p| p.into_inner()) =
            Some((std::time::Instant::now(), changes, tokens.clone()));
        Ok(tokens)
    }

    /// Says that what an enumeration shows changed.
    fn devices_changed(&self) {
        self.enumeration
            .changes
            .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
    }

    /// The node's metrics.
    pub fn metrics(&self) -> Arc<NodeMetrics> {
        self.metrics.clone()
    }

    /// The serve config in force.
    pub fn config(&self) -> Arc<ServeConfig> {
        self.config
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Puts `new` in force. Sessions of clients whose entry is unchanged go on; the others
    /// end (releasing what they held). Listeners and the message size stay as bound.
    pub fn reload(&self, new: ServeConfig) -> Reloaded {
        let old = self.config();
        let mut reloaded = Reloaded::default();
        if old.unix != new.unix || old.tcp != new.tcp || old.metrics != new.metrics {
            reloaded.need_restart.push("listen");
        }
        if old.kubernetes != new.kubernetes {
            reloaded.need_restart.push("kubernetes");
        }
        if old.limits.max_message_kib != new.limits.max_message_kib {
            reloaded.need_restart.push("limits.max_message_kib");
        }
        let new = Arc::new(new);
        *self.config.write().unwrap_or_else(|p| p.into_inner()) = new.clone();
        let (ended, kept) = self.sessions.end_where(|client| {
            !matches!(client.identity, ClientIdentity::Allocation(_))
                && new.clients.iter().all(|entry| **entry != *client)
        });
        reloaded.ended = ended;
        reloaded.kept = kept;
        reloaded
    }

    /// The open sessions (ended all at once at shutdown).
    pub fn sessions(&self) -> Arc<Sessions> {
        self.sessions.clone()
    }

    /// The client entry the transport says the caller is.
    /// The caller's client entry: the one the authorization layer found for this request
    /// ([`crate::authorize`]), else looked up now.
    fn client<T>(&self, request: &Request<T>, call: &str) -> Result<Arc<ClientEntry>, Status> {
        match request.extensions().get::<Arc<ClientEntry>>() {
            Some(client) => Ok(client.clone()),
            None => self.client_of(request.extensions(), call),
        }
    }

    /// The client entry of the caller whose connection put these extensions on its request.
    pub fn client_of(
        &self,
        extensions: &tonic::Extensions,
        call: &str,
    ) -> Result<Arc<ClientEntry>, Status> {
        let peer = Peer::from_extensions(extensions);
        let config = self.config();
        peer.identities()
            .iter()
            .find_map(|identity| match identity {
                ClientIdentity::Allocation(id) => self
                    .allocations
                    .read()
                    .unwrap_or_else(|p| p.into_inner())
                    .get(id)
                    .cloned(),
                _ => config.client(identity),
            })
            .ok_or_else(|| {
                let why = match &peer {
                    Peer::Allocation { .. } => {
                        "the allocation has ended: the kubelet gave its devices to another pod"
                    }
                    _ => "no entry of the serve config names it",
                };
                status(
                    ErrorCode::PermissionDenied,
                    format!("{call}: {peer} is not a client of this node ({why})"),
                )
            })
    }

    /// The session `id`, if the caller is the client that attached it.
    fn session<T>(
        &self,
        request: &Request<T>,
        id: &str,
        call: &str,
    ) -> Result<Arc<Session>, Status> {
        let client = self.client(request, call)?;
        self.session_of(&client, id, call)
    }

    fn limits(&self) -> crate::config::Limits {
        self.config().limits.clone()
    }
}

/// Runs a host call that may block (it calls into a plugin) on tokio's blocking pool.
async fn blocking<R: Send + 'static>(
    f: impl FnOnce() -> Result<R, Status> + Send + 'static,
) -> Result<R, Status> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|err| status(ErrorCode::Internal, format!("a host call panicked: {err}")))?
}

fn too_many(session: &Session, call: &str, max: usize) -> Status {
    status(
        ErrorCode::NoSpace,
        format!(
            "{call}: session of client '{}' already holds {max} objects (limits.max_objects_per_session)",
            session.client.name
        ),
    )
}

fn filter_of(proto: &proto::Filter) -> Result<Filter, Status> {
    let mut filter = Filter::new();
    match proto::ObjectType::try_from(proto.object_type) {
        Ok(proto::ObjectType::Device) => filter = filter.object_type(ObjectType::Device),
        Ok(proto::ObjectType::Accelerator) => filter = filter.object_type(ObjectType::Accelerator),
        Ok(proto::ObjectType::Unspecified) => {}
        Err(_) => {
            return Err(status(
                ErrorCode::InvalidArgument,
                format!(
                    "Enumerate: object_type {} is not a known kind",
                    proto.object_type
                ),
            ));
        }
    }
    if let Some(guid) = &proto.guid {
        let guid: Guid = guid.parse().map_err(|err| {
            status(
                ErrorCode::InvalidArgument,
                format!("Enumerate: guid '{guid}': {err}"),
            )
        })?;
        filter = filter.guid(guid);
    }
    let id16 = |value: u32, field: &str| {
        u16::try_from(value).map_err(|_| {
            status(
                ErrorCode::InvalidArgument,
                format!("Enumerate: {field} {value:#x} does not fit 16 bits"),
            )
        })
    };
    if let Some(vendor) = proto.vendor_id {
        filter = filter.vendor_id(id16(vendor, "vendor_id")?);
    }
    if let Some(device) = proto.device_id {
        filter = filter.device_id(id16(device, "device_id")?);
    }
    if let Some(address) = &proto.bus_address {
        let address = address.parse().map_err(|err| {
            status(
                ErrorCode::InvalidArgument,
                format!("Enumerate: bus_address '{address}': {err}"),
            )
        })?;
        filter = filter.bus_address(address);
    }
    if let Some(device_type) = &proto.device_type {
        filter = filter.device_type(device_type.clone());
    }
    Ok(filter)
}

/// What an `Enumerate` answer keeps free of devices within the message limit: the answer's
/// own framing and its list of what was left out.
const ENUMERATE_RESERVE: usize = 64 << 10;

/// The devices that fit `budget` bytes of an answer, each plugin getting an equal share and
/// what a plugin does not use going to the others (a plugin's devices are kept in order
/// while its share lasts); and, per plugin, how many were left out.
fn fair_share(
    devices: Vec<proto::Device>,
    budget: usize,
) -> (Vec<proto::Device>, Vec<proto::Omitted>) {
    use prost::Message;
    // What each device takes in the answer (its message, its tag and its length), and the
    // index of its plugin: both found once.
    let costs: Vec<usize> = devices
        .iter()
        .map(|device| {
            let len = device.encoded_len();
            len + 1 + prost::encoding::encoded_len_varint(len as u64)
        })
        .collect();
    if costs.iter().sum::<usize>() <= budget {
        return (devices, Vec::new());
    }
    let mut index_of: HashMap<&str, usize> = HashMap::new();
    let mut wants: Vec<usize> = Vec::new();
    let plugin_of: Vec<usize> = devices
        .iter()
        .zip(&costs)
        .map(|(device, &cost)| {
            let next = index_of.len();
            let i = *index_of.entry(device.plugin.as_str()).or_insert(next);
            if i == wants.len() {
                wants.push(0);
            }
            wants[i] += cost;
            i
        })
        .collect();
    // Water-filling: the smallest wants first, each taking at most an equal part of what
    // is left.
    let mut by_want: Vec<usize> = (0..wants.len()).collect();
    by_want.sort_by_key(|&i| wants[i]);
    let mut shares = vec![0usize; wants.len()];
    let mut left = budget;
    for (served, &i) in by_want.iter().enumerate() {
        shares[i] = wants[i].min(left / (wants.len() - served));
        left -= shares[i];
    }
    let mut used = vec![0usize; wants.len()];
    let mut omitted_at: Vec<Option<usize>> = vec![None; wants.len()];
    let mut omitted: Vec<proto::Omitted> = Vec::new();
    let mut kept = Vec::with_capacity(devices.len());
    for ((device, cost), i) in devices.into_iter().zip(costs).zip(plugin_of) {
        if used[i] + cost <= shares[i] {
            used[i] += cost;
            kept.push(device);
        } else if let Some(at) = omitted_at[i] {
            omitted[at].devices += 1;
        } else {
            omitted_at[i] = Some(omitted.len());
            omitted.push(proto::Omitted {
                plugin: device.plugin,
                devices: 1,
            });
        }
    }
    (kept, omitted)
}

/// The wire form of a device.
pub fn device_of(token: &Token, properties: &accelhost::Properties) -> proto::Device {
    proto::Device {
        id: token.id(),
        plugin: token.plugin().to_owned(),
        object_type: match properties.object_type {
            ObjectType::Device => proto::ObjectType::Device,
            ObjectType::Accelerator => proto::ObjectType::Accelerator,
        } as i32,
        name: properties.name.clone(),
        guid: properties.guid.to_string(),
        vendor_id: properties.vendor_id.into(),
        device_id: properties.device_id.into(),
        bus_address: properties.bus_address.map(|a| a.to_string()),
        socket_id: properties.socket_id,
        device_type: properties.device_type.clone(),
        host: properties.host.clone(),
        num_mmio: properties.num_mmio,
        num_interrupts: properties.num_interrupts,
        accelerator_state: match properties.accelerator_state {
            None => proto::AcceleratorState::Unspecified,
            Some(accelhost::AcceleratorState::Unassigned) => proto::AcceleratorState::Unassigned,
            Some(accelhost::AcceleratorState::Assigned) => proto::AcceleratorState::Assigned,
        } as i32,
        parent: properties.parent,
        extras: properties
            .extras
            .iter()
            .map(|(key, value)| proto::Extra {
                key: key.to_string(),
                value: value.to_string(),
            })
            .collect(),
    }
}

/// The `Attach` stream: ends when the session does; dropping it (the client went) ends
/// the session.
pub struct SessionStream {
    events: ReceiverStream<Result<proto::SessionEvent, Status>>,
    sessions: Arc<Sessions>,
    id: String,
}

impl Stream for SessionStream {
    type Item = Result<proto::SessionEvent, Status>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        Pin::new(&mut self.events).poll_next(cx)
    }
}

impl Drop for SessionStream {
    fn drop(&mut self) {
        self.sessions.end(&self.id);
    }
}

/// The largest chunk `BufferRead` sends.
const READ_CHUNK_BYTES: u64 = 1 << 20;

type DataStream = ReceiverStream<Result<proto::Data, Status>>;

/// `call` names the call in errors; it is formatted only when there is one.
fn width_of(width: i32, call: &dyn std::fmt::Display) -> Result<proto::Width, Status> {
    match proto::Width::try_from(width) {
        Ok(proto::Width::Width32) => Ok(proto::Width::Width32),
        Ok(proto::Width::Width64) => Ok(proto::Width::Width64),
        _ => Err(status(
            ErrorCode::InvalidArgument,
            format!("{call}: width must be WIDTH_32 or WIDTH_64"),
        )),
    }
}

fn mmio_write(
    region: &accelhost::MmioRegion,
    offset: u64,
    width: proto::Width,
    value: u64,
    call: &dyn std::fmt::Display,
) -> Result<(), Status> {
    match width {
        proto::Width::Width32 => {
            let value = u32::try_from(value).map_err(|_| {
                status(
                    ErrorCode::InvalidArgument,
                    format!("{call}: value {value:#x} does not fit a 32-bit write"),
                )
            })?;
            region.write32(offset, value)
        }
        _ => region.write64(offset, value),
    }
    .map_err(|err| status(err.code(), format!("{call}: {err}")))
}

/// The granule of the DMA grant: buffers and memory are charged in whole pages.
const DMA_PAGE: u64 = 4096;

/// A program image received from a client, with what it charges to the client's DMA grant
/// until it has been loaded.
struct Image {
    image: Vec<u8>,
    _charge: DmaCharge,
}

#[tonic::async_trait]
impl node_server::Node for NodeService {
    type AttachStream = SessionStream;

    async fn attach(
        &self,
        request: Request<proto::AttachRequest>,
    ) -> Result<Response<SessionStream>, Status> {
        let client = self.client(&request, "Attach")?;
        let (events, receiver) = mpsc::channel(1);
        let session = Arc::new(Session::new(
            client.clone(),
            self.sessions.account(&client.name),
            events.clone(),
            self.limits().max_streams_per_session,
        ));
        let id = session.id.clone();
        let limits = self.limits();
        let caps = SessionCaps {
            node: limits.max_sessions,
            client: limits.max_sessions_per_client,
        };
        self.sessions.insert(session, caps).map_err(|full| {
            let message = match full {
                SessionsFull::Node(open) => format!(
                    "Attach: the node already has {open} sessions open (limits.max_sessions)"
                ),
                SessionsFull::Client(open) => format!(
                    "Attach: client '{}' already has {open} sessions open \
                     (limits.max_sessions_per_client)",
                    client.name
                ),
            };
            self.refuse(&client.name, "Attach", ErrorCode::NoSpace, message)
        })?;
        tracing::info!(
            session = %id,
            client = %client.name,
            label = %accelhost::text::inert(&request.get_ref().client_label),
            "session attached"
        );
        let attached = proto::SessionEvent {
            event: Some(proto::session_event::Event::Attached(proto::Attached {
                session: id.clone(),
                client: client.name.clone(),
                node: self.config().node_name.clone(),
                max_message_bytes: self.limits().max_message_bytes() as u64,
            })),
        };
        // The channel has room for this one event; the sender stays with the session.
        let _ = events.try_send(Ok(attached));
        Ok(Response::new(SessionStream {
            events: ReceiverStream::new(receiver),
            sessions: self.sessions.clone(),
            id,
        }))
    }

    async fn enumerate(
        &self,
        request: Request<proto::EnumerateRequest>,
    ) -> Result<Response<proto::EnumerateReply>, Status> {
        let session = self.session(&request, &request.get_ref().session, "Enumerate")?;
        let filters = request
            .get_ref()
            .filters
            .iter()
            .map(filter_of)
            .collect::<Result<Vec<_>, _>>()?;
        let tokens = self.devices().await?;
        let visible: Vec<(String, Token)> = tokens
            .into_iter()
            .filter(|token| {
                filters.is_empty() || filters.iter().any(|f| f.matches(token.properties()))
            })
            .map(|token| (token.id(), token))
            .filter(|(id, _)| session.client.grants.allows_device(id))
            .collect();
        let devices: Vec<proto::Device> = visible
            .iter()
            .map(|(_, token)| device_of(token, token.properties()))
            .collect();
        session.objects().devices = visible.into_iter().collect();
        let budget = self
            .limits()
            .max_message_bytes()
            .saturating_sub(ENUMERATE_RESERVE);
        let (devices, omitted) = fair_share(devices, budget);
        if !omitted.is_empty() {
            tracing::warn!(
                client = %session.client.name,
                omitted = ?omitted.iter().map(|o| (&o.plugin, o.devices)).collect::<Vec<_>>(),
                "Enumerate: devices left out to keep the answer within limits.max_message_kib"
            );
        }
        Ok(Response::new(proto::EnumerateReply { devices, omitted }))
    }

    async fn describe(
        &self,
        request: Request<proto::DeviceRequest>,
    ) -> Result<Response<proto::Device>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "Describe")?;
        let token = self.enumerated(&session, &req.device, "Describe")?;
        let properties = blocking({
            let token = token.clone();
            move || token.refresh().map_err(from_host)
        })
        .await?;
        Ok(Response::new(device_of(&token, &properties)))
    }

    async fn open(
        &self,
        request: Request<proto::OpenRequest>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "Open")?;
        let token = self.enumerated(&session, &req.device, "Open")?;
        self.room_for_object(&session, "Open")?;
        let mode = if req.shared {
            OpenMode::Shared
        } else {
            OpenMode::Exclusive
        };
        let host = self.host.clone();
        let handle = blocking(move || host.open(&token, mode).map_err(from_host)).await?;
        self.devices_changed();
        let number = session.objects().insert(Object::Handle(handle));
        Ok(Response::new(proto::ObjectReply { object: number }))
    }

    async fn close(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<proto::Empty>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "Close")?;
        self.handle(&session, req.object, "Close")?;
        let taken = session.objects().take(req.object);
        blocking(move || release_in_order(taken)).await?;
        self.devices_changed();
        Ok(Response::new(proto::Empty {}))
    }

    async fn reset(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<proto::Empty>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "Reset")?;
        let handle = self.handle(&session, req.object, "Reset")?;
        blocking(move || handle.reset().map_err(from_host)).await?;
        self.devices_changed();
        Ok(Response::new(proto::Empty {}))
    }

    async fn reconfigure(
        &self,
        request: Request<Streaming<proto::ReconfigureChunk>>,
    ) -> Result<Response<proto::Empty>, Status> {
        let client = self.client(&request, "Reconfigure")?;
        let mut chunks = request.into_inner();
        let (session, header, image) = self
            .receive_image(&client, &mut chunks, "Reconfigure", |c| (c.header, c.data))
            .await?;
        let handle = self.handle(&session, header.handle, "Reconfigure")?;
        let slot = header.slot;
        blocking(move || handle.reconfigure(slot, &image.image).map_err(from_host)).await?;
        self.devices_changed();
        Ok(Response::new(proto::Empty {}))
    }

    async fn map_mmio(
        &self,
        request: Request<proto::MapMmioRequest>,
    ) -> Result<Response<proto::MmioRegion>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "MapMmio")?;
        let handle = self.handle(&session, req.handle, "MapMmio")?;
        self.room_for_object(&session, "MapMmio")?;
        let index = req.index;
        let region = blocking(move || handle.map_mmio(index).map_err(from_host)).await?;
        let size = region.size();
        let number = session.objects().insert(Object::Region(req.handle, region));
        Ok(Response::new(proto::MmioRegion {
            region: number,
            size,
        }))
    }

    async fn mmio_read(
        &self,
        request: Request<proto::MmioReadRequest>,
    ) -> Result<Response<proto::Value>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "MmioRead")?;
        let region = self.region(&session, req.region, "MmioRead")?;
        let value = match width_of(req.width, &"MmioRead")? {
            proto::Width::Width32 => region.read32(req.offset).map(u64::from),
            _ => region.read64(req.offset),
        }
        .map_err(from_host)?;
        Ok(Response::new(proto::Value { value }))
    }

    async fn mmio_write(
        &self,
        request: Request<proto::MmioWriteRequest>,
    ) -> Result<Response<proto::Empty>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "MmioWrite")?;
        let region = self.region(&session, req.region, "MmioWrite")?;
        let width = width_of(req.width, &"MmioWrite")?;
        mmio_write(&region, req.offset, width, req.value, &"MmioWrite")?;
        Ok(Response::new(proto::Empty {}))
    }

    async fn mmio_write_batch(
        &self,
        request: Request<proto::MmioWriteBatchRequest>,
    ) -> Result<Response<proto::Empty>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "MmioWriteBatch")?;
        let region = self.region(&session, req.region, "MmioWriteBatch")?;
        for (i, write) in req.writes.iter().enumerate() {
            let call = format_args!("MmioWriteBatch: writes[{i}]");
            let width = width_of(write.width, &call)?;
            mmio_write(&region, write.offset, width, write.value, &call)?;
        }
        Ok(Response::new(proto::Empty {}))
    }

    async fn mmio_poll(
        &self,
        request: Request<proto::PollRequest>,
    ) -> Result<Response<proto::Value>, Status> {
        let req = request.get_ref().clone();
        let session = self.session(&request, &req.session, "MmioPoll")?;
        let region = self.region(&session, req.object, "MmioPoll")?;
        let timeout = self.poll_timeout(req.timeout_ms, "MmioPoll")?;
        let value = poll_word(
            || region.read64(req.offset),
            (req.mask, req.expected),
            timeout,
            || format!("MmioPoll: register {:#x}", req.offset),
        )
        .await?;
        Ok(Response::new(proto::Value { value }))
    }

    async fn prepare_buffer(
        &self,
        request: Request<proto::PrepareBufferRequest>,
    ) -> Result<Response<proto::Buffer>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "PrepareBuffer")?;
        let handle = self.handle(&session, req.handle, "PrepareBuffer")?;
        let charge = self.room_for_memory(&session, req.size, "PrepareBuffer")?;
        let (size, read_only) = (req.size, req.read_only);
        let buffer = blocking(move || {
            if read_only {
                handle.prepare_read_only_buffer(size)
            } else {
                handle.prepare_buffer(size)
            }
            .map_err(from_host)
        })
        .await?;
        let (size, iova) = (buffer.size(), buffer.iova());
        let buffer = Arc::new(buffer);
        let mut objects = session.objects();
        let number = objects.insert_charged(Object::Buffer(req.handle, buffer.clone()), charge);
        let shared = (req.share_memory)
            .then(|| self.offer_memory(&request, &session, &mut objects, number, || buffer.share()))
            .flatten();
        Ok(Response::new(proto::Buffer {
            buffer: number,
            size,
            iova,
            shared,
        }))
    }

    async fn buffer_write(
        &self,
        request: Request<Streaming<proto::BufferWriteChunk>>,
    ) -> Result<Response<proto::Empty>, Status> {
        let client = self.client(&request, "BufferWrite")?;
        let mut chunks = request.into_inner();
        let mut current: Option<(String, u64, Data)> = None;
        while let Some(chunk) = chunks.message().await? {
            let target = match &current {
                Some((session, number, target))
                    if *session == chunk.session && *number == chunk.object =>
                {
                    target.clone()
                }
                _ => {
                    let session = self.session_of(&client, &chunk.session, "BufferWrite")?;
                    let target = self.data(&session, chunk.object, "BufferWrite")?;
                    current = Some((chunk.session.clone(), chunk.object, target.clone()));
                    target
                }
            };
            target.write(chunk.offset, &chunk.data).map_err(from_host)?;
            self.metrics
                .transferred(&client.name, true, chunk.data.len() as u64);
        }
        Ok(Response::new(proto::Empty {}))
    }

    type BufferReadStream = DataStream;

    async fn buffer_read(
        &self,
        request: Request<proto::BufferReadRequest>,
    ) -> Result<Response<DataStream>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "BufferRead")?;
        let target = self.data(&session, req.object, "BufferRead")?;
        let end = req
            .offset
            .checked_add(req.length)
            .filter(|end| *end <= target.size())
            .ok_or_else(|| {
                status(
                    ErrorCode::InvalidArgument,
                    format!(
                        "BufferRead: {} bytes at {:#x} pass the end of the {}-byte {}",
                        req.length,
                        req.offset,
                        target.size(),
                        target.kind()
                    ),
                )
            })?;
        // Room for the protobuf framing within the message limit, and at most 1 MiB: what an
        // unread stream holds on the node is a few chunks.
        let most = (self.limits().max_message_bytes() as u64 - 64).min(READ_CHUNK_BYTES);
        let chunk = match req.chunk_bytes {
            0 => most,
            n => n.min(most),
        };
        let permit = self.stream_permit(&session, "BufferRead")?;
        let (metrics, client) = (self.metrics.clone(), session.client.name.clone());
        // One chunk queued and one being read: a client that reads slowly holds at most
        // that, plus what the transport buffers, on the node.
        let (sender, receiver) = mpsc::channel(1);
        let start = req.offset;
        tokio::spawn(async move {
            let _permit = permit;
            let mut at = start;
            while at < end {
                let len = chunk.min(end - at) as usize;
                let mut data = vec![0u8; len];
                // A copy out of host memory: no plugin call, nothing that waits.
                let item = target
                    .read(at, &mut data)
                    .map(|()| proto::Data { data: data.into() })
                    .map_err(from_host);
                let failed = item.is_err();
                if sender.send(item).await.is_err() || failed {
                    return;
                }
                metrics.transferred(&client, false, len as u64);
                at += len as u64;
            }
        });
        Ok(Response::new(ReceiverStream::new(receiver)))
    }

    async fn buffer_fill(
        &self,
        request: Request<proto::BufferFillRequest>,
    ) -> Result<Response<proto::Empty>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "BufferFill")?;
        let buffer = self.buffer(&session, req.object, "BufferFill")?;
        let byte = u8::try_from(req.byte).map_err(|_| {
            status(
                ErrorCode::InvalidArgument,
                format!("BufferFill: byte {} does not fit 8 bits", req.byte),
            )
        })?;
        buffer
            .fill(req.offset, req.length, byte)
            .map_err(from_host)?;
        Ok(Response::new(proto::Empty {}))
    }

    async fn buffer_poll(
        &self,
        request: Request<proto::PollRequest>,
    ) -> Result<Response<proto::Value>, Status> {
        let req = request.get_ref().clone();
        let session = self.session(&request, &req.session, "BufferPoll")?;
        let target = self.data(&session, req.object, "BufferPoll")?;
        let timeout = self.poll_timeout(req.timeout_ms, "BufferPoll")?;
        let value = poll_word(
            || target.read_u64(req.offset),
            (req.mask, req.expected),
            timeout,
            || format!("BufferPoll: word {:#x}", req.offset),
        )
        .await?;
        Ok(Response::new(proto::Value { value }))
    }

    async fn buffer_sync(
        &self,
        request: Request<proto::BufferSyncRequest>,
    ) -> Result<Response<proto::BufferSyncReply>, Status> {
        let id = request.get_ref().session.clone();
        let session = self.session(&request, &id, "BufferSync")?;
        let req = request.into_inner();
        let mut mirrored: Vec<Mirrored> = Vec::with_capacity(req.objects.len());
        let put_back = |mirrored: Vec<Mirrored>| {
            let mut objects = session.objects();
            for m in mirrored {
                objects.put_shadow(m.object, m.shadow);
            }
        };
        for &object in &req.objects {
            if mirrored.iter().any(|m| m.object == object) {
                continue;
            }
            let found = self.data(&session, object, "BufferSync").and_then(|data| {
                let kept = session.objects().take_shadow(object);
                let shadow = match kept {
                    Some(shadow) => shadow,
                    None => Shadow::new(
                        data.size(),
                        self.reserve_dma(&session, data.size(), "BufferSync")?,
                    ),
                };
                Ok(Mirrored {
                    object,
                    data,
                    shadow,
                })
            });
            match found {
                Ok(m) => mirrored.push(m),
                Err(err) => {
                    put_back(mirrored);
                    return Err(err);
                }
            }
        }
        let budget = self
            .limits()
            .max_message_bytes()
            .saturating_sub(4096)
            .max(4096);
        let (client, pushed) = (
            session.client.name.clone(),
            req.pushes.iter().map(|p| p.data.len() as u64).sum::<u64>(),
        );
        let (mirrored, answer) = tokio::task::spawn_blocking(move || {
            let answer = crate::data::sync(&mut mirrored, req.pushes, budget);
            (mirrored, answer)
        })
        .await
        .map_err(|err| status(ErrorCode::Internal, format!("BufferSync panicked: {err}")))?;
        put_back(mirrored);
        let reply = answer?;
        self.metrics.transferred(&client, true, pushed);
        let pulled = reply.pulls.iter().map(|p| p.data.len() as u64).sum::<u64>();
        self.metrics.transferred(&client, false, pulled);
        Ok(Response::new(reply))
    }

    async fn release(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<proto::Empty>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "Release")?;
        match session.objects().get(req.object) {
            None => return Err(no_object(&session, "object", req.object, "Release")),
            Some(Object::Handle(_)) => {
                return Err(status(
                    ErrorCode::InvalidArgument,
                    format!("Release: {} is a handle: close it with Close", req.object),
                ));
            }
            Some(_) => {}
        }
        let taken = session.objects().take(req.object);
        blocking(move || release_in_order(taken)).await?;
        Ok(Response::new(proto::Empty {}))
    }

    async fn alloc(
        &self,
        request: Request<proto::AllocRequest>,
    ) -> Result<Response<proto::MemoryReply>, Status> {
        let req = request.get_ref().clone();
        let session = self.session(&request, &req.session, "Alloc")?;
        let handle = self.handle(&session, req.handle, "Alloc")?;
        let charge = self.room_for_memory(&session, req.size, "Alloc")?;
        let kind = match proto::MemoryKind::try_from(req.kind) {
            Ok(proto::MemoryKind::Host) => MemoryKind::Host,
            Ok(proto::MemoryKind::Device) => MemoryKind::Device,
            Ok(proto::MemoryKind::Shared) => MemoryKind::Shared,
            _ => {
                return Err(status(
                    ErrorCode::InvalidArgument,
                    "Alloc: kind must be HOST, DEVICE or SHARED",
                ));
            }
        };
        let memory = blocking(move || {
            match req.bank {
                Some(bank) => handle.alloc_in_bank(kind, req.size, bank),
                None => handle.alloc(kind, req.size),
            }
            .map_err(from_host)
        })
        .await?;
        let (size, device_address) = (memory.size(), memory.device_address());
        let mut objects = session.objects();
        let number = objects.insert_charged(Object::Memory(req.handle, memory.clone()), charge);
        let shared = (req.share_memory)
            .then(|| self.offer_memory(&request, &session, &mut objects, number, || memory.share()))
            .flatten();
        Ok(Response::new(proto::MemoryReply {
            memory: number,
            size,
            device_address,
            shared,
        }))
    }

    async fn create_program(
        &self,
        request: Request<Streaming<proto::ProgramChunk>>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let client = self.client(&request, "CreateProgram")?;
        let mut chunks = request.into_inner();
        let (session, header, image) = self
            .receive_image(&client, &mut chunks, "CreateProgram", |c| {
                (c.header, c.data)
            })
            .await?;
        let handle = self.handle(&session, header.handle, "CreateProgram")?;
        self.room_for_object(&session, "CreateProgram")?;
        let program =
            blocking(move || handle.create_program(&image.image).map_err(from_host)).await?;
        let number = session
            .objects()
            .insert(Object::Program(header.handle, program));
        Ok(Response::new(proto::ObjectReply { object: number }))
    }

    async fn builtin_program(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "BuiltinProgram")?;
        let handle = self.handle(&session, req.object, "BuiltinProgram")?;
        self.room_for_object(&session, "BuiltinProgram")?;
        let program = blocking(move || handle.builtin_program().map_err(from_host)).await?;
        let number = session
            .objects()
            .insert(Object::Program(req.object, program));
        Ok(Response::new(proto::ObjectReply { object: number }))
    }

    async fn kernel(
        &self,
        request: Request<proto::KernelRequest>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let req = request.get_ref().clone();
        let session = self.session(&request, &req.session, "Kernel")?;
        let found = match session.objects().get(req.program) {
            Some(Object::Program(owner, program)) => Some((*owner, program.clone())),
            _ => None,
        };
        let Some((owner, program)) = found else {
            return Err(no_object(&session, "program", req.program, "Kernel"));
        };
        self.room_for_object(&session, "Kernel")?;
        let kernel = blocking(move || program.kernel(&req.name).map_err(from_host)).await?;
        let number = session.objects().insert(Object::Kernel(owner, kernel));
        Ok(Response::new(proto::ObjectReply { object: number }))
    }

    async fn create_queue(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "CreateQueue")?;
        let handle = self.handle(&session, req.object, "CreateQueue")?;
        self.room_for_object(&session, "CreateQueue")?;
        let queue = blocking(move || handle.create_queue().map_err(from_host)).await?;
        let number = session.objects().insert(Object::Queue(req.object, queue));
        Ok(Response::new(proto::ObjectReply { object: number }))
    }

    async fn enqueue_memcpy(
        &self,
        request: Request<proto::MemcpyRequest>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "EnqueueMemcpy")?;
        let (owner, work) = Work::memcpy(&session, req, "EnqueueMemcpy")?;
        self.enqueue(&session, owner, work, "EnqueueMemcpy").await
    }

    async fn enqueue_launch(
        &self,
        request: Request<proto::LaunchRequest>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let session = self.session(&request, &request.get_ref().session, "EnqueueLaunch")?;
        let (owner, work) = Work::launch(&session, request.into_inner(), "EnqueueLaunch")?;
        self.enqueue(&session, owner, work, "EnqueueLaunch").await
    }

    type SubmitStream = crate::pipeline::Replies;

    async fn submit(
        &self,
        request: Request<Streaming<proto::SubmitRequest>>,
    ) -> Result<Response<Self::SubmitStream>, Status> {
        let client = self.client(&request, "Submit")?;
        let mut inbound = request.into_inner();
        let Some(first) = inbound.message().await? else {
            return Err(status(
                ErrorCode::InvalidArgument,
                "Submit: the stream ended before its first message",
            ));
        };
        let session = self.session_of(&client, &first.session, "Submit")?;
        let permit = self.stream_permit(&session, "Submit")?;
        Ok(Response::new(crate::pipeline::serve(
            session, first, inbound, permit,
        )))
    }

    async fn queue_finish(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<proto::Empty>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "QueueFinish")?;
        let (_, queue) = self.queue(&session, req.object, "QueueFinish")?;
        // Waited on a task, as polls are (ended if the client goes); then `finish` only
        // collects what finished.
        for event in queue.pending_events() {
            wait_until(|| event.status() != EventStatus::Pending, None).await;
        }
        blocking(move || queue.finish().map_err(from_host)).await?;
        Ok(Response::new(proto::Empty {}))
    }

    async fn register_event(
        &self,
        request: Request<proto::RegisterEventRequest>,
    ) -> Result<Response<proto::ObjectReply>, Status> {
        let req = request.get_ref().clone();
        let session = self.session(&request, &req.session, "RegisterEvent")?;
        let handle = self.handle(&session, req.handle, "RegisterEvent")?;
        let kind = match proto::EventKind::try_from(req.kind) {
            Ok(proto::EventKind::Interrupt) => EventKind::Interrupt,
            Ok(proto::EventKind::Error) => EventKind::Error,
            Ok(proto::EventKind::PowerThermal) => EventKind::PowerThermal,
            _ => {
                return Err(status(
                    ErrorCode::InvalidArgument,
                    "RegisterEvent: kind must be INTERRUPT, ERROR or POWER_THERMAL",
                ));
            }
        };
        self.room_for_object(&session, "RegisterEvent")?;
        let event =
            blocking(move || handle.register_event(kind, req.vector).map_err(from_host)).await?;
        let number = session.objects().insert(Object::Event(req.handle, event));
        Ok(Response::new(proto::ObjectReply { object: number }))
    }

    async fn event_status(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<proto::EventState>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "EventStatus")?;
        let event = self.event(&session, req.object, "EventStatus")?;
        Ok(Response::new(event_state(&event)))
    }

    async fn event_wait(
        &self,
        request: Request<proto::EventWaitRequest>,
    ) -> Result<Response<proto::EventState>, Status> {
        let req = request.get_ref().clone();
        let session = self.session(&request, &req.session, "EventWait")?;
        let event = self.event(&session, req.event, "EventWait")?;
        let timeout = self.poll_timeout(req.timeout_ms, "EventWait")?;
        // Polled on a task, so a wait that times out leaves nothing behind on the event. A
        // failed or unfinished event is an answer here, not a failed call.
        wait_until(|| event.status() != EventStatus::Pending, Some(timeout)).await;
        Ok(Response::new(event_state(&event)))
    }

    type WatchEventStream = ReceiverStream<Result<proto::EventState, Status>>;

    async fn watch_event(
        &self,
        request: Request<proto::ObjectRequest>,
    ) -> Result<Response<Self::WatchEventStream>, Status> {
        let req = request.get_ref();
        let session = self.session(&request, &req.session, "WatchEvent")?;
        let event = self.event(&session, req.object, "WatchEvent")?;
        let permit = self.stream_permit(&session, "WatchEvent")?;
        // Two states at most, now and when it finishes: the channel holds both, so a client
        // that never reads the stream costs the node nothing more.
        let (sender, receiver) = mpsc::channel(2);
        let now = event_state(&event);
        let pending = now.phase == proto::EventPhase::Pending as i32;
        let _ = sender.try_send(Ok(now));
        if pending {
            // The permit goes when the event finishes or when the client drops the stream,
            // whichever is first: a watch nobody reads any more must not hold it.
            let (finished_tx, finished_rx) = tokio::sync::oneshot::channel::<()>();
            let watcher = sender.clone();
            tokio::spawn(async move {
                tokio::select! {
                    _ = finished_rx => {}
                    () = watcher.closed() => {}
                }
                drop(permit);
            });
            let finished = event.clone();
            event.on_finish(move || {
                let _ = sender.try_send(Ok(event_state(&finished)));
                let _ = finished_tx.send(());
            });
        }
        Ok(Response::new(ReceiverStream::new(receiver)))
    }
}

/// Releases objects taken out of a session, in the order they came; reports the first
/// failure after releasing the rest.
fn release_in_order(objects: Vec<Object>) -> Result<(), Status> {
    let mut first_error = None;
    for object in objects {
        if let Err(err) = object.release() {
            first_error.get_or_insert(err);
        }
    }
    first_error.map_or(Ok(()), |err| Err(from_host(err)))
}

/// Checks `done` until it holds or `timeout` passes (never, for `None`), without holding a
/// thread: a few quick checks, then one a millisecond. Waits on the node (polls, event waits,
/// queue finishes) cost a task each, not one of the threads host calls run on, and register
/// nothing that outlives them. Says whether `done` held.
async fn wait_until(mut done: impl FnMut() -> bool, timeout: Option<Duration>) -> bool {
    let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
    let mut checks = 0u32;
    loop {
        if done() {
            return true;
        }
        if deadline.is_some_and(|d| tokio::time::Instant::now() >= d) {
            return false;
        }
        if checks < 32 {
            checks += 1;
            tokio::task::yield_now().await;
        } else {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }
}

/// Reads a word until `value & mask == expected` or `timeout`.
async fn poll_word(
    mut read: impl FnMut() -> accelhost::Result<u64>,
    (mask, expected): (u64, u64),
    timeout: Duration,
    what: impl Fn() -> String,
) -> Result<u64, Status> {
    let mut last = Ok(0);
    let matched = wait_until(
        || {
            last = read();
            last.as_ref().map_or(true, |value| value & mask == expected)
        },
        Some(timeout),
    )
    .await;
    let value = last.map_err(from_host)?;
    if matched {
        return Ok(value);
    }
    Err(status(
        ErrorCode::Timeout,
        format!(
            "{}: still {value:#x} (mask {mask:#x}, waiting for {expected:#x}) after {} ms",
            what(),
            timeout.as_millis()
        ),
    ))
}

/// A launch argument that owns what it names, for the blocking thread.
fn event_state(event: &Event) -> proto::EventState {
    let (phase, message) = match event.status() {
        EventStatus::Pending => (proto::EventPhase::Pending, String::new()),
        EventStatus::Complete => (proto::EventPhase::Complete, String::new()),
        EventStatus::Failed(why) => (proto::EventPhase::Failed, why),
    };
    proto::EventState {
        phase: phase as i32,
        message,
    }
}

impl NodeService {
    /// A call its client's grants do not cover: counted, logged for the operator, and
    /// answered with `message`.
    /// A refusal of `call` to `client`: counted, logged, and the status to answer with.
    pub fn refuse(&self, client: &str, call: &str, code: ErrorCode, message: String) -> Status {
        self.metrics.refusal(client, call);
        tracing::warn!(
            client,
            call,
            "refused: {}",
            accelhost::text::inert(&message)
        );
        status(code, message)
    }

    /// The device `id` of the session's last enumeration, if the client may use it.
    fn enumerated(&self, session: &Session, id: &str, call: &str) -> Result<Token, Status> {
        if !session.client.grants.allows_device(id) {
            return Err(self.refuse(
                &session.client.name,
                call,
                ErrorCode::PermissionDenied,
                format!(
                    "{call}: client '{}' may not use device '{id}': its grants.devices do not name it",
                    session.client.name
                ),
            ));
        }
        session.objects().devices.get(id).cloned().ok_or_else(|| {
            status(
                ErrorCode::NotFound,
                format!("{call}: device '{id}' was not in this session's last Enumerate answer"),
            )
        })
    }

    fn handle(&self, session: &Session, number: u64, call: &str) -> Result<Handle, Status> {
        match session.objects().get(number) {
            Some(Object::Handle(handle)) => Ok(handle.clone()),
            _ => Err(no_object(session, "handle", number, call)),
        }
    }

    fn region(&self, session: &Session, number: u64, call: &str) -> Result<MmioRegion, Status> {
        match session.objects().get(number) {
            Some(Object::Region(_, region)) => Ok(region.clone()),
            _ => Err(no_object(session, "MMIO region", number, call)),
        }
    }

    fn buffer(&self, session: &Session, number: u64, call: &str) -> Result<Arc<DmaBuffer>, Status> {
        match session.objects().get(number) {
            Some(Object::Buffer(_, buffer)) => Ok(buffer.clone()),
            _ => Err(no_object(session, "buffer", number, call)),
        }
    }

    fn data(&self, session: &Session, number: u64, call: &str) -> Result<Data, Status> {
        match session.objects().get(number) {
            Some(Object::Buffer(_, buffer)) => Ok(Data::Buffer(buffer.clone())),
            Some(Object::Memory(_, memory)) => Ok(Data::Memory(memory.clone())),
            _ => Err(no_object(session, "buffer or memory", number, call)),
        }
    }

    fn queue(&self, session: &Session, number: u64, call: &str) -> Result<(u64, Queue), Status> {
        match session.objects().get(number) {
            Some(Object::Queue(owner, queue)) => Ok((*owner, queue.clone())),
            _ => Err(no_object(session, "queue", number, call)),
        }
    }

    fn event(&self, session: &Session, number: u64, call: &str) -> Result<Event, Status> {
        match session.objects().get(number) {
            Some(Object::Event(_, event)) => Ok(event.clone()),
            _ => Err(no_object(session, "event", number, call)),
        }
    }

    /// One of the session's `limits.max_streams_per_session` answer streams, held until the
    /// stream ends: what unread streams can make the node hold is bounded by it.
    fn stream_permit(
        &self,
        session: &Session,
        call: &str,
    ) -> Result<tokio::sync::OwnedSemaphorePermit, Status> {
        session.streams.clone().try_acquire_owned().map_err(|_| {
            status(
                ErrorCode::NoSpace,
                format!(
                    "{call}: session of client '{}' already has {} answer streams open (limits.max_streams_per_session)",
                    session.client.name,
                    self.limits().max_streams_per_session
                ),
            )
        })
    }

    fn room_for_object(&self, session: &Session, call: &str) -> Result<(), Status> {
        let max = self.limits().max_objects_per_session;
        if session.objects().count() >= max {
            return Err(too_many(session, call, max));
        }
        Ok(())
    }

    /// Room for one more buffer or memory of `size` bytes within the client's grant, across
    /// all its sessions: reserved now, given back when the object goes.
    fn room_for_memory(
        &self,
        session: &Session,
        size: u64,
        call: &str,
    ) -> Result<DmaCharge, Status> {
        self.room_for_object(session, call)?;
        self.reserve_dma(session, size, call)
    }

    /// `size` bytes of the client's DMA grant, in whole pages (what the node allocates),
    /// across all its sessions, until the charge goes.
    fn reserve_dma(&self, session: &Session, size: u64, call: &str) -> Result<DmaCharge, Status> {
        let pages = size.max(1).next_multiple_of(DMA_PAGE);
        session
            .dma
            .reserve(pages, self.dma_caps(session))
            .map_err(|over| self.over_dma_cap(session, call, over, pages))
    }

    /// What the session's client may hold of DMA memory, and every client together.
    fn dma_caps(&self, session: &Session) -> DmaCaps {
        DmaCaps {
            client: session.client.grants.dma_bytes(),
            node: self.limits().max_dma_bytes(),
        }
    }

    /// The refusal of `more` bytes over the client's DMA grant or the node's limit, with the
    /// rule that counts them.
    fn over_dma_cap(&self, session: &Session, call: &str, over: OverCap, more: u64) -> Status {
        let client = &session.client.name;
        let what = match over {
            OverCap::Client(held) => format!(
                "client '{client}' holds {held} bytes of its DMA grant; {more} more would pass \
                 its {} MiB (grants.dma_memory_mib)",
                session.client.grants.dma_memory_mib
            ),
            OverCap::Node(held) => format!(
                "the node's clients hold {held} bytes of DMA memory together; {more} more for \
                 client '{client}' would pass the node's {} MiB (limits.max_dma_mib)",
                self.limits().max_dma_mib
            ),
        };
        self.refuse(
            client,
            call,
            ErrorCode::OutOfMemory,
            format!(
                "{call}: {what}. What counts: each buffer and memory in whole 4 KiB pages, once \
                 more for the node's mirror of a buffer a client syncs, and program images while \
                 they upload"
            ),
        )
    }

    /// Session `id`, if `client` attached it.
    fn session_of(
        &self,
        client: &ClientEntry,
        id: &str,
        call: &str,
    ) -> Result<Arc<Session>, Status> {
        self.metrics.call(&client.name, call);
        match self.sessions.get(id) {
            Some(session) if session.client.name == client.name => Ok(session),
            _ => Err(status(
                ErrorCode::NotFound,
                format!("{call}: client '{}' has no session '{id}'", client.name),
            )),
        }
    }

    /// Receives a streamed image: a header on the first chunk, then exactly `image_bytes`,
    /// no more than `limits.max_image_mib`. The image grows as bytes arrive (a header only
    /// claims a size), and an upload holds one of the session's stream permits, so what
    /// unfinished uploads make the node hold is bounded like unread streams.
    async fn receive_image<C: Send + 'static>(
        &self,
        client: &ClientEntry,
        chunks: &mut Streaming<C>,
        call: &str,
        parts: impl Fn(C) -> (Option<proto::ReconfigureHeader>, bytes::Bytes),
    ) -> Result<(Arc<Session>, proto::ReconfigureHeader, Image), Status> {
        let invalid =
            |message: String| status(ErrorCode::InvalidArgument, format!("{call}: {message}"));
        let first = chunks
            .message()
            .await?
            .ok_or_else(|| invalid("the stream carried no chunk".into()))?;
        let (header, data) = parts(first);
        let header = header.ok_or_else(|| invalid("the first chunk carries no header".into()))?;
        let session = self.session_of(client, &header.session, call)?;
        let _permit = self.stream_permit(&session, call)?;
        let limit = self.limits().max_image_bytes();
        if header.image_bytes > limit {
            return Err(invalid(format!(
                "a {}-byte image is larger than the node takes ({limit} bytes, limits.max_image_mib)",
                header.image_bytes
            )));
        }
        let caps = self.dma_caps(&session);
        let mut charge = session
            .dma
            .reserve(0, caps)
            .map_err(|over| self.over_dma_cap(&session, call, over, 0))?;
        let mut image = data.to_vec();
        let hold = |image: &Vec<u8>, charge: &mut DmaCharge| {
            let held = image.capacity() as u64;
            charge
                .grow_to(held, caps)
                .map_err(|over| self.over_dma_cap(&session, call, over, held - charge.bytes()))
        };
        hold(&image, &mut charge)?;
        while let Some(chunk) = chunks.message().await? {
            let (extra, data) = parts(chunk);
            if extra.is_some() {
                return Err(invalid("only the first chunk may carry a header".into()));
            }
            if (image.len() + data.len()) as u64 > header.image_bytes {
                return Err(invalid(format!(
                    "the stream runs past the {} bytes its header announced",
                    header.image_bytes
                )));
            }
            image.reserve(data.len());
            hold(&image, &mut charge)?;
            image.extend_from_slice(&data);
        }
        if image.len() as u64 != header.image_bytes {
            return Err(invalid(format!(
                "the stream ended after {} of the {} bytes its header announced",
                image.len(),
                header.image_bytes
            )));
        }
        Ok((
            session,
            header,
            Image {
                image,
                _charge: charge,
            },
        ))
    }

    fn poll_timeout(&self, timeout_ms: u32, call: &str) -> Result<Duration, Status> {
        let most = self.limits().max_poll_ms;
        if timeout_ms > most {
            return Err(status(
                ErrorCode::InvalidArgument,
                format!(
                    "{call}: a {timeout_ms} ms wait is longer than the node allows ({most} ms, limits.max_poll_ms)"
                ),
            ));
        }
        Ok(Duration::from_millis(timeout_ms.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn device(plugin: &str, n: usize, extra_bytes: usize) -> proto::Device {
        proto::Device {
            id: format!("{plugin}/d{n}"),
            plugin: plugin.into(),
            extras: vec![proto::Extra {
                key: "blob".into(),
                value: "x".repeat(extra_bytes),
            }],
            ..Default::default()
        }
    }

    #[test]
    fn a_plugin_with_large_properties_cannot_crowd_out_the_others() {
        let mut devices: Vec<proto::Device> = (0..100).map(|n| device("big", n, 10_000)).collect();
        devices.extend((0..3).map(|n| device("dfl", n, 10)));
        devices.extend((0..2).map(|n| device("xocl", n, 10)));
        let (kept, omitted) = fair_share(devices, 64 << 10);
        let of = |plugin: &str| kept.iter().filter(|d| d.plugin == plugin).count();
        assert_eq!(
            (of("dfl"), of("xocl")),
            (3, 2),
            "the small plugins are whole"
        );
        assert_eq!(of("big"), 6, "the big plugin takes what is left");
        assert_eq!(
            omitted,
            vec![proto::Omitted {
                plugin: "big".into(),
                devices: 94
            }]
        );
        use prost::Message;
        let answer = proto::EnumerateReply {
            devices: kept,
            omitted,
        };
        assert!(answer.encoded_len() <= 64 << 10);
    }

    #[test]
    fn an_answer_that_fits_is_whole_and_in_order() {
        let devices: Vec<proto::Device> = (0..5)
            .map(|n| device(if n % 2 == 0 { "a" } else { "b" }, n, 100))
            .collect();
        let (kept, omitted) = fair_share(devices.clone(), 1 << 20);
        assert_eq!(kept, devices);
        assert!(omitted.is_empty());
        let (kept, omitted) = fair_share(Vec::new(), 0);
        assert!(kept.is_empty() && omitted.is_empty());
    }
}
