//! Every event a plugin hands out ends by a deadline (`load_policy.event_deadline_ms`): one
//! process-wide thread fails the events still pending at theirs, waking every waiter, and
//! faults the plugin instance that made them. So a wait on a plugin's event — `Event::wait`,
//! a queue's `finish`, a door's `clFinish` or `xrtRunWait` — returns by then, whatever the
//! plugin does.
//!
//! A plugin's events all get the same deadline after they are handed out, so each plugin's
//! are watched in a queue ordered by deadline: watching one is a push, and the thread looks
//! only at the front of each queue. Finished events are pruned once a queue has doubled.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use crate::devices::{Completion, lock};

/// The fewest watched events before finished ones are pruned.
const PRUNE_FLOOR: usize = 64;
/// How long the thread sleeps when nothing is watched.
const IDLE: Duration = Duration::from_secs(3600);

/// One plugin's events that are still pending, oldest first.
#[derive(Default)]
pub(crate) struct EventDeadlines {
    watched: Mutex<Watched>,
}

#[derive(Default)]
struct Watched {
    events: VecDeque<Entry>,
    prune_at: usize,
}

struct Entry {
    completion: Weak<Completion>,
    due: Instant,
    generation: u64,
}

/// An event of instance `generation` that the thread failed at its deadline.
pub(crate) struct Expired {
    pub generation: u64,
}

/// What the thread asks of the owner of a queue of watched events.
pub(crate) trait Expiry: Send + Sync {
    /// The deadline's queue.
    fn deadlines(&self) -> &EventDeadlines;
    /// The message an expired event fails with.
    fn expired_message(&self) -> Arc<str>;
    /// Called, outside every lock, for the events that expired (at least one).
    fn expired(self: Arc<Self>, expired: Vec<Expired>);
}

impl EventDeadlines {
    /// Watches `completion` of instance `generation` until `due`, for `owner`; an event that
    /// already finished is not watched.
    pub(crate) fn watch<O: Expiry + 'static>(
        owner: &Arc<O>,
        completion: &Arc<Completion>,
        generation: u64,
        due: Instant,
    ) {
        if completion.is_finished() {
            return;
        }
        let first = {
            let mut watched = lock(&owner.deadlines().watched);
            if watched.events.len() >= watched.prune_at.max(PRUNE_FLOOR) {
                watched
                    .events
                    .retain(|e| e.completion.upgrade().is_some_and(|c| !c.is_finished()));
                watched.prune_at = watched.events.len() * 2;
            }
            watched.events.push_back(Entry {
                completion: Arc::downgrade(completion),
                due,
                generation,
            });
            watched.events.len() == 1
        };
        if first {
            reaper().add(Arc::downgrade(owner) as Weak<dyn Expiry>);
        }
    }

    /// Fails the events due by `now` that are still pending; returns them, and when the next
    /// one is due.
    fn expire(&self, now: Instant, why: &dyn Fn() -> Arc<str>) -> (Vec<Expired>, Option<Instant>) {
        let mut due_now = Vec::new();
        let next = {
            let mut watched = lock(&self.watched);
            while watched.events.front().is_some_and(|e| e.due <= now) {
                due_now.extend(watched.events.pop_front());
            }
            watched.events.front().map(|e| e.due)
        };
        let mut expired = Vec::new();
        let mut message = None;
        for entry in due_now {
            if let Some(completion) = entry.completion.upgrade() {
                let why = message.get_or_insert_with(why).clone();
                if completion.expire(why) {
                    expired.push(Expired {
                        generation: entry.generation,
                    });
                }
            }
        }
        (expired, next)
    }

    /// How many events are watched (finished ones not yet pruned included).
    #[cfg(test)]
    fn len(&self) -> usize {
        lock(&self.watched).events.len()
    }
}

/// The thread that fails events at their deadlines, and the queues it looks at.
struct Reaper {
    owners: Mutex<Owners>,
    woken: Condvar,
}

/// The queues the thread looks at, and whether one changed since it last looked: a deadline
/// added while the thread was looking, not waiting, would otherwise go unseen until it next
/// woke (an hour later, with nothing else due).
#[derive(Default)]
struct Owners {
    queues: Vec<Weak<dyn Expiry>>,
    changed: bool,
}

