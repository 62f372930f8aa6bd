//! The node service's state and what every call shares: the host, the serve config in force,
//! the clients' sessions, and the lookups each handler makes (its session, the objects it
//! names, the room it needs). Below the handlers, which are grouped by concept in the
//! service's other files.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use accelhost::{DmaBuffer, ErrorCode, Event, Handle, Host, MmioRegion, Queue, Token};
use tonic::{Request, Response, Status, Streaming};

use crate::account::{DmaCaps, OverCap};
use crate::config::{ClientEntry, ClientIdentity, ServeConfig};
use crate::data::Data;
use crate::gate::{Admitted, ConnectionCaps, Gate, PeerKey, Share};
use crate::health::{DeviceBook, DeviceHealth};
use crate::identity::Peer;
use crate::metrics::NodeMetrics;
use crate::pipeline::Work;
use crate::proto::{self};
use crate::session::{DmaCharge, Object, Session, Sessions, no_object};
use crate::status::{from_host, status};

/// The node service: one host, its serve config and its clients' sessions.
pub struct NodeService {
    pub(super) host: Arc<Host>,
    config: RwLock<Arc<ServeConfig>>,
    pub(super) sessions: Arc<Sessions>,
    pub(super) metrics: Arc<NodeMetrics>,
    enumeration: Enumerations,
    devices: Arc<DeviceBook>,
    /// The client entries of Kubernetes allocations, by allocation id.
    allocations: RwLock<HashMap<String, Arc<ClientEntry>>>,
    /// The connections open on every listener of the node's service, by peer.
    connections: Arc<Gate>,
}

