//! `accelhost bench --check --against OLD`: the regression guard against an earlier tree's
//! build, measured in the same minutes. A target with room to spare hides a slowdown that
//! stays within it (the launch path lost a quarter of its rate and still met its row), so
//! each row is also held to what the earlier build measured: both builds run the suite in
//! turns, [`ROUNDS`] times each, each run a process of its own. A row regresses when every
//! run of this build is worse than every run of the earlier one and its median is worse by
//! more than [`FLOOR`]. On a busy machine one slow run can spread a row's ratios wider than
//! a real loss, so the test is by rank, not by spread: with the runs in turns, noise alone
//! orders all five of one build below all five of the other once in 252 times, and the
//! floor keeps even that from failing the check unless the move is large.
//!
//! The earlier build is any `accelhost` binary whose `bench --markdown` prints the table
//! (every tree since the bench had rows): the table is read back, row by row, by its text.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use crate::measure::median;

/// How many rounds: each runs both builds once.
pub const ROUNDS: usize = 5;

/// The least move that counts as a regression, as a share of the earlier build's ratio: a
/// row's spread over three runs can be small by chance.
pub const FLOOR: f64 = 0.10;

/// One row of a build's table: its ratio and the side of its target the ratio must be on
/// (the direction that is better).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Judged {
    pub ratio: f64,
    /// Whether a larger ratio is better (a rate or a share).
    pub larger_is_better: bool,
}

/// The judged rows of a `bench --markdown` table, by the row's text (what a row measures
/// may carry a figure in parentheses, like a p99: that part is dropped from the key).
pub fn parse_table(markdown: &str) -> BTreeMap<String, Judged> {
    let mut rows = BTreeMap::new();
    for line in markdown.lines() {
        let cells: Vec<&str> = line
            .trim()
            .trim_matches('|')
            .split('|')
            .map(str::trim)
            .collect();
        // WHAT | ACCELHOST | NATIVE | BASELINE | RATIO | TARGET | MET
        if cells.len() != 7 || cells[0] == "WHAT" || cells[0].starts_with("---") {
            continue;
        }
        let Some(ratio) = cells[4]
            .strip_suffix('×')
            .and_then(|r| r.trim().parse::<f64>().ok())
        else {
            continue;
        };
        let larger_is_better = match cells[5].chars().next() {
            Some('≥') => true,
            Some('≤') => false,
            _ => continue,
        };
        rows.insert(
            row_key(cells[0]),
            Judged {
                ratio,
                larger_is_better,
            },
        );
    }
    rows
}

/// A row's text without what it carries in parentheses (a p99, a count), which changes from
/// run to run.
fn row_key(what: &str) -> String {
    match what.find(" (") {
        Some(at) if what.ends_with(')') => what[..at].to_string(),
        _ => what.to_string(),
    }
}

/// What the guard says of one row.
#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// As good as the earlier build, or better, or worse within the noise.
    Held,
    /// Worse than the earlier build by this share of its ratio, beyond the noise.
    Regressed(f64),
}

/// One row across the rounds: the earlier build's ratios, this build's, and the verdict.
#[derive(Debug)]
pub struct Compared {
    pub what: String,
    pub earlier: Vec<f64>,
    pub now: Vec<f64>,
    pub verdict: Verdict,
}

/// Judges a row: it regressed when every ratio of `now` is on the worse side of every
/// ratio of `earlier` and the median of `now` is worse than that of `earlier` by more than
/// [`FLOOR`] (as a share of the latter).
pub fn judge(mut earlier: Vec<f64>, mut now: Vec<f64>, larger_is_better: bool) -> Verdict {
    let (before, after) = (median(&mut earlier), median(&mut now));
    let worse = if larger_is_better {
        (before - after) / before.abs().max(f64::MIN_POSITIVE)
    } else {
        (after - before) / before.abs().max(f64::MIN_POSITIVE)
    };
    // `median` sorted both.
    let separated = if larger_is_better {
        now[now.len() - 1] < earlier[0]
    } else {
        now[0] > earlier[earlier.len() - 1]
    };
    if separated && worse > FLOOR {
        Verdict::Regressed(worse)
    } else {
        Verdict::Held
    }
}

/// Compares the tables of the rounds, row by row: only rows both builds judged in every round.
pub fn compare(
    earlier: &[BTreeMap<String, Judged>],
    now: &[BTreeMap<String, Judged>],
) -> Vec<Compared> {
    let Some(first) = now.first() else {
        return Vec::new();
    };
    let mut compared = Vec::new();
    for (what, judged) in first {
        let ratios = |tables: &[BTreeMap<String, Judged>]| -> Option<Vec<f64>> {
            tables
                .iter()
                .map(|t| t.get(what).map(|j| j.ratio))
                .collect()
        };
        let (Some(before), Some(after)) = (ratios(earlier), ratios(now)) else {
            continue;
        };
        if before.is_empty() || after.is_empty() {
            continue;
        }
        compared.push(Compared {
            what: what.clone(),
            verdict: judge(before.clone(), after.clone(), judged.larger_is_better),
            earlier: before,
            now: after,
        });
    }
    compared
}

/// Runs `binary bench --markdown` (with `--full` when `full`, and the native baseline plugin
/// `native` if one was found, the same for both builds) and reads its table.
pub fn run_table(
    binary: &Path,
    full: bool,
    native: Option<&Path>,
) -> anyhow::Result<BTreeMap<String, Judged>> {
    let mut command = Command::new(binary);
    command.args(["bench", "--markdown"]);
    if full {
        command.arg("--full");
    }
    if let Some(native) = native {
        command.env("ACCELHOST_NATIVE_PLUGIN", native);
    }
    let out = command
        .output()
        .map_err(|err| anyhow::anyhow!("running {} bench: {err}", binary.display()))?;
    anyhow::ensure!(
        out.status.success(),
        "{} bench failed ({}): {}",
        binary.display(),
        out.status,
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .last()
            .unwrap_or("")
    );
    let rows = parse_table(&String::from_utf8_lossy(&out.stdout));
    anyhow::ensure!(
        !rows.is_empty(),
        "{} bench --markdown printed no table this guard can read",
        binary.display()
    );
    Ok(rows)
}

