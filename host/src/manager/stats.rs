//! What each plugin's calls did: how many, how long, how each failed, and its faults by cause.
//! Counted for every call in a slot found without a lock, with plain stores to atomics (the
//! calls of one plugin are serialized by its instance lock, so no two count at once), so that
//! counting stays within a few nanoseconds of a call and reading the counts (a metrics
//! scrape) never holds a call up.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{OnceLock, PoisonError, RwLock};
use std::time::Duration;

use serde::Serialize;

use crate::error::ErrorCode;

/// The upper bounds of the call-duration buckets, in seconds: 1 µs to 10 s, then the rest.
pub const DURATION_BUCKETS: [f64; 14] = [
    1e-6,
    2.5e-6,
    5e-6,
    1e-5,
    2.5e-5,
    5e-5,
    1e-4,
    2.5e-4,
    1e-3,
    1e-2,
    0.1,
    1.0,
    10.0,
    f64::INFINITY,
];

/// How one call ended, for the counts.
pub(crate) enum Ended {
    /// It answered (with a value).
    Answered,
    /// It answered with an error of this code.
    Refused(ErrorCode),
    /// The instance faulted in it, with this cause.
    Faulted(&'static str),
}

/// The figures of one call name; the number of calls is the sum of the buckets.
#[derive(Default)]
struct Counters {
    nanos: AtomicU64,
    buckets: [AtomicU64; DURATION_BUCKETS.len()],
    errors: [AtomicU64; ErrorCode::ALL.len()],
    faults: AtomicU64,
}

/// FNV-1a over a call's name: the names are a few short literals, and this is on every call.
#[derive(Default)]
struct NameHasher(u64);

impl Hasher for NameHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut hash = if self.0 == 0 {
            0xcbf2_9ce4_8422_2325
        } else {
            self.0
        };
        for byte in bytes {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = hash;
    }
}

type ByName<T> = HashMap<&'static str, T, BuildHasherDefault<NameHasher>>;

/// How many call names are counted in lock-free slots: every WIT version's exports fit (0.2.0
/// has 28); names past them are counted in `overflow`, behind a lock.
const SLOTS: usize = 48;

/// A call name and its figures, set by the first call of that name (the figures are boxed, so
/// that the slots no call took cost a pointer each, not a set of counters).
type Slot = OnceLock<(&'static str, Box<Counters>)>;

/// The counts of one plugin, by call.
pub(crate) struct CallStats {
    /// Filled in order, so a lookup stops at the first slot that is its name or is free.
    slots: Box<[Slot]>,
    overflow: RwLock<ByName<Counters>>,
    faults: RwLock<ByName<AtomicU64>>,
    /// Counts only faults (a host built with `count_calls(false)`).
    faults_only: bool,
}

impl Default for CallStats {
    fn default() -> Self {
        CallStats {
            slots: (0..SLOTS).map(|_| Slot::default()).collect(),
            overflow: RwLock::default(),
            faults: RwLock::default(),
            faults_only: false,
        }
    }
}

/// One call's figures, as [`PluginInfo`](crate::PluginInfo) reports them.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CallFigures {
    /// The export, such as `open` or `enqueue-launch`.
    pub call: &'static str,
    /// Calls made.
    pub calls: u64,
    /// Their total duration, in seconds.
    pub seconds: f64,
    /// Calls per duration bucket (upper bound in seconds, calls in it, not cumulative), the
    /// bounds of [`DURATION_BUCKETS`]; left out of JSON, whose numbers cannot be infinite.
    #[serde(skip)]
    pub buckets: Vec<(f64, u64)>,
    /// Calls answered with an error, by code (codes that never came are left out).
    pub errors: Vec<(ErrorCode, u64)>,
    /// Calls the instance faulted in.
    pub faults: u64,
}

/// Adds `n` to a counter only one thread writes at a time: a load and a store, which readers
/// see whole, without the cost of an atomic read-modify-write on every call.
fn add(counter: &AtomicU64, n: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(n),
        Ordering::Relaxed,
    );
}

