//! The doorbell ring: `Submit` in shared memory for a client on the node's Unix socket. A
//! launch is a record the client writes and, when the node sleeps, one futex wake; its
//! completion is a slot the node writes back. No gRPC message per command, no thread hop in
//! either runtime.
//!
//! The memory (a sealed memfd of [`RING_BYTES`], the node's, charged to the client's DMA
//! grant) holds, in order:
//! - a header page: counters on lines of their own, two futex words (`node_bell` the node
//!   sleeps on, `client_bell` the client sleeps on, each with a count of sleepers beside it),
//!   and the state (`open`, closed by the node with its reason, left by the client);
//! - the command ring of [`COMMAND_BYTES`]: records of a little-endian `u32` length and a
//!   `proto::Command` message, padded to 8 bytes, wrapping at the end; the client advances
//!   `command_tail`, the node `command_head` (both in bytes, never wrapped);
//! - [`DONE_SLOTS`] completion slots of [`SLOT_BYTES`]: tag, code, and as much of the message
//!   as fits; the node advances `done_tail`, the client `done_head` (in slots).
//!
//! What the node trusts of it: nothing. Each side keeps its own copy of what it advanced and
//! checks what the other side wrote against it (a tail behind the head or a full ring ahead,
//! a record longer than [`MAX_RECORD`] or than what was written, a message that does not
//! decode): the ring is then closed with the reason, and the session goes on. A record is
//! copied out before it is read, so a client rewriting it meanwhile changes nothing checked.
//! A command holds one of [`DONE_SLOTS`] until the client has read its completion, so the
//! node never waits for room to complete; a client that reads none stops only itself. Every
//! wait is a futex wait of at most [`TICK`], so either side notices the other going.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use accelhost::ErrorCode;
use prost::Message;

use crate::proto;

/// Bytes of the command ring.
pub const COMMAND_BYTES: u64 = 1 << 20;
/// Completion slots: the commands in flight on one ring, at most (as on a `Submit` stream).
pub const DONE_SLOTS: u64 = 1024;
/// Bytes of one completion slot.
pub const SLOT_BYTES: u64 = 256;
/// Bytes of the header page.
pub const HEADER_BYTES: u64 = 4096;
/// Bytes of the whole ring's memory.
pub const RING_BYTES: u64 = HEADER_BYTES + COMMAND_BYTES + DONE_SLOTS * SLOT_BYTES;
/// The longest command record; a longer command goes by `Submit`.
pub const MAX_RECORD: u64 = 256 << 10;
/// How long a side looks for the other's next write, yielding, before it sleeps: about the
/// time between two launches of a queue, so a busy ring costs no futex calls.
const SPIN: Duration = Duration::from_micros(20);
/// The longest wait without looking at the other side's state.
pub const TICK: Duration = Duration::from_millis(100);
/// How long a client's write waits for room while the node takes no command and finishes
/// none: past it the node is taken as stuck and the client leaves the ring (what waits on it
/// fails). A node bounds each launch itself (a card's kernel deadline is 10 s by default).
pub const STALL: Duration = Duration::from_secs(60);

/// The message bytes a slot holds; a longer message is cut at a character boundary.
const MESSAGE_BYTES: usize = (SLOT_BYTES - 16) as usize;
/// The longest reason the node writes when it closes the ring.
const REASON_BYTES: usize = 1024;

const MAGIC: u64 = u64::from_le_bytes(*b"acring01");

/// Where the header's fields are, in bytes from the ring's start: `u64` counters on cache
/// lines of their own, `u32` bells each followed by its count of sleepers, the `u32` state
/// and the node's reason. Public for clients written in other languages, and tests.
pub mod header {
    /// `u64`: the layout's mark, `acring01` little-endian.
    pub const MAGIC: usize = 0;
    /// `u64`, the client's: bytes of command records written.
    pub const COMMAND_TAIL: usize = 64;
    /// `u64`, the node's: bytes of command records read.
    pub const COMMAND_HEAD: usize = 128;
    /// `u32`: the futex the node sleeps on; its sleepers' count follows.
    pub const NODE_BELL: usize = 192;
    /// `u64`, the node's: completion slots written.
    pub const DONE_TAIL: usize = 256;
    /// `u64`, the client's: completion slots read.
    pub const DONE_HEAD: usize = 320;
    /// `u32`: the futex the client sleeps on; its sleepers' count follows.
    pub const CLIENT_BELL: usize = 384;
    /// `u32`: 0 open, 1 closed by the node, 2 left by the client.
    pub const STATE: usize = 448;
    /// `u32`: bytes of the node's reason for closing.
    pub const REASON_LEN: usize = 452;
    /// The node's reason for closing, UTF-8, up to 1024 bytes.
    pub const REASON: usize = 512;
}

