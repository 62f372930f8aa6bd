//! The doorbell ring in use ([`crate::ring`] is its memory and its two ends): the node's
//! thread that serves a session's ring, checking and enqueueing each command as `Submit`
//! does ([`Work`]), and the client's [`RingSubmitter`], which hears each command's
//! completion as the stream's [`Submitter`](crate::pipeline::Submitter) does.

use std::collections::HashMap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};

use accelhost::ErrorCode;
use prost::Message;
use tokio::sync::OwnedSemaphorePermit;

use crate::pipeline::{Done, Work, failed, finished};
use crate::proto;
use crate::ring::{ClientEnd, Completions, MAX_RECORD, NodeEnd, RingMemory, RingObject, TICK};
use crate::session::Session;
use crate::status::from_host;

const _: () = assert!(crate::ring::DONE_SLOTS as usize == crate::pipeline::MAX_IN_FLIGHT);

/// Commands one pass of the serving thread reads before enqueueing them.
const COMMANDS_PER_PASS: usize = 256;

/// Serves `memory` for `session` on a thread of its own, which holds `stream` (one of the
/// session's answer streams) until the object this returns is released, the client leaves
/// or breaks the ring, or the session ends. Commands are checked and enqueued as `Submit`'s
/// are ([`Work`]).
pub fn serve(
    session: Weak<Session>,
    memory: Arc<RingMemory>,
    stream: OwnedSemaphorePermit,
) -> io::Result<RingObject> {
    let object = RingObject::new(memory.clone());
    let mut node = NodeEnd::new(memory);
    let stop = object.released();
    std::thread::Builder::new()
        .name("accelhost-ring".into())
        .spawn(move || {
            let _stream = stream;
            let done = node.completions();
            let in_flight = Arc::new(InFlight::default());
            while !stop.load(Ordering::SeqCst) && !node.client_left() {
                let commands = match node.next_commands(COMMANDS_PER_PASS) {
                    Ok(commands) => commands,
                    Err(broken) => {
                        tracing::warn!(reason = %broken, "closing a client's ring");
                        node.close(&broken.to_string());
                        return;
                    }
                };
                let Some(session) = session.upgrade() else {
                    return;
                };
                for command in commands {
                    let weight = crate::pipeline::weight(&command.work);
                    let gone = || stop.load(Ordering::SeqCst) || node.client_left();
                    if !in_flight.take(weight, gone) {
                        return;
                    }
                    enqueue(&session, command, &done, (&in_flight, weight));
                }
            }
        })?;
    Ok(object)
}

/// Launches and copies of one ring enqueued and not yet finished, as a `Submit` stream counts
/// them: the completion slots bound the commands, this what they hold (a batch its launches).
#[derive(Default)]
struct InFlight {
    count: Mutex<usize>,
    finished: Condvar,
}

