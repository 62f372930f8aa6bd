//! Compiling plugin files in a worker process, from a binary that serves as one: this test
//! binary calls `accelhost::compile_worker::serve_if_asked()` first thing, as the `accelhost`
//! command does, so the hosts it starts compile plugin files in children of it, bounded by
//! `load_policy.compile_timeout_ms` and `compile_memory_mib`. Crafted components
//! (`support/crafted.rs`) attack the compile; the shipped dfl plugin beside them must load
//! and list its devices all the same, and no worker may outlive its compile.
//!
//! Its own harness (`harness = false`) for the `main` that serves; the trials run one at a
//! time, so that the children a trial finds are its own.

#[path = "support/crafted.rs"]
mod crafted;
mod support;

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use accelhost::{
    CompileFailure, Config, Error, ErrorCode, FaultCause, Filter, Host, OpenMode, PluginStatus,
    Tier,
};
use support::harness::{Outcome, Trial};
use support::{json_path, scratch_dir};

/// Far more than any start here takes, and far less than the minutes the huge function
/// would compile for in the host's own process: a start past it is a failure, not a hang.
const HANG: Duration = Duration::from_secs(90);

fn main() -> std::process::ExitCode {
    accelhost::compile_worker::serve_if_asked();
    support::harness::run(
        &[
            Trial {
                name: "a_compile_past_its_time_limit_ends_there_and_the_others_load",
                run: a_compile_past_its_time_limit_ends_there_and_the_others_load,
            },
            Trial {
                name: "a_compile_past_its_memory_limit_ends_with_the_memory_reason",
                run: a_compile_past_its_memory_limit_ends_with_the_memory_reason,
            },
            Trial {
                name: "a_component_that_is_no_plugin_leaves_nothing_compiled",
                run: a_component_that_is_no_plugin_leaves_nothing_compiled,
            },
            Trial {
                name: "a_plugin_file_compiled_by_the_worker_runs_plain_and_metered",
                run: a_plugin_file_compiled_by_the_worker_runs_plain_and_metered,
            },
            Trial {
                name: "a_large_plugin_starts_on_baseline_code_and_its_optimized_code_is_cached",
                run: a_large_plugin_starts_on_baseline_code_and_its_optimized_code_is_cached,
            },
            Trial {
                name: "hosts_starting_side_by_side_each_end_their_compile_at_the_limit",
                run: hosts_starting_side_by_side_each_end_their_compile_at_the_limit,
            },
            Trial {
                name: "a_plugin_still_compiling_holds_up_nobody",
                run: a_plugin_still_compiling_holds_up_nobody,
            },
        ],
        support::harness::Overlap::OneAtATime,
    )
}

/// A plugin entry for the file `path` with `load_policy` members (JSON, without braces).
fn file_plugin(name: &str, path: &Path, policy: &str) -> String {
    format!(
        r#"{{"name": "{name}", "module": "{}", "load_policy": {{{policy}}}}}"#,
        json_path(path)
    )
}

/// A config of `plugins` and the shipped dfl plugin with its emulated card, written in `dir`.
fn config_beside_dfl(dir: &Path, plugins: &[String]) -> Config {
    let mut entries = plugins.to_vec();
    entries.push(support::dfl_plugin(&["dfl0"]));
    let text = format!(
        r#"{{"devices": {}, "plugins": [{}]}}"#,
        support::dfl_devices(&["dfl0"]),
        entries.join(", ")
    );
    let path = dir.join("accelhost.json");
    std::fs::write(&path, text).unwrap();
    Config::load(&path).unwrap()
}

/// Starts a host on `config` with the compile cache `cache`, on another thread, waits until
/// none of its plugins is still loading, and gives what it made and how long that took; a
/// start that takes longer than [`HANG`] fails.
fn start(config: Config, cache: &Path) -> (accelhost::Result<Host>, Duration) {
    let cache = cache.to_path_buf();
    let (sender, started) = mpsc::channel();
    std::thread::spawn(move || {
        let began = Instant::now();
        let host = Host::builder().config(config).cache_dir(cache).build();
        if let Ok(host) = &host {
            host.wait_loaded(HANG);
        }
        let _ = sender.send((host, began.elapsed()));
    });
    started.recv_timeout(HANG).unwrap_or_else(|_| {
        panic!("the host did not start within {HANG:?}: the compile is unbounded")
    })
}

