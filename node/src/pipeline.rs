//! Device work a client streams instead of calling for: launches and copies, checked against
//! the session as the unary calls check them ([`Work`] serves both), enqueued in the order
//! they came, their completions batched back on the same stream. A queue of tiny launches
//! through a node is then limited by the node's device, not by a round trip per launch.
//!
//! Bounded per stream: at most [`MAX_IN_FLIGHT`] launches and copies are enqueued and
//! unfinished at once; past them the node reads no further, so a client that floods the
//! stream waits for its own work, not anyone else's.

use std::sync::Arc;

use accelhost::{Arg, ErrorCode, Event, EventStatus, Kernel, LAUNCHES_PER_BATCH, Memory, Queue};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tonic::{Status, Streaming};

use crate::proto;
use crate::session::{Object, Session};
use crate::status::{from_host, status};

/// Launches and copies of one stream enqueued and not yet finished, at most (a batch counts
/// its launches): what the node keeps for a client's stream stays bounded however its
/// commands are packed.
pub const MAX_IN_FLIGHT: usize = 1024;

/// Completions sent in one reply, at most.
const MAX_BATCH: usize = 4096;

/// A launch, a batch of launches or a copy, its objects found in the session.
pub enum Work {
    /// `kernel` on `queue` with its arguments.
    Launch(Queue, Kernel, Vec<OwnedArg>),
    /// Kernels with their arguments on `queue`, in order, answered as one.
    Launches(Queue, Vec<(Kernel, Vec<OwnedArg>)>),
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
    /// The work a streamed command asks for (`call` names the stream in errors), with the
    /// queue's handle number.
    pub fn of_command(
        session: &Session,
        work: Option<proto::command::Work>,
        call: &str,
    ) -> Result<(u64, Work), Status> {
        match work {
            Some(proto::command::Work::Launch(req)) => Work::launch(session, req, call),
            Some(proto::command::Work::Launches(batch)) => Work::launches(session, batch, call),
            Some(proto::command::Work::Memcpy(req)) => Work::memcpy(session, &req, call),
            None => Err(status(
                ErrorCode::InvalidArgument,
                format!("{call}: a command with no launch, batch or memcpy"),
            )),
        }
    }

    /// The launch `req` asks for, with the queue's handle number.
    pub fn launch(
        session: &Session,
        req: proto::LaunchRequest,
        call: &str,
    ) -> Result<(u64, Work), Status> {
        let (owner, queue) = queue(session, req.queue, call)?;
        let (kernel, args) = kernel_and_args(session, req.kernel, req.args, call)?;
        Ok((owner, Work::Launch(queue, kernel, args)))
    }

