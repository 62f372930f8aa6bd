//! `imports`: host-import argument decoding, driven through the shipped `chaos` plugin.
//!
//! The chaos plugin's `reconfigure` reads its image as a script of host import calls with
//! arbitrary arguments (see `guest-plugins/chaos/src/script.rs`): buffer sizes and offsets,
//! poll masks, MMIO offsets, device paths, ERT packets, WEDs, forged handles. One [`Host`]
//! runs three chaos plugins, each aimed at the emulated card of one family (the script's
//! opens use the plugin's `target` first), and keeps one open handle to each.
//!
//! An input is one byte that picks the plugin ([`PLUGINS`], by `byte % 3`) and the script.
//! Whatever the script does, `reconfigure` must come back within the call deadline with
//! `Ok`, an error of the plugin's own, or [`Error::Faulted`] (a trap: forged handles trap by
//! design); an image with the xclbin magic may also be refused by the host's image check.
//! Anything else (a panic in the host, a call that outlives its deadline, an error raised by
//! the host, such as `internal`) is a finding, and this target panics on it. After a fault the
//! plugin stays disabled, so the next input starts a fresh host.

use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use accelhost::config::ConfigSource;
use accelhost::devices::xocl::xclbin::MAGIC;
use accelhost::{CACHE_ENV, Config, Error, Filter, Handle, Host, OpenMode};

/// The host's config: one emulated card of each family and a chaos plugin aimed at each,
/// every plugin granted every card.
pub const CONFIG: &str = r#"{
  "devices": [
    {"id": "d0", "family": "dfl"},
    {"id": "m0", "family": "cxl", "accelerator": "memcpy"},
    {"id": "x0", "family": "xocl"}
  ],
  "plugins": [
    {"name": "chaos-dfl", "module": "builtin:chaos", "config": {"target": "emu:d0"},
     "grants": {"devices": ["emu:d0", "emu:m0", "emu:x0"]},
     "load_policy": {"call_timeout_ms": 2000, "on_fault": "disable"}},
    {"name": "chaos-cxl", "module": "builtin:chaos", "config": {"target": "emu:m0"},
     "grants": {"devices": ["emu:d0", "emu:m0", "emu:x0"]},
     "load_policy": {"call_timeout_ms": 2000, "on_fault": "disable"}},
    {"name": "chaos-xocl", "module": "builtin:chaos", "config": {"target": "emu:x0"},
     "grants": {"devices": ["emu:d0", "emu:m0", "emu:x0"]},
     "load_policy": {"call_timeout_ms": 2000, "on_fault": "disable"}}
  ]
}"#;

/// The chaos plugins of [`CONFIG`], in the order an input's first byte picks them.
pub const PLUGINS: [&str; 3] = ["chaos-dfl", "chaos-cxl", "chaos-xocl"];

/// The chaos plugin's PCI vendor id, which tells its device from the emulated cards.
pub const CHAOS_VENDOR_ID: u16 = 0x1234;

/// The call deadline of [`CONFIG`] (`call_timeout_ms`).
pub const CALL_TIMEOUT: Duration = Duration::from_millis(2000);

/// A `reconfigure` that takes longer than this has outlived its deadline: the host stops a
/// call within milliseconds of it, and the rest is slack for a slow or loaded machine.
pub const HANG_LIMIT: Duration = Duration::from_secs(10);

/// Set to anything to have every outcome other than `Ok` printed to stderr.
pub const VERBOSE_ENV: &str = "ACCELHOST_FUZZ_VERBOSE";

/// A host and one open handle per chaos plugin, in [`PLUGINS`] order.
struct Rig {
    handles: Vec<Handle>,
    // Dropped after the handles.
    _host: Host,
}

impl Rig {
    fn start() -> Rig {
        let config = Config::parse(CONFIG, ConfigSource::Embedded).expect("CONFIG is valid");
        let mut builder = Host::builder().config(config);
        if std::env::var_os(CACHE_ENV).is_none() {
            builder = builder.cache_dir(default_cache_dir());
        }
        let host = builder.build().expect("the chaos plugins start");
        let found = host.enumerate(&[Filter::new().vendor_id(CHAOS_VENDOR_ID)]);
        assert!(
            found.failures.is_empty(),
            "enumerating the chaos plugins failed: {:?}",
            found.failures
        );
        let handles = PLUGINS
            .iter()
            .map(|plugin| {
                let token = found
                    .tokens
                    .iter()
                    .find(|t| t.plugin() == *plugin)
                    .unwrap_or_else(|| panic!("{plugin} enumerated no device"));
                host.open(token, OpenMode::Shared)
                    .unwrap_or_else(|err| panic!("opening {plugin}'s device failed: {err}"))
            })
            .collect();
        Rig {
            handles,
            _host: host,
        }
    }

    fn is_whole(&self) -> bool {
        self.handles.iter().all(Handle::is_open)
    }
}

/// Compiled plugins are kept beside the running executable (in the cargo target directory),
/// so that only the first start of a fuzz or test binary compiles them.
fn default_cache_dir() -> PathBuf {
    std::env::current_exe()
        .ok()
        .and_then(|exe| exe.parent().map(|dir| dir.join("accelhost-fuzz-cache")))
        .unwrap_or_else(|| std::env::temp_dir().join("accelhost-fuzz-cache"))
}

static RIG: Mutex<Option<Rig>> = Mutex::new(None);

/// Runs `data[1..]` as a chaos script in the plugin `data[0]` picks.
pub fn run(data: &[u8]) {
    let Some((&pick, script)) = data.split_first() else {
        return;
    };
    let plugin = usize::from(pick) % PLUGINS.len();
    let mut rig = RIG.lock().unwrap_or_else(PoisonError::into_inner);
    if !rig.as_ref().is_some_and(Rig::is_whole) {
        // The old host goes first: its plugins hold the emulated cards.
        *rig = None;
        *rig = Some(Rig::start());
    }
    let handle = &rig.as_ref().expect("started above").handles[plugin];

    let started = Instant::now();
    let result = handle.reconfigure(0, script);
    let took = started.elapsed();

    if let Err(err) = &result
        && std::env::var_os(VERBOSE_ENV).is_some()
    {
        eprintln!("{} ({took:?}): {err}", PLUGINS[plugin]);
    }
    assert!(
        took < HANG_LIMIT,
        "{}: reconfigure took {took:?}, past its {CALL_TIMEOUT:?} deadline",
        PLUGINS[plugin]
    );
    check(result, script, PLUGINS[plugin]);
}

/// Panics unless `result` is an outcome a hostile script may cause.
fn check(result: accelhost::Result<()>, script: &[u8], plugin: &str) {
    match result {
        Ok(()) | Err(Error::Plugin { .. } | Error::Faulted { .. }) => {}
        Err(Error::InvalidArgument {
            call: "reconfigure",
            ..
        }) if script.starts_with(MAGIC) => {}
        Err(err) => panic!(
            "{plugin}: reconfigure failed with a host error ({}): {err}",
            err.code()
        ),
    }
}
