//! The threads that run the shares of a large launch beside the thread that launched it,
//! kept for the process's life. A thread started for each launch is placed by the cores'
//! recent load, and on a machine of two it was put behind the launching thread in most
//! launches, waiting 1–4 ms for the next balancing tick before it ran (a sum of 1 Mi floats
//! takes 3.4 ms); a kept thread that is woken goes to an idle core at once.
//!
//! Each share goes to an idle kept thread, or to a new one when none is idle, so a launch
//! never waits behind another's shares (a card's kernel that runs to its deadline holds up
//! no other launch). The threads are as many as the most shares ever running at once.
//!
//! Invariant: [`run`] returns (or unwinds) only after every share it handed to a kept
//! thread has ended, so the shares may borrow what its caller holds.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::mpsc::{Receiver, SendError, Sender, channel};
use std::sync::{Mutex, OnceLock};
use std::thread::Result as Outcome;

use crate::devices::lock;

/// A share handed to a kept thread, its borrows' lifetime erased (see [`run`]).
type Task = Box<dyn FnOnce() + Send + 'static>;

/// How to hand a task to each kept thread that is idle.
fn idle() -> &'static Mutex<Vec<Sender<Task>>> {
    static IDLE: OnceLock<Mutex<Vec<Sender<Task>>>> = OnceLock::new();
    IDLE.get_or_init(Mutex::default)
}

/// Runs `share(0)` to `share(count - 1)` at once, the first on this thread and each other on
/// a kept thread of its own, and returns how each ended, in order (a share that panicked
/// gives its panic).
pub(super) fn run<R: Send + 'static>(
    count: u32,
    share: &(dyn Fn(u32) -> R + Sync),
) -> Vec<Outcome<R>> {
    let (done, answers) = channel::<(u32, Outcome<R>)>();
    let mut waiting = Waiting {
        answers,
        left: 0,
        got: Vec::new(),
    };
    for index in 1..count {
        let done = done.clone();
        let task: Box<dyn FnOnce() + Send + '_> = Box::new(move || {
            let outcome = catch_unwind(AssertUnwindSafe(|| share(index)));
            let _ = done.send((index, outcome));
        });
        // SAFETY: only the lifetime of the task's borrow of `share` is erased. The task uses
        // it before it answers, and `waiting` (dropped before this function returns or
        // unwinds) receives an answer for each task handed on, or else finds every sender
        // gone, which means the tasks not answered were dropped unrun.
        let task: Task =
            unsafe { std::mem::transmute::<Box<dyn FnOnce() + Send + '_>, Task>(task) };
        waiting.left += 1;
        hand_on(task);
    }
    drop(done);
    let first = catch_unwind(AssertUnwindSafe(|| share(0)));
    waiting.wait();
    let mut outcomes: Vec<Option<Outcome<R>>> = (0..count).map(|_| None).collect();
    outcomes[0] = Some(first);
    for (index, outcome) in std::mem::take(&mut waiting.got) {
        outcomes[index as usize] = Some(outcome);
    }
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| Err(Box::new("the share's thread did not start"))))
        .collect()
}

/// Hands `task` to an idle kept thread, or to a new one; runs it here when no thread can
/// be started.
fn hand_on(mut task: Task) {
    loop {
        let Some(thread) = lock(idle()).pop() else {
            break;
        };
        match thread.send(task) {
            Ok(()) => return,
            // Its thread is gone (kept threads do not end; this is only a guard).
            Err(SendError(back)) => task = back,
        }
    }
    let (sender, tasks) = channel::<Task>();
    let own = sender.clone();
    let started = std::thread::Builder::new()
        .name("emu-kernel-share".into())
        .spawn(move || serve(tasks, own));
    match started {
        Ok(_) => {
            if let Err(SendError(task)) = sender.send(task) {
                task();
            }
        }
        Err(_) => task(),
    }
}

