//! `accelhost demo`: the canonical workload on every device, verified byte for byte.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use accelhost::config::{Config, ModuleSource, OnFault, PluginEntry};
use accelhost::workloads::{self, DemoSettings, Outcome};
use accelhost::{ErrorCode, Filter, Host, OpenMode, PluginStatus, Token};
use anyhow::bail;

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
    /// Needs a build with `--features fault-injection`.
    #[arg(long)]
    fault: bool,
    /// Only devices on this host: a name, localhost, ^localhost (any other) or * (every host,
    /// with the nodes a builtin:remote plugin reaches).
    #[arg(long)]
    host: Option<String>,
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

/// The rows of a canonical workload's outcomes on `token`.
fn rows_of(token: &Token, outcomes: Vec<Outcome>) -> Vec<Row> {
    outcomes
        .into_iter()
        .map(|outcome| {
            let row = Row::new(
                token,
                outcome.workload,
                outcome.bytes.map_or("-".into(), accelhost::workloads::size),
            );
            let row = Row {
                rate: outcome
                    .gigabytes_per_second
                    .map_or("-".into(), |r| format!("{r:.2}")),
                ..row
            };
            match outcome.result {
                Ok(result) => Row {
                    result,
                    ok: true,
                    ..row
                },
                Err(why) => row.failed(why),
            }
        })
        .collect()
}

/// Whether the plugin that reported `token` is believed about `family`'s devices: any plugin
/// can report a device that looks like another's, so the canonical workloads run only on the
/// family's shipped plugin and on plugins the config trusts for it.
fn trusted(host: &Host, token: &Token, family: &str) -> bool {
    host.config()
        .plugins
        .iter()
        .find(|p| p.name == token.plugin())
        .is_some_and(|p| p.is_trusted_for(family))
}

/// The row of a device that looks like `family`'s but whose plugin is not trusted for it.
fn untrusted(token: &Token, family: &str) -> Row {
    Row {
        result: format!(
            "skipped: looks like a {family} device, but plugin '{}' is not the shipped one \
             (builtin:{family}) and its config entry does not list \"{family}\" in trusted_for",
            token.plugin()
        ),
        ok: true,
        ..Row::new(token, format!("{family} canonical workload"), "-")
    }
}

/// The row of a device that no canonical workload is made for, saying why.
fn no_workload(token: &Token, why: String) -> Row {
    Row {
        result: format!("skipped: {why}"),
        ok: true,
        ..Row::new(token, "no canonical workload", "-")
    }
}

/// The plugin `--fault` adds, and what it is told to do.
const CHAOS: &str = "chaos";
const CHAOS_CONFIG: &str = r#"{"trap_in": "reset", "hang_in": "describe"}"#;
const CHAOS_BACKOFF_MS: u64 = 100;

/// Adds the chaos plugin to `config`, restarting after a fault.
fn add_chaos(config: &mut Config) -> anyhow::Result<()> {
    if accelhost::builtin::module(CHAOS).is_none() {
        bail!(
            "--fault needs the fault-injection plugin, which this build leaves out; build \
             accelhost with `--features fault-injection`"
        );
    }
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
        signature: Default::default(),
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
        let status = host.plugin(CHAOS).map(|p| p.status);
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
        crate::start::start_host_with(config, add_chaos)?
    } else {
        crate::start::start_host(config)?
    };
    let started = Instant::now();
    let filters: Vec<accelhost::Filter> = args
        .host
        .iter()
        .map(|h| accelhost::Filter {
            host: Some(h.clone()),
            ..accelhost::Filter::new()
        })
        .collect();
    let found = host.enumerate(&filters);
    for failure in &found.failures {
        eprintln!("warning: {failure}");
    }
    let missing = crate::exit::missing(&host, &found.failures);
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
        let settings = DemoSettings {
            sizes: args.sizes.clone(),
            elements: args.elements.clone(),
            launches: args.launches,
        };
        for token in &found.tokens {
            if args.fault && token.plugin() == CHAOS {
                continue;
            }
            let workload = match workloads::recognize(token) {
                Ok(workload) => workload,
                Err(why) => {
                    rows.push(no_workload(token, why));
                    continue;
                }
            };
            if !trusted(&host, token, workload.family) {
                rows.push(untrusted(token, workload.family));
                continue;
            }
            let outcomes = (workload.run)(&host, token, &settings, &mut |what| eprintln!("{what}"));
            rows.extend(rows_of(token, outcomes));
        }
        faults.map(|f| f.join().expect("the fault thread"))
    });
    if args.fault && fault_rows.is_none() {
        bail!("the chaos plugin did not start; `accelhost plugins` says why");
    }
    let workloads_took = started.elapsed();
    if rows.is_empty() {
        bail!(
            "no devices found (config: {}); `accelhost plugins` shows what each plugin is granted",
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
        accelhost::text::table(
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
        crate::exit::found(&missing)
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
    }
}
