//! Connection quotas. Every connection the node accepts, on any listener, counts against the
//! node's `limits.max_connections` and its peer's `limits.max_connections_per_peer` from the
//! moment it is accepted (before a TLS handshake or a byte of HTTP/2) until it closes. A
//! connection over either cap is closed at once, so no peer can hold the descriptors, memory
//! and handshakes every other client needs: a thousand silent TCP connections from one
//! address cost the node at most its per-peer cap.

use std::collections::HashMap;
use std::io;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_stream::{Stream, StreamExt};
use tonic::transport::server::Connected;

/// How long a new connection may stay silent before the node stops waiting for it: a TCP
/// client's TLS handshake, a Unix client's first byte (a silent peer would otherwise hold a
/// connection and a task).
pub const HANDSHAKE: std::time::Duration = std::time::Duration::from_secs(10);

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

/// How many connections may be open at once.
#[derive(Clone, Copy, Debug)]
pub struct ConnectionCaps {
    /// Across every peer.
    pub node: usize,
    /// Of one peer.
    pub peer: usize,
}

#[derive(Default)]
struct Open {
    total: usize,
    by_peer: HashMap<PeerKey, usize>,
}

/// The connections open through a set of listeners, by peer.
#[derive(Default)]
pub struct Gate {
    open: Mutex<Open>,
    refused: AtomicU64,
    /// When a refusal was last logged (seconds since the epoch): at most one a second.
    last_logged: AtomicU64,
}

/// Why a connection was closed at accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The node has this many connections open.
    Node(usize),
    /// The peer has this many open.
    Peer(usize),
}

impl Gate {
    /// Counts a connection from `peer` unless that would pass `caps`.
    pub fn admit(
        self: &Arc<Self>,
        peer: PeerKey,
        caps: ConnectionCaps,
    ) -> Result<Admission, Refusal> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        if open.total >= caps.node {
            return Err(Refusal::Node(open.total));
        }
        let of_peer = open.by_peer.entry(peer.clone()).or_insert(0);
        if *of_peer >= caps.peer {
            return Err(Refusal::Peer(*of_peer));
        }
        *of_peer += 1;
        open.total += 1;
        Ok(Admission {
            gate: self.clone(),
            peer,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|p| p.into_inner()).total
    }

    /// Connections closed at accept so far.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn note_refusal(&self, listener: &str, peer: &PeerKey, refusal: Refusal) {
        self.refused.fetch_add(1, Ordering::Relaxed);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        if self.last_logged.swap(now, Ordering::Relaxed) == now {
            return;
        }
        let (open, limit) = match refusal {
            Refusal::Node(open) => (open, "limits.max_connections"),
            Refusal::Peer(open) => (open, "limits.max_connections_per_peer"),
        };
        tracing::warn!(
            listener,
            peer = ?peer,
            open,
            "closing a new connection: {limit} reached (logged at most once a second)"
        );
    }

    /// `incoming`'s connections, each counted while it is open; those over `caps()` (read at
    /// each accept, so a reload takes effect at once) are closed as they come. `listener`
    /// names the listener in the log; `peer_of` says who a connection comes from.
    pub fn admit_each<S, IO>(
        self: &Arc<Self>,
        incoming: S,
        listener: &'static str,
        caps: impl Fn() -> ConnectionCaps + Send + 'static,
        peer_of: impl Fn(&IO) -> PeerKey + Send + 'static,
    ) -> impl Stream<Item = io::Result<Admitted<IO>>> + Send + 'static
    where
        S: Stream<Item = io::Result<IO>> + Send + 'static,
        IO: Send + 'static,
    {
        let gate = self.clone();
        incoming.filter_map(move |accepted| match accepted {
            Ok(io) => {
                let peer = peer_of(&io);
                gate.admit_one(io, peer, caps(), listener).map(Ok)
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
        caps: ConnectionCaps,
        listener: &'static str,
    ) -> Option<Admitted<IO>> {
        match self.admit(peer.clone(), caps) {
            Ok(admission) => Some(Admitted {
                io,
                _admission: admission,
            }),
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
    peer: PeerKey,
}

impl Drop for Admission {
    fn drop(&mut self) {
        let mut open = self.gate.open.lock().unwrap_or_else(|p| p.into_inner());
        open.total -= 1;
        if let Some(of_peer) = open.by_peer.get_mut(&self.peer) {
            *of_peer -= 1;
            if *of_peer == 0 {
                open.by_peer.remove(&self.peer);
            }
        }
    }
}

/// A connection counted in a [`Gate`] while it lives; reads, writes and what the transport
/// knows of it are the inner connection's.
pub struct Admitted<IO> {
    io: IO,
    _admission: Admission,
}

impl<IO> Admitted<IO> {
    /// The connection itself.
    pub fn get_ref(&self) -> &IO {
        &self.io
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

/// Who a Unix-socket connection comes from: its uid, from the kernel's peer credentials.
pub fn unix_peer(stream: &tokio::net::UnixStream) -> PeerKey {
    stream
        .peer_cred()
        .map_or(PeerKey::Unknown, |cred| PeerKey::Uid(cred.uid()))
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

    const CAPS: ConnectionCaps = ConnectionCaps { node: 3, peer: 2 };

    #[test]
    fn each_peer_and_the_node_stay_within_their_caps() {
        let gate = Arc::new(Gate::default());
        let one = PeerKey::Address([127, 0, 0, 1].into());
        let two = PeerKey::Uid(1000);
        let a = gate.admit(one.clone(), CAPS).unwrap();
        let b = gate.admit(one.clone(), CAPS).unwrap();
        assert_eq!(gate.admit(one.clone(), CAPS).err(), Some(Refusal::Peer(2)));
        let c = gate.admit(two.clone(), CAPS).unwrap();
        assert_eq!(gate.admit(two.clone(), CAPS).err(), Some(Refusal::Node(3)));
        drop(a);
        assert_eq!(gate.open(), 2);
        let d = gate.admit(two.clone(), CAPS).unwrap();
        drop((b, c, d));
        assert_eq!(gate.open(), 0);
        assert!(gate.open.lock().unwrap().by_peer.is_empty());
    }

    #[tokio::test]
    async fn connections_over_the_cap_are_closed_at_accept() {
        let gate = Arc::new(Gate::default());
        let accepted = tokio_stream::iter((0..5).map(Ok::<_, io::Error>));
        let admitted: Vec<_> = gate
            .admit_each(
                accepted,
                "test",
                || ConnectionCaps { node: 10, peer: 3 },
                |_| PeerKey::Unknown,
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
