//! Import calls with bad arguments. Each attack returns the host's refusal as its error (or
//! traps, when the host ends the instance for it); an attack that the host lets through
//! returns `Ok`, which the tests treat as a failure.

use accelhost_sdk::host::cxl::{Context, ContextKind};
use accelhost_sdk::host::dfl::{self, Port};
use accelhost_sdk::host::dma::Buffer;
use accelhost_sdk::host::events::Event;
use accelhost_sdk::host::mmio::{AccessWidth, Region, RegisterWrite};
use accelhost_sdk::host::{remote, xocl};
use accelhost_sdk::{Error, ErrorCode, Result};

/// A handle number no instance hands out this early.
const FORGED: u32 = 0x0bad_cafe;

/// Runs `attack` against device `target` (a path, granted or not, as the attack needs).
pub fn run(attack: &str, target: &str) -> Result<()> {
    match attack {
        "forge-region" => {
            // SAFETY: unsound on purpose, in the plugin (not the host): deliberately wrong; the host must refuse it.
            let forged = unsafe { Region::from_handle(FORGED) };
            forged.read32(0)?;
        }
        "stale-region" => {
            let port = Port::open(target, false)?;
            let region = port.map_region(0)?;
            let handle = region.handle();
            drop(region);
            // SAFETY: unsound on purpose, in the plugin (not the host): a handle already dropped, on purpose.
            let stale = unsafe { Region::from_handle(handle) };
            stale.read32(0)?;
        }
        "foreign-handle" => {
            let buffer = Buffer::allocate(4096)?;
            // SAFETY: unsound on purpose, in the plugin (not the host): a buffer's handle taken for a region, on purpose.
            let as_region = unsafe { Region::from_handle(buffer.handle()) };
            as_region.read32(0)?;
        }
        "mmio-out-of-range" => {
            let region = Port::open(target, false)?.map_region(0)?;
            region.read64(region.size())?;
        }
        "mmio-write-out-of-range" => {
            let region = Port::open(target, false)?.map_region(0)?;
            region.write64(region.size() + 0x1000, 0xdead)?;
        }
        "mmio-misaligned" => {
            let region = Port::open(target, false)?.map_region(0)?;
            region.read64(3)?;
        }
        "batch-huge" => {
            let region = Port::open(target, false)?.map_region(0)?;
            let writes: Vec<RegisterWrite> = (0..100_000)
                .map(|i| RegisterWrite {
                    offset: 0x100 + (i % 16) * 8,
                    value: i,
                    width: AccessWidth::Bits64,
                })
                .collect();
            region.write_batch(&writes)?;
        }
        "open-not-granted" => {
            Port::open(target, true)?;
        }
        "attribute-escape" => {
            dfl::read_attribute(target, "../../../../etc/passwd")?;
        }
        "attribute-huge-write" => {
            dfl::write_attribute(target, "errors/errors", &"0".repeat(1 << 20))?;
        }
        "attribute-not-granted" => {
            dfl::list_attributes(target)?;
        }
        "open-dev-nodes" => return open_dev_nodes(),
        "escape-sandbox" => return escape_sandbox(),
        "dma-map-forged" => {
            let port = Port::open(target, false)?;
            // SAFETY: unsound on purpose, in the plugin (not the host): deliberately wrong; the host must refuse it.
            let forged = unsafe { Buffer::from_handle(FORGED) };
            port.dma_map(&forged)?;
        }
        "dma-map-stale" => {
            let port = Port::open(target, false)?;
            let buffer = Buffer::allocate(4096)?;
            let handle = buffer.handle();
            drop(buffer);
            // SAFETY: unsound on purpose, in the plugin (not the host): a handle already dropped, on purpose.
            let stale = unsafe { Buffer::from_handle(handle) };
            port.dma_map(&stale)?;
        }
        "dma-over-budget" => {
            Buffer::allocate(1 << 40)?;
        }
        "read-huge" => {
            let buffer = Buffer::allocate(4096)?;
            buffer.read(0, u32::MAX)?;
        }
        "exhaust-resources" => loop {
            std::mem::forget(Event::completed());
        },
        "event-messages" => failed_events(4 << 10),
        // The host cuts each message to 1 KiB: what it keeps must be the 1 KiB, not the
        // capacity of the 256 KiB it lifted.
        "event-messages-256k" => failed_events(256 << 10),
        "queued-commands" => {
            // Commands queued behind an event that never fires, their events dropped: the
            // device queue grows until the host-memory budget refuses.
            let device = xocl::Device::open(target)?;
            let bo = device.create_bo(4096, None)?;
            let buffer = Buffer::allocate(4096)?;
            let never = buffer.watch64(0, 1, 1)?;
            loop {
                device.sync_bo(&bo, xocl::SyncDirection::ToDevice, 0, 64, &[&never])?;
            }
        }
        "watches" => {
            // Words that never change, each watched and the watch kept.
            let buffer = Buffer::allocate(4096)?;
            let mut kept = Vec::new();
            loop {
                match buffer.watch64(0, 1, 1) {
                    Ok(watch) => kept.push(watch),
                    Err(refused) => {
                        // Keep every watch the instance got, for as long as it lives.
                        std::mem::forget((buffer, kept));
                        return Err(refused);
                    }
                }
            }
        }
        "hoard-sessions" => {
            // Sessions with the node `target` (an endpoint the grants name), one after
            // another, each kept for as long as the instance lives: what the host lets one
            // plugin take of its identity's sessions on the node.
            let mut kept = Vec::new();
            for _ in 0..1024 {
                match remote::Node::connect(target) {
                    Ok(node) => kept.push(node),
                    Err(refused) => {
                        std::mem::forget(kept);
                        return Err(refused);
                    }
                }
            }
            std::mem::forget(kept);
        }
        other => {
            return Err(Error::invalid_argument(format!(
                "no attack named '{other}'"
            )));
        }
    }
    Ok(())
}

