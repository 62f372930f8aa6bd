//! `accelhost demo`: the canonical workload on every device, verified byte for byte.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use accelhost::config::{Config, DeviceFamily, ModuleSource, OnFault, PluginEntry};
use accelhost::text::inert;
use accelhost::workloads::{capi, nlb0, vadd};
use accelhost::{ErrorCode, Filter, Host, OpenMode, PluginStatus, Token};
use anyhow::bail;

use super::table;

#[derive(clap::Args)]
pub struct Args {
    /// Copy sizes for the NLB0 loopback, comma-separated (KiB, MiB and GiB suffixes; multiples
    /// of 64 bytes).
    #[arg(long, value_delimiter = ',', default_value = "1MiB,64MiB", value_parser = parse_size)]
    sizes: Vec<u64>,
    /// Vector lengths for vadd on XRT cards, comma-separated (Ki and Mi suffixes).
    #[arg(long, value_delimiter = ',', default_value = "1Ki,16Mi", value_parser = parse_count)]
    elements: Vec<u32>,
    /// How many tiny vadd launches to time (0 skips them).
    #[arg(long, default_value_t = 2000)]
    launches: u32,
    /// Also load the chaos plugin and, while the workloads run, make it crash (a trap) and
    /// hang (an infinite loop, cancelled from another thread): its rows show each fault
    /// contained and the plugin restarted, next to the other devices' verified results.
    #[arg(long)]
    fault: bool,
}

