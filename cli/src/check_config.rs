//! `accelhost check-config FILE`: validate a config and every plugin module it names,
//! without running any plugin code; `--print-default` prints the embedded default config.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::text::inert;
use accelhost::{ComponentCache, Config};

#[derive(clap::Args)]
pub struct Args {
    /// The config file to check.
    #[arg(required_unless_present = "print_default")]
    file: Option<PathBuf>,
    /// Print the embedded default config (the one used when no config file is found) instead
    /// of checking a file: a starting point for one's own.
    #[arg(long, conflicts_with = "file")]
    print_default: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(file) = args.file else {
        println!("{}", accelhost::config::embedded_default_text());
        return Ok(ExitCode::SUCCESS);
    };
    let config = match Config::load(&file) {
        Ok(config) => config,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::FAILURE);
        }
    };
    println!(
        "{}: valid; {} plugin(s), {} emulated device(s)",
        config.source,
        config.plugins.len(),
        config.devices.len()
    );
    let cache = ComponentCache::from_env();
    let mut failed = false;
    for entry in &config.plugins {
        if !entry.enabled {
            println!(
                "  plugin '{}' ({}): disabled",
                entry.name, entry.module_text
            );
            continue;
        }
        match accelhost::check_module(entry, &cache) {
            Ok(version) => println!(
                "  plugin '{}' ({}): ok, built for accel:plugin@{}",
                entry.name,
                entry.module_text,
                inert(&version)
            ),
            Err(err) => {
                failed = true;
                eprintln!("error: {err}");
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
