//! A test harness for tests that find out only when they run whether they can (a toolchain
//! may be missing), which libtest cannot say: a trial passes, fails, or is reported
//! `ignored` with its reason, in libtest's own format, so `cargo test` shows what was skipped
//! and why instead of a pass that did nothing. Used by test targets with `harness = false`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

/// What a trial that did not fail found.
pub enum Outcome {
    /// It ran and its checks held.
    Passed,
    /// It could not run here; the reason says what is missing.
    Skipped(String),
}

/// One named test.
pub struct Trial {
    /// The name filters match, as libtest's are the function names.
    pub name: &'static str,
    /// The test; a panic is a failure.
    pub run: fn() -> Outcome,
}

/// The tests of `all` (named by `name`) that the command line selects, as libtest reads it:
/// name filters, `--exact` and `--skip`; libtest's other flags (`--nocapture`,
/// `--test-threads N`, ...) have no effect. `None` when the command line asked for something
/// else, done here: `--list` prints the selected names; `--ignored` runs none, since a test of
/// such a harness is ignored only once it finds, running, that it cannot run.
pub fn select<T>(all: &[T], name: impl Fn(&T) -> &str) -> Option<Vec<&T>> {
    let (mut filters, mut skips) = (Vec::new(), Vec::new());
    let (mut exact, mut list, mut only_ignored) = (false, false, false);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--exact" => exact = true,
            "--list" => list = true,
            "--ignored" => only_ignored = true,
            "--skip" => skips.extend(args.next()),
            "--test-threads" | "--format" | "--color" | "--logfile" => {
                args.next();
            }
            flag if flag.starts_with('-') => {}
            filter => filters.push(filter.to_string()),
        }
    }
    let selected: Vec<&T> = all
        .iter()
        .filter(|t| !skips.iter().any(|s| name(t).contains(s.as_str())))
        .filter(|t| {
            filters.is_empty()
                || filters.iter().any(|f| {
                    if exact {
                        name(t) == f
                    } else {
                        name(t).contains(f.as_str())
                    }
                })
        })
        .collect();
    if list {
        for test in &selected {
            println!("{}: test", name(test));
        }
        return None;
    }
    if only_ignored {
        println!(
            "\nrunning 0 tests\n\ntest result: ok. 0 passed; 0 failed; 0 ignored; 0 measured; {} filtered out\n",
            all.len()
        );
        return None;
    }
    Some(selected)
}

/// Whether a suite's trials may run side by side.
#[derive(Clone, Copy, PartialEq, Eq)]
#[allow(
    dead_code,
    reason = "each suite that includes this file names the one it needs"
)]
pub enum Overlap {
    /// One at a time: for trials that must not overlap (one that counts the processes it
    /// finds, or shares names and files with the others).
    OneAtATime,
    /// As many at once as libtest would run (`--test-threads N`, else `RUST_TEST_THREADS`,
    /// else the machine's cores): for trials that spend their time in one-core tools and keep
    /// their files, names and ports apart.
    AsLibtest,
}

/// Runs the trials the command line selects ([`select`]), side by side as `overlap` allows,
/// and reports as libtest does.
pub fn run(trials: &[Trial], overlap: Overlap) -> ExitCode {
    let threads = match overlap {
        Overlap::OneAtATime => 1,
        Overlap::AsLibtest => test_threads(),
    };
    run_lanes(trials, &[], threads)
}

/// Runs `busy` as [`run`] does with [`Overlap::AsLibtest`], and `waiting` on as many lanes
/// again beside them: trials that spend their time on a clock or a peer (a scrape interval,
/// a timeout), which would otherwise hold a lane a busy trial could use, and take little of
/// the cores from the busy ones. A busy lane with nothing left to do takes waiting trials
/// too; `--test-threads 1` runs all in one lane.
#[allow(dead_code, reason = "only the suites with waiting trials call it")]
pub fn run_beside_waiting(busy: &[Trial], waiting: &[Trial]) -> ExitCode {
    run_lanes(busy, waiting, test_threads())
}