/// `16Mi` → 16777216.
fn parse_count(text: &str) -> Result<u32, String> {
    let text = text.trim();
    let (digits, scale) = if let Some(d) = text.strip_suffix("Mi") {
        (d, 1u64 << 20)
    } else if let Some(d) = text.strip_suffix("Ki") {
        (d, 1 << 10)
    } else {
        (text, 1)
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a count such as 1Ki or 16Mi"))?;
    match n.checked_mul(scale) {
        Some(n @ 1..=0x4000_0000) => Ok(n as u32),
        _ => Err(format!("{text} is out of range: 1 to 1Gi elements")),
    }
}

/// `64MiB` → 67108864.
fn parse_size(text: &str) -> Result<u64, String> {
    let text = text.trim();
    let (digits, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let scale: u64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1,
        "kib" | "k" => 1 << 10,
        "mib" | "m" => 1 << 20,
        "gib" | "g" => 1 << 30,
        other => return Err(format!("unknown unit '{other}': use KiB, MiB or GiB")),
    };
    let value: u64 = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a size such as 1MiB"))?;
    let bytes = value.checked_mul(scale).ok_or("size too large")?;
    if bytes == 0 || bytes % 64 != 0 {
        return Err(format!("{text} is not a positive multiple of 64 bytes"));
    }
    Ok(bytes)
}

/// One row of the table.
struct Row {
    device: String,
    plugin: String,
    workload: String,
    bytes: String,
    rate: String,
    result: String,
    ok: bool,
}

impl Row {
    fn new(token: &Token, workload: impl Into<String>, bytes: impl Into<String>) -> Self {
        Row {
            device: token.id(),
            plugin: token.plugin().to_string(),
            workload: workload.into(),
            bytes: bytes.into(),
            rate: "-".into(),
            result: String::new(),
            ok: false,
        }
    }

    fn failed(mut self, err: impl std::fmt::Display) -> Self {
        self.result = format!("FAILED: {err}");
        self.ok = false;
        self
    }
}

/// The hello_fpga loopback on an NLB0 port, one row per size.
fn run_nlb0(host: &Host, token: &Token, sizes: &[u64], rows: &mut Vec<Row>) {
    for &bytes in sizes {
        eprintln!(
            "running the hello_fpga loopback of {} on {} ...",
            table::size(bytes),
            inert(&token.id())
        );
        let row = Row::new(token, "nlb0 loopback (hello_fpga)", table::size(bytes));
        let outcome = host.open(token, OpenMode::Exclusive).and_then(|handle| {
            let report = nlb0::loopback(&handle, bytes);
            handle.close()?;
            report
        });
        rows.push(match outcome {
            Ok(report) if report.verified() => Row {
                rate: format!("{:.2}", report.gigabytes_per_second()),
                result: format!("verified ({} run(s))", report.runs),
                ok: true,
                ..row
            },
            Ok(report) => Row {
                rate: format!("{:.2}", report.gigabytes_per_second()),
                ..row.failed(format!(
                    "{} byte(s) differ, first at {:#x}",
                    report.mismatched_bytes,
                    report.first_mismatch.unwrap_or_default()
                ))
            },
            Err(err) => row.failed(err),
        });
    }
}

/// vadd on an XRT card: each size, then the rate of tiny launches.
fn run_vadd(host: &Host, token: &Token, elements: &[u32], launches: u32, rows: &mut Vec<Row>) {
    let handle = match host.open(token, OpenMode::Exclusive) {
        Ok(handle) => handle,
        Err(err) => {
            rows.push(Row::new(token, "vadd", "-").failed(err));
            return;
        }
    };
    eprintln!(
        "loading the vadd xclbin (4 compute units) on {} ...",
        inert(&token.id())
    );
    let kernel = match vadd::load(&handle, 4) {
        Ok(kernel) => kernel,
        Err(err) => {
            rows.push(Row::new(token, "vadd", "-").failed(err));
            return;
        }
    };
    for &n in elements {
        eprintln!(
            "running vadd on {} elements on {} ...",
            count(n),
            inert(&token.id())
        );
        let row = Row::new(
            token,
            format!("vadd {} elements", count(n)),
            table::size(u64::from(n) * 4),
        );
        rows.push(match vadd::run(&handle, &kernel, n) {
            Ok(report) if report.verified() => Row {
                rate: format!("{:.2}", report.gigabytes_per_second()),
                result: format!("verified ({:.1} ms)", report.elapsed.as_secs_f64() * 1e3),
                ok: true,
                ..row
            },
            Ok(report) => row.failed(format!(
                "{} element(s) differ, first at {}",
                report.mismatches,
                report.first_mismatch.unwrap_or_default()
            )),
            Err(err) => row.failed(err),
        });
    }
    if launches > 0 {
        eprintln!(
            "making {launches} tiny vadd launches on one queue on {} ...",
            inert(&token.id())
        );
        let row = Row::new(token, format!("vadd x{launches} tiny launches"), "4 B");
        rows.push(match vadd::tiny_launches(&handle, &kernel, launches) {
            Ok(report) if report.verified => Row {
                result: format!("verified, {:.0} launches/s", report.per_second()),
                ok: true,
                ..row
            },
            Ok(_) => row.failed("the final value is wrong"),
            Err(err) => row.failed(err),
        });
    }
}

/// The CAPI workloads: the memcpy queue ending in an interrupt on an AFU-directed slave node,
/// vadd on a dedicated node.
fn run_capi(host: &Host, token: &Token, rows: &mut Vec<Row>) {
    let function = capi::function(token).unwrap_or_default().to_string();
    let run = |handle: &accelhost::Handle| -> accelhost::Result<(String, String, String, bool)> {
        Ok(match function.as_str() {
            "memcpy" => {
                let report = capi::memcpy_run(handle, 128, 32 * 1024)?;
                (
                    "capi memcpy x128 + IRQ event".to_string(),
                    table::size(report.bytes),
                    format!("{:.2}", report.gigabytes_per_second()),
                    report.verified(),
                )
            }
            _ => {
                let report = capi::vadd_run(handle, 1 << 20)?;
                (
                    "capi vadd 1 Mi elements".to_string(),
                    table::size(u64::from(report.elements) * 4),
                    format!("{:.2}", report.gigabytes_per_second()),
                    report.verified(),
                )
            }
        })
    };
    eprintln!(
        "running the {} AFU on {} ...",
        inert(&function),
        inert(&token.id())
    );
    let outcome = host.open(token, OpenMode::Exclusive).and_then(|handle| {
        let result = run(&handle);
        handle.close()?;
        result
    });
    rows.push(match outcome {
        Ok((workload, bytes, rate, true)) => Row {
            rate,
            result: "verified".into(),
            ok: true,
            ..Row::new(token, workload, bytes)
        },
        Ok((workload, bytes, _, false)) => {
            Row::new(token, workload, bytes).failed("the output differs from the input")
        }
        Err(err) => Row::new(token, format!("capi {function}"), "-").failed(err),
    });
}

/// The family whose canonical workload `token` looks made for, by what its plugin reported.
fn workload_family(token: &Token) -> Option<DeviceFamily> {
    if nlb0::is_nlb0(token) {
        Some(DeviceFamily::Dfl)
    } else if vadd::is_xocl(token) {
        Some(DeviceFamily::Xocl)
    } else if capi::is_cxl(token) && matches!(capi::node_kind(token), Some('s' | 'd')) {
        Some(DeviceFamily::Cxl)
    } else {
        None
    }
}

/// Whether the plugin that reported `token` is believed about `family`'s devices: any plugin
/// can report a device that looks like another's, so the canonical workloads run only on the
/// family's shipped plugin and on plugins the config trusts for it.
fn trusted(host: &Host, token: &Token, family: DeviceFamily) -> bool {
    host.config()
        .plugins
        .iter()
        .find(|p| p.name == token.plugin())
        .is_some_and(|p| p.is_trusted_for(family))
}

/// The row of a device that looks like `family`'s but whose plugin is not trusted for it.
fn untrusted(token: &Token, family: DeviceFamily) -> Row {
    let name = family.name();
    Row {
        result: format!(
            "skipped: looks like a {name} device, but plugin '{}' is not the shipped one \
             (builtin:{name}) and its config entry does not list \"{name}\" in trusted_for",
            token.plugin()
        ),
        ok: true,
        ..Row::new(token, format!("{name} canonical workload"), "-")
    }
}

/// `16777216` → `16 Mi`.
fn count(n: u32) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} Mi", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} Ki", n >> 10),
        n => n.to_string(),
    }
}

