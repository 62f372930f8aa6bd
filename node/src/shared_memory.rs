//! Buffers a local client maps instead of mirroring: the node offers an object's memory (a
//! sealed memfd) with a one-time ticket in the reply that made the object, and the client
//! redeems the ticket on a second connection to the same Unix socket, which carries the
//! descriptor as `SCM_RIGHTS`. Data then moves at memory speed; only doorbells and
//! completions cross the gRPC connection.
//!
//! Who may redeem: only the process that attached the session, as the kernel names the
//! redeeming connection's peer (`SO_PEERCRED`: the same uid and pid), once, within
//! [`OFFER_LIFETIME`](crate::offer::OFFER_LIFETIME); a ticket is no bearer token, and one
//! another process presents stays on offer for its own process.
//!
//! What keeps it contained: the memfd's size is sealed, so a client cannot make the node's
//! mapping fault; an offer belongs to the object (released with it, so a pending descriptor
//! never outlives the memory's charge), expires after [`OFFER_LIFETIME`](crate::offer::OFFER_LIFETIME), and a session has at
//! most [`MAX_OFFERS`](crate::offer::MAX_OFFERS) pending; a released object's pages are freed even while the client
//! still maps them (the host punches them out of the memfd), so what a client keeps mapped is
//! its own memory, not the node's.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::sync::Weak;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, Interest};
use tokio::net::UnixStream;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::{Stream, StreamExt};

use crate::gate::Admitted;
use crate::identity::Process;
use crate::offer::{RedeemError, parse_ticket};
use crate::session::Sessions;

/// What a connection that redeems a ticket sends first; an HTTP/2 client's first byte is
/// never 0.
pub const MAGIC: [u8; 16] = *b"\0accelhost-shm/1";

/// The longest ticket the node reads: its own are 24 bytes and a session id of 32.
const MAX_TICKET: usize = 128;

/// How long a redeeming connection may take to say what it wants.
const REDEEM_TIMEOUT: Duration = Duration::from_secs(5);

/// The connections of a Unix listener with the redeeming ones taken out and served here; the
/// rest (gRPC) come out in the order their first bytes arrived. A connection that says
/// nothing for its admission's handshake time goes to gRPC, as before it was sorted.
pub fn split_redeemers<S, T>(
    incoming: S,
    sessions: Weak<Sessions>,
    socket_of: fn(&T) -> &UnixStream,
) -> impl Stream<Item = io::Result<Admitted<T>>> + Send + 'static
where
    S: Stream<Item = io::Result<Admitted<T>>> + Send + 'static,
    T: Send + Sync + 'static,
{
    let (sorted, out) = mpsc::channel(64);
    tokio::spawn(async move {
        let mut incoming = std::pin::pin!(incoming);
        loop {
            let next = tokio::select! {
                _ = sorted.closed() => return,
                next = incoming.next() => next,
            };
            match next {
                None => return,
                Some(Err(err)) => {
                    if sorted.send(Err(err)).await.is_err() {
                        return;
                    }
                }
                Some(Ok(connection)) => {
                    let (sorted, sessions) = (sorted.clone(), sessions.clone());
                    tokio::spawn(async move {
                        let socket = socket_of(connection.get_ref());
                        let silence = connection.admission().handshake_time();
                        if first_byte(socket, silence).await == Some(MAGIC[0]) {
                            serve_redeemer(socket, &sessions).await;
                        } else {
                            let _ = sorted.send(Ok(connection)).await;
                        }
                    });
                }
            }
        }
    });
    ReceiverStream::new(out)
}

/// The connection's first byte, left unread; `None` if it closed or stayed silent for
/// `silence`.
async fn first_byte(stream: &UnixStream, silence: Duration) -> Option<u8> {
    let peek = async {
        loop {
            stream.readable().await.ok()?;
            let mut byte = 0u8;
            let peeked = stream.try_io(Interest::READABLE, || {
                // SAFETY: one byte into `byte`, on a socket the stream owns.
                let n = unsafe {
                    libc::recv(
                        stream.as_raw_fd(),
                        (&raw mut byte).cast(),
                        1,
                        libc::MSG_PEEK,
                    )
                };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n)
                }
            });
            match peeked {
                Ok(0) => return None,
                Ok(_) => return Some(byte),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
                Err(_) => return None,
            }
        }
    };
    tokio::time::timeout(silence, peek).await.ok().flatten()
}

/// Reads a redeeming request and answers it: the memory, or a status byte and why not.
async fn serve_redeemer(stream: &UnixStream, sessions: &Weak<Sessions>) {
    let answer = match tokio::time::timeout(REDEEM_TIMEOUT, read_request(stream)).await {
        Ok(Ok(ticket)) => stream
            .peer_cred()
            .map_err(RedeemError::NoCredentials)
            .map(Process::from)
            .and_then(|redeemer| redeem(&ticket, &redeemer, sessions)),
        Ok(Err(err)) => Err(RedeemError::Malformed(err)),
        Err(_) => Err(RedeemError::Silent(REDEEM_TIMEOUT)),
    };
    let sent = match answer {
        Ok(memory) => send_with_descriptor(stream, 0, b"", Some(memory.as_raw_fd())).await,
        Err(why) => {
            tracing::debug!("refused a shared-memory ticket: {why}");
            send_with_descriptor(stream, 1, why.to_string().as_bytes(), None).await
        }
    };
    if let Err(err) = sent {
        tracing::debug!("answering a shared-memory ticket: {err}");
    }
}

