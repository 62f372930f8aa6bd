//! A context's event queue, as the cxl driver's `read()` and `poll()` see it: a thread takes
//! each event from the context once its work started and queues its record (`struct
//! cxl_event`), and an eventfd counts the queued records, so the fd `cxl_afu_fd` returns is
//! readable exactly while an event waits: programs `select()` and `poll()` on it.

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use accelhost::cxl::{Context, event_record};

use crate::handles::lock;

/// How long the reader waits on the context before it looks whether its handle was freed.
const READER_TICK: Duration = Duration::from_millis(20);
/// The most records kept for a program that does not read them; beyond it the oldest go.
const MAX_QUEUED: usize = 4096;

/// The queued records and the eventfd that counts them.
pub struct Queue {
    fd: OwnedFd,
    pub records: Mutex<VecDeque<Vec<u8>>>,
    /// Held while events go from the context into the queue: an event taken from the
    /// context is queued before anyone else looks at either.
    handoff: Mutex<()>,
}

impl Queue {
    fn push(&self, record: Vec<u8>) {
        let mut records = lock(&self.records);
        if records.len() == MAX_QUEUED {
            records.pop_front();
            self.take_count();
        }
        records.push_back(record);
        let one = 1u64.to_ne_bytes();
        // SAFETY: an 8-byte write of a count to the eventfd this queue owns.
        unsafe { libc::write(self.fd.as_raw_fd(), one.as_ptr().cast(), one.len()) };
    }

    /// Queues the events `context` holds now.
    fn take_from(&self, context: &Context) {
        let _handoff = lock(&self.handoff);
        while let Ok(Some(event)) = context.read_event(Instant::now()) {
            self.push(event_record(context.process_element(), &event));
        }
    }

    pub fn pop(&self) -> Option<Vec<u8>> {
        let mut records = lock(&self.records);
        let record = records.pop_front()?;
        self.take_count();
        Some(record)
    }

    /// Takes one from the eventfd's count (a semaphore eventfd, never blocking).
    fn take_count(&self) {
        let mut count = [0u8; 8];
        // SAFETY: an 8-byte read into `count` from the eventfd this queue owns.
        unsafe { libc::read(self.fd.as_raw_fd(), count.as_mut_ptr().cast(), count.len()) };
    }

    /// Waits until a record is queued.
    pub fn wait(&self) {
        let mut poll = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd, waiting without a timeout; EINTR just waits again.
        while unsafe { libc::poll(&mut poll, 1, -1) } < 0
            && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
        {}
    }
}

/// The reader thread, stopped and joined when the handle goes.
struct Reader {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<()>,
}

/// A context's events.
pub struct Events {
    pub queue: Arc<Queue>,
    reader: Mutex<Option<Reader>>,
}

impl Events {
    /// An empty queue with its eventfd.
    pub fn new() -> io::Result<Self> {
        // SAFETY: eventfd has no memory preconditions.
        let fd = unsafe {
            libc::eventfd(
                0,
                libc::EFD_SEMAPHORE | libc::EFD_NONBLOCK | libc::EFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Events {
            queue: Arc::new(Queue {
                // SAFETY: `fd` was just created and is owned by nobody else.
                fd: unsafe { OwnedFd::from_raw_fd(fd) },
                records: Mutex::new(VecDeque::new()),
                handoff: Mutex::new(()),
            }),
            reader: Mutex::new(None),
        })
    }

    /// The fd that is readable while an event waits.
    pub fn fd(&self) -> BorrowedFd<'_> {
        use std::os::fd::AsFd;
        self.queue.fd.as_fd()
    }

    /// Starts taking `context`'s events (once its work started).
    pub fn start(&self, context: &Arc<Context>) -> io::Result<()> {
        let mut reader = lock(&self.reader);
        if reader.is_some() {
            return Ok(());
        }
        let stop = Arc::new(AtomicBool::new(false));
        let weak: Weak<Context> = Arc::downgrade(context);
        let queue = self.queue.clone();
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("libcxl-events".into())
            .spawn(move || read_events(&weak, &queue, &stopped))?;
        *reader = Some(Reader { stop, thread });
        Ok(())
    }

    pub fn started(&self) -> bool {
        lock(&self.reader).is_some()
    }

    /// Queues the events the context holds now, before the reader gets to them: an event the
    /// AFU raised before it wrote an element's status is pending once the status shows.
    pub fn catch_up(&self, context: &Context) {
        self.queue.take_from(context);
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        if let Some(reader) = lock(&self.reader).take() {
            reader.stop.store(true, Ordering::Release);
            let _ = reader.thread.join();
        }
    }
}

fn read_events(context: &Weak<Context>, queue: &Queue, stop: &AtomicBool) {
    while !stop.load(Ordering::Acquire) {
        let Some(context) = context.upgrade() else {
            return;
        };
        // The reader waits without taking, then takes under the handoff: a program that sees
        // an element's status and asks `cxl_event_pending` finds the event in the context or
        // in the queue, never between them.
        match context.wait_event(Instant::now() + READER_TICK) {
            Ok(true) => queue.take_from(&context),
            Ok(false) => {}
            Err(_) => return,
        }
    }
}