use header::{
    CLIENT_BELL as AT_CLIENT_BELL, COMMAND_HEAD as AT_COMMAND_HEAD,
    COMMAND_TAIL as AT_COMMAND_TAIL, DONE_HEAD as AT_DONE_HEAD, DONE_TAIL as AT_DONE_TAIL,
    MAGIC as AT_MAGIC, NODE_BELL as AT_NODE_BELL, REASON as AT_REASON, REASON_LEN as AT_REASON_LEN,
    STATE as AT_STATE,
};
/// Each bell's count of sleepers follows it.
const SLEEPERS: usize = 4;

const OPEN: u32 = 0;
const CLOSED_BY_NODE: u32 = 1;
const LEFT_BY_CLIENT: u32 = 2;

/// The ring's memory, mapped.
pub struct RingMemory {
    ptr: NonNull<u8>,
    fd: OwnedFd,
}

// SAFETY: the mapping is plain shared memory; every access to it goes through atomics or
// copies in and out, so any thread may hold it.
unsafe impl Send for RingMemory {}
// SAFETY: as above.
unsafe impl Sync for RingMemory {}

impl RingMemory {
    /// A fresh ring (a sealed memfd of [`RING_BYTES`], zeroed), as the node makes it.
    pub fn create() -> io::Result<RingMemory> {
        // SAFETY: the name is a NUL-terminated literal.
        let raw = unsafe {
            libc::memfd_create(
                c"accelhost-ring".as_ptr(),
                libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: memfd_create returned a descriptor nothing else owns.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: plain calls on the descriptor we own.
        let sized = unsafe {
            libc::ftruncate(fd.as_raw_fd(), RING_BYTES as libc::off_t) == 0
                && libc::fcntl(
                    fd.as_raw_fd(),
                    libc::F_ADD_SEALS,
                    libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL,
                ) == 0
        };
        if !sized {
            return Err(io::Error::last_os_error());
        }
        let ring = RingMemory::map(fd)?;
        ring.u64_at(AT_MAGIC).store(MAGIC, Ordering::Release);
        Ok(ring)
    }

    /// The ring in `fd`, as the client receives it: refused unless the memfd is sealed against
    /// any change of size, is exactly [`RING_BYTES`] and carries the layout's mark.
    pub fn adopt(fd: OwnedFd) -> io::Result<RingMemory> {
        let invalid = |what: &str| io::Error::new(io::ErrorKind::InvalidData, what.to_string());
        // SAFETY: F_GET_SEALS on a descriptor we own.
        let seals = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GET_SEALS) };
        let sealed = libc::F_SEAL_SHRINK | libc::F_SEAL_GROW;
        if seals < 0 || seals & sealed != sealed {
            return Err(invalid("the ring's memory is not sealed against resizing"));
        }
        // SAFETY: fstat writes into the zeroed struct we pass, on a descriptor we own.
        let mut stat: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        if unsafe { libc::fstat(fd.as_raw_fd(), &mut stat) } != 0 {
            return Err(io::Error::last_os_error());
        }
        if stat.st_size as u64 != RING_BYTES {
            return Err(invalid("the ring's memory is not the layout's size"));
        }
        let ring = RingMemory::map(fd)?;
        if ring.u64_at(AT_MAGIC).load(Ordering::Acquire) != MAGIC {
            return Err(invalid(
                "the ring's memory does not carry the layout's mark",
            ));
        }
        Ok(ring)
    }

    fn map(fd: OwnedFd) -> io::Result<RingMemory> {
        // SAFETY: a fresh shared mapping of the whole memfd, which is sealed at this size.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                RING_BYTES as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr =
            NonNull::new(ptr.cast()).ok_or_else(|| io::Error::from_raw_os_error(libc::EFAULT))?;
        Ok(RingMemory { ptr, fd })
    }

    /// A duplicate of the memfd, for the client.
    pub fn share(&self) -> io::Result<OwnedFd> {
        self.fd.try_clone()
    }

    fn u64_at(&self, at: usize) -> &AtomicU64 {
        debug_assert!(at.is_multiple_of(8) && at + 8 <= HEADER_BYTES as usize);
        // SAFETY: inside the header page of a live, page-aligned mapping, 8-aligned.
        unsafe { AtomicU64::from_ptr(self.ptr.as_ptr().add(at).cast()) }
    }

    fn u32_at(&self, at: usize) -> &AtomicU32 {
        debug_assert!(at.is_multiple_of(4) && at + 4 <= HEADER_BYTES as usize);
        // SAFETY: inside the header page of a live, page-aligned mapping, 4-aligned.
        unsafe { AtomicU32::from_ptr(self.ptr.as_ptr().add(at).cast()) }
    }

    /// Copies `out.len()` bytes of the area at `area` (of `area_len` bytes) from `offset`,
    /// wrapping at its end.
    fn copy_out(&self, area: u64, area_len: u64, offset: u64, out: &mut [u8]) {
        let start = offset % area_len;
        let first = (out.len() as u64).min(area_len - start) as usize;
        // SAFETY: both pieces lie inside the area, inside the mapping; the other process may
        // write them meanwhile, which only changes the bytes copied (they are checked after).
        unsafe {
            let base = self.ptr.as_ptr().add(area as usize);
            std::ptr::copy_nonoverlapping(base.add(start as usize), out.as_mut_ptr(), first);
            std::ptr::copy_nonoverlapping(base, out.as_mut_ptr().add(first), out.len() - first);
        }
    }

