//! Helpers shared by the end-to-end tests: the compiled plugins, configs written to temporary
//! directories, and hosts that share one compile cache.

#![allow(dead_code)]

pub mod harness;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Output, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use accelhost::{Config, Host};

/// The end-to-end tests run as the `accelhost` binary does: with the host-memory ledger as the
/// allocator, so that what a plugin makes the host hold is charged where it is allocated.
#[global_allocator]
static LEDGER: accelhost::ledger::Ledger = accelhost::ledger::Ledger::system();

/// The compiled wasm of a guest crate (underscored package name), as the build left it.
pub fn guest(name: &str) -> PathBuf {
    let path = Path::new(accelhost::perf::GUEST_DIR).join(format!("{name}.wasm"));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// A compile cache shared by every test of this run, kept under `ACCELHOST_CACHE_MAX_MIB`'s
/// default cap (least recently used entries go first), as every cache is.
pub fn cache_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("accelhost-cache")
}

/// The folder of this test process's scratch folders, under the target's temporary directory.
static RUN_DIR: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_run_dir() {
    if let Some(dir) = RUN_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// A fresh, empty directory in this process's scratch folder, which is removed, with
/// everything in it, when the process exits.
pub fn scratch_dir(label: &str) -> PathBuf {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    let run = RUN_DIR.get_or_init(|| {
        // SAFETY: registers a function that takes no arguments and only removes files.
        unsafe { libc::atexit(remove_run_dir) };
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("run-{}", std::process::id()))
    });
    let dir = run.join(format!("{label}-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A fresh folder under the system's temporary directory, short enough for the Unix sockets
/// made in it (their paths must stay under 108 bytes wherever the clone is), removed when dropped.
pub struct ShortScratch(pub PathBuf);

impl ShortScratch {
    pub fn new(label: &str) -> ShortScratch {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = std::env::temp_dir().join(format!(
            "ak-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        ShortScratch(dir)
    }
}

impl Drop for ShortScratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes `json` as `accelhost.json` in a fresh directory and returns its path.
pub fn write_config(json: &str) -> PathBuf {
    let path = scratch_dir("config").join("accelhost.json");
    std::fs::write(&path, json).unwrap();
    path
}

/// A host on the config text `json` (module paths relative to a fresh directory), with every
/// plugin loaded (a plugin file whose compile outlasts the start is waited for).
pub fn host(json: &str) -> accelhost::Result<Host> {
    let config = Config::load(&write_config(json))?;
    let host = Host::builder()
        .config(config)
        .cache_dir(cache_dir())
        .build()?;
    host.wait_loaded(std::time::Duration::MAX);
    Ok(host)
}

/// A host on the embedded default config.
pub fn default_host() -> Host {
    Host::builder()
        .config(Config::embedded_default())
        .cache_dir(cache_dir())
        .build()
        .expect("the embedded default starts")
}

/// The chaos plugin's entry, granted nothing, with `config`, a short deadline, a small memory
/// cap, and no restarts.
pub fn chaos_plugin(name: &str, config: &str) -> String {
    chaos_plugin_granted(name, config, &[])
}

/// The chaos plugin's entry, granted the devices `granted`.
pub fn chaos_plugin_granted(name: &str, config: &str, granted: &[&str]) -> String {
    chaos_plugin_with(name, config, granted, r#""on_fault": "disable""#)
}

/// The chaos plugin's entry with `load_policy` fields (JSON members, without braces) that
/// override the short deadline and small memory cap of the tests.
pub fn chaos_plugin_with(name: &str, config: &str, granted: &[&str], policy: &str) -> String {
    let mut load_policy = serde_json::json!({"call_timeout_ms": 300, "memory_mib": 32});
    let overrides: serde_json::Value = serde_json::from_str(&format!("{{{policy}}}")).unwrap();
    for (key, value) in overrides.as_object().unwrap() {
        load_policy[key] = value.clone();
    }
    let granted: Vec<String> = granted.iter().map(|d| format!("\"{d}\"")).collect();
    format!(
        r#"{{"name": "{name}", "module": "builtin:chaos", "config": {config},
            "grants": {{"devices": [{}]}}, "load_policy": {load_policy}}}"#,
        granted.join(", ")
    )
}

/// The shipped dfl plugin's entry, granted the emulated cards `ids`.
pub fn dfl_plugin(ids: &[&str]) -> String {
    let grants: Vec<String> = ids.iter().map(|id| format!("\"emu:{id}\"")).collect();
    format!(
        r#"{{"name": "dfl", "module": "builtin:dfl", "grants": {{"devices": [{}]}}}}"#,
        grants.join(", ")
    )
}

/// Emulated DFL cards with ids `ids`.
pub fn dfl_devices(ids: &[&str]) -> String {
    let decls: Vec<String> = ids
        .iter()
        .map(|id| format!(r#"{{"id": "{id}", "family": "dfl"}}"#))
        .collect();
    format!("[{}]", decls.join(", "))
}

/// A path as a JSON string body.
pub fn json_path(path: &Path) -> String {
    path.display()
        .to_string()
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

/// Runs the `accelhost` command (`binary`, which only the CLI package's tests know) with
/// `args` in `dir`, with an isolated environment: no user or system config, the tests'
/// compile cache.
pub fn run_accelhost(binary: &str, dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let home = scratch_dir("home");
    let mut cmd = Command::new(binary);
    cmd.args(args)
        .current_dir(dir)
        .env_remove("ACCELHOST_CONFIG")
        .env_remove("ACCELHOST_TRACE")
        .env_remove("ACCELHOST_LOG")
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", home.join(".config"))
        .env("ACCELHOST_CACHE_DIR", cache_dir());
    for (key, value) in env {
        cmd.env(key, value);
    }
    cmd.output().expect("running accelhost")
}

/// A finished program's status, stdout and stderr, for assertion messages.
pub fn report(out: &Output) -> String {
    format!(
        "status {}\n--- stdout\n{}--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Output bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Why the tool `program` cannot run here (`why`, when `program version_arg` does not
/// succeed), or `None` when it can. A missing tool fails the test under
/// `ACCELHOST_REQUIRE_TOOLCHAINS=1`, as CI sets it.
pub fn tool_missing(program: &str, version_arg: &str, why: String) -> Option<String> {
    let found = Command::new(program)
        .arg(version_arg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if found {
        return None;
    }
    if std::env::var_os("ACCELHOST_REQUIRE_TOOLCHAINS").is_some_and(|v| v == "1") {
        panic!("{why}, and ACCELHOST_REQUIRE_TOOLCHAINS=1");
    }
    Some(why)
}

/// Runs `test`, an ignored test of this binary, in a process of its own (libtest's `--exact
/// --ignored`) with `env` added: for a test that watches the whole process's memory or changes
/// its uid. Its status, stdout and stderr; past `within` it is killed and the caller fails.
pub fn run_test_alone(
    test: &str,
    env: &[(&str, String)],
    within: Duration,
) -> (ExitStatus, String, String) {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            test,
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .envs(env.iter().map(|(key, value)| (key, value)))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Read on threads of their own, so that a test that writes much never blocks.
    let read = |pipe: Option<Box<dyn std::io::Read + Send>>| {
        std::thread::spawn(move || {
            let mut text = String::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_string(&mut text);
            }
            text
        })
    };
    let out = read(child.stdout.take().map(|p| Box::new(p) as _));
    let err = read(child.stderr.take().map(|p| Box::new(p) as _));
    let deadline = Instant::now() + within;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{test} did not finish within {within:?} in a process of its own");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    (status, out.join().unwrap(), err.join().unwrap())
}