fn read<T>(lock: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(PoisonError::into_inner)
}

impl CallStats {
    /// Counts that cover every call, or (`every_call` false) only faults.
    pub(crate) fn counting(every_call: bool) -> CallStats {
        CallStats {
            faults_only: !every_call,
            ..CallStats::default()
        }
    }

    /// Counts one call of `call` that took `took` and ended as `ended`. Calls of one name must
    /// not be recorded at once (the plugin's instance lock serializes them): the counts are
    /// added without atomic read-modify-writes.
    pub(crate) fn record(&self, call: &'static str, took: Duration, ended: Ended) {
        if self.faults_only && !matches!(ended, Ended::Faulted(_)) {
            return;
        }
        // Most calls come from the literal that named the slot: pointers first, text after.
        let named = || {
            self.slots
                .iter()
                .map_while(|s| s.get().map(|(name, counters)| (*name, &**counters)))
        };
        if let Some((_, counters)) = named().find(|(name, _)| std::ptr::eq(*name, call)) {
            return self.count(counters, took, ended);
        }
        for slot in &self.slots {
            let (name, counters) = slot.get_or_init(|| (call, Box::default()));
            if *name == call {
                return self.count(counters, took, ended);
            }
        }
        {
            let known = read(&self.overflow);
            if let Some(counters) = known.get(call) {
                return self.count(counters, took, ended);
            }
        }
        let mut all = self
            .overflow
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let counters = all.entry(call).or_default();
        self.count(counters, took, ended);
    }

    fn count(&self, counters: &Counters, took: Duration, ended: Ended) {
        let nanos = u64::try_from(took.as_nanos()).unwrap_or(u64::MAX);
        add(&counters.nanos, nanos);
        let seconds = took.as_secs_f64();
        let bucket = DURATION_BUCKETS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(DURATION_BUCKETS.len() - 1);
        add(&counters.buckets[bucket], 1);
        match ended {
            Ended::Answered => {}
            Ended::Refused(code) => {
                let index = ErrorCode::ALL.iter().position(|c| *c == code).unwrap_or(0);
                add(&counters.errors[index], 1);
            }
            Ended::Faulted(cause) => {
                add(&counters.faults, 1);
                self.fault(cause);
            }
        }
    }

