//! Device work a client streams instead of calling for: launches and copies, checked against
//! the session as the unary calls check them ([`Work`] serves both), enqueued in the order
//! they came, their completions batched back on the same stream. A queue of tiny launches
//! through a node is then limited by the node's device, not by a round trip per launch.
//!
//! Bounded per stream: at most [`MAX_IN_FLIGHT`] commands are enqueued and unfinished at
//! once; past them the node reads no further, so a client that floods the stream waits for
//! its own work, not anyone else's.

use std::sync::Arc;

use accelhost::{Arg, ErrorCode, Event, EventStatus, Kernel, Memory, Queue};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tonic::{Status, Streaming};

use crate::proto;
use crate::session::{Object, Session};
use crate::status::{from_host, status};

/// Commands of one stream enqueued and not yet finished, at most.
pub const MAX_IN_FLIGHT: usize = 1024;

/// Completions sent in one reply, at most.
const MAX_BATCH: usize = 4096;

/// A launch or a copy, its objects found in the session.
pub enum Work {
    /// `kernel` on `queue` with its arguments.
    Launch(Queue, Kernel, Vec<OwnedArg>),
    /// `size` bytes from `src` at its offset to `dst` at its offset, on `queue`.
    Memcpy {
        /// The queue.
        queue: Queue,
        /// Where to, and at which offset.
        dst: (Memory, u64),
        /// Where from, and at which offset.
        src: (Memory, u64),
        /// How many bytes.
        size: u64,
    },
}

/// A launch argument that owns what it names.
pub enum OwnedArg {
    /// A place in an allocation.
    Memory(Memory, u64),
    /// A 32-bit scalar.
    U32(u32),
    /// A signed 32-bit scalar.
    I32(i32),
    /// A 64-bit scalar.
    U64(u64),
    /// Raw bytes.
    Bytes(bytes::Bytes),
}

impl OwnedArg {
    fn as_arg(&self) -> Arg<'_> {
        match self {
            OwnedArg::Memory(memory, 0) => Arg::Memory(memory),
            OwnedArg::Memory(memory, offset) => Arg::MemoryAt(memory, *offset),
            OwnedArg::U32(v) => Arg::U32(*v),
            OwnedArg::I32(v) => Arg::I32(*v),
            OwnedArg::U64(v) => Arg::U64(*v),
            OwnedArg::Bytes(b) => Arg::Bytes(b),
        }
    }
}

impl Work {
    /// The launch `req` asks for, with the queue's handle number.
    pub fn launch(
        session: &Session,
        req: proto::LaunchRequest,
        call: &str,
    ) -> Result<(u64, Work), Status> {
        let (owner, queue) = queue(session, req.queue, call)?;
        let kernel = match session.objects().get(req.kernel) {
            Some(Object::Kernel(_, kernel)) => kernel.clone(),
            _ => {
                return Err(crate::service::no_object(
                    session, "kernel", req.kernel, call,
                ));
            }
        };
        let mut args = Vec::with_capacity(req.args.len());
        for (i, arg) in req.args.into_iter().enumerate() {
            args.push(match arg.value {
                Some(proto::arg::Value::Memory(at)) => {
                    OwnedArg::Memory(memory(session, at.memory, call)?, at.offset)
                }
                Some(proto::arg::Value::U32(v)) => OwnedArg::U32(v),
                Some(proto::arg::Value::I32(v)) => OwnedArg::I32(v),
                Some(proto::arg::Value::U64(v)) => OwnedArg::U64(v),
                Some(proto::arg::Value::Bytes(b)) => OwnedArg::Bytes(b),
                None => {
                    return Err(status(
                        ErrorCode::InvalidArgument,
                        format!("{call}: args[{i}] has no value"),
                    ));
                }
            });
        }
        Ok((owner, Work::Launch(queue, kernel, args)))
    }

    /// The copy `req` asks for, with the queue's handle number.
    pub fn memcpy(
        session: &Session,
        req: &proto::MemcpyRequest,
        call: &str,
    ) -> Result<(u64, Work), Status> {
        let (owner, queue) = queue(session, req.queue, call)?;
        let dst = memory(session, req.dst, call)?;
        let src = memory(session, req.src, call)?;
        Ok((
            owner,
            Work::Memcpy {
                queue,
                dst: (dst, req.dst_offset),
                src: (src, req.src_offset),
                size: req.size,
            },
        ))
    }

    /// Enqueues it (a call into the plugin: run where blocking is allowed).
    pub fn enqueue(&self) -> accelhost::Result<Event> {
        match self {
            Work::Launch(queue, kernel, args) => {
                let args: Vec<Arg<'_>> = args.iter().map(OwnedArg::as_arg).collect();
                queue.enqueue_launch(kernel, &args)
            }
            Work::Memcpy {
                queue,
                dst,
                src,
                size,
            } => queue.enqueue_memcpy(&dst.0, dst.1, &src.0, src.1, *size),
        }
    }
}

