//! `accelhost bench`: accelhost against its baselines, measured in the same run — a native
//! plugin (a Rust cdylib behind a function-pointer table), a direct call into the emulator,
//! `memcpy`, a raw wasmtime component call and a trivial `ioctl` — printed as ratios against
//! the targets of BENCHMARKS.md. `cargo bench -p accelhost-bench` measures the same code
//! with criterion.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use accelhost::OpenMode;
use accelhost::workloads::vadd;

use crate::measure::{
    self, BenchHost, DirectEmulator, Ioctl, NativeInstance, NativePlugin, RawComponent, Settings,
    median, median_of, ns, ns_per_call,
};
use accelhost::perf::PluginBench;

use crate::figure::Target;
use crate::report::{print_table, progress};

/// What `accelhost bench` takes.
#[derive(clap::Args)]
pub struct Args {
    /// The figures of BENCHMARKS.md: more and longer samples (about a minute) instead of the
    /// quick run (a few seconds).
    #[arg(long)]
    full: bool,
    /// Also measure how costs grow with devices, plugins, threads and transfer sizes.
    #[arg(long)]
    scaling: bool,
    /// The native baseline plugin (default: $ACCELHOST_NATIVE_PLUGIN, else
    /// libaccelhost_native_plugin.so next to this executable).
    #[arg(long, value_name = "FILE")]
    native_plugin: Option<PathBuf>,
    /// Also measure the first load of this component, the JavaScript NLB0 plugin of the SDK
    /// (`accelhost-sdk new js my-nlb0 --from nlb0`, then `accelhost-sdk build`), on an empty
    /// compile cache: on baseline code against the optimized compile (about 30 s more).
    #[arg(long, value_name = "FILE")]
    js_plugin: Option<PathBuf>,
    /// Print the table as Markdown.
    #[arg(long)]
    markdown: bool,
    /// The regression guard: run the suite three times and exit 1 if a row's median ratio
    /// misses its target by more than the spread of its three ratios (a miss within the
    /// spread is noise, reported but not failed). With --full, three full runs.
    #[arg(long)]
    check: bool,
    /// With --check: hold every row to what an earlier tree's build measures in the same
    /// minutes instead of to the targets. Both builds run the suite in turns, five times
    /// each, each run a process of its own; a row fails the check when every run of this
    /// build is worse than every run of the earlier one and its median is worse by more than
    /// 10 %. Build the earlier tree with `bench/baseline.sh COMMIT`.
    #[arg(long, value_name = "ACCELHOST", requires = "check")]
    against: Option<PathBuf>,
    /// One side of the ledger rows, in a process of its own, with the compile cache at this
    /// path (the suite runs it; not for people).
    #[arg(long, hide = true, value_name = "CACHE")]
    ledger_side: Option<PathBuf>,
    /// Instead of the suite: the same C program through accelhost's OpenCL platform and
    /// through every other OpenCL implementation registered with the ICD loader
    /// (/etc/OpenCL/vendors, or $OCL_ICD_VENDORS), in turns: context creation, 64 MiB
    /// transfers, launch-to-finish latency and queued launches, with accelhost's figures as
    /// ratios of each peer's; then three kernels from OpenCL C source, built from an empty
    /// kernel cache and again from a kept one, and run. Needs a C compiler and the OpenCL
    /// headers and ICD loader.
    #[arg(long, conflicts_with_all = ["check", "scaling", "js_plugin"])]
    peers: bool,
    /// With --peers: another implementation's ICD library to compare with, one that is not
    /// registered (e.g. Intel's CPU runtime from PyPI: <venv>/lib/libintelocl.so). Repeatable.
    #[arg(long, value_name = "LIBRARY", requires = "peers")]
    peer_icd: Vec<PathBuf>,
    /// With --peers: accelhost's ICD library (default: $ACCELHOST_OPENCL_ICD, else
    /// libaccelhost_opencl.so next to this executable).
    #[arg(long, value_name = "LIBRARY", requires = "peers")]
    opencl_icd: Option<PathBuf>,
}

/// How many runs `--check` compares.
const CHECK_RUNS: usize = 3;

/// One line of the table.
struct Row {
    what: String,
    measured: String,
    native: String,
    baseline: String,
    target: String,
    /// The ratio to the row's baseline (or to its absolute target), and how it is judged.
    judged: Option<(f64, Option<Target>)>,
}

impl Row {
    fn new(what: impl Into<String>, measured: String, target: impl Into<String>) -> Row {
        Row {
            what: what.into(),
            measured,
            native: "-".into(),
            baseline: "-".into(),
            target: target.into(),
            judged: None,
        }
    }

    fn native(mut self, native: Option<String>) -> Row {
        self.native = native.unwrap_or_else(|| "n/a".into());
        self
    }

