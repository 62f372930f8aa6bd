//! A client of `accelhost serve`: connects over the Unix socket or mutual TLS, attaches a
//! session that lives as long as the client, and makes typed calls, each with a deadline.

use std::path::PathBuf;
use std::time::Duration;

use accelhost::ErrorCode;
use bytes::Bytes;
use hyper_util::rt::TokioIo;
use tokio::task::JoinHandle;
use tonic::transport::{
    Certificate, Channel, ClientTlsConfig, Endpoint as TonicEndpoint, Identity,
};
use tonic::{Code, Status};

use crate::proto::node_client::NodeClient;
use crate::proto::{self, session_event};
use crate::status::accelhost_code;

/// Where a node listens, and how this client proves who it is there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Endpoint {
    /// The node's Unix socket (the peer's uid and gid identify the client).
    Unix(PathBuf),
    /// The node's TCP address, with mutual TLS.
    Tls {
        /// `host:port`.
        address: String,
        /// The name the node's certificate must carry.
        server_name: String,
        /// The CA (PEM) the node's certificate must chain to.
        ca: PathBuf,
        /// This client's certificate chain (PEM).
        certificate: PathBuf,
        /// This client's private key (PEM).
        key: PathBuf,
    },
}

impl std::fmt::Display for Endpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Endpoint::Unix(path) => write!(f, "unix://{}", path.display()),
            Endpoint::Tls { address, .. } => write!(f, "https://{address}"),
        }
    }
}

/// How long a client waits.
#[derive(Clone, Copy, Debug)]
pub struct ClientOptions {
    /// For the connection to be made.
    pub connect_timeout: Duration,
    /// For any one call (a poll's own timeout is added to it), and for each chunk of a
    /// streamed answer.
    pub call_timeout: Duration,
    /// How often an idle connection is pinged, and how long a ping may go unanswered before
    /// the connection counts as dead: what bounds a call to a node that vanished without
    /// closing its connection (a cut cable, a partition).
    pub keepalive: Duration,
    /// On a Unix socket, ask for buffers' and memory's memory itself
    /// ([`crate::shared_memory`]); the caller then redeems each reply's ticket.
    pub share_memory: bool,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(5),
            call_timeout: Duration::from_secs(30),
            keepalive: Duration::from_secs(5),
            share_memory: false,
        }
    }
}

/// A call to a node that failed: which node, which call, and the node's answer.
#[derive(Debug, thiserror::Error)]
#[error("node {endpoint}: {call}: {message}")]
pub struct RemoteError {
    /// The node.
    pub endpoint: String,
    /// The call.
    pub call: &'static str,
    /// The gRPC status code.
    pub grpc: Code,
    /// The accelhost code the node sent, if any (none for transport failures).
    pub code: Option<ErrorCode>,
    /// What the node (or the transport) said.
    pub message: String,
}

/// The result of a call to a node.
pub type RemoteResult<T> = Result<T, RemoteError>;

/// A call of the node with one request and one answer: one type per call in [`calls`],
/// made by the build from `node.proto`, for [`Client::call`].
pub trait UnaryCall {
    /// The call's name in `node.proto`.
    const NAME: &'static str;
    /// What the call sends.
    type Request: prost::Message + Send + 'static;
    /// What the node answers.
    type Reply: Send + 'static;
    /// Sends `request` with the generated client.
    fn send(
        rpc: &mut NodeClient<Channel>,
        request: tonic::Request<Self::Request>,
    ) -> Sent<'_, Self::Reply>;
}

/// The answer to come of a call sent with the generated client.
pub type Sent<'a, T> = std::pin::Pin<
    Box<dyn std::future::Future<Output = Result<tonic::Response<T>, Status>> + Send + 'a>,
>;

include!(concat!(env!("OUT_DIR"), "/node_client_calls.rs"));