fn reaper() -> &'static Reaper {
    static REAPER: OnceLock<&'static Reaper> = OnceLock::new();
    REAPER.get_or_init(|| {
        let reaper: &'static Reaper = Box::leak(Box::new(Reaper {
            owners: Mutex::new(Owners::default()),
            woken: Condvar::new(),
        }));
        std::thread::Builder::new()
            .name("accelhost-event-deadlines".into())
            .spawn(move || reaper.run())
            .expect("starting the event-deadline thread");
        reaper
    })
}

impl Reaper {
    /// Makes sure `owner`'s queue is looked at, and wakes the thread to see its new front.
    fn add(&self, owner: Weak<dyn Expiry>) {
        let mut owners = lock(&self.owners);
        if !owners.queues.iter().any(|o| Weak::ptr_eq(o, &owner)) {
            owners.queues.push(owner);
        }
        owners.changed = true;
        self.woken.notify_one();
    }

    fn run(&self) {
        let mut owners = lock(&self.owners);
        loop {
            owners.changed = false;
            owners.queues.retain(|o| o.strong_count() > 0);
            let live: Vec<Arc<dyn Expiry>> =
                owners.queues.iter().filter_map(Weak::upgrade).collect();
            drop(owners);
            let now = Instant::now();
            let mut next = now + IDLE;
            for owner in live {
                let (expired, due) = owner.deadlines().expire(now, &|| owner.expired_message());
                if let Some(due) = due {
                    next = next.min(due);
                }
                if !expired.is_empty() {
                    owner.expired(expired);
                }
            }
            owners = lock(&self.owners);
            if owners.changed {
                continue;
            }
            let wait = next.saturating_duration_since(Instant::now());
            if !wait.is_zero() {
                owners = self
                    .woken
                    .wait_timeout(owners, wait)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::devices::CompletionState;

    #[derive(Default)]
    struct Owner {
        deadlines: EventDeadlines,
        expired: AtomicUsize,
    }

    impl Expiry for Owner {
        fn deadlines(&self) -> &EventDeadlines {
            &self.deadlines
        }
        fn expired_message(&self) -> Arc<str> {
            "too late".into()
        }
        fn expired(self: Arc<Self>, expired: Vec<Expired>) {
            self.expired.fetch_add(expired.len(), Ordering::SeqCst);
        }
    }

    #[test]
    fn a_pending_event_fails_at_its_deadline_and_a_finished_one_is_left_alone() {
        let owner = Arc::new(Owner::default());
        let pending = Arc::new(Completion::default());
        let finished = Arc::new(Completion::default());
        let due = Instant::now() + Duration::from_millis(50);
        EventDeadlines::watch(&owner, &pending, 1, due);
        EventDeadlines::watch(&owner, &finished, 1, due);
        finished.finish(CompletionState::Complete);
        let state = pending.wait(Instant::now() + Duration::from_secs(10));
        assert_eq!(state, CompletionState::Failed("too late".into()));
        assert!(pending.expired());
        assert!(Instant::now() >= due);
        assert_eq!(finished.state(), CompletionState::Complete);
        assert!(!finished.expired());
        let deadline = Instant::now() + Duration::from_secs(10);
        while owner.expired.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            owner.expired.load(Ordering::SeqCst),
            1,
            "only the pending one"
        );
    }

    #[test]
    fn finished_events_are_pruned_so_the_queue_stays_near_what_is_pending() {
        let owner = Arc::new(Owner::default());
        let due = Instant::now() + Duration::from_secs(3600);
        let stuck = Arc::new(Completion::default());
        EventDeadlines::watch(&owner, &stuck, 1, due);
        let mut kept = Vec::new();
        for _ in 0..100_000 {
            let event = Arc::new(Completion::default());
            EventDeadlines::watch(&owner, &event, 1, due);
            event.finish(CompletionState::Complete);
            kept.push(event);
        }
        assert!(
            owner.deadlines.len() <= 2 * PRUNE_FLOOR,
            "{} watched behind one stuck event",
            owner.deadlines.len()
        );
        assert_eq!(stuck.state(), CompletionState::Pending);
    }
}
