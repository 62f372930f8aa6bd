//! The process-wide host and its XRT cards: started by the first call that needs them, on
//! the usual lookup (`ACCELHOST_ENDPOINT`, `ACCELHOST_CONFIG`, `./accelhost.json`, ..., the
//! embedded default), and kept for the process's life. Device index `n` of
//! `xrtDeviceOpen` is the nth card in the order the library lists devices.

use std::sync::OnceLock;

use accelhost::{Host, ObjectType, Token};

/// The host, and the cards it listed when first asked (never changed after, so an index
/// names one card for the process's life).
pub struct State {
    pub host: Result<Host, String>,
    pub cards: Vec<Token>,
}

static STATE: OnceLock<State> = OnceLock::new();

/// The state, started on first use.
pub fn state() -> &'static State {
    STATE.get_or_init(start)
}

fn start() -> State {
    let host = match accelhost_door::process::start(None) {
        Ok(host) => host,
        Err(err) => {
            return State {
                host: Err(format!("accelhost could not start: {err}")),
                cards: Vec::new(),
            };
        }
    };
    let found = host.enumerate(&[]);
    for failure in &found.failures {
        eprintln!(
            "accelhost XRT: (one plugin lists no devices) {}",
            accelhost::text::inert(&failure.to_string())
        );
    }
    let cards = found
        .tokens
        .into_iter()
        .filter(|token| token.properties().object_type == ObjectType::Accelerator)
        .filter(is_xrt_card)
        .collect();
    State {
        host: Ok(host),
        cards,
    }
}

/// Whether the device is an XRT card: its plugin says its interface is the xocl driver's.
fn is_xrt_card(token: &Token) -> bool {
    token
        .properties()
        .extras
        .iter()
        .any(|(key, value)| key == "interface" && value == "xocl")
}
