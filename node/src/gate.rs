//! Connection quotas. Every connection the node accepts, on any listener, counts against the
//! node's `limits.max_connections` and its peer's `limits.max_connections_per_peer` from the
//! moment it is accepted (before a TLS handshake or a byte of HTTP/2) until it closes, and
//! draws from one of three shares of the node's connections ([`Share`]): the peers a client
//! entry names, the peers none names (`limits.max_unnamed_connections`), and TCP connections
//! still in their TLS handshake (`limits.max_handshakes`), whose peer is not known yet. The
//! two shares of strangers together stay below the node's cap, so whatever strangers hold,
//! the named clients keep the rest.
//!
//! A connection over a cap is closed at once, with one exception: when the handshakes' share
//! is full, a new TCP connection takes the place of the oldest handshake of the address with
//! the most handshakes open, if that address has more than the newcomer's. Silent
//! connections from many addresses then cost each address its part of the share, and a
//! client that completes its handshake is never locked out by them for the handshake time.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::Connected;

/// Who a connection comes from, as far as quotas go.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PeerKey {
    /// A TCP peer's IP address.
    Address(IpAddr),
    /// A local process on a Unix socket, by its uid.
    Uid(u32),
    /// Whoever connects to a Kubernetes allocation's socket (one pod).
    Allocation(Arc<str>),
    /// A peer the kernel told nothing about: all such share one quota.
    Unknown,
}

/// Which share of the node's connections a connection draws from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Share {
    /// A peer a client entry names: a uid or gid the serve config names on the socket, a pod
    /// on its allocation's socket, a certificate a client entry's SAN names.
    Named,
    /// A peer no client entry names (an unknown local user, a certificate of no client, a
    /// peer without credentials): `limits.max_unnamed_connections` together.
    Unnamed,
    /// A TCP connection whose TLS handshake has not finished, so whose peer is not known
    /// yet: `limits.max_handshakes` together.
    Handshake,
}

/// How many connections may be open at once, and how long a new one may stay silent.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionCaps {
    /// Across every peer and share.
    pub node: usize,
    /// Of one peer.
    pub peer: usize,
    /// Of the peers no client entry names, together.
    pub unnamed: usize,
    /// In their TLS handshake, together.
    pub handshakes: usize,
    /// How long a new connection may stay silent before the node stops waiting for it: a
    /// TCP client's TLS handshake, a Unix client's first byte (a silent peer would otherwise
    /// hold a connection and a task). `limits.handshake_ms`.
    pub handshake_time: Duration,
}

/// One open connection's place.
struct Entry {
    peer: PeerKey,
    share: Share,
    /// Told when the connection loses its place to a newer handshake.
    evicted: Option<Arc<Notify>>,
}

#[derive(Default)]
struct Open {
    /// Every open connection by number; numbers grow, so the smallest is the oldest.
    live: BTreeMap<u64, Entry>,
    next: u64,
    by_peer: HashMap<PeerKey, usize>,
    by_share: HashMap<Share, usize>,
    /// The connections in their handshake, by peer.
    handshakes_by_peer: HashMap<PeerKey, usize>,
}

impl Open {
    fn count(&mut self, peer: &PeerKey, share: Share, more: bool) {
        let step = |n: &mut usize| {
            if more {
                *n += 1
            } else {
                *n = n.saturating_sub(1)
            }
        };
        step(self.by_peer.entry(peer.clone()).or_insert(0));
        step(self.by_share.entry(share).or_insert(0));
        if share == Share::Handshake {
            step(self.handshakes_by_peer.entry(peer.clone()).or_insert(0));
            if self.handshakes_by_peer.get(peer) == Some(&0) {
                self.handshakes_by_peer.remove(peer);
            }
        }
        if self.by_peer.get(peer) == Some(&0) {
            self.by_peer.remove(peer);
        }
    }

    fn of_share(&self, share: Share) -> usize {
        self.by_share.get(&share).copied().unwrap_or(0)
    }