fn status_of(host: &Host, plugin: &str) -> PluginStatus {
    host.plugin(plugin)
        .unwrap_or_else(|| panic!("no plugin {plugin}"))
        .status
}

fn reason_of(host: &Host, plugin: &str) -> String {
    match status_of(host, plugin) {
        PluginStatus::LoadFailed { reason } => reason,
        other => panic!("plugin {plugin} did not fail to load: {other}"),
    }
}

/// The shipped dfl plugin runs and lists its emulated card.
fn dfl_lists_its_card(host: &Host) {
    assert_eq!(status_of(host, "dfl"), PluginStatus::Running);
    let found = host.enumerate(&[]);
    assert!(
        found.tokens.iter().any(|t| t.id() == "dfl/emu:dfl0"),
        "dfl's card is listed: {:?}",
        found.tokens.iter().map(|t| t.id()).collect::<Vec<_>>()
    );
}

/// This process's children, zombies included: a worker killed and reaped is none of them.
fn children() -> Vec<String> {
    let mut children = Vec::new();
    for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
        if let Ok(list) = std::fs::read_to_string(task.path().join("children")) {
            children.extend(list.split_whitespace().map(str::to_string));
        }
    }
    children
}

/// The names of the compile cache's entries (compiled code) in `cache`, but the dfl
/// plugin's (named by its digest first).
fn compiled_entries_but_dfls(cache: &Path) -> Vec<String> {
    use sha2::{Digest, Sha256};
    let dfl: String = Sha256::digest(accelhost::builtin::module("dfl").unwrap())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::read_dir(cache)
        .map(|dir| {
            dir.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|name| name.ends_with(".cwasm") && !name.starts_with(&dfl))
                .collect()
        })
        .unwrap_or_default()
}

/// A fresh directory with `wasm` in it as `name`, and a fresh compile cache beside it that
/// already holds the dfl plugin, so that a start times the crafted plugin's compile.
fn dir_with(name: &str, wasm: &[u8]) -> (PathBuf, PathBuf, PathBuf) {
    let dir = scratch_dir("compile-worker");
    let file = dir.join(name);
    std::fs::write(&file, wasm).unwrap();
    let cache = dir.join("cache");
    let (warm, _) = start(config_beside_dfl(&dir, &[]), &cache);
    dfl_lists_its_card(&warm.expect("dfl alone starts"));
    (dir, file, cache)
}