fn run_lanes(busy: &[Trial], waiting: &[Trial], threads: usize) -> ExitCode {
    let all: Vec<(bool, &Trial)> = busy
        .iter()
        .map(|trial| (false, trial))
        .chain(waiting.iter().map(|trial| (true, trial)))
        .collect();
    let Some(selected) = select(&all, |(_, trial)| trial.name) else {
        return ExitCode::SUCCESS;
    };
    let (waiting, busy): (Vec<_>, Vec<_>) = selected.into_iter().partition(|(wait, _)| *wait);
    let busy: Vec<&Trial> = busy.into_iter().map(|&(_, trial)| trial).collect();
    let waiting: Vec<&Trial> = waiting.into_iter().map(|&(_, trial)| trial).collect();
    run_selected(all.len(), busy, waiting, threads)
}

/// How many trials [`Overlap::AsLibtest`] runs at once, decided as libtest decides it.
fn test_threads() -> usize {
    let args: Vec<String> = std::env::args().collect();
    let asked = args
        .iter()
        .position(|arg| arg == "--test-threads")
        .and_then(|at| args.get(at + 1).cloned())
        .or_else(|| {
            args.iter()
                .find_map(|arg| arg.strip_prefix("--test-threads=").map(str::to_string))
        })
        .or_else(|| std::env::var("RUST_TEST_THREADS").ok());
    asked
        .and_then(|n| n.parse().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// What the trials found so far, printed as each ends.
#[derive(Default)]
struct Tally {
    passed: usize,
    ignored: usize,
    failed: Vec<&'static str>,
}

impl Tally {
    fn record(&mut self, trial: &Trial) {
        let started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(trial.run));
        let took = started.elapsed().as_secs_f64();
        match outcome {
            Ok(Outcome::Passed) => {
                self.passed += 1;
                println!("test {} ... ok ({took:.1} s)", trial.name);
            }
            Ok(Outcome::Skipped(why)) => {
                self.ignored += 1;
                println!("test {} ... ignored, {why}", trial.name);
            }
            Err(_) => {
                self.failed.push(trial.name);
                println!("test {} ... FAILED", trial.name);
            }
        }
    }
}

/// Runs the trials `take` hands out until it has none, counting them in `tally`.
fn lane<'a>(tally: &Mutex<Tally>, take: impl Fn() -> Option<&'a Trial>) {
    while let Some(trial) = take() {
        // Each trial runs and prints its line outside the lock; only the counts take it.
        let mut alone = Tally::default();
        alone.record(trial);
        let mut all = tally.lock().unwrap_or_else(PoisonError::into_inner);
        all.passed += alone.passed;
        all.ignored += alone.ignored;
        all.failed.extend(alone.failed);
    }
}

fn run_selected(all: usize, busy: Vec<&Trial>, waiting: Vec<&Trial>, threads: usize) -> ExitCode {
    let selected = busy.len() + waiting.len();
    println!("\nrunning {selected} tests");
    let started = Instant::now();
    let tally = Mutex::new(Tally::default());
    let (next_busy, next_waiting) = (AtomicUsize::new(0), AtomicUsize::new(0));
    let take_busy = || busy.get(next_busy.fetch_add(1, Ordering::Relaxed)).copied();
    let take_waiting = || {
        waiting
            .get(next_waiting.fetch_add(1, Ordering::Relaxed))
            .copied()
    };
    let busy_lane = || lane(&tally, || take_busy().or_else(take_waiting));
    if threads <= 1 {
        busy_lane();
    } else {
        std::thread::scope(|scope| {
            for _ in 0..threads.min(busy.len()).max(1) {
                scope.spawn(busy_lane);
            }
            for _ in 0..threads.min(waiting.len()) {
                scope.spawn(|| lane(&tally, take_waiting));
            }
        });
    }
    let Tally {
        passed,
        ignored,
        failed,
    } = tally.into_inner().unwrap_or_else(PoisonError::into_inner);
    if !failed.is_empty() {
        println!("\nfailures:");
        for name in &failed {
            println!("    {name}");
        }
    }
    println!(
        "\ntest result: {}. {passed} passed; {} failed; {ignored} ignored; 0 measured; {} filtered out; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        failed.len(),
        all - selected,
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}