    /// Forgets connection `id`, giving back its place.
    fn remove(&mut self, id: u64) -> Option<Entry> {
        let entry = self.live.remove(&id)?;
        self.count(&entry.peer, entry.share, false);
        Some(entry)
    }

    /// The handshake to end for a newcomer from `peer`: the oldest of the peer with the most
    /// handshakes open, if that peer has more than `peer` has.
    fn handshake_to_evict(&self, peer: &PeerKey) -> Option<u64> {
        let own = self.handshakes_by_peer.get(peer).copied().unwrap_or(0);
        let (heaviest, most) = self
            .handshakes_by_peer
            .iter()
            .max_by_key(|(_, n)| **n)
            .map(|(p, n)| (p.clone(), *n))?;
        if most <= own {
            return None;
        }
        self.live
            .iter()
            .find(|(_, e)| e.share == Share::Handshake && e.peer == heaviest)
            .map(|(id, _)| *id)
    }
}

/// The connections open through a set of listeners, by peer and share.
#[derive(Default)]
pub struct Gate {
    open: Mutex<Open>,
    refused: AtomicU64,
    evicted: AtomicU64,
    /// When a refusal was last logged (seconds since the epoch): at most one a second.
    last_logged: AtomicU64,
}

/// Why a connection was closed at accept, or after its handshake.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The node has this many connections open.
    Node(usize),
    /// The peer has this many open.
    Peer(usize),
    /// The peers no client entry names have this many open.
    Unnamed(usize),
    /// This many connections are in their handshake, none from a peer with more than this one.
    Handshakes(usize),
}

impl Refusal {
    /// The limit that refused, as the serve config names it.
    pub fn limit(&self) -> &'static str {
        match self {
            Refusal::Node(_) => "limits.max_connections",
            Refusal::Peer(_) => "limits.max_connections_per_peer",
            Refusal::Unnamed(_) => "limits.max_unnamed_connections",
            Refusal::Handshakes(_) => "limits.max_handshakes",
        }
    }

    fn open(&self) -> usize {
        match *self {
            Refusal::Node(n) | Refusal::Peer(n) | Refusal::Unnamed(n) | Refusal::Handshakes(n) => n,
        }
    }
}

