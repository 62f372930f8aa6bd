//! Client sessions: what each session opened, numbered per session, and released in the
//! host's usual order (buffers, then regions, then handles) when the client goes.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use accelhost::{DmaBuffer, Event, Handle, Kernel, Memory, MmioRegion, Program, Queue, Token};
use tokio::sync::mpsc;
use tonic::Status;

use crate::proto::SessionEvent;

pub use crate::account::{DmaAccount, DmaCharge};
use crate::config::ClientEntry;
use crate::data::Shadow;
use crate::identity::Process;
use crate::offer::{MAX_OFFERS, Offer, RedeemError};

/// One client's session: created by `Attach`, ended when its stream goes.
pub struct Session {
    /// The id clients name it by: 128 random bits, as hex.
    pub id: String,
    /// The client entry the caller was identified as, when it attached.
    pub client: Arc<ClientEntry>,
    /// The process that attached it, on a Unix socket: the only one its memory is handed to.
    pub process: Option<Process>,
    objects: Mutex<Objects>,
    /// The client's DMA account, shared by all its sessions.
    pub dma: DmaAccount,
    /// Permits for answer streams (reads, event watches) open at once.
    pub streams: Arc<tokio::sync::Semaphore>,
    /// The session's `Attach` stream: dropping the sender (when the session ends) ends it.
    events: Mutex<Option<mpsc::Sender<Result<SessionEvent, Status>>>>,
}

/// One object a session holds, with the number of the handle it came from.
#[derive(Clone)]
pub enum Object {
    /// An open accelerator.
    Handle(Handle),
    /// A mapped MMIO region.
    Region(u64, MmioRegion),
    /// A prepared DMA buffer, shared so that a call in flight keeps it while another call
    /// releases it.
    Buffer(u64, Arc<DmaBuffer>),
    /// Offload memory.
    Memory(u64, Memory),
    /// A loaded program.
    Program(u64, Program),
    /// A kernel of a program.
    Kernel(u64, Kernel),
    /// An in-order queue.
    Queue(u64, Queue),
    /// The completion of a command, or a registered device event.
    Event(u64, Event),
    /// A doorbell ring and its serving thread (stopped when this goes).
    Ring(Arc<crate::ring::RingObject>),
}

impl Object {
    /// What the object is, for messages.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Handle(_) => "handle",
            Object::Region(..) => "MMIO region",
            Object::Buffer(..) => "buffer",
            Object::Memory(..) => "memory",
            Object::Program(..) => "program",
            Object::Kernel(..) => "kernel",
            Object::Queue(..) => "queue",
            Object::Event(..) => "event",
            Object::Ring(_) => "ring",
        }
    }

    /// The handle it came from (itself, for a handle or a ring, which belongs to the session).
    fn owner(&self, number: u64) -> u64 {
        match self {
            Object::Handle(_) | Object::Ring(_) => number,
            Object::Region(owner, _)
            | Object::Buffer(owner, _)
            | Object::Memory(owner, _)
            | Object::Program(owner, _)
            | Object::Kernel(owner, _)
            | Object::Queue(owner, _)
            | Object::Event(owner, _) => *owner,
        }
    }

    /// The order objects are released in: what uses an object goes before it.
    fn release_rank(&self) -> u8 {
        match self {
            Object::Ring(_) | Object::Event(..) => 0,
            Object::Queue(..) => 1,
            Object::Kernel(..) => 2,
            Object::Program(..) => 3,
            Object::Memory(..) => 4,
            Object::Buffer(..) => 5,
            Object::Region(..) => 6,
            Object::Handle(_) => 7,
        }
    }

    /// Releases the object, reporting what the host said.
    pub fn release(self) -> accelhost::Result<()> {
        match self {
            Object::Handle(handle) => handle.close(),
            Object::Buffer(_, buffer) => release_buffer(buffer),
            Object::Queue(_, queue) => queue.finish(),
            _ => Ok(()),
        }
    }
}