fn queue(session: &Session, number: u64, call: &str) -> Result<(u64, Queue), Status> {
    match session.objects().get(number) {
        Some(Object::Queue(owner, queue)) => Ok((*owner, queue.clone())),
        _ => Err(crate::service::no_object(session, "queue", number, call)),
    }
}

fn memory(session: &Session, number: u64, call: &str) -> Result<Memory, Status> {
    match session.objects().get(number) {
        Some(Object::Memory(_, memory)) => Ok(memory.clone()),
        _ => Err(crate::service::no_object(session, "memory", number, call)),
    }
}

fn failed(tag: u64, status: &Status) -> proto::Completion {
    let code = crate::status::accelhost_code(status).unwrap_or(ErrorCode::Internal);
    proto::Completion {
        tag,
        code: code as i32,
        message: status.message().to_string(),
    }
}

fn finished(tag: u64, event: &Event) -> proto::Completion {
    match event.status() {
        EventStatus::Failed(why) => proto::Completion {
            tag,
            code: ErrorCode::DeviceError as i32,
            message: why,
        },
        _ => proto::Completion {
            tag,
            code: 0,
            message: String::new(),
        },
    }
}

/// Serves one `Submit` stream of `session` until the client ends it: `first` is its first
/// message. The stream holds `permit` (one of the session's answer streams) until then.
pub async fn serve(
    session: Arc<Session>,
    first: proto::SubmitRequest,
    mut inbound: Streaming<proto::SubmitRequest>,
    replies: mpsc::Sender<Result<proto::SubmitReply, Status>>,
    permit: OwnedSemaphorePermit,
) {
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    // Unbounded, but never holding more than MAX_IN_FLIGHT completions: each is sent before
    // its command's permit goes.
    let (done, mut completions) =
        mpsc::unbounded_channel::<(proto::Completion, OwnedSemaphorePermit)>();
    let sender = tokio::spawn(async move {
        while let Some(first) = completions.recv().await {
            let mut batch = vec![first];
            while batch.len() < MAX_BATCH {
                match completions.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let (completions_only, permits): (Vec<_>, Vec<_>) = batch.into_iter().unzip();
            let reply = proto::SubmitReply {
                completions: completions_only,
            };
            if replies.send(Ok(reply)).await.is_err() {
                return;
            }
            drop(permits);
        }
    });
    let mut next = Some(first);
    loop {
        let request = match next.take() {
            Some(request) => request,
            None => match inbound.message().await {
                Ok(Some(request)) => request,
                _ => break,
            },
        };
        let mut batch = Vec::with_capacity(request.commands.len());
        for command in request.commands {
            let Ok(permit) = in_flight.clone().acquire_owned().await else {
                break;
            };
            let work = if request.session != session.id {
                Err(status(
                    ErrorCode::InvalidArgument,
                    "Submit: every message of a stream names the stream's session",
                ))
            } else {
                match command.work {
                    Some(proto::command::Work::Launch(req)) => {
                        Work::launch(&session, req, "Submit")
                    }
                    Some(proto::command::Work::Memcpy(req)) => {
                        Work::memcpy(&session, &req, "Submit")
                    }
                    None => Err(status(
                        ErrorCode::InvalidArgument,
                        "Submit: a command with neither launch nor memcpy",
                    )),
                }
            };
            batch.push((command.tag, work.map(|(_, work)| work), permit));
        }
        // Enqueueing calls into the plugin: done in place (the runtime moves this worker's
        // other tasks away meanwhile), which spares a thread hop per message.
        tokio::task::block_in_place(|| {
            for (tag, work, permit) in batch {
                match work.and_then(|work| work.enqueue().map_err(from_host)) {
                    Ok(event) => {
                        let (done, watched) = (done.clone(), event.clone());
                        event.on_finish(move || {
                            let _ = done.send((finished(tag, &watched), permit));
                        });
                    }
                    Err(status) => {
                        let _ = done.send((failed(tag, &status), permit));
                    }
                }
            }
        });
    }
    drop(done);
    let _ = sender.await;
    drop(permit);
}

/// How a submitted command ended: `Ok` when it completed, else its error code and why.
pub type Outcome = Result<(), (ErrorCode, String)>;

/// What hears a submitted command's [`Outcome`], on a thread where blocking calls are
/// allowed.
pub type Done = Box<dyn FnOnce(Outcome) + Send>;

/// Commands of one batch, at most: what a message of launches holds well within the
/// node's message limit.
const MAX_COMMANDS_PER_MESSAGE: usize = 1024;

/// The client half of a `Submit` stream: commands queued here go out batched on one stream,
/// opened with the first; each one's [`Done`] runs when its completion comes back, or with
/// the stream's failure if the stream ends first. Dropping it ends the stream once what was
/// submitted completed.
pub struct Submitter {
    commands: mpsc::UnboundedSender<(proto::command::Work, Done)>,
    unfinished: Arc<std::sync::atomic::AtomicUsize>,
    settled: Arc<tokio::sync::Notify>,
}

impl Submitter {
    /// A submitter for `session` over `rpc`; its stream task runs on the current runtime.
    pub fn open(
        rpc: crate::proto::node_client::NodeClient<tonic::transport::Channel>,
        session: String,
    ) -> Submitter {
        let (commands, queued) = mpsc::unbounded_channel();
        let unfinished = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let settled = Arc::new(tokio::sync::Notify::new());
        tokio::spawn(drive(
            rpc,
            session,
            queued,
            unfinished.clone(),
            settled.clone(),
        ));
        Submitter {
            commands,
            unfinished,
            settled,
        }
    }

    /// Queues `work`; `done` hears how it ended. Gives `done` back if the stream has ended
    /// (open another submitter).
    pub fn submit(&self, work: proto::command::Work, done: Done) -> Result<(), Done> {
        use std::sync::atomic::Ordering;
        self.unfinished.fetch_add(1, Ordering::SeqCst);
        self.commands.send((work, done)).map_err(|err| {
            self.unfinished.fetch_sub(1, Ordering::SeqCst);
            err.0.1
        })
    }

    /// Whether the stream has ended.
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed()
    }

    /// Waits until every command submitted so far has finished.
    pub async fn settle(&self) {
        use std::sync::atomic::Ordering;
        loop {
            let notified = self.settled.notified();
            if self.unfinished.load(Ordering::SeqCst) == 0 || self.is_closed() {
                return;
            }
            notified.await;
        }
    }
}