    fn baseline(mut self, baseline: String) -> Row {
        self.baseline = baseline;
        self
    }

    /// A ratio shown without a target.
    fn ratio(mut self, ratio: f64) -> Row {
        self.judged = Some((ratio, None));
        self
    }

    /// The ratio and the target it is judged by.
    fn judge(mut self, ratio: f64, target: Target) -> Row {
        self.judged = Some((ratio, Some(target)));
        self
    }

    /// Whether the target is met; `None` for a row without one.
    fn met(&self) -> Option<bool> {
        let (ratio, target) = self.judged?;
        Some(target?.met(ratio))
    }

    fn cells(self) -> Vec<String> {
        let met = match self.met() {
            Some(true) => "met",
            Some(false) => "NOT MET",
            None => "-",
        };
        vec![
            self.what,
            self.measured,
            self.native,
            self.baseline,
            self.judged.map_or("-".into(), |(r, _)| format!("{r:.2}×")),
            self.target,
            met.into(),
        ]
    }
}

/// Runs the suite `args` asks for and prints its table; the exit code says whether
/// `--check` found a regression. Always on the bench config (`measure`), never the user's.
pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let settings = if args.full {
        Settings::full()
    } else {
        Settings::quick()
    };
    if let Some(cache) = &args.ledger_side {
        crate::ledger::side(&settings, cache)?;
        return Ok(ExitCode::SUCCESS);
    }
    if args.peers {
        crate::peers::run(&crate::peers::PeersArgs {
            opencl_icd: args.opencl_icd.as_deref(),
            peer_icds: &args.peer_icd,
            full: args.full,
            markdown: args.markdown,
        })?;
        return Ok(ExitCode::SUCCESS);
    }
    let started = Instant::now();
    let cache = measure::bench_cache_dir();
    let native = NativePlugin::find(args.native_plugin.as_deref());
    if let Err(why) = &native {
        eprintln!("note: {why}; the native columns stay empty");
    }
    let native = native.ok();
    if let (true, Some(earlier)) = (args.check, &args.against) {
        let _ = std::fs::remove_dir_all(&cache);
        let now = std::env::current_exe()?;
        let compared = crate::against::rounds(
            earlier,
            &now,
            args.full,
            native.as_ref().map(|n| n.path.as_path()),
        )?;
        let regressed = print_against(earlier, &compared, args.markdown);
        println!(
            "{regressed} rows worse than {} beyond the noise, in {:.1} s",
            earlier.display(),
            started.elapsed().as_secs_f64()
        );
        return Ok(if regressed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    if args.check {
        let verdict = check(
            &settings,
            &cache,
            native.as_ref(),
            args.js_plugin.as_deref(),
            args.markdown,
        );
        eprint!("\r\x1b[2K");
        let _ = std::fs::remove_dir_all(&cache);
        let regressed = verdict?;
        println!(
            "{regressed} targets missed beyond the spread, in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        return Ok(if regressed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        });
    }
    let rows = suite(
        &settings,
        &cache,
        native.as_ref(),
        args.js_plugin.as_deref(),
    );
    let scaling = if args.scaling && rows.is_ok() {
        Some(scaling_table(&settings, &cache, native.as_ref()))
    } else {
        None
    };
    eprint!("\r\x1b[2K");
    let _ = std::fs::remove_dir_all(&cache);
    let rows = rows?;
    let met = rows.iter().filter(|r| r.met() == Some(true)).count();
    let judged = rows.iter().filter(|r| r.met().is_some()).count();

    println!(
        "accelhost bench ({}, {} samples per figure, median); instances: {}",
        if args.full { "full" } else { "quick" },
        settings.samples,
        accelhost::instance_allocator()
    );
    if let Some(native) = &native {
        println!("native baseline plugin: {}", native.path.display());
    }
    let cells: Vec<Vec<String>> = rows.into_iter().map(Row::cells).collect();
    print_table(
        &[
            "WHAT",
            "ACCELHOST (median)",
            "NATIVE PLUGIN",
            "BASELINE (same run)",
            "RATIO",
            "TARGET",
            "MET",
        ],
        &cells,
        args.markdown,
    );
    if let Some(scaling) = scaling {
        println!();
        print_table(
            &["SCALING", "N", "ACCELHOST", "PER UNIT", "BASELINE", "RATIO"],
            &scaling?,
            args.markdown,
        );
    }
    println!(
        "{met} of {judged} targets met, in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// What `--check` says of a row.
#[derive(Debug, PartialEq)]
enum Verdict {
    Met,
    /// Missed by this share of the bound, no more than the runs' spread.
    Noise(f64),
    /// Missed by this share of the bound, more than the runs' spread.
    Regressed(f64),
}

/// The median of one row's `ratios` over the runs, their spread ((max - min) / median) and
/// the verdict against `target`.
fn judge_runs(ratios: &mut [f64], target: Target) -> (f64, f64, Verdict) {
    let median = median(ratios);
    let spread = (ratios[ratios.len() - 1] - ratios[0]) / median.abs().max(f64::MIN_POSITIVE);
    let miss = target.miss(median);
    let verdict = if target.met(median) {
        Verdict::Met
    } else if miss <= spread {
        Verdict::Noise(miss)
    } else {
        Verdict::Regressed(miss)
    };
    (median, spread, verdict)
}

/// `--check`: the suite [`CHECK_RUNS`] times, then each judged row's ratios, their median
/// and spread, and the verdict. Returns how many rows regressed: missed their target by more
/// than the spread of their own ratios.
fn check(
    settings: &Settings,
    cache: &Path,
    native: Option<&NativePlugin>,
    js_plugin: Option<&Path>,
    markdown: bool,
) -> anyhow::Result<usize> {
    let mut runs = Vec::with_capacity(CHECK_RUNS);
    for run in 1..=CHECK_RUNS {
        eprint!("\r\x1b[2Krun {run} of {CHECK_RUNS}:");
        eprintln!();
        runs.push(suite(settings, cache, native, js_plugin)?);
    }
    let first = &runs[0];
    if runs.iter().any(|rows| rows.len() != first.len()) {
        anyhow::bail!("the runs measured different rows");
    }
    let mut regressed = 0;
    let mut cells = Vec::new();
    for (j, row) in first.iter().enumerate() {
        let Some((_, Some(target))) = row.judged else {
            continue;
        };
        let mut ratios: Vec<f64> = runs
            .iter()
            .filter_map(|rows| rows[j].judged.map(|(ratio, _)| ratio))
            .collect();
        let shown: Vec<String> = ratios.iter().map(|r| format!("{r:.2}")).collect();
        let (median, spread, verdict) = judge_runs(&mut ratios, target);
        let verdict = match verdict {
            Verdict::Met => "met".to_string(),
            Verdict::Noise(miss) => format!("missed by {:.0} %, within the spread", miss * 100.0),
            Verdict::Regressed(miss) => {
                regressed += 1;
                format!(
                    "NOT MET: missed by {:.0} %, beyond the spread",
                    miss * 100.0
                )
            }
        };
        cells.push(vec![
            row.what.clone(),
            shown.join(" "),
            format!("{median:.2}×"),
            format!("{:.0} %", spread * 100.0),
            row.target.clone(),
            verdict,
        ]);
    }
    println!(
        "accelhost bench --check ({CHECK_RUNS} {} runs; a row regresses when its median ratio misses the target by more than the spread of its ratios)",
        if settings.samples > 5 {
            "full"
        } else {
            "quick"
        }
    );
    print_table(
        &["WHAT", "RATIOS", "MEDIAN", "SPREAD", "TARGET", "VERDICT"],
        &cells,
        markdown,
    );
    Ok(regressed)
}

/// Prints `--check --against`'s table; returns how many rows regressed.
fn print_against(earlier: &Path, compared: &[crate::against::Compared], markdown: bool) -> usize {
    use crate::against::Verdict;
    let shown = |ratios: &[f64]| {
        ratios
            .iter()
            .map(|r| format!("{r:.2}"))
            .collect::<Vec<_>>()
            .join(" ")
    };
    let mut regressed = 0;
    let cells: Vec<Vec<String>> = compared
        .iter()
        .map(|row| {
            let verdict = match row.verdict {
                Verdict::Held => "held".to_string(),
                Verdict::Regressed(worse) => {
                    regressed += 1;
                    format!("REGRESSED: {:.0} % worse, beyond the noise", worse * 100.0)
                }
            };
            vec![
                row.what.clone(),
                shown(&row.earlier),
                shown(&row.now),
                verdict,
            ]
        })
        .collect();
    println!(
        "accelhost bench --check --against {} ({} rounds in turns; a row regresses when every run of this build is worse than every run of the earlier one and its median by more than {:.0} %)",
        earlier.display(),
        crate::against::ROUNDS,
        crate::against::FLOOR * 100.0
    );
    print_table(
        &["WHAT", "EARLIER RATIOS", "THIS BUILD'S", "VERDICT"],
        &cells,
        markdown,
    );
    regressed
}

/// What the suite measures every row against: a no-op component call, the emulator called
/// directly, an ioctl.
struct Floor {
    raw_call: f64,
    direct_read: f64,
    direct_write: f64,
    ioctl: f64,
}

impl Floor {
    fn measure(settings: &Settings) -> anyhow::Result<Floor> {
        let mut raw =
            RawComponent::new().map_err(|e| anyhow::anyhow!("the raw component: {e:#}"))?;
        let raw_call = ns_per_call(settings, || {
            black_box(raw.call(black_box(7)));
        });
        let direct = DirectEmulator::open();
        let direct_read = ns_per_call(settings, || {
            black_box(direct.window.read64(black_box(0x8)).unwrap());
        });
        let direct_write = ns_per_call(settings, || {
            direct.window.write64(black_box(0x100), 5).unwrap();
        });
        let ioctl = Ioctl::on_a_pipe();
        let ioctl = ns_per_call(settings, || {
            black_box(ioctl.call());
        });
        Ok(Floor {
            raw_call,
            direct_read,
            direct_write,
            ioctl,
        })
    }
}

/// A row of a figure measured by another module.
fn row_of(figure: crate::figure::Figure) -> Row {
    let row = Row::new(figure.what, figure.measured, figure.target).baseline(figure.baseline);
    match figure.bound {
        Some(bound) => row.judge(figure.ratio, bound),
        None => row.ratio(figure.ratio),
    }
}

fn suite(
    settings: &Settings,
    cache: &Path,
    native: Option<&NativePlugin>,
    js_plugin: Option<&Path>,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    progress("the floor (raw component call, emulator, ioctl)");
    let floor = Floor::measure(settings)?;
    let native_one = native
        .map(|n| n.init(&measure::native_config(0, 1)))
        .transpose()
        .map_err(anyhow::Error::msg)?;
    progress("host start and queries");
    let bench = BenchHost::start(cache)?;
    let plugin = measure::dfl_plugin_bench(cache)?;
    rows.extend(control_rows(
        settings,
        &bench,
        &plugin,
        native_one.as_ref(),
        &floor,
    )?);
    progress("the host-memory ledger (open + close, reset, MMIO; with it and without it)");
    rows.extend(
        crate::ledger::figures(settings, cache)?
            .into_iter()
            .map(row_of),
    );
    let handle = bench.host.open(&bench.nlb0, OpenMode::Exclusive)?;
    rows.extend(mmio_rows(settings, &handle, native_one.as_ref(), &floor)?);
    rows.push(nlb0_row(settings, &handle));
    handle.close()?;
    rows.extend(xocl_rows(settings, &bench)?);
    rows.extend(start_rows(settings, &plugin, native));
    drop(plugin);
    drop(bench);
    rows.extend(fleet_rows(settings, cache, native, js_plugin)?);
    Ok(rows)
}

/// Properties, open + close and reset, each beside the same exports called raw.
fn control_rows(
    settings: &Settings,
    bench: &BenchHost,
    plugin: &PluginBench,
    native_one: Option<&NativeInstance<'_>>,
    floor: &Floor,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    let (host, token) = (&bench.host, &bench.nlb0);
    let properties = ns_per_call(settings, || {
        let p = black_box(token).properties();
        black_box((p.guid, p.vendor_id, p.device_id));
    });
    let native_properties = native_one.map(|n| {
        ns_per_call(settings, || {
            black_box(n.properties(black_box(0)));
        })
    });
    rows.push(
        Row::new(
            "properties of an enumerated device (no wasm)",
            ns(properties),
            "≤ 50 ns",
        )
        .native(native_properties.map(ns))
        .baseline(format!("ioctl {}", ns(floor.ioctl)))
        .judge(properties / 50.0, Target::AtMost(1.0)),
    );

    progress("open + close, reset");
    let open_close = ns_per_call(settings, || {
        host.open(token, OpenMode::Exclusive)
            .unwrap()
            .close()
            .unwrap();
    }) / 2.0;
    let native_open_close = native_one.map(|n| {
        ns_per_call(settings, || {
            let h = n.open(0);
            n.close(h);
        }) / 2.0
    });
    // The same exports called straight through wasmtime's bindings, on an instance of
    // their own: what the manager adds on top of wasmtime.
    let mut raw_plugin = plugin.raw()?;
    let raw_reset = ns_per_call(settings, || raw_plugin.reset());
    raw_plugin.close_first();
    let raw_open_close = ns_per_call(settings, || {
        let h = raw_plugin.open();
        raw_plugin.close(h);
    }) / 2.0;
    drop(raw_plugin);
    // The target is the manager's part: the call end to end against the same export called
    // raw through wasmtime. What wasmtime itself charges for the export, against a no-op
    // component call, is shown beside it without a target.
    rows.push(
        Row::new(
            "open + close, per call (plugin decides)",
            ns(open_close),
            "≤ 2× the same exports called raw",
        )
        .native(native_open_close.map(ns))
        .baseline(format!("raw wasmtime open/close {}", ns(raw_open_close)))
        .judge(open_close / raw_open_close, Target::AtMost(2.0)),
    );
    rows.push(
        Row::new(
            "raw wasmtime open + close, per call",
            ns(raw_open_close),
            "none: what wasmtime charges",
        )
        .baseline(format!("no-op call {}", ns(floor.raw_call)))
        .ratio(raw_open_close / floor.raw_call),
    );
    let handle = host.open(token, OpenMode::Exclusive)?;
    let reset = ns_per_call(settings, || handle.reset().unwrap());
    handle.close()?;
    let native_reset = native_one.map(|n| {
        let h = n.open(0);
        let v = ns_per_call(settings, || n.reset(h));
        n.close(h);
        v
    });
    rows.push(
        Row::new(
            "reset (plugin decides)",
            ns(reset),
            "≤ 2× the same export called raw",
        )
        .native(native_reset.map(ns))
        .baseline(format!("raw wasmtime reset {}", ns(raw_reset)))
        .judge(reset / raw_reset, Target::AtMost(2.0)),
    );
    rows.push(
        Row::new(
            "raw wasmtime reset",
            ns(raw_reset),
            "none: what wasmtime charges",
        )
        .baseline(format!("no-op call {}", ns(floor.raw_call)))
        .ratio(raw_reset / floor.raw_call),
    );

    Ok(rows)
}

/// MMIO reads and writes of a mapped region, against the emulator called directly.
fn mmio_rows(
    settings: &Settings,
    handle: &accelhost::Handle,
    native_one: Option<&NativeInstance<'_>>,
    floor: &Floor,
) -> anyhow::Result<Vec<Row>> {
    progress("MMIO");
    let mut rows = Vec::new();
    let mmio = handle.map_mmio(0)?;
    let read = ns_per_call(settings, || {
        black_box(mmio.read64(black_box(0x8)).unwrap());
    });
    let write = ns_per_call(settings, || mmio.write64(black_box(0x100), 5).unwrap());
    let (native_read, native_write) = match native_one {
        Some(n) => {
            let h = n.open(0);
            let region = n.map_mmio(h);
            let r = ns_per_call(settings, || {
                black_box(region.read64(black_box(0x8)));
            });
            let w = ns_per_call(settings, || region.write64(black_box(0x100), 5));
            drop(region);
            n.close(h);
            (Some(r), Some(w))
        }
        None => (None, None),
    };
    for (what, value, native, floor) in [
        (
            "MMIO read64 (mapped region)",
            read,
            native_read,
            floor.direct_read,
        ),
        (
            "MMIO write64 (mapped region)",
            write,
            native_write,
            floor.direct_write,
        ),
    ] {
        rows.push(
            Row::new(what, ns(value), "≤ 1.5× direct emulator call")
                .native(native.map(ns))
                .baseline(format!("emulator {}", ns(floor)))
                .judge(value / floor, Target::AtMost(1.5)),
        );
    }
    drop(mmio);

    Ok(rows)
}

/// NLB0's 64 MiB loopback against memcpy.
fn nlb0_row(settings: &Settings, handle: &accelhost::Handle) -> Row {
    progress("NLB0 loopback 64 MiB");
    let bytes = 64u64 << 20;
    let memcpy = measure::Memcpy::new(bytes);
    memcpy.copy();
    // Three times the rounds of the other workloads: a round is ~50 ms, and the ratio sits
    // within a few points of its target while single copies swing by ±5 %.
    let nlb = measure::paired(
        3 * settings.workload_samples,
        || memcpy.gbps(),
        || measure::nlb0_gbps(handle, bytes),
        |nlb, memcpy| nlb / memcpy,
    );
    drop(memcpy);
    Row::new(
        "NLB0 loopback, 64 MiB",
        format!("{:.2} GB/s", nlb.measured),
        "≥ 0.95× memcpy",
    )
    .baseline(format!("memcpy {:.2} GB/s", nlb.baseline))
    .judge(nlb.ratio, Target::AtLeast(0.95))
}

/// vadd of 16 Mi elements against a native loop, and tiny launches: rate and latency.
fn xocl_rows(settings: &Settings, bench: &BenchHost) -> anyhow::Result<Vec<Row>> {
    progress("vadd 16 Mi elements");
    let mut rows = Vec::new();
    let host = &bench.host;
    let xocl = host.open(&bench.xocl, OpenMode::Exclusive)?;
    let kernel = measure::vadd_kernel(&xocl);
    let elements = 16u32 << 20;
    let _warm = vadd::run(&xocl, &kernel, elements)?;
    let mut native_vadd = measure::NativeVadd::new(elements as usize);
    native_vadd.run();
    let vadd = measure::paired(
        settings.workload_samples,
        || native_vadd.run(),
        || {
            let report = vadd::run(&xocl, &kernel, elements).expect("vadd");
            assert!(report.verified(), "vadd did not verify");
            report.elapsed.as_secs_f64()
        },
        |vadd_s, native_s| native_s / vadd_s,
    );
    drop(native_vadd);
    rows.push(
        Row::new(
            "vadd 16 Mi elements, copies included",
            format!("{:.1} ms", vadd.measured * 1e3),
            "≥ 0.95× native loop",
        )
        .baseline(format!("native loop {:.1} ms", vadd.baseline * 1e3))
        .judge(vadd.ratio, Target::AtLeast(0.95)),
    );

    progress("tiny launches");
    let launches: u32 = if settings.samples > 5 { 20_000 } else { 5_000 };
    let rate = median_of(settings.workload_samples, || {
        vadd::tiny_launches(&xocl, &kernel, launches)
            .expect("tiny launches")
            .per_second()
    });
    let held_back = median_of(settings.workload_samples, || {
        let report = vadd::tiny_launches_held_back(&xocl, &kernel, launches)
            .expect("tiny launches held back");
        assert!(report.verified, "the launches held back did not verify");
        report.per_second()
    });
    let mut latencies =
        measure::tiny_launch_latencies(&xocl, &kernel, launches as usize).expect("latencies");
    let p50 = median(&mut latencies); // sorts `latencies`, for the p99 below
    let p99 = latencies[(latencies.len() * 99 / 100).min(latencies.len() - 1)];
    rows.push(
        Row::new(
            "tiny launches on one queue (pipelined)",
            format!("{:.0}/s", rate),
            "≥ 300,000/s",
        )
        .judge(rate / 300_000.0, Target::AtLeast(1.0)),
    );
    rows.push(
        Row::new(
            "tiny launches held back, handed on in batches",
            format!("{:.0}/s", held_back),
            "≥ 1.25× pipelined",
        )
        .baseline(format!("pipelined {:.0}/s", rate))
        .judge(held_back / rate, Target::AtLeast(1.25)),
    );
    rows.push(
        Row::new(
            format!("tiny launch → completion, p50 (p99 {})", ns(p99)),
            ns(p50),
            "≤ 3.5 µs",
        )
        .judge(p50 / 3500.0, Target::AtMost(1.0)),
    );
    drop(kernel);
    xocl.close()?;

    Ok(rows)
}

/// A plugin's start from the on-disk cache, its instantiation and 1,000 live instances.
fn start_rows(
    settings: &Settings,
    plugin: &PluginBench,
    native: Option<&NativePlugin>,
) -> Vec<Row> {
    progress("plugin start from the on-disk cache");
    let mut rows = Vec::new();
    let start_ns = median_of(settings.samples, || {
        measure::time_start_from_disk(plugin).as_nanos() as f64
    });
    let native_start = native.map(|n| {
        let mut copies = 0;
        median_of(settings.samples, || {
            copies += 1;
            measure::native_start_ns(&n.path, copies)
        })
    });
    let mut row = Row::new(
        "plugin start from the on-disk cache (load + instantiate + configure)",
        ns(start_ns),
        "≤ 3× dlopen + init",
    )
    .native(native_start.map(ns));
    if let Some(native_start) = native_start {
        row = row
            .baseline(format!("dlopen + init {}", ns(native_start)))
            .judge(start_ns / native_start, Target::AtMost(3.0));
    }
    rows.push(row);

    progress("instantiation");
    let instantiate = median_of(settings.samples, || {
        let n = 200;
        let total: Duration = (0..n).map(|_| measure::time_instantiate(plugin)).sum();
        total.as_nanos() as f64 / f64::from(n)
    });
    rows.push(
        Row::new(
            "instantiation of a loaded plugin",
            ns(instantiate),
            "≤ 12 µs",
        )
        .baseline(format!("allocator: {}", short_allocator()))
        .judge(instantiate / 12_000.0, Target::AtMost(1.0)),
    );

    progress("1,000 live plugin instances");
    let mib = measure::resident_of_started(plugin, 1000) as f64 / f64::from(1 << 20);
    rows.push(
        Row::new(
            "1,000 live plugin instances (started), resident",
            format!("{mib:.1} MiB"),
            "≤ 256 MiB",
        )
        .baseline(format!("{:.1} KiB per instance", mib * 1024.0 / 1000.0))
        .judge(mib / 256.0, Target::AtMost(1.0)),
    );
    rows
}

/// Enumerating 10,000 devices, the node's metrics and the node service.
fn fleet_rows(
    settings: &Settings,
    cache: &Path,
    native: Option<&NativePlugin>,
    js_plugin: Option<&Path>,
) -> anyhow::Result<Vec<Row>> {
    let mut rows = Vec::new();
    progress("enumerate 10,000 devices across 10 plugins");
    let (enumerate_ns, native_enumerate) = enumerate_devices(settings, cache, native, 10, 1000)?;
    let row = Row::new(
        "enumerate 10,000 emulated devices across 10 plugins (inventory, 0.3.0)",
        format!("{:.2} ms", enumerate_ns / 1e6),
        "≤ 100× native plugin",
    )
    .native(native_enumerate.map(|v| format!("{:.2} ms", v / 1e6)));
    rows.push(match native_enumerate {
        Some(native) => row
            .baseline(format!("native {:.2} ms", native / 1e6))
            .judge(enumerate_ns / native, Target::AtMost(100.0)),
        None => row,
    });

    progress("the node's metrics (a scrape of 10,000 devices, per-call counting on and off)");
    rows.push(row_of(crate::metrics::scrape(settings, cache)?));
    rows.extend(
        crate::metrics::counting(settings, cache)?
            .into_iter()
            .map(row_of),
    );
    progress("the node service (remote MMIO, 64 MiB round trips, the pod path, serving processes)");
    rows.extend(
        crate::remote::figures(settings, cache)?
            .into_iter()
            .map(row_of),
    );
    if let Some(js_plugin) = js_plugin {
        progress("the first load of the JavaScript NLB0 plugin (baseline, then optimized)");
        rows.push(row_of(crate::first_load::figure(js_plugin, cache)?));
    }
    Ok(rows)
}

/// `pooling` or `on-demand`, without the details.
fn short_allocator() -> String {
    let allocator = accelhost::instance_allocator();
    allocator
        .split_once(" (")
        .map_or(allocator.clone(), |(a, _)| a.to_string())
}

/// Enumerating every device of `plugins` plugins with `ports` ports each: accelhost, and the
/// native plugin (one instance per plugin), in ns per full enumeration.
fn enumerate_devices(
    settings: &Settings,
    cache: &Path,
    native: Option<&NativePlugin>,
    plugins: usize,
    ports: usize,
) -> anyhow::Result<(f64, Option<f64>)> {
    let host = measure::enumeration_host(cache, plugins, ports)?;
    let samples = Settings {
        sample_time: settings.sample_time.max(Duration::from_millis(50)),
        ..*settings
    };
    let accel = ns_per_call(&samples, || {
        black_box(host.enumerate(&[]));
    });
    drop(host);
    let native = match native {
        Some(n) => {
            let instances = n.init_plugins(plugins, ports).map_err(anyhow::Error::msg)?;
            Some(ns_per_call(&samples, || {
                for instance in &instances {
                    black_box(instance.enumerate_with_properties());
                }
            }))
        }
        None => None,
    };
    Ok((accel, native))
}

/// Cost per operation as devices, plugins, threads and transfer sizes grow.
fn scaling_table(
    settings: &Settings,
    cache: &Path,
    native: Option<&NativePlugin>,
) -> anyhow::Result<Vec<Vec<String>>> {
    let mut rows = Vec::new();
    let bench = BenchHost::start(cache)?;
    let handle = bench.host.open(&bench.nlb0, OpenMode::Exclusive)?;
    let mmio = handle.map_mmio(0)?;
    let sizes: &[u64] = if settings.samples > 5 {
        &[4 << 10, 64 << 10, 1 << 20, 16 << 20, 256 << 20]
    } else {
        &[4 << 10, 64 << 10, 1 << 20, 16 << 20]
    };
    for &bytes in sizes {
        progress(&format!("scaling: NLB0 {bytes} bytes"));
        let samples = if bytes >= 64 << 20 {
            3
        } else {
            settings.samples
        };
        let nlb = median_of(samples, || measure::nlb0_gbps(&handle, bytes));
        let memcpy = measure::memcpy_gbps(
            &Settings {
                samples,
                ..*settings
            },
            bytes,
        );
        rows.push(vec![
            "NLB0 loopback, transfer size".into(),
            accelhost::workloads::size(bytes),
            format!("{nlb:.2} GB/s"),
            ns(bytes as f64 / nlb / (bytes as f64 / 4096.0)) + " per 4 KiB",
            format!("memcpy {memcpy:.2} GB/s"),
            format!("{:.2}×", nlb / memcpy),
        ]);
    }
    let direct = DirectEmulator::open();
    for threads in [1usize, 2, 4, 8] {
        progress(&format!("scaling: {threads} threads"));
        // Every thread starts at a barrier and runs for the same window; the figure is wall
        // time per operation of all threads together (window / operations), so it falls as
        // threads are added while they scale, and stays flat once they serialize (on a lock,
        // or on this machine's 2 cores).
        let window = settings.sample_time.max(Duration::from_millis(50));
        let per_thread = |f: &(dyn Fn() + Sync)| -> f64 {
            median_of(settings.samples.min(5), || {
                let go = std::sync::Barrier::new(threads + 1);
                let total = std::sync::atomic::AtomicU64::new(0);
                std::thread::scope(|s| {
                    for _ in 0..threads {
                        s.spawn(|| {
                            go.wait();
                            let end = Instant::now() + window;
                            let mut ops = 0u64;
                            while Instant::now() < end {
                                for _ in 0..64 {
                                    f();
                                }
                                ops += 64;
                            }
                            total.fetch_add(ops, std::sync::atomic::Ordering::Relaxed);
                        });
                    }
                    go.wait();
                });
                window.as_nanos() as f64
                    / total.load(std::sync::atomic::Ordering::Relaxed).max(1) as f64
            })
        };
        let read = per_thread(&|| {
            black_box(mmio.read64(0x8).unwrap());
        });
        let floor = per_thread(&|| {
            black_box(direct.window.read64(0x8).unwrap());
        });
        rows.push(vec![
            "MMIO read64, threads on one region".into(),
            threads.to_string(),
            format!("{} per op, all threads", ns(read)),
            format!("{:.1} M ops/s", 1e3 / read),
            format!("emulator {}", ns(floor)),
            format!("{:.2}×", read / floor),
        ]);
        let props = per_thread(&|| {
            black_box(bench.nlb0.properties().guid);
        });
        rows.push(vec![
            "properties, threads".into(),
            threads.to_string(),
            format!("{} per op, all threads", ns(props)),
            format!("{:.1} M ops/s", 1e3 / props),
            "-".into(),
            "-".into(),
        ]);
        let reset = per_thread(&|| handle.reset().unwrap());
        rows.push(vec![
            "reset, threads on one plugin".into(),
            threads.to_string(),
            format!("{} per op, all threads", ns(reset)),
            format!("{:.0} k calls/s", 1e6 / reset),
            "-".into(),
            "-".into(),
        ]);
    }
    drop(mmio);
    handle.close()?;
    drop(bench);
    // (what, N, unit, plugins, ports): devices on one plugin, then plugins of 100 devices.
    let one_plugin =
        [1usize, 10, 100, 1000].map(|n| ("enumerate, devices on 1 plugin", n, "device", 1, n));
    let hundreds =
        [1usize, 2, 5, 10].map(|n| ("enumerate, plugins × 100 devices", n, "plugin", n, 100));
    for (what, n, unit, plugins, ports) in one_plugin.into_iter().chain(hundreds) {
        progress(&format!("scaling: enumerate, {n} {unit}s"));
        let (accel, nat) = enumerate_devices(settings, cache, native, plugins, ports)?;
        rows.push(vec![
            what.into(),
            n.to_string(),
            ns(accel),
            format!("{} per {unit}", ns(accel / n as f64)),
            nat.map_or("-".into(), |v| format!("native {}", ns(v))),
            nat.map_or("-".into(), |v| format!("{:.1}×", accel / v)),
        ]);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_within_the_runs_spread_is_noise_and_beyond_it_a_regression() {
        // At most 2.5x: a median of 2.6 over ratios spread by 20 % is noise.
        let (median, spread, verdict) = judge_runs(&mut [2.4, 2.6, 2.9], Target::AtMost(2.5));
        assert_eq!(median, 2.6);
        assert!((spread - 0.5 / 2.6).abs() < 1e-9);
        assert!(matches!(verdict, Verdict::Noise(m) if (m - 0.04).abs() < 1e-9));
        // The same miss with tight runs, and a halved share: regressions.
        let (_, _, verdict) = judge_runs(&mut [2.6, 2.6, 2.61], Target::AtMost(2.5));
        assert!(matches!(verdict, Verdict::Regressed(_)));
        let (_, _, verdict) = judge_runs(&mut [0.47, 0.48, 0.5], Target::AtLeast(0.95));
        assert!(matches!(verdict, Verdict::Regressed(m) if m > 0.4));
        let (_, _, verdict) = judge_runs(&mut [0.96, 1.2, 0.97], Target::AtLeast(0.95));
        assert_eq!(verdict, Verdict::Met);
    }

    #[test]
    fn targets_say_which_side_passes() {
        assert!(Target::AtMost(1.5).met(1.5));
        assert!(!Target::AtMost(1.5).met(1.6));
        assert!(Target::AtLeast(0.95).met(0.95));
        assert!(!Target::AtLeast(0.95).met(0.9));
        assert_eq!(Target::AtLeast(0.95).miss(1.2), 0.0);
    }
}