/// What a session holds. Object numbers start at 1 and are never reused, so a stale number
/// names nothing.
#[derive(Default)]
pub struct Objects {
    next: u64,
    /// The devices of the session's last enumeration, by id.
    pub devices: HashMap<String, Token>,
    held: HashMap<u64, Object>,
    /// What the buffers and memory among `held` charge to the client's DMA grant.
    charges: HashMap<u64, DmaCharge>,
    /// The node's half of the client's mirrors of buffers and memory among `held`.
    shadows: HashMap<u64, Shadow>,
    /// The memory of buffers and memory among `held` on offer to the client.
    offers: HashMap<u64, Offer>,
}

impl Objects {
    /// Adds `object` under a fresh number.
    pub fn insert(&mut self, object: Object) -> u64 {
        self.next += 1;
        self.held.insert(self.next, object);
        self.next
    }

    /// Adds `object` under a fresh number, with what it charges to the client's grant.
    pub fn insert_charged(&mut self, object: Object, charge: DmaCharge) -> u64 {
        let number = self.insert(object);
        self.charges.insert(number, charge);
        number
    }

    /// Object `number`, if held.
    pub fn get(&self, number: u64) -> Option<&Object> {
        self.held.get(&number)
    }

    /// Takes the shadow of object `number` out for a sync.
    pub fn take_shadow(&mut self, number: u64) -> Option<Shadow> {
        self.shadows.remove(&number)
    }

    /// Puts a shadow back after a sync, unless its object went meanwhile.
    pub fn put_shadow(&mut self, number: u64, shadow: Shadow) {
        if self.held.contains_key(&number) {
            self.shadows.insert(number, shadow);
        }
    }

    /// Offers the memory of object `number` to the process `holder`; the ticket to redeem
    /// it with, or `None` when the session has [`MAX_OFFERS`] pending (expired ones are
    /// dropped first).
    pub fn offer(
        &mut self,
        session: &str,
        number: u64,
        memory: OwnedFd,
        holder: Process,
    ) -> Option<Vec<u8>> {
        let now = Instant::now();
        self.offers.retain(|_, offer| !offer.expired(now));
        if self.offers.len() >= MAX_OFFERS || !self.held.contains_key(&number) {
            return None;
        }
        let offer = Offer::new(memory, holder);
        let ticket = offer.ticket(session, number);
        self.offers.insert(number, offer);
        Some(ticket)
    }

    /// Takes the offer of object `number` out for `redeemer` to redeem; an offer made to
    /// another process stays where it is.
    pub fn take_offer(&mut self, number: u64, redeemer: &Process) -> Result<Offer, RedeemError> {
        match self.offers.get(&number) {
            None => Err(RedeemError::NotOffered(number)),
            Some(offer) if !offer.is_for(redeemer) => Err(RedeemError::WrongProcess(*redeemer)),
            Some(_) => self
                .offers
                .remove(&number)
                .ok_or(RedeemError::NotOffered(number)),
        }
    }

    /// Objects held.
    pub fn count(&self) -> usize {
        self.held.len()
    }

    /// Takes object `number` out; for a handle, with everything that came from it. The
    /// objects come in the order they are to be released.
    pub fn take(&mut self, number: u64) -> Vec<Object> {
        let mut taken: Vec<Object> = match self.held.get(&number) {
            Some(Object::Handle(_)) => self
                .held
                .extract_if(|n, object| object.owner(*n) == number)
                .map(|(_, object)| object)
                .collect(),
            Some(_) => self.held.remove(&number).into_iter().collect(),
            None => Vec::new(),
        };
        let held = &self.held;
        self.charges.retain(|n, _| held.contains_key(n));
        self.shadows.retain(|n, _| held.contains_key(n));
        self.offers.retain(|n, _| held.contains_key(n));
        taken.sort_by_key(Object::release_rank);
        taken
    }

    /// Takes every object out, in release order.
    fn take_all(&mut self) -> Vec<Object> {
        let mut taken: Vec<Object> = self.held.drain().map(|(_, object)| object).collect();
        self.charges.clear();
        self.shadows.clear();
        self.offers.clear();
        taken.sort_by_key(Object::release_rank);
        taken
    }
}

/// The refusal of a call naming an object the session does not hold.
pub fn no_object(session: &Session, what: &str, number: u64, call: &str) -> Status {
    crate::status::status(
        accelhost::ErrorCode::NotFound,
        format!(
            "{call}: session of client '{}' holds no {what} {number} (never opened here, or already released)",
            session.client.name
        ),
    )
}