impl InFlight {
    /// Takes `weight` places once they are free, looking at `gone` every [`TICK`]; false
    /// (nothing taken) once it says the ring is going.
    fn take(&self, weight: u32, gone: impl Fn() -> bool) -> bool {
        let weight = weight as usize;
        let mut count = self.count.lock().unwrap_or_else(|p| p.into_inner());
        while *count + weight > crate::pipeline::MAX_IN_FLIGHT {
            if gone() {
                return false;
            }
            count = self
                .finished
                .wait_timeout(count, TICK)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
        *count += weight;
        true
    }

    fn give_back(&self, weight: u32) {
        *self.count.lock().unwrap_or_else(|p| p.into_inner()) -= weight as usize;
        self.finished.notify_all();
    }
}

/// Checks and enqueues one command read from the ring; its completion goes to `done` when it
/// finished (or at once, if it could not be enqueued), and its places back to `held.0`.
fn enqueue(
    session: &Session,
    command: proto::Command,
    done: &Arc<Completions>,
    held: (&Arc<InFlight>, u32),
) {
    const CALL: &str = "ring";
    let tag = command.tag;
    let (in_flight, weight) = (held.0.clone(), held.1);
    let work = Work::of_command(session, command.work, CALL);
    match work.and_then(|(_, work)| work.enqueue().map_err(from_host)) {
        Ok(event) => {
            let (done, watched) = (done.clone(), event.clone());
            event.on_finish(move || {
                let completion = finished(tag, &watched);
                in_flight.give_back(weight);
                done.push(tag, completion.code, &completion.message);
            });
        }
        Err(why) => {
            let completion = failed(tag, &why);
            in_flight.give_back(weight);
            done.push(tag, completion.code, &completion.message);
        }
    }
}

/// The client's submitter over a ring: commands written from the submitting thread, their
/// [`Done`]s run by a reader thread of the ring's as completions come back, or with the
/// ring's failure if it closes first. Dropping it leaves the ring (commands the node has not
/// read yet hear that).
pub struct RingSubmitter {
    end: Arc<ClientEnd>,
    next_tag: AtomicU64,
    waiting: Arc<Waiting>,
}

/// Commands written and not yet heard, by tag; the condition tells when none is left.
#[derive(Default)]
struct Waiting {
    done: Mutex<HashMap<u64, Done>>,
    settled: Condvar,
    closed: AtomicBool,
}

impl Waiting {
    fn take(&self, tag: u64) -> Option<Done> {
        let mut done = self.done.lock().unwrap_or_else(|p| p.into_inner());
        let taken = done.remove(&tag);
        if done.is_empty() {
            self.settled.notify_all();
        }
        taken
    }
}

impl RingSubmitter {
    /// A submitter over `end`, with its reader thread.
    pub fn new(end: ClientEnd) -> io::Result<RingSubmitter> {
        let end = Arc::new(end);
        let waiting = Arc::new(Waiting::default());
        let (reader_end, reader_waiting) = (end.clone(), waiting.clone());
        std::thread::Builder::new()
            .name("accelhost-ring-reader".into())
            .spawn(move || read_completions(&reader_end, &reader_waiting))?;
        Ok(RingSubmitter {
            end,
            next_tag: AtomicU64::new(0),
            waiting,
        })
    }

    /// Writes `work`; `done` hears how it ended. Both come back when the command is longer
    /// than a ring record or the ring has closed: send it another way.
    pub fn submit(
        &self,
        work: proto::command::Work,
        done: Done,
    ) -> Result<(), (proto::command::Work, Done)> {
        let tag = self.next_tag.fetch_add(1, Ordering::Relaxed) + 1;
        let command = proto::Command {
            tag,
            work: Some(work),
        };
        if self.is_closed() || command.encoded_len() as u64 > MAX_RECORD {
            return Err((command.work.expect("set above"), done));
        }
        self.waiting
            .done
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tag, done);
        match self.end.write(&command) {
            Ok(()) => Ok(()),
            // Unless the reader already failed it with the ring's reason.
            Err(_) => match self.waiting.take(tag) {
                Some(done) => Err((command.work.expect("set above"), done)),
                None => Ok(()),
            },
        }
    }

    /// Whether the ring has closed (the node closed it or went away).
    pub fn is_closed(&self) -> bool {
        self.waiting.closed.load(Ordering::SeqCst) || self.end.closed().is_some()
    }

    /// Waits until every command written so far has been heard, or until `deadline`.
    pub fn settle(&self, deadline: std::time::Instant) {
        let mut done = self.waiting.done.lock().unwrap_or_else(|p| p.into_inner());
        while !done.is_empty() {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return;
            }
            done = self
                .waiting
                .settled
                .wait_timeout(done, left)
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }
}

impl Drop for RingSubmitter {
    fn drop(&mut self) {
        self.end.leave();
    }
}

