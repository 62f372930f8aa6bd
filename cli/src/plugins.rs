//! `accelhost plugins`: the plugins of the config and their state.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::text::inert_json;

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let host = crate::start::start_host(config)?;
    let plugins = host.plugins();
    let missing = crate::exit::missing(&host, &[]);
    if args.json {
        println!("{}", inert_json(serde_json::to_string_pretty(&plugins)?));
        return Ok(crate::exit::found(&missing));
    }
    println!(
        "config: {} ({})",
        host.config().source,
        host.config_origin()
    );
    println!("instances: {}", accelhost::instance_allocator());
    let rows: Vec<Vec<String>> = plugins
        .iter()
        .map(|p| {
            let (g, l) = (&p.grants, &p.load_policy);
            let on_fault = match l.on_fault {
                accelhost::config::OnFault::Restart => {
                    format!("restart (at most {})", l.max_restarts)
                }
                accelhost::config::OnFault::Disable => "disable".into(),
            };
            vec![
                p.name.clone(),
                p.module.clone(),
                p.wit_version
                    .as_deref()
                    .map_or("-".into(), |v| format!("accel:plugin@{v}")),
                p.provenance.to_string(),
                match p.code {
                    Some(accelhost::Tier::Baseline) => {
                        format!("{} (baseline code)", p.status)
                    }
                    _ => p.status.to_string(),
                },
                format!(
                    "devices [{}]; dma {} MiB",
                    g.devices.join(", "),
                    g.dma_memory_mib
                ),
                format!(
                    "memory {} MiB; host memory {} MiB; call {} ms; on fault {on_fault}; \
                     holds at most {} MiB",
                    l.memory_mib,
                    l.host_memory_mib,
                    l.call_timeout_ms,
                    p.memory.worst_case_bytes.div_ceil(1 << 20)
                ),
            ]
        })
        .collect();
    print!(
        "{}",
        accelhost::text::table(
            &[
                "NAME",
                "MODULE",
                "WIT",
                "SIGNATURE",
                "STATE",
                "GRANTS",
                "POLICY"
            ],
            &rows
        )
    );
    println!(
        "holds at most: {} (a plugin's linear memory and tables; its host memory, and as much \
         again lifted from it or copied for it between two safe points; one import's copy; its \
         DMA memory; WASI's objects; its instance's output buffers)",
        accelhost::WORST_CASE_FORMULA
    );
    println!(
        "compiling: {}",
        match accelhost::compile_worker::program() {
            Some(_) => "plugin files in a worker process, each within its \
                        load_policy.compile_timeout_ms and compile_memory_mib (one of at least \
                        load_policy.baseline_first_mib starts on baseline code while its \
                        optimized code compiles in the background into the cache); built-in \
                        plugins in this process"
                .to_string(),
            None => format!(
                "plugin files and built-in plugins in this process, unbounded (no compile \
                 worker: {})",
                accelhost::compile_worker::WORKER_ENV
            ),
        }
    );
    println!(
        "host memory: {}",
        if accelhost::ledger::is_installed() {
            "every block the host allocates for a plugin, counted by the ledger"
        } else {
            "what the imports charge at their call sites (the ledger is off: ACCELHOST_LEDGER)"
        }
    );
    Ok(crate::exit::found(&missing))
}