/// A session on a node. Dropping it ends the session, and the node releases what it held.
pub struct Client {
    rpc: NodeClient<Channel>,
    endpoint: String,
    /// The node's socket, when the client is local.
    socket: Option<PathBuf>,
    attached: proto::Attached,
    options: ClientOptions,
    session_stream: JoinHandle<()>,
}

impl Drop for Client {
    fn drop(&mut self) {
        self.session_stream.abort();
    }
}

/// Object numbers and facts of a prepared buffer.
pub type Buffer = proto::Buffer;
/// A device as the node describes it.
pub type Device = proto::Device;

/// The most a client decodes of the session stream's messages before the node said its limit.
const ATTACH_ANSWER_BYTES: usize = 1 << 20;

/// The most a client decodes of one answer: the largest message limit a node can be set to.
const MAX_ANSWER_BYTES: usize = (crate::config::MAX_MESSAGE_KIB * 1024) as usize;

/// The most the client decodes of one answer from a node that said its messages are at most
/// `advertised` bytes: that, but never past what any node may be set to send.
fn answer_limit(advertised: u64) -> usize {
    usize::try_from(advertised).map_or(MAX_ANSWER_BYTES, |n| n.min(MAX_ANSWER_BYTES))
}

impl Client {
    /// Connects to `endpoint` and attaches a session.
    pub async fn connect(endpoint: &Endpoint, options: ClientOptions) -> RemoteResult<Client> {
        let name = endpoint.to_string();
        let fail = |call: &'static str, message: String| RemoteError {
            endpoint: name.clone(),
            call,
            grpc: Code::Unavailable,
            code: None,
            message,
        };
        let channel = channel(endpoint, options).await?;
        // Until the node said how large its messages are, an answer is the session's events,
        // small; a node may never make a client decode more than any node may be set to send.
        let mut rpc = NodeClient::new(channel)
            .max_decoding_message_size(ATTACH_ANSWER_BYTES)
            .max_encoding_message_size(usize::MAX);
        let client_label = std::env::args().next().unwrap_or_default();
        let mut stream = rpc
            .attach(proto::AttachRequest { client_label })
            .await
            .map_err(|status| remote(&name, "Attach", status))?
            .into_inner();
        let first = tokio::time::timeout(options.call_timeout, stream.message())
            .await
            .map_err(|_| fail("Attach", "the node did not answer in time".into()))?
            .map_err(|status| remote(&name, "Attach", status))?;
        let attached = match first.and_then(|event| event.event) {
            Some(session_event::Event::Attached(attached)) => attached,
            _ => {
                return Err(fail(
                    "Attach",
                    "the node's first answer was not `attached`".into(),
                ));
            }
        };
        // Keeps the session's stream open; the node ends the stream when it shuts down.
        let session_stream =
            tokio::spawn(async move { while let Ok(Some(_)) = stream.message().await {} });
        let rpc = rpc
            .max_encoding_message_size(attached.max_message_bytes as usize)
            .max_decoding_message_size(answer_limit(attached.max_message_bytes));
        let socket = match endpoint {
            Endpoint::Unix(path) => Some(path.clone()),
            Endpoint::Tls { .. } => None,
        };
        Ok(Client {
            rpc,
            endpoint: name,
            socket,
            attached,
            options,
            session_stream,
        })
    }

    /// The client entry the node identified this client as.
    pub fn client_name(&self) -> &str {
        &self.attached.client
    }

    /// The node's name.
    pub fn node_name(&self) -> &str {
        &self.attached.node
    }

    /// The node's socket when the client reached it on one: where shared memory is redeemed
    /// ([`crate::shared_memory::fetch`]).
    pub fn socket(&self) -> Option<&std::path::Path> {
        self.socket.as_deref()
    }

    /// The session id.
    pub fn session(&self) -> &str {
        &self.attached.session
    }

    /// The generated gRPC client over this connection, for what [`call`](Self::call) does not
    /// make (it sends what it is given, without the size check `call` makes).
    pub fn rpc(&self) -> NodeClient<Channel> {
        self.rpc.clone().max_encoding_message_size(usize::MAX)
    }

    /// Whether the session stream is still open (false once the node went away).
    pub fn is_attached(&self) -> bool {
        !self.session_stream.is_finished()
    }

    fn err(&self, call: &'static str) -> impl FnOnce(Status) -> RemoteError + '_ {
        move |status| remote(&self.endpoint, call, status)
    }

    /// The largest data chunk that fits one message.
    fn chunk_bytes(&self) -> usize {
        (self.attached.max_message_bytes as usize)
            .saturating_sub(256)
            .max(4096)
    }

    /// Makes call `C` of the node (one of [`calls`]) with `request`: refused before it is
    /// sent when it is larger than the node takes, and bounded by the call timeout unless
    /// `request` sets its own. Every call of `node.proto` with one request and one answer is
    /// here the moment it is in the proto; the methods below shape the common ones.
    pub async fn call<C: UnaryCall>(
        &self,
        request: impl tonic::IntoRequest<C::Request>,
    ) -> RemoteResult<C::Reply> {
        let request = request.into_request();
        self.fits(C::NAME, request.get_ref())?;
        let reply = C::send(&mut self.rpc.clone(), request)
            .await
            .map_err(self.err(C::NAME))?;
        Ok(reply.into_inner())
    }

    /// The devices the client may see, matching any of `filters`.
    pub async fn enumerate(&self, filters: Vec<proto::Filter>) -> RemoteResult<Vec<Device>> {
        let reply = self
            .call::<calls::Enumerate>(proto::EnumerateRequest {
                session: self.session().into(),
                filters,
            })
            .await?;
        for omitted in &reply.omitted {
            tracing::warn!(
                node = %self.endpoint,
                plugin = %accelhost::text::inert(&omitted.plugin),
                devices = omitted.devices,
                "the node left devices out of its Enumerate answer to stay within its message \
                 limit (its limits.max_message_kib); Describe still reaches them"
            );
        }
        Ok(reply.devices)
    }

    /// Fresh properties of `device`.
    pub async fn describe(&self, device: &str) -> RemoteResult<Device> {
        self.call::<calls::Describe>(proto::DeviceRequest {
            session: self.session().into(),
            device: device.into(),
        })
        .await
    }

    /// Opens `device` (an id from [`enumerate`](Self::enumerate)); returns the handle number.
    pub async fn open(&self, device: &str, shared: bool) -> RemoteResult<u64> {
        let reply = self
            .call::<calls::Open>(proto::OpenRequest {
                session: self.session().into(),
                device: device.into(),
                shared,
            })
            .await?;
        Ok(reply.object)
    }

    fn object(&self, object: u64) -> proto::ObjectRequest {
        proto::ObjectRequest {
            session: self.session().into(),
            object,
        }
    }

    /// Closes a handle, releasing the regions and buffers that came from it.
    pub async fn close(&self, handle: u64) -> RemoteResult<()> {
        self.call::<calls::Close>(self.object(handle)).await?;
        Ok(())
    }

    /// Resets the accelerator.
    pub async fn reset(&self, handle: u64) -> RemoteResult<()> {
        self.call::<calls::Reset>(self.object(handle)).await?;
        Ok(())
    }

    /// Loads `image` into `slot`, streamed in chunks; `progress` hears the bytes sent so far.
    pub async fn reconfigure(
        &self,
        handle: u64,
        slot: u32,
        image: Vec<u8>,
        mut progress: impl FnMut(u64, u64) + Send + 'static,
    ) -> RemoteResult<()> {
        let total = image.len() as u64;
        let chunk = self.chunk_bytes();
        let session = self.session().to_owned();
        let chunks = pieces(&image, chunk);
        let count = chunks.len().max(1);
        let mut sent = 0u64;
        let stream = (0..count).map(move |i| {
            let data = chunks.get(i).cloned().unwrap_or_default();
            sent += data.len() as u64;
            progress(sent, total);
            proto::ReconfigureChunk {
                header: (i == 0).then(|| proto::ReconfigureHeader {
                    session: session.clone(),
                    handle,
                    slot,
                    image_bytes: total,
                }),
                data,
            }
        });
        self.rpc
            .clone()
            .reconfigure(tokio_stream::iter(stream))
            .await
            .map_err(self.err("Reconfigure"))?;
        Ok(())
    }

    /// Maps MMIO region `index` of a handle; returns the region number and size.
    pub async fn map_mmio(&self, handle: u64, index: u32) -> RemoteResult<(u64, u64)> {
        let reply = self
            .call::<calls::MapMmio>(proto::MapMmioRequest {
                session: self.session().into(),
                handle,
                index,
            })
            .await?;
        Ok((reply.region, reply.size))
    }

    async fn mmio_read(&self, region: u64, offset: u64, width: proto::Width) -> RemoteResult<u64> {
        let reply = self
            .call::<calls::MmioRead>(proto::MmioReadRequest {
                session: self.session().into(),
                region,
                offset,
                width: width as i32,
            })
            .await?;
        Ok(reply.value)
    }

    /// Reads the 32-bit register at `offset`.
    pub async fn read32(&self, region: u64, offset: u64) -> RemoteResult<u32> {
        Ok(self
            .mmio_read(region, offset, proto::Width::Width32)
            .await? as u32)
    }

    /// Reads the 64-bit register at `offset`.
    pub async fn read64(&self, region: u64, offset: u64) -> RemoteResult<u64> {
        self.mmio_read(region, offset, proto::Width::Width64).await
    }

    async fn mmio_write(
        &self,
        region: u64,
        offset: u64,
        width: proto::Width,
        value: u64,
    ) -> RemoteResult<()> {
        self.call::<calls::MmioWrite>(proto::MmioWriteRequest {
            session: self.session().into(),
            region,
            offset,
            width: width as i32,
            value,
        })
        .await?;
        Ok(())
    }

    /// Writes the 32-bit register at `offset`.
    pub async fn write32(&self, region: u64, offset: u64, value: u32) -> RemoteResult<()> {
        self.mmio_write(region, offset, proto::Width::Width32, value.into())
            .await
    }

    /// Writes the 64-bit register at `offset`.
    pub async fn write64(&self, region: u64, offset: u64, value: u64) -> RemoteResult<()> {
        self.mmio_write(region, offset, proto::Width::Width64, value)
            .await
    }

    /// Refuses a request the node would refuse for its size, before sending it.
    fn fits(&self, call: &'static str, message: &impl prost::Message) -> RemoteResult<()> {
        let bytes = message.encoded_len() as u64;
        if bytes > self.attached.max_message_bytes {
            return Err(RemoteError {
                endpoint: self.endpoint.clone(),
                call,
                grpc: Code::OutOfRange,
                code: Some(ErrorCode::InvalidArgument),
                message: format!(
                    "the request is {bytes} bytes; the node takes at most {} per message (its limits.max_message_kib): split it",
                    self.attached.max_message_bytes
                ),
            });
        }
        Ok(())
    }

    /// Writes 64-bit registers in order, in one call.
    pub async fn write64_batch(&self, region: u64, writes: &[(u64, u64)]) -> RemoteResult<()> {
        let request = proto::MmioWriteBatchRequest {
            session: self.session().into(),
            region,
            writes: writes
                .iter()
                .map(|&(offset, value)| proto::MmioWrite {
                    offset,
                    width: proto::Width::Width64 as i32,
                    value,
                })
                .collect(),
        };
        self.call::<calls::MmioWriteBatch>(request).await?;
        Ok(())
    }

    fn poll_request(
        &self,
        object: u64,
        offset: u64,
        mask: u64,
        expected: u64,
        timeout: Duration,
    ) -> tonic::Request<proto::PollRequest> {
        let mut request = tonic::Request::new(proto::PollRequest {
            session: self.session().into(),
            object,
            offset,
            mask,
            expected,
            timeout_ms: timeout.as_millis().min(u32::MAX as u128) as u32,
        });
        request.set_timeout(timeout + self.options.call_timeout);
        request
    }

    /// Waits on the node until the 64-bit register at `offset` has `value & mask == expected`.
    pub async fn poll64(
        &self,
        region: u64,
        offset: u64,
        mask: u64,
        expected: u64,
        timeout: Duration,
    ) -> RemoteResult<u64> {
        let request = self.poll_request(region, offset, mask, expected, timeout);
        let reply = self.call::<calls::MmioPoll>(request).await?;
        Ok(reply.value)
    }

    /// Prepares a DMA buffer on the node.
    pub async fn prepare_buffer(&self, handle: u64, size: u64) -> RemoteResult<Buffer> {
        self.prepare(handle, size, false).await
    }

    /// Prepares a DMA buffer on the node, which the device only reads when `read_only`. With
    /// [`ClientOptions::share_memory`] on a Unix socket, the reply may offer the buffer's
    /// memory (`shared`), to redeem with [`crate::shared_memory::fetch`].
    pub async fn prepare(&self, handle: u64, size: u64, read_only: bool) -> RemoteResult<Buffer> {
        self.call::<calls::PrepareBuffer>(proto::PrepareBufferRequest {
            session: self.session().into(),
            handle,
            size,
            read_only,
            share_memory: self.options.share_memory && self.socket.is_some(),
        })
        .await
    }

    /// Writes `data` at `offset` of a buffer or host-visible memory, streamed in chunks.
    pub async fn write(&self, object: u64, offset: u64, data: &[u8]) -> RemoteResult<()> {
        let session = self.session().to_owned();
        let chunk = self.chunk_bytes();
        let chunks: Vec<proto::BufferWriteChunk> = pieces(data, chunk)
            .into_iter()
            .enumerate()
            .map(|(i, piece)| proto::BufferWriteChunk {
                session: session.clone(),
                object,
                offset: offset + (i * chunk) as u64,
                data: piece,
            })
            .collect();
        self.rpc
            .clone()
            .buffer_write(tokio_stream::iter(chunks))
            .await
            .map_err(self.err("BufferWrite"))?;
        Ok(())
    }

    /// Reads `len` bytes from `offset` of a buffer or host-visible memory.
    pub async fn read(&self, object: u64, offset: u64, len: u64) -> RemoteResult<Vec<u8>> {
        let mut stream = self
            .rpc
            .clone()
            .buffer_read(proto::BufferReadRequest {
                session: self.session().into(),
                object,
                offset,
                length: len,
                chunk_bytes: 0,
            })
            .await
            .map_err(self.err("BufferRead"))?
            .into_inner();
        let mut out = Vec::with_capacity(len.min(1 << 30) as usize);
        loop {
            let next = tokio::time::timeout(self.options.call_timeout, stream.message())
                .await
                .map_err(|_| RemoteError {
                    endpoint: self.endpoint.clone(),
                    call: "BufferRead",
                    grpc: Code::DeadlineExceeded,
                    code: Some(ErrorCode::Timeout),
                    message: format!(
                        "no data for {} ms after {} of {len} bytes",
                        self.options.call_timeout.as_millis(),
                        out.len()
                    ),
                })?;
            let Some(data) = next.map_err(self.err("BufferRead"))? else {
                break;
            };
            out.extend_from_slice(&data.data);
        }
        if out.len() as u64 != len {
            return Err(RemoteError {
                endpoint: self.endpoint.clone(),
                call: "BufferRead",
                grpc: Code::DataLoss,
                code: None,
                message: format!("the node sent {} of {len} bytes", out.len()),
            });
        }
        Ok(out)
    }

    /// Writes `pushes` into the node's buffers and memory and answers the pages of `objects`
    /// that changed on the node since the last sync (see `BufferSync` in the `.proto`); as
    /// many calls as the message limit needs.
    pub async fn sync(
        &self,
        objects: &[u64],
        pushes: Vec<proto::Page>,
    ) -> RemoteResult<Vec<proto::Page>> {
        let room = self.chunk_bytes().saturating_sub(objects.len() * 10);
        let mut batches: Vec<Vec<proto::Page>> = vec![Vec::new()];
        let mut used = 0;
        for page in pushes {
            let size = page.data.len() + 32;
            if used + size > room && !batches.last().is_some_and(Vec::is_empty) {
                batches.push(Vec::new());
                used = 0;
            }
            used += size;
            batches.last_mut().expect("one batch at least").push(page);
        }
        let mut pulled = Vec::new();
        let mut batches = batches.into_iter();
        loop {
            let pushes = batches.next().unwrap_or_default();
            let reply = self
                .call::<calls::BufferSync>(proto::BufferSyncRequest {
                    session: self.session().into(),
                    objects: objects.to_vec(),
                    pushes,
                })
                .await?;
            pulled.extend(reply.pulls);
            if !reply.more && batches.len() == 0 {
                return Ok(pulled);
            }
        }
    }

    /// Fills `len` bytes of a buffer from `offset` with `byte`.
    pub async fn fill_buffer(
        &self,
        buffer: u64,
        offset: u64,
        len: u64,
        byte: u8,
    ) -> RemoteResult<()> {
        self.call::<calls::BufferFill>(proto::BufferFillRequest {
            session: self.session().into(),
            object: buffer,
            offset,
            length: len,
            byte: byte.into(),
        })
        .await?;
        Ok(())
    }

    /// Waits on the node until the word at `offset` of a buffer has `value & mask == expected`.
    pub async fn poll_buffer(
        &self,
        buffer: u64,
        offset: u64,
        mask: u64,
        expected: u64,
        timeout: Duration,
    ) -> RemoteResult<u64> {
        let request = self.poll_request(buffer, offset, mask, expected, timeout);
        let reply = self.call::<calls::BufferPoll>(request).await?;
        Ok(reply.value)
    }

    /// Allocates offload memory of `kind` (in `bank`, or where the plugin chooses); the reply
    /// may offer host-visible memory, as [`prepare`](Self::prepare)'s does.
    pub async fn alloc(
        &self,
        handle: u64,
        kind: proto::MemoryKind,
        size: u64,
        bank: Option<u32>,
    ) -> RemoteResult<proto::MemoryReply> {
        self.call::<calls::Alloc>(proto::AllocRequest {
            session: self.session().into(),
            handle,
            kind: kind as i32,
            size,
            bank,
            share_memory: self.options.share_memory && self.socket.is_some(),
        })
        .await
    }

    /// Loads a program image (an xclbin for XRT cards), streamed in chunks.
    pub async fn create_program(&self, handle: u64, image: &[u8]) -> RemoteResult<u64> {
        let total = image.len() as u64;
        let session = self.session().to_owned();
        let chunks: Vec<proto::ProgramChunk> = pieces(image, self.chunk_bytes())
            .into_iter()
            .enumerate()
            .map(|(i, data)| proto::ProgramChunk {
                header: (i == 0).then(|| proto::ReconfigureHeader {
                    session: session.clone(),
                    handle,
                    slot: 0,
                    image_bytes: total,
                }),
                data,
            })
            .collect();
        let reply = self
            .rpc
            .clone()
            .create_program(tokio_stream::iter(chunks))
            .await
            .map_err(self.err("CreateProgram"))?;
        Ok(reply.into_inner().object)
    }

    /// The program built into the device.
    pub async fn builtin_program(&self, handle: u64) -> RemoteResult<u64> {
        let reply = self
            .call::<calls::BuiltinProgram>(self.object(handle))
            .await?;
        Ok(reply.object)
    }

    /// Kernel `name` of a program.
    pub async fn kernel(&self, program: u64, name: &str) -> RemoteResult<u64> {
        let reply = self
            .call::<calls::Kernel>(proto::KernelRequest {
                session: self.session().into(),
                program,
                name: name.into(),
            })
            .await?;
        Ok(reply.object)
    }

    /// A doorbell ring for launches and copies ([`crate::ring`]): its object number, and the
    /// ticket of its memory (none unless the node offers memory to this client).
    pub async fn open_ring(&self) -> RemoteResult<(u64, Option<proto::SharedMemory>)> {
        let reply = self
            .call::<calls::OpenRing>(proto::OpenRingRequest {
                session: self.session().into(),
            })
            .await?;
        Ok((reply.ring, reply.memory))
    }

    /// An in-order queue on a handle.
    pub async fn create_queue(&self, handle: u64) -> RemoteResult<u64> {
        let reply = self.call::<calls::CreateQueue>(self.object(handle)).await?;
        Ok(reply.object)
    }

    /// Enqueues a copy of `size` bytes; returns its event.
    pub async fn enqueue_memcpy(
        &self,
        queue: u64,
        (dst, dst_offset): (u64, u64),
        (src, src_offset): (u64, u64),
        size: u64,
    ) -> RemoteResult<u64> {
        let reply = self
            .call::<calls::EnqueueMemcpy>(proto::MemcpyRequest {
                session: self.session().into(),
                queue,
                dst,
                dst_offset,
                src,
                src_offset,
                size,
            })
            .await?;
        Ok(reply.object)
    }

    /// Enqueues a launch of `kernel` with `args`; returns its event.
    pub async fn enqueue_launch(
        &self,
        queue: u64,
        kernel: u64,
        args: Vec<proto::Arg>,
    ) -> RemoteResult<u64> {
        let request = proto::LaunchRequest {
            session: self.session().into(),
            queue,
            kernel,
            args,
        };
        let reply = self.call::<calls::EnqueueLaunch>(request).await?;
        Ok(reply.object)
    }

    /// Waits for every command of a queue.
    pub async fn queue_finish(&self, queue: u64) -> RemoteResult<()> {
        self.call::<calls::QueueFinish>(self.object(queue)).await?;
        Ok(())
    }

    /// An event that completes when the device raises `kind` (interrupt `vector`).
    pub async fn register_event(
        &self,
        handle: u64,
        kind: proto::EventKind,
        vector: u32,
    ) -> RemoteResult<u64> {
        let reply = self
            .call::<calls::RegisterEvent>(proto::RegisterEventRequest {
                session: self.session().into(),
                handle,
                kind: kind as i32,
                vector,
            })
            .await?;
        Ok(reply.object)
    }

    /// Where an event stands, without waiting.
    pub async fn event_status(&self, event: u64) -> RemoteResult<proto::EventState> {
        self.call::<calls::EventStatus>(self.object(event)).await
    }

    /// Waits on the node up to `timeout` for an event to finish; returns where it stands.
    pub async fn event_wait(
        &self,
        event: u64,
        timeout: Duration,
    ) -> RemoteResult<proto::EventState> {
        let mut request = tonic::Request::new(proto::EventWaitRequest {
            session: self.session().into(),
            event,
            timeout_ms: timeout.as_millis().min(u32::MAX as u128) as u32,
        });
        request.set_timeout(timeout + self.options.call_timeout);
        self.call::<calls::EventWait>(request).await
    }

    /// The event's state now, and again when it finishes, as the node streams them; waits
    /// without a deadline (the stream ends when the event finishes or the node goes).
    pub async fn watch_event(
        &self,
        event: u64,
    ) -> RemoteResult<tonic::Streaming<proto::EventState>> {
        let mut request = tonic::Request::new(self.object(event));
        request.set_timeout(Duration::from_secs(365 * 24 * 3600));
        let reply = self
            .rpc
            .clone()
            .watch_event(request)
            .await
            .map_err(self.err("WatchEvent"))?;
        Ok(reply.into_inner())
    }

    /// Releases any object but a handle.
    pub async fn release(&self, object: u64) -> RemoteResult<()> {
        self.call::<calls::Release>(self.object(object)).await?;
        Ok(())
    }
}