/// Hears completions until the ring closes; whatever is still waiting then hears why.
fn read_completions(end: &ClientEnd, waiting: &Waiting) {
    let why = loop {
        match end.read() {
            Ok(heard) => {
                for (tag, outcome) in heard {
                    if let Some(done) = waiting.take(tag) {
                        done(outcome);
                    }
                }
            }
            Err(why) => break why,
        }
    };
    waiting.closed.store(true, Ordering::SeqCst);
    let unheard: Vec<Done> = {
        let mut done = waiting.done.lock().unwrap_or_else(|p| p.into_inner());
        let unheard = done.drain().map(|(_, done)| done).collect();
        waiting.settled.notify_all();
        unheard
    };
    for done in unheard {
        done(Err((
            ErrorCode::DeviceError,
            format!("the ring to the node closed before the command finished: {why}"),
        )));
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::ring::tests::launch;

    #[test]
    fn a_ring_keeps_at_most_max_in_flight_launches_in_flight_however_packed() {
        use crate::pipeline::MAX_IN_FLIGHT;
        let in_flight = Arc::new(InFlight::default());
        assert!(in_flight.take(MAX_IN_FLIGHT as u32 - 10, || false));
        // A batch of 256 launches does not fit beside them: it waits, and gives up when the
        // ring goes.
        let started = std::time::Instant::now();
        assert!(!in_flight.take(256, || started.elapsed() > TICK));
        assert!(started.elapsed() >= TICK);
        // Launches finishing on another thread make room, and the batch is taken.
        let finisher = {
            let in_flight = in_flight.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                in_flight.give_back(300);
            })
        };
        let started = std::time::Instant::now();
        assert!(in_flight.take(256, || started.elapsed() > Duration::from_secs(10)));
        finisher.join().unwrap();
        assert_eq!(
            *in_flight.count.lock().unwrap(),
            MAX_IN_FLIGHT - 10 - 300 + 256
        );
    }

    #[test]
    fn threads_submitting_at_once_each_hear_every_command_once() {
        let memory = Arc::new(RingMemory::create().unwrap());
        let client = ClientEnd::new(RingMemory::adopt(memory.share().unwrap()).unwrap());
        let submitter = Arc::new(RingSubmitter::new(client).unwrap());
        let (threads, each) = (4u64, 3000u64);
        let stop = Arc::new(AtomicBool::new(false));
        let node = {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut node = NodeEnd::new(memory);
                let done = node.completions();
                while !stop.load(Ordering::SeqCst) {
                    for command in node.next_commands(64).unwrap() {
                        done.push(command.tag, 0, "");
                    }
                }
            })
        };
        let (heard, hear) = std::sync::mpsc::channel();
        let writers: Vec<_> = (0..threads)
            .map(|t| {
                let (submitter, heard) = (submitter.clone(), heard.clone());
                std::thread::spawn(move || {
                    for i in 0..each {
                        let heard = heard.clone();
                        let work = launch(t * each + i, 16).work.unwrap();
                        let done: Done = Box::new(move |outcome| {
                            heard.send((t, i, outcome)).unwrap();
                        });
                        assert!(submitter.submit(work, done).is_ok());
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
        submitter.settle(std::time::Instant::now() + Duration::from_secs(30));
        drop(heard);
        let mut seen: Vec<(u64, u64)> = hear
            .iter()
            .map(|(t, i, outcome)| {
                assert_eq!(outcome, Ok(()));
                (t, i)
            })
            .collect();
        seen.sort();
        let expected: Vec<(u64, u64)> = (0..threads)
            .flat_map(|t| (0..each).map(move |i| (t, i)))
            .collect();
        assert_eq!(seen, expected);
        stop.store(true, Ordering::SeqCst);
        drop(submitter);
        node.join().unwrap();
    }

    #[test]
    fn a_submitter_to_a_stuck_node_gets_its_command_back_and_the_written_ones_fail() {
        let memory = RingMemory::create().unwrap();
        let client = ClientEnd::new(RingMemory::adopt(memory.share().unwrap()).unwrap())
            .stalled_after(Duration::from_millis(200));
        let submitter = RingSubmitter::new(client).unwrap();
        let (heard, hear) = std::sync::mpsc::channel();
        let mut written = 0;
        let back = loop {
            let heard = heard.clone();
            let done: Done = Box::new(move |outcome| heard.send(outcome).unwrap());
            match submitter.submit(launch(written, 100_000).work.unwrap(), done) {
                Ok(()) => written += 1,
                Err(back) => break back,
            }
        };
        assert!(written > 0);
        assert!(submitter.is_closed());
        drop((heard, back));
        let outcomes: Vec<_> = hear.iter().collect();
        assert_eq!(outcomes.len() as u64, written);
        for outcome in outcomes {
            let (_, why) = outcome.unwrap_err();
            assert!(why.contains("the client left the ring"), "{why}");
        }
    }
}
