//! `accelhost xclbin`: write xclbin images for the emulated XRT card, and check images.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::Guid;
use accelhost::xclbin::{self, XclbinBuilder};

#[derive(clap::Subcommand)]
pub enum Command {
    /// Write a vadd xclbin (the Vitis hello-world kernel) the emulator runs.
    Build {
        /// Where to write it.
        output: PathBuf,
        /// Compute units (vadd_1, vadd_2, ...).
        #[arg(long, default_value_t = 2)]
        cus: u32,
        /// DDR banks (1 GiB each); CU i uses bank i % banks.
        #[arg(long, default_value_t = 1)]
        banks: u32,
        /// The image's uuid (default: the demo's vadd uuid).
        #[arg(long)]
        uuid: Option<Guid>,
    },
    /// Validate an xclbin and show its memory banks, compute units and kernels.
    Show {
        /// The image to read.
        image: PathBuf,
    },
}

pub fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Build {
            output,
            cus,
            banks,
            uuid,
        } => {
            if !(1..=128).contains(&cus) || !(1..=16).contains(&banks) {
                anyhow::bail!("--cus takes 1 to 128 and --banks 1 to 16");
            }
            let uuid = uuid.unwrap_or(accelhost::workloads::vadd::VADD_UUID);
            let image = XclbinBuilder::vadd(uuid, cus, banks).build();
            std::fs::write(&output, &image)
                .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", output.display()))?;
            println!(
                "{}: vadd xclbin {uuid}, {cus} compute unit(s), {banks} bank(s), {} bytes",
                output.display(),
                image.len()
            );
            Ok(ExitCode::SUCCESS)
        }
        Command::Show { image } => {
            let bytes = std::fs::read(&image)
                .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", image.display()))?;
            let parsed = match xclbin::parse(&bytes) {
                Ok(parsed) => parsed,
                Err(err) => {
                    eprintln!("error: {}: {err}", image.display());
                    return Ok(ExitCode::FAILURE);
                }
            };
            println!(
                "{}: xclbin {} ({} bytes)",
                image.display(),
                parsed.uuid,
                bytes.len()
            );
            for bank in &parsed.banks {
                println!(
                    "  bank {} {:?} '{}' at {:#x}, {} MiB{}",
                    bank.index,
                    bank.kind,
                    bank.tag,
                    bank.base,
                    bank.size >> 20,
                    if bank.used { "" } else { " (unused)" }
                );
            }
            for (index, cu) in parsed.compute_units().iter().enumerate() {
                println!("  compute unit {index}: {} at {:#x}", cu.name, cu.base);
            }
            for kernel in &parsed.kernels {
                let args: Vec<String> = kernel
                    .args
                    .iter()
                    .map(|a| format!("{}@{:#x}", a.name, a.offset))
                    .collect();
                println!("  kernel {}({})", kernel.name, args.join(", "));
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