/// `data` in chunks of at most `chunk` bytes: copied once, then sliced.
fn pieces(data: &[u8], chunk: usize) -> Vec<Bytes> {
    let all = Bytes::copy_from_slice(data);
    (0..data.len())
        .step_by(chunk.max(1))
        .map(|at| all.slice(at..(at + chunk).min(data.len())))
        .collect()
}

/// A gRPC channel to `endpoint`, for the generated clients (the node's, the baseline's).
pub async fn channel(endpoint: &Endpoint, options: ClientOptions) -> RemoteResult<Channel> {
    let name = endpoint.to_string();
    let fail = |call: &'static str, message: String| RemoteError {
        endpoint: name.clone(),
        call,
        grpc: Code::Unavailable,
        code: None,
        message,
    };
    let channel = match endpoint {
        Endpoint::Unix(path) => {
            let path = path.clone();
            // The URI is not used: the connector dials the socket.
            TonicEndpoint::from_static("http://localhost")
                .connect_timeout(options.connect_timeout)
                .timeout(options.call_timeout)
                .http2_keep_alive_interval(options.keepalive)
                .keep_alive_timeout(options.keepalive)
                .keep_alive_while_idle(true)
                .connect_with_connector(tower::service_fn(move |_| {
                    let path = path.clone();
                    async move {
                        Ok::<_, std::io::Error>(TokioIo::new(
                            tokio::net::UnixStream::connect(path).await?,
                        ))
                    }
                }))
                .await
                .map_err(|err| fail("connect", transport_message(&err)))?
        }
        Endpoint::Tls {
            address,
            server_name,
            ca,
            certificate,
            key,
        } => {
            let read = |path: &PathBuf| {
                std::fs::read(path)
                    .map_err(|err| fail("connect", format!("{}: {err}", path.display())))
            };
            let tls = ClientTlsConfig::new()
                .domain_name(server_name.clone())
                .ca_certificate(Certificate::from_pem(read(ca)?))
                .identity(Identity::from_pem(read(certificate)?, read(key)?));
            TonicEndpoint::from_shared(format!("https://{address}"))
                .map_err(|err| fail("connect", format!("'{address}': {err}")))?
                .connect_timeout(options.connect_timeout)
                .timeout(options.call_timeout)
                .http2_keep_alive_interval(options.keepalive)
                .keep_alive_timeout(options.keepalive)
                .keep_alive_while_idle(true)
                .tcp_nodelay(true)
                .tls_config(tls)
                .map_err(|err| fail("connect", transport_message(&err)))?
                .connect()
                .await
                .map_err(|err| fail("connect", transport_message(&err)))?
        }
    };
    Ok(channel)
}

fn remote(endpoint: &str, call: &'static str, status: Status) -> RemoteError {
    RemoteError {
        endpoint: endpoint.to_owned(),
        call,
        grpc: status.code(),
        code: accelhost_code(&status),
        // The node names the call first; the error's display names it once.
        message: match status.message() {
            "" => format!("{:?}", status.code()),
            message => {
                let message = accelhost::text::inert(message).to_string();
                match message
                    .strip_prefix(call)
                    .and_then(|m| m.strip_prefix(": "))
                {
                    Some(rest) => rest.to_owned(),
                    None => message,
                }
            }
        },
    }
}

/// A transport error with its causes, which tonic keeps in its source chain.
fn transport_message(err: &(dyn std::error::Error + 'static)) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

#[cfg(test)]
mod answer_limit_tests {
    use super::*;

    #[test]
    fn a_node_cannot_make_its_client_decode_more_than_any_node_may_send() {
        assert_eq!(answer_limit(4096 * 1024), 4096 * 1024);
        assert_eq!(answer_limit(u64::MAX), 64 << 20);
        assert_eq!(answer_limit((64 << 20) + 1), 64 << 20);
        assert_eq!(answer_limit(0), 0);
    }
}
