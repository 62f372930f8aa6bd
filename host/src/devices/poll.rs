//! Host-side polling, so a plugin or application waiting on a register or a status word in
//! DMA memory never spins in wasm.

use std::cell::Cell;
use std::time::{Duration, Instant};

use super::DmaMemory;

/// The longest sleep between two reads. A completion is seen at most this late (plus the
/// timer's slack): at 1 ms, a 64 MiB NLB0 loopback (two runs of ~2 ms) lost up to a third of
/// its bandwidth to oversleeping; at 50 µs a waiter still wakes only ~20,000 times a second.
const MAX_SLEEP: Duration = Duration::from_micros(50);

/// How a poll ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PollOutcome {
    /// The value that matched.
    Matched(u64),
    /// The deadline passed; the last value read.
    TimedOut(u64),
}

/// Calls `read` until `value & mask == expected` or `deadline` passes. Spins briefly (a
/// device answers fast), then yields, then sleeps with a growing interval of up to
/// [`MAX_SLEEP`].
pub fn poll_until<E>(
    deadline: Instant,
    mask: u64,
    expected: u64,
    read: impl FnMut() -> Result<u64, E>,
) -> Result<PollOutcome, E> {
    poll_sleeping(deadline, mask, expected, read, std::thread::sleep)
}

/// [`poll_until`] on a word `read` takes from `memory`, whose sleeps end early when something
/// stores a word into it (an emulated device's completion).
pub fn poll_memory_until<E>(
    memory: &DmaMemory,
    deadline: Instant,
    mask: u64,
    expected: u64,
    mut read: impl FnMut() -> Result<u64, E>,
) -> Result<PollOutcome, E> {
    // The count is taken before each read, so a store after the read ends the next sleep.
    let seen = Cell::new(0);
    poll_sleeping(
        deadline,
        mask,
        expected,
        || {
            seen.set(memory.stores_seen());
            read()
        },
        |sleep| {
            memory.wait_for_store(seen.get(), sleep);
        },
    )
}

/// The loop of both polls; `pause` sleeps for the time it is given (or less).
fn poll_sleeping<E>(
    deadline: Instant,
    mask: u64,
    expected: u64,
    mut read: impl FnMut() -> Result<u64, E>,
    mut pause: impl FnMut(Duration),
) -> Result<PollOutcome, E> {
    let mut attempts: u32 = 0;
    let mut sleep = Duration::from_micros(10);
    loop {
        let value = read()?;
        if value & mask == expected {
            return Ok(PollOutcome::Matched(value));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(PollOutcome::TimedOut(value));
        }
        attempts += 1;
        if attempts < 64 {
            std::hint::spin_loop();
        } else if attempts < 128 {
            std::thread::yield_now();
        } else {
            precise_sleeps();
            pause(sleep.min(deadline - now));
            sleep = (sleep * 2).min(MAX_SLEEP);
        }
    }
}

/// Asks the kernel to end this thread's sleeps within 1 µs of their time instead of its
/// default 50 µs of slack, which would double the 50 µs sleeps of a poll; once per thread.
fn precise_sleeps() {
    thread_local!(static PRECISE: std::cell::Cell<bool> = const { std::cell::Cell::new(false) });
    if !PRECISE.replace(true) {
        // SAFETY: PR_SET_TIMERSLACK takes a value in nanoseconds and touches only this thread.
        unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1000 as libc::c_ulong) };
    }
}