async fn read_request(stream: &UnixStream) -> io::Result<Vec<u8>> {
    // Read through a borrowing reader: the stream stays the caller's.
    let mut reader = ReadHalf(stream);
    let mut head = [0u8; 18];
    reader.read_exact(&mut head).await?;
    if head[..16] != MAGIC {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "not the magic"));
    }
    let len = usize::from(u16::from_le_bytes([head[16], head[17]]));
    if len > MAX_TICKET {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a ticket of {len} bytes (at most {MAX_TICKET})"),
        ));
    }
    let mut ticket = vec![0u8; len];
    reader.read_exact(&mut ticket).await?;
    Ok(ticket)
}

/// Reads from a borrowed stream.
struct ReadHalf<'a>(&'a UnixStream);

impl tokio::io::AsyncRead for ReadHalf<'_> {
    fn poll_read(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        loop {
            std::task::ready!(self.0.poll_read_ready(cx))?;
            match self.0.try_read_buf(buf) {
                Ok(_) => return std::task::Poll::Ready(Ok(())),
                Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
                Err(err) => return std::task::Poll::Ready(Err(err)),
            }
        }
    }
}

/// The memory a ticket names, taken out of its session, if `redeemer` is the process that
/// attached the session (an offer another process presents stays on offer).
fn redeem(
    ticket: &[u8],
    redeemer: &Process,
    sessions: &Weak<Sessions>,
) -> Result<OwnedFd, RedeemError> {
    let (secret, object, session) = parse_ticket(ticket).ok_or(RedeemError::Unreadable)?;
    let sessions = sessions.upgrade().ok_or(RedeemError::Stopping)?;
    let session = sessions.get(session).ok_or(RedeemError::SessionEnded)?;
    let offer = session.objects().take_offer(object, redeemer)?;
    offer.redeem(secret, Instant::now())
}

/// Sends `status` and `message`, with `descriptor` attached when given.
async fn send_with_descriptor(
    stream: &UnixStream,
    status: u8,
    message: &[u8],
    descriptor: Option<RawFd>,
) -> io::Result<()> {
    let mut payload = Vec::with_capacity(1 + message.len());
    payload.push(status);
    payload.extend_from_slice(message);
    loop {
        stream.writable().await?;
        match stream.try_io(Interest::WRITABLE, || {
            send_message(stream.as_raw_fd(), &payload, descriptor)
        }) {
            Ok(_) => return Ok(()),
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => continue,
            Err(err) => return Err(err),
        }
    }
}

/// One `sendmsg` of `payload` (small enough to go in one), with `descriptor` as `SCM_RIGHTS`.
fn send_message(socket: RawFd, payload: &[u8], descriptor: Option<RawFd>) -> io::Result<usize> {
    let mut iov = libc::iovec {
        iov_base: payload.as_ptr() as *mut libc::c_void,
        iov_len: payload.len(),
    };
    // Room for one descriptor, aligned as cmsghdr needs.
    let mut control = [0u64; 4];
    // SAFETY: msghdr is plain data; zeroed is a valid empty message.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    if let Some(fd) = descriptor {
        // SAFETY: CMSG_SPACE/LEN are pure arithmetic; `control` holds CMSG_SPACE(4) bytes, so
        // the header CMSG_FIRSTHDR returns and its data lie inside it.
        unsafe {
            let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
            message.msg_control = control.as_mut_ptr().cast();
            message.msg_controllen = space;
            let header = libc::CMSG_FIRSTHDR(&message);
            (*header).cmsg_level = libc::SOL_SOCKET;
            (*header).cmsg_type = libc::SCM_RIGHTS;
            (*header).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as usize;
            std::ptr::write_unaligned(libc::CMSG_DATA(header).cast::<RawFd>(), fd);
        }
    }
    // SAFETY: every pointer in `message` refers to live locals sized as its lengths say.
    let sent = unsafe { libc::sendmsg(socket, &message, libc::MSG_NOSIGNAL) };
    if sent < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(sent as usize)
    }
}

/// Redeems `ticket` at the node's socket `path` (the client's side), by `deadline`.
pub fn fetch(path: &Path, ticket: &[u8], deadline: Instant) -> io::Result<OwnedFd> {
    fetch_from(path, ticket, deadline, false).map(|(memory, _)| memory)
}

/// [`fetch`], with a pidfd of the node's process besides (the peer of the connection the
/// memory came on, as the kernel tells it): readable once that process has exited. `None`
/// where the kernel has no pidfds.
pub fn fetch_watching(
    path: &Path,
    ticket: &[u8],
    deadline: Instant,
) -> io::Result<(OwnedFd, Option<OwnedFd>)> {
    fetch_from(path, ticket, deadline, true)
}

