//! Threads that answer [`Host::enumerate`](super::Host::enumerate) for the plugins at once,
//! kept between calls. Spawning a thread per plugin per call cost ~35 µs a plugin, ten times
//! what a plugin with a few devices takes to answer; waking a kept worker for each plugin
//! still cost more than the answers. So the caller answers too: it queues every job, takes
//! them one by one itself, and keeps one more thread on its way while any job is left
//! queued. Plugins that answer fast are all answered on the calling thread with one wake of
//! a worker; a plugin slow to answer (up to its deadline) holds up no other job, since the
//! thread that takes a job first makes sure another is coming for the rest. Workers idle for
//! [`IDLE_EXIT`] end.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// How long a worker waits for a job before it ends.
const IDLE_EXIT: Duration = Duration::from_secs(30);

/// A job runs, then hands back what delivers its answer: the thread delivers it once it
/// counts as free again, so a caller that submits at once on the answer finds it free.
type Delivery = Box<dyn FnOnce() + Send>;
type Job = Box<dyn FnOnce() -> Delivery + Send>;

#[derive(Default)]
struct State {
    jobs: VecDeque<Job>,
    /// Worker threads alive.
    threads: usize,
    /// Workers running a job.
    busy: usize,
    /// Workers woken (or started) for the queue that have not yet looked at it. Counted
    /// down by any worker that looks, so it may err low (an extra wake), never stay high.
    coming: usize,
    closed: bool,
}

#[derive(Default)]
struct Shared {
    state: Mutex<State>,
    ready: Condvar,
}

/// A pool of threads that grows to as many jobs as run at once.
#[derive(Default)]
pub(crate) struct Workers {
    shared: Arc<Shared>,
}

impl Workers {
    /// Runs every job of `jobs`, on this thread and on workers, and returns their results in
    /// order; a job that panicked gives `None`.
    pub(crate) fn run_all<T: Send + 'static>(
        &self,
        jobs: impl IntoIterator<Item = impl FnOnce() -> T + Send + 'static>,
    ) -> Vec<Option<T>> {
        let (sender, answers) = std::sync::mpsc::channel();
        let mut count = 0;
        let mut state = lock(&self.shared.state);
        for (index, job) in jobs.into_iter().enumerate() {
            let sender = sender.clone();
            state.jobs.push_back(Box::new(move || {
                let answer = job();
                Box::new(move || {
                    let _ = sender.send((index, answer));
                })
            }));
            count += 1;
        }
        drop(sender);
        // The caller takes queued jobs (the first before any worker could) until none is
        // left; workers take the others.
        while let Some(job) = state.jobs.pop_front() {
            send_for_the_rest(&self.shared, &mut state);
            drop(state);
            if let Ok(deliver) = catch_unwind(AssertUnwindSafe(job)) {
                deliver();
            }
            state = lock(&self.shared.state);
        }
        drop(state);
        let mut results: Vec<Option<T>> = (0..count).map(|_| None).collect();
        // Ends when every job has answered or, having panicked, dropped its sender.
        for (index, answer) in answers {
            results[index] = Some(answer);
        }
        results
    }
}

/// Called by a thread about to run a job it took: while jobs are left queued, one more thread
/// must be on its way to them (an idle worker woken, else a new one), so that the job about
/// to run, however long it takes, holds up none of them. A thread that cannot be started
/// leaves the queue to the threads already taking from it.
fn send_for_the_rest(shared: &Arc<Shared>, state: &mut MutexGuard<'_, State>) {
    if state.jobs.is_empty() || state.coming > 0 || state.closed {
        return;
    }
    state.coming += 1;
    if state.threads > state.busy {
        shared.ready.notify_one();
        return;
    }
    state.threads += 1;
    let worker = shared.clone();
    let spawned = std::thread::Builder::new()
        .name("accelhost-enumerate".into())
        .spawn(move || work(&worker));
    if let Err(err) = spawned {
        state.threads -= 1;
        state.coming -= 1;
        tracing::warn!("cannot start an enumerate worker: {err}; answering on fewer threads");
    }
}

impl Drop for Workers {
    fn drop(&mut self) {
        lock(&self.shared.state).closed = true;
        self.shared.ready.notify_all();
    }
}

