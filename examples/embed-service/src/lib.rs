//! A small service that embeds accelhost: one [`Host`] shared by every connection thread.
//!
//! The protocol is one command per line, one JSON answer per line:
//!
//! - `list`: the devices, as `[{"id", "guid", "plugin"}, ...]`
//! - `plugins`: the plugins and their state
//! - `loopback <device-id> <bytes>`: the NLB0 hello_fpga loopback on that device, as
//!   `{"device", "bytes", "verified", "gbps"}`
//! - `quit`: closes the connection
//!
//! Errors come back as `{"error": "...", "code": "..."}`, and the connection stays open.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};

use accelhost::workloads::nlb0;
use accelhost::{Host, OpenMode};
use serde_json::{Value, json};

/// Serves connections from `listener` until it fails, each on its own thread.
pub fn serve(listener: TcpListener, host: Host) -> anyhow::Result<()> {
    for stream in listener.incoming() {
        let stream = stream?;
        let host = host.clone();
        std::thread::spawn(move || {
            if let Err(err) = handle_connection(stream, &host) {
                eprintln!("connection ended: {err}");
            }
        });
    }
    Ok(())
}

fn handle_connection(stream: TcpStream, host: &Host) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    for line in BufReader::new(stream).lines() {
        let line = line?;
        let words: Vec<&str> = line.split_whitespace().collect();
        if words.first() == Some(&"quit") {
            break;
        }
        let answer = answer(host, &words);
        writeln!(writer, "{answer}")?;
    }
    Ok(())
}

/// The JSON answer to one command.
pub fn answer(host: &Host, words: &[&str]) -> Value {
    let result = match words {
        ["list"] => Ok(json!(
            host.enumerate(&[])
                .tokens
                .iter()
                .map(|t| json!({"id": t.id(), "guid": t.properties().guid, "plugin": t.plugin()}))
                .collect::<Vec<_>>()
        )),
        ["plugins"] => serde_json::to_value(host.plugins()).map_err(|e| e.to_string()),
        ["loopback", device, bytes] => loopback(host, device, bytes),
        _ => Err(format!(
            "unknown command '{}': use list, plugins, loopback <device> <bytes> or quit",
            words.join(" ")
        )),
    };
    result.unwrap_or_else(|message| json!({"error": message}))
}

fn loopback(host: &Host, device: &str, bytes: &str) -> Result<Value, String> {
    let bytes: u64 = bytes
        .parse()
        .map_err(|_| format!("'{bytes}' is not a byte count"))?;
    let token = host
        .enumerate(&[])
        .tokens
        .into_iter()
        .find(|t| t.id() == device)
        .ok_or_else(|| format!("no device '{device}'"))?;
    let run = || -> accelhost::Result<nlb0::LoopbackReport> {
        let handle = host.open(&token, OpenMode::Exclusive)?;
        let report = nlb0::loopback(&handle, bytes)?;
        handle.close()?;
        Ok(report)
    };
    match run() {
        Ok(report) => Ok(json!({
            "device": device,
            "bytes": bytes,
            "verified": report.verified(),
            "gbps": report.gigabytes_per_second(),
        })),
        Err(err) => Ok(json!({"error": err.to_string(), "code": err.code()})),
    }
}