/// Failed events, each with a message of `bytes`, all kept: only the host-memory budget stops
/// this (the import has no error to return, so it ends the instance).
fn failed_events(bytes: usize) -> ! {
    let message = "m".repeat(bytes);
    let mut kept = Vec::new();
    loop {
        kept.push(Event::failed(&Error::new(
            ErrorCode::Internal,
            message.clone(),
        )));
    }
}

/// Opens real device nodes of each family, none of them granted: every open must be refused.
fn open_dev_nodes() -> Result<()> {
    let mut refusals = Vec::new();
    let mut opened = Vec::new();
    match Port::open("/dev/dfl-port.0", true) {
        Ok(_) => opened.push("/dev/dfl-port.0"),
        Err(e) => refusals.push(e),
    }
    match xocl::Device::open("/dev/dri/renderD128") {
        Ok(_) => opened.push("/dev/dri/renderD128"),
        Err(e) => refusals.push(e),
    }
    match Context::open("/dev/cxl/afu0.0", ContextKind::Dedicated) {
        Ok(_) => opened.push("/dev/cxl/afu0.0d"),
        Err(e) => refusals.push(e),
    }
    if !opened.is_empty() {
        return Ok(());
    }
    let code = if refusals
        .iter()
        .all(|e| e.code == ErrorCode::PermissionDenied)
    {
        ErrorCode::PermissionDenied
    } else {
        ErrorCode::Internal
    };
    let messages: Vec<String> = refusals.into_iter().map(|e| e.message).collect();
    Err(Error::new(code, messages.join("; ")))
}

/// Reaches for what WASI would offer a program: files, directories, the environment, the
/// network. Every attempt must fail (or find nothing).
fn escape_sandbox() -> Result<()> {
    let mut blocked = Vec::new();
    let mut escaped = Vec::new();
    for path in ["/etc/passwd", "/proc/self/environ", "."] {
        match std::fs::read(path) {
            Ok(_) => escaped.push(format!("read {path}")),
            Err(e) => blocked.push(format!("read {path}: {e}")),
        }
    }
    match std::fs::read_dir("/") {
        Ok(_) => escaped.push("listed /".to_string()),
        Err(e) => blocked.push(format!("list /: {e}")),
    }
    match std::fs::write("/tmp/chaos-was-here", b"x") {
        Ok(()) => escaped.push("wrote /tmp/chaos-was-here".to_string()),
        Err(e) => blocked.push(format!("write /tmp: {e}")),
    }
    let vars = std::env::vars().count();
    if vars > 0 {
        escaped.push(format!("saw {vars} environment variables"));
    }
    match std::net::TcpStream::connect("127.0.0.1:22") {
        Ok(_) => escaped.push("connected to 127.0.0.1:22".to_string()),
        Err(e) => blocked.push(format!("connect: {e}")),
    }
    if escaped.is_empty() {
        Err(Error::new(ErrorCode::PermissionDenied, blocked.join("; ")))
    } else {
        Ok(())
    }
}