/// The plugin `--fault` adds, and what it is told to do.
const CHAOS: &str = "chaos";
const CHAOS_CONFIG: &str = r#"{"trap_in": "reset", "hang_in": "describe"}"#;
const CHAOS_BACKOFF_MS: u64 = 100;

/// Adds the chaos plugin to `config`, restarting after a fault.
fn add_chaos(config: &mut Config) -> anyhow::Result<()> {
    if config.plugins.iter().any(|p| p.name == CHAOS) {
        bail!("--fault adds a plugin named '{CHAOS}', and the config already has one");
    }
    let mut entry = PluginEntry {
        name: CHAOS.into(),
        module: ModuleSource::Builtin(CHAOS.into()),
        module_text: format!("builtin:{CHAOS}"),
        config: serde_json::from_str(CHAOS_CONFIG)?,
        load_policy: Default::default(),
        grants: Default::default(),
        enabled: true,
        trusted_for: Vec::new(),
    };
    entry.load_policy.on_fault = OnFault::Restart;
    entry.load_policy.restart_backoff_ms = CHAOS_BACKOFF_MS;
    entry.load_policy.call_timeout_ms = 10_000;
    config.plugins.push(entry);
    Ok(())
}

/// Waits until the chaos plugin runs again; returns how long that took.
fn await_restart(host: &Host, since: Instant) -> Result<Duration, String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let status = host
            .plugins()
            .into_iter()
            .find(|p| p.name == CHAOS)
            .map(|p| p.status);
        match status {
            Some(PluginStatus::Running) => return Ok(since.elapsed()),
            Some(PluginStatus::Restarting { .. }) if Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(2));
            }
            other => return Err(format!("not restarted: {other:?}")),
        }
    }
}

/// Waits for the restart after a fault at `faulted`, then checks that `stale` is refused and
/// a fresh token serves; returns how long the restart took, and the fresh token.
fn come_back(host: &Host, faulted: Instant, stale: &Token) -> Result<(Duration, Token), String> {
    let took = await_restart(host, faulted)?;
    Ok((took, serve_again(host, stale)?))
}

/// A fresh token of the chaos plugin's device, which must open (proof the restart served).
fn serve_again(host: &Host, stale: &Token) -> Result<Token, String> {
    let refused = host
        .open(stale, OpenMode::Shared)
        .map(drop)
        .map_err(|e| e.code());
    if refused != Err(ErrorCode::Stale) {
        return Err("a token of the ended instance was not refused".into());
    }
    let token = host
        .enumerate(&[Filter::new().vendor_id(0x1234)])
        .tokens
        .into_iter()
        .next()
        .ok_or("the restarted plugin lists no device")?;
    let handle = host
        .open(&token, OpenMode::Shared)
        .map_err(|e| e.to_string())?;
    handle.close().map_err(|e| e.to_string())?;
    Ok(token)
}