/// A kept thread's life: each task handed to it, after which it is idle again.
fn serve(tasks: Receiver<Task>, own: Sender<Task>) {
    while let Ok(task) = tasks.recv() {
        task();
        lock(idle()).push(own.clone());
    }
}

/// The answers of the shares handed to kept threads, waited for even when the caller's own
/// share unwinds.
struct Waiting<R> {
    answers: Receiver<(u32, Outcome<R>)>,
    left: usize,
    got: Vec<(u32, Outcome<R>)>,
}

impl<R> Waiting<R> {
    fn wait(&mut self) {
        while self.left > 0 {
            match self.answers.recv() {
                Ok(answer) => self.got.push(answer),
                // Every sender is gone: the tasks left were dropped without running.
                Err(_) => break,
            }
            self.left -= 1;
        }
        self.left = 0;
    }
}

impl<R> Drop for Waiting<R> {
    fn drop(&mut self) {
        self.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[test]
    fn each_share_runs_once_and_answers_in_order_even_when_one_panics() {
        let ran = AtomicU32::new(0);
        let outcomes = run(4, &|index| {
            ran.fetch_add(1, Ordering::SeqCst);
            if index == 2 {
                panic!("share two fails");
            }
            index * 10
        });
        assert_eq!(ran.load(Ordering::SeqCst), 4);
        let values: Vec<Option<u32>> = outcomes.into_iter().map(Result::ok).collect();
        assert_eq!(values, [Some(0), Some(10), None, Some(30)]);
    }

    #[test]
    fn shares_run_at_once_and_a_launch_waits_behind_no_other() {
        // Each share waits for all of its launch's shares to start: this ends only if they
        // run at the same time, for two launches from two threads.
        let launches: Vec<_> = (0..2)
            .map(|_| {
                std::thread::spawn(|| {
                    let barrier = std::sync::Barrier::new(3);
                    run(3, &|index| {
                        barrier.wait();
                        index
                    })
                    .into_iter()
                    .map(Result::unwrap)
                    .collect::<Vec<u32>>()
                })
            })
            .collect();
        for launch in launches {
            assert_eq!(launch.join().unwrap(), [0, 1, 2]);
        }
    }

    #[test]
    fn a_launch_runs_while_another_launch_s_share_is_still_running() {
        // A share that runs until told to stop (a kernel running to its deadline) ...
        let (stop, stopped) = channel::<()>();
        let stopped = Mutex::new(stopped);
        let (started, on_its_way) = channel::<()>();
        let started = Mutex::new(started);
        let long = std::thread::spawn(move || {
            run(2, &|index| {
                if index == 1 {
                    lock(&started).send(()).unwrap();
                    lock(&stopped).recv().unwrap();
                }
                index
            })
        });
        on_its_way.recv().unwrap();
        // ... holds up no other launch's shares (bounded, so that a launch queued behind it
        // fails the test instead of hanging it).
        let (answer, other) = channel();
        std::thread::spawn(move || {
            let values: Vec<u32> = run(3, &|index| index)
                .into_iter()
                .map(Result::unwrap)
                .collect();
            let _ = answer.send(values);
        });
        let other = other.recv_timeout(std::time::Duration::from_secs(20));
        stop.send(()).unwrap();
        assert_eq!(
            other.expect("the second launch waited behind the first's share"),
            [0, 1, 2]
        );
        let values: Vec<u32> = long
            .join()
            .unwrap()
            .into_iter()
            .map(Result::unwrap)
            .collect();
        assert_eq!(values, [0, 1]);
    }

    #[test]
    fn a_share_may_borrow_what_the_caller_holds() {
        let values: Vec<u32> = (5..8).collect();
        let outcomes = run(3, &|index| values[index as usize] + 1);
        let values: Vec<u32> = outcomes.into_iter().map(Result::unwrap).collect();
        assert_eq!(values, [6, 7, 8]);
    }
}