    /// The launches `batch` asks for, with the queue's handle number: at least one and at
    /// most [`LAUNCHES_PER_BATCH`], every object the session's.
    pub fn launches(
        session: &Session,
        batch: proto::LaunchBatch,
        call: &str,
    ) -> Result<(u64, Work), Status> {
        let count = batch.launches.len();
        if count == 0 || count > LAUNCHES_PER_BATCH {
            return Err(status(
                ErrorCode::InvalidArgument,
                format!(
                    "{call}: a batch of {count} launches; a batch holds 1 to \
                     {LAUNCHES_PER_BATCH}"
                ),
            ));
        }
        let (owner, queue) = queue(session, batch.queue, call)?;
        let mut launches = Vec::with_capacity(count);
        for (i, launch) in batch.launches.into_iter().enumerate() {
            let checked = kernel_and_args(session, launch.kernel, launch.args, call);
            launches.push(checked.map_err(|why| {
                let code = crate::status::accelhost_code(&why).unwrap_or(ErrorCode::Internal);
                status(code, format!("launches[{i}]: {}", why.message()))
            })?);
        }
        Ok((owner, Work::Launches(queue, launches)))
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
            Work::Launches(queue, launches) => {
                let args: Vec<Vec<Arg<'_>>> = launches
                    .iter()
                    .map(|(_, args)| args.iter().map(OwnedArg::as_arg).collect())
                    .collect();
                let launches: Vec<(&Kernel, &[Arg<'_>])> = launches
                    .iter()
                    .zip(&args)
                    .map(|((kernel, _), args)| (kernel, &args[..]))
                    .collect();
                queue.enqueue_launches(&launches)
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

/// The session's kernel `number` and the arguments `args` name, checked.
fn kernel_and_args(
    session: &Session,
    number: u64,
    args: Vec<proto::Arg>,
    call: &str,
) -> Result<(Kernel, Vec<OwnedArg>), Status> {
    let kernel = match session.objects().get(number) {
        Some(Object::Kernel(_, kernel)) => kernel.clone(),
        _ => return Err(crate::session::no_object(session, "kernel", number, call)),
    };
    let mut owned = Vec::with_capacity(args.len());
    for (i, arg) in args.into_iter().enumerate() {
        owned.push(match arg.value {
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
    Ok((kernel, owned))
}

fn queue(session: &Session, number: u64, call: &str) -> Result<(u64, Queue), Status> {
    match session.objects().get(number) {
        Some(Object::Queue(owner, queue)) => Ok((*owner, queue.clone())),
        _ => Err(crate::session::no_object(session, "queue", number, call)),
    }
}

fn memory(session: &Session, number: u64, call: &str) -> Result<Memory, Status> {
    match session.objects().get(number) {
        Some(Object::Memory(_, memory)) => Ok(memory.clone()),
        _ => Err(crate::session::no_object(session, "memory", number, call)),
    }
}

/// The completion of command `tag` that could not be enqueued, and why.
pub(crate) fn failed(tag: u64, status: &Status) -> proto::Completion {
    let code = crate::status::accelhost_code(status).unwrap_or(ErrorCode::Internal);
    proto::Completion {
        tag,
        code: code as i32,
        message: status.message().to_string(),
    }
}

/// The completion of command `tag` whose `event` finished.
pub(crate) fn finished(tag: u64, event: &Event) -> proto::Completion {
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

/// The answer stream of one `Submit` call: completions batched as they come, straight from
/// the threads that finish the commands (no task between them and the connection). It holds
/// one of the session's answer streams until it ends, when the client's stream ended and
/// everything it submitted finished.
pub struct Replies {
    completions: mpsc::UnboundedReceiver<(proto::Completion, OwnedSemaphorePermit)>,
    _stream: OwnedSemaphorePermit,
}

impl tokio_stream::Stream for Replies {
    type Item = Result<proto::SubmitReply, Status>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let Some(first) = std::task::ready!(self.completions.poll_recv(cx)) else {
            return std::task::Poll::Ready(None);
        };
        let mut completions = vec![first.0];
        // The permits go as their completions leave: the node then reads further.
        while completions.len() < MAX_BATCH {
            match self.completions.try_recv() {
                Ok((completion, _permit)) => completions.push(completion),
                Err(_) => break,
            }
        }
        std::task::Poll::Ready(Some(Ok(proto::SubmitReply { completions })))
    }
}

/// Serves one `Submit` stream of `session` (`first` is its first message): enqueues what
/// comes, in order, on a task of its own, and answers with the completions.
pub fn serve(
    session: Arc<Session>,
    first: proto::SubmitRequest,
    inbound: Streaming<proto::SubmitRequest>,
    stream: OwnedSemaphorePermit,
) -> Replies {
    // Unbounded, but never holding more than MAX_IN_FLIGHT completions: each holds its
    // command's permit until it leaves.
    let (done, completions) = mpsc::unbounded_channel();
    tokio::spawn(enqueue_all(session, first, inbound, done));
    Replies {
        completions,
        _stream: stream,
    }
}

async fn enqueue_all(
    session: Arc<Session>,
    first: proto::SubmitRequest,
    mut inbound: Streaming<proto::SubmitRequest>,
    done: mpsc::UnboundedSender<(proto::Completion, OwnedSemaphorePermit)>,
) {
    let in_flight = Arc::new(Semaphore::new(MAX_IN_FLIGHT));
    let mut next = Some(first);
    loop {
        let request = match next.take() {
            Some(request) => request,
            None => match inbound.message().await {
                Ok(Some(request)) => request,
                _ => break,
            },
        };
        let mut batch = Vec::with_capacity(request.commands.len().min(MAX_IN_FLIGHT));
        for command in request.commands {
            let weight = weight(&command.work);
            let permit = match in_flight.clone().try_acquire_many_owned(weight) {
                Ok(permit) => permit,
                Err(_) => {
                    // What is gathered goes first: its commands are what will give permits
                    // back (a message may hold more commands than may be in flight).
                    enqueue(std::mem::take(&mut batch), &done);
                    let Ok(permit) = in_flight.clone().acquire_many_owned(weight).await else {
                        break;
                    };
                    permit
                }
            };
            let work = if request.session != session.id {
                Err(status(
                    ErrorCode::InvalidArgument,
                    "Submit: every message of a stream names the stream's session",
                ))
            } else {
                Work::of_command(&session, command.work, "Submit")
            };
            batch.push((command.tag, work.map(|(_, work)| work), permit));
        }
        enqueue(batch, &done);
    }
}

/// What a command counts against [`MAX_IN_FLIGHT`]: its launches (a batch of a size the node
/// refuses counts as one), else one.
pub fn weight(work: &Option<proto::command::Work>) -> u32 {
    match work {
        Some(proto::command::Work::Launches(batch)) => {
            batch.launches.len().clamp(1, LAUNCHES_PER_BATCH) as u32
        }
        _ => 1,
    }
}

/// Commands checked and ready, each with its tag and its in-flight permit.
type Gathered = Vec<(u64, Result<Work, Status>, OwnedSemaphorePermit)>;

/// Enqueues `batch` in order; each command's completion (or why it could not be enqueued)
/// goes to `done` with its permit.
fn enqueue(
    batch: Gathered,
    done: &mpsc::UnboundedSender<(proto::Completion, OwnedSemaphorePermit)>,
) {
    if batch.is_empty() {
        return;
    }
    // Enqueueing calls into the plugin: done in place (the runtime moves this worker's other
    // tasks away meanwhile), which spares a thread hop per message.
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

/// How a submitted command ended: `Ok` when it completed, else its error code and why.
pub type Outcome = Result<(), (ErrorCode, String)>;

/// What hears a submitted command's [`Outcome`], on a thread where blocking calls are
/// allowed.
pub type Done = Box<dyn FnOnce(Outcome) + Send>;

/// Commands of one batch, at most: what a message of launches holds well within the
/// node's message limit.
const MAX_COMMANDS_PER_MESSAGE: usize = 1024;

/// Commands submitted and not yet heard, and whether the stream still stands: shared by a
/// [`Submitter`] and its stream.
#[derive(Default)]
struct Tally {
    unfinished: std::sync::atomic::AtomicUsize,
    ended: std::sync::atomic::AtomicBool,
    /// Why the stream ended, once it has, for the commands it leaves unheard.
    why: std::sync::Mutex<Option<String>>,
    settled: tokio::sync::Notify,
}

/// A submitted command's [`Done`], heard exactly once: dropped unheard (its stream went
/// away first), it hears that the stream ended.
struct Waiter {
    done: Option<Done>,
    tally: Arc<Tally>,
}

impl Waiter {
    fn new(done: Done, tally: &Arc<Tally>) -> Waiter {
        tally
            .unfinished
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Waiter {
            done: Some(done),
            tally: tally.clone(),
        }
    }

    fn hear(mut self, outcome: Outcome) {
        if let Some(done) = self.done.take() {
            done(outcome);
        }
    }
}

impl Drop for Waiter {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            let why = self
                .tally
                .why
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let outcome = Err((
                ErrorCode::DeviceError,
                format!(
                    "the command stream to the node ended before the command finished: {}",
                    why.as_deref().unwrap_or("the stream went away")
                ),
            ));
            // `done` may block; on a runtime's thread it goes to the blocking pool.
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn_blocking(move || done(outcome))),
                Err(_) => done(outcome),
            }
        }
        if self
            .tally
            .unfinished
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst)
            == 1
        {
            self.tally.settled.notify_waiters();
        }
    }
}

type Waiting = Arc<std::sync::Mutex<std::collections::HashMap<u64, Waiter>>>;

/// The client half of a `Submit` stream: commands queued here go out batched on one stream,
/// opened with the first, straight from the submitting thread to the connection; each one's
/// [`Done`] runs when its completion comes back, or with the stream's failure if the stream
/// ends first. Dropping it ends the stream once what was submitted completed.
pub struct Submitter {
    commands: mpsc::UnboundedSender<(proto::command::Work, Waiter)>,
    tally: Arc<Tally>,
}

impl Submitter {
    /// A submitter for `session` over `rpc`; the task reading its completions runs on the
    /// current runtime.
    pub fn open(
        rpc: crate::proto::node_client::NodeClient<tonic::transport::Channel>,
        session: String,
    ) -> Submitter {
        let (commands, queued) = mpsc::unbounded_channel();
        let tally = Arc::new(Tally::default());
        let waiting = Waiting::default();
        let outbound = Outbound {
            queued,
            waiting: waiting.clone(),
            next_tag: 0,
            session,
        };
        tokio::spawn(read_completions(rpc, outbound, waiting, tally.clone()));
        Submitter { commands, tally }
    }

    /// Queues `work`; `done` hears how it ended. Gives `done` back if the stream has ended
    /// (open another submitter).
    pub fn submit(&self, work: proto::command::Work, done: Done) -> Result<(), Done> {
        if self.is_closed() {
            return Err(done);
        }
        let waiter = Waiter::new(done, &self.tally);
        self.commands.send((work, waiter)).map_err(|err| {
            let mut waiter = (err.0).1;
            waiter.done.take().expect("not heard yet")
        })
    }

    /// Whether the stream has ended.
    pub fn is_closed(&self) -> bool {
        self.commands.is_closed() || self.tally.ended.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Waits until every command submitted so far has finished.
    pub async fn settle(&self) {
        use std::sync::atomic::Ordering;
        loop {
            let notified = self.tally.settled.notified();
            if self.tally.unfinished.load(Ordering::SeqCst) == 0 || self.is_closed() {
                return;
            }
            notified.await;
        }
    }
}

/// What the stream sends: the queued commands, batched, each remembered by its tag.
struct Outbound {
    queued: mpsc::UnboundedReceiver<(proto::command::Work, Waiter)>,
    waiting: Waiting,
    next_tag: u64,
    session: String,
}

impl tokio_stream::Stream for Outbound {
    type Item = proto::SubmitRequest;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let Some(first) = std::task::ready!(self.queued.poll_recv(cx)) else {
            return std::task::Poll::Ready(None);
        };
        let me = &mut *self;
        let mut commands = Vec::new();
        let mut waiting = me.waiting.lock().unwrap_or_else(|p| p.into_inner());
        let mut next = Some(first);
        while let Some((work, waiter)) = next.take() {
            me.next_tag += 1;
            waiting.insert(me.next_tag, waiter);
            commands.push(proto::Command {
                tag: me.next_tag,
                work: Some(work),
            });
            if commands.len() < MAX_COMMANDS_PER_MESSAGE {
                next = me.queued.try_recv().ok();
            }
        }
        std::task::Poll::Ready(Some(proto::SubmitRequest {
            session: me.session.clone(),
            commands,
        }))
    }
}

/// Opens the stream and hears completions until it ends; whatever is still waiting then
/// hears that the stream ended.
async fn read_completions(
    mut rpc: crate::proto::node_client::NodeClient<tonic::transport::Channel>,
    outbound: Outbound,
    waiting: Waiting,
    tally: Arc<Tally>,
) {
    let why = match rpc.submit(outbound).await {
        Err(status) => status.message().to_string(),
        Ok(replies) => {
            let mut replies = replies.into_inner();
            loop {
                let reply = match replies.message().await {
                    Ok(Some(reply)) => reply,
                    Ok(None) => break "the node ended it".to_string(),
                    Err(status) => break status.message().to_string(),
                };
                let heard: Vec<(Waiter, Outcome)> = {
                    let mut waiting = waiting.lock().unwrap_or_else(|p| p.into_inner());
                    reply
                        .completions
                        .into_iter()
                        .filter_map(|c| {
                            let outcome = match ErrorCode::from_number(c.code as u32) {
                                _ if c.code == 0 => Ok(()),
                                Some(code) => Err((code, c.message)),
                                None => Err((ErrorCode::DeviceError, c.message)),
                            };
                            waiting.remove(&c.tag).map(|waiter| (waiter, outcome))
                        })
                        .collect()
                };
                if !heard.is_empty() {
                    // `done`s may block: in place, while the runtime moves this worker's
                    // other tasks away.
                    tokio::task::block_in_place(move || {
                        for (waiter, outcome) in heard {
                            waiter.hear(outcome);
                        }
                    });
                }
            }
        }
    };
    *tally.why.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    tally.ended.store(true, std::sync::atomic::Ordering::SeqCst);
    let unheard: Vec<Waiter> = waiting
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .drain()
        .map(|(_, waiter)| waiter)
        .collect();
    drop(unheard);
    tally.settled.notify_waiters();
}
