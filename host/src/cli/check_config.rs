//! `accelhost check-config FILE`: validate a config and every plugin module it names,
//! without running any plugin code.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::text::inert;
use accelhost::{ComponentCache, Config};

#[derive(clap::Args)]
pub struct Args {
    /// The config file to check.
    file: PathBuf,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let config = match Config::load(&args.file) {
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