    /// Copies `bytes` into the area at `area` from `offset`, wrapping at its end.
    fn copy_in(&self, area: u64, area_len: u64, offset: u64, bytes: &[u8]) {
        let start = offset % area_len;
        let first = (bytes.len() as u64).min(area_len - start) as usize;
        // SAFETY: as in copy_out, written instead of read.
        unsafe {
            let base = self.ptr.as_ptr().add(area as usize);
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), base.add(start as usize), first);
            std::ptr::copy_nonoverlapping(bytes.as_ptr().add(first), base, bytes.len() - first);
        }
    }

    /// Whether either side has closed the ring.
    fn state(&self) -> u32 {
        self.u32_at(AT_STATE).load(Ordering::Acquire)
    }

    /// The node's reason for closing, as it wrote it (cut to [`REASON_BYTES`]).
    fn reason(&self) -> String {
        let len = (self.u32_at(AT_REASON_LEN).load(Ordering::Acquire) as usize).min(REASON_BYTES);
        let mut bytes = vec![0; len];
        self.copy_out(AT_REASON as u64, REASON_BYTES as u64, 0, &mut bytes);
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Wakes whoever sleeps on the bell at `bell`, if anyone does.
    fn ring_bell(&self, bell: usize) {
        if self.u32_at(bell + SLEEPERS).load(Ordering::SeqCst) > 0 {
            self.u32_at(bell).fetch_add(1, Ordering::SeqCst);
            futex_wake(self.u32_at(bell));
        }
    }

    /// Sleeps on the bell at `bell` until it rings or [`TICK`] passes, unless `ready` already
    /// holds once this side is counted among the sleepers.
    fn sleep_on(&self, bell: usize, ready: impl Fn() -> bool) {
        let spinning = std::time::Instant::now();
        while spinning.elapsed() < SPIN {
            if ready() {
                return;
            }
            std::thread::yield_now();
        }
        let sleepers = self.u32_at(bell + SLEEPERS);
        sleepers.fetch_add(1, Ordering::SeqCst);
        let rung = self.u32_at(bell).load(Ordering::SeqCst);
        if !ready() && self.state() == OPEN {
            futex_wait(self.u32_at(bell), rung, TICK);
        }
        sleepers.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Drop for RingMemory {
    fn drop(&mut self) {
        // SAFETY: the mapping this value made, unmapped once.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), RING_BYTES as usize) };
    }
}

fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let timeout = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: libc::c_long::from(timeout.subsec_nanos() as i32),
    };
    // SAFETY: a shared futex wait on a word of a live mapping, bounded by `timeout`.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &timeout as *const libc::timespec,
            std::ptr::null::<u32>(),
            0,
        )
    };
}

fn futex_wake(word: &AtomicU32) {
    // SAFETY: a shared futex wake on a word of a live mapping.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAKE,
            i32::MAX,
            std::ptr::null::<libc::timespec>(),
            std::ptr::null::<u32>(),
            0,
        )
    };
}

/// A record's length and padding: the `u32` length, the message, up to a multiple of 8.
fn record_bytes(message: u64) -> u64 {
    (4 + message).next_multiple_of(8)
}

/// Why a ring was closed: the other side wrote outside the layout.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct Broken(String);

/// The node's end: reads commands, writes completions.
pub struct NodeEnd {
    ring: Arc<RingMemory>,
    /// Bytes of commands read.
    head: u64,
    /// Commands read.
    read: u64,
    /// The client's `done_head` as last checked.
    heard: u64,
    done: Arc<Completions>,
}

/// The node's writer of completions, shared by the threads that finish commands.
pub struct Completions {
    ring: Arc<RingMemory>,
    tail: Mutex<u64>,
}

impl Completions {
    /// Writes the completion of command `tag` (`code` 0: it completed) into the next slot and
    /// wakes the client if it sleeps. The slot was reserved when the command was read.
    pub fn push(&self, tag: u64, code: i32, message: &str) {
        let mut slot = [0u8; SLOT_BYTES as usize];
        let mut cut = message.len().min(MESSAGE_BYTES);
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        slot[..8].copy_from_slice(&tag.to_le_bytes());
        slot[8..12].copy_from_slice(&code.to_le_bytes());
        slot[12..16].copy_from_slice(&(cut as u32).to_le_bytes());
        slot[16..16 + cut].copy_from_slice(&message.as_bytes()[..cut]);
        let mut tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let at = HEADER_BYTES + COMMAND_BYTES;
        self.ring
            .copy_in(at, DONE_SLOTS * SLOT_BYTES, *tail * SLOT_BYTES, &slot);
        *tail += 1;
        self.ring
            .u64_at(AT_DONE_TAIL)
            .store(*tail, Ordering::SeqCst);
        drop(tail);
        self.ring.ring_bell(AT_CLIENT_BELL);
    }