impl Gate {
    fn lock(&self) -> std::sync::MutexGuard<'_, Open> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a connection from `peer` in `share` unless that would pass `caps`; a handshake
    /// may take the place of another's (see the module's documentation).
    pub fn admit(
        self: &Arc<Self>,
        peer: PeerKey,
        share: Share,
        caps: ConnectionCaps,
    ) -> Result<Admission, Refusal> {
        let mut open = self.lock();
        let of_peer = open.by_peer.get(&peer).copied().unwrap_or(0);
        if of_peer >= caps.peer {
            return Err(Refusal::Peer(of_peer));
        }
        match share {
            Share::Named => {}
            Share::Unnamed => {
                let unnamed = open.of_share(Share::Unnamed);
                if unnamed >= caps.unnamed {
                    return Err(Refusal::Unnamed(unnamed));
                }
            }
            Share::Handshake => {
                let handshakes = open.of_share(Share::Handshake);
                if handshakes >= caps.handshakes || open.live.len() >= caps.node {
                    let Some(victim) = open.handshake_to_evict(&peer) else {
                        return Err(if handshakes >= caps.handshakes {
                            Refusal::Handshakes(handshakes)
                        } else {
                            Refusal::Node(open.live.len())
                        });
                    };
                    if let Some(Entry {
                        evicted: Some(evicted),
                        ..
                    }) = open.remove(victim)
                    {
                        evicted.notify_one();
                    }
                    self.evicted.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
        if open.live.len() >= caps.node {
            return Err(Refusal::Node(open.live.len()));
        }
        let id = open.next;
        open.next += 1;
        let evicted = (share == Share::Handshake).then(|| Arc::new(Notify::new()));
        open.count(&peer, share, true);
        open.live.insert(
            id,
            Entry {
                peer,
                share,
                evicted: evicted.clone(),
            },
        );
        Ok(Admission {
            gate: self.clone(),
            id,
            evicted,
            handshake_time: caps.handshake_time,
        })
    }

    /// Moves an admitted connection to `share` (a handshake that ended, now that its peer
    /// is known), unless that share is full; refused, the connection keeps its place until it
    /// is dropped.
    pub fn promote(
        &self,
        admission: &Admission,
        share: Share,
        caps: ConnectionCaps,
    ) -> Result<(), Refusal> {
        let mut open = self.lock();
        let Some(entry) = open.live.get(&admission.id) else {
            // Evicted meanwhile: its place is gone.
            return Err(Refusal::Handshakes(open.of_share(Share::Handshake)));
        };
        let (peer, from) = (entry.peer.clone(), entry.share);
        if from == share {
            return Ok(());
        }
        if share == Share::Unnamed && open.of_share(Share::Unnamed) >= caps.unnamed {
            return Err(Refusal::Unnamed(open.of_share(Share::Unnamed)));
        }
        open.count(&peer, from, false);
        open.count(&peer, share, true);
        if let Some(entry) = open.live.get_mut(&admission.id) {
            entry.share = share;
            entry.evicted = None;
        }
        Ok(())
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.lock().live.len()
    }

    /// Connections open now in `share`.
    pub fn open_in(&self, share: Share) -> usize {
        self.lock().of_share(share)
    }

    /// Connections closed at accept, or after their handshake, over a cap so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Handshakes ended so far to make room for a newer one.
    pub fn evicted(&self) -> u64 {
        self.evicted.load(Ordering::Relaxed)
    }

    /// Counts and logs (at most once a second, naming `listener`) a connection closed over
    /// a cap.
    pub fn note_refusal(&self, listener: &str, peer: &PeerKey, refusal: Refusal) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        if self.last_logged.swap(now, Ordering::Relaxed) == now {
            return;
        }
        tracing::warn!(
            listener,
            peer = ?peer,
            open = refusal.open(),
            "closing a new connection: {} reached (logged at most once a second)",
            refusal.limit()
        );
    }

    /// `incoming`'s connections, each counted while it is open; those over `caps()` (read at
    /// each accept, so a reload takes effect at once) are closed as they come. `listener`
    /// names the listener in the log; `peer_of` says who a connection comes from, and from
    /// which share.
    pub fn admit_each<S, IO>(
        self: &Arc<Self>,
        incoming: S,
        listener: &'static str,
        caps: impl Fn() -> ConnectionCaps + Send + 'static,
        peer_of: impl Fn(&IO) -> (PeerKey, Share) + Send + 'static,
    ) -> impl Stream<Item = io::Result<Admitted<IO>>> + Send + 'static
    where
        S: Stream<Item = io::Result<IO>> + Send + 'static,
        IO: Send + 'static,
    {
        let gate = self.clone();
        incoming.filter_map(move |accepted| match accepted {
            Ok(io) => {
                let (peer, share) = peer_of(&io);
                gate.admit_one(io, peer, share, caps(), listener).map(Ok)
            }
            Err(err) => Some(Err(err)),
        })
    }

    /// `io`, counted while it is open, unless it would pass `caps`: then it is closed (and
    /// the refusal logged, at most once a second, naming `listener`).
    pub fn admit_one<IO>(
        self: &Arc<Self>,
        io: IO,
        peer: PeerKey,
        share: Share,
        caps: ConnectionCaps,
        listener: &'static str,
    ) -> Option<Admitted<IO>> {
        match self.admit(peer.clone(), share, caps) {
            Ok(admission) => Some(Admitted { io, admission }),
            Err(refusal) => {
                self.note_refusal(listener, &peer, refusal);
                None
            }
        }
    }
}

/// One open connection's place in a [`Gate`], given back when dropped.
pub struct Admission {
    gate: Arc<Gate>,
    id: u64,
    /// For a handshake: told when a newer one takes its place.
    evicted: Option<Arc<Notify>>,
    handshake_time: Duration,
}

impl Admission {
    /// How long the connection may stay silent from its accept (its caps' `handshake_time`
    /// when it was admitted).
    pub fn handshake_time(&self) -> Duration {
        self.handshake_time
    }

    /// Completes when the connection lost its place to a newer handshake (never, for a
    /// connection admitted in another share); it borrows nothing, so it can be awaited
    /// while the connection itself is handed on.
    pub fn eviction(&self) -> impl Future<Output = ()> + Send + 'static {
        let evicted = self.evicted.clone();
        async move {
            match evicted {
                Some(evicted) => evicted.notified().await,
                None => std::future::pending().await,
            }
        }
    }

    /// The gate it was admitted through.
    pub fn gate(&self) -> &Arc<Gate> {
        &self.gate
    }
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.gate.lock().remove(self.id);
    }
}

