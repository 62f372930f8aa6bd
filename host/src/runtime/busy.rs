//! A plugin's budget of time in calls (`load_policy.busy_percent` over `busy_window_ms`): a
//! token bucket that fills at `busy_percent` of real time and drains by the time each call
//! takes. A plugin whose every call stays just under its deadline keeps its callers waiting
//! forever without ever faulting; the bucket running dry faults it instead.

use std::time::{Duration, Instant};

use crate::config::LoadPolicy;

/// The bucket of one plugin instance.
#[derive(Debug)]
pub(crate) struct BusyBudget {
    /// Nanoseconds of call time left.
    level: i128,
    /// The most it holds.
    capacity: i128,
    /// Percent of elapsed time it regains.
    percent: i128,
    refilled: Instant,
}

impl BusyBudget {
    /// A full bucket for `policy`: `busy_window_ms × busy_percent`, and at least one whole
    /// call deadline.
    pub fn new(policy: &LoadPolicy, now: Instant) -> Self {
        let window = Duration::from_millis(policy.busy_window_ms).as_nanos() as i128;
        let percent = i128::from(policy.busy_percent.clamp(1, 100));
        let deadline = Duration::from_millis(policy.call_timeout_ms).as_nanos() as i128;
        let capacity = (window * percent / 100).max(deadline);
        BusyBudget {
            level: capacity,
            capacity,
            percent,
            refilled: now,
        }
    }

    /// Charges a call that ran from `started` to `ended`; `false` once the bucket ran dry.
    pub fn spend(&mut self, started: Instant, ended: Instant) -> bool {
        let regained = ended.saturating_duration_since(self.refilled).as_nanos() as i128;
        self.level = (self.level + regained * self.percent / 100).min(self.capacity);
        self.refilled = ended;
        self.level -= ended.saturating_duration_since(started).as_nanos() as i128;
        self.level >= 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(percent: u32, window_ms: u64, timeout_ms: u64) -> LoadPolicy {
        LoadPolicy {
            busy_percent: percent,
            busy_window_ms: window_ms,
            call_timeout_ms: timeout_ms,
            ..LoadPolicy::default()
        }
    }

    #[test]
    fn back_to_back_long_calls_run_it_dry() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let mut budget = BusyBudget::new(&policy(50, 10_000, 5_000), start);
        assert!(budget.spend(start, start + ms(4_800)), "one long call fits");
        assert!(
            !budget.spend(start + ms(4_800), start + ms(9_600)),
            "a second one right after does not"
        );
    }

    #[test]
    fn calls_within_the_share_never_run_it_dry() {
        let start = Instant::now();
        let ms = Duration::from_millis;
        let mut budget = BusyBudget::new(&policy(50, 1_000, 100), start);
        let mut now = start;
        for _ in 0..1000 {
            assert!(budget.spend(now, now + ms(40)));
            now += ms(100);
        }
    }

    #[test]
    fn the_bucket_holds_at_least_one_whole_call() {
        let start = Instant::now();
        let mut budget = BusyBudget::new(&policy(1, 100, 60_000), start);
        assert!(budget.spend(start, start + Duration::from_secs(59)));
    }
}