fn a_compile_past_its_time_limit_ends_there_and_the_others_load() -> Outcome {
    let (dir, file, cache) = dir_with("huge.wasm", &crafted::one_huge_function());
    let limit = Duration::from_millis(1500);
    let huge = |policy: &str| config_beside_dfl(&dir, &[file_plugin("huge", &file, policy)]);

    let (host, took) = start(huge(r#""compile_timeout_ms": 1500"#), &cache);
    let host = host.expect("a plugin that fails to load is skipped");
    assert_eq!(
        reason_of(&host, "huge"),
        "compile ran past 1500 ms (load_policy.compile_timeout_ms)"
    );
    assert!(
        took >= limit,
        "the compile was ended by its limit, not sooner: {took:?}"
    );
    assert!(
        took < limit + Duration::from_secs(20),
        "the host waited past the limit: {took:?}"
    );
    dfl_lists_its_card(&host);
    assert_eq!(
        children(),
        Vec::<String>::new(),
        "the worker was killed and reaped"
    );
    assert_eq!(compiled_entries_but_dfls(&cache), Vec::<String>::new());

    // The next start knows, at once, and says it with the typed cause.
    let (failed, took) = start(
        huge(r#""compile_timeout_ms": 1500, "on_error": "fail""#),
        &cache,
    );
    let err = failed.err().expect("on_error: fail fails the start");
    assert!(
        matches!(
            err,
            Error::Compile {
                cause: CompileFailure::TimedOut { limit_ms: 1500 },
                remembered: true,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.compile_failure(),
        Some(&CompileFailure::TimedOut { limit_ms: 1500 })
    );
    let text = err.to_string();
    assert!(
        text.contains("plugin 'huge'")
            && text.contains("compile ran past 1500 ms (load_policy.compile_timeout_ms)")
            && text.contains("remembered from an earlier attempt"),
        "{text}"
    );
    assert!(
        took < limit,
        "a remembered refusal is not compiled again: {took:?}"
    );
    assert!(children().is_empty());

    // A larger limit is worth another attempt, which that limit ends.
    let (host, took) = start(huge(r#""compile_timeout_ms": 2500"#), &cache);
    let host = host.unwrap();
    assert_eq!(
        reason_of(&host, "huge"),
        "compile ran past 2500 ms (load_policy.compile_timeout_ms)"
    );
    assert!(took >= Duration::from_millis(2500), "{took:?}");
    dfl_lists_its_card(&host);
    assert!(children().is_empty());
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// A plugin file whose compile takes minutes: the host starts within seconds, serving the
/// other plugins; the slow one shows as loading, an enumeration says so, and a host that shuts
/// down gives its compile up, leaving no worker behind.
fn a_plugin_still_compiling_holds_up_nobody() -> Outcome {
    let (dir, file, cache) = dir_with("slow.wasm", &crafted::one_huge_function());
    let config = config_beside_dfl(
        &dir,
        &[file_plugin(
            "slow",
            &file,
            r#""compile_timeout_ms": 300000"#,
        )],
    );
    let began = Instant::now();
    let host = Host::builder()
        .config(config)
        .cache_dir(&cache)
        .build()
        .unwrap();
    let took = began.elapsed();
    assert!(
        took < Duration::from_secs(20),
        "the start waited for the slow compile: {took:?}"
    );
    assert_eq!(status_of(&host, "slow"), PluginStatus::Loading);
    dfl_lists_its_card(&host);
    let found = host.enumerate(&[]);
    assert!(
        found
            .failures
            .iter()
            .any(|f| matches!(f, Error::StillLoading { plugin } if plugin == "slow")),
        "{:?}",
        found.failures
    );
    assert!(!host.wait_loaded(Duration::from_millis(200)));
    assert!(!children().is_empty(), "its compile worker runs");
    let stopping = Instant::now();
    drop(host);
    let until = Instant::now() + Duration::from_secs(20);
    while !children().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(
        children(),
        Vec::<String>::new(),
        "the compile was given up when the host shut down"
    );
    assert!(stopping.elapsed() < Duration::from_secs(20));
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

fn a_compile_past_its_memory_limit_ends_with_the_memory_reason() -> Outcome {
    let (dir, file, cache) = dir_with("many.wasm", &crafted::tiny_functions(200_000));
    let policy = r#""compile_memory_mib": 256, "compile_timeout_ms": 120000, "on_error": "fail""#;
    let config = config_beside_dfl(&dir, &[file_plugin("many", &file, policy)]);
    let (failed, _) = start(config, &cache);
    let err = failed.err().expect("the compile fails");
    assert_eq!(
        err.compile_failure(),
        Some(&CompileFailure::OutOfMemory { limit_mib: 256 }),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains("compile needed more than 256 MiB (load_policy.compile_memory_mib)"),
        "{err}"
    );
    let policy = r#""compile_memory_mib": 256, "compile_timeout_ms": 120000"#;
    let (host, _) = start(
        config_beside_dfl(&dir, &[file_plugin("many", &file, policy)]),
        &cache,
    );
    let host = host.unwrap();
    let reason = reason_of(&host, "many");
    assert!(
        reason.contains("remembered from an earlier attempt"),
        "{reason}"
    );
    assert!(
        reason.contains("load_policy.compile_memory_mib is raised"),
        "{reason}"
    );
    dfl_lists_its_card(&host);
    assert!(children().is_empty());
    assert_eq!(compiled_entries_but_dfls(&cache), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

fn a_component_that_is_no_plugin_leaves_nothing_compiled() -> Outcome {
    let (dir, other, cache) = dir_with("other.wasm", &crafted::exporting_something_else());
    let invalid = dir.join("invalid.wasm");
    std::fs::write(&invalid, crafted::invalid()).unwrap();
    let plugins = [
        file_plugin("other", &other, ""),
        file_plugin("invalid", &invalid, ""),
    ];
    for attempt in ["first", "remembered"] {
        let (host, _) = start(config_beside_dfl(&dir, &plugins), &cache);
        let host = host.unwrap();
        let reason = reason_of(&host, "other");
        assert!(
            reason.starts_with(
                "it is not an accelhost plugin: it exports no accel:plugin interface (exports: f)"
            ),
            "{reason}"
        );
        let invalid = reason_of(&host, "invalid");
        assert!(invalid.starts_with("it does not compile: "), "{invalid}");
        let remembered = attempt == "remembered";
        for reason in [reason, invalid] {
            assert_eq!(
                reason.ends_with(
                    "(remembered from an earlier attempt; it is tried again when the file changes)"
                ),
                remembered,
                "{attempt}: {reason}"
            );
        }
        dfl_lists_its_card(&host);
        assert_eq!(compiled_entries_but_dfls(&cache), Vec::<String>::new());
    }
    let records = std::fs::read_dir(cache.join("refused")).unwrap().count();
    assert_eq!(records, 2, "one record per refused component");
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

fn hosts_starting_side_by_side_each_end_their_compile_at_the_limit() -> Outcome {
    let (dir, _, cache) = dir_with("unused.wasm", b"");
    let huge = crafted::one_huge_function();
    let configs: Vec<Config> = (0..3)
        .map(|i| {
            let sub = dir.join(format!("host{i}"));
            std::fs::create_dir_all(&sub).unwrap();
            let file = sub.join("huge.wasm");
            // Each its own digest: none learns from another's refusal.
            std::fs::write(&file, crafted::tagged(huge.clone(), &format!("host{i}"))).unwrap();
            config_beside_dfl(
                &sub,
                &[file_plugin("huge", &file, r#""compile_timeout_ms": 1500"#)],
            )
        })
        .collect();
    let began = Instant::now();
    let starts: Vec<_> = configs
        .into_iter()
        .map(|config| {
            let cache = cache.clone();
            std::thread::spawn(move || start(config, &cache))
        })
        .collect();
    for started in starts {
        let (host, took) = started.join().unwrap();
        let host = host.unwrap();
        assert_eq!(
            reason_of(&host, "huge"),
            "compile ran past 1500 ms (load_policy.compile_timeout_ms)"
        );
        assert!(took < Duration::from_secs(20), "{took:?}");
        dfl_lists_its_card(&host);
    }
    assert!(began.elapsed() < Duration::from_secs(25));
    assert!(
        children().is_empty(),
        "every worker was reaped: {:?}",
        children()
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

fn a_plugin_file_compiled_by_the_worker_runs_plain_and_metered() -> Outcome {
    // The shipped dfl plugin as a file, under a digest of its own: nothing has it compiled.
    let dfl = std::fs::read(support::guest("accelhost_plugin_dfl")).unwrap();
    let tag = format!("worker-{}", std::process::id());
    let (dir, file, cache) = dir_with("dfl-file.wasm", &crafted::tagged(dfl, &tag));
    let entry = |name: &str, fuel: &str| {
        format!(
            r#"{{"name": "{name}", "module": "{}", "grants": {{"devices": ["emu:dfl0"]}},
                "load_policy": {{"compile_timeout_ms": 60000 {fuel}}}}}"#,
            json_path(&file)
        )
    };
    let plugins = [
        entry("plain", ""),
        entry("metered", r#", "fuel": 100000000"#),
    ];
    let (host, _) = start(config_beside_dfl(&dir, &plugins), &cache);
    let host = host.expect("the plugin files load");
    for plugin in ["plain", "metered"] {
        assert_eq!(status_of(&host, plugin), PluginStatus::Running, "{plugin}");
    }
    let found = host.enumerate(&[]);
    let ids: Vec<String> = found.tokens.iter().map(|t| t.id().to_string()).collect();
    for id in ["plain/emu:dfl0", "metered/emu:dfl0", "dfl/emu:dfl0"] {
        assert!(ids.iter().any(|i| i == id), "{id} in {ids:?}");
    }
    assert!(children().is_empty());
    // The worker's code, plain and metered, is cached for the next start.
    assert_eq!(compiled_entries_but_dfls(&cache).len(), 2);
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}

/// A plugin file of at least `load_policy.baseline_first_mib` (here 0: any) starts on
/// baseline code at once: it runs, and its deadline and fuel budget stop it there as they do
/// on optimized code. Its optimized code compiles in the background into the cache, and the
/// next start runs that, compiling nothing.
fn a_large_plugin_starts_on_baseline_code_and_its_optimized_code_is_cached() -> Outcome {
    let chaos = std::fs::read(support::guest("accelhost_plugin_chaos")).unwrap();
    let tag = format!("baseline-{}", std::process::id());
    let (dir, file, cache) = dir_with("chaos-file.wasm", &crafted::tagged(chaos, &tag));
    let entry = |name: &str, config: &str, policy: &str| {
        format!(
            r#"{{"name": "{name}", "module": "{}", "config": {config},
                "load_policy": {{"baseline_first_mib": 0, "on_fault": "disable", {policy}}}}}"#,
            json_path(&file)
        )
    };
    let plugins = [
        entry(
            "hangs",
            r#"{"hang_in": "open"}"#,
            r#""call_timeout_ms": 300"#,
        ),
        entry(
            "metered",
            r#"{"hang_in": "describe"}"#,
            r#""fuel": 50000000, "call_timeout_ms": 60000"#,
        ),
    ];
    let code_of = |host: &Host, plugin: &str| {
        let info = host.plugin(plugin).unwrap();
        assert_eq!(info.status, PluginStatus::Running, "{plugin}");
        info.code
    };
    let (host, _) = start(config_beside_dfl(&dir, &plugins), &cache);
    let host = host.expect("the plugin files load");
    for plugin in ["hangs", "metered"] {
        assert_eq!(code_of(&host, plugin), Some(Tier::Baseline), "{plugin}");
    }
    let tokens = host.enumerate(&[Filter::new().vendor_id(0x1234)]).tokens;
    let token_of = |plugin: &str| {
        tokens
            .iter()
            .find(|t| t.plugin() == plugin)
            .unwrap_or_else(|| panic!("{plugin} lists its device"))
    };
    let started = Instant::now();
    let err = host
        .open(token_of("hangs"), OpenMode::Exclusive)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::PluginFaulted, "{err}");
    assert_eq!(
        err.fault_cause(),
        Some(&FaultCause::Deadline { timeout_ms: 300 }),
        "{err}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "baseline code past its deadline"
    );
    let err = token_of("metered").refresh().unwrap_err();
    assert_eq!(
        err.fault_cause(),
        Some(&FaultCause::Fuel { fuel: 50_000_000 }),
        "{err}"
    );
    dfl_lists_its_card(&host);
    // The optimized code, plain and metered, reaches the cache; its workers end.
    let began = Instant::now();
    while (compiled_entries_but_dfls(&cache).len() < 2 || !children().is_empty())
        && began.elapsed() < HANG
    {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(compiled_entries_but_dfls(&cache).len(), 2);
    assert!(children().is_empty(), "workers left: {:?}", children());
    drop(host);
    let (again, _) = start(config_beside_dfl(&dir, &plugins), &cache);
    let again = again.expect("the plugin files load again");
    for plugin in ["hangs", "metered"] {
        assert_eq!(code_of(&again, plugin), Some(Tier::Optimized), "{plugin}");
    }
    assert!(
        children().is_empty(),
        "the second start compiled: {:?}",
        children()
    );
    std::fs::remove_dir_all(&dir).unwrap();
    Outcome::Passed
}