/// A connection counted in a [`Gate`] while it lives; reads, writes and what the transport
/// knows of it are the inner connection's.
pub struct Admitted<IO> {
    io: IO,
    admission: Admission,
}

impl<IO> Admitted<IO> {
    /// The connection itself.
    pub fn get_ref(&self) -> &IO {
        &self.io
    }

    /// Its place in the gate.
    pub fn admission(&self) -> &Admission {
        &self.admission
    }
}

impl<IO: Connected> Connected for Admitted<IO> {
    type ConnectInfo = IO::ConnectInfo;

    fn connect_info(&self) -> IO::ConnectInfo {
        self.io.connect_info()
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Admitted<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Admitted<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Who a Unix-socket connection comes from: its uid and primary gid, from the kernel's peer
/// credentials (`None` when the kernel gives none).
pub fn unix_credentials(stream: &tokio::net::UnixStream) -> Option<(u32, u32)> {
    stream.peer_cred().ok().map(|cred| (cred.uid(), cred.gid()))
}

/// Who a TCP connection comes from: its IP address.
pub fn tcp_peer(stream: &tokio::net::TcpStream) -> PeerKey {
    stream
        .peer_addr()
        .map_or(PeerKey::Unknown, |address| PeerKey::Address(address.ip()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CAPS: ConnectionCaps = ConnectionCaps {
        node: 3,
        peer: 2,
        unnamed: 3,
        handshakes: 3,
        handshake_time: Duration::from_secs(10),
    };

    fn address(last: u8) -> PeerKey {
        PeerKey::Address([127, 0, 0, last].into())
    }

    #[test]
    fn each_peer_and_the_node_stay_within_their_caps() {
        let gate = Arc::new(Gate::default());
        let one = address(1);
        let two = PeerKey::Uid(1000);
        let a = gate.admit(one.clone(), Share::Named, CAPS).unwrap();
        let b = gate.admit(one.clone(), Share::Named, CAPS).unwrap();
        assert_eq!(
            gate.admit(one.clone(), Share::Named, CAPS).err(),
            Some(Refusal::Peer(2))
        );
        let c = gate.admit(two.clone(), Share::Named, CAPS).unwrap();
        assert_eq!(
            gate.admit(two.clone(), Share::Named, CAPS).err(),
            Some(Refusal::Node(3))
        );
        drop(a);
        assert_eq!(gate.open(), 2);
        let d = gate.admit(two.clone(), Share::Named, CAPS).unwrap();
        drop((b, c, d));
        assert_eq!(gate.open(), 0);
        let open = gate.lock();
        assert!(open.by_peer.is_empty() && open.handshakes_by_peer.is_empty());
    }

    #[test]
    fn strangers_keep_to_their_share_and_named_clients_keep_the_rest() {
        let caps = ConnectionCaps {
            node: 10,
            peer: 8,
            unnamed: 3,
            handshakes: 2,
            handshake_time: Duration::from_secs(10),
        };
        let gate = Arc::new(Gate::default());
        let strangers: Vec<_> = (0..3)
            .map(|uid| gate.admit(PeerKey::Uid(uid), Share::Unnamed, caps).unwrap())
            .collect();
        assert_eq!(
            gate.admit(PeerKey::Uid(9), Share::Unnamed, caps).err(),
            Some(Refusal::Unnamed(3))
        );
        let named: Vec<_> = (0..5)
            .map(|_| gate.admit(PeerKey::Uid(1000), Share::Named, caps).unwrap())
            .collect();
        assert_eq!(gate.open_in(Share::Named), 5);
        assert_eq!(gate.open_in(Share::Unnamed), 3);
        drop((strangers, named));
        assert_eq!(gate.open(), 0);
    }

    #[test]
    fn a_handshake_takes_the_place_of_the_busiest_address_s_oldest() {
        let gate = Arc::new(Gate::default());
        let caps = ConnectionCaps {
            node: 100,
            peer: 8,
            unnamed: 10,
            handshakes: 4,
            handshake_time: Duration::from_secs(10),
        };
        let heavy_old = gate.admit(address(2), Share::Handshake, caps).unwrap();
        let heavy_new = gate.admit(address(2), Share::Handshake, caps).unwrap();
        let heavy_newest = gate.admit(address(2), Share::Handshake, caps).unwrap();
        let light = gate.admit(address(3), Share::Handshake, caps).unwrap();
        // Full: the busiest address (three) gives its oldest to a newcomer with none.
        let newcomer = gate.admit(address(1), Share::Handshake, caps).unwrap();
        assert_eq!(gate.evicted(), 1);
        let told = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .build()
            .unwrap()
            .block_on(async {
                tokio::time::timeout(Duration::from_secs(1), heavy_old.eviction())
                    .await
                    .is_ok()
            });
        assert!(told, "the evicted handshake is told");
        assert_eq!(gate.open_in(Share::Handshake), 4);
        // An address cannot push out others once it has as many as the busiest.
        let second = gate.admit(address(1), Share::Handshake, caps).unwrap();
        assert_eq!(
            gate.admit(address(1), Share::Handshake, caps).err(),
            Some(Refusal::Handshakes(4))
        );
        // The evicted one's drop gives nothing back twice.
        drop(heavy_old);
        assert_eq!(gate.open_in(Share::Handshake), 4);
        // A finished handshake moves to its peer's share and frees a handshake's place.
        gate.promote(&light, Share::Named, caps).unwrap();
        assert_eq!(gate.open_in(Share::Handshake), 3);
        assert_eq!(gate.open_in(Share::Named), 1);
        drop((heavy_new, heavy_newest, light, newcomer, second));
        assert_eq!(gate.open(), 0);
    }

    #[test]
    fn a_stranger_s_finished_handshake_is_refused_when_strangers_are_full() {
        let gate = Arc::new(Gate::default());
        let caps = ConnectionCaps {
            node: 100,
            peer: 8,
            unnamed: 1,
            handshakes: 4,
            handshake_time: Duration::from_secs(10),
        };
        let first = gate.admit(address(1), Share::Handshake, caps).unwrap();
        let second = gate.admit(address(2), Share::Handshake, caps).unwrap();
        gate.promote(&first, Share::Unnamed, caps).unwrap();
        assert_eq!(
            gate.promote(&second, Share::Unnamed, caps),
            Err(Refusal::Unnamed(1))
        );
        drop((first, second));
        assert_eq!(gate.open(), 0);
    }

    #[tokio::test]
    async fn connections_over_the_cap_are_closed_at_accept() {
        let gate = Arc::new(Gate::default());
        let accepted = tokio_stream::iter((0..5).map(Ok::<_, io::Error>));
        let admitted: Vec<_> = gate
            .admit_each(
                accepted,
                "test",
                || ConnectionCaps {
                    node: 10,
                    peer: 3,
                    unnamed: 10,
                    handshakes: 10,
                    handshake_time: Duration::from_secs(10),
                },
                |_| (PeerKey::Unknown, Share::Unnamed),
            )
            .collect()
            .await;
        assert_eq!(admitted.len(), 3);
        assert_eq!(gate.open(), 3);
        assert_eq!(gate.refused(), 2);
        drop(admitted);
        assert_eq!(gate.open(), 0);
    }
}
