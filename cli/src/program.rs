//! `accelhost program DEVICE IMAGE`: load an image (an xclbin for XRT cards) onto a device.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use accelhost::OpenMode;
use accelhost::text::inert;
use anyhow::Context;

#[derive(clap::Args)]
pub struct Args {
    /// The device, as `list` names it (plugin/name, name, PCI address or position).
    device: String,
    /// The image file to load.
    image: PathBuf,
    /// The reconfigurable slot to load it into.
    #[arg(long, default_value_t = 0)]
    slot: u32,
}

/// Reads `path` with a progress line on a terminal (images run to hundreds of MiB).
fn read_with_progress(path: &PathBuf) -> anyhow::Result<Vec<u8>> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot open the image {}", path.display()))?;
    let total = file.metadata().map(|m| m.len()).unwrap_or(0);
    let show = std::io::stderr().is_terminal() && total > 8 << 20;
    let mut bytes = Vec::with_capacity(total as usize);
    let mut chunk = vec![0u8; 4 << 20];
    let started = Instant::now();
    loop {
        let n = file
            .read(&mut chunk)
            .with_context(|| format!("reading {}", path.display()))?;
        if n == 0 {
            break;
        }
        bytes.extend_from_slice(&chunk[..n]);
        if show {
            let percent = bytes.len() as f64 * 100.0 / total.max(1) as f64;
            eprint!(
                "\rreading {}: {percent:5.1}% ({} of {} MiB)",
                path.display(),
                bytes.len() >> 20,
                total >> 20
            );
            let _ = std::io::stderr().flush();
        }
    }
    if show {
        eprintln!(" in {:.1} s", started.elapsed().as_secs_f64());
    }
    Ok(bytes)
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let image = read_with_progress(&args.image)?;
    let host = crate::start::start_host(config)?;
    let found = host.enumerate(&[]);
    for failure in &found.failures {
        eprintln!("warning: {failure}");
    }
    let token = super::info::select(&found.tokens, &args.device)?;
    eprintln!(
        "loading {} ({} bytes) into slot {} of {} ...",
        args.image.display(),
        image.len(),
        args.slot,
        inert(&token.id())
    );
    let started = Instant::now();
    let handle = host.open(token, OpenMode::Exclusive)?;
    handle.reconfigure(args.slot, &image)?;
    handle.close()?;
    println!(
        "{}: loaded {} in {:.1} ms",
        inert(&token.id()),
        args.image.display(),
        started.elapsed().as_secs_f64() * 1e3
    );
    Ok(ExitCode::SUCCESS)
}