/// The whole guard: [`ROUNDS`] rounds of both builds in turns (the earlier first in odd
/// rounds, this one first in even ones, so neither always runs on a machine the other warmed),
/// then the comparison. `now` is this build's executable.
pub fn rounds(
    earlier: &Path,
    now: &Path,
    full: bool,
    native: Option<&Path>,
) -> anyhow::Result<Vec<Compared>> {
    anyhow::ensure!(
        earlier.is_file(),
        "--against {}: no such executable (build the earlier tree with bench/baseline.sh)",
        earlier.display()
    );
    let (mut before, mut after) = (Vec::new(), Vec::new());
    for round in 0..ROUNDS {
        eprintln!(
            "round {} of {ROUNDS}: {} and this build, in turns",
            round + 1,
            earlier.display()
        );
        if round % 2 == 0 {
            before.push(run_table(earlier, full, native)?);
            after.push(run_table(now, full, native)?);
        } else {
            after.push(run_table(now, full, native)?);
            before.push(run_table(earlier, full, native)?);
        }
    }
    Ok(compare(&before, &after))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TABLE: &str = "\
accelhost bench (quick, 5 samples per figure, median)
| WHAT | ACCELHOST (median) | NATIVE PLUGIN | BASELINE (same run) | RATIO | TARGET | MET |
|---|---|---|---|---|---|---|
| tiny launches on one queue (pipelined) | 222000/s | - | - | 0.89× | ≥ 250,000/s | NOT MET |
| tiny launch → completion, p50 (p99 18.5 µs) | 4500 ns | - | - | 0.90× | ≤ 5 µs | met |
| raw wasmtime reset | 325 ns | - | no-op call 65.4 ns | 4.96× | none: what wasmtime charges | - |
| MMIO read through builtin:remote p50 | 206.5 µs | - | node client 83.6 µs | 2.47× | none: what the proxy adds | - |
18 of 29 targets met, in 140.0 s
";

    #[test]
    fn a_table_gives_its_judged_rows_by_text_without_what_changes_per_run() {
        let rows = parse_table(TABLE);
        assert_eq!(rows.len(), 2, "{rows:?}");
        assert_eq!(
            rows["tiny launches on one queue"],
            Judged {
                ratio: 0.89,
                larger_is_better: true
            }
        );
        assert_eq!(
            rows["tiny launch → completion, p50"],
            Judged {
                ratio: 0.90,
                larger_is_better: false
            }
        );
    }

    #[test]
    fn a_quarter_lost_regresses_and_noise_does_not() {
        // The launch rate: 302,000/s before, 222,000/s now, each steady.
        let before = vec![1.21, 1.22, 1.23];
        let lost = vec![0.88, 0.89, 0.90];
        assert!(matches!(
            judge(before.clone(), lost, true),
            Verdict::Regressed(w) if (w - 0.27).abs() < 0.01
        ));
        // As fast, or faster: held.
        assert_eq!(
            judge(before.clone(), vec![1.20, 1.24, 1.30], true),
            Verdict::Held
        );
        // 20 % down, but the runs of both builds mingle: noise.
        assert_eq!(
            judge(vec![0.8, 1.2, 1.6], vec![0.7, 0.96, 1.3], true),
            Verdict::Held
        );
        // A cost: 5 % more is under the floor, 30 % more is not.
        assert_eq!(judge(vec![1.0; 3], vec![1.05; 3], false), Verdict::Held);
        assert!(matches!(
            judge(vec![1.0; 3], vec![1.3; 3], false),
            Verdict::Regressed(_)
        ));
    }

    #[test]
    fn a_loss_with_one_slow_run_among_them_still_regresses() {
        // The launch rate of a build with the launch path's regression against the build
        // without it, on a busy machine: one slow run spread the ratios of this build by a
        // third, wider than the loss itself.
        let verdict = judge(vec![0.26, 0.22, 0.30], vec![0.20, 0.21, 0.14], true);
        assert!(matches!(verdict, Verdict::Regressed(w) if (w - 0.23).abs() < 0.01));
        // A p50 latency (a cost) with one outlier run of the later build.
        let verdict = judge(vec![0.77, 0.77, 0.76], vec![0.98, 0.99, 1.70], false);
        assert!(matches!(verdict, Verdict::Regressed(_)));
    }

    #[test]
    fn only_rows_both_builds_judged_in_every_round_are_compared() {
        let table = |pairs: &[(&str, f64)]| -> BTreeMap<String, Judged> {
            pairs
                .iter()
                .map(|(what, ratio)| {
                    (
                        what.to_string(),
                        Judged {
                            ratio: *ratio,
                            larger_is_better: true,
                        },
                    )
                })
                .collect()
        };
        let earlier = vec![table(&[("a", 1.0), ("b", 1.0)]); 3];
        let mut now = vec![table(&[("a", 0.5), ("b", 1.0), ("new row", 1.0)]); 3];
        now[1].remove("b");
        let compared = compare(&earlier, &now);
        assert_eq!(compared.len(), 1);
        assert_eq!(compared[0].what, "a");
        assert!(matches!(compared[0].verdict, Verdict::Regressed(_)));
    }
}