/// The caps once the service is gone: nothing more is admitted.
const STOPPED: ConnectionCaps = ConnectionCaps {
    node: 0,
    peer: 0,
    unnamed: 0,
    handshakes: 0,
    handshake_time: Duration::ZERO,
};

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

    /// `incoming`'s connections within the node's connection limits (read at each accept,
    /// so a reload takes effect at once): every listener of the node's service takes its
    /// connections through this. `peer_of` says who a connection comes from, and from which
    /// share of the node's connections it draws.
    pub fn admit_each<S, IO>(
        self: &Arc<Self>,
        incoming: S,
        listener: &'static str,
        peer_of: impl Fn(&NodeService, &IO) -> (PeerKey, Share) + Send + 'static,
    ) -> impl tokio_stream::Stream<Item = std::io::Result<Admitted<IO>>> + Send + 'static
    where
        S: tokio_stream::Stream<Item = std::io::Result<IO>> + Send + 'static,
        IO: Send + 'static,
    {
        let (caps_of, peer_of_service) = (Arc::downgrade(self), Arc::downgrade(self));
        self.connections.admit_each(
            incoming,
            listener,
            move || caps_of.upgrade().map_or(STOPPED, |s| s.connection_caps()),
            move |io| match peer_of_service.upgrade() {
                Some(service) => peer_of(&service, io),
                None => (PeerKey::Unknown, Share::Unnamed),
            },
        )
    }

    /// The connection caps of the serve config in force.
    pub fn connection_caps(&self) -> ConnectionCaps {
        let limits = self.limits();
        ConnectionCaps {
            node: limits.max_connections,
            peer: limits.max_connections_per_peer,
            unnamed: limits.unnamed_connections(),
            handshakes: limits.handshakes(),
            handshake_time: limits.handshake_time(),
        }
    }

    /// Who a connection to the node's Unix socket comes from (its uid), and its share: named
    /// when a client entry names its uid or primary gid.
    pub fn unix_share(&self, stream: &tokio::net::UnixStream) -> (PeerKey, Share) {
        match crate::gate::unix_credentials(stream) {
            Some((uid, gid)) => {
                let named =
                    self.names_any(&[ClientIdentity::UnixUid(uid), ClientIdentity::UnixGid(gid)]);
                (
                    PeerKey::Uid(uid),
                    if named { Share::Named } else { Share::Unnamed },
                )
            }
            None => (PeerKey::Unknown, Share::Unnamed),
        }
    }

    /// Whether a client entry of the serve config in force names one of `identities`.
    pub fn names_any(&self, identities: &[ClientIdentity]) -> bool {
        let config = self.config();
        identities
            .iter()
            .any(|identity| config.client(identity).is_some())
    }

    /// Enqueues `work` for a unary call: the event becomes an object of the session.
    pub(super) async fn enqueue(
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
    /// that asked for it ([`crate::shared_memory`]), for the process that attached the
    /// session alone: the ticket for the reply, or `None` (the client mirrors the object)
    /// when the caller is not local, the node cannot see that process's pid, the memory
    /// cannot be shared or the session has too many offers pending.
    pub(super) fn offer_memory<T>(
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
        let holder = session.process.filter(|process| process.pid.is_some())?;
        let memory = match share() {
            Ok(memory) => memory?,
            Err(err) => {
                tracing::debug!(session = %session.id, "sharing object {number}: {err}");
                return None;
            }
        };
        let ticket = objects.offer(&session.id, number, memory, holder)?;
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
    pub(super) async fn devices(&self) -> Result<Vec<Token>, Status> {
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
    pub(super) fn devices_changed(&self) {
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
    pub(super) fn client<T>(
        &self,
        request: &Request<T>,
        call: &str,
    ) -> Result<Arc<ClientEntry>, Status> {
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
    pub(super) fn session<T>(
        &self,
        request: &Request<T>,
        id: &str,
        call: &str,
    ) -> Result<Arc<Session>, Status> {
        let client = self.client(request, call)?;
        self.session_of(&client, id, call)
    }

    pub(super) fn limits(&self) -> crate::config::Limits {
        self.config().limits.clone()
    }
}

/// Runs a host call that may block (it calls into a plugin) on tokio's blocking pool.
pub(super) async fn blocking<R: Send + 'static>(
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

/// The granule of the DMA grant: buffers and memory are charged in whole pages.
const DMA_PAGE: u64 = 4096;

/// A program image received from a client, with what it charges to the client's DMA grant
/// until it has been loaded.
pub(super) struct Image {
    pub(super) image: Vec<u8>,
    _charge: DmaCharge,
}

/// Releases objects taken out of a session, in the order they came; reports the first
/// failure after releasing the rest.
pub(super) fn release_in_order(objects: Vec<Object>) -> Result<(), Status> {
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
pub(super) async fn wait_until(mut done: impl FnMut() -> bool, timeout: Option<Duration>) -> bool {
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
pub(super) async fn poll_word(
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
    pub(super) fn enumerated(
        &self,
        session: &Session,
        id: &str,
        call: &str,
    ) -> Result<Token, Status> {
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

    pub(super) fn handle(
        &self,
        session: &Session,
        number: u64,
        call: &str,
    ) -> Result<Handle, Status> {
        match session.objects().get(number) {
            Some(Object::Handle(handle)) => Ok(handle.clone()),
            _ => Err(no_object(session, "handle", number, call)),
        }
    }

    pub(super) fn region(
        &self,
        session: &Session,
        number: u64,
        call: &str,
    ) -> Result<MmioRegion, Status> {
        match session.objects().get(number) {
            Some(Object::Region(_, region)) => Ok(region.clone()),
            _ => Err(no_object(session, "MMIO region", number, call)),
        }
    }

    pub(super) fn buffer(
        &self,
        session: &Session,
        number: u64,
        call: &str,
    ) -> Result<Arc<DmaBuffer>, Status> {
        match session.objects().get(number) {
            Some(Object::Buffer(_, buffer)) => Ok(buffer.clone()),
            _ => Err(no_object(session, "buffer", number, call)),
        }
    }

    pub(super) fn data(&self, session: &Session, number: u64, call: &str) -> Result<Data, Status> {
        match session.objects().get(number) {
            Some(Object::Buffer(_, buffer)) => Ok(Data::Buffer(buffer.clone())),
            Some(Object::Memory(_, memory)) => Ok(Data::Memory(memory.clone())),
            _ => Err(no_object(session, "buffer or memory", number, call)),
        }
    }

    pub(super) fn queue(
        &self,
        session: &Session,
        number: u64,
        call: &str,
    ) -> Result<(u64, Queue), Status> {
        match session.objects().get(number) {
            Some(Object::Queue(owner, queue)) => Ok((*owner, queue.clone())),
            _ => Err(no_object(session, "queue", number, call)),
        }
    }

    pub(super) fn event(
        &self,
        session: &Session,
        number: u64,
        call: &str,
    ) -> Result<Event, Status> {
        match session.objects().get(number) {
            Some(Object::Event(_, event)) => Ok(event.clone()),
            _ => Err(no_object(session, "event", number, call)),
        }
    }

    /// One of the session's `limits.max_streams_per_session` answer streams, held until the
    /// stream ends: what unread streams can make the node hold is bounded by it.
    pub(super) fn stream_permit(
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

    pub(super) fn room_for_object(&self, session: &Session, call: &str) -> Result<(), Status> {
        let max = self.limits().max_objects_per_session;
        if session.objects().count() >= max {
            return Err(too_many(session, call, max));
        }
        Ok(())
    }

    /// Room for one more buffer or memory of `size` bytes within the client's grant, across
    /// all its sessions: reserved now, given back when the object goes.
    pub(super) fn room_for_memory(
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
    pub(super) fn reserve_dma(
        &self,
        session: &Session,
        size: u64,
        call: &str,
    ) -> Result<DmaCharge, Status> {
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
    pub(super) fn session_of(
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
    pub(super) async fn receive_image<C: Send + 'static>(
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

    pub(super) fn poll_timeout(&self, timeout_ms: u32, call: &str) -> Result<Duration, Status> {
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