/// Redeems `ticket`, with the node's pidfd when `watch` asks for it.
fn fetch_from(
    path: &Path,
    ticket: &[u8],
    deadline: Instant,
    watch: bool,
) -> io::Result<(OwnedFd, Option<OwnedFd>)> {
    use std::io::Write;
    let left = || {
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
            .ok_or_else(|| io::Error::new(io::ErrorKind::TimedOut, "the call's deadline passed"))
    };
    let len = u16::try_from(ticket.len())
        .ok()
        .filter(|&n| usize::from(n) <= MAX_TICKET)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "the ticket is too long"))?;
    let mut stream = std::os::unix::net::UnixStream::connect(path)?;
    stream.set_write_timeout(Some(left()?))?;
    let mut request = Vec::with_capacity(18 + ticket.len());
    request.extend_from_slice(&MAGIC);
    request.extend_from_slice(&len.to_le_bytes());
    request.extend_from_slice(ticket);
    stream.write_all(&request)?;
    stream.set_read_timeout(Some(left()?))?;
    let (payload, descriptor) = receive_message(stream.as_raw_fd())?;
    match (payload.first(), descriptor) {
        // The peer is still connected, so its pid names that process and no other.
        (Some(0), Some(memory)) => Ok((memory, watch.then(|| peer_pidfd(&stream)).flatten())),
        (Some(0), None) => Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "the node answered without the memory",
        )),
        (Some(_), _) => Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "the node refused the ticket: {}",
                String::from_utf8_lossy(&payload[1..])
            ),
        )),
        (None, _) => Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            "the node closed the connection without answering",
        )),
    }
}

/// A pidfd of the process at the other end of `stream`.
fn peer_pidfd(stream: &std::os::unix::net::UnixStream) -> Option<OwnedFd> {
    // SAFETY: ucred is plain data; zeroed is a valid value to overwrite.
    let mut peer: libc::ucred = unsafe { std::mem::zeroed() };
    let mut len = std::mem::size_of::<libc::ucred>() as libc::socklen_t;
    // SAFETY: SO_PEERCRED writes at most `len` bytes into `peer`, which has them.
    let got = unsafe {
        libc::getsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_PEERCRED,
            (&raw mut peer).cast(),
            &mut len,
        )
    };
    if got != 0 || peer.pid <= 0 {
        return None;
    }
    // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
    let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, peer.pid, 0) };
    // SAFETY: a descriptor pidfd_open just returned, owned by no one else.
    (raw >= 0).then(|| unsafe { OwnedFd::from_raw_fd(raw as RawFd) })
}

/// One `recvmsg`: the payload and the first descriptor that came with it (any others are
/// closed).
fn receive_message(socket: RawFd) -> io::Result<(Vec<u8>, Option<OwnedFd>)> {
    let mut payload = vec![0u8; 512];
    let mut iov = libc::iovec {
        iov_base: payload.as_mut_ptr().cast(),
        iov_len: payload.len(),
    };
    let mut control = [0u64; 16];
    // SAFETY: msghdr is plain data; zeroed is a valid empty message.
    let mut message: libc::msghdr = unsafe { std::mem::zeroed() };
    message.msg_iov = &mut iov;
    message.msg_iovlen = 1;
    message.msg_control = control.as_mut_ptr().cast();
    message.msg_controllen = std::mem::size_of_val(&control);
    let received = loop {
        // SAFETY: every pointer in `message` refers to live locals sized as its lengths say.
        let n = unsafe { libc::recvmsg(socket, &mut message, libc::MSG_CMSG_CLOEXEC) };
        if n >= 0 {
            break n as usize;
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    };
    payload.truncate(received);
    let mut found: Option<OwnedFd> = None;
    // SAFETY: the kernel filled `control` up to msg_controllen; the CMSG macros walk only
    // within it, and each SCM_RIGHTS header's data holds whole descriptors now ours.
    unsafe {
        let mut header = libc::CMSG_FIRSTHDR(&message);
        while !header.is_null() {
            if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(header);
                let bytes = (*header).cmsg_len as usize - (data as usize - header as usize);
                for i in 0..bytes / std::mem::size_of::<RawFd>() {
                    let fd = std::ptr::read_unaligned(data.cast::<RawFd>().add(i));
                    let owned = OwnedFd::from_raw_fd(fd);
                    if found.is_none() {
                        found = Some(owned);
                    }
                }
            }
            header = libc::CMSG_NXTHDR(&message, header);
        }
    }
    Ok((payload, found))
}

/// Whether sessions on a connection of this kind can be offered memory: only the node's Unix
/// sockets carry descriptors.
pub fn offered_to(peer: &crate::identity::Peer) -> bool {
    matches!(
        peer,
        crate::identity::Peer::Unix { .. } | crate::identity::Peer::Allocation { .. }
    )
}