/// Releases `buffer` now if nothing else holds it (else when the last holder drops it).
pub fn release_buffer(buffer: Arc<DmaBuffer>) -> accelhost::Result<()> {
    match Arc::try_unwrap(buffer) {
        Ok(buffer) => buffer.release(),
        Err(_) => Ok(()),
    }
}

impl Session {
    /// A session for `client`, attached by `process` (on a Unix socket).
    pub fn new(
        client: Arc<ClientEntry>,
        process: Option<Process>,
        dma: DmaAccount,
        events: mpsc::Sender<Result<SessionEvent, Status>>,
        max_streams: usize,
    ) -> Session {
        Session {
            id: random_id(),
            client,
            process,
            dma,
            streams: Arc::new(tokio::sync::Semaphore::new(max_streams)),
            objects: Mutex::new(Objects::default()),
            events: Mutex::new(Some(events)),
        }
    }

    /// The session's objects.
    pub fn objects(&self) -> MutexGuard<'_, Objects> {
        self.objects.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Releases everything the session holds, in the host's order: events and queues first,
    /// then kernels, programs, memory, buffers and regions, then the handles (closing each).
    pub fn release_all(&self) {
        self.events.lock().unwrap_or_else(|p| p.into_inner()).take();
        let (taken, devices) = {
            let mut objects = self.objects();
            (objects.take_all(), std::mem::take(&mut objects.devices))
        };
        for object in taken {
            let kind = object.kind();
            if let Err(err) = object.release() {
                tracing::debug!(session = %self.id, "releasing a {kind}: {err}");
            }
        }
        drop(devices);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        self.release_all();
    }
}

pub(crate) fn random_id() -> String {
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes);
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Fills `bytes` from the system's random source (`getrandom`).
pub(crate) fn random_bytes(bytes: &mut [u8]) {
    if let Err(err) = getrandom::fill(bytes) {
        panic!("getrandom failed: {err}; session ids and tickets cannot be made without it");
    }
}

/// How many sessions may be open at once.
#[derive(Clone, Copy, Debug)]
pub struct SessionCaps {
    /// Across every client (`limits.max_sessions`).
    pub node: usize,
    /// Of one client (`limits.max_sessions_per_client`).
    pub client: usize,
}

/// Which session cap an `Attach` would pass, with how many sessions are open under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionsFull {
    /// The node's: this many sessions are open in all.
    Node(usize),
    /// The client's: it has this many open.
    Client(usize),
}

/// Every open session, bounded by the serve config's `max_sessions` and
/// `max_sessions_per_client`.
#[derive(Default)]
pub struct Sessions {
    map: Mutex<HashMap<String, Arc<Session>>>,
    accounts: Mutex<HashMap<String, DmaAccount>>,
    /// What every client's DMA account holds together.
    node_dma: Arc<std::sync::atomic::AtomicU64>,
    /// The clients that have attached at least once, by name.
    attached: Mutex<std::collections::HashSet<String>>,
}

impl Sessions {
    /// The DMA account of the client named `client`, shared by its sessions.
    pub fn account(&self, client: &str) -> DmaAccount {
        self.accounts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(client.to_owned())
            .or_insert_with(|| DmaAccount::of_client(&self.node_dma))
            .clone()
    }