    /// Counts a fault of `cause`.
    fn fault(&self, cause: &'static str) {
        if let Some(found) = read(&self.faults).get(cause) {
            found.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mut all = self.faults.write().unwrap_or_else(PoisonError::into_inner);
        all.entry(cause)
            .or_default()
            .fetch_add(1, Ordering::Relaxed);
    }

    /// Every call's figures, by call name.
    pub(crate) fn calls(&self) -> Vec<CallFigures> {
        let overflow = read(&self.overflow);
        let named = self
            .slots
            .iter()
            .map_while(|slot| slot.get().map(|(name, counters)| (*name, &**counters)))
            .chain(overflow.iter().map(|(call, c)| (*call, c)));
        let mut figures: Vec<CallFigures> = named
            .map(|(call, c)| CallFigures {
                call,
                calls: c.buckets.iter().map(|n| n.load(Ordering::Relaxed)).sum(),
                seconds: c.nanos.load(Ordering::Relaxed) as f64 / 1e9,
                buckets: DURATION_BUCKETS
                    .iter()
                    .zip(&c.buckets)
                    .map(|(bound, n)| (*bound, n.load(Ordering::Relaxed)))
                    .collect(),
                errors: ErrorCode::ALL
                    .iter()
                    .zip(&c.errors)
                    .map(|(code, n)| (*code, n.load(Ordering::Relaxed)))
                    .filter(|(_, n)| *n > 0)
                    .collect(),
                faults: c.faults.load(Ordering::Relaxed),
            })
            .collect();
        figures.sort_by_key(|f| f.call);
        figures
    }

    /// Faults by cause (`trap`, `deadline`, ...), by cause name.
    pub(crate) fn faults(&self) -> Vec<(&'static str, u64)> {
        let mut faults: Vec<(&'static str, u64)> = read(&self.faults)
            .iter()
            .map(|(cause, n)| (*cause, n.load(Ordering::Relaxed)))
            .collect();
        faults.sort();
        faults
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_counted_by_name_outcome_and_duration() {
        let stats = CallStats::default();
        stats.record("open", Duration::from_nanos(700), Ended::Answered);
        stats.record(
            "open",
            Duration::from_millis(3),
            Ended::Refused(ErrorCode::Busy),
        );
        stats.record("reset", Duration::from_secs(20), Ended::Faulted("deadline"));
        let calls = stats.calls();
        assert_eq!(
            calls.iter().map(|c| c.call).collect::<Vec<_>>(),
            ["open", "reset"]
        );
        let open = &calls[0];
        assert_eq!(open.calls, 2);
        assert_eq!(open.errors, [(ErrorCode::Busy, 1)]);
        assert!((open.seconds - 0.0030007).abs() < 1e-9, "{}", open.seconds);
        let bucket = |bound: f64| open.buckets.iter().find(|(b, _)| *b == bound).unwrap().1;
        assert_eq!(bucket(1e-6), 1, "700 ns is in the first bucket");
        assert_eq!(bucket(1e-2), 1, "3 ms is under 10 ms");
        assert_eq!(calls[1].faults, 1);
        assert_eq!(
            calls[1].buckets.last().unwrap().1,
            1,
            "20 s is past the last bound"
        );
        assert_eq!(stats.faults(), [("deadline", 1)]);
    }

    #[test]
    fn names_past_the_slots_are_counted_too() {
        let stats = CallStats::default();
        let names: Vec<&'static str> = (0..SLOTS + 3)
            .map(|i| &*Box::leak(format!("call-{i:02}").into_boxed_str()))
            .collect();
        for name in &names {
            stats.record(name, Duration::from_nanos(1), Ended::Answered);
        }
        // The same names again, from other strings: counted by their text.
        stats.record(
            String::from("call-00").leak(),
            Duration::ZERO,
            Ended::Answered,
        );
        stats.record(
            String::from("call-50").leak(),
            Duration::ZERO,
            Ended::Answered,
        );
        let calls = stats.calls();
        assert_eq!(calls.len(), SLOTS + 3);
        assert_eq!(calls[0].calls, 2);
        assert_eq!(calls[50].calls, 2);
        assert_eq!(calls.iter().map(|c| c.calls).sum::<u64>(), SLOTS as u64 + 5);
    }

    #[test]
    fn concurrent_first_calls_of_different_names_each_get_a_slot() {
        let stats = CallStats::default();
        let names = ["open", "close", "reset", "map-mmio"];
        std::thread::scope(|scope| {
            for name in names {
                let stats = &stats;
                scope.spawn(move || {
                    for _ in 0..1000 {
                        stats.record(name, Duration::from_nanos(5), Ended::Answered);
                    }
                });
            }
        });
        let calls = stats.calls();
        assert_eq!(calls.len(), names.len());
        assert!(calls.iter().all(|c| c.calls == 1000), "{calls:?}");
    }

    #[test]
    fn counting_only_faults_keeps_the_faults() {
        let stats = CallStats::counting(false);
        stats.record("open", Duration::from_nanos(700), Ended::Answered);
        stats.record(
            "open",
            Duration::from_nanos(900),
            Ended::Refused(ErrorCode::Busy),
        );
        stats.record("reset", Duration::from_secs(2), Ended::Faulted("trap"));
        assert_eq!(
            stats.calls().iter().map(|c| c.call).collect::<Vec<_>>(),
            ["reset"]
        );
        assert_eq!(stats.faults(), [("trap", 1)]);
    }
}
