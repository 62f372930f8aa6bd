//! `accelhost check-config FILE`: validate a config and every plugin module it names,
//! without running any plugin code; `--print-default` prints the embedded default config.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::text::inert;
use accelhost::{ComponentCache, Config};
use accelhost_node::config::MetricsListen;

#[derive(clap::Args)]
pub struct Args {
    /// The config file to check: a plugin list, or a serve config (one with `listen`).
    #[arg(required_unless_present = "print_default")]
    file: Option<PathBuf>,
    /// Print the embedded default config (the one used when no config file is found) instead
    /// of checking a file: a starting point for one's own.
    #[arg(long, conflicts_with = "file")]
    print_default: bool,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let Some(file) = args.file else {
        println!("{}", accelhost::builtin::embedded_default_text());
        return Ok(ExitCode::SUCCESS);
    };
    if is_serve_config(&file) {
        return check_serve_config(&file);
    }
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
            Ok(checked) => println!(
                "  plugin '{}' ({}): ok, built for accel:plugin@{}, {}",
                entry.name,
                entry.module_text,
                inert(&checked.wit_version),
                checked.provenance
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

/// A serve config is told from a plugin list by its `listen` field.
fn is_serve_config(file: &std::path::Path) -> bool {
    std::fs::read_to_string(file)
        .ok()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
        .is_some_and(|value| value.get("listen").is_some())
}

fn check_serve_config(file: &std::path::Path) -> anyhow::Result<ExitCode> {
    let serve = match accelhost_node::ServeConfig::load(file) {
        Ok(serve) => serve,
        Err(err) => {
            eprintln!("error: {err}");
            return Ok(ExitCode::FAILURE);
        }
    };
    println!(
        "{}: a valid serve config; node '{}', {} client(s)",
        file.display(),
        inert(&serve.node_name),
        serve.clients.len()
    );
    match &serve.metrics {
        Some(MetricsListen::Tcp(address)) => println!("  metrics at http://{address}/metrics"),
        Some(MetricsListen::Unix(unix)) => {
            println!("  metrics at unix:{} (/metrics)", unix.path.display())
        }
        None => {}
    }
    if let Some(kubernetes) = &serve.kubernetes {
        println!(
            "  kubelet device plugin: registers through {}, resources {}/af-<AFU id>, \
             allocations in {} (mounted at {} in pods){}",
            kubernetes.kubelet_socket().display(),
            kubernetes.resource_domain,
            kubernetes.allocation_dir.display(),
            kubernetes.container_dir.display(),
            if kubernetes.raw_device_nodes {
                ", with raw device nodes"
            } else {
                ""
            }
        );
    }
    let mut failed = false;
    if let Some(tcp) = &serve.tcp {
        for (field, path) in [
            ("listen.tcp.certificate", &tcp.certificate),
            ("listen.tcp.key", &tcp.key),
            ("listen.tcp.client_ca", &tcp.client_ca),
        ] {
            if let Err(err) = std::fs::metadata(path) {
                eprintln!(
                    "error: {}: {field}: {}: {err}",
                    file.display(),
                    path.display()
                );
                failed = true;
            }
        }
    }
    for client in &serve.clients {
        println!(
            "  client '{}' ({}): devices [{}], {} MiB DMA{}",
            inert(&client.name),
            client.identity,
            inert(&client.grants.devices.join(", ")),
            client.grants.dma_memory_mib,
            if client.grants.reconfigure {
                ", may reconfigure"
            } else {
                ""
            }
        );
    }
    if let Some(host_config) = &serve.host_config {
        match Config::load(host_config) {
            Ok(config) => println!(
                "  host_config {}: valid; {} plugin(s)",
                host_config.display(),
                config.plugins.len()
            ),
            Err(err) => {
                eprintln!("error: {}: host_config: {err}", file.display());
                failed = true;
            }
        }
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}