    /// Bytes of DMA buffers and memory every client holds together.
    pub fn dma_held(&self) -> u64 {
        self.node_dma.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Adds `session` unless the node has `max.node` open already, or its client `max.client`.
    pub fn insert(&self, session: Arc<Session>, max: SessionCaps) -> Result<(), SessionsFull> {
        let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
        if map.len() >= max.node {
            return Err(SessionsFull::Node(map.len()));
        }
        let of_client = map
            .values()
            .filter(|open| open.client.name == session.client.name)
            .count();
        if of_client >= max.client {
            return Err(SessionsFull::Client(of_client));
        }
        self.attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(session.client.name.clone());
        map.insert(session.id.clone(), session);
        Ok(())
    }

    /// Forgets that the client named `client` ever attached (a client that will not come
    /// back, such as an ended allocation, so the set does not grow with every one).
    pub fn forget_attached(&self, client: &str) {
        self.attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(client);
    }

    /// Whether the client named `client` has had a session since the node started.
    pub fn ever_attached(&self, client: &str) -> bool {
        self.attached
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(client)
    }

    /// The session `id`, if open.
    pub fn get(&self, id: &str) -> Option<Arc<Session>> {
        self.map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(id)
            .cloned()
    }

    /// Ends session `id` and releases what it held.
    pub fn end(&self, id: &str) {
        let session = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
        if let Some(session) = session {
            tracing::info!(session = %session.id, client = %session.client.name, "session ended");
            session.release_all();
        }
    }

    /// Ends the sessions whose client `ends` picks; returns their clients' names and how
    /// many sessions were kept.
    pub fn end_where(&self, ends: impl Fn(&ClientEntry) -> bool) -> (Vec<String>, usize) {
        let ending: Vec<Arc<Session>> = {
            let mut map = self.map.lock().unwrap_or_else(|p| p.into_inner());
            let ids: Vec<String> = map
                .values()
                .filter(|session| ends(&session.client))
                .map(|session| session.id.clone())
                .collect();
            ids.iter().filter_map(|id| map.remove(id)).collect()
        };
        let kept = self.len();
        let names = ending
            .iter()
            .map(|session| {
                tracing::info!(session = %session.id, client = %session.client.name, "session ended: its client entry changed");
                session.release_all();
                session.client.name.clone()
            })
            .collect();
        (names, kept)
    }

    /// Ends every session (at shutdown).
    pub fn end_all(&self) {
        let all: Vec<_> = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .drain()
            .collect();
        for (_, session) in all {
            session.release_all();
        }
    }

    /// How many sessions each client has open.
    pub fn per_client(&self) -> std::collections::BTreeMap<String, usize> {
        let mut counts = std::collections::BTreeMap::new();
        for session in self.map.lock().unwrap_or_else(|p| p.into_inner()).values() {
            *counts.entry(session.client.name.clone()).or_insert(0) += 1;
        }
        counts
    }

    /// How many handles the sessions hold open, by device id.
    pub fn open_handles(&self) -> HashMap<String, usize> {
        let sessions: Vec<Arc<Session>> = self
            .map
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        let mut counts = HashMap::new();
        for session in sessions {
            for object in session.objects().held.values() {
                if let Object::Handle(handle) = object {
                    *counts.entry(handle.token().id()).or_insert(0) += 1;
                }
            }
        }
        counts
    }

    /// How many sessions are open.
    pub fn len(&self) -> usize {
        self.map.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    /// Whether no session is open.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{ClientGrants, ClientIdentity};

    fn client() -> Arc<ClientEntry> {
        Arc::new(ClientEntry {
            name: "t".into(),
            identity: ClientIdentity::UnixUid(0),
            grants: ClientGrants {
                devices: vec![],
                dma_memory_mib: 1,
                reconfigure: false,
            },
        })
    }

    #[test]
    fn ids_are_distinct_and_numbers_never_repeat() {
        let a = Session::new(client(), None, DmaAccount::default(), mpsc::channel(1).0, 1);
        let b = Session::new(client(), None, DmaAccount::default(), mpsc::channel(1).0, 1);
        assert_ne!(a.id, b.id);
        assert_eq!(a.id.len(), 32);
        let mut objects = a.objects();
        assert!(objects.take(1).is_empty());
        assert_eq!(objects.count(), 0);
    }

    fn session_of(name: &str) -> Arc<Session> {
        let mut entry = (*client()).clone();
        entry.name = name.into();
        Arc::new(Session::new(
            Arc::new(entry),
            None,
            DmaAccount::default(),
            mpsc::channel(1).0,
            1,
        ))
    }

    #[test]
    fn the_session_caps_hold() {
        let sessions = Sessions::default();
        let caps = SessionCaps { node: 3, client: 2 };
        sessions.insert(session_of("a"), caps).unwrap();
        sessions.insert(session_of("a"), caps).unwrap();
        assert_eq!(
            sessions.insert(session_of("a"), caps),
            Err(SessionsFull::Client(2))
        );
        sessions.insert(session_of("b"), caps).unwrap();
        assert_eq!(
            sessions.insert(session_of("c"), caps),
            Err(SessionsFull::Node(3))
        );
        assert_eq!(sessions.len(), 3);
        sessions.end_all();
        assert!(sessions.is_empty());
    }
}
