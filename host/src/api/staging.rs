//! The staging buffers a queue keeps for moving a program's bytes into and out of device
//! memory, which the host cannot reach directly: each transfer goes through host memory the
//! device copies from or to, in pieces of at most [`PIECE`] bytes. A queue keeps at most
//! [`KEPT`] such buffers and reuses them, so a transfer of any size holds at most
//! `KEPT × PIECE` bytes of staging and clears no fresh pages once the queue has its buffers,
//! and the host fills one piece while the device copies the other.

use std::collections::VecDeque;
use std::sync::{Condvar, Mutex, PoisonError};

use crate::devices::lock;
use crate::error::Result;

/// What the pool needs of a staging buffer.
pub(super) trait Staged {
    /// Its size in bytes.
    fn size(&self) -> u64;
}

/// What the pool needs of the event of a copy a buffer is lent to.
pub(super) trait Copying {
    /// Whether the copy finished, successfully or not.
    fn finished(&self) -> bool;
    /// Waits until it finished (each event ends by its deadline); how it ended is the
    /// command's to report.
    fn wait_finished(&self);
}

/// The most bytes one piece of a transfer stages.
pub(super) const PIECE: u64 = 8 << 20;

/// The most staging buffers a queue keeps: idle, lent to a copy in flight, or out with a
/// transfer.
pub(super) const KEPT: usize = 2;

/// The smallest staging buffer allocated: small transfers share one size.
const SMALLEST: u64 = 64 << 10;

/// A queue's staging buffers `B`: idle, lent to a device copy until its event `E` finishes,
/// or out with a transfer. Invariant: idle + lent + out ≤ [`KEPT`], whatever the threads.
pub(super) struct StagingPool<B, E> {
    state: Mutex<PoolState<B, E>>,
    /// Signalled when a buffer comes back (idle or lent) or an allocation failed.
    returned: Condvar,
}

impl<B, E> Default for StagingPool<B, E> {
    fn default() -> Self {
        StagingPool {
            state: Mutex::new(PoolState {
                idle: Vec::new(),
                lent: VecDeque::new(),
                out: 0,
            }),
            returned: Condvar::new(),
        }
    }
}

struct PoolState<B, E> {
    idle: Vec<B>,
    /// Oldest first, as the queue runs the copies.
    lent: VecDeque<(E, B)>,
    /// Taken by transfers and not yet lent or given back.
    out: usize,
}

impl<B, E: Copying> PoolState<B, E> {
    /// Takes back the buffers whose copies finished.
    fn reclaim(&mut self) {
        while self.lent.front().is_some_and(|(copy, _)| copy.finished()) {
            if let Some((_, buffer)) = self.lent.pop_front() {
                self.idle.push(buffer);
            }
        }
    }

    fn kept(&self) -> usize {
        self.idle.len() + self.lent.len() + self.out
    }
}

/// Where [`StagingPool::take`] finds a buffer.
enum Found<B, E> {
    Ready(B),
    /// Room for a new one (a too-small idle one may have been dropped for it).
    Allocate,
    /// The oldest lent one, once its copy finished.
    AfterCopy(E, B),
}

/// The size of a staging buffer for `size` bytes: a power of two between [`SMALLEST`] and
/// [`PIECE`].
fn buffer_size(size: u64) -> u64 {
    size.next_power_of_two().clamp(SMALLEST, PIECE)
}

impl<B: Staged, E: Copying> StagingPool<B, E> {
    /// A staging buffer of at least `size` (≤ [`PIECE`]) bytes, out with the caller until it
    /// is lent or given back: an idle one, one whose copy finished, or a new one from
    /// `alloc`; when the queue keeps [`KEPT`] already, the oldest lent one once its copy
    /// finished (each event ends by its deadline). When every buffer is out with other
    /// transfers, waits for one to come back; a transfer that already holds one takes
    /// another with [`try_take`](Self::try_take) instead (two such would wait for each other).
    pub(super) fn take(&self, size: u64, alloc: impl FnOnce(u64) -> Result<B>) -> Result<B> {
        match self.take_or_wait(size, true, alloc)? {
            Some(buffer) => Ok(buffer),
            None => unreachable!("a take that waits returns with a buffer"),
        }
    }

    /// As [`take`](Self::take), but `None` where it would wait for other transfers.
    pub(super) fn try_take(
        &self,
        size: u64,
        alloc: impl FnOnce(u64) -> Result<B>,
    ) -> Result<Option<B>> {
        self.take_or_wait(size, false, alloc)
    }

