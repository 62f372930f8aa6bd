//! `accelhost list`: every device of every plugin.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use accelhost::{Filter, Guid, Token};
use serde::Serialize;

use accelhost::text::{inert, inert_json};

#[derive(clap::Args)]
pub struct Args {
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Only devices with this GUID (AFU id), such as D8424DC4-A4A3-C413-F89E-433683F9040B.
    #[arg(long)]
    guid: Option<Guid>,
    /// Only devices of this type, such as fpga.
    #[arg(long, value_name = "TYPE")]
    device_type: Option<String>,
    /// Only devices on this host: a name, localhost, ^localhost (any other) or *.
    #[arg(long)]
    host: Option<String>,
}

/// One device as `list --json` prints it.
#[derive(Serialize)]
pub struct DeviceEntry<'a> {
    pub id: String,
    pub plugin: &'a str,
    #[serde(flatten)]
    pub properties: &'a accelhost::Properties,
}

impl<'a> DeviceEntry<'a> {
    pub fn new(token: &'a Token) -> Self {
        DeviceEntry {
            id: token.id(),
            plugin: token.plugin(),
            properties: token.properties(),
        }
    }
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let host = crate::start::start_host_at_once(config)?;
    let mut filter = Filter::new();
    filter.guid = args.guid;
    filter.device_type = args.device_type;
    filter.host = args.host;
    let filters = if filter == Filter::new() {
        vec![]
    } else {
        vec![filter]
    };
    if args.json {
        // One JSON document: every plugin loaded first.
        host.wait_loaded(Duration::MAX);
    }
    let found = host.enumerate(&filters);
    let loading = loading_plugins(&found);
    for failure in found.failures.iter().filter(|f| !is_loading(f)) {
        eprintln!("warning: {failure}");
    }
    if args.json {
        let missing = crate::exit::missing(&host, &found.failures);
        let entries: Vec<DeviceEntry> = found.tokens.iter().map(DeviceEntry::new).collect();
        println!("{}", inert_json(serde_json::to_string_pretty(&entries)?));
        return Ok(crate::exit::found(&missing));
    }
    if !found.tokens.is_empty() {
        print!("{}", table(&found.tokens));
    }
    // The plugins still compiling hold up nobody: their devices follow once they load.
    let mut later = Vec::new();
    let mut failures = found.failures;
    if !loading.is_empty() {
        eprintln!(
            "plugin(s) {} still loading (compiling); their devices follow once they load",
            inert(&loading.join(", "))
        );
        host.wait_loaded(Duration::MAX);
        let again = host.enumerate(&filters);
        later = again
            .tokens
            .into_iter()
            .filter(|t| loading.iter().any(|p| p == t.plugin()))
            .collect();
        failures = again.failures;
        for failure in &failures {
            eprintln!("warning: {failure}");
        }
        if !later.is_empty() {
            print!("{}", table(&later));
        }
    }
    let missing = crate::exit::missing(&host, &failures);
    if found.tokens.is_empty() && later.is_empty() {
        let running: Vec<String> = host
            .plugins()
            .into_iter()
            .filter(|p| p.status == accelhost::PluginStatus::Running)
            .map(|p| p.name)
            .collect();
        eprintln!(
            "no devices found (config: {}; running plugins: {}); `accelhost plugins` shows what each plugin is granted",
            host.config().source,
            if running.is_empty() {
                "none".to_string()
            } else {
                running.join(", ")
            }
        );
    }
    Ok(crate::exit::found(&missing))
}

/// Whether an enumeration failure says its plugin is still loading.
fn is_loading(failure: &accelhost::Error) -> bool {
    matches!(failure, accelhost::Error::StillLoading { .. })
}

/// The plugins an enumeration found still loading.
fn loading_plugins(found: &accelhost::Enumeration) -> Vec<String> {
    found
        .failures
        .iter()
        .filter(|f| is_loading(f))
        .filter_map(|f| f.plugin().map(str::to_string))
        .collect()
}

/// The table `list` prints of `tokens`.
fn table(tokens: &[Token]) -> String {
    let rows: Vec<Vec<String>> = tokens
        .iter()
        .map(|t| {
            let p = t.properties();
            vec![
                t.id(),
                format!("{:?}/{}", p.object_type, p.device_type).to_lowercase(),
                p.guid.to_string(),
                format!("{:04x}:{:04x}", p.vendor_id, p.device_id),
                p.bus_address.map_or("-".into(), |b| b.to_string()),
                p.host.to_string(),
                p.accelerator_state
                    .map_or("-".into(), |s| format!("{s:?}").to_lowercase()),
            ]
        })
        .collect();
    accelhost::text::table(
        &[
            "DEVICE",
            "TYPE",
            "GUID",
            "VENDOR:DEVICE",
            "BUS",
            "HOST",
            "STATE",
        ],
        &rows,
    )
}