/// The two faults of `--fault`: a trap, then a hang cancelled from another thread. Each row
/// tells what happened, when (counted from the start of the run), and how the plugin came
/// back.
fn run_faults(host: &Host, token: &Token, started: Instant) -> Vec<Row> {
    let at = || format!("+{} ms", started.elapsed().as_millis());
    let mut rows = Vec::new();

    let row = Row::new(token, "fault: trap in reset", "-");
    let when = at();
    let crash = host.open(token, OpenMode::Shared).and_then(|h| h.reset());
    let faulted = Instant::now();
    let token = match crash {
        Err(err) if err.code() == ErrorCode::PluginFaulted => {
            match come_back(host, faulted, token) {
                Ok((took, token)) => {
                    rows.push(Row {
                        result: format!(
                            "contained at {when} (plugin-faulted: wasm trap); restarted in {} ms, \
                             old token refused, new one serves",
                            took.as_millis()
                        ),
                        ok: true,
                        ..row
                    });
                    token
                }
                Err(why) => {
                    rows.push(row.failed(why));
                    return rows;
                }
            }
        }
        other => {
            rows.push(row.failed(format!("the trap was not reported: {other:?}")));
            return rows;
        }
    };

    let row = Row::new(&token, "fault: infinite loop in describe", "-");
    let when = at();
    let hung = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(200));
            while !host.cancel(CHAOS).unwrap_or(true) {
                std::thread::sleep(Duration::from_millis(2));
            }
        });
        let begun = Instant::now();
        (token.refresh(), begun.elapsed())
    });
    let faulted = Instant::now();
    rows.push(match hung {
        (Err(err), took) if err.code() == ErrorCode::PluginFaulted => {
            match come_back(host, faulted, &token) {
                Ok((restart, _)) => Row {
                    result: format!(
                        "hung at {when}, cancelled from another thread after {} ms; restarted \
                         in {} ms",
                        took.as_millis(),
                        restart.as_millis()
                    ),
                    ok: true,
                    ..row
                },
                Err(why) => row.failed(why),
            }
        }
        other => row.failed(format!("the hang was not stopped: {other:?}")),
    });
    rows
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let host = if args.fault {
        super::start_host_with(config, add_chaos)?
    } else {
        super::start_host(config)?
    };
    let started = Instant::now();
    let found = host.enumerate(&[]);
    for failure in &found.failures {
        eprintln!("warning: {failure}");
    }
    let chaos = found
        .tokens
        .iter()
        .find(|t| t.plugin() == CHAOS && args.fault);
    let mut rows = Vec::new();
    let fault_rows = std::thread::scope(|scope| {
        let faults = chaos.map(|token| {
            eprintln!("making plugin '{CHAOS}' crash and hang while the workloads run ...");
            scope.spawn(|| run_faults(&host, token, started))
        });
        for token in &found.tokens {
            let Some(family) = workload_family(token) else {
                continue;
            };
            if !trusted(&host, token, family) {
                rows.push(untrusted(token, family));
                continue;
            }
            match family {
                DeviceFamily::Dfl => run_nlb0(&host, token, &args.sizes, &mut rows),
                DeviceFamily::Xocl => {
                    run_vadd(&host, token, &args.elements, args.launches, &mut rows)
                }
                DeviceFamily::Cxl => run_capi(&host, token, &mut rows),
            }
        }
        faults.map(|f| f.join().expect("the fault thread"))
    });
    if args.fault && fault_rows.is_none() {
        bail!("the chaos plugin did not start; `accelhost plugins` says why");
    }
    let workloads_took = started.elapsed();
    if rows.is_empty() {
        bail!(
            "no device with a canonical workload found (config: {}); `accelhost list` shows the devices there are",
            host.config().source
        );
    }
    rows.extend(fault_rows.unwrap_or_default());
    let all_ok = rows.iter().all(|r| r.ok);
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|r| vec![r.device, r.plugin, r.workload, r.bytes, r.rate, r.result])
        .collect();
    print!(
        "{}",
        table::render(
            &["DEVICE", "PLUGIN", "WORKLOAD", "BYTES", "GB/s", "RESULT"],
            &rows
        )
    );
    if args.fault {
        println!(
            "the workloads ran from +0 to +{} ms, alongside the faults",
            workloads_took.as_millis()
        );
    }
    Ok(if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_and_print() {
        assert_eq!(parse_size("1MiB"), Ok(1 << 20));
        assert_eq!(parse_size("64MiB"), Ok(64 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("100").is_err(), "not a multiple of 64");
        assert!(parse_size("1TiB").is_err());
        assert!(parse_size("0").is_err());
        assert_eq!(parse_count("16Mi"), Ok(16 << 20));
        assert_eq!(parse_count("1Ki"), Ok(1024));
        assert!(parse_count("0").is_err());
        assert!(parse_count("2x").is_err());
        assert_eq!(count(16 << 20), "16 Mi");
    }
}
