//! A test harness for tests that find out only when they run whether they can (a toolchain
//! may be missing), which libtest cannot say: a trial passes, fails, or is reported
//! `ignored` with its reason, in libtest's own format, so `cargo test` shows what was skipped
//! and why instead of a pass that did nothing. Used by test targets with `harness = false`.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::ExitCode;
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

/// Runs the trials the command line selects ([`select`]), one at a time, and reports as
/// libtest does.
pub fn run(trials: &[Trial]) -> ExitCode {
    let Some(selected) = select(trials, |t| t.name) else {
        return ExitCode::SUCCESS;
    };
    println!("\nrunning {} tests", selected.len());
    let started = Instant::now();
    let (mut passed, mut ignored, mut failed) = (0, 0, Vec::new());
    for trial in &selected {
        let trial_started = Instant::now();
        let outcome = catch_unwind(AssertUnwindSafe(trial.run));
        let took = trial_started.elapsed().as_secs_f64();
        match outcome {
            Ok(Outcome::Passed) => {
                passed += 1;
                println!("test {} ... ok ({took:.1} s)", trial.name);
            }
            Ok(Outcome::Skipped(why)) => {
                ignored += 1;
                println!("test {} ... ignored, {why}", trial.name);
            }
            Err(_) => {
                failed.push(trial.name);
                println!("test {} ... FAILED", trial.name);
            }
        }
    }
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
        trials.len() - selected.len(),
        started.elapsed().as_secs_f64()
    );
    if failed.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(101)
    }
}
