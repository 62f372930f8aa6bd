//! The files a host reads and writes for its plugins. Module files it must not trust: what is
//! not a regular file is refused by what it is, without waiting on it, and a file over
//! `load_policy.max_module_mib` by its size, without reading it; the plugin beside each refused
//! one starts and serves its card. And the compile cache, which stays under its cap.

mod support;

use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

use accelhost::families::dfl::abi::nlb0;
use accelhost::{ComponentCache, Config, ErrorCode, Host, OpenMode, PluginStatus};
use support::{dfl_devices, dfl_plugin, guest, host, json_path, scratch_dir};

/// Far longer than a host start takes here, short enough to report a blocked one.
const HANG: Duration = Duration::from_secs(120);

/// A config with the dfl plugin on one emulated card, and the plugin `name` loading `module`
/// with the load policy members `policy`.
fn with_dfl(name: &str, module: &Path, policy: &str) -> String {
    format!(
        r#"{{"devices": {}, "plugins": [{}, {{"name": "{name}", "module": "{}",
            "load_policy": {{{policy}}}}}]}}"#,
        dfl_devices(&["d0"]),
        dfl_plugin(&["d0"]),
        json_path(module)
    )
}

/// Starts a host on `json` on another thread, waiting at most [`HANG`] for it.
fn start_within_bound(json: String) -> accelhost::Result<Host> {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(host(&json));
    });
    rx.recv_timeout(HANG).unwrap_or_else(|_| {
        panic!("the host did not start within {HANG:?}: blocked on a plugin file")
    })
}

/// The reason plugin `name` of `host` failed to load, once the dfl plugin beside it is shown
/// to serve its card.
fn refused_beside_working_dfl(host: &Host, name: &str) -> String {
    let tokens = host.enumerate(&[]).tokens;
    assert_eq!(tokens.len(), 1, "the dfl plugin's card");
    let handle = host.open(&tokens[0], OpenMode::Shared).unwrap();
    let mmio = handle.map_mmio(0).unwrap();
    assert_eq!(mmio.read64(nlb0::CSR_AFU_ID_H).unwrap(), nlb0::AFU_ID.high);
    let info = host.plugin(name).unwrap();
    match info.status {
        PluginStatus::LoadFailed { reason } => reason,
        other => panic!("{name} should have failed to load, is {other:?}"),
    }
}

fn refused(module: &Path, policy: &str) -> String {
    let host = start_within_bound(with_dfl("p", module, policy)).expect("the host starts");
    refused_beside_working_dfl(&host, "p")
}

#[test]
fn a_fifo_named_as_a_module_is_refused_at_once() {
    let fifo = scratch_dir("fifo-module").join("plugin.wasm");
    let c_path = std::ffi::CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: a NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
    let reason = refused(&fifo, "");
    assert_eq!(
        reason,
        format!(
            "{} is a FIFO (named pipe), not a plugin file",
            fifo.display()
        )
    );
}

#[test]
fn a_directory_and_a_device_are_refused_by_what_they_are() {
    let dir = scratch_dir("dir-module").join("plugin.wasm");
    std::fs::create_dir(&dir).unwrap();
    assert_eq!(
        refused(&dir, ""),
        format!("{} is a directory, not a plugin file", dir.display())
    );
    assert_eq!(
        refused(Path::new("/dev/zero"), ""),
        "/dev/zero is a character device, not a plugin file"
    );
}

/// The process's peak resident memory so far, in bytes.
fn peak_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib << 10
}

#[test]
fn an_8_gib_file_is_refused_by_its_size_without_being_read() {
    let file = scratch_dir("huge-module").join("plugin.wasm");
    // Sparse: it takes no disk, but reads as 8 GiB of zeros.
    std::fs::File::create(&file)
        .unwrap()
        .set_len(8 << 30)
        .unwrap();
    let peak_before = peak_resident_bytes();
    let reason = refused(&file, "");
    assert_eq!(
        reason,
        format!(
            "{} is 8192 MiB, over the 128 MiB limit (load_policy.max_module_mib)",
            file.display()
        )
    );
    // Reading it would have taken the peak up by gigabytes; the other tests of this binary
    // running meanwhile take it up by tens of MiB at most.
    let grown = peak_resident_bytes() - peak_before;
    assert!(grown < 1 << 30, "the peak grew by {} MiB", grown >> 20);
}

#[test]
fn a_file_over_a_small_max_module_mib_is_refused_and_one_within_it_loads() {
    let dir = scratch_dir("small-limit");
    let plugin = dir.join("chaos.wasm");
    std::fs::copy(guest("accelhost_plugin_chaos"), &plugin).unwrap();
    let size = std::fs::metadata(&plugin).unwrap().len();
    let limit_mib = size.div_ceil(1 << 20);
    let within = start_within_bound(with_dfl(
        "p",
        &plugin,
        &format!(r#""max_module_mib": {limit_mib}"#),
    ))
    .unwrap();
    let info = within.plugin("p").unwrap();
    assert_eq!(info.status, PluginStatus::Running, "{size} bytes");

    // One byte over its limit, with `on_error: fail`: the whole load fails, naming the
    // plugin, the file and the field.
    let over = dir.join("over.wasm");
    std::fs::File::create(&over)
        .unwrap()
        .set_len((2 << 20) + 1)
        .unwrap();
    let err = start_within_bound(with_dfl(
        "big",
        &over,
        r#""max_module_mib": 2, "on_error": "fail""#,
    ))
    .err()
    .expect("on_error fail fails the whole load");
    assert_eq!(err.code(), ErrorCode::LoadFailed);
    let text = err.to_string();
    assert!(text.contains("plugin 'big'"), "{text}");
    assert!(
        text.contains(&format!(
            "{} is 2.1 MiB, over the 2 MiB limit (load_policy.max_module_mib)",
            over.display()
        )),
        "{text}"
    );
    let host = start_within_bound(with_dfl("big", &over, r#""max_module_mib": 2"#)).unwrap();
    assert!(refused_beside_working_dfl(&host, "big").contains("over the 2 MiB limit"));
}

#[test]
fn a_hosts_compile_cache_keeps_within_its_cap() {
    let dir = scratch_dir("capped-cache").join("cache");
    // Compiled afresh (the cxl and xocl plugins at least: no other test here loads them),
    // each stored under a cap of one byte. The plugins compile at once, and a writer spares
    // the entry it wrote and the newest of all (so that two writers never remove each
    // other's last entry): one or two entries stay, never all three.
    accelhost::perf::forget_loaded();
    let host = Host::builder()
        .config(Config::embedded_default())
        .compile_cache(ComponentCache::at(Some(dir.clone())).with_max_bytes(1))
        .build()
        .unwrap();
    for plugin in host.plugins() {
        assert_eq!(plugin.status, PluginStatus::Running, "{}", plugin.name);
    }
    let entries: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "cwasm"))
        .collect();
    assert!(
        (1..=2).contains(&entries.len()) && entries.len() < host.plugins().len(),
        "{entries:?}"
    );
}
