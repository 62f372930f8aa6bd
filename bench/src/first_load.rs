//! The first load of a large plugin file in `accelhost bench`: the JavaScript NLB0 plugin of
//! the SDK (`--js-plugin`) started on an empty compile cache, on baseline code as
//! `load_policy.baseline_first_mib` starts it, against the optimized compile it starts with
//! otherwise, in the same run; each then runs the NLB0 loopback, verified.

use std::path::Path;
use std::time::{Duration, Instant};

use accelhost::workloads::nlb0::{is_nlb0, loopback};
use accelhost::{Config, Host, OpenMode, PluginStatus, Tier};
use anyhow::Context;

use crate::figure::{Figure, Target};

/// The loopback each start runs, as `accelhost demo` does.
const LOOPBACK_BYTES: u64 = 64 << 20;
/// How long the optimized compile that follows a baseline start may take to reach the cache
/// before the next measurement: far more than the 10-16 s it takes here.
const TIER_UP_WAIT: Duration = Duration::from_secs(300);

/// One start: how long the host took to start the plugin, the code it runs, and its
/// loopback's rate.
struct Start {
    took: Duration,
    code: Tier,
    gigabytes_per_second: f64,
}

/// The first load on baseline code against the optimized first load, as a figure.
pub fn figure(js_plugin: &Path, scratch: &Path) -> anyhow::Result<Figure> {
    let js_plugin = std::fs::canonicalize(js_plugin)
        .with_context(|| format!("--js-plugin {}", js_plugin.display()))?;
    let baseline = first_start(&js_plugin, &scratch.join("first-load-baseline"), 4)?;
    let optimized = first_start(&js_plugin, &scratch.join("first-load-optimized"), 4096)?;
    anyhow::ensure!(
        baseline.code == Tier::Baseline && optimized.code == Tier::Optimized,
        "the starts ran {:?} and {:?} code, not baseline and optimized",
        baseline.code,
        optimized.code
    );
    let seconds = baseline.took.as_secs_f64();
    Ok(Figure {
        what: "first load of the JavaScript NLB0 plugin (empty cache)",
        measured: format!(
            "{seconds:.2} s on baseline code; NLB0 64 MiB verified, {:.2} GB/s",
            baseline.gigabytes_per_second
        ),
        baseline: format!(
            "optimized first load {:.2} s ({:.2}x); NLB0 64 MiB verified, {:.2} GB/s",
            optimized.took.as_secs_f64(),
            seconds / optimized.took.as_secs_f64(),
            optimized.gigabytes_per_second
        ),
        ratio: seconds / 2.0,
        target: "≤ 2 s (ratio: against 2 s)",
        bound: Some(Target::AtMost(1.0)),
    })
}

/// Starts a host on `js_plugin` with an empty compile cache in `dir`, as a fresh process
/// would, with `baseline_first_mib`; runs the loopback; and waits for the optimized code to
/// reach the cache (so that the next measurement has the machine to itself).
fn first_start(js_plugin: &Path, dir: &Path, baseline_first_mib: u64) -> anyhow::Result<Start> {
    let _ = std::fs::remove_dir_all(dir);
    // Made by the cache itself, private: it keeps nothing in a directory open to others.
    let cache = dir.join("cache");
    let config = Config::parse(
        &serde_json::json!({
            "devices": [{"id": "card0", "family": "dfl", "accelerator": "nlb0"}],
            "plugins": [{
                "name": "js-nlb0",
                "module": js_plugin,
                "trusted_for": ["dfl"],
                "grants": {"devices": ["emu:card0"], "dma_memory_mib": 256},
                "load_policy": {"baseline_first_mib": baseline_first_mib},
            }],
        })
        .to_string(),
        accelhost::config::ConfigSource::Embedded,
    )?;
    accelhost::perf::forget_loaded();
    let started = Instant::now();
    let host = Host::builder().config(config).cache_dir(&cache).build()?;
    let took = started.elapsed();
    let info = host
        .plugins()
        .into_iter()
        .find(|p| p.name == "js-nlb0")
        .context("the plugin is in the host")?;
    anyhow::ensure!(
        info.status == PluginStatus::Running,
        "{}: {}",
        js_plugin.display(),
        info.status
    );
    let token = host
        .enumerate(&[])
        .tokens
        .into_iter()
        .find(is_nlb0)
        .context("the plugin lists no NLB0 port")?;
    let handle = host.open(&token, OpenMode::Exclusive)?;
    let report = loopback(&handle, LOOPBACK_BYTES)?;
    anyhow::ensure!(report.verified(), "the NLB0 loopback did not verify");
    handle.close()?;
    drop(host);
    let began = Instant::now();
    while compiled_entries(&cache) == 0 {
        anyhow::ensure!(
            began.elapsed() < TIER_UP_WAIT,
            "the optimized code did not reach the compile cache at {} within {TIER_UP_WAIT:?}",
            cache.display()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = std::fs::remove_dir_all(dir);
    Ok(Start {
        took,
        code: info.code.context("the plugin says no code")?,
        gigabytes_per_second: report.gigabytes_per_second(),
    })
}

/// The compiled entries in the cache directory `cache`.
fn compiled_entries(cache: &Path) -> usize {
    std::fs::read_dir(cache).map_or(0, |entries| {
        entries
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".cwasm"))
            .count()
    })
}
