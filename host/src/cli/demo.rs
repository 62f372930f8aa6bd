//! `accelhost demo`: the canonical workload on every device, verified byte for byte.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::workloads::nlb0;
use accelhost::{Filter, OpenMode};
use anyhow::bail;

use super::table;

#[derive(clap::Args)]
pub struct Args {
    /// Copy sizes for the NLB0 loopback, comma-separated (KiB, MiB and GiB suffixes; multiples
    /// of 64 bytes).
    #[arg(long, value_delimiter = ',', default_value = "1MiB,64MiB", value_parser = parse_size)]
    sizes: Vec<u64>,
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

/// `67108864` → `64 MiB`.
fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let host = super::start_host(config)?;
    let found = host.enumerate(&[Filter::new().guid(accelhost::devices::dfl::abi::nlb0::AFU_ID)]);
    for failure in &found.failures {
        eprintln!("warning: {failure}");
    }
    if found.tokens.is_empty() {
        bail!(
            "no NLB0 accelerator found (config: {}); `accelhost list` shows the devices there are",
            host.config().source
        );
    }
    let mut rows = Vec::new();
    let mut all_ok = true;
    for token in &found.tokens {
        for &bytes in &args.sizes {
            eprintln!(
                "running the hello_fpga loopback of {} on {} ...",
                human(bytes),
                token.id()
            );
            let outcome = host.open(token, OpenMode::Exclusive).and_then(|handle| {
                let report = nlb0::loopback(&handle, bytes);
                handle.close()?;
                report
            });
            let (rate, result) = match outcome {
                Ok(report) if report.verified() => (
                    format!("{:.2}", report.gigabytes_per_second()),
                    format!("verified ({} run(s))", report.runs),
                ),
                Ok(report) => {
                    all_ok = false;
                    (
                        format!("{:.2}", report.gigabytes_per_second()),
                        format!(
                            "FAILED: {} byte(s) differ, first at {:#x}",
                            report.mismatched_bytes,
                            report.first_mismatch.unwrap_or_default()
                        ),
                    )
                }
                Err(err) => {
                    all_ok = false;
                    ("-".into(), format!("FAILED: {err}"))
                }
            };
            rows.push(vec![
                token.id(),
                token.plugin().to_string(),
                "nlb0 loopback (hello_fpga)".into(),
                human(bytes),
                rate,
                result,
            ]);
        }
    }
    print!(
        "{}",
        table::render(
            &["DEVICE", "PLUGIN", "WORKLOAD", "BYTES", "GB/s", "RESULT"],
            &rows
        )
    );
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
        assert_eq!(human(64 << 20), "64 MiB");
        assert_eq!(human(4096), "4 KiB");
        assert_eq!(human(100), "100 B");
    }
}