/// Runs `dones` with their outcomes, in order, in place: they may block, and the runtime
/// moves this worker's other tasks away meanwhile.
fn hear(dones: Vec<(Done, Outcome)>) {
    if !dones.is_empty() {
        tokio::task::block_in_place(move || {
            for (done, outcome) in dones {
                done(outcome);
            }
        });
    }
}

async fn drive(
    mut rpc: crate::proto::node_client::NodeClient<tonic::transport::Channel>,
    session: String,
    mut queued: mpsc::UnboundedReceiver<(proto::command::Work, Done)>,
    unfinished: Arc<std::sync::atomic::AtomicUsize>,
    settled: Arc<tokio::sync::Notify>,
) {
    use std::collections::HashMap;
    use std::sync::atomic::Ordering;
    let mut waiting: HashMap<u64, Done> = HashMap::new();
    let mut next_tag = 0u64;
    let finished = |n: usize| {
        if unfinished.fetch_sub(n, Ordering::SeqCst) == n {
            settled.notify_waiters();
        }
    };
    let mut batch = |first: (proto::command::Work, Done),
                     queued: &mut mpsc::UnboundedReceiver<(proto::command::Work, Done)>,
                     waiting: &mut HashMap<u64, Done>| {
        let mut commands = Vec::new();
        let mut next = Some(first);
        while let Some((work, done)) = next.take() {
            next_tag += 1;
            waiting.insert(next_tag, done);
            commands.push(proto::Command {
                tag: next_tag,
                work: Some(work),
            });
            if commands.len() < MAX_COMMANDS_PER_MESSAGE {
                next = queued.try_recv().ok();
            }
        }
        proto::SubmitRequest {
            session: session.clone(),
            commands,
        }
    };
    let Some(first) = queued.recv().await else {
        return;
    };
    let (outbound, stream) = mpsc::channel::<proto::SubmitRequest>(16);
    let _ = outbound.send(batch(first, &mut queued, &mut waiting)).await;
    let ended = match rpc
        .submit(tokio_stream::wrappers::ReceiverStream::new(stream))
        .await
    {
        Err(status) => status.message().to_string(),
        Ok(replies) => {
            let mut replies = replies.into_inner();
            let mut open = true;
            loop {
                tokio::select! {
                    command = queued.recv(), if open => match command {
                        Some(first) => {
                            let request = batch(first, &mut queued, &mut waiting);
                            if outbound.send(request).await.is_err() {
                                break "the node closed the stream".to_string();
                            }
                        }
                        // The submitter went: finish what is in flight, then end.
                        None => open = false,
                    },
                    reply = replies.message() => match reply {
                        Ok(Some(reply)) => {
                            let dones: Vec<_> = reply
                                .completions
                                .into_iter()
                                .filter_map(|c| {
                                    let outcome = match ErrorCode::from_number(c.code as u32) {
                                        _ if c.code == 0 => Ok(()),
                                        Some(code) => Err((code, c.message)),
                                        None => Err((ErrorCode::DeviceError, c.message)),
                                    };
                                    waiting.remove(&c.tag).map(|done| (done, outcome))
                                })
                                .collect();
                            let n = dones.len();
                            hear(dones);
                            finished(n);
                            if !open && waiting.is_empty() {
                                return;
                            }
                        }
                        Ok(None) => break "the node ended the stream".to_string(),
                        Err(status) => break status.message().to_string(),
                    },
                }
            }
        }
    };
    queued.close();
    let mut dones: Vec<_> = waiting.into_values().collect();
    while let Ok((_, done)) = queued.try_recv() {
        dones.push(done);
    }
    let n = dones.len();
    let why = format!("the command stream to the node ended: {ended}");
    hear(
        dones
            .into_iter()
            .map(|done| (done, Err((ErrorCode::DeviceError, why.clone()))))
            .collect(),
    );
    finished(n);
}