    fn take_or_wait(
        &self,
        size: u64,
        wait: bool,
        alloc: impl FnOnce(u64) -> Result<B>,
    ) -> Result<Option<B>> {
        let mut state = lock(&self.state);
        let found = loop {
            state.reclaim();
            if let Some(at) = state.idle.iter().position(|b| b.size() >= size) {
                break Found::Ready(state.idle.swap_remove(at));
            }
            if state.kept() < KEPT || state.idle.pop().is_some() {
                break Found::Allocate;
            }
            if let Some((copy, buffer)) = state.lent.pop_front() {
                break Found::AfterCopy(copy, buffer);
            }
            if !wait {
                return Ok(None);
            }
            state = self
                .returned
                .wait(state)
                .unwrap_or_else(PoisonError::into_inner);
        };
        state.out += 1;
        drop(state);
        let buffer = match found {
            Found::Ready(buffer) => Ok(buffer),
            Found::AfterCopy(copy, buffer) => {
                copy.wait_finished();
                if buffer.size() >= size {
                    Ok(buffer)
                } else {
                    drop(buffer);
                    alloc(buffer_size(size))
                }
            }
            Found::Allocate => alloc(buffer_size(size)),
        };
        if buffer.is_err() {
            lock(&self.state).out -= 1;
            self.returned.notify_one();
        }
        buffer.map(Some)
    }

    /// `buffer`, taken with [`take`](Self::take), is in use until `copy` finished.
    pub(super) fn lend(&self, copy: E, buffer: B) {
        let mut state = lock(&self.state);
        state.out -= 1;
        state.lent.push_back((copy, buffer));
        self.returned.notify_one();
    }

    /// `buffer`, taken with [`take`](Self::take), is idle again.
    pub(super) fn give_back(&self, buffer: B) {
        let mut state = lock(&self.state);
        state.out -= 1;
        state.idle.push(buffer);
        self.returned.notify_one();
    }

    /// How many staging buffers the queue keeps now, out with transfers included.
    #[cfg(test)]
    pub(super) fn kept(&self) -> usize {
        lock(&self.state).kept()
    }
}

#[cfg(test)]
mod tests {
    use std::cell::Cell;
    use std::rc::Rc;

    use super::*;

    struct Buffer(u64);

    impl Staged for Buffer {
        fn size(&self) -> u64 {
            self.0
        }
    }

    /// A copy that finishes when told, or when waited on.
    #[derive(Clone, Default)]
    struct Copy {
        done: Rc<Cell<bool>>,
        waited: Rc<Cell<u32>>,
    }

    impl Copying for Copy {
        fn finished(&self) -> bool {
            self.done.get()
        }
        fn wait_finished(&self) {
            self.waited.set(self.waited.get() + 1);
            self.done.set(true);
        }
    }

    #[test]
    fn a_queue_keeps_at_most_two_buffers_and_waits_for_the_oldest_copy() {
        let pool: StagingPool<Buffer, Copy> = StagingPool::default();
        let allocated = Cell::new(0);
        let alloc = |size| {
            allocated.set(allocated.get() + 1);
            Ok(Buffer(size))
        };
        let (first, second, third) = (Copy::default(), Copy::default(), Copy::default());
        let a = pool.take(100, alloc).unwrap();
        assert_eq!(a.size(), 64 << 10, "small pieces share the smallest size");
        pool.lend(first.clone(), a);
        let b = pool.take(PIECE, alloc).unwrap();
        pool.lend(second.clone(), b);
        assert_eq!((allocated.get(), pool.kept()), (2, 2));
        // Both lent, none finished: the third piece waits for the oldest copy, then reuses
        // its buffer (too small for a whole piece, it is replaced by a larger one).
        let c = pool.take(PIECE, alloc).unwrap();
        assert_eq!((first.waited.get(), second.waited.get()), (1, 0));
        assert_eq!(c.size(), PIECE);
        assert_eq!(allocated.get(), 3);
        pool.lend(third.clone(), c);
        assert_eq!(pool.kept(), 2);
        // A finished copy's buffer serves the next piece without waiting or allocating.
        second.done.set(true);
        let d = pool.take(PIECE, alloc).unwrap();
        assert_eq!((second.waited.get(), allocated.get()), (0, 3));
        pool.give_back(d);
        assert!(pool.kept() <= KEPT);
    }

    #[test]
    fn a_transfer_holding_a_buffer_does_not_wait_for_the_others() {
        let pool: StagingPool<Buffer, Copy> = StagingPool::default();
        let alloc = |size| Ok(Buffer(size));
        let one = pool.take(PIECE, alloc).unwrap();
        let two = pool.try_take(PIECE, alloc).unwrap().unwrap();
        assert_eq!(pool.kept(), KEPT);
        assert!(
            pool.try_take(PIECE, alloc).unwrap().is_none(),
            "both are out"
        );
        pool.give_back(one);
        let three = pool.try_take(PIECE, alloc).unwrap().unwrap();
        pool.give_back(two);
        pool.give_back(three);
        assert_eq!(pool.kept(), KEPT);
    }

    #[test]
    fn buffers_come_in_powers_of_two_from_64_kib_to_a_piece() {
        assert_eq!(buffer_size(1), 64 << 10);
        assert_eq!(buffer_size(64 << 10), 64 << 10);
        assert_eq!(buffer_size((64 << 10) + 1), 128 << 10);
        assert_eq!(buffer_size(5 << 20), 8 << 20);
        assert_eq!(buffer_size(PIECE), PIECE);
    }
}
