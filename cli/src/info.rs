//! `accelhost info DEVICE`: everything known about one device.

use std::path::PathBuf;
use std::process::ExitCode;

use accelhost::text::{inert, inert_json};
use accelhost::{BusAddress, Filter, ObjectType, Token};
use anyhow::bail;

use super::list::DeviceEntry;

#[derive(clap::Args)]
pub struct Args {
    /// The device: its id as `list` prints it (plugin/name), its name alone when that is
    /// unambiguous, its PCI address, or its position in `list` (0, 1, ...).
    device: String,
    /// Print JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Finds the device `wanted` names among `tokens`.
pub fn select<'a>(tokens: &'a [Token], wanted: &str) -> anyhow::Result<&'a Token> {
    if let Some(token) = tokens.iter().find(|t| t.id() == wanted) {
        return Ok(token);
    }
    let by_name: Vec<&Token> = tokens
        .iter()
        .filter(|t| t.properties().name == wanted)
        .collect();
    let candidates = if by_name.is_empty() {
        match wanted.parse::<BusAddress>() {
            Ok(address) => tokens
                .iter()
                .filter(|t| t.properties().bus_address == Some(address))
                .collect(),
            Err(_) => wanted
                .parse::<usize>()
                .ok()
                .and_then(|i| tokens.get(i))
                .into_iter()
                .collect(),
        }
    } else {
        by_name
    };
    match candidates.as_slice() {
        [token] => Ok(token),
        [] => {
            let ids: Vec<String> = tokens.iter().map(|t| t.id()).collect();
            bail!(
                "no device '{}'; devices: {}",
                inert(wanted),
                if ids.is_empty() {
                    "none".into()
                } else {
                    inert(&ids.join(", ")).into_owned()
                }
            )
        }
        several => {
            let ids: Vec<String> = several
                .iter()
                .map(|t| format!("  {}", inert(&t.id())))
                .collect();
            bail!(
                "'{}' names {} devices; use one of their full ids:\n{}",
                inert(wanted),
                several.len(),
                ids.join("\n")
            )
        }
    }
}

pub fn run(config: Option<PathBuf>, args: Args) -> anyhow::Result<ExitCode> {
    let host = crate::start::start_host(config)?;
    let found = host.enumerate(&[]);
    for failure in &found.failures {
        eprintln!("warning: {failure}");
    }
    // Device objects (a DFL card's FME), which plugins list only when asked for, are
    // looked for when no listed device has the name.
    let devices;
    let token = match select(&found.tokens, &args.device) {
        Ok(token) => token,
        Err(err) => {
            devices = host.enumerate(&[Filter::new().object_type(ObjectType::Device)]);
            select(&devices.tokens, &args.device).map_err(|_| err)?
        }
    };
    let missing = crate::exit::missing(&host, &found.failures);
    if args.json {
        println!(
            "{}",
            inert_json(serde_json::to_string_pretty(&DeviceEntry::new(token))?)
        );
        return Ok(crate::exit::found(&missing));
    }
    let p = token.properties();
    let opt = |v: Option<String>| v.unwrap_or_else(|| "-".into());
    let lines = [
        ("device", token.id()),
        ("plugin", token.plugin().to_string()),
        ("object type", format!("{:?}", p.object_type).to_lowercase()),
        ("name", p.name.to_string()),
        ("guid", p.guid.to_string()),
        ("vendor id", format!("{:#06x}", p.vendor_id)),
        ("device id", format!("{:#06x}", p.device_id)),
        ("bus address", opt(p.bus_address.map(|b| b.to_string()))),
        ("socket", opt(p.socket_id.map(|s| s.to_string()))),
        ("device type", p.device_type.to_string()),
        ("host", p.host.to_string()),
        ("MMIO regions", p.num_mmio.to_string()),
        ("interrupts", p.num_interrupts.to_string()),
        (
            "state",
            opt(p.accelerator_state.map(|s| format!("{s:?}").to_lowercase())),
        ),
        (
            "parent",
            match token.parent() {
                Ok(Some(parent)) => parent.id(),
                Ok(None) => "-".into(),
                Err(err) => format!("(unresolved: {err})"),
            },
        ),
    ];
    let extras = p.extras.iter().map(|(k, v)| (k.as_str(), v.to_string()));
    for (key, value) in lines.into_iter().chain(extras) {
        println!("{:<14} {}", inert(key), inert(&value));
    }
    // The sysfs-style attributes (error registers, sensors, the user clock), as OPAE's
    // sysobject, error and metric calls read them; plugins without them print nothing.
    if let Ok(attributes) = token.attributes() {
        println!("attributes");
        for attribute in attributes {
            let value = token
                .read_attribute(&attribute.name)
                .unwrap_or_else(|err| format!("(unreadable: {err})"));
            println!("  {} = {}", inert(&attribute.name), inert(&value));
        }
    }
    Ok(crate::exit::found(&missing))
}
