//! `accelhost bench`: what the host-memory ledger costs the calls an application makes most —
//! open + close, reset, MMIO, and the launch path (tiny launches on one queue, which allocate
//! a command, an event and their bookkeeping each) — measured with it and without it in the
//! same run. The ledger is
//! the process's allocator and is read once at its first allocation (`ACCELHOST_LEDGER`), so
//! each side runs in a process of its own: this binary again, with `--ledger-side`, once with
//! the ledger and once with `ACCELHOST_LEDGER=off`, the two in turns, round after round.

use std::hint::black_box;
use std::path::Path;
use std::process::Command;

use accelhost::OpenMode;
use accelhost::ledger::LEDGER_ENV;
use accelhost::workloads::vadd;

use crate::figure::Figure;
use crate::measure::{BenchHost, Settings, median, ns, ns_per_call};

/// The calls measured, in the order a side prints them.
const CALLS: [&str; 5] = [
    "ledger: open + close, per call",
    "ledger: reset",
    "ledger: MMIO read64 (host only)",
    "ledger: MMIO write64 (host only)",
    "ledger: tiny launch on one queue (pipelined), per launch",
];

/// Launches per sample of the launch-path row (a quick run takes fewer).
const LAUNCHES: [u32; 2] = [20_000, 5_000];

/// The most the ledger may add to each call.
const BOUND: f64 = 1.05;

/// One side: the calls of [`CALLS`] on the bench host, in nanoseconds, printed on one line.
pub fn side(settings: &Settings, cache: &Path) -> anyhow::Result<()> {
    let bench = BenchHost::start(cache)?;
    let (host, token) = (&bench.host, &bench.nlb0);
    let open_close = ns_per_call(settings, || {
        host.open(token, OpenMode::Exclusive)
            .unwrap()
            .close()
            .unwrap();
    }) / 2.0;
    let handle = host.open(token, OpenMode::Exclusive)?;
    let reset = ns_per_call(settings, || handle.reset().unwrap());
    let mmio = handle.map_mmio(0)?;
    let read = ns_per_call(settings, || {
        black_box(mmio.read64(black_box(0x8)).unwrap());
    });
    let write = ns_per_call(settings, || mmio.write64(black_box(0x100), 5).unwrap());
    drop(mmio);
    handle.close()?;
    let launch = per_launch(settings, &bench)?;
    println!(
        "{} {open_close} {reset} {read} {write} {launch}",
        accelhost::ledger::is_installed()
    );
    Ok(())
}

/// Nanoseconds per launch of pipelined tiny launches on the bench host's XRT card, the
/// median of the samples.
fn per_launch(settings: &Settings, bench: &BenchHost) -> anyhow::Result<f64> {
    let xocl = bench.host.open(&bench.xocl, OpenMode::Exclusive)?;
    let kernel = crate::measure::vadd_kernel(&xocl);
    let launches = LAUNCHES[usize::from(settings.samples <= 5)];
    let mut samples = Vec::with_capacity(settings.workload_samples);
    for _ in 0..settings.workload_samples.max(1) {
        let report = vadd::tiny_launches(&xocl, &kernel, launches)?;
        anyhow::ensure!(report.verified, "the tiny launches did not verify");
        samples.push(report.elapsed.as_nanos() as f64 / f64::from(launches));
    }
    drop(kernel);
    xocl.close()?;
    Ok(median(&mut samples))
}

/// Runs one side in a process of its own and reads its figures.
fn run_side(settings: &Settings, cache: &Path, ledger: bool) -> anyhow::Result<[f64; CALLS.len()]> {
    let mut command = Command::new(std::env::current_exe()?);
    command.args(["bench", "--ledger-side"]).arg(cache);
    if settings.samples > 5 {
        command.arg("--full");
    }
    if ledger {
        command.env_remove(LEDGER_ENV);
    } else {
        command.env(LEDGER_ENV, "off");
    }
    let out = command.output()?;
    anyhow::ensure!(
        out.status.success(),
        "the {} side failed: {}",
        if ledger { "ledger" } else { "no-ledger" },
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let mut words = text.split_whitespace();
    let installed = words.next() == Some("true");
    anyhow::ensure!(
        installed == ledger,
        "the side meant to run {} the ledger ran {} it",
        if ledger { "with" } else { "without" },
        if installed { "with" } else { "without" }
    );
    let mut figures = [0.0; CALLS.len()];
    for figure in &mut figures {
        *figure = words
            .next()
            .and_then(|w| w.parse().ok())
            .ok_or_else(|| anyhow::anyhow!("a side printed {text:?}"))?;
    }
    Ok(figures)
}

/// The rows: each call's median over the rounds with the ledger, and the median of the rounds'
/// ratios to the same call without it.
pub fn figures(settings: &Settings, cache: &Path) -> anyhow::Result<Vec<Figure>> {
    let rounds = if settings.samples > 5 { 7 } else { 3 };
    let mut with = vec![Vec::new(); CALLS.len()];
    let mut ratios = vec![Vec::new(); CALLS.len()];
    let mut without = vec![Vec::new(); CALLS.len()];
    for round in 0..rounds {
        // In turns, so that neither side always runs on a machine the other warmed or cooled.
        let (on, off) = if round % 2 == 0 {
            let on = run_side(settings, cache, true)?;
            (on, run_side(settings, cache, false)?)
        } else {
            let off = run_side(settings, cache, false)?;
            (run_side(settings, cache, true)?, off)
        };
        for call in 0..CALLS.len() {
            with[call].push(on[call]);
            without[call].push(off[call]);
            ratios[call].push(on[call] / off[call]);
        }
    }
    Ok(CALLS
        .iter()
        .enumerate()
        .map(|(call, what)| Figure {
            what,
            measured: ns(median(&mut with[call])),
            baseline: format!("without the ledger {}", ns(median(&mut without[call]))),
            ratio: median(&mut ratios[call]),
            target: "≤ 1.05× without it",
            bound: Some(crate::figure::Target::AtMost(BOUND)),
        })
        .collect())
}
