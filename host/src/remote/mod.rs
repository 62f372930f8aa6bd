//! Nodes running `accelhost serve`, as plugins reach them through the `remote` import. The
//! host library holds no network code: the embedding application hands the host a
//! [`Connector`] (the `accelhost-node` crate's gRPC client is one), and the import checks
//! every connection against the plugin's `remote` grants before asking it. What a node hands
//! out becomes an ordinary host resource: a register window whose accesses are calls
//! ([`window`]), buffers that are the node's own memory when the node shares it (a local
//! node's sealed memfd, mapped here) or else mirrored in host memory ([`mirror`]), and
//! completions that finish when the node's events do.

mod import;
mod mirror;
mod session;
mod share;
mod window;

use std::sync::Arc;
use std::time::Instant;

pub use crate::config::policy::{RemoteEndpoint, RemoteGrant};
pub use crate::devices::AccessWidth;
use crate::error::ErrorCode;
use crate::properties::Properties;
use crate::types::{EventKind, MemoryKind};

/// A remote call that failed: the code the node (or the transport) gave and a message that
/// names the node and the call.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{message}")]
pub struct RemoteFailure {
    /// The stable code.
    pub code: ErrorCode,
    /// What went wrong, naming the node and the call.
    pub message: String,
}

/// The result of a remote call.
pub type RemoteResult<T> = Result<T, RemoteFailure>;

/// A page of a mirrored buffer or memory: `data` at `offset` of the node's `object`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// The node's id for the buffer or memory.
    pub object: u64,
    /// Byte offset in it.
    pub offset: u64,
    /// The bytes.
    pub data: Vec<u8>,
}

/// What hears how a node's command or event ended (the failure message, if it failed or the
/// session ended), on a thread where blocking calls are allowed.
pub type Done = Box<dyn FnOnce(Result<(), String>) + Send>;

/// A buffer or memory a node made for the session.
#[derive(Debug)]
pub struct RemoteObject {
    /// The node's id for it.
    pub id: u64,
    /// Its size in bytes.
    pub size: u64,
    /// Its device address (a buffer's IOVA, memory's device address).
    pub address: u64,
    /// The memory itself, when the node shares it (a sealed memfd, on a Unix socket): mapped
    /// here instead of mirrored.
    pub memory: Option<std::os::fd::OwnedFd>,
}

/// The granule buffers are mirrored in.
pub const PAGE_BYTES: u64 = 4096;

/// A kernel argument for a node: memory is the node's allocation id and an offset.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RemoteArg {
    /// A place in an allocation.
    Memory {
        /// The node's allocation id.
        object: u64,
        /// Byte offset in it.
        offset: u64,
    },
    /// A 32-bit scalar.
    Scalar32(u32),
    /// A 64-bit scalar.
    Scalar64(u64),
    /// Raw argument bytes.
    Bytes(Vec<u8>),
}

/// One launch for a node: the node's kernel id and the arguments.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RemoteLaunch {
    /// The node's kernel id.
    pub kernel: u64,
    /// Its arguments.
    pub args: Vec<RemoteArg>,
}

/// Makes connections to nodes. Given to the host by the embedding application
/// ([`HostBuilder::remote`](crate::HostBuilder::remote)); without one, `remote` connects fail
/// with `unsupported`.
pub trait Connector: Send + Sync + 'static {
    /// Connects to `endpoint` and attaches a session, labelled `label` in the node's logs,
    /// by `deadline`.
    fn connect(
        &self,
        endpoint: &RemoteEndpoint,
        label: &str,
        deadline: Instant,
    ) -> RemoteResult<Arc<dyn RemoteNode>>;
}