fn work(shared: &Arc<Shared>) {
    let mut state = lock(&shared.state);
    loop {
        // Any worker that looks at the queue answers the call for one: counting the one that
        // was woken, a new one, and one back from a job whose wake found nobody waiting.
        state.coming = state.coming.saturating_sub(1);
        if let Some(job) = state.jobs.pop_front() {
            state.busy += 1;
            send_for_the_rest(shared, &mut state);
            drop(state);
            // A panic is the job's answer (its sender is dropped); the worker goes on.
            let delivery = catch_unwind(AssertUnwindSafe(job)).ok();
            lock(&shared.state).busy -= 1;
            if let Some(deliver) = delivery {
                deliver();
            }
            state = lock(&shared.state);
            continue;
        }
        if state.closed {
            state.threads -= 1;
            return;
        }
        let (next, waited) = shared
            .ready
            .wait_timeout(state, IDLE_EXIT)
            .unwrap_or_else(PoisonError::into_inner);
        state = next;
        if waited.timed_out() && state.jobs.is_empty() {
            state.threads -= 1;
            return;
        }
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Instant;

    #[test]
    fn jobs_answer_in_order_and_a_panic_is_none() {
        let workers = Workers::default();
        let results = workers.run_all((0..5).map(|i| {
            move || {
                assert_ne!(i, 3, "job 3 panics");
                i * 10
            }
        }));
        assert_eq!(results, [Some(0), Some(10), Some(20), None, Some(40)]);
        // The pool survives the panic.
        assert_eq!(workers.run_all([|| 7]), [Some(7)]);
    }

    #[test]
    fn slow_jobs_run_side_by_side_not_one_after_another() {
        let workers = Workers::default();
        let started = Instant::now();
        let results = workers.run_all((0..4).map(|i| {
            move || {
                std::thread::sleep(Duration::from_millis(400));
                i
            }
        }));
        assert_eq!(results, [Some(0), Some(1), Some(2), Some(3)]);
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(1200),
            "four 400 ms jobs took {took:?}: they ran one after another"
        );
    }

    #[test]
    fn the_caller_answers_jobs_too() {
        let workers = Workers::default();
        let caller = std::thread::current().id();
        let on_caller = Arc::new(AtomicUsize::new(0));
        for _ in 0..50 {
            let on_caller = on_caller.clone();
            workers.run_all((0..3).map(move |_| {
                let on_caller = on_caller.clone();
                move || {
                    if std::thread::current().id() == caller {
                        on_caller.fetch_add(1, Ordering::SeqCst);
                    }
                }
            }));
        }
        assert!(
            on_caller.load(Ordering::SeqCst) >= 50,
            "the caller answers the first job of each call itself"
        );
        assert!(
            lock(&workers.shared.state).threads <= 2,
            "no call of three jobs needs more than two workers"
        );
    }

    #[test]
    fn a_slow_job_holds_up_no_other_and_threads_are_kept() {
        let workers = Workers::default();
        let threads = Arc::new(Mutex::new(std::collections::HashSet::new()));
        let record = |threads: &Arc<Mutex<std::collections::HashSet<_>>>| {
            threads.lock().unwrap().insert(std::thread::current().id());
        };
        let started = Instant::now();
        let slow_done = Arc::new(AtomicUsize::new(0));
        let results = workers.run_all((0..4).map(|i| {
            let (threads, slow_done) = (threads.clone(), slow_done.clone());
            move || {
                record(&threads);
                if i == 0 {
                    std::thread::sleep(Duration::from_millis(300));
                    slow_done.fetch_add(1, Ordering::SeqCst);
                }
                i
            }
        }));
        assert_eq!(results, [Some(0), Some(1), Some(2), Some(3)]);
        assert!(started.elapsed() >= Duration::from_millis(300));
        let used = threads.lock().unwrap().len();
        assert!(used >= 2, "the slow job had a thread to itself");
        // Later calls reuse the threads: no more are made for as many jobs.
        for _ in 0..20 {
            let threads = threads.clone();
            workers.run_all((0..4).map(|_| {
                let threads = threads.clone();
                move || record(&threads)
            }));
        }
        assert!(
            threads.lock().unwrap().len() <= used.max(4),
            "threads are kept"
        );
    }
}