    fn tail(&self) -> u64 {
        *self.tail.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl NodeEnd {
    /// The node's end of `ring`.
    pub fn new(ring: Arc<RingMemory>) -> NodeEnd {
        NodeEnd {
            done: Arc::new(Completions {
                ring: ring.clone(),
                tail: Mutex::new(0),
            }),
            ring,
            head: 0,
            read: 0,
            heard: 0,
        }
    }

    /// What writes this ring's completions.
    pub fn completions(&self) -> Arc<Completions> {
        self.done.clone()
    }

    /// Whether the client has left the ring.
    pub fn client_left(&self) -> bool {
        self.ring.state() == LEFT_BY_CLIENT
    }

    /// The commands written since the last call, at most `max` and no more than completion
    /// slots are free, each with the slot it holds; waits up to [`TICK`] for one when there
    /// is none (an empty answer then). `Err` when the client wrote outside the layout.
    pub fn next_commands(&mut self, max: usize) -> Result<Vec<proto::Command>, Broken> {
        let mut commands = Vec::new();
        for attempt in 0..2 {
            let room = self.room()?;
            let tail = self.tail()?;
            while self.head < tail && (commands.len() as u64) < room.min(max as u64) {
                commands.push(self.read_record(tail)?);
            }
            if !commands.is_empty() || attempt == 1 {
                break;
            }
            let (head, read) = (self.head, self.read);
            let ring = &self.ring;
            let heard = self.heard;
            ring.sleep_on(AT_NODE_BELL, || {
                let tail = ring.u64_at(AT_COMMAND_TAIL).load(Ordering::SeqCst);
                let done_head = ring.u64_at(AT_DONE_HEAD).load(Ordering::SeqCst);
                (tail != head && read - heard < DONE_SLOTS)
                    || done_head != heard
                    || ring.state() != OPEN
            });
        }
        if !commands.is_empty() {
            self.ring
                .u64_at(AT_COMMAND_HEAD)
                .store(self.head, Ordering::SeqCst);
            self.ring.ring_bell(AT_CLIENT_BELL);
        }
        Ok(commands)
    }

    /// Free completion slots: slots not held by a command whose completion the client has
    /// not read.
    fn room(&mut self) -> Result<u64, Broken> {
        let done_head = self.ring.u64_at(AT_DONE_HEAD).load(Ordering::SeqCst);
        let written = self.done.tail();
        if done_head < self.heard || done_head > written {
            return Err(Broken(format!(
                "the ring's done_head {done_head} is outside the completions written ({} read, {written} written)",
                self.heard
            )));
        }
        self.heard = done_head;
        Ok(DONE_SLOTS - (self.read - done_head))
    }

    fn tail(&self) -> Result<u64, Broken> {
        let tail = self.ring.u64_at(AT_COMMAND_TAIL).load(Ordering::SeqCst);
        if tail < self.head || tail - self.head > COMMAND_BYTES || !tail.is_multiple_of(8) {
            return Err(Broken(format!(
                "the ring's command_tail {tail} is outside the ring (head {}, {COMMAND_BYTES} bytes)",
                self.head
            )));
        }
        Ok(tail)
    }

    fn read_record(&mut self, tail: u64) -> Result<proto::Command, Broken> {
        let area = (HEADER_BYTES, COMMAND_BYTES);
        let mut len = [0u8; 4];
        self.ring.copy_out(area.0, area.1, self.head, &mut len);
        let len = u64::from(u32::from_le_bytes(len));
        let written = tail - self.head;
        if len == 0 || len > MAX_RECORD || record_bytes(len) > written {
            return Err(Broken(format!(
                "a record at byte {} of the ring says {len} bytes (at most {MAX_RECORD}, {written} written)",
                self.head
            )));
        }
        let mut message = vec![0; len as usize];
        self.ring
            .copy_out(area.0, area.1, self.head + 4, &mut message);
        let command = proto::Command::decode(message.as_slice()).map_err(|err| {
            Broken(format!(
                "the record at byte {} of the ring is no Command: {err}",
                self.head
            ))
        })?;
        self.head += record_bytes(len);
        self.read += 1;
        Ok(command)
    }

    /// Closes the ring with `reason` for the client to read, and wakes it.
    pub fn close(&self, reason: &str) {
        let mut cut = reason.len().min(REASON_BYTES);
        while !reason.is_char_boundary(cut) {
            cut -= 1;
        }
        self.ring.copy_in(
            AT_REASON as u64,
            REASON_BYTES as u64,
            0,
            &reason.as_bytes()[..cut],
        );
        self.ring
            .u32_at(AT_REASON_LEN)
            .store(cut as u32, Ordering::Release);
        self.ring
            .u32_at(AT_STATE)
            .store(CLOSED_BY_NODE, Ordering::SeqCst);
        self.ring
            .u32_at(AT_CLIENT_BELL)
            .fetch_add(1, Ordering::SeqCst);
        futex_wake(self.ring.u32_at(AT_CLIENT_BELL));
    }
}

/// Wakes a node's serving thread of `ring` so it sees the ring closed (its object released).
pub fn wake_node(ring: &RingMemory) {
    ring.u32_at(AT_NODE_BELL).fetch_add(1, Ordering::SeqCst);
    futex_wake(ring.u32_at(AT_NODE_BELL));
}

/// A ring as a session's object: releasing it stops the thread that serves it.
pub struct RingObject {
    memory: Arc<RingMemory>,
    released: Arc<AtomicBool>,
}

impl Drop for RingObject {
    fn drop(&mut self) {
        self.released.store(true, Ordering::SeqCst);
        wake_node(&self.memory);
    }
}

impl RingObject {
    /// The object of a ring whose serving thread watches [`released`](Self::released).
    pub fn new(memory: Arc<RingMemory>) -> RingObject {
        RingObject {
            memory,
            released: Arc::new(AtomicBool::new(false)),
        }
    }

    /// Set once the object is released: the serving thread stops.
    pub fn released(&self) -> Arc<AtomicBool> {
        self.released.clone()
    }
}

/// A completion as the client reads it: the command's tag and how it ended.
pub type Heard = (u64, Result<(), (ErrorCode, String)>);

/// The client's end: writes commands, reads completions. Commands are written under a lock
/// (one writer at a time); completions are read by one thread.
pub struct ClientEnd {
    ring: Arc<RingMemory>,
    /// Bytes of commands written.
    tail: Mutex<u64>,
    /// Completions read.
    head: Mutex<u64>,
    /// How long a write waits for room while the node makes no progress ([`STALL`]).
    stall: Duration,
    /// A pidfd of the node's process, readable once it has exited.
    node: Option<OwnedFd>,
}

impl ClientEnd {
    /// The client's end of `ring`, as [`RingMemory::adopt`] mapped it.
    pub fn new(ring: RingMemory) -> ClientEnd {
        ClientEnd {
            ring: Arc::new(ring),
            tail: Mutex::new(0),
            head: Mutex::new(0),
            stall: STALL,
            node: None,
        }
    }

    /// This end watching the node's process through `pidfd`: once the process has exited,
    /// a read or a write waiting on the ring ends with that reason and the client leaves the
    /// ring (a killed node writes nothing there to say so).
    pub fn watching(mut self, pidfd: Option<OwnedFd>) -> ClientEnd {
        self.node = pidfd;
        self
    }

    /// Leaves the ring with `Err` naming why when the watched node has exited.
    fn check_node(&self) -> Result<(), String> {
        let Some(pidfd) = &self.node else {
            return Ok(());
        };
        let mut poll = libc::pollfd {
            fd: pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd of a descriptor this end owns; a zero timeout does not block.
        if unsafe { libc::poll(&mut poll, 1, 0) } > 0 {
            self.leave();
            return Err("the node's process exited".into());
        }
        Ok(())
    }

    /// This end with writes waiting at most `stall` for a node that makes no progress,
    /// instead of [`STALL`].
    pub fn stalled_after(mut self, stall: Duration) -> ClientEnd {
        self.stall = stall;
        self
    }

    /// Why the ring is closed, once it is.
    pub fn closed(&self) -> Option<String> {
        match self.ring.state() {
            OPEN => None,
            CLOSED_BY_NODE => Some(format!("the node closed the ring: {}", self.ring.reason())),
            _ => Some("the client left the ring".into()),
        }
    }

    /// Writes `command`, waiting while the ring is full (the node reads as commands
    /// complete). `Err` when it is longer than [`MAX_RECORD`] (send it another way) or the
    /// ring is closed, and when the ring stays full while the node takes no command and
    /// finishes none for the stall bound: the client then leaves the ring.
    pub fn write(&self, command: &proto::Command) -> Result<(), String> {
        let len = command.encoded_len() as u64;
        if len > MAX_RECORD {
            return Err(format!(
                "a command of {len} bytes is longer than a ring record"
            ));
        }
        let mut record = Vec::with_capacity(record_bytes(len) as usize);
        record.extend_from_slice(&(len as u32).to_le_bytes());
        command
            .encode(&mut record)
            .expect("a Vec grows to any length");
        record.resize(record_bytes(len) as usize, 0);
        let mut tail = self.tail.lock().unwrap_or_else(|p| p.into_inner());
        let progress = || {
            (
                self.ring.u64_at(AT_COMMAND_HEAD).load(Ordering::SeqCst),
                self.ring.u64_at(AT_DONE_TAIL).load(Ordering::SeqCst),
            )
        };
        let (mut seen, mut since) = (progress(), Instant::now());
        loop {
            if let Some(why) = self.closed() {
                return Err(why);
            }
            let head = self.ring.u64_at(AT_COMMAND_HEAD).load(Ordering::SeqCst);
            if head > *tail || *tail - head > COMMAND_BYTES {
                return Err(format!(
                    "the node's command_head {head} is outside the commands written ({})",
                    *tail
                ));
            }
            if COMMAND_BYTES - (*tail - head) >= record.len() as u64 {
                break;
            }
            self.check_node()?;
            let now = progress();
            if now != seen {
                (seen, since) = (now, Instant::now());
            } else if since.elapsed() >= self.stall {
                self.leave();
                return Err(format!(
                    "the ring stayed full while the node took no command and finished none \
                     for {} ms: the client left it",
                    self.stall.as_millis()
                ));
            }
            let (ring, wanted) = (&self.ring, *tail + record.len() as u64 - COMMAND_BYTES);
            ring.sleep_on(AT_CLIENT_BELL, || {
                ring.u64_at(AT_COMMAND_HEAD).load(Ordering::SeqCst) >= wanted
            });
        }
        self.ring
            .copy_in(HEADER_BYTES, COMMAND_BYTES, *tail, &record);
        *tail += record.len() as u64;
        self.ring
            .u64_at(AT_COMMAND_TAIL)
            .store(*tail, Ordering::SeqCst);
        drop(tail);
        self.ring.ring_bell(AT_NODE_BELL);
        Ok(())
    }

    /// The completions written since the last call; waits up to [`TICK`] for one when there
    /// is none (an empty answer then). `Err` when the ring is closed or the node wrote
    /// outside the layout.
    pub fn read(&self) -> Result<Vec<Heard>, String> {
        let mut head = self.head.lock().unwrap_or_else(|p| p.into_inner());
        let ring = &self.ring;
        let tail = || ring.u64_at(AT_DONE_TAIL).load(Ordering::SeqCst);
        if tail() == *head {
            let seen = *head;
            ring.sleep_on(AT_CLIENT_BELL, || tail() != seen);
        }
        let tail = tail();
        if tail < *head || tail - *head > DONE_SLOTS {
            return Err(format!(
                "the node's done_tail {tail} is outside the slots (read {})",
                *head
            ));
        }
        let mut heard = Vec::with_capacity((tail - *head) as usize);
        let mut slot = [0u8; SLOT_BYTES as usize];
        while *head < tail {
            let at = HEADER_BYTES + COMMAND_BYTES;
            ring.copy_out(at, DONE_SLOTS * SLOT_BYTES, *head * SLOT_BYTES, &mut slot);
            let tag = u64::from_le_bytes(slot[..8].try_into().expect("8 bytes"));
            let code = i32::from_le_bytes(slot[8..12].try_into().expect("4 bytes"));
            let len = (u32::from_le_bytes(slot[12..16].try_into().expect("4 bytes")) as usize)
                .min(MESSAGE_BYTES);
            let message = String::from_utf8_lossy(&slot[16..16 + len]).into_owned();
            let outcome = match (code, ErrorCode::from_number(code as u32)) {
                (0, _) => Ok(()),
                (_, Some(code)) => Err((code, message)),
                (_, None) => Err((ErrorCode::DeviceError, message)),
            };
            heard.push((tag, outcome));
            *head += 1;
        }
        if !heard.is_empty() {
            ring.u64_at(AT_DONE_HEAD).store(*head, Ordering::SeqCst);
            // The node may be waiting for a slot.
            ring.ring_bell(AT_NODE_BELL);
        } else if let Some(why) = self.closed() {
            return Err(why);
        } else {
            self.check_node()?;
        }
        Ok(heard)
    }

    /// Leaves the ring: the node stops serving it, and a reader waiting here wakes.
    pub fn leave(&self) {
        let _ = self.ring.u32_at(AT_STATE).compare_exchange(
            OPEN,
            LEFT_BY_CLIENT,
            Ordering::SeqCst,
            Ordering::SeqCst,
        );
        wake_node(&self.ring);
        self.ring
            .u32_at(AT_CLIENT_BELL)
            .fetch_add(1, Ordering::SeqCst);
        futex_wake(self.ring.u32_at(AT_CLIENT_BELL));
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A launch command of `tag` with an argument of `bytes` bytes.
    pub(crate) fn launch(tag: u64, bytes: usize) -> proto::Command {
        proto::Command {
            tag,
            work: Some(proto::command::Work::Launch(proto::LaunchRequest {
                session: String::new(),
                queue: 1,
                kernel: 2,
                args: vec![proto::Arg {
                    value: Some(proto::arg::Value::Bytes(vec![tag as u8; bytes].into())),
                }],
            })),
        }
    }

    /// Both ends over one memfd, each with a mapping of its own as across processes.
    fn pair() -> (NodeEnd, ClientEnd) {
        let memory = RingMemory::create().unwrap();
        let client = ClientEnd::new(RingMemory::adopt(memory.share().unwrap()).unwrap());
        (NodeEnd::new(Arc::new(memory)), client)
    }

    #[test]
    fn commands_and_completions_cross_in_order_and_wrap_at_the_end() {
        let (mut node, client) = pair();
        let done = node.completions();
        let mut next = 0;
        // Records of ~10 KiB go round the 1 MiB ring, completions round their slots.
        for round in 0..150u64 {
            for i in 0..10 {
                client.write(&launch(round * 10 + i, 10_000)).unwrap();
            }
            let commands = node.next_commands(usize::MAX).unwrap();
            assert_eq!(commands.len(), 10);
            for command in commands {
                assert_eq!(command, launch(next, 10_000));
                let message = if next % 2 == 0 { "" } else { "no such queue" };
                done.push(next, if next % 2 == 0 { 0 } else { 5 }, message);
                next += 1;
            }
            let heard = client.read().unwrap();
            assert_eq!(heard.len(), 10);
            for (tag, outcome) in heard {
                match outcome {
                    Ok(()) => assert_eq!(tag % 2, 0),
                    Err((code, why)) => {
                        assert_eq!(code, ErrorCode::from_number(5).unwrap());
                        assert_eq!(why, "no such queue");
                    }
                }
            }
        }
    }

    #[test]
    fn a_command_holds_its_slot_until_the_client_reads_its_completion() {
        let (mut node, client) = pair();
        for tag in 0..DONE_SLOTS + 5 {
            client.write(&launch(tag, 1)).unwrap();
        }
        let first = node.next_commands(usize::MAX).unwrap();
        assert_eq!(first.len() as u64, DONE_SLOTS);
        // Every slot is held: nothing more is read, however long the node waits.
        assert!(node.next_commands(usize::MAX).unwrap().is_empty());
        let done = node.completions();
        for command in &first[..3] {
            done.push(command.tag, 0, "");
        }
        assert!(
            node.next_commands(usize::MAX).unwrap().is_empty(),
            "not read yet"
        );
        assert_eq!(client.read().unwrap().len(), 3);
        assert_eq!(node.next_commands(usize::MAX).unwrap().len(), 3);
    }

    #[test]
    fn a_long_message_is_cut_at_a_character_boundary() {
        let (node, client) = pair();
        let why = "é".repeat(400);
        node.completions().push(7, 5, &why);
        let heard = client.read().unwrap();
        let Err((_, cut)) = &heard[0].1 else {
            panic!("{heard:?}")
        };
        assert!(
            cut.len() <= MESSAGE_BYTES && why.starts_with(cut.as_str()),
            "{cut}"
        );
    }

    /// What a hostile client writes into the header, and the reason the node closes with.
    #[test]
    fn a_client_writing_outside_the_layout_breaks_only_its_ring() {
        type Attack = fn(&RingMemory);
        let cases: [(&str, Attack, &str); 6] = [
            (
                "tail past a full ring",
                |r| {
                    r.u64_at(AT_COMMAND_TAIL)
                        .store(COMMAND_BYTES + 8, Ordering::SeqCst)
                },
                "command_tail",
            ),
            (
                "tail not on a record boundary",
                |r| r.u64_at(AT_COMMAND_TAIL).store(12, Ordering::SeqCst),
                "command_tail",
            ),
            (
                "a record of no bytes",
                |r| r.u64_at(AT_COMMAND_TAIL).store(8, Ordering::SeqCst),
                "says 0 bytes",
            ),
            (
                "a record longer than written",
                |r| {
                    r.copy_in(HEADER_BYTES, COMMAND_BYTES, 0, &64u32.to_le_bytes());
                    r.u64_at(AT_COMMAND_TAIL).store(16, Ordering::SeqCst);
                },
                "says 64 bytes",
            ),
            (
                "a record that is no Command",
                |r| {
                    r.copy_in(
                        HEADER_BYTES,
                        COMMAND_BYTES,
                        0,
                        &[4, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
                    );
                    r.u64_at(AT_COMMAND_TAIL).store(8, Ordering::SeqCst);
                },
                "is no Command",
            ),
            (
                "done_head ahead of the completions",
                |r| r.u64_at(AT_DONE_HEAD).store(1, Ordering::SeqCst),
                "done_head",
            ),
        ];
        for (what, attack, reason) in cases {
            let memory = Arc::new(RingMemory::create().unwrap());
            let mut node = NodeEnd::new(memory.clone());
            attack(&memory);
            let broken = node.next_commands(16).expect_err(what);
            assert!(broken.0.contains(reason), "{what}: {broken}");
            node.close(&broken.0);
            let client = ClientEnd::new(RingMemory::adopt(memory.share().unwrap()).unwrap());
            let why = client.closed().expect(what);
            assert!(why.contains(reason), "{what}: {why}");
            assert!(client.write(&launch(1, 1)).unwrap_err().contains(reason));
        }
    }

    #[test]
    fn a_node_writing_outside_the_layout_is_refused_by_the_client() {
        let (node, client) = pair();
        node.ring
            .u64_at(AT_DONE_TAIL)
            .store(DONE_SLOTS + 1, Ordering::SeqCst);
        assert!(client.read().unwrap_err().contains("done_tail"));
        let (node, client) = pair();
        node.ring.u64_at(AT_COMMAND_HEAD).store(8, Ordering::SeqCst);
        assert!(
            client
                .write(&launch(1, 1))
                .unwrap_err()
                .contains("command_head")
        );
    }

    #[test]
    fn memory_of_another_shape_is_not_adopted() {
        // SAFETY: a memfd this test owns.
        let fd = unsafe {
            OwnedFd::from_raw_fd(libc::memfd_create(c"unsealed".as_ptr(), libc::MFD_CLOEXEC))
        };
        let why = RingMemory::adopt(fd).err().unwrap().to_string();
        assert!(why.contains("not sealed"), "{why}");
    }

    #[test]
    fn a_waiting_writer_wakes_when_the_node_reads_and_a_reader_when_the_node_completes() {
        let (mut node, client) = pair();
        let client = Arc::new(client);
        let fits = fill(&client);
        let writer = {
            let client = client.clone();
            std::thread::spawn(move || client.write(&launch(fits, 100_000)))
        };
        let reader = {
            let client = client.clone();
            std::thread::spawn(move || {
                loop {
                    let heard = client.read().unwrap();
                    if !heard.is_empty() {
                        return heard;
                    }
                }
            })
        };
        let mut read = node.next_commands(usize::MAX).unwrap();
        writer.join().unwrap().unwrap();
        while read.len() as u64 <= fits {
            read.extend(node.next_commands(usize::MAX).unwrap());
        }
        node.completions().push(3, 0, "");
        assert_eq!(reader.join().unwrap(), vec![(3, Ok(()))]);
    }

    /// Fills the ring with records of about 100 KB the node has not read; how many fit.
    fn fill(client: &ClientEnd) -> u64 {
        let fits = COMMAND_BYTES / record_bytes(launch(0, 100_000).encoded_len() as u64);
        for tag in 0..fits {
            client.write(&launch(tag, 100_000)).unwrap();
        }
        fits
    }

    #[test]
    fn a_write_to_a_full_ring_of_a_node_that_makes_no_progress_leaves_it_at_the_stall_bound() {
        let (node, client) = pair();
        let client = client.stalled_after(Duration::from_millis(300));
        let fits = fill(&client);
        let started = Instant::now();
        let why = client.write(&launch(fits, 100_000)).unwrap_err();
        let waited = started.elapsed();
        assert!(
            why.contains("took no command and finished none for 300 ms"),
            "{why}"
        );
        assert!(waited >= Duration::from_millis(300), "{waited:?}");
        assert!(waited < Duration::from_millis(300) + 2 * TICK, "{waited:?}");
        assert_eq!(client.closed().as_deref(), Some("the client left the ring"));
        assert!(node.client_left());
        assert!(client.write(&launch(fits + 1, 1)).is_err());
    }

    #[test]
    fn a_node_that_finishes_commands_without_reading_more_is_waited_for_past_the_stall_bound() {
        let (mut node, client) = pair();
        let client = Arc::new(client.stalled_after(Duration::from_millis(300)));
        let fits = fill(&client);
        let writer = {
            let client = client.clone();
            std::thread::spawn(move || client.write(&launch(fits, 100_000)))
        };
        // Three stall bounds with the ring full, a completion every 100 ms.
        let done = node.completions();
        for tag in 0..9 {
            std::thread::sleep(Duration::from_millis(100));
            done.push(tag, 0, "");
        }
        assert!(!writer.is_finished());
        let mut read = 0;
        while read <= fits {
            read += node.next_commands(usize::MAX).unwrap().len() as u64;
        }
        writer.join().unwrap().unwrap();
    }

    #[test]
    fn a_client_watching_the_node_s_process_leaves_the_ring_when_it_exits() {
        let mut process = std::process::Command::new("sleep")
            .arg("60")
            .spawn()
            .unwrap();
        // SAFETY: pidfd_open takes a pid and flags; the child is ours and not yet reaped.
        let raw = unsafe { libc::syscall(libc::SYS_pidfd_open, process.id(), 0) };
        assert!(raw >= 0, "{}", io::Error::last_os_error());
        // SAFETY: a descriptor pidfd_open just returned.
        let pidfd = unsafe { OwnedFd::from_raw_fd(raw as i32) };
        let (node, client) = pair();
        let client = Arc::new(client.watching(Some(pidfd)));
        client.write(&launch(1, 1)).unwrap();
        assert_eq!(client.read().unwrap(), vec![]);
        let reader = {
            let client = client.clone();
            std::thread::spawn(move || {
                loop {
                    match client.read() {
                        Ok(heard) => assert!(heard.is_empty()),
                        Err(why) => return why,
                    }
                }
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        process.kill().unwrap();
        let killed = Instant::now();
        assert_eq!(reader.join().unwrap(), "the node's process exited");
        assert!(killed.elapsed() < 3 * TICK, "{:?}", killed.elapsed());
        assert!(node.client_left());
        process.wait().unwrap();
    }
}