/// A session with one node. Every call ends by its deadline; dropping the value ends the
/// session, and the node releases what was opened through it.
pub trait RemoteNode: Send + Sync + 'static {
    /// The node's name: what `host` says of its devices, seen from elsewhere.
    fn name(&self) -> String;
    /// Whether the session still stands.
    fn is_attached(&self) -> bool;
    /// The devices the node lets this client see, with the node's id for each.
    fn enumerate(&self, deadline: Instant) -> RemoteResult<Vec<(String, Properties)>>;
    /// Opens device `id`; returns the node's handle number.
    fn open(&self, id: &str, shared: bool, deadline: Instant) -> RemoteResult<u64>;
    /// Closes a handle, with everything opened through it.
    fn close(&self, handle: u64, deadline: Instant) -> RemoteResult<()>;
    /// Resets the accelerator behind a handle.
    fn reset(&self, handle: u64, deadline: Instant) -> RemoteResult<()>;
    /// Loads `image` into slot `slot`.
    fn reconfigure(
        &self,
        handle: u64,
        slot: u32,
        image: &[u8],
        deadline: Instant,
    ) -> RemoteResult<()>;
    /// Maps MMIO region `index`: the node's region number and its size.
    fn map_mmio(&self, handle: u64, index: u32, deadline: Instant) -> RemoteResult<(u64, u64)>;
    /// Reads a register.
    fn mmio_read(
        &self,
        region: u64,
        offset: u64,
        width: AccessWidth,
        deadline: Instant,
    ) -> RemoteResult<u64>;
    /// Writes a register.
    fn mmio_write(
        &self,
        region: u64,
        offset: u64,
        width: AccessWidth,
        value: u64,
        deadline: Instant,
    ) -> RemoteResult<()>;
    /// Prepares a buffer.
    fn prepare_buffer(
        &self,
        handle: u64,
        size: u64,
        read_only: bool,
        deadline: Instant,
    ) -> RemoteResult<RemoteObject>;
    /// Allocates offload memory.
    fn alloc(
        &self,
        handle: u64,
        kind: MemoryKind,
        size: u64,
        bank: Option<u32>,
        deadline: Instant,
    ) -> RemoteResult<RemoteObject>;
    /// Writes `pushes` into the node's buffers and memory, then answers the pages of
    /// `watched` that changed on the node since the last sync (only what the client pushed
    /// counts as known to both sides). The answer is a state where every change the device
    /// made before a page it contains is contained too.
    fn sync(&self, watched: &[u64], pushes: &[Page], deadline: Instant) -> RemoteResult<Vec<Page>>;
    /// Creates a program from `image` (empty: the device's built-in one).
    fn create_program(&self, handle: u64, image: &[u8], deadline: Instant) -> RemoteResult<u64>;
    /// A kernel of a program.
    fn kernel(&self, program: u64, name: &str, deadline: Instant) -> RemoteResult<u64>;
    /// Creates an in-order queue.
    fn create_queue(&self, handle: u64, deadline: Instant) -> RemoteResult<u64>;
    /// Enqueues a copy between `(allocation, offset)` places without waiting for the node:
    /// `done` hears, on a thread where blocking calls are allowed, how the copy ended
    /// (failing to enqueue included). An error here means nothing was sent.
    fn enqueue_memcpy(
        &self,
        queue: u64,
        dst: (u64, u64),
        src: (u64, u64),
        size: u64,
        done: Done,
    ) -> RemoteResult<()>;
    /// Enqueues launches (one, or a batch of at most
    /// [`LAUNCHES_PER_BATCH`](crate::types::LAUNCHES_PER_BATCH)) without waiting for the node, as
    /// [`enqueue_memcpy`](Self::enqueue_memcpy) does: `done` hears once, when the last
    /// finished, and of the first failure.
    fn enqueue_launches(
        &self,
        queue: u64,
        launches: &[RemoteLaunch],
        done: Done,
    ) -> RemoteResult<()>;
    /// Registers a device event; returns the node's event.
    fn register_event(
        &self,
        handle: u64,
        kind: EventKind,
        vector: u32,
        deadline: Instant,
    ) -> RemoteResult<u64>;
    /// Waits for the node's `event` without holding the caller, then releases it on the node
    /// and calls `done` (with the failure message, if it failed or the session ended) on a
    /// thread where blocking calls are allowed.
    fn watch_event(&self, event: u64, done: Done);
    /// Releases a buffer, allocation, program, kernel, queue or event of the session.
    fn release(&self, object: u64, deadline: Instant) -> RemoteResult<()>;
}
